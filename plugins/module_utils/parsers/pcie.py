"""Parsers for what a host says about its PCIe tree and GPU placement.

Pure functions, stdlib only:

- ``parse_lspci(text)``: ``lspci -D -vvv`` (pciutils 3.x; with or without
  ``-D``, TAB or space indentation): per function its class, the PCIe port
  type, LnkCap/LnkSta speed and width, DevCtl MaxReadReq, the bridge's bus
  range, ACSCtl, NUMA node and kernel driver.
- ``parse_nvidia_smi_topo(text)``: ``nvidia-smi topo -m`` (R418 to R560
  layouts: NICs named by their RDMA device in the header on old drivers,
  ``NICn`` plus a "NIC Legend" on R470+, with or without the ``GPU NUMA ID``
  column, TAB- or space-separated).

Both raise ParseError on a tool's error text and return ``warnings`` for
what they read only in part.
"""

from __future__ import annotations

import re
from typing import Any, Optional, TypedDict, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, strip_ansi
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError, strip_ansi  # type: ignore[import-not-found,no-redef]

# ---------------------------------------------------------------- lspci -vvv

_HEAD_RE = re.compile(
    r"^(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])"
    r"\s+(?P<cls>[^:]+?)(?: \[[0-9a-f]{4}\])?:\s*(?P<desc>.*)$"
)
_BUS_RE = re.compile(
    r"Bus:\s*primary=(?P<p>[0-9a-fA-F]{2}),\s*secondary=(?P<s>[0-9a-fA-F]{2}),\s*"
    r"subordinate=(?P<u>[0-9a-fA-F]{2})"
)
_EXPRESS_RE = re.compile(r"Capabilities:\s*\[[0-9a-f]+\]\s*Express\s*(?:\(v\d\)\s*)?(?P<type>[A-Za-z ]+?)\s*(?:\(|,|$)")
_LNK_RE = re.compile(
    r"^(?P<which>LnkCap|LnkSta):\s*(?:Port #\d+,\s*)?Speed (?P<speed>[\d.]+GT/s|unknown)"
    r"(?P<sdown> \(downgraded\))?(?: \(ok\))?,\s*Width x(?P<width>\d+)(?P<wdown> \(downgraded\))?"
)
_MRR_RE = re.compile(r"MaxReadReq (?P<mrr>\d+) bytes")
_ACS_RE = re.compile(r"^ACSCtl:\s*(?P<flags>.*)$")
_ERRORS = ("Cannot find any working access method", "pcilib: Cannot open", "lspci: Unable to", "command not found", "No such file or directory")


class Lspci(TypedDict):
    """``parse_lspci``: per address the fields read (an open set, see the function) and the warnings."""

    devices: dict[str, dict[str, Any]]
    warnings: list[str]


class GpuAffinity(TypedDict):
    cpu: Optional[str]
    numa: Optional[int]


class NvidiaSmiTopo(TypedDict):
    """``parse_nvidia_smi_topo``."""

    devices: list[str]
    links: dict[str, dict[str, str]]
    affinity: dict[str, GpuAffinity]
    nic_names: dict[str, str]
    other_columns: dict[str, list[str]]
    warnings: list[str]


def pci_address(text: Optional[str]) -> Optional[str]:
    """'41:00.0', '0000:41:00.0' or nvidia-smi's '00000000:41:00.0' -> '0000:41:00.0' (lower case)."""
    m = re.fullmatch(r"\s*(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\s*", text or "")
    if not m:
        return None
    dom = int(m.group(1) or "0", 16)
    return f"{dom:04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}".lower()


GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}  # PCIe generation -> GT/s per lane


def gen_of(speed_gts: Optional[float]) -> Optional[int]:
    """PCIe generation of a link speed in GT/s (2.5 -> 1 ... 64 -> 6); None if unknown."""
    return {v: k for k, v in GTS.items()}.get(speed_gts) if speed_gts is not None else None


def _flags(text: str) -> dict[str, bool]:
    return {m.group(1): m.group(2) == "+" for m in re.finditer(r"([A-Za-z][A-Za-z0-9]*)([+-])", text)}


