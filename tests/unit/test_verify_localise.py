"""Localisation in both directions, intermittent rails, uplinks, the incast plan (issue 24), on the
plan/evaluation code of module_utils/checks/plans.py and rdma.py and the verify filters; the fleet model of
bench/fleet.py drives them at 64 and 256 nodes x 8 rails."""

import os
import sys

import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as vf
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling as checks_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans as checks_plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import retests as checks_retests
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults

from checks.test_plans import FABRIC

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import fleet  # noqa: E402  (bench/fleet.py: the fabric model)


def t_(server, client, ok=True, dev="mlx5_0"):
    return {"server": [server, dev], "client": [client, dev], "gbps": 385.0 if ok else 150.0, "client_error": None, "server_error": None}


# a is bad only when it sends (client) / only when it receives (server); b..e are good
SEND_ONLY = [t_("b", "a", False), t_("c", "a", False), t_("a", "d"), t_("a", "e"), t_("d", "b"), t_("e", "c")]
RECV_ONLY = [t_("a", "b", False), t_("a", "c", False), t_("d", "a"), t_("e", "a"), t_("d", "b"), t_("e", "c")]
CABLING = checks_cabling.cabling_index({n: [{"device": "mlx5_0", "switch": "leaf1", "switch_port": f"swp{i}"}] for i, n in enumerate("abcde", 1)})


def where(found):
    return [(f["code"], f["node"], f["device"], f.get("direction"), f.get("fails"), f.get("total")) for f in found]


def test_send_only_fault_is_named_with_its_direction():
    found, _ = rdma.rdma_findings(SEND_ONLY, FABRIC, CABLING)
    assert where(found) == [("RDMA_BW_LOW", "a", "mlx5_0", "send", 2, 2)]
    assert found[0]["severity"] == "error" and found[0]["failure_rate"] == 1.0
    assert "send side bad" in found[0]["message"] and "as client (sending)" in found[0]["message"]


def test_receive_only_fault_is_named_with_its_direction():
    found, _ = rdma.rdma_findings(RECV_ONLY, FABRIC, CABLING)
    assert where(found) == [("RDMA_BW_LOW", "a", "mlx5_0", "receive", 2, 2)]
    assert "as server (receiving)" in found[0]["message"]


def test_both_directions():
    tests = SEND_ONLY[:2] + RECV_ONLY[:2] + [t_("d", "b"), t_("e", "c"), t_("b", "d"), t_("c", "e")]
    found, _ = rdma.rdma_findings(tests, FABRIC, CABLING)
    assert where(found) == [("RDMA_BW_LOW", "a", "mlx5_0", "both", 4, 4)]


def test_intermittent_rail_reports_its_failure_rate():
    tests = [t_("b", "a", False), t_("c", "a"), t_("d", "a", False), t_("e", "a"), t_("a", "b"), t_("a", "c"), t_("d", "b"), t_("e", "c"), t_("b", "d")]
    found, _ = rdma.rdma_findings(tests, FABRIC, CABLING)
    assert where(found) == [("RDMA_INTERMITTENT", "a", "mlx5_0", "send", 2, 4)]
    assert found[0]["failure_rate"] == 0.5 and found[0]["cause"] == "RDMA_BW_LOW"
    assert "failure rate 50%" in found[0]["message"] and found[0]["severity"] == "error"


def test_one_failing_test_without_evidence_is_an_inconclusive_error():
    found, _ = rdma.rdma_findings([t_("a", "b", False)], FABRIC, {})
    assert [(f["code"], f["severity"], f["node"], f["peer"]["node"]) for f in found] == [("RDMA_INCONCLUSIVE", "error", "a", "b")]
    assert faults.summarize(found)["passed"] is False


def leaf_cabling(groups):
    """{node: rdma_ports} with nodes of group g under leaf<g>."""
    return {n: [{"device": "mlx5_0", "switch": f"leaf{g}", "switch_port": f"swp{i}"}] for g, nodes in enumerate(groups) for i, n in enumerate(nodes, 1)}


