"""Switch driver base: one SSH session over netmiko, and the push workflow.

Every platform driver (nvue, sonic, eos) subclasses :class:`Driver`. All
device I/O goes through :meth:`Driver.send` (one command in, its output out),
so unit tests replace that one method with a scripted fake and assert the
exact commands. The workflow in :func:`run_apply` is the same for every
platform: read the running config into facts (have), parse the rendered
intent with the same parser (want), compute the delta (commands), and only
outside check mode back up, push with the platform's safe mechanism,
post-check, then confirm or roll back.

Pure logic here is stdlib-only; netmiko is imported only when connecting.
"""
import abc
import datetime
import os
import re
import shlex
import signal
import threading
import time

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.backups import (
        LABELS, BackupError, write_backup as _write_backup)
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.redact import Redactor
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock as _lock
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        from backups import LABELS, BackupError, write_backup as _write_backup  # type: ignore
        from redact import Redactor  # type: ignore
        import lock as _lock  # type: ignore
    except ImportError:
        from switch.backups import LABELS, BackupError, write_backup as _write_backup  # type: ignore
        from switch.redact import Redactor  # type: ignore
        from switch import lock as _lock  # type: ignore


class SwitchError(Exception):
    """A failure on one switch; the message always names the switch.

    ``reason`` is the message without the switch prefix; ``rolled_back`` is
    True/False once known (never None in a module result); ``changed`` says
    whether the switch was left modified.
    """

    def __init__(self, switch, message, output=None, command=None, rolled_back=None, changed=False):
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


def _watch_channel(conn):
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

    def read_channel():
        out = orig()
        if not out and (chan.closed or chan.eof_received or
                        not (chan.get_transport() and chan.get_transport().is_active())):
            raise EOFError("the switch closed the SSH session")
        return out
    conn.read_channel = read_channel