def parse_lspci(text: object) -> Lspci:
    """``lspci -D -vvv`` -> ``{"devices": {address: {...}}, "warnings": [...]}``.

    Per device: ``address``, ``class`` ("PCI bridge", "Ethernet controller",
    "Infiniband controller", "3D controller" ...), ``description``,
    ``port_type`` ("Endpoint", "Root Port", "Upstream Port", "Downstream
    Port" ...), ``lnkcap``/``lnksta`` ``{"speed_gts", "gen", "width"}``
    (LnkSta also ``downgraded``), ``max_read_req`` (bytes), ``bus``
    ``{"primary", "secondary", "subordinate"}`` (bridges, ints), ``acs_ctl``
    ``{flag: bool}``, ``numa_node``, ``driver``, and ``other``: every detail line none of these
    reads, as printed (nothing lspci prints is dropped). A function whose
    capabilities lspci could not read (not root: ``<access denied>``) is
    named in ``warnings``.
    """
    if not isinstance(text, str):
        raise ParseError("lspci", f"output must be text, not {type(text).__name__}")
    devices: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    cur: Optional[dict[str, Any]] = None
    denied: list[str] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if not raw[:1].isspace():
            m = _HEAD_RE.match(line)
            if not m:
                if any(e in line for e in _ERRORS):
                    raise ParseError("lspci", f"line {n}: {line.strip()}", text)
                raise ParseError("lspci", f"line {n}: not a device header: {line.strip()[:120]!r}", text)
            # the header matched an address, so it reads as one
            addr = cast(str, pci_address(f"{m.group('dom') or '0000'}:{m.group('bus')}:{m.group('dev')}.{m.group('fn')}"))
            cur = {"address": addr, "class": m.group("cls").strip(), "description": m.group("desc").strip()}
            devices[addr] = cur
            continue
        if cur is None:
            raise ParseError("lspci", f"line {n}: detail line before any device header: {line.strip()[:120]!r}", text)
        s = line.strip()
        if s.startswith("NUMA node:"):
            v = s.split(":", 1)[1].strip()
            cur["numa_node"] = int(v) if re.fullmatch(r"-?\d+", v) else None
            if cur["numa_node"] is None:
                warnings.append(f"line {n}: {cur['address']}: NUMA node not a number: {v!r}")
        elif s.startswith("Kernel driver in use:"):
            cur["driver"] = s.split(":", 1)[1].strip()
        elif "<access denied>" in s:
            denied.append(cur["address"])
        elif m := _BUS_RE.search(s):
            cur["bus"] = {"primary": int(m.group("p"), 16), "secondary": int(m.group("s"), 16), "subordinate": int(m.group("u"), 16)}
        elif m := _EXPRESS_RE.search(s):
            cur["port_type"] = m.group("type").strip()
        elif m := _LNK_RE.match(s):
            speed = None if m.group("speed") == "unknown" else float(m.group("speed")[:-4])
            link: dict[str, Any] = {"speed_gts": speed, "gen": gen_of(speed), "width": int(m.group("width"))}
            if m.group("which") == "LnkSta":
                link["downgraded"] = bool(m.group("sdown") or m.group("wdown"))
            cur[m.group("which").lower()] = link
        elif s.startswith(("LnkCap:", "LnkSta:")):
            warnings.append(f"line {n}: {cur['address']}: link line not understood: {s[:100]!r}")
        elif m := _ACS_RE.match(s):
            cur["acs_ctl"] = _flags(m.group("flags"))
        elif (m := _MRR_RE.search(s)) and "max_read_req" not in cur:
            cur["max_read_req"] = int(m.group("mrr"))
        else:  # the many capability lines linerate does not use: kept as printed, never dropped (issue 38)
            cur.setdefault("other", []).append(s)
    if not devices:
        raise ParseError("lspci", "no PCI device in the output", text)
    if denied:
        warnings.append("capabilities not readable (lspci needs root) for: " + ", ".join(sorted(set(denied))))
    return {"devices": devices, "warnings": warnings}


