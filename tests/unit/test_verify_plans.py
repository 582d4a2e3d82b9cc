"""Pairing plans and thresholds (module_utils/checks/plans.py, thresholds.py)."""
import itertools
import os

import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as verify_filters
from ansible_collections.linerate.fabric.plugins.module_utils.intent import fabric as intent
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans as checks_plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import retests as checks_retests
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds as checks_thresholds
from ansible_collections.linerate.fabric.plugins.module_utils import findings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The intent as written, and as the validation publishes it (fabric_effective, with its derived values):
# verification reads only the published one.
INTENT = {"link_speed_gbps": 400, "link_width": 4, "transport": "roce", "mtu": {"host": 4200, "switch": 9216},
          "verify": {"ib_write_bw_fraction": 0.9, "nccl_busbw_fraction": 0.8}}
FABRIC = intent.published(INTENT)


def plan_covers(rounds, nodes):
    """Every unordered pair of ``nodes`` appears exactly once and rounds are disjoint."""
    seen = []
    for rnd in rounds:
        used = [n for p in rnd for n in p]
        if len(used) != len(set(used)):
            return False
        seen += [frozenset(p) for p in rnd]
    want = {frozenset((a, b)) for i, a in enumerate(nodes) for b in nodes[i + 1:]}
    return len(seen) == len(set(seen)) and set(seen) == want


@pytest.mark.parametrize("n", range(2, 18))
def test_round_robin_covers_every_pair_once_in_disjoint_rounds(n):
    nodes = [f"node{i}" for i in range(1, n + 1)]
    rounds = checks_plans.round_robin(nodes)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    assert plan_covers(rounds, nodes)
    for rnd in rounds:
        used = [x for pair in rnd for x in pair]
        assert len(used) == len(set(used))
        assert len(rnd) == n // 2
    pairs = [frozenset(p) for rnd in rounds for p in rnd]
    assert set(pairs) == {frozenset(c) for c in itertools.combinations(nodes, 2)}


