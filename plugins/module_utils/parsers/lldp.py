"""Parsers for LLDP neighbour tables: the three switch platforms and lldpd on hosts.

Pure functions, stdlib only, importable on their own. Every parser returns
``{"neighbors": {local_port: [neighbour, ...]}, "ports": [...], "warnings": [...]}``
where a neighbour is ``{"system_name", "port_id", "port_id_type", "port_descr",
"chassis_id"}`` (None where the format does not carry the field) and
``ports`` lists every local port the table shows, with or without a neighbour.

- ``parse_nvue_lldp(text)``: Cumulus Linux NVUE ``nv show interface lldp``
  (5.0 and later): columns Interface, Speed, Type, Remote Host, Remote Port;
  a port without a neighbour has blank Remote Host / Remote Port.
- ``parse_sonic_lldp_table(text)``: SONiC ``show lldp table`` (lldpshow):
  LocalPort, RemoteDevice, RemotePortID, Capability, RemotePortDescr, then
  ``Total entries displayed:  N``. A port may show several neighbours.
- ``parse_eos_lldp_neighbors(doc)``: Arista EOS ``show lldp neighbors | json``
  (``lldpNeighbors``: port, neighborDevice, neighborPort, ttl); the text of
  ``show lldp neighbors`` and ``show lldp neighbors detail`` as a fallback.
- ``parse_lldpctl_json(text)``: lldpd's ``lldpctl -f json`` (1.0 and later).
  lldpd collapses one-element lists: ``interface`` is an object
  ``{ifname: {...}}`` for one interface and a list of such objects for
  several; ``chassis`` is keyed by the system name (``{"id": ...}`` directly
  when the neighbour sends none).

How a host appears to a switch: lldpd sends the interface's MAC address as
port ID and the interface name as port description unless the interface has
an alias or ``configure lldp portidsubtype ifname`` is set; so a host port
id is a MAC or an interface name, and the system name is the host name,
short or fully qualified.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence, TypedDict, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, column_spans, eos_json, split_columns
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError, column_spans, eos_json, split_columns  # type: ignore[import-not-found,no-redef]

_RULE_RE = re.compile(r"^\s*-{2,}(\s+-{2,})*\s*$")
_MAC_RE = re.compile(r"^[0-9a-f]{2}([:.-]?[0-9a-f]{2}){5}$", re.I)


class LldpNeighbor(TypedDict):
    """One neighbour on a local port (None where the format does not carry the field)."""

    system_name: Optional[str]
    port_id: Optional[str]
    port_id_type: Optional[str]
    port_descr: Optional[str]
    chassis_id: Optional[str]


class LldpTable(TypedDict):
    """What every parser here returns."""

    neighbors: dict[str, list[LldpNeighbor]]
    ports: list[str]
    warnings: list[str]


def normalize_mac(value: Any) -> Optional[str]:
    """'48:B0:2D:76:EE:8E' / '48b0.2d76.ee8e' / '48-b0-2d-76-ee-8e' -> '48:b0:2d:76:ee:8e'; None if not a MAC."""
    s = str(value or "").strip().lower()
    if not _MAC_RE.match(s) and not re.fullmatch(r"[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}", s):
        return None
    digits = re.sub(r"[^0-9a-f]", "", s)
    if len(digits) != 12:
        return None
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


def _neighbor(
    system_name: Optional[str] = None,
    port_id: Any = None,
    port_id_type: Optional[str] = None,
    port_descr: Optional[str] = None,
    chassis_id: Optional[str] = None,
) -> LldpNeighbor:
    port_id = (port_id or None) and str(port_id)
    if port_id and port_id_type is None:
        port_id_type = "mac" if normalize_mac(port_id) else "ifname"
    return {
        "system_name": system_name or None,
        "port_id": port_id,
        "port_id_type": port_id_type,
        "port_descr": port_descr or None,
        "chassis_id": chassis_id or None,
    }


def _table(
    text: Optional[str], tool: str, first_col: str, columns: Sequence[str], known: Sequence[str] = (), header_re: Optional[str] = None
) -> tuple[list[tuple[int, str, dict[str, str]]], list[str]]:
    """Rows of an aligned table whose header starts with ``first_col``: ([(n, line, cells)], warnings).

    ``columns`` must be in the header (else nothing usable: ParseError);
    header columns outside ``columns`` and ``known`` are named in a warning
    and not read. A row that does not fit the header's columns is left out
    with a warning naming its line; ParseError when no row fits at all.
    """
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    lines = text.splitlines()
    head = None
    for i, line in enumerate(lines):
        if line.split()[:1] == [first_col] and (header_re is None or re.search(header_re, line)):
            head = i
            break
    if head is None:
        first = next(ln.strip() for ln in lines if ln.strip())
        raise ParseError(tool, f"line 1: {first!r}: no '{first_col} ...' table header", text)
    missing = [c for c in columns if c not in lines[head]]
    if missing:
        raise ParseError(tool, f"line {head + 1}: header lacks column {missing[0]!r}", text)
    rule = lines[head + 1] if head + 1 < len(lines) and _RULE_RE.match(lines[head + 1]) else None
    spans = column_spans(lines[head], rule)
    warnings = [
        f"column {name!r} is not read (unknown to this parser)"
        for name, *_pos in spans
        if name and name not in columns and name not in known and name != first_col
    ]
    rows: list[tuple[int, str, dict[str, str]]] = []
    misfits: list[str] = []
    for n, line in enumerate(lines[head + (2 if rule else 1) :], head + (3 if rule else 2)):
        if not line.strip():
            continue
        if _RULE_RE.match(line) or line.strip().startswith("Total entries displayed"):
            break
        cells = split_columns(line, spans)
        if cells is None:
            misfits.append(f"line {n}: {line.strip()!r} does not fit the table's columns")
            continue
        rows.append((n, line, cells))
    if misfits and not rows:
        raise ParseError(tool, misfits[0], text)
    return rows, warnings + [f"{m}: not read" for m in misfits]


def parse_nvue_lldp(text: Optional[str]) -> LldpTable:
    """``nv show interface lldp`` -> neighbours per port (Remote Host = system name, Remote Port = port id)."""
    tool = "nv show interface lldp"
    if text and text.lstrip().startswith("Error"):
        raise ParseError(tool, text.strip().splitlines()[0], text)
    rows, warnings = _table(text, tool, "Interface", ("Remote Host", "Remote Port"), ("Speed", "Type"))
    out: LldpTable = {"neighbors": {}, "ports": [], "warnings": warnings}
    for _n, _line, c in rows:
        port = cast(str, c.get("Interface"))
        out["ports"].append(port)
        host, rport = c.get("Remote Host", ""), c.get("Remote Port", "")
        if host or rport:
            out["neighbors"].setdefault(port, []).append(_neighbor(host, rport))
    return out


def parse_sonic_lldp_table(text: str) -> LldpTable:
    """``show lldp table`` -> neighbours per port (several per port where the table lists several)."""
    tool = "show lldp table"
    rows, warnings = _table(text, tool, "LocalPort", ("RemoteDevice", "RemotePortID", "RemotePortDescr"), ("Capability",))
    out: LldpTable = {"neighbors": {}, "ports": [], "warnings": warnings}
    for n, line, c in rows:
        port = c.get("LocalPort")
        if not port:
            raise ParseError(tool, f"line {n}: {line.strip()!r} has no LocalPort", text)
        if port not in out["ports"]:
            out["ports"].append(port)
        out["neighbors"].setdefault(port, []).append(_neighbor(c.get("RemoteDevice"), c.get("RemotePortID"), None, c.get("RemotePortDescr")))
    m = re.search(r"Total entries displayed:\s+(\d+)", text)
    if m and int(m.group(1)) != len(rows):
        out["warnings"].append(f"the table says {m.group(1)} entries, {len(rows)} were read")
    return out


def parse_eos_lldp_neighbors(doc: Any) -> LldpTable:
    """``show lldp neighbors | json`` (text or parsed), or the plain text of ``show lldp neighbors``
    or ``show lldp neighbors detail`` -> neighbours per port.

    JSON first (what the driver asks for); text that does not start with ``{``
    is the CLI's table (``Port  Neighbor Device ID  Neighbor Port ID  TTL``
    after the table-change counters) or its detail blocks (``Interface EtN
    detected N LLDP neighbors:``). ``Et1`` in the text is ``Ethernet1`` as in JSON.
    """
    tool = "show lldp neighbors"
    if isinstance(doc, str) and not doc.lstrip().startswith("{"):
        if re.search(r"^Interface \S+ detected \d+ LLDP neighbors?:", doc, re.M):
            return _eos_lldp_detail(doc)
        return _eos_lldp_text(doc)
    rows = eos_json(tool, doc, "lldpNeighbors", list)
    out: LldpTable = {"neighbors": {}, "ports": [], "warnings": []}
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not isinstance(r.get("port"), str):
            raise ParseError(tool, f"lldpNeighbors[{i}]: no port", None)
        if r["port"] not in out["ports"]:
            out["ports"].append(r["port"])
        dev, rport = r.get("neighborDevice"), r.get("neighborPort")
        if not isinstance(dev, (str, type(None))) or not isinstance(rport, (str, type(None))):
            raise ParseError(tool, f"lldpNeighbors[{i}] ({r['port']}): neighborDevice/neighborPort is not text", None)
        out["neighbors"].setdefault(r["port"], []).append(_neighbor(dev, rport))
    return out


def _eos_port(name: str) -> str:
    """EOS text abbreviates interface names: ``Et3/1`` -> ``Ethernet3/1``, ``Ma1`` -> ``Management1``."""
    return re.sub(r"^Ma(?=\d)", "Management", re.sub(r"^Et(?=\d)", "Ethernet", name))


def _eos_error(tool: str, text: Optional[str]) -> None:
    first = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    if first.startswith("%"):
        raise ParseError(tool, first, text)


def _eos_lldp_text(text: str) -> LldpTable:
    """``show lldp neighbors`` as text (EOS 4.x; source in docs/parsers.md)."""
    tool = "show lldp neighbors"
    _eos_error(tool, text)
    rows, warnings = _table(text, tool, "Port", ("Neighbor Device ID", "Neighbor Port ID"), ("TTL",), header_re=r"Neighbor Device ID")
    out: LldpTable = {"neighbors": {}, "ports": [], "warnings": warnings}
    for n, line, c in rows:
        port = c.get("Port")
        if not port:
            out["warnings"].append(f"line {n}: {line.strip()!r} has no Port: not read")
            continue
        port = _eos_port(port)
        if port not in out["ports"]:
            out["ports"].append(port)
        out["neighbors"].setdefault(port, []).append(_neighbor(c.get("Neighbor Device ID"), c.get("Neighbor Port ID")))
    return out


_EOS_DETAIL_RE = {
    "chassis_id": re.compile(r"^\s*Chassis ID\s*:\s*(?P<v>.*?)\s*$"),
    "port_id": re.compile(r"^\s*Port ID\s*:\s*(?P<v>.*?)\s*$"),
    "system_name": re.compile(r"^\s*- System Name:\s*(?P<v>.*?)\s*$"),
    "port_descr": re.compile(r"^\s*- Port Description:\s*(?P<v>.*?)\s*$"),
}


# the TLV lines of EOS ``show lldp neighbors detail`` known and not read: those of the published capture
# (ntc-templates' EOS 4.15.2F output, fixtures/lldp/real_eos_lldp_neighbors_detail_ntc.txt); another TLV
# EOS prints is named in ``warnings``
_EOS_DETAIL_FIELDS = frozenset(
    (
        "Chassis ID type",
        "Port ID type",
        "Time To Live",
        "System Description",
        "System Capabilities",
        "Enabled Capabilities",
        "Management Address Subtype",
        "Management Address",
        "Interface Number Subtype",
        "Interface Number",
        "OID String",
        "IEEE802.1 Port VLAN ID",
        "Link Aggregation Status",
        "IEEE802.3 Maximum Frame Size",
        "IEEE802.1/IEEE802.3 Link Aggregation",
        "Port ID",
    )
)


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def _eos_lldp_detail(text: str) -> LldpTable:
    """``show lldp neighbors detail``: one ``Interface X detected N LLDP neighbors:`` block per port,
    one ``Neighbor <chassis>/<port>, age ..`` sub-block per neighbour. A line that is neither read nor
    one of the TLVs in _EOS_DETAIL_FIELDS is named in ``warnings`` (issue 38)."""
    tool = "show lldp neighbors detail"
    _eos_error(tool, text)
    out: LldpTable = {"neighbors": {}, "ports": [], "warnings": []}
    port: Optional[str] = None
    current: Optional[dict[str, str]] = None
    in_lag = False
    # the fields read, per neighbour of each port, made neighbours at the end
    blocks: dict[str, list[dict[str, str]]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^Interface (\S+) detected (\d+) LLDP neighbors?:", line)
        if m:
            port, current = _eos_port(m.group(1)), None
            if port not in out["ports"]:
                out["ports"].append(port)
            continue
        if port is None or not line.strip():
            continue
        if re.match(r"^\s*Neighbor \S", line):
            current = {}
            blocks.setdefault(port, []).append(current)
            in_lag = False
            continue
        if current is None:
            out["warnings"].append(f"line {n}: not read (before any 'Neighbor' line of {port}): {line.strip()!r}")
            continue
        if line.strip().startswith("- "):
            in_lag = "Link Aggregation" in line  # its 'Port ID' is the aggregation port, not the neighbour's
        read = False
        for key, rx in _EOS_DETAIL_RE.items():
            m = rx.match(line)
            if m and key not in current and not (key == "port_id" and in_lag):
                current[key] = _unquote(m.group("v"))
            read = read or bool(m)
        field = re.match(r"^\s*(?:- )?([^:]+?)\s*(?::|$)", line)
        if not read and not (field and field.group(1) in _EOS_DETAIL_FIELDS) and not re.match(r"^\s*Discovered .* ago", line):
            out["warnings"].append(f"line {n}: not read: {line.strip()!r}")
    for p, found in blocks.items():
        out["neighbors"][p] = [_neighbor(f.get("system_name"), f.get("port_id"), None, f.get("port_descr"), f.get("chassis_id")) for f in found]
    if not out["ports"]:
        raise ParseError(tool, "no 'Interface ... detected N LLDP neighbors:' block", text)
    return out


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _value(node: Any, key: str) -> Any:
    """lldpd JSON leaf: 'x', {"value": 'x'} or [{"value": 'x'}] -> 'x'."""
    v = node.get(key) if isinstance(node, dict) else None
    if isinstance(v, list):
        v = v[0] if v else None
    if isinstance(v, dict):
        v = v.get("value")
    return v if isinstance(v, (str, int)) else None


def parse_lldpctl_json(text: Optional[str]) -> LldpTable:
    """``lldpctl -f json`` -> neighbours per local interface (one object or a list of them)."""
    tool = "lldpctl -f json"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ParseError(tool, f"not JSON: {e}", text) from None
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise ParseError(tool, "no 'lldp' object", text)
    lldp = doc["lldp"]
    if isinstance(lldp, list):  # json0-like wrapping of the top object
        lldp = lldp[0] if lldp else {}
    if not isinstance(lldp, dict):
        raise ParseError(tool, "'lldp' is not an object", text)
    out: LldpTable = {"neighbors": {}, "ports": [], "warnings": []}
    for entry in _as_list(lldp.get("interface") or []):
        if not isinstance(entry, dict) or not entry:
            raise ParseError(tool, f"interface entry {entry!r} is not an object", text)
        for ifname, data in entry.items():
            if not isinstance(data, dict):
                raise ParseError(tool, f"interface {ifname}: not an object", text)
            if ifname not in out["ports"]:
                out["ports"].append(ifname)
            chassis = data.get("chassis") or {}
            if not isinstance(chassis, dict):
                raise ParseError(tool, f"interface {ifname}: chassis is not an object", text)
            if isinstance(chassis.get("id"), dict) and "value" in chassis["id"]:
                name, ch = None, chassis  # the neighbour sent no system name
            else:
                name, ch = next(iter(chassis.items()), (None, {}))
            port = data.get("port") or {}
            if not isinstance(port, dict) or not isinstance(ch, dict):
                raise ParseError(tool, f"interface {ifname}: port/chassis is not an object", text)
            pid = port.get("id")
            pid = pid[0] if isinstance(pid, list) and pid else pid
            pid_type = pid.get("type") if isinstance(pid, dict) else None
            out["neighbors"].setdefault(ifname, []).append(_neighbor(name, _value(port, "id"), pid_type, _value(port, "descr"), _value(ch, "id")))
    return out
