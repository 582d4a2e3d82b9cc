"""Parsers for physical link health: InfiniBand port counters and mlxlink.

Pure functions, stdlib only, importable on its own.

- ``parse_perfquery(text)``: infiniband-diags ``perfquery [-x] [LID PORT]``
  (``# Port counters: Lid 1 port 1 (CapMask: 0x5A00)`` then
  ``SymbolErrorCounter:..............0`` lines; several ports in one output).
- ``parse_mlxlink(text)``: MFT ``mlxlink -d DEV [-p PORT] [-m] -c`` text output
  (sections ``Operational Info``, ``Troubleshooting Info``, ``Module Info``,
  ``Physical Counters and BER Info`` ... of ``Key  : value`` lines).
- ``parse_ibqueryerrors(text)``: infiniband-diags ``ibqueryerrors`` (the fabric-wide
  error sweep: ``Errors for 0xGUID "name"`` / ``GUID 0x.. port N: [Counter == v] ...``
  and the ``## Summary`` lines).
- ``ber_value("15E-255")`` -> 1.5e-254: mlxlink prints BER as ``<coef>E-<magnitude>``.
"""

from __future__ import annotations

import re
from typing import Optional, TypedDict, Union

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

# The IB PortCounters attribute's error counters (IBA 16.1.3.5) perfquery prints
IB_ERROR_COUNTERS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
)

_PQ_HEADER_RE = re.compile(
    r"^# Port (?P<kind>extended )?counters: Lid (?P<lid>\d+) port (?P<port>\d+)"
    r"(?: \(CapMask: (?P<capmask>0x[0-9A-Fa-f]+)(?: CapMask2: (?P<capmask2>0x[0-9A-Fa-f]+))?\))?\s*$"
)
_PQ_LINE_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+):\.*(?P<value>\S+)\s*$")
_PQ_ERRORS = ("ibwarn", "perfquery: iberror", "failed", "Failed", "can't open", "No such")

_ML_KV_RE = re.compile(r"^(?P<key>\S.*?)\s*:\s?(?P<value>.*)$")
_ML_ERRORS = ("-E-", "Failed to open device", "No such device", "mlxlink: command not found")
_BER_RE = re.compile(r"^(?P<coef>\d+(?:\.\d+)?)E(?P<exp>[-+]?\d+)$")
# mlxlink colours values on Linux whether or not stdout is a terminal: the
# colour code before the value, the reset after the newline, so a captured
# line reads "\x1b[0mPhysical state ... : \x1b[32mLinkUp" and a section ends
# on a line holding only "\x1b[0m" (mstflint mlxlink_record.cpp, changeColorOS).
_ANSI_SGR_RE = re.compile(r"\x1b\[[0-9;]*m")


class PerfqueryPort(TypedDict):
    """One ``# Port counters`` block."""

    lid: int
    port: int
    extended: bool
    capmask: Optional[str]
    counters: dict[str, int]


class Perfquery(TypedDict):
    """``parse_perfquery``."""

    ports: list[PerfqueryPort]


class ModuleValue(TypedDict):
    """A Module Info DDM value: per-lane readings and the thresholds."""

    values: list[float]
    low: float
    high: float


class ModuleInfo(TypedDict):
    """``module_info``: mlxlink's Module Info section decoded."""

    identifier: Optional[str]
    cable_technology: Optional[str]
    cable_type: Optional[str]
    vendor: Optional[str]
    part_number: Optional[str]
    serial: Optional[str]
    optical: bool
    ddm: dict[str, Optional[ModuleValue]]


class Mlxlink(TypedDict):
    """``parse_mlxlink``: every section as printed, and the link-health fields decoded (None: absent)."""

    sections: dict[str, dict[str, str]]
    state: Optional[str]
    physical_state: Optional[str]
    speed: Optional[str]
    width: Optional[str]
    fec: Optional[str]
    recommendation: Optional[str]
    status_opcode: Union[int, float, None]
    module: Optional[ModuleInfo]
    effective_errors: Union[int, float, None]
    effective_ber: Optional[float]
    raw_ber: Optional[float]
    raw_errors_per_lane: Optional[list[Union[int, float, None]]]
    link_down: Union[int, float, None]
    link_error_recovery: Union[int, float, None]
    time_since_clear_min: Union[int, float, None]


