"""Parser for ``ethtool -m <netdev>`` (``--module-info``): a pluggable module's EEPROM and diagnostics.

Pure functions, stdlib only, importable on its own.

``parse_ethtool_module(text)`` returns the module in the shape the link-health
judge (``checks/link_limits.py`` ``module_problems``) reads for every source::

    {"present": bool, "optical": bool, "vendor": str or None, "part_number": str or None,
     "cable_technology": str or None,
     "ddm": {"rx_power_dbm": {"values": [dBm per lane], "low": alarm, "high": alarm} or None,
             "temperature_c": {"values": [C], "low": alarm, "high": alarm} or None}}

What ethtool prints, by memory map (ethtool's ``sfpid.c``/``sfpdiag.c``, ``qsfp.c``, ``cmis.c``,
``sff-common.c``; every line ``\\t<name padded to 41> : <value>``, a longer name pushing the colon
right):

- SFF-8472 (SFP, identifier 0x03): one lane, ``Receiver signal average optical power`` (or
  ``Receiver signal OMA``), its thresholds ``Laser rx power low/high alarm threshold``; copper shows
  as ``Passive Cu cmplnce.`` / ``Active Cu cmplnce.``, ``Transceiver type : Passive Cable`` or a
  copper connector;
- SFF-8636 (QSFP+/QSFP28, 0x0c/0x0d/0x11): four lanes ``Rcvr signal avg optical power(Channel N)``
  (no space before the bracket until the 2025 JSON series added one); the thresholds only where the
  module has page 03h (``Alarm/warning flags implemented : Yes``);
- CMIS (QSFP-DD/OSFP/DSFP, 0x18/0x19/0x1b, diagnostics printed since ethtool 5.16): eight lanes per
  bank ``Rcvr signal avg optical power (Channel N)``, the thresholds from page 02h (the netlink path
  only); copper is ``Transmitter technology : 0x0a (Copper cable, ...)``.

Power is printed ``<mW %.4f> mW / <dBm %.2f> dBm``; 0 mW prints ``-inf dBm`` and is read as -40 dBm
(the 0.1 uW step of the register, the least a module can report). A lane whose laser bias, Tx power
and Rx power all read zero after the last lit lane is a lane the module does not use (a 400G-DR4 in an
eight-lane CMIS bank reads zero on lanes 5-8) and is left out, unless every lane reads so. A threshold
pair of 0 mW / 0 mW is a module that does not fill its thresholds: None, like a missing one.

An empty cage reads identifier 0x00 (``present`` False). A hex dump (ethtool does not know the
identifier, or a driver reported a failed EEPROM read as success), ``--json`` output and ethtool's
own errors (``Cannot get Module EEPROM data``, ``netlink error: ...``) are a ParseError naming them.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional, Sequence, TypedDict, TypeVar

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

TOOL = "ethtool -m"

# what ethtool itself writes when it cannot read the module (ethtool.c do_getmodule, netlink/nlsock.c)
_ERRORS = (
    "Cannot get module EEPROM information",
    "Cannot get Module EEPROM data",
    "SFP module not in cage",
    "netlink error:",
    "netlink warning:",
    "ethtool: bad command line",
    "Cannot get control socket",
    "Cannot get device",
)
_LINE_RE = re.compile(r"^\s*(?P<key>[^:]*?\S)\s*:(?:\s(?P<value>.*))?$")
_POWER_RE = re.compile(r"^(?P<mw>\d+(?:\.\d+)?) mW / (?P<dbm>-?(?:\d+(?:\.\d+)?|inf)) dBm$")
_TEMP_RE = re.compile(r"^(?P<c>-?\d+(?:\.\d+)?) degrees C / -?\d+(?:\.\d+)? degrees F$")
_BIAS_RE = re.compile(r"^(?P<ma>\d+(?:\.\d+)?) mA$")
_HEX_RE = re.compile(r"^\s*0x[0-9a-fA-F]+:")
_CHANNEL_RE = re.compile(
    r"^(?P<what>Rcvr signal avg optical power|Receiver signal OMA|Transmit avg optical power|"
    r"Laser tx bias current) ?\(Channel (?P<n>\d+)\)$"
)
_SFP_RX = ("Receiver signal average optical power", "Receiver signal OMA")
# 0 mW: below the 0.1 uW step of the power registers (SFF-8472 / SFF-8636 / CMIS), printed -inf dBm
NO_LIGHT_DBM = -40.0
_IDENTIFIER_RE = re.compile(r"^0x(?P<code>[0-9a-fA-F]{2})\b")
_COPPER_CONNECTORS = ("Copper pigtail", "RJ45")

_T = TypeVar("_T")


class DdmEntry(TypedDict):
    """A diagnostic's readings (per lane) and its alarm thresholds."""

    values: list[float]
    low: float
    high: float


