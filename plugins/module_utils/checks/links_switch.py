"""Link health, the switches' side (RoCE): what each switch counts on every port the inventory cables
(host-facing and uplinks) over the verification window, against the host side's limits (link_limits.py).

The switch_counters module reads them in the snapshots playbooks/verify.yml takes before and after the
benchmarks (``switch_fabric_counters``): the interface error counters (``switch_link_findings``), each
port's optical module (``switch_optics_findings``) and the bit error rate and FEC counters of what it
receives (``switch_ber_findings``). Pure functions over plain data (stdlib only); checks/links.py's
report joins them with the host side.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks.cabling import expected_ends, switch_ports
from ansible_collections.linerate.fabric.plugins.module_utils.checks.link_limits import counter_delta, module_problems, thresholds


def _switch_unreadable(read):
    """Why a switch's error counters cannot be judged (None: they can)."""
    before, after = (read or {}).get("before"), (read or {}).get("after")
    if not before or not after:
        return "no snapshot " + ("before" if not before else "after") + " the benchmarks"
    for snap in (before, after):
        if snap.get("failed"):
            return snap.get("msg") or "the switch could not be read"
        if snap.get("errors_msg"):
            return snap["errors_msg"]
        if "errors" not in snap:
            return "the snapshot has no interface error counters"
    return None


def _port_delta(b, a):
    """({counter: delta}, flaps or None) of one switch port's error counters between two snapshots."""
    errs = {k: counter_delta(int((b.get("errors") or {}).get(k) or 0), v) for k, v in (a.get("errors") or {}).items() if isinstance(v, int)}
    flaps = None
    if isinstance(a.get("link_down"), int):
        d = counter_delta(int(b.get("link_down") or 0), a["link_down"])
        # NVUE carrier-transitions counts down and up: a flap is two (one if it is still down)
        flaps = (d + 1) // 2 if a.get("link_down_unit") == "transitions" else d
    return errs, flaps


def _merge(prior, code, node, device, label, evidence):
    """Add the switch's count to the host side's finding of the same port and code; True if there was one."""
    hit = False
    for x in prior:
        if x.get("code") == code and x.get("node") == node and x.get("device") == device:
            x.setdefault("evidence", {})["switch_counted"] = evidence
            x["message"] += f"; the switch counted it too: {label}"
            hit = True
    return hit


def switch_link_findings(reads, fabric, hosts, uplinks, finding, prior=()):
    """Findings of the switches' interface error counters over the window: (findings, unproven, shown).

    ``reads``: {switch: {"before", "after"}} (role task switch_fabric/counters.yml:
    ``errors`` per port as the switch_counters module returns them, ``errors_msg``).
    ``hosts`` ({node: rdma_ports}) and ``uplinks`` ({switch: switch_uplinks}) say
    what is cabled to each port (cabling.expected_ends). Errors above
    ``fabric.verify.link_errors_max`` -> LINK_ERRORS, link-downs above
    ``link_flaps_max`` -> LINK_FLAP, named by node and device (or peer switch and
    port) with switch and switch_port; where ``prior`` (the host side's findings)
    already has that code on that node and device, the switch's count goes into
    its evidence (``switch_counted``) instead. An unreadable switch, an unreported
    port or counter: COUNTER_MISSING. What a platform never reports (link-down
    events on SONiC portstat and EOS) is returned in ``unproven`` ({switch: [what]}).
    ``shown``: {(node, device): {"switch_errors", "switch_flaps"}} for the report's table.
    """
    out, unproven, shown = [], {}, {}
    if (fabric or {}).get("transport", "roce") != "roce" or not reads:
        return out, unproven, shown
    limits = thresholds(fabric)
    ends, names = expected_ends(hosts, uplinks)
    for sw in sorted({key[0] for key in ends}):
        why = _switch_unreadable(reads.get(sw))
        if why:
            out.append(
                finding(
                    "COUNTER_MISSING",
                    f"{sw}: the switch's interface error counters could not be read "
                    f"({why}); errors and flaps counted by the switch on its ports are not proven",
                    check="link_health",
                    switch=sw,
                    counter="switch interface error counters",
                )
            )
            continue
        before, after = reads[sw]["before"]["errors"] or {}, reads[sw]["after"]["errors"] or {}
        for port, end, where in switch_ports(sw, ends, names):
            found, seen = _switch_port_findings(sw, port, end, where, before.get(port), after.get(port), limits, finding, prior, unproven)
            out += found
            if seen is not None:
                shown[(end[1], end[2])] = seen
        out += switch_optics_findings(sw, reads[sw]["after"], ends, names, limits, finding, unproven)
        out += switch_ber_findings(sw, reads[sw]["before"], reads[sw]["after"], ends, names, limits, finding, unproven, list(prior) + out)
    return out, unproven, shown


