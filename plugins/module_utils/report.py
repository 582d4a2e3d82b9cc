"""Verification reports: JSON, Markdown, JUnit XML and an SVG bandwidth heat map.

Stdlib only, usable from the verify_report
action on the controller and on its own::

    python plugins/module_utils/report.py reports/latest     # print the summary

``write_reports(report, reports_dir)`` writes ``<reports_dir>/<timestamp>/``
{report.json, summary.md, junit.xml, heatmap.svg} and points
``<reports_dir>/latest`` at it.
"""
import datetime
import json
import os
import re
import sys
from xml.sax.saxutils import escape, quoteattr

SCHEMA_VERSION = 1

# The full pair matrix (client row x server column, per rail) is drawn up to
# this many nodes; above it the report shows the node x rail worst-link grid
# and the list of failing links only (a 256-node matrix is 65,536 cells a rail).
MATRIX_MAX_NODES = 32
# Failing links listed one by one in summary.md (report.json has every test).
FAILING_LINKS_MAX = 100
# report.json is indented for people below this size (characters), one line above it.
JSON_INDENT_MAX = 1 << 20


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


def to_markdown(report, grid=None):
    s = report["summary"]
    f = report["fabric"]
    lines = [f"# Fabric verification: {'PASSED' if s['passed'] else 'FAILED'}", "",
             f"Fabric **{f.get('name')}** ({f.get('transport')}, {f.get('link_speed_gbps')} Gb/s x{f.get('link_width')}), "
             f"{report['generated_at']}: {s['errors']} error(s), {s['warnings']} warning(s).", ""]
    phases = (report.get("meta") or {}).get("phases") or []
    if phases:
        lines += ["Phases: " + ", ".join(f"{p['phase']} {p['seconds']:g} s" for p in phases)
                  + f"; {sum(p['seconds'] for p in phases):.1f} s in all.", ""]
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
    rails = (checks.get("readiness") or {}).get("rails") or {}
    if rails:
        lines += ["### Rails (NIC -> nearest GPU, nvidia-smi topo -m)", "", "| node | device | PCI | GPU | GPU PCI | link |",
                  "|---|---|---|---|---|---|"]
        keys = ("device", "pci", "gpu", "gpu_pci", "link")
        lines += ["| " + " | ".join(_cell(x) for x in (n, *(r.get(k) for k in keys))) + " |"
                  for n, rs in rails.items() for r in rs]
    cab = checks.get("cabling") or {}
    if cab.get("cases"):
        lines += ["### Cabling (LLDP)", "", "| link | result | code |", "|---|---|---|"]
        lines += [f"| {_cell(c['name'])} | {'skipped' if c.get('skipped') else 'ok' if c.get('ok') else 'FAIL'} "
                  f"| {_cell(c.get('code'))} |" for c in cab["cases"]]
        lines.append("")
    rdma = checks.get("ib_write_bw") or {}
    matrix = rdma.get("matrix") or {}
    if matrix:
        lines += _markdown_links(matrix, rdma.get("threshold_gbps"), grid)
    for dev, m in matrix.items():
        nodes = m["nodes"]
        if len(nodes) > MATRIX_MAX_NODES:
            continue
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
    return "\n".join(lines + _evidence(checks)) + "\n"


