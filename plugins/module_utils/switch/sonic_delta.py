"""SONiC's CONFIG_DB delta: which fields linerate manages (``sonic_scope``) and the commands that take
the running tables to the intent's (``sonic_commands``): SONiC's own CLI where it has one
(``config interface mtu|speed``, ``config interface pfc priority``, ``config pfcwd``), and
``sonic-db-cli CONFIG_DB hset|hdel`` for the QoS maps, WRED/ECN profile, buffer profiles and queue
bindings. Pure functions over ``{TABLE: {key: {field: value}}}``; the SONiC driver (switch/sonic.py)
reads and pushes with them.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Union

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        import buffers  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch import buffers  # type: ignore[import-not-found,no-redef]

# CONFIG_DB as tables: {TABLE: {key: {field: value}}}; a scope is a predicate over (table, key, field)
ConfigDb = Dict[str, Dict[str, Dict[str, str]]]
SonicScope = Callable[[str, str, str], bool]


def flatten(facts: ConfigDb) -> Iterator[tuple[tuple[str, str, str], str]]:
    for table in facts:
        for key, fields in facts[table].items():
            for field, value in fields.items():
                yield (table, key, field), value


LOSSLESS_PROFILE = re.compile(r"pg_lossless_\d+_\d+m_profile")
CABLE_LENGTH_KEY = buffers.CABLE_LENGTH_KEY


def sonic_scope(profile: str, ports: Iterable[str], profiles: Any = (), hwsku: bool = False) -> SonicScope:
    """The fields linerate manages: the fabric ports' MTU/speed/QoS map bindings/PFC/watchdog, their
    lossless priority groups (every PG but the lossy PG 0) and cable length, the PFC_WD entries of
    the fabric ports, the QoS objects the intent names and the lossless buffer profiles it writes
    (``profiles``: a profile the intent no longer uses is left, another port may use it; a dict is
    read at each call, so a profile the buffer model drops from the intent leaves the scope with it),
    and with ``hwsku`` the SKU the intent asserts (DEVICE_METADATA|localhost hwsku: compared, never
    written)."""
    names = set(ports)
    dscp_map = profile.upper()
    wred = profile.upper() + "_LOSSLESS"
    written: Union[dict[str, Any], set[str]] = profiles if isinstance(profiles, dict) else set(profiles)

    def scope(table: str, key: str, field: str) -> bool:
        if table == "DEVICE_METADATA":
            return bool(hwsku) and key == "localhost" and field == "hwsku"
        if table == "PORT":
            return key in names and field in ("mtu", "speed")
        if table == "PORT_QOS_MAP":
            return key in names and field in ("pfc_enable", "dscp_to_tc_map", "pfcwd_sw_enable", "tc_to_pg_map")
        if table == "CABLE_LENGTH":
            return key == CABLE_LENGTH_KEY and field in names
        if table == "BUFFER_PROFILE":
            return key in written and bool(LOSSLESS_PROFILE.fullmatch(key))
        if table == "BUFFER_PG":
            port, _sep, pg = key.partition("|")
            return port in names and pg != "0" and field == "profile"
        if table == "TC_TO_PRIORITY_GROUP_MAP":
            return key == dscp_map
        if table == "PFC_WD":
            return key in names
        if table == "DSCP_TO_TC_MAP":
            return key == dscp_map
        if table == "WRED_PROFILE":
            return key == wred
        if table == "QUEUE":
            return key.split("|")[0] in names and field == "wred_profile"
        return False

    return scope


def prios(value: Optional[str]) -> set[int]:
    return {int(x) for x in re.findall(r"\d+", value or "")}


def _db(table: str, key: str) -> str:
    return shlex.quote(f"{table}|{key}")


# what a write depends on comes first (a leafref's target before its user), removals the other way
ORDER = ("BUFFER_PROFILE", "TC_TO_PRIORITY_GROUP_MAP", "DSCP_TO_TC_MAP", "WRED_PROFILE", "CABLE_LENGTH", "PORT", "BUFFER_PG", "QUEUE", "PORT_QOS_MAP", "PFC_WD")


def _ordered(items: Iterable[tuple[tuple[str, str, str], str]]) -> list[tuple[tuple[str, str, str], str]]:
    rank = {t: i for i, t in enumerate(ORDER)}
    return sorted(items, key=lambda kv: rank.get(kv[0][0], len(ORDER)))


def pfcwd_commands(want: ConfigDb, have: ConfigDb, scope: SonicScope) -> list[str]:
    """PFC_WD per port through SONiC's ``pfcwd`` CLI (sonic-utilities pfcwd/main.py):
    ``config pfcwd start --action A ports P detection-time D --restoration-time R`` (re)writes a
    port's entry; ``config pfcwd stop P`` removes it."""
    cmds: list[str] = []
    w, h = want.get("PFC_WD", {}), have.get("PFC_WD", {})
    for port in sorted(h):
        if port not in w and scope("PFC_WD", port, "action"):
            cmds.append(f"sudo config pfcwd stop {shlex.quote(port)}")
    for port, ent in sorted(w.items()):
        have_wd = {k: v for k, v in h.get(port, {}).items() if scope("PFC_WD", port, k)}
        if not scope("PFC_WD", port, "action") or have_wd == ent:
            continue
        cmds.append(
            f"sudo config pfcwd start --action {shlex.quote(ent.get('action', 'drop'))} ports "
            f"{shlex.quote(port)} detection-time {shlex.quote(ent['detection_time'])} "
            f"--restoration-time {shlex.quote(ent['restoration_time'])}"
        )
    return cmds