class Driver(abc.ABC):
    platform = None
    device_type = None
    # whether commit() arms a timer on the switch that rolls the change back unless confirmed in time
    confirm_timer = True
    # whether that timer is armed already by begin() (SONiC's dead-man timer): the budget counts from there
    timer_at_begin = False
    # the window's confirm timer in seconds (set by the window before begin)
    window_timeout = 300
    # regexes that mark a command's output as rejected, in the platform's words
    error_patterns = ()

    def __init__(self, name, host=None, port=22, username=None, password=None,
                 key_file=None, known_hosts=None, host_key_checking=True,
                 connect_timeout=10, command_timeout=30, profile="linerate", ssh_config_file=None, secret=None):
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
        self.secret = secret   # EOS enable secret (netmiko's secret); never logged
        self.conn = None
        self.log = []          # (command, output) of every command sent

    # ---------------------------------------------------------------- I/O
    def connect(self):
        if self.conn is not None:
            return
        try:
            from netmiko.exceptions import (NetmikoAuthenticationException,
                                            NetmikoTimeoutException)
        except ImportError as exc:  # pragma: no cover - venv always has it
            raise SwitchError(self.name, f"netmiko is not installed: {exc}") from exc
        params = dict(
            device_type=self.device_type, host=self.host, port=int(self.port),
            username=self.username, password=self.password,
            conn_timeout=self.connect_timeout, auth_timeout=self.connect_timeout,
            banner_timeout=self.connect_timeout, read_timeout_override=None,
            allow_agent=False, use_keys=bool(self.key_file),
            key_file=self.key_file or None,
            ssh_strict=bool(self.host_key_checking),
            system_host_keys=False,
            alt_host_keys=bool(self.host_key_checking and self.known_hosts),
            alt_key_file=os.path.expanduser(self.known_hosts or ""),
            fast_cli=True, session_log=None,
        )
        if self.secret:   # EOS enable secret: netmiko's enable() answers its Password: prompt with it
            params["secret"] = self.secret
        if self.ssh_config_file:   # jump hosts (ProxyJump / ProxyCommand) as OpenSSH's config says
            path = os.path.expanduser(self.ssh_config_file)
            if not os.path.isfile(path):
                raise SwitchError(self.name, f"ssh_config_file {self.ssh_config_file} does not exist")
            params["ssh_config_file"] = path
        if self.host_key_checking and self.known_hosts and not os.path.isfile(params["alt_key_file"]):
            raise SwitchError(self.name, f"known_hosts file {self.known_hosts} does not exist "
                                         "(host key checking is on)")
        where = f"{self.host}:{self.port}"
        try:
            self.conn = self.open_connection(params)
        except NetmikoAuthenticationException as exc:
            raise SwitchError(self.name, f"authentication failed for user {self.username!r} at {where}") from exc
        except Exception as exc:  # timeout, refused, host key rejected (netmiko wraps paramiko's)
            text = str(exc)
            if "known_hosts" in text or "host key" in text.lower():
                raise SwitchError(self.name, f"SSH host key of {where} is not in the known_hosts file "
                                             f"{self.known_hosts} (or does not match it): {_last_line(exc)}") from exc
            if isinstance(exc, NetmikoTimeoutException):
                raise Unreachable(self.name, f"unreachable at {where}: {_first_line(exc)}") from exc
            raise Unreachable(self.name, f"unreachable at {where}: {type(exc).__name__}: {_first_line(exc)}") from exc
        _watch_channel(self.conn)

    def open_connection(self, params):
        """A netmiko connection (tests replace this with a simulator-backed one)."""
        from netmiko import ConnectHandler
        return ConnectHandler(**params)

    def close(self):
        """Close the session; a session that is already dead is simply dropped."""
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.disconnect()
            except Exception:  # noqa: BLE001 - a dropped or hung session cannot be closed cleanly
                pass

    def send(self, command, timeout=None):
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
            ReadTimeout = TimeoutError  # noqa: N806
        try:
            return self.conn.send_command(
                command, read_timeout=timeout,
                expect_string=self.expect_string(command), strip_prompt=True, strip_command=True,
            )
        except ReadTimeout as exc:
            self.close()
            raise CommandTimeout(self.name, f"no answer within {timeout}s (command_timeout) to {command!r}: "
                                            "the switch hung or is too slow", command=command) from exc
        except (OSError, EOFError) as exc:
            self.close()
            raise SessionLost(self.name, f"SSH session to {self.host}:{self.port} lost during {command!r}: "
                                         f"{_first_line(exc)}", command=command) from exc
        except Exception as exc:  # paramiko.SSHException and kin
            if type(exc).__module__.split(".", maxsplit=1)[0] not in ("paramiko", "socket", "netmiko"):
                raise
            self.close()
            raise SessionLost(self.name, f"SSH session to {self.host}:{self.port} lost during {command!r}: "
                                         f"{type(exc).__name__}: {_first_line(exc)}", command=command) from exc

    def expect_string(self, command):
        """Any prompt of this switch, in any mode (config sessions change it)."""
        base = re.escape(self.conn.base_prompt)
        return base + r"(\([^)\n]*\))?[$>#]\s*$"

    def run(self, command, timeout=None, check=True):
        out = self.send(command, timeout=timeout)
        self.log.append((command, out))
        if check:
            err = self.error_in(out)
            if err:
                raise SwitchError(self.name, f"rejected command {command!r}: {err}",
                                  output=out, command=command)
        return out

    def error_in(self, output):
        for pat in self.error_patterns:
            m = re.search(pat, output, re.M)
            if m:
                return m.group(0).strip()
        return None

    # ------------------------------------------------- platform interface
    @abc.abstractmethod
    def get_running(self):
        """Platform-specific."""

    @abc.abstractmethod
    def parse(self, text):
        """Platform-specific."""

    @abc.abstractmethod
    def commands(self, want, have, scope):
        """Platform-specific."""

    @abc.abstractmethod
    def managed_scope(self, want, ports):
        """Platform-specific."""

    def full_scope(self):
        return lambda *key: True

    @abc.abstractmethod
    def out_of_scope(self, want, scope, ports):
        """Lines of the intent outside the managed scope (empty when all of it is inside)."""

    @abc.abstractmethod
    def view(self, facts, scope):
        """Text of the scoped facts, for the diff."""

    @abc.abstractmethod
    def pending(self):
        """Descriptions of uncommitted / unconfirmed config; empty when none."""

    @abc.abstractmethod
    def begin(self, tag):
        """Platform-specific."""

    def push(self, commands):
        for c in commands:
            self.run(c)

    @abc.abstractmethod
    def abort(self):
        """Undo a push that has not been committed yet."""

    @abc.abstractmethod
    def commit(self, confirm_timeout):
        """Platform-specific."""

    @abc.abstractmethod
    def confirm(self):
        """Platform-specific."""

    @abc.abstractmethod
    def rollback(self):
        """Undo a committed but unconfirmed push."""

    def clear_pending(self, target_text):
        """Before an emergency restore: discard pending config a failed window left. Returns what it did."""
        return []

    def discard(self):
        """Drop what :meth:`begin` created (a checkpoint, an empty session, a dead-man timer) when the
        window stops before the first command is pushed; touches nothing else (another administrator's
        change that landed meanwhile stays)."""
        raise SwitchError(self.name, f"the {self.platform} driver cannot discard a begun window (not built)")

    # ------------------------------------------------- one window per switch
    # The lock is a directory made with mkdir in the switch's Linux shell (atomic: of two racing windows
    # one gets "File exists"), holding one file, ``holder``: see module_utils/switch/lock.py.
    lock_path = "/var/lock/linerate.lock"

    def shell(self, command, root=False):
        """``command`` as this switch runs it in its Linux shell (SONiC and Cumulus log in to bash)."""
        return command

    def lock_holder(self):
        """The holder line of the switch's lock ('' when there is none)."""
        return self.run(self.shell(f"cat {self.lock_path}/holder 2>/dev/null"), check=False).strip()

    def lock_take(self, line):
        """Create the lock naming ``line``: '' when taken, the shell's refusal otherwise."""
        return self.run(self.shell(f"mkdir {self.lock_path} && echo {shlex.quote(line)} > {self.lock_path}/holder"),
                        check=False).strip()

    def lock_remove(self):
        self.run(self.shell(f"rm -rf {self.lock_path}", root=True), check=False)

    # a stale window's leftovers that clear_pending may discard (set when a stale lock was broken)
    stale_window = None

    @abc.abstractmethod
    def undo(self):
        """Recovery after any failure of the window, possibly on a new session.

        Whatever step failed (begin, push, commit, read-back, post-check,
        confirm) and whatever the session's state: discard uncommitted
        config, roll back an applied-but-unconfirmed change, remove the
        window's own pending state. Must be safe to run twice.
        """

    # LLDP: the command that prints the neighbour table and the parser of
    # module_utils/parsers/lldp.py that reads it (set by each platform)
    lldp_command = None
    lldp_parser = None

    def lldp_neighbors(self):
        """The switch's LLDP neighbour table (read-only): module_utils/parsers/lldp.py's
        ``{"neighbors": {port: [neighbour...]}, "ports": [...], "warnings": [...]}``."""
        return getattr(_lldp(), self.lldp_parser)(self.run(self.lldp_command))

    @abc.abstractmethod
    def oper(self, ports):
        """{port: {"up": bool, "pfc": [prio...], "ecn": bool}} read from the switch."""

    def pfcwd_storms(self, ports):
        """{port: {prio: {"detected": n, "stormed": bool or None}}} from the platform's PFC watchdog
        counters, or None where this driver cannot read them (the caller says so)."""
        return None

    def lossless(self, ports):
        """{port: {"headroom", "pfcwd", "storms", "missing"}} (read-only): the priorities with lossless
        headroom and those the PFC watchdog guards (from ``oper``; None where the platform's driver
        does not read them), the watchdog's storm counters per priority (``pfcwd_storms``; None where
        not read) and ``missing``, what is not read and so not proven."""
        oper = self.oper(ports)
        storms = self.pfcwd_storms(ports)
        res = {}
        for p in ports:
            st = oper.get(p)
            if st is None:
                continue
            head, wd = st.get("headroom"), st.get("pfcwd")
            s = None if storms is None else storms.get(p, {})
            res[p] = {"pfc": st.get("pfc"), "headroom": head, "pfcwd": wd, "storms": s,
                      "missing": [w for w, v in (("lossless headroom", head), ("PFC watchdog state", wd),
                                                 ("PFC watchdog storm counters", s)) if v is None]}
        return res