def _evidence(checks):
    """Per-rail incast counters and per-port link health, as tables."""
    lines = []
    for r in (checks.get("incast") or {}).get("rails") or []:
        cols = [k for k in ("pause", "discards", "ecn_marked", "cnp_sent", "cnp_handled", "out_of_sequence",
                            "switch_pause", "switch_ecn_marked", "switch_drops") if k in r]
        lines += [f"### incast {r['device']}: {r['k']} senders into {r['receiver']} (counter deltas)", "",
                  "| node | Gb/s | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
        for n in [r["receiver"]] + list(r.get("senders") or []):
            g = (r.get("flows") or {}).get(n)
            lines.append(f"| {n} | {'' if g is None else f'{g:.1f}'} | "
                         + " | ".join(_cell((r.get(k) or {}).get(n)) for k in cols) + " |")
        lines.append("")
    if any(k.startswith("switch_") for r in (checks.get("incast") or {}).get("rails") or [] for k in r):
        lines += ["switch_* columns: the node's switch port, counted by the switch over all the benchmarks "
                  "(pause on the no-drop priority, ECN marks, drops of the no-drop priority).", ""]
    for sw, what in sorted(((checks.get("incast") or {}).get("switch_unproven") or {}).items()):
        lines += [f"- not proven on {sw} (the platform does not report them): {', '.join(what)}"]
    if (checks.get("incast") or {}).get("switch_unproven"):
        lines.append("")
    ports = (checks.get("link_health") or {}).get("ports") or []
    if ports:
        lines += ["### link health over the verification window", "",
                  "| node | device | switch port | errors | flaps | switch errors | switch flaps | effective BER | raw BER "
                  "| FEC |", "|---" * 10 + "|"]
        for p in ports:
            ber = ["" if p.get(k) is None else f"{p[k]:.1e}" for k in ("effective_ber", "raw_ber")]
            lines.append(f"| {p['node']} | {p['device']} | {_cell(p.get('switch'))} {_cell(p.get('switch_port'))} | "
                         f"{_cell(p.get('errors'))} | {_cell(p.get('flaps'))} | {_cell(p.get('switch_errors'))} | "
                         f"{_cell(p.get('switch_flaps'))} | {ber[0]} | {ber[1]} | {_cell(p.get('fec'))} |")
        lines += ["", "errors, flaps: counted by the host's port; switch errors, switch flaps: counted by the switch "
                  "port at the other end of the cable (empty: not read or not reported by the platform).", ""]
        for sw, what in sorted(((checks.get("link_health") or {}).get("switch_unproven") or {}).items()):
            lines += [f"- not proven on {sw} (the platform does not report them): {', '.join(what)}"]
        if (checks.get("link_health") or {}).get("switch_unproven"):
            lines.append("")
    return lines


def _markdown_links(matrix, threshold, grid=None):
    """The node x rail worst-link grid and, above MATRIX_MAX_NODES, the failing links one by one."""
    grid = grid or worst_links(matrix)
    lines = [f"### ib_write_bw worst link per node and rail (Gb/s, with its peer; threshold {threshold})", "",
             "| node | " + " | ".join(grid["rails"]) + " |", "|---" * (len(grid["rails"]) + 1) + "|"]
    for node in grid["nodes"]:
        row = []
        for rail in grid["rails"]:
            c = grid["cells"].get(node, {}).get(rail)
            row.append("" if c is None else
                       f"{'' if c['ok'] else 'FAIL '}{_gbps(c['gbps'])} ({_cell(c['peer'])}"
                       + (f", {c['failing']}/{c['tests']} failing)" if c["failing"] else ")"))
        lines.append(f"| {_cell(node)} | " + " | ".join(row) + " |")
    lines.append("")
    if len(grid["nodes"]) > MATRIX_MAX_NODES:
        bad = failing_links(matrix)
        lines += [f"### ib_write_bw failing links ({len(bad)}; the pair matrix is shown up to "
                  f"{MATRIX_MAX_NODES} nodes, this fabric has {len(grid['nodes'])})", ""]
        lines += [f"- {client} -> {server} {rail}: {_gbps(c.get('gbps'))} Gb/s {c.get('code') or 'FAIL'}"
                  for rail, client, server, c in bad[:FAILING_LINKS_MAX]]
        if len(bad) > FAILING_LINKS_MAX:
            lines.append(f"- ... and {len(bad) - FAILING_LINKS_MAX} more (report.json: checks.ib_write_bw.tests)")
        lines += ([] if bad else ["none"]) + [""]
    return lines


def to_junit(report):
    """JUnit XML: one testsuite per check, one testcase per test, failures carry the fault code;
    an audit's suites carry its mode as a property.

    Written as text (ElementTree costs seconds for the 261,120 tests of a full 256-node x 8-rail plan).
    """
    suites = []
    total_t = total_f = 0
    mode = report.get("mode")
    props = f'<properties><property name="mode" value={quoteattr(str(mode))} /></properties>' if mode else ""
    for name, c in report.get("checks", {}).items():
        cases = c.get("cases") or [{"name": name, "ok": c.get("passed", False), "message": c.get("detail")}]
        classname = quoteattr(f"linerate.verify.{name}")
        body, fails = [props] if props else [], 0
        for case in cases:
            head = f'<testcase classname={classname} name={quoteattr(str(case["name"]))} time="{case.get("time", 0)}"'
            if case.get("skipped"):
                body.append(f'{head}><skipped message={quoteattr(str(case.get("message") or "skipped"))} /></testcase>')
            elif not case.get("ok"):
                fails += 1
                body.append(f'{head}><failure message={quoteattr(str(case.get("message") or "failed"))} '
                            f'type={quoteattr(str(case.get("code") or "FAILED"))}>'
                            f'{escape(json.dumps(case.get("findings") or [], indent=1))}</failure></testcase>')
            else:
                body.append(f"{head} />")
        suites.append(f'<testsuite name={quoteattr(str(name))} tests="{len(cases)}" failures="{fails}" errors="0">'
                      + "".join(body) + "</testsuite>")
        total_t += len(cases)
        total_f += fails
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + f'<testsuites name="{"linerate-audit" if mode else "linerate-verify"}" tests="{total_t}" failures="{total_f}">'
            + "".join(suites)
            + "</testsuites>\n")


