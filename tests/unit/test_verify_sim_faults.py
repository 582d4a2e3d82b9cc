"""Lab faults of issue 24 (lab/sim/linerate_lab/faults/: rx-degrade and flaky in host.py, uplink-degrade in switch.py) and their
undo, and what the simulated data path (rdma.path, used by the simulated ib_write_bw) makes of them."""

import pytest

import labsim  # noqa: F401  (lab/sim on sys.path)
from linerate_lab import faults, rdma


def lab_model():
    nics = lambda i: [  # noqa: E731
        {
            "device": f"mlx5_{r}",
            "netdev": f"eth{r}",
            "switch": f"leaf{r + 1}",
            "switch_port": f"swp{i}",
        }
        for r in range(2)
    ]
    return {
        "nodes": {f"node{i}": {"nics": nics(i)} for i in (1, 2)},
        "switches": {
            "leaf1": {
                "ports": {},
                "uplinks": [{"port": "swp5", "peer": "spine1", "peer_port": "Ethernet1/1"}, {"port": "swp6", "peer": "spine1", "peer_port": "Ethernet2/1"}],
            }
        },
        "faults": [],
    }


def side(node, device="mlx5_0", switch="leaf1", **kw):
    p = {
        "node": node,
        "device": device,
        "error": None,
        "link_layer": "Ethernet",
        "speed_gbps": 400,
        "active_mtu": 4096,
        "netdev_mtu": 9000,
        "gid": {"type": "v2", "ipv4": "x"},
        "switch": switch,
        "switch_port": "swp1",
        "switch_mtu": None,
        "switch_speed_gbps": None,
        "host_pfc": True,
        "priority": 3,
        "switch_pfc": [3],
    }
    p.update(kw)
    return p


def test_rx_degrade_limits_only_the_receiving_side_and_is_undone():
    m = lab_model()
    faults.rx_degrade(None, m, "node1", "mlx5_0")
    nic = m["nodes"]["node1"]["nics"][0]
    assert nic["rx_limit_gbps"] == faults.RX_DEGRADE_GBPS and m["faults"] == [{"kind": "rx-degrade", "args": ["node1", "mlx5_0"]}]
    bad = side("node1", rx_limit_gbps=nic["rx_limit_gbps"])
    into = rdma.path(side("node2"), bad, salt="t")["gbps"]  # node1 is the server: written into
    out = rdma.path(bad, side("node2"), salt="t")["gbps"]  # node1 is the client: it writes
    assert into < 150 and out > 370
    faults.rx_restore(None, m, "node1", "mlx5_0")
    assert "rx_limit_gbps" not in nic and m["faults"] == []


def test_flaky_fails_a_share_of_tests_the_same_way_every_time():
    m = lab_model()
    faults.flaky(None, m, "node2", "mlx5_1")
    share = m["nodes"]["node2"]["nics"][1]["flaky"]
    a, b = side("node1"), side("node2", flaky=share)
    rates = [rdma.path(a, b, salt=f"node1|node2|{port}")["gbps"] for port in range(18515, 18515 + 200)]
    low = sum(r < 200 for r in rates)
    assert 70 <= low <= 130  # about half
    assert rates == [rdma.path(a, b, salt=f"node1|node2|{port}")["gbps"] for port in range(18515, 18515 + 200)]
    assert all(rdma.path(a, b)["gbps"] > 370 for _ in range(3))  # no test identity, no draw
    faults.flaky_stop(None, m, "node2", "mlx5_1")
    assert "flaky" not in m["nodes"]["node2"]["nics"][1] and m["faults"] == []


def test_uplink_degrade_hits_cross_leaf_flows_hashed_onto_it_only():
    m = lab_model()
    faults.uplink_degrade(None, m, "leaf1", "swp5")
    assert m["switches"]["leaf1"]["uplinks"][0]["degraded"] is True
    ups = [True, False]
    same = [rdma.path(side("node1", uplinks_degraded=ups), side("node2", uplinks_degraded=ups), salt=i)["gbps"] for i in range(50)]
    cross = [rdma.path(side("node1", uplinks_degraded=ups), side("node2", switch="leaf2"), salt=i)["gbps"] for i in range(100)]
    assert all(r > 370 for r in same)
    assert 25 <= sum(r < 200 for r in cross) <= 75
    # 4 QPs: each its own ECMP flow (its UDP source port); the test loses the share of QPs on the bad uplink
    multi = [rdma.path(side("node1", uplinks_degraded=ups), side("node2", switch="leaf2"), salt=i, qps=4) for i in range(100)]
    clean = rdma.path(side("node1"), side("node2", switch="leaf2"), salt=0, qps=4)["gbps"]
    assert {round(x["gbps"] / clean, 2) for x in multi} <= {1.0, 0.85, 0.7, 0.55, 0.4}
    assert sum(x["gbps"] < 0.9 * clean for x in multi) >= 80  # 15 in 16 4-QP tests touch it
    assert all("uplink of leaf1" in x["notes"] for x in multi if x["gbps"] < clean)
    faults.uplink_restore(None, m, "leaf1", "swp5")
    assert "degraded" not in m["switches"]["leaf1"]["uplinks"][0] and m["faults"] == []


def test_uplink_fault_refuses_an_unknown_switch_or_port_naming_what_is_allowed():
    m = lab_model()
    with pytest.raises(faults.FaultError, match=r"leaf1 has no uplink 'swp9' \(allowed: swp5, swp6\)"):
        faults.uplink_degrade(None, m, "leaf1", "swp9")
    with pytest.raises(faults.FaultError, match=r"'leaf7' is not a lab switch with uplinks \(allowed: leaf1\)"):
        faults.uplink_degrade(None, m, "leaf7", "swp5")
    assert m["faults"] == []


def test_switch_optic_degrade_sets_the_ports_module_and_is_undone_naming_what_is_allowed():
    m = lab_model()
    m["switches"]["leaf1"]["ports"] = {"swp1": {"pfc": [3]}, "swp2": {"pfc": [3]}}
    assert faults.FAULTS["switch-optic-degrade"] is faults.switch_optic_degrade
    faults.switch_optic_degrade(None, m, "leaf1", "swp2")
    assert m["switches"]["leaf1"]["ports"]["swp2"]["optics"] == {"rx_power_dbm": -14.0, "temperature_c": 78}
    assert "optics" not in m["switches"]["leaf1"]["ports"]["swp1"]
    faults.switch_optic_degrade(None, m, "leaf1", "swp2")  # twice: one record
    assert m["faults"] == [{"kind": "switch-optic-degrade", "args": ["leaf1", "swp2"]}]
    faults.switch_optic_restore(None, m, "leaf1", "swp2")
    assert m["switches"]["leaf1"]["ports"]["swp2"] == {"pfc": [3]} and m["faults"] == []
    with pytest.raises(faults.FaultError, match="leaf1 has no port 'swp9' \\(allowed: swp1, swp2\\)"):
        faults.switch_optic_degrade(None, m, "leaf1", "swp9")
    with pytest.raises(faults.FaultError, match="'leaf7' is not a lab switch"):
        faults.switch_optic_degrade(None, m, "leaf7", "swp1")