def bridges_above(devices: dict[str, dict[str, Any]], address: str) -> list[dict[str, Any]]:
    """The bridges whose secondary..subordinate bus range holds ``address``'s bus, nearest last."""
    dom, bus = address[:4], int(address[5:7], 16)
    above = [d for a, d in devices.items() if a[:4] == dom and d.get("bus") and d["bus"]["secondary"] <= bus <= d["bus"]["subordinate"]]
    return sorted(above, key=lambda d: d["bus"]["subordinate"] - d["bus"]["secondary"], reverse=True)


def upstream_port(devices: dict[str, dict[str, Any]], address: str) -> Optional[dict[str, Any]]:
    """The port directly above ``address`` - the other end of its PCIe link (its slot): the bridge whose
    secondary bus is ``address``'s bus (a root port or a switch downstream port). None when lspci did not list it."""
    dom, bus = address[:4], int(address[5:7], 16)
    return next((d for a, d in sorted(devices.items()) if a[:4] == dom and d.get("bus") and d["bus"]["secondary"] == bus), None)


def path_between(devices: dict[str, dict[str, Any]], a: str, b: str) -> list[dict[str, Any]]:
    """The bridges on the PCIe path between functions ``a`` and ``b`` below their common ancestor.

    Peer-to-peer traffic between them crosses these ports; ACS redirection on
    any of them sends it up to the root complex. Functions under different
    root ports share no bridge: their whole chains are on the path.
    """
    up_a = {d["address"]: d for d in bridges_above(devices, a)}
    up_b = {d["address"]: d for d in bridges_above(devices, b)}
    return [up_a.get(x) or up_b[x] for x in sorted(set(up_a) ^ set(up_b))]


# ---------------------------------------------------------------- nvidia-smi topo -m

LINK_RANK = {"X": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}
_DEV_RE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|mlx5_bond_\d+)$")
_LINK_RE = re.compile(r"^(X|PIX|PXB|PHB|NODE|SYS|SOC|PXN|NV\d+)$")
_SMI_ERRORS = ("NVIDIA-SMI has failed", "No devices were found", "couldn't communicate with the NVIDIA driver", "Invalid combination of input arguments")