def _lldp():
    """The LLDP parsers (module_utils/parsers/lldp.py)."""
    try:
        from ansible_collections.linerate.fabric.plugins.module_utils.parsers import lldp
    except ImportError:  # standalone (tests, corpus checks)
        from parsers import lldp  # type: ignore
    return lldp


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _last_line(exc):
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def timestamp(now=None):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


# Seconds of the confirm timer that must be left when the window confirms: a confirm sent later may
# reach a switch whose own timer has already rolled the change back.
CONFIRM_MARGIN_S = 10
BACKUP_LABELS = LABELS
# what a switch port name may be on the three platforms (swp1, Ethernet0, Ethernet1/1, swp1s0, Port-Channel10)
PORT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_./:-]{0,63}")


def write_backup(backup_dir, switch, platform, text, stamp, label="window"):
    """Write the running config to <dir>/<switch>/<stamp>.<platform>.cfg, mode 0600, with its
    ``.sha256`` digest beside it: temporary file, fsync, atomic publish (module_utils/switch/backups.py).

    A restore's own backup (``label="restore"``) is
    ``<stamp>.before-restore.<platform>.cfg``: it never counts as a
    pre-window backup, so restoring ``latest`` twice cannot put back the
    config a restore replaced.
    """
    return _write_backup(backup_dir, switch, platform, text, stamp, label)


