# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""The host stack's rollout in waves (docs/host-stack.md#rolling-host-changes).

A disruptive host change (a NIC firmware reset, a driver restart, a reboot) takes a node out of
service for minutes. One node at a time is safe and takes days on a fleet; every node at once is fast
and takes the fleet down. The rollout goes in **waves**:

- a **canary** wave first (``fabric.rollout.canary`` nodes, default 1), then waves that double in
  size up to ``fabric.rollout.max_unavailable`` (a count, or ``'N%'`` of the nodes rolled; at least 1);
  with ``fabric.rollout.slow_start: false`` the wave after the canary is ``max_unavailable`` at once;
- **topology-aware**: two nodes that share a leaf switch, a rack or an NVLink domain
  (``fabric.rollout.spread``, default all three) are never in the same wave. The leaves come from the
  node's cabling (``rdma_ports[].switch``, or the cabling the run observed), the rack and the NVLink
  domain from the host variables ``linerate_rack`` and ``linerate_nvlink_domain``;
- a wave whose failed nodes exceed ``fabric.rollout.max_fail_percentage`` of it halts the rollout:
  the nodes of the later waves are left as they are (``skipped``); the run goes on for everything
  else and the rollout summary names every node's state.

``plan`` is pure and deterministic (the same nodes and labels give the same waves, whatever the
order they were given in). The playbook (playbooks/stages/hosts.yml) computes it once on the
controller and runs the host stack's play with ``hosts:`` the plan's order and ``serial:`` its wave
sizes, so every node runs every task once: the controller's task results grow linearly with the
nodes.

Stdlib only.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure

SPREAD_KEYS = ("leaf", "rack", "nvlink_domain")
# The host variables that label a node's rack and NVLink domain.
LABEL_VARS = {"rack": "linerate_rack", "nvlink_domain": "linerate_nvlink_domain"}
# A label: what a site writes for a rack or NVLink domain (a name, not a structure).
LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}", re.ASCII)
LABEL_ALLOWED = "a name of 1..128 characters: letters, digits and . _ : / - (starting with a letter or digit)"
PERCENT_RE = re.compile(r"([1-9][0-9]?|100)%", re.ASCII)
STATES = ("done", "failed", "unreachable", "skipped", "converged")


class RolloutError(ToolFailure):
    """A rollout input that is not allowed (the message names the key, the value and what is allowed):
    the host layer's ToolFailure, told apart by the rollout filters (an AnsibleFilterError)."""