def _switch_port_findings(sw, port, end, where, b, a, limits, finding, prior, unproven):
    """One cabled switch port's interface error counters (``b``, ``a``: before and after): (findings, what the
    report's table shows of a host port, else None). A port or counter the switch does not report is
    COUNTER_MISSING, link-down events a platform never reports go to ``unproven``."""
    label = f"{sw} {port} (towards {end[1]} {end[2]})"
    if b is None or a is None:
        return [
            finding(
                "COUNTER_MISSING",
                f"{label}: the switch does not report this port's interface error counters; errors and flaps counted by the switch on it are not proven",
                check="link_health",
                counter="switch interface error counters",
                **where,
            )
        ], None
    out = []
    for what in a.get("missing") or []:
        if what == "link down events":
            unproven.setdefault(sw, [])
            if what not in unproven[sw]:
                unproven[sw].append(what)
            continue
        out.append(
            finding(
                "COUNTER_MISSING",
                f"{label}: the switch does not report {what} on this port; errors it would count are not proven",
                check="link_health",
                counter=what,
                **where,
            )
        )
    errs, flaps = _port_delta(b, a)
    host = end[0] == "host"
    out += _switch_errors_findings(sw, port, end, where, label, errs, limits, finding, prior if host else None)
    out += _switch_flap_findings(sw, port, end, where, label, flaps, limits, finding, prior if host else None)
    return out, ({"switch_errors": sum(errs.values()), "switch_flaps": flaps} if host else None)


def _switch_errors_findings(sw, port, end, where, label, errs, limits, finding, prior):
    """LINK_ERRORS: the port's errors above link_errors_max, or (``prior``: a host port's host-side findings)
    the switch's count in the host's LINK_ERRORS of that port."""
    nonzero = {k: v for k, v in sorted(errs.items()) if v}
    if sum(errs.values()) <= limits["link_errors_max"]:
        return []
    text = ", ".join(f"{k} +{v}" for k, v in nonzero.items())
    evidence = {"counted_by": "switch", "switch": sw, "switch_port": port, "deltas": nonzero, "threshold": limits["link_errors_max"]}
    if prior is not None and _merge(prior, "LINK_ERRORS", end[1], end[2], f"{sw} {port} {text}", evidence):
        return []
    return [
        finding(
            "LINK_ERRORS",
            f"{label}: {text} counted by the switch over the verification "
            f"window (threshold {limits['link_errors_max']}): the cable, optic or port "
            "corrupts frames",
            check="link_health",
            evidence=evidence,
            **where,
        )
    ]


def _switch_flap_findings(sw, port, end, where, label, flaps, limits, finding, prior):
    """LINK_FLAP: the port's link-downs above link_flaps_max, or (``prior``: a host port's host-side findings)
    the switch's count in the host's LINK_FLAP of that port."""
    if (flaps or 0) <= limits["link_flaps_max"]:
        return []
    evidence = {"counted_by": "switch", "switch": sw, "switch_port": port, "link_down": flaps, "threshold": limits["link_flaps_max"]}
    if prior is not None and _merge(prior, "LINK_FLAP", end[1], end[2], f"{sw} {port} link down +{flaps}", evidence):
        return []
    return [
        finding(
            "LINK_FLAP",
            f"{label}: the switch saw the link go down {flaps} time(s) during verification (threshold {limits['link_flaps_max']})",
            check="link_health",
            evidence=evidence,
            **where,
        )
    ]


