"""Attribution before action (issue 35): one shared element explains the failures of several nodes; the nodes
it explains are not drained for them; a node's own fault stays its own."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.checks import attribution
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling as checks_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown


def lab(nodes=4):
    """The lab's shape: rail 0 on leaf1, rail 1 on leaf2, one spine."""
    ports = {
        f"node{i}": [
            {"device": "mlx5_0", "switch": "leaf1", "switch_port": f"swp{i}"},
            {"device": "mlx5_1", "switch": "leaf2", "switch_port": f"Ethernet{8 * (i - 1)}"},
        ]
        for i in range(1, nodes + 1)
    }
    uplinks = {
        "leaf1": [{"port": "swp51", "peer": "spine1", "peer_port": "Ethernet1/1"}],
        "leaf2": [{"port": "Ethernet200", "peer": "spine1", "peer_port": "Ethernet2/1"}],
    }
    return checks_cabling.cabling_index(ports), uplinks


def flap(node, device, switch=None):
    return faults.finding("LINK_FLAP", f"{node} {device} flapped", node=node, device=device, switch=switch, check="link_health")


def codes(found):
    return sorted((f["code"], f.get("element")) for f in found)


def test_a_leaf_that_fails_every_node_under_it_is_one_finding_and_explains_them():
    cab, up = lab()
    found = [flap(f"node{i}", "mlx5_0", "leaf1") for i in range(1, 5)]
    new, check = attribution.attribute(found, cab, up)
    assert codes(new) == [("LEAF_SUSPECT", "leaf1")]
    (leaf,) = new
    assert leaf["explains"] == ["node1", "node2", "node3", "node4"] and leaf["switch"] == "leaf1"
    assert leaf["severity"] == "error" and leaf["node"] is None
    assert all(f.get("explained_by") == "leaf1" for f in found if f["code"] == "LINK_FLAP")
    assert check["attribution"]["elements"][0]["nodes"] == leaf["explains"]
    assert not check["attribution"]["passed"]


def test_one_node_flapping_is_its_own_fault():
    cab, up = lab()
    found = [flap("node2", "mlx5_1", "leaf2")]
    new, check = attribution.attribute(found, cab, up)
    assert new == [] and "explained_by" not in found[0] and check["attribution"]["passed"]


@pytest.mark.parametrize(
    "nodes,failing,want",
    [
        (32, 16, True),  # half the leaf's ports: the leaf
        (32, 15, False),  # below half: each node's own (the budget is the next guard)
        (4, 1, False),  # one node never makes an element
        (4, 2, True),
    ],
)
def test_the_share_and_node_count_rule(nodes, failing, want):
    cab, up = lab(nodes)
    found = [flap(f"node{i}", "mlx5_0") for i in range(1, failing + 1)]
    new, _ = attribution.attribute(found, cab, up)
    assert bool(new) is want
    assert all(bool(f.get("explained_by")) is want for f in found if f["code"] == "LINK_FLAP")
    # the element's finding is added to the list it was given (the report's)
    assert [f for f in found if f["code"] == "LEAF_SUSPECT"] == new


def test_the_rule_is_the_intent_s():
    cab, up = lab(32)
    found = [flap(f"node{i}", "mlx5_0") for i in range(1, 9)]
    new, check = attribution.attribute(found, cab, up, policy={"attribution": {"min_nodes": 8, "min_share_percent": 25}})
    assert codes(new) == [("LEAF_SUSPECT", "leaf1")] and check["attribution"]["rule"]["min_nodes"] == 8
    found = [flap(f"node{i}", "mlx5_0") for i in range(1, 8)]
    assert attribution.attribute(found, cab, up, policy={"attribution": {"min_nodes": 8, "min_share_percent": 1}})[0] == []


def test_a_node_s_own_state_is_never_explained_by_a_leaf():
    cab, up = lab()
    found = [faults.finding("PCIE_DEGRADED", "x", node=f"node{i}", device="GPU0") for i in range(1, 5)]
    found += [faults.finding("DRIFT_NCCL_CONF", "x", node=f"node{i}", device="mlx5_0") for i in range(1, 5)]
    assert attribution.attribute(found, cab, up)[0] == []
    assert not any(f.get("explained_by") for f in found)