def sonic_commands(want: ConfigDb, have: ConfigDb, scope: SonicScope) -> list[str]:
    w = dict(flatten(want))
    h = dict(flatten(have))
    cmds: list[str] = []
    # removals first (fields in scope the intent does not have), users before what they use
    rank = {t: i for i, t in enumerate(ORDER)}
    for (table, key, field), value in sorted(h.items(), key=lambda kv: -rank.get(kv[0][0], len(ORDER))):
        if table == "PFC_WD" or (table, key, field) in w or not scope(table, key, field):
            continue
        if table == "PORT_QOS_MAP" and field == "pfc_enable":
            cmds += [f"sudo config interface pfc priority {shlex.quote(key)} {p} off" for p in sorted(prios(value))]
        else:
            cmds.append(f"sudo sonic-db-cli CONFIG_DB hdel {_db(table, key)} {field}")
    pfcwd = pfcwd_commands(want, have, scope)
    for (table, key, field), value in _ordered(w.items()):
        old = h.get((table, key, field))
        if old == value or table == "PFC_WD":
            continue
        if table == "PORT" and field == "mtu":
            cmds.append(f"sudo config interface mtu {shlex.quote(key)} {shlex.quote(value)}")
        elif table == "PORT" and field == "speed":
            cmds.append(f"sudo config interface speed {shlex.quote(key)} {shlex.quote(value)}")
        elif table == "PORT_QOS_MAP" and field == "pfc_enable":
            new, cur = prios(value), prios(old)
            if ",".join(map(str, sorted(new))) != value:
                # an order/format the CLI would not produce: write the field as given
                cmds.append(f"sudo sonic-db-cli CONFIG_DB hset {_db(table, key)} {field} {shlex.quote(value)}")
                continue
            cmds += [f"sudo config interface pfc priority {shlex.quote(key)} {p} off" for p in sorted(cur - new)]
            cmds += [f"sudo config interface pfc priority {shlex.quote(key)} {p} on" for p in sorted(new - cur)]
        else:
            cmds.append(f"sudo sonic-db-cli CONFIG_DB hset {_db(table, key)} {field} {shlex.quote(value)}")
    return cmds + pfcwd


def without_metadata(scope: SonicScope) -> SonicScope:
    """``scope`` less DEVICE_METADATA (the SKU the intent asserts is compared, never written or removed)."""

    def inner(table: str, key: str, field: str) -> bool:
        return table != "DEVICE_METADATA" and scope(table, key, field)

    return inner
