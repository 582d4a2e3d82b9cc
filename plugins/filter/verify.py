"""Filters for the verify_fabric role: pairing plans and the tests the rounds produced."""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling, rdma, thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.checks import estimates as checks_estimates
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans as checks_plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import registry as verify_registry
from ansible_collections.linerate.fabric.plugins.module_utils.checks import retests as checks_retests


def _leaf_of(ports):
    """{(node, device): switch} from {node: rdma_ports} (None or {} -> {})."""
    return cabling.leaves_of(cabling.cabling_index(dict(ports or {})))


def verify_rounds(nodes, plan="full", sample_rounds=6, ports=None):
    """Rounds of disjoint [server, client] pairs: ``full`` (every pair, N-1 rounds) or ``sampled``.

    ``ports``: {node: rdma_ports}: the sampled plan adds same-leaf and cross-leaf rounds where the
    nodes hang off two or more leaf groups (``module_utils.checks.plans.sampled_plan``); either plan adds
    one cross-rail round ([server, client, shift]) where they are one rail-optimised unit, so the
    leaves' uplinks carry tests (``module_utils.checks.plans.cross_rail_round``)."""
    nodes = list(nodes)
    if plan == "full":
        return checks_plans.full_plan(nodes, _leaf_of(ports))
    if plan == "sampled":
        return checks_plans.sampled_plan(nodes, int(sample_rounds), _leaf_of(ports))
    raise ValueError(f"verify_rounds: plan {plan!r} is not allowed (allowed: full | sampled)")


def verify_plan(plan, nodes, full_max):
    """The plan that runs for ``nodes`` nodes (``module_utils.checks.plans.resolve_plan``)."""
    return checks_plans.resolve_plan(plan, nodes, full_max)


def verify_schedule(rounds, node, offset=0, addresses=None):
    """``node``'s part in every round, in order (the ib_write_bw module's ``parts``, mode schedule).

    ``offset``: the rounds run before (round ids go on from there); ``addresses``: {node: address
    its clients connect to} (ansible_host), a node missing there is reached by its name.
    """
    return checks_plans.schedule_parts(rounds, node, int(offset or 0), dict(addresses or {}))


def verify_schedule_summary(rounds, duration, rails=1, label="rounds", hosts=None, forks=None):
    """``3 rounds, 6 pairs x 2 rails, one task per node; expected ~19 s (...)``: printed before a schedule
    (the expectation: module_utils/checks/estimates.py, on ``hosts`` nodes with ``forks``)."""
    return checks_estimates.schedule_summary(rounds, duration, rails, label, hosts, forks)


def verify_incast_summary(rounds, k, duration, ports=1, hosts=None, forks=None):
    """``incast: 4 rounds, every node a receiver once, up to 7 senders each; expected ~...``: printed before
    the rotation (module_utils/checks/estimates.py)."""
    return checks_estimates.incast_summary(rounds, k, duration, ports, hosts, forks)


def verify_rail_tests(ports, base_port, server=None, rails=None):
    """ib_write_bw tests of one host: one per rail, HCA i on TCP port base+i (and the peer's address).

    ``rails``: the readiness check's rail-aligned pairing ([{device, gpu}], host_readiness); a
    device's ``gpu`` (its --use_cuda device) is the GPU nearest to it there, else the rail index.
    """
    nearest = {r.get("device"): r.get("gpu") for r in rails or [] if isinstance(r, dict) and r.get("gpu") is not None}
    out = []
    for i, p in enumerate(ports or []):
        t = {"device": p["device"], "tcp_port": int(base_port) + i, "ib_port": int(p.get("ib_port", 1)), "gpu": int(nearest.get(p["device"], i))}
        if server:
            t["server"] = server
        out.append(t)
    return out


def settled(tests, leaf_of=None):
    """Endpoints the tests already name for good: failing endpoints (``checks_retests.retest_needs``'s input) that
    need no further re-test - both directions settled (a hard or flaky bad side, the other one clean
    over enough tests, or cleared by same-leaf tests)."""
    bad = {side[1] for side, st in checks_retests.side_stats(tests, leaf_of).items() if checks_retests.side_state(st) in ("bad", "flaky")}
    return bad - set(checks_retests.retest_needs(tests, leaf_of))


