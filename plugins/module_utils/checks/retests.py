"""Re-test plans of the ib_write_bw check (pure): which suspect ends to test again, against which
peers, in which direction and how often, from what each side of a rail did so far; and the ends a
phase already convicts.
"""


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
    Peers: with ``group_of`` ({node: leaf group key}, see ``plans.node_groups``) under the suspect's own
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
    order = {s: i for i, s in enumerate(suspects)}
    per = {s: (repeats.get(s, 1) if isinstance(repeats, dict) else repeats) for s in suspects}
    queue = {s: _directions(per[s], (first or {}).get(s)) for s in suspects}
    pools = _peer_pools(suspects, good, spare or {}, order, group_of, rails_of or {})
    met = {s: set() for s in suspects}
    rounds = []
    while any(queue.values()):
        rnd = _plan_round(suspects, order, queue, pools, seen, met, rails_of or {}, len(rounds))
        if not rnd:
            break  # the suspects left have no peer at all
        rounds.append(rnd)
    return rounds


def _peer_pools(suspects, good, spare, order, group_of, rails_of):
    """{suspect: (near peers, far peers)}: with ``group_of`` the good and spare peers and the other
    suspects under the suspect's own leaves, else (none there) the good and spare ones under other
    leaves; without it every good and spare peer (see ``retest_plan``)."""
    key = group_of.get if group_of else (lambda n: None)
    pools = {}
    for s in suspects:
        mine = set(rails_of.get(s) or ())
        pool = [g for g in good if g != s and g not in order] + [g for g, bad in spare.items() if g != s and mine and not set(bad) & mine]
        if group_of:
            near = [g for g in pool if key(g) == key(s)]
            near += [g for g in suspects if g != s and key(g) == key(s)]
            far = [g for g in pool if key(g) != key(s)]
            pools[s] = (near, []) if near else ([], far)
        else:
            pools[s] = (pool, [])
    return pools


def _plan_round(suspects, order, queue, pools, seen, met, rails_of, index):
    """Round ``index`` of the re-test plan: each suspect with tests left its next direction against a
    free peer (the suspects with the most tests left first); ``queue`` and ``met`` are updated."""
    busy, rnd = set(), []
    for s in sorted((s for s in suspects if queue[s]), key=lambda s: (-len(queue[s]), order[s])):
        if s in busy or not queue[s]:
            continue
        way = queue[s][0]
        back = "receive" if way == "send" else "send"
        peer = _pick_peer(s, back, pools[s], busy, order, queue, seen, met, rails_of, index)
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
    return rnd


def _pick_peer(s, back, pools, busy, order, queue, seen, met, rails_of, index):
    """The peer of suspect ``s``'s next test: from its near peers, else its far ones, the free peer of
    the best tier; None when none is free."""
    mine = rails_of.get(s) or set()

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

    for peers in pools:
        free = [g for g in peers if g not in busy]
        if free:
            # ties go round the peers (suspects and rounds start further along), not to the first
            k = (order[s] + index) % len(free)
            return min(free[k:] + free[:k], key=tier)
    return None


PROBE_PHASES = 1  # re-test phases whose idle nodes take fresh sample pairs (``fill_idle``)


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
            for b in idle[i + 1 : i + 1 + PROBE_WINDOW]:
                if b not in used and frozenset((a, b)) not in seen:
                    extra.append([a, b] if j % 2 == 0 else [b, a])
                    used.update((a, b))
                    seen.add(frozenset((a, b)))
                    break
        out.append(list(rnd) + extra)
    return out


# How many tests one way settle a side (re-test phases stop once every suspect is settled):
RETEST_SAMPLES = 12  # an intermittent rail's other direction: a 50 % flaky side passes 12 in a row 0.024 % of the time


CLEAR_SAME_LEAF = 2  # same-leaf passes that clear a side whose failures all crossed uplinks


HARD_FAILS = 3  # failures, none passed, one same-leaf: a hard fault that way


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
    sound = {("send", tuple(t["client"])) for t in tests if t["ok"]} | {("receive", tuple(t["server"])) for t in tests if t["ok"]}
    # per leaf: failing cross-leaf tests between sound ends, counted per endpoint and per pair, so the
    # failures through it that share no end with a given test are a subtraction away
    through = {}
    for t in tests:
        c, sv = tuple(t["client"]), tuple(t["server"])
        lc, ls = leaf_of.get(c), leaf_of.get(sv)
        if t["ok"] or lc is None or ls is None or lc == ls or ("send", c) not in sound or ("receive", sv) not in sound:
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
            st["lone_fails"] += lone and other in sound  # an other end that never passed explains it
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
                need[d] = max(int(mixed and not flaky and st["total"] < RETEST_SAMPLES), min(reps, (RETEST_SAMPLES if flaky else 2) - st["total"]))
            else:
                need[d] = reps
        never = [d for d, (state, _stats) in sides.items() if need[d] and state in ("clean", "untested")]
        out[ep] = dict(need, first=never[0] if len(never) == 1 and len([d for d in need if need[d]]) == 2 else None)
    return out


def _open_endpoints(tests, leaf_of):
    """{endpoint: (flaky, {direction: (state, stats)})} of the endpoints a re-test must test again
    (``retest_needs``)."""
    stats = side_stats(tests, leaf_of)
    state = {side: side_state(st) for side, st in stats.items()}
    settled_bad = {side for side, s in state.items() if s in ("bad", "flaky")}
    # an end that failed against two peers that passed elsewhere, twice without an uplink on the
    # path, explains those failures: its peers need no re-test (``convicted``)
    settled_bad |= {(d, ep) for ep in convicted(tests) for d in ("send", "receive") if (stats.get((d, ep)) or {}).get("same_fails", 0) >= 2}
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
        flaky = any(
            s == "flaky" or (st and 0 < st["fails"] < st["total"] and (st["same_fails"] or st["lone_fails"])) for s, st in zip(states.values(), sides.values())
        )
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
