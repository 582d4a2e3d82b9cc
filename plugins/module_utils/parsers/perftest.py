"""Parser for perftest bandwidth tests: ib_write_bw (and ib_read_bw / ib_send_bw).

Pure function, stdlib only, importable on its own.

Bandwidths are normalized to Gb/s (10^9 bit/s). perftest prints them either
in Gb/sec (``--report_gbits``; 125,000,000 bytes/s per unit) or in MB/sec,
relabelled MiB/sec in perftest 24.x; both of the latter are 2^20 bytes/s
(perftest's ``format_factor``), so 1 MB/sec = 0.008388608 Gb/s.
"""

import json
import re
import shlex

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError


MIB_PER_SEC_IN_GBPS = 1048576 * 8 / 1e9

_DASHES_RE = re.compile(r"^-{20,}$")
_TITLE_RE = re.compile(r"^(?P<title>(?P<verb>Send|RDMA_Write|RDMA_Read|Atomic)\b.*?BW Test)$")
_HEADER_PAIR_RE = re.compile(r"(?P<key>[A-Za-z][\w*.\- ]*?)\s*:\s*(?P<value>\S+)")
_RESULT_HEADER_RE = re.compile(r"^#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]")
_ROW_RE = re.compile(r"^\d+\s+\d+\s+[\d.]+\s+[\d.]+")
_ADDRESS_RE = re.compile(
    r"^(?P<side>local|remote) address:\s*LID (?P<lid>\S+) QPN (?P<qpn>\S+) PSN (?P<psn>\S+)"
    r"(?:\s+RKey (?P<rkey>\S+))?(?:\s+VAddr (?P<vaddr>\S+))?"
)
_GID_RE = re.compile(r"^GID:\s*(?P<gid>[\d:]+)$")
_ERROR_RE = re.compile(
    r"Couldn't|Unable to|Failed|failed|No IB devices found|IB device .* not found|"
    r"Unexpected CM event|unexpected CM event|Did not detect devices|check if driver is up|"
    r"Problem in resolving|Completion with error|command not found|Permission denied|"
    r"Connection refused|bad event|error",
)
_RUN_WARNING_RE = re.compile(
    r"Requested mtu|Changing to active mtu|Conflicting CPU frequency|WARNING|Warning:|Test integrity")
_NOT_ERROR_RE = re.compile(r"^WARNING|Perftest doesn't supports CUDA|Conflicting CPU frequency")

_VERBS = {"RDMA_Write": "write", "RDMA_Read": "read", "Send": "send", "Atomic": "atomic"}

_COMMAND_RE = re.compile(r"(?:^|[\s/\"'])(?P<tool>ib_(?:write|read|send|atomic)_(?:bw|lat))(?P<args>(?:\s.*)?)$")
# ``<server_ip>``, ``<mlx5_X>``: a placeholder in a documented command line, not a shell redirection
_PLACEHOLDER_RE = re.compile(r"^<[^<>\s]+>$")
# Short options that take a value (perftest's getopt string), and the long
# options we report, with the key they get in "command".
_SHORT_WITH_VALUE = set("wypdimsntuSxcqIoMrQAlDfBTLEJjKkXW")
_COMMAND_OPTIONS = {
    "-d": "ib_dev", "--ib-dev": "ib_dev",
    "-i": "ib_port", "--ib-port": "ib_port",
    "-p": "tcp_port", "--port": "tcp_port",
    "-q": "qps", "--qp": "qps",
    "-x": "gid_index", "--gid-index": "gid_index",
    "-s": "size", "--size": "size",
    "-D": "duration", "--duration": "duration",
    "-m": "mtu", "--mtu": "mtu",
    "-T": "tos", "--tos": "tos",
    "-n": "iters", "--iters": "iters",
    "--use_cuda": "use_cuda",
    "--source_ip": "source_ip",
}
_COMMAND_FLAGS = {"-a": "all_sizes", "--all": "all_sizes", "-R": "rdma_cm", "--rdma_cm": "rdma_cm",
                  "-b": "bidirectional", "--bidirectional": "bidirectional",
                  "--report_gbits": "report_gbits", "--use_cuda_dmabuf": "use_cuda_dmabuf"}

