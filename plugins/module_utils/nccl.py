"""Parsers for NCCL: nccl-tests results (all_reduce_perf & co) and NCCL_DEBUG=INFO logs.

Pure functions, stdlib only, importable on their own. Both accept output
captured through ``mpirun --tag-output`` (``[1,0]<stdout>:`` prefixes) and
output where nccl-tests tables and NCCL log lines are interleaved.
"""

import json
import re

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError


_TAG_RE = re.compile(r"^\s*\[\d+,\d+\]<(?:stdout|stderr)>:")
_NCCL_LINE_RE = re.compile(r"\bNCCL (?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<msg>.*)$")
_VERSION_RE = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)(?:\+cuda(?P<cuda>[\d.]+))?")


def _lines(text):
    """Lines of ``text`` without CRLF and without mpirun ``--tag-output`` prefixes."""
    return [_TAG_RE.sub("", line) for line in (text or "").replace("\r\n", "\n").split("\n")]


def _number(cell):
    """``'12.5'`` -> 12.5, ``'3'`` -> 3, ``'N/A'`` -> None."""
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return None


# ==========================================================================
# nccl-tests
# ==========================================================================

_TEST_FAILURE_RE = re.compile(r"Test (?:NCCL|CUDA) failure|: Test failure |Test timeout|Invalid number of GPUs")
_DEVICE_RE = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]+)\]\s+(?P<name>.+?)\s*$"
)
_CONFIG_RE = re.compile(r"^#\s*nThread\s")
_TIME_COLUMNS = ("time", "cputime")
_PREFIX_KEYS = {"size": "size", "count": "count", "type": "type", "redop": "redop", "root": "root"}
_GROUP_KEYS = {"time": "time_us", "cputime": "cputime_us", "algbw": "algbw", "busbw": "busbw",
               "copybw": "copybw", "#wrong": "wrong", "error": "error"}


def _table_layout(header, order=("out_of_place", "in_place")):
    """Read the column header: names, where each ends, and the two placement groups.

    Handles ``size count type redop root time algbw busbw #wrong time ...``
    (nccl-tests >= 2.13), ``... redop time algbw busbw error ...`` (older),
    all_gather without ``redop`` (older), ``copybw`` columns, per-iteration
    ``i_min i_max i_p99 i_cv%`` columns and a trailing ``timestamp``.
    ``order`` is the placement of the first and second group, as the
    ``out-of-place  in-place`` line above the header says (mscclpp-test
    prints in-place first).
    """
    spans = [(m.group(0), m.end()) for m in re.finditer(r"[^\s#]\S*", header)]
    columns = [span[0] for span in spans]
    starts = [i for i, column in enumerate(columns) if column in _TIME_COLUMNS]
    if len(starts) < 2:
        raise ParseError("nccl-tests", "unrecognized result table header: %r" % header.strip())
    group_len = starts[1] - starts[0]
    return {
        "columns": columns,
        "ends": [span[1] for span in spans],
        "prefix": columns[:starts[0]],
        "group": columns[starts[0]:starts[1]],
        "groups": ((order[0], starts[0]), (order[1], starts[1])),
        "trailing": columns[starts[1] + group_len:],
        "width": len(header.rstrip()),
    }


def _placement(names, cells):
    """Values of one placement (out-of-place or in-place) keyed by normalized column names."""
    values = {}
    for name, cell in zip(names, cells):
        key = _GROUP_KEYS.get(name, name.replace("%", "_pct"))
        number = _number(cell) if cell is not None else None
        if key == "wrong" or number is None:
            values[key] = number
        else:
            values[key] = float(number)
    return values


def _row_cells(line, layout):
    """Map the cells of a row to header columns: {column index: text}, or None.

    nccl-tests prints every column right-aligned under its header name, so a
    row with as many cells as the header has columns is read in order; a row
    with fewer cells (a column left blank: ``redop`` of alltoall in old
    versions, a placement not run) is read by where each cell ends, which
    must be the end of a header column (give or take 2 characters, for
    numbers wider than their column) in left-to-right order. A row that fits
    neither is not read (None).
    """
    cells = [(m.group(0), m.end()) for m in re.finditer(r"\S+", line)]
    ncols = len(layout["columns"])
    if len(cells) == ncols or (layout["trailing"] and len(cells) > ncols):
        mapped = {i: cell[0] for i, cell in enumerate(cells[:ncols])}
        if len(cells) > ncols:  # a timestamp with spaces
            mapped[ncols - 1] = " ".join(cell[0] for cell in cells[ncols - 1:])
        return mapped
    if len(cells) > ncols:
        return None
    mapped, next_column = {}, 0
    for cell, end in cells:
        best = None
        for index in range(next_column, ncols):
            distance = abs(layout["ends"][index] - end)
            if distance <= 2 and (best is None or distance < best[1]):
                best = (index, distance)
        if best is None:
            return None
        mapped[best[0]] = cell
        next_column = best[0] + 1
    return mapped


