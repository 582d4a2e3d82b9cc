"""What a change window checks, apart from its own state: the fabric port names and the managed scope of an
intent (refused before anything is sent), the delta, what restoring a backup would delete outside the managed
scope, and the post-check of the ports' oper state. Pure functions over a driver and parsed configs; the
window (switch/window.py) and switch_info call them. Stdlib-only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import DATA_PORT, SwitchError
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        from base import DATA_PORT, SwitchError  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch.base import DATA_PORT, SwitchError  # type: ignore[import-not-found,no-redef]

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, PortOper, Scope

# what a switch port name may be on the three platforms (swp1, Ethernet0, Ethernet1/1, swp1s0, Port-Channel10)
PORT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_./:-]{0,63}")


def oper_problems(oper: dict[str, PortOper], ports: Iterable[str], want_pfc: Optional[Sequence[int]], want_ecn: Any, require_up: bool = True) -> list[str]:
    """Post-check: every fabric port up, PFC exactly on the no-drop priority, ECN as intended, and (where
    the driver reads them: ``headroom``/``pfcwd`` in its oper) lossless headroom and the PFC watchdog on
    the no-drop priority."""
    problems: list[str] = []
    for p in ports:
        st = oper.get(p)
        if st is None:
            problems.append(f"{p}: not reported by the switch")
            continue
        if require_up and not st.get("up"):
            problems.append(f"{p}: link is down")
        if want_pfc is not None and sorted(st.get("pfc") or []) != sorted(want_pfc):
            problems.append(f"{p}: PFC on priorities {st.get('pfc')} (want {want_pfc})")
        if want_ecn is not None and bool(st.get("ecn")) != bool(want_ecn):
            problems.append(f"{p}: ECN {'on' if st.get('ecn') else 'off'} (want {'on' if want_ecn else 'off'})")
        # lossless headroom and PFC watchdog, where the platform's driver reads them back
        for prio in want_pfc or []:
            if "headroom" in st and prio not in (st.get("headroom") or []):
                problems.append(
                    f"{p}: no lossless headroom for the no-drop priority {prio} (lossless priorities "
                    f"with headroom: {st.get('headroom')}): it drops under incast"
                )
            if "pfcwd" in st and prio not in (st.get("pfcwd") or []):
                problems.append(f"{p}: PFC watchdog off on the no-drop priority {prio} (on: {st.get('pfcwd')}): a pause storm would stall the fabric")
    return problems


def managed_scope(driver: Driver, want: Any, ports: Sequence[str]) -> Scope:
    """The managed scope of a parsed intent on ``ports``; a port name or an intent outside it is refused
    (SwitchError) before anything is sent."""
    bad_ports = [p for p in ports if not isinstance(p, str) or not PORT_NAME.fullmatch(p)]
    if bad_ports:
        raise SwitchError(
            driver.name,
            f"fabric port name(s) {bad_ports!r} refused: allowed are letters, digits and _ . / : - (at most 64), nothing is sent",
            rolled_back=False,
        )
    scope = driver.managed_scope(want, ports)
    outside = driver.out_of_scope(want, scope, ports)
    if outside:
        raise SwitchError(
            driver.name,
            "refusing config outside the managed scope (QoS, PFC, ECN, MTU and "
            f"speed of the fabric ports {', '.join(ports) or '(none)'} and uplinks), "
            "nothing is sent: " + "; ".join(outside[:10]) + (f" (and {len(outside) - 10} more)" if len(outside) > 10 else ""),
            rolled_back=False,
        )
    return scope


def delta(driver: Driver, want_text: str, ports: Sequence[str], running: str) -> list[str]:
    """The commands that would take ``running`` to the intent ``want_text`` on ``ports`` (read-only)."""
    want = driver.parse(want_text)
    return driver.commands(want, driver.parse(running), managed_scope(driver, want, ports))


def restore_deletions(driver: Driver, want: Any, have: Any) -> list[str]:
    """What restoring ``want`` over ``have`` would delete outside the managed scope, in the platform's words.

    The managed scope is the platform's own (QoS objects named after the
    profile; QoS, PFC, ECN, MTU and speed of the data ports), so a restore
    may put back any QoS change but not silently delete a hostname, a
    management address, device metadata, a user or an SNMP/AAA setting that
    was added after the backup. Values changed outside the scope are not
    deletions (the backup's value is restored).
    """
    platform = driver.platform
    pat = DATA_PORT[str(platform)] if platform in DATA_PORT else re.compile(r"(?!)")
    out: list[str] = []
    if platform == "nvue":
        names = {k.split(" ")[1] for k in list(have) + list(want) if k.startswith("interface ") and " " in k[10:]}
        scope = driver.managed_scope(have, sorted(n for n in names if pat.fullmatch(n)))
        out = [f"nv set {k} {v}" for k, v in have.items() if k not in want and not scope(k)]
    elif platform == "sonic":
        names = set(have.get("PORT", {})) | set(want.get("PORT", {}))
        scope = driver.managed_scope(have, sorted(n for n in names if pat.fullmatch(n)))
        for t, keys in have.items():
            for k, fields in keys.items():
                for f, v in fields.items():
                    if f not in want.get(t, {}).get(k, {}) and not scope(t, k, f):
                        out.append(f"{t}|{k} {f}={v}")
    elif platform == "eos":
        names = {k.split(" ", 1)[1] for k in list(have) + list(want) if k.startswith("interface ")}
        scope = driver.managed_scope(have, sorted(n for n in names if pat.fullmatch(n)))

        def walk(w: Any, h: Any, path: tuple[str, ...]) -> None:
            for key, (line, children) in h.items():
                if key in w:
                    walk(w[key][1], children, path + (line,))
                elif not path and key.startswith("interface Ethernet"):
                    continue  # a physical interface is never removed (eos_commands)
                elif not scope(path, key):
                    out.append(" / ".join(path + (line,)))

        walk(want, have, ())
    return out
