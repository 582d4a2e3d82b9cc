"""Parsers for the RDMA inventory tools: ibstat, ibv_devinfo, ibdev2netdev, show_gids
(``rdma link`` and ``ibstatus``: iblink.py; the shared text helpers: _ibtext.py).

Pure functions, stdlib only, importable on their own. Every parser takes the
tool's stdout (stderr may be appended) and returns plain dicts/lists; on
error output (no device, driver not loaded, tool missing, empty output) it
raises ``ParseError`` carrying what the tool said.
"""

from __future__ import annotations

import re
from typing import Any, Optional, TypedDict, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import SHELL_PROMPT_RE, ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers._ibtext import _int_or_text, _lines, _raise_no_data, _read_rate, _split_enum
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import SHELL_PROMPT_RE, ParseError  # type: ignore[import-not-found,no-redef]

    from parsers._ibtext import _int_or_text, _lines, _raise_no_data, _read_rate, _split_enum  # type: ignore[import-not-found,no-redef]


# --------------------------------------------------------------------------
# ibstat
# --------------------------------------------------------------------------

_IBSTAT_CA_RE = re.compile(r"^(?P<kind>CA|Switch|Router|iWARP RNIC|\?\?\?):? '(?P<name>[^']+)'\s*$")
_IBSTAT_PORT_RE = re.compile(r"^Port (?P<num>\d+):\s*$")
_IBSTAT_KV_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?):\s*(?P<value>.*?)\s*$")
_IBSTAT_PANIC_RE = re.compile(r"^(ibpanic|ibwarn|iberror):", re.IGNORECASE)

_IBSTAT_CA_FIELDS = {
    "ca type": "ca_type",
    "switch type": "ca_type",
    "router type": "ca_type",
    "number of ports": "num_ports",
    "firmware version": "firmware_version",
    "hardware version": "hardware_version",
    "node guid": "node_guid",
    "system image guid": "system_image_guid",
}

_IBSTAT_PORT_FIELDS = {
    "state": "state",
    "physical state": "physical_state",
    "rate": "rate",
    "base lid": "base_lid",
    "lmc": "lmc",
    "sm lid": "sm_lid",
    "capability mask": "capability_mask",
    "port guid": "port_guid",
    "link layer": "link_layer",
}

_IBSTAT_INT_FIELDS = ("num_ports", "base_lid", "lmc", "sm_lid")


# The CAs, devices and ports below are open sets of the fields each tool printed (a field this
# parser does not know is kept under its own name): plain dicts. The envelopes are typed.
class IbStat(TypedDict):
    """``parse_ibstat``."""

    cas: list[dict[str, Any]]
    warnings: list[str]


class _IbvDevinfoBase(TypedDict):
    devices: list[dict[str, Any]]


class IbvDevinfo(_IbvDevinfoBase, total=False):
    """``parse_ibv_devinfo``; ``warnings`` only when lines before the first ``hca_id`` were not read."""

    warnings: list[str]


class Ibdev2netdev(TypedDict):
    """``parse_ibdev2netdev``."""

    ports: list[dict[str, Any]]
    warnings: list[str]


class _GidRowBase(TypedDict):
    device: str
    port: int
    index: int
    gid: Optional[str]
    ipv4: Optional[str]
    version: Optional[str]
    netdev: Optional[str]


class GidRow(_GidRowBase, total=False):
    """One show_gids row; ``masked`` (gid None) where the capture's author masked the GID."""

    masked: bool


class ShowGids(TypedDict):
    """``parse_show_gids``."""

    gids: list[GidRow]
    count: int
    warnings: list[str]


def _ibstat_port_value(field: str, value: str, port: dict[str, Any]) -> None:
    """Store one ``Port N:`` field, numbers as numbers; Rate keeps its text too."""
    if field == "rate":
        # "400", "2.5" (1x SDR), "10 (FDR10)"
        _read_rate(port, value, r"([\d.]+)\s*(?:\((.*)\))?")
    elif field in _IBSTAT_INT_FIELDS:
        port[field] = _int_or_text(value)
    else:
        port[field] = value