def _switch_read(sw, after, key, what, unproven):
    """A switch snapshot's ``key`` read (switch_counters ``optics``, ``ber``), or None: nothing to judge where the
    caller did not read it, and where the read failed ``unproven`` says ``what`` and why (``<key>_msg``)."""
    if key in after and after[key] is None:
        unproven.setdefault(sw, []).append(f"{what} ({after.get(key + '_msg') or 'not read'})")
    return after.get(key)


def switch_optics_findings(sw, after, ends, names, limits, finding, unproven):
    """The switch's own optical modules on its fabric ports and uplinks, read at the end of the window
    (switch_counters ``optics``): OPTIC_RX_POWER_LOW / OPTIC_TEMP_HIGH against each module's own thresholds
    (module_problems, as for the NICs), named by switch and port with what is cabled there; light the switch
    receives is what the far end sends, so a bad strand shows on one side only. A switch whose modules could
    not be read goes to ``unproven``; a snapshot without ``optics`` (a caller that does not read them) judges
    nothing."""
    out = []
    optics = _switch_read(sw, after, "optics", "optical modules", unproven)
    if optics is None:
        return out
    for port, end, where in switch_ports(sw, ends, names):
        label = f"{sw} {port} (towards {end[1]} {end[2]})"
        module = optics.get(port)
        if module is None:
            out.append(
                finding(
                    "COUNTER_MISSING",
                    f"{label}: the switch does not report this port's optical module; its Rx power and temperature are not proven",
                    check="link_health",
                    counter="switch optical module",
                    **where,
                )
            )
            continue
        for code, msg, evidence, counter in module_problems(label, module, limits, "the switch")[1]:
            extra = {"counter": counter} if counter else {}
            out.append(finding(code, msg, check="link_health", evidence=dict(evidence or {}, module="switch", switch=sw, switch_port=port), **extra, **where))
    return out


# what the switch's read of a port calls each rate, and the fabric.verify limit it is held to (the host's mlxlink
# Raw and Effective Physical BER are held to the same two)
SWITCH_BER = (("pre_fec_ber", "pre-FEC bit error rate", "raw_ber_max"), ("post_fec_ber", "post-FEC bit error rate", "effective_ber_max"))
SWITCH_BER_READS = SWITCH_BER + (("fec_uncorrected", "uncorrected FEC errors", "link_errors_max"),)


def _switch_ber_gaps(sw, read, unproven):
    """The fields the switch prints on none of the cabled ports it reports (the platform's or release's gap, said
    once in ``unproven``): their set."""
    reported = [v for v in read.values() if v is not None]
    gaps = set()
    for key, what, _limit in SWITCH_BER_READS:
        if reported and all(v.get(key) is None for v in reported):
            gaps.add(key)
            unproven.setdefault(sw, []).append(f"{what} (the switch's read prints none)")
    return gaps


def _fold_uncorrected(found, sw, port, delta, unit, evidence):
    """Add the switch's uncorrected FEC errors to a LINK_ERRORS finding already made on that switch port (the
    host's or the switch's interface error counters); True if there was one."""
    hit = False
    for x in found:
        if x.get("code") == "LINK_ERRORS" and x.get("switch") == sw and str(x.get("switch_port")) == port:
            x.setdefault("evidence", {})["switch_fec_uncorrected"] = evidence
            x["message"] += f"; the switch's FEC could not correct {delta} {unit} on it"
            hit = True
    return hit


