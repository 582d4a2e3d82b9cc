"""Link health over the verification window: physical error counters and BER.

Pure functions over plain data (stdlib only), used by the verify_report action
and the tests. Nothing here runs a tool: role task ``link_health.yml`` reads,
on every node at the start and at the end of verification (so the window
covers every benchmark), per cabled port:

- RoCE: ``ethtool -S <netdev>`` (mlx5 PHY counters ``rx_crc_errors_phy``,
  ``rx_symbol_err_phy``, ``link_down_events_phy`` ...);
- InfiniBand: ``perfquery -C <device> -P <port>`` (IBA PortCounters:
  ``SymbolErrorCounter``, ``LinkDownedCounter``, ``PortRcvErrors`` ...);
- both: ``mlxlink -d <device> -c -m`` (effective / raw BER, FEC, module);
- RoCE, at the window's end, where that mlxlink read failed or mlxlink is off:
  ``ethtool -m <netdev>`` (the module's EEPROM and diagnostics), the module's
  second source (BER and FEC have none).

A snapshot per node: ``{"transport", "start": SNAP, "end": SNAP}`` with
``SNAP = {"devices": [...], "phy": [text per device], "phy_err": [...],
"mlxlink": [...], "mlxlink_err": [...], "ethtool_m": [...], "ethtool_m_err": [...]}``
(lists aligned with ``devices``; ``ethtool_m`` empty where it was not read).

The switches' side (RoCE): the interface error counters the switch_counters
module reads in the snapshots playbooks/verify.yml takes before and after the
benchmarks (``switch_fabric_counters``), judged by ``switch_link_findings`` on
every port the inventory cables, against the same thresholds; in the same
snapshots each port's optical module (``switch_optics_findings``) and the bit
error rate and FEC counters of what it receives (``switch_ber_findings``).
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks.cabling import _where, expected_ends, switch_ports
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import parse_ethtool_stats
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ethtool_module import parse_ethtool_module
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import parse_mlxlink, parse_perfquery

# Thresholds of fabric.verify (module_utils/intent/fabric.py validates them).
DEFAULTS = {"link_errors_max": 0, "link_flaps_max": 0, "effective_ber_max": 1e-12, "raw_ber_max": 2.4e-4,
            "optic_rx_power_margin_db": 0.0, "optic_temp_margin_c": 0.0}
# mlxlink's Troubleshooting Info of a healthy link (Status Opcode 0): "No issue was observed" (MFT 4.30
# capture) or with a full stop (an older MFT, fixtures/counters/mlxlink_cx4_c_forum2022.txt)
HEALTHY_RECOMMENDATION = "No issue was observed"
# what warns without failing the port (findings.FAULT_CODES severity "warning")
WARNINGS = ("COUNTER_MISSING", "MLXLINK_RECOMMENDATION")

# mlx5 ethtool -S: errors a healthy link does not have after FEC, and its link-down events.
ETH_ERRORS = ("rx_crc_errors_phy", "rx_symbol_err_phy", "rx_fec_uncorrectable_phy")
ETH_REQUIRED = ("rx_crc_errors_phy", "rx_symbol_err_phy", "link_down_events_phy")
ETH_FLAP = "link_down_events_phy"
# IBA PortCounters (perfquery): errors and link-down events.
IB_ERRORS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "PortRcvErrors", "LocalLinkIntegrityErrors",
             "ExcessiveBufferOverrunErrors", "PortRcvRemotePhysicalErrors")
IB_REQUIRED = ("SymbolErrorCounter", "LinkDownedCounter", "PortRcvErrors")
IB_FLAP = "LinkDownedCounter"
# A NIC that keeps sending PFC pause frames (a stuck receive path: a PFC storm). Over the verification
# window a healthy host sends few: under incast the switch is where the pause starts (it pauses the
# senders, their rx_prioN_pause rises), not the host. linerate's line: more than this many
# tx_prioN_pause frames from one port over the window is a storm (a storm refreshes its pause every
# few tens of microseconds: tens of thousands of frames a second).
PFC_STORM_TX_PAUSE_MAX = 100000


def thresholds(fabric):
    v = (fabric or {}).get("verify") or {}
    return {k: v.get(k, d) for k, d in DEFAULTS.items()}


def _at(snap, key, i):
    values = (snap or {}).get(key) or []
    return values[i] if i < len(values) else None


def _counters(transport, text):
    """{counter: int} of one port's ethtool -S / perfquery text, or (None, why)."""
    try:
        if transport == "infiniband":
            ports = parse_perfquery(text)["ports"]
            return dict(ports[0]["counters"]), None
        return parse_ethtool_stats(text)["stats"], None
    except ParseError as e:
        return None, str(e)


