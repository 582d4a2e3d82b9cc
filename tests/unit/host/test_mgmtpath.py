"""The management path is sacred (issue 25 item 5), and RDMA devices in use are not pulled away (item 4).

A fake sysfs with the kernel's layout: /sys/class/net/<if>/{lower_<dev>,device,bonding/slaves},
/sys/bus/pci/devices/<bdf>/{driver,vendor,physfn}, /sys/class/infiniband/<dev>/device and
/sys/class/infiniband_verbs/uverbsN/ibdev; a fake /proc with fd links to /dev/infiniband/uverbsN.
"""

import json
import os

import pytest

from ansible_collections.linerate.fabric.plugins.modules import disruption_guard
from ansible_collections.linerate.fabric.plugins.module_utils.host import mgmtpath
from module_harness import Tools, run_module

NODE = "10.0.0.11"
CONTROLLER = "10.0.0.1"


class Sys:
    def __init__(self, root):
        self.root = root
        self.sysfs = str(root / "sys")
        self.procfs = str(root / "proc")
        os.makedirs(self.procfs)

    def pci(self, bdf, driver="mlx5_core", vendor="0x15b3", physfn=None):
        dev = self.root / "sys" / "devices" / "pci0000:00" / bdf
        dev.mkdir(parents=True)
        (dev / "vendor").write_text(vendor + "\n")
        drv = self.root / "sys" / "bus" / "pci" / "drivers" / driver
        drv.mkdir(parents=True, exist_ok=True)
        (dev / "driver").symlink_to(drv)
        if physfn:
            (dev / "physfn").symlink_to(self.root / "sys" / "devices" / "pci0000:00" / physfn)
        bus = self.root / "sys" / "bus" / "pci" / "devices"
        bus.mkdir(parents=True, exist_ok=True)
        (bus / bdf).symlink_to(dev)
        return dev

    def netdev(self, name, bdf=None, lower=(), slaves=()):
        net = self.root / "sys" / "class" / "net" / name
        net.mkdir(parents=True)
        if bdf:
            (net / "device").symlink_to(self.root / "sys" / "devices" / "pci0000:00" / bdf)
        for low in lower:
            (net / f"lower_{low}").symlink_to(self.root / "sys" / "class" / "net" / low)
        if slaves:
            (net / "bonding").mkdir()
            (net / "bonding" / "slaves").write_text(" ".join(slaves) + "\n")

    def rdma(self, ibdev, bdf, uverbs):
        d = self.root / "sys" / "class" / "infiniband" / ibdev
        d.mkdir(parents=True)
        (d / "device").symlink_to(self.root / "sys" / "devices" / "pci0000:00" / bdf)
        v = self.root / "sys" / "class" / "infiniband_verbs" / f"uverbs{uverbs}"
        v.mkdir(parents=True)
        (v / "ibdev").write_text(ibdev + "\n")

    def process(self, pid, comm, *targets):
        d = self.root / "proc" / str(pid)
        (d / "fd").mkdir(parents=True)
        (d / "comm").write_text(comm + "\n")
        for i, t in enumerate(("/dev/null",) + targets):
            (d / "fd" / str(i)).symlink_to(t)


@pytest.fixture
def host(tmp_path):
    """Two dual-port ConnectX cards (41:00.x, c1:00.x), an Intel management NIC (01:00.0)."""
    s = Sys(tmp_path)
    for bdf in ("0000:41:00.0", "0000:41:00.1", "0000:c1:00.0", "0000:c1:00.1"):
        s.pci(bdf)
    s.pci("0000:01:00.0", driver="igb", vendor="0x8086")
    s.pci("0000:41:00.2", physfn="0000:41:00.0")  # a VF of card 41
    s.netdev("eno1", "0000:01:00.0")
    s.netdev("enp65s0f0np0", "0000:41:00.0")
    s.netdev("enp65s0f1np1", "0000:41:00.1")
    s.netdev("enp193s0f0np0", "0000:c1:00.0")
    s.netdev("enp65s0f0v0", "0000:41:00.2")
    s.rdma("mlx5_0", "0000:41:00.0", 0)
    s.rdma("mlx5_1", "0000:41:00.1", 1)
    s.rdma("mlx5_2", "0000:c1:00.0", 2)
    return s


