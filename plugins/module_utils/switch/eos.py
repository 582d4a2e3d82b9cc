"""Arista EOS driver.

Config language: the ``show running-config`` text (3-space indented blocks).
Facts are a tree ``{key: (line, children)}``; a line's key is what makes it
unique in its block (``mtu``, ``speed``, ``qos trust``,
``priority-flow-control priority 3``, ``random-detect ecn``; a global
``qos map dscp 26 27 to traffic-class 3`` is exploded into one key per DSCP),
so a changed value is one command, not a ``no`` plus a new line.

Safe mechanism: a named ``configure session``; a rejected line aborts the
session (nothing reached the running config); ``commit timer hh:mm:ss``
commits with an automatic rollback; after the post-checks
``configure session <name> commit`` confirms it (then ``write memory``),
otherwise ``configure session <name> abort`` rolls it back.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Optional, Tuple, TypedDict, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, SwitchError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import ber as switch_ber, counters as switch_counters, optics as switch_optics
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, column_spans, split_columns
except ImportError:  # standalone
    # Standalone: either switch/ itself or module_utils/ is on sys.path (the
    # corpus check and the parser tests put module_utils/ there).
    try:
        from base import Driver, SwitchError  # type: ignore[import-not-found,no-redef]
        import ber as switch_ber  # type: ignore[import-not-found,no-redef]
        import counters as switch_counters  # type: ignore[import-not-found,no-redef]
        import optics as switch_optics  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch.base import Driver, SwitchError  # type: ignore[import-not-found,no-redef]
        from switch import ber as switch_ber, counters as switch_counters, optics as switch_optics  # type: ignore[import-not-found,no-redef]
    from common import ParseError, column_spans, split_columns  # type: ignore[import-not-found,no-redef]

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import PortOper, Storm

INDENT = 3
_KEY_PREFIXES = (
    "mtu",
    "l2 mtu",
    "speed",
    "qos trust",
    "description",
    "hostname",
    "random-detect ecn",
    "ip address",
    "shape rate",
    "bandwidth percent",
    # the PFC watchdog's per-port settings: a changed value is one command
    "priority-flow-control pause watchdog port action",
    "priority-flow-control pause watchdog port timer",
)
WATCHDOG = "priority-flow-control pause watchdog"
_DSCP_MAP = re.compile(r"^qos map dscp ([\d ]+?) to traffic-class (\d+)$")
# transmit-queue blocks: tx-queue (Trident/Tomahawk), uc-tx-queue (Jericho-class; the platform
# profile, module_utils/switch/profiles.py, names which one a family has)
QUEUE_BLOCKS = ("tx-queue ", "uc-tx-queue ")

# The running config as a tree: {key: (line, children)}
EosTree = Dict[str, Tuple[str, "EosTree"]]
# eos_scope's predicate: (the block path, a key in it) -> managed
EosScope = Callable[[Tuple[str, ...], str], bool]


class PortStatus(TypedDict):
    """One row of ``show interfaces status``."""

    up: bool
    status: str


class WatchdogQueue(TypedDict):
    stuck: int
    recovered: int


def line_key(line: str) -> str:
    m = re.match(r"^priority-flow-control priority (\d+) ", line)
    if m:
        return f"priority-flow-control priority {m.group(1)}"
    for p in _KEY_PREFIXES:
        if line == p or line.startswith(p + " "):
            return p
    return line


def parse_eos_config(text: Optional[str]) -> EosTree:
    """``show running-config`` (or a rendered template) -> tree {key: (line, children)}."""
    root: EosTree = {}
    stack: list[tuple[int, EosTree]] = [(-1, root)]
    for raw in (text or "").splitlines():
        if not raw.strip():
            continue
        stripped = raw.strip()
        if stripped.startswith("!") or stripped == "end":
            continue
        if stripped.startswith("% "):
            raise ParseError("eos", f"{stripped}")
        indent = len(raw) - len(raw.lstrip(" "))
        level = indent // INDENT
        while stack and stack[-1][0] >= level:
            stack.pop()
        if not stack:
            raise ParseError("eos", f"bad indentation at {raw!r}")
        parent = stack[-1][1]
        m = _DSCP_MAP.match(stripped) if level == 0 else None
        if m:
            for d in m.group(1).split():
                parent[f"qos map dscp {d}"] = (f"qos map dscp {d} to traffic-class {m.group(2)}", {})
            stack.append((level, {}))
            continue
        children: EosTree = {}
        parent[line_key(stripped)] = (stripped, children)
        stack.append((level, children))
    return root


def eos_scope(want: EosTree, ports: Iterable[str]) -> EosScope:
    blocks = {f"interface {p}" for p in ports}
    dscps = {k for k in want if k.startswith("qos map dscp ")}

    def scope(path: tuple[str, ...], key: str) -> bool:
        if not path:
            return key in dscps
        if len(path) == 1 and path[0] in blocks:
            return key in ("mtu", "speed", "qos trust") or key.startswith("priority-flow-control") or key.startswith(QUEUE_BLOCKS)
        if len(path) == 2 and path[0] in blocks and path[1].startswith(QUEUE_BLOCKS):
            return key == "random-detect ecn"
        return False

    return scope


def eos_commands(want: EosTree, have: EosTree, scope: EosScope, path: tuple[str, ...] = ()) -> list[str]:
    cmds: list[str] = []
    for key, (hline, _hch) in have.items():
        if key in want or not scope(path, key):
            continue
        if not path and key.startswith("interface Ethernet"):
            continue  # a physical interface cannot be removed
        cmds.append("no " + hline)
    for key, (wline, wch) in want.items():
        h = have.get(key)
        if wch or (h and h[1]) or key.startswith(("interface ",) + QUEUE_BLOCKS):
            sub = eos_commands(wch, h[1] if h else {}, scope, path + (wline,))
            if sub or h is None:
                cmds += [wline] + sub + ["exit"]
        elif h is None or h[0] != wline:
            cmds.append(wline)
    return cmds


def eos_out_of_scope(tree: EosTree, scope: EosScope, port_blocks: set[str], path: tuple[str, ...] = ()) -> list[str]:
    """Lines of the intent tree outside the scope: a block must be a fabric port (or a [uc-]tx-queue of one)."""
    bad: list[str] = []
    for key, (line, ch) in tree.items():
        where = " / ".join(path + (line,))
        if ch or (not path and key.startswith("interface ")):
            inside = key in port_blocks if not path else scope(path, key)
            if not inside:
                bad.append(where)
            else:
                bad += eos_out_of_scope(ch, scope, port_blocks, path + (line,))
        elif not scope(path, key):
            bad.append(where)
    return bad


def render_tree(tree: EosTree, scope: Optional[EosScope] = None, path: tuple[str, ...] = (), level: int = 0) -> list[str]:
    out: list[str] = []
    for key, (line, ch) in tree.items():
        sub = render_tree(ch, scope, path + (line,), level + 1)
        if scope is None or scope(path, key) or sub:
            out.append(" " * (INDENT * level) + line)
            out += sub
    return out


def parse_sessions(text: Optional[str]) -> list[tuple[str, str]]:
    """``show configuration sessions`` -> [(name, state)]."""
    rows: list[tuple[str, str]] = []
    seen_rule = False
    for line in (text or "").splitlines():
        if re.match(r"^\s*-{3,}(\s+-{3,})+\s*$", line):
            seen_rule = True
            continue
        if seen_rule and line.strip():
            toks = line.split()
            if toks[0] == "*":
                toks = toks[1:]
            if len(toks) >= 2:
                rows.append((toks[0], toks[1]))
    return rows


def parse_interfaces_status(text: Optional[str]) -> dict[str, PortStatus]:
    """``show interfaces status`` (text or ``| json``) -> {Ethernet1/1: {"up": bool, "status": str}}.

    JSON (``show interfaces status | json``, eAPI's ``{"interfaceStatuses":
    {name: {"linkStatus", ...}}}``) is recognized by its leading ``{``. The
    text table is read by the header's word positions (EOS left-aligns
    every column under its name, and a blank Name or Vlan cell stays
    blank); ``Et1/1`` becomes ``Ethernet1/1``.

    Raises ParseError (naming the line) on ``%`` errors, output without the
    ``Port ... Status`` header, a row that does not fit its columns, or a row
    with a blank Status (EOS prints one on every row; issue 38). ``status``
    keeps the cell as printed, a status this parser does not know included.
    """
    stripped = (text or "").strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError as err:
            raise ParseError("eos", "show interfaces status | json: invalid JSON: %s" % err, text)
        statuses = data.get("interfaceStatuses") if isinstance(data, dict) else None
        if not isinstance(statuses, dict):
            raise ParseError("eos", "show interfaces status | json: no interfaceStatuses object", text)
        res: dict[str, PortStatus] = {}
        for name, info in statuses.items():
            status = info.get("linkStatus") if isinstance(info, dict) else None
            if not isinstance(status, str):
                raise ParseError("eos", "show interfaces status | json: %r has no linkStatus" % name, text)
            res[name] = {"up": status == "connected", "status": status}
        return res
    res = {}
    spans: Optional[list[tuple[str, int, int]]] = None
    for number, line in enumerate((text or "").splitlines(), 1):
        if line.startswith("%"):
            raise ParseError("eos", "line %d: %s" % (number, line.strip()), text)
        if spans is None:
            if line.startswith("Port") and "Status" in line:
                spans = column_spans(line, words=True)
                if not {"Port", "Status"} <= {span[0] for span in spans}:
                    raise ParseError("eos", "line %d: no Port and Status columns in the header: %r" % (number, line), text)
            continue
        if not line.strip():
            continue
        cells = split_columns(line, spans)
        if cells is None or not cells.get("Port"):
            raise ParseError("eos", "line %d does not fit the header's columns: %r" % (number, line), text)
        if not cells.get("Status"):  # EOS prints a status on every row: the cell's text went elsewhere
            raise ParseError("eos", "line %d: no Status for %r: %r" % (number, cells["Port"], line), text)
        name = re.sub(r"^Et(?=\d)", "Ethernet", cells["Port"])
        res[name] = {"up": cells["Status"] == "connected", "status": cells["Status"]}
    if spans is None:
        raise ParseError("eos", "show interfaces status: no 'Port ... Status' header line", text)
    return res


def qos_from_tree(tree: EosTree, port: str) -> dict[str, Any]:
    """PFC priorities / ECN on a port as the running config states them."""
    blk = tree.get(f"interface {port}", ("", {}))[1]
    on = "priority-flow-control on" in blk
    pfc = sorted(int(k.rsplit(" ", 1)[1]) for k, (ln, _children) in blk.items() if k.startswith("priority-flow-control priority ") and ln.endswith(" no-drop"))
    ecn = any("random-detect ecn" in ch for k, (_line, ch) in blk.items() if k.startswith(QUEUE_BLOCKS))
    return {"pfc": pfc if on else [], "ecn": ecn}


def lossless_from_tree(tree: EosTree, port: str) -> dict[str, list[int]]:
    """{"headroom": [prio], "pfcwd": [prio]} of a port as the running config states them.

    EOS carves the ingress headroom of a priority itself once the priority is no-drop with PFC on
    (no buffer profile to write, unlike SONiC), so the lossless priorities with headroom are the
    no-drop ones. The watchdog guards the no-drop priorities of a port with
    ``priority-flow-control pause watchdog`` on it (and PFC on)."""
    blk = tree.get(f"interface {port}", ("", {}))[1]
    pfc: list[int] = qos_from_tree(tree, port)["pfc"]
    return {"headroom": pfc, "pfcwd": pfc if WATCHDOG in blk else []}


def parse_pfcwd_counters(text: Optional[str]) -> dict[str, dict[str, WatchdogQueue]]:
    """``show priority-flow-control counters watchdog | json`` -> {port: {queue: {"stuck", "recovered"}}}.

    The eAPI shape as a public EOS health check reads it: ``{"interfaces": {<intf>: {"txQueues":
    {"<q>": {"stuckCount", "recoveryCount"}}}}}``; EOS leaves an interface out until its first
    watchdog event, so an absent port or queue counts zero. Raises ParseError on anything else."""
    stripped = (text or "").strip()
    if stripped.startswith("%"):
        raise ParseError("eos", stripped.splitlines()[0], text)
    try:
        data = json.loads(stripped)
    except ValueError as err:
        raise ParseError("eos", "show priority-flow-control counters watchdog | json: invalid JSON: %s" % err, text)
    intfs = data.get("interfaces") if isinstance(data, dict) else None
    if not isinstance(intfs, dict):
        raise ParseError("eos", "show priority-flow-control counters watchdog | json: no interfaces object", text)
    out: dict[str, dict[str, WatchdogQueue]] = {}
    for name, info in intfs.items():
        queues = (info or {}).get("txQueues") if isinstance(info, dict) else None
        if not isinstance(queues, dict):
            raise ParseError("eos", "show priority-flow-control counters watchdog | json: %r has no txQueues" % name, text)
        out[name] = {}
        for q, st in queues.items():
            if not str(q).isdigit() or not isinstance(st, dict):
                raise ParseError("eos", "show priority-flow-control counters watchdog | json: %r queue %r is not {stuckCount, recoveryCount}" % (name, q), text)
            counts = {k: st.get(k, 0) for k in ("stuckCount", "recoveryCount")}
            bad = {k: v for k, v in counts.items() if isinstance(v, bool) or not isinstance(v, int) or v < 0}
            if bad:
                raise ParseError(
                    "eos",
                    "show priority-flow-control counters watchdog | json: %r queue %r: %s not a "
                    "count" % (name, q, ", ".join(f"{k}={v!r}" for k, v in bad.items())),
                    text,
                )
            out[name][str(q)] = {"stuck": counts["stuckCount"], "recovered": counts["recoveryCount"]}
    return out


class EosDriver(Driver):
    platform = "eos"
    device_type = "arista_eos"
    running_command = "show running-config"
    lldp_command = "show lldp neighbors | json"
    lldp_parser = "parse_eos_lldp_neighbors"
    error_patterns = (r"^% .*$",)

    # the window lock: EOS runs Linux commands from the CLI with ``bash timeout <s> <command>`` (the rest of
    # the line goes to bash); /var/tmp is the Linux side's scratch directory
    lock_path = "/var/tmp/linerate.lock"
    SESSION_PREFIXES = ("linerate-", "linerate_")  # linerate_ : the sessions of releases before the lock

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self._session: Optional[str] = None

    def shell(self, command: str, root: bool = False) -> str:
        return f"bash timeout 10 {command}"

    def connect(self) -> None:
        fresh = self.conn is None
        super().connect()
        if fresh:
            self.enable()

    def enable(self) -> None:
        """A login without privilege 15 lands in unprivileged exec (``switch>``), where ``configure session``
        is refused: enter privileged exec as netmiko does (``enable``, then the secret at its ``Password:``
        prompt; nothing when the prompt is already ``#``)."""
        if self.conn.check_enable_mode():
            return
        try:
            self.conn.enable()
        except Exception as exc:  # netmiko: ValueError "Failed to enter enable mode", ReadTimeout
            hint = "the enable secret (ansible_become_password) was refused" if self.secret else "no enable secret is set (ansible_become_password)"
            raise SwitchError(
                self.name, f"could not enter privileged exec (enable): {hint}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from exc

    def parse_config(self, text: str) -> EosTree:
        return parse_eos_config(text)

    def managed_scope(self, want: EosTree, ports: Iterable[str]) -> EosScope:
        return eos_scope(want, ports)

    def full_scope(self) -> EosScope:
        return lambda path, key: True

    def commands(self, want: EosTree, have: EosTree, scope: EosScope) -> list[str]:
        return eos_commands(want, have, scope)

    def out_of_scope(self, want: EosTree, scope: EosScope, ports: Iterable[str]) -> list[str]:
        return eos_out_of_scope(want, scope, {f"interface {p}" for p in ports})

    def view(self, facts: EosTree, scope: EosScope) -> str:
        lines = render_tree(facts, scope)
        return "\n".join(lines) + ("\n" if lines else "")

    def pending(self) -> list[str]:
        rows = parse_sessions(self.run("show configuration sessions"))
        return [f"configure session {n} is {s}" for n, s in rows if s != "completed"]

    def begin(self, tag: str) -> None:
        """``configure session linerate-<tag>``: the name says whose it is in ``show configuration sessions``."""
        self._session = f"linerate-{tag}"
        self.run(f"configure session {self._session}")

    def window_timers(self, run: str) -> list[str]:
        """The window ``run``'s session committed on its timer (``linerate-<run>`` pendingCommitTimer): EOS
        restores the config from before it when the timer runs out."""
        return [
            f"configure session {n} is {st} (EOS aborts it when its commit timer runs out)"
            for n, st in parse_sessions(self.run("show configuration sessions"))
            if n in (f"linerate-{run}", f"linerate_{run}") and st == "pendingCommitTimer"
        ]

    def discard(self) -> None:
        """Leave the session and abort it while it is still being edited (nothing was pushed into it)."""
        self.run("end", check=False)
        if self._session is None:
            return
        state = dict(parse_sessions(self.run("show configuration sessions"))).get(self._session)
        if state == "pending":
            self.run(f"configure session {self._session} abort")
        self._session = None

    def abort(self) -> None:
        self.run("abort", check=False)
        self._session = None

    def commit(self, confirm_timeout: int) -> None:
        t = int(confirm_timeout)
        self.run(f"commit timer {t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}")

    def confirm(self) -> None:
        self.run(f"configure session {self._session} commit")
        self.run("write memory")
        self._session = None

    def rollback(self) -> None:
        self.run(f"configure session {self._session} abort")
        self._session = None

    def clear_pending(self, target_text: str) -> list[str]:
        """Abort linerate's own configure sessions (``linerate-*``) that are not completed (EOS restores the
        config from before a session committed with a timer). Another administrator's session is left: the
        pending check then names it and the restore stops."""
        done: list[str] = []
        self.run("end", check=False)
        for name, state in parse_sessions(self.run("show configuration sessions")):
            if state != "completed" and name.startswith(self.SESSION_PREFIXES):
                self.run(f"configure session {name} abort")
                done.append(f"configure session {name} abort (was {state})")
        return done

    def undo(self) -> None:
        """Leave config mode, then abort the window's session by name, whether still being edited
        (pending) or committed with a timer (pendingCommitTimer): either way EOS restores the config
        from before it. Works from a new SSH session too (sessions outlive the SSH session)."""
        self.run("end", check=False)  # in exec mode EOS answers "% Invalid input": harmless
        if self._session is None:
            return
        state = dict(parse_sessions(self.run("show configuration sessions"))).get(self._session)
        if state and state != "completed":
            self.rollback()
        self._session = None

    def oper(self, ports: Iterable[str]) -> dict[str, PortOper]:
        status = parse_interfaces_status(self.run("show interfaces status"))
        tree = self.parse(self.get_running())
        res: dict[str, PortOper] = {}
        for p in ports:
            if p in status:
                res[p] = cast("PortOper", dict(qos_from_tree(tree, p), up=status[p]["up"], **lossless_from_tree(tree, p)))
        return res

    def pfcwd_storms(self, ports: Iterable[str]) -> dict[str, dict[str, Storm]]:
        """{port: {prio: {"detected", "stormed"}}} from ``show priority-flow-control counters watchdog
        | json``: stuckCount is what the watchdog detected. The lab's (and EOS's default) traffic-class
        to tx-queue map is the identity, so queue n carries priority n. A queue found stuck more often
        than it recovered is stuck now (``stormed``)."""
        c = parse_pfcwd_counters(self.run("show priority-flow-control counters watchdog | json"))
        return {p: {q: {"detected": v["stuck"], "stormed": v["stuck"] > v["recovered"]} for q, v in c.get(p, {}).items()} for p in ports}

    def qos_counters(self, ports: Iterable[str]) -> dict[str, dict[str, Any]]:
        """{port: counters} from ``show priority-flow-control counters | json`` (read-only).

        EOS eAPI revision 3 gives Rx/Tx PFC frames per interface, not per priority;
        ECN marks and queue drops are not read yet: ``missing`` names them.
        """
        c = switch_counters.parse_eos_pfc_counters(self.run("show priority-flow-control counters | json"))
        res: dict[str, dict[str, Any]] = {}
        for p in ports:
            if p not in c["ports"]:
                continue
            v = c["ports"][p]
            res[p] = {
                "rx_pause": None,
                "tx_pause": None,
                "rx_pause_total": v["rx"],
                "tx_pause_total": v["tx"],
                "ecn_marked": None,
                "drops": None,
                "cnp_tx": None,
                "per_priority": False,
                "missing": ["pause frames per priority", "ECN-marked packets", "queue drops"],
            }
        return res

    def error_counters(self, ports: Iterable[str]) -> dict[str, dict[str, Any]]:
        """{port: {"errors", "link_down", "link_down_unit", "missing"}} from ``show interfaces
        counters errors | json`` (read-only): fcsErrors, alignmentErrors, symbolErrors,
        inErrors, outErrors, frameTooLongs, frameTooShorts. Link status changes are not
        read: ``link_down`` is None."""
        c = switch_counters.parse_eos_intf_errors(self.run("show interfaces counters errors | json"))
        res: dict[str, dict[str, Any]] = {}
        for p in ports:
            if p not in c["ports"]:
                continue
            errors = c["ports"][p]
            res[p] = {
                "errors": dict(errors),
                "link_down": None,
                "link_down_unit": None,
                "missing": [k for k in switch_counters.EOS_ERRORS if k not in errors] + ["link down events"],
            }
        return res

    def transceivers(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: module} from ``show interfaces transceiver detail | json`` (read-only): the lane interfaces
        of a cage gathered under its first (optics.py). EOS lists only modules that report digital
        diagnostics: a port it does not list holds none that does (an empty cage, a copper cable), which has
        no light to judge - said as its cable technology, not left out (an unlisted port would read as one
        the switch does not report)."""
        mods = switch_optics.parse_eos_transceiver_detail(self.run("show interfaces transceiver detail | json"))
        out: dict[str, Any] = {}
        for p in ports:
            out[p] = mods.get(p) or dict(switch_optics.empty_cage(), present=None, cable_technology="no module with digital diagnostics (EOS lists none here)")
        return out

    def phy_errors(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: errors} from ``show interfaces phy detail | json`` (read-only): the worst pre-FEC BER of the
        port's PHYs and their corrected / uncorrected codewords (ber.py); EOS prints no post-FEC BER."""
        c = switch_ber.parse_eos_phy_detail(self.run("show interfaces phy detail | json"))
        return {p: c[p] for p in ports if p in c}
