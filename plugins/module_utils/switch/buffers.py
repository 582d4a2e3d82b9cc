"""Lossless headroom of a SONiC port: the buffer profile of its no-drop priority group.

SONiC's traditional buffer model gives a lossless priority group a profile named
``pg_lossless_<speed>_<cable>_profile`` whose size / xon / xoff come from the
platform's ``pg_profile_lookup.ini`` (buffermgrd reads it per port speed and
CABLE_LENGTH). ``SONIC_PG_LOOKUP`` is that table as sonic-swss ships it for its
tests: sonic-net/sonic-swss ``tests/pg_profile_lookup.ini`` (commit 8f84f612fc05,
lines 2-17; Apache-2.0, extracted data). It stops at 100G; a platform's own file
(device/<vendor>/<platform>/<hwsku>/pg_profile_lookup.ini) has its speeds: give
those rows in ``switch_fabric_sonic_pg_lookup`` (docs/switches.md). A speed and
cable length with no row has no lossless profile - buffermgrd logs "No PG
profile configured for speed ... and cable ..." and the port has no headroom -
so linerate refuses it before any switch is contacted.

Stdlib only: imported by the switch_buffers filter (templates) and the tests.
"""
import re

# speed (Mb/s) -> cable -> (size, xon, xoff, dynamic threshold)
SONIC_PG_LOOKUP = {
    10000: {"5m": (34816, 18432, 16384, 0), "40m": (36864, 18432, 18432, 0), "300m": (49152, 18432, 30720, 0)},
    25000: {"5m": (34816, 18432, 16384, 0), "40m": (39936, 18432, 21504, 0), "300m": (71680, 18432, 53248, 0)},
    40000: {"5m": (34816, 18432, 16384, 0), "40m": (41984, 18432, 23552, 0), "300m": (94208, 18432, 75776, 0)},
    50000: {"5m": (34816, 18432, 16384, 0), "40m": (41984, 18432, 23552, 0), "300m": (94208, 18432, 75776, 0)},
    100000: {"5m": (36864, 18432, 18432, 0), "40m": (54272, 18432, 35840, 0), "300m": (184320, 18432, 165888, 0)},
}
# sonic-cable-length.yang (sonic-buildimage src/sonic-yang-models, commit 086b03bd70f9): length "[0-9]+m"
CABLE_PATTERN = r"[0-9]+m"
# role switch_fabric's default cable length (switch_fabric_cable_length: switch_cable_length | default('5m'))
DEFAULT_CABLE = "5m"
# the ingress pool of lossless traffic in SONiC's buffer templates (buffers_defaults_*.j2)
LOSSLESS_POOL = "ingress_lossless_pool"
# sonic-pfcwd.yang: detection_time 100..5000 ms, restoration_time 100..60000 ms, action drop|forward|alert
PFCWD_DETECTION_MS = (100, 5000)
PFCWD_RESTORATION_MS = (100, 60000)
PFCWD_ACTIONS = ("drop", "forward", "alert")


def profile_name(speed_mbps, cable):
    return f"pg_lossless_{int(speed_mbps)}_{cable}_profile"


def lookup(extra=None):
    """The lookup table with the operator's rows (``{"<speed>": {"<cable>": {size, xon, xoff,
    dynamic_th}}}``) over sonic-swss's."""
    table = {s: dict(c) for s, c in SONIC_PG_LOOKUP.items()}
    for speed, cables in (extra or {}).items():
        for cable, row in (cables or {}).items():
            table.setdefault(int(speed), {})[str(cable)] = (int(row["size"]), int(row["xon"]), int(row["xoff"]),
                                                            int(row.get("dynamic_th", 0)))
    return table


def headroom_problems(speeds_mbps, cable, extra=None, detection_ms=None, restoration_ms=None, action=None):
    """Every reason the lossless buffer intent cannot be rendered, each naming key, value and allowed."""
    out = []
    if not isinstance(cable, str) or not re.fullmatch(CABLE_PATTERN, cable):
        out.append(f"switch_fabric_cable_length: {cable!r} is not a cable length (allowed: digits and 'm', "
                   "e.g. 5m, 40m, 300m: sonic-cable-length.yang)")
        return out
    try:
        table = lookup(extra)
    except (KeyError, TypeError, ValueError) as exc:
        return [f"switch_fabric_sonic_pg_lookup: {extra!r} is not {{speed: {{cable: {{size, xon, xoff}}}}}} ({exc})"]
    for speed in sorted(set(int(s) for s in speeds_mbps)):
        if cable not in table.get(speed, {}):
            known = ", ".join(f"{s}/{c}" for s in sorted(table) for c in table[s])
            out.append(f"switch_fabric_cable_length: no lossless headroom profile for speed {speed} and cable "
                       f"{cable} (a real switch's buffermgrd has none either: the port would have no headroom); "
                       f"known speed/cable pairs: {known}; add the platform's row in switch_fabric_sonic_pg_lookup")
    for key, value, (lo, hi) in (("switch_fabric_pfcwd_detection_ms", detection_ms, PFCWD_DETECTION_MS),
                                 ("switch_fabric_pfcwd_restoration_ms", restoration_ms, PFCWD_RESTORATION_MS)):
        if value is None:
            continue
        if isinstance(value, bool) or not str(value).isdigit() or not lo <= int(value) <= hi:
            out.append(f"{key}: {value!r} is not allowed (allowed: {lo}..{hi} ms, sonic-pfcwd.yang)")
    if action is not None and action not in PFCWD_ACTIONS:
        out.append(f"switch_fabric_pfcwd_action: {action!r} is not allowed (allowed: {', '.join(PFCWD_ACTIONS)})")
    return out


