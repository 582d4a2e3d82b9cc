"""rail_ports: rdma_ports from a rail pattern, validated like hand-written ones."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.linerate.fabric.plugins.filter.rail_ports import FilterModule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent import rails

rail_ports = FilterModule().filters()["rail_ports"]
DGX = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
PLAN = {"device": DGX, "netdev": "enp{rail}s0f0np0", "switch": "leaf{rail1:02d}", "switch_port": "swp{port}", "subnet": "10.{rail}.0.0/16"}


def test_eight_rails_leaf_per_rail_port_per_node():
    ports = rail_ports("gpu017", PLAN)
    assert len(ports) == 8
    assert ports[0] == {"device": "mlx5_0", "netdev": "enp0s0f0np0", "switch": "leaf01", "switch_port": "swp17", "address": "10.0.0.17/16"}
    assert ports[7] == {"device": "mlx5_11", "netdev": "enp7s0f0np0", "switch": "leaf08", "switch_port": "swp17", "address": "10.7.0.17/16"}


def test_scalable_units_and_sonic_port_steps():
    plan = {
        "device": "mlx5_{rail}",
        "netdev": "eth{rail1}",
        "rails": 8,
        "switch": "su{su}-r{rail}",
        "switch_port": "Ethernet{port}",
        "port_base": 0,
        "port_step": 8,
        "nodes_per_leaf": 32,
        "subnet": "10.{rail}.0.0/16",
        "address_offset": 10,
    }
    first, last_of_su0, first_of_su1 = (rails.expand(n, plan) for n in (1, 32, 33))
    assert (first[2]["switch"], first[2]["switch_port"], first[2]["address"]) == ("su0-r2", "Ethernet0", "10.2.0.11/16")
    assert (last_of_su0[2]["switch"], last_of_su0[2]["switch_port"]) == ("su0-r2", "Ethernet248")
    assert (first_of_su1[2]["switch"], first_of_su1[2]["switch_port"], first_of_su1[2]["address"]) == ("su1-r2", "Ethernet0", "10.2.0.43/16")


def test_infiniband_ports_are_numbers_and_node_base():
    plan = {"device": "mlx5_{rail}", "netdev": "ibp{rail}s0", "rails": 2, "switch": "ib{rail}", "switch_port": "{port}", "node_base": 0, "port_base": 1}
    assert rails.expand("n0", plan)[1] == {"device": "mlx5_1", "netdev": "ibp1s0", "switch": "ib1", "switch_port": 1}
    assert rails.expand(5, dict(plan, pci="0000:{rail:02d}:00.0"))[0]["pci"] == "0000:00:00.0"


@pytest.mark.parametrize("node,number", [("gpu017", 17), ("dgx-a-0042.example.org", 42), ("n1r2c3", 3), (9, 9), ("rack7.gpu001", 7)])
def test_node_number(node, number):
    assert rails.node_number(node) == number


@pytest.mark.parametrize(
    "node,plan,message",
    [
        ("gpu", PLAN, "rail_ports: node: 'gpu' is not allowed (allowed: an integer or a host name"),
        (True, PLAN, "rail_ports: node: True is not allowed"),
        ([1], PLAN, "rail_ports: node: [1] is not allowed"),
        (0, PLAN, "rail_ports: node: 0 is not allowed (allowed: a node number at least node_base (1))"),
        (1, [PLAN], "rail_ports: plan: [{"),
        (1, dict(PLAN, leaf="x"), "rail_ports: leaf: 'x' is not allowed (allowed: unknown key; allowed keys: rails"),
        (1, {k: v for k, v in PLAN.items() if k != "switch"}, "rail_ports: switch: None is not allowed (allowed: required"),
        (1, dict(PLAN, device=DGX[:7], pci=["0000:01:00.0"] * 8), "rail_ports: pci: ['0000:01:00.0', "),
        (1, dict(PLAN, device=DGX[:7], pci=["0000:01:00.0"] * 8), "(allowed: a pattern or a list of 7 names, one per rail)"),
        (1, dict(PLAN, device=DGX[:7], rails=8), "rail_ports: device: ['mlx5_0'"),
        (1, dict(PLAN, device="mlx5_{rail}"), "rail_ports: rails: None is not allowed (allowed: an integer 1..32)"),
        (1, dict(PLAN, rails=True), "rail_ports: rails: True is not allowed"),
        (1, dict(PLAN, rails=33), "rail_ports: rails: 33 is not allowed"),
        (
            1,
            dict(PLAN, switch="leaf{rack}"),
            "rail_ports: switch: 'leaf{rack}' is not allowed (allowed: placeholders {rail}, {rail1}, {node}, {su}, {leaf}, {leaf1}, {port}; {rack} is not one)",
        ),
        (1, dict(PLAN, switch="leaf{rail.__class__}"), "a brace is left over"),
        (1, dict(PLAN, switch_port="swp{port:x}"), "a brace is left over"),
        (1, dict(PLAN, switch=["leaf1"]), "rail_ports: switch: ['leaf1'] is not allowed (allowed: a string pattern"),
        (1, dict(PLAN, subnet="10.{rail}.0.1/16"), "rail_ports: subnet: '10.0.0.1/16' is not allowed (allowed: an IPv4 network"),
        (1, dict(PLAN, subnet="fd00::/64"), "rail_ports: subnet: 'fd00::/64' is not allowed"),
        (
            300,
            dict(PLAN, subnet="10.{rail}.0.0/24"),
            "rail_ports: subnet: '10.0.0.0/24' is not allowed (allowed: a network with room for host 300 (it has 256 addresses))",
        ),
        (1, dict(PLAN, port_step=0), "rail_ports: port_step: 0 is not allowed (allowed: an integer 1..64)"),
        (1, dict(PLAN, nodes_per_leaf=-1), "rail_ports: nodes_per_leaf: -1 is not allowed"),
    ],
)
def test_bad_plans_name_key_and_value(node, plan, message):
    with pytest.raises(rails.PlanError) as e:
        rails.expand(node, plan)
    assert message in str(e.value)
    with pytest.raises(AnsibleFilterError, match="rail_ports: "):
        rail_ports(node, plan)


def _inventory(n, plan):
    hosts = {f"gpu{i:03d}": {"rdma_ports": rail_ports(f"gpu{i:03d}", plan)} for i in range(1, n + 1)}
    switches = {}
    for hv in hosts.values():
        for p in hv["rdma_ports"]:
            # a 400G SONiC leaf carries its platform's headroom row (validation refuses a speed without one)
            switches[p["switch"]] = {"switch_platform": "sonic", "switch_sonic_pg_lookup": {400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}}}
    return hosts, switches


def test_a_256_node_inventory_from_a_few_lines_passes_validation():
    plan = {
        "device": DGX,
        "netdev": "enp{rail}s0f0np0",
        "switch": "su{su}-leaf{rail1}",
        "switch_port": "Ethernet{port}",
        "port_base": 0,
        "port_step": 8,
        "nodes_per_leaf": 32,
        "subnet": "10.{rail}.0.0/16",
    }
    hosts, switches = _inventory(256, plan)
    assert sum(len(h["rdma_ports"]) for h in hosts.values()) == 2048
    assert len(switches) == 64
    assert schema.validate({"transport": "roce"}, hosts, switches) == []


def test_generated_entries_go_through_the_same_validation():
    # 300 nodes in a /24 per rail: .255 is the broadcast address; 32 nodes on one leaf per rail
    # with a port per node would be fine, but the unit is left out so ports collide.
    plan = dict(PLAN, subnet="10.{rail}.0.0/24", switch_port="swp{su}")
    hosts, switches = _inventory(255, {k: v for k, v in plan.items()})
    problems = schema.validate({"transport": "roce"}, hosts, {s: {"switch_platform": "nvue"} for s in switches})
    assert (
        "gpu255: rdma_ports[0].address: '10.0.0.255/24' is not allowed (allowed: an IPv4 host address with "
        "prefix length, such as 192.168.100.11/24; 10.0.0.255 is the network or broadcast address of 10.0.0.0/24)" in problems
    )
    assert any(
        p.startswith(
            "gpu002 mlx5_0: switch_port: 'leaf01 swp0' is not allowed (allowed: a switch port cabled once; leaf01 swp0 is already cabled to gpu001 mlx5_0)"
        )
        for p in problems
    )


# ---------------------------------------------------------------- several rails per leaf, per-leaf port offsets (issue 26)
FOUR_LEAVES = {
    "device": DGX,
    "netdev": "enp{rail}s0f0np0",
    "rails_per_leaf": 2,
    "switch": "leaf{leaf1}",
    "switch_port": "swp{port}",
    "subnet": "10.{rail}.0.0/16",
}


def test_eight_rails_on_four_leaves_interleaved():
    ports = rail_ports("gpu003", FOUR_LEAVES)
    assert [(p["device"], p["switch"], p["switch_port"]) for p in ports] == [
        ("mlx5_0", "leaf1", "swp5"),
        ("mlx5_3", "leaf1", "swp6"),
        ("mlx5_4", "leaf2", "swp5"),
        ("mlx5_5", "leaf2", "swp6"),
        ("mlx5_6", "leaf3", "swp5"),
        ("mlx5_9", "leaf3", "swp6"),
        ("mlx5_10", "leaf4", "swp5"),
        ("mlx5_11", "leaf4", "swp6"),
    ]
    assert ports[1]["address"] == "10.1.0.3/16"
    assert [p["switch_port"] for p in rail_ports(1, FOUR_LEAVES)[:2]] == ["swp1", "swp2"]


def test_rails_in_blocks_and_per_leaf_offsets():
    plan = dict(FOUR_LEAVES, rail_port_offset=32, port_offsets=[0, 0, 64, 64], nodes_per_leaf=32)
    first, last = rails.expand(1, plan), rails.expand(32, plan)
    assert [p["switch_port"] for p in first] == ["swp1", "swp33", "swp1", "swp33", "swp65", "swp97", "swp65", "swp97"]
    assert [p["switch_port"] for p in last] == ["swp32", "swp64", "swp32", "swp64", "swp96", "swp128", "swp96", "swp128"]
    assert rails.expand(33, plan)[0]["switch_port"] == "swp1"  # the next unit starts over


def test_several_rails_per_leaf_pass_validation_for_a_whole_unit():
    hostvars = {f"gpu{n:03d}": {"rdma_ports": rail_ports(f"gpu{n:03d}", FOUR_LEAVES)} for n in range(1, 33)}
    leaves = {p["switch"] for hv in hostvars.values() for p in hv["rdma_ports"]}
    ports = [(p["switch"], p["switch_port"]) for hv in hostvars.values() for p in hv["rdma_ports"]]
    assert leaves == {"leaf1", "leaf2", "leaf3", "leaf4"} and len(ports) == len(set(ports)) == 256


@pytest.mark.parametrize(
    "plan,message",
    [
        (dict(FOUR_LEAVES, rails_per_leaf=3), "rail_ports: rails_per_leaf: 3 is not allowed (allowed: a divisor of rails (8): each leaf takes as many rails)"),
        (dict(FOUR_LEAVES, rails_per_leaf=0), "rail_ports: rails_per_leaf: 0 is not allowed (allowed: an integer 1..32)"),
        (
            dict(FOUR_LEAVES, port_offsets=[0, 64]),
            "rail_ports: port_offsets: [0, 64] is not allowed (allowed: a list of 4 integers 0..4096, one per leaf (8 rails / rails_per_leaf 2))",
        ),
        (dict(FOUR_LEAVES, port_offsets=[0, 0, True, 0]), "rail_ports: port_offsets: [0, 0, True, 0] is not allowed"),
        (dict(FOUR_LEAVES, rail_port_offset=0), "rail_ports: rail_port_offset: 0 is not allowed (allowed: an integer 1..4096)"),
    ],
)
def test_bad_leaf_layouts_name_key_value_and_allowed(plan, message):
    with pytest.raises(AnsibleFilterError) as err:
        rail_ports("gpu001", plan)
    assert message in str(err.value)
