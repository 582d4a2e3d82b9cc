"""Switch backups that cannot hurt: written atomically with a digest, checked before any restore.

A backup is ``<dir>/<switch>/<stamp>[-n].<platform>.cfg`` (a pre-window
backup) or ``<stamp>[-n].before-restore.<platform>.cfg`` (a restore's own),
mode 0600, with ``<name>.sha256`` beside it in ``sha256sum`` format
(``<64 hex>  <name>``, so ``sha256sum -c`` checks it in that directory).

Writing: the text goes to a temporary file in the same directory, is
flushed and fsync'ed, then published under its final name with ``link()``
(atomic, and never replaces an existing backup), the temporary name
removed and the directory fsync'ed. The digest is published first, the
backup last: a ``.cfg`` that is visible is complete and has its digest. Any
failure (ENOSPC, EIO, a signal) removes what was written: no file with a
final name is left behind.

Restoring: :func:`choose_backup` resolves the operator's choice (a stamp,
``latest`` or a path) and :func:`verify_backup` refuses an empty file, a
missing or mismatching digest (a truncated file does not match it) and a
file the platform's parser cannot read.

Retention: :func:`prune_backups` keeps a switch's newest ``switch_fabric_backup_keep`` backups (the
one just taken, the newest pre-window one and those of a window still under way are never removed).
Stdlib only.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from typing import Any, Callable, Optional

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import fsync_dir
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        from base import SwitchError  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch.base import SwitchError  # type: ignore[import-not-found,no-redef]
    from common import fsync_dir  # type: ignore[import-not-found,no-redef]

LABELS = ("window", "restore")
# The two choices a restore may be given (roles/switch_fabric; one switch_fabric_restore_force did both).
ACCEPT_NO_DIGEST = "switch_fabric_restore_accept_no_digest"
ALLOW_DELETIONS = "switch_fabric_restore_allow_deletions"
# Backups kept per switch by default (switch_fabric_backup_keep): the newest, pre-window and a restore's own.
BACKUP_KEEP = 30
# The controller's copy of a switch's window lock (module_utils/switch/lock.py ControllerLock.NAME) and the
# journal of its window in flight (module_utils/switch/journal.py NAME: its backup_path is the backup it took).
LOCK_NAME = "linerate.lock"
JOURNAL_NAME = "window.json"
STAMP = r"\d{8}T\d{6}Z(?:-\d+)?"
PLATFORMS = ("nvue", "sonic", "eos")


class BackupError(SwitchError):
    """A backup that cannot be written or must not be restored; names the file and the reason (the file's
    path names the switch: <dir>/<switch>/...). Raised before any change: nothing was sent."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(os.path.basename(os.path.dirname(path)), reason, rolled_back=False)
        self.path = path
        self.args = (f"backup {path}: {reason}",)  # the message names the file, not the switch


def digest_line(name: str, data: bytes) -> str:
    """The ``sha256sum`` line of ``data`` (bytes) for the file ``name``."""
    return f"{hashlib.sha256(data).hexdigest()}  {name}\n"


def private_dirs(d: str) -> None:
    """``d`` made with every missing parent 0700 (os.makedirs gives its mode to the last one only)."""
    parent = os.path.dirname(os.path.abspath(d))
    if not os.path.isdir(parent):
        private_dirs(parent)
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass


