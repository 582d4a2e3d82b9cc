"""Parser for nccl-tests results (all_reduce_perf & co, text and JSON): ``parse_nccl_tests``.

Pure functions, stdlib only, importable on their own. Reads output captured
through ``mpirun --tag-output`` and output where nccl-tests tables and NCCL
log lines are interleaved (the line handling is nccl_log's).
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence, TypedDict, Union

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]
try:
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import _NCCL_LINE_RE, _VERSION_RE, _dedupe, _lines, is_fallback_warning
except ImportError:  # loaded standalone, with module_utils on sys.path
    from parsers.nccl_log import _NCCL_LINE_RE, _VERSION_RE, _dedupe, _lines, is_fallback_warning  # type: ignore[import-not-found,no-redef]


class _NcclTestsBase(TypedDict):
    test: Optional[str]
    nccl_tests_version: Optional[str]
    nccl_version: Optional[str]
    config: dict[str, Any]
    # {"rank", "group", "pid", "host", "device", "bus_id", "name"}
    devices: list[dict[str, Any]]
    columns: Optional[list[str]]
    # {"size", "count", "type", "redop", "root", "out_of_place": {...} | None, "in_place": {...} | None}
    rows: list[dict[str, Any]]
    out_of_bounds: Optional[int]
    out_of_bounds_ok: Optional[bool]
    avg_bus_bandwidth: Union[int, float, None]
    avg_bus_bandwidth_ok: Optional[bool]
    nccl_last_error: Optional[str]
    nccl_warnings: list[str]
    warnings: list[str]
    failed_checks: list[str]
    format: str


class NcclTests(_NcclTestsBase, total=False):
    """``parse_nccl_tests`` (the keys: its docstring). The figures derived from the rows are set once
    the result is finished (``_finish_tests_result``); ``_errors`` lives only while the JSON is read."""

    nccl_fallbacks: list[str]
    max_busbw: Optional[float]
    avg_bus_bandwidth_gbits: Optional[float]
    failures: list[str]
    passed: bool
    _errors: list[str]


class _Layout(TypedDict):
    columns: list[str]
    ends: list[int]
    prefix: list[str]
    group: list[str]
    groups: tuple[tuple[str, int], tuple[str, int]]
    trailing: list[str]
    width: int


def _number(cell: str) -> Union[int, float, None]:
    """``'12.5'`` -> 12.5, ``'3'`` -> 3, ``'N/A'`` -> None."""
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return None


# An abort: NCCL or CUDA failed, a timeout, a bad GPU count (nccl-tests src/common.h TESTCHECK/NCCLCHECK)
_TEST_FAILURE_RE = re.compile(r"Test (?:NCCL|CUDA) failure|Test timeout|Invalid number of GPUs")
# The back-trace line TESTCHECK prints on its way out (`` .. <host> pid <pid>: Test failure <file>:<line>``,
# common.h): after an abort it is part of it; after a complete table alone, it is the exit of a run whose
# checks failed (#wrong, out-of-bounds values, NCCL_TESTS_MIN_BW), and the table is still the result
_TEST_TRACE_RE = re.compile(r"(?:^|\s)\.\.\s+\S+\s+pid\s+\d+:\s+Test failure\s+\S+|: Test failure ")
_DEVICE_RE = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]+)\]\s+(?P<name>.+?)\s*$"
)
_CONFIG_RE = re.compile(r"^#\s*nThread\s")
_TIME_COLUMNS = ("time", "cputime")
_PREFIX_KEYS = {"size": "size", "count": "count", "type": "type", "redop": "redop", "root": "root"}
_GROUP_KEYS = {"time": "time_us", "cputime": "cputime_us", "algbw": "algbw", "busbw": "busbw", "copybw": "copybw", "#wrong": "wrong", "error": "error"}


def _table_layout(header: str, order: tuple[str, str] = ("out_of_place", "in_place")) -> _Layout:
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
        "prefix": columns[: starts[0]],
        "group": columns[starts[0] : starts[1]],
        "groups": ((order[0], starts[0]), (order[1], starts[1])),
        "trailing": columns[starts[1] + group_len :],
        "width": len(header.rstrip()),
    }


def _placement(names: Sequence[str], cells: Sequence[Optional[str]]) -> dict[str, Any]:
    """Values of one placement (out-of-place or in-place) keyed by normalized column names."""
    values: dict[str, Any] = {}
    for name, cell in zip(names, cells):
        key = _GROUP_KEYS.get(name, name.replace("%", "_pct"))
        number = _number(cell) if cell is not None else None
        if number is None and cell not in (None, "N/A", "n/a", "-"):
            values.setdefault("unread", {})[key] = cell  # not a number: kept, and the run fails on it
        if key == "wrong" or number is None:
            values[key] = number
        else:
            values[key] = float(number)
    return values


def _row_cells(line: str, layout: _Layout) -> Optional[dict[int, str]]:
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
        mapped: dict[int, str] = {i: cell[0] for i, cell in enumerate(cells[:ncols])}
        if len(cells) > ncols:  # a timestamp with spaces
            mapped[ncols - 1] = " ".join(cell[0] for cell in cells[ncols - 1 :])
        return mapped
    if len(cells) > ncols:
        return None
    mapped = {}
    next_column = 0
    for cell, end in cells:
        best: Optional[tuple[int, int]] = None
        for index in range(next_column, ncols):
            distance = abs(layout["ends"][index] - end)
            if distance <= 2 and (best is None or distance < best[1]):
                best = (index, distance)
        if best is None:
            return None
        mapped[best[0]] = cell
        next_column = best[0] + 1
    return mapped


def _parse_row(line: str, layout: _Layout) -> Optional[dict[str, Any]]:
    """One result row -> dict (size, count, type, redop, root, out_of_place, in_place), or None."""
    mapped = _row_cells(line, layout)
    if mapped is None or 0 not in mapped:
        return None
    row: dict[str, Any] = {}
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


def _parse_config(line: str, number: Optional[int] = None, warnings: Optional[list[str]] = None) -> dict[str, int]:
    """``# nThread 1 nGpus 8 minBytes 8 maxBytes ... validation: 1 graph: 0`` -> dict.

    A value that is not a number is not dropped: it is a ``warnings`` entry naming the key."""
    config: dict[str, int] = {}
    pairs = re.finditer(
        r"(?P<key>[A-Za-z]+(?: [A-Za-z]+)?):\s+(?P<value>\S+)|"
        r"(?P<bare>[A-Za-z]+)\s+(?P<bvalue>[^\s:]+)(?=\s|$)",
        line.lstrip("# "),
    )
    for pair in pairs:
        key = (pair.group("key") or pair.group("bare")).replace(" ", "_").lower()
        value = re.sub(r"\((?:factor|bytes)\)$", "", pair.group("value") or pair.group("bvalue"))
        if re.fullmatch(r"-?\d+", value):
            config[key] = int(value)
        elif warnings is not None:
            warnings.append("line %s: configuration %s is not a number: %r" % (number, key, value))
    step = re.search(r"step:\s*(\d+)\((factor|bytes)\)", line)
    if step:
        config["step_" + step.group(2)] = int(step.group(1))
        config.pop("step", None)
    return config


def _new_tests_result() -> NcclTests:
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
        "failed_checks": [],
        "format": "text",
    }


def _handle_summary_line(line: str, result: NcclTests) -> bool:
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


# ``#`` lines nccl-tests prints that carry nothing to read (src/common.cu, util.cu): blank ``#``,
# ``Using devices``, ``Collective test concluded``, ``Reducing maxBytes ...``, the units row
_COMMENT_SKIP_RE = re.compile(
    r"^#\s*(?:$|Using devices|Collective test concluded|Reducing maxBytes|\(B\)|"
    r"Benchmark Data|Results|Initializing MSCCL\+\+|"
    r"Setting up the connection in MSCCL\+\+)",
    re.IGNORECASE,
)


def _handle_comment_line(line: str, result: NcclTests, number: Optional[int] = None) -> None:
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
        result["config"] = _parse_config(line, number, result["warnings"])
    elif device:
        result["devices"].append(
            {
                "rank": int(device.group("rank")),
                "group": int(device.group("group")) if device.group("group") else None,
                "pid": int(device.group("pid")),
                "host": device.group("host"),
                "device": int(device.group("device")),
                "bus_id": device.group("bus"),
                "name": device.group("name"),
            }
        )
    elif error:
        result["nccl_last_error"] = error.group(1).strip()
    elif not _COMMENT_SKIP_RE.match(line):
        result["warnings"].append("line %s: not read: %r" % (number, line))


def _failures(result: NcclTests) -> list[str]:
    """Human-readable reasons why a completed run did not pass."""
    reasons: list[str] = []
    wrong_rows = [row["size"] for row in result["rows"] for place in ("out_of_place", "in_place") if row.get(place) and (row[place].get("wrong") or 0) > 0]
    if wrong_rows:
        reasons.append("#wrong elements at sizes %s" % sorted(set(wrong_rows)))
    if result["out_of_bounds"]:
        reasons.append("%d out-of-bounds values" % result["out_of_bounds"])
    no_bw = [row.get("size") for row in result["rows"] if not any(row.get(p) and row[p].get("busbw") is not None for p in ("out_of_place", "in_place"))]
    if no_bw:
        reasons.append("no bus bandwidth read at sizes %s" % no_bw)
    unread_cells = sorted(
        {row.get("size") for row in result["rows"] for place in ("out_of_place", "in_place") if row.get(place) and row[place].get("unread")}, key=str
    )
    if unread_cells:
        reasons.append("cells that are not numbers at sizes %s" % unread_cells)
    unread_rows = [w for w in result["warnings"] if "result row" in w]
    if unread_rows:
        reasons.append("%d result row(s) could not be read" % len(unread_rows))
    reasons += ["nccl-tests exited on a failed check: " + line for line in result.get("failed_checks") or []]
    if result["avg_bus_bandwidth_ok"] is False:
        reasons.append("average bus bandwidth %s below NCCL_TESTS_MIN_BW" % result["avg_bus_bandwidth"])
    return reasons


def _finish_tests_result(result: NcclTests) -> NcclTests:
    rows = result["rows"]
    busbws = [row[p]["busbw"] for row in rows for p in ("out_of_place", "in_place") if row.get(p) and row[p].get("busbw") is not None]
    result["max_busbw"] = max(busbws) if busbws else None
    if result["avg_bus_bandwidth"] is not None:
        result["avg_bus_bandwidth_gbits"] = round(result["avg_bus_bandwidth"] * 8, 6)
    else:
        result["avg_bus_bandwidth_gbits"] = None
    result["failures"] = _failures(result)
    result["passed"] = not result["failures"]
    return result


def parse_nccl_tests(text: Optional[str]) -> NcclTests:
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

    run = _TextRun()
    for number, line in enumerate(_lines(text), 1):
        run.feed(number, line)
    return run.finish(text)


class _TextRun:
    """One text run of nccl-tests read line by line (``feed``), then judged (``finish``)."""

    def __init__(self) -> None:
        self.result = _new_tests_result()
        self.layout: Optional[_Layout] = None
        self.order = ("out_of_place", "in_place")
        self.failures: list[str] = []
        self.nccl_warnings: list[str] = []
        self.traces: list[str] = []

    def feed(self, number: int, line: str) -> None:
        content = line.strip()
        if not content or content == "...":
            return
        result = self.result
        nccl_line = _NCCL_LINE_RE.search(content)
        if _TEST_FAILURE_RE.search(content):
            self.failures.append(content)
        elif _TEST_TRACE_RE.search(content):
            self.traces.append(content)
        elif nccl_line:
            if nccl_line.group("level") == "WARN":
                self.nccl_warnings.append("NCCL WARN " + nccl_line.group("msg").strip())
            version = _VERSION_RE.search(nccl_line.group("msg"))
            if version and not result["nccl_version"]:  # ``NCCL INFO NCCL version 2.x`` (NCCL_DEBUG=INFO)
                result["nccl_version"] = version.group("version")
        elif content.startswith("#"):
            self._comment(number, line, content)
        elif plain_version := _VERSION_RE.match(content):
            result["nccl_version"] = plain_version.group("version")
        elif self.layout and re.match(r"^\d+\s", content):
            row = _parse_row(line.rstrip(), self.layout)
            if row:
                result["rows"].append(row)
            else:
                result["warnings"].append("line %d: result row does not fit the header's columns: %r" % (number, content))

    def _comment(self, number: int, line: str, content: str) -> None:
        """A ``#`` line: the table's header, the placement order, or the run's header fields."""
        if re.search(r"\bsize\b", content) and re.search(r"\bcount\b", content):
            self.layout = _table_layout(line.rstrip(), self.order)
            self.result["columns"] = self.layout["columns"]
        elif "out-of-place" in content and "in-place" in content:
            self.order = ("in_place", "out_of_place") if content.index("in-place") < content.index("out-of-place") else ("out_of_place", "in_place")
        else:
            _handle_comment_line(content, self.result, number)

    def finish(self, text: Optional[str]) -> NcclTests:
        """The result, or ParseError for an aborted run or one without result rows."""
        result = self.result
        # a WARN of an optional feature NCCL fell back from (CollNet/SHARP, a net plugin) is not the
        # cause of a failure: the causes first, the fallbacks after, labelled as such
        causes = [w for w in _dedupe(self.nccl_warnings) if not is_fallback_warning(w)]
        fallbacks = [w for w in _dedupe(self.nccl_warnings) if is_fallback_warning(w)]
        explained = causes + ["fallback, not the cause: " + w for w in fallbacks]
        if self.failures or (self.traces and not result["rows"]):
            raise ParseError("nccl-tests", "; ".join(_dedupe(self.failures + self.traces) + explained), text)
        result["failed_checks"] = _dedupe(self.traces)
        if not result["rows"]:
            reason = "empty output" if not (text or "").strip() else "; ".join(["no result rows in output"] + explained)
            raise ParseError("nccl-tests", reason, text)
        result["nccl_warnings"] = _dedupe(self.nccl_warnings)
        result["nccl_fallbacks"] = fallbacks
        return _finish_tests_result(result)


