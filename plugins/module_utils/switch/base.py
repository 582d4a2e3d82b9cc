"""Switch driver base: one SSH session over netmiko, and the push workflow.

Every platform driver (nvue, sonic, eos) subclasses :class:`Driver`. All
device I/O goes through :meth:`Driver.send` (one command in, its output out),
so unit tests replace that one method with a scripted fake and assert the
exact commands. The workflow in :func:`window.run_apply` (switch/window.py) is the same for every
platform: read the running config into facts (have), parse the rendered
intent with the same parser (want), compute the delta (commands), and only
outside check mode back up, push with the platform's safe mechanism,
post-check, then confirm or roll back.

Pure logic here is stdlib-only; netmiko is imported only when connecting.

What every driver reads has one model here (napalm's models.py): ``LockState`` (``lock_read``),
``PortOper`` (``oper``), ``Storm`` (``pfcwd_storms``), ``Lossless`` (``lossless``); the LLDP table is
parsers/lldp.py's ``LldpTable``. A driver's parsed running config (``Facts``) is the platform's own
tree, and a scope is the platform's predicate over its keys: both stay open types.
"""

from __future__ import annotations

import abc
import datetime
import os
import re
import shlex
import signal
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, TypedDict

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.lldp import LldpTable
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.redact import Redactor

# A platform's running config as its parser reads it (NVUE's and EOS's trees, SONiC's CONFIG_DB tables)
Facts = Any
# A platform's managed-scope predicate: NVUE scope(path), SONiC scope(table, key, field), EOS scope(path, key)
Scope = Callable[..., bool]


class LockState(TypedDict):
    """The switch's window lock as the switch sees it (``Driver.lock_read``)."""

    text: str
    exists: bool
    age_s: Optional[int]


class PortOper(TypedDict, total=False):
    """One port's operational state (``Driver.oper``): what every platform reads, and NVUE's extras."""

    up: bool
    pfc: list[int]
    ecn: bool
    trust: Any
    headroom: Optional[list[int]]
    pfcwd: Optional[list[int]]
    min_threshold: str
    max_threshold: str
    warnings: list[str]


class Storm(TypedDict):
    """One priority's PFC watchdog counters (``Driver.pfcwd_storms``)."""

    detected: int
    stormed: Optional[bool]


class Lossless(TypedDict):
    """One port's lossless state (``Driver.lossless``); ``missing``: what was not read, so not proven."""

    pfc: Optional[list[int]]
    headroom: Optional[list[int]]
    pfcwd: Optional[list[int]]
    storms: Optional[dict[str, Storm]]
    missing: list[str]


def netmiko_missing(exc: BaseException) -> str:
    """The message of a switch read or push without netmiko: what is missing, for which Python, and how to
    install it (the modules run on the controller, under ansible_playbook_python)."""
    return (
        f"netmiko is not installed in the Python that runs the switch modules on the controller "
        f"({sys.executable}): {exc}. Install it there: pip install 'netmiko>=4.3' (or pip install -r "
        "requirements.txt from the linerate checkout or collection, which names it)"
    )


class SwitchError(Exception):
    """A failure on one switch; the message always names the switch.

    ``reason`` is the message without the switch prefix; ``rolled_back`` is
    True/False once known (never None in a module result); ``changed`` says
    whether the switch was left modified.
    """

    def __init__(
        self, switch: str, message: str, output: Optional[str] = None, command: Optional[str] = None, rolled_back: Optional[bool] = None, changed: bool = False
    ) -> None:
        self.switch = switch
        self.reason = message
        self.output = output
        self.command = command
        self.rolled_back = rolled_back
        self.changed = changed
        super().__init__(f"switch {switch}: {message}")


class SessionLost(SwitchError):
    """The SSH session dropped (or could not be used) in the middle of a command."""


class CommandTimeout(SwitchError):
    """The switch did not answer a command within command_timeout."""


class Unreachable(SwitchError):
    """No SSH session could be opened (refused, no route, connect timeout)."""


def _watch_channel(conn: Any) -> None:
    """Make netmiko notice at once when the switch closes the session.

    netmiko's read loop polls ``recv_ready()``, which stays False on a closed
    channel, so a drop would only show as "Pattern not detected" after the
    whole read timeout. Wrapping the connection's ``read_channel`` raises
    EOFError as soon as the channel is closed and drained.
    """
    chan = getattr(conn, "remote_conn", None)
    if chan is None or not hasattr(chan, "closed"):
        return
    orig = conn.read_channel

    def read_channel() -> Any:
        out = orig()
        if not out and (chan.closed or chan.eof_received or not (chan.get_transport() and chan.get_transport().is_active())):
            raise EOFError("the switch closed the SSH session")
        return out

    conn.read_channel = read_channel