def oper_problems(oper, ports, want_pfc, want_ecn, require_up=True):
    """Post-check: every fabric port up, PFC exactly on the no-drop priority, ECN as intended, and (where
    the driver reads them: ``headroom``/``pfcwd`` in its oper) lossless headroom and the PFC watchdog on
    the no-drop priority."""
    problems = []
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
                problems.append(f"{p}: no lossless headroom for the no-drop priority {prio} (lossless priorities "
                                f"with headroom: {st.get('headroom')}): it drops under incast")
            if "pfcwd" in st and prio not in (st.get("pfcwd") or []):
                problems.append(f"{p}: PFC watchdog off on the no-drop priority {prio} (on: {st.get('pfcwd')}): a "
                                "pause storm would stall the fabric")
    return problems


def run_apply(driver, want_text=None, ports=(), check_mode=False, backup_dir=None,
              confirm_timeout=300, post_check=True, require_up=True, full=False,
              want_pfc=None, want_ecn=None, stamp=None, _nested=False, backup_label="window", force=False,
              redactor=None, lock=True):
    """The whole change on one switch. Returns the module result (a dict).

    ``full`` replaces the whole running config with ``want_text`` (restoring a
    backup); otherwise only the managed scope (QoS objects of the intent and
    the fabric ports) is compared and changed. A restore that would delete
    configuration outside the managed scope is refused unless ``force``; its
    result and errors have the config's secrets masked (:mod:`redact`).

    SIGINT and SIGTERM are handled for the whole call like any failure (see
    :class:`SignalGuard`): during the change they run the recovery, a second
    signal waits until the recovery has ended, and the error says the run was
    interrupted and where the switch is.

    One window per switch: before its first change the window takes the
    switch's lock (:class:`WindowLock`, naming user@controller, pid, run id
    and time; a copy in ``<backup_dir>/<switch>/`` on the controller) and
    releases it at the end, recovery included; a second window is refused
    with the holder's name before any change, check mode reports the lock.
    ``lock=False`` (recovery's own nested restore, which runs under the
    outer lock) skips it; a :class:`WindowLock` may be given (tests).
    """
    stamp = stamp or timestamp()
    args = (driver, want_text, ports, check_mode, backup_dir, confirm_timeout, post_check, require_up, full,
            want_pfc, want_ecn, stamp, _nested, backup_label, force)
    if _nested:   # recovery's own restore: the outer call holds the guard and the lock
        return _run_window(*args, progress={"step": "read", "changed": False}, guard=None, redactor=None)
    if lock is True:
        lock = WindowLock(driver, stamp, confirm_timeout,
                          os.path.join(backup_dir, driver.name) if backup_dir else None)
    wlock = lock or None
    if not full:
        redactor = None   # the window's results hold QoS only: left as they are
    elif redactor is None and driver.platform in ("nvue", "sonic", "eos"):
        redactor = Redactor(driver.platform)
    progress = {"step": "read", "changed": False}
    try:
        with SignalGuard() as guard:
            try:
                try:
                    result = _run_window(*args, progress=progress, guard=guard, redactor=redactor, wlock=wlock)
                except SwitchError as exc:
                    note = wlock.release() if wlock is not None else None
                    if note:
                        raise type(exc)(exc.switch, f"{exc.reason}; {note}", output=exc.output, command=exc.command,
                                        rolled_back=exc.rolled_back, changed=exc.changed) from exc.__cause__
                    raise
                except KeyboardInterrupt:
                    if wlock is not None and wlock.held:
                        driver.close()   # the interrupted command's answer may still come: a new session
                        guard.defer()
                        wlock.release()
                    raise
                note = wlock.release() if wlock is not None else None
                if note:
                    result.setdefault("warnings", []).append(note)
            except Interrupted as exc:   # outside the guarded change: before the first change
                guard.defer()
                raise SwitchError(
                    driver.name, f"interrupted by {exc.name} during {progress['step']}, before the first change: "
                    + ("pending state left by an earlier window was cleared, the running config was not changed"
                       if progress["changed"] else "the switch was not touched"),
                    rolled_back=False, changed=progress["changed"]) from None
            if guard.received:   # a signal after the confirm: the change is complete
                raise SwitchError(
                    driver.name, f"interrupted by {signal_name(guard.received[0])} after the change was confirmed: "
                    "the switch is at the intent with nothing pending", rolled_back=False,
                    changed=result["changed"])
    except SwitchError as exc:
        if exc.rolled_back is None:   # failed before the first change: the switch was not touched
            exc.rolled_back = False
        if redactor is not None:
            raise _redacted(exc, redactor) from exc.__cause__
        raise
    if redactor is not None:
        redactor.result(result)
    return result


