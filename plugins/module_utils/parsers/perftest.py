"""Parser for perftest bandwidth tests: ib_write_bw (and ib_read_bw / ib_send_bw).

Pure function, stdlib only, importable on its own (what every perftest run prints, the
header, addresses and echoed command, is read by _perftest.py; the latency tests are in
perftest_lat.py).

Bandwidths are normalized to Gb/s (10^9 bit/s). perftest prints them either
in Gb/sec (``--report_gbits``; 125,000,000 bytes/s per unit) or in MB/sec,
relabelled MiB/sec in perftest 24.x; both of the latter are 2^20 bytes/s
(perftest's ``format_factor``), so 1 MB/sec = 0.008388608 Gb/s.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers._perftest import _VERBS, _collect_errors, _new_result, _read, _Reader
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

    from parsers._perftest import _VERBS, _collect_errors, _new_result, _read, _Reader  # type: ignore[import-not-found,no-redef]


MIB_PER_SEC_IN_GBPS = 1048576 * 8 / 1e9

_TITLE_RE = re.compile(r"^(?P<title>(?P<verb>Send|RDMA_Write|RDMA_Read|Atomic)\b.*?BW Test)$")
_RESULT_HEADER_RE = re.compile(r"^#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]")
_ROW_RE = re.compile(r"^\d+\s+\d+\s+[\d.]+\s+[\d.]+")


class _BwRowBase(TypedDict):
    bytes: int
    iterations: int
    bw_peak: float
    bw_average: float
    msg_rate_mpps: Optional[float]
    bw_peak_gbps: Optional[float]
    bw_average_gbps: Optional[float]


class BwRow(_BwRowBase, total=False):
    """One row of the result table; ``unread``: the cells after the numbers, kept, not dropped."""

    unread: list[str]


def _to_gbps(value: float, unit: str) -> float:
    """Convert a bandwidth cell to Gb/s given the table's unit label."""
    if unit.lower().startswith("gb"):
        return value
    return round(value * MIB_PER_SEC_IN_GBPS, 6)


def _parse_row(line: str, unit: str, duration_mode: bool) -> Optional[BwRow]:
    """One result row: bytes, iterations, BW peak, BW average, MsgRate (+ per-port extras)."""
    numbers: list[float] = []
    cells = line.split()
    for cell in cells:
        try:
            numbers.append(float(cell))
        except ValueError:
            break
    if len(numbers) < 4:
        return None
    rest = cells[len(numbers) :]
    peak, average = numbers[2], numbers[3]
    # perftest prints 0.00 for a peak it did not measure (-D, --run_infinitely,
    # and on either side, banner or not): a peak below the average is not one.
    unmeasured = duration_mode or (peak == 0 and average > 0)
    row: BwRow = {
        "bytes": int(numbers[0]),
        "iterations": int(numbers[1]),
        "bw_peak": peak,
        "bw_average": average,
        "msg_rate_mpps": numbers[4] if len(numbers) > 4 else None,
        "bw_peak_gbps": None if unmeasured else _to_gbps(peak, unit),
        "bw_average_gbps": _to_gbps(average, unit),
    }
    if rest:  # a cell that is not a number (where MsgRate or a per-port figure goes): kept, not dropped
        row["unread"] = rest
    return row


class _BwReader(_Reader):
    """A bandwidth test's run: its title and its ``#bytes #iterations BW peak[unit] ...`` table."""

    _title_re = _TITLE_RE
    _bw = True

    def _table(self, line: str) -> bool:
        """The ``#bytes #iterations BW peak[unit] ...`` header and its rows."""
        header = _RESULT_HEADER_RE.match(line)
        if header:
            self.result["units"] = header.group("unit")
            return True
        if self.result["units"] and _ROW_RE.match(line):
            row = _parse_row(line, self.result["units"], self.result["duration_mode"])
            if row is None:
                self.result["warnings"].append("result row not read (fewer than 4 numbers): %r" % line)
            else:
                self.result["results"].append(row)
            return True
        return False