def ip_tools(mgmt_if, route_if=None):
    def ip(args):
        if args[:3] == ["-json", "addr", "show"]:
            return (
                0,
                json.dumps([{"ifname": "lo", "addr_info": [{"local": "127.0.0.1"}]}, {"ifname": mgmt_if, "addr_info": [{"family": "inet", "local": NODE}]}]),
                "",
            )
        if args[:3] == ["-json", "route", "get"]:
            return 0, json.dumps([{"dst": args[3], "dev": route_if or mgmt_if, "prefsrc": NODE}]), ""
        raise AssertionError(args)

    return Tools({"ip": ip})


def guard(capsys, host, tools, action, targets=(), **kw):
    args = {"action": action, "targets": list(targets), "local_address": NODE, "peer_address": CONTROLLER, "sysfs": host.sysfs, "procfs": host.procfs, **kw}
    return run_module(disruption_guard.main, args, tools, capsys)


def test_reads_the_connection_with_these_exact_commands(capsys, host):
    tools = ip_tools("eno1")
    res = guard(capsys, host, tools, "driver_restart")
    assert tools.calls == [["ip", "-json", "addr", "show"], ["ip", "-json", "route", "get", CONTROLLER]]
    assert not res.get("failed") and res["changed"] is False
    assert res["management"] == {"interfaces": ["eno1"], "netdevs": ["eno1"], "functions": ["0000:01:00.0"], "paths": ["eno1 -> 0000:01:00.0"]}


@pytest.mark.parametrize("action,targets", [("driver_restart", []), ("firmware_reset", ["0000:41:00.0"]), ("netdev_change", ["enp65s0f0np0"])])
def test_a_management_nic_elsewhere_allows_every_action(capsys, host, action, targets):
    assert not guard(capsys, host, ip_tools("eno1"), action, targets).get("failed")


def test_driver_restart_refused_over_a_connectx_port(capsys, host):
    res = guard(capsys, host, ip_tools("enp193s0f0np0"), "driver_restart")
    assert res["failed"]
    assert res["msg"] == (
        "refusing to restart the RDMA driver: Ansible reaches this host over enp193s0f0np0 -> 0000:c1:00.0, and "
        "the action takes down 0000:c1:00.0 (driver restart unloads its mlx driver). Apply it from the console "
        "or the BMC, or connect through a management interface on another NIC."
    )


def test_driver_restart_refused_through_a_vlan_on_a_connectx_port(capsys, host):
    host.netdev("enp193s0f0np0.100", lower=["enp193s0f0np0"])
    res = guard(capsys, host, ip_tools("enp193s0f0np0.100"), "driver_restart")
    assert res["failed"] and "enp193s0f0np0.100 -> enp193s0f0np0 -> 0000:c1:00.0" in res["msg"]


def test_a_vlan_on_a_bond_of_an_intel_and_a_connectx_port_is_followed_to_both(capsys, host):
    host.netdev("bond0", lower=["eno1", "enp193s0f0np0"], slaves=["eno1", "enp193s0f0np0"])
    host.netdev("bond0.10", lower=["bond0"])
    res = guard(capsys, host, ip_tools("bond0.10"), "firmware_reset", ["0000:c1:00.0"])
    assert res["failed"]
    assert res["management"]["functions"] == ["0000:01:00.0", "0000:c1:00.0"]
    assert res["management"]["paths"] == ["bond0.10 -> bond0 -> eno1 -> 0000:01:00.0", "bond0.10 -> bond0 -> enp193s0f0np0 -> 0000:c1:00.0"]
    assert "0000:c1:00.0 (mlxfwreset 0000:c1:00.0 resets every function of card 0000:c1:00)" in res["msg"]


def test_a_bond_known_only_from_bonding_slaves_is_followed(capsys, host):
    host.netdev("bond1", slaves=["enp65s0f1np1"])
    res = guard(capsys, host, ip_tools("bond1"), "driver_restart")
    assert res["failed"] and "bond1 -> enp65s0f1np1 -> 0000:41:00.1" in res["msg"]


def test_mlxfwreset_of_one_port_refused_when_the_sibling_port_carries_the_connection(capsys, host):
    res = guard(capsys, host, ip_tools("enp65s0f1np1"), "firmware_reset", ["41:00.0"])
    assert res["failed"]
    assert "0000:41:00.1 (mlxfwreset 41:00.0 resets every function of card 0000:41:00)" in res["msg"]
    # the other card is a different device: allowed
    assert not guard(capsys, host, ip_tools("enp65s0f1np1"), "firmware_reset", ["0000:c1:00.0"]).get("failed")


def test_a_vf_is_its_pf(capsys, host):
    res = guard(capsys, host, ip_tools("enp65s0f0v0"), "firmware_reset", ["0000:41:00.1"])
    assert res["failed"] and "enp65s0f0v0 -> 0000:41:00.0" in res["msg"]


