"""Verification reports: JSON, Markdown, JUnit XML and an SVG bandwidth heat map.

Stdlib only, usable from the verify_report
action on the controller and on its own (the checkout's command-line summary,
scripts/report_summary.py, loads it so)::

    python scripts/report_summary.py reports/latest     # print the summary

``write_reports(report, reports_dir)`` writes ``<reports_dir>/<timestamp>/``
{report.json, summary.md, junit.xml, heatmap.svg} and points
``<reports_dir>/latest`` at it.
"""
import datetime
import json
import os
import re
import shutil
from collections import Counter
from operator import itemgetter
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_tune import (
    table_markdown as _tuning_table)

# 2: checks.ib_write_bw stores each test once, as a row of RDMA_TEST_FIELDS (its matrix and JUnit cases
# are derived on read); 1 stored every test three times (tests, matrix, cases).
SCHEMA_VERSION = 2
# server_device: the server's device where it is not the client's (the cross-rail round), else null;
# rows written before it have eight fields and read as same-rail.
RDMA_TEST_FIELDS = ("round", "client", "server", "device", "gbps", "code", "client_error", "server_error",
                    "server_device")

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


def to_markdown(report, view=None):
    """summary.md; ``view``: rdma_view(report) when the caller has it already."""
    s = report["summary"]
    f = report["fabric"]
    lines = [f"# Fabric verification: {'PASSED' if s['passed'] else 'FAILED'}", "",
             f"Fabric **{f.get('name')}** ({f.get('transport')}, {f.get('link_speed_gbps')} Gb/s x{f.get('link_width')}), "
             f"{report['generated_at']}: {s['errors']} error(s), {s['warnings']} warning(s).", ""]
    phases = (report.get("meta") or {}).get("phases") or []
    if phases:
        lines += ["Phases: " + ", ".join(f"{p['phase']} {p['seconds']:g} s" for p in phases)
                  + f"; {sum(p['seconds'] for p in phases):.1f} s in all.", ""]
    sched = ((report.get("checks") or {}).get("ib_write_bw") or {}).get("schedule") or {}
    if sched.get("rounds"):
        slow = max(sched["rounds"], key=lambda r: r["seconds"])
        lines += [f"ib_write_bw rounds: {len(sched['rounds'])}, the slowest round {slow['round']} "
                  f"({slow['seconds']:g} s); {sched.get('client_retries', 0)} client start(s) again while "
                  "a server was not listening yet.", ""]
    retest = (report.get("meta") or {}).get("retest_phases")
    if isinstance(retest, dict) and retest.get("max") is not None:
        lines += [f"Re-test phases (sampled plan): {retest.get('ran', 0)} of at most {retest['max']} ran "
                  f"({retest.get('rounds', 0)} round(s)).", ""]
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
    view = view or rdma_view(report)
    threshold = view["check"].get("threshold_gbps")
    if view["grid"]["nodes"]:
        lines += _markdown_links(view, threshold)
    for dev, m in view["matrix"].items():
        nodes = m["nodes"]
        lines += [f"### ib_write_bw {dev} (Gb/s, client row -> server column; threshold {threshold})", "",
                  "| client \\ server | " + " | ".join(nodes) + " |", "|---" * (len(nodes) + 1) + "|"]
        for a in nodes:
            row = []
            for b in nodes:
                c = m["cells"].get((a, b))
                row.append("" if c is None else ("FAIL " if not c["ok"] else "") +
                           ("-" if c.get("gbps") is None else f"{c['gbps']:.1f}"))
            lines.append(f"| {a} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines + _evidence(checks) + bench_lines(checks) + _trend_lines(report)
                     + tuning_lines(report)) + "\n"


# The NCCL tuning sweep's row fields in report.json (nccl_tuning.rows); runs and medians are GB/s.
TUNING_ROW_FIELDS = ("key", "value", "runs", "median", "min", "max", "gain_percent", "spread_percent", "kept",
                     "winner", "why")