def parse_ibstat(text: Optional[str]) -> IbStat:
    """Parse ``ibstat`` (infiniband-diags / rdma-core) output.

    Handles the full listing (``CA 'mlx5_0'`` blocks with TAB or
    space-expanded indentation, one or more ``Port N:`` sub-blocks),
    ``ibstat -s`` (CA blocks without ports), ``ibstat <ca> <port>``
    (``CA: 'mlx5_0'`` + one unindented port block) and the ``Rate`` forms
    ``400``, ``2.5`` and ``10 (FDR10)``. Blocks cut short (a missing
    ``Link layer`` line) are kept with the fields that are there.

    Returns ``{"cas": [{"name", "ca_type", "num_ports", "firmware_version",
    "hardware_version", "node_guid", "system_image_guid", "ports": [{"port",
    "state", "physical_state", "rate_gbps", "rate_text", "base_lid", "lmc",
    "sm_lid", "capability_mask", "port_guid", "link_layer"}]}], "warnings":
    [lines inside a CA block that are not ``Key: value``, with their
    number]}``.

    Raises ParseError on empty output, on ``ibpanic``/``ibwarn`` lines (e.g.
    "stat of IB device 'mlx5_8' failed") even after partial output, and on
    output without any CA block.
    """
    panics = [line.strip() for line in _lines(text) if _IBSTAT_PANIC_RE.match(line.strip())]
    if panics:
        raise ParseError("ibstat", "; ".join(panics), text)

    cas: list[dict[str, Any]] = []
    warnings: list[str] = []
    ca: Optional[dict[str, Any]] = None
    port: Optional[dict[str, Any]] = None
    for number, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        ca_match = _IBSTAT_CA_RE.match(line)
        if ca_match:
            ca = {"name": ca_match.group("name"), "node_type": ca_match.group("kind"), "ports": []}
            cas.append(ca)
            port = None
            continue
        if ca is None:
            continue
        port_match = _IBSTAT_PORT_RE.match(line)
        if port_match:
            port = {"port": int(port_match.group("num"))}
            ca["ports"].append(port)
            continue
        kv = _IBSTAT_KV_RE.match(line)
        if not kv:
            warnings.append("line %d: not a 'Key: value' line of CA %r: %r" % (number, ca["name"], line))
            continue
        key, value = kv.group("key").lower(), kv.group("value")
        if port is not None and key in _IBSTAT_PORT_FIELDS:
            _ibstat_port_value(_IBSTAT_PORT_FIELDS[key], value, port)
        elif key in _IBSTAT_CA_FIELDS:
            field = _IBSTAT_CA_FIELDS[key]
            ca[field] = _int_or_text(value) if field in _IBSTAT_INT_FIELDS else value

    if not cas:
        _raise_no_data("ibstat", text, "CA block")
    return {"cas": cas, "warnings": warnings}


# --------------------------------------------------------------------------
# ibv_devinfo
# --------------------------------------------------------------------------

_DEVINFO_HCA_RE = re.compile(r"^hca_id:\s*(?P<name>\S+)")
_DEVINFO_PORT_RE = re.compile(r"^port:\s*(?P<num>\d+)\s*$")
_DEVINFO_GID_RE = re.compile(r"^GID\[\s*(?P<index>\d+)\]:\s*(?P<gid>[0-9a-fA-F:.]+)(?:,\s*(?P<type>.+))?$")
_DEVINFO_KV_RE = re.compile(r"^(?P<key>[A-Za-z_][\w ]*?):\s*(?P<value>.*?)\s*$")

# Fields whose "TEXT (code)" form is an enumeration: keep the text, drop the code.
_DEVINFO_ENUMS = ("transport", "state", "atomic_cap", "phys_state", "max_vl_num", "active_width", "active_speed")
# Fields that hold a number, possibly followed by an enumeration code.
_DEVINFO_NUMBERS = ("max_mtu", "active_mtu")
_DEVINFO_ERROR_RE = re.compile(
    r"No IB devices found|Failed to get IB devices list|Failed to open device|"
    r"command not found|IB device .* wasn't found|Permission denied",
    re.IGNORECASE,
)


def _indent(raw: str) -> int:
    """Indentation width of a line, a TAB counting as 8 columns."""
    return len(raw.expandtabs(8)) - len(raw.expandtabs(8).lstrip())


