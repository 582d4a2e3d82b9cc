"""The change window of a switch: backup, lock, apply, confirm or roll back (run_apply), its signal
handling and the shared lock, and recovery (discard, recover); the managed scope, the delta and the
post-check it applies are switch/window_checks.py's. The drivers (switch/base.py Driver and its
subclasses) do the platform's part. Pure logic stdlib-only.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.backups import BackupError, write_backup
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.redact import Redactor
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock as _lock
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import journal as _journal
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import ConfigMoved, SwitchError, _redacted, signal_name, timestamp
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_lock import WindowLock
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import managed_scope, oper_problems, restore_deletions
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_signals import Interrupted, SignalGuard, cause
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        from backups import BackupError, write_backup  # type: ignore[import-not-found,no-redef]
        from redact import Redactor  # type: ignore[import-not-found,no-redef]
        import lock as _lock  # type: ignore[import-not-found,no-redef]
        import journal as _journal  # type: ignore[import-not-found,no-redef]
        from base import (  # type: ignore[import-not-found,no-redef]
            ConfigMoved,
            SwitchError,
            _redacted,
            signal_name,
            timestamp,
        )
        from window_lock import WindowLock  # type: ignore[import-not-found,no-redef]
        from window_checks import (  # type: ignore[import-not-found,no-redef]
            managed_scope,
            oper_problems,
            restore_deletions,
        )
        from window_signals import Interrupted, SignalGuard, cause  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch.backups import BackupError, write_backup  # type: ignore[import-not-found,no-redef]
        from switch.redact import Redactor  # type: ignore[import-not-found,no-redef]
        from switch import lock as _lock  # type: ignore[import-not-found,no-redef]
        from switch import journal as _journal  # type: ignore[no-redef]
        from switch.base import (  # type: ignore[import-not-found,no-redef]
            ConfigMoved,
            SwitchError,
            _redacted,
            signal_name,
            timestamp,
        )
        from switch.window_lock import WindowLock  # type: ignore[import-not-found,no-redef]
        from switch.window_checks import (  # type: ignore[import-not-found,no-redef]
            managed_scope,
            oper_problems,
            restore_deletions,
        )
        from switch.window_signals import Interrupted, SignalGuard, cause  # type: ignore[import-not-found,no-redef]

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, Scope


# Seconds of the confirm timer that must be left when the window confirms: a confirm sent later may
# reach a switch whose own timer has already rolled the change back.
CONFIRM_MARGIN_S = 10


@dataclass
class Window:
    """One change window on one switch: what run_apply was asked (the intent, the ports, the options) and
    what the window holds while it runs (its progress, signal guard, lock, journal, redactor)."""

    driver: Driver
    want_text: Any
    ports: Sequence[str]
    check_mode: bool
    backup_dir: Optional[str]
    confirm_timeout: int
    post_check: bool
    require_up: bool
    full: bool
    want_pfc: Optional[Sequence[int]]
    want_ecn: Any
    stamp: str
    nested: bool
    backup_label: str
    force: bool
    # where the window is: the step it is at and whether it changed the switch yet
    progress: dict[str, Any] = field(default_factory=lambda: {"step": "read", "changed": False})
    guard: Optional[SignalGuard] = None
    redactor: Optional[Redactor] = None
    wlock: Optional[WindowLock] = None
    journal: Optional[_journal.Journal] = None
    own_warnings: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """The window's warnings: the lock's own list where there is a lock (a forced restore's note and the
        lock's go together)."""
        return self.wlock.warnings if self.wlock is not None else self.own_warnings

    def step(self, name: str) -> None:
        self.progress["step"] = name


def run_apply(
    driver: Driver,
    want_text: Any = None,
    ports: Sequence[str] = (),
    check_mode: bool = False,
    backup_dir: Optional[str] = None,
    confirm_timeout: int = 300,
    post_check: bool = True,
    require_up: bool = True,
    full: bool = False,
    want_pfc: Optional[Sequence[int]] = None,
    want_ecn: Any = None,
    stamp: Optional[str] = None,
    _nested: bool = False,
    backup_label: str = "window",
    force: bool = False,
    redactor: Optional[Redactor] = None,
    lock: Union[bool, WindowLock, None] = True,
) -> dict[str, Any]:
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

    With a ``backup_dir`` the window is journalled (:mod:`journal`): an entry
    written before the first change, removed when this call returns its result
    or a failure, kept with the outcome when the window was cut off by a signal
    or by the end of its controller, so the next run reports it.
    """
    w = Window(
        driver,
        want_text,
        ports,
        check_mode,
        backup_dir,
        confirm_timeout,
        post_check,
        require_up,
        full,
        want_pfc,
        want_ecn,
        stamp or timestamp(),
        _nested,
        backup_label,
        force,
    )
    if _nested:  # recovery's own restore: the outer call holds the guard and the lock
        return _run_window(w)
    _equip(w, lock, redactor)
    return _outer(w)


def _equip(w: Window, lock: Union[bool, WindowLock, None], redactor: Optional[Redactor]) -> None:
    """The window's lock (its own unless one is given or ``lock`` is False), its journal (with a backup
    directory, outside check mode) and, for a restore, the redactor of its results."""
    driver = w.driver
    if lock is True:
        w.wlock = WindowLock(driver, w.stamp, w.confirm_timeout, os.path.join(w.backup_dir, driver.name) if w.backup_dir else None)
    else:
        w.wlock = lock or None
    if w.backup_dir and not w.check_mode:
        w.journal = _journal.Journal(_journal.journal_path(w.backup_dir, driver.name))
    if w.full:  # a window's results hold QoS only: left as they are; a restore's are masked
        w.redactor = redactor if redactor is not None or driver.platform not in ("nvue", "sonic", "eos") else Redactor(driver.platform)


def _outer(w: Window) -> dict[str, Any]:
    """The equipped window under its signal guard: the result with the journal removed and, for a restore,
    masked; a failure raised as the error it ends with (_ended_by)."""
    try:
        with SignalGuard() as w.guard:
            result = _guarded(w)
    except SwitchError as exc:
        ended = _ended_by(w, exc)
        if ended is exc:
            raise
        raise ended from exc.__cause__
    if w.journal is not None:
        w.journal.done()
    if w.redactor is not None:
        w.redactor.result(result)
    return result


def _guarded(w: Window) -> dict[str, Any]:
    """The window under its signal guard, the lock released at the end (its note added to the result or
    the error); a signal before the first change or after the confirm ends it as a SwitchError."""
    guard, wlock = cast(SignalGuard, w.guard), w.wlock
    try:
        try:
            result = _run_window(w)
        except SwitchError as exc:
            note = wlock.release() if wlock is not None else None
            if note:
                raise type(exc)(
                    exc.switch, f"{exc.reason}; {note}", output=exc.output, command=exc.command, rolled_back=exc.rolled_back, changed=exc.changed
                ) from exc.__cause__
            raise
        except KeyboardInterrupt:
            if wlock is not None and wlock.held:
                w.driver.close()  # the interrupted command's answer may still come: a new session
                guard.defer()
                wlock.release()
            raise
        note = wlock.release() if wlock is not None else None
        if note:
            result.setdefault("warnings", []).append(note)
    except Interrupted as exc:  # outside the guarded change: before the first change
        guard.defer()
        raise SwitchError(
            w.driver.name,
            f"interrupted by {exc.name} during {w.progress['step']}, before the first change: "
            + (
                "pending state left by an earlier window was cleared, the running config was not changed"
                if w.progress["changed"]
                else "the switch was not touched"
            ),
            rolled_back=False,
            changed=w.progress["changed"],
        ) from None
    if guard.received:  # a signal after the confirm: the change is complete
        raise SwitchError(
            w.driver.name,
            f"interrupted by {cause(guard.received[0])} after the change was confirmed: the switch is at the intent with nothing pending",
            rolled_back=False,
            changed=result["changed"],
        )
    return result


def _ended_by(w: Window, exc: SwitchError) -> SwitchError:
    """The error a failed window raises: its journal kept with the outcome when a signal cut the window off
    (nobody may see this result: the next run reports it), removed otherwise; masked for a restore."""
    if w.journal is not None:
        if w.guard is not None and w.guard.received:
            w.journal.outcome(str(exc), exc.rolled_back)
        else:
            w.journal.done()
    if exc.rolled_back is None:  # failed before the first change: the switch was not touched
        exc.rolled_back = False
    return _redacted(exc, w.redactor) if w.redactor is not None else exc


def _run_window(w: Window) -> dict[str, Any]:
    """The window's phases: read and plan, then (outside check mode, with a delta) lock, pending check,
    backup and journal, then the change itself."""
    driver = w.driver
    cleared: list[str] = []
    want = driver.parse(w.want_text)
    scope = driver.full_scope() if w.full else managed_scope(driver, want, w.ports)
    running: Optional[str] = None
    if w.full and not w.nested:
        running, cleared = _restore_start(w, want)
    if running is None:
        running = driver.get_running()
    have = driver.parse(running)
    cmds = driver.commands(want, have, scope)
    warnings = w.warnings
    result: dict[str, Any] = {
        "changed": False,
        "commands": cmds,
        "before": driver.view(have, scope),
        "after": driver.view(have, scope),
        "backup_path": None,
        "rolled_back": False,
        "diff": {
            "before": driver.view(have, scope),
            "after": driver.view(want, scope),
            "before_header": f"{driver.name} (running)",
            "after_header": f"{driver.name} (intent)",
        },
    }
    if warnings:
        result["warnings"] = warnings
    if cleared:
        result["changed"] = True
        result["cleared"] = cleared
    if not cmds:
        if w.full and not w.check_mode:
            pend = driver.pending()
            if pend:
                raise SwitchError(
                    driver.name,
                    "the running config matches the backup but configuration is still pending: " + "; ".join(pend),
                    rolled_back=False,
                    changed=bool(cleared),
                )
        return result
    if w.check_mode:
        if w.wlock is not None:
            w.wlock.peek()
            if warnings:
                result["warnings"] = warnings
        result["changed"] = True
        result["after"] = driver.view(want, scope)
        return result
    _prepare(w, result, running, bool(cleared))
    after = _change(w, cmds, want, scope, running, result)
    result["changed"] = True
    result["after"] = driver.view(after, scope)
    return result


def _restore_start(w: Window, want: Any) -> tuple[Optional[str], list[str]]:
    """A restore reads first and refuses, before anything is sent, to delete what it does not manage; then
    (outside check mode) it takes the lock and discards what a failed window left pending.
    (the running config read, or None when the discard changed it; what was cleared)."""
    driver = w.driver
    first = driver.get_running()
    running: Optional[str] = first
    outside = restore_deletions(driver, want, driver.parse(first))
    if w.redactor is not None:  # each item masked on its own, before they are joined
        outside = w.redactor.lines(outside)
    if outside and not w.force:
        raise SwitchError(
            driver.name,
            f"restoring this backup would delete {len(outside)} setting(s) outside "
            "the managed scope (QoS, PFC, ECN, MTU and speed of the data ports): "
            + "; ".join(outside[:10])
            + (f" (and {len(outside) - 10} more)" if len(outside) > 10 else "")
            + "; nothing is sent. If that is intended, restore with "
            "switch_fabric_restore_allow_deletions=true",
            rolled_back=False,
        )
    if outside:
        w.warnings.append(f"forced: the restore deletes {len(outside)} setting(s) outside the managed scope: " + "; ".join(outside))
    cleared: list[str] = []
    if not w.check_mode:
        if w.wlock is not None:  # the restore changes the switch from here: one window at a time
            w.step("lock")
            w.wlock.take()
        # an emergency restore first discards what a failed window left pending
        w.step("clear-pending")
        cleared = driver.clear_pending(w.want_text)
        w.progress["changed"] = bool(cleared)
        if cleared:
            running = None
        w.step("read")
    return running, cleared


def _prepare(w: Window, result: dict[str, Any], running: str, cleared: bool) -> None:
    """Before the first change: the lock, nothing pending, the backup written and the journal begun; each
    refusal is a SwitchError saying nothing was sent."""
    driver = w.driver
    if w.wlock is not None:
        w.step("lock")
        w.wlock.take()
        if w.wlock.warnings:
            result["warnings"] = w.wlock.warnings
    w.step("pending-check")
    pend = driver.pending()
    if pend:
        raise SwitchError(driver.name, "uncommitted configuration is pending, refusing to push: " + "; ".join(pend), rolled_back=False, changed=cleared)
    if w.backup_dir:
        w.step("backup")
        try:
            result["backup_path"] = write_backup(w.backup_dir, driver.name, str(driver.platform), running, w.stamp, w.backup_label)
        except BackupError as exc:  # a full disk, a read-only directory: stop before any change
            raise SwitchError(driver.name, f"{exc}; the change window stops before any change, nothing is sent", rolled_back=False, changed=cleared) from exc
    if w.journal is not None:  # before the first change: a window cut off from here is found by the next run
        me = w.wlock.me if w.wlock is not None else _lock.Holder.me(w.stamp)
        try:
            w.journal.begin(
                switch=driver.name,
                platform=driver.platform,
                run=w.stamp,
                pid=me.pid,
                machine=me.machine,
                start=me.start,
                backup_path=result["backup_path"],
                confirm_timeout=w.confirm_timeout,
                full=bool(w.full),
                step="begin",
            )
        except OSError as exc:
            raise SwitchError(
                driver.name,
                f"the window journal {w.journal.path} cannot be written ({exc.strerror or exc}); the change window stops before any change, nothing is sent",
                rolled_back=False,
                changed=cleared,
            ) from exc


def _change(w: Window, cmds: list[str], want: Any, scope: Scope, running: str, result: dict[str, Any]) -> Any:
    """begin, re-read, push, commit, read back, post-check, confirm: the parsed config after the change.
    Any failure or signal from here ends at the backup (_recovered)."""
    driver, guard = w.driver, w.guard
    pushed = False
    try:
        w.step("begin")
        begun_at = time.monotonic() if driver.timer_at_begin else None
        driver.window_timeout = w.confirm_timeout
        driver.window_commands = len(cmds)
        driver.begin(w.stamp)
        # under the lock, after begin: has another change landed since the first read?
        w.step("re-read")
        if driver.get_running() != running:
            raise ConfigMoved(driver.name, "the running config changed between the first read and the begin of the window: another change landed in between")
        w.step("push")
        pushed = True
        driver.push(cmds)
        w.step("commit")
        committed_at = begun_at if begun_at is not None else time.monotonic()
        driver.commit(w.confirm_timeout)
        w.step("read-back")
        after = driver.parse(driver.get_running())
        left = driver.commands(want, after, scope)
        problems: list[str] = []
        if left:
            problems.append("config not at intent after push, still to do: " + "; ".join(left))
        if w.post_check and not w.full and w.ports:
            w.step("post-check")
            problems += oper_problems(driver.oper(w.ports), w.ports, w.want_pfc, w.want_ecn, w.require_up)
        if problems:
            raise SwitchError(driver.name, "; ".join(problems))
        w.step("confirm")
        used = time.monotonic() - committed_at
        result["confirm_timer_used_s"] = round(used, 1)
        if driver.confirm_timer and w.confirm_timeout and used > w.confirm_timeout - CONFIRM_MARGIN_S:
            raise SwitchError(
                driver.name,
                f"the read-back and post-checks used {used:.0f} s of the "
                f"{int(w.confirm_timeout)} s confirm timer (less than {CONFIRM_MARGIN_S} s "
                "left): the switch may be rolling back on its own, so the change is not "
                "confirmed; raise confirm_timeout",
            )
        driver.confirm()
        if guard is not None:
            guard.defer()  # confirmed: a signal from here on cannot undo it, it is reported after
        w.step("done")
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every failure after the backup ends at the backup
        raise _recovered(w, exc, pushed, running, result["backup_path"]) from (None if isinstance(exc, (KeyboardInterrupt, ConfigMoved)) else exc)
    return after


def _recovered(w: Window, exc: BaseException, pushed: bool, running: str, backup_path: Optional[str]) -> SwitchError:
    """After a failure or a signal during the change: the switch back at the backup (discard before the
    push, recover after it) and the error saying what failed and where the switch is."""
    driver, guard, step = w.driver, w.guard, w.progress["step"]
    if guard is not None:
        guard.defer()  # a second signal waits until the recovery has ended
    if isinstance(exc, KeyboardInterrupt):
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
            return ConfigMoved(
                driver.name,
                exc.reason
                + "; nothing was sent"
                + (", the window's own checkpoint/session/timer removed" if restored or how == "moved" else "; removing what begin made failed: " + how)
                + ". Run again to compute the change against the "
                "new config",
                rolled_back=False,
                changed=False,
            )
        if how == "moved":
            how = "the running config was changed by someone else meanwhile: left as it is"
    else:
        restored, how = recover(driver, running, w.nested)
    late = guard.received[seen:] if guard is not None else []
    return SwitchError(
        driver.name,
        what
        + "; "
        + (
            "rolled back: the running config is byte-identical to the pre-window backup and nothing is pending"
            if restored
            else "ROLLBACK INCOMPLETE, the switch may be modified: " + how
        )
        + (f" (backup {backup_path})" if backup_path else "")
        + (f"; {signal_name(late[0])} received during the recovery was held until it ended" if late else ""),
        output=getattr(exc, "output", None),
        command=getattr(exc, "command", None),
        rolled_back=restored,
        changed=not restored and (pushed or "someone else" not in how),
    )


def discard(driver: Driver, backup_text: str) -> tuple[bool, str]:
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


def recover(driver: Driver, backup_text: str, nested: bool = False, attempts: int = 2) -> tuple[bool, str]:
    """Bring the switch back to ``backup_text`` with nothing pending: (restored, why not).

    The platform's :meth:`Driver.undo` first (on a new session when the old
    one dropped or hung); when the running config still differs (a change
    already confirmed), the backup is restored in full through the same
    guarded window. Success is judged by reading back: byte-identical
    running config and no pending revision, session or checkpoint.
    """
    notes: list[str] = []
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
