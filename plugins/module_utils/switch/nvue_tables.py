"""The documented text tables of two NVUE lossless reads, as the documents ``-o json`` would give.

NVUE publishes no ``-o json`` sample (and its OpenAPI definition is not among the sources reachable
here) for ``nv show interface <swp> qos buffer ingress-priority-group`` and ``nv show interface <swp>
qos pfc-watchdog``; the command reference (CumulusNetworks/docs
``content/nvue-reference/Show-Commands/QoS.md``, Cumulus Linux 5.4.0 / 5.6.0) and the QoS guide
publish their tables. The driver asks for JSON first and, when a switch answers in a shape the JSON
reader does not know, reads the table: these functions turn the table into the dict the JSON
reader takes (keys ``lossy-lossless``, ``xon-th``, ``xoff-th``, ``hr``, ...; ``state`` and
``status.<tc>.{status,deadlock-count}``), so both shapes go through one validation.

Table layout (the reference's example): header words truncated with ``…`` and wrapped onto a
second header line, a dashed rule whose runs give the columns, cells wrapped onto continuation
lines (``18.98`` / ``KB``) whose first column is blank.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

# the reference's column order and each column's JSON key (docs/conformance.md, NVUE)
PG_COLUMNS = [
    ("priority-group", None),
    ("Pool ID", "pool-id"),
    ("Mode", "mode"),
    ("Reserved Size", "reserved-size"),
    ("Current Usage", "current-usage"),
    ("Max Usage", "max-usage"),
    ("Shared Max", "shared-max"),
    ("Lossy/Lossless", "lossy-lossless"),
    ("XON Th", "xon-th"),
    ("XOFF Th", "xoff-th"),
    ("HR", "hr"),
    ("HR/PL Usage", "hr-pl-usage"),
    ("HR/PL Max", "hr-pl-max"),
]
_RULE_RE = re.compile(r"^\s*[-…]+(?:\s+[-…]+)+\s*$")


def _spans(rule: str) -> list[tuple[int, int]]:
    """(start, end) of each run of the dashed rule."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", rule)]


def _cells(line: str, spans: Sequence[tuple[int, int]]) -> list[str]:
    """The text under each column: a cell belongs to the column its first character falls in."""
    cells = [""] * len(spans)
    for word in re.finditer(r"\S+", line):
        index = next((i for i, (start, _end) in reversed(list(enumerate(spans))) if word.start() >= start), 0)
        cells[index] = (cells[index] + " " + word.group()).strip()
    return cells


def _names(header_lines: Sequence[str], spans: Sequence[tuple[int, int]]) -> list[str]:
    """The header of each column, its wrapped lines joined (``Reserv…`` + ``Size``)."""
    names = [""] * len(spans)
    for line in header_lines:
        for index, cell in enumerate(_cells(line, spans)):
            names[index] = (names[index] + " " + cell).strip()
    return names


def _is(name: str, canonical: str) -> bool:
    """A header cell, truncated with ``…``, is ``canonical``: word for word, each a prefix."""
    words, full = name.replace("…", " ").split(), canonical.lower().split()
    return len(words) == len(full) and all(f.startswith(w.lower()) for w, f in zip(words, full))


def _table(text: Optional[str], command: str) -> tuple[list[str], list[list[str]]]:
    """(column names, rows of cells) of the first dashed-rule table in ``text``."""
    lines = (text or "").splitlines()
    rule = next((i for i, line in enumerate(lines) if _RULE_RE.match(line)), None)
    if rule is None:
        first = next((line.strip() for line in lines if line.strip()), "no output")
        raise ParseError("nvue", f"{command}: neither JSON nor the reference's table: {first}", text)
    spans = _spans(lines[rule])
    start = rule
    while start > 0 and lines[start - 1].strip():
        start -= 1
    names = _names(lines[start:rule], spans)
    rows: list[list[str]] = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            if rows:
                break
            continue
        cells = _cells(line, spans)
        if cells[0] or not rows:
            rows.append(cells)
        else:  # a continuation line: its cells belong to the row above (``18.98`` / ``KB``)
            rows[-1] = [(a + " " + b).strip() for a, b in zip(rows[-1], cells)]
    return names, rows


def pg_table(text: Optional[str], command: str) -> dict[str, dict[str, str]]:
    """``nv show interface <swp> qos buffer ingress-priority-group`` (the table) -> {pg: {json key: cell}}."""
    names, rows = _table(text, command)
    keys: list[Optional[str]] = []
    for name in names:
        match: Any = next((key for canonical, key in PG_COLUMNS if _is(name, canonical)), False)
        if match is False:
            raise ParseError("nvue", f"{command}: a column the reference does not have: {name!r} (known: {', '.join(c for c, _k in PG_COLUMNS)})", text)
        keys.append(match)
    if None not in keys or "lossy-lossless" not in keys or "hr" not in keys:
        raise ParseError("nvue", f"{command}: the table has no priority-group, Lossy/Lossless or HR column: {names!r}", text)
    return {row[keys.index(None)]: {str(key): cell for key, cell in zip(keys, row) if key} for row in rows}


def pfc_watchdog_table(text: Optional[str], command: str) -> dict[str, Any]:
    """``nv show interface <swp> qos pfc-watchdog`` (the table) -> {"state", "status": {tc: {...}}}.

    The first table is ``operational  applied`` with a ``state`` row (the operational value is
    the state); under ``PFC WD Status`` each row is ``traffic-class  status  deadlock-count``."""
    state = re.search(r"^\s*state\s+(?P<value>\S+)", text or "", re.MULTILINE)
    if not state:
        _table(text, command)  # no table at all: the same refusal as the other read
        raise ParseError("nvue", f"{command}: the table has no state row", text)
    status: dict[str, dict[str, str]] = {}
    _head, heading, rest = (text or "").partition("PFC WD Status")
    after = [line.strip() for line in (text or "")[state.end() :].splitlines()[1:] if line.strip()]
    if not heading and after:  # more than the state table, but not the status table the reference prints
        raise ParseError("nvue", f"{command}: a line after the state table that is not 'PFC WD Status': {after[0]!r}", text)
    for line in rest.splitlines():
        row = re.match(r"^\s*(?P<tc>\d+)\s+(?P<status>\S+)\s+(?P<count>\S+)\s*$", line)
        if row:
            status[row.group("tc")] = {"status": row.group("status"), "deadlock-count": row.group("count")}
        elif (
            line.strip()
            and not _RULE_RE.match(line)
            and not set(line.strip()) <= {"="}
            and not re.match(r"^\s*traffic-class\s+status\s+deadlock-count\s*$", line)
        ):
            raise ParseError("nvue", f"{command}: a PFC WD Status line that is not a row: {line.strip()!r}", text)
    return {"state": state.group("value"), "status": status}
