"""Parser for NCCL_DEBUG=INFO logs (``parse_nccl_log``), and the line handling
nccl-tests output shares with them (it interleaves NCCL log lines).

Pure functions, stdlib only, importable on their own. Output captured through
``mpirun --tag-output`` (``[1,0]<stdout>:`` prefixes) is read as well.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, TypedDict, TypeVar

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]


_NCCL_LINE_RE = re.compile(r"\bNCCL (?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<msg>.*)$")
_VERSION_RE = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)(?:\+cuda(?P<cuda>[\d.]+))?")

_T = TypeVar("_T")


class NcclFallback(TypedDict):
    signal: str
    line: str


class _NcclLogBase(TypedDict):
    transport: Optional[str]
    network: Optional[str]
    networks_seen: list[str]
    gdr: Optional[bool]
    nccl_version: Optional[str]
    cuda_version: Optional[str]
    # {"index", "device", "port", "link_layer", "speed_gbps"?, "sharp"?, "vnic"?}
    ib_devices: list[dict[str, Any]]
    # {"index", "interface", "address"}
    socket_interfaces: list[dict[str, Any]]
    relaxed_ordering: Optional[bool]
    oob_interface: Optional[str]
    num_nics: int
    channels: dict[str, int]
    num_channels: Optional[int]
    net_channels: int
    intra_node_paths: list[str]
    nranks: Optional[int]
    init_complete: bool
    init_complete_ranks: int
    env: dict[str, str]
    fallbacks: list[NcclFallback]
    warnings: list[str]
    error: Optional[str]
    error_code: Optional[str]


class NcclLog(_NcclLogBase, total=False):
    """``parse_nccl_log`` (the keys: its docstring); ``ranks_without_init_complete`` is set once the
    log is resolved."""

    ranks_without_init_complete: list[int]


# Anywhere in a line: Open MPI 4 tags each chunk it forwards, not each line.
_STREAMS = ("stdout", "stderr", "diag")
_TAG_RE = re.compile(r"\[(?P<job>\d+),(?P<rank>\d+)\]<(?P<stream>stdout|stderr|diag)>:")


def untangle_tagged(text: Optional[str]) -> str:
    """mpirun ``--tag-output`` output with each rank's lines whole again, rank by rank.

    A rank's stdout is block-buffered into a pipe (NCCL ``fwrite``s its log
    lines to stdout without a flush), so mpirun forwards chunks that end
    mid-line, and another rank's chunk lands in the middle of the line:
    ``[1,0]<stdout>:node1:1:2 [0] NCCL INFO NET/IB : Us[1,3]<stdout>:node4:...``.
    Untagged, such a line is lost. Open MPI tags the start of every chunk, so
    the pieces of each ``(job, rank, stream)`` joined in order give back that
    rank's own stream. Text outside any tag (mpirun's own messages) follows
    the ranks. Text without a tag is returned as it is.
    """
    text = (text or "").replace("\r\n", "\n")
    if not _TAG_RE.search(text):
        return text
    streams: dict[tuple[int, int, int], list[str]] = {}
    loose: list[str] = []
    key: Optional[tuple[int, int, int]] = None
    pos = 0
    for m in list(_TAG_RE.finditer(text)) + [None]:
        piece = text[pos : m.start() if m else len(text)]
        if key is not None:
            # the rank's piece runs to the end of its line; whole lines after it carry no tag
            head, newline, rest = piece.partition("\n")
            streams.setdefault(key, []).append(head + newline)
            piece = rest
        loose.append(piece)
        if m is None:
            break
        key, pos = (int(m.group("job")), int(m.group("rank")), _STREAMS.index(m.group("stream"))), m.end()
    out: list[str] = []
    for k in sorted(streams):
        body = "".join(streams[k])
        out.append(body if body.endswith("\n") else body + "\n")
    return "".join(out) + "".join(loose)


def _lines(text: Optional[str]) -> list[str]:
    """Lines of ``text`` without CRLF; mpirun ``--tag-output`` output untangled (``untangle_tagged``)."""
    return untangle_tagged(text).split("\n")


def _dedupe(items: Iterable[_T]) -> list[_T]:
    seen: list[_T] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


_NET_USING_RE = re.compile(r"^NET/(?P<net>[\w ]+?)\s*: Using (?P<list>\[\d+\].*)$")
_NET_DEVICE_RE = re.compile(r"\[(?P<index>\d+)\]\s*(?P<name>[^:\s={},\[\]]+):(?P<port>\d+)/(?P<ll>\w+)(?P<sharp>/SHARP)?")
_MERGED_NIC_RE = re.compile(r"\[(?P<vnic>\d+)\]=\{(?P<members>[^}]*)\}")
_SOCKET_IF_RE = re.compile(r"\[(?P<index>\d+)\](?P<name>[^:\s]+):(?P<addr>[^<\s]+)<[^>\s]*>")
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
_NCCL_RESULT_CODES = {1: "unhandled cuda error", 2: "system error", 3: "internal error", 4: "invalid argument", 5: "invalid usage", 6: "remote error"}

_FALLBACK_SIGNALS = (
    ("ib_disabled", re.compile(r"NCCL_IB_DISABLE set (?:by environment )?to 1")),
    ("no_ib_device", re.compile(r"NET/IB : No device found|No IB device found|NET/IB : Using \[\]|no IB devices")),
    ("ibverbs_unavailable", re.compile(r"Failed to open libibverbs|libibverbs\S* (?:not found|cannot)|ibv_fork_init\(\) failed")),
    (
        "no_external_net_plugin",
        re.compile(
            r"NET/Plugin\s*: ?(?:Could not find|No plugin found|Plugin load returned|"
            r"Failed to find ncclNetPlugin)"
        ),
    ),
    # CollNet (SHARP) is optional: NCCL prints the WARN and goes on over the point-to-point network
    # (src/transport.cc ncclTransportCollNetCheck: "Cannot initialize CollNet, using point-to-point network instead")
    (
        "collnet_unavailable",
        re.compile(
            r"Cannot initialize CollNet|SHARP coll init error|SHARP group create|"
            r"CollNet.*(?:fail|error|not supported)",
            re.IGNORECASE,
        ),
    ),
    ("gdr_disabled", re.compile(r"GPU Direct RDMA Disabled")),
    ("net_not_found", re.compile(r"network .+ not found")),
)


def _net_name(raw: str) -> str:
    """``IB``/``IBext_v8`` -> ``IB``; ``Socket`` -> ``Socket``; plugins keep their name."""
    raw = raw.strip()
    if raw == "IB" or raw.startswith("IBext"):
        return "IB"
    return raw


def _new_log_result() -> NcclLog:
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

    def __init__(self) -> None:
        self.using_network: list[str] = []
        self.net_lists: list[str] = []
        self.channel_nets: list[str] = []
        self.gdr_channels = 0
        self.gdr_gpu: list[bool] = []
        self.gdr_hca: list[bool] = []
        self.nic_speeds: dict[str, float] = {}
        self.error_chain: list[tuple[str, int]] = []
        self.fatal_lines: list[str] = []
        self.complete_ranks: set[int] = set()
        self.start_ranks: set[int] = set()
        self.last_warn_noise = False
        self.fallback_chain: list[tuple[str, int]] = []
        self.hint_nets: list[str] = []


# Issue 38 class 2: the network named in another place than the ``Using`` lines. A WARN or INFO
# line printed by NCCL's IB or socket transport (``transport/net_ib.cc:1296 NCCL WARN NET/IB :
# Got completion ...``: the file is the transport's source) or tagged ``NET/IB :`` / ``NET/Socket :``
# names the network in use; lowest in precedence (docs/parsers.md). ``NET/Plugin`` lines (loading
# a plugin, or not finding one) name no network in use.
_TRANSPORT_HINT_RE = re.compile(
    r"(?:\b(?:transport/)?(?P<file>net_ib|net_socket)\.cc:\d+)|"
    r"(?:^|\s)NET/(?P<net>IB|Socket|OFI)(?:\s*:|\s)"
)
# aws-ofi-nccl tags its lines NET/OFI; NCCL names that plugin's network "AWS Libfabric"
# ("Using network AWS Libfabric", the published CSCS and p4d logs)
_HINT_NETS = {"net_ib": "IB", "net_socket": "Socket", "OFI": "AWS Libfabric"}


def _net_device(match: re.Match[str], vnic: Optional[int] = None) -> dict[str, Any]:
    device: dict[str, Any] = {
        "index": int(match.group("index")),
        "device": match.group("name"),
        "port": int(match.group("port")),
        "link_layer": match.group("ll"),
    }
    if match.group("sharp"):
        device["sharp"] = True
    if vnic is not None:
        device["vnic"] = vnic
    return device


def _net_devices(listing: str) -> list[dict[str, Any]]:
    """``[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE`` or merged ``[0]={[0] mlx5_2:1/RoCE, [1] ..}`` -> devices."""
    merged = list(_MERGED_NIC_RE.finditer(listing))
    if merged:
        return [_net_device(member, int(group.group("vnic"))) for group in merged for member in _NET_DEVICE_RE.finditer(group.group("members"))]
    return [_net_device(match) for match in _NET_DEVICE_RE.finditer(listing)]


def _handle_net_using(message: str, result: NcclLog, state: _LogState) -> bool:
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
        result["socket_interfaces"] = [
            {"index": int(m.group("index")), "interface": m.group("name"), "address": m.group("addr")} for m in _SOCKET_IF_RE.finditer(listing)
        ]
    if oob and not result["oob_interface"]:
        result["oob_interface"] = oob.split(":")[0].strip()
    return True


def _handle_info(message: str, result: NcclLog, state: _LogState) -> None:
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
        else:
            state.start_ranks.add(int(init.group("rank")))
    elif re.search(r"\bInit (?:COMPLETE|START)\b", message):
        # an init line in another shape: its rank is not counted, so say so (issue 38 class 1)
        result["warnings"].append("not read: an init line in an unknown shape: " + message)
    elif chain and chain.group("code") != "0":
        # an error return right after a fallback WARN (CollNet setup returning ncclSystemError
        # before NCCL goes on without it) belongs to that fallback, unless the run never went on
        (state.fallback_chain if state.last_warn_noise else state.error_chain).append((message, int(chain.group("code"))))
    else:
        _handle_info_misc(message, result, state)


def _handle_info_misc(message: str, result: NcclLog, state: _LogState) -> None:
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


def _resolve_transport(result: NcclLog, state: _LogState) -> None:
    """Which network NCCL used: ``Using network X`` > ``NET/X : Using`` > channel lines > NET/IB hints."""
    for evidence in (state.using_network, state.net_lists, state.channel_nets):
        if evidence:
            result["network"] = evidence[0]
            result["transport"] = _net_name(evidence[0])
            break
    else:
        if state.gdr_hca or state.nic_speeds:
            result["transport"] = "IB"
        elif state.hint_nets:
            result["transport"] = state.hint_nets[0]
            result["network"] = state.hint_nets[0]
    seen = [_net_name(n) for n in state.using_network + state.net_lists + state.channel_nets]
    result["networks_seen"] = _dedupe(seen)


def _resolve_gdr(result: NcclLog, state: _LogState) -> None:
    """GPU Direct RDMA: channel ``/GDRDMA`` suffixes first, then per-GPU, then per-HCA lines."""
    if result["net_channels"]:
        result["gdr"] = state.gdr_channels > 0
    elif state.gdr_gpu:
        result["gdr"] = any(state.gdr_gpu)
    elif state.gdr_hca:
        result["gdr"] = any(state.gdr_hca)


def _resolve_nics(result: NcclLog, state: _LogState) -> None:
    for device in result["ib_devices"]:
        if device["device"] in state.nic_speeds:
            device["speed_gbps"] = state.nic_speeds[device["device"]]
    result["num_nics"] = len(result["ib_devices"]) or len(result["socket_interfaces"]) or len(state.nic_speeds)
    result["num_channels"] = result["channels"].get("coll", result["channels"].get("rings"))
    result["init_complete"] = bool(state.complete_ranks)
    result["init_complete_ranks"] = len(state.complete_ranks)


def _resolve_fallbacks(result: NcclLog, messages: list[str]) -> None:
    """Signals that NCCL fell back from what a RoCE/IB fabric should give it."""
    for signal, pattern in _FALLBACK_SIGNALS:
        hit = next((line for line in messages if pattern.search(line)), None)
        if hit:
            result["fallbacks"].append({"signal": signal, "line": hit})
    wanted_ib = "NCCL_IB_HCA" in result["env"] or bool(result["ib_devices"])
    if result["transport"] == "Socket" and wanted_ib:
        result["fallbacks"].append({"signal": "socket_instead_of_ib", "line": "IB devices configured but NCCL used NET/Socket"})


# WARN lines that NCCL prints on runs that go on fine: a topology search
# falling back to a simpler order, an optional net/tuner/profiler plugin
# that did not load (NCCL then uses its internal IB or Socket network),
# libibverbs missing on a host that runs over sockets. They are noise unless
# the log shows nothing else went wrong AND no network was ever used.
_NOISE_WARN_RE = re.compile(
    r"falling back|Could not find a path for pattern|using point-to-point network instead|"
    r"Cannot initialize CollNet|SHARP coll init error|SHARP group create|\bCollNet\b|NCCL_COLLNET_ENABLE|"
    r"Failed to find nccl(?:Coll)?NetPlugin|Using internal (?:net(?:work)? )?plugin|"
    r"(?:NET|TUNER|PROFILER|COLLNET)/Plugin\s*:|Plugin load (?:\(\S+\) )?returned|No plugin found|"
    r"Failed to open libibverbs|libibverbs\S* (?:not found|cannot)|NET/IB : No device found|"
    r"Could not find real path|Could not find NET with id",
    re.IGNORECASE,
)
# Even with a noise word in them, these end the run.
_NEVER_NOISE_RE = re.compile(
    r"Failed to initialize any|network .+ not found|Cuda failure|"
    r"unhandled|Call to \S+ failed|Got completion|Connection refused",
    re.IGNORECASE,
)


def _is_noise(warning: str) -> bool:
    return bool(_NOISE_WARN_RE.search(warning)) and not _NEVER_NOISE_RE.search(warning)


def is_fallback_warning(warning: str) -> bool:
    """A WARN of an optional feature that NCCL falls back from (CollNet/SHARP, an external net
    plugin, a topology search order): not by itself the cause of a failed job."""
    return _is_noise(warning)


def _resolve_error(result: NcclLog, state: _LogState) -> None:
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
    stuck = sorted(state.start_ranks - state.complete_ranks)
    if state.fallback_chain and not (result["init_complete"] and not stuck):
        state.error_chain = state.fallback_chain + state.error_chain  # the fallback did not let it go on
    result["ranks_without_init_complete"] = stuck if result["init_complete"] else []
    if result["init_complete"] and stuck and not fatal_warns and not state.fatal_lines and not state.error_chain:
        result["error"] = "rank(s) %s printed Init START but never Init COMPLETE" % ", ".join(str(r) for r in stuck)
        return
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
        known = re.search(r"unhandled (?:system|cuda) error|internal error|invalid usage|remote error", " ".join(state.fatal_lines))
        result["error_code"] = known.group(0) if known else None


def _collect_log_lines(text: Optional[str], result: NcclLog, state: _LogState) -> list[str]:
    """Walk the lines: INFO/WARN messages (re-joining wrapped WARN lines) and non-NCCL failures."""
    messages: list[str] = []
    last_warn: Optional[int] = None
    for line in _lines(text):
        content = line.strip()
        if not content:
            continue
        match = _NCCL_LINE_RE.search(content)
        if match:
            message = match.group("msg").strip()
            messages.append(message)
            hint = _TRANSPORT_HINT_RE.search(content[: match.start()] + " " + message)
            if hint:  # the network named only by the line's source file or its ``NET/X :`` tag
                state.hint_nets.append(_HINT_NETS.get(hint.group("file") or hint.group("net"), hint.group("net")))
            if match.group("level") == "WARN":
                result["warnings"].append(message)
                last_warn = len(result["warnings"]) - 1
                state.last_warn_noise = _is_noise(message)
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


def parse_nccl_log(text: Optional[str]) -> NcclLog:
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
        raise ParseError("nccl", "empty output" if not (text or "").strip() else "no NCCL_DEBUG lines (NCCL INFO/WARN) in output", text)
    _resolve_transport(result, state)
    _resolve_gdr(result, state)
    _resolve_nics(result, state)
    _resolve_fallbacks(result, messages)
    _resolve_error(result, state)
    return result