def test_uplink_is_named_when_cross_leaf_tests_through_it_fail_and_same_leaf_pass():
    groups = [["a1", "a2", "a3"], ["b1", "b2", "b3"], ["c1", "c2", "c3"]]
    ports = leaf_cabling(groups)
    cabling = checks_cabling.cabling_index(ports)
    up = {"leaf0": [{"port": "swp31", "peer": "spine1", "peer_port": "Ethernet1/1"}]}
    tests = []
    for g in groups:  # same-leaf tests pass
        tests += [t_(g[0], g[1]), t_(g[1], g[2]), t_(g[2], g[0])]
    for x, y in (("a1", "b1"), ("b2", "a2"), ("a3", "c3"), ("c1", "a1")):  # through leaf0's uplink: fail
        tests.append(t_(x, y, False))
    tests += [t_("b3", "c2"), t_("c2", "b3")]  # leaf1 <-> leaf2: pass
    found, _ = rdma.rdma_findings(tests, FABRIC, cabling, uplinks=up)
    assert [(f["code"], f["switch"], f["switch_port"], f["leaves"], f["fails"]) for f in found] == [("UPLINK_DEGRADED", "leaf0", "swp31", ["leaf0"], 4)]
    assert "swp31 -> spine1 Ethernet1/1" in found[0]["message"]


def test_one_bad_rail_under_a_leaf_does_not_blame_the_uplink():
    groups = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
    cabling = checks_cabling.cabling_index(leaf_cabling(groups))
    tests = [
        t_("b1", "a1", False),
        t_("a2", "a1", False),
        t_("b2", "a1", False),
        t_("a1", "b3"),
        t_("a2", "a3"),
        t_("b1", "b2"),
        t_("a3", "b3"),
        t_("b2", "a2"),
    ]
    found, _ = rdma.rdma_findings(tests, FABRIC, cabling)
    assert where(found) == [("RDMA_BW_LOW", "a1", "mlx5_0", "send", 3, 3)]


def test_sampled_plan_adds_same_leaf_and_cross_leaf_rounds():
    groups = [[f"g{g}n{i}" for i in range(4)] for g in range(3)]
    nodes = [n for g in groups for n in g]
    ports = leaf_cabling(groups)
    rounds = vf.verify_rounds(nodes, "sampled", 2, ports)
    assert len(rounds) == 1 + 2 + 2
    group = {n: g for g, ns in enumerate(groups) for n in ns}
    assert all(group[a] == group[b] for a, b in rounds[0]) and len(rounds[0]) == 6
    for rnd in rounds[1:3]:
        assert all(group[a] != group[b] for a, b in rnd)
    for rnd in rounds:
        used = [n for p in rnd for n in p]
        assert len(used) == len(set(used))
    # one leaf group (a rail-optimised unit): the circle rounds alone, as before
    assert vf.verify_rounds(nodes, "sampled", 2, {n: [{"device": "mlx5_0", "switch": "leaf1"}] for n in nodes}) == checks_plans.sampled_plan(nodes, 2)


def test_incast_plan_makes_every_node_a_receiver_once_in_bounded_rounds():
    groups = [[f"g{g}n{i}" for i in range(32)] for g in range(4)]
    nodes = [n for g in groups for n in g]
    ports = leaf_cabling(groups)
    rounds = vf.verify_incast_plan(nodes, 7, ports)
    assert len(rounds) == 8
    receivers = [g["receiver"] for rnd in rounds for g in rnd]
    assert sorted(receivers) == sorted(nodes)
    group = {n: g for g, ns in enumerate(groups) for n in ns}
    for rnd in rounds:
        used = [n for g in rnd for n in [g["receiver"], *g["senders"]]]
        assert len(used) == len(set(used))
        for g in rnd:
            # interleaved over 4 leaf groups: 6 of the 7 senders sit under another leaf
            assert len(g["senders"]) == 7 and sum(group[s] != group[g["receiver"]] for s in g["senders"]) == 6
    cov = checks_plans.incast_coverage(rounds, checks_cabling.leaves_of(checks_cabling.cabling_index(ports)))
    assert cov == {"ports": [128, 128], "uplinks": [4, 4]}
    # 9 nodes: the lone last node joins the group before (k + 2 rounds), still every node once
    rounds = checks_plans.incast_plan([f"n{i}" for i in range(9)], 7)
    assert len(rounds) == 9 and sorted(g["receiver"] for r in rounds for g in r) == [f"n{i}" for i in range(9)]
    assert checks_plans.incast_plan(["n0"], 7) == []


@pytest.mark.parametrize("cls", ["healthy", "send", "receive", "both"])
@pytest.mark.parametrize("n", [64, 256])
def test_fleet_model_names_hard_faults_with_no_false_positive(n, cls):
    r = fleet.scenario(n, cls, seed=1)
    assert (r["named"], r["injected"], r["false_positives"]) == ((0, 0, 0) if cls == "healthy" else (1, 1, 0))
    assert r["passed"] is (cls == "healthy")
    assert r["named_after"] is not None and r["named_after"] <= 3
    assert r["incast_ports"][0] == r["incast_ports"][1] == n * fleet.RAILS


