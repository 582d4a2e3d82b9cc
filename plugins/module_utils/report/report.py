"""Verification reports: JSON, Markdown, JUnit XML and an SVG bandwidth heat map.

Stdlib only, usable from the verify_report
action on the controller and on its own (the checkout's command-line summary,
scripts/report_summary.py, loads it so)::

    python scripts/report_summary.py reports/latest     # print the summary

``write_reports(report, reports_dir)`` writes ``<reports_dir>/<timestamp>/``
{report.json, summary.md, report.html, junit.xml, heatmap.svg} and points
``<reports_dir>/latest`` at it. report.html is summary.md as one self-contained
page (inline CSS, the heat map inline as SVG, nothing fetched), for a browser.

The ib_write_bw check's rows are stored by checks/rdma.py and viewed by rdma.py, the SVG heat map in heatmap.py,
history and trends in history.py.
"""
import datetime
import html
import json
import os
import re
from xml.sax.saxutils import escape

from ansible_collections.linerate.fabric.plugins.module_utils.checks import attribution
from ansible_collections.linerate.fabric.plugins.module_utils.report import files as report_files
from ansible_collections.linerate.fabric.plugins.module_utils.report.heatmap import heatmap_svg
from ansible_collections.linerate.fabric.plugins.module_utils.checks.estimates import duration_text
from ansible_collections.linerate.fabric.plugins.module_utils.checks.incast import proven_text
from ansible_collections.linerate.fabric.plugins.module_utils.checks.names import natural_key
from ansible_collections.linerate.fabric.plugins.module_utils.checks.rdma import row_fields, stored_rows
from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import failing_links, gbps_text, rdma_view
from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_tune import table_markdown as _tuning_table


# 2: checks.ib_write_bw stores each test once, as a row of RDMA_TEST_FIELDS (its matrix and JUnit cases
# are derived on read); 1 stored every test three times (tests, matrix, cases).
SCHEMA_VERSION = 2


# Failing links listed one by one in summary.md (report.json has every test).
FAILING_LINKS_MAX = 100


# report.json is indented for people below this size (characters), one line above it.
JSON_INDENT_MAX = 1 << 20


# A bit error rate below this is shown as "< 1e-15", an upper bound, not its digits: mlxlink prints 15E-255
# when it counted no error at all (1.5e-254 is "none counted", not a measurement), and one error in 1e15 bits
# is already 42 minutes of a 400 Gb/s link, more than a verification window carries. Any BER threshold a
# fabric is held to (effective 1e-12, raw 2.4e-4) is far above it. report.json keeps the value as read.
BER_FLOOR = 1e-15


def ber_text(value, floor=BER_FLOOR):
    """A bit error rate for people: ``1.5e-12``, ``< 1e-15`` below ``floor`` (zero included), '' when unread."""
    if value is None or isinstance(value, bool):
        return ""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v < floor:
        return "< " + _exp(floor, 0)
    return _exp(v, 1)


def _exp(v, digits):
    """1.5e-12, 2.4e-4, 1e-15: the exponent without its padding zero or plus sign."""
    mant, ex = f"{v:.{digits}e}".split("e")
    return f"{mant}e{int(ex)}"


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


# Findings that say a thing could not be read or proven (a switch or lldpd that did not answer, a counter the
# platform lacks): warnings, so the check still passes, but the state of what they cover is "unproven", not "ok".
UNPROVEN_CODES = frozenset(("CABLE_UNVERIFIED", "COUNTER_MISSING", "READINESS_UNPROVEN", "INCAST_INCONCLUSIVE"))


def check_state(name, check, findings):
    """The result column of a check: FAIL, skipped, unproven (what its findings could not read or prove),
    pass with warnings, or pass."""
    if not check.get("passed"):
        return "skipped" if check.get("skipped") else "FAIL"
    mine = [x for x in findings if x.get("check") == name]
    # what its findings could not prove, and the switches that answered but left a part unread
    unproven = sum(x.get("code") in UNPROVEN_CODES for x in mine) + len(check.get("partly_read") or {})
    if unproven:
        return f"unproven ({unproven} not read or not proven)"
    warnings = sum(x.get("severity") == "warning" for x in mine)
    return f"pass ({warnings} warning{'' if warnings == 1 else 's'})" if warnings else "pass"


