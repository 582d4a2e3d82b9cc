"""Parsers for switch-side congestion counters (PFC pause frames, ECN marks, buffer discards).

Pure functions, stdlib only, importable on its own.

- ``parse_sonic_pfc_counters(text)``: SONiC ``show pfc counters`` (an Rx and a
  Tx table of PFC0..PFC7 per port; values may carry thousands separators).
- ``parse_nvue_roce_counters(text)``: Cumulus Linux NVUE
  ``nv show interface <swp> qos roce counters`` (indented tree of
  rx-stats / tx-stats: pfc pause packets, ecn-marked-packets, no-buffer-discard ...).
- ``parse_eos_pfc_counters(doc)``: Arista EOS ``show priority-flow-control
  counters | json`` (eAPI, revision 3): rx/tx PFC frames per interface.

A counter the platform does not expose (NVUE has no per-priority split, EOS
revision 3 no per-priority split) is simply absent: the caller says what it
cannot prove.
"""

import json
import re

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError

_SONIC_HEAD_RE = re.compile(r"^\s*Port (?P<dir>Rx|Tx)\s+(?P<prios>(?:PFC[0-7]\s*)+)$")
_DASH_RE = re.compile(r"^\s*-+(\s+-+)+\s*$")


def _count(value, tool, n, line, text):
    v = value.replace(",", "")
    if v == "N/A":
        return None
    try:
        return int(v)
    except ValueError:
        raise ParseError(tool, f"line {n}: {line.strip()!r}: {value!r} is not a counter", text) from None


_QUEUE_COLS = {"Counter/pkts": "pkts", "Counter/bytes": "bytes", "Drop/pkts": "drop_pkts",
               "Drop/bytes": "drop_bytes", "EcnMarked/pkts": "ecn_marked_pkts",
               "EcnMarked/bytes": "ecn_marked_bytes", "Trim/pkts": "trim_pkts",
               "TrimSent/pkts": "trim_sent_pkts", "TrimDrop/pkts": "trim_drop_pkts"}


def parse_sonic_queue_counters(text):
    """``show queue counters [PORT] [--all]`` -> {"ports": {port: {queue: {"type": "UC"|"MC"|"ALL",
    "index": n, "pkts", "bytes", "drop_pkts", "drop_bytes", ["ecn_marked_pkts", ...]}}}, "columns": [...]}.

    Columns come from the header (platforms with ECN statistics add EcnMarked/pkts,
    EcnMarked/bytes; --all adds the trimming columns); ``N/A`` -> None.
    """
    if text is None or not text.strip():
        raise ParseError("show queue counters", "no output", text)
    ports, columns = {}, None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("For namespace") or s.startswith("Last cached time") or _DASH_RE.match(line):
            continue
        words = s.split()
        if words[:2] == ["Port", "TxQ"]:
            unknown = [w for w in words[2:] if w not in _QUEUE_COLS]
            if unknown:
                raise ParseError("show queue counters", f"line {n}: unknown column {unknown[0]!r}", text)
            columns = [_QUEUE_COLS[w] for w in words[2:]]
            continue
        if columns is None:
            raise ParseError("show queue counters", f"line {n}: {s!r} before the 'Port TxQ ...' header", text)
        if len(words) != len(columns) + 2:
            raise ParseError("show queue counters", f"line {n}: {s!r}: {len(words) - 2} values for "
                                                    f"{len(columns)} columns", text)
        port, queue = words[0], words[1]
        kind = queue.rstrip("0123456789")
        if kind not in ("UC", "MC", "ALL") or not queue[len(kind):].isdigit():
            raise ParseError("show queue counters", f"line {n}: {queue!r} is not a queue (UCn, MCn, ALLn)", text)
        row = {"type": kind, "index": int(queue[len(kind):])}
        row.update({c: _count(v, "show queue counters", n, line, text) for c, v in zip(columns, words[2:])})
        ports.setdefault(port, {})[queue] = row
    if columns is None:
        raise ParseError("show queue counters", "no 'Port TxQ' header", text)
    return {"ports": ports, "columns": columns}


