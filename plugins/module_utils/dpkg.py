# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""dpkg's package state, read as dpkg writes it.

`dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n'` prints, per
package, a three-letter status (dpkg-query(1), "Status-Abbrev"):

- first letter, the selection (what is wanted): u unknown, i install,
  h hold, r remove, p purge;
- second, the package state: n not-installed, c config-files, H half-installed,
  U unpacked, F half-configured, W triggers-awaited, t triggers-pending,
  i installed;
- third, the error flag: ' ' none, R reinstallation required.

A package is installed when its state is i, W or t (its files are in place and
configured; trigger processing does not change what version runs), whatever the
selection: `hi` is installed and held (what the mofed role leaves), `ri` is
installed and marked for removal. `rc`, `un`, `iU`, `iF`, `iH` are not.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

SELECTIONS = {"u": "unknown", "i": "install", "h": "hold", "r": "remove", "p": "purge"}
STATES = {"n": "not-installed", "c": "config-files", "H": "half-installed", "U": "unpacked",
          "F": "half-configured", "W": "triggers-awaited", "t": "triggers-pending", "i": "installed"}
INSTALLED_STATES = ("i", "W", "t")


try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError


def status_from_abbrev(abbrev):
    """'hi ' -> {'selection': 'hold', 'state': 'installed', 'installed': True, 'held': True,
    'reinstall_required': False}."""
    text = (abbrev or "").ljust(3)
    sel, state, err = text[0], text[1], text[2]
    if sel not in SELECTIONS or state not in STATES or err not in (" ", "R") or len(text.rstrip()) > 3:
        raise ParseError("dpkg-query", f"not a dpkg status abbreviation: {abbrev!r}")
    return {"selection": SELECTIONS[sel], "state": STATES[state], "installed": state in INSTALLED_STATES,
            "held": sel == "h", "reinstall_required": err == "R"}


def parse_dpkg_query(text):
    """Lines of `${Package} ${Version} ${db:Status-Abbrev}` -> {package: {version, ...status}}.

    dpkg-query prints "dpkg-query: no packages found matching NAME" on stderr for
    an unknown package and nothing on stdout; a package known only from a
    removed install has an empty version (`foo  un `).
    """
    if not isinstance(text, str):
        raise ParseError("dpkg-query", f"output must be text, not {type(text).__name__}")
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, rest = line.partition(" ")
        if not sep:
            raise ParseError("dpkg-query", f"line {n}: {line!r}: expected 'package version status'", text)
        version, sep, abbrev = rest.partition(" ")
        if not sep:
            raise ParseError("dpkg-query", f"line {n}: {line!r}: expected 'package version status'", text)
        try:
            status = status_from_abbrev(abbrev)
        except ParseError as exc:
            raise ParseError("dpkg-query", f"line {n}: {line!r}: {str(exc).split(': ', 1)[1]}", text) from None
        out[name] = dict(status, version=version or None)
    return out


def installed_versions(text):
    """{package: version} of the packages dpkg-query reports as installed (held ones included)."""
    return {name: st["version"] for name, st in parse_dpkg_query(text).items() if st["installed"]}


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
        problems.append(f"dpkg was interrupted: {updates} holds {len(journal)} unapplied journal "
                        f"entr{'y' if len(journal) == 1 else 'ies'} ({', '.join(journal[:5])})")
    argv = ["dpkg", "--audit"] if admindir == ADMINDIR else ["dpkg", f"--admindir={admindir}", "--audit"]
    rc, out, err = run(argv)
    if rc not in (0, 1):
        raise ParseError("dpkg", f"--audit failed (rc {rc}): {err.strip() or out.strip()}", err)
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
    rc, out, err = run(["dpkg-query", "-W", "-f", QUERY_FORMAT, *names])
    # rc 1 with "no packages found matching" on stderr names unknown packages; anything else is an error.
    unknown_only = all("no packages found matching" in line for line in err.splitlines() if line.strip())
    if rc not in (0, 1) or (rc == 1 and not unknown_only):
        raise ParseError("dpkg-query", f"failed (rc {rc}): {err.strip() or out.strip()}", err)
    state = parse_dpkg_query(out)
    before = {name: state[name]["selection"] if name in state else "not present" for name in names}
    todo = [name for name in names if before[name] != "hold"]
    commands = []
    if todo:
        argv = ["dpkg", "--set-selections"]
        commands.append(argv)
        if not check:
            rc, out, err = run(argv, data="".join(f"{name} hold\n" for name in todo))
            if rc != 0:
                raise ParseError("dpkg", f"--set-selections failed (rc {rc}): {err.strip() or out.strip()}", err)
    return {"changed": bool(todo), "held": todo, "before": before, "commands": commands}
