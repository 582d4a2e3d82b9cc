"""Fabric ports of a switch derived from the cabling in inventory."""

import importlib.util
import os

from switch_testlib import ROOT

spec = importlib.util.spec_from_file_location("switch_fabric_filter", os.path.join(ROOT, "plugins", "filter", "switch_fabric.py"))
flt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(flt)

HOSTVARS = {
    "node1": {
        "rdma_ports": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}, {"device": "mlx5_1", "switch": "leaf2", "switch_port": "Ethernet0"}]
    },
    "node10": {"rdma_ports": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp10"}]},
    "node2": {"rdma_ports": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2", "speed_gbps": 200}]},
    "leaf1": {"switch_uplinks": [{"port": "swp31", "peer": "spine1", "peer_port": "Ethernet1/1"}]},
    "spine1": {},
}


def test_leaf_ports_from_nodes_and_own_uplinks_in_natural_order():
    ports = flt.fabric_ports(HOSTVARS, list(HOSTVARS), "leaf1", 400)
    assert [p["name"] for p in ports] == ["swp1", "swp2", "swp10", "swp31"]
    assert ports[0] == {"name": "swp1", "peer": "node1:mlx5_0", "speed_gbps": 400}
    assert ports[1]["speed_gbps"] == 200
    assert ports[3]["peer"] == "spine1:Ethernet1/1"


def test_spine_ports_from_the_leaves_uplinks_plus_extra():
    ports = flt.fabric_ports(HOSTVARS, list(HOSTVARS), "spine1", 400, [{"name": "Ethernet9/1", "peer": "x"}])
    assert ports == [{"name": "Ethernet1/1", "peer": "leaf1:swp31", "speed_gbps": 400}, {"name": "Ethernet9/1", "peer": "x", "speed_gbps": 400}]


def test_switch_without_cabling_has_no_ports():
    assert flt.fabric_ports(HOSTVARS, list(HOSTVARS), "leaf9", 400) == []
