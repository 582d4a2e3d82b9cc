"""Parser for ``mlnx_qos -i <netdev>`` (MLNX_OFED / mlnx-tools) output.

Pure function, stdlib only, importable on its own.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn, Optional, TypedDict, Union, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]


_NOTE_RE = re.compile(r"not supported on your system|lldpad service is running", re.IGNORECASE)
_FAILURE_RE = re.compile(
    r"command not found|\[Errno \d+\]|Operation not permitted|Permission denied|No such device|"
    r"Interface name is required|Bad arguments|Traceback|Error|cannot",
    re.IGNORECASE,
)
_TC_RE = re.compile(r"^tc:\s*(?P<tc>\d+)\s+ratelimit:\s*(?P<rate>[^,]+),\s*tsa:\s*(?P<tsa>\w+)(?:,\s*bw:\s*(?P<bw>\d+)%)?\s*$")


class QosTc(TypedDict):
    """One ``tc: N ratelimit: ..., tsa: ...`` block and the priorities listed under it."""

    tc: int
    ratelimit: str
    ratelimit_gbps: Optional[float]
    tsa: str
    bw_percent: Optional[int]
    priorities: list[int]


class MlnxQos(TypedDict):
    """``parse_mlnx_qos``. Besides these keys, ``Receive buffer size`` extras arrive as
    ``receive_buffer_<name>`` (``receive_buffer_max_buffer_size``: bytes)."""

    dcbx_mode: Optional[str]
    trust: Optional[str]
    dscp2prio: dict[str, int]
    prio2dscp: dict[str, list[int]]
    default_priority: Optional[int]
    receive_buffer_size: Optional[list[int]]
    cable_len: Union[int, str, None]
    pfc: Optional[list[int]]
    pfc_enabled_priorities: list[int]
    prio2buffer: Optional[list[int]]
    tcs: list[QosTc]
    prio2tc: dict[str, int]
    notes: list[str]
    warnings: list[str]


def _lines(text: Optional[str]) -> list[str]:
    return (text or "").replace("\r\n", "\n").split("\n")


def _int_row(line: str, label: str, number: int) -> list[int]:
    """``enabled     0   0   0   1 ...`` -> [0, 0, 0, 1, ...] (8 ints)."""
    values = line.split()[1:]
    if len(values) != 8 or not all(v.isdigit() for v in values):
        raise ParseError("mlnx_qos", "line %d: malformed PFC %s row: %r" % (number, label, line.strip()))
    return [int(v) for v in values]


def _ratelimit_gbps(text: str) -> Optional[float]:
    """``unlimited`` -> None; ``12.5 Gbps`` -> 12.5."""
    match = re.match(r"(\d+(?:\.\d+)?)\s*Gbps", text.strip())
    return float(match.group(1)) if match else None


def _parse_receive_buffers(value: str) -> tuple[list[int], dict[str, Union[int, str]]]:
    """``130944,130944,0,...,max_buffer_size=262016`` -> (sizes, {"max_buffer_size": 262016})."""
    sizes: list[int] = []
    extra: dict[str, Union[int, str]] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" in item:
            key, _sep, number = item.partition("=")
            extra[key.strip()] = int(number) if number.strip().isdigit() else number.strip()
        elif item.isdigit():
            sizes.append(int(item))
    return sizes, extra


# Lines that carry no value of their own: block headings, the PFC table's header row, rules.
_SKIP_RE = re.compile(r"^(?:dscp2prio mapping:|PFC configuration:|priority(?:\s+\d){8}\s*$|[=-]{3,})", re.IGNORECASE)


def _new_result() -> dict[str, Any]:
    # built as a plain dict: the receive buffer extras add keys of their own (MlnxQos)
    return {
        "dcbx_mode": None,
        "trust": None,
        "dscp2prio": {},
        "prio2dscp": {},
        "default_priority": None,
        "receive_buffer_size": None,
        "cable_len": None,
        "pfc": None,
        "pfc_enabled_priorities": [],
        "prio2buffer": None,
        "tcs": [],
        "prio2tc": {},
        "notes": [],
        "warnings": [],
    }


def _handle_tc_line(line: str, result: dict[str, Any]) -> QosTc:
    match = cast("re.Match[str]", _TC_RE.match(line))  # the caller matched the line already
    rate = match.group("rate").strip()
    tc: QosTc = {
        "tc": int(match.group("tc")),
        "ratelimit": rate,
        "ratelimit_gbps": _ratelimit_gbps(rate),
        "tsa": match.group("tsa"),
        "bw_percent": int(match.group("bw")) if match.group("bw") else None,
        "priorities": [],
    }
    result["tcs"].append(tc)
    return tc


def _handle_dscp_line(line: str, result: dict[str, Any], number: int) -> None:
    """``prio:3 dscp:31,30,29,...`` (a priority may span several lines)."""
    match = re.match(r"^prio:\s*(\d+)\s+dscp:\s*([\d,\s]*)$", line)
    if not match:
        raise ParseError("mlnx_qos", "line %d: malformed dscp2prio line: %r" % (number, line))
    prio = int(match.group(1))
    dscps = [int(d) for d in match.group(2).split(",") if d.strip().isdigit()]
    result["prio2dscp"].setdefault(str(prio), []).extend(sorted(dscps))
    for dscp in dscps:
        result["dscp2prio"][str(dscp)] = prio


def _handle_key_value(line: str, result: dict[str, Any]) -> bool:
    """Top-level ``Key: value`` lines; True if the line was one of them."""
    key, sep, value = line.partition(":")
    if not sep:
        return False
    key, value = key.strip().lower(), value.strip()
    if key == "dcbx mode":
        result["dcbx_mode"] = value
    elif key == "priority trust state":
        result["trust"] = value
    elif key == "cable len":
        result["cable_len"] = int(value) if value.isdigit() else value
    elif key == "default priority":
        result["default_priority"] = int(value) if value.isdigit() else None
    elif key.startswith("receive buffer size"):
        sizes, extra = _parse_receive_buffers(value)
        result["receive_buffer_size"] = sizes
        result.update({"receive_buffer_" + k: v for k, v in extra.items()})
    else:
        return False
    return True


def parse_mlnx_qos(text: Optional[str]) -> MlnxQos:
    """Parse ``mlnx_qos -i <netdev>`` output (also the dump printed after every set).

    Handles MLNX_OFED 4.x..24.x layouts: ``DCBX mode:``, ``Priority trust
    state: pcp|dscp``, the ``dscp2prio mapping:`` block (``prio:N
    dscp:..,``; a priority wraps over several lines after 8 DSCPs; absent in
    pcp trust), optional ``default priority:`` and ``Receive buffer size
    (bytes): a,b,..,max_buffer_size=N``, ``Cable len:``, the ``PFC
    configuration:`` table (``priority`` / ``enabled`` / optional ``buffer``
    rows), and per traffic class ``tc: N ratelimit: unlimited|X Gbps, tsa:
    vendor|strict|ets[, bw: P%]`` followed by its ``priority:  P`` lines.
    Lines from a shell trace (``+ mlnx_qos ...``) and notes such as
    "Priority trust state is not supported on your system" are tolerated
    (notes go to ``notes``).

    Mapping keys are strings (``"26"``), as in the lab's fabric model and as
    they come out of JSON anyway. Returns ``{"dcbx_mode", "trust",
    "dscp2prio": {"dscp": prio}, "prio2dscp": {"prio": [dscp]}, "default_priority", "receive_buffer_size":
    [bytes]|None, "cable_len", "pfc": [8 ints], "pfc_enabled_priorities":
    [prio], "prio2buffer": [8 ints]|None, "tcs": [{"tc", "ratelimit",
    "ratelimit_gbps", "tsa", "bw_percent", "priorities"}], "prio2tc":
    {"prio": tc}, "notes": [str], "warnings": [str]}``: a line that is none of these (an unknown
    ``Name: value`` field, another tool's output in the capture) is a ``warnings`` entry naming its
    line, never dropped silently.

    Raises ParseError on empty output or when the ``PFC configuration``
    block is missing (bad interface, permission error, tool missing), with
    the tool's own error lines.
    """
    result = _new_result()
    current_tc: Optional[QosTc] = None
    for number, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if not line or line.startswith("+ "):
            continue
        if _NOTE_RE.search(line):
            result["notes"].append(line.strip("* "))
        elif line.startswith("prio:") and "dscp:" in line:
            _handle_dscp_line(line, result, number)
        elif line.startswith("tc:") and _TC_RE.match(line):
            current_tc = _handle_tc_line(line, result)
        elif line.startswith("priority:") and current_tc is not None:
            cell = line.split(":", 1)[1].strip()
            if not cell.isdigit():
                raise ParseError("mlnx_qos", "line %d: malformed tc priority line: %r" % (number, line))
            prio = int(cell)
            current_tc["priorities"].append(prio)
            result["prio2tc"][str(prio)] = current_tc["tc"]
        elif line.startswith("enabled") and not line.startswith("enabled:"):
            result["pfc"] = _int_row(line, "enabled", number)
        elif line.startswith("buffer") and not line.startswith("buffer:"):
            result["prio2buffer"] = _int_row(line, "buffer", number)
        elif not _handle_key_value(line, result) and not _SKIP_RE.match(line):
            result["warnings"].append("line %d: not read: %r" % (number, line))

    if result["pfc"] is None:
        _raise_missing_pfc(text)
    result["pfc_enabled_priorities"] = [prio for prio, on in enumerate(result["pfc"]) if on]
    return cast(MlnxQos, result)


def _raise_missing_pfc(text: Optional[str]) -> NoReturn:
    if not (text or "").strip():
        raise ParseError("mlnx_qos", "empty output", text)
    errors = [line.strip() for line in _lines(text) if _FAILURE_RE.search(line) and not _NOTE_RE.search(line)]
    if errors:
        # A Python traceback ends with the exception line: that is the message.
        raise ParseError("mlnx_qos", errors[-1] if errors[0].startswith("Traceback") else "; ".join(errors), text)
    first = next(line.strip() for line in _lines(text) if line.strip())
    raise ParseError("mlnx_qos", "no 'PFC configuration' block in output (first line: %r)" % first, text)