def switch_ber_findings(sw, before, after, ends, names, limits, finding, unproven, prior=()):
    """The bit error rate and FEC counters of what the switch receives on each fabric port and uplink
    (switch_counters ``ber``, the drivers' ``phy_errors``), named by switch and port with what is cabled
    there. Light and signal the switch receives are what the far end sends: the host's mlxlink judges the
    other direction.

    LINK_BER_HIGH: the pre-FEC BER at the end of the window above fabric.verify.raw_ber_max, the post-FEC BER
    above effective_ber_max (the limits of the host's Raw / Effective Physical BER). LINK_ERRORS: uncorrected
    FEC errors (codewords; bits on NVUE, effective-errors) that grew between the snapshots before and after
    the benchmarks by more than link_errors_max - folded into a LINK_ERRORS already made on that switch port
    (``prior``: the host's findings and the switch's interface error counters). A switch whose read failed, a
    field it prints on none of its ports, or a window without a read at its start goes to ``unproven``; a port
    it does not report, or a field missing on one port only: COUNTER_MISSING. A snapshot without ``ber`` (a
    caller that does not read it) judges nothing."""
    out = []
    ber = _switch_read(sw, after, "ber", "bit error rates and FEC counters", unproven)
    if ber is None:
        return out
    ports = switch_ports(sw, ends, names)
    read = {port: ber.get(port) for port, _end, _where in ports}
    gaps = _switch_ber_gaps(sw, read, unproven)
    start = (before or {}).get("ber")
    if start is None and "fec_uncorrected" not in gaps:
        unproven.setdefault(sw, []).append(f"uncorrected FEC errors over the window (no read at its start: {(before or {}).get('ber_msg') or 'not read'})")
    unit = "bits" if after.get("platform") == "nvue" else "codewords"
    for port, end, where in ports:
        label = f"{sw} {port} (towards {end[1]} {end[2]})"
        a = read[port]
        if a is None:
            out.append(
                finding(
                    "COUNTER_MISSING",
                    f"{label}: the switch does not report this port's bit error rate or FEC counters; what it receives is not proven",
                    check="link_health",
                    counter="switch bit error rate",
                    **where,
                )
            )
            continue
        out += _ber_rate_findings(sw, port, label, a, gaps, limits, where, finding)
        if a.get("fec_uncorrected") is None or start is None:
            continue
        out += _uncorrected_findings(sw, port, label, a, (start or {}).get(port) or {}, limits, unit, where, finding, list(prior) + out)
    return out


def _ber_rate_findings(sw, port, label, a, gaps, limits, where, finding):
    """One port's read (``a``): COUNTER_MISSING for a field it lacks (where other ports print it), LINK_BER_HIGH
    for a rate above its limit."""
    out = []
    for key, what, _limit in SWITCH_BER_READS:
        if a.get(key) is None and key not in gaps:
            out.append(
                finding(
                    "COUNTER_MISSING",
                    f"{label}: the switch prints no {what} for this port (N/A); it is not proven",
                    check="link_health",
                    counter=f"switch {what}",
                    **where,
                )
            )
    for key, what, limit in SWITCH_BER:
        v = a.get(key)
        if v is not None and v > limits[limit]:
            out.append(
                finding(
                    "LINK_BER_HIGH",
                    f"{label}: {what} {v:.2e} above {limits[limit]:g} (fabric.verify.{limit}), measured by the switch on what it receives",
                    check="link_health",
                    evidence={"counted_by": "switch", "switch": sw, "switch_port": port, key: v, "threshold": limits[limit], "fec_mode": a.get("fec_mode")},
                    **where,
                )
            )
    return out


def _uncorrected_findings(sw, port, label, a, b, limits, unit, where, finding, found):
    """The growth of one port's uncorrected FEC errors (``b``, ``a``: its reads at the window's start and end):
    LINK_ERRORS above link_errors_max, folded into one already in ``found`` on that switch port."""
    if b.get("fec_uncorrected") is None:
        return [
            finding(
                "COUNTER_MISSING",
                f"{label}: the switch's read at the start of the window has no uncorrected FEC errors for this port; their growth is not proven",
                check="link_health",
                counter="switch uncorrected FEC errors",
                **where,
            )
        ]
    d = counter_delta(int(b["fec_uncorrected"]), int(a["fec_uncorrected"]))
    if d <= limits["link_errors_max"]:
        return []
    evidence = {"counted_by": "switch", "switch": sw, "switch_port": port, "fec_uncorrected": d, "unit": unit, "threshold": limits["link_errors_max"]}
    if _fold_uncorrected(found, sw, port, d, unit, evidence):
        return []
    return [
        finding(
            "LINK_ERRORS",
            f"{label}: the switch's FEC could not correct {d} {unit} over the "
            f"verification window (threshold {limits['link_errors_max']}): frames it received "
            "were lost",
            check="link_health",
            evidence=evidence,
            **where,
        )
    ]
