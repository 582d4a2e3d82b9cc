"""The incast rotation (issue 24): every node a receiver once, its findings and coverage
(checks_incast.incast_rotation), the report's incast check (checks_incast.incast_check) and a node's part in a
round (filter verify_incast_role)."""

import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as vf
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast as checks_incast
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults

from checks.test_incast import ethtool
from test_verify_incast_hw import stat

INTENT = {"transport": "roce", "link_speed_gbps": 400, "roce": {"no_drop_priority": 3, "ecn": {"enabled": True}}, "verify": {"ib_write_bw_fraction": 0.9}}
FABRIC = published(INTENT)
DEVICES = ["mlx5_0", "mlx5_1"]


def ports(nodes, leaves_per_rail=1):
    """Rail r of node i on leaf ``r<r>-l<i % leaves_per_rail>`` (1: rail-optimised, one leaf per rail, the lab's)."""
    return {
        n: [{"device": d, "switch": f"r{r}-l{i % leaves_per_rail}", "switch_port": f"swp{i + 1}"} for r, d in enumerate(DEVICES)] for i, n in enumerate(nodes)
    }


def run_rotation(nodes, cabled, bad=None, no_pause=()):
    """Play ``verify_incast_plan`` into per-node records as incast_round.yml keeps them. ``bad``:
    {(node, device): Gb/s} of a sender's flow; ``no_pause``: (node, device) whose counters show no pause."""
    bad = bad or {}
    rounds = vf.verify_incast_plan(nodes, 7, cabled)
    log = {n: [] for n in nodes}
    for i, rnd in enumerate(rounds):
        for g in rnd:
            k = len(g["senders"])
            for n in [g["receiver"], *g["senders"]]:
                part = vf.verify_incast_role(rnd, n)
                sender = part["role"] == "sender"
                counters = {d: [ethtool(), ethtool(rx_prio3_pause=0 if (n, d) in no_pause or not sender else 50)] for d in DEVICES}
                hw = {d: [stat(d), stat(d, **({"rp_cnp_handled": 10} if sender else {"np_ecn_marked_roce_packets": 30, "np_cnp_sent": 30}))] for d in DEVICES}
                results = [{"device": d, "gbps": bad.get((n, d), 380.0 / k), "error": None} for d in DEVICES] if sender else []
                log[n].append(
                    {
                        "round": i,
                        "role": part["role"],
                        "receiver": part["receiver"],
                        "senders": part["senders"],
                        "devices": DEVICES,
                        "results": results,
                        "counters": counters,
                        "hw": hw,
                    }
                )
    return rounds, log


def test_lab_rail_optimised_every_port_a_receiver_uplinks_out_of_scope():
    nodes = ["node1", "node2", "node3", "node4"]
    cabled = ports(nodes)
    rounds, log = run_rotation(nodes, cabled)
    assert len(rounds) == 4 and sorted(g["receiver"] for r in rounds for g in r) == nodes
    found, rails, cov = checks_incast.incast_rotation(log, FABRIC, cabling.cabling_index(cabled), nodes)
    assert found == []
    assert cov["ports"] == [8, 8] and cov["uplinks"] == [0, 0] and cov["rounds"] == 4
    assert cov["receivers"] == nodes and cov["unproven_ports"] == []
    assert sorted((r["round"], r["receiver"], r["device"], r["k"]) for r in rails) == sorted((i, n, d, 3) for i, n in enumerate(nodes) for d in DEVICES)
    check = checks_incast.incast_check(found, rails, cov, {})
    assert check["passed"] and len(check["cases"]) == 8
    assert "host ports proven lossless 8/8 (100 %)" in check["detail"]
    assert "leaf uplinks none in scope (every rail under one leaf" in check["detail"]
    assert check["cases"][0]["name"] == "incast round 0: mlx5_0 -> node1 (k=3)"


