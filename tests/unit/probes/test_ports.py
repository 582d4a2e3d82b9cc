"""rdma_port_check (module_utils/probes/ports.py, its judge checks/ports.py): exact argv through the shared Runner (locale C), port
state/speed/width/GID from ibv_devinfo's real output format, and the findings computed on the node."""

import os

from ansible_collections.linerate.fabric.plugins.module_utils.probes import ports as portcheck
from ansible_collections.linerate.fabric.plugins.modules import rdma_port_check
from module_harness import Tools, run_module

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "ibv_devinfo")
DEVINFO = open(os.path.join(FIX, "cx6dx_verbose_tabs.txt")).read()
IP = '[{"addr_info": [{"family": "inet", "local": "10.60.0.21"}]}]'
PORT = {"device": "mlx5_3", "netdev": "no-such-netdev0", "switch": "leaf1", "switch_port": "swp3", "address": "10.60.0.21/24"}
FABRIC = {"transport": "roce", "link_speed_gbps": 200, "link_width": 4}


def tools(devinfo=(0, DEVINFO, ""), ip=(0, IP, "")):
    return Tools({"ibv_devinfo": lambda args: devinfo, "ip": lambda args: ip})


def test_reads_state_speed_width_and_gid_from_ibv_devinfo(capsys):
    t = tools()
    res = run_module(rdma_port_check.main, {"ports": [PORT], "fabric": FABRIC, "node": "node1", "gid_index": 3}, t, capsys)
    assert t.calls == [["ibv_devinfo", "-v", "-d", "mlx5_3", "-i", "1"], ["ip", "-j", "-4", "addr", "show", "dev", "no-such-netdev0"]]
    [out] = res["ports"]
    assert out["present"] and out["state"] == "ACTIVE" and out["phys_state"] == "LinkUp"
    assert out["speed_gbps"] == 200.0 and out["width"] == 4
    assert out["gid"] == {"index": 3, "type": "RoCE v2", "gid": "::ffff:10.60.0.21", "ipv4": "10.60.0.21"}
    assert out["ipv4"] == ["10.60.0.21"] and out["gid_table"] and out["gid_index"] == 3
    assert res["findings"] == [] and res["passed"] is True and res["changed"] is False


def test_check_mode_reads_and_reports_the_same(capsys):
    args = {"ports": [PORT], "fabric": dict(FABRIC, link_speed_gbps=400), "node": "node1", "gid_index": 3}
    t1, t2 = tools(), tools()
    normal, check = run_module(rdma_port_check.main, args, t1, capsys), run_module(rdma_port_check.main, args, t2, capsys, check=True)
    assert t1.calls == t2.calls and normal == check and [f["code"] for f in check["findings"]] == ["PORT_SPEED"]


def test_missing_device_is_a_finding_not_a_crash(capsys):
    text = open(os.path.join(FIX, "error_no_devices.txt")).read()
    res = run_module(
        rdma_port_check.main, {"ports": [dict(PORT, device="mlx5_9")], "fabric": FABRIC, "node": "node1"}, tools(devinfo=(255, "", text)), capsys, check=True
    )
    [out] = res["ports"]
    assert out["present"] is False and out["error"].startswith("ibv_devinfo: ")
    [f] = res["findings"]
    assert f["code"] == "PORT_MISSING" and f["node"] == "node1" and f["device"] == "mlx5_9"
    assert f["switch"] == "leaf1" and f["switch_port"] == "swp3" and res["passed"] is False
    assert not res.get("failed")


def test_fail_on_findings_fails_with_their_messages(capsys):
    res = run_module(
        rdma_port_check.main,
        {"ports": [PORT], "fabric": dict(FABRIC, link_speed_gbps=400), "node": "node1", "gid_index": 3, "fail_on_findings": True},
        tools(),
        capsys,
    )
    assert res["failed"] and res["msg"] == "node1 mlx5_3: link at 200 Gb/s, expected 400 Gb/s"
    assert [f["code"] for f in res["findings"]] == ["PORT_SPEED"]


def test_netdev_mtu_and_carrier_come_from_sysfs():
    sysfs = {"/sys/class/net/no-such-netdev0/mtu": "1500", "/sys/class/net/no-such-netdev0/carrier": "1"}
    res = portcheck.check_ports(
        lambda argv: {"ibv_devinfo": (0, DEVINFO, ""), "ip": (0, IP, "")}[argv[0]], "node1", [PORT], dict(FABRIC, mtu={"host": 9000}), 3, read=sysfs.get
    )
    [out] = res["ports"]
    assert out["mtu"] == 1500 and out["carrier"] is True
    assert [f["code"] for f in res["findings"]] == ["MTU_MISMATCH"]


def test_an_empty_gid_index_and_unreadable_ip_output():
    res = portcheck.check_ports(
        lambda argv: {"ibv_devinfo": (0, DEVINFO, ""), "ip": (1, "not json", "")}[argv[0]], "node1", [PORT], FABRIC, 42, read=lambda path: None
    )
    [out] = res["ports"]
    assert out["gid"] is None and out["ipv4"] == [] and out["mtu"] is None and out["carrier"] is False
    [f] = res["findings"]
    assert f["code"] == "GID_MISSING" and "GID index 42 is empty" in f["message"]


def test_without_a_discovered_gid_index_no_index_is_assumed(capsys):
    """No GID-index-3 default (issue 29 item 3): the role passes none where nccl_env discovered none, and
    every RoCE port with a GID table is reported, saying why - never checked against an assumed index."""
    res = run_module(rdma_port_check.main, {"ports": [PORT], "fabric": FABRIC, "node": "node1"}, tools(), capsys)
    [out] = res["ports"]
    assert out["gid_index"] is None and out["gid"] is None
    [f] = res["findings"]
    assert f["code"] == "GID_MISSING" and res["passed"] is False
    assert f["message"] == (
        "node1 mlx5_3 (no-such-netdev0): no GID index to check: none holds a RoCE v2 IPv4 GID on this node (NCCL_IB_GID_INDEX could not be discovered)"
    )
    # InfiniBand has no GID to check
    ib = run_module(rdma_port_check.main, {"ports": [PORT], "fabric": dict(FABRIC, transport="infiniband"), "node": "node1"}, tools(), capsys)
    assert "GID_MISSING" not in [x["code"] for x in ib["findings"]]


def test_the_role_passes_the_discovered_index_or_none_never_a_default():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import yaml

    with open(os.path.join(root, "roles", "verify_fabric", "tasks", "ports.yml"), encoding="utf-8") as f:
        (task,) = yaml.safe_load(f)[:1]
    assert task["linerate.fabric.rdma_port_check"]["gid_index"] == ("{{ verify_fabric_gid_index if verify_fabric_gid_index not in [none, ''] else omit }}")