def test_the_route_back_counts_even_when_the_address_is_elsewhere(capsys, host):
    res = guard(capsys, host, ip_tools("eno1", route_if="enp193s0f0np0"), "driver_restart")
    assert res["failed"] and res["management"]["interfaces"] == ["eno1", "enp193s0f0np0"]


@pytest.mark.parametrize("target,refused", [("enp193s0f0np0", True), ("enp193s0f0np0.100", True), ("enp65s0f0np0", False)])
def test_netdev_change_refused_on_the_connection_or_its_function(capsys, host, target, refused):
    host.netdev("enp193s0f0np0.100", lower=["enp193s0f0np0"])
    host.netdev("mgmt", lower=["enp193s0f0np0"])  # a macvlan on the rail port carries the connection
    res = guard(capsys, host, ip_tools("mgmt"), "netdev_change", [target])
    assert bool(res.get("failed")) is refused
    if refused:
        assert res["msg"].startswith(f"refusing to change {target}: Ansible reaches this host over mgmt -> enp193s0f0np0 -> 0000:c1:00.0")


def test_no_connection_no_path(capsys, host):
    tools = Tools({})
    res = guard(capsys, host, tools, "driver_restart", local_address="", peer_address="")
    assert tools.calls == [] and not res.get("failed") and res["management"]["interfaces"] == []


def test_an_unfound_connection_fails_closed(capsys, host):
    def ip(args):
        return 0, "[]", ""

    res = guard(capsys, host, Tools({"ip": ip}), "driver_restart")
    assert res["failed"] and res["msg"].startswith("cannot find the interface of this connection (node address 10.0.0.11, controller 10.0.0.1)")


def test_bad_targets_are_refused_before_any_read(capsys, host):
    tools = Tools({})
    res = guard(capsys, host, tools, "firmware_reset", ["41:00"])
    assert res["failed"] and tools.calls == []
    assert res["msg"] == ("targets: ['41:00'] is not allowed (allowed: one or more PCI addresses such as 0000:41:00.0 for action firmware_reset)")
    res = guard(capsys, host, tools, "netdev_change", [])
    assert res["failed"] and res["msg"].startswith("targets: [] is not allowed")


def test_devices_in_use_refuse_the_reset_of_their_card_only(capsys, host):
    host.process(4242, "ib_write_bw", "/dev/infiniband/uverbs1")
    host.process(5000, "python3", "/dev/infiniband/uverbs2")
    res = guard(capsys, host, ip_tools("eno1"), "firmware_reset", ["0000:41:00.0"])
    assert res["failed"] and res["in_use"] == [{"pid": 4242, "comm": "ib_write_bw", "device": "mlx5_1"}]
    assert res["msg"] == (
        "refusing to firmware reset: RDMA devices are in use by ib_write_bw (pid 4242) on mlx5_1; "
        "drain the node first (host_disruption_drain_command) or force it "
        "(host_disruption_force: true)"
    )
    forced = guard(capsys, host, ip_tools("eno1"), "firmware_reset", ["0000:41:00.0"], force=True)
    assert not forced.get("failed") and forced["in_use"] == res["in_use"]
    # a driver restart takes every device
    res = guard(capsys, host, ip_tools("eno1"), "driver_restart")
    assert [h["pid"] for h in res["in_use"]] == [4242, 5000]
    assert not guard(capsys, host, ip_tools("eno1"), "driver_restart", check_in_use=False).get("failed")


def test_force_never_overrides_the_management_path(capsys, host):
    res = guard(capsys, host, ip_tools("enp193s0f0np0"), "driver_restart", force=True, check_in_use=False)
    assert res["failed"] and res["msg"].startswith("refusing to restart the RDMA driver")


def test_card_and_bdf_forms():
    assert mgmtpath.card("41:00.1") == "0000:41:00" and mgmtpath.card("0000:C1:00.0") == "0000:c1:00"
    assert mgmtpath.full_bdf("41:00.0") == "0000:41:00.0"


def test_a_reboot_is_not_refused_by_the_path_but_by_devices_in_use(capsys, host):
    assert not guard(capsys, host, ip_tools("enp193s0f0np0"), "reboot").get("failed")
    host.process(77, "all_reduce_perf", "/dev/infiniband/uverbs0")
    res = guard(capsys, host, ip_tools("enp193s0f0np0"), "reboot")
    assert res["failed"] and res["in_use"] == [{"pid": 77, "comm": "all_reduce_perf", "device": "mlx5_0"}]
