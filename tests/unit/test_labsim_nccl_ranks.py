"""The lab's simulated nccl-tests runs one process per rank like the real binary (issue 37): ranks are
grouped into nodes by host, and on one node with P2P and SHM off (the NET loopback test) the ring leaves
through the NICs, so a slow rail lowers that node's bus bandwidth and nothing else's."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))

from linerate_lab import hardware  # noqa: E402
from linerate_lab.tools import nccl_net, nccl_tests  # noqa: E402


def port(node, device, speed=400):
    return {
        "node": node,
        "device": device,
        "link_layer": "Ethernet",
        "gid": {"type": "v2", "ipv4": "10.0.0.1"},
        "active_mtu": 4096,
        "netdev_mtu": 9000,
        "speed_gbps": speed,
        "host_pfc": True,
        "priority": 3,
        "switch_pfc": [3],
        "switch": "leaf1",
        "switch_port": "swp1",
    }


def rank(host, r, gpu, speeds=(400, 400), p2p_off=True, pid=100):
    ib = [port(host, f"mlx5_{k}", s) for k, s in enumerate(speeds)]
    return {
        "rank": r,
        "host": host,
        "pid": pid + r,
        "ip": "192.0.2.1",
        "gpus": 1,
        "ib": ib,
        "net": "IB",
        "gdr": True,
        "p2p_off": p2p_off,
        "rails": [f"mlx5_{gpu * len(speeds) // 8}"],
        "buses": [nccl_tests.GPU_BUSES[gpu]],
    }


def test_ranks_of_one_host_are_one_node_and_rank_0_lists_them_all():
    ranks = [rank(h, k * 8 + g, g) for k, h in enumerate(("node1", "node2")) for g in range(8)]
    v = nccl_net.decide(ranks)
    assert v["nodes"] == ["node1", "node2"] and v["nranks_gpu"] == 16
    assert v["hosts"] == ["node1"] * 8 + ["node2"] * 8 and v["buses"][:2] == ["18", "2a"]
    # the same physics as one process per node driving 8 GPUs: two 400G rails of each node
    node_mode = nccl_net.decide([dict(rank("node1", 0, 0), gpus=8), dict(rank("node2", 1, 0), gpus=8)])
    assert v["busbw"] == pytest.approx(node_mode["busbw"]) and v["busbw"] > 80


def test_the_net_loopback_is_bounded_by_the_slowest_rail_over_the_ranks_it_carries():
    healthy = nccl_net.decide([rank("node3", g, g) for g in range(8)])
    assert healthy.get("loopback") and healthy["busbw"] == pytest.approx(400 * 0.96 / 4 / 8 * 0.94, rel=0.05)
    slow = nccl_net.decide([rank("node3", g, g, speeds=(400, 200)) for g in range(8)])
    assert slow["busbw"] == pytest.approx(healthy["busbw"] / 2, rel=0.01)
    # P2P on: one node's ring stays on NVLink and no NIC is measured
    nvlink = nccl_net.decide([rank("node3", g, g, speeds=(400, 200), p2p_off=False) for g in range(8)])
    assert not nvlink.get("loopback") and nvlink["busbw"] == 370.0


def test_each_rank_sends_through_its_gpus_rail():
    n = hardware.new_node("node1", 1, "roce", 2, 400, [("leaf1", "swp1"), ("leaf2", "swp1")])
    info = {"ib": [{"device": "mlx5_0"}, {"device": "mlx5_1"}]}
    assert nccl_net.rank_rails(n, info, [0]) == ["mlx5_0"] and nccl_net.rank_rails(n, info, [7]) == ["mlx5_1"]
    # NCCL_IB_HCA admitting only mlx5_1: every GPU's traffic goes there
    assert nccl_net.rank_rails(n, {"ib": [{"device": "mlx5_1"}]}, [0, 1]) == ["mlx5_1", "mlx5_1"]


def test_the_gpus_of_a_node_share_its_rails_evenly_as_nccl_picks_them():
    two = hardware.new_node("node1", 1, "roce", 2, 400, [("leaf1", "swp1"), ("leaf2", "swp1")])
    info = {"ib": [{"device": "mlx5_0"}, {"device": "mlx5_1"}]}
    # each GPU on its own NUMA node's rail: GPU0-3 on mlx5_0, GPU4-7 on mlx5_1 (launchers.rank_layout's too)
    assert nccl_net.rank_rails(two, info, range(8)) == ["mlx5_0"] * 4 + ["mlx5_1"] * 4
    four = hardware.new_node("node1", 1, "roce", 4, 400, [(f"leaf{k}", "swp1") for k in range(1, 5)])
    rails = nccl_net.rank_rails(four, {"ib": [{"device": f"mlx5_{k}"} for k in range(4)]}, range(8))
    assert sorted(rails.count(f"mlx5_{k}") for k in range(4)) == [2, 2, 2, 2]