def _json_placement(values: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    if values is None:
        return None
    time_key = "cpu_time" if "cpu_time" in values else "time"
    return {
        "time_us" if time_key == "time" else "cputime_us": values.get(time_key),
        "algbw": values.get("alg_bw"),
        "busbw": values.get("bus_bw"),
        "wrong": None if values.get("nwrong") is None else int(values["nwrong"]),
    }


def _parse_nccl_tests_json(document: str, text: Optional[str]) -> NcclTests:
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
        raise ParseError("nccl-tests", "JSON output not in the -J format (%s: %s)" % (type(err).__name__, err), text)
    if not result["rows"]:
        errors = result.pop("_errors")
        reason = "; ".join(map(str, errors)) if errors else "no results in JSON output"
        raise ParseError("nccl-tests", reason, text)
    result.pop("_errors")
    return _finish_tests_result(result)


def _read_nccl_tests_json(data: dict[str, Any]) -> NcclTests:
    result = _new_tests_result()
    result["format"] = "json"
    config = dict(data.get("config") or {})
    devices = config.pop("devices", [])
    result["config"] = config
    result["nccl_version"] = _nccl_version_from_code(data.get("nccl_version"))
    result["devices"] = [
        {
            "rank": d.get("rank"),
            "group": d.get("group"),
            "pid": d.get("pid"),
            "host": d.get("hostname"),
            "device": d.get("device"),
            "bus_id": d.get("device_hex"),
            "name": d.get("device_info"),
        }
        for d in devices
    ]
    for entry in data.get("results") or []:
        root = str(entry.get("root", "")).strip()
        result["rows"].append(
            {
                "size": entry.get("size"),
                "count": entry.get("count"),
                "type": entry.get("type"),
                "redop": entry.get("redop"),
                "root": int(root) if re.fullmatch(r"-?\d+", root) else root,
                "out_of_place": _json_placement(entry.get("out_of_place")),
                "in_place": _json_placement(entry.get("in_place")),
            }
        )
    oob = data.get("out_of_bounds") or {}
    avg = data.get("average_bus_bandwidth") or {}
    result["out_of_bounds"] = oob.get("count")
    result["out_of_bounds_ok"] = _json_flag(oob.get("okay"))
    result["avg_bus_bandwidth"] = _number(str(avg.get("bandwidth"))) if avg else None
    result["avg_bus_bandwidth_ok"] = _json_flag(avg.get("okay"))
    # nccl-tests 2.19.6 writes "errors": [""] when there was none (a real -J file, H100, 2026-11-26)
    errors = [e for e in data.get("errors") or [] if isinstance(e, str) and e.strip()]
    result["nccl_last_error"] = errors[0] if errors else None
    names = [entry.get("experiment_name") for entry in data.get("results") or [] if entry.get("experiment_name")]
    args = data.get("args") if isinstance(data.get("args"), list) else []
    binary = args[0].rsplit("/", 1)[-1] if args and isinstance(args[0], str) else ""
    # experiment_name is "" unless the run names one: the test is then the binary's name (args[0])
    result["test"] = names[0] if names else (binary if re.fullmatch(r"\w+_perf(_mpi)?", binary) else None)
    result["_errors"] = errors
    return result


def _json_flag(value: Any) -> Optional[bool]:
    """The -J file's ``okay`` fields: true/false as booleans or as the strings nccl-tests 2.19 writes
    (``"true"``); anything else (``"unchecked"``, absent) is None."""
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value).strip().lower()) if value is not None else None


def _nccl_version_from_code(code: Any) -> Optional[str]:
    """NCCL_VERSION_CODE 22803 -> '2.28.3' (codes >= 2.9 are major*10000 + minor*100 + patch)."""
    if not isinstance(code, int) or code <= 0:
        return None
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100)
    return "%d.%d.%d" % (code // 1000, code // 100 % 10, code % 100)
