"""Parsers for infiniband-diags output: sminfo, ibnetdiscover, iblinkinfo,
smpquery pkeys (stdlib only, importable on its own).

Every parser raises ParseError on error output (no SM, no port, umad
failure, tool missing) or on text that is not the tool's format; none of
them returns an empty success.
"""

from __future__ import annotations

import re
from typing import Any, Optional, TypedDict, Union

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone (corpus checker, unit tests)
    from common import ParseError  # type: ignore[import-not-found,no-redef]

# SM states as infiniband-diags' sminfo.c names them.
SM_STATES = ("SMINFO_NOTACT", "SMINFO_DISCOVER", "SMINFO_STANDBY", "SMINFO_MASTER")

# Per-lane signalling rate as the tools print it (Gbps) -> nominal lane rate
# used to compute the nominal link speed (width x lane), and the IB name.
LANE_RATES = {
    "2.5": (2.5, "SDR"),
    "5.0": (5.0, "DDR"),
    "10.0": (10.0, "QDR"),
    "10.3125": (10.0, "FDR10"),
    "14.0625": (14.0, "FDR"),
    "25.78125": (25.0, "EDR"),
    "53.125": (50.0, "HDR"),
    "106.25": (100.0, "NDR"),
    "212.5": (200.0, "XDR"),
}
SPEED_NAMES = {name: nominal for nominal, name in LANE_RATES.values()}

_ERROR_MARKERS = (
    "ibwarn:",
    "ibpanic:",
    "iberror:",
    "ibError:",
    "command not found",
    "No such file or directory",
    "Permission denied",
    "can't open UMAD port",
    "Failed to open",
    "umad_open_port",
)


class SmInfo(TypedDict):
    """``parse_sminfo``: the SM's LID, GUID, activity, priority and state (None: an older layout)."""

    lid: int
    guid: str
    activity_count: int
    priority: int
    state: Optional[int]
    state_name: Optional[str]
    master: Optional[bool]
    warnings: list[str]


class _IbnetPortBase(TypedDict):
    peer_guid: Optional[str]
    peer_id: str
    peer_port: int
    peer_port_guid: Optional[str]
    port_guid: Optional[str]
    peer_desc: Optional[str]
    width: Optional[int]
    speed: Optional[str]


class IbnetPort(_IbnetPortBase, total=False):
    """One port of an ibnetdiscover node; the optional keys only where the line printed them."""

    lid: int
    peer_lid: int
    unread: str
    ext_port: int
    peer_ext_port: int


class _IbnetNodeBase(TypedDict):
    guid: str
    type: str
    desc: str
    nports: int
    ports: dict[int, IbnetPort]


class IbnetNode(_IbnetNodeBase, total=False):
    """One ibnetdiscover node (``switch``, ``ca``, ``router``)."""

    lid: int
    lmc: int
    enhanced_port0: bool
    chassis: int


class IbnetLink(TypedDict):
    """Each cabled pair once."""

    a_guid: str
    a_port: int
    b_guid: Optional[str]
    b_port: int
    width: Optional[int]
    speed: Optional[str]


class Ibnetdiscover(TypedDict):
    """``parse_ibnetdiscover``."""

    nodes: dict[str, IbnetNode]
    links: list[IbnetLink]
    warnings: list[str]


class IblinkPort(TypedDict):
    """One port of ``parse_iblinkinfo``: its node's fields and the link's."""

    node_type: str
    node_guid: Optional[str]
    node_desc: str
    port_guid: Optional[str]
    lid: int
    port: int
    width: Optional[int]
    lane_gbps: Optional[float]
    speed_gbps: Optional[float]
    state: str
    phys_state: str
    peer_lid: Optional[int]
    peer_port: Optional[int]
    peer_desc: str
    could_be: str


class SmpqueryPkeys(TypedDict):
    """``parse_smpquery_pkeys``: the table's capacity and its non-zero entries."""

    capacity: int
    pkeys: list[int]


def _check_error(tool: str, text: Optional[str]) -> str:
    """``text``, or ParseError when it is empty or holds an error line."""
    if text is None or not text.strip():
        raise ParseError(tool, "empty output", text)
    for line in text.splitlines():
        s = line.strip()
        if any(m in s for m in _ERROR_MARKERS):
            raise ParseError(tool, "error output: " + s, text)
    return text