class Driver(abc.ABC):
    platform: Optional[str] = None
    device_type: Optional[str] = None
    # whether commit() arms a timer on the switch that rolls the change back unless confirmed in time
    confirm_timer = True
    # whether that timer is armed already by begin() (SONiC's dead-man timer): the budget counts from there
    timer_at_begin = False
    # the window's confirm timer in seconds (set by the window before begin)
    window_timeout = 300
    # how many commands the window is about to push (set by the window before begin: SONiC's push timer)
    window_commands = 0
    # regexes that mark a command's output as rejected, in the platform's words
    error_patterns: tuple[str, ...] = ()

    def __init__(
        self,
        name: str,
        host: Optional[str] = None,
        port: int = 22,
        username: Optional[str] = None,
        password: Optional[str] = None,
        key_file: Optional[str] = None,
        known_hosts: Optional[str] = None,
        host_key_checking: bool = True,
        connect_timeout: int = 10,
        command_timeout: int = 30,
        profile: str = "linerate",
        ssh_config_file: Optional[str] = None,
        secret: Optional[str] = None,
    ) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.key_file = key_file
        self.known_hosts = known_hosts
        self.host_key_checking = host_key_checking
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout
        self.profile = profile
        self.ssh_config_file = ssh_config_file
        self.secret = secret  # EOS enable secret (netmiko's secret); never logged
        self.conn: Any = None
        self.log: list[tuple[str, str]] = []  # (command, output) of every command sent

    # ---------------------------------------------------------------- I/O
    def connect(self) -> None:
        if self.conn is not None:
            return
        try:
            from netmiko.exceptions import NetmikoAuthenticationException, NetmikoTimeoutException
        except ImportError as exc:
            raise SwitchError(self.name, netmiko_missing(exc)) from exc
        params: dict[str, Any] = dict(
            device_type=self.device_type,
            host=self.host,
            port=int(self.port),
            username=self.username,
            password=self.password,
            conn_timeout=self.connect_timeout,
            auth_timeout=self.connect_timeout,
            banner_timeout=self.connect_timeout,
            read_timeout_override=None,
            allow_agent=False,
            use_keys=bool(self.key_file),
            key_file=self.key_file or None,
            ssh_strict=bool(self.host_key_checking),
            system_host_keys=False,
            alt_host_keys=bool(self.host_key_checking and self.known_hosts),
            alt_key_file=os.path.expanduser(self.known_hosts or ""),
            fast_cli=True,
            session_log=None,
        )
        if self.secret:  # EOS enable secret: netmiko's enable() answers its Password: prompt with it
            params["secret"] = self.secret
        if self.ssh_config_file:  # jump hosts (ProxyJump / ProxyCommand) as OpenSSH's config says
            path = os.path.expanduser(self.ssh_config_file)
            if not os.path.isfile(path):
                raise SwitchError(self.name, f"ssh_config_file {self.ssh_config_file} does not exist")
            params["ssh_config_file"] = path
        if self.host_key_checking and self.known_hosts and not os.path.isfile(params["alt_key_file"]):
            raise SwitchError(self.name, f"known_hosts file {self.known_hosts} does not exist (host key checking is on)")
        where = f"{self.host}:{self.port}"
        try:
            self.conn = self.open_connection(params)
        except NetmikoAuthenticationException as exc:
            raise SwitchError(self.name, f"authentication failed for user {self.username!r} at {where}") from exc
        except Exception as exc:  # timeout, refused, host key rejected (netmiko wraps paramiko's)
            text = str(exc)
            if "known_hosts" in text or "host key" in text.lower():
                raise SwitchError(
                    self.name, f"SSH host key of {where} is not in the known_hosts file {self.known_hosts} (or does not match it): {_last_line(exc)}"
                ) from exc
            if isinstance(exc, NetmikoTimeoutException):
                raise Unreachable(self.name, f"unreachable at {where}: {_first_line(exc)}") from exc
            raise Unreachable(self.name, f"unreachable at {where}: {type(exc).__name__}: {_first_line(exc)}") from exc
        _watch_channel(self.conn)

    def open_connection(self, params: dict[str, Any]) -> Any:
        """A netmiko connection (tests replace this with a simulator-backed one)."""
        from netmiko import ConnectHandler

        return ConnectHandler(**params)

    def close(self) -> None:
        """Close the session; a session that is already dead is simply dropped."""
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.disconnect()
            except Exception:  # noqa: BLE001 - a dropped or hung session cannot be closed cleanly
                pass

    def send(self, command: str, timeout: Optional[float] = None) -> str:
        """Send one command and return its output (the one I/O method).

        A dropped session raises :class:`SessionLost` at once (not netmiko's
        "Pattern not detected" after the read timeout); no prompt within
        ``timeout`` (default ``command_timeout``) raises
        :class:`CommandTimeout`. Either way the session is discarded: the
        next command opens a new one.
        """
        self.connect()
        timeout = timeout or self.command_timeout
        try:
            from netmiko.exceptions import ReadTimeout
        except ImportError:  # pragma: no cover - venv always has it
            ReadTimeout = TimeoutError  # type: ignore[misc,assignment]  # noqa: N806
        try:
            return str(
                self.conn.send_command(
                    command,
                    read_timeout=timeout,
                    expect_string=self.expect_string(command),
                    strip_prompt=True,
                    strip_command=True,
                )
            )
        except ReadTimeout as exc:
            self.close()
            raise CommandTimeout(
                self.name, f"no answer within {timeout}s (command_timeout) to {command!r}: the switch hung or is too slow", command=command
            ) from exc
        except (OSError, EOFError) as exc:
            self.close()
            raise SessionLost(self.name, f"SSH session to {self.host}:{self.port} lost during {command!r}: {_first_line(exc)}", command=command) from exc
        except Exception as exc:  # paramiko.SSHException and kin
            if type(exc).__module__.split(".", maxsplit=1)[0] not in ("paramiko", "socket", "netmiko"):
                raise
            self.close()
            raise SessionLost(
                self.name, f"SSH session to {self.host}:{self.port} lost during {command!r}: {type(exc).__name__}: {_first_line(exc)}", command=command
            ) from exc

    def expect_string(self, command: str) -> str:
        """Any prompt of this switch, in any mode (config sessions change it)."""
        base = re.escape(str(self.conn.base_prompt))
        return base + r"(\([^)\n]*\))?[$>#]\s*$"

    def run(self, command: str, timeout: Optional[float] = None, check: bool = True) -> str:
        out = self.send(command, timeout=timeout)
        self.log.append((command, out))
        if check:
            err = self.error_in(out)
            if err:
                raise SwitchError(self.name, f"rejected command {command!r}: {err}", output=out, command=command)
        return out

    def error_in(self, output: str) -> Optional[str]:
        for pat in self.error_patterns:
            m = re.search(pat, output, re.M)
            if m:
                return m.group(0).strip()
        return None

    # ------------------------------------------------- platform interface
    # the command that prints the running configuration, in the form parse_config reads
    running_command = ""

    @classmethod
    def config_reads(cls) -> tuple[str, ...]:
        """The commands whose output is a whole configuration (it may hold hashed secrets): summarised in the
        command log, never copied into a module result (module_common.command_log)."""
        return (cls.running_command,)

    def get_running(self) -> str:
        """The running configuration as the switch prints it (``running_command``)."""
        return self.run(self.running_command)

    def parse(self, text: str) -> Facts:
        """A running configuration or the rendered intent as facts; SwitchError naming the switch where the
        platform's parser refuses it."""
        try:
            return self.parse_config(text)
        except ValueError as exc:
            raise SwitchError(self.name, str(exc)) from exc

    @abc.abstractmethod
    def parse_config(self, text: str) -> Facts:
        """The platform's parser of its configuration text (ValueError on what it cannot read)."""

    @abc.abstractmethod
    def commands(self, want: Facts, have: Facts, scope: Scope) -> list[str]:
        """Platform-specific."""

    @abc.abstractmethod
    def managed_scope(self, want: Facts, ports: Iterable[str]) -> Scope:
        """Platform-specific."""

    def full_scope(self) -> Scope:
        return lambda *key: True

    @abc.abstractmethod
    def out_of_scope(self, want: Facts, scope: Scope, ports: Iterable[str]) -> list[str]:
        """Lines of the intent outside the managed scope (empty when all of it is inside)."""

    @abc.abstractmethod
    def view(self, facts: Facts, scope: Scope) -> str:
        """Text of the scoped facts, for the diff."""

    @abc.abstractmethod
    def pending(self) -> list[str]:
        """Descriptions of uncommitted / unconfirmed config; empty when none."""

    @abc.abstractmethod
    def begin(self, tag: str) -> None:
        """Platform-specific."""

    def push(self, commands: Iterable[str]) -> None:
        for c in commands:
            self.run(c)

    @abc.abstractmethod
    def abort(self) -> None:
        """Undo a push that has not been committed yet."""

    @abc.abstractmethod
    def commit(self, confirm_timeout: int) -> None:
        """Platform-specific."""

    @abc.abstractmethod
    def confirm(self) -> None:
        """Platform-specific."""

    @abc.abstractmethod
    def rollback(self) -> None:
        """Undo a committed but unconfirmed push."""

    def clear_pending(self, target_text: str) -> list[str]:
        """Before an emergency restore: discard pending config a failed window left. Returns what it did."""
        return []

    def discard(self) -> None:
        """Drop what :meth:`begin` created (a checkpoint, an empty session, a dead-man timer) when the
        window stops before the first command is pushed; touches nothing else (another administrator's
        change that landed meanwhile stays)."""
        raise SwitchError(self.name, f"the {self.platform} driver cannot discard a begun window (not built)")

    # ------------------------------------------------- one window per switch
    # The lock is a directory made with mkdir in the switch's Linux shell (atomic: of two racing windows
    # one gets "File exists"), holding one file, ``holder``: see module_utils/switch/lock.py.
    lock_path = "/var/lock/linerate.lock"

    def shell(self, command: str, root: bool = False) -> str:
        """``command`` as this switch runs it in its Linux shell (SONiC and Cumulus log in to bash)."""
        return command

    def lock_holder(self) -> str:
        """The holder line of the switch's lock ('' when there is none, or it is empty)."""
        return self.lock_read()["text"]

    def lock_read(self) -> LockState:
        """The switch's lock as the switch sees it, in one command: ``{"text": the holder line ('' when none),
        "exists": whether the lock directory exists, "age_s": its age by the switch's own clock (the
        directory's mtime against ``date +%s`` there; None when it does not exist)}``."""
        p = self.lock_path
        out = self.run(self.shell(f"cat {p}/holder 2>/dev/null ; stat -c lock-mtime=%Y {p} 2>/dev/null ; date +switch-now=%s"), check=False)
        text: list[str] = []
        mtime: Optional[int] = None
        now: Optional[int] = None
        for line in out.splitlines():
            m = re.fullmatch(r"\s*(lock-mtime|switch-now)=(\d+)\s*", line)
            if m and m.group(1) == "lock-mtime":
                mtime = int(m.group(2))
            elif m:
                now = int(m.group(2))
            elif line.strip():
                text.append(line.strip())
        if now is None:
            raise SwitchError(self.name, f"reading the window lock {p}: the switch did not print its clock (date +%s): {out.strip()[:200]!r}", output=out)
        return {"text": "\n".join(text), "exists": mtime is not None, "age_s": None if mtime is None else now - mtime}

    def window_timers(self, run: str) -> list[str]:
        """The confirm timers of the window ``run`` (a lock holder's run id) still running on this switch,
        each described in the platform's words (empty when none): while one runs the switch ends that
        window by itself, and its lock is never broken. Each platform says how it reads them."""
        raise SwitchError(self.name, f"{type(self).__name__}: reading the window's confirm timers is not built")

    def lock_take(self, line: str) -> str:
        """Create the lock naming ``line``: '' when taken, the shell's refusal otherwise."""
        return self.run(self.shell(f"mkdir {self.lock_path} && echo {shlex.quote(line)} > {self.lock_path}/holder"), check=False).strip()

    def lock_remove(self) -> None:
        self.run(self.shell(f"rm -rf {self.lock_path}", root=True), check=False)

    # a stale window's leftovers that clear_pending may discard (set when a stale lock was broken)
    stale_window: Any = None

    @abc.abstractmethod
    def undo(self) -> None:
        """Recovery after any failure of the window, possibly on a new session.

        Whatever step failed (begin, push, commit, read-back, post-check,
        confirm) and whatever the session's state: discard uncommitted
        config, roll back an applied-but-unconfirmed change, remove the
        window's own pending state. Must be safe to run twice.
        """

    # LLDP: the command that prints the neighbour table and the parser of
    # module_utils/parsers/lldp.py that reads it (set by each platform)
    lldp_command: Optional[str] = None
    lldp_parser: Optional[str] = None

    def lldp_neighbors(self) -> LldpTable:
        """The switch's LLDP neighbour table (read-only): module_utils/parsers/lldp.py's
        ``{"neighbors": {port: [neighbour...]}, "ports": [...], "warnings": [...]}``."""
        parser: Callable[[str], LldpTable] = getattr(_lldp(), str(self.lldp_parser))
        return parser(self.run(str(self.lldp_command)))

    @abc.abstractmethod
    def oper(self, ports: Iterable[str]) -> dict[str, PortOper]:
        """{port: {"up": bool, "pfc": [prio...], "ecn": bool}} read from the switch."""

    def pfcwd_storms(self, ports: Iterable[str]) -> Optional[dict[str, dict[str, Storm]]]:
        """{port: {prio: {"detected": n, "stormed": bool or None}}} from the platform's PFC watchdog
        counters, or None where this driver cannot read them (the caller says so)."""
        return None

    def transceivers(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: module} for the ports asked (read-only): the optical module in each port, read with the
        platform's transceiver command and the parser of module_utils/switch/optics.py (``present``,
        ``optical``, ``vendor``, ``part_number``, ``cable_technology``, ``ddm``: Rx power per lane and
        temperature with the module's alarm thresholds). A port the switch does not report is left out.
        A driver that has no transceiver read says so as a SwitchError: switch_counters then reports the
        modules as unproven (``optics_msg``), never as healthy and never as a crash of the whole read."""
        raise SwitchError(self.name, f"{type(self).__name__}: reading optical modules is not built for this platform")

    def phy_errors(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: errors} for the ports asked (read-only): the bit error rate and FEC counters of what each
        port receives, read with the platform's command and the parser of module_utils/switch/ber.py
        (``pre_fec_ber``, ``post_fec_ber``, ``fec_corrected``, ``fec_uncorrected``, ``fec_mode``, each None
        where the platform does not print it). A port the switch does not report is left out. A driver
        that has no such read says so as a SwitchError: switch_counters then reports the rates as unproven
        (``ber_msg``), never as healthy and never as a crash of the whole read."""
        raise SwitchError(self.name, f"{type(self).__name__}: reading bit error rates and FEC counters is not built for this platform")

    def lossless(self, ports: list[str]) -> dict[str, Lossless]:
        """{port: {"headroom", "pfcwd", "storms", "missing"}} (read-only): the priorities with lossless
        headroom and those the PFC watchdog guards (from ``oper``; None where the platform's driver
        does not read them), the watchdog's storm counters per priority (``pfcwd_storms``; None where
        not read) and ``missing``, what is not read and so not proven."""
        oper = self.oper(ports)
        storms = self.pfcwd_storms(ports)
        res: dict[str, Lossless] = {}
        for p in ports:
            st = oper.get(p)
            if st is None:
                continue
            head, wd = st.get("headroom"), st.get("pfcwd")
            s = None if storms is None else storms.get(p, {})
            res[p] = {
                "pfc": st.get("pfc"),
                "headroom": head,
                "pfcwd": wd,
                "storms": s,
                "missing": [w for w, v in (("lossless headroom", head), ("PFC watchdog state", wd), ("PFC watchdog storm counters", s)) if v is None],
            }
        return res