def parse_sonic_pfc_counters(text):
    """``show pfc counters`` -> {"rx": {port: {prio: n}}, "tx": {port: {prio: n}}}."""
    if text is None or not text.strip():
        raise ParseError("show pfc counters", "no output", text)
    out, current, prios = {"rx": {}, "tx": {}}, None, []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s == "..." or _DASH_RE.match(line) or s.startswith("Last cached time"):
            continue
        m = _SONIC_HEAD_RE.match(line)
        if m:
            current = out[m.group("dir").lower()]
            prios = [int(p[3:]) for p in m.group("prios").split()]
            continue
        if current is None:
            raise ParseError("show pfc counters", f"line {n}: {s!r} before a 'Port Rx/Tx PFC0..' header", text)
        cells = s.split()
        if len(cells) != len(prios) + 1:
            raise ParseError("show pfc counters", f"line {n}: {s!r}: {len(cells) - 1} counters for "
                                                  f"{len(prios)} priorities", text)
        current[cells[0]] = {p: _count(v, "show pfc counters", n, line, text) for p, v in zip(prios, cells[1:])}
    if not out["rx"] and not out["tx"]:
        raise ParseError("show pfc counters", "no Rx/Tx PFC table", text)
    return out


_NVUE_ROW_RE = re.compile(r"^(?P<indent> *)(?P<key>[a-z0-9][a-z0-9-]*)(?:\s{2,}(?P<value>\S.*?))?\s*$")
_NVUE_VALUE_RE = re.compile(r"^(?P<num>\d+(?:\.\d+)?)(?: (?P<unit>Bytes|KB|MB|GB|TB))?$")
_UNITS = {None: 1, "Bytes": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def _nvue_value(raw):
    """'144 Bytes' -> 144, '56.52 MB' -> 56520000, '462975' -> 462975 (first column: operational)."""
    first = re.split(r"\s{2,}", raw.strip())[0]
    m = _NVUE_VALUE_RE.match(first)
    if not m:
        return first
    value = float(m.group("num")) * _UNITS[m.group("unit")]
    return int(value) if value.is_integer() else value


def parse_nvue_roce_counters(text):
    """``nv show interface <swp> qos roce counters`` -> {"tree": {...}, "rx_pause", "tx_pause",
    "ecn_marked", "rx_roce_discards", "tx_roce_discards", "cnp_tx"} (None where absent)."""
    if text is None or not text.strip():
        raise ParseError("nv show qos roce counters", "no output", text)
    lines = text.splitlines()
    if any(x in lines[0] for x in ("Error", "No Data", "not found", "Invalid")):
        raise ParseError("nv show qos roce counters", lines[0].strip(), text)
    tree = {}
    stack = [(-1, tree)]  # (indent, node) of the open parents
    started = False
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if not started:
            if _DASH_RE.match(line):
                started = True
            continue
        m = _NVUE_ROW_RE.match(line)
        if not m:
            raise ParseError("nv show qos roce counters", f"line {n}: {line.strip()!r} is not 'key  value'", text)
        depth = len(m.group("indent"))
        while stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1]
        if m.group("value") is None:
            node = parent.setdefault(m.group("key"), {})
            stack.append((depth, node))
        else:
            parent[m.group("key")] = _nvue_value(m.group("value"))
    if not started:
        raise ParseError("nv show qos roce counters", "no table under a '----' rule", text)

    def get(*path):
        node = tree
        for p in path:
            if not isinstance(node, dict) or p not in node:
                return None
            node = node[p]
        return node
    return {"tree": tree,
            "rx_pause": get("rx-stats", "rx-pfc-stats", "pause-packets"),
            "tx_pause": get("tx-stats", "tx-pfc-stats", "pause-packets"),
            "ecn_marked": get("tx-stats", "tx-ecn-stats", "ecn-marked-packets"),
            "rx_roce_discards": get("rx-stats", "rx-roce-stats", "no-buffer-discard"),
            "tx_roce_discards": get("tx-stats", "tx-roce-stats", "unicast-no-buffer-discard"),
            "cnp_tx": get("tx-stats", "tx-cnp-stats", "cnp-packets")}


def parse_eos_pfc_counters(doc):
    """``show priority-flow-control counters | json`` (text or parsed) -> {"ports": {intf: {"rx", "tx"}}}."""
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError as e:
            raise ParseError("show priority-flow-control counters", f"not JSON: {e}", doc) from None
    if not isinstance(doc, dict):
        raise ParseError("show priority-flow-control counters", "not a JSON object", None)
    if "errors" in doc or "error" in doc:
        raise ParseError("show priority-flow-control counters", str(doc.get("errors") or doc.get("error")), None)
    counters = doc.get("interfaceCounters")
    if not isinstance(counters, dict):
        raise ParseError("show priority-flow-control counters", "no interfaceCounters", None)
    ports = {}
    for intf, c in counters.items():
        if not isinstance(c, dict) or not isinstance(c.get("rxFrames"), int) or not isinstance(c.get("txFrames"), int):
            raise ParseError("show priority-flow-control counters", f"{intf}: rxFrames/txFrames missing", None)
        ports[intf] = {"rx": c["rxFrames"], "tx": c["txFrames"]}
    return {"ports": ports}
