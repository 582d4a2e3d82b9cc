"""One change window per switch, as the window takes it: the lock on the switch and its controller copy
(WindowLock, over module_utils/switch/lock.py), who holds it in words (lock_description), and the window
an earlier run left in the journal (earlier_window). switch/window.py's run_apply takes and releases it.
Pure logic stdlib-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock as _lock
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import journal as _journal
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        import lock as _lock  # type: ignore[import-not-found,no-redef]
        import journal as _journal  # type: ignore[import-not-found,no-redef]
        from base import SwitchError  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch import lock as _lock  # type: ignore[import-not-found,no-redef]
        from switch import journal as _journal  # type: ignore[no-redef]
        from switch.base import SwitchError  # type: ignore[import-not-found,no-redef]

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, LockState


class WindowLock:
    """One window per switch (module_utils/switch/lock.py): the lock on the switch, and its copy on the
    controller in ``controller_dir`` (the switch's backup folder) when there is one.

    :meth:`take` is called at the first step that may change the switch (after the read, before the
    pending check; a restore before it clears anything) and refuses - naming the holder, before any
    change - while another live window holds it; a stale one is broken with a warning naming the old
    holder. :meth:`release` removes it only while it is still ours. :meth:`peek` (check mode) reads it.
    """

    def __init__(
        self,
        driver: Driver,
        run_id: str,
        confirm_timeout: int,
        controller_dir: Optional[str] = None,
        now: Optional[float] = None,
        alive: Callable[[int, Optional[int]], bool] = _lock.pid_alive,
    ) -> None:
        self.driver = driver
        self.me = _lock.Holder.me(run_id, now=now)
        self.confirm_timeout = confirm_timeout
        self.controller = _lock.ControllerLock(controller_dir) if controller_dir else None
        self.now = now
        self.alive = alive
        self.held = False
        self.warnings: list[str] = []

    def _refuse(self, who: str, where: str, why: str = "") -> SwitchError:
        return SwitchError(
            self.driver.name,
            f"another change window holds this switch: {who} ({where}); nothing is sent. "
            + (
                why
                or f"It ends with that window; it is broken by the next window only once no confirm timer of "
                f"it runs on the switch and it is older than the confirm timer plus {_lock.LOCK_MARGIN_S} s by "
                "the switch's clock, or its process is gone from this very controller (same machine id)"
            ),
            rolled_back=False,
        )

    def _describe(self, line: Optional[str]) -> str:
        h = _lock.Holder.parse(line)
        return h.describe() if h else (repr(line) if line else "a holder that wrote no name yet")

    def _take_controller(self) -> None:
        d = self.driver
        if self.controller is None:
            return
        try:
            other = self.controller.acquire(self.me, self.confirm_timeout, self.now, self.alive)
        except OSError as err:  # the backup directory is not a directory, read-only, full
            raise SwitchError(
                d.name,
                f"lock {self.controller.path}: cannot be written ({err.strerror or err}); the change window stops before any change, nothing is sent",
                rolled_back=False,
                changed=False,
            ) from err
        if other is not None:
            raise self._refuse(self._describe(other), f"lock {self.controller.path} on this controller")
        if self.controller.broken:
            old, why = self.controller.broken
            self.warnings.append(f"broke the stale controller lock of {old.describe() if old else 'nobody'}: {why}")

    def _verdict(self, state: LockState) -> tuple[Optional[_lock.Holder], str]:
        """Why the switch's lock ``state`` (Driver.lock_read) may be broken, or raise the refusal naming its
        holder: an empty lock by its age alone; a linerate holder only while none of its window's confirm
        timers runs on the switch (then by age on the switch's clock, or its process gone from this
        controller); text linerate did not write never."""
        d, line, age = self.driver, state["text"], state["age_s"]
        where = f"lock {d.lock_path} on the switch"
        if not line:
            if age is not None and age > _lock.EMPTY_GRACE_S:
                return (
                    None,
                    f"it names no holder and is {int(age)} s old by the switch's clock (more than "
                    f"{_lock.EMPTY_GRACE_S} s): a window cut off while taking it, before any change",
                )
            raise self._refuse(
                "a window that has not written its name yet",
                where,
                f"An empty lock is another window taking it this moment; once it is older than "
                f"{_lock.EMPTY_GRACE_S} s by the switch's clock it is broken by the next window",
            )
        other = _lock.Holder.parse(line)
        if other is None:
            raise SwitchError(
                d.name,
                f"the window lock {d.lock_path} on the switch names no linerate holder "
                f"({line[:120]!r}); nothing is sent. Remove it by hand (rm -rf {d.lock_path}) "
                "once no change is under way",
                rolled_back=False,
            )
        why = _lock.stale(other, self.confirm_timeout, self.me, age, self.alive)
        if why is None:
            raise self._refuse(other.describe(), where)
        timers = d.window_timers(other.run)
        if timers:
            raise self._refuse(
                other.describe(),
                where,
                f"Its lock looks stale ({why}), but its window's confirm timer "
                "still runs: " + "; ".join(timers) + ". The switch ends "
                "that window by itself; run again after it",
            )
        return other, why

    def take(self) -> None:
        if self.held:
            return
        d = self.driver
        if self.controller is not None:
            self._take_controller()
        try:
            for attempt in range(2):
                answer = d.lock_take(self.me.line())
                if not answer:
                    self.held = True
                    return
                if "File exists" not in answer:
                    raise SwitchError(
                        d.name, f"could not create the window lock {d.lock_path} on the switch: {answer.splitlines()[0]}; nothing is sent", rolled_back=False
                    )
                state = d.lock_read()
                if not state["exists"]:
                    continue  # released between our mkdir and the read
                other, why = self._verdict(state)
                if attempt:  # broken once and taken again by someone else meanwhile
                    raise self._refuse(self._describe(state["text"]), f"lock {d.lock_path} on the switch")
                self.warnings.append(f"broke the stale window lock {d.lock_path} of {other.describe() if other else 'nobody (empty)'}: {why}")
                if other is not None:
                    d.stale_window = other
                d.lock_remove()
            raise self._refuse(self._describe(d.lock_holder()), f"lock {d.lock_path} on the switch")
        except BaseException:
            if self.controller is not None:
                self.controller.release()
            raise

    def peek(self) -> str:
        """Check mode: the holder of another window, as a warning (nothing is taken or changed)."""
        state = self.driver.lock_read()
        line = state["text"]
        if state["exists"]:
            self.warnings.append(
                f"the switch is locked by another change window: {self._describe(line)} "
                f"({self.driver.lock_path}); a real run now would be refused unless the lock is "
                "stale"
            )
        return line

    def release(self) -> Optional[str]:
        """Remove the lock while it is ours: a note when it could not be (never raises a SwitchError)."""
        if not self.held:
            return None
        self.held = False
        d = self.driver
        note: Optional[str] = None
        try:
            line = d.lock_holder()
            if line in ("", self.me.line()):
                d.lock_remove()
            else:
                note = f"the window lock {d.lock_path} was taken over by {self._describe(line)} (ours was broken as stale): left as it is"
        except SwitchError as exc:
            note = (
                f"could not remove the window lock {d.lock_path} on the switch ({exc.reason}): remove it by "
                f"hand (rm -rf {d.lock_path}) - the next window breaks it once its process is gone"
            )
        if self.controller is not None:
            self.controller.release()
        return note


def lock_description(state: LockState) -> Optional[str]:
    """Who holds the switch's window lock (Driver.lock_read), in words; None when it is free."""
    if not state["exists"]:
        return None
    line = state["text"]
    if not line:
        age = state["age_s"]
        return "a window that has not written its name yet (an empty lock" + (f", {int(age)} s old by the switch's clock)" if age is not None else ")")
    holder = _lock.Holder.parse(line)
    return holder.describe() if holder else f"{line[:120]!r} (not a holder linerate wrote)"


def earlier_window(driver: Driver, backup_dir: str, alive: Callable[[Any, Any], bool] = _lock.pid_alive) -> Optional[dict[str, Any]]:
    """The window an earlier run left in the journal (:mod:`journal`) of this switch, read with the switch
    now: None when there is none, else ``{"path", "entry", "clean", "report"}``. ``clean`` when the switch
    is byte-identical to that window's backup (or at its confirmed change) with nothing pending: the
    journal may then be removed. A window whose process still runs on this controller is in flight."""
    path = _journal.journal_path(backup_dir, driver.name)
    entry = _journal.read(path)
    if entry is None:
        return None
    if "unreadable" in entry:
        return {
            "path": path,
            "entry": entry,
            "clean": False,
            "report": f"the window journal {path} is not one linerate wrote ({entry['unreadable']!r}): read the switch by hand, then remove it",
        }
    me = _lock.Holder.me("check")
    who = f"run {entry.get('run')}, pid {entry.get('pid')}"
    if entry.get("machine") and entry["machine"] == me.machine and entry.get("pid") != me.pid and alive(entry.get("pid"), entry.get("start")):
        return {
            "path": path,
            "entry": entry,
            "clean": False,
            "report": f"a change window on this switch ({who}) is still running on this controller: wait for it",
        }
    backup = None
    if entry.get("backup_path"):
        try:
            with open(entry["backup_path"], encoding="utf-8") as f:
                backup = f.read()
        except OSError:
            backup = None
    running = driver.get_running()
    pend = driver.pending()
    confirmed = "after the change was confirmed" in (entry.get("outcome") or "")
    at_backup = backup is not None and running == backup
    what = entry.get("outcome") or (f"cut off during {entry.get('step')} with no outcome written (its process ended without a word: killed outright)")
    now = (
        f"the running config is byte-identical to its backup {entry.get('backup_path')}"
        if at_backup
        else f"the running config differs from its backup {entry.get('backup_path')}"
    )
    clean = not pend and (at_backup or confirmed)
    report = (
        f"an earlier change window on this switch ({who}) was cut off: {what}. Now: {now}, "
        + ("nothing pending" if not pend else "pending: " + "; ".join(pend))
        + ("" if clean else f". Restore that backup (playbooks/switch_rollback.yml) once you know why; the journal {path} stays until the switch is clean")
    )
    return {"path": path, "entry": entry, "clean": clean, "report": report}