def _write_temp(d: str, data: bytes) -> str:
    """``data`` in a new 0600 temporary file of ``d``, flushed and fsync'ed; its path."""
    n = 0
    while True:
        tmp = os.path.join(d, f".tmp-{os.getpid()}-{n}.part")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            n += 1
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _publish(tmp: str, final: str) -> None:
    """Give ``tmp`` the name ``final`` unless that exists (FileExistsError); ``tmp`` is gone after."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # a file system without hard links: rename, after checking the name is free
        if os.path.lexists(final):
            raise FileExistsError(errno.EEXIST, "exists", final) from None
        os.rename(tmp, final)
        return
    _unlink(tmp)


def write_backup(backup_dir: str, switch: str, platform: str, text: str, stamp: str, label: str = "window") -> str:
    """Write ``text`` to <dir>/<switch>/<stamp>[-n][.before-restore].<platform>.cfg, mode 0600, with its
    digest (temporary file, fsync, atomic publish).

    Returns the backup's path. Never overwrites a backup (two in one second
    get ``-1``, ``-2``...). On any failure nothing with a final name remains
    and :class:`BackupError` names the directory and the cause. A restore's
    own backup (``label="restore"``) is ``<stamp>.before-restore.<platform>.cfg``:
    it never counts as a pre-window backup, so restoring ``latest`` twice
    cannot put back the config a restore replaced.
    """
    if label not in LABELS:
        raise ValueError(f"backup label {label!r} (allowed: {', '.join(LABELS)})")
    mid = ".before-restore" if label == "restore" else ""
    d = os.path.join(os.path.expanduser(backup_dir), switch)
    data = text.encode("utf-8")
    tmps: list[str] = []
    published: list[str] = []
    try:
        private_dirs(d)
        cfg_tmp = _write_temp(d, data)
        tmps.append(cfg_tmp)
        n = 0
        while True:
            name = f"{stamp}{'-%d' % n if n else ''}{mid}.{platform}.cfg"
            path = os.path.join(d, name)
            if os.path.lexists(path) or os.path.lexists(path + ".sha256"):
                n += 1
                continue
            sum_tmp = _write_temp(d, digest_line(name, data).encode("ascii"))
            tmps.append(sum_tmp)
            try:
                _publish(sum_tmp, path + ".sha256")
            except FileExistsError:
                _unlink(sum_tmp)
                n += 1
                continue
            published.append(path + ".sha256")
            try:
                _publish(cfg_tmp, path)
            except FileExistsError:  # another writer took the name in between: step over it
                _unlink(path + ".sha256")
                published.pop()
                n += 1
                continue
            published.append(path)
            break
        fsync_dir(d)
    except BaseException as exc:
        for p in published + tmps:
            _unlink(p)
        if isinstance(exc, OSError):
            raise BackupError(
                os.path.join(d, f"{stamp}{mid}.{platform}.cfg"), f"cannot be written ({exc.strerror or exc}); nothing was kept under that name"
            ) from exc
        raise
    return path


# ------------------------------------------------------------------ choosing


def backup_order(name: str) -> tuple[str, int]:
    """Sort key of a backup file name: (stamp, n). ``T1-10`` comes after ``T1-2`` and ``T1-1`` after ``T1``."""
    m = re.match(r"^(\d{8}T\d{6}Z)(?:-(\d+))?\.", name)
    return (m.group(1), int(m.group(2) or 0)) if m else ("", -1)


def pre_window_backups(backup_dir: str, switch: str, platform: str) -> list[str]:
    """The pre-window backups of a switch, oldest first (a restore's own backups never count)."""
    d = os.path.join(os.path.expanduser(backup_dir), switch)
    pat = re.compile(rf"^{STAMP}\.{re.escape(platform)}\.cfg$")
    try:
        names = [n for n in os.listdir(d) if pat.match(n)]
    except FileNotFoundError:
        return []
    return [os.path.join(d, n) for n in sorted(names, key=backup_order)]


def choose_backup(backup_dir: str, switch: str, platform: str, selector: Any) -> str:
    """The backup file the operator named: a UTC stamp (``20261122T040000Z`` or ``...Z-1``), ``latest``
    (the newest pre-window backup, whatever its state: :func:`verify_backup` then refuses it if it is
    invalid, never an older one instead), or the path of a file. BackupError otherwise."""
    sel = str(selector or "").strip()
    d = os.path.join(os.path.expanduser(backup_dir), switch)
    if "/" in sel:
        return sel
    if sel == "latest":
        found = pre_window_backups(backup_dir, switch, platform)
        if not found:
            raise BackupError(d, f"no pre-window backup of {switch} (<stamp>.{platform}.cfg) in this directory")
        return found[-1]
    if re.fullmatch(STAMP, sel):
        path = os.path.join(d, f"{sel}.{platform}.cfg")
        if not os.path.lexists(path):
            raise BackupError(path, "does not exist")
        return path
    raise BackupError(
        d,
        f"switch_fabric_restore_backup {selector!r} is not a backup name: allowed are a UTC "
        "timestamp like 20261122T040000Z (or 20261122T040000Z-1), latest, or the path of a "
        "backup file",
    )


# ------------------------------------------------------------------ checking


def read_digest(path: str) -> Optional[str]:
    """The hex digest recorded for ``path`` in ``<path>.sha256``; BackupError when missing or malformed."""
    name = os.path.basename(path)
    try:
        with open(path + ".sha256", encoding="ascii", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BackupError(path, f"its digest {path}.sha256 cannot be read: {exc.strerror or exc}") from exc
    m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)\n?", text)
    if not m:
        raise BackupError(path, f"its digest file {path}.sha256 is not one sha256sum line")
    if m.group(2) != name:
        raise BackupError(path, f"its digest file {path}.sha256 is for {m.group(2)!r}, not {name!r}")
    return m.group(1)


def verify_backup(path: str, platform: str, parse: Callable[[str], Any], accept_no_digest: bool = False) -> tuple[str, list[str]]:
    """Read a backup for a restore, refusing what would hurt. Returns (text, warnings).

    Refused always: not a ``.<platform>.cfg`` file, unreadable, empty (or
    blank), a digest that does not match (truncated or modified), a
    malformed digest file, text the platform's ``parse`` rejects or that
    holds no configuration at all. Refused unless ``accept_no_digest``
    (switch_fabric_restore_accept_no_digest): no digest file (a backup written
    before digests existed).
    """
    name = os.path.basename(path)
    if not re.fullmatch(rf".+\.{re.escape(platform)}\.cfg", name):
        raise BackupError(path, f"is not a {platform} backup (the name must end in .{platform}.cfg)")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise BackupError(path, f"cannot be read: {exc.strerror or exc}") from exc
    if not data.strip():
        raise BackupError(path, f"is empty ({len(data)} bytes): restoring it would erase the switch's configuration; refused")
    warnings: list[str] = []
    want = read_digest(path)
    if want is None:
        if not accept_no_digest:
            raise BackupError(
                path,
                f"has no digest file {name}.sha256 (written before backups had digests, or "
                "the digest was lost), so a truncated or altered file cannot be told apart; "
                "refused: check the file, then restore it with "
                f"{ACCEPT_NO_DIGEST}=true",
            )
        warnings.append(f"{path} has no digest: restored without one because {ACCEPT_NO_DIGEST} is true")
    elif hashlib.sha256(data).hexdigest() != want:
        raise BackupError(
            path, f"does not match its digest {name}.sha256 (sha256 {hashlib.sha256(data).hexdigest()}, recorded {want}): truncated or modified; refused"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BackupError(path, f"is not UTF-8 text ({exc}); refused") from exc
    try:
        facts = parse(text)
    except Exception as exc:  # noqa: BLE001 - the platform parser's error, whatever its type
        raise BackupError(path, f"cannot be parsed as a {platform} configuration: {getattr(exc, 'reason', None) or exc}; refused") from exc
    if not facts:
        raise BackupError(
            path, f"holds no {platform} configuration (only comments or blank lines): restoring it would erase the switch's configuration; refused"
        )
    return text, warnings


def load_restore(
    backup_dir: str, switch: str, platform: str, selector: Any, parse: Callable[[str], Any], accept_no_digest: bool = False
) -> tuple[str, str, list[str]]:
    """The backup a restore uses: (path, text, warnings). :func:`choose_backup` then :func:`verify_backup`;
    an invalid ``latest`` is refused naming it, never replaced by an older backup."""
    path = choose_backup(backup_dir, switch, platform, selector)
    try:
        text, warnings = verify_backup(path, platform, parse, accept_no_digest)
    except BackupError as exc:
        if str(selector).strip() == "latest":
            raise BackupError(
                exc.path,
                exc.reason + " (it is the latest pre-window backup; an older one is never "
                "taken instead: name the backup to restore with "
                "switch_fabric_restore_backup=<UTC timestamp or path>)",
            ) from exc
        raise
    return path, text, warnings


# ------------------------------------------------------------------ retention


def _backups(d: str, platform: str) -> list[str]:
    """Every backup file name of a switch's directory for ``platform`` (both labels), oldest first."""
    pat = re.compile(rf"^{STAMP}(\.before-restore)?\.{re.escape(platform)}\.cfg$")
    try:
        names = [n for n in os.listdir(d) if pat.match(n)]
    except FileNotFoundError:
        return []
    return sorted(names, key=lambda n: (backup_order(n), ".before-restore." not in n))


def _in_flight(d: str, names: list[str]) -> set[str]:
    """The backups of a window still in flight (or cut off): the one its journal names, and those written
    since the controller's lock file was made while it is there. A window killed mid-change is recovered
    from the backup it took; an unreadable journal keeps every backup."""
    keep: set[str] = set()
    try:
        with open(os.path.join(d, JOURNAL_NAME), encoding="utf-8") as f:
            entry = json.load(f)
        named = entry.get("backup_path") if isinstance(entry, dict) else None
        if not isinstance(named, str):
            return set(names)
        keep.add(os.path.basename(named))
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return set(names)
    try:
        since = os.stat(os.path.join(d, LOCK_NAME)).st_mtime
    except FileNotFoundError:
        return keep
    return keep | {n for n in names if os.stat(os.path.join(d, n)).st_mtime >= since - 1}


def prune_backups(backup_dir: str, switch: str, platform: str, keep: int, taken: Optional[str] = None) -> list[str]:
    """Remove a switch's oldest backups (and their digests) beyond the newest ``keep``; their names, oldest first.

    Never removed: ``taken`` (the backup this run just wrote), the newest pre-window backup (what a
    restore of ``latest`` uses), the backup the window journal names (a window cut off, not yet
    recovered; an unreadable journal keeps them all) and, while the controller's lock file is there (a
    window under way, or killed before it ended), every backup written since it was made. BackupError when ``keep`` is not an
    integer >= 1 or a file cannot be removed."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise BackupError(str(backup_dir), f"switch_fabric_backup_keep {keep!r} is not allowed (allowed: an integer >= 1, the backups kept per switch)")
    d = os.path.join(os.path.expanduser(backup_dir), switch)
    names = _backups(d, platform)
    pre = [n for n in names if ".before-restore." not in n]
    kept = set(names[-keep:]) | set(pre[-1:]) | _in_flight(d, names)
    if taken:
        kept.add(os.path.basename(taken))
    gone = [n for n in names if n not in kept]
    for name in gone:
        for p in (os.path.join(d, name), os.path.join(d, name) + ".sha256"):  # never a backup without its digest
            try:
                _unlink(p)
            except OSError as exc:
                raise BackupError(p, f"cannot be removed ({exc.strerror or exc}) while keeping the newest {keep} backups") from exc
    if gone:
        fsync_dir(d)
    return gone