def case_state(case):
    """The result of one case as it is: FAIL, not read (skipped, with why), unproven or warning (passed with a
    finding), ok."""
    if case.get("skipped"):
        return f"not read ({_cell(case['message'])})" if case.get("message") else "skipped"
    if not case.get("ok"):
        return "FAIL"
    if case.get("code"):
        return "unproven" if case["code"] in UNPROVEN_CODES else "warning"
    return "partly read" if str(case.get("message") or "").startswith("partly read") else "ok"


def to_markdown(report, view=None):
    """summary.md; ``view``: rdma_view(report) when the caller has it already."""
    s = report["summary"]
    f = report["fabric"]
    lines = [f"# Fabric verification: {'PASSED' if s['passed'] else 'FAILED'}", "",
             f"Fabric **{f.get('name')}** ({f.get('transport')}, {f.get('link_speed_gbps')} Gb/s x{f.get('link_width')}), "
             f"{report['generated_at']}: {s['errors']} error(s), {s['warnings']} warning(s).", ""]
    phases = (report.get("meta") or {}).get("phases") or []
    if phases:
        total = sum(p["seconds"] for p in phases)
        lines += ["Phases: " + ", ".join(f"{p['phase']} {p['seconds']:g} s" for p in phases)
                  + f"; {total:.1f} s" + (f" ({duration_text(total)})" if total >= 60 else "") + " in all.", ""]
    sched = ((report.get("checks") or {}).get("ib_write_bw") or {}).get("schedule") or {}
    if sched.get("rounds"):
        slow = max(sched["rounds"], key=lambda r: r["seconds"])
        lines += [f"ib_write_bw rounds: {len(sched['rounds'])}, the slowest round {slow['round']} "
                  f"({slow['seconds']:g} s); {sched.get('client_retries', 0)} client start(s) again while "
                  "a server was not listening yet"
                  + (f"; parts waited {sched['peer_wait']:g} s in all for a peer still in an earlier round"
                     if sched.get("peer_wait") else "") + ".", ""]
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
        lines.append(f"| {name} | {check_state(name, c, report['findings'])} | {_cell(c.get('detail'))} |")
    lines.append("")
    if report["findings"]:
        lines += ["## Findings", "", "| code | layer | node | device | switch | port | message |",
                  "|---|---|---|---|---|---|---|"]
        for x in report["findings"]:
            lines.append("| " + " | ".join(_cell(x.get(k)) for k in
                                           ("code", "layer", "node", "device", "switch", "switch_port", "message")) + " |")
        lines.append("")
    lines += attribution.markdown(report)
    rails = (checks.get("readiness") or {}).get("rails") or {}
    if rails:
        lines += ["### Rails (NIC -> nearest GPU, nvidia-smi topo -m)", "", "| node | device | PCI | GPU | GPU PCI | link |",
                  "|---|---|---|---|---|---|"]
        keys = ("device", "pci", "gpu", "gpu_pci", "link")
        lines += ["| " + " | ".join(_cell(x) for x in (n, *(r.get(k) for k in keys))) + " |"
                  for n, rs in sorted(rails.items(), key=lambda x: natural_key(x[0]))
                  for r in sorted(rs, key=lambda r: natural_key(r.get("device")))]
    cab = checks.get("cabling") or {}
    if cab.get("cases"):
        lines += ["### Cabling (LLDP)", "", "| link | result | code |", "|---|---|---|"]
        lines += [f"| {_cell(c['name'])} | {case_state(c)} | {_cell(c.get('code'))} |"
                  for c in sorted(cab["cases"], key=lambda c: natural_key(c.get("name")))]
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
                     + tuning_lines(report) + rollout_lines(report)) + "\n"