def test_fleet_model_healthy_fabric_has_zero_findings():
    r = fleet.scenario(64, "healthy", seed=3)
    assert r["codes"] == {} and r["retest_rounds"] == 0


@pytest.mark.parametrize("cls", ["intermittent", "uplink", "several"])
@pytest.mark.parametrize("n", [64, 256])
def test_fleet_model_names_every_class_and_the_combination_with_no_false_positive(n, cls):
    # issue 24's "Done when": named, nothing healthy named, nothing partial; an uplink and a lone flaky
    # rail within 3 re-test rounds; several at once within the role's 3 phases (a 50 % rail must be seen
    # failing each way: each test of a direction misses it half the time, see docs/benchmarks.md)
    r = fleet.scenario(n, cls, seed=0)
    assert (r["named"], r["false_positives"], r["partial"]) == (r["injected"], 0, 0)
    assert r["named_after"] is not None and r["named_phase"] <= fleet.MAX_RETEST_PHASES
    if cls != "several":
        assert r["named_after"] <= 3
    assert r["passed"] is False


def test_fleet_model_exact_findings_of_each_class():
    """The findings themselves, not only the counts: node, device, direction, code; the uplink named
    by its leaves, and no rail under it (a rail cleared by same-leaf re-tests is not a finding)."""

    def final(cls, n=64, seed=0):
        fab = fleet.Fabric(n, seed=seed)
        want = fab.inject(cls)
        cabling = checks_cabling.cabling_index(fab.ports)
        logs = {node: [] for node in fab.nodes}
        done = vf.verify_rounds(fab.nodes, "sampled", 2, fab.ports)
        fab.run(done, 0, logs)
        for _ in range(fleet.MAX_RETEST_PHASES):
            retest = vf.verify_retest_rounds(logs, fab.nodes, fleet.FABRIC, done, 1, fab.ports)
            if not retest:
                break
            fab.run(retest, len(done), logs)
            done = done + retest
        found, _ = rdma.rdma_findings(rdma.round_tests(logs), fleet.FABRIC, cabling, uplinks=fab.uplinks)
        return want, found

    for cls, code, direction in (
        ("send", "RDMA_BW_LOW", "send"),
        ("receive", "RDMA_BW_LOW", "receive"),
        ("both", "RDMA_BW_LOW", "both"),
        ("intermittent", "RDMA_INTERMITTENT", "both"),
    ):
        want, found = final(cls)
        (node, device), _, _ = want[0]
        assert [(f["code"], f["node"], f["device"], f["direction"]) for f in found] == [(code, node, device, direction)]
        assert found[0]["switch"] == fleet.Fabric(64).leaf[(node, device)]
        if cls == "intermittent":
            assert 0 < found[0]["failure_rate"] < 1
        else:
            assert found[0]["failure_rate"] == 1.0
    want, found = final("uplink")
    assert [f["code"] for f in found] == ["UPLINK_DEGRADED"] and want[0][1] in found[0]["leaves"]
    assert {u["port"] for u in found[0]["uplinks"]} >= {"swp33", "swp34"}


def test_side_states_and_what_stays_open():
    def tests(*spec):
        # spec: (server, client, ok, leaf of server, leaf of client)
        out = []
        for s, c, ok, *_ in spec:
            out.append({"server": [s, "mlx5_0"], "client": [c, "mlx5_0"], "ok": ok, "blame": None})
        return out, {(x[0], "mlx5_0"): x[3] for x in spec} | {(x[1], "mlx5_0"): x[4] for x in spec}

    st = lambda f, t: {"fails": f, "total": t, "same_fails": f, "same_total": t}  # noqa: E731
    assert checks_retests.side_state(None) == "untested"
    assert checks_retests.side_state(st(0, 2)) == "clean"
    assert checks_retests.side_state(st(3, 3)) == "bad"
    assert checks_retests.side_state(st(2, 2)) == "open"  # two failures: not yet hard
    assert checks_retests.side_state({"fails": 3, "total": 3, "same_fails": 0, "same_total": 0}) == "open"  # only across
    n = checks_retests.RETEST_SAMPLES
    assert checks_retests.side_state(st(2, n)) == "flaky" and checks_retests.side_state(st(2, n - 1)) == "open"
    assert checks_retests.side_state({"fails": 2, "total": 4, "same_fails": 0, "same_total": 2}) == "cleared"
    assert checks_retests.side_state({"fails": 2, "total": 3, "same_fails": 0, "same_total": 1}) == "open"
    # x sends badly (3 same-leaf failures, none passed), receives fine twice: settled, nothing open;
    # its peers' receive failures are explained by x and need no re-test
    t, leaf = tests(
        ("a", "x", False, "L1", "L1"), ("b", "x", False, "L1", "L1"), ("c", "x", False, "L1", "L1"), ("x", "a", True, "L1", "L1"), ("x", "b", True, "L1", "L1")
    )
    assert checks_retests.retest_needs(t, leaf) == {}
    assert vf.settled(t, leaf) == {("x", "mlx5_0")}
    # one failure across leaves: both ends open, once each way
    t, leaf = tests(("a", "x", False, "L1", "L2"))
    assert checks_retests.retest_needs(t, leaf) == {("a", "mlx5_0"): 1, ("x", "mlx5_0"): 1}
    # a side that fails and passes without an uplink: flaky-looking, 3 tests a way per phase
    t, leaf = tests(("a", "x", False, "L1", "L1"), ("b", "x", True, "L1", "L1"), ("c", "x", False, "L1", "L1"))
    assert checks_retests.retest_needs(t, leaf)[("x", "mlx5_0")] == checks_retests.RETEST_REPEATS_FLAKY