def norm_guid(value: object) -> str:
    """'0xA088C2...' / 'a088c2...' -> '0xa088c2...' (16 hex digits)."""
    s = str(value).strip().lower()
    if s.startswith("0x"):
        s = s[2:]
    if not re.fullmatch(r"[0-9a-f]{1,16}", s):
        raise ParseError("ibdiag", f"not a GUID: {value!r}")
    return "0x" + s.rjust(16, "0")


# --------------------------------------------------------------------- sminfo
# infiniband-diags sminfo.c: "sminfo: sm lid %d sm guid 0x%" PRIx64 ", activity count %u priority %d
# state %d %s". Older layouts still in the field (OFED 1.x, the OFED 1.5 README's example) print the
# LID in hex (``sm lid 0x1``) and no state field (issue 38 class 4).
_SMINFO_RE = re.compile(
    r"^sminfo: sm lid (?P<lid>0x[0-9a-fA-F]+|\d+) sm guid (?P<guid>0x[0-9a-fA-F]+), "
    r"activity count (?P<act>\d+) priority (?P<prio>\d+)"
    r"(?: state (?P<state>\d+) (?P<name>\S+))?\s*$"
)


def parse_sminfo(text: Optional[str]) -> SmInfo:
    """One sminfo line -> {lid, guid, activity_count, priority, state, state_name, master, warnings}.

    The current layout and the older one (hex LID, no ``state`` field): there ``state``,
    ``state_name`` and ``master`` are None and ``warnings`` says the SM's state is unknown. Any other
    non-empty line is a ``warnings`` entry."""
    text = _check_error("sminfo", text)
    found: Optional[SmInfo] = None
    warnings: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        m = _SMINFO_RE.match(line.strip())
        if m and found is None:
            found = {
                "lid": int(m["lid"], 0),
                "guid": norm_guid(m["guid"]),
                "activity_count": int(m["act"]),
                "priority": int(m["prio"]),
                "state": int(m["state"]) if m["state"] else None,
                "state_name": m["name"],
                "master": m["name"] == "SMINFO_MASTER" if m["name"] else None,
                "warnings": [],
            }
            if not m["name"]:
                warnings.append("this sminfo prints no state field (an older infiniband-diags): whether the SM is MASTER is unknown")
        elif line.strip():
            warnings.append("line %d: not read: %r" % (number, line.strip()))
    if found is None:
        raise ParseError("sminfo", "no 'sminfo: sm lid ...' line", text)
    found["warnings"] = warnings
    return found


# -------------------------------------------------------------- ibnetdiscover
_ND_NODE_RE = re.compile(
    r'^(?P<type>Switch|Ca|Rt)\s+(?P<nports>\d+)\s+"(?P<id>[^"]+)"\s*'
    r'(?:#\s*"(?P<desc>(?:[^"\\]|\\.)*)"(?P<rest>.*))?$'
)
_ND_PORT_RE = re.compile(
    r"^\[(?P<port>\d+)\](?:\[ext (?P<ext>\d+)\])?(?:\((?P<pguid>[0-9a-fA-F]+)\))?\s+"
    r'"(?P<rid>[^"]+)"\[(?P<rport>\d+)\](?:\[ext (?P<rext>\d+)\])?\s*(?:\((?P<rguid>[0-9a-fA-F]+)\))?\s*'
    r"(?:#\s*(?P<comment>.*))?$"
)
# ibnetdiscover -g (grouped): "Chassis 1 (guid 0x...)", "Non-Chassis Nodes",
# "Hostname: <name>" (Xsigo chassis), and "# Chassis N" after sysimgguid=.
_ND_CHASSIS_RE = re.compile(r"^Chassis (?P<num>\d+)(?: \(guid (?P<guid>0x[0-9a-fA-F]+)\))?$")
_ND_IDS_CHASSIS_RE = re.compile(r"#\s*Chassis (?P<num>\d+)")
_ND_RATE_RE = re.compile(r"(?P<width>\d+)x(?P<speed>[A-Z0-9]+)\s*$")


def _guid_from_id(nid: str) -> Optional[str]:
    # ibnetdiscover names nodes "S-<guid>", "H-<guid>", "R-<guid>"
    m = re.fullmatch(r"[SHR]-([0-9a-fA-F]{1,16})", nid)
    return norm_guid(m.group(1)) if m else None