def parse_ib_write_bw(text: Optional[str], units: Optional[str] = None) -> dict[str, Any]:
    """Parse ``ib_write_bw`` output, client or server (perftest 4.x .. 25.x).

    Also reads ib_read_bw / ib_send_bw, whose layout is the same. Handles:
    the header block (TAB-separated pairs in perftest >= 4.5, space-separated
    in older builds, any leading indentation), the ``-a`` sweep (one row per
    size; the server prints only the last), ``--report_gbits`` (Gb/sec) vs
    the default MB/sec / MiB/sec table, ``-D`` duration runs (peak printed as 0.00, returned as None; known
    from the row itself -- a 0.00 peak under a non-zero average -- or the
    echoed ``-D``, so the server side, which may not show the client's
    "BW peak won't be measured" banner, reads the same), ``--use_cuda``
    preamble (GPU index and name, DMA-BUF), rdma_cm (``-R``) server banners,
    ``Conflicting CPU frequency`` lines inside the table, and
    ``local/remote address`` + ``GID`` lines (IPv4 derived from RoCE
    IPv4-mapped GIDs). The header does not name the IB port or the TCP
    port; when the capture echoes the command line (``$ ib_write_bw -d
    mlx5_1 -i 1 -p 10000 ... 10.0.0.1``), ``command`` carries them
    (``ib_dev``, ``ib_port``, ``tcp_port``, ``qps``, ``gid_index``,
    ``size``, ``duration``, ``use_cuda``, flags, ``server``).

    Returns ``{"test", "verb" ("write"/"read"/"send"), "role"
    ("client"/"server"), "device", "num_qps", "transport_type",
    "connection_type", "link_type", "mtu" (int bytes), "gid_index",
    "tx_depth", "cq_moderation", "rdma_cm" (bool), "data_exchange", "tos",
    "header" {raw pairs}, "units" ("Gb/sec"/"MB/sec"/"MiB/sec"),
    "duration_mode", "cuda" ({"device", "name", "dmabuf", "pci"} or None),
    "local"/"remote": [{"lid", "qpn", "psn", "gid", "ipv4", ["rkey", "vaddr"]}], "results":
    [{"bytes", "iterations", "bw_peak", "bw_average", "msg_rate_mpps",
    "bw_peak_gbps", "bw_average_gbps"}], "bytes", "iterations",
    "bw_average_gbps", "bw_peak_gbps", "msg_rate_mpps" (the last row, i.e.
    the largest size of a sweep), "max_bw_average_gbps", "warnings",
    "command" (None unless echoed)}``. Error lines printed after a complete
    result table (teardown) are kept in ``warnings``.
    Header fields perftest did not print are absent.

    ``--out_json`` files (perftest >= 4.5-0.20: ``{"test_info": {...},
    "results": {"MsgSize", "n_iterations", "BW_peak", "BW_average",
    "MsgRate"}}``) are recognized by their leading ``{``. The file does not
    state its unit (Gb/sec with ``--report_gbits``, MB/sec otherwise): pass
    ``units`` ("Gb/sec" / "MB/sec") to get the Gb/s figures; without it
    they are None and ``warnings`` says why.

    Raises ParseError when there is no result row (connection failures such
    as "Couldn't connect to <host>:<port>" or "Unable to init the socket
    connection", "No IB devices found", a server still waiting for its
    client, empty output), with the tool's error lines as the message.
    """
    if text is not None and text.lstrip().startswith("{"):
        return _parse_out_json(text, units)
    lines, result = _read(_BwReader(), text)
    command = result["command"] or {}
    if command.get("duration") is not None or all(row["bw_peak_gbps"] is None for row in result["results"]):
        result["duration_mode"] = True
    # errors printed after a complete table (e.g. at teardown) do not void it
    result["warnings"].extend(_collect_errors(lines))
    _summarize(result)
    return result


