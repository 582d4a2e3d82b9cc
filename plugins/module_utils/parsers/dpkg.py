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

from __future__ import absolute_import, annotations, division, print_function

from typing import Optional, TypedDict

__metaclass__ = type

SELECTIONS = {"u": "unknown", "i": "install", "h": "hold", "r": "remove", "p": "purge"}
STATES = {
    "n": "not-installed",
    "c": "config-files",
    "H": "half-installed",
    "U": "unpacked",
    "F": "half-configured",
    "W": "triggers-awaited",
    "t": "triggers-pending",
    "i": "installed",
}
INSTALLED_STATES = ("i", "W", "t")


try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]


class PackageStatus(TypedDict):
    """One ``${db:Status-Abbrev}`` decoded (``status_from_abbrev``)."""

    selection: str
    state: str
    installed: bool
    held: bool
    reinstall_required: bool


class PackageState(PackageStatus):
    """One package of ``parse_dpkg_query``: its status and version (None: known only from a removed install)."""

    version: Optional[str]


def status_from_abbrev(abbrev: Optional[str]) -> PackageStatus:
    """'hi ' -> {'selection': 'hold', 'state': 'installed', 'installed': True, 'held': True,
    'reinstall_required': False}."""
    text = (abbrev or "").ljust(3)
    sel, state, err = text[0], text[1], text[2]
    if sel not in SELECTIONS or state not in STATES or err not in (" ", "R") or len(text.rstrip()) > 3:
        raise ParseError("dpkg-query", f"not a dpkg status abbreviation: {abbrev!r}")
    return {"selection": SELECTIONS[sel], "state": STATES[state], "installed": state in INSTALLED_STATES, "held": sel == "h", "reinstall_required": err == "R"}


def parse_dpkg_query(text: object) -> dict[str, PackageState]:
    """Lines of `${Package} ${Version} ${db:Status-Abbrev}` -> {package: {version, ...status}}.

    dpkg-query prints "dpkg-query: no packages found matching NAME" on stderr for
    an unknown package and nothing on stdout; a package known only from a
    removed install has an empty version (`foo  un `).
    """
    if not isinstance(text, str):
        raise ParseError("dpkg-query", f"output must be text, not {type(text).__name__}")
    out: dict[str, PackageState] = {}
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
        out[name] = PackageState(**status, version=version or None)
    return out


def installed_versions(text: object) -> dict[str, Optional[str]]:
    """{package: version} of the packages dpkg-query reports as installed (held ones included)."""
    return {name: st["version"] for name, st in parse_dpkg_query(text).items() if st["installed"]}
