"""Pairing plans (module_utils/checks/plans.py); the re-tests are checks/test_retests.py, the thresholds checks/test_thresholds.py."""

import itertools
import os

import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as verify_filters
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS, published
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans as checks_plans
from ansible_collections.linerate.fabric.plugins.module_utils import findings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# The intent as written, and as the validation publishes it (fabric_effective, with its derived values):
# verification reads only the published one.
INTENT = {
    "link_speed_gbps": 400,
    "link_width": 4,
    "transport": "roce",
    "mtu": {"host": 4200, "switch": 9216},
    "verify": {"ib_write_bw_fraction": 0.9, "nccl_busbw_fraction": 0.8},
}
FABRIC = published(INTENT)


def plan_covers(rounds, nodes):
    """Every unordered pair of ``nodes`` appears exactly once and rounds are disjoint."""
    seen = []
    for rnd in rounds:
        used = [n for p in rnd for n in p]
        if len(used) != len(set(used)):
            return False
        seen += [frozenset(p) for p in rnd]
    want = {frozenset((a, b)) for i, a in enumerate(nodes) for b in nodes[i + 1 :]}
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


def test_round_roles():
    rounds = [[["a", "b"]], [["c", "a"]], [["b", "c"]]]
    assert checks_plans.round_roles(rounds, "a") == [
        {"round": 0, "role": "server", "peer": "b"},
        {"round": 1, "role": "client", "peer": "c"},
        {"round": 2, "role": "idle", "peer": None},
    ]


def test_fault_codes_are_stable_and_complete():
    for code, (severity, layer, text) in findings.FAULT_CODES.items():
        assert code.isupper() and severity in ("error", "warning") and layer in findings.LAYERS and text
    for code in (
        "PORT_DOWN",
        "PORT_SPEED",
        "PORT_WIDTH",
        "RDMA_BW_LOW",
        "RDMA_CONNECT_FAILED",
        "NCCL_NET_SOCKET",
        "NCCL_NO_GDR",
        "NCCL_FEW_NICS",
        "NCCL_BUSBW_LOW",
    ):
        assert code in findings.FAULT_CODES


@pytest.mark.parametrize(
    "plan, nodes, full_max, want",
    [
        ("auto", 16, 16, "full"),
        ("auto", 17, 16, "sampled"),
        ("auto", 2, 2, "full"),
        ("auto", 3, 2, "sampled"),
        ("full", 256, 16, "full"),
        ("sampled", 4, 16, "sampled"),
    ],
)
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
    assert DEFAULTS["verify"]["full_plan_max_nodes"] == 16


def test_retest_phases_are_validated_with_key_value_and_range():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables as iv

    assert iv.validate_host({"verify_fabric_ib_write_bw_retest_phases": 3}) == []
    assert iv.validate_host({"verify_fabric_ib_write_bw_retest_phases": "0"}) == []
    problems = iv.validate_host({"verify_fabric_ib_write_bw_retest_phases": 11})
    assert len(problems) == 1 and problems[0].startswith("verify_fabric_ib_write_bw_retest_phases: 11")
    assert "an integer 0..10: re-test phases of the sampled plan (0: none)" in problems[0]