def rollout_lines(report):
    """summary.md's rollout section: the host stack's waves of this run (playbooks/stages/hosts.yml) and
    every node's state with its disruptive step's start and end (empty without a rollout)."""
    section = report.get("rollout")
    if not section:
        return []
    counts = ", ".join(f"{v} {k}" for k, v in (section.get("counts") or {}).items() if v)
    halt = section.get("halted_at_wave")
    lines = ["## Host rollout", "",
             f"{len(section.get('waves') or [])} wave(s), at most {section.get('max_unavailable')} node(s) at once "
             f"(spread: {', '.join(section.get('spread') or []) or 'none'}); {counts or 'no nodes'}; "
             f"most disrupted at once: {section.get('max_disrupted_at_once')}"
             + (f"; halted after wave {halt}" if halt is not None else ""), "",
             "| node | wave | state | disruptive step | start | end |", "|---|---|---|---|---|---|"]
    for name, node in (section.get("nodes") or {}).items():
        steps = node.get("steps") or [{}]
        for step in steps:
            end = step.get("end") or (f"failed {step['failed']}" if step.get("failed") else "")
            lines.append(f"| {name} | {'' if node.get('wave') is None else node['wave']} | {node.get('state')} | "
                         f"{step.get('action', '')} | {step.get('start', '')} | {end} |")
    return lines + [""]


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
                cells = gbps_text(case.get("gbps"))
            lines.append(f"| {_cell(case['name'])} | {cells} | {'ok' if case['ok'] else 'FAIL ' + _cell(case['code'])} |")
        lines.append("")
    return lines


# at most this many incast groups get a counter table in summary.md (every failing one always does)
INCAST_TABLES = 16


def _evidence(checks):
    """Per-rail incast counters and per-port link health, as tables."""
    lines = []
    rails = (checks.get("incast") or {}).get("rails") or []
    cov = (checks.get("incast") or {}).get("coverage")
    if cov:
        lines += [f"### incast rotation: {cov.get('rounds', 0)} round(s), every node a receiver once", "",
                  f"- host ports proven lossless: {proven_text(cov.get('ports'))}",
                  f"- leaf uplinks proven (a sender under another leaf): {proven_text(cov.get('uplinks'))}"]
        if cov.get("unproven_ports"):
            unproven = sorted(cov["unproven_ports"], key=natural_key)
            lines.append(f"- not proven: {', '.join(unproven[:20])}"
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
    for sw, what in sorted(((checks.get("incast") or {}).get("switch_unproven") or {}).items(),
                           key=lambda x: natural_key(x[0])):
        lines += [f"- not proven on {sw} (the platform does not report them): {', '.join(what)}"]
    if (checks.get("incast") or {}).get("switch_unproven"):
        lines.append("")
    ports = (checks.get("link_health") or {}).get("ports") or []
    if ports:
        lines += ["### link health over the verification window", "",
                  "| node | device | switch port | errors | flaps | switch errors | switch flaps | effective BER | raw BER "
                  "| FEC |", "|---" * 10 + "|"]
        for p in sorted(ports, key=lambda p: (natural_key(p.get("node")), natural_key(p.get("device")))):
            ber = [ber_text(p.get(k)) for k in ("effective_ber", "raw_ber")]
            # the switch end: its counts, or "not read" where the switch's read failed (never a blank, never 0)
            sw_cells = ([_cell(p.get("switch_errors")), _cell(p.get("switch_flaps"))]
                        if p.get("switch_read", "read") == "read" else ["not read", "not read"])
            lines.append(f"| {p['node']} | {p['device']} | {_cell(p.get('switch'))} {_cell(p.get('switch_port'))} | "
                         f"{_cell(p.get('errors'))} | {_cell(p.get('flaps'))} | {sw_cells[0]} | "
                         f"{sw_cells[1]} | {ber[0]} | {ber[1]} | {_cell(p.get('fec'))} |")
        lines += ["", "errors, flaps: counted by the host's port; switch errors, switch flaps: counted by the switch "
                  "port at the other end of the cable (not read: the switch's counters could not be read, "
                  "report.json's switch_read says why; empty: not reported by the platform). "
                  f"BER: as read at the window's end; below {_exp(BER_FLOOR, 0)} (mlxlink's 15E-255: no error "
                  f"counted) it is shown as < {_exp(BER_FLOOR, 0)}, an upper bound.", ""]
        for sw, what in sorted(((checks.get("link_health") or {}).get("switch_unproven") or {}).items(),
                               key=lambda x: natural_key(x[0])):
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
                       f"{'' if c['ok'] else 'FAIL '}{gbps_text(c['gbps'])} ({_cell(c['peer'])}"
                       + (f", {c['failing']}/{c['tests']} failing)" if c["failing"] else ")"))
        lines.append(f"| {_cell(node)} | " + " | ".join(row) + " |")
    lines.append("")
    if len(grid["nodes"]) > view["limit"]:
        bad = failing_links(view["rows"])
        lines += [f"### ib_write_bw failing links ({len(bad)}; the pair matrix is shown up to "
                  f"{view['limit']} nodes, this fabric has {len(grid['nodes'])})", ""]
        lines += [f"- {client} -> {server} {rail}" + (f" -> {sdev}" if sdev != rail else "") + f": {gbps_text(gbps)} Gb/s {code}"
                  for _rnd, client, server, rail, gbps, code, _cerr, _serr, sdev in map(row_fields, bad[:FAILING_LINKS_MAX])]
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
                                  "message": cerr or serr or f"{gbps_text(gbps)} Gb/s < {threshold:g} Gb/s"})
            for rnd, client, server, rail, gbps, code, cerr, serr, sdev in map(row_fields, stored_rows(check))]


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