def _delta(before, after):
    # a counter that went down was cleared (or, on IB, wrapped at its width): count what it shows now
    return after - before if after >= before else after


def _mlxlink(text, err):
    if not (text or "").strip():
        return None, (err or "").strip() or "no output"
    try:
        return parse_mlxlink(text), None
    except ParseError as e:
        return None, str(e)


def _one(snap, device):
    """The snapshot of one device: every list cut down to its entry (empty where it is not there)."""
    devices = list(snap.get("devices") or [])
    if device not in devices:
        return {}
    i = devices.index(device)
    return {k: ([v[i]] if i < len(v) else []) if isinstance(v, list) else v for k, v in snap.items()}


def port_health(node, device, transport, start, end, i, limits):
    """One port: (row, problems) - problems are (code, message, evidence, counter) tuples."""
    tool = "perfquery" if transport == "infiniband" else "ethtool -S"
    errors_of, required, flap = ((IB_ERRORS, IB_REQUIRED, IB_FLAP) if transport == "infiniband"
                                 else (ETH_ERRORS, ETH_REQUIRED, ETH_FLAP))
    row = {"node": node, "device": device, "tool": tool, "errors": None, "flaps": None,
           "effective_ber": None, "raw_ber": None, "fec": None, "missing": []}
    problems = []
    b, why_b = _counters(transport, _at(start, "phy", i) or "")
    a, why_a = _counters(transport, _at(end, "phy", i) or "")
    if a is None or b is None:
        why = why_a or why_b
        err = (_at(end, "phy_err", i) or _at(start, "phy_err", i) or "").strip()
        problems.append(("COUNTER_MISSING", f"{node} {device}: {tool} unreadable ({err or why}); physical errors "
                         "and link flaps over the verification window are not proven on this port", None, tool))
    else:
        for name in required:
            if name not in a:
                row["missing"].append(name)
                problems.append(("COUNTER_MISSING", f"{node} {device}: {tool} does not expose {name}; "
                                 + ("link flaps" if name == flap else "physical errors")
                                 + " counted by it are not proven on this port", None, name))
        d = {k: _delta(b.get(k, 0), v) for k, v in a.items() if isinstance(v, int)}
        errs = {k: d[k] for k in errors_of if d.get(k)}
        row["errors"], row["flaps"] = sum(errs.values()), d.get(flap)
        if row["errors"] > limits["link_errors_max"]:
            problems.append(("LINK_ERRORS", f"{node} {device}: " + ", ".join(f"{k} +{v}" for k, v in sorted(errs.items()))
                             + f" over the verification window (threshold {limits['link_errors_max']})",
                             {"deltas": errs, "threshold": limits["link_errors_max"]}, None))
        storm = {k: d[k] for k in (f"tx_prio{p}_pause" for p in range(8))
                 if transport != "infiniband" and (d.get(k) or 0) > PFC_STORM_TX_PAUSE_MAX}
        if storm:
            durations = {k + "_duration": d.get(k + "_duration") for k in storm}
            problems.append(("PFC_STORM", f"{node} {device}: " + ", ".join(f"{k} +{v}" for k, v in sorted(storm.items()))
                             + f" over the verification window (more than {PFC_STORM_TX_PAUSE_MAX}): the NIC keeps "
                             "sending pause frames (a stuck receive path: a PFC storm)",
                             {"deltas": storm, "pause_duration_us": durations, "threshold": PFC_STORM_TX_PAUSE_MAX},
                             None))
        if (row["flaps"] or 0) > limits["link_flaps_max"]:
            problems.append(("LINK_FLAP", f"{node} {device}: {flap} +{row['flaps']}: the link went down and came "
                             f"back during verification (threshold {limits['link_flaps_max']})",
                             {flap: row["flaps"], "threshold": limits["link_flaps_max"]}, None))
    ml, why = _mlxlink(_at(end, "mlxlink", i), _at(end, "mlxlink_err", i))
    if ml is None:
        return row, problems + without_mlxlink(node, device, why, _at(end, "ethtool_m", i),
                                               _at(end, "ethtool_m_err", i), limits, row)
    row.update(effective_ber=ml["effective_ber"], raw_ber=ml["raw_ber"], fec=ml["fec"])
    for key, label, limit in (("effective_ber", "Effective Physical BER", "effective_ber_max"),
                              ("raw_ber", "Raw Physical BER", "raw_ber_max")):
        if ml[key] is None:
            row["missing"].append(label)
            problems.append(("COUNTER_MISSING", f"{node} {device}: mlxlink prints no {label} (older MFT or "
                             "firmware); the link's bit error rate is not proven", None, label))
        elif ml[key] > limits[limit]:
            problems.append(("LINK_BER_HIGH", f"{node} {device}: {label} {ml[key]:.2e} above {limits[limit]:g} "
                             f"(fabric.verify.{limit}); mlxlink: {ml.get('recommendation') or '-'}",
                             {key: ml[key], "threshold": limits[limit], "fec": ml["fec"]}, None))
    problems += optics(node, device, ml, limits, row)
    return row, problems


