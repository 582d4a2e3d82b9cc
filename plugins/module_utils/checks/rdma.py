# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""The ib_write_bw check: tests in, pass/fail per test, localisation of a failing link and its findings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import Counter

from ansible_collections.linerate.fabric.plugins.module_utils.checks.cabling import _where, leaves_of
from ansible_collections.linerate.fabric.plugins.module_utils.checks.thresholds import derived, rdma_threshold_gbps
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding

# ---------------------------------------------------------------- ib_write_bw

_ERR_CLASSES = (
    ("PORT_DOWN", re.compile(r"Port number \d+ state is|Couldn't set the link layer")),
    ("PORT_MISSING", re.compile(r"IB device \S+ not found|No IB devices found|Did not detect devices")),
    ("RDMA_QP_FAILED", re.compile(r"to RTR|to RTS|Unable to Connect the HCA's through the link")),
    ("RDMA_TRANSPORT_RETRY", re.compile(r"Failed status 12|transport retry|Completion with error")),
    ("RDMA_CONNECT_FAILED", re.compile(r"Couldn't connect to|Unable to init the socket connection")),
)


def classify_rdma_error(text):
    for code, rx in _ERR_CLASSES:
        if rx.search(text or ""):
            return code
    return "RDMA_TEST_ERROR"


def _test_error_code(t):
    """The code explaining a failed test, preferring the side that failed first."""
    server_code = classify_rdma_error(t.get("server_error")) if t.get("server_error") else None
    client_code = classify_rdma_error(t.get("client_error")) if t.get("client_error") else None
    for code in ("PORT_DOWN", "PORT_MISSING", "RDMA_QP_FAILED"):
        if code in (server_code, client_code):
            side = "server" if server_code == code else "client"
            return code, side
    if "RDMA_TRANSPORT_RETRY" in (server_code, client_code):
        # frames dropped somewhere on the path (receiver MTU, a switch port): localised across tests
        return "RDMA_TRANSPORT_RETRY", None
    if client_code:
        return client_code, "server" if client_code == "RDMA_CONNECT_FAILED" else "client"
    if server_code:
        return server_code, "server"
    return "RDMA_BW_LOW", None


def round_tests(logs):
    """Tests from the per-host round logs ({node: [entries]}) -> [{server, client, gbps, errors}].

    A client entry {round, role: client, peer, results: [...]} is matched with its
    server's entry of the same round, rail by rail (device; a result's ``peer_device`` where
    the client's rail wrote into another rail of the server, a cross-rail round).
    """
    return [paired_test(*pair) for pair in paired_results(logs)]


def paired_test(rnd, node, peer, r, s, measured=("gbps",)):
    """One test of a client result ``r`` and its server's ``s`` (paired_results): its round, both ends
    [node, device], the client's ``measured`` values and each side's error."""
    return {
        "round": rnd,
        "client": [node, r["device"]],
        "server": [peer, r.get("peer_device") or r["device"]],
        **{key: r.get(key) for key in measured},
        "client_error": r.get("error"),
        "server_error": s.get("error"),
    }


def paired_results(logs, round_of=lambda v: v):
    """Each client rail result of the per-host schedule records ({node: [entries]}) with its server's
    result of the same round and rail (the client result's ``peer_device`` in a cross-rail round;
    ``{}`` when the server recorded none):
    ``[(round, client node, server node, client result, server result)]``, clients in node order."""
    servers = {}
    for node, entries in (logs or {}).items():
        for e in entries or []:
            if e.get("role") == "server":
                for r in e.get("results") or []:
                    servers[(round_of(e["round"]), node, r["device"])] = r
    out = []
    for node, entries in sorted((logs or {}).items()):
        for e in entries or []:
            if e.get("role") != "client":
                continue
            for r in e.get("results") or []:
                rnd = round_of(e["round"])
                out.append((rnd, node, e["peer"], r, servers.get((rnd, e["peer"], r.get("peer_device") or r["device"]), {})))
    return out


