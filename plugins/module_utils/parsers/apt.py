# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Parser for ``apt-cache madison`` (what a repository offers)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]


def parse_madison(text: object) -> dict[str, list[str]]:
    """``apt-cache madison`` rows -> {package: [versions]} (as apt prints them, newest first; a source
    package's ``Sources`` row lists its version too).

    A row is ``package | version | source``. apt's own notes (``N: ...``, ``W: ...``, ``E: ...``: a package
    it cannot locate) are skipped. Any other line, or a ``|`` row without a package or a version, raises
    ParseError naming the line (issue 38: a line is read or refused, never dropped unsaid).
    """
    tool = "apt-cache madison"
    if not isinstance(text, str):
        raise ParseError(tool, f"no output text ({type(text).__name__})")
    out: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or re.match(r"^[NWE]: ", line.strip()):
            continue
        cols = [c.strip() for c in line.split("|")]
        if len(cols) < 3 or not cols[0] or not cols[1] or " " in cols[0] or " " in cols[1]:
            raise ParseError(tool, f"line {number}: not a 'package | version | source' row: {line.strip()!r}", text)
        out.setdefault(cols[0], []).append(cols[1])
    return out
