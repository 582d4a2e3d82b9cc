"""A run's report directory written so that a failure cannot leave a half report or a stale ``latest``.

``publish(reports_dir, stamp, files)`` writes every file ({name: text}) into a new private temporary
directory of ``reports_dir`` (``.<stamp>.<pid>.partial``, mode 0700; each file 0600, written whole and
fsync'ed), fsyncs it, renames it to ``<stamp>`` (``<stamp>-2``... when taken: a run directory is never
replaced), fsyncs ``reports_dir``, and only then replaces ``latest`` (a relative symlink made under a
temporary name, renamed over the old one: atomic, then fsync'ed). Any failure (a full disk, a read-only
directory, a signal) removes what this call wrote and raises :class:`ReportWriteError`: the previous
run directories and ``latest`` are as they were, and no directory with a run's name is half written.

``reports_dir`` is made (or kept) 0700: reports hold node names, addresses and findings of the fabric.
A temporary directory left by a writer that was killed (its pid no longer runs) is removed by the next
write. Stdlib only (and the layer's error, checks/errors.py).
"""

import os
import re
import shutil

from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import CheckError
from ansible_collections.linerate.fabric.plugins.module_utils.common import fsync_dir

DIR_MODE = 0o700
FILE_MODE = 0o600
LATEST = "latest"
_PARTIAL = re.compile(r"\.(?P<stamp>[^/]+)\.(?P<pid>[0-9]+)\.partial")


class ReportWriteError(CheckError):
    """The report could not be written; ``path`` the file or directory, ``reason`` why. Nothing was kept."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def write_private(path: str, text: str) -> None:
    """``text`` into a new file ``path`` (never an existing one), mode 0600, whole and fsync'ed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def private_dir(d: str) -> None:
    """``d`` and its missing parents made 0700; ``d`` itself set to 0700 when it was there already
    (os.makedirs gives its mode to the last directory only)."""
    parent = os.path.dirname(os.path.abspath(d))
    if not os.path.isdir(parent):
        private_dir(parent)
    try:
        os.mkdir(d, DIR_MODE)
    except FileExistsError:
        pass
    if os.stat(d).st_mode & 0o777 != DIR_MODE:
        os.chmod(d, DIR_MODE)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True


def remove_dead_partials(reports_dir: str, alive=_alive) -> list:
    """Remove the temporary directories of writers that no longer run; their names."""
    gone = []
    for name in sorted(os.listdir(reports_dir)):
        m = _PARTIAL.fullmatch(name)
        if m and int(m.group("pid")) != os.getpid() and not alive(int(m.group("pid"))):
            shutil.rmtree(os.path.join(reports_dir, name), ignore_errors=True)
            gone.append(name)
    return gone


def _rename_free(tmp: str, reports_dir: str, stamp: str) -> str:
    """Rename ``tmp`` to the first free run name (stamp, stamp-2, ...); its path."""
    n = 1
    while True:
        out = os.path.join(reports_dir, stamp if n == 1 else f"{stamp}-{n}")
        n += 1
        if os.path.lexists(out):
            continue
        try:
            os.rename(tmp, out)  # an empty directory of that name made in between would be replaced: refuse it
        except OSError as exc:
            if os.path.lexists(out) and os.path.lexists(tmp):
                continue
            raise exc
        return out


def _point_latest(reports_dir: str, out: str) -> None:
    latest = os.path.join(reports_dir, LATEST)
    tmp = os.path.join(reports_dir, f".{LATEST}.{os.getpid()}.tmp")
    if os.path.lexists(tmp):
        os.remove(tmp)
    os.symlink(os.path.basename(out), tmp)
    try:
        os.replace(tmp, latest)
    except BaseException:
        os.remove(tmp)
        raise
    try:
        fsync_dir(reports_dir)
    except OSError:  # latest is replaced already and names a complete report: the run is not undone for this
        pass


def publish(reports_dir: str, stamp: str, files: dict) -> str:
    """Write ``files`` ({name: text}) as the run directory ``<reports_dir>/<stamp>`` and point ``latest`` at
    it (see the module's docstring); its path. ReportWriteError, with nothing kept, when it cannot."""
    tmp = out = None
    step = reports_dir
    try:
        private_dir(reports_dir)
        remove_dead_partials(reports_dir)
        tmp = os.path.join(reports_dir, f".{stamp}.{os.getpid()}.partial")
        if os.path.lexists(tmp):
            shutil.rmtree(tmp)
        os.mkdir(tmp, DIR_MODE)
        for name, text in files.items():
            step = os.path.join(tmp, name)
            write_private(step, text)
        fsync_dir(tmp)
        step = os.path.join(reports_dir, stamp)
        out = _rename_free(tmp, reports_dir, stamp)
        tmp = None
        fsync_dir(reports_dir)
        step = os.path.join(reports_dir, LATEST)
        _point_latest(reports_dir, out)
        return out
    except (OSError, KeyboardInterrupt, SystemExit) as exc:
        for d in (tmp, out):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)
        if not isinstance(exc, OSError):
            raise
        raise ReportWriteError(
            step, f"cannot be written ({exc.strerror or exc}); nothing of this report was kept, the earlier reports and {LATEST} are as they were"
        ) from exc
