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

The switches' side (RoCE, ``links_switch.py``): the interface error counters the
switch_counters module reads in the snapshots playbooks/verify.yml takes before and
after the benchmarks (``switch_fabric_counters``), judged by ``switch_link_findings``
on every port the inventory cables, against the same thresholds (``link_limits.py``);
in the same snapshots each port's optical module (``switch_optics_findings``) and the
bit error rate and FEC counters of what it receives (``switch_ber_findings``).
``report`` (the ``link_health`` check) joins both sides.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks.cabling import _where
from ansible_collections.linerate.fabric.plugins.module_utils.checks.link_limits import counter_delta, module_problems, thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.checks.links_switch import _switch_unreadable, switch_link_findings
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import parse_ethtool_stats
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ethtool_module import parse_ethtool_module
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import parse_mlxlink, parse_perfquery

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
IB_ERRORS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "PortRcvErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "PortRcvRemotePhysicalErrors",
)
IB_REQUIRED = ("SymbolErrorCounter", "LinkDownedCounter", "PortRcvErrors")
IB_FLAP = "LinkDownedCounter"
# A NIC that keeps sending PFC pause frames (a stuck receive path: a PFC storm). Over the verification
# window a healthy host sends few: under incast the switch is where the pause starts (it pauses the
# senders, their rx_prioN_pause rises), not the host. linerate's line: more than this many
# tx_prioN_pause frames from one port over the window is a storm (a storm refreshes its pause every
# few tens of microseconds: tens of thousands of frames a second).
PFC_STORM_TX_PAUSE_MAX = 100000


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
    row = {"node": node, "device": device, "tool": tool, "errors": None, "flaps": None, "effective_ber": None, "raw_ber": None, "fec": None, "missing": []}
    problems = _phy_problems(node, device, transport, start, end, i, limits, row)
    ml, why = _mlxlink(_at(end, "mlxlink", i), _at(end, "mlxlink_err", i))
    if ml is None:
        return row, problems + without_mlxlink(node, device, why, _at(end, "ethtool_m", i), _at(end, "ethtool_m_err", i), limits, row)
    row.update(effective_ber=ml["effective_ber"], raw_ber=ml["raw_ber"], fec=ml["fec"])
    for key, label, limit in (("effective_ber", "Effective Physical BER", "effective_ber_max"), ("raw_ber", "Raw Physical BER", "raw_ber_max")):
        if ml[key] is None:
            row["missing"].append(label)
            problems.append(
                ("COUNTER_MISSING", f"{node} {device}: mlxlink prints no {label} (older MFT or firmware); the link's bit error rate is not proven", None, label)
            )
        elif ml[key] > limits[limit]:
            problems.append(
                (
                    "LINK_BER_HIGH",
                    f"{node} {device}: {label} {ml[key]:.2e} above {limits[limit]:g} (fabric.verify.{limit}); mlxlink: {ml.get('recommendation') or '-'}",
                    {key: ml[key], "threshold": limits[limit], "fec": ml["fec"]},
                    None,
                )
            )
    problems += optics(node, device, ml, limits, row)
    return row, problems


def _phy_problems(node, device, transport, start, end, i, limits, row):
    """The port's error counters (ethtool -S or perfquery) at the window's start and end: problems, and the
    row's errors, flaps and missing counters."""
    tool = row["tool"]
    errors_of, required, flap = (IB_ERRORS, IB_REQUIRED, IB_FLAP) if transport == "infiniband" else (ETH_ERRORS, ETH_REQUIRED, ETH_FLAP)
    b, why_b = _counters(transport, _at(start, "phy", i) or "")
    a, why_a = _counters(transport, _at(end, "phy", i) or "")
    if a is None or b is None:
        why = why_a or why_b
        err = (_at(end, "phy_err", i) or _at(start, "phy_err", i) or "").strip()
        return [
            (
                "COUNTER_MISSING",
                f"{node} {device}: {tool} unreadable ({err or why}); physical errors and link flaps over the verification window are not proven on this port",
                None,
                tool,
            )
        ]
    problems = []
    for name in required:
        if name not in a:
            row["missing"].append(name)
            problems.append(
                (
                    "COUNTER_MISSING",
                    f"{node} {device}: {tool} does not expose {name}; "
                    + ("link flaps" if name == flap else "physical errors")
                    + " counted by it are not proven on this port",
                    None,
                    name,
                )
            )
    d = {k: counter_delta(b.get(k, 0), v) for k, v in a.items() if isinstance(v, int)}
    errs = {k: d[k] for k in errors_of if d.get(k)}
    row["errors"], row["flaps"] = sum(errs.values()), d.get(flap)
    return problems + _window_problems(node, device, transport, d, errs, flap, limits, row)


