"""What NVUE's show commands print, read: ``nv show interface`` (the summary), ``qos roce status``,
``qos buffer ingress-priority-group`` and ``qos pfc-watchdog`` (``-o json``, or the reference's tables
through switch/nvue_tables.py). Pure functions, stdlib only; the NVUE driver (switch/nvue.py) reads its
oper state with them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Optional, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, column_spans, split_columns
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import nvue_tables
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    from common import ParseError, column_spans, split_columns  # type: ignore[import-not-found,no-redef]

    try:
        import nvue_tables  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch import nvue_tables  # type: ignore[import-not-found,no-redef]


class SummaryRow(TypedDict, total=False):
    """One interface of ``nv show interface``; ``warnings`` only where a cell was not read."""

    up: bool
    mtu: Optional[int]
    speed: str
    warnings: list[str]


class PriorityGroup(TypedDict):
    lossless: bool
    headroom: int
    xoff: int


class WatchdogClass(TypedDict):
    status: str
    deadlock: int


class Watchdog(TypedDict):
    enabled: bool
    status: dict[int, WatchdogClass]


# the link states NVUE prints (the kernel's operstates: RFC 2863 ifOperStatus as iproute2 names them)
OPER_STATES = ("up", "down", "dormant", "lowerlayerdown", "unknown", "notpresent", "testing")
# the columns of ``nv show interface`` in the published outputs (Cumulus Linux 5.x and the 5.15/5.19 guides)
SUMMARY_COLUMNS = ("Interface", "State", "Admin Status", "Oper Status", "Speed", "MTU", "Type", "Remote Host", "Remote Port", "Summary")


def parse_interface_summary(text: Optional[str]) -> dict[str, SummaryRow]:
    """``nv show interface`` (table or ``-o json``) -> {name: {"up": bool, "mtu": int|None, "speed": str}}.

    JSON (``-o json``, preferred; ``{name: {"type", "link": {"oper-status"
    | "state", "mtu", "speed"}}}``) is recognized by its leading ``{``.
    The table is read by the header's column positions (the dashed rule
    under it when present), whatever the column order: Cumulus Linux 5.x
    prints ``Interface State Speed MTU Type Remote Host ...``, earlier NVUE
    ``Interface MTU Speed State ...`` with ``+ `` row markers. A blank cell
    (no Speed on a vrf, bridge or down port) stays blank; wrapped Summary
    lines (blank Interface cell) are skipped. ``speed`` is ``""`` when blank. The Cumulus Linux 5.15
    and 5.19 user guides (Interface Configuration and Management, "Show Interface Information") print
    ``Interface  Admin Status  Oper Status  Speed  MTU ...``: there ``Oper Status`` is the state read.

    Raises ParseError (naming the line) on NVUE errors, a table without an
    ``Interface``/``State`` header, a row whose text crosses the header's
    column boundaries, or an interface row without a State. Any State other
    than ``up`` (``down``, ``dormant``, ``lowerlayerdown``, ``unknown``)
    reads as not up. A row whose MTU is not a number, or whose State is none
    of OPER_STATES, has a ``warnings`` list naming the line and the cell
    (issue 38: read as unknown / not up, never dropped unsaid), and so does
    every row under a header with a column none of SUMMARY_COLUMNS (named:
    not read); a row read cleanly has no such key.
    """
    stripped = (text or "").strip()
    if stripped.startswith("{"):
        return _interface_summary_json(stripped, text)
    if re.search(r"^Error", text or "", re.M):
        raise ParseError("nvue", stripped.splitlines()[0], text)
    lines = (text or "").replace("\r\n", "\n").split("\n")
    header_at = next((n for n, line in enumerate(lines) if re.match(r"^\s*Interface\s", line) and re.search(r"\bState\b|\bOper Status\b", line)), None)
    if header_at is None:
        raise ParseError("nvue", "nv show interface: no 'Interface ... State' header line", text)
    below = lines[header_at + 1] if header_at + 1 < len(lines) else ""
    rule = below if below.strip() and set(below.strip()) <= set("-\u2026 ") else None
    spans = column_spans(lines[header_at], rule)
    names = [span[0] for span in spans]
    if rule and any(
        0 < start <= len(lines[header_at]) and not lines[header_at][start - 1].isspace() and not lines[header_at][start : start + 1].isspace()
        for _n, start, _e in spans[1:]
    ):
        raise ParseError(
            "nvue", "line %d: the header does not fit its dashed rule (a column name runs across a column): %r" % (header_at + 1, lines[header_at]), text
        )
    state_col = "State" if "State" in names else "Oper Status"
    if "Interface" not in names or state_col not in names:
        raise ParseError("nvue", "line %d: no Interface and State columns in the header: %r" % (header_at + 1, lines[header_at]), text)
    unknown = ["line %d: column %r is not read (unknown to this parser)" % (header_at + 1, n) for n in names if n not in SUMMARY_COLUMNS]
    res: dict[str, SummaryRow] = {}
    last: Optional[str] = None
    for number, line in enumerate(lines[header_at + (2 if rule else 1) :], header_at + (3 if rule else 2)):
        if not line.strip():
            continue
        cells = split_columns(line, spans)
        if cells is None:
            raise ParseError("nvue", "line %d does not fit the header's columns: %r" % (number, line), text)
        name = cells["Interface"].lstrip("+- ").strip()
        state = cells.get(state_col, "")
        if not name or (name == last and not state and not cells.get("MTU")):
            continue  # a wrapped Summary cell, or the same interface's next Summary line
        last = name
        if not state or " " in state:
            raise ParseError("nvue", "line %d: no State for %r: %r" % (number, name, line), text)
        mtu = cells.get("MTU", "")
        res[name] = {"up": state == "up", "mtu": int(mtu) if mtu.isdigit() else None, "speed": cells.get("Speed", "")}
        notes = list(unknown)
        if mtu and not mtu.isdigit():
            notes.append("line %d: MTU %r is not a number: read as unknown" % (number, mtu))
        if state not in OPER_STATES:
            notes.append("line %d: State %r is not a link state NVUE documents: read as not up" % (number, state))
        if notes:
            res[name]["warnings"] = notes
    return res


def _interface_summary_json(document: str, text: Optional[str]) -> dict[str, SummaryRow]:
    try:
        data = json.loads(document)
    except ValueError as err:
        raise ParseError("nvue", "nv show interface -o json: invalid JSON: %s" % err, text)
    if not isinstance(data, dict):
        raise ParseError("nvue", "nv show interface -o json: not an object of interfaces", text)
    res: dict[str, SummaryRow] = {}
    for name, info in data.items():
        link = info.get("link") if isinstance(info, dict) else None
        if not isinstance(link, dict):
            raise ParseError("nvue", "nv show interface -o json: %r has no link object" % name, text)
        state = link.get("oper-status", link.get("state"))
        if isinstance(state, dict):  # {"up": {}}
            state = next(iter(state), None)
        if not isinstance(state, str) or not state:
            raise ParseError("nvue", "nv show interface -o json: %r has no link state" % name, text)
        mtu = link.get("mtu")
        res[name] = {"up": state == "up", "mtu": mtu if isinstance(mtu, int) else None, "speed": str(link.get("speed") or "")}
    return res


# the rows of ``qos roce status`` / ``nv show qos roce`` in the published outputs (Cumulus Linux 5.0 - 5.12,
# docs/conformance.md): those read, and those known and not needed
_ROCE_READ = ("pfc-priority", "trust-mode", "congestion-mode", "min-threshold", "max-threshold", "mode")
_ROCE_KNOWN = _ROCE_READ + (
    "enable",
    "pfc",
    "rx-enabled",
    "tx-enabled",
    "cable-length",
    "congestion-control",
    "enabled-tc",
    "probability",
    "trust",
    "lldp-app-tlv",
    "priority",
    "protocol-id",
    "selector",
)
# the words of a congestion mode: ``ecn, absolute`` (5.0 per port), ``ECN`` (5.12 global)
_CONGESTION_WORDS = ("ecn", "red", "absolute", "relative")
_CELL_RE = re.compile(r"\S+(?: \S+)*")


def parse_roce_status(text: Optional[str]) -> dict[str, Any]:
    """``nv show interface <swp> qos roce status`` -> {"pfc": [..], "trust": str, "ecn": bool, ...}.

    Values are read from the ``operational`` column (its position comes from
    the header line), so an empty value is not mistaken for the description.
    What it cannot read is named in ``warnings`` (present only then; issue 38):
    a row of the key column none of the published outputs has, a PFC
    priority that is not 0-7, a congestion mode in other words than
    ``ecn``/``red``/``absolute``/``relative``. ``pfc`` holds the priorities read.
    """
    if re.search(r"^Error", text or "", re.M):
        raise ParseError("nvue", f"{(text or '').strip()}")
    vals: dict[str, str] = {}
    col: Optional[tuple[int, int]] = None
    warnings: list[str] = []
    started = False
    for number, line in enumerate((text or "").splitlines(), 1):
        if col is None and "operational" in line:
            start = line.index("operational")
            nxt = re.search(r"\S", line[start + len("operational") :])
            col = (start, start + len("operational") + (nxt.start() if nxt else 40))
            continue
        if line.startswith("RoCE "):
            break
        if col and not started:
            started = bool(re.match(r"^-+(\s+-+)+\s*$", line))
            if started:
                continue
        m = re.match(r"^\s*(\S+)", line)
        if not (m and col):
            continue
        key = m.group(1)
        if key in _ROCE_READ:
            # the cell: the single-spaced words that start in the operational column (a value wider
            # than the column runs on; cut at the column's end it would lose its tail)
            cell = _CELL_RE.search(line, col[0])
            vals[key] = cell.group() if cell and cell.start() < col[1] else ""
        elif key not in _ROCE_KNOWN and started:
            warnings.append("line %d: not read: %r" % (number, line.strip()))
    pfc = vals.get("pfc-priority", "")
    prios: list[int] = []
    for item in (x.strip() for x in pfc.split(",") if x.strip()):
        if item.isdigit() and int(item) < 8:
            prios.append(int(item))
        else:
            warnings.append("pfc-priority %r: %r is not a priority 0-7: not read" % (pfc, item))
    mode = vals.get("congestion-mode", "")
    if any(w.strip() and w.strip().lower() not in _CONGESTION_WORDS for w in mode.split(",")):
        warnings.append("congestion-mode %r: a mode NVUE's published outputs do not print: ECN read as %s" % (mode, "on" if "ecn" in mode.lower() else "off"))
    out: dict[str, Any] = {
        "pfc": prios,
        "trust": vals.get("trust-mode", ""),
        "ecn": "ecn" in mode.lower(),
        "min_threshold": vals.get("min-threshold", ""),
        "max_threshold": vals.get("max-threshold", ""),
    }
    if warnings:
        out["warnings"] = warnings
    return out


def _nvue_json(text: Optional[str], command: str) -> dict[str, Any]:
    """The document ``nv show ... -o json`` printed, or ParseError naming the command (an NVUE
    ``Error:`` line, a refused form, text where JSON was asked for)."""
    stripped = (text or "").strip()
    if not stripped.startswith("{"):
        first = stripped.splitlines()[0] if stripped else "no output"
        raise ParseError("nvue", f"{command}: not a JSON object: {first}", text)
    try:
        data = json.loads(stripped)
    except ValueError as err:
        raise ParseError("nvue", f"{command}: invalid JSON: {err}", text)
    if not isinstance(data, dict):
        raise ParseError("nvue", f"{command}: not a JSON object", text)
    return data


_UNITS: dict[str, int] = {"": 1, "b": 1, "byte": 1, "bytes": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3}


def _bytes(value: Any) -> Optional[int]:
    """An NVUE size as bytes: a number (JSON) or the table's ``18.98 KB`` / ``0 Bytes``; None if unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        # a JSON number that is not a size (1e999 reads as inf, NaN as nan) is unreadable, not a crash
        return int(value) if math.isfinite(value) else None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value or ""))
    if not m or m.group(2).lower() not in _UNITS:
        return None
    return int(round(float(m.group(1)) * _UNITS[m.group(2).lower()]))