# --out_json test_info keys -> the text header's typed fields
_JSON_INFO_FIELDS = {
    "Device": "device",
    "Number_of_qps": "num_qps",
    "Transport_type": "transport_type",
    "Connection_type": "connection_type",
    "Link_type": "link_type",
    "Mtu": "mtu",
    "GID_index": "gid_index",
    "TX_depth": "tx_depth",
    "RX_depth": "rx_depth",
    "CQ_Moderation": "cq_moderation",
    "Data_ex_method": "data_exchange",
    "TOS": "tos",
}


def _parse_out_json(text: str, units: Optional[str]) -> dict[str, Any]:
    """The ``--out_json`` report file of a bandwidth test."""
    tool = "ib_write_bw"
    try:
        data = json.loads(text)
    except ValueError as err:  # incl. the raw_qos layout, whose 'sl:' key is not quoted
        raise ParseError(tool, "--out_json file is not valid JSON: %s" % err, text)
    info = data.get("test_info") if isinstance(data, dict) else None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(info, dict) or not isinstance(results, dict):
        raise ParseError(tool, "--out_json file without test_info and results objects", text)
    numbers: dict[str, Any] = {key: results.get(key) for key in ("MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate")}
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers.values()):
        raise ParseError(tool, "--out_json results without MsgSize / n_iterations / BW_peak / BW_average / MsgRate numbers: %r" % (results,), text)
    result = _new_result()
    result["format"] = "json"
    test = str(info.get("test", ""))
    result["test"] = test.replace("_", " ")
    verb = re.match(r"(Send|RDMA_Write|RDMA_Read|Atomic)", test)
    result["verb"] = _VERBS[verb.group(1)] if verb else None
    result["header"] = dict(info)
    # perftest writes TX_depth only on the client (or a duplex run), RX_depth on the server
    result["role"] = "server" if "RX_depth" in info and "TX_depth" not in info else "client"
    for key, field in _JSON_INFO_FIELDS.items():
        if key in info:
            result[field] = info[key]
    if units is None:
        result["warnings"].append("--out_json does not state its unit (Gb/sec with --report_gbits, MB/sec otherwise): Gb/s figures not derived")
    result["units"] = units
    peak, average = float(numbers["BW_peak"]), float(numbers["BW_average"])
    unmeasured = peak == 0 and average > 0
    result["duration_mode"] = unmeasured
    result["results"].append(
        {
            "bytes": int(numbers["MsgSize"]),
            "iterations": int(numbers["n_iterations"]),
            "bw_peak": peak,
            "bw_average": average,
            "msg_rate_mpps": float(numbers["MsgRate"]),
            "bw_peak_gbps": None if unmeasured or units is None else _to_gbps(peak, units),
            "bw_average_gbps": None if units is None else _to_gbps(average, units),
        }
    )
    for key in ("bytes", "iterations", "bw_average_gbps", "bw_peak_gbps", "msg_rate_mpps"):
        result[key] = result["results"][-1][key]
    result["max_bw_average_gbps"] = result["bw_average_gbps"]
    return result


def _summarize(result: dict[str, Any]) -> None:
    """Top-level figures from the last row (the only one, or the largest size of a sweep)."""
    last = result["results"][-1]
    for key in ("bytes", "iterations", "bw_average_gbps", "bw_peak_gbps", "msg_rate_mpps"):
        result[key] = last[key]
    result["max_bw_average_gbps"] = max(row["bw_average_gbps"] for row in result["results"])


def parse_ib_send_bw(text: Optional[str], units: Optional[str] = None) -> dict[str, Any]:
    """``ib_send_bw`` output: the same header and ``#bytes #iterations BW peak ...`` table as
    ``ib_write_bw`` (perftest src/send_bw.c prints through the same report functions), so the
    same result; ParseError if the output is another test's (its title or echoed command)."""
    result = parse_ib_write_bw(text, units)
    tool = (result.get("command") or {}).get("tool")
    if (result.get("verb") not in (None, "send")) or (tool and tool != "ib_send_bw"):
        raise ParseError("ib_send_bw", "output of %s, not ib_send_bw" % (tool or result.get("test")), text)
    return result