# ---------------------------------------------------------------- worst links, failing links

def _natural(s):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", str(s))]


def _worse(a, b):
    """True when cell a is a worse link than cell b: failing first, then lower bandwidth (no result lowest)."""
    if a["ok"] != b["ok"]:
        return not a["ok"]
    ga, gb = a.get("gbps"), b.get("gbps")
    return (-1.0 if ga is None else float(ga)) < (-1.0 if gb is None else float(gb))


def worst_links(matrix):
    """The node x rail grid of the ib_write_bw matrix: each endpoint's worst link.

    ``matrix``: ``checks.ib_write_bw.matrix`` ({rail: {"nodes", "cells": {"client|server": {gbps, ok, code}}}}).
    Returns ``{"rails": [...], "nodes": [...], "cells": {node: {rail: {gbps, ok, code, peer, tests, failing}}}}``:
    per node and rail the worst test the endpoint took part in (failing before passing, then the lowest
    Gb/s), its peer, how many tests it was in and how many of them failed.
    """
    cells, nodes = {}, set()
    for rail, m in (matrix or {}).items():
        nodes.update(m.get("nodes") or [])
        for key, c in (m.get("cells") or {}).items():
            client, _sep, server = key.partition("|")
            for node, peer in ((client, server), (server, client)):
                mine = cells.setdefault(node, {})
                cur = mine.get(rail)
                if cur is None:
                    cur = mine[rail] = {"gbps": c.get("gbps"), "ok": bool(c.get("ok")), "code": c.get("code"),
                                        "peer": peer, "tests": 0, "failing": 0}
                elif _worse(c, cur):
                    cur.update(gbps=c.get("gbps"), ok=bool(c.get("ok")), code=c.get("code"), peer=peer)
                cur["tests"] += 1
                cur["failing"] += not c.get("ok")
    return {"rails": list(matrix or {}), "nodes": sorted(nodes, key=_natural), "cells": cells}


def failing_links(matrix):
    """Every failing test of the matrix: [(rail, client, server, cell)], the worst first."""
    out = [(rail, *key.partition("|")[::2], c) for rail, m in (matrix or {}).items()
           for key, c in (m.get("cells") or {}).items() if not c.get("ok")]
    return sorted(out, key=lambda x: (-1.0 if x[3].get("gbps") is None else float(x[3]["gbps"]),
                                      _natural(x[0]), _natural(x[1]), _natural(x[2])))


def _gbps(v):
    return "-" if v is None else f"{float(v):.1f}"


# ---------------------------------------------------------------- SVG heat map