def _lldp() -> Any:
    """The LLDP parsers (module_utils/parsers/lldp.py)."""
    try:
        from ansible_collections.linerate.fabric.plugins.module_utils.parsers import lldp
    except ImportError:  # standalone (tests, corpus checks)
        from parsers import lldp  # type: ignore[import-not-found,no-redef]
    return lldp


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _last_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def timestamp(now: Optional[datetime.datetime] = None) -> str:
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def _redacted(exc: SwitchError, redactor: Redactor) -> SwitchError:
    new = type(exc)(
        exc.switch,
        redactor.text(exc.reason),
        output=redactor.text(exc.output),
        command=redactor.text(exc.command),
        rolled_back=exc.rolled_back,
        changed=exc.changed,
    )
    return new


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# data ports of each platform: a restore's managed scope covers the QoS, MTU and speed settings of all of
# them (not only the fabric ports, which a rollback does not derive); management ports (eth0, Management1,
# MGMT_INTERFACE) never match
DATA_PORT = {"nvue": re.compile(r"swp\d+(s\d+)?"), "sonic": re.compile(r"Ethernet\d+"), "eos": re.compile(r"Ethernet\d+(/\d+)*")}


class ConfigMoved(SwitchError):
    """The running config changed between the window's first read and its begin: another change landed."""