class IbqueryerrorsNode(TypedDict):
    """One ``Errors for`` node: counters per port (int, or ``"ALL"``) and the GUID each port line names."""

    guid: Optional[str]
    name: str
    ports: dict[Union[int, str], dict[str, int]]
    port_guids: dict[Union[int, str], str]


class IbqueryerrorsSummary(TypedDict):
    nodes_checked: int
    bad_nodes: int
    ports_checked: Optional[int]
    bad_ports: Optional[int]


class Ibqueryerrors(TypedDict):
    """``parse_ibqueryerrors``."""

    nodes: list[IbqueryerrorsNode]
    summary: Optional[IbqueryerrorsSummary]
    thresholds: Optional[str]
    suppressed: list[str]
    warnings: list[str]


def parse_perfquery(text: Optional[str]) -> Perfquery:
    """perfquery -> {"ports": [{"lid", "port", "extended", "capmask", "counters": {name: int}}]}."""
    if text is None or not text.strip():
        raise ParseError("perfquery", "no output", text)
    for line in text.splitlines():
        if any(e in line for e in _PQ_ERRORS):
            raise ParseError("perfquery", line.strip(), text)
    ports: list[PerfqueryPort] = []
    current: Optional[PerfqueryPort] = None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        m = _PQ_HEADER_RE.match(s)
        if m:
            current = {
                "lid": int(m.group("lid")),
                "port": int(m.group("port")),
                "extended": bool(m.group("kind")),
                "capmask": m.group("capmask"),
                "counters": {},
            }
            ports.append(current)
            continue
        m = _PQ_LINE_RE.match(s)
        if not m or current is None:
            raise ParseError("perfquery", f"line {n}: {s!r} is not a perfquery counter line", text)
        value = m.group("value")
        try:
            current["counters"][m.group("name")] = int(value, 16) if value.startswith("0x") else int(value)
        except ValueError:
            raise ParseError("perfquery", f"line {n}: {s!r}: value is not a number", text) from None
    if not ports:
        raise ParseError("perfquery", "no '# Port counters' header", text)
    return {"ports": ports}


def ber_value(text: Optional[str]) -> Optional[float]:
    """mlxlink's BER ``15E-255`` -> float; None for N/A."""
    s = (text or "").strip()
    if s in ("", "N/A"):
        return None
    m = _BER_RE.match(s)
    if not m:
        raise ValueError(f"not an mlxlink BER: {s!r}")
    # printf("%uE-%u", coef, magnitude): coef x 10^-magnitude (15E-255 = 1.5e-254)
    return float(s)


def _num(value: str) -> Union[int, float, None]:
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return None


# Module Info DDM values: mstflint mlxlink_commander.cpp getValueAndThresholdsStr prints
# "<value or per-lane values, comma separated> [<low threshold>..<high threshold>]", or "N/A" where
# the module has no digital diagnostics (e.g. "Rx Power Current [dBm] : 1.886,1.989,2.281,1.976 [-10.41..6]").
_ML_DDM_RE = re.compile(r"^(?P<values>-?[\d.]+(?:,-?[\d.]+)*)\s+\[(?P<low>-?[\d.]+)\.\.(?P<high>-?[\d.]+)\]$")
MODULE_DDM = {
    "temperature_c": "Temperature [C]",
    "voltage_mv": "Voltage [mV]",
    "bias_ma": "Bias Current [mA]",
    "rx_power_dbm": "Rx Power Current [dBm]",
    "tx_power_dbm": "Tx Power Current [dBm]",
}


def module_value(text: Optional[str]) -> Optional[ModuleValue]:
    """A Module Info DDM value -> {"values": [float per lane], "low", "high"}; None for N/A or absent."""
    s = (text or "").strip()
    if s in ("", "N/A"):
        return None
    m = _ML_DDM_RE.match(s)
    if not m:
        raise ValueError(f"not an mlxlink module value 'v[,v...] [low..high]': {s!r}")
    return {"values": [float(v) for v in m.group("values").split(",")], "low": float(m.group("low")), "high": float(m.group("high"))}