def _ethtool_module(text, err):
    """(module, why) of an ``ethtool -m`` read; (None, None) where none was made."""
    if not (text or "").strip():
        return None, " ".join((err or "").split()) or None
    try:
        return parse_ethtool_module(text), None
    except ParseError as e:
        return None, str(e)


def without_mlxlink(node, device, why, text, err, limits, row):
    """A port mlxlink could not read (``why``): problems, and row["optics"] where the module was judged.

    Its BER and FEC have no second source: COUNTER_MISSING. Its module has one, ``ethtool -m``
    (``text``/``err``, read at the window's end where mlxlink failed or is off): judged by
    module_problems as mlxlink's would be, each finding's evidence saying ``read_by: ethtool -m``.
    Without that read the module is unproven with the rest, as it is where ethtool -m failed too.
    """
    module, ewhy = _ethtool_module(text, err)
    if module is None and ewhy is None:
        return [("COUNTER_MISSING", f"{node} {device}: mlxlink unreadable ({why}); the link's BER, FEC and module "
                 "are not proven", None, "mlxlink")]
    if module is None:
        row["optics"] = "not read"
        return [("COUNTER_MISSING", f"{node} {device}: mlxlink unreadable ({why}) and ethtool -m unreadable ({ewhy}); "
                 "the link's BER, FEC and module are not proven", None, "mlxlink")]
    said, problems = module_problems(f"{node} {device}", module, limits, "ethtool -m")
    row["optics"] = said
    return [("COUNTER_MISSING", f"{node} {device}: mlxlink unreadable ({why}); the link's BER and FEC are not proven "
             "(the module read from ethtool -m)", None, "mlxlink")] + [
        (code, msg, dict(evidence, read_by="ethtool -m") if evidence else evidence, counter)
        for code, msg, evidence, counter in problems]


def optics(node, device, ml, limits, row):
    """The module (mlxlink -m Module Info) and mlxlink's own verdict: problems, and row["optics"] said.

    OPTIC_RX_POWER_LOW: a lane's Rx power below the module's low threshold + fabric.verify.optic_rx_power_margin_db;
    OPTIC_TEMP_HIGH: the temperature above its high threshold - optic_temp_margin_c (the thresholds are the
    module's own, printed beside each value); MLXLINK_RECOMMENDATION: a Status Opcode other than 0 or a
    recommendation other than "No issue was observed". A copper cable has no light: not judged. An optical
    module whose Rx power or temperature is N/A: COUNTER_MISSING.
    """
    out = []
    rec = (ml.get("recommendation") or "").strip()
    if (ml.get("status_opcode") not in (None, 0)) or (rec and not rec.startswith(HEALTHY_RECOMMENDATION)):
        out.append(("MLXLINK_RECOMMENDATION", f"{node} {device}: mlxlink recommends: {rec or '-'} "
                    f"(Status Opcode {ml.get('status_opcode')})",
                    {"recommendation": rec, "status_opcode": ml.get("status_opcode")}, None))
    module = ml.get("module")
    if module is None:
        row["optics"] = "not read"
        out.append(("COUNTER_MISSING", f"{node} {device}: mlxlink printed no Module Info; the module's Rx power "
                    "and temperature are not proven", None, "Module Info"))
        return out
    said, problems = module_problems(f"{node} {device}", module, limits, "mlxlink")
    row["optics"] = said
    return out + problems