def port_speed_problems(switch, ports, cable, extra=None, cable_key="switch_cable_length",
                        lookup_key="switch_sonic_pg_lookup"):
    """(key, value, allowed) for each speed of a SONiC switch's fabric ports ([{name, speed_gbps}]) that
    has no lossless headroom row for ``cable`` in the lookup table (sonic-swss's rows and the operator's
    ``extra``), naming the switch, its ports at that speed and the speeds the table has for the cable:
    checked with the intent, before any switch is contacted. The speeds come from the table only."""
    if not isinstance(cable, str) or not re.fullmatch(CABLE_PATTERN, cable):
        return [(f"{switch}: {cable_key}", cable, "allowed: a cable length: digits and 'm', e.g. 5m, 40m, 300m "
                 "(sonic-cable-length.yang)")]
    try:
        table = lookup(extra)
    except (AttributeError, KeyError, TypeError, ValueError):
        return [(f"{switch}: {lookup_key}", extra, "allowed: {<speed Mb/s>: {<cable>: {size, xon, xoff[, "
                 "dynamic_th]}}}, the rows of the platform's pg_profile_lookup.ini")]
    by_speed = {}
    for port in ports:
        if port.get("speed_gbps"):
            by_speed.setdefault(int(port["speed_gbps"]), []).append(str(port.get("name")))
    supported = ", ".join(f"{s // 1000}" for s in sorted(table) if cable in table[s]) or "none"
    out = []
    for gbps, names in sorted(by_speed.items()):
        if cable in table.get(gbps * 1000, {}):
            continue
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        out.append((f"{switch}: fabric port(s) {shown}: speed_gbps", gbps,
                    f"allowed: a speed with a lossless headroom row for cable {cable} on SONiC: {supported} Gb/s "
                    f"(sonic-swss's pg_profile_lookup.ini and {lookup_key}); buffermgrd has no profile for "
                    f"{gbps * 1000} Mb/s and {cable}, so the port would have no headroom: add the platform's row "
                    f"for {gbps * 1000} in {lookup_key} (docs/switches.md)"))
    return out


def sonic_lossless(ports, cable, extra=None, detection_ms=200, restoration_ms=200, action="drop"):
    """{speed_mbps: {"name", "size", "xon", "xoff", "dynamic_th"}} for the fabric ports' speeds;
    raises ValueError naming every problem."""
    speeds = [int(p["speed_gbps"]) * 1000 for p in ports if p.get("speed_gbps")]
    problems = [f"switch_fabric_ports_effective: port {p.get('name')!r} has no speed_gbps (allowed: the port's "
                "speed in Gb/s; its lossless headroom profile is chosen by speed and cable length)"
                for p in ports if not p.get("speed_gbps")]
    problems += headroom_problems(speeds, cable, extra, detection_ms, restoration_ms, action)
    if problems:
        raise ValueError("; ".join(problems))
    table = lookup(extra)
    return {s: dict(zip(("size", "xon", "xoff", "dynamic_th"), table[s][cable]), name=profile_name(s, cable))
            for s in sorted(set(speeds))}


# EOS PFC watchdog per port (Arista EOS User Manual, "DCBX and Flow Control", PFC Watchdog;
# forms and value patterns from aristanetworks/avd eos_cli_config_gen docs/tables/qos-profiles.md,
# commit 00aba0460df9, Apache-2.0: ``priority-flow-control pause watchdog port action drop|notify-only``
# (without it a stuck queue error-disables the port), ``... port timer timeout <s> polling-interval
# auto|<s> recovery-time <s> [forced]``, timeout and recovery-time seconds with at most 2 decimals,
# 0.01..60). The intent's action in SONiC's words maps onto EOS's; SONiC's ``forward`` has no per-port
# EOS equivalent.
EOS_PFCWD_ACTIONS = {"drop": "drop", "alert": "notify-only"}
EOS_PFCWD_MS = (10, 60000)


def _eos_seconds(ms):
    """200 -> '0.2', 1000 -> '1', 1250 -> '1.25' (seconds with at most 2 decimals)."""
    return f"{int(ms) / 1000:.2f}".rstrip("0").rstrip(".")


def eos_pfcwd(action="drop", detection_ms=200, restoration_ms=200):
    """{"action", "timeout", "recovery_time"} of EOS's per-port watchdog; raises ValueError naming
    every problem (key, value, allowed)."""
    out = []
    if action not in EOS_PFCWD_ACTIONS:
        out.append(f"switch_fabric_pfcwd_action: {action!r} is not allowed on EOS (allowed: "
                   f"{', '.join(EOS_PFCWD_ACTIONS)}; EOS's per-port watchdog action is drop or notify-only)")
    for key, value in (("switch_fabric_pfcwd_detection_ms", detection_ms),
                       ("switch_fabric_pfcwd_restoration_ms", restoration_ms)):
        lo, hi = EOS_PFCWD_MS
        if isinstance(value, bool) or not str(value).isdigit() or not lo <= int(value) <= hi or int(value) % 10:
            out.append(f"{key}: {value!r} is not allowed on EOS (allowed: {lo}..{hi} ms in steps of 10 ms: "
                       "EOS takes seconds with at most 2 decimals, 0.01..60)")
    if out:
        raise ValueError("; ".join(out))
    return {"action": EOS_PFCWD_ACTIONS[action], "timeout": _eos_seconds(detection_ms),
            "recovery_time": _eos_seconds(restoration_ms)}
