"""Parsers for switch-side congestion counters (PFC pause frames, ECN marks, buffer discards).

Pure functions, stdlib only, importable on its own.

- ``parse_sonic_pfc_counters(text)``: SONiC ``show pfc counters`` (an Rx and a
  Tx table of PFC0..PFC7 per port; values may carry thousands separators).
- ``parse_nvue_roce_counters(text)``: Cumulus Linux NVUE
  ``nv show interface <swp> qos roce counters`` (indented tree of
  rx-stats / tx-stats: pfc pause packets, ecn-marked-packets, no-buffer-discard ...).
- ``parse_eos_pfc_counters(doc)``: Arista EOS ``show priority-flow-control
  counters | json`` (eAPI, revision 3): rx/tx PFC frames per interface.

Per-interface error counters (link health, read in the same snapshots):

- ``parse_sonic_intf_counters(text)``: SONiC ``show interfaces counters``
  (portstat: RX_ERR, RX_DRP, RX_OVR, TX_ERR ... per port; ``N/A`` -> None).
- ``parse_nvue_link_stats(text)``: NVUE ``nv show interface <swp> link stats``
  (in-errors, in-drops, out-errors, out-drops, carrier-transitions).
- ``parse_nvue_interface_counters(text)``: NVUE ``nv show interface <swp> counters``
  (5.5.0 and later: carrier-transitions, then the Drop Counters / Error Counters
  tables, Receive and Transmit; the same keys as ``parse_nvue_link_stats``).
- ``parse_eos_intf_errors(doc)``: EOS ``show interfaces counters errors | json``
  (fcsErrors, alignmentErrors, symbolErrors, inErrors, outErrors, frameTooLongs,
  frameTooShorts per interface).

A counter the platform does not expose (NVUE has no per-priority split, EOS
revision 3 no per-priority split) is simply absent: the caller says what it
cannot prove.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, TypedDict, Union

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, column_spans, eos_json, split_columns
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError, column_spans, eos_json, split_columns  # type: ignore[import-not-found,no-redef]

_SONIC_HEAD_RE = re.compile(r"^\s*Port (?P<dir>Rx|Tx)\s+(?P<prios>(?:PFC[0-7]\s*)+)$")
_DASH_RE = re.compile(r"^\s*-+(\s+-+)+\s*$")


class SonicPfcCounters(TypedDict):
    """``show pfc counters``: {port: {priority: frames}} per direction (None where N/A)."""

    rx: dict[str, dict[int, Optional[int]]]
    tx: dict[str, dict[int, Optional[int]]]


class QueueCounters(TypedDict):
    """``show queue counters``: {port: {queue: {"type", "index", counter...}}}, the columns read, warnings."""

    ports: dict[str, dict[str, dict[str, Any]]]
    columns: list[str]
    warnings: list[str]


def _count(value: str, tool: str, n: int, line: str, text: Optional[str]) -> Optional[int]:
    v = value.replace(",", "")
    if v == "N/A":
        return None
    try:
        return int(v)
    except ValueError:
        raise ParseError(tool, f"line {n}: {line.strip()!r}: {value!r} is not a counter", text) from None


_QUEUE_COLS = {
    "Counter/pkts": "pkts",
    "Counter/bytes": "bytes",
    "Drop/pkts": "drop_pkts",
    "Drop/bytes": "drop_bytes",
    "EcnMarked/pkts": "ecn_marked_pkts",
    "EcnMarked/bytes": "ecn_marked_bytes",
    "Trim/pkts": "trim_pkts",
    "TrimSent/pkts": "trim_sent_pkts",
    "TrimDrop/pkts": "trim_drop_pkts",
    # show queue wredcounters (sonic-utilities scripts/queuestat, tests/wred_queue_counter_test.py)
    "WredDrp/pkts": "wred_drop_pkts",
    "WredDrp/bytes": "wred_drop_bytes",
}


def parse_sonic_queue_counters(text: Optional[str]) -> QueueCounters:
    """``show queue counters [PORT] [--all]`` or ``show queue wredcounters [PORT]`` -> {"ports": {port: {queue:
    {"type": "UC"|"MC"|"ALL", "index": n, "pkts", "bytes", "drop_pkts", "drop_bytes", ["ecn_marked_pkts",
    "wred_drop_pkts", ...]}}}, "columns": [...], "warnings": [...]}.

    Columns come from the header (platforms with ECN statistics add EcnMarked/pkts,
    EcnMarked/bytes; --all adds the trimming columns; wredcounters prints WredDrp and
    EcnMarked); ``N/A`` -> None. A column this parser does not know is named in
    ``warnings`` and not read; ParseError when the header has no known counter column.
    """
    tool = "show queue counters"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    ports: dict[str, dict[str, dict[str, Any]]] = {}
    columns: Optional[list[Optional[str]]] = None
    warnings: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("For namespace") or s.startswith("Last cached time") or _DASH_RE.match(line):
            continue
        words = s.split()
        if words[:2] == ["Port", "TxQ"]:
            columns = [_QUEUE_COLS.get(w) for w in words[2:]]
            if not any(columns):
                raise ParseError(tool, f"line {n}: {s!r}: no counter column this parser knows (known: {', '.join(_QUEUE_COLS)})", text)
            for w in words[2:]:
                note = f"column {w!r} is not read (unknown to this parser)"
                if w not in _QUEUE_COLS and note not in warnings:
                    warnings.append(note)
            continue
        if columns is None:
            raise ParseError(tool, f"line {n}: {s!r} before the 'Port TxQ ...' header", text)
        if len(words) != len(columns) + 2:
            raise ParseError(tool, f"line {n}: {s!r}: {len(words) - 2} values for {len(columns)} columns", text)
        port, queue = words[0], words[1]
        kind = queue.rstrip("0123456789")
        if kind not in ("UC", "MC", "ALL") or not queue[len(kind) :].isdigit():
            raise ParseError(tool, f"line {n}: {queue!r} is not a queue (UCn, MCn, ALLn)", text)
        row = ports.setdefault(port, {}).setdefault(queue, {"type": kind, "index": int(queue[len(kind) :])})
        row.update({c: _count(v, tool, n, line, text) for c, v in zip(columns, words[2:]) if c})
    if columns is None:
        raise ParseError(tool, "no 'Port TxQ' header", text)
    return {"ports": ports, "columns": [c for c in columns if c], "warnings": warnings}


def parse_sonic_pfc_counters(text: Optional[str]) -> SonicPfcCounters:
    """``show pfc counters`` -> {"rx": {port: {prio: n}}, "tx": {port: {prio: n}}}."""
    if text is None or not text.strip():
        raise ParseError("show pfc counters", "no output", text)
    out: SonicPfcCounters = {"rx": {}, "tx": {}}
    current: Optional[dict[str, dict[int, Optional[int]]]] = None
    prios: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s == "..." or _DASH_RE.match(line) or s.startswith("Last cached time"):
            continue
        m = _SONIC_HEAD_RE.match(line)
        if m:
            current = out["rx"] if m.group("dir").lower() == "rx" else out["tx"]
            prios = [int(p[3:]) for p in m.group("prios").split()]
            continue
        if current is None:
            raise ParseError("show pfc counters", f"line {n}: {s!r} before a 'Port Rx/Tx PFC0..' header", text)
        cells = s.split()
        if len(cells) != len(prios) + 1:
            raise ParseError("show pfc counters", f"line {n}: {s!r}: {len(cells) - 1} counters for {len(prios)} priorities", text)
        current[cells[0]] = {p: _count(v, "show pfc counters", n, line, text) for p, v in zip(prios, cells[1:])}
    if not out["rx"] and not out["tx"]:
        raise ParseError("show pfc counters", "no Rx/Tx PFC table", text)
    return out


_NVUE_ROW_RE = re.compile(r"^(?P<indent> *)(?P<key>[a-z0-9][a-z0-9-]*)(?:\s{2,}(?P<value>\S.*?))?\s*$")
_NVUE_VALUE_RE = re.compile(r"^(?P<num>\d+(?:\.\d+)?)(?: (?P<unit>Bytes|KB|MB|GB|TB))?$")
_UNITS: dict[Optional[str], float] = {None: 1, "Bytes": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def _nvue_value(raw: str) -> Union[int, float, str]:
    """'144 Bytes' -> 144, '56.52 MB' -> 56520000, '462975' -> 462975 (first column: operational)."""
    first = re.split(r"\s{2,}", raw.strip())[0]
    m = _NVUE_VALUE_RE.match(first)
    if not m:
        return first
    value = float(m.group("num")) * _UNITS[m.group("unit")]
    return int(value) if value.is_integer() else value


def parse_nvue_roce_counters(text: Optional[str]) -> dict[str, Any]:
    """``nv show interface <swp> qos roce counters`` -> {"tree": {...}, "rx_pause", "tx_pause",
    "ecn_marked", "rx_roce_discards", "tx_roce_discards", "cnp_tx"} (None where absent)."""
    tree = _nvue_tree(text, "nv show qos roce counters")

    def get(*path: str) -> Any:
        node: Any = tree
        for p in path:
            if not isinstance(node, dict) or p not in node:
                return None
            node = node[p]
        return node

    return {
        "tree": tree,
        "rx_pause": get("rx-stats", "rx-pfc-stats", "pause-packets"),
        "tx_pause": get("tx-stats", "tx-pfc-stats", "pause-packets"),
        "ecn_marked": get("tx-stats", "tx-ecn-stats", "ecn-marked-packets"),
        "rx_roce_discards": get("rx-stats", "rx-roce-stats", "no-buffer-discard"),
        "tx_roce_discards": get("tx-stats", "tx-roce-stats", "unicast-no-buffer-discard"),
        "cnp_tx": get("tx-stats", "tx-cnp-stats", "cnp-packets"),
    }


def parse_eos_pfc_counters(doc: Any) -> dict[str, dict[str, dict[str, int]]]:
    """``show priority-flow-control counters | json`` (text or parsed) -> {"ports": {intf: {"rx", "tx"}}}."""
    counters = eos_json("show priority-flow-control counters", doc, "interfaceCounters")
    ports: dict[str, dict[str, int]] = {}
    for intf, c in counters.items():
        if not isinstance(c, dict) or not isinstance(c.get("rxFrames"), int) or not isinstance(c.get("txFrames"), int):
            raise ParseError("show priority-flow-control counters", f"{intf}: rxFrames/txFrames missing", None)
        ports[intf] = {"rx": c["rxFrames"], "tx": c["txFrames"]}
    return {"ports": ports}


# ---------------------------------------------------------------- per-interface error counters

_RATE_UNITS = ("B/s", "KB/s", "MB/s", "GB/s", "Mb/s", "Kb/s", "Gb/s")
_SONIC_INTF_COUNTS = ("RX_OK", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_ERR", "TX_DRP", "TX_OVR")


def parse_sonic_intf_counters(text: Optional[str]) -> dict[str, Any]:
    """``show interfaces counters`` (portstat) -> {"ports": {port: {"state": str or None, "RX_ERR": n or None, ...}},
    "columns": [...]}: the packet counters RX_OK, RX_ERR, RX_DRP, RX_OVR, TX_OK, TX_ERR, TX_DRP, TX_OVR
    (``N/A`` -> None); rates and utilisation are not read, their columns are named in ``other_columns``.
    Layouts with and without the STATE column."""
    tool = "show interfaces counters"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    ports: dict[str, dict[str, Any]] = {}
    header: Optional[list[str]] = None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or _DASH_RE.match(line) or s.startswith(("Last cached time", "For namespace", "Reminder:")):
            continue
        words = s.split()
        if words[0].upper() == "IFACE":
            header = [w.upper() for w in words]
            if not all(c in header for c in ("RX_ERR", "TX_ERR")):
                raise ParseError(tool, f"line {n}: {s!r}: no RX_ERR/TX_ERR column", text)
            continue
        if header is None:
            raise ParseError(tool, f"line {n}: {s!r} before the 'IFACE ...' header", text)
        cells: list[str] = []
        for w in words:  # a rate is two words: '653.87 MB/s'
            if w in _RATE_UNITS and cells:
                cells[-1] += " " + w
            else:
                cells.append(w)
        if len(cells) != len(header):
            raise ParseError(tool, f"line {n}: {s!r}: {len(cells)} values for {len(header)} columns", text)
        row = dict(zip(header, cells))
        out: dict[str, Any] = {"state": None if row.get("STATE") in (None, "N/A") else row["STATE"]}
        for col in _SONIC_INTF_COUNTS:
            if col in row:
                out[col] = _count(row[col], tool, n, line, text)
        ports[cells[0]] = out
    if header is None:
        raise ParseError(tool, "no 'IFACE ...' header", text)
    # the columns read, and every other column named (rates, utilisation, trimming: not dropped unsaid)
    return {
        "ports": ports,
        "columns": [c for c in header if c in _SONIC_INTF_COUNTS],
        "other_columns": [c for c in header[1:] if c not in _SONIC_INTF_COUNTS and c != "STATE"],
    }


def _nvue_tree(text: Optional[str], tool: str) -> dict[str, Any]:
    """The ``key  value`` tree under the '----' rule of an NVUE show command (first column: operational)."""
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    lines = text.splitlines()
    if any(x in lines[0] for x in ("Error", "No Data", "not found", "Invalid")):
        raise ParseError(tool, lines[0].strip(), text)
    tree: dict[str, Any] = {}
    started = False
    stack: list[tuple[int, dict[str, Any]]] = [(-1, tree)]  # (indent, node) of the open parents
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if not started:
            if _DASH_RE.match(line):
                started = True
            continue
        m = _NVUE_ROW_RE.match(line)
        if not m:
            raise ParseError(tool, f"line {n}: {line.strip()!r} is not 'key  value'", text)
        depth = len(m.group("indent"))
        while stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1]
        if m.group("value") is None:
            stack.append((depth, parent.setdefault(m.group("key"), {})))
        else:
            parent[m.group("key")] = _nvue_value(m.group("value"))
    if not started:
        raise ParseError(tool, "no table under a '----' rule", text)
    return tree


NVUE_LINK_STATS = ("in-errors", "in-drops", "out-errors", "out-drops", "carrier-transitions")


def parse_nvue_link_stats(text: Optional[str]) -> dict[str, Any]:
    """``nv show interface <swp> link stats`` -> {"stats": {key: value}, "in-errors": n or None, "in-drops",
    "out-errors", "out-drops", "carrier-transitions"} (None where the output lacks it)."""
    tool = "nv show interface link stats"
    tree = _nvue_tree(text, tool)
    out: dict[str, Any] = {"stats": tree}
    for key in NVUE_LINK_STATS:
        v = tree.get(key)
        if v is not None and not isinstance(v, int):
            raise ParseError(tool, f"{key}: {v!r} is not a counter", text)
        out[key] = v
    return out


_SECTION_RULE_RE = re.compile(r"^\s*=+\s*$")
_RX_TX = ("Receive", "Transmit")


def _nvue_section(
    title: str, body: Sequence[tuple[int, str]], tool: str, first_line: int, text: Optional[str], columns: dict[str, list[str]]
) -> dict[str, dict[str, Any]]:
    """One ``Title`` / ``=====`` table of ``nv show interface <swp> counters``: {row name: {column: cell}}.

    The header line and its dashed rule give the columns (``Counter  Receive  Transmit``, or the
    ``priority-group  rx-frames ...`` of Ingress Buffer Statistics); the first column names the row.
    ``Receive`` / ``Transmit`` cells are counters (``n/a`` -> None); other cells stay text (``0 Bytes``).
    The header's column names go to ``columns[title]`` (the first one names no row: it is read there)."""
    rows = [(n, line) for n, line in body if line.strip() and line.strip() != "..."]
    if len(rows) < 2 or not _DASH_RE.match(rows[1][1]):
        raise ParseError(tool, f"line {first_line}: section {title!r} has no header and dashed rule", text)
    spans = column_spans(rows[0][1], rows[1][1])
    names = [span[0] for span in spans]
    header = rows[0][1]
    if any(0 < start <= len(header) and not header[start - 1].isspace() and not header[start : start + 1].isspace() for _name, start, _end in spans[1:]):
        # a header word runs across a column of the dashed rule: the rule does not say where its cells are
        raise ParseError(tool, f"line {rows[0][0]}: section {title!r}: the header {header.strip()!r} does not fit its dashed rule", text)
    if len(names) < 2 or not all(names):
        raise ParseError(tool, f"line {rows[0][0]}: section {title!r}: no column names in {rows[0][1].strip()!r}", text)
    table: dict[str, dict[str, Any]] = {}
    columns[title] = names
    for n, line in rows[2:]:
        cells = split_columns(line, spans)
        if cells is None or not cells[names[0]]:
            raise ParseError(tool, f"line {n}: {line.strip()!r} does not fit the columns of {title!r}", text)
        row: dict[str, Any] = {}
        for name in names[1:]:
            cell = cells[name]
            if name in _RX_TX:
                row[name] = None if cell in ("n/a", "") else _count(cell, tool, n, line, text)
            else:
                row[name] = cell
        table[cells[names[0]]] = row
    return table