@dataclass(frozen=True)
class Node:
    """A node to roll, with the groups it belongs to per spread key (``leaf`` may hold several)."""

    name: str
    leaf: tuple[str, ...] = ()
    rack: str | None = None
    nvlink_domain: str | None = None

    def tokens(self, spread: Sequence[str]) -> frozenset[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        if "leaf" in spread:
            out.update(("leaf", leaf) for leaf in self.leaf)
        for key in ("rack", "nvlink_domain"):
            value = getattr(self, key)
            if key in spread and value is not None:
                out.add((key, value))
        return frozenset(out)


@dataclass
class Plan:
    """The waves, in order; ``sizes`` is the play's ``serial`` and ``order`` its ``hosts``."""

    waves: list[list[str]]
    max_unavailable: int
    canary: int
    spread: tuple[str, ...]
    max_fail_percentage: int
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    slow_start: bool = True

    @property
    def order(self) -> list[str]:
        return [n for wave in self.waves for n in wave]

    @property
    def sizes(self) -> list[int]:
        return [len(w) for w in self.waves]

    def as_dict(self) -> dict[str, Any]:
        return {
            "waves": self.waves,
            "order": self.order,
            "sizes": self.sizes,
            "max_unavailable": self.max_unavailable,
            "canary": self.canary,
            "spread": list(self.spread),
            "max_fail_percentage": self.max_fail_percentage,
            "slow_start": self.slow_start,
            "nodes": self.nodes,
        }


def natural_key(name: str) -> tuple:
    """node2 before node10: digits compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name) if part)


def resolve_count(value: Any, total: int, key: str = "fabric.rollout.max_unavailable") -> int:
    """A count of nodes, or ``'N%'`` of ``total`` (rounded down, at least 1)."""
    if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str)):
        raise RolloutError(f"{key}: {value!r} is not allowed (allowed: a number of nodes >= 1 or '1%'..'100%')")
    if isinstance(value, int):
        if value < 1:
            raise RolloutError(f"{key}: {value!r} is not allowed (allowed: a number of nodes >= 1 or '1%'..'100%')")
        return value
    if not PERCENT_RE.fullmatch(value):
        raise RolloutError(f"{key}: {value!r} is not allowed (allowed: a number of nodes >= 1 or '1%'..'100%')")
    return max(1, math.floor(total * int(value[:-1]) / 100))


def _label(problems: list[str], node: str, var: str, value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not LABEL_RE.fullmatch(value):
        problems.append(f"{var} of {node}: {value!r} is not allowed (allowed: {LABEL_ALLOWED})")
        return None
    return value


def nodes_from_hostvars(names: Iterable[str], hostvars: Mapping[str, Mapping[str, Any]], observed: Mapping[str, Sequence[str]] | None = None) -> list[Node]:
    """The nodes to roll with their leaves, rack and NVLink domain. A node's leaves are the switches of
    its declared ``rdma_ports`` and the leaves LLDP saw its ports on (``observed``, {node: [leaf]}: the
    last verification's cabling check, ``observed_leaves``): both, so that a cabling the inventory gets
    wrong can only make a wave smaller, never put two nodes of one leaf in it.

    Raises RolloutError naming every label that is not allowed, before any node is touched."""
    problems: list[str] = []
    nodes = []
    for name in names:
        hv = hostvars.get(name) or {}
        ports = hv.get("rdma_ports") or []
        leaves = [p.get("switch") for p in ports if isinstance(p, Mapping) and p.get("switch")]
        seen = (observed or {}).get(name)
        if isinstance(seen, (list, tuple)):
            leaves += [x for x in seen if isinstance(x, str) and x]
        labels = {key: _label(problems, name, var, hv.get(var)) for key, var in LABEL_VARS.items()}
        nodes.append(Node(name=name, leaf=tuple(sorted({str(x) for x in leaves})), **labels))
    if problems:
        raise RolloutError("; ".join(problems))
    return nodes


def observed_from_report(text: Any) -> dict[str, Any]:
    """The leaves the last verification's cabling check saw each node on, from its report.json text
    (``checks.cabling.observed_leaves``, {node: [leaf]}) and when that report was made; ``{}`` where there
    is no report, it is not JSON, or its cabling check did not run (the declared cabling alone then)."""
    if not isinstance(text, str) or not text.strip():
        return {}
    try:
        report = json.loads(text)
    except ValueError:
        return {}
    check = ((report.get("checks") if isinstance(report, dict) else None) or {}).get("cabling") or {}
    leaves = check.get("observed_leaves") if isinstance(check, dict) else None
    if not isinstance(leaves, dict):
        return {}
    return {
        "leaves": {str(n): sorted({str(x) for x in v if isinstance(x, str)}) for n, v in leaves.items() if isinstance(v, list)},
        "generated": report.get("generated_at"),
    }


def _priority(nodes: Sequence[Node], spread: Sequence[str]) -> list[Node]:
    """Nodes of the largest groups first (they bound the number of waves), then by name."""
    count: dict[tuple[str, str], int] = {}
    for node in nodes:
        for tok in node.tokens(spread):
            count[tok] = count.get(tok, 0) + 1

    def key(node: Node) -> tuple:
        biggest = max((count[t] for t in node.tokens(spread)), default=1)
        return (-biggest, natural_key(node.name))

    return sorted(nodes, key=key)


def _fill(remaining: list[Node], target: int, tokens: Mapping[str, frozenset[tuple[str, str]]]) -> tuple[list[Node], list[Node]]:
    """One wave: the first nodes of ``remaining`` (in order) that share no group, up to ``target``."""
    wave: list[Node] = []
    used: set[tuple[str, str]] = set()
    rest: list[Node] = []
    for i, node in enumerate(remaining):
        if len(wave) == target:
            rest.extend(remaining[i:])
            break
        toks = tokens[node.name]
        if used.isdisjoint(toks):
            wave.append(node)
            used |= toks
        else:
            rest.append(node)
    return wave, rest


def plan(
    nodes: Sequence[Node], max_unavailable: Any = 1, canary: int = 1, spread: Sequence[str] = SPREAD_KEYS, max_fail_percentage: int = 0, slow_start: bool = True
) -> Plan:
    """The waves for ``nodes``: the canary, then waves doubling up to ``max_unavailable`` (``slow_start``;
    without it the first wave after the canary is ``max_unavailable``), no two nodes of one group (per
    ``spread``) in a wave. Every node is in exactly one wave."""
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1}, key=natural_key)
        raise RolloutError(f"rollout nodes: {', '.join(dup)} given twice (allowed: each node once)")
    bad = [s for s in spread if s not in SPREAD_KEYS]
    if bad:
        raise RolloutError(f"fabric.rollout.spread: {list(spread)!r} is not allowed (allowed: a list of {', '.join(SPREAD_KEYS)})")
    if isinstance(canary, bool) or not isinstance(canary, int) or canary < 1:
        raise RolloutError(f"fabric.rollout.canary: {canary!r} is not allowed (allowed: a number of nodes >= 1)")
    if not isinstance(slow_start, bool):
        raise RolloutError(f"fabric.rollout.slow_start: {slow_start!r} is not allowed (allowed: true or false)")
    limit = resolve_count(max_unavailable, len(nodes))
    first = min(canary, limit)
    remaining = _priority(nodes, spread)
    tokens = {n.name: n.tokens(spread) for n in nodes}
    waves: list[list[str]] = []
    target = first
    while remaining:
        wave, remaining = _fill(remaining, target, tokens)
        waves.append(sorted((n.name for n in wave), key=natural_key))
        target = min(limit, target * 2) if slow_start else limit
    return Plan(
        waves=waves,
        max_unavailable=limit,
        canary=first,
        spread=tuple(spread),
        max_fail_percentage=max_fail_percentage,
        nodes=_info(nodes, waves),
        slow_start=slow_start,
    )


def _info(nodes: Sequence[Node], waves: Sequence[Sequence[str]]) -> dict[str, dict[str, Any]]:
    wave_of = {name: i for i, w in enumerate(waves) for name in w}
    return {n.name: {"wave": wave_of[n.name], "leaf": list(n.leaf), "rack": n.rack, "nvlink_domain": n.nvlink_domain} for n in nodes}


def _node(name: str, info: Mapping[str, Any]) -> Node:
    """The Node a plan's (or a summary's) entry for ``name`` describes: ``_info`` the other way round."""
    return Node(name, tuple(info.get("leaf") or ()), info.get("rack"), info.get("nvlink_domain"))


def wave_failed(wave: Sequence[str], states: Mapping[str, str]) -> list[str]:
    """The nodes of a wave that did not finish (failed or unreachable)."""
    return [n for n in wave if states.get(n) in ("failed", "unreachable")]


def over_budget(wave: Sequence[str], failed: Sequence[str], max_fail_percentage: int) -> bool:
    """Whether a wave's failures exceed its budget (Ansible's rule: more than the percentage)."""
    return bool(wave) and len(failed) * 100 > max_fail_percentage * len(wave)


def halted_at(plan_: Mapping[str, Any], states: Mapping[str, str], before: int | None = None) -> int | None:
    """The first wave (before wave ``before``) whose failures exceed the budget, or None."""
    waves = plan_["waves"][:before] if before is not None else plan_["waves"]
    for i, wave in enumerate(waves):
        if over_budget(wave, wave_failed(wave, states), int(plan_["max_fail_percentage"])):
            return i
    return None


def room(
    plan_: Mapping[str, Any], states: Mapping[str, str], batch: Sequence[str], unseen: Sequence[str] = (), unseen_nodes: Sequence[Node] = ()
) -> dict[str, Any]:
    """At the start of a wave (``batch``, its nodes): what the nodes still out of service leave it.

    A node of an earlier wave that failed or went unreachable (``states``) is still out of service, and
    so is one that did not answer before the plan (``unseen``; its groups from ``unseen_nodes``, built
    from the inventory as the plan's nodes are). Each holds, for the rest of the run, one place of the
    budget and its groups (per the plan's ``spread``): a node of this wave in a rack, leaf or NVLink domain
    with one of them is deferred, since resetting it would make two of that group out at once. The wave
    disrupts at most what is left of ``max_unavailable``; its other nodes beyond that (the last in the
    plan's order) are deferred too: left as they are, ``skipped``, for the next run.
    ``{lost, room, defer, why}``; ``why`` is each deferred node's reason."""
    lost = sorted({n for n, st in states.items() if st in ("failed", "unreachable")} | set(unseen), key=natural_key)
    limit = int(plan_["max_unavailable"])
    left = max(0, limit - len(lost))
    spread = tuple(plan_.get("spread") or ())
    extra = {n.name: n.tokens(spread) for n in unseen_nodes}

    def groups(name: str) -> frozenset[tuple[str, str]]:
        info = (plan_.get("nodes") or {}).get(name)
        if info is None:
            return extra.get(name, frozenset())
        return _node(name, info).tokens(spread)

    held: dict[tuple[str, str], list[str]] = {}
    for name in lost:
        for tok in groups(name):
            held.setdefault(tok, []).append(name)
    wave = [n for n in plan_["order"] if n in set(batch)]
    why: dict[str, str] = {}
    for name in wave:
        shared = sorted(groups(name) & set(held))
        if shared:
            kind, group = shared[0]
            who = ", ".join(held[shared[0]])
            why[name] = (
                f"deferred: {who} still out of service (failed or unreachable in an earlier wave, or "
                f"before the plan) and in {kind} {group} with it: fabric.rollout.spread keeps two of "
                f"one {kind} from being out at once; run again once {who} is back"
            )
    rest = [n for n in wave if n not in why]
    for name in rest[left:]:
        why[name] = (
            f"deferred: {', '.join(lost)} still out of service (failed or unreachable in an earlier "
            f"wave, or before the plan) hold their places of fabric.rollout.max_unavailable ({limit}): "
            f"this wave takes {min(left, len(rest))} node(s); run again once they are back"
        )
    return {"lost": lost, "room": left, "defer": [n for n in wave if n in why], "why": why}


def states_of(plan_: Mapping[str, Any], marks: Mapping[str, Mapping[str, Any]], reachable: Mapping[str, bool]) -> dict[str, str]:
    """Every planned node's state: its own mark (done, failed in its disruptive step, skipped after a
    halt), else ``failed`` where it still answers and ``unreachable`` where it does not."""
    out = {}
    for name in plan_["order"]:
        mark = (marks.get(name) or {}).get("state")
        if mark in ("done", "failed", "skipped"):
            out[name] = mark
        else:
            out[name] = "failed" if reachable.get(name, False) else "unreachable"
    return out


def overlaps(nodes: Mapping[str, Mapping[str, Any]], spread: Sequence[str]) -> dict[str, Any]:
    """From the nodes' disruptive steps ({start, end} ISO 8601 times): the most nodes disrupted at
    once, and every pair of one group (per ``spread``) whose steps overlapped. A step with no end
    (the node was lost in it) lasts to the end of the rollout."""
    events = []
    spans: dict[str, list[tuple[str, str]]] = {}
    last = max((s.get("end") or s.get("start") or "" for n in nodes.values() for s in n.get("steps") or []), default="")
    for name, node in nodes.items():
        for step in node.get("steps") or []:
            if not step.get("start"):
                continue
            span = (step["start"], step.get("end") or last)
            spans.setdefault(name, []).append(span)
            events += [(span[0], 1, name), (span[1], -1, name)]
    busy, peak = 0, 0
    # an end at the same instant as a start is not an overlap: ends sort first
    for _t, delta, _n in sorted(events, key=lambda e: (e[0], e[1])):
        busy += delta
        peak = max(peak, busy)
    clashes = []
    names = sorted(spans, key=natural_key)
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        for tok in _node(name, nodes[name]).tokens(spread):
            groups.setdefault(tok, []).append(name)
    for (kind, group), members in sorted(groups.items()):
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if any(s1 < e2 and s2 < e1 for s1, e1 in spans[a] for s2, e2 in spans[b]):
                    clashes.append({"spread": kind, "group": group, "nodes": [a, b]})
    return {"max_disrupted_at_once": peak, "same_group_overlaps": clashes}


def summary(
    plan_: Mapping[str, Any], marks: Mapping[str, Mapping[str, Any]], reachable: Mapping[str, bool], converged: Sequence[str] = (), unseen: Sequence[str] = ()
) -> dict[str, Any]:
    """The rollout summary the report shows: every node's state and disruptive steps, each wave's
    outcome, where the rollout halted, the most nodes disrupted at once."""
    states = states_of(plan_, marks, reachable)
    nodes: dict[str, dict[str, Any]] = {}
    for name in plan_["order"]:
        mark = marks.get(name) or {}
        info = dict(plan_["nodes"].get(name) or {})
        info.update(state=states[name], steps=list(mark.get("steps") or []))
        if mark.get("reason"):
            info["reason"] = mark["reason"]
        nodes[name] = info
    for name in converged:
        nodes.setdefault(name, {"state": "converged", "wave": None, "steps": []})
    for name in unseen:
        nodes.setdefault(name, {"state": "unreachable", "wave": None, "steps": [], "reason": "did not answer before the rollout was planned"})
    waves = []
    for i, wave in enumerate(plan_["waves"]):
        failed = wave_failed(wave, states)
        waves.append({"wave": i, "nodes": list(wave), "failed": failed, "over_budget": over_budget(wave, failed, int(plan_["max_fail_percentage"]))})
    halt = halted_at(plan_, states)
    counts = {s: sum(1 for n in nodes.values() if n["state"] == s) for s in STATES}
    return {
        "passed": counts["failed"] + counts["unreachable"] + counts["skipped"] == 0,
        "halted_at_wave": halt,
        "max_unavailable": plan_["max_unavailable"],
        "canary": plan_["canary"],
        "spread": list(plan_["spread"]),
        "max_fail_percentage": plan_["max_fail_percentage"],
        "counts": counts,
        "waves": waves,
        "nodes": dict(sorted(nodes.items(), key=lambda kv: natural_key(kv[0]))),
        **overlaps(nodes, plan_["spread"]),
    }