def tuning_section(sweep):
    """report.json ``nccl_tuning``: the sweep of this run (playbooks/nccl_tune.yml) in a fixed shape."""
    return {
        "metric": "avg_busbw_gbytes",
        "settings": dict(sweep.get("settings") or {}),
        "nccl_version": sweep.get("nccl_version"),
        "runs": sweep.get("runs"),
        "stopped": sweep.get("stopped"),
        "margin_percent": sweep.get("margin_percent"),
        "repeats": sweep.get("repeats"),
        "file": sweep.get("file"),
        "rows": [{k: row.get(k) for k in TUNING_ROW_FIELDS} for row in sweep.get("rows") or []],
    }


def tuning_lines(report):
    """summary.md's NCCL tuning section (empty without a sweep)."""
    section = report.get("nccl_tuning")
    if not section:
        return []
    return _tuning_table(section, section.get("margin_percent"), section.get("repeats"))


BENCH_CHECKS = ("ib_send_bw", "ib_write_lat", "ib_send_lat")


def bench_lines(checks):
    """ib_send_bw / ib_write_lat: one table per check, a row per pair and rail (benchcheck.check's cases)."""
    lines = []
    for name in BENCH_CHECKS:
        c = checks.get(name) or {}
        if not c.get("cases"):
            continue
        lat = "threshold_usec" in c
        limit = c.get("threshold_usec") if lat else c.get("threshold_gbps")
        head = "average us | 99% us" if lat else "Gb/s"
        lines += [f"### {name} ({'latency, usec' if lat else 'bandwidth, Gb/s'}; threshold {limit:g})", "",
                  f"| pair (client -> server, round) | {head} | result |", "|---" * (4 if lat else 3) + "|"]
        for case in c["cases"]:
            if lat:
                value = case.get("latency_usec")
                p99 = (case.get("latency") or {}).get("p99_usec")
                cells = f"{'' if value is None else f'{value:.2f}'} | {'' if p99 is None else f'{p99:.2f}'}"
            else:
                cells = _gbps(case.get("gbps"))
            lines.append(f"| {_cell(case['name'])} | {cells} | {'ok' if case['ok'] else 'FAIL ' + _cell(case['code'])} |")
        lines.append("")
    return lines


def _pct(pair):
    """[proven, in_scope] -> '12/16 (75 %)', or 'none in scope'."""
    got, of = (list(pair or [0, 0]) + [0, 0])[:2]
    return f"{got}/{of} ({100 * got / of:.0f} %)" if of else "none in scope"


def incast_check(findings, rails, coverage, unproven):
    """The report's ``incast`` check of the rotation (``incast.incast_rotation``): passed when no error;
    ``coverage`` (ports and uplinks proven / in scope, rounds, receivers) in the check and its detail;
    one JUnit case per receiver and rail (its round, k senders), failing with the first error's code."""
    errors = [x for x in findings if x["severity"] == "error"]
    coverage = dict(coverage or {})
    ports, ups = coverage.get("ports") or [0, 0], coverage.get("uplinks") or [0, 0]
    detail = (f"{coverage.get('rounds', 0)} round(s), {len(coverage.get('receivers') or [])} receiver(s); "
              f"host ports proven lossless {_pct(ports)}, leaf uplinks {_pct(ups)}"
              + ("" if ups[1] else " (every rail under one leaf: no same-rail traffic crosses an uplink)")
              + f"; {len(errors)} error(s)")
    cases = []

    def of(x, r):
        return (x.get("incast_round"), x.get("receiver"), x.get("device")) == (r.get("round"), r["receiver"], r["device"])
    for r in rails:
        mine = [x for x in errors if of(x, r)]
        cases.append({"name": f"incast round {r.get('round', 0)}: {r['device']} -> {r['receiver']} (k={r['k']})",
                      "ok": not mine, "code": mine[0]["code"] if mine else None,
                      "message": "; ".join(x["message"] for x in mine) or None})
    # a finding of no rail (a switch's counters, its lossless state) fails the check as its own case
    rest = [x for x in errors if not any(of(x, r) for r in rails)]
    for x in rest:
        cases.append({"name": f"incast {x.get('switch') or x.get('node')} {x.get('switch_port') or x.get('device') or ''}"
                      .strip(), "ok": False, "code": x["code"], "message": x["message"]})
    return {"passed": not errors, "rails": rails, "coverage": coverage, "switch_unproven": unproven,
            "detail": detail, "cases": cases}


