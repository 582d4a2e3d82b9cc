"""The journal of in-flight change windows, and the watch on the controller that runs them.

Journal: ``<backup_dir>/<switch>/window.json`` (backup_dir is under
``linerate_output_dir``), written atomically (temporary file, fsync, rename,
mode 0600) after the window's backup and **before its first change**: the
switch, its platform, the run id, the module's pid, machine id and start
time, the backup and the confirm timer. When Ansible gets the window's
result (success or a failure it prints) the entry is removed. When the
window was cut off - SIGINT or SIGTERM, or its controller killed - the
module writes the outcome it reached (rolled back, confirmed, incomplete)
into the entry and leaves it; when the module itself was killed outright
(no outcome) the entry still says which window was in flight. The next run's
pre-check (switch_info with ``backup_dir``) reads the entry and the switch,
reports both before anything is changed, and removes the entry once the
switch is at its backup (or at the confirmed change) with nothing pending.

Controller watch: Ansible's workers call ``setsid``, so SIGKILL of
ansible-playbook's process group never reaches the module: left alone it
would go on and confirm a change nobody watches. :func:`watch_controller`
waits (``pidfd_open`` + ``select``: an event, not a poll) for the
ansible-playbook process - the module's first ancestor outside its own
session - to end, then sends the module SIGTERM with that cause, so the
window recovers as for any cancel. Stdlib only.
"""

from __future__ import annotations

import json
import os
import select
import signal
import threading
import time
from typing import Any, Callable

NAME = "window.json"
# set by the window_outcome callback in ansible-playbook's own process (inherited by the modules): where a
# module names its journal entry, so that on SIGINT or SIGTERM the controller prints each window's outcome
RUNDIR_ENV = "LINERATE_WINDOW_RUNDIR"
# how long past its confirm timer the controller waits for a cut-off window's outcome
OUTCOME_MARGIN_S = 60
# set by the controller watch before it sends SIGTERM: the window names this instead of "SIGTERM"
CAUSE: dict[str, str] = {}


def journal_path(backup_dir: str, switch: str) -> str:
    return os.path.join(backup_dir, switch, NAME)


def write(path: str, entry: dict[str, Any]) -> None:
    """Publish ``entry`` at ``path`` atomically (0600), the folder created 0700."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(entry, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read(path: str) -> dict[str, Any] | None:
    """The entry at ``path``, None when there is none; an unreadable entry is named as such."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    try:
        entry = json.loads(text)
    except ValueError:
        return {"unreadable": text[:200]}
    return entry if isinstance(entry, dict) else {"unreadable": text[:200]}


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class Journal:
    """One window's entry: :meth:`begin` before the first change, :meth:`step` as it moves on,
    :meth:`outcome` when it was cut off, :meth:`done` when Ansible gets its result."""

    def __init__(self, path: str):
        self.path = path
        self.entry: dict[str, Any] | None = None
        self.pointer: str | None = None

    def begin(self, **fields: Any) -> None:
        entry = self.entry = dict(fields, state="in-flight", outcome=None, written=time.time())
        write(self.path, entry)
        rundir = os.environ.get(RUNDIR_ENV)
        if rundir and os.path.isdir(rundir):  # tell the controller where this window's outcome will be
            pointer = self.pointer = os.path.join(rundir, f"{fields.get('switch')}.{os.getpid()}.json")
            write(
                pointer,
                {
                    "journal": self.path,
                    "pid": os.getpid(),
                    "switch": fields.get("switch"),
                    "deadline": time.time() + int(fields.get("confirm_timeout") or 0) + OUTCOME_MARGIN_S,
                },
            )

    def step(self, step: str) -> None:
        if self.entry is not None and self.entry.get("step") != step:
            self.entry["step"] = step
            write(self.path, self.entry)

    def outcome(self, text: str, rolled_back: bool | None) -> None:
        if self.entry is None:
            return
        self.entry.update(state="cut-off", outcome=text, rolled_back=rolled_back, ended=time.time())
        write(self.path, self.entry)

    def done(self) -> None:
        if self.entry is not None:
            remove(self.path)
            self.entry = None
        if self.pointer:
            remove(self.pointer)
            self.pointer = None


def wait_pid(pid: int, timeout: float) -> bool:
    """Wait until process ``pid`` has ended (pidfd: an event), at most ``timeout`` s; whether it ended."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return True  # already gone (or no pidfd: nothing to wait on)
    try:
        ready = select.select([fd], [], [], min(max(0.0, timeout), 86400.0))[0]
        return bool(ready)
    finally:
        os.close(fd)


def collect_outcomes(rundir: str, now: Callable[[], float] = time.time) -> list[str]:
    """On the controller, after a SIGINT or SIGTERM was passed on to the modules: for every window a module
    named in ``rundir``, wait for that module to end (at most until its confirm timer plus
    :data:`OUTCOME_MARGIN_S`), and return one line per window - its outcome from the journal (the entry
    is then removed: the outcome has been shown), or why there is none yet (the next run reports it)."""
    lines: list[str] = []
    try:
        names = sorted(os.listdir(rundir))
    except FileNotFoundError:
        return lines
    for name in names:
        ptr = read(os.path.join(rundir, name))
        if not ptr or "journal" not in ptr:
            continue
        wait_pid(int(ptr.get("pid", 0)), float(ptr.get("deadline", 0)) - now())
        entry = read(ptr["journal"])
        switch = ptr.get("switch")
        if entry is None:
            lines.append(f"switch {switch}: the window ended and Ansible got its result (printed above)")
        elif entry.get("state") == "cut-off" and entry.get("outcome"):
            lines.append(entry["outcome"])
            remove(ptr["journal"])
        else:
            lines.append(
                f"switch {switch}: the window (pid {ptr.get('pid')}) has no outcome yet (it was "
                f"{entry.get('state')} during {entry.get('step')}); the next run reads "
                f"{ptr['journal']} and the switch and reports it"
            )
        remove(os.path.join(rundir, name))
    return lines


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid`` (proc(5) /proc/<pid>/stat field 4), None when it is gone."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    try:
        return int(stat[stat.rfind(")") + 2 :].split()[1])
    except (IndexError, ValueError):
        return None


def controller_pid() -> int | None:
    """The ansible-playbook process this module runs under: its first ancestor outside this process's
    session (the worker that started the module called setsid). None when there is none (pid 1 reached)."""
    sid = os.getsid(0)
    pid = os.getpid()
    while True:
        ppid = parent_pid(pid)
        if ppid is None or ppid <= 1:
            return None
        try:
            if os.getsid(ppid) != sid:
                return ppid
        except ProcessLookupError:
            return None
        pid = ppid


def watch_controller(pid: int | None = None, on_end: Callable[[], None] | None = None) -> threading.Thread | None:
    """Wait in a daemon thread for process ``pid`` (default :func:`controller_pid`) to end, then record the
    cause and send this process SIGTERM (or call ``on_end``). None when there is nothing to watch."""
    pid = controller_pid() if pid is None else pid
    if pid is None or not hasattr(os, "pidfd_open"):
        return None
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return None

    def wait() -> None:
        select.select([fd], [], [])  # readable once the process has ended
        os.close(fd)
        CAUSE["name"] = f"the end of its controller (ansible-playbook pid {pid}: killed, e.g. SIGKILL of its process group)"
        if on_end is not None:
            on_end()
        else:
            os.kill(os.getpid(), signal.SIGTERM)

    t = threading.Thread(target=wait, name=f"linerate-watch-{pid}", daemon=True)
    t.start()
    return t