class Ddm(TypedDict):
    rx_power_dbm: Optional[DdmEntry]
    temperature_c: Optional[DdmEntry]


class ModuleReading(TypedDict):
    """What checks/link_limits.py ``module_problems`` reads of a module, whatever read it: ``ethtool -m`` on a
    NIC (``EthtoolModule``) or a switch port's transceiver read (switch/optics.py ``Module``)."""

    present: bool
    optical: bool
    vendor: Optional[str]
    part_number: Optional[str]
    cable_technology: Optional[str]
    ddm: Ddm


class EthtoolModule(ModuleReading):
    """``parse_ethtool_module``: the reading, and every field as printed."""

    fields: dict[str, list[str]]


def _lines(text: Optional[str]) -> list[tuple[str, str]]:
    """[(key, value)] of ethtool's ``name : value`` lines; a line that is not one is a ParseError."""
    if text is None or not text.strip():
        raise ParseError(TOOL, "no output", text)
    stripped = text.strip()
    if stripped[0] in "[{":
        raise ParseError(TOOL, "JSON output (ethtool --json -m) is not read; the text of ethtool -m is", text)
    for line in text.splitlines():
        if any(e in line for e in _ERRORS):
            raise ParseError(TOOL, line.strip(), text)
    first = stripped.splitlines()[0].split()
    if first[:2] == ["Offset", "Values"] or _HEX_RE.match(stripped):
        raise ParseError(
            TOOL,
            "a hex dump of the module's EEPROM, not its decoded fields: ethtool does not know the "
            "module's identifier, or the driver returned a failed read as data",
            text,
        )
    out: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE_RE.match(line)
        if not m:
            raise ParseError(TOOL, f"line {n}: {line.strip()!r} is not 'name : value'", text)
        out.append((m.group("key"), (m.group("value") or "").strip()))
    if not out or out[0][0] != "Identifier":
        raise ParseError(TOOL, "no 'Identifier' line first: not ethtool -m output", text)
    return out


def _paren(value: Optional[str]) -> Optional[str]:
    """'0x00 (850 nm VCSEL)' -> '850 nm VCSEL'."""
    m = re.search(r"\((.*)\)\s*$", value or "")
    return m.group(1).strip() if m else None


def _power(key: str, value: str, text: Optional[str]) -> tuple[float, float]:
    """'0.9720 mW / -0.12 dBm' -> (mW, dBm); 0 mW (-inf dBm) -> (0.0, NO_LIGHT_DBM)."""
    m = _POWER_RE.match(value)
    if not m:
        raise ParseError(TOOL, f"{key}: {value!r} is not '<mW> mW / <dBm> dBm'", text)
    mw = float(m.group("mw"))
    dbm = m.group("dbm")
    return mw, (NO_LIGHT_DBM if dbm == "-inf" else max(float(dbm), NO_LIGHT_DBM))


def _number(regex: re.Pattern[str], group: str, key: str, value: str, text: Optional[str], unit: str) -> float:
    m = regex.match(value)
    if not m:
        raise ParseError(TOOL, f"{key}: {value!r} is not a value in {unit}", text)
    return float(m.group(group))


def _entry(values: Sequence[float], low: Optional[float], high: Optional[float]) -> Optional[DdmEntry]:
    """A ddm entry, or None where a value or a threshold is missing."""
    if not values or low is None or high is None:
        return None
    return {"values": list(values), "low": low, "high": high}


def _thresholds(fields: dict[str, str], name: str, read: Callable[[str], _T]) -> tuple[Optional[_T], Optional[_T]]:
    """(low, high) alarm thresholds of ``name`` ('Laser rx power', 'Module temperature'), None each where absent."""
    low, high = (fields.get(f"{name} {side} alarm threshold") for side in ("low", "high"))
    return (read(low) if low is not None else None), (read(high) if high is not None else None)


