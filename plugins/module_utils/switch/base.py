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
    # regexes that mark a command's output as rejected, in the platform's words
    error_patterns = ()

    def __init__(self, name, host=None, port=22, username=None, password=None,
                 key_file=None, known_hosts=None, host_key_checking=True,
                 connect_timeout=10, command_timeout=30, profile="linerate", ssh_config_file=None):
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

    @abc.abstractmethod
    def undo(self):
        """Recovery after any failure of the window, possibly on a new session.

        Whatever step failed (begin, push, commit, read-back, post-check,
        confirm) and whatever the session's state: discard uncommitted
        config, roll back an applied-but-unconfirmed change, remove the
        window's own pending state. Must be safe to run twice.
        """

    # LLDP: the command that prints the neighbour table and the parser of
    # module_utils/lldp.py that reads it (set by each platform)
    lldp_command = None
    lldp_parser = None

    def lldp_neighbors(self):
        """The switch's LLDP neighbour table (read-only): module_utils/lldp.py's
        ``{"neighbors": {port: [neighbour...]}, "ports": [...], "warnings": [...]}``."""
        return getattr(_lldp(), self.lldp_parser)(self.run(self.lldp_command))

    @abc.abstractmethod
    def oper(self, ports):
        """{port: {"up": bool, "pfc": [prio...], "ecn": bool}} read from the switch."""


def _lldp():
    """The LLDP parsers (module_utils/lldp.py)."""
    try:
        from ansible_collections.linerate.fabric.plugins.module_utils import lldp
    except ImportError:  # standalone (tests, corpus checks)
        import lldp  # type: ignore
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


BACKUP_LABELS = ("window", "restore")
# what a switch port name may be on the three platforms (swp1, Ethernet0, Ethernet1/1, swp1s0, Port-Channel10)
PORT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_./:-]{0,63}")


def write_backup(backup_dir, switch, platform, text, stamp, label="window"):
    """Write the running config to <dir>/<switch>/<stamp>.<platform>.cfg, mode 0600.

    A restore's own backup (``label="restore"``) is
    ``<stamp>.before-restore.<platform>.cfg``: it never counts as a
    pre-window backup, so restoring ``latest`` twice cannot put back the
    config a restore replaced.
    """
    if label not in BACKUP_LABELS:
        raise ValueError(f"backup label {label!r} (allowed: {', '.join(BACKUP_LABELS)})")
    mid = ".before-restore" if label == "restore" else ""
    d = os.path.join(os.path.expanduser(backup_dir), switch)
    os.makedirs(d, mode=0o700, exist_ok=True)
    n = 0
    while True:
        path = os.path.join(d, f"{stamp}{'-%d' % n if n else ''}{mid}.{platform}.cfg")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:  # two changes within one second: never overwrite a backup
            n += 1
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def oper_problems(oper, ports, want_pfc, want_ecn, require_up=True):
    """Post-check: every fabric port up, PFC exactly on the no-drop priority, ECN as intended."""
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
    return problems


def run_apply(driver, want_text=None, ports=(), check_mode=False, backup_dir=None,
              confirm_timeout=300, post_check=True, require_up=True, full=False,
              want_pfc=None, want_ecn=None, stamp=None, _nested=False, backup_label="window"):
    """The whole change on one switch. Returns the module result (a dict).

    ``full`` replaces the whole running config with ``want_text`` (restoring a
    backup); otherwise only the managed scope (QoS objects of the intent and
    the fabric ports) is compared and changed.
    """
    try:
        return _run_window(driver, want_text, ports, check_mode, backup_dir, confirm_timeout, post_check,
                           require_up, full, want_pfc, want_ecn, stamp or timestamp(), _nested, backup_label)
    except SwitchError as exc:
        if exc.rolled_back is None:   # failed before the first change: the switch was not touched
            exc.rolled_back = False
        raise


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


def _run_window(driver, want_text, ports, check_mode, backup_dir, confirm_timeout, post_check,
                require_up, full, want_pfc, want_ecn, stamp, _nested, backup_label):
    cleared = []
    want = driver.parse(want_text)
    scope = driver.full_scope() if full else managed_scope(driver, want, ports)
    if full and not check_mode and not _nested:
        # an emergency restore first discards what a failed window left pending
        cleared = driver.clear_pending(want_text)
    running = driver.get_running()
    have = driver.parse(running)
    cmds = driver.commands(want, have, scope)
    result = {
        "changed": False, "commands": cmds, "before": driver.view(have, scope),
        "after": driver.view(have, scope), "backup_path": None, "rolled_back": False,
        "diff": {"before": driver.view(have, scope), "after": driver.view(want, scope),
                 "before_header": f"{driver.name} (running)", "after_header": f"{driver.name} (intent)"},
    }
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
        result["changed"] = True
        result["after"] = driver.view(want, scope)
        return result
    pend = driver.pending()
    if pend:
        raise SwitchError(driver.name, "uncommitted configuration is pending, refusing to push: "
                                       + "; ".join(pend), rolled_back=False)
    if backup_dir:
        result["backup_path"] = write_backup(backup_dir, driver.name, driver.platform, running, stamp,
                                             backup_label)
    step = "begin"
    try:
        driver.begin(stamp)
        step = "push"
        driver.push(cmds)
        step = "commit"
        driver.commit(confirm_timeout)
        step = "read-back"
        after_text = driver.get_running()
        after = driver.parse(after_text)
        left = driver.commands(want, after, scope)
        problems = []
        if left:
            problems.append("config not at intent after push, still to do: " + "; ".join(left))
        if post_check and not full and ports:
            step = "post-check"
            problems += oper_problems(driver.oper(ports), ports, want_pfc, want_ecn, require_up)
        if problems:
            raise SwitchError(driver.name, "; ".join(problems))
        step = "confirm"
        driver.confirm()
    except Exception as exc:  # noqa: BLE001 - every failure after the backup ends at the backup
        reason = exc.reason if isinstance(exc, SwitchError) else f"{type(exc).__name__}: {exc}"
        restored, how = recover(driver, running, _nested)
        raise SwitchError(
            driver.name,
            f"{step} failed: {reason}; " + (
                "rolled back: the running config is byte-identical to the pre-window backup and nothing is "
                "pending" if restored else "ROLLBACK INCOMPLETE, the switch may be modified: " + how)
            + (f" (backup {result['backup_path']})" if result["backup_path"] else ""),
            output=getattr(exc, "output", None), command=getattr(exc, "command", None),
            rolled_back=restored, changed=not restored) from exc
    result["changed"] = True
    result["after"] = driver.view(after, scope)
    return result


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