def _parse_nd_comment(comment: Optional[str]) -> dict[str, Any]:
    """'"node3 mlx5_0" lid 4 4xSDR' or 'lid 5 lmc 0 "leaf2" lid 6 1xSDR'."""
    out: dict[str, Any] = {}
    if not comment:
        return out
    m = _ND_RATE_RE.search(comment)
    if m:
        out["width"] = int(m["width"])
        out["speed"] = m["speed"]
        comment = comment[: m.start()]
    m = re.search(r'"((?:[^"\\]|\\.)*)"\s*lid\s+(\d+)', comment)
    if m:
        out["peer_desc"] = m.group(1)
        out["peer_lid"] = int(m.group(2))
        head = comment[: m.start()]
    else:
        head = comment
    m = re.search(r"\blid\s+(\d+)(?:\s+lmc\s+(\d+))?", head)
    if m:
        out["lid"] = int(m.group(1))
        if m.group(2) is not None:
            out["lmc"] = int(m.group(2))
        head = head[: m.start()] + head[m.end() :]
    if head.strip():  # words of the comment none of these patterns read: kept, not dropped (issue 38)
        out["unread"] = head.strip()
    return out


# libibmad / libibnetdisc report a failed SMP query on stderr as '<source>.c:<line>; <message>'
# ('src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110;
# Connection timed out') and go on: the topology is still printed, but what lies behind that
# directed route may be missing from it.
_ND_LIBDIAG_RE = re.compile(r"^[\w./-]+\.c:\d+;\s*(?P<msg>.+)$")