def _lanes(channels: dict[int, dict[str, Any]], text: Optional[str]) -> list[float]:
    """{channel: {what: value}} -> [dBm per lane in use] (see the module docstring), [] when none is printed."""
    numbers = sorted(n for n, c in channels.items() if "rx" in c)
    if not numbers:
        return []
    if numbers != list(range(1, len(numbers) + 1)):
        raise ParseError(TOOL, f"Rx power channels {numbers} are not 1..{len(numbers)}", text)

    def dark(c: dict[str, Any]) -> bool:
        known = [c["rx"][0]] + [c[k] if k == "bias" else c[k][0] for k in ("bias", "tx") if k in c]
        return len(known) > 1 and all(v == 0 for v in known)

    lit = [n for n in numbers if not dark(channels[n])]
    last = max(lit) if lit else numbers[-1]
    return [channels[n]["rx"][1] for n in numbers if n <= last]


def _copper(fields: dict[str, str], multi: dict[str, list[str]], technology: Optional[str]) -> bool:
    """True when the module is a copper cable (no light to judge)."""
    if technology is not None:
        return technology.lower().startswith("copper")
    types = multi.get("Transceiver type", [])
    if any(k in fields for k in ("Passive Cu cmplnce.", "Active Cu cmplnce.")):
        return True
    if any(t in ("Passive Cable", "Active Cable") or "Copper" in t for t in types):
        return True
    return any(c in (fields.get("Connector") or "") for c in _COPPER_CONNECTORS)


def parse_ethtool_module(text: Optional[str]) -> EthtoolModule:
    """ethtool -m text -> the module (see the module docstring); ParseError on anything else."""
    pairs = _lines(text)
    fields: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    channels: dict[int, dict[str, Any]] = {}
    for key, value in pairs:
        multi.setdefault(key, []).append(value)
        fields.setdefault(key, value)
        m = _CHANNEL_RE.match(key)
        if m:
            what = {"Laser tx bias current": "bias", "Transmit avg optical power": "tx"}.get(m.group("what"), "rx")
            channels.setdefault(int(m.group("n")), {})[what] = _number(_BIAS_RE, "ma", key, value, text, "mA") if what == "bias" else _power(key, value, text)
    ident = _IDENTIFIER_RE.match(fields["Identifier"])
    if not ident:
        raise ParseError(TOOL, f"Identifier: {fields['Identifier']!r} is not '0x<code> (<name>)'", text)
    present = int(ident.group("code"), 16) != 0
    technology = _paren(fields.get("Transmitter technology"))
    types = multi.get("Transceiver type", [])
    copper = present and _copper(fields, multi, technology)
    if technology is None and copper:  # an SFP's copper cable: what says so
        technology = next((t for t in types if t in ("Passive Cable", "Active Cable")), None) or _paren(fields.get("Connector"))
    if technology is None:  # an SFP's optic: its transceiver codes
        technology = ", ".join(types) or None

    lanes = _lanes(channels, text)
    if not lanes:
        single = next((fields[k] for k in _SFP_RX if k in fields), None)
        if single is not None:
            lanes = [_power(next(k for k in _SFP_RX if k in fields), single, text)[1]]

    def power_threshold(value: str) -> tuple[float, float]:
        return _power("Laser rx power alarm threshold", value, text)

    rx_low, rx_high = _thresholds(fields, "Laser rx power", power_threshold)
    if rx_low is not None and rx_high is not None and rx_low[0] == 0 and rx_high[0] == 0:
        rx_low = rx_high = None  # 0 mW / 0 mW: the module fills no thresholds
    rx = _entry(lanes, rx_low and rx_low[1], rx_high and rx_high[1])

    def temp(value: str) -> float:
        return _number(_TEMP_RE, "c", "Module temperature", value, text, "degrees C")

    t_low, t_high = _thresholds(fields, "Module temperature", temp)
    t_now = temp(fields["Module temperature"]) if "Module temperature" in fields else None
    temperature = _entry([t_now] if t_now is not None else [], t_low, t_high)

    def text_field(key: str) -> Optional[str]:
        value = (fields.get(key) or "").strip()
        return value or None

    return {
        "present": present,
        "optical": bool(present and not copper),
        "vendor": text_field("Vendor name") if present else None,
        "part_number": text_field("Vendor PN") if present else None,
        "cable_technology": technology if present else None,
        "ddm": {"rx_power_dbm": rx if present else None, "temperature_c": temperature if present else None},
        # every 'name : value' line as printed (a field none of the above reads is not dropped: issue 38)
        "fields": multi,
    }