def test_a_sender_without_pause_fails_its_group_and_leaves_that_port_unproven():
    nodes = [f"n{i}" for i in range(8)]
    cabled = ports(nodes, leaves_per_rail=2)
    rounds, log = run_rotation(nodes, cabled, bad={("n3", "mlx5_1"): 20.0}, no_pause=[("n3", "mlx5_1")])
    found, rails, cov = checks_incast.incast_rotation(log, FABRIC, cabling.cabling_index(cabled), nodes)
    # n3 sends into every other receiver of its group on mlx5_1: one INCAST_GOODPUT_LOW per round it sent
    receivers = [g["receiver"] for r in rounds for g in r if "n3" in g["senders"]]
    assert {(x["code"], x["node"], x["device"]) for x in found} == {("INCAST_GOODPUT_LOW", "n3", "mlx5_1")}
    assert len(found) == len(receivers) == 7
    assert cov["ports"] == [16 - 7, 16]
    assert sorted(cov["unproven_ports"]) == sorted(f"{r} mlx5_1" for r in receivers)
    # two leaves per rail, interleaved: the senders of mlx5_0's groups cross both leaves' uplinks
    assert cov["uplinks"][1] == 4 and cov["uplinks"][0] == 4
    check = checks_incast.incast_check(found, rails, cov, {})
    assert not check["passed"]
    failing = [c for c in check["cases"] if not c["ok"]]
    assert {c["code"] for c in failing} == {"INCAST_GOODPUT_LOW"} and len(failing) == 7
    md = "\n".join(report_markdown._evidence({"incast": check}))
    assert "host ports proven lossless: 9/16 (56 %)" in md
    assert "incast round" in md


def test_uplinks_listed_narrow_the_scope_and_a_finding_of_no_rail_is_its_own_case():
    nodes = [f"n{i}" for i in range(8)]
    cabled = ports(nodes, leaves_per_rail=2)
    _rounds, log = run_rotation(nodes, cabled)
    _f, rails, cov = checks_incast.incast_rotation(log, FABRIC, cabling.cabling_index(cabled), nodes, uplinks={"r0-l0": [], "r0-l1": []})
    assert cov["uplinks"] == [2, 2]
    sw = faults.finding("SWITCH_NO_HEADROOM", "r0-l0 swp1: no headroom", switch="r0-l0", switch_port="swp1", check="incast")
    check = checks_incast.incast_check([sw], rails, cov, {})
    assert not check["passed"] and check["cases"][-1] == {
        "name": "incast r0-l0 swp1",
        "ok": False,
        "code": "SWITCH_NO_HEADROOM",
        "message": "r0-l0 swp1: no headroom",
    }


def test_nodes_in_scope_without_records_count_as_unproven():
    nodes = ["node1", "node2", "node3", "node4"]
    cabled = ports(nodes + ["node5"])
    _rounds, log = run_rotation(nodes, ports(nodes))
    _f, _rails, cov = checks_incast.incast_rotation(log, FABRIC, cabling.cabling_index(cabled), nodes + ["node5"])
    assert cov["ports"] == [8, 10] and "node5 mlx5_0" in cov["unproven_ports"]


@pytest.mark.parametrize(
    "node,want",
    [
        ("a", {"role": "receiver", "receiver": "a", "senders": ["b", "c"]}),
        ("c", {"role": "sender", "receiver": "a", "senders": ["b", "c"]}),
        ("z", {"role": "idle", "receiver": None, "senders": []}),
    ],
)
def test_incast_role(node, want):
    rnd = [{"receiver": "a", "senders": ["b", "c"]}, {"receiver": "d", "senders": ["e", "f"]}]
    assert vf.verify_incast_role(rnd, node) == want


def test_groups_from_records_ignore_junk():
    log = {"a": [{"round": 1, "receiver": "a"}, "junk", {"round": 0}], "b": [{"round": 1, "receiver": "a"}]}
    assert checks_incast.incast_groups(log) == [(1, "a", {"a": {"round": 1, "receiver": "a"}, "b": {"round": 1, "receiver": "a"}})]