def _devinfo_value(key: str, value: str, target: dict[str, Any]) -> None:
    """Store one ibv_devinfo field in ``target``, normalized.

    Enumerations keep their text (``PORT_ACTIVE``) plus ``<key>_code``;
    MTUs and plain decimals become ints; speed/width get numeric companions.
    """
    text, code = _split_enum(value)
    if key in _DEVINFO_NUMBERS:
        target[key] = _int_or_text(text)
        if code is not None:
            target[key + "_code"] = code
    elif key in _DEVINFO_ENUMS:
        target[key] = text
        if code is not None:
            target[key + "_code"] = code
        if key == "active_speed":
            speed = re.match(r"(\d+(?:\.\d+)?)\s*Gbps", text)
            target["active_speed_gbps"] = float(speed.group(1)) if speed else None
        elif key == "active_width":
            width = re.match(r"(\d+)X", text)
            target["active_width_lanes"] = int(width.group(1)) if width else None
    else:
        target[key] = _int_or_text(value)


def _devinfo_finish_port(port: dict[str, Any]) -> None:
    """Add ``rate_gbps`` (lanes x per-lane speed) when ``-v`` showed both."""
    lanes, speed = port.get("active_width_lanes"), port.get("active_speed_gbps")
    if lanes and speed is not None:
        port["rate_gbps"] = round(lanes * speed, 3)


def parse_ibv_devinfo(text: Optional[str]) -> IbvDevinfo:
    """Parse ``ibv_devinfo`` (rdma-core / MLNX_OFED libibverbs-utils) output.

    Handles plain and ``-v`` output, ``-d <dev>`` and ``-i <port>``, TAB or
    space-expanded indentation, ConnectX-3 (mlx4) to ConnectX-7 (mlx5). In
    ``-v`` output, the flag lists printed under ``device_cap_flags`` and
    friends go to ``flags[<key>]``, capability sub-blocks (``tso_caps:``,
    ``rss_caps:``, ``cq moderation caps:``) to ``caps[<heading>]``, the
    heading-less tag-matching group (``max_rndv_hdr_size`` .. ``flags:``) to
    ``caps["tag_matching"]`` and ``flags["tag_matching.flags"]``, stray
    lines without a ``key: value`` shape (``Multi-Packet RQ is not
    supported``) to ``notes``, and ``GID[ n]:`` lines to the port's
    ``gids``. A field repeated at the same level, or named like one of the
    parser's own keys, keeps its first value and adds a line to
    ``warnings``. ``ibv_devinfo -l`` (``N HCAs
    found:`` + names) is returned as devices carrying only ``hca_id``.

    Returns ``{"devices": [{"hca_id", "transport", "fw_ver", "node_guid",
    "sys_image_guid", "vendor_id", "vendor_part_id" (int), "hw_ver",
    "board_id", "phys_port_cnt" (int), ..., "ports": [{"port", "state"
    ("PORT_ACTIVE"), "state_code", "max_mtu" (int), "active_mtu" (int),
    "sm_lid", "port_lid", "port_lmc", "link_layer", ["active_width",
    "active_speed", "rate_gbps", "phys_state", "gids"]}]}]}``.

    Raises ParseError on "No IB devices found", "Failed to get IB devices
    list", a missing tool, or output with no ``hca_id`` block.
    """
    errors = [line.strip() for line in _lines(text) if _DEVINFO_ERROR_RE.search(line)]
    if errors:
        raise ParseError("ibv_devinfo", "; ".join(errors), text)

    listing = _parse_devinfo_list(text)
    if listing is not None:
        return listing

    reader = _DevinfoReader()
    for number, raw in enumerate(_lines(text), 1):
        if raw.strip():
            reader.feed(raw, number)
    devices = reader.devices

    if not devices:
        _raise_no_data("ibv_devinfo", text, "hca_id block")
    for device in devices:
        for port in device["ports"]:
            _devinfo_finish_port(port)
            if not port["gids"]:
                del port["gids"]
        for key in ("flags", "notes", "caps", "warnings"):
            if not device[key]:
                del device[key]
    return {"devices": devices, "warnings": reader.preamble} if reader.preamble else {"devices": devices}


