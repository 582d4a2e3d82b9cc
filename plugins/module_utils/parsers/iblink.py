"""Parsers for the per-port link state tools: ``rdma link`` (iproute2) and ``ibstatus`` (infiniband-diags).

Pure functions, stdlib only, importable on their own (the shared text helpers are in _ibtext.py,
beside the inventory parsers of ibtools.py). Every parser takes the tool's stdout (stderr may be
appended) and returns plain dicts/lists; on error output it raises ``ParseError`` carrying what
the tool said.
"""

from __future__ import annotations

import re
from typing import Any, Optional, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import SHELL_PROMPT_RE, ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers._ibtext import _GENERIC_ERROR_RE, _int_or_text, _lines, _raise_no_data, _read_rate
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import SHELL_PROMPT_RE, ParseError  # type: ignore[import-not-found,no-redef]

    from parsers._ibtext import _GENERIC_ERROR_RE, _int_or_text, _lines, _raise_no_data, _read_rate  # type: ignore[import-not-found,no-redef]


# --------------------------------------------------------------------------
# rdma link (iproute2)
# --------------------------------------------------------------------------

_RDMA_LINK_RE = re.compile(r"^(?:link |\d+/\d+: )(?P<device>[^/\s]+)/(?P<port>\d+):? (?P<rest>.*)$")
_RDMA_ERROR_RE = re.compile(
    r"^(?:Error|error)|Failed|command not found|Operation not supported|"
    r"No such file|Wrong device name|Permission denied"
)
_RDMA_INT_KEYS = ("lid", "sm_lid", "lmc", "netdev_index", "ifindex")
_RDMA_LINK_KEYS = ("state", "physical_state", "netdev", "netdev_index", "subnet_prefix", "lid", "sm_lid", "lmc")


class RdmaLinks(TypedDict):
    """``parse_rdma_link``: one dict per port (``device``, ``port`` and the ``key value`` words the tool
    printed: an open set, so a plain dict), and what was not read."""

    links: list[dict[str, Any]]
    warnings: list[str]


class IbStatus(TypedDict):
    """``parse_ibstatus``: one dict per port block (``device``, ``port`` and the fields it printed)."""

    ports: list[dict[str, Any]]
    warnings: list[str]


def parse_rdma_link(text: Optional[str]) -> RdmaLinks:
    """Parse ``rdma link show`` (iproute2), text or ``rdma -j link show`` JSON.

    JSON (preferred; a list of ``{"ifindex", "ifname", "port", "state",
    "physical_state", "netdev", ...}``) is recognized by its leading ``[{``.
    Text: ``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev
    ens1f0np0`` (iproute2 >= 5.x), ``1/1: mlx5_0/1: state ...`` (older), IB
    ports with ``subnet_prefix .. lid .. sm_lid .. lmc ..``; the words after
    the port are read as ``key value`` pairs, a word without a value goes to
    ``warnings`` with its line. ``-d`` output: an indented line that goes on
    with ``state ..`` belongs to the link above (older iproute2 wraps there),
    ``caps: <A, B, ...>`` (wrapped or not) gives ``caps`` as a list. JSON of
    the first layout (2017) names the port in ``ifname`` (``mlx5_0/1``);
    ``device`` is the name without it.

    Returns ``{"links": [{"device", "port", "state", "physical_state",
    "netdev", ...}], "warnings": [str]}``. Raises ParseError on error output
    (``Error: ...``, unknown device, tool missing) or output without a link.
    """
    stripped = (text or "").strip()
    if re.match(r"\[\s*[{\]]", stripped):  # not a "[root@host ~]#" prompt line
        return _rdma_link_json(stripped, text)
    links: list[dict[str, Any]] = []
    warnings: list[str] = []
    caps: Optional[list[str]] = None  # the caps list being read while a '<...' spans lines
    for number, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if _RDMA_ERROR_RE.search(line):
            raise ParseError("rdma", "line %d: %s" % (number, line), text)
        if caps is not None:
            caps.extend(_rdma_caps(line))
            caps = None if ">" in line else caps
            continue
        match = _RDMA_LINK_RE.match(line)
        if match:
            link: dict[str, Any] = {"device": match.group("device"), "port": int(match.group("port"))}
            links.append(link)
            _rdma_pairs(match.group("rest").split(), link, number, warnings)
        elif links and line.startswith("caps:"):
            # -d: "caps: <SM, TRAP, ...>", wrapped over several lines
            caps = links[-1].setdefault("caps", [])
            caps.extend(_rdma_caps(line[len("caps:") :]))
            caps = None if ">" in line else caps
        elif links and raw[:1] in (" ", "\t") and line.split()[0] in _RDMA_LINK_KEYS:
            # -d on older iproute2 wraps "state .. physical_state .." to an indented line
            _rdma_pairs(line.split(), links[-1], number, warnings)
        elif not SHELL_PROMPT_RE.match(line) and not re.match(r"^(?:sudo\s+)?rdma\b", line):
            # an echoed command or a prompt carries nothing; anything else is named (issue 38)
            warnings.append("line %d: not read: %r" % (number, line))
    if not links:
        _raise_no_data("rdma", text, "'link <dev>/<port>' line")
    return {"links": links, "warnings": warnings}


def _rdma_pairs(words: list[str], link: dict[str, Any], number: int, warnings: list[str]) -> None:
    """Read ``key value`` words into ``link``; a key without a value is a warning."""
    while words:
        key = words.pop(0)
        if not words:
            warnings.append("line %d: %r without a value" % (number, key))
            break
        value = words.pop(0)
        link[key] = int(value) if key in _RDMA_INT_KEYS and value.isdigit() else value


