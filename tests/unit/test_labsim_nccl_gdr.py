"""The lab's simulated NCCL decides GPU Direct RDMA as NCCL does (src/graph/paths.cc ncclTopoCheckGdr):
the GPU-NIC path against NCCL_NET_GDR_LEVEL when a job sets it, else NCCL's default PXB. nccl.conf holds
no GDR level any more (issue 35), so the default rule is what the lab's healthy verification relies on."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))

from linerate_lab import hardware  # noqa: E402
from linerate_lab.tools import nccl_net  # noqa: E402


def node():
    return hardware.new_node("node1", 1, "roce", 2, 400, [("leaf1", "swp1"), ("leaf2", "swp1")])


def test_a_rail_nic_behind_its_gpus_switch_is_pix_and_no_nic_is_sys():
    n = node()
    assert nccl_net.gdr_path(n, {"mlx5_0"}) == "PIX" and nccl_net.gdr_path(n, {"mlx5_1"}) == "PIX"
    n["gpus"] = 0
    assert nccl_net.gdr_path(n, {"mlx5_0"}) == "SYS"  # no GPU at all: nothing near
    n["gpus"] = 1  # one GPU on NUMA 0, paired with mlx5_0 only
    assert nccl_net.gdr_path(n, {"mlx5_0"}) == "PIX" and nccl_net.gdr_path(n, {"mlx5_1"}) == "SYS"


def test_no_level_set_is_nccls_default_pxb():
    assert nccl_net.DEFAULT_NET_GDR_LEVEL == "PXB"
    assert [nccl_net.gdr_enabled({}, p) for p in ("PIX", "PXB", "PHB", "SYS")] == [True, True, False, False]


def test_an_explicit_level_is_the_farthest_path_gdr_is_used_on():
    want = {
        "LOC": [False, False, False, False],
        "PIX": [True, False, False, False],
        "PXB": [True, True, False, False],
        "PHB": [True, True, True, False],
        "SYS": [True, True, True, True],
    }
    for level, expected in want.items():
        assert [nccl_net.gdr_enabled({"NCCL_NET_GDR_LEVEL": level}, p) for p in ("PIX", "PXB", "PHB", "SYS")] == expected, level
    # ncclGetLevel: names compared exactly (strcmp), anything else the default; legacy integers mapped
    assert not nccl_net.gdr_enabled({"NCCL_NET_GDR_LEVEL": "phb"}, "PHB")
    assert not nccl_net.gdr_enabled({"NCCL_NET_GDR_LEVEL": "bogus"}, "PHB")
    assert [nccl_net.gdr_enabled({"NCCL_NET_GDR_LEVEL": n}, "PHB") for n in ("0", "2", "3", "9")] == [False, False, True, True]
