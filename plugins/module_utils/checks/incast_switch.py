"""Incast phase, switch side: the switches' own congestion counters and lossless state over the benchmarks.

Pure functions over plain data (stdlib only), used by the incast check (``incast.report``) after
``incast_rotation`` (the hosts' counters). Role task ``switch_fabric/counters.yml`` reads every
switch before and after the benchmarks (``switch_counters``: pause frames, drops and ECN marks per
port and priority; the lossless state: headroom, PFC watchdog and its storms); every port the
inventory cables (``cabling.expected_ends``), host-facing and uplink, is judged.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks.cabling import expected_ends, switch_ports


def _delta(before, after):
    """after - before of a counter (int or {priority: int}); a counter that went back (cleared) counts from 0."""
    if after is None:
        return None
    if isinstance(after, dict):
        before = before if isinstance(before, dict) else {}
        return {str(k): _delta(before.get(k, before.get(str(k))), v) for k, v in after.items()}
    b = before if isinstance(before, int) else 0
    return after - b if after >= b else after


def switch_deltas(before, after):
    """{port: deltas} of two switch_counters snapshots (ports in both); pause/drops stay per priority."""
    out = {}
    for port, a in ((after or {}).get("ports") or {}).items():
        b = ((before or {}).get("ports") or {}).get(port)
        if b is None:
            continue
        d = {k: _delta(b.get(k), a.get(k)) for k in ("rx_pause", "tx_pause", "rx_pause_total", "tx_pause_total", "drops", "ecn_marked", "cnp_tx")}
        d["per_priority"] = bool(a.get("per_priority"))
        d["missing"] = list(a.get("missing") or [])
        out[port] = d
    return out


def _on(per_prio, prio):
    """The count of the no-drop priority in a per-priority delta ('roce': a platform's RoCE class, same thing)."""
    if not per_prio:
        return 0
    return sum(v or 0 for k, v in per_prio.items() if str(k) in (prio, "roce"))


def switch_findings(reads, fabric, hosts, uplinks, rails, finding, prior=()):
    """Findings of the switches' own counters over the benchmarks; adds their evidence to ``rails``.

    ``reads``: {switch: {"before": snapshot, "after": snapshot}}, each snapshot
    what role task switch_fabric/counters.yml keeps ({failed, msg, platform,
    ports: switch_counters' ports, ports_missing}). ``hosts`` ({node:
    rdma_ports}) and ``uplinks`` ({switch: switch_uplinks}) say what is cabled
    to each port (cabling.expected_ends, the cabling check's own map). Judged
    on every such port, host-facing and uplink: pause frames on a priority
    other than the no-drop one (where the platform splits pauses per priority)
    and drops of the no-drop priority. Drops where ``prior`` already names that
    rail's culprit go into its evidence instead. What a platform does not
    expose is listed in the returned ``unproven`` ({switch: [what]}), not
    raised as a finding: it is a property of the platform, the same on every run.
    """
    out, unproven, evidence = [], {}, {}
    if (fabric or {}).get("transport", "roce") != "roce" or not reads:
        return out, unproven
    prio = str(int(((fabric or {}).get("roce") or {}).get("no_drop_priority", 3)))
    ends, names = expected_ends(hosts, uplinks)
    for sw in sorted({key[0] for key in ends}):
        read = reads.get(sw) or {}
        before, after = read.get("before"), read.get("after")
        if not before or not after or before.get("failed") or after.get("failed"):
            failed = next((x for x in (before, after) if x and x.get("failed")), None)
            why = (failed or {}).get("msg") or "no snapshot " + ("before" if not before else "after") + " the benchmarks"
            out.append(
                finding(
                    "COUNTER_MISSING",
                    f"{sw}: the switch's congestion counters could not be read ({why}); pause frames, ECN marks and drops on its ports are not proven",
                    check="incast",
                    switch=sw,
                    counter="switch_counters",
                )
            )
            continue
        deltas = switch_deltas(before, after)
        for port, end, where in switch_ports(sw, ends, names):
            d = deltas.get(port)
            if d is None:
                out.append(
                    finding(
                        "COUNTER_MISSING",
                        f"{sw} {port}: the switch does not report this port's congestion counters; pause frames and drops on it are not proven",
                        check="incast",
                        counter="switch_counters",
                        **where,
                    )
                )
                continue
            unproven.setdefault(sw, []).extend(w for w in d["missing"] if w not in unproven[sw])
            f, shown = _judge_port(d, prio, f"{sw} {port} (towards {end[1]} {end[2]})", where, finding, prior)
            out += f
            if end[0] == "host":
                evidence[(end[1], end[2])] = shown
    for rail in rails:
        for key in ("pause", "ecn_marked", "drops"):
            rail["switch_" + key] = {n: (evidence.get((n, rail["device"])) or {}).get(key) for n in [rail["receiver"]] + list(rail.get("senders") or [])}
    lf, lu = lossless_findings(reads, fabric, hosts, uplinks, finding)
    out += lf
    for sw, what in lu.items():
        unproven.setdefault(sw, []).extend(w for w in what if w not in unproven[sw])
    return out, {sw: what for sw, what in unproven.items() if what}


def lossless_findings(reads, fabric, hosts, uplinks, finding):
    """(findings, unproven) of the switches' lossless state as switch_counters reads it back
    (``lossless`` of each snapshot: Driver.lossless), on every port the inventory cables:

    - SWITCH_NO_HEADROOM: the no-drop priority has no lossless headroom on the port (after);
    - PFC_WATCHDOG_OFF: the port's PFC watchdog does not guard the no-drop priority (after);
    - PFC_STORM: the watchdog detected a storm on the port's no-drop queue between the two
      snapshots (detected rose), or the queue is stormed now.

    What a platform's driver does not read (``missing``) goes to ``unproven``, not a finding."""
    out, unproven = [], {}
    if (fabric or {}).get("transport", "roce") != "roce" or not reads:
        return out, unproven
    prio = int(((fabric or {}).get("roce") or {}).get("no_drop_priority", 3))
    ends, names = expected_ends(hosts, uplinks)
    for sw in sorted({key[0] for key in ends}):
        read = reads.get(sw) or {}
        after, before = read.get("after") or {}, read.get("before") or {}
        state = after.get("lossless")
        if after.get("failed") or not after:
            continue  # switch_findings already says the switch could not be read
        if "lossless" not in after:
            continue  # a snapshot from a caller that does not read the lossless state (none judged)
        if state is None:
            why = after.get("lossless_msg") or "not read"
            unproven.setdefault(sw, []).append(f"lossless headroom and PFC watchdog ({why})")
            continue
        for port, end, where in switch_ports(sw, ends, names):
            st = state.get(port)
            if st is None:
                continue
            label = f"{sw} {port} (towards {end[1]} {end[2]})"
            unproven.setdefault(sw, []).extend(w for w in st.get("missing") or [] if w not in unproven[sw])
            was = (before.get("lossless") or {}).get(port) or {}
            for judge in LOSSLESS_JUDGES:
                out += judge(st, was, prio, label, end, where, finding)
    return out, {sw: what for sw, what in unproven.items() if what}


def _headroom_findings(st, was, prio, label, end, where, finding):
    """SWITCH_NO_HEADROOM: the no-drop priority has no lossless headroom on the port (after)."""
    if st.get("headroom") is None or prio in st["headroom"]:
        return []
    return [
        finding(
            "SWITCH_NO_HEADROOM",
            f"{label}: no lossless headroom for the no-drop priority "
            f"{prio} (priorities with headroom: {st['headroom']}): PFC is "
            f"{'on' if prio in (st.get('pfc') or []) else 'off'} but what is in flight when "
            "the pause goes out has nowhere to go, so the port drops under incast",
            check="incast",
            evidence={"headroom": st["headroom"], "pfc": st.get("pfc")},
            **where,
        )
    ]


def _watchdog_findings(st, was, prio, label, end, where, finding):
    """PFC_WATCHDOG_OFF: the port's PFC watchdog does not guard the no-drop priority (after)."""
    if st.get("pfcwd") is None or prio in st["pfcwd"]:
        return []
    return [
        finding(
            "PFC_WATCHDOG_OFF",
            f"{label}: the PFC watchdog does not guard the no-drop "
            f"priority {prio} (guarded: {st['pfcwd']}): a NIC that keeps sending pause frames "
            "would stall this queue and spread back through the fabric",
            check="incast",
            evidence={"pfcwd": st["pfcwd"]},
            **where,
        )
    ]


def _storm_findings(st, was, prio, label, end, where, finding):
    """PFC_STORM: storms the watchdog detected on the no-drop queue between the snapshots (``was``: the
    port's state before), or a queue stormed now; the host or the peer switch named as the sender."""
    now = (st.get("storms") or {}).get(str(prio)) or (st.get("storms") or {}).get(prio) or {}
    was = (was.get("storms") or {}).get(str(prio)) or {}
    detected = int(now.get("detected") or 0) - int(was.get("detected") or 0)
    if not (detected > 0 or now.get("stormed")):
        return []
    return [
        finding(
            "PFC_STORM",
            f"{label}: the PFC watchdog "
            + (f"detected {detected} pause storm(s)" if detected > 0 else "holds a stormed queue")
            + f" on the no-drop priority {prio} during verification: "
            + (f"{end[1]} {end[2]} keeps sending pause frames" if end[0] == "host" else f"the peer {end[1]} {end[2]} keeps pausing this port")
            + " (the watchdog drops the queue meanwhile)",
            check="incast",
            evidence={"detected": detected, "stormed": now.get("stormed")},
            **where,
        )
    ]


# lossless_findings' judges of one port's lossless state, in the order their findings come
LOSSLESS_JUDGES = (_headroom_findings, _watchdog_findings, _storm_findings)


def _judge_port(d, prio, label, where, finding, prior):
    """(findings, evidence) of one switch port's counter deltas ``d`` (switch_deltas)."""
    out = []
    pause = {k: ((d["rx_pause"] or {}).get(k) or 0) + ((d["tx_pause"] or {}).get(k) or 0) for k in set(d["rx_pause"] or {}) | set(d["tx_pause"] or {})}
    # a platform without the per-priority split (EOS) still shows that the port paused
    shown = (
        _on(pause, prio)
        if pause or d["per_priority"]
        else None
        if d["rx_pause_total"] is None and d["tx_pause_total"] is None
        else (d["rx_pause_total"] or 0) + (d["tx_pause_total"] or 0)
    )
    drops = _on(d["drops"], prio)
    wrong = {k: v for k, v in pause.items() if d["per_priority"] and k.isdigit() and k != prio and v}
    if wrong:
        out.append(
            finding(
                "SWITCH_PAUSE_WRONG_PRIORITY",
                f"{label}: pause frames "
                + ", ".join(f"+{v} on priority {k}" for k, v in sorted(wrong.items()))
                + f" during the benchmarks; only the no-drop priority {prio} may pause (PFC enabled "
                "on another priority, or traffic classified into the wrong one)",
                check="incast",
                evidence={"pause": pause},
                **where,
            )
        )
    named = [
        x for x in prior if drops and where.get("device") and x.get("device") == where["device"] and x["severity"] == "error" and x.get("check") == "incast"
    ]
    for x in named:
        x.setdefault("evidence", {}).setdefault("switch_drops", {})[f"{where['switch']} {where['switch_port']}"] = drops
    if drops and not named:
        out.append(
            finding(
                "SWITCH_DROPS_NO_DROP",
                f"{label}: +{drops} packets of the no-drop priority {prio} dropped "
                "during the benchmarks: the class is not lossless on this port (PFC off or not honoured "
                "on the path)",
                check="incast",
                evidence={"drops": d["drops"]},
                **where,
            )
        )
    return out, {"pause": shown, "ecn_marked": d["ecn_marked"], "drops": drops}
