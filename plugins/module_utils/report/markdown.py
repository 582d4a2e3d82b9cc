"""summary.md: the verification report for people, in Markdown (every check, its findings, the tables
of the ib_write_bw check, the trends, the NCCL tuning sweep, the host rollout); and how a state, a case
and a bit error rate read there (page.py renders the same text as report.html).
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import attribution
from ansible_collections.linerate.fabric.plugins.module_utils.checks.estimates import duration_text
from ansible_collections.linerate.fabric.plugins.module_utils.checks.incast import proven_text
from ansible_collections.linerate.fabric.plugins.module_utils.checks.names import natural_key
from ansible_collections.linerate.fabric.plugins.module_utils.checks.rdma import row_fields
from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_tune import table_markdown as _tuning_table
from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import failing_links, gbps_text, rdma_view

# Failing links listed one by one in summary.md (report.json has every test).
FAILING_LINKS_MAX = 100


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


def _head_lines(report):
    """The title, the fabric and the counts; the phases' times, the ib_write_bw rounds, the re-tests, the mode."""
    s = report["summary"]
    f = report["fabric"]
    what = "audit" if report.get("mode") else "verification"
    lines = [
        f"# Fabric {what}: {'PASSED' if s['passed'] else 'FAILED'}",
        "",
        f"Fabric **{f.get('name')}** ({f.get('transport')}, {f.get('link_speed_gbps')} Gb/s x{f.get('link_width')}), "
        f"{report['generated_at']}: {s['errors']} error(s), {s['warnings']} warning(s).",
        "",
    ]
    phases = (report.get("meta") or {}).get("phases") or []
    if phases:
        total = sum(p["seconds"] for p in phases)
        lines += [
            "Phases: "
            + ", ".join(f"{p['phase']} {p['seconds']:g} s" for p in phases)
            + f"; {total:.1f} s"
            + (f" ({duration_text(total)})" if total >= 60 else "")
            + " in all.",
            "",
        ]
    sched = ((report.get("checks") or {}).get("ib_write_bw") or {}).get("schedule") or {}
    if sched.get("rounds"):
        slow = max(sched["rounds"], key=lambda r: r["seconds"])
        lines += [
            f"ib_write_bw rounds: {len(sched['rounds'])}, the slowest round {slow['round']} "
            f"({slow['seconds']:g} s); {sched.get('client_retries', 0)} client start(s) again while "
            "a server was not listening yet"
            + (f"; parts waited {sched['peer_wait']:g} s in all for a peer still in an earlier round" if sched.get("peer_wait") else "")
            + ".",
            "",
        ]
    retest = (report.get("meta") or {}).get("retest_phases")
    if isinstance(retest, dict) and retest.get("max") is not None:
        lines += [f"Re-test phases (sampled plan): {retest.get('ran', 0)} of at most {retest['max']} ran ({retest.get('rounds', 0)} round(s)).", ""]
    if report.get("mode"):
        lines += [f"Mode: **{report['mode']}**.", ""]
    return lines


def _checks_lines(report):
    """The table of every check with its state, then the table of every finding."""
    lines = ["| check | result | detail |", "|---|---|---|"]
    for name, c in report.get("checks", {}).items():
        lines.append(f"| {name} | {check_state(name, c, report['findings'])} | {_cell(c.get('detail'))} |")
    lines.append("")
    if report["findings"]:
        lines += ["## Findings", "", "| code | layer | node | device | switch | port | message |", "|---|---|---|---|---|---|---|"]
        for x in report["findings"]:
            lines.append("| " + " | ".join(_cell(x.get(k)) for k in ("code", "layer", "node", "device", "switch", "switch_port", "message")) + " |")
        lines.append("")
    return lines