# at most this many incast groups get a counter table in summary.md (every failing one always does)
INCAST_TABLES = 16


def _evidence(checks):
    """Per-rail incast counters and per-port link health, as tables."""
    lines = []
    rails = (checks.get("incast") or {}).get("rails") or []
    cov = (checks.get("incast") or {}).get("coverage")
    if cov:
        lines += [f"### incast rotation: {cov.get('rounds', 0)} round(s), every node a receiver once", "",
                  f"- host ports proven lossless: {_pct(cov.get('ports'))}",
                  f"- leaf uplinks proven (a sender under another leaf): {_pct(cov.get('uplinks'))}"]
        if cov.get("unproven_ports"):
            lines.append(f"- not proven: {', '.join(cov['unproven_ports'][:20])}"
                         + (" ..." if len(cov["unproven_ports"]) > 20 else ""))
        lines.append("")
    shown = [r for r in rails if not r.get("ok", True)]
    shown += [r for r in rails if r.get("ok", True)][:max(0, INCAST_TABLES - len(shown))]
    for r in shown:
        cols = [k for k in ("pause", "discards", "ecn_marked", "cnp_sent", "cnp_handled", "out_of_sequence",
                            "switch_pause", "switch_ecn_marked", "switch_drops") if k in r]
        rnd = f"round {r['round']}, " if "round" in r else ""
        lines += [f"### incast {rnd}{r['device']}: {r['k']} senders into {r['receiver']} (counter deltas)", "",
                  "| node | Gb/s | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
        for n in [r["receiver"]] + list(r.get("senders") or []):
            g = (r.get("flows") or {}).get(n)
            lines.append(f"| {n} | {'' if g is None else f'{g:.1f}'} | "
                         + " | ".join(_cell((r.get(k) or {}).get(n)) for k in cols) + " |")
        lines.append("")
    if len(shown) < len(rails):
        lines += [f"({len(rails) - len(shown)} more passing incast rails in report.json, checks.incast.rails)", ""]
    if any(k.startswith("switch_") for r in shown for k in r):
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


def _markdown_links(view, threshold):
    """The node x rail worst-link grid and, above the matrix limit, the failing links one by one."""
    grid = view["grid"]
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
    if len(grid["nodes"]) > view["limit"]:
        bad = failing_links(view["rows"])
        lines += [f"### ib_write_bw failing links ({len(bad)}; the pair matrix is shown up to "
                  f"{view['limit']} nodes, this fabric has {len(grid['nodes'])})", ""]
        lines += [f"- {client} -> {server} {rail}" + (f" -> {sdev}" if sdev != rail else "") + f": {_gbps(gbps)} Gb/s {code}"
                  for _rnd, client, server, rail, gbps, code, _cerr, _serr, sdev in map(_fields, bad[:FAILING_LINKS_MAX])]
        if len(bad) > FAILING_LINKS_MAX:
            lines.append(f"- ... and {len(bad) - FAILING_LINKS_MAX} more (report.json: checks.ib_write_bw.tests)")
        lines += ([] if bad else ["none"]) + [""]
    return lines


# what needs escaping in a double-quoted attribute value ('>' is legal there)
_XML_SPECIAL = re.compile(r'[&<"\n\r\t]')
_ATTR_ENTITIES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}


def _xml_text(value):
    """``value`` as the text of a double-quoted XML attribute (escaped only where it needs it)."""
    s = str(value)
    return s if _XML_SPECIAL.search(s) is None else escape(s, _ATTR_ENTITIES)


def _attr(value):
    return f'"{_xml_text(value)}"'


class _XmlTexts(dict):
    """_xml_text of each key, computed once (the host and rail names repeat in every ib_write_bw test)."""
    def __missing__(self, key):
        self[key] = _xml_text(key)
        return self[key]


