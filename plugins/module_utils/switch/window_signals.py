"""SIGINT and SIGTERM during a change window (switch/window.py): the guard that turns them into
:class:`Interrupted` while the window may still recover, and only records them once it must not be cut
off (the recovery, or after the confirm); and the name a signal is reported by. Stdlib-only.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any, Literal, Optional

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import journal as _journal
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import signal_name
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        import journal as _journal  # type: ignore[import-not-found,no-redef]
        from base import signal_name  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch import journal as _journal  # type: ignore[import-not-found,no-redef]
        from switch.base import signal_name  # type: ignore[import-not-found,no-redef]


def cause(signum: int) -> str:
    """The signal's name, or the controller's end when the controller watch (journal.py) sent it."""
    if signum == signal.SIGTERM and _journal.CAUSE.get("name"):
        return str(_journal.CAUSE["name"])
    return signal_name(signum)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM received while a window runs (a KeyboardInterrupt, so Ctrl-C code paths agree)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = cause(signum)
        super().__init__(self.name)


class SignalGuard:
    """For the duration of a window: SIGINT and SIGTERM raise :class:`Interrupted` (SIGTERM would
    otherwise end the process with no recovery at all). After :meth:`defer` - the recovery, or once the
    change is confirmed - a signal is only recorded in ``received``. The previous handlers come back on
    exit. Outside the main thread (where Python delivers no signals) nothing is installed."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.previous: dict[int, Any] = {}
        self.deferring = False
        self.received: list[int] = []

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self.previous[s] = signal.signal(s, self._handler)
        return self

    def _handler(self, signum: int, frame: Optional[FrameType]) -> None:
        self.received.append(signum)
        if self.deferring:
            return
        self.deferring = True  # from here a second signal waits: the recovery must not be interrupted
        raise Interrupted(signum)

    def defer(self) -> None:
        self.deferring = True

    def __exit__(self, *exc: object) -> Literal[False]:
        for s, h in self.previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        self.previous = {}
        return False
