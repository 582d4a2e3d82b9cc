"""Parser for perftest latency tests: ib_write_lat, ib_send_lat (and ib_read_lat / ib_atomic_lat).

Pure function, stdlib only, importable on its own. The header block, addresses and an echoed
command line read as in the bandwidth tests (_perftest.py's reader); the table is the latency
table, its columns named by its own header line.
"""

from __future__ import annotations

import re
from typing import Any, Optional, cast

try:
    # ParseError: what parse_perftest_lat raises, importable from here as from every parser
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError  # noqa: F401  # pylint: disable=unused-import
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers._perftest import _collect_errors, _read, _Reader
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]  # noqa: F401  # pylint: disable=unused-import

    from parsers._perftest import _collect_errors, _read, _Reader  # type: ignore[import-not-found,no-redef]


_LAT_TITLE_RE = re.compile(r"^(?P<title>(?P<verb>Send|RDMA_Write|RDMA_Read|Atomic)\b.*?Latency Test)$")
# Column names of the latency table (perftest src/perftest_parameters.h RESULT_FMT_LAT since
# commit 1ccb3fd "Extra measurements in latency tests" (2016, v3.x): t_avg, t_stdev and the two
# percentiles; before it only t_min, t_max, t_typical. RESULT_FMT_LAT_DUR (-D): t_avg, tps average.)
_LAT_COLUMNS = (
    ("#bytes", "bytes"),
    ("#iterations", "iterations"),
    ("t_min[usec]", "t_min_usec"),
    ("t_max[usec]", "t_max_usec"),
    ("t_typical[usec]", "t_typical_usec"),
    ("t_avg[usec]", "t_avg_usec"),
    ("t_stdev[usec]", "t_stdev_usec"),
    ("99% percentile[usec]", "p99_usec"),
    ("99.9% percentile[usec]", "p99_9_usec"),
    ("tps average", "tps_average"),
)
_LAT_COLUMN_RE = re.compile("|".join(re.escape(name) for name, _key in _LAT_COLUMNS))
_LAT_KEYS = dict(_LAT_COLUMNS)


class _LatReader(_Reader):
    """A latency test's run: the same header, addresses and command echo; its own title and table."""

    _title_re = _LAT_TITLE_RE
    _bw = False

    def __init__(self) -> None:
        super().__init__()
        self.columns: Optional[list[str]] = None
        self.result.pop("units", None)
        self.result.pop("duration_mode", None)

    def _table(self, line: str) -> bool:
        if line.startswith("#bytes"):
            names = _LAT_COLUMN_RE.findall(line)
            rest = _LAT_COLUMN_RE.sub("", line).split()
            if names[:2] != ["#bytes", "#iterations"] or len(names) < 3:
                return False
            self.columns = [_LAT_KEYS[n] for n in names]
            if rest:
                self.result["warnings"].append("latency table columns not read (unknown): %s" % " ".join(rest))
            return True
        if self.columns and re.match(r"^\d+\s+\d+\s+[\d.]+", line):
            cells = line.split()
            numbers: Optional[list[float]]
            try:
                numbers = [float(c) for c in cells]
            except ValueError:
                numbers = None
            if numbers is None or len(numbers) != len(self.columns):
                self.result["warnings"].append("result row not read (%s cells for %d columns): %r" % (len(cells), len(self.columns), line))
                return True
            row = {key: (int(v) if key in ("bytes", "iterations") else v) for key, v in zip(self.columns, numbers)}
            self.result["results"].append(row)
            return True
        return False


# The result is _perftest.py's reader's dict (a TypedDict for it waits for that file: others editing).
def parse_perftest_lat(text: Optional[str]) -> dict[str, Any]:
    """Parse a perftest latency test: ``ib_write_lat``, ``ib_send_lat``, ``ib_read_lat``, ``ib_atomic_lat``.

    The header block, addresses and an echoed command line read as in
    ``parse_ib_write_bw``; the title is ``<Verb> Latency Test``. The table's
    columns come from its header (perftest ``RESULT_FMT_LAT``): ``#bytes
    #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec]
    t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]`` (perftest
    since 2016), ``... t_min t_max t_typical`` only (older builds), or ``#bytes
    #iterations t_avg[usec] tps average`` in duration mode (``-D``). A row
    whose cell count does not match the header goes to ``warnings``.

    Returns ``{"test", "verb", "role", header fields as parse_ib_write_bw,
    "local", "remote", "command", "columns": [key, ...], "results": [{"bytes",
    "iterations", "t_min_usec", "t_max_usec", "t_typical_usec", "t_avg_usec",
    "t_stdev_usec", "p99_usec", "p99_9_usec" | "tps_average"} (the columns
    printed)], the last row's figures at the top level (absent ones None),
    "warnings"}``.

    Raises ParseError when there is no result row (connection failures, no
    device, a server still waiting), with the tool's error lines as the message.
    """
    reader = _LatReader()
    result: dict[str, Any]
    lines, result = _read(reader, text, "lat", "no latency table (#bytes #iterations t_...) in output")
    result["columns"] = list(cast("list[str]", reader.columns))  # _read raised when no table was read
    result["warnings"].extend(_collect_errors(lines))
    last = result["results"][-1]
    for _name, key in _LAT_COLUMNS:
        result[key] = last.get(key)
    return result
