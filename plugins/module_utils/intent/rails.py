"""Generate a host's ``rdma_ports`` from a rail pattern (stdlib and the intent's problems.py only).

A rail-optimised cluster cables rail r of every node to the leaf of rail r
(per scalable unit), node n to port n of that leaf, and gives rail r its own
subnet. ``expand(node, plan)`` writes that once for every host, so a
256-node inventory is a few lines. The result is ordinary ``rdma_ports``
and goes through the same validation as entries written by hand.

Placeholders in the patterns (``{name}`` or ``{name:03d}``):
  rail   0-based rail index         rail1  1-based rail index
  node   the node's number          su     0-based scalable unit (nodes_per_leaf)
  leaf   0-based leaf of the rail   leaf1  1-based leaf of the rail (rail // rails_per_leaf)
  port   the leaf port of the node's rail:
         port_base + port_offsets[leaf] + slot * port_step, where slot is the node's
         position in its unit times rails_per_leaf plus the rail's place on its leaf
         (interleaved: node 1 rails 0,1 on ports 1,2; node 2 on 3,4), or, with
         rail_port_offset, position * port_step + place * rail_port_offset (blocks:
         rail 0 on ports 1..32, rail 1 from 1 + rail_port_offset).

Several rails per leaf (rails_per_leaf, e.g. 8-rail nodes on 4 leaves) put rails
2k and 2k+1 on leaf k.
"""

import ipaddress
import re

from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import IntentError

PLAN_KEYS = (
    "rails",
    "device",
    "netdev",
    "switch",
    "switch_port",
    "subnet",
    "address_offset",
    "node_base",
    "nodes_per_leaf",
    "port_base",
    "port_step",
    "pci",
    "rails_per_leaf",
    "rail_port_offset",
    "port_offsets",
)
PLACEHOLDERS = ("rail", "rail1", "node", "su", "leaf", "leaf1", "port")
_FIELD = re.compile(r"\{([a-z0-9]+)(?::(0?[1-9]?d))?\}")
MAX_RAILS = 32


class PlanError(IntentError):
    """A rail plan that cannot be expanded; the message names key and value."""


def _bad(key, value, allowed):
    return PlanError(f"rail_ports: {key}: {value!r} is not allowed (allowed: {allowed})")


def node_number(node):
    """An int, or the last number in a host name: gpu017 -> 17, dgx-a-0042 -> 42."""
    if isinstance(node, bool):
        raise _bad("node", node, "an integer or a host name ending in a number")
    if isinstance(node, int):
        return node
    if isinstance(node, str):
        found = re.findall(r"[0-9]+", node.split(".", 1)[0])
        if found:
            return int(found[-1], 10)
    raise _bad("node", node, "an integer or a host name with a number in its first label, such as gpu017")


def render(key, pattern, values):
    """Substitute ``{name}``/``{name:03d}`` fields; any other brace is an error."""
    if not isinstance(pattern, str):
        raise _bad(key, pattern, "a string pattern with " + ", ".join("{%s}" % p for p in PLACEHOLDERS))
    out, pos = [], 0
    for m in _FIELD.finditer(pattern):
        name, spec = m.group(1), m.group(2) or ""
        if name not in values:
            raise _bad(key, pattern, "placeholders " + ", ".join("{%s}" % p for p in values) + f"; {{{name}}} is not one")
        out.append(pattern[pos : m.start()])
        out.append(format(values[name], spec))
        pos = m.end()
    out.append(pattern[pos:])
    text = "".join(out)
    if "{" in text or "}" in text:
        raise _bad(key, pattern, "placeholders {name} or {name:03d} only; a brace is left over")
    return text


def _int(plan, key, default, lo, hi):
    value = plan.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _bad(key, value, f"an integer {lo}..{hi}")
    return value


def _per_rail(plan, key, rails, values):
    """A pattern, or a list with one name per rail."""
    given = plan[key]
    if isinstance(given, list):
        if len(given) != rails:
            raise _bad(key, given, f"a pattern or a list of {rails} names, one per rail")
        return given[values["rail"]]
    return render(key, given, values)


