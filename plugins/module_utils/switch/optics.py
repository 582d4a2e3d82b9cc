"""Parsers for the optical modules of switch ports (transceiver DOM: Rx power per lane,
temperature, and the module's own alarm thresholds).

Pure functions, stdlib only, importable on its own. Each returns ``{port: module}``::

    {"present": bool, "optical": bool, "vendor": str or None, "part_number": str or None,
     "cable_technology": str or None,
     "ddm": {"rx_power_dbm": {"values": [dBm per lane], "low": alarm, "high": alarm} or None,
             "temperature_c": {"values": [C], "low": alarm, "high": alarm} or None}}

``low``/``high`` are the module's ALARM thresholds as the platform prints them. A value the
platform prints as N/A (or leaves out) makes that ddm entry None; an empty cage is
``present`` False, ``optical`` False, both ddm entries None.

- ``parse_nvue_platform_transceiver(text, port=None)``: Cumulus Linux NVUE
  ``nv show platform transceiver <swp>`` (5.11+): ``key : value`` lines, the
  temperature block and ``channel-<n>: rx-power:`` blocks with their thresholds.
- ``parse_sonic_transceiver_eeprom(text)``: SONiC sonic-utilities
  ``show interfaces transceiver eeprom --dom <port>`` (sfpshow): ``ChannelMonitorValues``
  (RX<n>Power), ``ChannelThresholdValues`` (RxPowerLowAlarm/HighAlarm),
  ``ModuleMonitorValues`` (Temperature), ``ModuleThresholdValues`` (TempLowAlarm/HighAlarm);
  sfpshow leaves an N/A value out.
- ``parse_eos_transceiver_detail(doc)``: Arista EOS ``show interfaces transceiver detail | json``:
  one entry per lane interface (``Ethernet1/1`` .. ``Ethernet1/8`` of a 400G port), the
  thresholds under ``details``; the lanes of one cage are gathered under its lowest-numbered
  lane interface.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional, Sequence

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, eos_json

    # the diagnostics of a module, one model for a NIC's (ethtool -m) and a switch port's: checks/link_limits.py
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ethtool_module import DdmEntry, ModuleReading
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError, eos_json  # type: ignore[import-not-found,no-redef]
    from parsers.ethtool_module import DdmEntry, ModuleReading  # type: ignore[import-not-found,no-redef]

_NUM_RE = re.compile(r"^(-?\d+(?:\.\d+)?)")
_COPPER_RE = re.compile(r"copper|passive|\bDAC\b|-CR\d|BASE-CR|CR\d\b", re.I)


class Module(ModuleReading, total=False):
    """The optical module in one port (``Driver.transceivers``); ``fields``: every field as printed."""

    fields: dict[str, Any]


def empty_cage() -> Module:
    """The module of a port with no transceiver."""
    return {
        "present": False,
        "optical": False,
        "vendor": None,
        "part_number": None,
        "cable_technology": None,
        "ddm": {"rx_power_dbm": None, "temperature_c": None},
    }


def _entry(values: Sequence[Optional[float]], low: Optional[float], high: Optional[float]) -> Optional[DdmEntry]:
    """A ddm entry, or None when a value or a threshold is missing (printed N/A)."""
    if not values or any(v is None for v in values) or low is None or high is None:
        return None
    return {"values": [float(v) for v in values if v is not None], "low": low, "high": high}


def _optical(technology: Optional[str]) -> bool:
    return bool(technology) and not _COPPER_RE.search(technology or "")


def _num(raw: Any, tool: str, where: str, text: Optional[str]) -> Optional[float]:
    """'-0.64 dBm' -> -0.64, '0.8625 mW / -0.64 dBm' -> -0.64 (the dBm figure), 'N/A' -> None."""
    raw = (raw or "").strip()
    if raw in ("", "N/A", "n/a", "NA", "Unknown") or raw.startswith("-inf"):
        return None
    if "/" in raw:  # '0.8625 mW / -0.64 dBm': the dBm figure
        raw = raw.split("/")[-1].strip()
    m = _NUM_RE.match(raw)
    if not m:
        raise ParseError(tool, f"{where}: {raw!r} is not a number", text)
    return float(m.group(1))


def _text(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value in ("", "N/A", "n/a") else value


# ---------------------------------------------------------------- NVUE

_NVUE_LINE_RE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9][\w-]*)\s*:\s*(?P<value>.*?)\s*$")
_NVUE_ABSENT = ("unplugged", "not present", "absent", "not_present")


def _nvue_tree(text: Optional[str], tool: str) -> dict[str, Any]:
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    first = text.strip().splitlines()[0]
    if first.startswith("Error") or "does not exist" in first:
        raise ParseError(tool, first.strip(), text)
    tree: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, tree)]
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.strip() == "...":
            continue
        m = _NVUE_LINE_RE.match(line)
        if not m:
            raise ParseError(tool, f"line {n}: {line.strip()!r} is not 'key : value'", text)
        depth = len(m.group("indent"))
        while stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1]
        key = m.group("key")
        if key in parent and isinstance(parent[key], dict) != (m.group("value") == ""):
            raise ParseError(tool, f"line {n}: {line.strip()!r}: {key!r} is both a block and a value", text)
        if m.group("value") == "":
            node = parent.setdefault(m.group("key"), {})
            stack.append((depth, node))
        else:
            parent[m.group("key")] = m.group("value")
    if "status" not in tree and "identifier" not in tree:
        raise ParseError(tool, "no 'status' or 'identifier' line: not a transceiver", text)
    return tree


def parse_nvue_platform_transceiver(text: Optional[str], port: Optional[str] = None) -> dict[Optional[str], Module]:
    """``nv show platform transceiver <port>`` -> {port: module} (NVUE does not print the port name:
    the caller names it)."""
    tool = "nv show platform transceiver"
    tree = _nvue_tree(text, tool)
    status = (tree["status"] if isinstance(tree.get("status"), str) else "").lower()
    ident = _text(tree.get("identifier"))
    if any(s in status for s in _NVUE_ABSENT) or (not status and ident is None):
        return {port: empty_cage()}
    tech = _text(tree.get("cable-type"))
    temp = tree.get("temperature")
    temperature = None
    if isinstance(temp, dict):
        temperature = _entry(
            [_num(temp.get("temperature"), tool, "temperature", text)],
            _num(temp.get("low-alarm-threshold"), tool, "temperature low-alarm-threshold", text),
            _num(temp.get("high-alarm-threshold"), tool, "temperature high-alarm-threshold", text),
        )
    rx: Optional[DdmEntry] = None
    channels = tree.get("channel")
    if isinstance(channels, dict) and channels:
        lanes = sorted((k for k in channels if re.fullmatch(r"channel-\d+", k)), key=lambda k: int(k.split("-")[1]))
        values: list[Optional[float]] = []
        lows: list[Optional[float]] = []
        highs: list[Optional[float]] = []
        for lane in lanes:
            p = (channels[lane] or {}).get("rx-power") if isinstance(channels[lane], dict) else None
            if not isinstance(p, dict):
                raise ParseError(tool, f"{lane}: no rx-power block", text)
            values.append(_num(p.get("power"), tool, f"{lane} rx-power", text))
            lows.append(_num(p.get("low-alarm-threshold"), tool, f"{lane} rx-power low-alarm-threshold", text))
            highs.append(_num(p.get("high-alarm-threshold"), tool, f"{lane} rx-power high-alarm-threshold", text))
        # the module has one rx threshold pair; NVUE repeats it per channel
        rx = _entry(values, lows[0] if lows else None, highs[0] if highs else None)
    return {
        port: {
            "present": True,
            "optical": _optical(tech),
            "vendor": _text(tree.get("vendor-name")),
            "part_number": _text(tree.get("vendor-pn")),
            "cable_technology": tech,
            "ddm": {"rx_power_dbm": rx, "temperature_c": temperature},
            "fields": tree,
        }
    }  # every field as printed: one the shape does not read is kept (issue 38)


# ---------------------------------------------------------------- SONiC

_SONIC_HEAD_RE = re.compile(r"^(?P<port>\S+): SFP EEPROM (?P<state>detected|not detected)\s*$", re.I)
_SONIC_SECTIONS = ("ChannelMonitorValues", "ChannelThresholdValues", "ModuleMonitorValues", "ModuleThresholdValues")


def parse_sonic_transceiver_eeprom(text: Optional[str]) -> dict[str, Module]:
    """``show interfaces transceiver eeprom --dom [<port>]`` (sfpshow) -> {port: module}."""
    tool = "show interfaces transceiver eeprom --dom"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    blocks: dict[str, dict[str, Any]] = {}
    current: Optional[dict[str, Any]] = None
    section = "info"
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _SONIC_HEAD_RE.match(line)
        if m:
            current = blocks.setdefault(m.group("port"), {"present": m.group("state").lower() == "detected", "info": {}, **{s: {} for s in _SONIC_SECTIONS}})
            section = "info"
            continue
        if current is None:
            raise ParseError(tool, f"line {n}: {line.strip()!r} before a '<port>: SFP EEPROM detected' line", text)
        if ":" not in line or not line[:1].isspace():
            if line[:1].isspace():  # a continuation (Application Advertisement's further lines)
                continue
            raise ParseError(tool, f"line {n}: {line.strip()!r} is not 'key: value'", text)
        key, value = (x.strip() for x in line.split(":", 1))
        if key in _SONIC_SECTIONS and value == "":
            section = key
            continue
        deep = line.startswith(" " * 16)
        if not deep:
            section = "info"
        current[section if deep else "info"][key] = value
    if not blocks:
        raise ParseError(tool, "no '<port>: SFP EEPROM ...' line", text)
    out: dict[str, Module] = {}
    for port, b in blocks.items():
        if not b["present"]:
            out[port] = empty_cage()
            continue
        info, chm, cht = b["info"], b["ChannelMonitorValues"], b["ChannelThresholdValues"]
        mom, mot = b["ModuleMonitorValues"], b["ModuleThresholdValues"]
        lanes = sorted((int(k[2:-5]) for k in chm if re.fullmatch(r"RX\d{1,2}Power", k)))
        if any(not 1 <= lane <= 16 for lane in lanes):
            raise ParseError(tool, f"{port}: lane numbers {lanes} are not 1-16", text)
        host_lanes = info.get("Host Lane Count") or ""
        # a lane the module does not print (N/A) is still one of its lanes: up to the host lane count
        count = max(lanes + ([int(host_lanes)] if host_lanes.isdigit() and int(host_lanes) <= 16 else []), default=0)
        values = [_num(chm.get(f"RX{i}Power"), tool, f"{port} RX{i}Power", text) for i in range(1, count + 1)]
        rx = _entry(
            values,
            _num(cht.get("RxPowerLowAlarm"), tool, f"{port} RxPowerLowAlarm", text),
            _num(cht.get("RxPowerHighAlarm"), tool, f"{port} RxPowerHighAlarm", text),
        )
        temperature = _entry(
            [_num(mom.get("Temperature"), tool, f"{port} Temperature", text)],
            _num(mot.get("TempLowAlarm"), tool, f"{port} TempLowAlarm", text),
            _num(mot.get("TempHighAlarm"), tool, f"{port} TempHighAlarm", text),
        )
        tech = _text(info.get("Media Interface Technology"))
        if tech is None:
            tech = next((_text(v) for k, v in info.items() if k.endswith("Compliance Code")), None)
        out[port] = {
            "present": True,
            "optical": _optical(tech),
            "vendor": _text(info.get("Vendor Name")),
            "part_number": _text(info.get("Vendor PN")),
            "cable_technology": tech,
            "ddm": {"rx_power_dbm": rx, "temperature_c": temperature},
            "fields": {k: v for k, v in b.items() if k != "present"},
        }  # as printed (issue 38)
    return out


# ---------------------------------------------------------------- EOS

_EOS_LANE_RE = re.compile(r"^(?P<cage>Ethernet\d+)(?:/(?P<lane>\d+))?$")


def _eos_value(entry: dict[str, Any], key: str) -> Optional[float]:
    v = entry.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _eos_threshold(entry: dict[str, Any], key: str, level: str) -> Optional[float]:
    d = entry.get("details")
    return _eos_value(d.get(key) or {}, level) if isinstance(d, dict) and isinstance(d.get(key), dict) else None


def parse_eos_transceiver_detail(doc: Any) -> dict[str, Module]:
    """``show interfaces transceiver detail | json`` (text or parsed) -> {port: module}: the lane
    interfaces of one cage (``Ethernet1/1`` .. ``Ethernet1/8``) gathered under the lowest one.

    EOS lists only interfaces whose module reports DOM: a port absent from the answer is not
    in the result (the caller says what it could not read)."""
    tool = "show interfaces transceiver detail"
    intfs = eos_json(tool, doc, "interfaces")
    cages: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
    for name, entry in intfs.items():
        m = _EOS_LANE_RE.match(name)
        if not m or not isinstance(entry, dict):
            raise ParseError(tool, f"{name}: not an Ethernet interface entry", None)
        cages.setdefault(m.group("cage"), []).append((int(m.group("lane") or 0), name, entry))
    out: dict[str, Module] = {}
    for lanes in cages.values():
        lanes.sort()
        head = lanes[0][2]
        values = [_eos_value(e, "rxPower") for _n, _name, e in lanes]
        rx = _entry(values, _eos_threshold(head, "rxPower", "lowAlarm"), _eos_threshold(head, "rxPower", "highAlarm"))
        temperature = _entry(
            [_eos_value(head, "temperature")], _eos_threshold(head, "temperature", "lowAlarm"), _eos_threshold(head, "temperature", "highAlarm")
        )
        tech = head.get("mediaType") if isinstance(head.get("mediaType"), str) else None
        out[lanes[0][1]] = {
            "present": True,
            "optical": _optical(tech),
            "vendor": None,
            "part_number": None,
            "cable_technology": tech,
            "ddm": {"rx_power_dbm": rx, "temperature_c": temperature},
        }
    return out