def schedule_timing(logs):
    """How the rounds ran, from the per-host round logs ({node: [entries]}): per round, the
    longest part (``seconds``: the round's wall time on its slowest node) and the client
    starts (``client_starts``: perftest clients started, a retry while the peer's server did
    not listen yet included; one per rail when every server was ready) and ``peer_wait``
    (the longest a part of the round waited for its peer to reach it). Returns
    ``{"rounds": [{"round", "seconds", "client_starts", "rails", "peer_wait"}], "client_retries",
    "peer_wait"}`` (the top level: the seconds waited for late peers, over every part).
    """
    rounds, waited = {}, []
    for entries in (logs or {}).values():
        for e in entries or []:
            r = rounds.setdefault(int(e["round"]), {"round": int(e["round"]), "seconds": 0.0, "client_starts": 0, "rails": 0, "peer_wait": 0.0})
            r["seconds"] = max(r["seconds"], float(e.get("seconds") or 0))
            r["peer_wait"] = max(r["peer_wait"], float(e.get("peer_wait") or 0))
            waited.append(float(e.get("peer_wait") or 0))
            if e.get("role") == "client":
                results = e.get("results") or []
                r["rails"] += len(results)
                r["client_starts"] += sum(int(x.get("attempts") or 0) for x in results)
    out = [rounds[k] for k in sorted(rounds)]
    return {"rounds": out, "client_retries": sum(max(0, r["client_starts"] - r["rails"]) for r in out), "peer_wait": round(sum(waited), 1)}


_PASSED = {"ok": True, "code": None, "blame": None}


def _evaluate(t, threshold):
    """``ok``, ``code`` and ``blame`` of one test."""
    if t.get("client_error") or t.get("server_error") or t.get("gbps") is None:
        code, blame = _test_error_code(t)
        return {"ok": False, "code": code, "blame": blame}
    if float(t["gbps"]) < threshold:
        return {"ok": False, "code": "RDMA_BW_LOW", "blame": None}
    return _PASSED


def evaluate_tests(tests, threshold):
    """Mark each test ok / failing; returns copies of the tests with ``ok``, ``code``, ``blame``."""
    return [{**t, **_evaluate(t, threshold)} for t in tests]


DIRECTIONS = {"send": "client", "receive": "server"}


def _elements(t, leaf_of, sound=None):
    """What lies on the path of one test (the client writes into the server): the client's send
    side, the server's receive side and, when the two ends hang off different leaves, the
    uplinks of both leaves. ``sound``: the (direction, endpoint) sides that passed a test: a
    failing test blames an uplink only when both its ends passed that way elsewhere (a rail
    that never sends right explains its own cross-leaf failures)."""
    c, sv = tuple(t["client"]), tuple(t["server"])
    out = [("send", c), ("receive", sv)]
    lc, ls = leaf_of.get(c), leaf_of.get(sv)
    if lc is not None and ls is not None and lc != ls and (sound is None or (("send", c) in sound and ("receive", sv) in sound)):
        out += [("uplink", lc), ("uplink", ls)]
    return out


def localise(tests, hints=(), leaf_of=None):
    """Which elements explain the failing tests (greedy set cover, then redundant ones dropped).

    ``tests``: evaluated tests with ``server``/``client`` = [node, device]; the client writes
    into the server. The elements of a test are the client's *send* side, the server's
    *receive* side and, across leaves (``leaf_of``: {(node, device): leaf}), each leaf's
    uplinks. An endpoint that a test's error names (``blame``: port down, device missing)
    explains it alone, both directions. Otherwise the element covering the most failing
    tests wins; ties go to the larger failing share, then to endpoints named by ``hints``
    (port-check findings). An element whose tests the others chosen all explain is dropped
    (a leaf's uplinks chosen first for the cross-leaf failures of two bad rails under it).
    One failing test whose elements are equally likely is ``inconclusive``.

    Returns ``(suspects, inconclusive)``: suspects = [{"endpoint" (or None), "uplink" (a leaf, or
    None), "direction": send | receive | both | None, "tests", "fails", "total", "passed",
    "codes"}], ``fails``/``total`` the element's failing / all tests (its failure rate).
    """
    leaf_of = {tuple(k): v for k, v in (leaf_of or {}).items()}
    failing = [t for t in tests if not t["ok"]]
    total, fails = Counter(), Counter()
    for t in tests:
        for e in _elements(t, leaf_of):
            total[e] += 1
            if not t["ok"]:
                fails[e] += 1
    sound = {e for e in total if e[0] != "uplink" and fails[e] < total[e]}
    explained, blamed = set(), {}
    for i, t in enumerate(failing):
        if t.get("blame"):
            blamed.setdefault(tuple(t[t["blame"]]), set()).add(i)
            explained.add(i)
    chosen, inconclusive = _greedy_cover(failing, explained, leaf_of, sound, {tuple(h) for h in hints}, fails, total)
    _drop_redundant(chosen, failing, leaf_of, sound)
    _uplinks_to_rails(chosen, failing)
    return _suspects(chosen, blamed, failing, fails, total), inconclusive