# ---------------------------------------------------------------- HTML

# report.html's style, inline: tables scroll sideways on a narrow screen instead of squeezing their text, and
# the heat map keeps its own pixel size (its labels stay legible at any fabric size: the page scrolls).
HTML_STYLE = """
body{font-family:"DejaVu Sans",Arial,sans-serif;font-size:14px;margin:16px 24px;color:#111;background:#fff}
h1{font-size:22px}h1.passed{color:#006d2c}h1.failed{color:#b2182b}h2{font-size:18px;margin-top:28px}
h3{font-size:15px;margin-top:22px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top;white-space:nowrap}
td.wrap{white-space:normal;min-width:24em}
th{background:#eee}
td.fail{background:#fbd5d5;color:#67000d;font-weight:bold}td.ok{color:#006d2c}
td.unproven{background:#fff3c4}
code{font-family:"DejaVu Sans Mono",monospace;font-size:13px}
.heatmap svg{display:block;max-width:none;height:auto}
"""


def _inline(text):
    """One line of summary.md as HTML: escaped, **bold** and `code` kept."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _md_cells(line):
    """The cells of a Markdown table row (an escaped ``\\|`` is part of a cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def _td(cell):
    """A table cell, classed by the state it names (FAIL..., ok/pass, unproven/not read) for its colour."""
    low = cell.lower()
    cls = ("fail" if cell.startswith("FAIL") else "ok" if low in ("ok", "pass") or low.startswith("pass")
           else "unproven" if low.startswith(("unproven", "not read", "partly read", "warning")) else "wrap" if len(cell) > 80 else "")
    return f'<td class="{cls}">{_inline(cell)}</td>' if cls else f"<td>{_inline(cell)}</td>"


def markdown_html(markdown):
    """summary.md's Markdown (headings, tables, lists, paragraphs: what to_markdown writes) as HTML."""
    out, table, items, para = [], None, None, []

    def flush():
        nonlocal table, items, para
        if table is not None:
            head, rows = table[0], table[1:]
            out.append('<div class="scroll"><table><thead><tr>' + "".join(f"<th>{_inline(c)}</th>" for c in head)
                       + "</tr></thead><tbody>" + "".join("<tr>" + "".join(_td(c) for c in r) + "</tr>" for r in rows)
                       + "</tbody></table></div>")
        if items is not None:
            out.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in items) + "</ul>")
        if para:
            out.append("<p>" + " ".join(_inline(x) for x in para) + "</p>")
        table, items, para = None, None, []

    for line in markdown.splitlines():
        heading = re.match(r"(#{1,6}) (.*)", line)
        if line.startswith("|"):
            if table is None:
                flush()
                table = []
            if not re.fullmatch(r"\|(-+\|)+", line.strip()):
                table.append(_md_cells(line))
        elif line.startswith("- "):
            if items is None:
                flush()
                items = []
            items.append(line[2:])
        elif heading:
            flush()
            level = len(heading.group(1))
            cls = ""
            if level == 1:
                cls = ' class="failed"' if "FAILED" in heading.group(2) else ' class="passed"'
            out.append(f"<h{level}{cls}>{_inline(heading.group(2))}</h{level}>")
        elif not line.strip():
            flush()
        else:
            if table is not None or items is not None:
                flush()
            para.append(line)
    flush()
    return "\n".join(out)