def _time(seconds):
    """` time="<seconds>"` where the time was measured; nothing where it was not (never a made-up 0)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        return ""
    return f' time="{seconds:.3f}"'


def _testcase(classname, case):
    head = (f'<testcase classname={classname} name={_attr(case["name"])}'
            f'{_time(case.get("time", case.get("seconds")))}')
    if case.get("skipped"):
        return f'{head}><skipped message={_attr(case.get("message") or "skipped")} /></testcase>'
    if not case.get("ok"):
        failure = f'<failure message={_attr(case.get("message") or "failed")} type={_attr(case.get("code") or "FAILED")}'
        findings = case.get("findings")
        # the findings as the failure's text where there are any; an empty list is no body at all
        body = f'>{escape(json.dumps(findings, indent=1))}</failure>' if findings else " />"
        return f"{head}>{failure}{body}</testcase>"
    return f"{head} />"


def _rdma_testcases(check, classname):
    """ib_write_bw's testcases, derived from its stored tests: one per test, named by its ends and round.
    A passing test is written straight from its row (261,120 of them in a 256-node x 8-rail full plan)."""
    threshold = float(check.get("threshold_gbps") or 0)
    text = _XmlTexts()
    return [f'<testcase classname={classname} name="{text[client]}:{text[rail]} -> {text[server]}:{text[sdev]} '
            f'(round {rnd})" />' if code is None else
            _testcase(classname, {"name": f"{client}:{rail} -> {server}:{sdev} (round {rnd})", "ok": False, "code": code,
                                  "message": cerr or serr or f"{_gbps(gbps)} Gb/s < {threshold:g} Gb/s"})
            for rnd, client, server, rail, gbps, code, cerr, serr, sdev in map(_fields, _rows(check))]


def _suite_cases(name, check, classname):
    """The testcase elements of one check: its cases, ib_write_bw's from its tests, else the check as one case."""
    if check.get("cases"):
        return [_testcase(classname, case) for case in check["cases"]]
    if check.get("tests"):
        return _rdma_testcases(check, classname)
    return [_testcase(classname, {"name": name, "ok": check.get("passed", False), "message": check.get("detail")})]


def to_junit(report):
    """JUnit XML: one testsuite per check, one testcase per test, failures carry the fault code;
    an audit's suites carry its mode as a property.

    Written as text (ElementTree costs seconds for the 261,120 tests of a full 256-node x 8-rail plan).
    """
    suites = []
    total_t = total_f = 0
    mode = report.get("mode")
    props = f'<properties><property name="mode" value={_attr(mode)} /></properties>' if mode else ""
    # a suite's time: the wall time of the verification phase of the same name (meta.phases), where measured
    phases = {p.get("phase"): p.get("seconds") for p in (report.get("meta") or {}).get("phases") or []
              if isinstance(p, dict)}
    for name, c in report.get("checks", {}).items():
        cases = _suite_cases(name, c, _attr(f"linerate.verify.{name}"))
        body = "".join(cases)
        fails = body.count("><failure message=")  # names and messages are escaped: '<' is never theirs
        suites.append(f'<testsuite name={_attr(name)} tests="{len(cases)}" failures="{fails}" errors="0"'
                      f'{_time(phases.get(name))}>'
                      + props + body + "</testsuite>")
        total_t += len(cases)
        total_f += fails
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + f'<testsuites name="{"linerate-audit" if mode else "linerate-verify"}" tests="{total_t}" failures="{total_f}">'
            + "".join(suites)
            + "</testsuites>\n")


# ---------------------------------------------------------------- ib_write_bw: each test stored once

def rdma_rows(evaluated):
    """Evaluated ib_write_bw tests (dicts with client/server = [node, device]) as rows of RDMA_TEST_FIELDS."""
    return [[t["round"], t["client"][0], t["server"][0], t["client"][1], t.get("gbps"), t.get("code"),
             t.get("client_error"), t.get("server_error"),
             t["server"][1] if t["server"][1] != t["client"][1] else None] for t in evaluated]


def _fields(row):
    """A stored row as (round, client, server, device, gbps, code, client_error, server_error, server_device)."""
    rnd, client, server, rail, gbps, code, cerr, serr = row[:8]
    return rnd, client, server, rail, gbps, code, cerr, serr, (row[8] if len(row) > 8 and row[8] else rail)


