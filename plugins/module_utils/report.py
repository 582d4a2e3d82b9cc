"""Verification reports: JSON, Markdown, JUnit XML and a PNG bandwidth heat map.

Stdlib only (the PNG is written with zlib), usable from the verify_report
action on the controller and on its own::

    python plugins/module_utils/report.py reports/latest     # print the summary

``write_reports(report, reports_dir)`` writes ``<reports_dir>/<timestamp>/``
{report.json, summary.md, junit.xml, heatmap.png} and points
``<reports_dir>/latest`` at it.
"""
import datetime
import json
import os
import struct
import sys
import zlib
from xml.etree import ElementTree as ET

SCHEMA_VERSION = 1

# 5x7 bitmap glyphs (rows, MSB left) for the heat map's labels.
FONT = {
    '0': (14, 17, 19, 21, 25, 17, 14), '1': (4, 12, 4, 4, 4, 4, 14), '2': (14, 17, 1, 2, 4, 8, 31), '3': (30, 1, 1, 14, 1, 1, 30),
    '4': (2, 6, 10, 18, 31, 2, 2), '5': (31, 16, 30, 1, 1, 17, 14), '6': (6, 8, 16, 30, 17, 17, 14), '7': (31, 1, 2, 4, 8, 8, 8),
    '8': (14, 17, 17, 14, 17, 17, 14), '9': (14, 17, 17, 15, 1, 2, 12), 'A': (14, 17, 17, 31, 17, 17, 17), 'B': (30, 17, 17, 30, 17, 17, 30),
    'C': (14, 17, 16, 16, 16, 17, 14), 'D': (28, 18, 17, 17, 17, 18, 28), 'E': (31, 16, 16, 30, 16, 16, 31), 'F': (31, 16, 16, 30, 16, 16, 16),
    'G': (14, 17, 16, 23, 17, 17, 15), 'H': (17, 17, 17, 31, 17, 17, 17), 'I': (14, 4, 4, 4, 4, 4, 14), 'J': (7, 2, 2, 2, 2, 18, 12),
    'K': (17, 18, 20, 24, 20, 18, 17), 'L': (16, 16, 16, 16, 16, 16, 31), 'M': (17, 27, 21, 21, 17, 17, 17), 'N': (17, 17, 25, 21, 19, 17, 17),
    'O': (14, 17, 17, 17, 17, 17, 14), 'P': (30, 17, 17, 30, 16, 16, 16), 'Q': (14, 17, 17, 17, 21, 18, 13), 'R': (30, 17, 17, 30, 20, 18, 17),
    'S': (15, 16, 16, 14, 1, 1, 30), 'T': (31, 4, 4, 4, 4, 4, 4), 'U': (17, 17, 17, 17, 17, 17, 14), 'V': (17, 17, 17, 17, 17, 10, 4),
    'W': (17, 17, 17, 21, 21, 21, 10), 'X': (17, 17, 10, 4, 10, 17, 17), 'Y': (17, 17, 10, 4, 4, 4, 4), 'Z': (31, 1, 2, 4, 8, 16, 31),
    '_': (0, 0, 0, 0, 0, 0, 31), ':': (0, 12, 12, 0, 12, 12, 0), '.': (0, 0, 0, 0, 0, 12, 12), '-': (0, 0, 0, 31, 0, 0, 0),
    '/': (0, 1, 2, 4, 8, 16, 0), '>': (8, 4, 2, 1, 2, 4, 8), '(': (4, 8, 16, 16, 16, 8, 4), ')': (4, 2, 1, 1, 1, 2, 4),
}


# ---------------------------------------------------------------- the report document