def parse_ingress_priority_groups(text: Optional[str]) -> dict[int, PriorityGroup]:
    """``nv show interface <swp> qos buffer ingress-priority-group -o json`` ->
    {pg: {"lossless": bool, "headroom": bytes, "xoff": bytes}}.

    NVUE command reference, Show-Commands/QoS.md "nv show interface <interface-id> qos buffer
    ingress-priority-group" (Cumulus Linux 5.4.0 and later): one row per priority group with its pool,
    mode, sizes, ``Lossy/Lossless``, ``XON Th``, ``XOFF Th`` and ``HR`` (headroom). The JSON keys are
    the columns' (``lossy-lossless``, ``xon-th``, ``xoff-th``, ``hr``; docs/conformance.md); a size is
    a number of bytes or the table's ``18.98 KB``. The reference's own table (no ``-o json``: the form
    with a published sample) is read too (``nvue_tables.pg_table``). A row without a readable mode or
    headroom is a ParseError naming the priority group."""
    cmd = "nv show interface <swp> qos buffer ingress-priority-group -o json"
    text_form = not (text or "").strip().startswith("{")
    data: dict[str, Any] = nvue_tables.pg_table(text, cmd[: -len(" -o json")]) if text_form else _nvue_json(text, cmd)
    res: dict[int, PriorityGroup] = {}
    for pg, row in data.items():
        if not str(pg).isdigit() or not isinstance(row, dict):
            raise ParseError("nvue", f"{cmd}: {pg!r} is not a priority group row", text)
        mode = str(row.get("lossy-lossless", "")).strip().lower()
        head = _bytes(row.get("hr"))
        if mode not in ("lossy", "lossless") or head is None:
            raise ParseError("nvue", f"{cmd}: priority group {pg} has no lossy-lossless mode or hr (headroom) size: {row!r}", text)
        res[int(pg)] = {"lossless": mode == "lossless", "headroom": head, "xoff": _bytes(row.get("xoff-th")) or 0}
    return res


