"""On SIGINT or SIGTERM, print the outcome of every switch change window the signal cut off."""

DOCUMENTATION = r"""
---
name: window_outcome
type: notification
short_description: Print the outcome of each switch change window a SIGINT or SIGTERM cut off
description:
  - A cancel is a failure like any other (docs/switches.md). On SIGINT (Ctrl-C) or SIGTERM (an AWX or
    ansible-runner cancel) Ansible ends C(ansible-playbook) at once, before the cut-off windows' results come
    back, so nobody would see which switch ended in which state.
  - This callback, in C(ansible-playbook)'s own process, passes the signal on to Ansible's workers (which pass
    it to the M(linerate.fabric.switch_config) modules, and each rolls its window back), waits for each window
    a module named (at most its confirm timer plus 60 s), prints one line per switch with its outcome from
    the window journal C(<backup_dir>/<switch>/window.json) (then removed, the outcome has been shown), and
    only then lets Ansible's own handler end the run.
  - A window whose outcome does not come in time is named, and the next run's pre-check reports it.
  - Enabled in this project's C(ansible.cfg) (C(callbacks_enabled = linerate.fabric.window_outcome)).
version_added: "0.1.0"
author: linerate developers (@linerate)
requirements:
  - Linux (C(os.pidfd_open), C(/proc))
"""

import os
import signal
import tempfile

from ansible.plugins.callback import CallbackBase
from ansible_collections.linerate.fabric.plugins.module_utils.switch import journal


def children(pid: int) -> list:
    """The child processes of ``pid`` (proc(5) /proc/<pid>/task/<tid>/children): Ansible's workers."""
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            continue
    return out


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "linerate.fabric.window_outcome"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # inherited by the workers Ansible forks later, and by the modules they start
        self.rundir = tempfile.mkdtemp(prefix="linerate-windows-")
        os.environ[journal.RUNDIR_ENV] = self.rundir
        self.previous = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.getsignal(signum)
            signal.signal(signum, self._handler)

    def _handler(self, signum, frame):
        signal.signal(signum, signal.SIG_IGN)  # a second one while we wait changes nothing
        for pid in children(os.getpid()):
            try:
                os.kill(pid, signum)  # the worker passes it to its module's process group
            except ProcessLookupError:
                pass
        lines = journal.collect_outcomes(self.rundir)
        if lines:
            self._display.display(f"{signal.Signals(signum).name}: the change windows it cut off ended so:")
        for line in lines:
            self._display.display(f"  {line}")
        try:
            os.rmdir(self.rundir)
        except OSError:
            pass
        previous = self.previous.get(signum)
        signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        if callable(previous):
            previous(signum, frame)  # Ansible's own: SIGINT raises KeyboardInterrupt, SIGTERM ends the run
        else:
            os.kill(os.getpid(), signum)

    def v2_playbook_on_stats(self, stats):
        try:
            os.rmdir(self.rundir)  # empty: every window gave its result to Ansible
        except OSError:
            pass
