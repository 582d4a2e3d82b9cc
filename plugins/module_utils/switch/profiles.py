"""What each switch platform's own definition allows, for the intent to check
before any switch is contacted and for the templates to render from.

SONiC: the names of the QoS objects linerate writes (DSCP_TO_TC_MAP,
WRED_PROFILE, ...) follow the YANG models' name pattern.

EOS: a platform family profile (``switch_eos_family`` per switch): the
largest interface MTU, the transmit-queue keyword and the lane-qualified
``speed`` forms. Sources in docs/conformance.md (Arista EOS).

Derived once: ``switch_mtu`` and ``fabric_derived`` compute what the fabric templates render (the
effective interface MTU, the ECN thresholds in bytes, the SONiC object names); the role hands
``fabric_derived``'s result to the templates (roles/switch_fabric/tasks/rendered.yml) and the intent's
validation (``switch_problems``) calls the same ``switch_mtu``.

Stdlib only: imported by intent/cabling.py (validation), the switch_fabric filter
(templates) and the SONiC driver.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional, TypedDict

# sonic-buildimage src/sonic-yang-models/yang-models/sonic-dscp-tc-map.yang:41-42 (the same pattern
# and length in sonic-wred-profile.yang:37-38, sonic-tc-priority-group-map.yang:41-42,
# sonic-cable-length.yang:30-34); commit 086b03bd70f9. YANG patterns are anchored.
SONIC_OBJECT_NAME = r"[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}"
SONIC_OBJECT_NAME_ALLOWED = (
    "1-32 of letters, digits, - and _, starting with a letter or digit (the name pattern of SONiC's YANG models, e.g. sonic-dscp-tc-map.yang)"
)


def sonic_object_names(profile: Any) -> dict[str, str]:
    """{CONFIG_DB table: object name} for the QoS objects the SONiC template writes."""
    base = str(profile).upper()
    return {"DSCP_TO_TC_MAP": base, "WRED_PROFILE": base + "_LOSSLESS"}


def sonic_name_problems(profile: Any) -> list[str]:
    """Why ``profile`` cannot name SONiC objects (one message per bad derived name), or []."""
    if not isinstance(profile, str):
        return [f"{profile!r} is not a string"]
    return [
        f"{table} name {name!r} does not match {SONIC_OBJECT_NAME} (allowed: {SONIC_OBJECT_NAME_ALLOWED})"
        for table, name in sonic_object_names(profile).items()
        if not re.fullmatch(SONIC_OBJECT_NAME, name, re.ASCII)
    ]


# ------------------------------------------------------------------ EOS
# Ethernet speed -> lane counts with a standard PMD (gbps/lanes is the lane rate); EOS names
# them <speed>g-<lanes> (Arista EOS User Manual, "Octal Port Renumber to Four Interfaces":
# 400G-8, 200G-4, 100G-2, 100G-4). At 10/25/40G the form has no lane suffix.
EOS_LANE_FORMS: dict[int, tuple[int, ...]] = {50: (1, 2), 100: (1, 2, 4), 200: (2, 4, 8), 400: (4, 8), 800: (8,)}
EOS_PLAIN_SPEEDS = (10, 25, 40)

# family -> mtu_max (largest `mtu`), queue (the interface transmit-queue keyword for unicast
# RoCE traffic), lane_gbps (the fastest SerDes lane: the speed form uses the fewest lanes).
# The Tomahawk generation of each 7060X family is the one sonic-buildimage (commit 086b03bd70f9) names
# the family's Broadcom config after: device/arista/x86_64-arista_7060dx4_32/.../th3-*.config.bcm (7060X4,
# Tomahawk 3), x86_64-arista_7060dx5_32/.../th4-*.config.bcm (7060X5, Tomahawk 4: 50G lanes, 400G ports),
# x86_64-arista_7060x6_64pe/.../th5-*.config.bcm (7060X6, Tomahawk 5: 100G lanes, 800G ports).
# 7800R3: the modular Jericho2 chassis (x86_64-arista_7800r3_* line cards), a Sand platform: uc-tx-queue.
EOS_FAMILIES: dict[str, dict[str, Any]] = {
    "7050x3": {"asic": "Trident3", "mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 25},
    "7050x4": {"asic": "Trident4", "mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 50},
    "7060x4": {"asic": "Tomahawk3", "mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 50},
    "7060x5": {"asic": "Tomahawk4", "mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 50},
    "7060x6": {"asic": "Tomahawk5", "mtu_max": 9214, "queue": "tx-queue", "lane_gbps": 100},
    "7280r3": {"asic": "Jericho2", "mtu_max": 9214, "queue": "uc-tx-queue", "lane_gbps": 50},
    "7388x5": {"asic": "7388X5 line cards", "mtu_max": 9214, "queue": "uc-tx-queue", "lane_gbps": 50},
    "7800r3": {"asic": "Jericho2 (7800R3 line cards)", "mtu_max": 9214, "queue": "uc-tx-queue", "lane_gbps": 50},
}
EOS_DEFAULT_FAMILY = "7050x4"


def eos_speed_form(family: Any, gbps: Any) -> Optional[str]:
    """The ``speed`` argument for ``gbps`` on ``family`` (e.g. 400g-8), or None when none exists."""
    prof = EOS_FAMILIES.get(family)
    try:
        speed = int(gbps)
    except (TypeError, ValueError):
        return None
    if prof is None:
        return None
    if speed in EOS_PLAIN_SPEEDS:
        return f"{speed}g"
    for lanes in EOS_LANE_FORMS.get(speed, ()):
        if speed // lanes <= prof["lane_gbps"]:
            return f"{speed}g-{lanes}"
    return None


def _case(family: Any) -> str:
    """``; names are case-sensitive: ...`` when ``family`` is a family in another case (Arista writes
    7050X3; the profiles are keyed in lower case), else ``''``."""
    low = family.lower() if isinstance(family, str) else None
    return f"; names are case-sensitive: {low!r}, not {family!r}" if low != family and low in EOS_FAMILIES else ""


def eos_profile(family: Any = None) -> dict[str, Any]:
    """The profile of ``family`` (the default family when None) with its name and speed forms;
    ValueError naming the family and the allowed ones otherwise."""
    family = EOS_DEFAULT_FAMILY if family in (None, "") else family
    if family not in EOS_FAMILIES:
        raise ValueError(f"switch_eos_family: {family!r} is not allowed (allowed: {' | '.join(EOS_FAMILIES)}{_case(family)})")
    speeds = {g: eos_speed_form(family, g) for g in sorted(EOS_PLAIN_SPEEDS + tuple(EOS_LANE_FORMS))}
    return dict(EOS_FAMILIES[family], family=family, speeds={g: f for g, f in speeds.items() if f is not None})


def eos_port_speed_problems(switch: str, ports: Iterable[dict[str, Any]], family: Any = None, skip: Iterable[int] = ()) -> list[tuple[str, Any, str]]:
    """(key, value, allowed) for each speed of an EOS switch's fabric ports ([{name, speed_gbps}]) its
    family has no ``speed`` form for (speeds in ``skip`` are reported elsewhere); an unknown family: []
    (switch_problems reports it)."""
    try:
        prof = eos_profile(family)
    except ValueError:
        return []
    by_speed: dict[int, list[str]] = {}
    for port in ports:
        if port.get("speed_gbps") and int(port["speed_gbps"]) not in skip:
            by_speed.setdefault(int(port["speed_gbps"]), []).append(str(port.get("name")))
    out: list[tuple[str, Any, str]] = []
    for gbps, names in sorted(by_speed.items()):
        if gbps in prof["speeds"]:
            continue
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        out.append(
            (
                f"{switch}: fabric port(s) {shown}: speed_gbps",
                gbps,
                f"allowed: a speed EOS {prof['family']} has a speed form for: "
                + ", ".join(f"{g} ({f})" for g, f in sorted(prof["speeds"].items()))
                + "; or the switch_eos_family of a family that has one",
            )
        )
    return out


def switch_mtu(platform: str, fabric_mtu: Any, family: Any = None) -> int:
    """The MTU a switch of ``platform`` gets for the intent's ``fabric.mtu.switch``: the
    platform's own maximum where that is lower (EOS 9214)."""
    if platform == "eos":
        return min(int(fabric_mtu), int(eos_profile(family)["mtu_max"]))
    return int(fabric_mtu)