def _rails_cabling_lines(checks):
    """The readiness check's rails (NIC -> nearest GPU) and the cabling check's links (LLDP)."""
    lines = []
    rails = (checks.get("readiness") or {}).get("rails") or {}
    if rails:
        lines += ["### Rails (NIC -> nearest GPU, nvidia-smi topo -m)", "", "| node | device | PCI | GPU | GPU PCI | link |", "|---|---|---|---|---|---|"]
        keys = ("device", "pci", "gpu", "gpu_pci", "link")
        lines += [
            "| " + " | ".join(_cell(x) for x in (n, *(r.get(k) for k in keys))) + " |"
            for n, rs in sorted(rails.items(), key=lambda x: natural_key(x[0]))
            for r in sorted(rs, key=lambda r: natural_key(r.get("device")))
        ]
    cab = checks.get("cabling") or {}
    if cab.get("cases"):
        lines += ["### Cabling (LLDP)", "", "| link | result | code |", "|---|---|---|"]
        lines += [f"| {_cell(c['name'])} | {case_state(c)} | {_cell(c.get('code'))} |" for c in sorted(cab["cases"], key=lambda c: natural_key(c.get("name")))]
        lines.append("")
    return lines


def _matrix_lines(view, threshold):
    """One ib_write_bw pair matrix per rail (client row -> server column), up to the view's node limit."""
    lines = []
    for dev, m in view["matrix"].items():
        nodes = m["nodes"]
        lines += [
            f"### ib_write_bw {dev} (Gb/s, client row -> server column; threshold {threshold})",
            "",
            "| client \\ server | " + " | ".join(nodes) + " |",
            "|---" * (len(nodes) + 1) + "|",
        ]
        for a in nodes:
            row = []
            for b in nodes:
                c = m["cells"].get((a, b))
                row.append("" if c is None else ("FAIL " if not c["ok"] else "") + ("-" if c.get("gbps") is None else f"{c['gbps']:.1f}"))
            lines.append(f"| {a} | " + " | ".join(row) + " |")
        lines.append("")
    return lines


def to_markdown(report, view=None):
    """summary.md; ``view``: rdma_view(report) when the caller has it already."""
    checks = report.get("checks", {})
    lines = _head_lines(report) + _checks_lines(report) + attribution.markdown(report) + _rails_cabling_lines(checks)
    view = view or rdma_view(report)
    threshold = view["check"].get("threshold_gbps")
    if view["grid"]["nodes"]:
        lines += _markdown_links(view, threshold)
    lines += _matrix_lines(view, threshold)
    return "\n".join(lines + _evidence(checks) + bench_lines(checks) + _trend_lines(report) + tuning_lines(report) + rollout_lines(report)) + "\n"


def rollout_lines(report):
    """summary.md's rollout section: the host stack's waves of this run (playbooks/stages/hosts.yml) and
    every node's state with its disruptive step's start and end (empty without a rollout)."""
    section = report.get("rollout")
    if not section:
        return []
    counts = ", ".join(f"{v} {k}" for k, v in (section.get("counts") or {}).items() if v)
    halt = section.get("halted_at_wave")
    lines = [
        "## Host rollout",
        "",
        f"{len(section.get('waves') or [])} wave(s), at most {section.get('max_unavailable')} node(s) at once "
        f"(spread: {', '.join(section.get('spread') or []) or 'none'}); {counts or 'no nodes'}; "
        f"most disrupted at once: {section.get('max_disrupted_at_once')}" + (f"; halted after wave {halt}" if halt is not None else ""),
        "",
        "| node | wave | state | disruptive step | start | end |",
        "|---|---|---|---|---|---|",
    ]
    for name, node in (section.get("nodes") or {}).items():
        steps = node.get("steps") or [{}]
        for step in steps:
            end = step.get("end") or (f"failed {step['failed']}" if step.get("failed") else "")
            lines.append(
                f"| {name} | {'' if node.get('wave') is None else node['wave']} | {node.get('state')} | "
                f"{step.get('action', '')} | {step.get('start', '')} | {end} |"
            )
    return lines + [""]


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
        lines += [
            f"### {name} ({'latency, usec' if lat else 'bandwidth, Gb/s'}; threshold {limit:g})",
            "",
            f"| pair (client -> server, round) | {head} | result |",
            "|---" * (4 if lat else 3) + "|",
        ]
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
    return _incast_lines(checks) + _link_health_lines(checks)