def verify_retest_rounds(logs, nodes, fabric, rounds_done, repeats=1, ports=None, phase=0):
    """One re-test phase of the cheaper plan: suspect nodes against known-good peers, both directions.

    The suspects are ``checks_retests.retest_needs``: every end of a failing test that no settled bad side
    explains, until both its directions are settled; each is re-tested in each direction not yet settled
    (``checks_retests.retest_demand``: as client for its send side, as server for its receive side) at
    least ``repeats`` times, RETEST_REPEATS_FLAKY times for a side that fails and passes, the direction
    it never failed first (``checks_retests.retest_plan``), against nodes that failed nothing or failed
    only on other rails, under its own leaves first. Returns [] when nothing is open (no further phase
    is needed)."""
    leaf_of = _leaf_of(ports)
    tests = rdma.evaluate_tests(rdma.round_tests(logs), thresholds.rdma_threshold_gbps(fabric))
    demand = checks_retests.retest_demand(tests, leaf_of)
    suspects = sorted({ep[0] for ep in demand})
    per_node, first, rails_of = {}, {}, {}
    for (node, dev), need in demand.items():
        mine = per_node.setdefault(node, {"send": 0, "receive": 0})
        for d in mine:
            if need[d]:
                mine[d] = max(mine[d], need[d], int(repeats))
        if need["send"] and need["receive"]:
            first.setdefault(node, set()).add(need["first"])
        rails_of.setdefault(node, set()).add(dev)
    # a node's open-and-never-failed direction first where its rails tested both ways agree on it (one
    # of them with none, failing both ways already, has both ways in turn)
    first = {n: next(iter(f)) for n, f in first.items() if len(f) == 1 and None not in f}
    failed_on = {}
    for t in tests:
        if not t["ok"]:
            for side in ("server", "client"):
                failed_on.setdefault(t[side][0], set()).add(t[side][1])
    good = [n for n in nodes if n not in failed_on]
    spare = {n: failed_on[n] for n in nodes if n in failed_on and n not in per_node}
    done = [p for rnd in rounds_done for p in rnd]
    group_of = {n: k for k, g in enumerate(checks_plans.node_groups(list(nodes), leaf_of)) for n in g}
    rounds = checks_retests.retest_plan(suspects, good, done, per_node, group_of, spare, rails_of, first)
    if int(phase) < checks_retests.PROBE_PHASES:
        rounds = checks_retests.fill_idle(rounds, list(nodes), done)
    return rounds


def verify_incast_plan(nodes, k=7, ports=None):
    """Incast rounds in which every node receives once (``module_utils.checks.plans.incast_plan``)."""
    return checks_plans.incast_plan(list(nodes), int(k), _leaf_of(ports))


def verify_incast_role(rnd, node):
    """``node``'s part in one round of ``verify_incast_plan``: {"role": receiver | sender | idle,
    "receiver", "senders"} (the group it belongs to; idle: receiver and senders null / [])."""
    for group in rnd or []:
        if group["receiver"] == node:
            return {"role": "receiver", "receiver": node, "senders": list(group["senders"])}
        if node in group["senders"]:
            return {"role": "sender", "receiver": group["receiver"], "senders": list(group["senders"])}
    return {"role": "idle", "receiver": None, "senders": []}


def verify_incast_tests(ports, base_port, senders, me, server=None):
    """The incast phase's ib_write_bw tests of one host, one per rail and sender.

    Sender i (its place in ``senders``) writes rail r on TCP port base + 16 i + r.
    The receiver (``me`` not in ``senders``, no ``server``) serves every sender;
    a sender (``me`` in ``senders``) runs its own tests against ``server``.
    """
    senders = list(senders or [])
    if server is None and me not in senders:
        return [t for i in range(len(senders)) for t in verify_rail_tests(ports, int(base_port) + 16 * i)]
    if me not in senders:
        return []
    return verify_rail_tests(ports, int(base_port) + 16 * senders.index(me), server)


def verify_phases(active_checks):
    """The verify_fabric role's phases that run for ``active_checks``, in order
    (``module_utils.checks.registry.PHASES``; tasks/phase.yml includes each)."""
    return verify_registry.phases(active_checks)


class FilterModule:
    def filters(self):
        return {
            "verify_rounds": verify_rounds,
            "verify_plan": verify_plan,
            "verify_rail_tests": verify_rail_tests,
            "verify_retest_rounds": verify_retest_rounds,
            "verify_incast_tests": verify_incast_tests,
            "verify_incast_plan": verify_incast_plan,
            "verify_incast_role": verify_incast_role,
            "verify_schedule": verify_schedule,
            "verify_schedule_summary": verify_schedule_summary,
            "verify_phases": verify_phases,
            "verify_incast_summary": verify_incast_summary,
        }