def _redacted(exc, redactor):
    new = type(exc)(exc.switch, redactor.text(exc.reason), output=redactor.text(exc.output),
                    command=redactor.text(exc.command), rolled_back=exc.rolled_back, changed=exc.changed)
    return new


def signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM received while a window runs (a KeyboardInterrupt, so Ctrl-C code paths agree)."""

    def __init__(self, signum):
        self.signum = signum
        self.name = signal_name(signum)
        super().__init__(self.name)


class SignalGuard:
    """For the duration of a window: SIGINT and SIGTERM raise :class:`Interrupted` (SIGTERM would
    otherwise end the process with no recovery at all). After :meth:`defer` - the recovery, or once the
    change is confirmed - a signal is only recorded in ``received``. The previous handlers come back on
    exit. Outside the main thread (where Python delivers no signals) nothing is installed."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.previous = {}
        self.deferring = False
        self.received = []

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self.previous[s] = signal.signal(s, self._handler)
        return self

    def _handler(self, signum, frame):
        self.received.append(signum)
        if self.deferring:
            return
        self.deferring = True   # from here a second signal waits: the recovery must not be interrupted
        raise Interrupted(signum)

    def defer(self):
        self.deferring = True

    def __exit__(self, *exc):
        for s, h in self.previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        self.previous = {}
        return False


class WindowLock:
    """One window per switch (module_utils/switch/lock.py): the lock on the switch, and its copy on the
    controller in ``controller_dir`` (the switch's backup folder) when there is one.

    :meth:`take` is called at the first step that may change the switch (after the read, before the
    pending check; a restore before it clears anything) and refuses - naming the holder, before any
    change - while another live window holds it; a stale one is broken with a warning naming the old
    holder. :meth:`release` removes it only while it is still ours. :meth:`peek` (check mode) reads it.
    """

    def __init__(self, driver, run_id, confirm_timeout, controller_dir=None, now=None, alive=_lock.pid_alive):
        self.driver = driver
        self.me = _lock.Holder.me(run_id, now=now)
        self.confirm_timeout = confirm_timeout
        self.controller = _lock.ControllerLock(controller_dir) if controller_dir else None
        self.now = now
        self.alive = alive
        self.held = False
        self.warnings = []

    def _refuse(self, who, where):
        return SwitchError(
            self.driver.name, f"another change window holds this switch: {who} ({where}); nothing is sent. It "
            f"ends with that window; a lock older than the confirm timer plus {_lock.LOCK_MARGIN_S} s, or whose "
            "process is gone from its controller, is broken by the next window", rolled_back=False)

    def _describe(self, line):
        h = _lock.Holder.parse(line)
        return h.describe() if h else (repr(line) if line else "a holder that wrote no name yet")

    def take(self):
        if self.held:
            return
        d = self.driver
        if self.controller is not None:
            try:
                other = self.controller.acquire(self.me, self.confirm_timeout, self.now, self.alive)
            except OSError as err:   # the backup directory is not a directory, read-only, full
                raise SwitchError(d.name, f"lock {self.controller.path}: cannot be written "
                                          f"({err.strerror or err}); the change window stops before any change, "
                                          "nothing is sent", rolled_back=False, changed=False) from err
            if other is not None:
                raise self._refuse(self._describe(other), f"lock {self.controller.path} on this controller")
            if self.controller.broken:
                old, why = self.controller.broken
                self.warnings.append(f"broke the stale controller lock of {old.describe()}: {why}")
        try:
            for attempt in range(2):
                answer = d.lock_take(self.me.line())
                if not answer:
                    self.held = True
                    return
                if "File exists" not in answer:
                    raise SwitchError(d.name, f"could not create the window lock {d.lock_path} on the switch: "
                                              f"{answer.splitlines()[0]}; nothing is sent", rolled_back=False)
                line = d.lock_holder()
                other = _lock.Holder.parse(line)
                why = _lock.stale(other, self.confirm_timeout, self.me, self.now, self.alive) if other else None
                if why is None or attempt:
                    if other is None and line:
                        raise SwitchError(d.name, f"the window lock {d.lock_path} on the switch names no linerate "
                                                  f"holder ({line[:120]!r}); nothing is sent. Remove it by hand "
                                                  f"(rm -rf {d.lock_path}) once no change is under way",
                                          rolled_back=False)
                    raise self._refuse(self._describe(line), f"lock {d.lock_path} on the switch")
                self.warnings.append(f"broke the stale window lock {d.lock_path} of {other.describe()}: {why}")
                d.stale_window = other
                d.lock_remove()
        except BaseException:
            if self.controller is not None:
                self.controller.release()
            raise

    def peek(self):
        """Check mode: the holder of another window, as a warning (nothing is taken or changed)."""
        line = self.driver.lock_holder()
        if line:
            self.warnings.append(f"the switch is locked by another change window: {self._describe(line)} "
                                 f"({self.driver.lock_path}); a real run now would be refused")
        return line

    def release(self):
        """Remove the lock while it is ours: a note when it could not be (never raises a SwitchError)."""
        if not self.held:
            return None
        self.held = False
        d = self.driver
        note = None
        try:
            line = d.lock_holder()
            if line in ("", self.me.line()):
                d.lock_remove()
            else:
                note = (f"the window lock {d.lock_path} was taken over by {self._describe(line)} (ours was broken "
                        "as stale): left as it is")
        except SwitchError as exc:
            note = (f"could not remove the window lock {d.lock_path} on the switch ({exc.reason}): remove it by "
                    f"hand (rm -rf {d.lock_path}) - the next window breaks it once its process is gone")
        if self.controller is not None:
            self.controller.release()
        return note