def _circle_by_rotation(nodes):
    """The circle method as written out: rotate the ring once per round (the closed form's reference)."""
    order = {x: k for k, x in enumerate(nodes)}
    ring = list(nodes) + ([None] if len(nodes) % 2 else [])
    out = []
    for _ in range(len(ring) - 1):
        rnd = []
        for i in range(len(ring) // 2):
            a, b = ring[i], ring[len(ring) - 1 - i]
            if a is not None and b is not None:
                lo, hi = sorted((a, b), key=order.get)
                rnd.append([lo, hi] if (order[lo] + order[hi]) % 2 else [hi, lo])
        out.append(rnd)
        ring = [ring[0], ring[-1]] + ring[1:-1]
    return out


@pytest.mark.parametrize("n", [2, 3, 4, 7, 10, 33, 64])
def test_each_round_alone_is_the_rotated_circles_round(n):
    nodes = [f"gpu{i:04d}" for i in range(n, 0, -1)]
    whole = _circle_by_rotation(nodes)
    assert checks_plans.round_robin(nodes) == whole
    assert checks_plans.round_count(n) == len(whole)
    for r in range(len(whole)):
        assert checks_plans.round_robin(nodes, [r]) == [whole[r]]
    # out-of-range indices give nothing; the wanted rounds come in the order asked
    assert checks_plans.round_robin(nodes, [len(whole), -1]) == []
    assert checks_plans.round_robin(nodes, [len(whole) - 1, 0]) == [whole[-1], whole[0]]


def test_a_sampled_plan_of_2000_nodes_is_the_same_few_rounds_of_the_whole_circle():
    nodes = [f"gpu{i:04d}" for i in range(2000)]
    picked = list(range(0, 1999, 1999 // 3))[:3]
    whole = checks_plans.round_robin(nodes[:40])
    assert checks_plans.sampled_plan(nodes[:40], 3) == [whole[i] for i in range(0, 39, 13)][:3]
    rounds = checks_plans.sampled_plan(nodes, 3)
    assert rounds == checks_plans.round_robin(nodes, picked)
    for rnd in rounds:
        used = [x for p in rnd for x in p]
        assert len(used) == len(set(used)) == 2000


@pytest.mark.parametrize("n", [4, 5, 8, 9, 16])
def test_servers_are_balanced(n):
    nodes = [f"n{i}" for i in range(n)]
    served = {x: 0 for x in nodes}
    for rnd in checks_plans.round_robin(nodes):
        for server, _ in rnd:
            served[server] += 1
    assert max(served.values()) - min(served.values()) <= 1


def test_plan_covers_rejects_bad_plans():
    nodes = ["a", "b", "c", "d"]
    assert not plan_covers([[["a", "b"], ["a", "c"]]], nodes)  # a twice in a round
    assert not plan_covers([[["a", "b"], ["c", "d"]]], nodes)  # pairs missing
    assert not plan_covers([[["a", "b"], ["c", "d"]], [["a", "b"]]] + checks_plans.round_robin(nodes)[1:], nodes)


def test_trivial_plans():
    assert checks_plans.round_robin([]) == [] and checks_plans.round_robin(["a"]) == []
    assert checks_plans.round_robin(["a", "b"]) == [[["a", "b"]]]


def test_sampled_plan_is_a_few_disjoint_rounds():
    nodes = [f"n{i}" for i in range(10)]
    rounds = checks_plans.sampled_plan(nodes, 2)
    assert len(rounds) == 2
    for rnd in rounds:
        used = [x for p in rnd for x in p]
        assert len(used) == len(set(used)) == 10


def test_retest_pairs_suspects_with_good_peers_not_yet_met():
    done = [["a", "b"], ["c", "d"]]
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], done, repeats=2)
    pairs = [p for rnd in rounds for p in rnd]
    # twice as client (a's send side), twice as server (its receive side), fresh peers first
    assert pairs == [["c", "a"], ["a", "d"], ["e", "a"], ["a", "c"]]
    assert len(rounds) == 4  # a cannot be in two pairs of one round
    assert checks_retests.retest_plan(["a"], ["c", "d", "e"], done) == [[["c", "a"]], [["a", "d"]]]
    # peers under the suspect's own leaves first: no uplink on the path of its re-tests; the one
    # same-leaf peer is met again the other way rather than a peer across an uplink
    assert checks_retests.retest_plan(["a"], ["c", "d", "e"], done, group_of={"a": 1, "e": 1, "c": 0, "d": 0}) == [
        [["e", "a"]], [["a", "e"]]]
    # no good peer under its leaf: another suspect there (both rails proven without an uplink)
    assert checks_retests.retest_plan(["a", "b"], ["c"], [], group_of={"a": 1, "b": 1, "c": 0}) == [
        [["b", "a"]], [["a", "b"]]]
    # per-suspect repeats; a spare node (failed on other rails only) serves a suspect of another rail
    rounds = checks_retests.retest_plan(["a"], [], [], {"a": 2}, None, {"f": {"mlx5_0"}, "g": {"mlx5_1"}}, {"a": {"mlx5_1"}})
    assert [p for rnd in rounds for p in rnd] == [["f", "a"], ["a", "f"], ["f", "a"], ["a", "f"]]
    # two suspects share rounds when their peers differ
    rounds = checks_retests.retest_plan(["a", "b"], ["c", "d"], [], repeats=2)
    for rnd in rounds:
        used = [x for p in rnd for x in p]
        assert len(used) == len(set(used))
    assert {frozenset(p) for rnd in rounds for p in rnd} == {frozenset(x) for x in
                                                              (("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"))}


def test_retest_of_an_uplinks_victims_takes_two_rounds_whatever_their_number():
    # 12 suspects under one leaf group, no good node there (a bad uplink failed every one of them): they
    # pair among themselves, each tested once each way, in 2 rounds, not queued for the good nodes
    victims = [f"v{i}" for i in range(12)]
    group = {n: 0 for n in victims} | {f"g{i}": 1 for i in range(20)}
    rounds = checks_retests.retest_plan(victims, [f"g{i}" for i in range(20)], [], 1, group)
    assert len(rounds) == 2
    for rnd in rounds:
        used = [x for p in rnd for x in p]
        assert len(used) == len(set(used))
    pairs = [p for rnd in rounds for p in rnd]
    assert all(set(p) <= set(victims) for p in pairs)            # same leaf: no uplink on the path
    for v in victims:
        assert sum(p[1] == v for p in pairs) >= 1 and sum(p[0] == v for p in pairs) >= 1
    # 30 of them under a leaf with 2 good nodes, each needing only its send side once: 2 rounds
    victims = [f"v{i}" for i in range(30)]
    group = {n: 0 for n in victims + ["g0", "g1"]}
    rounds = checks_retests.retest_plan(victims, ["g0", "g1"], [], {v: {"send": 1, "receive": 0} for v in victims},
                                      group)
    assert len(rounds) == 2   # 30 tests, at most 16 pairs a round: the done ones serve the rest
    sent = {p[1] for rnd in rounds for p in rnd}
    assert sent == set(victims)


def test_retest_plan_per_direction_and_the_open_direction_first():
    # receive only, twice: always the server; a settled send side gets no test
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], [], {"a": {"send": 0, "receive": 2}})
    assert [p for rnd in rounds for p in rnd] == [["a", "c"], ["a", "d"]]
    # both ways, 3 each, receive first: every receive test before any send test
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], [], {"a": {"send": 3, "receive": 3}},
                                      first={"a": "receive"})
    assert [p.index("a") for rnd in rounds for p in rnd] == [0, 0, 0, 1, 1, 1]
    # without a first direction they alternate, send first
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], [], {"a": {"send": 2, "receive": 2}})
    assert [p.index("a") for rnd in rounds for p in rnd] == [1, 0, 1, 0]
    # a suspect that needs the other direction is the peer: one test serves both
    rounds = checks_retests.retest_plan(["a", "b"], [], [], {"a": {"send": 1, "receive": 0},
                                                            "b": {"send": 0, "receive": 1}}, {"a": 0, "b": 0})
    assert rounds == [[["b", "a"]]]
    # a known-good peer before a suspect of the same rail; a suspect of another rail before one of the same
    group = {n: 0 for n in "abcg"}
    rounds = checks_retests.retest_plan(["a", "b", "c"], ["g"], [], {"a": {"send": 1, "receive": 0},
                                                                     "b": {"send": 0, "receive": 1},
                                                                     "c": {"send": 0, "receive": 1}},
                                      group, rails_of={"a": {"mlx5_0"}, "b": {"mlx5_0"}, "c": {"mlx5_1"}})
    assert rounds[0][0] == ["g", "a"]
    rounds = checks_retests.retest_plan(["a", "b", "c"], [], [], {"a": {"send": 1, "receive": 0},
                                                                 "b": {"send": 0, "receive": 1},
                                                                 "c": {"send": 0, "receive": 1}},
                                      group, rails_of={"a": {"mlx5_0"}, "b": {"mlx5_0"}, "c": {"mlx5_1"}})
    assert rounds[0][0] == ["c", "a"]