def rdma_check(evaluated, threshold, findings):
    """``checks.ib_write_bw``: each test once, as a row of ``test_fields``; a test passed when its code is null.

    The worst-link grid, the pair matrices, the failing links and the JUnit cases are derived from these
    rows when the report is rendered or read (rdma_tests, worst_links, bandwidth_matrix, to_junit).
    """
    rows = rdma_rows(evaluated)
    ok = sum(r[5] is None for r in rows)
    return {"passed": not findings, "threshold_gbps": threshold,
            "detail": f"{ok}/{len(rows)} links >= {threshold:g} Gb/s",
            "test_fields": list(RDMA_TEST_FIELDS), "tests": rows}


def _rows(check):
    """The rows of ``checks.ib_write_bw.tests`` (a schema-1 report's test dicts converted)."""
    tests = (check or {}).get("tests") or []
    return rdma_rows(tests) if isinstance(tests[0] if tests else None, dict) else tests


def rdma_tests(check):
    """The tests of ``checks.ib_write_bw`` as dicts, for readers of report.json:
    {round, client: [node, device], server: [node, device], gbps, ok, code, client_error, server_error}."""
    return [{"round": rnd, "client": [client, rail], "server": [server, sdev], "gbps": gbps, "ok": code is None,
             "code": code, "client_error": cerr, "server_error": serr}
            for rnd, client, server, rail, gbps, code, cerr, serr, sdev in map(_fields, _rows(check))]


def _natural(s):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", str(s))]


def _low_first(row):
    """Sort key of a test: no result lowest, then the lower Gb/s."""
    return -1.0 if row[4] is None else float(row[4])


def _worst_passing(passing):
    """{(node, rail): (row, peer)}: each endpoint's lowest passing test (the first of equals).

    The dicts are built by C loops: sorted highest first, a later (lower) row overwrites an earlier one."""
    ordered = sorted(reversed(passing), key=itemgetter(4), reverse=True)
    worst = {}
    for end, peer in ((1, 2), (2, 1)):
        side = dict(zip(zip(map(itemgetter(end), ordered), map(itemgetter(3), ordered)), ordered))
        for key, row in side.items():
            cur = worst.get(key)
            if cur is None or row[4] < cur[0][4]:
                worst[key] = (row, row[peer])
    return worst


def worst_links(rows):
    """The node x rail grid of the ib_write_bw tests (rows of RDMA_TEST_FIELDS): each endpoint's worst link.

    Returns ``{"rails": [...], "nodes": [...], "cells": {node: {rail: {gbps, ok, code, peer, tests, failing}}}}``:
    per node and rail the worst test the endpoint took part in (failing before passing, then the lowest
    Gb/s, no result lowest), its peer, how many tests it was in and how many of them failed.
    """
    rail_of = itemgetter(3)
    tests = Counter(zip(map(itemgetter(1), rows), map(rail_of, rows)))
    tests.update(zip(map(itemgetter(2), rows), map(rail_of, rows)))
    failing = [r for r in rows if r[5] is not None]
    fails = Counter((end, r[3]) for r in failing for end in (r[1], r[2]))
    worst = _worst_passing([r for r in rows if r[5] is None])
    for r in failing:
        for key, peer in (((r[1], r[3]), r[2]), ((r[2], r[3]), r[1])):
            cur = worst.get(key)
            if cur is None or cur[0][5] is None or _low_first(r) < _low_first(cur[0]):
                worst[key] = (r, peer)
    cells = {}
    for (node, rail), (row, peer) in worst.items():
        cells.setdefault(node, {})[rail] = {"gbps": row[4], "ok": row[5] is None, "code": row[5], "peer": peer,
                                            "tests": tests[(node, rail)], "failing": fails[(node, rail)]}
    return {"rails": sorted({rail for _node, rail in worst}, key=_natural), "nodes": sorted(cells, key=_natural),
            "cells": cells}