def _window_problems(node, device, transport, d, errs, flap, limits, row):
    """What the port's counter deltas ``d`` over the window say: LINK_ERRORS (``errs``), PFC_STORM (the NIC's
    own pause frames, RoCE), LINK_FLAP."""
    problems = []
    if row["errors"] > limits["link_errors_max"]:
        problems.append(
            (
                "LINK_ERRORS",
                f"{node} {device}: "
                + ", ".join(f"{k} +{v}" for k, v in sorted(errs.items()))
                + f" over the verification window (threshold {limits['link_errors_max']})",
                {"deltas": errs, "threshold": limits["link_errors_max"]},
                None,
            )
        )
    storm = {k: d[k] for k in (f"tx_prio{p}_pause" for p in range(8)) if transport != "infiniband" and (d.get(k) or 0) > PFC_STORM_TX_PAUSE_MAX}
    if storm:
        durations = {k + "_duration": d.get(k + "_duration") for k in storm}
        problems.append(
            (
                "PFC_STORM",
                f"{node} {device}: "
                + ", ".join(f"{k} +{v}" for k, v in sorted(storm.items()))
                + f" over the verification window (more than {PFC_STORM_TX_PAUSE_MAX}): the NIC keeps "
                "sending pause frames (a stuck receive path: a PFC storm)",
                {"deltas": storm, "pause_duration_us": durations, "threshold": PFC_STORM_TX_PAUSE_MAX},
                None,
            )
        )
    if (row["flaps"] or 0) > limits["link_flaps_max"]:
        problems.append(
            (
                "LINK_FLAP",
                f"{node} {device}: {flap} +{row['flaps']}: the link went down and came back during verification (threshold {limits['link_flaps_max']})",
                {flap: row["flaps"], "threshold": limits["link_flaps_max"]},
                None,
            )
        )
    return problems


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
        return [("COUNTER_MISSING", f"{node} {device}: mlxlink unreadable ({why}); the link's BER, FEC and module are not proven", None, "mlxlink")]
    if module is None:
        row["optics"] = "not read"
        return [
            (
                "COUNTER_MISSING",
                f"{node} {device}: mlxlink unreadable ({why}) and ethtool -m unreadable ({ewhy}); the link's BER, FEC and module are not proven",
                None,
                "mlxlink",
            )
        ]
    said, problems = module_problems(f"{node} {device}", module, limits, "ethtool -m")
    row["optics"] = said
    return [
        (
            "COUNTER_MISSING",
            f"{node} {device}: mlxlink unreadable ({why}); the link's BER and FEC are not proven (the module read from ethtool -m)",
            None,
            "mlxlink",
        )
    ] + [(code, msg, dict(evidence, read_by="ethtool -m") if evidence else evidence, counter) for code, msg, evidence, counter in problems]


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
        out.append(
            (
                "MLXLINK_RECOMMENDATION",
                f"{node} {device}: mlxlink recommends: {rec or '-'} (Status Opcode {ml.get('status_opcode')})",
                {"recommendation": rec, "status_opcode": ml.get("status_opcode")},
                None,
            )
        )
    module = ml.get("module")
    if module is None:
        row["optics"] = "not read"
        out.append(
            ("COUNTER_MISSING", f"{node} {device}: mlxlink printed no Module Info; the module's Rx power and temperature are not proven", None, "Module Info")
        )
        return out
    said, problems = module_problems(f"{node} {device}", module, limits, "mlxlink")
    row["optics"] = said
    return out + problems


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
                out.append(
                    finding(
                        "COUNTER_MISSING",
                        f"{node} {device}: the link health snapshot at the "
                        f"{'start' if not start else 'end'} of verification is missing; physical errors "
                        "and flaps over the window are not proven",
                        check="link_health",
                        **where(cabling, node, device),
                    )
                )
            continue
        for device in devices:
            row, problems = port_health(node, device, transport, _one(start, device), _one(end, device), 0, limits)
            loc = where(cabling, node, device)
            row.update(
                switch=loc["switch"],
                switch_port=None if loc["switch_port"] is None else str(loc["switch_port"]),
                netdev=(cabling.get((node, device)) or {}).get("netdev"),
            )
            for code, msg, evidence, counter in problems:
                extra = {"counter": counter} if counter else {}
                out.append(
                    finding(
                        code,
                        msg + (f" (cabled to {loc['switch']} {loc['switch_port']})" if loc["switch"] and code != "COUNTER_MISSING" else ""),
                        check="link_health",
                        evidence=evidence,
                        netdev=row["netdev"],
                        **extra,
                        **loc,
                    )
                )
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
        cases.append(
            {
                "name": f"{r['node']} {r['device']}",
                "ok": not bad,
                "code": bad[0]["code"] if bad else None,
                "message": "; ".join(x["message"] for x in mine) or None,
                "findings": mine,
            }
        )
    return {
        "passed": not errors,
        "ports": rows,
        "cases": cases,
        "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} ports without physical errors, flaps or high BER "
        f"over the window; {len(findings) - len(errors)} warning(s)",
    }


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