# rdma-core's print_tm_caps() prints the tag-matching capabilities at the
# device's own indentation, without a heading: "max_rndv_hdr_size:" opens the
# group, and its "max_sge:" / "flags:" would otherwise overwrite the device's.
_DEVINFO_TM_FIRST = "max_rndv_hdr_size"
_DEVINFO_TM_KEYS = ("max_rndv_hdr_size", "max_num_tags", "max_ops", "max_sge", "flags")
# Keys the parser itself puts in a device or port: a tool field of that name
# never replaces them.
_DEVINFO_RESERVED = ("hca_id", "ports", "flags", "notes", "caps", "warnings", "port", "gids")


class _DevinfoReader:
    """Line-by-line reader of ``ibv_devinfo`` output; ``devices`` holds what was read.

    Indentation decides where a line belongs: a line indented deeper than
    the ``key:`` line above it is part of that key's block. A block under a
    key with a value (``device_cap_flags: 0x..``) is a flag list
    (``flags[key]``); a block under a bare heading (``tso_caps:``, ``cq
    moderation caps:``, ``packet_pacing_caps:``) holds ``key: value`` pairs
    (``caps[heading][key]``) and flag words (``flags[heading]``); nested
    headings are joined with ``.`` (``packet_pacing_caps.supported_qp``).
    """

    def __init__(self) -> None:
        self.devices: list[dict[str, Any]] = []
        self.device: Optional[dict[str, Any]] = None
        self.port: Optional[dict[str, Any]] = None
        self.blocks: list[tuple[int, str, bool]] = []  # [(indent, path, is_flag_list)]
        self.in_tm = False
        self.preamble: list[str] = []  # warnings for lines before the first hca_id

    def feed(self, raw: str, number: int) -> None:
        line = raw.strip()
        indent = _indent(raw)
        hca = _DEVINFO_HCA_RE.match(line)
        if hca:
            self.device = {"hca_id": hca.group("name"), "ports": [], "flags": {}, "notes": [], "caps": {}, "warnings": []}
            self.devices.append(self.device)
            self.port, self.blocks, self.in_tm = None, [], False
            return
        if self.device is None:
            # before the first hca_id: an echoed command or a prompt, else named (issue 38)
            if not SHELL_PROMPT_RE.match(line) and not re.match(r"^(?:\S*[#$]\s?)?(?:sudo\s+)?ibv_devinfo\b", line):
                self.preamble.append("line %d: not read (before any hca_id): %r" % (number, line))
            return
        if line == "Device ports:":
            return
        port = _DEVINFO_PORT_RE.match(line)
        if port:
            self.port = {"port": int(port.group("num")), "gids": []}
            self.device["ports"].append(self.port)
            self.blocks, self.in_tm = [], False
            return
        gid = _DEVINFO_GID_RE.match(line)
        if self.port is not None and gid:
            self._gid(gid)
            return
        while self.blocks and self.blocks[-1][0] >= indent:
            self.blocks.pop()
        if self.blocks:
            self._block_line(line, indent)
        else:
            self._field(line, indent, number)

    # _gid, _block_line and _field run only once feed() has a device (and, for _gid, a port)
    def _gid(self, match: re.Match[str]) -> None:
        port = cast("dict[str, Any]", self.port)
        entry = {"index": int(match.group("index")), "gid": match.group("gid")}
        if match.group("type"):
            entry["type"] = match.group("type").strip()
        port["gids"].append(entry)

    def _block_line(self, line: str, indent: int) -> None:
        """A line inside the block of the ``key:`` line above it."""
        device = cast("dict[str, Any]", self.device)
        path, is_flag_list = self.blocks[-1][1:]
        kv = _DEVINFO_KV_RE.match(line)
        if is_flag_list or not kv or line.lower().startswith("unknown flags"):
            device["flags"].setdefault(path, []).append(line)
            return
        key = kv.group("key").strip().replace(" ", "_")
        if kv.group("value"):
            device["caps"].setdefault(path, {})[key] = _int_or_text(kv.group("value"))
        else:
            self.blocks.append((indent, path + "." + key, False))

    def _field(self, line: str, indent: int, number: int) -> None:
        """A ``key: value`` line of the device or the current port; anything else is a note."""
        device = cast("dict[str, Any]", self.device)
        kv = _DEVINFO_KV_RE.match(line)
        if not kv:
            device["notes"].append(line)
            self.in_tm = False
            return
        key, value = kv.group("key").strip().replace(" ", "_"), kv.group("value")
        if self.port is None and key == _DEVINFO_TM_FIRST:
            self.in_tm = True
        if self.in_tm and key in _DEVINFO_TM_KEYS:
            if value:
                device["caps"].setdefault("tag_matching", {})[key] = _int_or_text(value)
            else:
                self.blocks.append((indent, "tag_matching." + key, True))
            return
        self.in_tm = False
        target = self.port if self.port is not None else device
        if key in _DEVINFO_RESERVED or key in target:
            device["warnings"].append("line %d: field %r repeated or reserved, first value kept: %r" % (number, key, line))
        else:
            _devinfo_value(key, value, target)
        # An empty value opens a heading (key: value pairs below); a value
        # followed by deeper lines is a flag list (device_cap_flags: 0x...).
        self.blocks.append((indent, key, bool(value)))