# Header "Key : value" pairs promoted to typed top-level fields.
_HEADER_FIELDS = {
    "device": ("device", str),
    "number of qps": ("num_qps", int),
    "transport type": ("transport_type", str),
    "connection type": ("connection_type", str),
    "using srq": ("using_srq", "onoff"),
    "dual-port": ("dual_port", "onoff"),
    "tx depth": ("tx_depth", int),
    "rx depth": ("rx_depth", int),
    "cq moderation": ("cq_moderation", int),
    "mtu": ("mtu", "bytes"),
    "link type": ("link_type", str),
    "gid index": ("gid_index", int),
    "max inline data": ("max_inline_data", "bytes"),
    "outstand reads": ("outstand_reads", int),
    "rdma_cm qps": ("rdma_cm", "onoff"),
    "data ex. method": ("data_exchange", str),
    "tos": ("tos", int),
    "pcie relax order": ("pcie_relaxed_ordering", "onoff"),
}


def _lines(text):
    return (text or "").replace("\r\n", "\n").split("\n")


def _convert(value, kind):
    """Convert a header value: int, ``4096[B]`` -> 4096, ``ON``/``OFF`` -> bool."""
    if kind is str:
        return value
    if kind == "onoff":
        return {"ON": True, "OFF": False}.get(value.upper(), value)
    if kind == "bytes":
        match = re.match(r"(\d+)", value)
        return int(match.group(1)) if match else value
    try:
        return kind(value)
    except ValueError:
        return value


def _to_gbps(value, unit):
    """Convert a bandwidth cell to Gb/s given the table's unit label."""
    if unit.lower().startswith("gb"):
        return value
    return round(value * MIB_PER_SEC_IN_GBPS, 6)


def _ipv4_from_gid(gid):
    """perftest prints GIDs byte-wise in decimal; IPv4-mapped ones end 255:255:a:b:c:d."""
    parts = gid.split(":")
    if (len(parts) == 16 and parts[10:12] == ["255", "255"] and all(p == "00" or p == "0" for p in parts[:10])
            and all(p.isdigit() for p in parts[12:])):
        return ".".join(str(int(p)) for p in parts[12:])
    return None


def _parse_row(line, unit, duration_mode):
    """One result row: bytes, iterations, BW peak, BW average, MsgRate (+ per-port extras)."""
    numbers = []
    for cell in line.split():
        try:
            numbers.append(float(cell))
        except ValueError:
            break
    if len(numbers) < 4:
        return None
    peak, average = numbers[2], numbers[3]
    # perftest prints 0.00 for a peak it did not measure (-D, --run_infinitely,
    # and on either side, banner or not): a peak below the average is not one.
    unmeasured = duration_mode or (peak == 0 and average > 0)
    row = {
        "bytes": int(numbers[0]),
        "iterations": int(numbers[1]),
        "bw_peak": peak,
        "bw_average": average,
        "msg_rate_mpps": numbers[4] if len(numbers) > 4 else None,
        "bw_peak_gbps": None if unmeasured else _to_gbps(peak, unit),
        "bw_average_gbps": _to_gbps(average, unit),
    }
    return row


def _parse_command(line):
    """An echoed ``ib_write_bw ...`` command line -> {"tool", "argv", "server", options...}, else None.

    Numbers become ints; ``server`` is the positional server address (None
    on the server side).
    """
    match = _COMMAND_RE.search(line)
    if not match:
        return None
    try:
        argv, shlex_ok = shlex.split(match.group("args")), True
    except ValueError:
        argv, shlex_ok = match.group("args").split(), False
    # stop at shell redirections / pipes / separators: "> log 2>&1", "| tee", "&", ";" -- but a
    # documentation placeholder (``<server_ip>``, ``<dev>``) is an argument, not a redirection
    placeholders = []
    for position, token in enumerate(argv):
        if _PLACEHOLDER_RE.match(token):
            placeholders.append(token)
            continue
        if re.match(r"^(?:\d*>|<|\||&|;)", token):
            argv = argv[:position]
            break
        if token.endswith(('"', "'")) and not shlex_ok:
            argv[position] = token.rstrip("\"'")   # the end of a quoted remote command (ssh host "...")
    command = {"tool": match.group("tool"), "argv": argv, "server": None}
    if placeholders:
        command["placeholders"] = placeholders
    index = 0
    while index < len(argv):
        arg = argv[index]
        name, has_inline, inline = arg.partition("=")
        if name in _COMMAND_FLAGS:
            command[_COMMAND_FLAGS[name]] = True
        elif name in _COMMAND_OPTIONS or (name.startswith("-") and name[1:] in _SHORT_WITH_VALUE):
            value = inline if has_inline else (argv[index + 1] if index + 1 < len(argv) else None)
            index += 0 if has_inline else 1
            if name in _COMMAND_OPTIONS:
                key = _COMMAND_OPTIONS[name]
                command[key] = int(value) if value is not None and value.isdigit() else value
        elif not arg.startswith("-"):
            command["server"] = arg
        index += 1
    return command