def module_problems(label, module, limits, tool):
    """What an optical module's DDM says, for a NIC (mlxlink -m, or ethtool -m where mlxlink failed) or a
    switch port (the switch's transceiver read), all in the shape {optical, vendor, part_number,
    cable_technology, ddm: {rx_power_dbm, temperature_c: {values, low, high} or None}}: (what the report
    shows, problems).

    OPTIC_RX_POWER_LOW: a lane's Rx power below the module's low threshold + fabric.verify.optic_rx_power_margin_db;
    OPTIC_TEMP_HIGH: the temperature above its high threshold - optic_temp_margin_c (the thresholds are the
    module's own). A module that is not optical (a copper cable, an empty cage) is not judged; an optical one
    whose Rx power or temperature is N/A: COUNTER_MISSING.
    """
    out = []
    if not module.get("optical"):
        return f"not judged: {module.get('cable_technology') or 'no optical module'}", out
    ddm = module.get("ddm") or {}
    said = {"rx_power_dbm": (ddm.get("rx_power_dbm") or {}).get("values"),
            "temperature_c": ((ddm.get("temperature_c") or {}).get("values") or [None])[0]}
    for key, name in (("rx_power_dbm", "Rx power"), ("temperature_c", "temperature")):
        if ddm.get(key) is None:
            out.append(("COUNTER_MISSING", f"{label}: the optical module ({module.get('part_number') or '?'}) "
                        f"reports no {name} or no alarm thresholds for it ({tool}); it is not proven", None,
                        f"Module Info {name}"))
    rx = ddm.get("rx_power_dbm")
    margin = float(limits["optic_rx_power_margin_db"])
    if rx and rx["high"] > rx["low"]:
        floor = rx["low"] + margin
        low = {i: v for i, v in enumerate(rx["values"]) if v < floor}
        if low:
            out.append(("OPTIC_RX_POWER_LOW", f"{label}: optical module {module.get('vendor') or ''} "
                        f"{module.get('part_number') or ''} receives "
                        + ", ".join(f"lane {i} {v:g} dBm" for i, v in low.items())
                        + f", below {floor:g} dBm (the module's low threshold {rx['low']:g} dBm + margin {margin:g} dB, "
                        "fabric.verify.optic_rx_power_margin_db): a dirty or damaged fibre, connector or far-end "
                        "transmitter", {"lanes": low, "rx_power_dbm": rx["values"], "low_threshold_dbm": rx["low"],
                                        "margin_db": margin}, None))
    temp = ddm.get("temperature_c")
    tmargin = float(limits["optic_temp_margin_c"])
    if temp and temp["high"] > temp["low"]:
        ceiling = temp["high"] - tmargin
        if temp["values"][0] > ceiling:
            out.append(("OPTIC_TEMP_HIGH", f"{label}: optical module {module.get('part_number') or ''} at "
                        f"{temp['values'][0]:g} C, above {ceiling:g} C (its high threshold {temp['high']:g} C - margin "
                        f"{tmargin:g} C, fabric.verify.optic_temp_margin_c): airflow or a failing module",
                        {"temperature_c": temp["values"][0], "high_threshold_c": temp["high"], "margin_c": tmargin},
                        None))
    return said, out


def link_health_findings(data, fabric, cabling, finding, where):
    """Findings of the link_health check and its per-port rows for the report.

    ``data``: {node: snapshot} (see the module docstring); ``finding`` and
    ``where`` are findings.finding / _where (passed in, no import cycle).
    """
    out, rows = [], []
    limits = thresholds(fabric)
    for node in sorted(data or {}):
        snap = data[node] or {}
        transport = snap.get("transport") or (fabric or {}).get("transport", "roce")
        start, end = snap.get("start") or {}, snap.get("end") or {}
        devices = list(end.get("devices") or start.get("devices") or [])
        if not start or not end:
            for device in devices:
                out.append(finding("COUNTER_MISSING", f"{node} {device}: the link health snapshot at the "
                                   f"{'start' if not start else 'end'} of verification is missing; physical errors "
                                   "and flaps over the window are not proven", check="link_health",
                                   **where(cabling, node, device)))
            continue
        for device in devices:
            row, problems = port_health(node, device, transport, _one(start, device), _one(end, device), 0, limits)
            loc = where(cabling, node, device)
            row.update(switch=loc["switch"], switch_port=None if loc["switch_port"] is None else str(loc["switch_port"]),
                       netdev=(cabling.get((node, device)) or {}).get("netdev"))
            for code, msg, evidence, counter in problems:
                extra = {"counter": counter} if counter else {}
                out.append(finding(code, msg + (f" (cabled to {loc['switch']} {loc['switch_port']})"
                                                if loc["switch"] and code != "COUNTER_MISSING" else ""),
                                   check="link_health", evidence=evidence, netdev=row["netdev"], **extra, **loc))
            row["ok"] = not [p for p in problems if p[0] not in WARNINGS]
            rows.append(row)
    return out, rows