def _greedy_cover(failing, explained, leaf_of, sound, hints, fails, total):
    """``(chosen, inconclusive)``: {element: failing test indexes it explains}, chosen greedily (see
    ``localise``), and the failing tests whose own elements are equally likely. A path between two
    leaf groups becomes an element of its own (``fails``, ``total`` gain it)."""
    chosen, inconclusive = {}, []
    while len(explained) < len(failing):
        cover = {}
        for i, t in enumerate(failing):
            if i not in explained:
                for e in _elements(t, leaf_of, sound):
                    cover.setdefault(e, set()).add(i)

        for e in [e for e in cover if e[0] == "uplink"]:
            # one endpoint in every failing test an uplink would explain: that endpoint explains them
            common = set.intersection(*({tuple(failing[i]["server"]), tuple(failing[i]["client"])} for i in cover[e]))
            if common:
                del cover[e]
        suspected = {e[1] for e in chosen if e[0] != "uplink"}

        def rank(e):
            # one bad port explains its failures both ways before a second one is assumed
            return (len(cover[e]), e[0] != "uplink" and e[1] in suspected, fails[e] / total[e], e[0] != "uplink" and e[1] in hints)

        best = max(cover, key=rank)
        ties = [e for e in cover if rank(e) == rank(best)]
        if len(cover[best]) == 1 and sum(cover[e] == cover[best] for e in ties) > 1:
            # one failing test, its own elements equally likely: name the pair, not a guess (an element
            # of another test ranking alike says nothing about this one)
            i = next(iter(cover[best]))
            inconclusive.append(failing[i])
            explained.add(i)
            continue
        if best[0] == "uplink":
            # two leaves whose uplinks carry exactly the same failing tests (two leaf groups): the path
            # between them is the element, not one leaf's uplinks
            same = tuple(sorted(e[1] for e in ties if e[0] == "uplink" and cover[e] == cover[best]))
            if len(same) > 1:
                fails[("uplink", same)], total[("uplink", same)] = fails[best], total[best]
                best = ("uplink", same)
        chosen.setdefault(best, set()).update(cover[best] if best in cover else cover[("uplink", best[1][0])])
        explained |= chosen[best]
    return chosen, inconclusive


def _drop_redundant(chosen, failing, leaf_of, sound):
    """A test every other chosen element explains needs no element of its own (``chosen`` in place)."""

    def on_path(e, t):
        els = _elements(t, leaf_of, sound)
        return all(("uplink", leaf) in els for leaf in e[1]) if e[0] == "uplink" and isinstance(e[1], tuple) else e in els

    full = {e: {i for i, t in enumerate(failing) if on_path(e, t)} for e in chosen}
    for e in list(chosen):
        others = set().union(*(full[o] for o in chosen if o != e)) if len(chosen) > 1 else set()
        if chosen[e] <= others:
            del chosen[e]
            for o in chosen:
                chosen[o] |= full[o] & full[e]


def _uplinks_to_rails(chosen, failing):
    """An uplink whose every failing test has a chosen rail at one end: those rails explain them, the
    other way round where needed (a flaky rail's cross-leaf failures, not a leaf's uplinks); in place."""
    eps = {e[1] for e in chosen if e[0] != "uplink"}
    for e in [e for e in chosen if e[0] == "uplink"]:
        owners = {}
        for i in chosen[e]:
            c, sv = tuple(failing[i]["client"]), tuple(failing[i]["server"])
            if c not in eps and sv not in eps:
                break
            owners.setdefault(("send", c) if c in eps else ("receive", sv), set()).add(i)
        else:
            del chosen[e]
            for o, idx in owners.items():
                chosen.setdefault(o, set()).update(idx)