def test_round_roles():
    rounds = [[["a", "b"]], [["c", "a"]], [["b", "c"]]]
    assert checks_plans.round_roles(rounds, "a") == [{"round": 0, "role": "server", "peer": "b"},
                                              {"round": 1, "role": "client", "peer": "c"},
                                              {"round": 2, "role": "idle", "peer": None}]


def test_thresholds_from_intent():
    assert checks_thresholds.rdma_threshold_gbps(FABRIC) == 360.0
    assert checks_thresholds.rdma_threshold_gbps(intent.published(dict(INTENT, link_speed_gbps=200, verify={"ib_write_bw_fraction": 0.85}))) == 170.0
    assert checks_thresholds.nccl_threshold_gbytes(FABRIC, 8) == 320.0  # 0.8 x 8 x 400 Gb/s / 8
    assert checks_thresholds.nccl_threshold_gbytes(FABRIC, 2) == 80.0


def test_fault_codes_are_stable_and_complete():
    for code, (severity, layer, text) in findings.FAULT_CODES.items():
        assert code.isupper() and severity in ("error", "warning") and layer in findings.LAYERS and text
    for code in ("PORT_DOWN", "PORT_SPEED", "PORT_WIDTH", "RDMA_BW_LOW", "RDMA_CONNECT_FAILED",
                 "NCCL_NET_SOCKET", "NCCL_NO_GDR", "NCCL_FEW_NICS", "NCCL_BUSBW_LOW"):
        assert code in findings.FAULT_CODES


@pytest.mark.parametrize("plan, nodes, full_max, want", [
    ("auto", 16, 16, "full"), ("auto", 17, 16, "sampled"), ("auto", 2, 2, "full"), ("auto", 3, 2, "sampled"),
    ("full", 256, 16, "full"), ("sampled", 4, 16, "sampled")])
def test_auto_plan_is_full_up_to_the_intents_size_and_sampled_above(plan, nodes, full_max, want):
    assert checks_plans.resolve_plan(plan, nodes, full_max) == want
    assert verify_filters.FilterModule().filters()["verify_plan"](plan, str(nodes), str(full_max)) == want


def test_an_unknown_plan_names_what_is_allowed():
    with pytest.raises(ValueError, match=r"plan 'every' is not allowed \(allowed: auto \| full \| sampled\)"):
        checks_plans.resolve_plan("every", 4, 16)


def test_the_role_default_is_auto_and_the_intent_default_16():
    import yaml
    with open(os.path.join(REPO, "roles", "verify_fabric", "defaults", "main.yml")) as f:
        assert yaml.safe_load(f)["verify_fabric_ib_write_bw_plan"] == "auto"
    assert intent.DEFAULTS["verify"]["full_plan_max_nodes"] == 16


def test_retest_phases_are_validated_with_key_value_and_range():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables as iv
    assert iv.validate_host({"verify_fabric_ib_write_bw_retest_phases": 3}) == []
    assert iv.validate_host({"verify_fabric_ib_write_bw_retest_phases": "0"}) == []
    problems = iv.validate_host({"verify_fabric_ib_write_bw_retest_phases": 11})
    assert len(problems) == 1 and problems[0].startswith("verify_fabric_ib_write_bw_retest_phases: 11")
    assert "an integer 0..10: re-test phases of the sampled plan (0: none)" in problems[0]
