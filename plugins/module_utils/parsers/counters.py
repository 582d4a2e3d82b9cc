"""Parsers for the host-side congestion counters of a ConnectX port.

Pure functions, stdlib only, importable on its own.

- ``parse_ethtool_stats(text)``: ``ethtool -S <netdev>`` (any driver; the mlx5
  names are decoded by ``mlx5_priority_counters`` / ``mlx5_phy_counters``).
- ``parse_rdma_statistic(text)``: iproute2 ``rdma statistic show link DEV/PORT``
  (the RDMA hw_counters: np_cnp_sent, rp_cnp_handled, out_of_sequence ...).
- ``parse_hw_counters(text)``: ``grep -H . /sys/class/infiniband/DEV/ports/N/hw_counters/*``
  (the same counters read from sysfs, where the rdma tool is missing).

A counter the driver or firmware does not expose is absent from the result,
never zero: callers warn that it cannot be proven (``missing_counters``).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

# mlx5 per-priority counters (Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst)
_PRIO_RE = re.compile(
    r"^(?P<dir>rx|tx)_prio(?P<prio>[0-7])_(?P<what>pause|pause_duration|pause_transition|"
    r"discards|bytes|packets|buf_discard|cong_discard|marked)$"
)
# mlx5 physical-port (PHY) counters that speak of link health
PHY_COUNTERS = (
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "link_down_events_phy",
    "rx_corrected_bits_phy",
    "rx_err_lane_0_phy",
    "rx_err_lane_1_phy",
    "rx_err_lane_2_phy",
    "rx_err_lane_3_phy",
    "rx_pcs_symbol_err_phy",
    "rx_fec_uncorrectable_phy",
    "rx_discards_phy",
    "tx_discards_phy",
    "rx_out_of_buffer",
    "rx_in_range_len_errors_phy",
    "rx_oversize_pkts_phy",
    "rx_undersize_pkts_phy",
)
# RDMA hw_counters that prove (or disprove) congestion control and loss recovery
RDMA_COUNTERS = (
    "np_cnp_sent",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "rp_cnp_ignored",
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "duplicate_request",
    "rnr_nak_retry_err",
    "implied_nak_seq_err",
    "out_of_buffer",
    "roce_adp_retrans",
    "roce_slow_restart",
    "req_cqe_error",
    "resp_cqe_error",
)

_ETHTOOL_ERRORS = (
    "no stats available",
    "Cannot get stats",
    "Operation not supported",
    "No such device",
    "Cannot get driver information",
    "Operation not permitted",
)


class EthtoolStats(TypedDict):
    """``parse_ethtool_stats``: every ``name: integer`` line, and what was skipped."""

    stats: dict[str, int]
    warnings: list[str]


class RdmaStatistic(TypedDict):
    """``parse_rdma_statistic``: ``{"DEV/PORT": {counter: value}}``."""

    links: dict[str, dict[str, int]]


class HwCounters(TypedDict):
    """``parse_hw_counters``: ``{counter: value}`` (the file names under hw_counters/)."""

    counters: dict[str, int]


def _int(value: str, tool: str, n: int, line: str, text: Optional[str]) -> int:
    try:
        return int(value)
    except ValueError:
        raise ParseError(tool, f"line {n}: {line.strip()!r}: counter value is not an integer", text) from None


def parse_ethtool_stats(text: Optional[str]) -> EthtoolStats:
    """``ethtool -S`` -> {"stats": {name: int}, "warnings": [...]}.

    The ``NIC statistics:`` banner is optional: a filtered listing
    (``ethtool -S eth0 | grep prio``) has none. A line that is not
    ``name: integer`` is named in ``warnings`` and skipped. Raises ParseError
    on the tool's error lines (no stats, no device) and when no counter line
    is there at all.
    """
    tool = "ethtool -S"
    if text is None or not text.strip():
        raise ParseError(tool, "no output", text)
    lines = text.splitlines()
    for line in lines:
        if any(e in line for e in _ETHTOOL_ERRORS):
            raise ParseError(tool, line.strip(), text)
    stats: dict[str, int] = {}
    warnings: list[str] = []
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s == "NIC statistics:":
            continue
        name, sep, value = s.rpartition(":")
        name, value = name.strip(), value.strip()
        if sep and name and re.fullmatch(r"-?\d+", value):
            stats[name] = int(value)
        elif sep and name:
            warnings.append(f"line {n}: {s!r}: counter value is not an integer")
        else:
            warnings.append(f"line {n}: {s!r} is not 'name: value'")
    if not stats:
        raise ParseError(tool, warnings[0] if warnings else "no 'name: value' counter lines", text)
    return {"stats": stats, "warnings": warnings}


def mlx5_priority_counters(stats: dict[str, int]) -> dict[int, dict[str, int]]:
    """{prio: {"rx_pause": n, "tx_pause": n, "rx_discards": n, ...}} from mlx5 ethtool stats."""
    out: dict[int, dict[str, int]] = {}
    for name, value in stats.items():
        m = _PRIO_RE.match(name)
        if m:
            out.setdefault(int(m.group("prio")), {})[f"{m.group('dir')}_{m.group('what')}"] = value
    return out


def mlx5_phy_counters(stats: dict[str, int]) -> dict[str, int]:
    """The PHY (link health) counters present in mlx5 ethtool stats."""
    return {k: stats[k] for k in PHY_COUNTERS if k in stats}


def parse_rdma_statistic(text: Optional[str]) -> RdmaStatistic:
    """iproute2 ``rdma statistic show link DEV/PORT`` -> {"links": {"DEV/PORT": {counter: int}}}.

    The tool prints one line per link: ``link mlx5_0/1 rx_write_requests 0 ...``
    (counter name and value alternating); newer iproute2 may wrap long lines
    with a tab-indented continuation, which belongs to the link above.
    """
    if text is None or not text.strip():
        raise ParseError("rdma statistic", "no output", text)
    links: dict[str, dict[str, int]] = {}
    current: Optional[dict[str, int]] = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        words = line.split()
        if words[0] == "link":
            if len(words) < 2 or "/" not in words[1]:
                raise ParseError("rdma statistic", f"line {n}: {line.strip()!r}: no DEV/PORT after 'link'", text)
            current = links.setdefault(words[1], {})
            words = words[2:]
        elif current is None or not line[:1].isspace():
            if "error" in line.lower() or "unknown" in line.lower() or "not" in line.lower():
                raise ParseError("rdma statistic", line.strip(), text)
            raise ParseError("rdma statistic", f"line {n}: {line.strip()!r} does not start with 'link DEV/PORT'", text)
        if len(words) % 2:
            raise ParseError("rdma statistic", f"line {n}: {line.strip()!r}: counter names and values do not pair up", text)
        for name, value in zip(words[::2], words[1::2]):
            current[name] = _int(value, "rdma statistic", n, line, text)
    return {"links": links}


def parse_hw_counters(text: Optional[str]) -> HwCounters:
    """``grep -H . .../ports/N/hw_counters/*`` -> {"counters": {name: int}} (path prefix dropped)."""
    if text is None or not text.strip():
        raise ParseError("hw_counters", "no output (the driver exposes no hw_counters directory?)", text)
    counters: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        path, sep, value = line.rpartition(":")
        if not sep or "/" not in path and not path:
            raise ParseError("hw_counters", f"line {n}: {line.strip()!r} is not 'path:value'", text)
        if "No such file" in line or "Permission denied" in line:
            raise ParseError("hw_counters", line.strip(), text)
        counters[path.rsplit("/", 1)[-1]] = _int(value.strip(), "hw_counters", n, line, text)
    return {"counters": counters}


def missing_counters(have: Iterable[str], wanted: Iterable[str] = RDMA_COUNTERS) -> list[str]:
    """The counters in ``wanted`` this driver/firmware does not expose (for a warning, never a pass)."""
    return [c for c in wanted if c not in have]
