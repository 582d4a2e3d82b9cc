"""One change window per switch: who holds it, when a hold is stale, and its mirror on the controller.

The lock itself lives on the switch (see ``Driver.lock_take`` in base.py):
a directory created with ``mkdir`` in the switch's Linux shell - ``mkdir``
is atomic, of two racing windows exactly one creates it and the other gets
EEXIST ("File exists") - holding one file, ``holder``, with one line:

    linerate <user>@<host> machine=<machine id> pid=<pid> start=<ticks> run=<run id> time=<UTC stamp>

The holder is unique: the controller's ``/etc/machine-id`` (two controllers
with one short hostname differ there), the module's pid and that process's
start time (``/proc/<pid>/stat`` field 22, clock ticks since boot: a pid the
kernel reused does not match). Any administrator sees it with ``cat
<lock>/holder``. A copy of the same line is kept on the controller
(``<backup_dir>/<switch>/linerate.lock``, created with O_EXCL, mode 0600).

When a window finds the lock held (:func:`verdict`):

- a holder line linerate wrote is broken, with a warning naming the old
  holder, only when no confirm timer of that holder's window still runs on
  the switch (an NVUE revision awaiting confirmation, an EOS session on its
  commit timer, a SONiC dead-man timer waiting: the switch ends that window
  by itself) and either the lock is older, **by the switch's own clock** (the
  lock directory's mtime against ``date +%s`` on the switch), than the confirm
  timer plus :data:`LOCK_MARGIN_S`, or its holder ran on this very machine
  (same machine id) and that process (pid and start time) is gone;
- an empty lock (a directory with no holder line: a window cut off between
  ``mkdir`` and writing its name, before it changed anything) is broken once
  it is older than :data:`EMPTY_GRACE_S` by the switch's clock, refused while
  younger (another window is taking it this very moment);
- text linerate did not write is never broken: the refusal quotes it and
  says how to remove it by hand.

Stdlib only.
"""

from __future__ import annotations

import datetime
import getpass
import os
import re
import socket
import time
from typing import Any, Callable, Iterable, Optional, Union

# How much longer than the confirm timer a window may hold the lock (reads, backup, push, post-checks).
LOCK_MARGIN_S = 600
# How long an empty lock (no holder line yet) is taken to be a window taking it right now.
EMPTY_GRACE_S = 60
LINE = re.compile(
    r"^linerate (?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9._-]+)"
    r"(?: machine=(?P<machine>[0-9a-f]{32}|unknown))? pid=(?P<pid>\d+)(?: start=(?P<start>\d+))? "
    r"run=(?P<run>[A-Za-z0-9._-]+) time=(?P<time>\d{8}T\d{6}Z)$"
)
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def _safe(text: Any) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(text or ""))[:64] or "unknown"


def machine_id(paths: Iterable[str] = MACHINE_ID_FILES) -> Optional[str]:
    """This machine's id (systemd machine-id(5): 32 lowercase hex digits), or None when it has none."""
    for path in paths:
        try:
            with open(path, encoding="ascii") as f:
                text = f.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if re.fullmatch(r"[0-9a-f]{32}", text):
            return text
    return None


def start_time(pid: Union[int, str]) -> Optional[int]:
    """The start time of process ``pid`` in clock ticks since boot (proc(5) /proc/<pid>/stat field 22), or
    None when no such process runs."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: count from the last ")"
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


class Holder:
    """Who holds (or asks for) the window: user@host, machine id, pid and its start time, run id, time."""

    def __init__(
        self, user: Any, host: Any, pid: Union[int, str], run: Any, when: float, machine: Optional[str] = None, start: Union[int, str, None] = None
    ) -> None:
        self.user, self.host, self.pid, self.run, self.when = _safe(user), _safe(host), int(pid), _safe(run), int(when)
        self.machine = machine if machine and machine != "unknown" else None
        self.start = int(start) if start is not None else None

    @classmethod
    def me(cls, run: str, now: Optional[float] = None) -> Holder:
        try:
            user = getpass.getuser()
        except Exception:  # noqa: BLE001 - no passwd entry for the uid (containers)
            user = f"uid{os.getuid()}"
        pid = os.getpid()
        return cls(user, socket.gethostname().split(".")[0], pid, run, now if now is not None else time.time(), machine=machine_id(), start=start_time(pid))

    @classmethod
    def parse(cls, line: Optional[str]) -> Optional[Holder]:
        """The holder a lock file names, or None when the line is not one linerate wrote."""
        m = LINE.match((line or "").strip())
        if not m:
            return None
        when = datetime.datetime.strptime(m.group("time"), "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        return cls(m.group("user"), m.group("host"), m.group("pid"), m.group("run"), when.timestamp(), machine=m.group("machine"), start=m.group("start"))

    def stamp(self) -> str:
        return datetime.datetime.fromtimestamp(self.when, datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")

    def line(self) -> str:
        start = f" start={self.start}" if self.start is not None else ""
        return f"linerate {self.user}@{self.host} machine={self.machine or 'unknown'} pid={self.pid}{start} run={self.run} time={self.stamp()}"

    def describe(self) -> str:
        where = f"machine {self.machine[:12]}, " if self.machine else ""
        return f"{self.user}@{self.host} ({where}pid {self.pid}, run {self.run}, since {self.stamp()})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Holder) and self.line() == other.line()

    def __hash__(self) -> int:
        return hash(self.line())


def pid_alive(pid: Union[int, str], start: Optional[int] = None) -> bool:
    """Whether process ``pid`` runs here - and, when ``start`` is given, is the process that started then
    (not a later one the kernel gave the same pid)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        pass
    return start is None or start_time(pid) in (None, start)