def _parse_row(line, layout):
    """One result row -> dict (size, count, type, redop, root, out_of_place, in_place), or None."""
    mapped = _row_cells(line, layout)
    if mapped is None or 0 not in mapped:
        return None
    row = {}
    for index, name in enumerate(layout["prefix"]):
        key = _PREFIX_KEYS.get(name, name)
        cell = mapped.get(index)
        row[key] = cell if key in ("type", "redop") or cell is None else _number(cell)
    group = layout["group"]
    for placement, first in layout["groups"]:
        cells = [mapped.get(first + k) for k in range(len(group))]
        row[placement] = None if all(c is None for c in cells) else _placement(group, cells)
    if layout["trailing"] and mapped.get(len(layout["columns"]) - 1) is not None:
        row["timestamp"] = mapped[len(layout["columns"]) - 1]
    return row


def _parse_config(line):
    """``# nThread 1 nGpus 8 minBytes 8 maxBytes ... validation: 1 graph: 0`` -> dict."""
    config = {}
    for key, value in re.findall(r"([A-Za-z][A-Za-z ]*?):?\s+(-?\d+)(?:\((?:factor|bytes)\))?", line.lstrip("# ")):
        config[key.strip().replace(" ", "_").lower()] = int(value)
    step = re.search(r"step:\s*(\d+)\((factor|bytes)\)", line)
    if step:
        config["step_" + step.group(2)] = int(step.group(1))
        config.pop("step", None)
    return config


def _new_tests_result():
    return {
        "test": None,
        "nccl_tests_version": None,
        "nccl_version": None,
        "config": {},
        "devices": [],
        "columns": None,
        "rows": [],
        "out_of_bounds": None,
        "out_of_bounds_ok": None,
        "avg_bus_bandwidth": None,
        "avg_bus_bandwidth_ok": None,
        "nccl_last_error": None,
        "nccl_warnings": [],
        "warnings": [],
        "format": "text",
    }