def managed_scope(driver, want, ports):
    """The managed scope of a parsed intent on ``ports``; a port name or an intent outside it is refused
    (SwitchError) before anything is sent."""
    bad_ports = [p for p in ports if not isinstance(p, str) or not PORT_NAME.fullmatch(p)]
    if bad_ports:
        raise SwitchError(driver.name, f"fabric port name(s) {bad_ports!r} refused: allowed are letters, "
                                       "digits and _ . / : - (at most 64), nothing is sent", rolled_back=False)
    scope = driver.managed_scope(want, ports)
    outside = driver.out_of_scope(want, scope, ports)
    if outside:
        raise SwitchError(driver.name, "refusing config outside the managed scope (QoS, PFC, ECN, MTU and "
                                       f"speed of the fabric ports {', '.join(ports) or '(none)'} and uplinks), "
                                       "nothing is sent: " + "; ".join(outside[:10])
                                       + (f" (and {len(outside) - 10} more)" if len(outside) > 10 else ""),
                          rolled_back=False)
    return scope


def delta(driver, want_text, ports, running):
    """The commands that would take ``running`` to the intent ``want_text`` on ``ports`` (read-only)."""
    want = driver.parse(want_text)
    return driver.commands(want, driver.parse(running), managed_scope(driver, want, ports))


# data ports of each platform: a restore's managed scope covers the QoS, MTU and speed settings of all of
# them (not only the fabric ports, which a rollback does not derive); management ports (eth0, Management1,
# MGMT_INTERFACE) never match
DATA_PORT = {"nvue": re.compile(r"swp\d+(s\d+)?"), "sonic": re.compile(r"Ethernet\d+"),
             "eos": re.compile(r"Ethernet\d+(/\d+)*")}


def restore_deletions(driver, want, have):
    """What restoring ``want`` over ``have`` would delete outside the managed scope, in the platform's words.

    The managed scope is the platform's own (QoS objects named after the
    profile; QoS, PFC, ECN, MTU and speed of the data ports), so a restore
    may put back any QoS change but not silently delete a hostname, a
    management address, device metadata, a user or an SNMP/AAA setting that
    was added after the backup. Values changed outside the scope are not
    deletions (the backup's value is restored).
    """
    platform = driver.platform
    pat = DATA_PORT.get(platform)
    out = []
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

        def walk(w, h, path):
            for key, (line, children) in h.items():
                if key in w:
                    walk(w[key][1], children, path + (line,))
                elif not path and key.startswith("interface Ethernet"):
                    continue   # a physical interface is never removed (eos_commands)
                elif not scope(path, key):
                    out.append(" / ".join(path + (line,)))
        walk(want, have, ())
    return out


class ConfigMoved(SwitchError):
    """The running config changed between the window's first read and its begin: another change landed."""