def parse_nvidia_smi_topo(text: object) -> NvidiaSmiTopo:
    """``nvidia-smi topo -m`` -> ``{"devices", "links", "affinity", "nic_names", "warnings"}``.

    ``devices``: the matrix's column names in order (``GPU0`` ..., ``NIC0``
    ... or, on old drivers, ``mlx5_0`` ...); ``links[a][b]``: the cell (``X``,
    ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS``, ``NV18`` ...);
    ``affinity[gpu]``: ``{"cpu", "numa"}`` (numa None for ``N/A``);
    ``nic_names``: ``{"NIC0": "mlx5_0"}`` from the NIC Legend (old layouts:
    the column name itself); ``other_columns``: ``{gpu: [cells]}`` printed after NUMA Affinity
    (``GPU NUMA ID``), as printed.
    """
    if not isinstance(text, str):
        raise ParseError("nvidia-smi", f"output must be text, not {type(text).__name__}")
    text = strip_ansi(text)  # the header is underlined with terminal escapes, even into a file
    for e in _SMI_ERRORS:
        if e in text:
            line = next(x for x in text.splitlines() if e in x)
            raise ParseError("nvidia-smi", line.strip(), text)
    lines = text.splitlines()
    head_at = next((i for i, x in enumerate(lines) if re.match(r"^\s+GPU0(\s|$)", x)), None)
    if head_at is None:
        raise ParseError("nvidia-smi", "no topology matrix (a header line starting with GPU0)", text)
    devices = [t for t in lines[head_at].split() if _DEV_RE.match(t)]
    links: dict[str, dict[str, str]] = {}
    affinity: dict[str, GpuAffinity] = {}
    nic_names: dict[str, str] = {}
    warnings: list[str] = []
    extra: dict[str, list[str]] = {}
    in_legend = False
    for n, line in enumerate(lines[head_at + 1 :], head_at + 2):
        s = line.strip()
        if not s:
            continue
        if s.startswith(("Legend", "NIC Legend")):
            in_legend = True
            continue
        if in_legend:
            m = re.match(r"^(NIC\d+):\s*(\S+)$", s)
            if m:
                nic_names[m.group(1)] = m.group(2)
            elif re.match(r"^[\w-]+\s*:\s*\S+$", s) and not re.match(r"^(?:X|SYS|NODE|PHB|PXB|PIX|NV#)\s*=", s):
                # a NIC Legend entry that does not name a NICn column: named (issue 38)
                warnings.append(f"line {n}: a NIC Legend entry for no NICn column: {s!r}")
            continue
        tokens = s.split()
        if tokens[0] not in devices:
            raise ParseError("nvidia-smi", f"line {n}: row {tokens[0]!r} is not a device of the header", text)
        cells = tokens[1 : 1 + len(devices)]
        if len(cells) < len(devices) or not all(_LINK_RE.match(c) for c in cells):
            raise ParseError("nvidia-smi", f"line {n}: {tokens[0]}: expected {len(devices)} link cells, got {' '.join(cells)!r}", text)
        links[tokens[0]] = dict(zip(devices, cells))
        rest = tokens[1 + len(devices) :]
        if tokens[0].startswith("GPU"):
            numa = rest[1] if len(rest) > 1 else None
            affinity[tokens[0]] = {"cpu": rest[0] if rest else None, "numa": int(numa) if numa and re.fullmatch(r"\d+", numa) else None}
            if numa not in (None, "N/A") and affinity[tokens[0]]["numa"] is None:
                warnings.append(f"line {n}: {tokens[0]}: NUMA affinity not a number: {numa!r}")
            if rest[2:]:  # columns after NUMA Affinity (GPU NUMA ID, ...): kept as printed
                extra[tokens[0]] = rest[2:]
    missing = [d for d in devices if d not in links]
    if missing:
        warnings.append("matrix rows missing for: " + ", ".join(missing))
    for d in devices:
        if not d.startswith(("GPU", "NIC")):
            nic_names.setdefault(d, d)
    unnamed = [d for d in devices if d.startswith("NIC") and d not in nic_names]
    if unnamed:
        warnings.append("no NIC Legend entry for: " + ", ".join(unnamed))
    return {"devices": devices, "links": links, "affinity": affinity, "nic_names": nic_names, "other_columns": extra, "warnings": warnings}


def nearest_gpus(topo: NvidiaSmiTopo) -> dict[str, list[tuple[int, str]]]:
    """Per RDMA device: the GPUs sorted nearest first, ``[(gpu index, link)]`` (PIX < PXB < PHB < NODE < SYS)."""
    out: dict[str, list[tuple[int, str]]] = {}
    gpus = [d for d in topo["devices"] if d.startswith("GPU")]
    for col in topo["devices"]:
        if col.startswith("GPU"):
            continue
        dev = topo["nic_names"].get(col, col)
        cells = [(int(g[3:]), (topo["links"].get(g) or {}).get(col)) for g in gpus]
        pairs = [(g, lk) for g, lk in cells if lk]
        out[dev] = sorted(pairs, key=lambda p: (LINK_RANK.get(p[1], 9), p[0]))
    return out


def nearest_nics(topo: NvidiaSmiTopo) -> dict[int, list[tuple[str, str]]]:
    """Per GPU index: the RDMA devices sorted nearest first, ``[(device, link)]`` (PIX < PXB < PHB < NODE <
    SYS, then the matrix's NIC order): the rail a rank on that GPU should use."""
    nics = [d for d in topo["devices"] if not d.startswith("GPU")]
    out: dict[int, list[tuple[str, str]]] = {}
    for g in (d for d in topo["devices"] if d.startswith("GPU")):
        row = topo["links"].get(g) or {}
        pairs = [(topo["nic_names"].get(n, n), row[n], k) for k, n in enumerate(nics) if row.get(n)]
        out[int(g[3:])] = [(d, lk) for d, lk, _k in sorted(pairs, key=lambda p: (LINK_RANK.get(p[1], 9), p[2]))]
    return out