def bandwidth_matrix(rows):
    """{rail: {"nodes": [...], "cells": {(client, server): {gbps, ok, code}}}}: the pair matrix per rail."""
    rails = {}
    for _rnd, client, server, rail, gbps, code, *_rest in rows:
        r = rails.setdefault(rail, {"nodes": set(), "cells": {}})
        r["nodes"].update((client, server))
        r["cells"][(client, server)] = {"gbps": gbps, "ok": code is None, "code": code}
    return {rail: {"nodes": sorted(r["nodes"], key=_natural), "cells": r["cells"]}
            for rail, r in sorted(rails.items(), key=lambda x: _natural(x[0]))}


def failing_links(rows):
    """Every failing test (rows of RDMA_TEST_FIELDS), the worst first."""
    return sorted((r for r in rows if r[5] is not None),
                  key=lambda r: (_low_first(r), _natural(r[3]), _natural(r[1]), _natural(r[2])))


def rdma_view(report, limit=None):
    """What summary.md and heatmap.svg show of ib_write_bw, derived once from the stored tests:
    {"check", "rows", "grid" (worst_links), "limit", "matrix" (bandwidth_matrix, only up to ``limit`` nodes)}."""
    check = (report.get("checks") or {}).get("ib_write_bw") or {}
    rows = _rows(check)
    grid = worst_links(rows)
    limit = MATRIX_MAX_NODES if limit is None else limit
    return {"check": check, "rows": rows, "grid": grid, "limit": limit,
            "matrix": bandwidth_matrix(rows) if len(grid["nodes"]) <= limit else {}}


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


def heatmap_svg(report, matrix_max_nodes=None, view=None):
    """The ib_write_bw heat map as SVG: legend, node x rail worst-link grid, and per rail the pair matrix.

    Host names are written as the inventory has them. Passing links are green (darker nearer line rate);
    failing links are red with a white hatch, a dark edge and a cross, so they read without colour too.
    Every cell carries a ``<title>`` (tooltip) with the endpoints, Gb/s and fault code. The pair matrices
    are drawn up to ``matrix_max_nodes`` (MATRIX_MAX_NODES) nodes; the grid at any size. ``view``:
    rdma_view(report) when the caller has it already.
    """
    view = view or rdma_view(report, matrix_max_nodes)
    rdma, grid, matrix, limit = view["check"], view["grid"], view["matrix"], view["limit"]
    line_rate = float((report.get("fabric") or {}).get("link_speed_gbps") or 1)
    threshold = float(rdma.get("threshold_gbps") or line_rate)
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
        drawn = list(matrix.items())
        if len(nodes) > limit:
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
                    c = None if a == b else (m["cells"].get((a, b)) or m["cells"].get((b, a)))
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

def render_reports(report):
    """{file name: text} of the four report files; the ib_write_bw view is derived once for all of them."""
    # json.dumps without indent or sorting is the C encoder at its fastest (json.dump and indent are pure
    # Python: many seconds for a 256-node full plan); a report small enough to read in an editor is
    # indented and sorted again for people.
    text = json.dumps(report)
    if len(text) < JSON_INDENT_MAX:
        text = json.dumps(report, indent=1, sort_keys=True)
    view = rdma_view(report)
    return {"report.json": text + "\n", "summary.md": to_markdown(report, view), "junit.xml": to_junit(report),
            "heatmap.svg": heatmap_svg(report, view=view)}


def write_reports(report, reports_dir, stamp=None, rendered=None):
    """Write the report files to ``<reports_dir>/<stamp>/`` and point ``latest`` at it;
    ``rendered``: render_reports(report) when the caller has it already."""
    rendered = rendered or render_reports(report)
    stamp = stamp or report["generated_at"].replace(":", "").replace("-", "")
    out = os.path.join(reports_dir, stamp)
    n = 1
    while os.path.exists(out):
        n += 1
        out = os.path.join(reports_dir, f"{stamp}-{n}")
    os.makedirs(out)
    files = {"json": "report.json", "markdown": "summary.md", "junit": "junit.xml", "heatmap": "heatmap.svg"}
    for name in files.values():
        with open(os.path.join(out, name), "w") as f:
            f.write(rendered[name])
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


# ---------------------------------------------------------------- history and trends (issue 27)