def to_html(report, markdown=None, svg=None, view=None):
    """report.html: one self-contained page, summary.md's sections and the ib_write_bw heat map inline.

    Nothing is fetched (inline CSS, inline SVG, no script, no link): it opens from a mail or an archive, offline.
    ``markdown``, ``svg``: to_markdown / heatmap_svg of the report when the caller has them already."""
    view = view or rdma_view(report)
    markdown = markdown if markdown is not None else to_markdown(report, view)
    svg = svg if svg is not None else heatmap_svg(report, view=view)
    body = markdown_html(markdown)
    title = markdown.splitlines()[0].lstrip("# ") if markdown else "Fabric verification"
    fabric = (report.get("fabric") or {}).get("name")
    if view["grid"]["nodes"]:
        body += ('\n<h2>ib_write_bw heat map</h2>\n<div class="scroll heatmap">'
                 + svg.split("\n", 1)[1] + "</div>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}: {html.escape(str(fabric))}</title>"
            f"<style>{HTML_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


# ---------------------------------------------------------------- files

def render_reports(report):
    """{file name: text} of the five report files; the ib_write_bw view is derived once for all of them."""
    # json.dumps without indent or sorting is the C encoder at its fastest (json.dump and indent are pure
    # Python: many seconds for a 256-node full plan); a report small enough to read in an editor is
    # indented and sorted again for people.
    text = json.dumps(report)
    if len(text) < JSON_INDENT_MAX:
        text = json.dumps(report, indent=1, sort_keys=True)
    view = rdma_view(report)
    markdown, svg = to_markdown(report, view), heatmap_svg(report, view=view)
    return {"report.json": text + "\n", "summary.md": markdown, "junit.xml": to_junit(report),
            "heatmap.svg": svg, "report.html": to_html(report, markdown, svg, view)}


def write_reports(report, reports_dir, stamp=None, rendered=None):
    """Write the report files to ``<reports_dir>/<stamp>/`` and point ``latest`` at it;
    ``rendered``: render_reports(report) when the caller has it already.

    Atomic (report/files.py): every file 0600 in a 0700 directory, written whole in a temporary
    directory that is renamed to its run name, then ``latest`` replaced; a failure keeps nothing of this
    report and raises report_files.ReportWriteError, the earlier reports and ``latest`` as they were."""
    rendered = rendered or render_reports(report)
    stamp = stamp or report["generated_at"].replace(":", "").replace("-", "")
    files = {"json": "report.json", "markdown": "summary.md", "html": "report.html", "junit": "junit.xml",
             "heatmap": "heatmap.svg"}
    out = report_files.publish(reports_dir, stamp, {name: rendered[name] for name in files.values()})
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
        lines.append(f"- BER rising: {x['node']} {x['device']} {x['counter']} {ber_text(x['before'])} -> "
                     f"{ber_text(x['now'])}")
    for x in t["errors_rising"]:
        lines.append(f"- {x['counter']} rising: {x['node']} {x['device']} {x['before']} -> {x['now']} over the window")
    for what, key in (("new", "findings_new"), ("gone", "findings_gone")):
        for x in t[key]:
            where = " ".join(str(x[k]) for k in ("node", "device", "switch", "switch_port") if x.get(k))
            lines.append(f"- finding {what}: {x['code']} ({x['severity']}) {where}".rstrip())
    if len(lines) == 2:
        lines.append("No change: the same findings, no bandwidth drop, no rising BER or error count.")
    return lines + [""]