def _parse_devinfo_list(text: Optional[str]) -> Optional[IbvDevinfo]:
    """``ibv_devinfo -l`` ("2 HCAs found:" + one name per line), else None."""
    lines = [line.strip() for line in _lines(text) if line.strip()]
    # the capture may start with the echoed command ("# ibv_devinfo -l")
    while lines and "ibv_devinfo" in lines[0] and not lines[0].startswith("hca_id"):
        lines = lines[1:]
    if not lines:
        return None
    header = re.fullmatch(r"(\d+) HCAs? found:", lines[0])
    if not header:
        return None
    return {"devices": [{"hca_id": name, "ports": []} for name in lines[1:]]}


# --------------------------------------------------------------------------
# ibdev2netdev
# --------------------------------------------------------------------------

_IBDEV2NETDEV_RE = re.compile(r"^(?P<device>\S+) port (?P<port>\d+) (?P<arrow>==>|<===>) (?P<netdev>\S+)(?: \((?P<state>[^)]*)\))?\s*$")
_IBDEV2NETDEV_VERBOSE_RE = re.compile(
    r"^(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])?\s*"
    r"(?P<device>\S+) \((?P<ca_type>\S+) - (?P<part_id>[^)]*?)\s*\)\s*"
    r"(?P<description>.*?)\s*fw (?P<fw>\S+) port (?P<port>\d+) \((?P<port_state>[^)]*?)\s*\) "
    r"==> (?P<netdev>\S+) \((?P<state>[^)]*)\)\s*$"
)


def parse_ibdev2netdev(text: Optional[str]) -> Ibdev2netdev:
    """Parse ``ibdev2netdev`` / ``ibdev2netdev -v`` (MLNX_OFED, mlnx-tools).

    Forms: ``mlx5_0 port 1 ==> ens1f0np0 (Up)``, the old-style
    ``mlx4_0 port 1 <===> eth2`` (no link state), and ``-v``:
    ``0000:41:00.0 mlx5_0 (MT4129 - MCX75310AAS-NEAT) <description> fw
    28.39.2048 port 1 (ACTIVE) ==> ens1f0np0 (Up)`` where the PCI address
    and the description may be empty.

    Returns ``{"ports": [{"device", "port" (int), "netdev", "netdev_state"
    ("Up"/"Down"/"NA"/None), ["pci", "ca_type", "part_id", "description",
    "firmware_version", "port_state" ("ACTIVE"/"DOWN")]}], "warnings":
    [a "==>" line that matches neither layout, with its number]}``.

    Raises ParseError on empty output (the script prints nothing when the
    driver is stopped or no Mellanox netdev exists) or when no line matches.
    """
    ports: list[dict[str, Any]] = []
    warnings: list[str] = []
    for number, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        verbose = _IBDEV2NETDEV_VERBOSE_RE.match(line)
        if verbose:
            ports.append(_ibdev2netdev_verbose_entry(verbose))
            continue
        plain = _IBDEV2NETDEV_RE.match(line)
        if plain:
            ports.append(
                {
                    "device": plain.group("device"),
                    "port": int(plain.group("port")),
                    "netdev": plain.group("netdev"),
                    "netdev_state": plain.group("state"),
                }
            )
        elif "==>" in line:
            warnings.append("line %d: a '==>' line not read: %r" % (number, line))
    if not ports:
        _raise_no_data("ibdev2netdev", text, "device ==> netdev line")
    return {"ports": ports, "warnings": warnings}