def test_retest_phases_stop_when_nothing_is_open():
    # a hard send fault at 64 nodes is settled after the first phase: the second plans nothing
    fab = fleet.Fabric(64, seed=2)
    fab.inject("send")
    logs = {node: [] for node in fab.nodes}
    done = vf.verify_rounds(fab.nodes, "sampled", 2, fab.ports)
    fab.run(done, 0, logs)
    phases = 0
    while phases < 5:
        retest = vf.verify_retest_rounds(logs, fab.nodes, fleet.FABRIC, done, 1, fab.ports)
        if not retest:
            break
        fab.run(retest, len(done), logs)
        done, phases = done + retest, phases + 1
    assert 1 <= phases <= fleet.MAX_RETEST_PHASES


def test_a_tie_elsewhere_does_not_make_a_test_inconclusive():
    # x and y each fail receiving twice (chosen first), then once sending of 4: each send failure is its
    # own endpoint's, already suspected; the two rank alike but share no test - neither is inconclusive
    tests = [
        t_("x", "a", False),
        t_("x", "b", False),
        t_("x", "c"),
        t_("e", "x", False),
        t_("f", "x"),
        t_("g", "x"),
        t_("h", "x"),
        t_("y", "c", False),
        t_("y", "d", False),
        t_("y", "a"),
        t_("f", "y", False),
        t_("e", "y"),
        t_("g", "y"),
        t_("h", "y"),
        t_("a", "b"),
        t_("b", "a"),
        t_("c", "d"),
        t_("d", "c"),
        t_("e", "a"),
        t_("f", "b"),
    ]
    suspects, inconclusive = rdma.localise(rdma.evaluate_tests(tests, 180.0))
    assert [(s["endpoint"][0], s["direction"], s["fails"], s["total"]) for s in suspects] == [("x", "both", 3, 7), ("y", "both", 3, 7)]
    assert inconclusive == []
    # one failing test whose own two ends rank alike stays inconclusive
    _, inconclusive = rdma.localise(rdma.evaluate_tests(tests + [t_("q", "p", False)], 180.0))
    assert [(t["server"][0], t["client"][0]) for t in inconclusive] == [("q", "p")]


def lone_tests(flaky_backed):
    """Rail mlx5_0 of nodes a1..a4 under leafA, b1..b4 under leafB. x=a1 fails across leaves, once each way,
    and passes same-leaf; with ``flaky_backed`` another pair (a3 -> b3) fails through the same leaves too."""
    leaf = {(f"{g}{i}", "mlx5_0"): f"leaf{g.upper()}" for g in "ab" for i in range(1, 5)}
    tests = [
        t_("b1", "a1", False),
        t_("a1", "b2", False),
        t_("a2", "a1"),
        t_("a1", "a2"),
        t_("a4", "a1"),
        t_("a1", "a4"),
        t_("b2", "b1"),
        t_("b1", "b2"),
        t_("a2", "b1"),
        t_("b2", "a2"),
        t_("b3", "a3"),
        t_("a3", "b3", not flaky_backed),
        t_("b4", "a4"),
        t_("a4", "b4"),
        t_("a3", "a4"),
        t_("b4", "b3"),
    ]
    return rdma.evaluate_tests(tests, 180.0), leaf


