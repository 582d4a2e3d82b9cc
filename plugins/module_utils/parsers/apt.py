# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Parser for ``apt-cache madison`` (what a repository offers)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError


def parse_madison(text):
    """``apt-cache madison`` rows -> {package: [versions]} (newest first, as apt prints).

    Lines that are not ``package | version | source`` rows (apt's notes) are skipped.
    """
    if not isinstance(text, str):
        raise ParseError("apt-cache madison", f"no output text ({type(text).__name__})")
    out = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.split("|")]
        if len(cols) >= 3 and cols[0]:
            out.setdefault(cols[0], []).append(cols[1])
    return out