def build_report(findings, summary, checks, fabric, meta=None, mode=None):
    """The JSON document: what ran, what was found, with stable codes.

    ``mode``: how it ran, e.g. the audit's "audit: read-only, nothing was changed"
    (absent for a verification)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fabric": {k: fabric.get(k) for k in ("name", "transport", "link_speed_gbps", "link_width", "mtu", "verify")},
        "summary": summary,
        "checks": checks,
        "findings": findings,
        "meta": meta or {},
    }
    if mode:
        doc["mode"] = mode
    return doc


def _cell(v):
    return "" if v is None else str(v).replace("|", "\\|")


def to_markdown(report):
    s = report["summary"]
    f = report["fabric"]
    lines = [f"# Fabric verification: {'PASSED' if s['passed'] else 'FAILED'}", "",
             f"Fabric **{f.get('name')}** ({f.get('transport')}, {f.get('link_speed_gbps')} Gb/s x{f.get('link_width')}), "
             f"{report['generated_at']}: {s['errors']} error(s), {s['warnings']} warning(s).", ""]
    if report.get("mode"):
        lines[0] = f"# Fabric audit: {'PASSED' if s['passed'] else 'FAILED'}"
        lines += [f"Mode: **{report['mode']}**.", ""]
    checks = report.get("checks", {})
    lines += ["| check | result | detail |", "|---|---|---|"]
    for name, c in checks.items():
        lines.append(f"| {name} | {'pass' if c.get('passed') else ('skipped' if c.get('skipped') else 'FAIL')} "
                     f"| {_cell(c.get('detail'))} |")
    lines.append("")
    if report["findings"]:
        lines += ["## Findings", "", "| code | layer | node | device | switch | port | message |",
                  "|---|---|---|---|---|---|---|"]
        for x in report["findings"]:
            lines.append("| " + " | ".join(_cell(x.get(k)) for k in
                                           ("code", "layer", "node", "device", "switch", "switch_port", "message")) + " |")
        lines.append("")
    rdma = checks.get("ib_write_bw") or {}
    for dev, m in (rdma.get("matrix") or {}).items():
        nodes = m["nodes"]
        lines += [f"### ib_write_bw {dev} (Gb/s, client row -> server column; threshold {rdma.get('threshold_gbps')})", "",
                  "| client \\ server | " + " | ".join(nodes) + " |", "|---" * (len(nodes) + 1) + "|"]
        for a in nodes:
            row = []
            for b in nodes:
                c = m["cells"].get(f"{a}|{b}")
                row.append("" if c is None else ("FAIL " if not c["ok"] else "") +
                           ("-" if c.get("gbps") is None else f"{c['gbps']:.1f}"))
            lines.append(f"| {a} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def to_junit(report):
    """JUnit XML: one testsuite per check, one testcase per test, failures carry the fault code."""
    suites = ET.Element("testsuites", name="linerate-audit" if report.get("mode") else "linerate-verify")
    total_t = total_f = 0
    for name, c in report.get("checks", {}).items():
        cases = c.get("cases") or [{"name": name, "ok": c.get("passed", False), "message": c.get("detail")}]
        suite = ET.SubElement(suites, "testsuite", name=name, tests=str(len(cases)))
        if report.get("mode"):
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", name="mode", value=str(report["mode"]))
        fails = 0
        for case in cases:
            tc = ET.SubElement(suite, "testcase", classname=f"linerate.verify.{name}", name=str(case["name"]),
                               time=str(case.get("time", 0)))
            if case.get("skipped"):
                ET.SubElement(tc, "skipped", message=str(case.get("message") or "skipped"))
            elif not case.get("ok"):
                fails += 1
                fl = ET.SubElement(tc, "failure", message=str(case.get("message") or "failed"),
                                   type=str(case.get("code") or "FAILED"))
                fl.text = json.dumps(case.get("findings") or [], indent=1)
        suite.set("failures", str(fails))
        suite.set("errors", "0")
        total_t += len(cases)
        total_f += fails
    suites.set("tests", str(total_t))
    suites.set("failures", str(total_f))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# ---------------------------------------------------------------- PNG

class Canvas:
    def __init__(self, width, height, bg=(255, 255, 255)):
        self.w, self.h = width, height
        self.px = [bytearray(bytes(bg) * width) for _row in range(height)]

    def rect(self, x, y, w, h, color):
        for yy in range(max(0, y), min(self.h, y + h)):
            row = self.px[yy]
            for xx in range(max(0, x), min(self.w, x + w)):
                row[3 * xx:3 * xx + 3] = bytes(color)

    def frame(self, x, y, w, h, color, t=2):
        self.rect(x, y, w, t, color)
        self.rect(x, y + h - t, w, t, color)
        self.rect(x, y, t, h, color)
        self.rect(x + w - t, y, t, h, color)

    def line(self, x0, y0, x1, y1, color, t=2):
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(steps + 1):
            self.rect(x0 + (x1 - x0) * i // steps, y0 + (y1 - y0) * i // steps, t, t, color)

    def text(self, x, y, s, color=(0, 0, 0), scale=1):
        for ch in str(s).upper():
            glyph = FONT.get(ch)
            if glyph:
                for r, bits in enumerate(glyph):
                    for c in range(5):
                        if bits & (1 << (4 - c)):
                            self.rect(x + c * scale, y + r * scale, scale, scale, color)
            x += 6 * scale

    def png(self):
        raw = b"".join(b"\x00" + bytes(row) for row in self.px)

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _color(fraction):
    """Red (0) -> yellow (0.5) -> green (1) of line rate."""
    f = max(0.0, min(1.0, fraction))
    if f < 0.5:
        return (220, int(60 + 380 * f), 50)
    return (int(220 - 340 * (f - 0.5)), 200, 60)


def heatmap_png(report):
    """The pairwise bandwidth matrix per rail; failing links framed in red and crossed."""
    rdma = (report.get("checks") or {}).get("ib_write_bw") or {}
    matrix = rdma.get("matrix") or {}
    line_rate = float(report["fabric"].get("link_speed_gbps") or 1)
    cell, label_w, top, gap = 56, 70, 48, 30
    panels = list(matrix.items()) or [("no tests", {"nodes": [], "cells": {}})]
    widths = [label_w + cell * max(1, len(m["nodes"])) for _title, m in panels]
    height = top + cell * max(1, max(len(m["nodes"]) for _title, m in panels)) + 40
    cv = Canvas(sum(widths) + gap * (len(panels) + 1), height)
    cv.text(gap, 8, f"IB_WRITE_BW GBIT/S  LINE {line_rate:g}  THRESHOLD {rdma.get('threshold_gbps', '-')}", scale=2)
    x0 = gap
    for (dev, m), w in zip(panels, widths):
        nodes = m["nodes"]
        cv.text(x0 + label_w, top - 14, f"{dev}  PAIRS (ROW, COLUMN)")
        for j, b in enumerate(nodes):
            cv.text(x0 + label_w + j * cell + 4, top + cell * len(nodes) + 6, b)
        for i, a in enumerate(nodes):
            cv.text(x0, top + i * cell + cell // 2 - 3, a)
            for j, b in enumerate(nodes):
                x, y = x0 + label_w + j * cell, top + i * cell
                # one test per pair: show it in both triangles
                c = m["cells"].get(f"{a}|{b}") or m["cells"].get(f"{b}|{a}")
                if a == b or c is None:
                    cv.rect(x + 1, y + 1, cell - 2, cell - 2, (235, 235, 235))
                    continue
                gbps = c.get("gbps")
                cv.rect(x + 1, y + 1, cell - 2, cell - 2, _color((gbps or 0) / line_rate))
                cv.text(x + 6, y + cell // 2 - 3, "-" if gbps is None else f"{gbps:.0f}")
                if not c["ok"]:
                    cv.frame(x + 1, y + 1, cell - 2, cell - 2, (160, 0, 0), 3)
                    cv.line(x + 4, y + 4, x + cell - 7, y + cell - 7, (160, 0, 0))
                    cv.line(x + cell - 7, y + 4, x + 4, y + cell - 7, (160, 0, 0))
        x0 += w + gap
    return cv.png()


# ---------------------------------------------------------------- files

def write_reports(report, reports_dir, stamp=None):
    stamp = stamp or report["generated_at"].replace(":", "").replace("-", "")
    out = os.path.join(reports_dir, stamp)
    n = 1
    while os.path.exists(out):
        n += 1
        out = os.path.join(reports_dir, f"{stamp}-{n}")
    os.makedirs(out)
    files = {"json": "report.json", "markdown": "summary.md", "junit": "junit.xml", "heatmap": "heatmap.png"}
    with open(os.path.join(out, files["json"]), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, files["markdown"]), "w") as f:
        f.write(to_markdown(report))
    with open(os.path.join(out, files["junit"]), "w") as f:
        f.write(to_junit(report))
    with open(os.path.join(out, files["heatmap"]), "wb") as f:
        f.write(heatmap_png(report))
    latest = os.path.join(reports_dir, "latest")
    tmp = latest + ".tmp"
    if os.path.lexists(tmp):
        os.remove(tmp)
    os.symlink(os.path.basename(out), tmp)
    os.replace(tmp, latest)
    return {k: os.path.join(out, v) for k, v in files.items()} | {"dir": out}


def summary_text(path):
    """The Markdown summary of a report directory (or of report.json)."""
    if os.path.isdir(path):
        md = os.path.join(path, "summary.md")
        if os.path.exists(md):
            return open(md).read()
        path = os.path.join(path, "report.json")
    with open(path) as f:
        return to_markdown(json.load(f))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "reports/latest"
    if not os.path.exists(path):
        print(f"report: no verification report at {path} (run playbooks/verify.yml)", file=sys.stderr)
        return 2
    print(summary_text(path), end="")
    where = os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path))
    print(f"\nFull report: {where}/ (report.json, summary.md, junit.xml, heatmap.png)")
    with open(os.path.join(path, "report.json") if os.path.isdir(path) else path) as f:
        return 0 if json.load(f)["summary"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