def test_cross_leaf_failures_clear_a_side_only_when_the_uplink_fails_other_pairs():
    # a1's cross-leaf failures share its own end: no uplink's other failures back them (a flaky rail that
    # happened to fail only across, or its victims): lone, never cleared, re-tested
    tests, leaf = lone_tests(False)
    st = checks_retests.side_stats(tests, leaf)
    assert st[("send", ("a1", "mlx5_0"))]["lone_fails"] == 1 and st[("receive", ("a1", "mlx5_0"))]["lone_fails"] == 1
    assert checks_retests.side_state(st[("send", ("a1", "mlx5_0"))]) == "open"
    assert ("a1", "mlx5_0") in checks_retests.retest_needs(tests, leaf)
    # another pair of the same leaves fails too (a bad uplink fails many): a1's failures are backed,
    # its 2 same-leaf passes each way clear it
    tests, leaf = lone_tests(True)
    st = checks_retests.side_stats(tests, leaf)
    assert st[("send", ("a1", "mlx5_0"))]["lone_fails"] == 0
    assert checks_retests.side_state(st[("send", ("a1", "mlx5_0"))]) == "cleared"
    assert checks_retests.side_state(st[("receive", ("a1", "mlx5_0"))]) == "cleared"
    assert ("a1", "mlx5_0") not in checks_retests.retest_needs(tests, leaf)
    # a hard fault's victim: x never sent right, so v's receive failure across the leaves is x's, not lone
    leaf2 = leaf | {("x", "mlx5_0"): "leafA", ("v", "mlx5_0"): "leafB"}
    hard = rdma.evaluate_tests([t_("v", "x", False), t_("a2", "x", False), t_("v", "b2"), t_("x", "a2")], 180.0)
    st = checks_retests.side_stats(hard, leaf2)
    assert st[("receive", ("v", "mlx5_0"))]["lone_fails"] == 0 and st[("send", ("x", "mlx5_0"))]["lone_fails"] == 1
    # a lone side that fails and passes over RETEST_SAMPLES tests is flaky, not open for ever
    lone = {"fails": 1, "total": checks_retests.RETEST_SAMPLES, "same_fails": 0, "same_total": checks_retests.RETEST_SAMPLES - 1, "lone_fails": 1}
    assert checks_retests.side_state(lone) == "flaky"
    assert checks_retests.side_state(dict(lone, total=checks_retests.RETEST_SAMPLES - 1)) == "open"


def test_retest_demand_is_per_direction():
    tests, leaf = lone_tests(False)
    demand = checks_retests.retest_demand(tests, leaf)
    # a1 fails and passes both ways, its failures lone: flaky-looking, RETEST_REPEATS_FLAKY each way, no
    # direction first (it failed both); b1 failed receiving from a1 (which sent fine elsewhere), lone too:
    # its receive side flaky-looking, its clean send side what it lacks of RETEST_SAMPLES, send first
    n = checks_retests.RETEST_REPEATS_FLAKY
    assert demand[("a1", "mlx5_0")] == {"send": n, "receive": n, "first": None}
    assert demand[("b1", "mlx5_0")] == {"send": n, "receive": n, "first": "send"}
    assert demand[("b2", "mlx5_0")] == {"send": n, "receive": n, "first": "receive"}
    # backed by another pair's failure through the leaves (an uplink's): cleared, a test more for the
    # side that passed only twice is all b1 needs (a victim passes it, an intermittent rail would not)
    tests, leaf = lone_tests(True)
    demand = checks_retests.retest_demand(tests, leaf)
    assert ("a1", "mlx5_0") not in demand
    # b1's receive: one backed failure, one same-leaf pass (2 clear it): once more; its send passed twice
    # (enough for a one-way fault) but its receive both failed and passed: one send test more, first
    assert demand[("b1", "mlx5_0")] == {"send": 1, "receive": 1, "first": "send"}
    # a side that fails and passes same-leaf (flaky-looking): RETEST_REPEATS_FLAKY on it, the clean other
    # side what it lacks of RETEST_SAMPLES, that never-failed side first (it must be seen failing)
    tests = rdma.evaluate_tests(
        [t_("b", "x", False), t_("c", "x"), t_("d", "x", False), t_("x", "b"), t_("x", "c"), t_("x", "d"), t_("c", "b"), t_("b", "c")], 180.0
    )
    x = checks_retests.retest_demand(tests)[("x", "mlx5_0")]
    assert x == {"send": checks_retests.RETEST_REPEATS_FLAKY, "receive": checks_retests.RETEST_REPEATS_FLAKY, "first": "receive"}
    many = tests + rdma.evaluate_tests([t_("x", p) for p in "efghij"], 180.0)
    assert checks_retests.retest_demand(many)[("x", "mlx5_0")]["receive"] == checks_retests.RETEST_SAMPLES - 9