def _handle_summary_line(line, result):
    """``# Out of bounds values : 0 OK`` / ``# Avg bus bandwidth : 232.167 [OK|FAILED]``."""
    oob = re.match(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", line)
    avg = re.match(r"^#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+|nan)\s*(OK|FAILED)?", line)
    if oob:
        result["out_of_bounds"] = int(oob.group(1))
        result["out_of_bounds_ok"] = result["out_of_bounds"] == 0
    elif avg:
        result["avg_bus_bandwidth"] = _number(avg.group(1))
        result["avg_bus_bandwidth_ok"] = None if not avg.group(2) else avg.group(2) == "OK"
    else:
        return False
    return True


def _handle_comment_line(line, result):
    """Lines starting with ``#``: version, test name, config, devices, table header, summary."""
    if _handle_summary_line(line, result):
        return
    version = re.match(r"^#\s*nccl-tests version (\S+)", line)
    starting = re.match(r"^#\s*Collective test starting:\s*(\S+)", line)
    device = _DEVICE_RE.match(line)
    error = re.match(r"^#\s*error:\s*(.+)$", line)
    if version:
        result["nccl_tests_version"] = version.group(1)
    elif starting:
        result["test"] = starting.group(1)
    elif _CONFIG_RE.match(line):
        result["config"] = _parse_config(line)
    elif device:
        result["devices"].append({
            "rank": int(device.group("rank")),
            "group": int(device.group("group")) if device.group("group") else None,
            "pid": int(device.group("pid")),
            "host": device.group("host"),
            "device": int(device.group("device")),
            "bus_id": device.group("bus"),
            "name": device.group("name"),
        })
    elif error:
        result["nccl_last_error"] = error.group(1).strip()


def _failures(result):
    """Human-readable reasons why a completed run did not pass."""
    reasons = []
    wrong_rows = [row["size"] for row in result["rows"]
                  for place in ("out_of_place", "in_place")
                  if row.get(place) and (row[place].get("wrong") or 0) > 0]
    if wrong_rows:
        reasons.append("#wrong elements at sizes %s" % sorted(set(wrong_rows)))
    if result["out_of_bounds"]:
        reasons.append("%d out-of-bounds values" % result["out_of_bounds"])
    no_bw = [row.get("size") for row in result["rows"]
             if not any(row.get(p) and row[p].get("busbw") is not None for p in ("out_of_place", "in_place"))]
    if no_bw:
        reasons.append("no bus bandwidth read at sizes %s" % no_bw)
    if result["warnings"]:
        reasons.append("%d result row(s) could not be read" % len(result["warnings"]))
    if result["avg_bus_bandwidth_ok"] is False:
        reasons.append("average bus bandwidth %s below NCCL_TESTS_MIN_BW" % result["avg_bus_bandwidth"])
    return reasons


def _finish_tests_result(result):
    rows = result["rows"]
    busbws = [row[p]["busbw"] for row in rows for p in ("out_of_place", "in_place")
              if row.get(p) and row[p].get("busbw") is not None]
    result["max_busbw"] = max(busbws) if busbws else None
    if result["avg_bus_bandwidth"] is not None:
        result["avg_bus_bandwidth_gbits"] = round(result["avg_bus_bandwidth"] * 8, 6)
    else:
        result["avg_bus_bandwidth_gbits"] = None
    result["failures"] = _failures(result)
    result["passed"] = not result["failures"]
    return result


def parse_nccl_tests(text):
    """Parse nccl-tests output (all_reduce_perf, all_gather_perf, ... ; text or ``-J`` JSON).

    Text layouts: nccl-tests 2.0 .. 2.12 (``redop  time algbw busbw error``,
    max-error floats such as ``5e-07``, ``Rank N Pid`` device lines, and no
    ``redop`` column for all_gather), 2.13+ (``redop root ... #wrong``,
    ``Rank N Group G Pid``), 2.17+ (``# nccl-tests version``, ``#
    Collective test starting/concluded``), optional ``copybw``,
    per-iteration ``i_*`` and timestamp columns; ``#wrong``/``error`` of
    ``N/A`` (``-c 0``) become None. Table columns are read from the header;
    a row with a cell for every column is read in order, a row with blank
    cells (old alltoall ``redop``, a placement not run) by the header's
    character positions, the placement order from the ``out-of-place
    in-place`` line; a row that fits neither goes to ``warnings`` and fails
    the result, as does a row without any bus bandwidth; NCCL INFO lines inside the table, ``...``
    elisions and MPI/ssh noise are skipped. A JSON document (``-J
    file.json``, format version 3) is recognized by its leading ``{``.

    Bandwidths are GB/s (10^9 bytes/s) as nccl-tests prints them;
    ``avg_bus_bandwidth_gbits`` is the average in Gb/s for comparing with
    NIC line rates.

    Returns ``{"test", "nccl_tests_version", "nccl_version", "config",
    "devices": [{"rank", "group", "pid", "host", "device", "bus_id",
    "name"}], "columns", "rows": [{"size", "count", "type", "redop",
    "root", "out_of_place": {"time_us", "algbw", "busbw", "wrong"|"error",
    ...}, "in_place": {...}}], "out_of_bounds", "out_of_bounds_ok",
    "avg_bus_bandwidth", "avg_bus_bandwidth_ok" (None when unchecked),
    "avg_bus_bandwidth_gbits", "max_busbw", "nccl_last_error",
    "nccl_warnings" (NCCL WARN lines interleaved with the table),
    "failures": [str], "passed": bool, "format": "text"|"json"}``.

    Raises ParseError when the test aborted (``<host>: Test NCCL failure
    common.cu:NNN '<reason>'``, ``Test CUDA failure``, timeouts), and on
    output without any result row; NCCL WARN lines in the output are
    appended to the message.
    """
    stripped = (text or "").strip()
    if stripped.startswith("{"):
        return _parse_nccl_tests_json(stripped, text)

    result = _new_tests_result()
    layout = None
    order = ("out_of_place", "in_place")
    failures, nccl_warnings = [], []
    for number, line in enumerate(_lines(text), 1):
        content = line.strip()
        if not content or content == "...":
            continue
        nccl_line = _NCCL_LINE_RE.search(content)
        if _TEST_FAILURE_RE.search(content):
            failures.append(content)
        elif nccl_line:
            if nccl_line.group("level") == "WARN":
                nccl_warnings.append("NCCL WARN " + nccl_line.group("msg").strip())
        elif content.startswith("#"):
            if re.search(r"\bsize\b", content) and re.search(r"\bcount\b", content):
                layout = _table_layout(line.rstrip(), order)
                result["columns"] = layout["columns"]
            elif "out-of-place" in content and "in-place" in content:
                order = (("in_place", "out_of_place") if content.index("in-place") < content.index("out-of-place")
                         else ("out_of_place", "in_place"))
            else:
                _handle_comment_line(content, result)
        elif _VERSION_RE.match(content):
            result["nccl_version"] = _VERSION_RE.match(content).group("version")
        elif layout and re.match(r"^\d+\s", content):
            row = _parse_row(line.rstrip(), layout)
            if row:
                result["rows"].append(row)
            else:
                result["warnings"].append("line %d: result row does not fit the header's columns: %r"
                                          % (number, content))

    if failures:
        raise ParseError("nccl-tests", "; ".join(_dedupe(failures + nccl_warnings)), text)
    if not result["rows"]:
        reason = "empty output" if not stripped else "; ".join(["no result rows in output"] + _dedupe(nccl_warnings))
        raise ParseError("nccl-tests", reason, text)
    result["nccl_warnings"] = _dedupe(nccl_warnings)
    return _finish_tests_result(result)


def _dedupe(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _json_placement(values):
    if values is None:
        return None
    time_key = "cpu_time" if "cpu_time" in values else "time"
    return {
        "time_us" if time_key == "time" else "cputime_us": values.get(time_key),
        "algbw": values.get("alg_bw"),
        "busbw": values.get("bus_bw"),
        "wrong": None if values.get("nwrong") is None else int(values["nwrong"]),
    }


def _parse_nccl_tests_json(document, text):
    """The ``-J`` JSON file of nccl-tests >= 2.17 (``"version": 3``)."""
    try:
        data = json.loads(document)
    except ValueError as err:
        raise ParseError("nccl-tests", "invalid JSON output: %s" % err, text)
    if not isinstance(data, dict):
        raise ParseError("nccl-tests", "JSON output is not an object", text)
    try:
        result = _read_nccl_tests_json(data)
    except (AttributeError, TypeError, ValueError, OverflowError) as err:
        # a key of the -J format holding the wrong kind of value
        raise ParseError("nccl-tests", "JSON output not in the -J format (%s: %s)"
                         % (type(err).__name__, err), text)
    if not result["rows"]:
        errors = result.pop("_errors")
        reason = "; ".join(map(str, errors)) if errors else "no results in JSON output"
        raise ParseError("nccl-tests", reason, text)
    result.pop("_errors")
    return _finish_tests_result(result)


def _read_nccl_tests_json(data):
    result = _new_tests_result()
    result["format"] = "json"
    config = dict(data.get("config") or {})
    devices = config.pop("devices", [])
    result["config"] = config
    result["nccl_version"] = _nccl_version_from_code(data.get("nccl_version"))
    result["devices"] = [{"rank": d.get("rank"), "group": d.get("group"), "pid": d.get("pid"),
                          "host": d.get("hostname"), "device": d.get("device"),
                          "bus_id": d.get("device_hex"), "name": d.get("device_info")} for d in devices]
    for entry in data.get("results") or []:
        root = str(entry.get("root", "")).strip()
        result["rows"].append({
            "size": entry.get("size"), "count": entry.get("count"), "type": entry.get("type"),
            "redop": entry.get("redop"), "root": int(root) if re.fullmatch(r"-?\d+", root) else root,
            "out_of_place": _json_placement(entry.get("out_of_place")),
            "in_place": _json_placement(entry.get("in_place")),
        })
    oob = data.get("out_of_bounds") or {}
    avg = data.get("average_bus_bandwidth") or {}
    result["out_of_bounds"] = oob.get("count")
    result["out_of_bounds_ok"] = oob.get("okay")
    result["avg_bus_bandwidth"] = _number(str(avg.get("bandwidth"))) if avg else None
    result["avg_bus_bandwidth_ok"] = avg.get("okay") if isinstance(avg.get("okay"), bool) else None
    errors = data.get("errors") or []
    result["nccl_last_error"] = errors[0] if errors else None
    names = [entry.get("experiment_name") for entry in data.get("results") or [] if entry.get("experiment_name")]
    result["test"] = names[0] if names else None
    result["_errors"] = errors
    return result


def _nccl_version_from_code(code):
    """NCCL_VERSION_CODE 22803 -> '2.28.3' (codes >= 2.9 are major*10000 + minor*100 + patch)."""
    if not isinstance(code, int) or code <= 0:
        return None
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100)
    return "%d.%d.%d" % (code // 1000, code // 100 % 10, code % 100)


# ==========================================================================
# NCCL_DEBUG=INFO logs
# ==========================================================================

_NET_USING_RE = re.compile(r"^NET/(?P<net>[\w ]+?)\s*: Using (?P<list>\[\d+\].*)$")
_NET_DEVICE_RE = re.compile(
    r"\[(?P<index>\d+)\]\s*(?P<name>[^:\s={},\[\]]+):(?P<port>\d+)/(?P<ll>\w+)(?P<sharp>/SHARP)?")
_MERGED_NIC_RE = re.compile(r"\[(?P<vnic>\d+)\]=\{(?P<members>[^}]*)\}")
_SOCKET_IF_RE = re.compile(r"\[(?P<index>\d+)\](?P<name>[^:\s]+):(?P<addr>[^<\s]+)<\d+>")
_USING_NETWORK_RE = re.compile(r"^Using network (?P<name>.+?)\s*$")
_CHANNEL_NET_RE = re.compile(r"via NET/(?P<net>[^/\s]+(?: [^/\s]+)?)(?:/(?P<dev>\d+)(?:\(\d+\))?)?(?P<rest>\S*)")
_CHANNEL_P2P_RE = re.compile(r"via (?P<path>P2P/\S+|SHM\S*|CollNet\S*|NVLS\S*)")
_CHANNELS_SUMMARY_RE = re.compile(r"(\d+) (coll|collnet|nvls|nvls tree|p2p) channels(?! per peer)")
_ENV_RE = re.compile(r"^(?P<key>NCCL_\w+) set (?:by environment )?to (?P<value>.+?)\.?\s*$")
_VIRTUAL_DEVICE_RE = re.compile(r"NET/IB : Made virtual device \[\d+\] name=(?P<name>\S+) speed=(?P<speed>\d+)")
_INIT_RE = re.compile(r"rank (?P<rank>\d+) nranks (?P<nranks>\d+) .*- Init (?P<state>START|COMPLETE)")
_ERROR_CHAIN_RE = re.compile(r"^\S+:\d+ -> (?P<code>\d+)")
_FATAL_TEXT_RE = re.compile(
    r"NCCL error|unhandled (?:system|cuda) error|internal error|invalid usage|remote process exited|"
    r"ncclSystemError|ncclInternalError|ncclRemoteError|ncclInvalidUsage|ncclUnhandledCudaError|"
    r"Test NCCL failure|Test CUDA failure"
)
_FATAL_WARN_RE = re.compile(
    r"fail|error|refused|timeout|timed out|not found|unable|abort|mismatch|could not|cannot|"
    r"truncated|closed|unreachable|denied|invalid|unsupported|\bno \w+(?: \w+)* found",
    re.IGNORECASE,
)
_NCCL_RESULT_CODES = {1: "unhandled cuda error", 2: "system error", 3: "internal error",
                      4: "invalid argument", 5: "invalid usage", 6: "remote error"}

_FALLBACK_SIGNALS = (
    ("ib_disabled", re.compile(r"NCCL_IB_DISABLE set (?:by environment )?to 1")),
    ("no_ib_device", re.compile(r"NET/IB : No device found|No IB device found|NET/IB : Using \[\]|no IB devices")),
    ("ibverbs_unavailable",
     re.compile(r"Failed to open libibverbs|libibverbs\S* (?:not found|cannot)|ibv_fork_init\(\) failed")),
    ("no_external_net_plugin", re.compile(r"NET/Plugin\s*: (?:Could not find|No plugin found|Plugin load returned)")),
    ("gdr_disabled", re.compile(r"GPU Direct RDMA Disabled")),
    ("net_not_found", re.compile(r"network .+ not found")),
)


def _net_name(raw):
    """``IB``/``IBext_v8`` -> ``IB``; ``Socket`` -> ``Socket``; plugins keep their name."""
    raw = raw.strip()
    if raw == "IB" or raw.startswith("IBext"):
        return "IB"
    return raw


def _new_log_result():
    return {
        "transport": None,
        "network": None,
        "networks_seen": [],
        "gdr": None,
        "nccl_version": None,
        "cuda_version": None,
        "ib_devices": [],
        "socket_interfaces": [],
        "relaxed_ordering": None,
        "oob_interface": None,
        "num_nics": 0,
        "channels": {},
        "num_channels": None,
        "net_channels": 0,
        "intra_node_paths": [],
        "nranks": None,
        "init_complete": False,
        "init_complete_ranks": 0,
        "env": {},
        "fallbacks": [],
        "warnings": [],
        "error": None,
        "error_code": None,
    }


class _LogState:
    """Evidence collected while walking the log, resolved once at the end."""

    def __init__(self):
        self.using_network = []
        self.net_lists = []
        self.channel_nets = []
        self.gdr_channels = 0
        self.gdr_gpu = []
        self.gdr_hca = []
        self.nic_speeds = {}
        self.error_chain = []
        self.fatal_lines = []
        self.complete_ranks = set()


def _net_device(match, vnic=None):
    device = {"index": int(match.group("index")), "device": match.group("name"),
              "port": int(match.group("port")), "link_layer": match.group("ll")}
    if match.group("sharp"):
        device["sharp"] = True
    if vnic is not None:
        device["vnic"] = vnic
    return device


def _net_devices(listing):
    """``[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE`` or merged ``[0]={[0] mlx5_2:1/RoCE, [1] ..}`` -> devices."""
    merged = list(_MERGED_NIC_RE.finditer(listing))
    if merged:
        return [_net_device(member, int(group.group("vnic")))
                for group in merged for member in _NET_DEVICE_RE.finditer(group.group("members"))]
    return [_net_device(match) for match in _NET_DEVICE_RE.finditer(listing)]


def _handle_net_using(message, result, state):
    """``NET/IB : Using [0]mlx5_0:1/RoCE ... [RO]; OOB eno1:10.0.0.1<0>`` and socket lists."""
    match = _NET_USING_RE.match(message)
    if not match:
        return False
    net = _net_name(match.group("net"))
    listing, _sep, oob = match.group("list").partition("; OOB ")
    state.net_lists.append(net)
    devices = _net_devices(listing)
    if devices and not result["ib_devices"]:
        result["ib_devices"] = devices
        result["relaxed_ordering"] = "[RO]" in listing
    elif not devices and not result["socket_interfaces"]:
        result["socket_interfaces"] = [{"index": int(m.group("index")), "interface": m.group("name"),
                                        "address": m.group("addr")} for m in _SOCKET_IF_RE.finditer(listing)]
    if oob and not result["oob_interface"]:
        result["oob_interface"] = oob.split(":")[0].strip()
    return True


def _handle_info(message, result, state):
    """One INFO message (the text after ``NCCL INFO``)."""
    if _handle_net_using(message, result, state):
        return
    using = _USING_NETWORK_RE.match(message)
    channel = _CHANNEL_NET_RE.search(message)
    version = _VERSION_RE.search(message)
    env = _ENV_RE.match(message)
    virtual = _VIRTUAL_DEVICE_RE.search(message)
    init = _INIT_RE.search(message)
    chain = _ERROR_CHAIN_RE.match(message)
    if using:
        state.using_network.append(using.group("name"))
    elif channel:
        state.channel_nets.append(_net_name(channel.group("net")))
        result["net_channels"] += 1
        state.gdr_channels += 1 if "GDRDMA" in channel.group("rest") else 0
    elif version:
        result["nccl_version"] = result["nccl_version"] or version.group("version")
        result["cuda_version"] = result["cuda_version"] or version.group("cuda")
    elif env:
        result["env"][env.group("key")] = env.group("value")
    elif virtual:
        state.nic_speeds[virtual.group("name")] = int(virtual.group("speed")) / 1000
    elif init:
        result["nranks"] = int(init.group("nranks"))
        if init.group("state") == "COMPLETE":
            state.complete_ranks.add(int(init.group("rank")))
    elif chain and chain.group("code") != "0":
        state.error_chain.append((message, int(chain.group("code"))))
    else:
        _handle_info_misc(message, result, state)


def _handle_info_misc(message, result, state):
    """GDR hints, channel counts and intra-node paths."""
    gdr_gpu = re.search(r"GPU Direct RDMA (Enabled|Disabled) for GPU", message)
    gdr_hca = re.search(r"GPU Direct RDMA (Enabled|Disabled)(?! for GPU)", message)
    p2p = _CHANNEL_P2P_RE.search(message)
    if gdr_gpu:
        state.gdr_gpu.append(gdr_gpu.group(1) == "Enabled")
    elif gdr_hca:
        state.gdr_hca.append(gdr_hca.group(1) == "Enabled")
    elif p2p:
        if p2p.group("path") not in result["intra_node_paths"]:
            result["intra_node_paths"].append(p2p.group("path"))
    else:
        for count, kind in _CHANNELS_SUMMARY_RE.findall(message):
            result["channels"][kind.replace(" ", "_")] = int(count)
        ring = re.match(r"^Channel \d+/(\d+) :", message)
        if ring and "coll" not in result["channels"]:
            result["channels"]["rings"] = int(ring.group(1))


def _resolve_transport(result, state):
    """Which network NCCL used: ``Using network X`` > ``NET/X : Using`` > channel lines > NET/IB hints."""
    for evidence in (state.using_network, state.net_lists, state.channel_nets):
        if evidence:
            result["network"] = evidence[0]
            result["transport"] = _net_name(evidence[0])
            break
    else:
        if state.gdr_hca or state.nic_speeds:
            result["transport"] = "IB"
    seen = [_net_name(n) for n in state.using_network + state.net_lists + state.channel_nets]
    result["networks_seen"] = _dedupe(seen)


def _resolve_gdr(result, state):
    """GPU Direct RDMA: channel ``/GDRDMA`` suffixes first, then per-GPU, then per-HCA lines."""
    if result["net_channels"]:
        result["gdr"] = state.gdr_channels > 0
    elif state.gdr_gpu:
        result["gdr"] = any(state.gdr_gpu)
    elif state.gdr_hca:
        result["gdr"] = any(state.gdr_hca)


def _resolve_nics(result, state):
    for device in result["ib_devices"]:
        if device["device"] in state.nic_speeds:
            device["speed_gbps"] = state.nic_speeds[device["device"]]
    result["num_nics"] = len(result["ib_devices"]) or len(result["socket_interfaces"]) or len(state.nic_speeds)
    result["num_channels"] = result["channels"].get("coll", result["channels"].get("rings"))
    result["init_complete"] = bool(state.complete_ranks)
    result["init_complete_ranks"] = len(state.complete_ranks)


def _resolve_fallbacks(result, messages):
    """Signals that NCCL fell back from what a RoCE/IB fabric should give it."""
    for signal, pattern in _FALLBACK_SIGNALS:
        hit = next((line for line in messages if pattern.search(line)), None)
        if hit:
            result["fallbacks"].append({"signal": signal, "line": hit})
    wanted_ib = "NCCL_IB_HCA" in result["env"] or bool(result["ib_devices"])
    if result["transport"] == "Socket" and wanted_ib:
        result["fallbacks"].append({"signal": "socket_instead_of_ib",
                                    "line": "IB devices configured but NCCL used NET/Socket"})


# WARN lines that NCCL prints on runs that go on fine: a topology search
# falling back to a simpler order, an optional net/tuner/profiler plugin
# that did not load (NCCL then uses its internal IB or Socket network),
# libibverbs missing on a host that runs over sockets. They are noise unless
# the log shows nothing else went wrong AND no network was ever used.
_NOISE_WARN_RE = re.compile(
    r"falling back|Could not find a path for pattern|"
    r"(?:NET|TUNER|PROFILER|COLLNET)/Plugin\s*:|Plugin load (?:\(\S+\) )?returned|No plugin found|"
    r"Failed to open libibverbs|libibverbs\S* (?:not found|cannot)|NET/IB : No device found|"
    r"Could not find real path|Could not find NET with id",
    re.IGNORECASE,
)
# Even with a noise word in them, these end the run.
_NEVER_NOISE_RE = re.compile(r"Failed to initialize any|network .+ not found|Cuda failure|"
                             r"unhandled|Call to \S+ failed|Got completion|Connection refused",
                             re.IGNORECASE)


def _is_noise(warning):
    return bool(_NOISE_WARN_RE.search(warning)) and not _NEVER_NOISE_RE.search(warning)


def _resolve_error(result, state):
    """The failure the log shows, if any; a fatal error wins over noise.

    Order: the first WARN that reads as a failure and is not noise; else,
    when the run failed (NCCL error text, an error-return chain), the first
    WARN that is not noise, the first fatal line, the first noise WARN, the
    chain; else, when no
    network was ever used and no rank completed init, the first noise WARN
    (nothing shows NCCL got past it). Noise WARNs of a run that went on
    stay in ``warnings`` and ``fallbacks`` only.
    """
    failing = [w for w in result["warnings"] if _FATAL_WARN_RE.search(w)]
    fatal_warns = [w for w in failing if not _is_noise(w)]
    noise = [w for w in failing if _is_noise(w)]
    went_on = bool(result["transport"]) or result["init_complete"]
    if fatal_warns:
        result["error"] = fatal_warns[0]
    elif state.fatal_lines or state.error_chain:
        # the run failed: the first WARN that is not noise is NCCL's explanation
        explanations = [w for w in result["warnings"] if not _is_noise(w)] + state.fatal_lines + noise
        result["error"] = explanations[0] if explanations else state.error_chain[0][0]
    elif noise and not went_on:
        result["error"] = noise[0]
    if state.error_chain:
        code = state.error_chain[0][1]
        result["error_code"] = _NCCL_RESULT_CODES.get(code, str(code))
    elif state.fatal_lines:
        known = re.search(r"unhandled (?:system|cuda) error|internal error|invalid usage|remote error",
                          " ".join(state.fatal_lines))
        result["error_code"] = known.group(0) if known else None


def _collect_log_lines(text, result, state):
    """Walk the lines: INFO/WARN messages (re-joining wrapped WARN lines) and non-NCCL failures."""
    messages = []
    last_warn = None
    for line in _lines(text):
        content = line.strip()
        if not content:
            continue
        match = _NCCL_LINE_RE.search(content)
        if match:
            message = match.group("msg").strip()
            messages.append(message)
            if match.group("level") == "WARN":
                result["warnings"].append(message)
                last_warn = len(result["warnings"]) - 1
            else:
                last_warn = None
                _handle_info(message, result, state)
            continue
        if last_warn is not None and not _FATAL_TEXT_RE.search(content) and not _VERSION_RE.search(content):
            result["warnings"][last_warn] += " " + content  # a WARN wrapped onto the next line
            continue
        version = _VERSION_RE.search(content)
        if version and not result["nccl_version"]:
            result["nccl_version"] = version.group("version")
            result["cuda_version"] = version.group("cuda")
        if _FATAL_TEXT_RE.search(content):
            state.fatal_lines.append(content)
    return messages


def parse_nccl_log(text):
    """Parse an NCCL_DEBUG=INFO (or WARN) log: which network, GPU Direct RDMA, NICs, errors.

    Reads ``<host>:<pid>:<tid> [<dev>] NCCL INFO|WARN <msg>`` lines (bare
    ``NCCL INFO <msg>`` fragments too, mpirun ``--tag-output`` prefixes,
    WARN lines wrapped onto a second line), from NCCL 2.7 to 2.2x, the
    internal IB/Socket networks and net plugins (``Using network AWS
    Libfabric``, ``NET/OFI``, ``NET/FastSocket``, ``IBext_vN``).

    ``transport`` is "IB" (IB verbs: InfiniBand or RoCE, incl. the IBext
    plugin), "Socket", the plugin's network name (e.g. "AWS Libfabric",
    "FastSocket"), or None when the log does not show it. Evidence order:
    ``Using network X``, ``NET/X : Using [..]``, ``Channel .. via NET/X/..``,
    then IB-only lines (``NET/IB : GPU Direct RDMA .. for HCA``, ``Made
    virtual device``). ``gdr`` is True/False from the channel lines
    (``/GDRDMA`` suffix) when any network channel is shown, else from
    ``GPU Direct RDMA Enabled|Disabled for GPU ..`` / ``for HCA ..``, else
    None.

    Returns ``{"transport", "network" (the raw name), "networks_seen",
    "gdr", "nccl_version", "cuda_version", "ib_devices": [{"index",
    "device", "port", "link_layer" ("IB"/"RoCE"), "speed_gbps"?, "sharp"?,
    "vnic"? (NICs merged into one virtual NIC)}],
    "socket_interfaces": [{"index", "interface", "address"}],
    "relaxed_ordering", "oob_interface", "num_nics", "channels": {"coll",
    "p2p", ...}, "num_channels", "net_channels", "intra_node_paths",
    "nranks", "init_complete", "init_complete_ranks" (ranks of this log
    that printed ``Init COMPLETE``), "env": {NCCL_*: value}, "fallbacks":
    [{"signal", "line"}], "warnings": [str], "error": str|None,
    "error_code": str|None}``. ``error`` is set when the log shows a
    failure: a WARN about a failure (connection refused, completion error,
    network not found), NCCL error text (``unhandled system error``,
    ``ncclSystemError``, ``Test NCCL failure``) or an error-return chain
    (``file.cc:123 -> 6``).

    Raises ParseError on empty input or input without any NCCL line.
    """
    result = _new_log_result()
    state = _LogState()
    messages = _collect_log_lines(text, result, state)
    if not messages and not state.fatal_lines:
        raise ParseError("nccl", "empty output" if not (text or "").strip()
                         else "no NCCL_DEBUG lines (NCCL INFO/WARN) in output", text)
    _resolve_transport(result, state)
    _resolve_gdr(result, state)
    _resolve_nics(result, state)
    _resolve_fallbacks(result, messages)
    _resolve_error(result, state)
    return result