def _suspects(chosen, blamed, failing, fails, total):
    """The suspects of ``localise`` from the chosen elements and the endpoints an error blames."""
    out = []
    per_ep = {}
    for (kind, what), idx in chosen.items():
        if kind == "uplink":
            out.append({"endpoint": None, "uplink": what, "direction": None, "idx": idx, "fails": fails[(kind, what)], "total": total[(kind, what)]})
        else:
            per_ep.setdefault(what, {})[kind] = idx
    for ep, dirs in per_ep.items():
        keys = [("send", ep), ("receive", ep)]
        direction = "both" if len(dirs) == 2 else next(iter(dirs))
        used = [k for k in keys if k[0] in dirs]
        out.append(
            {
                "endpoint": list(ep),
                "uplink": None,
                "direction": direction,
                "idx": set().union(*dirs.values()) | blamed.pop(ep, set()),
                "fails": sum(fails[k] for k in used),
                "total": sum(total[k] for k in used),
            }
        )
    for ep, idx in blamed.items():
        n = total[("send", ep)] + total[("receive", ep)]
        out.append({"endpoint": list(ep), "uplink": None, "direction": "both", "idx": idx, "fails": fails[("send", ep)] + fails[("receive", ep)], "total": n})
    result = []
    for s in sorted(out, key=lambda x: (x["endpoint"] is None, x["endpoint"] or [], str(x["uplink"]))):
        idx = s.pop("idx")
        s["tests"] = [failing[i] for i in sorted(idx)]
        s["passed"] = s["total"] - s["fails"]
        s["codes"] = sorted({failing[i]["code"] for i in idx})
        result.append(s)
    return result


def _bw_layer(tests, speed):
    """Why bandwidth is low: a lower trained speed looks like k x line rate, drops like a fraction."""
    rates = [t["gbps"] for t in tests if t.get("gbps")]
    if not rates:
        return "link", None
    r = max(rates) / float(speed)
    for fraction in (0.5, 0.25, 0.125, 0.0625):
        if abs(r - fraction * 0.96) < 0.06:
            return "link", f"about {fraction:g} x line rate: the link likely trained at {speed * fraction:g} Gb/s"
    return "pfc", "a fraction of line rate with the link at full speed: drops and retransmissions (PFC/ECN)"


_CODE_ORDER = ("PORT_DOWN", "PORT_MISSING", "RDMA_QP_FAILED", "RDMA_TRANSPORT_RETRY", "RDMA_CONNECT_FAILED", "RDMA_BW_LOW", "RDMA_TEST_ERROR")


def _evidence(tests):
    return [{"server": t["server"], "client": t["client"], "gbps": t.get("gbps"), "error": t.get("client_error") or t.get("server_error")} for t in tests]


def _uplink_finding(s, uplinks, rate, share):
    """UPLINK_DEGRADED: a leaf's uplinks (or the path between two leaves) that the cross-leaf tests blame."""
    leaves = list(s["uplink"]) if isinstance(s["uplink"], (tuple, list)) else [s["uplink"]]
    ups = [dict(u, leaf=leaf) for leaf in leaves for u in (uplinks or {}).get(leaf) or []]
    ports = ", ".join(f"{u['leaf']} {u.get('port')} -> {u.get('peer')} {u.get('peer_port')}" for u in ups)
    peers = sorted({t[side][0] for t in s["tests"] for side in ("server", "client")})
    where = leaves[0] if len(leaves) == 1 else f"the path between {' and '.join(leaves)}"
    msg = (
        f"{where} uplinks{' (' + ports + ')' if ports else ''}: {share} cross-leaf tests through it "
        f"failed while the same rails pass elsewhere; nodes {', '.join(peers[:6])}"
        f"{' ...' if len(peers) > 6 else ''}"
        + ("; two leaf groups only: which end's uplink is bad needs a third group or the switch counters" if len(leaves) > 1 else "")
        + ("; with ECMP over several uplinks the bad one is among them: read their switch counters" if len(ups) > 1 else "")
    )
    return finding(
        "UPLINK_DEGRADED",
        msg,
        switch=leaves[0],
        switch_port=ups[0].get("port") if len(ups) == 1 else None,
        leaves=leaves,
        uplinks=ups,
        failure_rate=rate,
        fails=s["fails"],
        total=s["total"],
        check="ib_write_bw",
        evidence=_evidence(s["tests"][:20]),
    )