def lossless_headroom(pgs: dict[int, PriorityGroup]) -> list[int]:
    """The priorities with lossless headroom: a lossless priority group with headroom (``hr`` > 0).
    The priority group of switch priority n is n (the identity map of linerate's fabric config; the
    reference shows no command that prints the map)."""
    return sorted(pg for pg, row in pgs.items() if pg <= 7 and row["lossless"] and row["headroom"] > 0)


def parse_pfc_watchdog(text: Optional[str]) -> Watchdog:
    """``nv show interface <swp> qos pfc-watchdog -o json`` -> {"enabled": bool, "status": {tc:
    {"status": str, "deadlock": int}}}.

    NVUE command reference, Show-Commands/QoS.md "nv show interface <interface-id> qos pfc-watchdog"
    (Cumulus Linux 5.6.0 and later) and the QoS guide's example: ``state`` (``enabled``/``disabled``)
    and the "PFC WD Status" table per traffic class (``status`` OK or DEADLOCK, ``deadlock-count``);
    that published table is read too (``nvue_tables.pfc_watchdog_table``)."""
    cmd = "nv show interface <swp> qos pfc-watchdog -o json"
    text_form = not (text or "").strip().startswith("{")
    data = nvue_tables.pfc_watchdog_table(text, cmd[: -len(" -o json")]) if text_form else _nvue_json(text, cmd)
    state = data.get("state")
    if isinstance(state, dict):  # {"enabled": {}}
        state = next(iter(state), None)
    if state not in ("enabled", "disabled", "enable", "disable"):
        raise ParseError("nvue", f"{cmd}: no state (enabled or disabled): {state!r}", text)
    status: dict[int, WatchdogClass] = {}
    if not isinstance(data.get("status") or {}, dict):
        raise ParseError("nvue", f"{cmd}: status is not a table of traffic classes: {data.get('status')!r}", text)
    for tc, row in (data.get("status") or {}).items():
        count = row.get("deadlock-count") if isinstance(row, dict) else None
        if not str(tc).isdigit() or isinstance(count, bool) or not str(count).isdigit():
            raise ParseError("nvue", f"{cmd}: traffic class {tc!r} has no deadlock-count: {row!r}", text)
        status[int(tc)] = {"status": str(row.get("status", "")), "deadlock": int(str(count))}
    return {"enabled": str(state).startswith("enable"), "status": status}
