# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""dpkg on a node: whether an earlier run was interrupted, and holding packages.

What ``dpkg-query`` prints is read by ``parsers/dpkg.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.dpkg import parse_dpkg_query

QUERY_FORMAT = "${Package} ${Version} ${db:Status-Abbrev}\n"

ADMINDIR = "/var/lib/dpkg"
REPAIR = "dpkg --configure -a"


def interrupted(run, admindir=ADMINDIR):
    """What stops any package task, before it starts: an interrupted dpkg run.

    - ``<admindir>/updates/`` holds a journal entry (a file whose name is all
      digits) while dpkg runs; one left behind means dpkg was interrupted. apt
      checks the same (apt-pkg/deb/debsystem.cc, ``CheckUpdates``) and refuses
      with "dpkg was interrupted, you must manually run 'dpkg --configure -a'
      to correct the problem."
    - ``dpkg --audit`` (dpkg(1): "Performs database sanity and consistency
      checks") lists packages half-installed, unpacked but not configured,
      half-configured or awaiting triggers; it prints nothing on a sane system.

    Returns the problems (empty: none), each a line naming what was found.
    """
    problems = []
    updates = os.path.join(admindir, "updates")
    try:
        journal = sorted(n for n in os.listdir(updates) if n.isdigit())
    except OSError:
        journal = []
    if journal:
        problems.append(
            f"dpkg was interrupted: {updates} holds {len(journal)} unapplied journal entr{'y' if len(journal) == 1 else 'ies'} ({', '.join(journal[:5])})"
        )
    argv = ["dpkg", "--audit"] if admindir == ADMINDIR else ["dpkg", f"--admindir={admindir}", "--audit"]
    rc, out, err = run(argv)
    if rc not in (0, 1):
        raise ToolFailure.exited(argv, rc, out, err)
    lines = [line.rstrip() for line in out.splitlines() if line.strip()]
    if lines:
        problems.append("dpkg --audit: " + " / ".join(lines[:8]) + (" ..." if len(lines) > 8 else ""))
    return problems


def hold(run, names, check):
    """Put ``names`` on hold with one ``dpkg-query`` and (only for those not held yet) one
    ``dpkg --set-selections``; ``run(argv, data=None) -> (rc, out, err)``.

    Returns ``{"changed", "held" (the names this call put on hold), "before" ({name: selection}),
    "commands"}``. A package dpkg does not know (not installed, never was) is still held, as
    ``dpkg_selections`` does: ``apt`` will not install it at another version later.
    """
    names = list(dict.fromkeys(names))
    if not names:
        return {"changed": False, "held": [], "before": {}, "commands": []}
    query = ["dpkg-query", "-W", "-f", QUERY_FORMAT, *names]
    rc, out, err = run(query)
    # rc 1 with "no packages found matching" on stderr names unknown packages; anything else is an error.
    unknown_only = all("no packages found matching" in line for line in err.splitlines() if line.strip())
    if rc not in (0, 1) or (rc == 1 and not unknown_only):
        raise ToolFailure.exited(query, rc, out, err)
    try:
        state = parse_dpkg_query(out)
    except ParseError as e:
        raise ToolFailure.exited(query, rc, out, err, detail=str(e)) from None
    before = {name: state[name]["selection"] if name in state else "not present" for name in names}
    todo = [name for name in names if before[name] != "hold"]
    commands = []
    if todo:
        argv = ["dpkg", "--set-selections"]
        commands.append(argv)
        if not check:
            rc, out, err = run(argv, data="".join(f"{name} hold\n" for name in todo))
            if rc != 0:
                raise ToolFailure.exited(argv, rc, out, err)
    return {"changed": bool(todo), "held": todo, "before": before, "commands": commands}