def stale(holder: Holder, confirm_timeout: Any, me: Holder, age_s: Optional[float], alive: Callable[[int, Optional[int]], bool] = pid_alive) -> Optional[str]:
    """Why ``holder``'s lock may be broken by ``me`` (a sentence), or None while it is live.

    ``age_s`` is the lock's age by the clock of the machine it lives on (the switch's for the switch's
    lock). A holder's process counts as gone only when it ran on this very machine (same machine id)."""
    limit = int(confirm_timeout or 0) + LOCK_MARGIN_S
    if age_s is not None and age_s > limit:
        return f"it was taken {int(age_s)} s ago, longer than the confirm timer ({int(confirm_timeout or 0)} s) plus {LOCK_MARGIN_S} s"
    if holder.machine and holder.machine == me.machine and (holder.pid, holder.start) != (me.pid, me.start) and not alive(holder.pid, holder.start):
        return f"its process {holder.pid} no longer runs on this controller ({me.host}, machine {(me.machine or '')[:12]})"
    return None


class ControllerLock:
    """The controller's copy: ``<dir>/linerate.lock`` (O_EXCL, 0600) holding the holder's line."""

    NAME = "linerate.lock"

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, self.NAME)
        self.held: Optional[Holder] = None
        self.broken: Optional[tuple[Optional[Holder], str]] = None

    def read(self) -> Optional[str]:
        try:
            with open(self.path, encoding="utf-8") as f:
                return f.read().strip()
        except FileNotFoundError:
            return None

    def acquire(self, me: Holder, confirm_timeout: Any, now: Optional[float] = None, alive: Callable[[int, Optional[int]], bool] = pid_alive) -> Optional[str]:
        """Take it: None, or (held by a live holder) the holder's line; a stale copy is replaced and
        ``self.broken`` names it."""
        self.broken = None
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        for _attempt in range(2):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                text = self.read()
                if text is None:
                    continue  # released between the open and the read
                if not text:  # created, its line not written yet (or a window cut off right there)
                    age = self.age(now)
                    if age is None:
                        continue  # released meanwhile
                    if age <= EMPTY_GRACE_S:
                        return "(an empty lock file: another window is taking it)"
                    self.broken = (None, f"it is empty and {int(age)} s old (more than {EMPTY_GRACE_S} s): a window cut off while taking it")
                    self._unlink()
                    continue
                other = Holder.parse(text)
                age = (time.time() if now is None else now) - other.when if other else None
                why = stale(other, confirm_timeout, me, age, alive) if other else None
                if other is None or why is None:
                    return text or "(an empty lock file)"
                self.broken = (other, why)
                self._unlink()
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(me.line() + "\n")
            self.held = me
            return None
        return self.read() or "(another window, racing for it)"

    def age(self, now: Optional[float] = None) -> Optional[float]:
        """Seconds since the copy was last written, by this controller's clock (None when it is gone)."""
        try:
            return (time.time() if now is None else now) - os.stat(self.path).st_mtime
        except FileNotFoundError:
            return None

    def _unlink(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def release(self) -> None:
        """Remove the copy when it is still ours."""
        if self.held is not None and self.read() == self.held.line():
            os.unlink(self.path)
        self.held = None
