"""Incast phase, RDMA side: ECN marks, CNPs and loss from the RDMA hw_counters.

Pure functions over plain data (stdlib only), used by the verify_report action
after incast_findings (which judges PFC pauses and goodput from
``ethtool -S``). Role task ``incast.yml`` reads ``rdma statistic show link
DEV/PORT`` (the mlx5 hw_counters) on every node before and after the incast;
``phase[node]["hw"] = {device: [before, after]}``.

What congestion looks like on a healthy lossless RoCE class with ECN: the
receiver's switch port marks (receiver ``np_ecn_marked_roce_packets`` rises),
the receiver answers with CNPs (``np_cnp_sent``), the senders slow down
(``rp_cnp_handled``); nothing is lost (no ``out_of_sequence`` /
``packet_seq_err`` on the receiver).

The switches' own counters and lossless state over the benchmarks are judged in
``incast_switch.py``; ``report`` (the ``incast`` check) joins both.
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.checks.cabling import _where, leaves_of
from ansible_collections.linerate.fabric.plugins.module_utils.checks.incast_switch import switch_findings
from ansible_collections.linerate.fabric.plugins.module_utils.checks.plans import uplink_scope
from ansible_collections.linerate.fabric.plugins.module_utils.checks.thresholds import derived, rdma_threshold_gbps
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import parse_ethtool_stats, parse_rdma_statistic

# counter -> what it proves (for the COUNTER_MISSING warning); receiver or sender side
RECEIVER = {
    "np_ecn_marked_roce_packets": "ECN marking by the switch",
    "np_cnp_sent": "CNPs answering ECN marks",
    "out_of_sequence": "loss on the no-drop class",
    "packet_seq_err": "loss on the no-drop class",
}
SENDER = {"rp_cnp_handled": "the senders slowing down on CNPs"}
# rail keys of the report (per node)
REPORT = {"ecn_marked": "np_ecn_marked_roce_packets", "cnp_sent": "np_cnp_sent", "cnp_handled": "rp_cnp_handled", "out_of_sequence": "out_of_sequence"}


def _link(text, device, port=1):
    """{counter: int} of DEV/PORT from ``rdma statistic`` text, or (None, why)."""
    try:
        links = parse_rdma_statistic(text)["links"]
    except ParseError as e:
        return None, str(e)
    got = links.get(f"{device}/{port}")
    if got is None:
        return None, f"no link {device}/{port} in the output (has: {', '.join(sorted(links)) or 'none'})"
    return got, None


def hw_findings(phase, fabric, cabling, rails, finding, where, prior=()):
    """Findings of the RDMA counters under incast; adds the per-node deltas to each rail of ``rails``.

    Loss at the receiver is counted per device, not per flow: where ``prior``
    (incast_findings) already names the culprit of that rail (a sender's
    port without pauses, low goodput), the loss goes into its evidence instead
    of blaming the receiver.
    """
    out = []
    if (fabric or {}).get("transport", "roce") != "roce":
        return out
    ecn_on = bool((((fabric or {}).get("roce") or {}).get("ecn") or {}).get("enabled", True))
    prio = int(((fabric or {}).get("roce") or {}).get("no_drop_priority", 3))
    for rail in rails:
        deltas = _hw_deltas(phase, rail, cabling, finding, where, out)
        for key, name in REPORT.items():
            rail[key] = {n: d.get(name) for n, d in deltas.items()}
        r = deltas.get(rail["receiver"])
        if r is None:
            continue
        loc = where(cabling, rail["receiver"], rail["device"])
        out += _hw_loss_findings(rail, r, deltas, prior, prio, loc, finding)
        out += _hw_cnp_findings(rail, r, deltas, cabling, finding, where, loc)
        out += _hw_no_ecn_findings(rail, r, ecn_on, loc, finding)
    return out


def _hw_deltas(phase, rail, cabling, finding, where, out):
    """{node: its hw_counters deltas on the rail's device}; an unreadable pair or a counter the
    driver lacks is COUNTER_MISSING (into ``out``, the counter also into the rail's ``missing``)."""
    device, receiver = rail["device"], rail["receiver"]
    deltas = {}
    for node in [receiver] + list(rail.get("senders") or []):
        pair = (((phase.get(node) or {}).get("hw") or {}).get(device)) or ["", ""]
        b, why_b = _link(pair[0], device)
        a, why_a = _link(pair[1], device)
        if a is None or b is None:
            out.append(
                finding(
                    "COUNTER_MISSING",
                    f"{node} {device}: RDMA hw_counters unreadable ({why_a or why_b}); ECN marking, CNPs and loss under incast are not proven on this port",
                    check="incast",
                    counter="hw_counters",
                    **where(cabling, node, device),
                )
            )
            continue
        wanted = RECEIVER if node == receiver else SENDER
        for name, proves in wanted.items():
            if name not in a:
                rail["missing"].append(f"{node}:{name}")
                out.append(
                    finding(
                        "COUNTER_MISSING",
                        f"{node} {device}: the driver/firmware does not expose {name}; {proves} under incast is not proven",
                        check="incast",
                        counter=name,
                        **where(cabling, node, device),
                    )
                )
        deltas[node] = {k: v - b.get(k, 0) if v >= b.get(k, 0) else v for k, v in a.items()}
    return deltas


def _hw_loss_findings(rail, r, deltas, prior, prio, loc, finding):
    """INCAST_OUT_OF_SEQUENCE: loss at the receiver (``r``: its deltas), or, where ``prior`` names the
    rail's culprit already, the loss into that finding's evidence."""
    device, receiver, senders = rail["device"], rail["receiver"], list(rail.get("senders") or [])
    lost = {k: r[k] for k in ("out_of_sequence", "packet_seq_err") if r.get(k)}
    named = [x for x in prior if x.get("device") == device and x["severity"] == "error" and x.get("check") == "incast"]
    for x in named if lost else ():
        x.setdefault("evidence", {})["receiver_loss"] = {receiver: lost}
    if not lost or named:
        return []
    timeouts = {s: deltas[s].get("local_ack_timeout_err") for s in senders if s in deltas}
    return [
        finding(
            "INCAST_OUT_OF_SEQUENCE",
            f"{receiver} {device}: "
            + ", ".join(f"{k} +{v}" for k, v in sorted(lost.items()))
            + f" under incast: packets of the no-drop priority {prio} were lost on the way in "
            f"(senders' local_ack_timeout_err: {timeouts})",
            check="incast",
            evidence={"deltas": lost, "local_ack_timeout_err": timeouts},
            **loc,
        )
    ]


def _hw_cnp_findings(rail, r, deltas, cabling, finding, where, loc):
    """INCAST_ECN_NO_CNP: a receiver marked but sending no CNP, or a sender not handling the CNPs it got."""
    device, receiver = rail["device"], rail["receiver"]
    marked, cnps = r.get("np_ecn_marked_roce_packets"), r.get("np_cnp_sent")
    if marked and not cnps and "np_cnp_sent" in r:
        return [
            finding(
                "INCAST_ECN_NO_CNP",
                f"{receiver} {device}: np_ecn_marked_roce_packets +{marked} but "
                "np_cnp_sent +0: the receiver does not answer ECN marks with CNPs (DCQCN notification "
                "point off?)",
                check="incast",
                evidence={"marked": marked, "cnp_sent": cnps},
                **loc,
            )
        ]
    if not cnps:
        return []
    # A flow that ran alone (INCAST_INCONCLUSIVE: a late client, the others done) met no
    # congestion: no CNP was meant for it, so +0 handled proves nothing about its port.
    alone = set(rail.get("inconclusive") or [])
    out = []
    for s in list(rail.get("senders") or []):
        handled = (deltas.get(s) or {}).get("rp_cnp_handled")
        if s in deltas and s not in alone and "rp_cnp_handled" in deltas[s] and not handled:
            out.append(
                finding(
                    "INCAST_ECN_NO_CNP",
                    f"{s} {device}: rp_cnp_handled +0 although {receiver} "
                    f"sent {cnps} CNPs: this sender does not slow down on CNPs (DCQCN reaction "
                    "point off, or the CNPs do not reach it)",
                    check="incast",
                    evidence={"cnp_sent": cnps, "cnp_handled": handled},
                    **where(cabling, s, device),
                )
            )
    return out


def _hw_no_ecn_findings(rail, r, ecn_on, loc, finding):
    """INCAST_NO_ECN: an incast of two flows or more that met neither an ECN mark nor a CNP with ECN on."""
    marked, cnps = r.get("np_ecn_marked_roce_packets"), r.get("np_cnp_sent")
    measured = [g for g in (rail.get("flows") or {}).values() if g is not None]
    if not (ecn_on and not marked and not cnps and "np_ecn_marked_roce_packets" in r and len(measured) >= 2 and not rail.get("inconclusive")):
        return []
    return [
        finding(
            "INCAST_NO_ECN",
            f"{rail['receiver']} {rail['device']}: no ECN mark and no CNP under incast of "
            f"{len(measured)} although the intent enables ECN (fabric.roce.ecn): the switch port "
            f"{loc['switch']} {loc['switch_port']} towards the receiver does not mark",
            check="incast",
            evidence={"ecn_marked": marked, "cnp_sent": cnps},
            **loc,
        )
    ]


# ---------------------------------------------------------------- incast: lossless proof by counters


def _stats(text):
    try:
        return parse_ethtool_stats(text)["stats"], None
    except ParseError as e:
        return None, str(e)


def counter_deltas(before, after):
    """{counter: after - before} of two ``ethtool -S`` listings, or (None, why)."""
    b, why = _stats(before)
    a, why_a = _stats(after)
    if b is None or a is None:
        return None, why or why_a
    return {k: a[k] - b.get(k, 0) for k in a}, None


def incast_threshold_gbps(fabric, k):
    """What each of k flows into one port must keep: its fair share x the ib_write_bw fraction."""
    return rdma_threshold_gbps(fabric) / max(1, int(k))


def incast_findings(phase, fabric, cabling):
    """Findings of the incast phase.

    ``phase``: {node: {"receiver", "senders", "results": [ib_write_bw results],
    "counters": {device: [ethtool -S before, after]}}}. Per rail (device), each
    sender's flow must keep its fair share, and on a lossless (RoCE) intent the
    senders must see PFC pauses on the no-drop priority only, the receiver no
    discards on it. Returns (findings, rails) - rails is the per-rail evidence
    (k, goodput, pause / discard deltas) for the report.
    """
    out, rails = [], []
    if not phase:
        return out, rails
    any_node = next(iter(phase.values()))
    receiver, senders = any_node.get("receiver"), list(any_node.get("senders") or [])
    k = len(senders)
    roce = (fabric or {}).get("transport", "roce") == "roce"
    prio = int(((fabric or {}).get("roce") or {}).get("no_drop_priority", 3))
    threshold = incast_threshold_gbps(fabric, k)
    devices = list(any_node.get("devices") or ((phase.get(receiver) or {}).get("counters") or {}))
    for device in devices:
        rail = {
            "device": device,
            "receiver": receiver,
            "senders": senders,
            "k": k,
            "threshold_gbps": threshold,
            "flows": {},
            "pause": {},
            "discards": {},
            "missing": [],
        }
        deltas = _rail_deltas(phase, rail, roce, cabling, out)
        out += _counter_findings(deltas, rail, roce, prio, cabling)
        bad = _flow_findings(phase, rail, deltas, roce, fabric, cabling, out)
        out += _lossless_findings(rail, bad, prio, cabling)
        rails.append(rail)
    return out, rails


def _rail_deltas(phase, rail, roce, cabling, out):
    """{node: its ethtool -S deltas on the rail's device}; an unreadable pair is COUNTER_MISSING (into ``out``)."""
    device, deltas = rail["device"], {}
    for node in [rail["receiver"]] + rail["senders"]:
        pair = ((phase.get(node) or {}).get("counters") or {}).get(device)
        if pair is None and not roce:
            continue  # InfiniBand: credit-based, no PFC; its counters (perfquery) are not read here yet
        pair = pair or ["", ""]
        d, why = counter_deltas(pair[0], pair[1])
        if d is None:
            out.append(
                finding(
                    "COUNTER_MISSING",
                    f"{node} {device}: ethtool -S unreadable ({why}); PFC under incast cannot be proven on this port",
                    check="incast",
                    **_where(cabling, node, device),
                )
            )
            continue
        deltas[node] = d
    return deltas


def _counter_findings(deltas, rail, roce, prio, cabling):
    """The rail's pauses and discards per node (into ``rail``) and what they prove wrong: a counter the
    driver lacks, pauses on another priority than the no-drop one, drops on it."""
    out, device = [], rail["device"]
    for node, d in deltas.items():
        for name in (f"rx_prio{prio}_pause", f"tx_prio{prio}_pause", f"rx_prio{prio}_discards"):
            if name not in d:
                rail["missing"].append(f"{node}:{name}")
                out.append(
                    finding(
                        "COUNTER_MISSING",
                        f"{node} {device}: the driver does not expose {name}; "
                        + ("PFC pauses" if "pause" in name else "drops")
                        + f" on priority {prio} cannot be proven",
                        check="incast",
                        counter=name,
                        **_where(cabling, node, device),
                    )
                )
        rail["pause"][node] = d.get(f"rx_prio{prio}_pause", 0) + d.get(f"tx_prio{prio}_pause", 0)
        rail["discards"][node] = d.get(f"rx_prio{prio}_discards", 0)
        wrong = {n: v for n, v in d.items() if v > 0 and re.fullmatch(r"(rx|tx)_prio[0-7]_pause", n) and n[7] != str(prio)}
        if roce and wrong:
            out.append(
                finding(
                    "INCAST_PAUSE_WRONG_PRIORITY",
                    f"{node} {device}: pause frames on "
                    + ", ".join(f"{n} +{v}" for n, v in sorted(wrong.items()))
                    + f"; only the no-drop priority {prio} may pause",
                    check="incast",
                    evidence={"deltas": wrong},
                    **_where(cabling, node, device),
                )
            )
        if roce and rail["discards"][node] > 0:
            out.append(
                finding(
                    "INCAST_DROPS",
                    f"{node} {device}: rx_prio{prio}_discards +{rail['discards'][node]} on the no-drop priority under incast",
                    check="incast",
                    **_where(cabling, node, device),
                )
            )
    return out


def _flow_findings(phase, rail, deltas, roce, fabric, cabling, out):
    """Each sender's flow on the rail (into ``rail``): a failed test is INCAST_FAILED, a flow far above
    its fair share INCAST_INCONCLUSIVE (into ``out``); returns the flows that missed the threshold or
    saw no pause, ``[(node, gbps, no_pause)]``."""
    device, receiver, k, threshold = rail["device"], rail["receiver"], rail["k"], rail["threshold_gbps"]
    bad = []
    for node in rail["senders"]:
        res = next((r for r in (phase.get(node) or {}).get("results") or [] if r.get("device") == device), None)
        gbps = (res or {}).get("gbps")
        rail["flows"][node] = gbps
        if res is None or res.get("error") or gbps is None:
            out.append(
                finding(
                    "INCAST_FAILED",
                    f"{node} {device} -> {receiver}: " + ((res or {}).get("error") or "no result"),
                    check="incast",
                    **_where(cabling, node, device),
                )
            )
            continue
        if k >= 2 and gbps > 1.5 * derived(fabric)["line_rate_gbps"] / k:
            # far above its fair share: it never shared the receiver's port, so it proves nothing
            out.append(
                finding(
                    "INCAST_INCONCLUSIVE",
                    f"{node} {device} -> {receiver}: {gbps:.1f} Gb/s, above "
                    f"the fair share of {k} flows - it ran alone (the others had not started or had "
                    "finished); its port's lossless class is not proven",
                    check="incast",
                    evidence={"k": k, "gbps": gbps},
                    **_where(cabling, node, device),
                )
            )
            rail.setdefault("inconclusive", []).append(node)
            continue
        no_pause = roce and node in deltas and rail["pause"].get(node, 0) == 0
        if gbps < threshold or no_pause:
            bad.append((node, gbps, no_pause))
    return bad


def _lossless_findings(rail, bad, prio, cabling):
    """INCAST_GOODPUT_LOW / INCAST_NO_PAUSE of the flows that failed the lossless proof; when every
    counted flow into the receiver failed, the receiver's port (or its switch port) is the suspect."""
    device, receiver, senders, k, threshold = (rail["device"], rail["receiver"], rail["senders"], rail["k"], rail["threshold_gbps"])
    out = []
    counted = [n for n in senders if n not in rail.get("inconclusive", [])]
    blame_receiver = len(bad) == len(counted) and len(counted) >= 2
    for node, gbps, no_pause in [(receiver, None, None)] if blame_receiver else bad:
        where = _where(cabling, node, device)
        if blame_receiver:
            flows = ", ".join(f"{flow[0]} {flow[1]:.1f}" if flow[1] is not None else f"{flow[0]} -" for flow in bad)
            msg = (
                f"every incast flow into {receiver} {device} failed the lossless proof ({flows} Gb/s, "
                f"fair share threshold {threshold:.1f}; pauses on priority {prio}: " + ", ".join(f"{n} {rail['pause'].get(n, '-')}" for n in senders) + ")"
            )
            code = "INCAST_NO_PAUSE" if all(x[2] for x in bad) else "INCAST_GOODPUT_LOW"
        elif gbps < threshold:
            code = "INCAST_GOODPUT_LOW"
            msg = (
                f"{node} {device} -> {receiver}: {gbps:.1f} Gb/s under incast of {k} (threshold "
                f"{threshold:.1f} Gb/s); pauses on priority {prio}: {rail['pause'].get(node, '-')}"
            )
        else:
            code = "INCAST_NO_PAUSE"
            msg = f"{node} {device} -> {receiver}: no PFC pause on priority {prio} under incast of {k} although the intent declares it lossless"
        out.append(finding(code, msg, check="incast", evidence={"k": k, "flows": rail["flows"], "pause": rail["pause"]}, **where))
    return out


# ---------------------------------------------------------------- incast rotation: every port a receiver


def incast_groups(log):
    """The incast groups that ran, from the per-node incast records.

    ``log``: {node: [{"round", "role": receiver | sender, "receiver", "senders", "devices",
    "results", "counters", "hw"}]} (role task incast.yml, one record per round the node took part
    in). Returns [(round, receiver, {node: record})]: per round and receiver, the records of the
    receiver and its senders - the ``phase`` ``incast_findings`` judges."""
    groups = {}
    for node, records in (log or {}).items():
        for rec in records or []:
            if not isinstance(rec, dict) or rec.get("receiver") is None:
                continue
            groups.setdefault((int(rec.get("round") or 0), rec["receiver"]), {})[node] = rec
    return [(r, receiver, phase) for (r, receiver), phase in sorted(groups.items(), key=lambda x: (x[0][0], str(x[0][1])))]


def incast_rotation(log, fabric, cabling, nodes=None, uplinks=None):
    """Findings, per-rail evidence and coverage of the rotated incast phase.

    Each group (``incast_groups``) is judged like a single incast (``incast_findings``: pauses,
    drops, goodput; ``hw_findings``: ECN, CNPs, loss). Coverage
    (``{"ports": [proven, in_scope], "uplinks": [proven, in_scope], "receivers": [...],
    "rounds": n}``): a host port is proven when its node received an incast on that rail and the
    group has no error on that rail; a leaf's uplinks when a proven group on its rail had a
    sender under another leaf (the flow crossed both leaves' uplinks). In scope: every cabled
    port of ``nodes`` (default the nodes of the log), and the leaves of rails that span several
    leaves (``uplinks`` {leaf: switch_uplinks}: only leaves listed there)."""
    nodes = list(nodes) if nodes is not None else sorted(log or {})
    leaf_of = {k: v for k, v in leaves_of(cabling).items() if k[0] in set(nodes)}
    scope_ports = {k for k in cabling if k[0] in set(nodes)}
    scope_up = uplink_scope(leaf_of)
    if uplinks:
        scope_up &= set(uplinks)
    out, rails, proven_ports, proven_up, rounds = [], [], set(), set(), set()
    for rnd, receiver, phase in incast_groups(log):
        f, group_rails = incast_findings(phase, fabric, cabling)
        f += hw_findings(phase, fabric, cabling, group_rails, finding, _where, f)
        for x in f:
            x.update(incast_round=rnd, receiver=receiver)  # which group saw it (the report's case)
        rounds.add(rnd)
        for rail in group_rails:
            rail["round"] = rnd
            device = rail["device"]
            bad = [x for x in f if x["severity"] == "error" and x.get("device") == device]
            rail["ok"] = not bad
            ran = [s for s, g in (rail.get("flows") or {}).items() if g is not None and s not in (rail.get("inconclusive") or [])]
            if bad or len(ran) < 2:
                continue
            proven_ports.add((receiver, device))
            here = leaf_of.get((receiver, device))
            for s in ran:
                there = leaf_of.get((s, device))
                if here is not None and there is not None and here != there:
                    proven_up.update(x for x in (here, there) if x in scope_up)
        out += f
        rails += group_rails
    coverage = {
        "ports": [len(proven_ports & scope_ports), len(scope_ports)],
        "uplinks": [len(proven_up), len(scope_up)],
        "rounds": len(rounds),
        "receivers": sorted({r for _rnd, r, _p in incast_groups(log)}, key=str),
        "unproven_ports": sorted(f"{n} {d}" for n, d in scope_ports - proven_ports)[:50],
    }
    return out, rails, coverage


# ---------------------------------------------------------------- in the report


def proven_text(pair):
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
    detail = (
        f"{coverage.get('rounds', 0)} round(s), {len(coverage.get('receivers') or [])} receiver(s); "
        f"host ports proven lossless {proven_text(ports)}, leaf uplinks {proven_text(ups)}"
        + ("" if ups[1] else " (every rail under one leaf: no same-rail traffic crosses an uplink)")
        + f"; {len(errors)} error(s)"
    )
    cases = []

    def of(x, r):
        return (x.get("incast_round"), x.get("receiver"), x.get("device")) == (r.get("round"), r["receiver"], r["device"])

    for r in rails:
        mine = [x for x in errors if of(x, r)]
        cases.append(
            {
                "name": f"incast round {r.get('round', 0)}: {r['device']} -> {r['receiver']} (k={r['k']})",
                "ok": not mine,
                "code": mine[0]["code"] if mine else None,
                "message": "; ".join(x["message"] for x in mine) or None,
            }
        )
    # a finding of no rail (a switch's counters, its lossless state) fails the check as its own case
    rest = [x for x in errors if not any(of(x, r) for r in rails)]
    for x in rest:
        cases.append(
            {
                "name": f"incast {x.get('switch') or x.get('node')} {x.get('switch_port') or x.get('device') or ''}".strip(),
                "ok": False,
                "code": x["code"],
                "message": x["message"],
            }
        )
    return {"passed": not errors, "rails": rails, "coverage": coverage, "switch_unproven": unproven, "detail": detail, "cases": cases}


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report(ctx):
    """check ``incast``: lossless proof by counters, every node a receiver once (the rotation)."""
    log = {n: ctx.data[n]["verify_fabric_incast_log"] for n in ctx.nodes if ctx.data[n].get("verify_fabric_incast_log")}
    if not log:
        return [], {}
    f, rails, coverage = incast_rotation(log, ctx.fabric, ctx.cabling, ctx.nodes, ctx.uplinks())
    sw, unproven = switch_findings(ctx.switch_reads("switch_fabric_counters"), ctx.fabric, ctx.hosts, ctx.uplinks(), rails, finding, f)
    f += sw
    return f, {"incast": incast_check(f, rails, coverage, unproven)}