def _new_result():
    return {
        "test": None,
        "verb": None,
        "role": "client",
        "header": {},
        "units": None,
        "duration_mode": False,
        "cuda": None,
        "local": [],
        "remote": [],
        "results": [],
        "warnings": [],
        "command": None,
        "format": "text",
    }


def _read_header_line(line, result):
    """Collect the ``Key : value`` pairs of one header line (one or two per line)."""
    for pair in _HEADER_PAIR_RE.finditer(line):
        key = pair.group("key").strip()
        value = pair.group("value")
        result["header"][key] = value
        field = _HEADER_FIELDS.get(key.lower())
        if field:
            name, kind = field
            result[name] = _convert(value, kind)


def _read_cuda_line(line, result):
    """Record --use_cuda preamble lines (device index, GPU name, DMA-BUF)."""
    cuda = result["cuda"] or {"device": None, "name": None, "dmabuf": False, "pci": {}}
    result["cuda"] = cuda
    picked = re.match(r"Picking device No\.\s*(\d+)", line)
    named = re.search(r"device name = \[(.+)\]", line)
    listed = re.match(r"CUDA device (\d+): PCIe address is (\S+)", line)
    if picked:
        cuda["device"] = int(picked.group(1))
    elif named:
        cuda["name"] = named.group(1)
    elif listed:
        cuda["pci"][listed.group(1)] = listed.group(2)
    elif "DMA-BUF" in line or "dmabuf" in line:
        cuda["dmabuf"] = True


def _is_cuda_line(line):
    return bool(re.match(
        r"initializing CUDA|Listing all CUDA devices|CUDA device \d+|Picking device No|"
        r"\[pid = \d+, dev = \d+\] device name|creating CUDA Ctx|making it the current CUDA Ctx|"
        r"cuMemAlloc|allocated GPU buffer|using DMA-BUF|Calling ibv_reg_dmabuf_mr", line))


class _Reader:
    """Line-by-line reader of one perftest run; ``result`` holds what was read."""

    _title_re = _TITLE_RE
    _bw = True   # a bandwidth test: "BW peak won't be measured" marks a run by duration

    def __init__(self):
        self.result = _new_result()
        self.in_header = False
        self.address = None
        self.handlers = (self._command, self._title, self._banner, self._cuda, self._table,
                         self._address, self._header)

    def feed(self, line):
        for handler in self.handlers:
            if handler(line):
                return

    def _command(self, line):
        command = None if self.result["command"] else _parse_command(line)
        if command:
            self.result["command"] = command
        return bool(command)

    def _title(self, line):
        """``RDMA_Write BW Test`` (``_title_re``) opens the header; a dashed rule closes it."""
        title = self._title_re.match(line)
        if title:
            self.result["test"], self.result["verb"] = title.group("title"), _VERBS[title.group("verb")]
            self.in_header = True
        elif _DASHES_RE.match(line):
            self.in_header = False
        return bool(title) or bool(_DASHES_RE.match(line))

    def _banner(self, line):
        """Server banners and run-wide warnings."""
        if "Waiting for client" in line:
            self.result["role"] = "server"
        elif self._bw and "BW peak won't be measured" in line:
            self.result["duration_mode"] = True
            self.result["warnings"].append(line)
        elif _RUN_WARNING_RE.match(line):
            self.result["warnings"].append(line)
        else:
            return False
        return True

    def _cuda(self, line):
        if _is_cuda_line(line):
            _read_cuda_line(line, self.result)
            return True
        return False

    def _table(self, line):
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

    def _address(self, line):
        """``local|remote address: LID .. QPN .. PSN ..`` and the ``GID:`` line after it."""
        addr = _ADDRESS_RE.match(line)
        if addr:
            self.address = {"lid": addr.group("lid"), "qpn": addr.group("qpn"), "psn": addr.group("psn"),
                            "gid": None, "ipv4": None}
            self.address.update({key: addr.group(key) for key in ("rkey", "vaddr") if addr.group(key)})
            self.result[addr.group("side")].append(self.address)
            return True
        gid = _GID_RE.match(line)
        if gid and self.address is not None:
            self.address["gid"] = gid.group("gid")
            self.address["ipv4"] = _ipv4_from_gid(gid.group("gid"))
            return True
        return False

    def _header(self, line):
        if self.in_header and ":" in line:
            _read_header_line(line, self.result)
            return True
        return False


