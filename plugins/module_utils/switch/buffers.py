"""Lossless headroom of a SONiC port: the buffer profile of its no-drop priority group.

SONiC's traditional buffer model gives a lossless priority group a profile named
``pg_lossless_<speed>_<cable>_profile`` whose size / xon / xoff come from the
platform's ``pg_profile_lookup.ini`` (buffermgrd reads it per port speed and
CABLE_LENGTH, and reuses a profile of that name already in CONFIG_DB).

Which rows: the switch's SKU (``switch_sonic_hwsku``, the DEVICE_METADATA|localhost ``hwsku``)
picks its own file from ``sonic_buffer_data.PLATFORM_BUFFERS``, the rows of Spectrum-3, Spectrum-4
and Tomahawk 5 SKUs extracted from sonic-buildimage by scripts/sonic_buffer_defaults.py (each SKU
names its file and commit, each row its line). Without a SKU, ``SONIC_PG_LOOKUP``: the table
sonic-swss ships for its own tests (``tests/pg_profile_lookup.ini``, commit 8f84f612fc05, lines
2-17; Apache-2.0), which stops at 100G and is no platform's. ``switch_sonic_pg_lookup`` adds rows
(docs/switches.md). A speed and cable length with no row has no lossless profile - buffermgrd logs
"No PG profile configured for speed ... and cable ..." and the port has no headroom - so linerate
refuses it before any switch is contacted.

The buffer model (DEVICE_METADATA|localhost ``buffer_model``, sonic-device_metadata.yang:
``traditional`` by default, or ``dynamic``) decides what is written (SONiC doc/qos/
dynamically-headroom-calculation.md): traditional, the profile and BUFFER_PG -> profile; dynamic,
no headroom sizes at all (buffermgrd computes them from speed, cable length and MTU into APPL_DB),
BUFFER_PG ``{"profile": "NULL"}`` per lossless PG and CABLE_LENGTH (``for_model``).

Stdlib only: imported by the switch_buffers filter (templates), the SONiC driver and the tests.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_buffer_data import PLATFORM_BUFFERS, SOURCE_COMMIT
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        from sonic_buffer_data import PLATFORM_BUFFERS, SOURCE_COMMIT  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch.sonic_buffer_data import PLATFORM_BUFFERS, SOURCE_COMMIT  # type: ignore[import-not-found,no-redef]

# speed (Mb/s) -> cable -> (size, xon, xoff, dynamic threshold)
SONIC_PG_LOOKUP: dict[int, dict[str, tuple[int, ...]]] = {
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
# the CABLE_LENGTH object SONiC's buffer templates write (buffers_config.j2)
CABLE_LENGTH_KEY = "AZURE"
# the ingress pool of lossless traffic in SONiC's buffer templates (buffers_defaults_*.j2)
LOSSLESS_POOL = "ingress_lossless_pool"
# sonic-pfcwd.yang: detection_time 100..5000 ms, restoration_time 100..60000 ms, action drop|forward|alert
PFCWD_DETECTION_MS = (100, 5000)
PFCWD_RESTORATION_MS = (100, 60000)
PFCWD_ACTIONS = ("drop", "forward", "alert")


BUFFER_MODELS = ("traditional", "dynamic")  # sonic-device_metadata.yang buffer_model
LOSSLESS_PROFILE = re.compile(r"pg_lossless_(\d+)_(\d+m)_profile")

# (size, xon, xoff, threshold, xon_offset or None) of one speed and cable
Row = Tuple[int, int, int, int, Optional[int]]
# the generated table as data of any shape (its dict literal mixes value types)
_SKUS: Dict[str, Any] = PLATFORM_BUFFERS


class LosslessProfile(TypedDict):
    """The lossless headroom profile of one speed (``sonic_lossless``)."""

    name: str
    size: int
    xon: int
    xoff: int
    dynamic_th: int
    fields: dict[str, str]


class EosPfcwd(TypedDict):
    action: str
    timeout: str
    recovery_time: str


def profile_name(speed_mbps: Any, cable: str) -> str:
    return f"pg_lossless_{int(speed_mbps)}_{cable}_profile"


def hwsku_problem(hwsku: Any, key: str = "switch_fabric_sonic_hwsku") -> str:
    """Why ``hwsku`` picks no vendored table ('' when it does, or when it is empty: sonic-swss's rows)."""
    if hwsku in (None, "") or (isinstance(hwsku, str) and hwsku in PLATFORM_BUFFERS):
        return ""
    case = [k for k in PLATFORM_BUFFERS if isinstance(hwsku, str) and k.lower() == hwsku.lower()]
    return (
        f"{key}: {hwsku!r} is not a SONiC SKU linerate has the buffer defaults of (allowed: "
        f"{' | '.join(sorted(PLATFORM_BUFFERS))}, or empty for sonic-swss's test rows plus "
        "switch_sonic_pg_lookup"
        + (f"; names are case-sensitive: {case[0]!r}" if case else "")
        + "); on another platform leave it empty and give the rows of its "
        "device/<vendor>/<platform>/<hwsku>/pg_profile_lookup.ini in switch_sonic_pg_lookup"
    )


def source(hwsku: Any = None) -> str:
    """Where the rows come from, for messages: the SKU's file at its commit, or sonic-swss's test table."""
    if hwsku in PLATFORM_BUFFERS:
        ent = _SKUS[hwsku]
        return f"{hwsku} ({ent['asic']}): sonic-buildimage {ent['lookup']['path']}@{SOURCE_COMMIT[:12]}"
    return "sonic-swss's test pg_profile_lookup.ini - no platform's, set switch_sonic_hwsku"


def _row(row: Iterable[int]) -> Row:
    """A (size, xon, xoff, threshold[, xon_offset]) tuple as (size, xon, xoff, threshold, xon_offset|None)."""
    cells: tuple[Any, ...] = tuple(row)
    return cells + (None,) * (5 - len(cells))


def lookup(extra: Any = None, hwsku: Any = None) -> dict[int, dict[str, Row]]:
    """{speed: {cable: (size, xon, xoff, threshold, xon_offset)}}: the SKU's own rows (``hwsku``) or
    sonic-swss's, with the operator's rows (``{"<speed>": {"<cable>": {size, xon, xoff[, dynamic_th]
    [, xon_offset]}}}``) over them."""
    if hwsku in PLATFORM_BUFFERS:
        table: dict[int, dict[str, Row]] = {}
        for (speed, cable), r in _SKUS[hwsku]["rows"].items():
            table.setdefault(speed, {})[cable] = (r["size"], r["xon"], r["xoff"], r["threshold"], r.get("xon_offset"))
    else:
        table = {s: {c: _row(r) for c, r in cables.items()} for s, cables in SONIC_PG_LOOKUP.items()}
    for speed, cables in (extra or {}).items():
        for cable, row in (cables or {}).items():
            offset = row.get("xon_offset")
            table.setdefault(int(speed), {})[str(cable)] = (
                int(row["size"]),
                int(row["xon"]),
                int(row["xoff"]),
                int(row.get("dynamic_th", 0)),
                None if offset is None else int(offset),
            )
    return table


def pool_mode(hwsku: Any = None) -> str:
    """The mode of ingress_lossless_pool: buffermgrd names the profile's threshold ``<mode>_th``."""
    return str(_SKUS[hwsku]["pool_mode"]) if hwsku in PLATFORM_BUFFERS else "dynamic"


def headroom_problems(
    speeds_mbps: Iterable[Any], cable: Any, extra: Any = None, detection_ms: Any = None, restoration_ms: Any = None, action: Any = None, hwsku: Any = None
) -> list[str]:
    """Every reason the lossless buffer intent cannot be rendered, each naming key, value and allowed."""
    out: list[str] = []
    if hwsku_problem(hwsku):
        return [hwsku_problem(hwsku)]
    if not isinstance(cable, str) or not re.fullmatch(CABLE_PATTERN, cable):
        out.append(f"switch_fabric_cable_length: {cable!r} is not a cable length (allowed: digits and 'm', e.g. 5m, 40m, 300m: sonic-cable-length.yang)")
        return out
    try:
        table = lookup(extra, hwsku)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return [f"switch_fabric_sonic_pg_lookup: {extra!r} is not {{speed: {{cable: {{size, xon, xoff}}}}}} ({exc})"]
    for speed in sorted(set(int(s) for s in speeds_mbps)):
        if cable not in table.get(speed, {}):
            known = ", ".join(f"{s}/{c}" for s in sorted(table) for c in table[s])
            out.append(
                f"switch_fabric_cable_length: no lossless headroom profile for speed {speed} and cable "
                f"{cable} in {source(hwsku)} (a real switch's buffermgrd has none either: the port would "
                f"have no headroom); known speed/cable pairs: {known}; add the platform's row in "
                "switch_fabric_sonic_pg_lookup"
            )
    for key, value, (lo, hi) in (
        ("switch_fabric_pfcwd_detection_ms", detection_ms, PFCWD_DETECTION_MS),
        ("switch_fabric_pfcwd_restoration_ms", restoration_ms, PFCWD_RESTORATION_MS),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not str(value).isdigit() or not lo <= int(value) <= hi:
            out.append(f"{key}: {value!r} is not allowed (allowed: {lo}..{hi} ms, sonic-pfcwd.yang)")
    if action is not None and action not in PFCWD_ACTIONS:
        out.append(f"switch_fabric_pfcwd_action: {action!r} is not allowed (allowed: {', '.join(PFCWD_ACTIONS)})")
    return out


def port_speed_problems(
    switch: str,
    ports: Iterable[dict[str, Any]],
    cable: Any,
    extra: Any = None,
    cable_key: str = "switch_cable_length",
    lookup_key: str = "switch_sonic_pg_lookup",
    hwsku: Any = None,
    hwsku_key: str = "switch_sonic_hwsku",
) -> list[tuple[str, Any, str]]:
    """(key, value, allowed) for each speed of a SONiC switch's fabric ports ([{name, speed_gbps}]) that
    has no lossless headroom row for ``cable`` in the lookup table (the SKU's or sonic-swss's rows and
    the operator's ``extra``), naming the switch, its ports at that speed and the speeds the table has
    for the cable: checked with the intent, before any switch is contacted. The speeds come from the
    table only."""
    if hwsku_problem(hwsku, hwsku_key):
        return [
            (f"{switch}: {hwsku_key}", hwsku, "allowed: " + " | ".join(sorted(PLATFORM_BUFFERS)) + " (the SKUs linerate has the buffer defaults of), or empty")
        ]
    if not isinstance(cable, str) or not re.fullmatch(CABLE_PATTERN, cable):
        return [(f"{switch}: {cable_key}", cable, "allowed: a cable length: digits and 'm', e.g. 5m, 40m, 300m (sonic-cable-length.yang)")]
    try:
        table = lookup(extra, hwsku)
    except (AttributeError, KeyError, TypeError, ValueError):
        return [
            (
                f"{switch}: {lookup_key}",
                extra,
                "allowed: {<speed Mb/s>: {<cable>: {size, xon, xoff[, dynamic_th][, xon_offset]}}}, the rows of the platform's pg_profile_lookup.ini",
            )
        ]
    by_speed: dict[int, list[str]] = {}
    for port in ports:
        if port.get("speed_gbps"):
            by_speed.setdefault(int(port["speed_gbps"]), []).append(str(port.get("name")))
    supported = ", ".join(f"{s // 1000}" for s in sorted(table) if cable in table[s]) or "none"
    out: list[tuple[str, Any, str]] = []
    for gbps, names in sorted(by_speed.items()):
        if cable in table.get(gbps * 1000, {}):
            continue
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        out.append(
            (
                f"{switch}: fabric port(s) {shown}: speed_gbps",
                gbps,
                f"allowed: a speed with a lossless headroom row for cable {cable} on SONiC: {supported} Gb/s "
                f"(the rows of {source(hwsku)}, and {lookup_key}); buffermgrd has no profile for "
                f"{gbps * 1000} Mb/s and {cable}, so the port would have no headroom: add the platform's row "
                f"for {gbps * 1000} in {lookup_key} (docs/switches.md)",
            )
        )
    return out


# The PFC watchdog the role writes unless told otherwise (roles/switch_fabric/defaults/main.yml
# switch_fabric_pfcwd_*, which YAML cannot import): detection and restoration in ms, the action in SONiC's words.
PFCWD_DEFAULT_MS = 200
PFCWD_DEFAULT_ACTION = "drop"


def sonic_lossless(
    ports: Sequence[dict[str, Any]],
    cable: str,
    extra: Any = None,
    detection_ms: Any = PFCWD_DEFAULT_MS,
    restoration_ms: Any = PFCWD_DEFAULT_MS,
    action: Any = PFCWD_DEFAULT_ACTION,
    hwsku: Any = None,
) -> dict[int, LosslessProfile]:
    """{speed_mbps: {"name", "size", "xon", "xoff", "dynamic_th", "fields"}} for the fabric ports'
    speeds, ``fields`` the BUFFER_PROFILE entry as buffermgrd writes it (pool, xon, [xon_offset,] xoff,
    size, <pool mode>_th); raises ValueError naming every problem."""
    speeds = [int(p["speed_gbps"]) * 1000 for p in ports if p.get("speed_gbps")]
    problems = [
        f"switch_fabric_ports_effective: port {p.get('name')!r} has no speed_gbps (allowed: the port's "
        "speed in Gb/s; its lossless headroom profile is chosen by speed and cable length)"
        for p in ports
        if not p.get("speed_gbps")
    ]
    problems += headroom_problems(speeds, cable, extra, detection_ms, restoration_ms, action, hwsku)
    if problems:
        raise ValueError("; ".join(problems))
    table = lookup(extra, hwsku)
    out: dict[int, LosslessProfile] = {}
    for s in sorted(set(speeds)):
        size, xon, xoff, th, offset = table[s][cable]
        fields = {"pool": LOSSLESS_POOL, "size": str(size), "xon": str(xon), "xoff": str(xoff), f"{pool_mode(hwsku)}_th": str(th)}
        if offset is not None:
            fields["xon_offset"] = str(offset)
        out[s] = {"name": profile_name(s, cable), "size": size, "xon": xon, "xoff": xoff, "dynamic_th": th, "fields": fields}
    return out


# ------------------------------------------------------------------ the buffer model on the switch
def buffer_model(have: Any, want: Any = None) -> str:
    """The buffer model the switch's CONFIG_DB is in (DEVICE_METADATA|localhost buffer_model; absent:
    traditional, as SONiC defaults it); a full config being restored (``want`` with DEVICE_METADATA)
    brings its own. ValueError for a value outside sonic-device_metadata.yang's."""
    for db in (want, have):
        md = ((db or {}).get("DEVICE_METADATA") or {}).get("localhost") or {}
        if "buffer_model" in md:
            model = md["buffer_model"]
            if model not in BUFFER_MODELS:
                raise ValueError(
                    f"DEVICE_METADATA|localhost buffer_model: {model!r} is not a buffer model "
                    f"(allowed: {' | '.join(BUFFER_MODELS)}, sonic-device_metadata.yang)"
                )
            return str(model)
    return "traditional"


def for_model(want: dict[str, Any], model: str) -> dict[str, Any]:
    """``want`` (CONFIG_DB facts, changed in place and returned) as the buffer model expects it.
    traditional: as rendered. dynamic: the lossless profiles linerate renders (pg_lossless_<speed>_
    <cable>_profile) are dropped, buffermgrd computes them, and every BUFFER_PG that used one gets
    ``profile: NULL`` (doc/qos/dynamically-headroom-calculation.md, "Dynamic calculation with
    default alpha"; sonic-buffer-pg.yang's union admits NULL). CABLE_LENGTH, the port speed and MTU
    stay: they are what buffermgrd computes the headroom from."""
    if model != "dynamic":
        return want
    profiles = want.get("BUFFER_PROFILE", {})
    dropped = {name for name in profiles if LOSSLESS_PROFILE.fullmatch(name)}
    for ent in want.get("BUFFER_PG", {}).values():
        if ent.get("profile") in dropped:
            ent["profile"] = "NULL"
    for name in dropped:
        del profiles[name]
    if "BUFFER_PROFILE" in want and not profiles:
        del want["BUFFER_PROFILE"]
    return want


def hwsku_mismatch(want: dict[str, Any], have: dict[str, Any]) -> str:
    """'' or why the intent was rendered for another SKU than the switch is: the template writes the
    SKU it took the headroom of as DEVICE_METADATA|localhost hwsku; linerate never writes that field,
    it compares it with the switch's."""
    meant = ((want.get("DEVICE_METADATA") or {}).get("localhost") or {}).get("hwsku")
    if not meant:
        return ""
    actual = ((have.get("DEVICE_METADATA") or {}).get("localhost") or {}).get("hwsku")
    if actual == meant:
        return ""
    return (
        f"switch_fabric_sonic_hwsku: {meant!r} is not this switch's SKU (its DEVICE_METADATA|localhost hwsku "
        f"is {actual!r}): the lossless headroom was taken from {meant}'s pg_profile_lookup.ini; set "
        "switch_sonic_hwsku to the switch's own SKU; nothing is sent"
    )


# EOS PFC watchdog per port (Arista EOS User Manual, "DCBX and Flow Control", PFC Watchdog;
# forms and value patterns from aristanetworks/avd eos_cli_config_gen docs/tables/qos-profiles.md,
# commit 00aba0460df9, Apache-2.0: ``priority-flow-control pause watchdog port action drop|notify-only``
# (without it a stuck queue error-disables the port), ``... port timer timeout <s> polling-interval
# auto|<s> recovery-time <s> [forced]``, timeout and recovery-time seconds with at most 2 decimals,
# 0.01..60). The intent's action in SONiC's words maps onto EOS's; SONiC's ``forward`` has no per-port
# EOS equivalent.
EOS_PFCWD_ACTIONS = {"drop": "drop", "alert": "notify-only"}
EOS_PFCWD_MS = (10, 60000)


def _eos_seconds(ms: Any) -> str:
    """200 -> '0.2', 1000 -> '1', 1250 -> '1.25' (seconds with at most 2 decimals)."""
    return f"{int(ms) / 1000:.2f}".rstrip("0").rstrip(".")


def eos_pfcwd(action: Any = PFCWD_DEFAULT_ACTION, detection_ms: Any = PFCWD_DEFAULT_MS, restoration_ms: Any = PFCWD_DEFAULT_MS) -> EosPfcwd:
    """{"action", "timeout", "recovery_time"} of EOS's per-port watchdog; raises ValueError naming
    every problem (key, value, allowed)."""
    out: list[str] = []
    if action not in EOS_PFCWD_ACTIONS:
        out.append(
            f"switch_fabric_pfcwd_action: {action!r} is not allowed on EOS (allowed: "
            f"{', '.join(EOS_PFCWD_ACTIONS)}; EOS's per-port watchdog action is drop or notify-only)"
        )
    for key, value in (("switch_fabric_pfcwd_detection_ms", detection_ms), ("switch_fabric_pfcwd_restoration_ms", restoration_ms)):
        lo, hi = EOS_PFCWD_MS
        if isinstance(value, bool) or not str(value).isdigit() or not lo <= int(value) <= hi or int(value) % 10:
            out.append(
                f"{key}: {value!r} is not allowed on EOS (allowed: {lo}..{hi} ms in steps of 10 ms: EOS takes seconds with at most 2 decimals, 0.01..60)"
            )
    if out:
        raise ValueError("; ".join(out))
    return {"action": EOS_PFCWD_ACTIONS[action], "timeout": _eos_seconds(detection_ms), "recovery_time": _eos_seconds(restoration_ms)}
