"""The scheduler's topology from the cabling verification observed (pure: observed map in, file text out).

Slurm (``topology.conf`` for topology/tree and topology/block, ``topology.yaml`` for Slurm 25.05 and
later) and Kueue's Topology-Aware Scheduling (``Topology``, a ``ResourceFlavor`` naming it, and the node
labels its levels read) are rendered from ``cabling.observed_map``: what the switches' LLDP tables show,
never what the inventory claims. A node's group is the set of leaves its rails are seen on (one leaf
for a top-of-rack design; every rail leaf of a rail-optimised scalable unit); groups joined through a
shared spine share one top switch. Refused (``TopologyRefused``) while the cabling check has a finding open:
a swapped, miswired or missing cable, or a port whose cabling LLDP could not prove, would put nodes in
the wrong group. ``accept_observed`` renders a swapped or miswired cabling as it is seen (the file's
header names each such finding); an unproven port is refused always.

InfiniBand (``ib_observed_map``): the same map from the subnet as ``ibnetdiscover`` discovered it in the
subnet check (module ib_fabric_check, which returns it as ``observed``): each switch port's peer, CAs
known by their port GUID (the inventory's rdma_ports ``guid``) or by the NodeDescription rdma-ndd sets
(``<host> <device>``), switches by their GUID or description as the check names them. Refused while the
check has a topology finding open (``IB_LINK_MISSING``, ``IB_PORTS_SWAPPED``, ``IB_LINK_MISWIRED``,
``IB_UNEXPECTED_LINK``, ``IB_UNEXPECTED_DEVICE``) or the discovery warned of a failed query (nodes behind
it may be missing); ``accept_observed`` renders swapped, miswired and unexpected links as seen.

Sources: slurm.schedmd.com topology.conf(5) (SwitchName/Switches/Nodes; BlockName/Nodes, BlockSizes
from Slurm 23.11), topology.yaml(5) (topology, cluster_default, tree.switches[switch, children, nodes],
block.block_sizes, block.blocks[block, nodes]); Kueue v0.19.2 kueue.x-k8s.io/v1beta2 Topology
(spec.levels[].nodeLabel, kubernetes.io/hostname only last) and ResourceFlavor (spec.topologyName
needs spec.nodeLabels), CRD vendored in tests/schemas/sched_topology/.
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import CheckError
from ansible_collections.linerate.fabric.plugins.module_utils.checks.ib import switch_name_from_desc
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibdiag import norm_guid

KUEUE_API = "kueue.x-k8s.io/v1beta2"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# the findings of the cabling check that accept_observed may render over: each names both ends seen
ACCEPTABLE = ("CABLE_SWAPPED", "CABLE_MISWIRED", "CABLE_UNEXPECTED", "IB_PORTS_SWAPPED", "IB_LINK_MISWIRED", "IB_UNEXPECTED_LINK")
# the InfiniBand subnet check's findings about the cabling (module_utils/checks/ib.py check_topology); a
# degraded link (IB_LINK_DEGRADED) puts no node in the wrong group and does not stop the render
IB_CABLING_CODES = ("IB_LINK_MISSING", "IB_PORTS_SWAPPED", "IB_LINK_MISWIRED", "IB_UNEXPECTED_LINK", "IB_UNEXPECTED_DEVICE")
_NAME_RE = re.compile(r"^(?P<stem>.*?)(?P<num>\d+)$")
_LABEL_PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class TopologyRefused(CheckError):
    """The observed cabling cannot be the scheduler's topology (open findings, unobserved nodes)."""