def _collect_errors(lines):
    """Error lines, deduplicated in order (perftest repeats them on retries)."""
    seen = []
    for line in lines:
        if _ERROR_RE.search(line) and not _NOT_ERROR_RE.search(line) and line not in seen:
            seen.append(line)
    return seen


def parse_ib_write_bw(text, units=None):
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
    if (text or "").lstrip().startswith("{"):
        return _parse_out_json(text, units)
    lines = [line.strip() for line in _lines(text)]
    reader = _Reader()
    for line in lines:
        if line:
            reader.feed(line)
    result = reader.result
    if not result["results"]:
        _raise_no_results(text, lines, result)
    command = result["command"] or {}
    if command.get("duration") is not None or all(row["bw_peak_gbps"] is None for row in result["results"]):
        result["duration_mode"] = True
    # errors printed after a complete table (e.g. at teardown) do not void it
    result["warnings"].extend(_collect_errors(lines))
    _summarize(result)
    return result


# --out_json test_info keys -> the text header's typed fields
_JSON_INFO_FIELDS = {"Device": "device", "Number_of_qps": "num_qps", "Transport_type": "transport_type",
                     "Connection_type": "connection_type", "Link_type": "link_type", "Mtu": "mtu",
                     "GID_index": "gid_index", "TX_depth": "tx_depth", "RX_depth": "rx_depth",
                     "CQ_Moderation": "cq_moderation", "Data_ex_method": "data_exchange", "TOS": "tos"}


def _parse_out_json(text, units):
    """The ``--out_json`` report file of a bandwidth test."""
    tool = "ib_write_bw"
    try:
        data = json.loads(text)
    except ValueError as err:   # incl. the raw_qos layout, whose 'sl:' key is not quoted
        raise ParseError(tool, "--out_json file is not valid JSON: %s" % err, text)
    info = data.get("test_info") if isinstance(data, dict) else None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(info, dict) or not isinstance(results, dict):
        raise ParseError(tool, "--out_json file without test_info and results objects", text)
    numbers = {key: results.get(key) for key in ("MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate")}
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers.values()):
        raise ParseError(tool, "--out_json results without MsgSize / n_iterations / BW_peak / "
                         "BW_average / MsgRate numbers: %r" % (results,), text)
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
        result["warnings"].append("--out_json does not state its unit (Gb/sec with --report_gbits, "
                                  "MB/sec otherwise): Gb/s figures not derived")
    result["units"] = units
    peak, average = float(numbers["BW_peak"]), float(numbers["BW_average"])
    unmeasured = peak == 0 and average > 0
    result["duration_mode"] = unmeasured
    result["results"].append({
        "bytes": int(numbers["MsgSize"]), "iterations": int(numbers["n_iterations"]),
        "bw_peak": peak, "bw_average": average, "msg_rate_mpps": float(numbers["MsgRate"]),
        "bw_peak_gbps": None if unmeasured or units is None else _to_gbps(peak, units),
        "bw_average_gbps": None if units is None else _to_gbps(average, units),
    })
    for key in ("bytes", "iterations", "bw_average_gbps", "bw_peak_gbps", "msg_rate_mpps"):
        result[key] = result["results"][-1][key]
    result["max_bw_average_gbps"] = result["bw_average_gbps"]
    return result


def _summarize(result):
    """Top-level figures from the last row (the only one, or the largest size of a sweep)."""
    last = result["results"][-1]
    for key in ("bytes", "iterations", "bw_average_gbps", "bw_peak_gbps", "msg_rate_mpps"):
        result[key] = last[key]
    result["max_bw_average_gbps"] = max(row["bw_average_gbps"] for row in result["results"])


