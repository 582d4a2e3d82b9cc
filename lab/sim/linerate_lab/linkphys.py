"""Physical-layer faults that keep happening while they last: a dirty or
damaged cable/optic (``crc-errors``), a flapping link (``flap``) and a NIC that
keeps sending PFC pause frames (``pfc-storm``).

A link carries symbols all the time (idle symbols too), so a bad cable keeps
producing errors whether or not a benchmark runs: the counters rise with time,
at a rate, from the moment the fault was injected. Each fault is kept in the
NIC as ``phy_faults.<kind> = {"since": epoch, ...}``; ``counters(nic)`` is what
the driver reports now (``nic["counters"]`` plus what the faults have added),
read by ``ethtool -S`` and ``mlxlink``. Undoing a fault folds what it added into
``nic["counters"]``: hardware counters never go back down.
"""

import time

# A damaged cable on a 400G PAM4 link: corrected bits by the million per second,
# and some codewords FEC cannot correct, which end as symbol and CRC errors.
CRC_ERRORS_PER_S = 50
CORRECTED_BITS_PER_ERROR = 20000
# A flapping link goes down and retrains once per period.
FLAP_PERIOD_S = 8.0
# A PFC storm (lab fault pfc-storm): a NIC whose receive side is stuck keeps asking its switch port
# to pause the priority, refreshing the pause before it expires: the lab's model sends one pause
# frame per 20 us (the quanta of a full pause at 400G last ~84 us; mlx5 refreshes it early), and the
# link stays paused the whole time (tx_prioN_pause_duration, in microseconds, grows with the clock).
PFC_STORM_FRAMES_PER_S = 50000


def accrued(nic, now=None, kinds=None):
    """{counter: n} the physical faults of ``nic`` have added by ``now``."""
    now = time.time() if now is None else now
    out = {}
    faults = nic.get("phy_faults") or {}
    crc = faults.get("crc")
    if crc and (kinds is None or "crc" in kinds):
        n = int(max(0.0, now - crc["since"]) * crc.get("rate", CRC_ERRORS_PER_S))
        lanes = max(1, int(nic.get("width", 4)))
        out.update(rx_crc_errors_phy=n, rx_symbol_err_phy=n, rx_pcs_symbol_err_phy=n, rx_corrected_bits_phy=n * CORRECTED_BITS_PER_ERROR)
        out.update({f"rx_err_lane_{i}_phy": n * CORRECTED_BITS_PER_ERROR // lanes for i in range(lanes)})
    storm = faults.get("pfc_storm")
    if storm and (kinds is None or "pfc_storm" in kinds):
        dt = max(0.0, now - storm["since"])
        prio = int(storm.get("prio", 3))
        out.update({f"tx_prio{prio}_pause": int(dt * storm.get("rate", PFC_STORM_FRAMES_PER_S)), f"tx_prio{prio}_pause_duration": int(dt * 1e6)})
    flap = faults.get("flap")
    if flap and (kinds is None or "flap" in kinds):
        downs = 1 + int(max(0.0, now - flap["since"]) / flap.get("period", FLAP_PERIOD_S))
        out.update(link_down_events_phy=downs, link_error_recovery_phy=downs)
    return out


def counters(nic, now=None):
    """The NIC's counters as the driver reports them now."""
    c = dict(nic.get("counters") or {})
    for k, v in accrued(nic, now).items():
        c[k] = int(c.get(k, 0)) + v
    return c


def start(nic, kind, now=None, **params):
    nic.setdefault("phy_faults", {})[kind] = {"since": time.time() if now is None else now, **params}


def stop(nic, kind, now=None):
    """End a fault; what it counted stays in the counters."""
    if kind not in (nic.get("phy_faults") or {}):
        return False
    c = nic.setdefault("counters", {})
    for k, v in accrued(nic, now, kinds=(kind,)).items():
        c[k] = int(c.get(k, 0)) + v
    del nic["phy_faults"][kind]
    return True


PHY_PREFIXES = (
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "rx_pcs_symbol_err_phy",
    "rx_corrected_bits_phy",
    "rx_err_lane_",
    "link_down_events_phy",
    "link_error_recovery_phy",
)


def clear(nic, now=None):
    """mlxlink --pc: the physical counters read zero from now on, and the time
    since the last clear (over which mlxlink computes BER) starts again."""
    c = nic.setdefault("counters", {})
    for k in list(c):
        if k.startswith(PHY_PREFIXES):
            c[k] = 0
    nic["phy_cleared_at"] = time.time() if now is None else now


def seconds_since_clear(nic, uptime, now=None):
    """What mlxlink's 'Time Since Last Clear' counts: since the driver loaded
    (the node's uptime) or since the last mlxlink --pc, whichever is later."""
    now = time.time() if now is None else now
    cleared = nic.get("phy_cleared_at")
    return uptime if cleared is None else max(0.0, min(uptime, now - float(cleared)))
