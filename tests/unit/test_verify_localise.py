"""Localisation in both directions, intermittent rails, uplinks, the incast plan (issue 24), on the
plan/evaluation code of module_utils/verify.py and the verify filters; the fleet model of
bench/fleet.py drives them at 64 and 256 nodes x 8 rails."""
import os
import sys

import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as vf
from ansible_collections.linerate.fabric.plugins.module_utils import verify

from test_verify_plans import FABRIC

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import fleet  # noqa: E402  (bench/fleet.py: the fabric model)


def t_(server, client, ok=True, dev="mlx5_0"):
    return {"server": [server, dev], "client": [client, dev], "gbps": 385.0 if ok else 150.0,
            "client_error": None, "server_error": None}


# a is bad only when it sends (client) / only when it receives (server); b..e are good
SEND_ONLY = [t_("b", "a", False), t_("c", "a", False), t_("a", "d"), t_("a", "e"), t_("d", "b"),
             t_("e", "c")]
RECV_ONLY = [t_("a", "b", False), t_("a", "c", False), t_("d", "a"), t_("e", "a"), t_("d", "b"),
             t_("e", "c")]
CABLING = verify.cabling_index({n: [{"device": "mlx5_0", "switch": "leaf1", "switch_port": f"swp{i}"}]
                                for i, n in enumerate("abcde", 1)})


def where(found):
    return [(f["code"], f["node"], f["device"], f.get("direction"), f.get("fails"), f.get("total")) for f in found]


def test_send_only_fault_is_named_with_its_direction():
    found, _ = verify.rdma_findings(SEND_ONLY, FABRIC, CABLING)
    assert where(found) == [("RDMA_BW_LOW", "a", "mlx5_0", "send", 2, 2)]
    assert found[0]["severity"] == "error" and found[0]["failure_rate"] == 1.0
    assert "send side bad" in found[0]["message"] and "as client (sending)" in found[0]["message"]


def test_receive_only_fault_is_named_with_its_direction():
    found, _ = verify.rdma_findings(RECV_ONLY, FABRIC, CABLING)
    assert where(found) == [("RDMA_BW_LOW", "a", "mlx5_0", "receive", 2, 2)]
    assert "as server (receiving)" in found[0]["message"]


def test_both_directions():
    tests = SEND_ONLY[:2] + RECV_ONLY[:2] + [t_("d", "b"), t_("e", "c"), t_("b", "d"), t_("c", "e")]
    found, _ = verify.rdma_findings(tests, FABRIC, CABLING)
    assert where(found) == [("RDMA_BW_LOW", "a", "mlx5_0", "both", 4, 4)]


def test_intermittent_rail_reports_its_failure_rate():
    tests = [t_("b", "a", False), t_("c", "a"), t_("d", "a", False), t_("e", "a"),
             t_("a", "b"), t_("a", "c"), t_("d", "b"), t_("e", "c"), t_("b", "d")]
    found, _ = verify.rdma_findings(tests, FABRIC, CABLING)
    assert where(found) == [("RDMA_INTERMITTENT", "a", "mlx5_0", "send", 2, 4)]
    assert found[0]["failure_rate"] == 0.5 and found[0]["cause"] == "RDMA_BW_LOW"
    assert "failure rate 50%" in found[0]["message"] and found[0]["severity"] == "error"


def test_one_failing_test_without_evidence_is_an_inconclusive_error():
    found, _ = verify.rdma_findings([t_("a", "b", False)], FABRIC, {})
    assert [(f["code"], f["severity"], f["node"], f["peer"]["node"]) for f in found] == [
        ("RDMA_INCONCLUSIVE", "error", "a", "b")]
    assert verify.summarize(found)["passed"] is False


def leaf_cabling(groups):
    """{node: rdma_ports} with nodes of group g under leaf<g>."""
    return {n: [{"device": "mlx5_0", "switch": f"leaf{g}", "switch_port": f"swp{i}"}]
            for g, nodes in enumerate(groups) for i, n in enumerate(nodes, 1)}


def test_uplink_is_named_when_cross_leaf_tests_through_it_fail_and_same_leaf_pass():
    groups = [["a1", "a2", "a3"], ["b1", "b2", "b3"], ["c1", "c2", "c3"]]
    ports = leaf_cabling(groups)
    cabling = verify.cabling_index(ports)
    up = {"leaf0": [{"port": "swp31", "peer": "spine1", "peer_port": "Ethernet1/1"}]}
    tests = []
    for g in groups:  # same-leaf tests pass
        tests += [t_(g[0], g[1]), t_(g[1], g[2]), t_(g[2], g[0])]
    for x, y in (("a1", "b1"), ("b2", "a2"), ("a3", "c3"), ("c1", "a1")):  # through leaf0's uplink: fail
        tests.append(t_(x, y, False))
    tests += [t_("b3", "c2"), t_("c2", "b3")]  # leaf1 <-> leaf2: pass
    found, _ = verify.rdma_findings(tests, FABRIC, cabling, uplinks=up)
    assert [(f["code"], f["switch"], f["switch_port"], f["leaves"], f["fails"]) for f in found] == [
        ("UPLINK_DEGRADED", "leaf0", "swp31", ["leaf0"], 4)]
    assert "swp31 -> spine1 Ethernet1/1" in found[0]["message"]


def test_one_bad_rail_under_a_leaf_does_not_blame_the_uplink():
    groups = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
    cabling = verify.cabling_index(leaf_cabling(groups))
    tests = [t_("b1", "a1", False), t_("a2", "a1", False), t_("b2", "a1", False), t_("a1", "b3"),
             t_("a2", "a3"), t_("b1", "b2"), t_("a3", "b3"), t_("b2", "a2")]
    found, _ = verify.rdma_findings(tests, FABRIC, cabling)
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
    assert vf.verify_rounds(nodes, "sampled", 2, {n: [{"device": "mlx5_0", "switch": "leaf1"}] for n in nodes}) == \
        verify.sampled_plan(nodes, 2)


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
    cov = verify.incast_coverage(rounds, verify.leaves_of(verify.cabling_index(ports)))
    assert cov == {"ports": [128, 128], "uplinks": [4, 4]}
    # 9 nodes: the lone last node joins the group before (k + 2 rounds), still every node once
    rounds = verify.incast_plan([f"n{i}" for i in range(9)], 7)
    assert len(rounds) == 9 and sorted(g["receiver"] for r in rounds for g in r) == [f"n{i}" for i in range(9)]
    assert verify.incast_plan(["n0"], 7) == []


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