# NVUE: the release from which ``congestion-control ... ecn`` takes enabled|disabled (enable|disable before;
# lab/switchsim/nvue_reference.json, docs/switches.md "NVUE forms per release")
NVUE_ECN_ENABLED_FROM = (5, 15)


class NvueEts(TypedDict):
    """ETS as NVUE's RoCE preset sets it: the CNP class at strict priority, the no-drop class and class 0
    sharing DWRR (the no-drop class alone at 100 when class 0 is the no-drop or the CNP class)."""

    strict: int
    dwrr: list[tuple[int, int]]  # (traffic class, bw-percent), by class


class FabricDerived(TypedDict):
    """What the fabric templates render that is computed from the intent, not written in it."""

    mtu: int  # the interface MTU: switch_mtu()
    ecn_min_threshold_bytes: int  # the intent's KB x 1024 (NVUE and SONiC take bytes)
    ecn_max_threshold_bytes: int
    sonic_names: dict[str, str]  # {CONFIG_DB table: object name}: sonic_object_names()
    nvue_ecn_on: str  # NVUE's word for ECN on in the switch's release: enabled | enable
    nvue_ets: NvueEts


def nvue_ets(no_drop_priority: Any, cnp_priority: Any) -> NvueEts:
    """NVUE's egress scheduler for the no-drop and CNP classes (the RoCE guide's ``nv show qos roce``)."""
    prio, cnp = int(no_drop_priority), int(cnp_priority)
    dwrr = [prio] if 0 in (prio, cnp) else sorted({0, prio})
    return {"strict": cnp, "dwrr": [(tc, 100 // len(dwrr)) for tc in dwrr]}


def fabric_derived(
    platform: Any,
    mtu: Any,
    eos: Optional[Mapping[str, Any]] = None,
    profile: Any = "linerate",
    ecn_min_threshold_kb: Any = 0,
    ecn_max_threshold_kb: Any = 0,
    no_drop_priority: Any = 3,
    cnp_priority: Any = 6,
    nvue_release: Any = "5.17",
) -> FabricDerived:
    """The derived values one switch's fabric template renders: ``eos`` is the switch's EOS profile
    (``eos_profile``; its family caps the MTU), ``profile`` the name of the QoS objects, ``nvue_release``
    the switch's Cumulus Linux release (its forms)."""
    family = eos.get("family") if isinstance(eos, Mapping) else None
    release = tuple(int(x) for x in str(nvue_release).split("."))
    return {
        "mtu": switch_mtu(str(platform), mtu, family),
        "ecn_min_threshold_bytes": int(ecn_min_threshold_kb) * 1024,
        "ecn_max_threshold_bytes": int(ecn_max_threshold_kb) * 1024,
        "sonic_names": sonic_object_names(profile),
        "nvue_ecn_on": "enabled" if release >= NVUE_ECN_ENABLED_FROM else "enable",
        "nvue_ets": nvue_ets(no_drop_priority, cnp_priority),
    }


def switch_problems(switch: str, sv: dict[str, Any], platform: str, fabric: Any, defaults: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """Problems of one switch's platform settings against the intent, as (key, value, allowed):
    a SONiC object name outside the YANG pattern; an unknown EOS family; a host MTU above what
    an EOS family's interfaces take; a link speed the family has no ``speed`` form for.
    ``defaults``: the intent's defaults (intent/fabric.py DEFAULTS), for the keys ``fabric`` leaves out."""
    out: list[tuple[str, Any, str]] = []
    fabric = fabric if isinstance(fabric, dict) else {}
    if platform == "sonic" and "switch_fabric_profile" in sv:
        for why in sonic_name_problems(sv["switch_fabric_profile"]):
            out.append(
                (
                    f"{switch}: switch_fabric_profile",
                    sv["switch_fabric_profile"],
                    f"allowed: a name whose SONiC objects pass the YANG models: {why}; SONiC's config checkpoint/rollback refuse such a CONFIG_DB",
                )
            )
    if platform != "eos":
        return out
    family = sv.get("switch_eos_family")
    try:
        prof = eos_profile(family)
    except ValueError:
        return out + [(f"{switch}: switch_eos_family", family, "allowed: " + " | ".join(EOS_FAMILIES) + _case(family))]
    mtu = fabric.get("mtu") if isinstance(fabric.get("mtu"), dict) else {}
    host, sw_mtu = mtu.get("host", defaults["mtu"]["host"]), mtu.get("switch", defaults["mtu"]["switch"])
    if isinstance(host, int) and isinstance(sw_mtu, int) and not isinstance(host, bool):
        limit = switch_mtu(platform, sw_mtu, prof["family"])
        if host > limit:
            out.append(
                (
                    "fabric.mtu.host",
                    host,
                    f"allowed: at most {limit}, the MTU {switch} ({prof['family']}) takes: EOS {prof['family']} "
                    f"interfaces accept mtu up to {prof['mtu_max']}; a host MTU above the switch MTU "
                    "drops every full-size frame",
                )
            )
    speed = fabric.get("link_speed_gbps", defaults["link_speed_gbps"])
    if isinstance(speed, int) and not isinstance(speed, bool) and speed not in prof["speeds"]:
        out.append(
            (
                f"{switch}: switch_eos_family",
                prof["family"],
                f"allowed: a family with a speed form for fabric.link_speed_gbps {speed} "
                f"({prof['family']} has {', '.join(prof['speeds'].values())}), or another link speed",
            )
        )
    return out