def _rdma_caps(fragment: str) -> list[str]:
    """Capability names of one line of ``caps: <A, B, ...>``."""
    return [word for word in re.split(r"[<>,\s]+", fragment) if word]


def _rdma_link_json(document: str, text: Optional[str]) -> RdmaLinks:
    import json

    try:
        data = json.loads(document)
    except ValueError as err:
        raise ParseError("rdma", "rdma -j link show: invalid JSON: %s" % err, text)
    if not isinstance(data, list) or not data:
        raise ParseError("rdma", "rdma -j link show: not a non-empty list of links", text)
    links: list[dict[str, Any]] = []
    for index, entry in enumerate(data):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("ifname"), str)
            or not isinstance(entry.get("port"), int)
            or isinstance(entry.get("port"), bool)
        ):
            raise ParseError("rdma", "rdma -j link show: entry %d has no ifname and port: %r" % (index, entry), text)
        device = entry["ifname"]
        # the first JSON layout (iproute2 2017) names the port too: "mlx5_0/1"
        suffix = "/%d" % entry["port"]
        if device.endswith(suffix):
            device = device[: -len(suffix)]
        link: dict[str, Any] = {"device": device, "port": entry["port"]}
        link.update({key: value for key, value in entry.items() if key not in ("ifname", "port")})
        links.append(link)
    return {"links": links, "warnings": []}


# --------------------------------------------------------------------------
# ibstatus
# --------------------------------------------------------------------------

_IBSTATUS_PORT_RE = re.compile(r"^Infiniband device '(?P<device>[^']+)' port (?P<port>\d+) status:\s*$")
_IBSTATUS_KV_RE = re.compile(r"^\s+(?P<key>[a-z_][a-z_ ]*?):\s*(?P<value>.*?)\s*$")
_IBSTATUS_FIELDS = {
    "default gid": "default_gid",
    "base lid": "base_lid",
    "sm lid": "sm_lid",
    "state": "state",
    "phys state": "physical_state",
    "rate": "rate",
    "link_layer": "link_layer",
}


def _ibstatus_value(field: str, value: str, port: dict[str, Any]) -> None:
    if field in ("base_lid", "sm_lid"):
        port[field] = int(value, 16) if re.fullmatch(r"0x[0-9a-fA-F]+", value) else _int_or_text(value)
    elif field in ("state", "physical_state"):
        # sysfs text: "4: ACTIVE", "5: LinkUp"
        match = re.fullmatch(r"(\d+):\s*(.+)", value)
        port[field] = match.group(2) if match else value
        port[field + "_code"] = int(match.group(1)) if match else None
    elif field == "rate":
        # "400 Gb/sec (4X NDR)", "56 Gb/sec (4X FDR)", "10 Gb/sec (1X QDR)"
        _read_rate(port, value, r"([\d.]+)\s*Gb/sec(?:\s*\((.*)\))?")
    else:
        port[field] = value


def parse_ibstatus(text: Optional[str]) -> IbStatus:
    """Parse ``ibstatus [dev[:port]]`` (infiniband-diags' script over sysfs) output.

    One block per port: ``Infiniband device 'mlx5_0' port 1 status:`` then
    tab-indented ``default gid``, ``base lid`` (hex), ``sm lid``, ``state``
    (``4: ACTIVE``), ``phys state`` (``5: LinkUp``), ``rate`` (``400 Gb/sec
    (4X NDR)``) and ``link_layer`` (``InfiniBand`` / ``Ethernet``). An echoed
    prompt line (``# ibstatus``) before the first block is skipped.

    Returns ``{"ports": [{"device", "port", "default_gid", "base_lid",
    "sm_lid" (ints), "state" ("ACTIVE"), "state_code" (4),
    "physical_state" ("LinkUp"), "physical_state_code" (5), "rate_gbps",
    "rate_text", "rate_note"?, "link_layer"}], "warnings": [str]}``; a line
    inside a block that is not a known field goes to ``warnings``.

    Raises ParseError on the tool's error lines (no device, no sysfs
    directory) and on output without any port block.
    """
    tool = "ibstatus"
    ports: list[dict[str, Any]] = []
    warnings: list[str] = []
    port: Optional[dict[str, Any]] = None
    errors: list[str] = []
    for number, raw in enumerate(_lines(text), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        head = _IBSTATUS_PORT_RE.match(line.strip())
        if head:
            port = {"device": head.group("device"), "port": int(head.group("port"))}
            ports.append(port)
            continue
        kv = _IBSTATUS_KV_RE.match(line) if port is not None else None
        if kv and port is not None and kv.group("key") in _IBSTATUS_FIELDS:
            _ibstatus_value(_IBSTATUS_FIELDS[kv.group("key")], kv.group("value"), port)
        elif _GENERIC_ERROR_RE.search(line) or re.search(r"\bnot found\b|No such|does not exist", line):
            errors.append(line.strip())
        elif port is None and re.match(r"^\s*\S*[#$]\s*ibstatus\b", line):
            continue  # the echoed command
        else:
            warnings.append("line %d: %r is not an ibstatus field: not read" % (number, line.strip()))
    if errors and not ports:
        raise ParseError(tool, "; ".join(errors), text)
    if not ports:
        _raise_no_data(tool, text, "'Infiniband device ... port N status:' block")
    warnings += ["tool error: %s" % e for e in errors]
    return {"ports": ports, "warnings": warnings}