def test_warnings_are_not_attributed():
    cab, up = lab()
    found = [faults.finding("MLXLINK_RECOMMENDATION", "x", node=f"node{i}", device="mlx5_0") for i in range(1, 5)]
    assert attribution.attribute(found, cab, up)[0] == []


def test_a_miscabled_port_is_attributed_to_nothing():
    cab, up = lab()
    found = [
        flap("node1", "mlx5_0"),
        flap("node2", "mlx5_0"),
        faults.finding("CABLE_SWAPPED", "x", node="node1", device="mlx5_0", switch="leaf1"),
        faults.finding("CABLE_SWAPPED", "x", node="node2", device="mlx5_0", switch="leaf1"),
    ]
    assert attribution.attribute(found, cab, up)[0] == []


def fleet_like(sus=2, per=4, rails=2):
    """Rail-optimised units: rail r of unit s on leaf su<s>-r<r>; every leaf uplinks to spine1 and spine2."""
    ports = {}
    for s in range(sus):
        for i in range(per):
            ports[f"n{s}{i}"] = [{"device": f"mlx5_{r}", "switch": f"su{s}-r{r}"} for r in range(rails)]
    leaves = sorted({p["switch"] for ps in ports.values() for p in ps})
    up = {leaf: [{"peer": "spine1"}, {"peer": "spine2"}] for leaf in leaves}
    return checks_cabling.cabling_index(ports), up, ports


def test_a_rail_over_several_leaves_is_a_rail_not_each_leaf():
    """Each of the rail's 4 leaves has 2 failing nodes (below min_nodes 3): none is a suspect; the rail, 8 nodes
    over 4 leaves, is."""
    cab, up, _ports = fleet_like(sus=4, per=4)
    found = [flap(f"n{s}{i}", "mlx5_1") for s in range(4) for i in range(2)]
    new, _ = attribution.attribute(found, cab, up, policy={"attribution": {"min_nodes": 3, "min_share_percent": 50}})
    assert codes(new) == [("RAIL_SUSPECT", "mlx5_1")] and new[0]["device"] == "mlx5_1"
    assert len(new[0]["explains"]) == 8


def test_a_leaf_is_tried_before_its_rail_and_its_spine():
    cab, up, ports = fleet_like(sus=2, per=4)
    found = [flap(f"n0{i}", "mlx5_0") for i in range(4)]
    new, _ = attribution.attribute(found, cab, up)
    assert codes(new) == [("LEAF_SUSPECT", "su0-r0")]


def test_a_spine_explains_failures_over_several_of_its_leaves():
    """2 failing nodes on each rail (below min_nodes 3 for a leaf or a rail), 4 under the spine: the spine."""
    cab, up, _ports = fleet_like(sus=2, per=4, rails=2)
    found = [flap("n00", "mlx5_0"), flap("n10", "mlx5_0"), flap("n01", "mlx5_1"), flap("n11", "mlx5_1")]
    rule = {"attribution": {"min_nodes": 3, "min_share_percent": 25}}
    new, _ = attribution.attribute(found, cab, up, policy=rule)
    assert codes(new) == [("SPINE_SUSPECT", "spine1"), ("SPINE_SUSPECT", "spine2")]
    # with the same failures on one rail, the rail (tried first) takes them and the spines nothing
    found = [flap("n00", "mlx5_0"), flap("n10", "mlx5_0"), flap("n01", "mlx5_0"), flap("n11", "mlx5_0")]
    assert codes(attribution.attribute(found, cab, up, policy=rule)[0]) == [("RAIL_SUSPECT", "mlx5_0")]


