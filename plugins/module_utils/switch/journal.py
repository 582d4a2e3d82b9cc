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
import json
import os
import select
import signal
import threading
import time

NAME = "window.json"
# set by the controller watch before it sends SIGTERM: the window names this instead of "SIGTERM"
CAUSE = {}


def journal_path(backup_dir: str, switch: str) -> str:
    return os.path.join(backup_dir, switch, NAME)


def write(path: str, entry: dict) -> None:
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


def read(path: str) -> dict | None:
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
        self.entry = None

    def begin(self, **fields) -> None:
        self.entry = dict(fields, state="in-flight", outcome=None, written=time.time())
        write(self.path, self.entry)

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


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid`` (proc(5) /proc/<pid>/stat field 4), None when it is gone."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    try:
        return int(stat[stat.rfind(")") + 2:].split()[1])
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


def watch_controller(pid: int | None = None, on_end=None) -> threading.Thread | None:
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
        select.select([fd], [], [])   # readable once the process has ended
        os.close(fd)
        CAUSE["name"] = (f"the end of its controller (ansible-playbook pid {pid}: killed, e.g. SIGKILL of its "
                         "process group)")
        if on_end is not None:
            on_end()
        else:
            os.kill(os.getpid(), signal.SIGTERM)
    t = threading.Thread(target=wait, name=f"linerate-watch-{pid}", daemon=True)
    t.start()
    return t
