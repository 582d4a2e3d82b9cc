"""Parsers for the bit error rate and FEC counters of switch ports (the physical layer of what each
port receives).

Pure functions, stdlib only, importable on its own. Each returns ``{port: errors}``::

    {"pre_fec_ber": float or None, "post_fec_ber": float or None,
     "fec_corrected": int or None, "fec_uncorrected": int or None, "fec_mode": str or None}

A field the platform's command does not print (or prints as N/A) is None, never 0.

- ``parse_sonic_fec_stats(text)``: SONiC sonic-utilities ``show interfaces counters fec-stats``
  (portstat -f): FEC_CORR, FEC_UNCORR (codewords), and from 202411 FEC_PRE_BER / FEC_POST_BER (the
  rate over the last counter poll); later releases add FEC_PRE_BER_MAX, FLR(O), FLR(P) (Accuracy),
  FEC_MAX_T, which are not read. The FEC mode is not printed.
- ``parse_nvue_phy_health(text, port=None)``: Cumulus Linux NVUE ``nv show interface <swp> link
  phy-detail`` (5.10 - 5.14) and its 5.15 name ``nv show interface <swp> link phy health``:
  raw-ber (pre-FEC), effective-ber (post-FEC), effective-errors (the error BITS FEC did not
  correct: ``fec_uncorrected`` counts bits here, not codewords). Corrected errors are printed per
  lane in bits and as a histogram, not as codewords: ``fec_corrected`` is None; the FEC mode is
  not printed. NVUE prints a BER of zero as ``15E-255``.
- ``parse_eos_phy_detail(doc)``: Arista EOS ``show interfaces phy detail | json`` (eAPI model
  revision 2): per interface a list of PHYs (the switch chip, a retimer's system and line side),
  each with ``preFecBer.value`` and ``fec.correctedCodewords.value`` /
  ``fec.uncorrectedCodewords.value``, ``fec.encoding``. A port's worst PHY is what it receives:
  the highest pre-FEC BER, and the codeword counts summed over its PHYs. A PHY that reports only
  ``text`` (revision 1, the CLI text wrapped in JSON) is not read: its fields stay None.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Optional, TypedDict, Union, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, eos_json
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError, eos_json  # type: ignore[import-not-found,no-redef]

FIELDS = ("pre_fec_ber", "post_fec_ber", "fec_corrected", "fec_uncorrected", "fec_mode")


class _PhyErrorsBase(TypedDict):
    pre_fec_ber: Optional[float]
    post_fec_ber: Optional[float]
    fec_corrected: Optional[int]
    fec_uncorrected: Optional[int]
    fec_mode: Optional[str]


class PhyErrors(_PhyErrorsBase, total=False):
    """What one port receives (``Driver.phy_errors``): FIELDS, None where the platform does not print
    it; ``warnings`` only where a row was not read."""

    warnings: list[str]


def unread() -> PhyErrors:
    """The errors of a port whose command prints none of them."""
    return cast(PhyErrors, dict.fromkeys(FIELDS))


def _ber(raw: Optional[str], tool: str, where: str, text: Optional[str]) -> Optional[float]:
    """'1.48e-20' -> 1.48e-20, '15E-255' -> 1.5e-254, 'N/A' -> None."""
    raw = (raw or "").strip()
    if raw in ("", "N/A", "n/a", "NA"):
        return None
    try:
        v = float(raw)
    except ValueError:
        raise ParseError(tool, f"{where}: {raw!r} is not a bit error rate", text) from None
    if not math.isfinite(v) or v < 0:
        raise ParseError(tool, f"{where}: {raw!r} is not a bit error rate", text)
    return v


def _count(raw: Optional[str], tool: str, where: str, text: Optional[str]) -> Optional[int]:
    """'130,402' -> 130402, 'N/A' -> None."""
    raw = (raw or "").strip().replace(",", "")
    if raw in ("", "N/A", "n/a", "NA"):
        return None
    if not raw.isdigit():
        raise ParseError(tool, f"{where}: {raw!r} is not a counter", text)
    return int(raw)


# ---------------------------------------------------------------- SONiC

_SONIC_COLUMNS = {"FEC_CORR": "fec_corrected", "FEC_UNCORR": "fec_uncorrected", "FEC_PRE_BER": "pre_fec_ber", "FEC_POST_BER": "post_fec_ber"}
_DASH_RE = re.compile(r"^\s*-+(\s+-+)+\s*$")
_CELLS_RE = re.compile(r"\s{2,}")


def parse_sonic_fec_stats(text: Optional[str]) -> dict[str, PhyErrors]:
    """``show interfaces counters fec-stats`` -> {port: errors}.

    The header names the columns (they grew over the releases); cells are split on two or more
    spaces (``7.81e-10 (89%)`` is one cell). ParseError for an answer without the ``IFACE ...
    FEC_CORR`` header or a row whose cells do not match it."""
    tool = "show interfaces counters fec-stats"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    columns: Optional[list[str]] = None
    out: dict[str, PhyErrors] = {}
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or _DASH_RE.match(line) or s.startswith("Last cached time") or s.startswith("For namespace") or s.startswith("The rates are calculated"):
            continue
        cells = _CELLS_RE.split(s)
        if cells[0] == "IFACE":
            if "FEC_CORR" not in cells or "FEC_UNCORR" not in cells:
                raise ParseError(tool, f"line {n}: {s!r}: no FEC_CORR / FEC_UNCORR column", text)
            columns = cells
            continue
        if columns is None:
            raise ParseError(tool, f"line {n}: {s!r} before the 'IFACE STATE FEC_CORR ...' header", text)
        if len(cells) != len(columns):
            raise ParseError(tool, f"line {n}: {s!r}: {len(cells)} cells for {len(columns)} columns", text)
        row = dict(zip(columns, cells))
        port = row["IFACE"]
        errors = unread()
        for col, key in _SONIC_COLUMNS.items():
            if col in row:
                value: Union[float, int, None] = (_ber if key.endswith("_ber") else _count)(row[col], tool, f"line {n} {port} {col}", text)
                cast(Dict[str, Any], errors)[key] = value
        out[port] = errors
    if columns is None:
        raise ParseError(tool, "no 'IFACE STATE FEC_CORR ...' header", text)
    return out


# ---------------------------------------------------------------- NVUE

_NVUE_ROW_RE = re.compile(r"^(?P<key>\S+)\s+(?P<value>\S.*?)\s*$")
_NVUE_RULE_RE = re.compile(r"^\s*-+(\s+-+)+\s*$")
# the rows of the published outputs (5.10 user guide, the reference, 5.15): those not read are known
_NVUE_PHY_KEY_RE = re.compile(
    r"^(time-since-last-clear-min|phy-received-bits|symbol-errors|effective-errors|raw-ber"
    r"|symbol-ber|effective-ber|phy-raw-errors-lane\d+|raw-ber-lane\d+"
    r"|rs-num-corr-err-bin\d+|snr-(host|media)-lane\d+)$"
)


def parse_nvue_phy_health(text: Optional[str], port: Optional[str] = None) -> dict[Optional[str], PhyErrors]:
    """``nv show interface <port> link phy-detail`` (5.10 - 5.14) or ``... link phy health`` (5.15+)
    -> {port: errors} (NVUE does not print the port name: the caller names it).

    The ``key  value`` rows before any sub-table (5.15's reference prints a ``Lane Stats`` table
    after them) are read; the first word of a value is the operational one. A row under the rule
    that is none of the published outputs' rows is named in the port's ``warnings`` (present only
    then; issue 38). ParseError for an NVUE error, or an answer without raw-ber and effective-ber."""
    tool = "nv show interface link phy health"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    first = text.strip().splitlines()[0].strip()
    if first.startswith("Error") or "does not exist" in first:
        raise ParseError(tool, first, text)
    rows: dict[str, str] = {}
    warnings: list[str] = []
    started = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip() and set(line.strip()) == {"="}:
            break  # a sub-table (Lane Stats): its rows are per lane
        if not started:
            started = bool(_NVUE_RULE_RE.match(line))
            continue
        m = _NVUE_ROW_RE.match(line)
        if m and _NVUE_PHY_KEY_RE.match(m.group("key")):
            rows[m.group("key")] = m.group("value").split()[0]
        elif line.strip() and not line.strip().startswith(("Lane Stats", "...")):
            warnings.append(f"line {n}: not read: {line.strip()!r}")
    if "raw-ber" not in rows or "effective-ber" not in rows:
        raise ParseError(tool, "no raw-ber and effective-ber rows: not the port's physical-layer counters", text)
    errors = unread()
    errors["pre_fec_ber"] = _ber(rows["raw-ber"], tool, "raw-ber", text)
    errors["post_fec_ber"] = _ber(rows["effective-ber"], tool, "effective-ber", text)
    errors["fec_uncorrected"] = _count(rows.get("effective-errors"), tool, "effective-errors", text)
    if warnings:
        errors["warnings"] = warnings
    return {port: errors}


# ---------------------------------------------------------------- EOS

_EOS_INTF_RE = re.compile(r"^Ethernet\d+(/\d+)*$")


def _eos_value(node: Any, tool: str, where: str) -> Union[int, float, None]:
    """``{"value": n, ...}`` -> n (None where absent); ParseError for a value that is not a number."""
    if node is None:
        return None
    v = node.get("value") if isinstance(node, dict) else node
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ParseError(tool, f"{where}: {v!r} is not a non-negative number", None)
    return cast(Union[int, float], v)


def parse_eos_phy_detail(doc: Any) -> dict[str, PhyErrors]:
    """``show interfaces phy detail | json`` (text or parsed) -> {port: errors}: per port, the
    highest ``preFecBer`` of its PHYs, their corrected and uncorrected codewords summed, the first
    ``fec.encoding``. EOS prints no post-FEC BER. A port without FEC data has every field None;
    an interface that is not EthernetN[/M...] is left out."""
    tool = "show interfaces phy detail"
    intfs = eos_json(tool, doc, "interfacePhyStatuses")
    out: dict[str, PhyErrors] = {}
    for name, entry in intfs.items():
        if not isinstance(entry, dict):
            raise ParseError(tool, f"{name}: not an interface entry", None)
        if not _EOS_INTF_RE.match(name):
            continue  # a management port: no fabric link
        phys = entry.get("phyStatuses")
        if not isinstance(phys, list) or not all(isinstance(p, dict) for p in phys):
            raise ParseError(tool, f"{name}: phyStatuses is not a list of PHYs", None)
        errors = unread()
        bers: list[float] = []
        corrected: list[int] = []
        uncorrected: list[int] = []
        for i, phy in enumerate(phys):
            where = f"{name} phyStatuses[{i}]"
            fec = phy.get("fec")
            if fec is not None and not isinstance(fec, dict):
                raise ParseError(tool, f"{where}: fec is not an object", None)
            ber = _eos_value(phy.get("preFecBer"), tool, f"{where} preFecBer")
            if ber is not None:
                bers.append(float(ber))
            for key, found in (("correctedCodewords", corrected), ("uncorrectedCodewords", uncorrected)):
                v = _eos_value((fec or {}).get(key), tool, f"{where} fec.{key}")
                if v is not None:
                    found.append(int(v))
            if errors["fec_mode"] is None and isinstance((fec or {}).get("encoding"), str):
                errors["fec_mode"] = cast(Dict[str, Any], fec)["encoding"]
        errors["pre_fec_ber"] = max(bers) if bers else None
        errors["fec_corrected"] = sum(corrected) if corrected else None
        errors["fec_uncorrected"] = sum(uncorrected) if uncorrected else None
        out[name] = errors
    return out
