"""Parser for NCCL's configuration file (``/etc/nccl.conf``, ``~/.nccl.conf``).

NCCL reads ``KEY=VALUE`` lines at init (src/misc/param.cc ``setEnvFile``): the
name is everything before the first ``=``, the value everything after it, taken
verbatim (no quotes removed, no blanks trimmed), and ``setenv(..., 0)`` leaves a
variable already in the environment alone. Blank lines and ``#`` comments are
skipped here; a line NCCL would mis-read (no ``=``, a name with blanks) is an
error naming the line. Pure function, stdlib only, importable on its own.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

_LINE_RE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")


def parse_nccl_conf(text: Optional[str]) -> dict[str, str]:
    """``NCCL_IB_TC=104`` lines -> ``{"NCCL_IB_TC": "104", ...}`` (the first line of a key wins: NCCL's setenv does not overwrite).

    Raises ParseError naming the line when a line is neither a comment nor ``KEY=VALUE``.
    """
    settings: dict[str, str] = {}
    for number, line in enumerate((text or "").replace("\r\n", "\n").split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE_RE.match(line)
        if not match:
            raise ParseError("nccl.conf", "line %d is not KEY=VALUE: %r" % (number, line.strip()[:120]))
        settings.setdefault(match.group("key"), match.group("value"))
    return settings


def missing_socket_ifnames(value: Optional[str], interfaces: Iterable[str]) -> list[str]:
    """The items of an ``NCCL_SOCKET_IFNAME`` value that match none of ``interfaces`` (names in /sys/class/net).

    NCCL's reading (src/misc/socket.cc ``matchIfList``): a comma-separated list of name prefixes, or of
    exact names after a leading ``=``; a leading ``^`` makes it an exclude list, which names no interface
    NCCL must find (nothing is missing). ``lo`` is an interface like any other.
    """
    value = (value or "").strip()
    if not value or value.startswith("^"):
        return []
    exact = value.startswith("=")
    items = [item.strip() for item in value.lstrip("=").split(",") if item.strip()]
    return [item for item in items if not any(name == item if exact else name.startswith(item) for name in interfaces)]
