"""SONiC driver.

Config language: CONFIG_DB as JSON, the form ``show runningconfiguration all``
prints (and ``/etc/sonic/config_db.json`` stores). Facts are the tables as
``{TABLE: {key: {field: value}}}``; the delta is computed per field and
pushed with SONiC's own commands where it has one
(``config interface mtu|speed``, ``config interface pfc priority``), and with
``sonic-db-cli CONFIG_DB hset|hdel`` for the QoS maps, WRED/ECN profile and
queue bindings (SONiC has no dedicated CLI for those; this is the same
CONFIG_DB write the generic config updater does).

Safe mechanism: ``config checkpoint <name>`` before the push; any rejected
command or failed post-check runs ``config rollback <name>``; success saves
(``config save -y``) and deletes the checkpoint.

Dead-man timer: SONiC has no confirm timer of its own, so the window arms
transient systemd timers on the switch (SONiC is Debian with systemd) that run
``/bin/sh -c 'config rollback <cp> && config save -y && config
delete-checkpoint <cp>'``: a controller that dies outright (SIGKILL, power
loss) leaves a switch that rolls itself back to the checkpoint, saves that
(the saved config equalled the running one before the window: the pre-check
demands it) and removes the checkpoint, so the next window is not blocked.

- begin arms the *push* timer (``linerate-deadman-<tag>-push``) whose budget
  covers the whole push: every command may use its command timeout, plus
  :data:`PUSH_MARGIN_S`; it cannot fire in the middle of a push the window
  is still driving.
- commit (after the last command) arms the *confirm* timer
  (``linerate-deadman-<tag>``, the confirm timeout counted from the end of
  the push), then stops the push timer: there is no moment with the change
  live and no timer.
- confirm reads that the confirm timer still waits (``systemctl show -p
  SubState --value <unit>.timer``), saves (``config save -y``) while it still
  runs, reads it again (a timer that fired meanwhile has rolled back and
  saved: not confirmed), then stops it and deletes the checkpoint: the change
  is never live, unsaved and untimed.

Recovery stops the timers before anything else.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, SwitchError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import ber as switch_ber, counters as switch_counters, optics as switch_optics
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_show import (
        lossless_pgs,
        parse_interfaces_status,
        parse_pfc_priority,
        parse_show_ecn,
        parse_table,
    )
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_delta import (
        ConfigDb,
        SonicScope,
        flatten,
        prios,
        sonic_commands,
        sonic_scope,
        without_metadata,
    )
except ImportError:  # standalone
    # Standalone: either switch/ itself or module_utils/ is on sys.path (the
    # corpus check and the parser tests put module_utils/ there).
    try:
        from base import Driver, SwitchError  # type: ignore[import-not-found,no-redef]
        import ber as switch_ber  # type: ignore[import-not-found,no-redef]
        import counters as switch_counters  # type: ignore[import-not-found,no-redef]
        import optics as switch_optics  # type: ignore[import-not-found,no-redef]
        import buffers  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch.base import Driver, SwitchError  # type: ignore[import-not-found,no-redef]
        from switch import ber as switch_ber, counters as switch_counters, optics as switch_optics  # type: ignore[import-not-found,no-redef]
        from switch import buffers  # type: ignore[no-redef]
    from common import ParseError  # type: ignore[import-not-found,no-redef]

    try:
        from sonic_show import (  # type: ignore[import-not-found,no-redef]
            lossless_pgs,
            parse_interfaces_status,
            parse_pfc_priority,
            parse_show_ecn,
            parse_table,
        )
    except ImportError:
        from switch.sonic_show import (  # type: ignore[import-not-found,no-redef]
            lossless_pgs,
            parse_interfaces_status,
            parse_pfc_priority,
            parse_show_ecn,
            parse_table,
        )
    try:
        from sonic_delta import (  # type: ignore[import-not-found,no-redef]
            ConfigDb,
            SonicScope,
            flatten,
            prios,
            sonic_commands,
            sonic_scope,
            without_metadata,
        )
    except ImportError:
        from switch.sonic_delta import (  # type: ignore[import-not-found,no-redef]
            ConfigDb,
            SonicScope,
            flatten,
            prios,
            sonic_commands,
            sonic_scope,
            without_metadata,
        )

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import PortOper, Storm

CP_PREFIX = "linerate-"
DEADMAN_PREFIX = "linerate-deadman-"
CONFIG_BIN = "/usr/local/bin/config"  # sonic-utilities' click entry point, as the switch installs it
PUSH_SUFFIX = "-push"
# seconds the push timer allows beyond every command using its command timeout (the begin's re-read)
PUSH_MARGIN_S = 60


def deadman_script(checkpoint: Optional[str]) -> str:
    """What a fired dead-man timer runs: back to the checkpoint, saved, the checkpoint removed."""
    return f"{CONFIG_BIN} rollback {checkpoint} && {CONFIG_BIN} save -y && {CONFIG_BIN} delete-checkpoint {checkpoint}"


def parse_config_db(text: Optional[str]) -> ConfigDb:
    doc = (text or "").strip()
    if not doc:
        return {}
    try:
        data = json.loads(doc)
    except ValueError as exc:
        raise ParseError("sonic", f"running configuration is not JSON: {doc.splitlines()[0][:120]!r}") from exc
    if not isinstance(data, dict):
        raise ParseError("sonic", "running configuration is not a JSON object")
    out: ConfigDb = {}
    for table, keys in data.items():
        if not isinstance(keys, dict):
            continue
        for key, fields in keys.items():
            if fields is not None and not isinstance(fields, dict):
                raise ParseError("sonic", f"running configuration: {table}|{key} is not an object of fields: {fields!r}"[:200])
        out[table] = {k: {f: str(v) if not isinstance(v, list) else ",".join(map(str, v)) for f, v in (fields or {}).items()} for k, fields in keys.items()}
    return out


class SonicDriver(Driver):
    platform = "sonic"
    confirm_timer = True  # the dead-man timer (systemd-run) rolls the checkpoint back unless stopped in time
    timer_at_begin = False  # the confirm timer is armed at commit, after the push (begin's covers the push)
    # SONiC's admin shell is bash; netmiko's plain Linux driver (the class
    # behind its edgecore_sonic type) speaks it.
    device_type = "linux"
    running_command = "show runningconfiguration all"
    saved_command = "cat /etc/sonic/config_db.json"  # the config the switch boots with
    lldp_command = "show lldp table"
    lldp_parser = "parse_sonic_lldp_table"
    error_patterns = (
        r"^Error:.*$",
        r"^Usage: .*$",
        r"^-bash: .*$",
        r"^Cannot find interface.*$",
        r"^Error .*$",
        r"^sudo: .*$",
        r"^Config Rollback: .*failed.*$",
        r"^Failed to .*$",
    )

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self._cp: Optional[str] = None
        self._tag: Optional[str] = None
        self._deadmen: list[str] = []  # the dead-man timer units this window armed and has not stopped (systemd-run)

    def shell(self, command: str, root: bool = False) -> str:
        """bash as the admin user; breaking a lock another login made needs root (/run/lock is sticky)."""
        return f"sudo {command}" if root else command

    @classmethod
    def config_reads(cls) -> tuple[str, ...]:
        return (cls.running_command, cls.saved_command)

    def parse_config(self, text: str) -> ConfigDb:
        return parse_config_db(text)

    def managed_scope(self, want: ConfigDb, ports: Iterable[str]) -> SonicScope:
        meta = (want.get("DEVICE_METADATA") or {}).get("localhost") or {}
        if "BUFFER_PG" in want:
            want.setdefault("BUFFER_PROFILE", {})
        # the intent's own BUFFER_PROFILE table, read at each call (for_model may drop profiles from it); the
        # SKU only where the intent asserts it (DEVICE_METADATA|localhost with hwsku alone), not in a full config
        return sonic_scope(self.profile, ports, want.get("BUFFER_PROFILE", {}), hwsku=set(meta) == {"hwsku"})

    def commands(self, want: ConfigDb, have: ConfigDb, scope: SonicScope) -> list[str]:
        """The delta, in the buffer model the switch is in (DEVICE_METADATA|localhost buffer_model):
        ``want`` becomes that model's form in place (buffers.for_model; the diff shows it). An intent
        rendered for another SKU than the switch's is refused before anything is sent; the SKU it
        asserts is compared, never written."""
        why = buffers.hwsku_mismatch(want, have)
        if why and ((have.get("DEVICE_METADATA") or {}).get("localhost") or {}).get("hwsku") is not None:
            raise SwitchError(self.name, why, rolled_back=False)
        try:
            model = buffers.buffer_model(have, want)
        except ValueError as exc:
            raise SwitchError(self.name, f"{exc}; nothing is sent", rolled_back=False) from exc
        buffers.for_model(want, model)
        meta = (want.get("DEVICE_METADATA") or {}).get("localhost") or {}
        if set(meta) == {"hwsku"}:  # the intent's assertion, not a full config being restored: never written
            written = {t: v for t, v in want.items() if t != "DEVICE_METADATA"}
            return sonic_commands(written, have, without_metadata(scope))
        return sonic_commands(want, have, scope)

    def appl_db(self, key: str) -> dict[str, str]:
        """One APPL_DB hash (``sonic-db-cli APPL_DB HGETALL``: a Python dict, or {} when absent)."""
        text = self.run(f"sudo sonic-db-cli APPL_DB HGETALL {shlex.quote(key)}", check=False).strip()
        try:
            got: Any = json.loads(text) if text.startswith('{"') or text == "{}" else ast.literal_eval(text or "{}")
        except (ValueError, SyntaxError):
            return {}
        return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}

    def out_of_scope(self, want: ConfigDb, scope: SonicScope, ports: Iterable[str]) -> list[str]:
        return [f"{t}|{k} {f}={v}" for (t, k, f), v in flatten(want) if not scope(t, k, f)]

    def view(self, facts: ConfigDb, scope: SonicScope) -> str:
        sub: ConfigDb = {}
        for (t, k, f), v in flatten(facts):
            if scope(t, k, f):
                sub.setdefault(t, {}).setdefault(k, {})[f] = v
        return json.dumps(sub, indent=4, sort_keys=True) + "\n"

    def pending(self) -> list[str]:
        problems: list[str] = []
        left = [n for n in self.checkpoints() if n.startswith(CP_PREFIX)]
        if left:
            problems.append("checkpoints of an unfinished change window: " + ", ".join(left))
        running = self.parse(self.get_running())
        saved = self.parse(self.run(self.saved_command))
        if running != saved:
            tables = sorted({t for t in set(running) | set(saved) if running.get(t) != saved.get(t)})
            problems.append("running configuration is not saved (differs from /etc/sonic/config_db.json in " + ", ".join(tables) + ")")
        return problems

    def push_budget(self) -> int:
        """Seconds the push timer gives the push: each command its command timeout, plus the margin."""
        return int(max(0, self.window_commands) * self.command_timeout + PUSH_MARGIN_S)

    def begin(self, tag: str) -> None:
        self._cp = CP_PREFIX + tag
        self._tag = tag
        self._deadmen = []
        self.run(f"sudo config checkpoint {self._cp}")
        self._arm(DEADMAN_PREFIX + tag + PUSH_SUFFIX, self.push_budget())

    def _arm(self, unit: str, seconds: int) -> None:
        self._deadmen.append(unit)  # from here the timer may exist, whatever the answer
        self.run(f"sudo systemd-run --unit={unit} --on-active={int(seconds)}s /bin/sh -c {shlex.quote(deadman_script(self._cp))}")

    def _deadman_state(self, unit: str) -> str:
        return self.run(f"systemctl show -p SubState --value {unit}.timer", check=False).strip()

    def _stop_deadman(self, check: bool = False) -> None:
        """Stop every dead-man timer this window armed (the newest first)."""
        for unit in reversed(list(self._deadmen)):
            self.run(f"sudo systemctl stop {unit}.timer", check=check)
            self._deadmen.remove(unit)

    def window_timers(self, run: str) -> list[str]:
        """The dead-man timers of the window ``run`` still waiting (each rolls the switch back to that window's
        checkpoint when it fires)."""
        return [
            f"the dead-man timer {u}.timer is waiting (it rolls the switch back to checkpoint {CP_PREFIX}{run} when it fires)"
            for u in (DEADMAN_PREFIX + run, DEADMAN_PREFIX + run + PUSH_SUFFIX)
            if self._deadman_state(u) == "waiting"
        ]

    def discard(self) -> None:
        """Stop the dead-man timer and delete the window's own checkpoint (nothing was pushed)."""
        self._stop_deadman()
        if self._cp and self._cp in self.checkpoints():
            self.run(f"sudo config delete-checkpoint {self._cp}")
        self._cp = None

    def abort(self) -> None:
        self.rollback()

    def commit(self, confirm_timeout: int) -> None:
        """The push is done (SONiC applied each command at once): arm the confirm timer, ``confirm_timeout``
        from now, then stop the push timer - in that order, so the change is never live without a timer. A
        push timer that is no longer waiting has fired during the push: not committed."""
        push = DEADMAN_PREFIX + str(self._tag) + PUSH_SUFFIX
        self._arm(DEADMAN_PREFIX + str(self._tag), confirm_timeout)
        state = self._deadman_state(push)
        if state != "waiting":
            raise SwitchError(
                self.name,
                f"the push's dead-man timer {push}.timer is {state or 'gone'}, not waiting: "
                "it fired during the push (config rollback to the checkpoint) or was "
                "stopped by someone else",
            )
        self.run(f"sudo systemctl stop {push}.timer")
        self._deadmen.remove(push)

    def confirm(self) -> None:
        """Save while the confirm timer still runs, read that it still waits, then stop it and delete the
        checkpoint. One that fired (before or during the save) has rolled the change back and saved that:
        not confirmed."""
        unit = DEADMAN_PREFIX + str(self._tag)
        for when in ("before", "after"):
            state = self._deadman_state(unit)
            if state != "waiting":
                raise SwitchError(
                    self.name,
                    f"the dead-man timer {unit}.timer is {state or 'gone'}, not waiting "
                    f"{when} config save: it has fired (config rollback to the checkpoint) "
                    "or was stopped by someone else; the change is not confirmed",
                )
            if when == "before":
                self.run("sudo config save -y")
        self.run(f"sudo systemctl stop {unit}.timer")
        if unit in self._deadmen:
            self._deadmen.remove(unit)
        self.run(f"sudo config delete-checkpoint {self._cp}")
        self._cp = None

    def checkpoints(self) -> list[str]:
        cps = self.run("sudo config list-checkpoints")
        try:
            names: Any = json.loads(cps) if cps.strip() else []
        except ValueError:
            names = re.findall(r'"([^"]+)"', cps)
        return [str(n) for n in names]

    def clear_pending(self, target_text: str) -> list[str]:
        """Delete checkpoints left by unfinished windows; save when the running config already is the
        backup (the restore's own confirm saves otherwise)."""
        done: list[str] = []
        for cp in self.checkpoints():
            if cp.startswith(CP_PREFIX):  # linerate's own only: another administrator's checkpoints stay
                unit = DEADMAN_PREFIX + cp[len(CP_PREFIX) :]
                for u in (unit + PUSH_SUFFIX, unit):
                    self.run(f"sudo systemctl stop {u}.timer", check=False)
                self.run(f"sudo config delete-checkpoint {cp}")
                done.append(f"systemctl stop {unit}{PUSH_SUFFIX}.timer {unit}.timer; config delete-checkpoint {cp}")
        running = self.parse(self.get_running())
        if running == self.parse(target_text) and running != self.parse(self.run(self.saved_command)):
            self.run("sudo config save -y")
            done.append("config save -y (the running config is the backup)")
        return done

    def undo(self) -> None:
        """Roll back to the window's checkpoint, re-save when ``config save`` already ran (the saved
        config was equal to the running one before the window: the pre-check demands it), and delete the
        checkpoint. The dead-man timer is stopped first (it must not fire in the middle). Nothing else
        to do when the checkpoint was never taken."""
        self._stop_deadman()
        if not self._cp:
            return
        if self._cp in self.checkpoints():
            self.run(f"sudo config rollback {self._cp}", timeout=max(60, self.command_timeout))
            running = self.parse(self.get_running())
            if running != self.parse(self.run(self.saved_command)):
                self.run("sudo config save -y")
            self.run(f"sudo config delete-checkpoint {self._cp}")
        self._cp = None

    def rollback(self) -> None:
        self._stop_deadman()
        if self._cp:
            self.run(f"sudo config rollback {self._cp}", timeout=max(60, self.command_timeout))
            self.run(f"sudo config delete-checkpoint {self._cp}", check=False)
            self._cp = None

    def oper(self, ports: Iterable[str]) -> dict[str, PortOper]:
        status = parse_interfaces_status(self.run("show interfaces status"))
        pfc = parse_pfc_priority(self.run("show pfc priority"))
        ecn = parse_show_ecn(self.run("show ecn"))
        wd = {r["PORT"]: r for r in parse_table(self.run("show pfcwd config")) if r.get("PORT")}
        running = self.parse(self.get_running())
        try:
            appl: Optional[Callable[[str], dict[str, str]]] = self.appl_db if buffers.buffer_model(running) == "dynamic" else None
        except ValueError:
            appl = None
        queues = running.get("QUEUE", {})
        res: dict[str, PortOper] = {}
        for p in ports:
            if p not in status:
                continue
            prof = [v.get("wred_profile") for k, v in queues.items() if k.split("|")[0] == p]
            ecn_on = any(ecn.get(x, {}).get("ecn", "ecn_none") not in ("ecn_none", "") for x in prof if x)
            res[p] = {
                "up": status[p]["up"],
                "pfc": pfc.get(p, []),
                "ecn": ecn_on,
                "headroom": lossless_pgs(running, p, appl),
                "pfcwd": sorted(prios(running.get("PORT_QOS_MAP", {}).get(p, {}).get("pfcwd_sw_enable"))) if p in wd else [],
            }
        return res

    def pfcwd_storms(self, ports: Iterable[str]) -> dict[str, dict[str, Storm]]:
        """{port: {prio: {"detected", "stormed"}}} from ``show pfcwd stats`` (sonic-utilities pfcwd:
        QUEUE ``<port>:<queue>``, STATUS stormed|operational, STORM DETECTED/RESTORED); queue n is
        priority n (the fabric template's identity maps). A queue the watchdog has not seen is absent."""
        res: dict[str, dict[str, Storm]] = {p: {} for p in ports}
        for r in parse_table(self.run("show pfcwd stats")):
            port, _sep, q = (r.get("QUEUE") or "").rpartition(":")
            if port not in res or not q.isdigit():
                continue
            detected = (r.get("STORM DETECTED/RESTORED") or "0/0").split("/")[0]
            res[port][q] = {"detected": int(detected.replace(",", "")) if detected.replace(",", "").isdigit() else 0, "stormed": r.get("STATUS") == "stormed"}
        return res

    def qos_counters(self, ports: Iterable[str]) -> dict[str, dict[str, Any]]:
        """{port: counters} from ``show pfc counters`` (per-priority Rx/Tx PFC frames) and
        ``show queue counters`` (per-queue drops; ECN marks where the platform has ECN
        statistics) - read-only. Queue n is taken as priority n (TC_TO_QUEUE identity,
        as the fabric template writes it); what the platform lacks is named in ``missing``.
        """
        c = switch_counters.parse_sonic_pfc_counters(self.run("show pfc counters"))
        q = switch_counters.parse_sonic_queue_counters(self.run("show queue counters"))
        res: dict[str, dict[str, Any]] = {}
        for p in ports:
            if p not in c["rx"] and p not in c["tx"]:
                continue
            rx, tx = c["rx"].get(p) or {}, c["tx"].get(p) or {}
            uc = {row["index"]: row for name, row in (q["ports"].get(p) or {}).items() if row["type"] in ("UC", "ALL")}
            missing: list[str] = []
            drops = {i: row.get("drop_pkts") for i, row in uc.items() if i < 8} or None
            if drops is None or any(v is None for v in drops.values()):
                missing.append("queue drops")
            if "ecn_marked_pkts" in q["columns"]:
                ecn_vals = [row.get("ecn_marked_pkts") for i, row in uc.items() if i < 8]
                ecn = None if not ecn_vals or None in ecn_vals else sum(v for v in ecn_vals if v is not None)
            else:
                ecn = None
            if ecn is None:
                missing.append("ECN-marked packets")
            res[p] = {
                "rx_pause": rx,
                "tx_pause": tx,
                "rx_pause_total": sum(v or 0 for v in rx.values()),
                "tx_pause_total": sum(v or 0 for v in tx.values()),
                "ecn_marked": ecn,
                "drops": drops,
                "cnp_tx": None,
                "per_priority": True,
                "missing": missing + ["CNPs sent"],
            }
        return res

    def error_counters(self, ports: Iterable[str]) -> dict[str, dict[str, Any]]:
        """{port: {"errors", "link_down", "link_down_unit", "missing"}} from ``show interfaces
        counters`` (portstat, read-only): RX_ERR / TX_ERR; an ``N/A`` column is named in
        ``missing``. portstat counts no link-down events: ``link_down`` is None."""
        c = switch_counters.parse_sonic_intf_counters(self.run("show interfaces counters"))
        res: dict[str, dict[str, Any]] = {}
        for p in ports:
            row = c["ports"].get(p)
            if row is None:
                continue
            errors = {k: row[k] for k in ("RX_ERR", "TX_ERR") if row.get(k) is not None}
            res[p] = {
                "errors": errors,
                "link_down": None,
                "link_down_unit": None,
                "missing": [k for k in ("RX_ERR", "TX_ERR") if row.get(k) is None] + ["link down events"],
            }
        return res

    def transceivers(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: module} from ``show interfaces transceiver eeprom --dom <p>`` (sfpshow, read-only), one port
        at a time: Rx power per lane and temperature with the module's alarm thresholds (optics.py)."""
        res: dict[str, Any] = {}
        for p in ports:
            mods = switch_optics.parse_sonic_transceiver_eeprom(self.run(f"show interfaces transceiver eeprom --dom {p}"))
            if p in mods:
                res[p] = mods[p]
        return res

    def phy_errors(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: errors} from ``show interfaces counters fec-stats`` (portstat -f, read-only): FEC_CORR and
        FEC_UNCORR codewords, and from 202411 FEC_PRE_BER / FEC_POST_BER (ber.py); an N/A is None."""
        c = switch_ber.parse_sonic_fec_stats(self.run("show interfaces counters fec-stats"))
        return {p: c[p] for p in ports if p in c}
