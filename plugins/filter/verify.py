"""Filters for the verify_fabric role: pairing plans and the tests the rounds produced."""
import time

from ansible_collections.linerate.fabric.plugins.module_utils import verify


def _leaf_of(ports):
    """{(node, device): switch} from {node: rdma_ports} (None or {} -> {})."""
    return verify.leaves_of(verify.cabling_index(dict(ports or {})))


def verify_rounds(nodes, plan="full", sample_rounds=2, ports=None):
    """Rounds of disjoint [server, client] pairs: ``full`` (every pair, N-1 rounds) or ``sampled``.

    ``ports``: {node: rdma_ports}: the sampled plan adds same-leaf and cross-leaf rounds where the
    nodes hang off two or more leaf groups (``module_utils.verify.sampled_plan``)."""
    nodes = list(nodes)
    if plan == "full":
        return verify.round_robin(nodes)
    if plan == "sampled":
        return verify.sampled_plan(nodes, int(sample_rounds), _leaf_of(ports))
    raise ValueError(f"verify_rounds: plan {plan!r} is not allowed (allowed: full | sampled)")


def verify_plan(plan, nodes, full_max):
    """The plan that runs for ``nodes`` nodes (``module_utils.verify.resolve_plan``)."""
    return verify.resolve_plan(plan, nodes, full_max)


def verify_round_role(rounds, node, index):
    """{"role": server|client|idle, "peer"} of ``node`` in round ``index``."""
    return verify.round_roles(rounds, node)[int(index)]


def verify_round_progress(rounds, index, started=None, rails=1, label="round", now=None):
    """``round k/N: P pairs x R rails; ... ETA ...`` for round ``index`` (0-based); ``now`` defaults to the clock."""
    return verify.round_progress(rounds, index, started, time.time() if now is None else now, rails, label)


def verify_schedule(rounds, node, offset=0, addresses=None):
    """``node``'s part in every round, in order (the ib_write_bw module's ``parts``, mode schedule).

    ``offset``: the rounds run before (round ids go on from there); ``addresses``: {node: address
    its clients connect to} (ansible_host), a node missing there is reached by its name.
    """
    return verify.schedule_parts(rounds, node, int(offset or 0), dict(addresses or {}))


def verify_schedule_summary(rounds, duration, rails=1, label="rounds"):
    """``3 rounds, 6 pairs x 2 rails, one task per node; expected ~6 s (3 x 2 s)``: printed before a schedule."""
    return verify.schedule_summary(rounds, duration, rails, label)


def verify_rail_tests(ports, base_port, server=None, rails=None):
    """ib_write_bw tests of one host: one per rail, HCA i on TCP port base+i (and the peer's address).

    ``rails``: the readiness check's rail-aligned pairing ([{device, gpu}], host_readiness); a
    device's ``gpu`` (its --use_cuda device) is the GPU nearest to it there, else the rail index.
    """
    nearest = {r.get("device"): r.get("gpu") for r in rails or [] if isinstance(r, dict) and r.get("gpu") is not None}
    out = []
    for i, p in enumerate(ports or []):
        t = {"device": p["device"], "tcp_port": int(base_port) + i, "ib_port": int(p.get("ib_port", 1)),
             "gpu": int(nearest.get(p["device"], i))}
        if server:
            t["server"] = server
        out.append(t)
    return out


def verify_tests(logs):
    """Tests from the per-host round logs ({node: [entries]}): ``module_utils.verify.round_tests``."""
    return verify.round_tests(logs)


def settled(tests):
    """Endpoints the tests already name for good: convicted (``verify.convicted``), met as server and as
    client (its direction is known), and failing every test on its bad side (not intermittent: a rate
    needs more samples)."""
    out = set()
    for e in verify.convicted(tests):
        sides = {side: [t["ok"] for t in tests if tuple(t[side]) == e] for side in ("server", "client")}
        # hard: 3+ failures the bad way and none passed; the other way either as hard or 2+ passes, none failed
        hard = [s for s, v in sides.items() if len(v) >= 3 and not any(v)]
        rest = [s for s in sides if s not in hard]
        if hard and all(len(sides[s]) >= 2 and all(sides[s]) for s in rest):
            out.add(e)
    return out


def verify_retest_rounds(logs, nodes, fabric, rounds_done, repeats=1, ports=None):
    """The cheaper plan's second phase: suspect nodes against known-good peers, both directions.

    A failing test that an endpoint the first phase already settles explains (``settled``) needs
    no re-test; the nodes of every other failing test are re-tested ``repeats`` times as client
    (their send side) and ``repeats`` times as server (their receive side), each time against
    another node that failed nothing (``verify.retest_plan``)."""
    tests = verify.evaluate_tests(verify_tests(logs), verify.rdma_threshold_gbps(fabric))
    failing = [t for t in tests if not t["ok"]]
    bad = {n for t in failing for n in (t["server"][0], t["client"][0])}
    convicted = verify.convicted(tests)
    known = settled(tests)
    open_ = set()
    for t in failing:
        ends = {tuple(t["server"]), tuple(t["client"])}
        if ends & known:
            continue
        # an end the phase convicts explains the test; only its other direction is still unknown
        open_ |= {e[0] for e in (ends & convicted or ends)}
    good = [n for n in nodes if n not in bad]
    done = [p for rnd in rounds_done for p in rnd]
    group_of = {n: k for k, g in enumerate(verify.node_groups(list(nodes), _leaf_of(ports))) for n in g}
    return verify.retest_plan(sorted(open_), good, done, int(repeats), group_of)


def verify_incast_plan(nodes, k=7, ports=None):
    """Incast rounds in which every node receives once (``module_utils.verify.incast_plan``)."""
    return verify.incast_plan(list(nodes), int(k), _leaf_of(ports))


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


class FilterModule:
    def filters(self):
        return {"verify_rounds": verify_rounds, "verify_plan": verify_plan, "verify_round_role": verify_round_role,
                "verify_round_progress": verify_round_progress,
                "verify_tests": verify_tests, "verify_rail_tests": verify_rail_tests, "verify_retest_rounds": verify_retest_rounds,
                "verify_incast_tests": verify_incast_tests, "verify_incast_plan": verify_incast_plan, "verify_schedule": verify_schedule,
                "verify_schedule_summary": verify_schedule_summary}
