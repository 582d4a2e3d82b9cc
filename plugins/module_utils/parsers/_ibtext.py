"""Text helpers shared by the RDMA inventory parsers (ibtools.py, iblink.py).

Stdlib only, importable on its own (with plugins/module_utils on sys.path): splitting lines,
the generic error lines, the ParseError for output without data, numbers and "TEXT (code)" enumerations.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn, Optional, Union

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]


# Lines that mean "the tool could not run at all", whatever the tool.
_GENERIC_ERROR_RE = re.compile(
    r"command not found|No such file or directory|Permission denied|"
    r"Operation not permitted|cannot access|not loaded|Failed to|failed:|"
    r"No IB devices found|No CAs found|iberror|ibpanic|ibwarn|Error",
    re.IGNORECASE,
)


def _lines(text: Optional[str]) -> list[str]:
    """Split ``text`` into lines, tolerating None and CRLF."""
    return (text or "").replace("\r\n", "\n").split("\n")


def _error_lines(text: Optional[str]) -> list[str]:
    """The stripped lines of ``text`` that look like error messages."""
    return [line.strip() for line in _lines(text) if _GENERIC_ERROR_RE.search(line)]


def _raise_no_data(tool: str, text: Optional[str], what: str) -> NoReturn:
    """Raise ParseError quoting the tool's error lines (or saying it printed nothing)."""
    errors = _error_lines(text)
    if errors:
        raise ParseError(tool, "; ".join(errors), text)
    if not (text or "").strip():
        raise ParseError(tool, "empty output", text)
    first = next(line.strip() for line in _lines(text) if line.strip())
    raise ParseError(tool, "no %s in output (first line: %r)" % (what, first), text)


def _to_number(value: Any) -> Union[int, float, None]:
    """'400' -> 400, '2.5' -> 2.5, anything else -> None."""
    try:
        return int(value)
    except (TypeError, ValueError):
        pass
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int_or_text(value: str) -> Union[int, str]:
    """Decimal text -> int; other text unchanged."""
    return int(value) if re.fullmatch(r"-?\d+", value) else value


def _split_enum(value: str) -> tuple[str, Optional[int]]:
    """'PORT_ACTIVE (4)' -> ('PORT_ACTIVE', 4); '4096 (5)' -> ('4096', 5); 'x' -> ('x', None)."""
    match = re.fullmatch(r"(.*?)\s*\((\d+)\)", value)
    if match:
        return match.group(1), int(match.group(2))
    return value, None


def _read_rate(port: dict[str, Any], value: str, pattern: str) -> None:
    """A port's rate as printed (``rate_text``), its Gb/s (``rate_gbps``, group 1 of ``pattern``; None when
    it does not match) and its parenthesised note (``rate_note``, group 2, when there is one)."""
    match = re.match(pattern, value)
    port["rate_text"] = value
    port["rate_gbps"] = _to_number(match.group(1)) if match else None
    if match and match.group(2):
        port["rate_note"] = match.group(2)
