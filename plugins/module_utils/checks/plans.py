# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Pairing plans of the verification: which nodes test against which, in what rounds; re-test
plans, incast plans, schedules and phase timings (pure).
"""
from __future__ import absolute_import, division, print_function

from ansible_collections.linerate.fabric.plugins.module_utils.checks import estimates

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


def _directions(reps, first=None):
    """The order of one suspect's re-tests: ``reps`` an int (that many each way) or {"send": n,
    "receive": m}; ``first`` the direction whose tests all come first (the one never seen failing:
    a flaky rail must be seen failing that way to be named both ways), else send and receive in turn."""
    if not isinstance(reps, dict):
        n = max(1, int(reps))
        reps = {"send": n, "receive": n}
    left = {d: max(0, int(reps.get(d, 0))) for d in ("send", "receive")}
    if first in left:
        other = "receive" if first == "send" else "send"
        return [first] * left[first] + [other] * left[other]
    out = []
    while any(left.values()):
        for d in ("send", "receive"):
            if left[d]:
                out.append(d)
                left[d] -= 1
    return out


def retest_plan(suspects, good, tested=(), repeats=1, group_of=None, spare=None, rails_of=None, first=None):
    """Rounds re-testing each suspect node against known-good peers, in both directions.

    ib_write_bw's client writes into its server: a suspect as client proves its send side,
    as server its receive side. ``repeats``: tests per direction (an intermittent rail fails k of
    n; more samples give its rate), a number, or per suspect a number or {"send": n, "receive": m}
    (a settled direction needs none); ``first``: {suspect: direction} whose tests come first.
    Peers: with ``group_of`` ({node: leaf group key}, see ``node_groups``) under the suspect's own
    leaves first (a same-leaf test proves the rail without any uplink; a same-leaf peer is met
    again rather than a peer across an uplink), good nodes, then ``spare`` ones ({node: devices it
    failed on}: a peer for a suspect whose ``rails_of`` ({suspect: devices under test}) they do
    not share), then the other suspects under the same leaves (a test between two serves both:
    the victims of a bad uplink clear each other instead of queueing for their leaf's few good
    nodes); peers not met before first. ``tested``: pairs already run.

    Built round by round: each round gives every suspect with tests left one test, its next
    direction, against a free peer (the suspects with the most tests left first), so a phase
    lasts about as many rounds as one suspect's tests, not their sum over a leaf.
    """
    seen = {frozenset(p[:2]) for p in tested}
    spare = spare or {}
    order = {s: i for i, s in enumerate(suspects)}
    per = {s: (repeats.get(s, 1) if isinstance(repeats, dict) else repeats) for s in suspects}
    queue = {s: _directions(per[s], (first or {}).get(s)) for s in suspects}
    key = group_of.get if group_of else (lambda n: None)
    near_of, far_of = {}, {}
    for s in suspects:
        mine = set((rails_of or {}).get(s) or ())
        pool = [g for g in good if g != s and g not in order] + \
            [g for g, bad in spare.items() if g != s and mine and not set(bad) & mine]
        if group_of:
            near = [g for g in pool if key(g) == key(s)]
            near += [g for g in suspects if g != s and key(g) == key(s)]
            far = [g for g in pool if key(g) != key(s)]
            near_of[s], far_of[s] = (near, []) if near else ([], far)
        else:
            near_of[s], far_of[s] = pool, []
    met = {s: set() for s in suspects}
    rails_of = rails_of or {}
    rounds = []
    while any(queue.values()):
        busy, rnd = set(), []
        for s in sorted((s for s in suspects if queue[s]), key=lambda s: (-len(queue[s]), order[s])):
            if s in busy or not queue[s]:
                continue
            way = queue[s][0]
            back = "receive" if way == "send" else "send"
            peer = None
            mine = rails_of.get(s) or set()
            for peers in (near_of[s], far_of[s]):
                free = [g for g in peers if g not in busy]
                if not free:
                    continue

                def tier(g):
                    # a known-good peer not met before, then another suspect that needs the other
                    # direction (this test serves both), then a known-good peer met before, then any
                    # suspect, one done with its own tests first; a suspect under test on other rails
                    # before one on the same rail (a failure between two suspects of one rail blames
                    # neither)
                    fresh = frozenset((s, g)) not in seen and g not in met[s]
                    if g not in order:
                        return 0 if fresh else 3
                    other_rails = not (rails_of.get(g) or set()) & mine
                    if back in queue[g]:
                        return (1 if other_rails else 2) if fresh else 4
                    # one with no test of its own left before one that would rather run its own
                    return 5 + 2 * bool(queue[g]) + (not other_rails) if fresh else 9
                # ties go round the peers (suspects and rounds start further along), not to the first
                k = (order[s] + len(rounds)) % len(free)
                peer = min(free[k:] + free[:k], key=tier)
                break
            if peer is None:
                continue
            queue[s].pop(0)
            if back in queue.get(peer, ()):
                queue[peer].remove(back)
            rnd.append([peer, s] if way == "send" else [s, peer])
            busy.update((s, peer))
            met[s].add(peer)
            if peer in met:
                met[peer].add(s)
        if not rnd:
            break   # the suspects left have no peer at all
        rounds.append(rnd)
    return rounds


PROBE_PHASES = 1   # re-test phases whose idle nodes take fresh sample pairs (``fill_idle``)


PROBE_WINDOW = 64  # how far along the idle nodes a fresh peer is looked for


def fill_idle(rounds, nodes, tested=()):
    """``rounds`` with each round's idle nodes paired among themselves, pairs not met before.

    A re-test round keeps only the suspects and their peers busy; the rest of the fleet would
    wait. Paired, each idle rail takes one more sample for free (no round added): a rail that
    fails a share of its tests (``RDMA_INTERMITTENT``) and passed every test of the first rounds
    (a 50 % flaky rail passes 5 in a row 3 % of the time) is seen failing here. ``nodes`` in plan
    order; ``tested``: pairs already run (each pair once); server and client alternate by round."""
    seen = {frozenset(p[:2]) for p in tested} | {frozenset(p[:2]) for rnd in rounds for p in rnd}
    out = []
    for j, rnd in enumerate(rounds):
        busy = {n for p in rnd for n in p[:2]}
        idle = [n for n in nodes if n not in busy]
        if idle:
            k = (j * (PROBE_WINDOW // 2 + 1)) % len(idle)
            idle = idle[k:] + idle[:k]
        extra, used = [], set()
        for i, a in enumerate(idle):
            if a in used:
                continue
            for b in idle[i + 1:i + 1 + PROBE_WINDOW]:
                if b not in used and frozenset((a, b)) not in seen:
                    extra.append([a, b] if j % 2 == 0 else [b, a])
                    used.update((a, b))
                    seen.add(frozenset((a, b)))
                    break
        out.append(list(rnd) + extra)
    return out


# How many tests one way settle a side (re-test phases stop once every suspect is settled):
RETEST_SAMPLES = 12     # an intermittent rail's other direction: a 50 % flaky side passes 12 in a row 0.024 % of the time


CLEAR_SAME_LEAF = 2     # same-leaf passes that clear a side whose failures all crossed uplinks


HARD_FAILS = 3          # failures, none passed, one same-leaf: a hard fault that way


RETEST_REPEATS_FLAKY = 4  # tests per direction and phase for a side that both fails and passes


def side_stats(tests, leaf_of=None, ignore=()):
    """{(direction, endpoint): {"fails", "total", "same_fails", "same_total", "lone_fails"}} of
    evaluated tests.

    direction ``send`` is the client's side, ``receive`` the server's; ``same_*`` counts the
    tests whose ends hang off one leaf (no uplink on the path; every test without ``leaf_of``).
    ``lone_fails``: the side's cross-leaf failures that no other failure backs as an uplink's: no
    other failing cross-leaf test through either leaf, between two other endpoints that both passed
    a test that way (a bad uplink fails many pairs; a flaky rail's own failures, or its victims',
    all share its end), the test's other end having passed that way (one that never did explains
    the failure). ``ignore``: {(test index, side)} left out (a failure another element
    already explains)."""
    leaf_of = {tuple(k): v for k, v in (leaf_of or {}).items()}
    sound = {("send", tuple(t["client"])) for t in tests if t["ok"]} | \
        {("receive", tuple(t["server"])) for t in tests if t["ok"]}
    # per leaf: failing cross-leaf tests between sound ends, counted per endpoint and per pair, so the
    # failures through it that share no end with a given test are a subtraction away
    through = {}
    for t in tests:
        c, sv = tuple(t["client"]), tuple(t["server"])
        lc, ls = leaf_of.get(c), leaf_of.get(sv)
        if t["ok"] or lc is None or ls is None or lc == ls or \
                ("send", c) not in sound or ("receive", sv) not in sound:
            continue
        for leaf in (lc, ls):
            n = through.setdefault(leaf, {"all": 0, "ep": {}, "pair": {}})
            n["all"] += 1
            for ep in (c, sv):
                n["ep"][ep] = n["ep"].get(ep, 0) + 1
            pair = frozenset((c, sv))
            n["pair"][pair] = n["pair"].get(pair, 0) + 1

    def backed(c, sv, leaf):
        n = through.get(leaf)
        return bool(n) and n["all"] - n["ep"].get(c, 0) - n["ep"].get(sv, 0) + n["pair"].get(frozenset((c, sv)), 0) > 0
    out = {}
    for i, t in enumerate(tests):
        c, sv = tuple(t["client"]), tuple(t["server"])
        lc, ls = leaf_of.get(c), leaf_of.get(sv)
        same = lc is None or ls is None or lc == ls
        lone = not t["ok"] and not same and not (backed(c, sv, lc) or backed(c, sv, ls))
        for side, other in ((("send", c), ("receive", sv)), (("receive", sv), ("send", c))):
            if (i, side) in ignore:
                continue
            st = out.setdefault(side, {"fails": 0, "total": 0, "same_fails": 0, "same_total": 0, "lone_fails": 0})
            st["total"] += 1
            st["fails"] += not t["ok"]
            st["same_total"] += same
            st["same_fails"] += same and not t["ok"]
            st["lone_fails"] += lone and other in sound   # an other end that never passed explains it
    return out


def side_state(st):
    """What one side's tests say (``side_stats`` entry or None): ``untested``, ``clean`` (never
    failed), ``bad`` (HARD_FAILS+ failures, none passed, one same-leaf), ``flaky`` (fails and passes,
    a same-leaf failure, or a cross-leaf one no uplink's other failures back, among them,
    RETEST_SAMPLES+ tests), ``cleared`` (its failures all crossed an uplink that fails other pairs
    too, CLEAR_SAME_LEAF+ same-leaf passes, no same-leaf failure), else ``open`` (more tests
    needed)."""
    if not st or not st["total"]:
        return "untested"
    if not st["fails"]:
        return "clean"
    passes, same_passes = st["total"] - st["fails"], st["same_total"] - st["same_fails"]
    if not passes:
        return "bad" if st["fails"] >= HARD_FAILS and st["same_fails"] else "open"
    if not st["same_fails"] and not st.get("lone_fails"):
        return "cleared" if same_passes >= CLEAR_SAME_LEAF else "open"
    return "flaky" if st["total"] >= RETEST_SAMPLES else "open"


def retest_needs(tests, leaf_of=None):
    """The endpoints the next re-test phase must test again, with how often each way.

    ``tests``: evaluated tests. A failing test one end of which is settled as bad (``bad`` or
    ``flaky``, ``side_state``, or ``convicted`` with two same-leaf failures that way) needs nothing
    from its other end. Every other end of a failing
    test is a suspect until both its directions are settled: a bad or flaky side, a cleared one
    (only uplinks failed it), and a clean other direction with 2 tests (RETEST_SAMPLES when the
    bad side is flaky: a rail flaky both ways must be seen failing both ways). Returns
    ``{endpoint: repeats}``: RETEST_REPEATS_FLAKY for an endpoint with a side that fails and
    passes with a same-leaf or lone failure among them, else 1 (per direction:
    ``retest_demand``)."""
    return {ep: (RETEST_REPEATS_FLAKY if open_[0] else 1) for ep, open_ in _open_endpoints(tests, leaf_of).items()}


def retest_demand(tests, leaf_of=None):
    """What ``retest_needs``' endpoints need, per direction: ``{endpoint: {"send": n, "receive": m,
    "first": direction or None}}``, 0 for a settled direction (bad, flaky, cleared, or clean over
    enough tests), else RETEST_REPEATS_FLAKY for an endpoint with a side that fails and passes
    same-leaf or lone (a clean side only what it lacks of RETEST_SAMPLES), else 1, and 1 for a clean
    side whose other side both failed and passed. ``first``: the direction that is open and never
    failed (a flaky rail seen failing one way must be seen failing the other to be named both ways:
    its tests come first), else None."""
    out = {}
    for ep, (flaky, sides) in _open_endpoints(tests, leaf_of).items():
        reps = RETEST_REPEATS_FLAKY if flaky else 1
        # a side that fails some tests and passes others is an intermittent rail's or an uplink's victim's:
        # the other direction gets a test more (an intermittent rail fails that way too, a victim passes)
        mixed = any(st and 0 < st["fails"] < st["total"] for _state, st in sides.values())
        need = {}
        for d, (state, st) in sides.items():
            if state in ("bad", "flaky", "cleared"):
                need[d] = 0
            elif state == "clean":
                need[d] = max(int(mixed and not flaky and st["total"] < RETEST_SAMPLES),
                              min(reps, (RETEST_SAMPLES if flaky else 2) - st["total"]))
            else:
                need[d] = reps
        never = [d for d, (state, _stats) in sides.items() if need[d] and state in ("clean", "untested")]
        out[ep] = dict(need, first=never[0] if len(never) == 1 and len(
            [d for d in need if need[d]]) == 2 else None)
    return out


def _open_endpoints(tests, leaf_of):
    """{endpoint: (flaky, {direction: (state, stats)})} of the endpoints a re-test must test again
    (``retest_needs``)."""
    stats = side_stats(tests, leaf_of)
    state = {side: side_state(st) for side, st in stats.items()}
    settled_bad = {side for side, s in state.items() if s in ("bad", "flaky")}
    # an end that failed against two peers that passed elsewhere, twice without an uplink on the
    # path, explains those failures: its peers need no re-test (``convicted``)
    settled_bad |= {(d, ep) for ep in convicted(tests) for d in ("send", "receive")
                    if (stats.get((d, ep)) or {}).get("same_fails", 0) >= 2}
    ignore = set()
    for i, t in enumerate(tests):
        if t["ok"]:
            continue
        snd, rcv = ("send", tuple(t["client"])), ("receive", tuple(t["server"]))
        if snd in settled_bad and rcv not in settled_bad:
            ignore.add((i, rcv))
        elif rcv in settled_bad and snd not in settled_bad:
            ignore.add((i, snd))
    if ignore:
        stats = side_stats(tests, leaf_of, ignore)
        state = {side: side_state(st) for side, st in stats.items()}
    out = {}
    for ep in sorted({side[1] for side, s in state.items() if s not in ("clean", "untested")}):
        sides = {d: stats.get((d, ep)) for d in ("send", "receive")}
        states = {d: state.get((d, ep), "untested") for d in sides}
        flaky = any(s == "flaky" or (st and 0 < st["fails"] < st["total"] and (st["same_fails"] or st["lone_fails"]))
                    for s, st in zip(states.values(), sides.values()))
        done = True
        for d, s in states.items():
            if s in ("bad", "flaky", "cleared"):
                continue
            if s == "clean" and sides[d]["total"] >= (RETEST_SAMPLES if flaky else 2):
                continue
            done = False
        if not done:
            out[ep] = (flaky, {d: (states[d], sides[d]) for d in sides})
    return out


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
    chunks = [order[i:i + k + 1] for i in range(0, len(order), k + 1)]
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
    leaves = _uplink_scope(leaf_of)
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
    return {"uplinks": [len(proven), len(scope)], "flows": flows,
            "missing": sorted(leaf for leaf in flows if leaf not in proven)}


def convicted(tests):
    """The endpoints a phase's tests already convict, which a re-test would only confirm: each
    failed against at least two peer nodes whose same rail passed a test with another node
    (a bad link at one end fails whoever meets it), or a failing test's own error names it
    (``blame``: its port is down, its device missing). ``tests``: evaluated tests."""
    passed = {tuple(t[side]) for t in tests if t["ok"] for side in ("server", "client")}
    peers, out = {}, set()
    for t in tests:
        if t["ok"]:
            continue
        if t.get("blame"):
            out.add(tuple(t[t["blame"]]))
        for me, other in (("server", "client"), ("client", "server")):
            if tuple(t[other]) in passed:
                peers.setdefault(tuple(t[me]), set()).add(t[other][0])
    return out | {e for e, nodes in peers.items() if len(nodes) >= 2}


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
        out.append({"round": int(offset) + part["round"], "role": part["role"], "peer": peer,
                    "peer_address": (addresses.get(peer) or peer) if peer is not None else None})
        if part.get("shift"):
            out[-1]["shift"] = part["shift"]
    return out


def schedule_summary(rounds, duration, rails=1, label="rounds", hosts=None, forks=None):
    """The line printed before a schedule starts: ``3 rounds, 6 pairs x 2 rails, one task per node;
    expected ~12 s (3 x 2 s tests, 1.2 s a round more, and the tasks around them)``.

    The expectation is checks/estimates.py's model: every node plays all its rounds in one task, each
    round costs its test's ``duration`` and the start and connect around it, and the tasks around the
    schedule cost their Ansible time on ``hosts`` nodes (default: the nodes of the rounds) with ``forks``.
    """
    n = len(rounds or [])
    pairs = sum(len(r) for r in rounds or [])
    rails = int(rails)
    if hosts is None:
        hosts = len({x for r in rounds or [] for pair in r for x in pair[:2]}) or 2
    seconds = estimates.schedule_seconds(n, float(duration or 0), hosts, forks)
    return (f"{n} {label if n != 1 else label.rstrip('s')}, {pairs} pair{'' if pairs == 1 else 's'} x "
            f"{rails} rail{'' if rails == 1 else 's'}, one task per node; expected ~{duration_text(seconds)} "
            f"({n} x {duration_text(duration or 0)} tests, {estimates.SCHEDULE_ROUND_SECONDS:g} s a round more, "
            "and the tasks around them)")


def incast_summary(rounds, k, duration, ports=1, hosts=None, forks=None):
    """The line printed before the incast rotation: rounds, senders, and checks/estimates.py's
    expectation (each round's Ansible tasks on every node, its test, the writers' start)."""
    n = len(rounds or [])
    seconds = estimates.incast_seconds(n, float(duration or 0), ports, hosts, forks)
    return (f"incast: {n} round{'' if n == 1 else 's'}, every node a receiver once, up to {int(k)} senders each; "
            f"expected ~{duration_text(seconds)} ({n} x ({duration_text(duration or 0)} test + "
            f"{duration_text(seconds / n - float(duration or 0)) if n else '0 s'} of Ansible tasks and starts))")


def duration_text(seconds):
    """41 s, 6 min 32 s, 1 h 02 min: how long, for people."""
    s = max(0, int(round(float(seconds))))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def phase_timings(marks, end, report_seconds=None):
    """Per-phase wall times from the start marks the role leaves (``{phase: epoch seconds}``).

    Each phase lasts until the next mark, the last one until ``end``; ``report_seconds`` (the
    report's own time) is appended as phase ``report``. Returns ``[{"phase", "seconds"}]`` in
    the order the phases ran.
    """
    order = sorted(((float(t), p) for p, t in (marks or {}).items() if t not in (None, "")))
    out = []
    for i, (t, phase) in enumerate(order):
        stop = order[i + 1][0] if i + 1 < len(order) else float(end)
        out.append({"phase": phase, "seconds": round(max(0.0, stop - t), 1)})
    if report_seconds is not None:
        out.append({"phase": "report", "seconds": round(float(report_seconds), 1)})
    return out


def _uplink_scope(leaf_of):
    """Leaves whose uplinks carry same-rail traffic: the leaves of a rail (device) cabled to two or more
    leaves. A rail-optimised fabric with one leaf per rail has none (HCA i meets HCA i under its leaf)."""
    by_rail = {}
    for (_node, device), leaf in leaf_of.items():
        by_rail.setdefault(device, set()).add(leaf)
    return {leaf for leaves in by_rail.values() if len(leaves) > 1 for leaf in leaves}
