"""ib_send_bw and ib_write_lat: tests in, findings out (docs/verification.md).

They run on the first rounds' pairs of ib_write_bw's plan (the same schedule, module
``ib_write_bw`` with ``tool``), so each test is one pair on one rail and cannot be
localised across peers as ib_write_bw's are: a finding names the client (node, device,
its switch port) and the ``peer`` (the server), and the end another check already
named (``hints``: ports, ib_write_bw) where there is one. Thresholds: ib_send_bw the
same ``ib_write_bw_min_gbps`` as ib_write_bw (``ib_write_bw_fraction`` x line rate),
ib_write_lat ``fabric.verify.latency_us_max`` (``derived.latency_max_usec``).
"""

from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling as checks_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma, thresholds

# tool -> (what is measured, the code of a threshold miss)
BENCHES = {
    "ib_send_bw": ("gbps", "RDMA_SEND_BW_LOW"),
    "ib_write_lat": ("latency_usec", "RDMA_LATENCY_HIGH"),
    "ib_send_lat": ("latency_usec", "RDMA_LATENCY_HIGH"),
}


def latency_threshold_usec(fabric):
    """ib_write_lat's bound (usec): the intent's ``verify.latency_us_max`` or its transport's default."""
    return float(thresholds.derived(fabric)["latency_max_usec"])


def threshold(tool, fabric):
    if tool not in BENCHES:
        raise ValueError(f"tool {tool!r}: no such benchmark check; allowed: {', '.join(BENCHES)}")
    return thresholds.rdma_threshold_gbps(fabric) if BENCHES[tool][0] == "gbps" else latency_threshold_usec(fabric)


def bench_tests(logs):
    """Tests from the per-node schedule records of one tool ({node: [{round, role, peer, results}]}):
    [{round, client: [node, device], server: [node, device], gbps, latency_usec, latency, client_error,
    server_error}], the client's measurement (both ends of a latency test print the same ping-pong)."""
    measured = ("gbps", "latency_usec", "latency")
    return [rdma.paired_test(*pair, measured=measured) for pair in rdma.paired_results(logs, round_of=int)]


def evaluate(tool, tests, limit):
    """Each test with ``ok``, ``code`` and ``blame`` (the side a tool error names, else None)."""
    key, low = BENCHES[tool]
    out = []
    for t in tests:
        value = t.get(key)
        if t.get("client_error") or t.get("server_error") or value is None:
            code, blame = rdma._test_error_code(t)
            if code == "RDMA_BW_LOW":  # no error text and no figure: the test printed nothing readable
                code = "RDMA_TEST_ERROR"
        elif (value < limit) if key == "gbps" else (value > limit):
            code, blame = low, None
        else:
            code, blame = None, None
        out.append(dict(t, ok=code is None, code=code, blame=blame))
    return out


def _figure(tool, t):
    if BENCHES[tool][0] == "gbps":
        return f"{t['gbps']:.1f} Gb/s"
    lat = t.get("latency") or {}
    tail = f", 99% {lat['p99_usec']:.2f} us" if lat.get("p99_usec") is not None else ""
    return f"{t['latency_usec']:.2f} us average{tail}"


def findings(tool, evaluated, fabric, cabling, limit, known=()):
    """One finding per failing test, naming node, device (the blamed end, an end ``known`` names, else
    the client) and ``peer``. ``known``: (code, node, device) of findings other checks made: a tool error
    on an end already named with that code is left to that finding (the case keeps it)."""
    key, low = BENCHES[tool]
    known = {tuple(k) for k in known}
    named = {(n, d) for _c, n, d in known}
    unit = "Gb/s" if key == "gbps" else "us"
    out = []
    for t in evaluated:
        if t["ok"]:
            continue
        ends = [tuple(t["client"]), tuple(t["server"])]
        if t["blame"] in ("client", "server"):
            end = tuple(t[t["blame"]])
        else:
            end = next((e for e in ends if e in named), ends[0])
        peer = ends[1] if end == ends[0] else ends[0]
        if t["code"] != low and (t["code"], *end) in known:
            continue
        where = checks_cabling._where(cabling, *end)
        role = "client" if end == ends[0] else "server"
        head = f"{end[0]} {end[1]} (switch {where['switch']} port {where['switch_port']}) with {peer[0]} {peer[1]}, round {t['round']}, {tool} {role}"
        if t["code"] == low:
            cmp = "<" if key == "gbps" else ">"
            msg = f"{head}: {_figure(tool, t)} {cmp} {limit:g} {unit}"
            if key == "latency_usec":
                msg += " (retransmissions or queueing on the path: a degraded link, a congested port)"
        else:
            err = (t.get("client_error") if role == "client" else t.get("server_error")) or t.get("client_error") or t.get("server_error") or "no result"
            msg = f"{head}: {err.strip().splitlines()[0]}"
        evidence = {k: t.get(k) for k in ("gbps", "latency_usec", "latency", "client_error", "server_error") if t.get(k)}
        out.append(
            faults.finding(
                t["code"],
                msg,
                check=tool,
                peer={"node": peer[0], "device": peer[1]},
                round=t["round"],
                evidence=dict(evidence, client=t["client"], server=t["server"]),
                **where,
            )
        )
    return out


def check(tool, evaluated, limit, found):
    """``checks.<tool>`` of the report: one case per test (client -> server, rail, round)."""
    key = BENCHES[tool][0]
    unit = "gbps" if key == "gbps" else "usec"
    cases = []
    for t in evaluated:
        mine = [
            f
            for f in found
            if f.get("round") == t["round"] and {(f["node"], f["device"]), (f["peer"]["node"], f["peer"]["device"])} == {tuple(t["client"]), tuple(t["server"])}
        ]
        cases.append(
            {
                "name": f"{t['client'][0]}:{t['client'][1]} -> {t['server'][0]}:{t['server'][1]} (round {t['round']})",
                "ok": t["ok"],
                "code": t["code"],
                key: t.get(key),
                "message": "; ".join(f["message"] for f in mine) or (None if t["ok"] else t.get("client_error") or t.get("server_error")),
                **({"latency": t.get("latency")} if key == "latency_usec" else {}),
            }
        )
    ok = sum(c["ok"] for c in cases)
    cmp = ">=" if key == "gbps" else "<="
    return {
        "passed": not [f for f in found if f["severity"] == "error"] and ok == len(cases),
        f"threshold_{unit}": limit,
        "cases": cases,
        "detail": f"{ok}/{len(cases)} links {cmp} {limit:g} {'Gb/s' if key == 'gbps' else 'us'}",
    }


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report_for(tool):
    """check ``tool`` (ib_send_bw / ib_write_lat / ib_send_lat) on the first rounds' pairs (module benchcheck)."""

    def bench_report(ctx):
        tests = bench_tests(ctx.logs("verify_fabric_bench_log", tool))
        if not tests:
            return [], {}
        limit = threshold(tool, ctx.fabric)
        evaluated = evaluate(tool, tests, limit)
        f = findings(tool, evaluated, ctx.fabric, ctx.cabling, limit, [(x["code"], x.get("node"), x.get("device")) for x in ctx.findings])
        return f, {tool: check(tool, evaluated, limit, f)}

    bench_report.__name__ = f"bench_{tool}"
    return bench_report