def test_the_subnet_manager_on_infiniband():
    cab, up = lab()
    sm = faults.finding("IB_SM_NOT_MASTER", "no master", check="subnet_manager")
    found = [sm] + [faults.finding("PORT_DOWN", "x", node=f"node{i}", device="mlx5_0") for i in (1, 3)]
    cab = {k: {**v, "switch": None} for k, v in cab.items()}
    new, _ = attribution.attribute(found, cab, {}, transport="infiniband")
    assert codes(new) == [("SM_SUSPECT", "subnet manager")]
    assert attribution.attribute([f for f in found if f is not sm], cab, {}, transport="infiniband")[0] == []


def unseen(node, reason="unreachable"):
    return faults.finding("NODE_NOT_VERIFIED", f"{node}: not verified", node=node, check="nodes", reason=reason)


def test_several_nodes_unreachable_at_once_are_the_controller_s_path():
    cab, up = lab()
    found = [unseen("node3"), unseen("node4", "left_play")]
    new, _ = attribution.attribute(found, cab, up, hostvars={})
    assert codes(new) == [("CONTROLLER_PATH", "controller")] and new[0]["explains"] == ["node3", "node4"]
    assert all(f["explained_by"] == "controller" for f in found if f["code"] == "NODE_NOT_VERIFIED")


def test_one_unreachable_node_or_a_failed_task_is_not_the_path():
    cab, up = lab()
    assert attribution.attribute([unseen("node3")], cab, up)[0] == []
    assert attribution.attribute([unseen("node3", "failed"), unseen("node4", "failed")], cab, up)[0] == []


def test_unreachable_nodes_are_grouped_by_their_jump_host():
    cab, up = lab(6)
    hv = {
        "node1": {"ansible_ssh_common_args": "-o ProxyJump=admin@bastion-a:2222"},
        "node2": {"ansible_ssh_common_args": "-J bastion-a"},
        "node3": {"ansible_ssh_extra_args": '-o ProxyCommand="ssh -W %h:%p -q ops@bastion-b"'},
        "node4": {"ansible_ssh_common_args": "-o StrictHostKeyChecking=yes"},
    }
    found = [unseen(n) for n in ("node1", "node2", "node3", "node4")]
    new, _ = attribution.attribute(found, cab, up, hostvars=hv)
    assert codes(new) == [("CONTROLLER_PATH", "jump host bastion-a")]
    assert new[0]["jump_host"] == "bastion-a" and new[0]["explains"] == ["node1", "node2"]
    assert [f.get("explained_by") for f in found if f["code"] == "NODE_NOT_VERIFIED"] == ["jump host bastion-a"] * 2 + [None, None]


@pytest.mark.parametrize(
    "args,want",
    [
        ("-o ProxyJump=admin@bastion1:2222 -o StrictHostKeyChecking=yes", "bastion1"),
        ("-J bastion2", "bastion2"),
        ("-o ProxyJump=j1,j2", "j1"),
        ('-o ProxyCommand="ssh -W %h:%p -q user@bast3"', "bast3"),
        ('-o ProxyCommand="nc -X 5 -x proxy4:1080 %h %p"', "proxy4"),
        ("-o UserKnownHostsFile=/x -o StrictHostKeyChecking=yes", None),
        ("", None),
    ],
)
def test_jump_host(args, want):
    assert attribution.jump_host({"ansible_ssh_common_args": args}) == want


def test_the_report_shows_the_elements_and_the_decision():
    cab, up = lab()
    found = [flap(f"node{i}", "mlx5_0", "leaf1") for i in range(1, 5)]
    _new, checks = attribution.attribute(found, cab, up)
    doc = report.build_report(found, faults.summarize(found), checks, {"name": "lab", "transport": "roce"}, {})
    doc["remediation"] = {
        "enabled": True,
        "breaker": {"tripped": False},
        "allowed": {"run": 1, "window": 1},
        "budget": {"window_hours": 24},
        "fleet": 4,
        "drain": [],
        "held": {},
        "unseen": [],
    }
    md = report_markdown.to_markdown(doc)
    assert "## Remediation" in md and "**LEAF_SUSPECT leaf1** explains 4 node(s): node1, node2, node3, node4" in md
    assert "Drain breaker: **closed**" in md and "- Drain: -" in md
