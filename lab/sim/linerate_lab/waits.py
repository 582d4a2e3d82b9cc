"""Waits in the lab bounded by the state they wait for, not by a clock a loaded machine misses.

A lab wait (a simulator answering a fault request, a service writing its ready file, sshd
coming up in a node) polls for the state it needs and ends as soon as either

- the state is there (the wait returns it), or
- the state can no longer come: the process that would bring it is gone (``gone()`` returns
  why), which ends the wait at once with that reason.

Only while the process is alive and has not answered does the wait go on, up to one generous
overall deadline (``LINERATE_LAB_WAIT_S``, default 600 s) that a healthy but loaded machine
(load average 5 on 2 cores: every simulator answers late, none fails) never reaches; it
exists so that a simulator that is alive but wedged still ends the wait with an error.
Every error names what was waited for, on which simulator, and why it ended.
"""

import os
import time

DEFAULT_DEADLINE_S = 600.0


class WaitError(RuntimeError):
    """A lab wait that ended without its state: the message says what, which simulator and why."""


def deadline_s(default=DEFAULT_DEADLINE_S):
    """The overall deadline of a lab wait: LINERATE_LAB_WAIT_S, a positive number of seconds."""
    raw = os.environ.get("LINERATE_LAB_WAIT_S")
    if raw is None or raw == "":
        return float(default)
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise WaitError(f"LINERATE_LAB_WAIT_S: {raw!r} is not allowed (allowed: a positive number of seconds)")
    return value


def pid_alive(pid):
    """Whether process ``pid`` runs: it exists and is not a zombie (a child that exited, not reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(what, ready, gone=None, deadline=None, interval=0.1, clock=time.monotonic, sleep=time.sleep):
    """Poll ``ready()`` until it returns something other than None and return that.

    ``gone()``, polled beside it, returns None while the awaited state can still come, or a
    reason (a string) why it never will: the wait ends at once with WaitError(what: reason).
    ``deadline`` (seconds, default deadline_s()) bounds a wait on a live process that never answers.
    """
    limit = deadline_s() if deadline is None else float(deadline)
    start = clock()
    while True:
        value = ready()
        if value is not None:
            return value
        reason = gone() if gone is not None else None
        if reason:
            # the state may have come just before the process went (an answer, then exit)
            value = ready()
            if value is not None:
                return value
            raise WaitError(f"{what}: {reason}")
        waited = clock() - start
        if waited >= limit:
            raise WaitError(
                f"{what}: no answer after {waited:.0f} s although the process is alive (wedged or starved; LINERATE_LAB_WAIT_S={limit:.0f} bounds this wait)"
            )
        sleep(interval)