def _incast_lines(checks):
    """The incast rotation's coverage and a counter table per rail (every failing one, then passing ones)."""
    lines = []
    rails = (checks.get("incast") or {}).get("rails") or []
    cov = (checks.get("incast") or {}).get("coverage")
    if cov:
        lines += [
            f"### incast rotation: {cov.get('rounds', 0)} round(s), every node a receiver once",
            "",
            f"- host ports proven lossless: {proven_text(cov.get('ports'))}",
            f"- leaf uplinks proven (a sender under another leaf): {proven_text(cov.get('uplinks'))}",
        ]
        if cov.get("unproven_ports"):
            unproven = sorted(cov["unproven_ports"], key=natural_key)
            lines.append(f"- not proven: {', '.join(unproven[:20])}" + (" ..." if len(cov["unproven_ports"]) > 20 else ""))
        lines.append("")
    shown = [r for r in rails if not r.get("ok", True)]
    shown += [r for r in rails if r.get("ok", True)][: max(0, INCAST_TABLES - len(shown))]
    for r in shown:
        cols = [
            k
            for k in ("pause", "discards", "ecn_marked", "cnp_sent", "cnp_handled", "out_of_sequence", "switch_pause", "switch_ecn_marked", "switch_drops")
            if k in r
        ]
        rnd = f"round {r['round']}, " if "round" in r else ""
        lines += [
            f"### incast {rnd}{r['device']}: {r['k']} senders into {r['receiver']} (counter deltas)",
            "",
            "| node | Gb/s | " + " | ".join(cols) + " |",
            "|---" * (len(cols) + 2) + "|",
        ]
        for n in [r["receiver"]] + list(r.get("senders") or []):
            g = (r.get("flows") or {}).get(n)
            lines.append(f"| {n} | {'' if g is None else f'{g:.1f}'} | " + " | ".join(_cell((r.get(k) or {}).get(n)) for k in cols) + " |")
        lines.append("")
    if len(shown) < len(rails):
        lines += [f"({len(rails) - len(shown)} more passing incast rails in report.json, checks.incast.rails)", ""]
    if any(k.startswith("switch_") for r in shown for k in r):
        lines += [
            "switch_* columns: the node's switch port, counted by the switch over all the benchmarks "
            "(pause on the no-drop priority, ECN marks, drops of the no-drop priority).",
            "",
        ]
    for sw, what in sorted(((checks.get("incast") or {}).get("switch_unproven") or {}).items(), key=lambda x: natural_key(x[0])):
        lines += [f"- not proven on {sw} (the platform does not report them): {', '.join(what)}"]
    if (checks.get("incast") or {}).get("switch_unproven"):
        lines.append("")
    return lines


def _link_health_lines(checks):
    """Per-port link health over the verification window, host and switch end, as a table."""
    lines = []
    ports = (checks.get("link_health") or {}).get("ports") or []
    if ports:
        lines += [
            "### link health over the verification window",
            "",
            "| node | device | switch port | errors | flaps | switch errors | switch flaps | effective BER | raw BER | FEC |",
            "|---" * 10 + "|",
        ]
        for p in sorted(ports, key=lambda p: (natural_key(p.get("node")), natural_key(p.get("device")))):
            ber = [ber_text(p.get(k)) for k in ("effective_ber", "raw_ber")]
            # the switch end: its counts, or "not read" where the switch's read failed (never a blank, never 0)
            sw_cells = [_cell(p.get("switch_errors")), _cell(p.get("switch_flaps"))] if p.get("switch_read", "read") == "read" else ["not read", "not read"]
            lines.append(
                f"| {p['node']} | {p['device']} | {_cell(p.get('switch'))} {_cell(p.get('switch_port'))} | "
                f"{_cell(p.get('errors'))} | {_cell(p.get('flaps'))} | {sw_cells[0]} | "
                f"{sw_cells[1]} | {ber[0]} | {ber[1]} | {_cell(p.get('fec'))} |"
            )
        lines += [
            "",
            "errors, flaps: counted by the host's port; switch errors, switch flaps: counted by the switch "
            "port at the other end of the cable (not read: the switch's counters could not be read, "
            "report.json's switch_read says why; empty: not reported by the platform). "
            f"BER: as read at the window's end; below {_exp(BER_FLOOR, 0)} (mlxlink's 15E-255: no error "
            f"counted) it is shown as < {_exp(BER_FLOOR, 0)}, an upper bound.",
            "",
        ]
        for sw, what in sorted(((checks.get("link_health") or {}).get("switch_unproven") or {}).items(), key=lambda x: natural_key(x[0])):
            lines += [f"- not proven on {sw} (the platform does not report them): {', '.join(what)}"]
        if (checks.get("link_health") or {}).get("switch_unproven"):
            lines.append("")
    return lines