def module_info(section: Optional[dict[str, str]]) -> Optional[ModuleInfo]:
    """The Module Info section -> {identifier, cable_technology, cable_type, vendor, part_number, serial,
    optical (bool), ddm: {temperature_c, voltage_mv, bias_ma, rx_power_dbm, tx_power_dbm: module_value()}}."""
    if not section:
        return None
    tech = section.get("Cable Technology") or ""
    ctype = section.get("Cable Type") or ""
    return {
        "identifier": section.get("Identifier"),
        "cable_technology": tech or None,
        "cable_type": ctype or None,
        "vendor": section.get("Vendor Name"),
        "part_number": section.get("Vendor Part Number"),
        "serial": section.get("Vendor Serial Number"),
        # copper (passive or active) carries no light: its DDM reads 0 [0..0] or N/A
        "optical": "optical" in (tech + " " + ctype).lower(),
        "ddm": {k: module_value(section.get(label)) for k, label in MODULE_DDM.items()},
    }


def parse_mlxlink(text: Optional[str]) -> Mlxlink:
    """mlxlink text -> {"sections": {title: {key: value}}, plus the link-health fields decoded:
    state, physical_state, speed, width, fec, recommendation, status_opcode, module (module_info of
    ``Module Info``, with ``-m``; else None), effective_errors, effective_ber,
    raw_ber, raw_errors_per_lane, link_down, link_error_recovery, time_since_clear_min}.

    Absent fields are None (older MFT lacks some); a section line outside a
    section or a malformed line is a ParseError naming the line. The colour
    codes mlxlink writes into captured output are dropped first.
    """
    if text is None or not text.strip():
        raise ParseError("mlxlink", "no output", text)
    lines = _ANSI_SGR_RE.sub("", text).splitlines()
    for line in lines:
        if any(e in line for e in _ML_ERRORS):
            raise ParseError("mlxlink", line.strip(), text)
    sections: dict[str, dict[str, str]] = {}
    current: Optional[dict[str, str]] = None
    i = 0
    while i < len(lines):
        s = lines[i].rstrip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if not s.strip():
            i += 1
            continue
        if nxt and set(nxt) == {"-"} and ":" not in s:
            current = sections.setdefault(s.strip(), {})
            i += 2
            continue
        m = _ML_KV_RE.match(s)
        if current is None or not m:
            raise ParseError("mlxlink", f"line {i + 1}: {s.strip()!r} is not 'Key : value' inside a section", text)
        current[m.group("key").strip()] = m.group("value").strip()
        i += 1
    if not sections:
        raise ParseError("mlxlink", "no section (Operational Info ...)", text)
    op = sections.get("Operational Info", {})
    ts = sections.get("Troubleshooting Info", {})
    ctr = sections.get("Physical Counters and BER Info", {})
    try:
        eff_ber = ber_value(ctr.get("Effective Physical BER"))
        raw_ber = ber_value(ctr.get("Raw Physical BER"))
        module = module_info(sections.get("Module Info"))
    except ValueError as e:
        raise ParseError("mlxlink", str(e), text) from None
    lanes = ctr.get("Raw Physical Errors Per Lane")
    per_lane: Optional[list[Union[int, float, None]]] = None
    if lanes is not None and lanes not in ("", "N/A"):
        per_lane = [_num(x.strip()) for x in lanes.split(",")]
        if None in per_lane:
            raise ParseError("mlxlink", f"Raw Physical Errors Per Lane: {lanes!r} is not a list of numbers", text)
    return {
        "sections": sections,
        "state": op.get("State"),
        "physical_state": op.get("Physical state"),
        "speed": op.get("Speed"),
        "width": op.get("Width"),
        "fec": op.get("FEC"),
        "recommendation": ts.get("Recommendation"),
        "status_opcode": _num(ts["Status Opcode"]) if "Status Opcode" in ts else None,
        "module": module,
        "effective_errors": _num(ctr["Effective Physical Errors"]) if "Effective Physical Errors" in ctr else None,
        "effective_ber": eff_ber,
        "raw_ber": raw_ber,
        "raw_errors_per_lane": per_lane,
        "link_down": _num(ctr["Link Down Counter"]) if "Link Down Counter" in ctr else None,
        "link_error_recovery": (_num(ctr["Link Error Recovery Counter"]) if "Link Error Recovery Counter" in ctr else None),
        "time_since_clear_min": (_num(ctr["Time Since Last Clear [Min]"]) if "Time Since Last Clear [Min]" in ctr else None),
    }