FAIL_FILL = "url(#lr-fail)"
FAIL_EDGE = "#67000d"
UNTESTED = "#e6e6e6"
CHAR_W = 6.8  # px of one 11 px monospace character


def _green(fraction):
    """A passing link: light green at the threshold, dark green at line rate."""
    f = max(0.0, min(1.0, fraction))
    lo, hi = (199, 233, 192), (0, 109, 44)
    return "#%02x%02x%02x" % tuple(round(a + (b - a) * f) for a, b in zip(lo, hi))


def _fill(c, threshold, line_rate):
    if c is None:
        return UNTESTED
    if not c.get("ok"):
        return FAIL_FILL
    span = max(1e-9, line_rate - threshold)
    return _green((float(c.get("gbps") or 0) - threshold) / span)


def _cell_svg(out, x, y, w, h, c, threshold, line_rate, title, attrs, text=True, kind="cell", suffix=""):
    """One cell: a rect (class ok / fail / none) with its title; failing cells hatched red, edged and crossed."""
    state = "none" if c is None else ("ok" if c.get("ok") else "fail")
    extra = "".join(f" {k}={quoteattr(str(v))}" for k, v in attrs.items())
    edge = f' stroke="{FAIL_EDGE}" stroke-width="2"' if state == "fail" else ""
    out.append(f'<rect class="{kind} {state}" x="{x}" y="{y}" width="{w}" height="{h}" '
               f'fill="{_fill(c, threshold, line_rate)}"{edge}{extra}><title>{escape(title)}</title></rect>')
    if state == "fail":
        # the marker: a cross over the cell, so a failing link reads without colour
        out.append(f'<path class="{kind}-fail-mark" d="M{x + 2},{y + 2}L{x + w - 2},{y + h - 2}M{x + w - 2},{y + 2}'
                   f'L{x + 2},{y + h - 2}" stroke="{FAIL_EDGE}" stroke-width="1.5"/>')
    if text and c is not None:
        g = c.get("gbps")
        dark = state == "fail" or (float(g or 0) - threshold) / max(1e-9, line_rate - threshold) > 0.6
        weight = ' font-weight="bold"' if state == "fail" else ""
        out.append(f'<text x="{x + w / 2:g}" y="{y + h - 4}" text-anchor="middle" font-size="9" '
                   f'fill="{"#ffffff" if dark else "#000000"}"{weight}>{"-" if g is None else f"{float(g):.0f}"}{suffix}</text>')


def _legend(out, x, y, threshold, line_rate):
    out.append(f'<g class="legend"><text x="{x}" y="{y + 11}">legend:</text>')
    x += 60
    for k in range(5):
        v = threshold + (line_rate - threshold) * k / 4
        out.append(f'<rect x="{x}" y="{y}" width="40" height="14" fill="{_green(k / 4)}"/>'
                   f'<text x="{x + 20}" y="{y + 26}" text-anchor="middle" font-size="9">{v:g}</text>')
        x += 40
    out.append(f'<text x="{x + 6}" y="{y + 11}">Gb/s, passing (threshold {threshold:g} .. line rate {line_rate:g})</text>')
    x += 6 + CHAR_W * 52
    _cell_svg(out, round(x), y, 40, 14, {"ok": False, "gbps": None}, threshold, line_rate, "failing link", {},
              text=False, kind="swatch")
    out.append(f'<text x="{round(x) + 46}" y="{y + 11}">failing: below threshold or an error (red, hatched, crossed)</text>')
    x += 46 + CHAR_W * 62
    out.append(f'<rect x="{round(x)}" y="{y}" width="40" height="14" fill="{UNTESTED}"/>'
               f'<text x="{round(x) + 46}" y="{y + 11}">not tested</text></g>')
    return round(x) + 46 + CHAR_W * 12