def _ibdev2netdev_verbose_entry(match: re.Match[str]) -> dict[str, Any]:
    """One ``ibdev2netdev -v`` line as a dict."""
    part_id = match.group("part_id").strip()
    return {
        "device": match.group("device"),
        "port": int(match.group("port")),
        "netdev": match.group("netdev"),
        "netdev_state": match.group("state"),
        "pci": match.group("pci"),
        "ca_type": match.group("ca_type"),
        "part_id": None if part_id in ("", "NA") else part_id,
        "description": match.group("description") or None,
        "firmware_version": match.group("fw"),
        "port_state": match.group("port_state").strip(),
    }


# --------------------------------------------------------------------------
# show_gids
# --------------------------------------------------------------------------

_IPV4_RE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_GID_VERSION_RE = re.compile(r"^[vV]\d$")
_GID_RE = re.compile(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$")
# A GID an author masked before publishing (``fe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx``): eight groups
# of hex digits or x; read as unknown (None) with a warning (issue 38 class 5)
_MASKED_GID_RE = re.compile(r"^[0-9a-fA-FxX]{4}(?::[0-9a-fA-FxX]{4}){7}$")
_SHOW_GIDS_SKIP_RE = re.compile(r"^(?:DEV\s+PORT\s+INDEX|-{2,}(?:\s+-{2,})*\s*$)")


def _show_gids_row(tokens: list[str]) -> GidRow:
    """One data row: DEV PORT INDEX GID [IPv4] [VER] [NETDEV]."""
    row: GidRow = {
        "device": tokens[0],
        "port": int(tokens[1]),
        "index": int(tokens[2]),
        "gid": tokens[3],
        "ipv4": None,
        "version": None,
        "netdev": None,
    }
    for token in tokens[4:]:
        if _IPV4_RE.match(token):
            row["ipv4"] = token
        elif _GID_VERSION_RE.match(token):
            row["version"] = token.lower()
        else:
            row["netdev"] = token
    return row


def parse_show_gids(text: Optional[str]) -> ShowGids:
    """Parse ``show_gids`` (mlnx-tools) output.

    The table is TAB separated: ``DEV PORT INDEX GID IPv4 VER DEV``; the IPv4
    cell is empty for non-IPv4-mapped GIDs, VER (``v1``/``v2``) and the
    netdev are empty on InfiniBand ports. The trailer
    ``n_gids_found=N`` is checked against the rows.

    Returns ``{"gids": [{"device", "port", "index", "gid", "ipv4",
    "version", "netdev"}], "count": N, "warnings": [rows not read, with
    their line; n_gids_found= disagreeing with the rows read]}``.

    Raises ParseError when no GID row is found (``n_gids_found=0``, ``ls:
    cannot access '/sys/class/infiniband/'`` when the driver is not loaded,
    empty output).
    """
    gids: list[GidRow] = []
    warnings: list[str] = []
    count: Optional[int] = None
    for number, raw in enumerate(_lines(text), 1):
        tokens = raw.split()
        if not tokens:
            continue
        trailer = re.match(r"n_gids_found=(\d+)", tokens[0])
        if trailer:
            count = int(trailer.group(1))
            continue
        if len(tokens) >= 4 and tokens[1].isdigit() and tokens[2].isdigit() and _GID_RE.match(tokens[3]):
            gids.append(_show_gids_row(tokens))
        elif len(tokens) >= 4 and tokens[1].isdigit() and tokens[2].isdigit() and _MASKED_GID_RE.match(tokens[3]):
            row = _show_gids_row(tokens)
            row.update({"gid": None, "masked": True})
            gids.append(row)
            warnings.append("line %d: GID %s is masked: read as unknown" % (number, tokens[3]))
        elif not _SHOW_GIDS_SKIP_RE.match(raw.strip()) and not SHELL_PROMPT_RE.match(raw.strip()):
            warnings.append("line %d: a GID row not read: %r" % (number, raw.strip()))
    if not gids:
        _raise_no_data("show_gids", text, "GID row")
    if count is not None and count != len(gids):
        warnings.append("n_gids_found=%d but %d GID rows read" % (count, len(gids)))
    return {"gids": gids, "count": count if count is not None else len(gids), "warnings": warnings}
