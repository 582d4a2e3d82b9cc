"""What both ends of a link are judged by, the host's port (checks/links.py) and the switch's
(checks/links_switch.py): fabric.verify's link health thresholds, a counter's growth over the window, and
an optical module's diagnostics against its own alarm thresholds (``module_problems``: ``mlxlink -m`` or
``ethtool -m`` on a NIC, the switch's transceiver read on a switch port).

Pure functions over plain data.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS as FABRIC_DEFAULTS

# The link health thresholds of fabric.verify, with the defaults intent/fabric.py validates and documents.
LINK_KEYS = ("link_errors_max", "link_flaps_max", "effective_ber_max", "raw_ber_max", "optic_rx_power_margin_db", "optic_temp_margin_c")
DEFAULTS = {k: FABRIC_DEFAULTS["verify"][k] for k in LINK_KEYS}


def thresholds(fabric):
    """The link health thresholds of ``fabric.verify``, each defaulted from DEFAULTS."""
    v = (fabric or {}).get("verify") or {}
    return {k: v.get(k, d) for k, d in DEFAULTS.items()}


def counter_delta(before, after):
    """A counter's growth between two reads."""
    # a counter that went down was cleared (or, on IB, wrapped at its width): count what it shows now
    return after - before if after >= before else after


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
    said = {"rx_power_dbm": (ddm.get("rx_power_dbm") or {}).get("values"), "temperature_c": ((ddm.get("temperature_c") or {}).get("values") or [None])[0]}
    for key, name in (("rx_power_dbm", "Rx power"), ("temperature_c", "temperature")):
        if ddm.get(key) is None:
            out.append(
                (
                    "COUNTER_MISSING",
                    f"{label}: the optical module ({module.get('part_number') or '?'}) "
                    f"reports no {name} or no alarm thresholds for it ({tool}); it is not proven",
                    None,
                    f"Module Info {name}",
                )
            )
    rx = ddm.get("rx_power_dbm")
    margin = float(limits["optic_rx_power_margin_db"])
    if rx and rx["high"] > rx["low"]:
        floor = rx["low"] + margin
        low = {i: v for i, v in enumerate(rx["values"]) if v < floor}
        if low:
            out.append(
                (
                    "OPTIC_RX_POWER_LOW",
                    f"{label}: optical module {module.get('vendor') or ''} "
                    f"{module.get('part_number') or ''} receives "
                    + ", ".join(f"lane {i} {v:g} dBm" for i, v in low.items())
                    + f", below {floor:g} dBm (the module's low threshold {rx['low']:g} dBm + margin {margin:g} dB, "
                    "fabric.verify.optic_rx_power_margin_db): a dirty or damaged fibre, connector or far-end "
                    "transmitter",
                    {"lanes": low, "rx_power_dbm": rx["values"], "low_threshold_dbm": rx["low"], "margin_db": margin},
                    None,
                )
            )
    temp = ddm.get("temperature_c")
    tmargin = float(limits["optic_temp_margin_c"])
    if temp and temp["high"] > temp["low"]:
        ceiling = temp["high"] - tmargin
        if temp["values"][0] > ceiling:
            out.append(
                (
                    "OPTIC_TEMP_HIGH",
                    f"{label}: optical module {module.get('part_number') or ''} at "
                    f"{temp['values'][0]:g} C, above {ceiling:g} C (its high threshold {temp['high']:g} C - margin "
                    f"{tmargin:g} C, fabric.verify.optic_temp_margin_c): airflow or a failing module",
                    {"temperature_c": temp["values"][0], "high_threshold_c": temp["high"], "margin_c": tmargin},
                    None,
                )
            )
    return said, out