def heatmap_svg(report, matrix_max_nodes=None, grid=None):
    """The ib_write_bw heat map as SVG: legend, node x rail worst-link grid, and per rail the pair matrix.

    Host names are written as the inventory has them. Passing links are green (darker nearer line rate);
    failing links are red with a white hatch, a dark edge and a cross, so they read without colour too.
    Every cell carries a ``<title>`` (tooltip) with the endpoints, Gb/s and fault code. The pair matrices
    are drawn up to ``matrix_max_nodes`` (MATRIX_MAX_NODES) nodes; the grid at any size. ``grid``:
    worst_links() of the report's matrix when the caller has it already.
    """
    limit = MATRIX_MAX_NODES if matrix_max_nodes is None else matrix_max_nodes
    rdma = (report.get("checks") or {}).get("ib_write_bw") or {}
    matrix = rdma.get("matrix") or {}
    line_rate = float((report.get("fabric") or {}).get("link_speed_gbps") or 1)
    threshold = float(rdma.get("threshold_gbps") or line_rate)
    grid = grid or worst_links(matrix)
    nodes, rails = grid["nodes"], grid["rails"]
    label_w = round(CHAR_W * max([len(str(n)) for n in nodes] + [8]) + 12)
    out = []
    s = report.get("summary") or {}
    fab = report.get("fabric") or {}
    out.append(f'<text x="16" y="22" font-size="15" font-weight="bold">ib_write_bw Gb/s - fabric '
               f'{escape(str(fab.get("name")))}: {escape(str(rdma.get("detail") or "no tests"))}; '
               f'{"PASSED" if s.get("passed") else "FAILED"}</text>')
    width = _legend(out, 16, 34, threshold, line_rate)
    y = 86
    if not nodes:
        out.append(f'<text x="16" y="{y}">no ib_write_bw tests in this report</text>')
        y += 20
    else:
        # the node x rail grid of worst links, in blocks of up to 64 rows side by side
        cw, ch, per_block = max(72, round(CHAR_W * max(len(r) for r in rails) + 8)), 16, 64
        out.append(f'<text class="section" x="16" y="{y}" font-weight="bold">worst link per node and rail '
                   f'(Gb/s, then failing/tests when any failed: the bad endpoint fails with every peer; '
                   f'tooltip: the peer)</text>')
        y += 12
        block_w = label_w + cw * len(rails) + 24
        x0 = 16
        for b in range(0, len(nodes), per_block):
            block = nodes[b:b + per_block]
            for j, rail in enumerate(rails):
                out.append(f'<text x="{x0 + label_w + j * cw + cw / 2:g}" y="{y + 12}" text-anchor="middle">'
                           f'{escape(rail)}</text>')
            for i, node in enumerate(block):
                yy = y + 18 + i * ch
                out.append(f'<text x="{x0}" y="{yy + 12}">{escape(str(node))}</text>')
                for j, rail in enumerate(rails):
                    c = grid["cells"].get(node, {}).get(rail)
                    title = (f"{node} {rail}: not tested" if c is None else
                             f"{node} {rail}: worst {_gbps(c['gbps'])} Gb/s with {c['peer']}"
                             + (f" ({c['code']})" if c.get("code") else "")
                             + f"; {c['failing']} of {c['tests']} tests failing")
                    _cell_svg(out, x0 + label_w + j * cw, yy, cw - 1, ch - 1, c, threshold, line_rate, title,
                              {"data-node": node, "data-rail": rail, "data-peer": "" if c is None else c["peer"],
                               "data-failing": 0 if c is None else c["failing"], "data-tests": 0 if c is None else c["tests"]},
                              suffix=f" {c['failing']}/{c['tests']}" if c and c["failing"] else "")
            x0 += block_w
        width = max(width, x0)
        y += 18 + ch * min(len(nodes), per_block) + 24
        # per rail, the pair matrix (one test per pair, shown in both triangles)
        drawn = [(rail, m) for rail, m in matrix.items() if len(m.get("nodes") or []) <= limit]
        if len(drawn) < len(matrix):
            out.append(f'<text x="16" y="{y}">pair matrices are drawn up to {limit} nodes; this fabric has '
                       f'{len(nodes)}: the grid above and summary.md\'s failing links tell which pairs failed</text>')
            y += 20
        cell = 24
        x0, row_h = 16, 0
        for k, (rail, m) in enumerate(drawn):
            mn = m["nodes"]
            top = label_w  # the column labels, rotated
            pw = label_w + cell * len(mn) + 32
            if k and k % 2 == 0:
                x0, y = 16, y + row_h
            out.append(f'<g class="matrix" data-rail={quoteattr(rail)}><text x="{x0}" y="{y + 12}" '
                       f'font-weight="bold">{escape(rail)}: client row -&gt; server column</text>')
            for j, b in enumerate(mn):
                cx, cy = x0 + label_w + j * cell + cell / 2 + 4, y + 18 + top
                out.append(f'<text x="{cx:g}" y="{cy}" transform="rotate(-90 {cx:g} {cy})">{escape(str(b))}</text>')
            for i, a in enumerate(mn):
                yy = y + 24 + top + i * cell
                out.append(f'<text x="{x0}" y="{yy + 16}">{escape(str(a))}</text>')
                for j, b in enumerate(mn):
                    c = None if a == b else (m["cells"].get(f"{a}|{b}") or m["cells"].get(f"{b}|{a}"))
                    title = (f"{a} {rail}" if a == b else
                             f"{a} <-> {b} {rail}: not tested" if c is None else
                             f"{a} <-> {b} {rail}: {_gbps(c.get('gbps'))} Gb/s" + (f" ({c['code']})" if c.get("code") else ""))
                    _cell_svg(out, x0 + label_w + j * cell, yy, cell - 1, cell - 1, c, threshold, line_rate, title,
                              {"data-rail": rail, "data-row": a, "data-col": b})
            out.append("</g>")
            row_h = max(row_h if k % 2 else 0, 24 + top + cell * len(mn) + 32)
            x0 += pw
            width = max(width, x0)
        y += row_h
    height = y + 10
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{round(width)}" height="{round(height)}" '
            f'viewBox="0 0 {round(width)} {round(height)}" font-family="DejaVu Sans Mono, monospace" font-size="11">'
            f'<title>ib_write_bw heat map: {escape(str(fab.get("name")))}</title>'
            '<defs><pattern id="lr-fail" patternUnits="userSpaceOnUse" width="6" height="6" '
            'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d7191c"/>'
            '<line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2"/></pattern></defs>'
            '<rect width="100%" height="100%" fill="#ffffff"/>')
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + head + "\n".join(out) + "</svg>\n"