def expand(node, plan):
    """The ``rdma_ports`` of node ``node`` (int or host name) under ``plan``."""
    if not isinstance(plan, dict):
        raise _bad("plan", plan, "a mapping with " + ", ".join(PLAN_KEYS))
    unknown = sorted((str(k) for k in plan if k not in PLAN_KEYS))
    if unknown:
        raise _bad(unknown[0], plan[unknown[0]] if unknown[0] in plan else None, "unknown key; allowed keys: " + ", ".join(PLAN_KEYS))
    for key in ("device", "netdev", "switch", "switch_port"):
        if key not in plan:
            per_rail = " or a list per rail" if key in ("device", "netdev") else ""
            raise _bad(key, None, "required: a pattern" + per_rail)
    lists = [len(plan[k]) for k in ("device", "netdev", "pci") if isinstance(plan.get(k), list)]
    rails = _int(plan, "rails", lists[0] if lists else None, 1, MAX_RAILS)
    number = node_number(node)
    base = _int(plan, "node_base", 1, 0, 1 << 20)
    if number < base:
        raise _bad("node", node, f"a node number at least node_base ({base})")
    per_leaf = _int(plan, "nodes_per_leaf", 0, 0, 4096)
    port_base = _int(plan, "port_base", 1, 0, 4096)
    port_step = _int(plan, "port_step", 1, 1, 64)
    offset = _int(plan, "address_offset", 0, -(1 << 24), 1 << 24)
    per_leaf_rails = _int(plan, "rails_per_leaf", 1, 1, MAX_RAILS)
    if rails % per_leaf_rails:
        raise _bad("rails_per_leaf", per_leaf_rails, f"a divisor of rails ({rails}): each leaf takes as many rails")
    leaves = rails // per_leaf_rails
    block = plan.get("rail_port_offset")
    if block is not None:
        block = _int(plan, "rail_port_offset", None, 1, 4096)
    leaf_offsets = plan.get("port_offsets", [0] * leaves)
    if (
        not isinstance(leaf_offsets, list)
        or len(leaf_offsets) != leaves
        or any(isinstance(o, bool) or not isinstance(o, int) or not 0 <= o <= 4096 for o in leaf_offsets)
    ):
        raise _bad("port_offsets", leaf_offsets, f"a list of {leaves} integers 0..4096, one per leaf ({rails} rails / rails_per_leaf {per_leaf_rails})")
    position = number - base
    su, in_su = divmod(position, per_leaf) if per_leaf else (0, position)
    ports = []
    for rail in range(rails):
        leaf, place = divmod(rail, per_leaf_rails)
        if block is None:
            port = port_base + leaf_offsets[leaf] + (in_su * per_leaf_rails + place) * port_step
        else:
            port = port_base + leaf_offsets[leaf] + in_su * port_step + place * block
        values = {"rail": rail, "rail1": rail + 1, "node": number, "su": su, "leaf": leaf, "leaf1": leaf + 1, "port": port}
        entry = {
            "device": _per_rail(plan, "device", rails, values),
            "netdev": _per_rail(plan, "netdev", rails, values),
            "switch": render("switch", plan["switch"], values),
        }
        sp = render("switch_port", plan["switch_port"], values)
        # An all-digit port is an InfiniBand port number.
        entry["switch_port"] = int(sp, 10) if sp.isdigit() and sp.isascii() else sp
        if "subnet" in plan:
            entry["address"] = rail_address(render("subnet", plan["subnet"], values), position + 1 + offset)
        if "pci" in plan:
            entry["pci"] = _per_rail(plan, "pci", rails, values)
        ports.append(entry)
    return ports


def rail_address(subnet, host):
    """The ``host``-th address of ``subnet`` with its prefix: ('10.0.1.0/24', 5) -> '10.0.1.5/24'."""
    try:
        net = ipaddress.IPv4Network(subnet)
    except ValueError as e:
        raise _bad("subnet", subnet, f"an IPv4 network such as 10.{{rail}}.0.0/16 ({e})") from None
    if not 0 < host < net.num_addresses:
        raise _bad("subnet", subnet, f"a network with room for host {host} (it has {net.num_addresses} addresses)")
    return f"{net.network_address + host}/{net.prefixlen}"