def _first_error(tests, code):
    """The first error text of the suspect's tests that classifies as its code, else the first error at all."""
    first_err = None
    for t in tests:
        for e in (t.get("server_error"), t.get("client_error")):
            if e and classify_rdma_error(e) == code:
                first_err = first_err or e
    return first_err or next((t.get("client_error") or t.get("server_error") for t in tests if t.get("client_error") or t.get("server_error")), None)


def _endpoint_finding(s, fabric, cabling, threshold, rate, share):
    """A rail's finding: its code (or RDMA_INTERMITTENT), its direction, peers and the first error or rates."""
    node, device = s["endpoint"]
    where = _where(cabling, node, device)
    code = s["codes"][0] if len(s["codes"]) == 1 else next(c for c in _CODE_ORDER if c in s["codes"])
    intermittent = code in ("RDMA_BW_LOW", "RDMA_TEST_ERROR", "RDMA_TRANSPORT_RETRY") and s["fails"] < s["total"]
    peers = [f"{t['client' if list(t['server']) == [node, device] else 'server'][0]}" for t in s["tests"]]
    layer, hint = None, None
    if code == "RDMA_BW_LOW":
        layer, hint = _bw_layer(s["tests"], derived(fabric)["line_rate_gbps"])
    rates = ", ".join(f"{t['gbps']:.1f}" for t in s["tests"] if t.get("gbps") is not None)
    first_err = _first_error(s["tests"], code)
    way = {"send": "as client (sending)", "receive": "as server (receiving)", "both": "in both directions"}[s["direction"]]
    msg = (
        f"{node} {device} (switch {where['switch']} port {where['switch_port']}): {s['direction']} side bad - "
        f"failed {share} tests {way} against {', '.join(sorted(set(peers)))}"
    )
    if intermittent:
        msg += f"; intermittent, failure rate {rate:.0%}"
    if code == "RDMA_BW_LOW":
        msg += f"; {rates} Gb/s < {threshold:g} Gb/s"
    elif first_err:
        msg += f"; {first_err.strip().splitlines()[0]}"
    if hint:
        msg += f" ({hint})"
    return finding(
        "RDMA_INTERMITTENT" if intermittent else code,
        msg,
        layer=layer,
        check="ib_write_bw",
        direction=s["direction"],
        failure_rate=rate,
        fails=s["fails"],
        total=s["total"],
        cause=code,
        evidence=_evidence(s["tests"]),
        **where,
    )


def _inconclusive_finding(t, cabling):
    """RDMA_INCONCLUSIVE: one failing test that cannot be pinned on either end."""
    a, b = t["server"], t["client"]
    return finding(
        "RDMA_INCONCLUSIVE",
        f"{a[0]} {a[1]} <-> {b[0]} {b[1]} failed ({t['code']}): {b[0]} "
        f"{b[1]} sending or {a[0]} {a[1]} receiving; re-test each end against known-good peers "
        "(the sampled plan does; a two-node fabric has no third node)",
        check="ib_write_bw",
        node=a[0],
        device=a[1],
        peer={"node": b[0], "device": b[1]},
        switch=_where(cabling, *a)["switch"],
        switch_port=_where(cabling, *a)["switch_port"],
        evidence=_evidence([t]),
    )


