"""Link health over the verification window: physical error counters and BER.

Pure functions over plain data (stdlib only), used by the verify_report action
and the tests. Nothing here runs a tool: role task ``link_health.yml`` reads,
on every node at the start and at the end of verification (so the window
covers every benchmark), per cabled port:

- RoCE: ``ethtool -S <netdev>`` (mlx5 PHY counters ``rx_crc_errors_phy``,
  ``rx_symbol_err_phy``, ``link_down_events_phy`` ...);
- InfiniBand: ``perfquery -C <device> -P <port>`` (IBA PortCounters:
  ``SymbolErrorCounter``, ``LinkDownedCounter``, ``PortRcvErrors`` ...);
- both: ``mlxlink -d <device> -c -m`` (effective / raw BER, FEC, module).

A snapshot per node: ``{"transport", "start": SNAP, "end": SNAP}`` with
``SNAP = {"devices": [...], "phy": [text per device], "phy_err": [...],
"mlxlink": [...], "mlxlink_err": [...]}`` (lists aligned with ``devices``).
"""

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.counters import parse_ethtool_stats
    from ansible_collections.linerate.fabric.plugins.module_utils.linkhealth import parse_mlxlink, parse_perfquery
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError
    from counters import parse_ethtool_stats
    from linkhealth import parse_mlxlink, parse_perfquery

# Thresholds of fabric.verify (module_utils/intent.py validates them).
DEFAULTS = {"link_errors_max": 0, "link_flaps_max": 0, "effective_ber_max": 1e-12, "raw_ber_max": 2.4e-4}

# mlx5 ethtool -S: errors a healthy link does not have after FEC, and its link-down events.
ETH_ERRORS = ("rx_crc_errors_phy", "rx_symbol_err_phy", "rx_fec_uncorrectable_phy")
ETH_REQUIRED = ("rx_crc_errors_phy", "rx_symbol_err_phy", "link_down_events_phy")
ETH_FLAP = "link_down_events_phy"
# IBA PortCounters (perfquery): errors and link-down events.
IB_ERRORS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "PortRcvErrors", "LocalLinkIntegrityErrors",
             "ExcessiveBufferOverrunErrors", "PortRcvRemotePhysicalErrors")
IB_REQUIRED = ("SymbolErrorCounter", "LinkDownedCounter", "PortRcvErrors")
IB_FLAP = "LinkDownedCounter"


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
        if (row["flaps"] or 0) > limits["link_flaps_max"]:
            problems.append(("LINK_FLAP", f"{node} {device}: {flap} +{row['flaps']}: the link went down and came "
                             f"back during verification (threshold {limits['link_flaps_max']})",
                             {flap: row["flaps"], "threshold": limits["link_flaps_max"]}, None))
    ml, why = _mlxlink(_at(end, "mlxlink", i), _at(end, "mlxlink_err", i))
    if ml is None:
        problems.append(("COUNTER_MISSING", f"{node} {device}: mlxlink unreadable ({why}); the link's BER, FEC "
                         "and module are not proven", None, "mlxlink"))
        return row, problems
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
    return row, problems


def link_health_findings(data, fabric, cabling, finding, where):
    """Findings of the link_health check and its per-port rows for the report.

    ``data``: {node: snapshot} (see the module docstring); ``finding`` and
    ``where`` are verify.finding / verify._where (passed in, no import cycle).
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
            row["ok"] = not [p for p in problems if p[0] != "COUNTER_MISSING"]
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