def check(findings, rows):
    """The report's link_health check: one case per port."""
    errors = [x for x in findings if x["severity"] == "error"]
    cases = []
    for r in rows:
        mine = [x for x in findings if x.get("node") == r["node"] and x.get("device") == r["device"]]
        bad = [x for x in mine if x["severity"] == "error"]
        cases.append({"name": f"{r['node']} {r['device']}", "ok": not bad, "code": bad[0]["code"] if bad else None,
                      "message": "; ".join(x["message"] for x in mine) or None, "findings": mine})
    return {"passed": not errors, "ports": rows, "cases": cases,
            "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} ports without physical errors, flaps or high BER "
                      f"over the window; {len(findings) - len(errors)} warning(s)"}


# ---------------------------------------------------------------- the switches' side

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
    errs = {k: _delta(int((b.get("errors") or {}).get(k) or 0), v)
            for k, v in (a.get("errors") or {}).items() if isinstance(v, int)}
    flaps = None
    if isinstance(a.get("link_down"), int):
        d = _delta(int(b.get("link_down") or 0), a["link_down"])
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
            out.append(finding("COUNTER_MISSING", f"{sw}: the switch's interface error counters could not be read "
                               f"({why}); errors and flaps counted by the switch on its ports are not proven",
                               check="link_health", switch=sw, counter="switch interface error counters"))
            continue
        before, after = reads[sw]["before"]["errors"] or {}, reads[sw]["after"]["errors"] or {}
        for port, end, where in switch_ports(sw, ends, names):
            host = end[0] == "host"
            label = f"{sw} {port} (towards {end[1]} {end[2]})"
            b, a = before.get(port), after.get(port)
            if b is None or a is None:
                out.append(finding("COUNTER_MISSING", f"{label}: the switch does not report this port's interface "
                                   "error counters; errors and flaps counted by the switch on it are not proven",
                                   check="link_health", counter="switch interface error counters", **where))
                continue
            for what in a.get("missing") or []:
                if what == "link down events":
                    unproven.setdefault(sw, [])
                    if what not in unproven[sw]:
                        unproven[sw].append(what)
                    continue
                out.append(finding("COUNTER_MISSING", f"{label}: the switch does not report {what} on this port; "
                                   "errors it would count are not proven", check="link_health", counter=what, **where))
            errs, flaps = _port_delta(b, a)
            total = sum(errs.values())
            if host:
                shown[(end[1], end[2])] = {"switch_errors": total, "switch_flaps": flaps}
            nonzero = {k: v for k, v in sorted(errs.items()) if v}
            if total > limits["link_errors_max"]:
                text = ", ".join(f"{k} +{v}" for k, v in nonzero.items())
                evidence = {"counted_by": "switch", "switch": sw, "switch_port": port, "deltas": nonzero,
                            "threshold": limits["link_errors_max"]}
                if not (host and _merge(prior, "LINK_ERRORS", end[1], end[2], f"{sw} {port} {text}", evidence)):
                    out.append(finding("LINK_ERRORS", f"{label}: {text} counted by the switch over the verification "
                                       f"window (threshold {limits['link_errors_max']}): the cable, optic or port "
                                       "corrupts frames", check="link_health", evidence=evidence, **where))
            if (flaps or 0) > limits["link_flaps_max"]:
                evidence = {"counted_by": "switch", "switch": sw, "switch_port": port, "link_down": flaps,
                            "threshold": limits["link_flaps_max"]}
                if not (host and _merge(prior, "LINK_FLAP", end[1], end[2], f"{sw} {port} link down +{flaps}",
                                        evidence)):
                    out.append(finding("LINK_FLAP", f"{label}: the switch saw the link go down {flaps} time(s) "
                                       f"during verification (threshold {limits['link_flaps_max']})",
                                       check="link_health", evidence=evidence, **where))
        out += switch_optics_findings(sw, reads[sw]["after"], ends, names, limits, finding, unproven)
        out += switch_ber_findings(sw, reads[sw]["before"], reads[sw]["after"], ends, names, limits, finding,
                                   unproven, list(prior) + out)
    return out, unproven, shown


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
            out.append(finding("COUNTER_MISSING", f"{label}: the switch does not report this port's optical module; "
                               "its Rx power and temperature are not proven", check="link_health",
                               counter="switch optical module", **where))
            continue
        for code, msg, evidence, counter in module_problems(label, module, limits, "the switch")[1]:
            extra = {"counter": counter} if counter else {}
            out.append(finding(code, msg, check="link_health",
                               evidence=dict(evidence or {}, module="switch", switch=sw, switch_port=port),
                               **extra, **where))
    return out