def hostlist(names: list) -> str:
    """Slurm's hostlist form: ``node1,node2,node3,node7`` -> ``node[1-3,7]`` (zero padding kept apart)."""
    groups, plain = {}, []
    for n in sorted(set(names), key=_natural):
        m = _NAME_RE.match(n)
        if not m:
            plain.append(n)
            continue
        width = len(m.group("num")) if m.group("num").startswith("0") else 0
        groups.setdefault((m.group("stem"), width), []).append(int(m.group("num")))
    out = list(plain)
    for (stem, width), nums in groups.items():
        runs, start, prev = [], nums[0], nums[0]
        for x in nums[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            runs.append(f"{start:0{width}d}" + (f"-{prev:0{width}d}" if prev != start else ""))
            if x is not None:
                start = prev = x
        out.append(f"{stem}{runs[0]}" if len(nums) == 1 else f"{stem}[{','.join(runs)}]")
    return ",".join(out)


def _natural(name: str) -> tuple:
    m = _NAME_RE.match(name)
    return (m.group("stem"), int(m.group("num"))) if m else (name, -1)


def groups_of(observed: dict, nodes: list) -> dict:
    """``{"groups": {group: [nodes]}, "tops": {top: [groups]}, "node_group": {node: group},
    "leaves": {group: [leaves]}, "unobserved": [nodes LLDP saw on no switch]}`` from the observed map."""
    leaves_of = {n: sorted({a["switch"] for a in (observed.get("hosts") or {}).get(n) or []}) for n in nodes}
    unobserved = sorted((n for n, ls in leaves_of.items() if not ls), key=_natural)
    groups, leaves = {}, {}
    for n in sorted(nodes, key=_natural):
        if leaves_of[n]:
            name = "_".join(leaves_of[n])
            groups.setdefault(name, []).append(n)
            leaves[name] = leaves_of[n]
    leaf_set = {sw for ls in leaves.values() for sw in ls}
    above = {}
    for link in observed.get("links") or []:
        for low, high in ((link["switch"], link["peer"]), (link["peer"], link["switch"])):
            if low in leaf_set and high not in leaf_set:
                above.setdefault(low, set()).add(high)
    # groups that share a spine are one top switch (Slurm's tree needs a switch above both to place a job
    # across them; two groups under overlapping but unequal spine sets - a real fabric's leaf cabled to
    # two of four spines - would otherwise be two roots with nothing joining them)
    parts = []  # [(spines, [groups])], disjoint spine sets
    for g, ls in sorted(leaves.items()):
        spines = set().union(*[above.get(sw, set()) for sw in ls])
        if not spines:
            continue
        joined = [p for p in parts if p[0] & spines]
        parts = [p for p in parts if not p[0] & spines]
        parts.append((spines.union(*[p[0] for p in joined]), sorted([g] + [x for p in joined for x in p[1]])))
    tops = {"_".join(sorted(sp)): grps for sp, grps in parts}
    return {"groups": groups, "tops": tops, "leaves": leaves, "unobserved": unobserved, "node_group": {n: g for g, ns in groups.items() for n in ns}}


def ib_observed_map(nd: dict, expected_links: list, switches: dict) -> dict:
    """The cabling as ``ibnetdiscover`` discovered it (``parse_ibnetdiscover``), in ``cabling.observed_map``'s
    shape: ``{"hosts": {node: [{"device", "switch", "switch_port"}]}, "links": [{"switch", "port", "peer",
    "peer_port"}], "read": [switches discovered], "unread": [], "warnings": [the discovery's warnings]}``.

    ``expected_links`` / ``switches``: the subnet check's parameters (the inventory's rdma_ports with their
    port GUIDs, {switch: GUID or None}) - used to name what was discovered, never to place it: a CA is
    named by its port GUID, else by its NodeDescription ``<host> <device>``; a switch by its GUID, else by
    its description (``switch_name_from_desc``). A CA or switch that neither names is left out (the check
    reports it, IB_UNEXPECTED_DEVICE, and that finding stops the render)."""
    by_guid, hosts_devices = {}, {}
    for e in expected_links or []:
        hosts_devices.setdefault(e["host"], set()).add(e["device"])
        if e.get("guid"):
            by_guid[norm_guid(e["guid"])] = (e["host"], e["device"])
    switch_guid = {norm_guid(g): name for name, g in (switches or {}).items() if g}
    nodes = nd.get("nodes") or {}

    def switch_name(guid):
        n = nodes.get(guid)
        if not n or n["type"] != "switch":
            return None
        return switch_guid.get(guid) or switch_name_from_desc(n.get("desc") or "", set(switches or {}))

    def ca_end(guid, port_guid):
        if port_guid and port_guid in by_guid:
            return by_guid[port_guid]
        words = ((nodes.get(guid) or {}).get("desc") or "").split()
        if len(words) == 2 and words[1] in hosts_devices.get(words[0], ()):
            return words[0], words[1]
        return None

    out = {"hosts": {}, "links": [], "read": [], "unread": [], "warnings": list(nd.get("warnings") or [])}
    for guid, n in sorted(nodes.items()):
        sw = switch_name(guid)
        if sw is None:
            continue
        out["read"].append(sw)
        for pnum, port in sorted(n["ports"].items()):
            peer = nodes.get(port.get("peer_guid"))
            if peer is None:
                continue
            if peer["type"] == "switch":
                other = switch_name(port["peer_guid"])
                if other is not None:
                    out["links"].append({"switch": sw, "port": str(pnum), "peer": other, "peer_port": str(port.get("peer_port"))})
                continue
            # the CA's port GUID: on the switch's port line ("H-<node guid>"[1](<port guid>)), else on the CA's own
            peer_port = (peer.get("ports") or {}).get(port.get("peer_port")) or {}
            end = ca_end(port["peer_guid"], port.get("peer_port_guid") or peer_port.get("port_guid"))
            if end is not None:
                out["hosts"].setdefault(end[0], []).append({"device": end[1], "switch": sw, "switch_port": str(pnum)})
    out["read"] = sorted(set(out["read"]))
    return out


def _topology_finding(f: dict) -> bool:
    return str(f.get("check")) == "cabling" or f.get("code") in IB_CABLING_CODES


def refusal(findings: list, accept_observed: bool = False) -> list:
    """The cabling findings that stop the render (every one - the RoCE cabling check's, the InfiniBand
    subnet check's IB_CABLING_CODES; with ``accept_observed`` those not in ACCEPTABLE, so an unproven or
    missing cable still stops it)."""
    open_ = [f for f in findings or [] if _topology_finding(f)]
    return [f for f in open_ if not (accept_observed and f["code"] in ACCEPTABLE)]


def _header(source: str, observed: dict, nodes: list, accepted: list, method: str = "LLDP") -> list:
    lines = [
        f"# Rendered by linerate from the cabling {source} observed ({method}), not the inventory's claims.",
        '# docs/verification.md "The scheduler\'s topology". Observed rails:',
    ]
    for n in sorted(nodes, key=_natural):
        seen = sorted((a["switch"], a["switch_port"], a.get("device") or "?") for a in observed["hosts"].get(n) or [])
        lines.append(f"#   {n}: " + ", ".join(f"{d} -> {sw} {p}" for sw, p, d in seen))
    for f in accepted:
        lines.append(f"# accepted as observed: {f['code']}: {f['message']}")
    return lines


def slurm_tree(g: dict) -> list:
    lines = [f"SwitchName={grp} Nodes={hostlist(ns)}" for grp, ns in sorted(g["groups"].items())]
    lines += [f"SwitchName={top} Switches={','.join(grps)}" for top, grps in sorted(g["tops"].items())]
    return lines


def block_sizes(g: dict) -> list:
    """The base block (the smallest group), then each power of two of it up to the largest group."""
    sizes = sorted(len(ns) for ns in g["groups"].values())
    out = [sizes[0]]
    while out[-1] * 2 <= sizes[-1]:
        out.append(out[-1] * 2)
    return out


def slurm_block(g: dict) -> list:
    lines = [f"BlockName={grp} Nodes={hostlist(ns)}" for grp, ns in sorted(g["groups"].items())]
    return lines + ["BlockSizes=" + ",".join(map(str, block_sizes(g)))]


def _yaml_scalar(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def slurm_yaml(g: dict) -> list:
    """topology.yaml (Slurm 25.05+): the tree (the cluster's default) and the block topology."""
    lines = ["---", "- topology: linerate-tree", "  cluster_default: true", "  tree:", "    switches:"]
    for grp, ns in sorted(g["groups"].items()):
        lines += [f"      - switch: {grp}", f'        nodes: "{hostlist(ns)}"']
    for top, grps in sorted(g["tops"].items()):
        lines += [f"      - switch: {top}", f'        children: "{",".join(grps)}"']
    lines += ["- topology: linerate-block", "  cluster_default: false", "  block:", f"    block_sizes: [{', '.join(map(str, block_sizes(g)))}]", "    blocks:"]
    for grp, ns in sorted(g["groups"].items()):
        lines += [f"      - block: {grp}", f'        nodes: "{hostlist(ns)}"']
    return lines


def kueue_objects(g: dict, name: str, prefix: str) -> list:
    """Kueue TAS: a Topology whose levels are the top switch, the group and the host, and a ResourceFlavor
    that names it (topologyName needs nodeLabels: the flavor selects the nodes linerate labelled)."""
    levels = ([{"nodeLabel": f"{prefix}/topology-spine"}] if g["tops"] else []) + [{"nodeLabel": f"{prefix}/topology-block"}, {"nodeLabel": HOSTNAME_LABEL}]
    return [
        {"apiVersion": KUEUE_API, "kind": "Topology", "metadata": {"name": name}, "spec": {"levels": levels}},
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": {f"{prefix}/fabric": name}, "topologyName": name},
        },
    ]


def node_labels(g: dict, name: str, prefix: str) -> dict:
    """{node: {label: value}} the Topology's levels read (and the flavor's selector)."""
    top_of = {grp: top for top, grps in g["tops"].items() for grp in grps}
    out = {}
    for n, grp in sorted(g["node_group"].items(), key=lambda kv: _natural(kv[0])):
        labels = {f"{prefix}/fabric": name, f"{prefix}/topology-block": grp}
        if grp in top_of:
            labels[f"{prefix}/topology-spine"] = top_of[grp]
        out[n] = labels
    return out


def render(observed: dict, findings: list, nodes: list, options: dict = None) -> dict:
    """``{"files": {relative path: text}, "groups", "labels", "accepted": [findings]}``.

    ``options``: ``name`` (the Kueue Topology/flavor name, default linerate), ``label_prefix``
    (default linerate.fabric), ``accept_observed`` (bool), ``source`` (what observed it, for the
    header), ``method`` (how: ``LLDP``, ``ibnetdiscover``). Raises ``TopologyRefused`` naming every
    blocking finding or unobserved node."""
    o = dict({"name": "linerate", "label_prefix": "linerate.fabric", "accept_observed": False, "source": "verification", "method": "LLDP"}, **(options or {}))
    if not _LABEL_PREFIX_RE.match(str(o["label_prefix"])) or len(str(o["label_prefix"])) > 253:
        raise ValueError(
            f"label_prefix {o['label_prefix']!r}: a node label's prefix is a DNS subdomain (lower-case letters, digits, '-' and '.'; at most 253 characters)"
        )
    if not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", str(o["name"])):
        raise ValueError(f"name {o['name']!r}: a Kueue object's name is a DNS label (lower-case letters, digits and '-')")
    blocking = refusal(findings, o["accept_observed"])
    if blocking:
        raise TopologyRefused(
            "the scheduler's topology is not rendered while the cabling check has findings open: "
            + "; ".join(f"{f['code']}: {f['message']}" for f in blocking)
            + " - fix the cabling and verify again"
            + ("" if o["accept_observed"] else f" (or accept what {o['method']} sees: accept_observed, for swapped/miswired cables)")
        )
    if observed.get("unread"):
        raise TopologyRefused(
            f"switches {', '.join(observed['unread'])}: {o['method']} not read, their cabling is "
            "unobserved; the topology is rendered from observed cabling only"
        )
    if observed.get("warnings"):
        raise TopologyRefused(
            f"the subnet's discovery ({o['method']}) warned: {'; '.join(observed['warnings'])}: "
            "nodes behind a failed query may be missing; the topology is rendered from a "
            "whole discovery only"
        )
    g = groups_of(observed, nodes)
    if g["unobserved"]:
        raise TopologyRefused(
            f"{', '.join(g['unobserved'])}: {o['method']} shows them on no switch; a node the cabling did not observe has no place in the topology"
        )
    accepted = [f for f in findings or [] if _topology_finding(f) and f["code"] in ACCEPTABLE]
    head = _header(o["source"], observed, nodes, accepted, o["method"])
    labels = node_labels(g, o["name"], o["label_prefix"])
    files = {
        "slurm/topology.conf": "\n".join(head + ["# TopologyPlugin=topology/tree"] + slurm_tree(g)) + "\n",
        "slurm/topology-block.conf": "\n".join(head + ["# TopologyPlugin=topology/block (Slurm 23.11+)"] + slurm_block(g)) + "\n",
        "slurm/topology.yaml": "\n".join(head + ["# Slurm 25.05+: read before topology.conf"] + slurm_yaml(g)) + "\n",
        "kueue/node-labels.sh": "\n".join(
            ["#!/bin/sh", "set -e"]
            + head
            + [f"kubectl label node {n} --overwrite " + " ".join(f"{k}={v}" for k, v in sorted(ls.items())) for n, ls in labels.items()]
        )
        + "\n",
    }
    return {"files": files, "groups": g, "labels": labels, "accepted": accepted, "kueue": kueue_objects(g, o["name"], o["label_prefix"])}
