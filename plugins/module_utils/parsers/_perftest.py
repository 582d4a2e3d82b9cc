"""What every perftest run prints, read the same way for the bandwidth tests (perftest.py) and
the latency tests (perftest_lat.py): the echoed command line, the header block, the ``--use_cuda``
preamble, the server banners, the ``local/remote address`` and ``GID`` lines, the error lines.

Stdlib only, importable on its own (with plugins/module_utils on sys.path). ``_Reader`` reads one
run line by line (``_read``); a test's reader names its title (``_title_re``) and reads its result
table (``_table``).
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Callable, Dict, Iterable, Optional, Pattern

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

# One run as read: the fixed keys of _new_result plus the header fields perftest printed (_HEADER_FIELDS,
# an open set: absent when not printed), so a plain dict.
PerftestResult = Dict[str, Any]


_DASHES_RE = re.compile(r"^-{20,}$")
_HEADER_PAIR_RE = re.compile(r"(?P<key>[A-Za-z][\w*.\- ]*?)\s*:\s*(?P<value>\S+)")
_ADDRESS_RE = re.compile(
    r"^(?P<side>local|remote) address:\s*LID (?P<lid>\S+) QPN (?P<qpn>\S+) PSN (?P<psn>\S+)"
    r"(?:\s+RKey (?P<rkey>\S+))?(?:\s+VAddr (?P<vaddr>\S+))?(?P<rest>.*)$"
)
_GID_RE = re.compile(r"^GID:\s*(?P<gid>[\d:]+)$")
_ERROR_RE = re.compile(
    r"Couldn't|Unable to|Failed|failed|No IB devices found|IB device .* not found|"
    r"Unexpected CM event|unexpected CM event|Did not detect devices|check if driver is up|"
    r"Problem in resolving|Completion with error|command not found|Permission denied|"
    r"Connection refused|bad event|error",
)
_RUN_WARNING_RE = re.compile(
    r"Requested mtu|Changing to active mtu|Conflicting CPU frequency|WARNING|Warning:|Test integrity|"
    r"Perftest doesn't supports CUDA"
)
_NOT_ERROR_RE = re.compile(r"^WARNING|Perftest doesn't supports CUDA|Conflicting CPU frequency")

# Lines perftest prints that carry nothing to read: rules of stars, a capture's shell prompt
_NOTHING_TO_READ_RE = re.compile(r"^(?:\*+|[=-]+|(?:\[[^\]]*\]|[\w.@:~/()-]+)?\s?[#$](?:\s|$).*)$")

_VERBS = {"RDMA_Write": "write", "RDMA_Read": "read", "Send": "send", "Atomic": "atomic"}

_COMMAND_RE = re.compile(r"(?:^|[\s/\"'])(?P<tool>ib_(?:write|read|send|atomic)_(?:bw|lat))(?P<args>(?:\s.*)?)$")
# ``<server_ip>``, ``<mlx5_X>``: a placeholder in a documented command line, not a shell redirection
_PLACEHOLDER_RE = re.compile(r"^<[^<>\s]+>$")
# Short options that take a value (perftest's getopt string), and the long
# options we report, with the key they get in "command".
_SHORT_WITH_VALUE = set("wypdimsntuSxcqIoMrQAlDfBTLEJjKkXW")
_COMMAND_OPTIONS = {
    "-d": "ib_dev",
    "--ib-dev": "ib_dev",
    "-i": "ib_port",
    "--ib-port": "ib_port",
    "-p": "tcp_port",
    "--port": "tcp_port",
    "-q": "qps",
    "--qp": "qps",
    "-x": "gid_index",
    "--gid-index": "gid_index",
    "-s": "size",
    "--size": "size",
    "-D": "duration",
    "--duration": "duration",
    "-m": "mtu",
    "--mtu": "mtu",
    "-T": "tos",
    "--tos": "tos",
    "-n": "iters",
    "--iters": "iters",
    "--use_cuda": "use_cuda",
    "--source_ip": "source_ip",
}
_COMMAND_FLAGS = {
    "-a": "all_sizes",
    "--all": "all_sizes",
    "-R": "rdma_cm",
    "--rdma_cm": "rdma_cm",
    "-b": "bidirectional",
    "--bidirectional": "bidirectional",
    "--report_gbits": "report_gbits",
    "--use_cuda_dmabuf": "use_cuda_dmabuf",
}

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


def _lines(text: Optional[str]) -> list[str]:
    return (text or "").replace("\r\n", "\n").split("\n")


def _convert(value: str, kind: Any) -> Any:
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


def _ipv4_from_gid(gid: str) -> Optional[str]:
    """perftest prints GIDs byte-wise in decimal; IPv4-mapped ones end 255:255:a:b:c:d."""
    parts = gid.split(":")
    if len(parts) == 16 and parts[10:12] == ["255", "255"] and all(p == "00" or p == "0" for p in parts[:10]) and all(p.isdigit() for p in parts[12:]):
        return ".".join(str(int(p)) for p in parts[12:])
    return None


def _parse_command(line: str) -> Optional[dict[str, Any]]:
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
    placeholders: list[str] = []
    for position, token in enumerate(argv):
        if _PLACEHOLDER_RE.match(token):
            placeholders.append(token)
            continue
        if re.match(r"^(?:\d*>|<|\||&|;)", token):
            argv = argv[:position]
            break
        if token.endswith(('"', "'")) and not shlex_ok:
            argv[position] = token.rstrip("\"'")  # the end of a quoted remote command (ssh host "...")
    command: dict[str, Any] = {"tool": match.group("tool"), "argv": argv, "server": None}
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


def _new_result() -> PerftestResult:
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


def _read_header_line(line: str, result: PerftestResult) -> None:
    """Collect the ``Key : value`` pairs of one header line (one or two per line)."""
    for pair in _HEADER_PAIR_RE.finditer(line):
        key = pair.group("key").strip()
        value = pair.group("value")
        result["header"][key] = value
        field = _HEADER_FIELDS.get(key.lower())
        if field:
            name, kind = field
            result[name] = _convert(value, kind)


def _read_cuda_line(line: str, result: PerftestResult) -> None:
    """Record --use_cuda preamble lines (device index, GPU name, DMA-BUF)."""
    cuda = result["cuda"] or {"device": None, "name": None, "dmabuf": False, "pci": {}}
    result["cuda"] = cuda
    picked = re.match(r"Picking device No\.\s*(\S+)", line)
    named = re.search(r"device name = \[(.+)\]", line)
    listed = re.match(r"CUDA device (\d+): PCIe address is (\S+)", line)
    if picked:
        cuda["device"] = int(picked.group(1)) if picked.group(1).isdigit() else picked.group(1)
    elif named:
        cuda["name"] = named.group(1)
    elif listed:
        cuda["pci"][listed.group(1)] = listed.group(2)
    elif "DMA-BUF" in line or "dmabuf" in line:
        cuda["dmabuf"] = True


def _is_cuda_line(line: str) -> bool:
    return bool(
        re.match(
            r"initializing CUDA|Listing all CUDA devices|CUDA device \d+|Picking device No|"
            r"\[pid = \d+, dev = \d+\] device name|creating CUDA Ctx|making it the current CUDA Ctx|"
            r"cuMemAlloc|allocated GPU buffer|using DMA-BUF|Calling ibv_reg_dmabuf_mr|CUDA device integrated|"
            r"deallocating GPU buffer|destroying current CUDA Ctx",
            line,
        )
    )


class _Reader:
    """Line-by-line reader of one perftest run; ``result`` holds what was read."""

    _title_re: Optional[Pattern[str]] = None  # the test's title line, which opens the header
    _bw = False  # a bandwidth test: "BW peak won't be measured" marks a run by duration

    def __init__(self) -> None:
        self.result = _new_result()
        self.in_header = False
        self.address: Optional[dict[str, Any]] = None
        self.handlers: tuple[Callable[[str], bool], ...] = (self._command, self._title, self._banner, self._cuda, self._table, self._address, self._header)

    def feed(self, line: str) -> bool:
        """Hand ``line`` to the first handler that reads it; False when none does."""
        return any(handler(line) for handler in self.handlers) or bool(_NOTHING_TO_READ_RE.match(line))

    def _command(self, line: str) -> bool:
        command = None if self.result["command"] else _parse_command(line)
        if command:
            self.result["command"] = command
        return bool(command)

    def _title(self, line: str) -> bool:
        """``RDMA_Write BW Test`` (``_title_re``) opens the header; a dashed rule closes it."""
        title = self._title_re.match(line) if self._title_re is not None else None
        if title:
            self.result["test"], self.result["verb"] = title.group("title"), _VERBS[title.group("verb")]
            self.in_header = True
        elif _DASHES_RE.match(line):
            self.in_header = False
        return bool(title) or bool(_DASHES_RE.match(line))

    def _banner(self, line: str) -> bool:
        """Server banners and run-wide warnings."""
        if "Waiting for client" in line:
            self.result["role"] = "server"
        elif line.startswith("Please run the same command with the IB/RoCE interface IP"):
            pass  # the server banner's second line
        elif self._bw and "BW peak won't be measured" in line:
            self.result["duration_mode"] = True
            self.result["warnings"].append(line)
        elif _RUN_WARNING_RE.match(line):
            self.result["warnings"].append(line)
        else:
            return False
        return True

    def _cuda(self, line: str) -> bool:
        if _is_cuda_line(line):
            _read_cuda_line(line, self.result)
            return True
        return False

    def _table(self, line: str) -> bool:
        """The result table and its rows: each test's own."""
        return False

    def _address(self, line: str) -> bool:
        """``local|remote address: LID .. QPN .. PSN ..`` and the ``GID:`` line after it."""
        addr = _ADDRESS_RE.match(line)
        if addr:
            self.address = {"lid": addr.group("lid"), "qpn": addr.group("qpn"), "psn": addr.group("psn"), "gid": None, "ipv4": None}
            self.address.update({key: addr.group(key) for key in ("rkey", "vaddr") if addr.group(key)})
            if addr.group("rest").strip():  # a field this layout does not have: kept, not dropped
                self.address["other"] = addr.group("rest").strip()
            self.result[addr.group("side")].append(self.address)
            return True
        gid = _GID_RE.match(line)
        if gid and self.address is not None:
            self.address["gid"] = gid.group("gid")
            self.address["ipv4"] = _ipv4_from_gid(gid.group("gid"))
            return True
        return False

    def _header(self, line: str) -> bool:
        if self.in_header and ":" in line:
            _read_header_line(line, self.result)
            return True
        return False


def _collect_errors(lines: Iterable[str]) -> list[str]:
    """Error lines, deduplicated in order (perftest repeats them on retries)."""
    seen: list[str] = []
    for line in lines:
        if _ERROR_RE.search(line) and not _NOT_ERROR_RE.search(line) and line not in seen:
            seen.append(line)
    return seen


def _read(reader: _Reader, text: Optional[str], kind: str = "bw", no_table: str = "no result table in output") -> tuple[list[str], PerftestResult]:
    """Feed every line of ``text`` (stripped, empty ones skipped) to ``reader``: (the stripped lines,
    ``reader.result``); ParseError (``_raise_no_results``) when the run printed no result row."""
    lines = [line.strip() for line in _lines(text)]
    for number, line in enumerate(lines, 1):
        if line and not reader.feed(line):  # nothing perftest prints vanishes silently (issue 38)
            reader.result["warnings"].append("line %d: not read: %r" % (number, line))
    if not reader.result["results"]:
        _raise_no_results(text, lines, reader.result, kind, no_table)
    return lines, reader.result


def _raise_no_results(text: Optional[str], lines: list[str], result: PerftestResult, kind: str = "bw", no_table: str = "no result table in output") -> None:
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
