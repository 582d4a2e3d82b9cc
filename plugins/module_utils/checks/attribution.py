# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Attribution before action: which shared element explains the error findings of several nodes.

At 4 nodes every finding is a node's fault; at 2,000 a leaf that reboots, a spine, the subnet
manager or the controller's own path fails many nodes at once, and draining each of them takes
healthy capacity out for a fault that is not theirs. ``attribute`` groups the error findings by the
elements their ports share, from the cabling the run used (the inventory's ``rdma_ports``, which
the verification's LLDP check confirms or contradicts with its ``CABLE_*`` findings; a port whose
cabling the run found wrong is attributed to nothing), and when one element explains the failing
ports of several nodes it

- raises one finding naming the element (``LEAF_SUSPECT leaf1``, ``RAIL_SUSPECT mlx5_3``,
  ``SPINE_SUSPECT spine1``, ``SM_SUSPECT``, ``CONTROLLER_PATH``) with the nodes it explains, and
- marks each finding it explains ``explained_by`` (the element), so that the drain never acts on it:
  a node is drained only for a fault that is its own.

An element *explains* the failing ports under it when they are on at least ``min_nodes`` nodes and
are at least ``min_share_percent`` of the element's ports (``fabric.remediation.attribution``). The
most specific element is tried first (leaf, then rail, then spine): ports one element explains are not
counted for a wider one. Only findings a shared element on the path can cause count (``PATH_CODES``:
a port's link state, errors and flaps, the benchmarks' failures); a node's own state (PCIe, drift,
memlock, versions, NCCL's configuration) never does.

``NODE_NOT_VERIFIED`` nodes that left the play unreachable (not those whose task failed) are grouped by
the jump host Ansible reaches them through (``ProxyJump`` / ``ProxyCommand`` in their SSH arguments, else
the controller itself): ``min_nodes`` or more in one group are one ``CONTROLLER_PATH`` finding.

Stdlib only; pure.
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding

CHECK = "attribution"
DEFAULTS = {"min_nodes": 2, "min_share_percent": 50}

# Findings a shared element on the data path can cause (the leaf, its optics, its uplinks, the SM).
PATH_CODES = frozenset(
    (
        "PORT_DOWN",
        "PORT_SPEED",
        "PORT_WIDTH",
        "LINK_FLAP",
        "LINK_ERRORS",
        "LINK_BER_HIGH",
        "OPTIC_RX_POWER_LOW",
        "MLXLINK_RECOMMENDATION",
        "RDMA_CONNECT_FAILED",
        "RDMA_TRANSPORT_RETRY",
        "RDMA_TEST_ERROR",
        "RDMA_BW_LOW",
        "RDMA_INCONCLUSIVE",
        "RDMA_INTERMITTENT",
        "RDMA_SEND_BW_LOW",
        "RDMA_LATENCY_HIGH",
        "INCAST_NO_PAUSE",
        "INCAST_DROPS",
        "INCAST_GOODPUT_LOW",
        "INCAST_FAILED",
        "INCAST_OUT_OF_SEQUENCE",
        "INCAST_ECN_NO_CNP",
        "INCAST_NO_ECN",
        "PFC_STORM",
        "NCCL_TRANSPORT_RETRY",
        "NCCL_FAILED",
        "NCCL_BUSBW_LOW",
        "IB_LINK_DEGRADED",
        "IB_LINK_ERRORS",
        "IB_LINK_MISSING",
    )
)
# Where a port's cabling was found wrong by the run itself: its switch is not known.
CABLING_CODES = frozenset(("CABLE_SWAPPED", "CABLE_MISWIRED"))
# NODE_NOT_VERIFIED reasons that say the controller could not reach the node (not that a task failed on it).
UNREACHABLE_REASONS = frozenset(("unreachable", "left_play", "unknown"))
ELEMENT_CODES = {"leaf": "LEAF_SUSPECT", "rail": "RAIL_SUSPECT", "spine": "SPINE_SUSPECT", "subnet_manager": "SM_SUSPECT", "controller": "CONTROLLER_PATH"}
_PROXY_JUMP = re.compile(r"(?:^|\s)(?:-J\s*|-o\s*ProxyJump[=\s]+|ProxyJump[=\s]+)['\"]?([^\s'\",]+)", re.I)
_PROXY_COMMAND = re.compile(r"ProxyCommand[=\s]+(['\"]?)(.+?)\1(?:\s+-o|\s*$)", re.I)