_IQE_NODE_RE = re.compile(r'^Errors for (?:(?P<guid>0x[0-9a-fA-F]+) )?"(?P<name>.*)"\s*$')
_IQE_PORT_RE = re.compile(r"^GUID (?P<guid>0x[0-9a-fA-F]+) port (?P<port>ALL|\d+):(?P<rest>.*)$")
_IQE_COUNTER_RE = re.compile(r"\[(?P<name>[A-Za-z0-9_]+) == (?P<value>\d+)\]")
_IQE_SUMMARY_RE = re.compile(r"^## Summary: (?P<nodes>\d+) nodes checked, (?P<bad_nodes>\d+) bad nodes found$")
_IQE_PORTS_RE = re.compile(r"^##\s+(?P<ports>\d+) ports checked, (?P<bad_ports>\d+) ports have errors beyond threshold$")


def parse_ibqueryerrors(text: Optional[str]) -> Ibqueryerrors:
    """ibqueryerrors -> {"nodes": [{"guid", "name", "ports": {port (int or "ALL"): {counter: int}},
    "port_guids": {port: the GUID its line names}}],
    "summary": {nodes_checked, bad_nodes, ports_checked, bad_ports} or None, "thresholds", "suppressed",
    "warnings": ["line N: not read: ..." for a ``##`` line none of these patterns reads]}."""
    if text is None or not text.strip():
        raise ParseError("ibqueryerrors", "no output", text)
    for line in text.splitlines():
        if "ibwarn" in line or "iberror" in line or "can't open" in line:
            raise ParseError("ibqueryerrors", line.strip(), text)
    nodes: list[IbqueryerrorsNode] = []
    current: Optional[IbqueryerrorsNode] = None
    summary: Optional[IbqueryerrorsSummary] = None
    warnings: list[str] = []
    thresholds: Optional[str] = None
    suppressed: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        m = _IQE_NODE_RE.match(s)
        if m:
            current = {"guid": m.group("guid"), "name": m.group("name"), "ports": {}, "port_guids": {}}
            nodes.append(current)
            continue
        m = _IQE_PORT_RE.match(s)
        if m:
            if current is None:
                raise ParseError("ibqueryerrors", f"line {n}: {s!r} before an 'Errors for' line", text)
            counters = {c.group("name"): int(c.group("value")) for c in _IQE_COUNTER_RE.finditer(m.group("rest"))}
            if not counters and m.group("rest").strip():
                raise ParseError("ibqueryerrors", f"line {n}: {s!r}: no '[Counter == value]'", text)
            warnings += [f"line {n}: not read: {cell!r}" for cell in re.findall(r"\[[^\]]*\]", m.group("rest")) if not _IQE_COUNTER_RE.fullmatch(cell)]
            cell = m.group("port")
            port: Union[int, str] = cell if cell == "ALL" else int(cell)
            current["ports"][port] = counters
            # the GUID of the port line: a switch's node GUID, a CA's port GUID (a CA's
            # "Errors for" line has no GUID at all)
            current["port_guids"][port] = m.group("guid")
            continue
        m = _IQE_SUMMARY_RE.match(s)
        if m:
            summary = {"nodes_checked": int(m.group("nodes")), "bad_nodes": int(m.group("bad_nodes")), "ports_checked": None, "bad_ports": None}
            continue
        m = _IQE_PORTS_RE.match(s)
        if m and summary is not None:
            summary.update({"ports_checked": int(m.group("ports")), "bad_ports": int(m.group("bad_ports"))})
            continue
        if s.startswith("## Thresholds:"):
            thresholds = s[len("## Thresholds:") :].strip()
            continue
        if s.startswith("## Suppressed:"):
            suppressed = s[len("## Suppressed:") :].split()
            continue
        if s.startswith("##"):
            # e.g. "##          3 PMA query failures", or a summary in another wording: named (issue 38)
            warnings.append(f"line {n}: not read: {s!r}")
            continue
        raise ParseError("ibqueryerrors", f"line {n}: {s!r} is not an ibqueryerrors line", text)
    if not nodes and summary is None:
        raise ParseError("ibqueryerrors", "neither errors nor a summary", text)
    return {"nodes": nodes, "summary": summary, "thresholds": thresholds, "suppressed": suppressed, "warnings": warnings}