def rdma_findings(tests, fabric, cabling, hints=(), uplinks=None):
    """Findings from ib_write_bw tests: the bad element and its direction, not only the pair.

    Every failing test ends in an error: a rail named with its ``direction`` (send: it fails
    as client, writing; receive: as server, written into; both) and ``failure_rate`` (its
    failing / all tests that way; below 1 it is ``RDMA_INTERMITTENT``), a leaf's uplinks
    (``UPLINK_DEGRADED``: cross-leaf tests through it fail, its rails' same-leaf tests pass;
    ``uplinks``: {leaf: switch_uplinks} names the ports), or ``RDMA_INCONCLUSIVE`` naming
    both ends where one test cannot be pinned on either.
    """
    threshold = rdma_threshold_gbps(fabric)
    evaluated = evaluate_tests(tests, threshold)
    suspects, inconclusive = localise(evaluated, hints, leaves_of(cabling))
    out = []
    for s in suspects:
        rate = round(s["fails"] / s["total"], 3) if s["total"] else 1.0
        share = f"{s['fails']} of {s['total']}"
        if s["uplink"] is not None:
            out.append(_uplink_finding(s, uplinks, rate, share))
        else:
            out.append(_endpoint_finding(s, fabric, cabling, threshold, rate, share))
    out += [_inconclusive_finding(t, cabling) for t in inconclusive]
    return out, evaluated


# server_device: the server's device where it is not the client's (the cross-rail round), else null;
# rows written before it have eight fields and read as same-rail.
RDMA_TEST_FIELDS = ("round", "client", "server", "device", "gbps", "code", "client_error", "server_error", "server_device")


# ---------------------------------------------------------------- in the report: each test stored once


def rdma_rows(evaluated):
    """Evaluated ib_write_bw tests (dicts with client/server = [node, device]) as rows of RDMA_TEST_FIELDS."""
    return [
        [
            t["round"],
            t["client"][0],
            t["server"][0],
            t["client"][1],
            t.get("gbps"),
            t.get("code"),
            t.get("client_error"),
            t.get("server_error"),
            t["server"][1] if t["server"][1] != t["client"][1] else None,
        ]
        for t in evaluated
    ]


def row_fields(row):
    """A stored row as (round, client, server, device, gbps, code, client_error, server_error, server_device)."""
    rnd, client, server, rail, gbps, code, cerr, serr = row[:8]
    return rnd, client, server, rail, gbps, code, cerr, serr, (row[8] if len(row) > 8 and row[8] else rail)


def rdma_check(evaluated, threshold, findings):
    """``checks.ib_write_bw``: each test once, as a row of ``test_fields``; a test passed when its code is null.

    The worst-link grid, the pair matrices, the failing links and the JUnit cases are derived from these
    rows when the report is rendered or read (rdma_tests here; report/rdma.py, report/junit.py).
    """
    rows = rdma_rows(evaluated)
    ok = sum(r[5] is None for r in rows)
    return {
        "passed": not findings,
        "threshold_gbps": threshold,
        "detail": f"{ok}/{len(rows)} links >= {threshold:g} Gb/s",
        "test_fields": list(RDMA_TEST_FIELDS),
        "tests": rows,
    }


def stored_rows(check):
    """The rows of ``checks.ib_write_bw.tests`` (a schema-1 report's test dicts converted)."""
    tests = (check or {}).get("tests") or []
    return rdma_rows(tests) if isinstance(tests[0] if tests else None, dict) else tests


def rdma_tests(check):
    """The tests of ``checks.ib_write_bw`` as dicts, for readers of report.json:
    {round, client: [node, device], server: [node, device], gbps, ok, code, client_error, server_error}."""
    return [
        {
            "round": rnd,
            "client": [client, rail],
            "server": [server, sdev],
            "gbps": gbps,
            "ok": code is None,
            "code": code,
            "client_error": cerr,
            "server_error": serr,
        }
        for rnd, client, server, rail, gbps, code, cerr, serr, sdev in map(row_fields, stored_rows(check))
    ]


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report(ctx):
    """check ``ib_write_bw``: every pair's rounds."""
    logs = ctx.logs("verify_fabric_rdma_log")
    tests = round_tests(logs)
    if not tests:
        return [], {}
    f, evaluated = rdma_findings(tests, ctx.fabric, ctx.cabling, ctx.hints, ctx.uplinks())
    check = rdma_check(evaluated, rdma_threshold_gbps(ctx.fabric), f)
    check["schedule"] = schedule_timing(logs)
    return f, {"ib_write_bw": check}