def _run_window(driver, want_text, ports, check_mode, backup_dir, confirm_timeout, post_check,
                require_up, full, want_pfc, want_ecn, stamp, _nested, backup_label, force, progress, guard,
                redactor, wlock=None):
    cleared = []
    warnings = wlock.warnings if wlock is not None else []
    want = driver.parse(want_text)
    scope = driver.full_scope() if full else managed_scope(driver, want, ports)
    running = None
    if full and not _nested:
        # a restore reads first and refuses, before anything is sent, to delete what it does not manage
        running = driver.get_running()
        outside = restore_deletions(driver, want, driver.parse(running))
        if redactor is not None:   # each item masked on its own, before they are joined
            outside = redactor.lines(outside)
        if outside and not force:
            raise SwitchError(driver.name, f"restoring this backup would delete {len(outside)} setting(s) outside "
                                           "the managed scope (QoS, PFC, ECN, MTU and speed of the data ports): "
                              + "; ".join(outside[:10]) + (f" (and {len(outside) - 10} more)" if len(outside) > 10
                                                           else "")
                              + "; nothing is sent. If that is intended, restore with "
                                "switch_fabric_restore_force=true", rolled_back=False)
        if outside:
            warnings.append(f"forced: the restore deletes {len(outside)} setting(s) outside the managed scope: "
                            + "; ".join(outside))
        if not check_mode:
            if wlock is not None:   # the restore changes the switch from here: one window at a time
                progress["step"] = "lock"
                wlock.take()
            # an emergency restore first discards what a failed window left pending
            progress["step"] = "clear-pending"
            cleared = driver.clear_pending(want_text)
            progress["changed"] = bool(cleared)
            if cleared:
                running = None
            progress["step"] = "read"
    if running is None:
        running = driver.get_running()
    have = driver.parse(running)
    cmds = driver.commands(want, have, scope)
    result = {
        "changed": False, "commands": cmds, "before": driver.view(have, scope),
        "after": driver.view(have, scope), "backup_path": None, "rolled_back": False,
        "diff": {"before": driver.view(have, scope), "after": driver.view(want, scope),
                 "before_header": f"{driver.name} (running)", "after_header": f"{driver.name} (intent)"},
    }
    if warnings:
        result["warnings"] = warnings
    if cleared:
        result["changed"] = True
        result["cleared"] = cleared
    if not cmds:
        if full and not check_mode:
            pend = driver.pending()
            if pend:
                raise SwitchError(driver.name, "the running config matches the backup but configuration is still "
                                               "pending: " + "; ".join(pend), rolled_back=False,
                                  changed=bool(cleared))
        return result
    if check_mode:
        if wlock is not None:
            wlock.peek()
            if warnings:
                result["warnings"] = warnings
        result["changed"] = True
        result["after"] = driver.view(want, scope)
        return result
    if wlock is not None:
        progress["step"] = "lock"
        wlock.take()
        if warnings:
            result["warnings"] = warnings
    progress["step"] = "pending-check"
    pend = driver.pending()
    if pend:
        raise SwitchError(driver.name, "uncommitted configuration is pending, refusing to push: "
                                       + "; ".join(pend), rolled_back=False, changed=bool(cleared))
    if backup_dir:
        progress["step"] = "backup"
        try:
            result["backup_path"] = write_backup(backup_dir, driver.name, driver.platform, running, stamp,
                                                 backup_label)
        except BackupError as exc:   # a full disk, a read-only directory: stop before any change
            raise SwitchError(driver.name, f"{exc}; the change window stops before any change, nothing is sent",
                              rolled_back=False, changed=bool(cleared)) from exc
    step = progress["step"] = "begin"
    pushed = False
    try:
        begun_at = time.monotonic() if driver.timer_at_begin else None
        driver.window_timeout = confirm_timeout
        driver.begin(stamp)
        # under the lock, after begin: has another change landed since the first read?
        step = progress["step"] = "re-read"
        if driver.get_running() != running:
            raise ConfigMoved(driver.name, "the running config changed between the first read and the begin of the "
                                           "window: another change landed in between")
        step = progress["step"] = "push"
        pushed = True
        driver.push(cmds)
        step = progress["step"] = "commit"
        committed_at = begun_at if driver.timer_at_begin else time.monotonic()
        driver.commit(confirm_timeout)
        step = progress["step"] = "read-back"
        after_text = driver.get_running()
        after = driver.parse(after_text)
        left = driver.commands(want, after, scope)
        problems = []
        if left:
            problems.append("config not at intent after push, still to do: " + "; ".join(left))
        if post_check and not full and ports:
            step = progress["step"] = "post-check"
            problems += oper_problems(driver.oper(ports), ports, want_pfc, want_ecn, require_up)
        if problems:
            raise SwitchError(driver.name, "; ".join(problems))
        step = progress["step"] = "confirm"
        used = time.monotonic() - committed_at
        result["confirm_timer_used_s"] = round(used, 1)
        if driver.confirm_timer and confirm_timeout and used > confirm_timeout - CONFIRM_MARGIN_S:
            raise SwitchError(driver.name, f"the read-back and post-checks used {used:.0f} s of the "
                                           f"{int(confirm_timeout)} s confirm timer (less than {CONFIRM_MARGIN_S} s "
                                           "left): the switch may be rolling back on its own, so the change is not "
                                           "confirmed; raise confirm_timeout")
        driver.confirm()
        if guard is not None:
            guard.defer()   # confirmed: a signal from here on cannot undo it, it is reported after
        progress["step"] = "done"
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every failure after the backup ends at the backup
        if guard is not None:
            guard.defer()   # a second signal waits until the recovery has ended
        interrupted = isinstance(exc, KeyboardInterrupt)
        if interrupted:
            # the interrupted command's answer may still be on its way: recover on a new session
            driver.close()
            name = exc.name if isinstance(exc, Interrupted) else "SIGINT (KeyboardInterrupt)"
            what = f"interrupted by {name} during {step}"
        else:
            reason = exc.reason if isinstance(exc, SwitchError) else f"{type(exc).__name__}: {exc}"
            what = f"{step} failed: {reason}"
        seen = len(guard.received) if guard is not None else 0
        if not pushed:
            # nothing of ours reached the config: drop what begin made, and never restore over a change
            # someone else made meanwhile
            restored, how = discard(driver, running)
            if isinstance(exc, ConfigMoved):
                raise ConfigMoved(driver.name, exc.reason + "; nothing was sent" + (
                    ", the window's own checkpoint/session/timer removed" if restored or how == "moved" else
                    "; removing what begin made failed: " + how) + ". Run again to compute the change against the "
                    "new config", rolled_back=False, changed=False) from None
            if how == "moved":
                how = "the running config was changed by someone else meanwhile: left as it is"
        else:
            restored, how = recover(driver, running, _nested)
        late = guard.received[seen:] if guard is not None else []
        raise SwitchError(
            driver.name,
            what + "; " + (
                "rolled back: the running config is byte-identical to the pre-window backup and nothing is "
                "pending" if restored else "ROLLBACK INCOMPLETE, the switch may be modified: " + how)
            + (f" (backup {result['backup_path']})" if result["backup_path"] else "")
            + (f"; {signal_name(late[0])} received during the recovery was held until it ended" if late else ""),
            output=getattr(exc, "output", None), command=getattr(exc, "command", None),
            rolled_back=restored, changed=not restored and (pushed or "someone else" not in how)) \
            from (None if interrupted else exc)
    result["changed"] = True
    result["after"] = driver.view(after, scope)
    return result


