"""One change window per switch: who holds it, when a hold is stale, and its mirror on the controller.

The lock itself lives on the switch (see ``Driver.lock_take`` in base.py):
a directory created with ``mkdir`` in the switch's Linux shell - ``mkdir``
is atomic, of two racing windows exactly one creates it and the other gets
EEXIST ("File exists") - holding one file, ``holder``, with one line:

    linerate <user>@<controller-host> pid=<pid> run=<run id> time=<UTC stamp>

Any administrator sees it with ``cat <lock>/holder``. A copy of the same
line is kept on the controller (``<backup_dir>/<switch>/linerate.lock``,
created with O_EXCL, mode 0600), so an operator on the controller sees it
too.

A hold is stale, and is broken with a warning naming the old holder, when
it is older than the confirm timer plus :data:`LOCK_MARGIN_S` (no window
lasts that long: the switch's own timer has ended the change by then), or
when its holder ran on this controller and its process is gone (a window
killed outright). Stdlib only.
"""
import datetime
import getpass
import os
import re
import socket
import time

# How much longer than the confirm timer a window may hold the lock (reads, backup, push, post-checks).
LOCK_MARGIN_S = 600
LINE = re.compile(r"^linerate (?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9._-]+) pid=(?P<pid>\d+) "
                  r"run=(?P<run>[A-Za-z0-9._-]+) time=(?P<time>\d{8}T\d{6}Z)$")


def _safe(text):
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(text or ""))[:64] or "unknown"


class Holder:
    """Who holds (or asks for) the window: user@host, pid, run id, time (epoch seconds)."""

    def __init__(self, user, host, pid, run, when):
        self.user, self.host, self.pid, self.run, self.when = _safe(user), _safe(host), int(pid), _safe(run), int(when)

    @classmethod
    def me(cls, run, now=None):
        try:
            user = getpass.getuser()
        except Exception:  # noqa: BLE001 - no passwd entry for the uid (containers)
            user = f"uid{os.getuid()}"
        return cls(user, socket.gethostname().split(".")[0], os.getpid(), run, now if now is not None else time.time())

    @classmethod
    def parse(cls, line):
        """The holder a lock file names, or None when the line is not one linerate wrote."""
        m = LINE.match((line or "").strip())
        if not m:
            return None
        when = datetime.datetime.strptime(m.group("time"), "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        return cls(m.group("user"), m.group("host"), m.group("pid"), m.group("run"), when.timestamp())

    def stamp(self):
        return datetime.datetime.fromtimestamp(self.when, datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")

    def line(self):
        return f"linerate {self.user}@{self.host} pid={self.pid} run={self.run} time={self.stamp()}"

    def describe(self):
        return f"{self.user}@{self.host} (pid {self.pid}, run {self.run}, since {self.stamp()})"

    def __eq__(self, other):
        return isinstance(other, Holder) and self.line() == other.line()

    def __hash__(self):
        return hash(self.line())


def pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process: it runs
        return True
    return True


def stale(holder, confirm_timeout, me, now=None, alive=pid_alive):
    """Why ``holder``'s lock may be broken by ``me`` (a sentence), or None while it is live."""
    now = time.time() if now is None else now
    limit = int(confirm_timeout or 0) + LOCK_MARGIN_S
    age = int(now - holder.when)
    if age > limit:
        return (f"it was taken {age} s ago, longer than the confirm timer ({int(confirm_timeout or 0)} s) plus "
                f"{LOCK_MARGIN_S} s")
    if holder.host == me.host and holder.pid != me.pid and not alive(holder.pid):
        return f"its process {holder.pid} no longer runs on this controller ({me.host})"
    return None


class ControllerLock:
    """The controller's copy: ``<dir>/linerate.lock`` (O_EXCL, 0600) holding the holder's line."""

    NAME = "linerate.lock"

    def __init__(self, directory):
        self.path = os.path.join(directory, self.NAME)
        self.held = None

    def read(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                return f.read().strip()
        except FileNotFoundError:
            return None

    def acquire(self, me, confirm_timeout, now=None, alive=pid_alive):
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
                    continue   # released between the open and the read
                other = Holder.parse(text)
                why = stale(other, confirm_timeout, me, now, alive) if other else None
                if other is None or why is None:
                    return text or "(an empty lock file)"
                self.broken = (other, why)
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(me.line() + "\n")
            self.held = me
            return None
        return self.read() or "(another window, racing for it)"

    def release(self):
        """Remove the copy when it is still ours."""
        if self.held is not None and self.read() == self.held.line():
            os.unlink(self.path)
        self.held = None