# How many runs <reports_dir> keeps (the oldest beyond it are removed after a write; latest is never removed).
HISTORY_KEEP = 30
# A rail's worst ib_write_bw (or a nccl-tests busbw) lower than the previous run's by more than this share is a trend.
TREND_BANDWIDTH_DROP = 0.05
# A BER that grew by more than this factor since the previous run is a trend (a BER moves in orders of magnitude).
TREND_BER_FACTOR = 10.0
_RUN_DIR = re.compile(r"\d{8}T\d{6}Z(-\d+)?")


def scope_of(report):
    """What makes two runs comparable: the mode (verification or audit) and the nodes verified."""
    return {"mode": "audit" if report.get("mode") else "verify",
            "nodes": sorted(str(n) for n in ((report.get("meta") or {}).get("nodes") or []))}


def run_dirs(reports_dir):
    """The run directories of ``reports_dir`` (``<timestamp>[-n]``), oldest first."""
    try:
        names = [n for n in os.listdir(reports_dir) if _RUN_DIR.fullmatch(n)
                 and os.path.isdir(os.path.join(reports_dir, n))]
    except FileNotFoundError:
        return []
    return sorted(names, key=lambda n: (n.split("-")[0], int(n.split("-")[1]) if "-" in n else 1))


def previous_report(reports_dir, report):
    """(directory, report) of the newest earlier run of the same scope, or (None, None)."""
    want = scope_of(report)
    for name in reversed(run_dirs(reports_dir)):
        try:
            with open(os.path.join(reports_dir, name, "report.json")) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and scope_of(doc) == want:
            return name, doc
    return None, None


def _finding_key(f):
    return (f.get("code"), f.get("node"), f.get("device"), f.get("switch"), f.get("switch_port"))


def _rail_bandwidth(report):
    grid = worst_links(_rows((report.get("checks") or {}).get("ib_write_bw") or {}))
    return {(n, r): c["gbps"] for n, rails in grid["cells"].items() for r, c in rails.items() if c.get("gbps") is not None}


def _ports(report):
    return {(p["node"], p["device"]): p for p in ((report.get("checks") or {}).get("link_health") or {}).get("ports") or []}


def trends(report, previous, bandwidth_drop=TREND_BANDWIDTH_DROP, ber_factor=TREND_BER_FACTOR):
    """What changed since ``previous`` (a report of the same scope): bandwidth down by more than
    ``bandwidth_drop``, BER up by more than ``ber_factor``, window error counts or flaps up, findings new and gone."""
    out = {"bandwidth_down": [], "busbw_down": [], "ber_rising": [], "errors_rising": [],
           "findings_new": [], "findings_gone": []}
    before, now = _rail_bandwidth(previous), _rail_bandwidth(report)
    for key in sorted(set(before) & set(now), key=lambda k: (_natural(k[0]), _natural(k[1]))):
        b, a = float(before[key]), float(now[key])
        if b > 0 and (b - a) / b > bandwidth_drop:
            out["bandwidth_down"].append({"node": key[0], "device": key[1], "before_gbps": b, "gbps": a,
                                          "drop": round((b - a) / b, 4)})
    for name, c in (report.get("checks") or {}).items():
        p = ((previous.get("checks") or {}).get(name) or {})
        if name.startswith("nccl:") and p.get("busbw_gbytes") and c.get("busbw_gbytes") is not None:
            b, a = float(p["busbw_gbytes"]), float(c["busbw_gbytes"])
            if b > 0 and (b - a) / b > bandwidth_drop:
                out["busbw_down"].append({"test": name, "before_gbytes": b, "gbytes": a, "drop": round((b - a) / b, 4)})
    pb, pa = _ports(previous), _ports(report)
    for key in sorted(set(pb) & set(pa), key=lambda k: (_natural(k[0]), _natural(k[1]))):
        b, a = pb[key], pa[key]
        for ber in ("effective_ber", "raw_ber"):
            if a.get(ber) is not None and b.get(ber) is not None and a[ber] > max(b[ber], 0) * ber_factor and a[ber] > 0:
                out["ber_rising"].append({"node": key[0], "device": key[1], "counter": ber, "before": b[ber], "now": a[ber]})
        for cnt in ("errors", "flaps"):
            if (a.get(cnt) or 0) > (b.get(cnt) or 0):
                out["errors_rising"].append({"node": key[0], "device": key[1], "counter": cnt,
                                             "before": b.get(cnt) or 0, "now": a.get(cnt)})
    old = {_finding_key(f): f for f in previous.get("findings") or []}
    new = {_finding_key(f): f for f in report.get("findings") or []}
    short = ("code", "severity", "node", "device", "switch", "switch_port")
    out["findings_new"] = [{k: new[x].get(k) for k in short} for x in new if x not in old]
    out["findings_gone"] = [{k: old[x].get(k) for k in short} for x in old if x not in new]
    return out