def parse_ibnetdiscover(text: Optional[str]) -> Ibnetdiscover:
    """ibnetdiscover topology (plain or ``-g`` grouped) -> {"nodes": {guid: node}, "links": [link]}.

    Grouped output (``-g``) adds ``Chassis N (guid 0x..)`` / ``Non-Chassis
    Nodes`` headings, ``# Spine Nodes`` style comments, ``# Chassis N`` after
    ``sysimgguid=`` and ``[ext N]`` external port numbers: nodes of a chassis
    carry ``chassis`` (its number), ports ``ext_port`` / ``peer_ext_port``.

    node: {guid, type ("switch"|"ca"|"router"), desc, nports, lid, ports:
    {n: {peer_guid, peer_port, peer_desc, port_guid, width, speed, lid}}}.
    links: each cabled pair once, as {a_guid, a_port, b_guid, b_port,
    width, speed}.
    warnings: one line per failed query the tool reported
    (``src/query_smp.c:195; ... Connection timed out``): the rest of the
    topology is read, but nodes behind that route may be missing.
    """
    text = _check_error("ibnetdiscover", text)
    nodes: dict[str, IbnetNode] = {}
    cur: Optional[IbnetNode] = None
    saw_header = False
    chassis: Optional[int] = None  # the -g section we are in (None: ungrouped or Non-Chassis)
    node_chassis: Optional[int] = None  # "# Chassis N" on the sysimgguid= line of the next node
    warnings: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            cur = None
            continue
        if line.startswith("#"):
            if "Topology file" in line:
                saw_header = True
            continue
        ch = _ND_CHASSIS_RE.match(line)
        if ch:
            chassis, cur = int(ch["num"]), None
            continue
        if line == "Non-Chassis Nodes":
            chassis, cur = None, None
            continue
        if line.startswith("Hostname: ") and cur is None:
            continue
        m = _ND_NODE_RE.match(line)
        if m:
            cur = _nd_node(m, text, node_chassis if node_chassis is not None else chassis)
            node_chassis = None
            nodes[cur["guid"]] = cur
            continue
        if line.startswith("["):
            if cur is None:
                raise ParseError("ibnetdiscover", f"port line outside a node: {line}", text)
            number, port = _nd_port(line, text, warnings)
            if "lid" in port:
                cur.setdefault("lid", port["lid"])
            cur["ports"][number] = port
            continue
        # vendid=, devid=, sysimgguid=, switchguid=, caguid= header lines
        if re.match(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=", line):
            ids_chassis = _ND_IDS_CHASSIS_RE.search(line)
            if ids_chassis:
                node_chassis = int(ids_chassis["num"])
            continue
        diag = _ND_LIBDIAG_RE.match(line)
        if diag:
            warnings.append(f"ibnetdiscover reported a failed query ({diag['msg']}): nodes behind that route may be missing from the topology")
            continue
        raise ParseError("ibnetdiscover", f"unexpected line: {line}", text)
    if not nodes:
        raise ParseError("ibnetdiscover", "no nodes discovered" if saw_header else "not ibnetdiscover output", text)
    return {"nodes": nodes, "links": _nd_links(nodes), "warnings": warnings}


def _nd_node(m: "re.Match[str]", text: str, chassis: Optional[int]) -> IbnetNode:
    """The node a ``Switch``/``Ca``/``Rt`` line opens (``chassis``: the -g chassis it is in, if any)."""
    guid = _guid_from_id(m["id"])
    if guid is None:
        raise ParseError("ibnetdiscover", f"node id without a GUID: {m['id']}", text)
    ntype = {"Switch": "switch", "Ca": "ca", "Rt": "router"}[m["type"]]
    rest = m["rest"] or ""
    node: IbnetNode = {"guid": guid, "type": ntype, "desc": m["desc"] or "", "nports": int(m["nports"]), "ports": {}}
    lm = re.search(r"\blid\s+(\d+)(?:\s+lmc\s+(\d+))?", rest)
    if lm:
        node["lid"] = int(lm.group(1))
        node["lmc"] = int(lm.group(2) or 0)
    if ntype == "switch":
        node["enhanced_port0"] = "enhanced port 0" in rest
    if chassis is not None:
        node["chassis"] = chassis
    return node


def _nd_port(line: str, text: str, warnings: list[str]) -> tuple[int, IbnetPort]:
    """(port number, port) of a ``[n]`` line; comment words not read go to ``warnings``.

    switch port: ``[1] "H-..."[1](peer port guid) # "desc" lid 4 4xQDR``;
    CA port: ``[1](port guid) "S-..."[2] # lid 5 lmc 0 "desc" lid 6 4xQDR``.
    """
    pm = _ND_PORT_RE.match(line)
    if not pm:
        raise ParseError("ibnetdiscover", f"unparsable port line: {line}", text)
    info = _parse_nd_comment(pm["comment"])
    if _guid_from_id(pm["rid"]) is None:
        raise ParseError("ibnetdiscover", f"peer id without a GUID: {line}", text)
    port: IbnetPort = {
        "peer_guid": _guid_from_id(pm["rid"]),
        "peer_id": pm["rid"],
        "peer_port": int(pm["rport"]),
        "peer_port_guid": norm_guid(pm["rguid"]) if pm["rguid"] else None,
        "port_guid": norm_guid(pm["pguid"]) if pm["pguid"] else None,
        "peer_desc": info.get("peer_desc"),
        "width": info.get("width"),
        "speed": info.get("speed"),
    }
    if "lid" in info:
        port["lid"] = info["lid"]
    if "peer_lid" in info:
        port["peer_lid"] = info["peer_lid"]
    if "unread" in info:
        port["unread"] = info["unread"]
        warnings.append(f"port comment words not read: {info['unread']!r} ({line})")
    if pm["ext"]:
        port["ext_port"] = int(pm["ext"])
    if pm["rext"]:
        port["peer_ext_port"] = int(pm["rext"])
    return int(pm["port"]), port


def _nd_links(nodes: dict[str, IbnetNode]) -> list[IbnetLink]:
    """Each cabled pair of ports once, in the order the nodes and their ports were read."""
    links: list[IbnetLink] = []
    seen: set[tuple[tuple[Any, int], ...]] = set()
    for guid, node in nodes.items():
        for pnum, p in node["ports"].items():
            a, b = (guid, pnum), (p["peer_guid"], p["peer_port"])
            key = tuple(sorted([a, b]))
            if key in seen:
                continue
            seen.add(key)
            links.append({"a_guid": guid, "a_port": pnum, "b_guid": p["peer_guid"], "b_port": p["peer_port"], "width": p["width"], "speed": p["speed"]})
    return links


# ----------------------------------------------------------------- iblinkinfo
_LI_HDR_RE = re.compile(r"^(?P<type>CA|Switch|Router):\s+(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?P<desc>.*):\s*$")
_LI_PORT_RE = re.compile(
    r"^\s*(?:(?P<pguid>0x[0-9a-fA-F]+)\s+)?(?P<lid>\d+)\s+(?P<port>\d+)\[[^\]]*\]\s+"
    r"==\(\s*(?:(?P<width>\d+)X\s+(?P<speed>\d+(?:\.\d+)?)\s+Gbps\s+)?"
    r"(?P<state>[A-Za-z]+)/\s*(?P<phys>[A-Za-z]+)\s*\)==>\s*"
    r"(?:(?P<plid>\d+)\s+(?P<pport>\d+))?\[[^\]]*\]\s+\"(?P<pdesc>(?:[^\"\\]|\\.)*)\"\s*"
    r"\((?P<could>.*)\)\s*$"
)


def lane_nominal(speed: Union[str, float, None]) -> Optional[float]:
    """'2.5' (Gbps per lane, iblinkinfo) or 'SDR' (ibnetdiscover) -> nominal lane Gbps."""
    if speed is None:
        return None
    s = str(speed)
    if s in SPEED_NAMES:
        return SPEED_NAMES[s]
    if s in LANE_RATES:
        return LANE_RATES[s][0]
    try:
        return float(s)
    except ValueError:
        return None


def parse_iblinkinfo(text: Optional[str]) -> list[IblinkPort]:
    """iblinkinfo -> list of ports: {node_type, node_guid (switches; CAs print
    their port GUID instead), node_desc, port_guid,
    lid, port, width, lane_gbps, speed_gbps (nominal width x lane), state,
    phys_state, peer_lid, peer_port, peer_desc, could_be}."""
    text = _check_error("iblinkinfo", text)
    out: list[IblinkPort] = []
    node: Optional[dict[str, Any]] = None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        h = _LI_HDR_RE.match(raw.strip())
        if h:
            node = {
                "node_type": {"CA": "ca", "Switch": "switch", "Router": "router"}[h["type"]],
                "node_guid": norm_guid(h["guid"]) if h["guid"] else None,
                "node_desc": h["desc"],
            }
            continue
        m = _LI_PORT_RE.match(raw)
        if not m:
            raise ParseError("iblinkinfo", f"unparsable line: {raw.strip()}", text)
        if node is None:
            raise ParseError("iblinkinfo", "port line before any node header", text)
        width = int(m["width"]) if m["width"] else None
        lane = lane_nominal(m["speed"]) if m["speed"] else None
        entry: IblinkPort = {
            **node,  # type: ignore[typeddict-item]  # the node's three keys and these
            **{
                "port_guid": norm_guid(m["pguid"]) if m["pguid"] else None,
                "lid": int(m["lid"]),
                "port": int(m["port"]),
                "width": width,
                "lane_gbps": float(m["speed"]) if m["speed"] else None,
                "speed_gbps": (width * lane) if (width and lane) else None,
                "state": m["state"],
                "phys_state": m["phys"],
                "peer_lid": int(m["plid"]) if m["plid"] else None,
                "peer_port": int(m["pport"]) if m["pport"] else None,
                "peer_desc": m["pdesc"],
                "could_be": m["could"].strip(),
            },
        }
        out.append(entry)
    if not out:
        raise ParseError("iblinkinfo", "no ports in output", text)
    return out


# ------------------------------------------------------------ smpquery pkeys
_PK_ROW_RE = re.compile(r"^\s*(\d+):((?:\s+0x[0-9a-fA-F]{4})+)\s*$")


def parse_smpquery_pkeys(text: Optional[str]) -> SmpqueryPkeys:
    """'smpquery pkeys <lid> [port]' -> {"capacity": n, "pkeys": [int, ...]}
    (non-zero entries, membership bit 0x8000 kept)."""
    text = _check_error("smpquery", text)
    pkeys: list[int] = []
    rows = 0
    capacity: Optional[int] = None
    for line in text.splitlines():
        m = _PK_ROW_RE.match(line)
        if m:
            rows += 1
            pkeys.extend(int(v, 16) for v in m.group(2).split() if int(v, 16) & 0x7FFF)
            continue
        c = re.match(r"^\s*(\d+) pkeys capacity for this port", line)
        if c:
            capacity = int(c.group(1))
    if not rows or capacity is None:
        raise ParseError("smpquery", "not a pkey table", text)
    return {"capacity": capacity, "pkeys": pkeys}
