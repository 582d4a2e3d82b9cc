"""nccl_env_settings: HCAs from cabled ACTIVE ports, RoCEv2 GID index, TC, overrides, down ports."""

import copy
import os

from ansible_collections.linerate.fabric.plugins.filter.nccl_env import nccl_env_settings, shell_quote
from ansible_collections.linerate.fabric.plugins.module_utils.host import rdma

from module_harness import fixture

CABLED = [{"device": "mlx5_0", "netdev": "enp65s0f0np0"}, {"device": "mlx5_1", "netdev": "enp81s0f0np0"}]
OPTIONS = {
    "transport": "roce",
    "down_ports": "fail",
    "gid_index": "",
    "ib_tc": 104,
    "socket_ifname": "eth0",
    "gdr_level": "PHB",
    "net": "IB",
    "intent_overrides": {},
    "overrides": {},
}


def facts(mlx5_1_up=True):
    outputs = {"ibdev2netdev": "ibdev2netdev_v.txt", "ibv_devinfo": "ibv_devinfo_v.txt", "ibstat": "ibstat.txt", "show_gids": "show_gids.txt"}

    def run(argv):
        tool = os.path.basename(argv[0])
        if tool == "mst":
            return 127, "", "mst: command not found"
        return 0, fixture("rdma_facts", outputs[tool]), ""

    f = rdma.collect(run)
    if mlx5_1_up:  # the rdma_facts fixture has mlx5_1 down without IPv4; bring it up here
        f = copy.deepcopy(f)
        row = f["ports"][1]
        row.update(up=True, state="PORT_ACTIVE", physical_state="LinkUp", roce_v2_ipv4_gid_index=3)
    return f


def test_roce_settings_in_order():
    out = nccl_env_settings(facts(), CABLED, OPTIONS)
    assert out["problems"] == [] and out["excluded"] == []
    assert list(out["settings"].items()) == [
        ("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"),
        ("NCCL_IB_GID_INDEX", "3"),
        ("NCCL_IB_TC", "104"),
        ("NCCL_SOCKET_IFNAME", "eth0"),
        ("NCCL_NET", "IB"),
    ]
    # the explicit GDR level is the per-job environment's, never /etc/nccl.conf's
    assert out["job"] == {"NCCL_NET_GDR_LEVEL": "PHB"}


def test_down_port_fails_by_default():
    out = nccl_env_settings(facts(mlx5_1_up=False), CABLED, OPTIONS)
    assert len(out["problems"]) == 1
    assert out["problems"][0].startswith("mlx5_1 port 1 (enp81s0f0np0) is cabled but not up")


def test_infiniband_port_in_init_points_at_the_subnet_manager():
    f = facts()
    f["ports"][1].update(up=False, state="PORT_INIT", physical_state="LinkUp")
    out = nccl_env_settings(f, CABLED, dict(OPTIONS, transport="infiniband"))
    assert "stays INIT until a subnet manager configures it" in out["problems"][0]
    roce = nccl_env_settings(f, CABLED, OPTIONS)
    assert "subnet manager" not in roce["problems"][0]


def test_down_port_excluded_on_request():
    out = nccl_env_settings(facts(mlx5_1_up=False), CABLED, dict(OPTIONS, down_ports="exclude"))
    assert out["problems"] == []
    assert out["settings"]["NCCL_IB_HCA"] == "=mlx5_0:1"
    assert "left out of NCCL_IB_HCA" in out["excluded"][0]


def test_uncabled_port_is_not_used():
    out = nccl_env_settings(facts(), CABLED[:1], OPTIONS)
    assert out["settings"]["NCCL_IB_HCA"] == "=mlx5_0:1"


def test_gid_index_disagreement_fails():
    f = facts()
    f["ports"][1]["roce_v2_ipv4_gid_index"] = 5
    out = nccl_env_settings(f, CABLED, OPTIONS)
    assert "differs between ports" in out["problems"][0]


def test_missing_ipv4_gid_fails():
    f = facts()
    f["ports"][1]["roce_v2_ipv4_gid_index"] = None
    out = nccl_env_settings(f, CABLED, OPTIONS)
    assert "no RoCE v2 IPv4 GID" in out["problems"][0]


def test_forced_gid_index_must_be_v2():
    out = nccl_env_settings(facts(), CABLED[:1], dict(OPTIONS, gid_index=2))
    assert out["problems"] and "not a RoCE v2 GID" in out["problems"][0]
    out = nccl_env_settings(facts(), CABLED[:1], dict(OPTIONS, gid_index=3))
    assert out["problems"] == [] and out["settings"]["NCCL_IB_GID_INDEX"] == "3"


def test_netdev_mismatch_is_a_problem():
    out = nccl_env_settings(facts(), [{"device": "mlx5_0", "netdev": "eth9"}], OPTIONS)
    assert "rdma_ports says netdev eth9" in out["problems"][0]


def test_overrides_last_and_validated():
    out = nccl_env_settings(facts(), CABLED, dict(OPTIONS, intent_overrides={"NCCL_IB_TIMEOUT": 20}, overrides={"NCCL_IB_TIMEOUT": 22, "FOO": 1}))
    assert out["settings"]["NCCL_IB_TIMEOUT"] == "22"
    assert list(out["settings"])[-1] == "NCCL_IB_TIMEOUT"
    assert out["problems"] == ["override FOO: only NCCL_* names are allowed"]


def test_infiniband_has_no_gid_or_tc():
    f = facts()
    out = nccl_env_settings(f, CABLED, dict(OPTIONS, transport="infiniband"))
    assert "NCCL_IB_GID_INDEX" not in out["settings"] and "NCCL_IB_TC" not in out["settings"]


def test_shell_quote():
    assert shell_quote("=mlx5_0:1") == "'=mlx5_0:1'"
    assert shell_quote("a'b") == "'a'\"'\"'b'"
