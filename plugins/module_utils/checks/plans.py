# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Pairing plans of the verification: which nodes test against which, in what rounds; the incast
plans, what a plan proves of the uplinks and each node's schedule (pure). The re-test plans are
retests.py, how long a phase takes estimates.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


# ---------------------------------------------------------------- plans


def round_robin(nodes, rounds=None):
    """Rounds of disjoint pairs covering every pair once (circle method).

    N nodes -> N-1 rounds (N even) or N rounds (N odd, one node idle per
    round). Each pair is ``[server, client]``; for nodes i < j (plan order)
    i serves when i + j is odd, so every node is server in about half of its
    tests (an asymmetric fault shows whichever way it points).

    ``rounds``: the indices of the rounds wanted (default every round). Each round is computed
    on its own from the circle's closed form (round r: position p >= 1 holds ring element
    1 + (p - 1 - r) mod (n - 1)), so a plan that needs a few rounds of 2,000 nodes costs a few
    rounds, not all 1,999.
    """
    nodes = list(nodes)
    if len(nodes) < 2:
        return []
    order = {n: k for k, n in enumerate(nodes)}
    ring = nodes + ([None] if len(nodes) % 2 else [])
    n = len(ring)
    m = n - 1
    wanted = range(m) if rounds is None else [r for r in rounds if 0 <= r < m]
    out = []
    for r in wanted:
        pairs = []
        for i in range(n // 2):
            a = ring[0] if i == 0 else ring[1 + (i - 1 - r) % m]
            b = ring[1 + (n - 2 - i - r) % m]
            if a is None or b is None:
                continue
            lo, hi = (a, b) if order[a] < order[b] else (b, a)
            pairs.append([lo, hi] if (order[lo] + order[hi]) % 2 else [hi, lo])
        out.append(pairs)
    return out


def round_count(n_nodes):
    """How many rounds ``round_robin`` has for ``n_nodes`` nodes."""
    n = int(n_nodes)
    return 0 if n < 2 else n - 1 + n % 2


PLANS = ("auto", "full", "sampled")


def resolve_plan(plan, n_nodes, full_max):
    """The ib_write_bw plan that runs: ``auto`` is ``full`` up to ``full_max`` nodes, ``sampled`` above."""
    if plan not in PLANS:
        raise ValueError(f"ib_write_bw plan {plan!r} is not allowed (allowed: {' | '.join(PLANS)})")
    if plan != "auto":
        return plan
    return "full" if int(n_nodes) <= int(full_max) else "sampled"


def node_groups(nodes, leaf_of=None):
    """Nodes grouped by the leaves their rails are cabled to, in plan order.

    ``leaf_of``: {(node, device): switch} (``cabling_index``'s switch per endpoint, or a plain
    {node: leaf}). Two nodes share a group when every rail of theirs lands on the same leaves
    (a rail-optimised scalable unit, or one leaf per rack): HCA i against HCA i of two nodes of
    one group stays under its leaf; of two groups it crosses the leaves' uplinks. Without
    ``leaf_of`` every node is in one group.
    """
    leaf_of = leaf_of or {}
    key = {}
    for k, leaf in leaf_of.items():
        node = k[0] if isinstance(k, (tuple, list)) else k
        key.setdefault(node, set()).add(str(leaf))
    groups = {}
    for n in nodes:
        groups.setdefault(tuple(sorted(key.get(n, ()))), []).append(n)
    return list(groups.values())


def _group_rounds(groups, count):
    """Up to ``count`` rounds of cross-group pairs: the groups meet in circle order (group A's
    i-th node with group B's i-th); server and client alternate so each uplink carries both
    directions. Pairs of a round are disjoint."""
    out = []
    for meeting in round_robin(list(range(len(groups))), range(count)):
        pairs = []
        for ga, gb in meeting:
            for i, (a, b) in enumerate(zip(groups[ga], groups[gb])):
                pairs.append([a, b] if i % 2 == 0 else [b, a])
        out.append(pairs)
    return out


def rail_shift(leaf_of, nodes=None):
    """The rail shift ``k`` of a cross-rail round (the client's HCA i writes into the server's HCA
    (i + k) mod R, rails in cabling order) that puts the most rails' tests across two leaves, and
    those leaves' uplinks and the spine on the path; 0 when no shift does (every rail on one leaf).

    ``leaf_of``: {(node, device): leaf} (``leaves_of``); the first of ``nodes`` (else of ``leaf_of``)
    with two or more rails stands for all (a rail-optimised unit cables every node alike)."""
    devs = {}
    for k, leaf in (leaf_of or {}).items():
        if isinstance(k, (tuple, list)):
            devs.setdefault(k[0], []).append(str(leaf))
    order = [n for n in (nodes or devs) if len(devs.get(n, ())) >= 2]
    if not order:
        return 0
    leaves = devs[order[0]]
    r = len(leaves)
    best = max(range(1, r), key=lambda k: (sum(leaves[i] != leaves[(i + k) % r] for i in range(r)), -k))
    return best if any(leaves[i] != leaves[(i + best) % r] for i in range(r)) else 0


def cross_rail_round(nodes, leaf_of=None, pairs=None):
    """One round of cross-rail pairs ``[server, client, k]`` (``rail_shift``) that crosses every leaf's
    uplinks both ways, or None where none is needed or possible.

    Needed where the nodes are one leaf group (``node_groups``: a rail-optimised unit, the lab) whose
    rails land on two or more leaves: same-rail tests then never leave a leaf, and an uplink (or the
    spine) is proven by no ib_write_bw test. Rail i of each client writes into rail i + k of its
    server: leaf(i)'s uplinks carry it out, leaf(i + k)'s in. ``pairs``: the [server, client] pairs to
    use (default the circle's first round)."""
    nodes = list(nodes)
    if len(nodes) < 2 or len(node_groups(nodes, leaf_of)) != 1:
        return None
    k = rail_shift(leaf_of, nodes)
    if not k:
        return None
    pairs = pairs if pairs is not None else round_robin(nodes, [0])[0]
    return [[p[0], p[1], k] for p in pairs]


def pair_shift(pair):
    """The rail shift of a planned pair (``cross_rail_round``): 0 for HCA i against HCA i."""
    return int(pair[2]) if len(pair) > 2 and pair[2] else 0


def full_plan(nodes, leaf_of=None):
    """Every pair once (``round_robin``), plus one cross-rail round (``cross_rail_round``) where the
    nodes are one rail-optimised unit: the leaves' uplinks are proven at the cost of one round."""
    rounds = round_robin(nodes)
    cross = cross_rail_round(nodes, leaf_of)
    return rounds + ([cross] if cross else [])


def sampled_plan(nodes, rounds=2, leaf_of=None):
    """The cheaper plan's first phase: a few disjoint pairings (rounds of the circle).

    With the cabling (``leaf_of``, see ``node_groups``) and nodes under two or more leaf
    groups, the plan is topology-aware: one round of same-leaf pairs (the circle within each
    group), then up to two rounds of cross-leaf pairs (each group meets two others, so a
    leaf's uplinks are told from its peers'), then circle rounds up to ``rounds`` + the
    topology rounds. Nodes under one leaf group whose rails land on several leaves (a
    rail-optimised unit) get the circle rounds and one cross-rail round (``cross_rail_round``).
    Every node is in at most one pair of a round.
    """
    nodes = list(nodes)
    total = round_count(len(nodes))
    step = max(1, total // max(1, rounds))
    picked = list(range(0, total, step))[:rounds]
    circle = round_robin(nodes, picked)
    groups = node_groups(nodes, leaf_of)
    if len(groups) < 2:
        # one rail-optimised unit: a cross-rail round, on pairs the circle rounds did not meet
        unused = next((r for r in range(total) if r not in picked), None)
        cross = cross_rail_round(nodes, leaf_of, None if unused is None else round_robin(nodes, [unused])[0])
        return circle + ([cross] if cross else [])
    same = [p for g in groups for p in (round_robin(g, [0]) or [[]])[0]]
    cross = _group_rounds(groups, 2 if len(groups) > 2 else 1)
    return ([same] if same else []) + cross + circle


def incast_plan(nodes, k=7, leaf_of=None):
    """Incast rounds in which every node is the receiver once (every rail of it at once).

    The nodes are interleaved across leaf groups (``node_groups``) and cut into groups of
    k + 1: in round j the j-th member of each group receives and the others send into it,
    so a receiver's senders sit under other leaves where there are several (the incast
    loads the receiver leaf's uplinks towards it, and the senders' leaves' uplinks) and the
    rounds are k + 1 (k + 2 where the last group was folded into the one before) whatever
    the fleet's size. Returns ``[[{"receiver", "senders"}]]``, one list per round.
    """
    k = max(1, int(k))
    groups = node_groups(list(nodes), leaf_of)
    order = []
    for i in range(max((len(g) for g in groups), default=0)):
        order += [g[i] for g in groups if i < len(g)]
    chunks = [order[i : i + k + 1] for i in range(0, len(order), k + 1)]
    if len(chunks) > 1 and len(chunks[-1]) < 2:
        last = chunks.pop()
        chunks[-1] += last
    if not chunks or len(chunks[0]) < 2:
        return []
    rounds = []
    for j in range(max(len(c) for c in chunks)):
        rnd = [{"receiver": c[j], "senders": [n for n in c if n != c[j]]} for c in chunks if j < len(c)]
        rounds.append(rnd)
    return rounds


def incast_coverage(rounds, leaf_of, uplinks=None):
    """What an incast plan proves: host ports that were a receiver, and leaves whose uplinks
    carried an incast towards one (a sender under another leaf), out of those in scope.

    ``leaf_of``: {(node, device): leaf}; ``uplinks``: {leaf: [uplink entries]} (the switches'
    ``switch_uplinks``). Leaves in scope for uplinks: those of a rail cabled to two or more leaves
    (same-rail traffic crosses their uplinks; one leaf per rail has none), listed in ``uplinks``
    when given.
    Returns ``{"ports": [proven, in_scope], "uplinks": [proven, in_scope]}``.
    """
    ports_of = {}
    for (node, device), leaf in leaf_of.items():
        ports_of.setdefault(node, []).append((device, leaf))
    leaves = uplink_scope(leaf_of)
    if uplinks:
        leaves &= set(uplinks)
    proven_ports, proven_up = set(), set()
    for rnd in rounds:
        for g in rnd:
            r = g["receiver"]
            proven_ports.update((r, d) for d, _port in ports_of.get(r, []))
            for device, leaf in ports_of.get(r, []):
                for s in g["senders"]:
                    src = leaf_of.get((s, device))
                    if src is not None and src != leaf:
                        proven_up.update(x for x in (leaf, src) if x in leaves)
    return {"ports": [len(proven_ports), len(leaf_of)], "uplinks": [len(proven_up), len(leaves)]}


def plan_tests(rounds, leaf_of):
    """The (client, server) endpoints of every rail test of ``rounds`` (pairs [server, client] or
    [server, client, shift], ``cross_rail_round``): the client's i-th rail (cabling order, ``leaf_of``
    keys) writes into the server's rail i + shift."""
    devs = {}
    for k in leaf_of or {}:
        if isinstance(k, (tuple, list)):
            devs.setdefault(k[0], []).append(k[1])
    for rnd in rounds or []:
        for pair in rnd:
            server, client, k = pair[0], pair[1], pair_shift(pair)
            cd, sd = devs.get(client, []), devs.get(server, [])
            for i, d in enumerate(cd):
                if sd:
                    yield (client, d), (server, sd[(i + k) % len(sd)])


def uplink_test_coverage(rounds, leaf_of, uplinks=None):
    """What an ib_write_bw plan proves of the leaves' uplinks: leaves whose uplinks carried a test
    out (a client under it writing to another leaf) and in (a server under it written into from
    another leaf), out of those in scope: the leaves of ``uplinks`` ({leaf: switch_uplinks}) when
    given, else every leaf where there are two or more. Which uplink of a leaf a flow takes is the
    switches' ECMP hash: the plan proves a leaf's uplinks as a set.

    Returns ``{"uplinks": [proven, in_scope], "flows": {leaf: [out, in]}, "missing": [leaves]}``."""
    leaf_of = {tuple(k): v for k, v in (leaf_of or {}).items()}
    leaves = set(leaf_of.values())
    scope = set(uplinks) & leaves if uplinks else (leaves if len(leaves) > 1 else set())
    flows = {leaf: [0, 0] for leaf in sorted(scope)}
    for c, sv in plan_tests(rounds, leaf_of):
        lc, ls = leaf_of.get(c), leaf_of.get(sv)
        if lc != ls:
            if lc in flows:
                flows[lc][0] += 1
            if ls in flows:
                flows[ls][1] += 1
    proven = [leaf for leaf, (o, i) in flows.items() if o and i]
    return {"uplinks": [len(proven), len(scope)], "flows": flows, "missing": sorted(leaf for leaf in flows if leaf not in proven)}


def round_roles(rounds, node):
    """For one node: [{"round", "role": server|client|idle, "peer"}] per round; ``shift`` where the
    pair is cross-rail (``cross_rail_round``)."""
    out = []
    for i, rnd in enumerate(rounds):
        entry = {"round": i, "role": "idle", "peer": None}
        for pair in rnd:
            server, client = pair[0], pair[1]
            if node in (server, client):
                entry.update(role="server" if node == server else "client", peer=client if node == server else server)
                if pair_shift(pair):
                    entry["shift"] = pair_shift(pair)
        out.append(entry)
    return out


def schedule_parts(rounds, node, offset=0, addresses=None):
    """One node's whole ib_write_bw schedule: its part in every round, in order.

    ``[{"round": offset + i, "role": server|client|idle, "peer", "peer_address"}]`` (``round_roles``
    with the round ids the report uses, ``offset`` the rounds run before: the sampled plan's
    re-test rounds follow its first rounds). ``peer_address`` is ``addresses[peer]`` (the
    peer's ``ansible_host``), else the peer's name; null when idle.
    """
    addresses = addresses or {}
    out = []
    for part in round_roles(rounds, node):
        peer = part["peer"]
        out.append(
            {
                "round": int(offset) + part["round"],
                "role": part["role"],
                "peer": peer,
                "peer_address": (addresses.get(peer) or peer) if peer is not None else None,
            }
        )
        if part.get("shift"):
            out[-1]["shift"] = part["shift"]
    return out


def uplink_scope(leaf_of):
    """Leaves whose uplinks carry same-rail traffic: the leaves of a rail (device) cabled to two or more
    leaves. A rail-optimised fabric with one leaf per rail has none (HCA i meets HCA i under its leaf)."""
    by_rail = {}
    for (_node, device), leaf in leaf_of.items():
        by_rail.setdefault(device, set()).add(leaf)
    return {leaf for leaves in by_rail.values() if len(leaves) > 1 for leaf in leaves}