def discard(driver, backup_text):
    """A window stopped before its first push: :meth:`Driver.discard`, then read back. (restored, why not);
    why is ``"moved"`` when the running config differs from the first read (someone else's change: left)."""
    try:
        driver.discard()
        text = driver.get_running()
        pend = driver.pending()
    except SwitchError as exc:
        return False, exc.reason
    if text != backup_text:
        return False, "moved"
    if pend:
        return False, "still pending: " + "; ".join(pend)
    return True, ""


def recover(driver, backup_text, nested=False, attempts=2):
    """Bring the switch back to ``backup_text`` with nothing pending: (restored, why not).

    The platform's :meth:`Driver.undo` first (on a new session when the old
    one dropped or hung); when the running config still differs (a change
    already confirmed), the backup is restored in full through the same
    guarded window. Success is judged by reading back: byte-identical
    running config and no pending revision, session or checkpoint.
    """
    notes = []
    for _attempt in range(attempts):
        try:
            driver.undo()
            text = driver.get_running()
            if text != backup_text and not nested:
                notes.append("undo left the running config different from the backup; restoring it in full")
                run_apply(driver, backup_text, full=True, backup_dir=None, post_check=False, _nested=True)
                text = driver.get_running()
            pend = driver.pending()
        except SwitchError as exc:
            notes.append(exc.reason)
            continue
        if text == backup_text and not pend:
            return True, ""
        if text != backup_text:
            notes.append("running config differs from the backup")
        if pend:
            notes.append("still pending: " + "; ".join(pend))
    return False, "; ".join(notes) or "unknown"