def last_pass(report, previous=None):
    """{node: time of its last passing run}: this run's time for a node verified with no error finding,
    else what the previous run of the same scope recorded (report.json history.last_pass)."""
    out = dict(((previous or {}).get("history") or {}).get("last_pass") or {})
    failed = {f.get("node") for f in report.get("findings") or [] if f.get("severity") == "error"}
    for node in (report.get("meta") or {}).get("nodes") or []:
        if node not in failed:
            out[str(node)] = report["generated_at"]
    return out


def attach_history(report, reports_dir, bandwidth_drop=TREND_BANDWIDTH_DROP, ber_factor=TREND_BER_FACTOR):
    """Add ``history`` ({previous, last_pass}) and ``trends`` (against the previous run of the same scope) to
    ``report`` before it is rendered; returns it."""
    name, prev = previous_report(reports_dir, report) if reports_dir else (None, None)
    report["history"] = {"previous": name, "previous_generated_at": (prev or {}).get("generated_at"),
                         "last_pass": last_pass(report, prev)}
    if prev is not None:
        report["trends"] = trends(report, prev, bandwidth_drop, ber_factor)
    return report


def prune_history(reports_dir, keep=HISTORY_KEEP):
    """Remove the oldest run directories beyond ``keep`` (never the one ``latest`` points to); returns their names."""
    if keep < 1:
        raise ValueError(f"history keep: {keep!r} is not allowed (allowed: an integer >= 1)")
    latest = os.path.basename(os.path.realpath(os.path.join(reports_dir, "latest")))
    runs = run_dirs(reports_dir)
    gone = [n for n in runs[:max(0, len(runs) - keep)] if n != latest]
    for name in gone:
        shutil.rmtree(os.path.join(reports_dir, name))
    return gone


def _trend_lines(report):
    """summary.md's section on what changed since the previous run of the same scope."""
    t = report.get("trends")
    hist = report.get("history") or {}
    if t is None:
        return ["## Trend", "", "No earlier run of the same scope (mode and nodes) to compare with.", ""] \
            if "history" in report else []
    lines = [f"## Trend since the previous run ({hist.get('previous')}, {hist.get('previous_generated_at')})", ""]
    for x in t["bandwidth_down"]:
        lines.append(f"- bandwidth down: {x['node']} {x['device']} {x['before_gbps']:.1f} -> {x['gbps']:.1f} Gb/s "
                     f"(-{x['drop'] * 100:.1f} %)")
    for x in t["busbw_down"]:
        lines.append(f"- busbw down: {x['test']} {x['before_gbytes']:.2f} -> {x['gbytes']:.2f} GB/s (-{x['drop'] * 100:.1f} %)")
    for x in t["ber_rising"]:
        lines.append(f"- BER rising: {x['node']} {x['device']} {x['counter']} {x['before']:.1e} -> {x['now']:.1e}")
    for x in t["errors_rising"]:
        lines.append(f"- {x['counter']} rising: {x['node']} {x['device']} {x['before']} -> {x['now']} over the window")
    for what, key in (("new", "findings_new"), ("gone", "findings_gone")):
        for x in t[key]:
            where = " ".join(str(x[k]) for k in ("node", "device", "switch", "switch_port") if x.get(k))
            lines.append(f"- finding {what}: {x['code']} ({x['severity']}) {where}".rstrip())
    if len(lines) == 2:
        lines.append("No change: the same findings, no bandwidth drop, no rising BER or error count.")
    return lines + [""]