def settings(policy):
    """``fabric.remediation.attribution`` over the defaults."""
    given = dict((policy or {}).get("attribution") or {})
    return {k: given.get(k, v) for k, v in DEFAULTS.items()}


def jump_host(hostvars):
    """The jump host in a node's SSH arguments (``-J``/``ProxyJump``, a ``ProxyCommand`` through ssh or nc:
    its last word that is not an option or ``%h:%p``), else ``None`` (the controller reaches it directly)."""
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_ssh_args"):
        text = str((hostvars or {}).get(key) or "")
        m = _PROXY_JUMP.search(text)
        if m:
            return _host_of(m.group(1).split(",")[0])
        m = _PROXY_COMMAND.search(text)
        if m:
            words = [w for w in m.group(2).split() if not w.startswith("-") and "%" not in w]
            if len(words) > 1:
                return _host_of(words[-1])
    return None


def _host_of(spec):
    """``user@bastion:2222`` -> ``bastion``."""
    return spec.split("@")[-1].rsplit(":", 1)[0] if spec.count(":") == 1 else spec.split("@")[-1]


def _port(f):
    """(node, device) of a finding that names a node's port; None when it names none."""
    if not f.get("node") or not f.get("device"):
        return None
    return (f["node"], f["device"])


def topology(cabling, uplinks=None, miscabled=()):
    """{element kind: {element: set of (node, device)}} from ``cabling`` ({(node, device): port with
    ``switch``}) and ``uplinks`` ({leaf: [{"peer": spine}, ...]}); ports in ``miscabled`` left out."""
    leaves, rails, spines = {}, {}, {}
    for key, p in (cabling or {}).items():
        if key in miscabled:
            continue
        if p.get("switch"):
            leaves.setdefault(p["switch"], set()).add(key)
        rails.setdefault(key[1], set()).add(key)
    # a rail is an element of its own only where its ports span several leaves (else it is the leaf)
    leaf_of = {k: p.get("switch") for k, p in (cabling or {}).items()}
    rails = {r: ps for r, ps in rails.items() if len({leaf_of.get(k) for k in ps}) > 1}
    for leaf, ups in (uplinks or {}).items():
        for u in ups or []:
            if u.get("peer") and leaf in leaves:
                spines.setdefault(u["peer"], set()).update(leaves[leaf])
    leaves_under = {s: {leaf for leaf, ups in (uplinks or {}).items() for u in ups or [] if u.get("peer") == s} for s in spines}
    spines = {s: ps for s, ps in spines.items() if len(leaves_under[s]) > 1}
    return {"leaf": leaves, "rail": rails, "spine": spines}


def attribute(findings, cabling, uplinks=None, hostvars=None, policy=None, transport="roce"):
    """Add the element findings to ``findings`` (in place) and mark the findings they explain.

    Returns ``(element findings, check)``: the check ``attribution`` for the report, with one entry per
    element that explains failures (kind, element, nodes, ports, the codes it explains) and the rule."""
    cfg = settings(policy)
    min_nodes, share = int(cfg["min_nodes"]), float(cfg["min_share_percent"]) / 100.0
    miscabled = {(f.get("node"), f.get("device")) for f in findings if f.get("code") in CABLING_CODES}
    topo = topology(cabling, uplinks, miscabled)
    failing = {}
    for f in findings:
        if f.get("severity") != "error" or f.get("code") not in PATH_CODES or f.get("explained_by"):
            continue
        key = _port(f)
        if key is not None and key not in miscabled:
            failing.setdefault(key, []).append(f)
    elements, taken = [], set()
    for kind in ("leaf", "rail", "spine"):
        for name, ports in sorted(topo[kind].items()):
            bad = sorted(k for k in ports if k in failing and k not in taken)
            nodes = sorted({n for n, _d in bad})
            if len(nodes) >= min_nodes and len(bad) >= share * len(ports):
                elements.append((kind, name, bad, nodes, len(ports)))
        for _kind, _name, bad, _nodes, _n in elements:
            taken.update(bad)
    if transport == "infiniband":
        sm = [
            f
            for f in findings
            if f.get("severity") == "error" and f.get("layer") == "subnet_manager" and not f.get("node") and f.get("code") not in ELEMENT_CODES.values()
        ]
        rest = sorted(k for k in failing if k not in taken)
        nodes = sorted({n for n, _d in rest})
        if sm and len(nodes) >= min_nodes:
            elements.append(("subnet_manager", "subnet manager", rest, nodes, len(cabling or {})))
            taken.update(rest)
    out = []
    for kind, name, bad, nodes, total in elements:
        explained = [f for k in bad for f in failing[k]]
        for f in explained:
            f["explained_by"] = name
        codes = sorted({f["code"] for f in explained})
        what = {"leaf": f"leaf {name}", "rail": f"rail {name}", "spine": f"spine {name}", "subnet_manager": "the subnet manager"}[kind]
        out.append(
            finding(
                ELEMENT_CODES[kind],
                f"{what} explains the failures of {len(nodes)} node(s) ({len(bad)} of its {total} port(s) "
                f"fail: {', '.join(codes)}): {', '.join(nodes)}; none of them is drained for it - check "
                f"{what} first",
                switch=name if kind in ("leaf", "spine") else None,
                device=name if kind == "rail" else None,
                check=CHECK,
                element=name,
                kind=kind,
                explains=nodes,
                ports=[f"{n} {d}" for n, d in bad],
                codes=codes,
            )
        )
    out += _controller(findings, hostvars or {}, min_nodes)
    findings.extend(out)
    check = {
        "passed": not out,
        "rule": {"min_nodes": min_nodes, "min_share_percent": cfg["min_share_percent"]},
        "elements": [
            {"code": f["code"], "kind": f["kind"], "element": f["element"], "nodes": f["explains"], "ports": f.get("ports", []), "codes": f.get("codes", [])}
            for f in out
        ],
        "detail": ("no shared element suspected" if not out else "; ".join(f"{f['code']} {f['element']}: {len(f['explains'])} node(s)" for f in out)),
    }
    return out, {CHECK: check}