# ---------------------------------------------------------------- files

def write_reports(report, reports_dir, stamp=None):
    stamp = stamp or report["generated_at"].replace(":", "").replace("-", "")
    out = os.path.join(reports_dir, stamp)
    n = 1
    while os.path.exists(out):
        n += 1
        out = os.path.join(reports_dir, f"{stamp}-{n}")
    os.makedirs(out)
    files = {"json": "report.json", "markdown": "summary.md", "junit": "junit.xml", "heatmap": "heatmap.svg"}
    # json.dumps without indent or sorting is the C encoder at its fastest (json.dump and indent are pure
    # Python: many seconds for a 256-node full plan); a report small enough to read in an editor is
    # indented and sorted again for people.
    text = json.dumps(report)
    if len(text) < JSON_INDENT_MAX:
        text = json.dumps(report, indent=1, sort_keys=True)
    with open(os.path.join(out, files["json"]), "w") as f:
        f.write(text + "\n")
    grid = worst_links(((report.get("checks") or {}).get("ib_write_bw") or {}).get("matrix"))
    with open(os.path.join(out, files["markdown"]), "w") as f:
        f.write(to_markdown(report, grid))
    with open(os.path.join(out, files["junit"]), "w") as f:
        f.write(to_junit(report))
    with open(os.path.join(out, files["heatmap"]), "w") as f:
        f.write(heatmap_svg(report, grid=grid))
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
    print(f"\nFull report: {where}/ (report.json, summary.md, junit.xml, heatmap.svg)")
    with open(os.path.join(path, "report.json") if os.path.isdir(path) else path) as f:
        return 0 if json.load(f)["summary"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