# what the switch's read of a port calls each rate, and the fabric.verify limit it is held to (the host's mlxlink
# Raw and Effective Physical BER are held to the same two)
SWITCH_BER = (("pre_fec_ber", "pre-FEC bit error rate", "raw_ber_max"),
              ("post_fec_ber", "post-FEC bit error rate", "effective_ber_max"))
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
        unproven.setdefault(sw, []).append("uncorrected FEC errors over the window (no read at its start: "
                                           f"{(before or {}).get('ber_msg') or 'not read'})")
    unit = "bits" if after.get("platform") == "nvue" else "codewords"
    for port, end, where in ports:
        label = f"{sw} {port} (towards {end[1]} {end[2]})"
        a = read[port]
        if a is None:
            out.append(finding("COUNTER_MISSING", f"{label}: the switch does not report this port's bit error rate "
                               "or FEC counters; what it receives is not proven", check="link_health",
                               counter="switch bit error rate", **where))
            continue
        for key, what, _limit in SWITCH_BER_READS:
            if a.get(key) is None and key not in gaps:
                out.append(finding("COUNTER_MISSING", f"{label}: the switch prints no {what} for this port (N/A); "
                                   "it is not proven", check="link_health", counter=f"switch {what}", **where))
        for key, what, limit in SWITCH_BER:
            v = a.get(key)
            if v is not None and v > limits[limit]:
                out.append(finding("LINK_BER_HIGH", f"{label}: {what} {v:.2e} above {limits[limit]:g} "
                                   f"(fabric.verify.{limit}), measured by the switch on what it receives",
                                   check="link_health", evidence={"counted_by": "switch", "switch": sw,
                                                                  "switch_port": port, key: v,
                                                                  "threshold": limits[limit],
                                                                  "fec_mode": a.get("fec_mode")}, **where))
        b = (start or {}).get(port) or {}
        if a.get("fec_uncorrected") is None or start is None:
            continue
        if b.get("fec_uncorrected") is None:
            out.append(finding("COUNTER_MISSING", f"{label}: the switch's read at the start of the window has no "
                               "uncorrected FEC errors for this port; their growth is not proven", check="link_health",
                               counter="switch uncorrected FEC errors", **where))
            continue
        d = _delta(int(b["fec_uncorrected"]), int(a["fec_uncorrected"]))
        if d > limits["link_errors_max"]:
            evidence = {"counted_by": "switch", "switch": sw, "switch_port": port, "fec_uncorrected": d, "unit": unit,
                        "threshold": limits["link_errors_max"]}
            if not _fold_uncorrected(list(prior) + out, sw, port, d, unit, evidence):
                out.append(finding("LINK_ERRORS", f"{label}: the switch's FEC could not correct {d} {unit} over the "
                                   f"verification window (threshold {limits['link_errors_max']}): frames it received "
                                   "were lost", check="link_health", evidence=evidence, **where))
    return out


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)

def report(ctx):
    """check ``link_health``: error counters and flaps over the window, BER."""
    snaps = {n: ctx.data[n]["verify_fabric_link_health"] for n in ctx.nodes if ctx.data[n].get("verify_fabric_link_health")}
    if not snaps:
        return [], {}
    f, rows = link_health_findings(snaps, ctx.fabric, ctx.cabling, finding, _where)
    reads = ctx.switch_reads("switch_fabric_counters")
    sw, unproven, shown = switch_link_findings(reads, ctx.fabric, ctx.hosts, ctx.uplinks(), finding, f)
    f += sw
    for row in rows:
        row.update(shown.get((row["node"], row["device"])) or {"switch_errors": None, "switch_flaps": None})
        if row.get("switch") in reads:
            # the state of the switch end's read, so the report names a failed read as failed, not as a blank
            row["switch_read"] = _switch_unreadable(reads[row["switch"]]) or "read"
    return f, {"link_health": dict(check(f, rows), switch_unproven=unproven)}