def _raise_no_results(text, lines, result, kind="bw", no_table="no result table in output"):
    """ParseError naming the perftest binary (from the echoed command, else the test title and
    ``kind``, bw or lat): the tool's error lines, else what the output lacks."""
    tool = (result["command"] or {}).get("tool") or "ib_%s_%s" % (result["verb"] or "write", kind)
    errors = _collect_errors(lines)
    if errors:
        raise ParseError(tool, "; ".join(errors), text)
    if not (text or "").strip():
        raise ParseError(tool, "empty output", text)
    if result["role"] == "server":
        raise ParseError(tool, "server output without results (no client connected)", text)
    raise ParseError(tool, no_table, text)


# ib_read_bw / ib_send_bw print the same layout: a neutral name for their callers.
parse_perftest = parse_ib_write_bw


def parse_ib_send_bw(text, units=None):
    """``ib_send_bw`` output: the same header and ``#bytes #iterations BW peak ...`` table as
    ``ib_write_bw`` (perftest src/send_bw.c prints through the same report functions), so the
    same result; ParseError if the output is another test's (its title or echoed command)."""
    result = parse_ib_write_bw(text, units)
    tool = (result.get("command") or {}).get("tool")
    if (result.get("verb") not in (None, "send")) or (tool and tool != "ib_send_bw"):
        raise ParseError("ib_send_bw", "output of %s, not ib_send_bw" % (tool or result.get("test")), text)
    return result


# ---------------------------------------------------------------- latency tests

_LAT_TITLE_RE = re.compile(r"^(?P<title>(?P<verb>Send|RDMA_Write|RDMA_Read|Atomic)\b.*?Latency Test)$")
# Column names of the latency table (perftest src/perftest_parameters.h RESULT_FMT_LAT since
# commit 1ccb3fd "Extra measurements in latency tests" (2016, v3.x): t_avg, t_stdev and the two
# percentiles; before it only t_min, t_max, t_typical. RESULT_FMT_LAT_DUR (-D): t_avg, tps average.)
_LAT_COLUMNS = (("#bytes", "bytes"), ("#iterations", "iterations"), ("t_min[usec]", "t_min_usec"),
                ("t_max[usec]", "t_max_usec"), ("t_typical[usec]", "t_typical_usec"),
                ("t_avg[usec]", "t_avg_usec"), ("t_stdev[usec]", "t_stdev_usec"),
                ("99% percentile[usec]", "p99_usec"), ("99.9% percentile[usec]", "p99_9_usec"),
                ("tps average", "tps_average"))
_LAT_COLUMN_RE = re.compile("|".join(re.escape(name) for name, _key in _LAT_COLUMNS))
_LAT_KEYS = dict(_LAT_COLUMNS)


class _LatReader(_Reader):
    """A latency test's run: the same header, addresses and command echo; its own title and table."""

    _title_re = _LAT_TITLE_RE
    _bw = False

    def __init__(self):
        super().__init__()
        self.columns = None
        self.result.pop("units", None)
        self.result.pop("duration_mode", None)

    def _table(self, line):
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
            try:
                numbers = [float(c) for c in cells]
            except ValueError:
                numbers = None
            if numbers is None or len(numbers) != len(self.columns):
                self.result["warnings"].append("result row not read (%s cells for %d columns): %r"
                                               % (len(cells), len(self.columns), line))
                return True
            row = {key: (int(v) if key in ("bytes", "iterations") else v) for key, v in zip(self.columns, numbers)}
            self.result["results"].append(row)
            return True
        return False


def parse_perftest_lat(text):
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
    lines = [line.strip() for line in _lines(text)]
    reader = _LatReader()
    for line in lines:
        if line:
            reader.feed(line)
    result = reader.result
    if not result["results"]:
        _raise_no_results(text, lines, result, "lat", "no latency table (#bytes #iterations t_...) in output")
    result["columns"] = list(reader.columns)
    result["warnings"].extend(_collect_errors(lines))
    last = result["results"][-1]
    for _name, key in _LAT_COLUMNS:
        result[key] = last.get(key)
    return result


parse_ib_write_lat = parse_perftest_lat
parse_ib_send_lat = parse_perftest_lat