def _controller(findings, hostvars, min_nodes):
    """CONTROLLER_PATH per jump host (or the controller itself) behind which ``min_nodes`` or more nodes
    left the run unreachable; the NODE_NOT_VERIFIED findings are marked ``explained_by``."""
    groups = {}
    for f in findings:
        if f.get("code") == "NODE_NOT_VERIFIED" and f.get("reason") in UNREACHABLE_REASONS:
            groups.setdefault(jump_host(hostvars.get(f["node"])), []).append(f)
    out = []
    for jump, group in sorted(groups.items(), key=lambda kv: str(kv[0] or "")):
        nodes = sorted({f["node"] for f in group})
        if len(nodes) < min_nodes:
            continue
        name = f"jump host {jump}" if jump else "controller"
        for f in group:
            f["explained_by"] = name
        out.append(
            finding(
                "CONTROLLER_PATH",
                f"{len(nodes)} node(s) are unreachable from the controller at once "
                f"({'all through ' + name if jump else 'directly'}): {', '.join(nodes)}; the run's view "
                "of them is the controller's path, not their fabric: none is drained for it",
                check=CHECK,
                element=name,
                kind="controller",
                explains=nodes,
                jump_host=jump,
            )
        )
    return out


def markdown(report):
    """The report's "Remediation" section (summary.md): the elements that explain several nodes, the drain
    decision (breaker, budget, what would drain and what is held, and why)."""
    rem = report.get("remediation") or {}
    elements = ((report.get("checks") or {}).get(CHECK) or {}).get("elements") or []
    if not rem and not elements:
        return []
    lines = ["## Remediation", ""]
    for e in elements:
        lines.append(
            f"- **{e['code']} {e['element']}** explains {len(e['nodes'])} node(s): "
            f"{', '.join(e['nodes'])}" + (f" ({', '.join(e['codes'])})" if e.get("codes") else "")
        )
    if rem:
        br = rem.get("breaker") or {}
        allowed = rem.get("allowed") or {}
        lines.append(
            f"- Drain breaker: **{'TRIPPED' if br.get('tripped') else 'closed'}**"
            + (f" since {br.get('since')}: {br.get('reason')}; reset: `{br.get('reset')}`" if br.get("tripped") else "")
        )
        lines.append(
            f"- Draining {'on' if rem.get('enabled') else 'off'}; budget: {allowed.get('run')} node(s) a run, "
            f"{allowed.get('window')} in {(rem.get('budget') or {}).get('window_hours')} h "
            f"({rem.get('window_drains', 0)} so far) of {rem.get('fleet')}; not verified: "
            f"{', '.join(rem.get('unseen') or []) or '-'}"
        )
        lines.append(f"- Drain: {', '.join(rem.get('drain') or []) or '-'}")
        for node, why in sorted((rem.get("held") or {}).items()):
            lines.append(f"- Held: {node}: {why}")
    lines.append("")
    return lines