def _markdown_links(view, threshold):
    """The node x rail worst-link grid and, above the matrix limit, the failing links one by one."""
    grid = view["grid"]
    lines = [
        f"### ib_write_bw worst link per node and rail (Gb/s, with its peer; threshold {threshold})",
        "",
        "| node | " + " | ".join(grid["rails"]) + " |",
        "|---" * (len(grid["rails"]) + 1) + "|",
    ]
    for node in grid["nodes"]:
        row = []
        for rail in grid["rails"]:
            c = grid["cells"].get(node, {}).get(rail)
            row.append(
                ""
                if c is None
                else f"{'' if c['ok'] else 'FAIL '}{gbps_text(c['gbps'])} ({_cell(c['peer'])}"
                + (f", {c['failing']}/{c['tests']} failing)" if c["failing"] else ")")
            )
        lines.append(f"| {_cell(node)} | " + " | ".join(row) + " |")
    lines.append("")
    if len(grid["nodes"]) > view["limit"]:
        bad = failing_links(view["rows"])
        lines += [f"### ib_write_bw failing links ({len(bad)}; the pair matrix is shown up to {view['limit']} nodes, this fabric has {len(grid['nodes'])})", ""]
        lines += [
            f"- {client} -> {server} {rail}" + (f" -> {sdev}" if sdev != rail else "") + f": {gbps_text(gbps)} Gb/s {code}"
            for _rnd, client, server, rail, gbps, code, _cerr, _serr, sdev in map(row_fields, bad[:FAILING_LINKS_MAX])
        ]
        if len(bad) > FAILING_LINKS_MAX:
            lines.append(f"- ... and {len(bad) - FAILING_LINKS_MAX} more (report.json: checks.ib_write_bw.tests)")
        lines += ([] if bad else ["none"]) + [""]
    return lines


def _trend_lines(report):
    """summary.md's section on what changed since the previous run of the same scope."""
    t = report.get("trends")
    hist = report.get("history") or {}
    if t is None:
        return ["## Trend", "", "No earlier run of the same scope (mode and nodes) to compare with.", ""] if "history" in report else []
    lines = [f"## Trend since the previous run ({hist.get('previous')}, {hist.get('previous_generated_at')})", ""]
    for x in t["bandwidth_down"]:
        lines.append(f"- bandwidth down: {x['node']} {x['device']} {x['before_gbps']:.1f} -> {x['gbps']:.1f} Gb/s (-{x['drop'] * 100:.1f} %)")
    for x in t["busbw_down"]:
        lines.append(f"- busbw down: {x['test']} {x['before_gbytes']:.2f} -> {x['gbytes']:.2f} GB/s (-{x['drop'] * 100:.1f} %)")
    for x in t["ber_rising"]:
        lines.append(f"- BER rising: {x['node']} {x['device']} {x['counter']} {ber_text(x['before'])} -> {ber_text(x['now'])}")
    for x in t["errors_rising"]:
        lines.append(f"- {x['counter']} rising: {x['node']} {x['device']} {x['before']} -> {x['now']} over the window")
    for what, key in (("new", "findings_new"), ("gone", "findings_gone")):
        for x in t[key]:
            where = " ".join(str(x[k]) for k in ("node", "device", "switch", "switch_port") if x.get(k))
            lines.append(f"- finding {what}: {x['code']} ({x['severity']}) {where}".rstrip())
    if len(lines) == 2:
        lines.append("No change: the same findings, no bandwidth drop, no rising BER or error count.")
    return lines + [""]