def parse_nvue_interface_counters(text: Optional[str]) -> dict[str, Any]:
    """``nv show interface <swp> counters`` -> {"top": {key: value}, "sections": {title: {row: {column: cell}}},
    "columns": {title: [header names]}, "in-errors", "in-drops", "out-errors", "out-drops", "carrier-transitions"} (None where absent).

    NVUE command reference, Show-Commands/Interface.md "nv show interface <interface> counters" (introduced in
    Cumulus Linux 5.5.0) and the 5.15 / 5.19 user guides (Monitoring Interfaces and Transceivers with NVUE):
    a ``key  value`` table (``carrier-transitions``) under an ``operational  applied [pending]`` header, then
    titled tables each underlined with ``=``: Detailed Counters, Drop Counters, Error Counters, Packet Size
    Statistics (``Counter  Receive  Transmit``) and Ingress Buffer Statistics. in-errors / out-errors are Error
    Counters' ``Total Errors`` Receive / Transmit, in-drops / out-drops Drop Counters' ``Total Drops``: the keys
    ``parse_nvue_link_stats`` returns, so either read serves the driver. A ``...`` line (the documentation's
    elision) is skipped. ParseError on an NVUE error line, text without the ``----`` rule, a section without
    its header, a row that does not fit its columns, or a counter that is not a number."""
    tool = "nv show interface counters"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() != "..."]
    starts = [i for i in range(len(lines) - 1) if lines[i][1].strip() and _SECTION_RULE_RE.match(lines[i + 1][1])]
    head = lines[: starts[0]] if starts else lines
    first = next((line for _n, line in head if line.strip()), "")
    if any(x in first for x in ("Error", "No Data", "not found", "Invalid")):
        raise ParseError(tool, first.strip(), text)
    top = _nvue_tree("\n".join(line for _n, line in head), tool)
    sections: dict[str, dict[str, dict[str, Any]]] = {}
    columns: dict[str, list[str]] = {}
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        title = lines[start][1].strip()
        if title in sections:
            raise ParseError(tool, f"line {lines[start][0]}: section {title!r} twice", text)
        sections[title] = _nvue_section(title, lines[start + 2 : end], tool, lines[start][0], text, columns)
    carrier = top.get("carrier-transitions")
    if carrier is not None and (isinstance(carrier, bool) or not isinstance(carrier, int)):
        raise ParseError(tool, f"carrier-transitions: {carrier!r} is not a counter", text)
    errors = sections.get("Error Counters", {}).get("Total Errors") or {}
    drops = sections.get("Drop Counters", {}).get("Total Drops") or {}
    if carrier is None and not errors and not drops:
        raise ParseError(tool, "no carrier-transitions, Total Errors or Total Drops", text)
    return {
        "top": top,
        "sections": sections,
        "columns": columns,
        "in-errors": errors.get("Receive"),
        "out-errors": errors.get("Transmit"),
        "in-drops": drops.get("Receive"),
        "out-drops": drops.get("Transmit"),
        "carrier-transitions": carrier,
    }


EOS_ERRORS = ("fcsErrors", "alignmentErrors", "symbolErrors", "inErrors", "outErrors", "frameTooLongs", "frameTooShorts")


def parse_eos_intf_errors(doc: Any) -> dict[str, dict[str, dict[str, int]]]:
    """``show interfaces counters errors | json`` (text or parsed) -> {"ports": {intf: {counter: int}}}
    (the counters of EOS_ERRORS the interface reports; an absent one is left out)."""
    tool = "show interfaces counters errors"
    counters = eos_json(tool, doc, "interfaceErrorCounters")
    ports: dict[str, dict[str, int]] = {}
    for intf, c in counters.items():
        if not isinstance(c, dict):
            raise ParseError(tool, f"{intf}: not an object", None)
        bad = [k for k in EOS_ERRORS if k in c and (not isinstance(c[k], int) or isinstance(c[k], bool))]
        if bad:
            raise ParseError(tool, f"{intf}: {bad[0]} {c[bad[0]]!r} is not a counter", None)
        ports[intf] = {k: c[k] for k in EOS_ERRORS if k in c}
    return {"ports": ports}
