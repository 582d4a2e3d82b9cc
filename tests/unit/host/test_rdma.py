"""rdma_facts: the join of four tools, and the module around it (real AnsibleModule)."""

import json
import os

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host import rdma
from ansible_collections.linerate.fabric.plugins.modules import rdma_facts

FIX = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "rdma_facts")
OUTPUTS = {
    "ibdev2netdev": "ibdev2netdev_v.txt",
    "ibv_devinfo": "ibv_devinfo_v.txt",
    "ibstat": "ibstat.txt",
    "show_gids": "show_gids.txt",
}


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


class FakeTools:
    def __init__(self, overrides=None):
        self.calls = []
        self.overrides = overrides or {}

    def __call__(self, argv):
        tool = os.path.basename(argv[0])
        self.calls.append([tool, *argv[1:]])
        if tool in self.overrides:
            return self.overrides[tool]
        if tool == "mst":
            return 127, "", "mst: command not found"
        return 0, fixture(OUTPUTS[tool]), ""


def test_collect_joins_tools_per_port():
    tools = FakeTools()
    facts = rdma.collect(tools)
    assert tools.calls[:4] == [["ibdev2netdev", "-v"], ["ibv_devinfo", "-v"], ["ibstat"], ["show_gids"]]
    p0, p1 = facts["ports"]
    assert p0 == {
        "device": "mlx5_0",
        "port": 1,
        "netdev": "enp65s0f0np0",
        "pci": "0000:41:00.0",
        "numa_node": None,
        "link_layer": "Ethernet",
        "state": "PORT_ACTIVE",
        "physical_state": "LinkUp",
        "speed_gbps": 400,
        "width": "4X",
        "active_mtu": 4096,
        "up": True,
        "roce_v2_ipv4_gid_index": 3,
        "fw_version": "28.39.2048",
        "psid": "MT_0000000838",
    }
    assert p1["device"] == "mlx5_1" and p1["up"] is False
    assert p1["roce_v2_ipv4_gid_index"] is None  # no IPv4 on the netdev: no RoCEv2 IPv4 GID
    assert facts["devices"]["mlx5_0"]["ca_type"] == "MT4129"


def test_gid_index_is_the_lowest_v2_ipv4():
    gids = [
        {"device": "mlx5_0", "port": 1, "index": 5, "version": "v2", "ipv4": "10.0.0.1"},
        {"device": "mlx5_0", "port": 1, "index": 3, "version": "v2", "ipv4": "10.0.0.2"},
        {"device": "mlx5_0", "port": 1, "index": 2, "version": "v1", "ipv4": "10.0.0.2"},
        {"device": "mlx5_0", "port": 1, "index": 1, "version": "v2", "ipv4": ""},
    ]
    assert rdma.roce_v2_ipv4_index(gids, "mlx5_0", 1) == 3


def test_mst_numa_is_used_when_present():
    mst = (
        "MST modules:\n------------\n    MST PCI module is not loaded\n    MST PCI configuration module loaded\n"
        "PCI devices:\n------------\n"
        "DEVICE_TYPE             MST                           PCI       RDMA            NET                                     NUMA  \n"
        "ConnectX7(rev:0)        /dev/mst/mt4129_pciconf0      41:00.0   mlx5_0          net-enp65s0f0np0                        0     \n"
        "ConnectX7(rev:0)        /dev/mst/mt4129_pciconf1      51:00.0   mlx5_1          net-enp81s0f0np0                        1     \n"
    )
    facts = rdma.collect(FakeTools({"mst": (0, mst, "")}))
    assert [p["numa_node"] for p in facts["ports"]] == [0, 1]


@pytest.mark.parametrize(
    "tool,rc,out,err,needle",
    [
        ("ibv_devinfo", 255, "", "Failed to get IB devices list: Function not implemented", "Failed to get IB devices list"),
        ("ibdev2netdev", 0, "", "", "ibdev2netdev"),
        (
            "show_gids",
            0,
            "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\nn_gids_found=0\n",
            "",
            "show_gids",
        ),
    ],
)
def test_tool_errors_stop_collection(tool, rc, out, err, needle):
    with pytest.raises(ToolFailure) as e:
        rdma.collect(FakeTools({tool: (rc, out, err)}))
    assert needle in str(e.value)
    assert e.value.kw["rc"] == rc and e.value.kw["cmd"][0] == tool and e.value.kw["stderr"] == err


def run_module(args, tools, capsys):
    def run_command(self, argv, **kw):
        assert kw.get("environ_update", {}).get("LC_ALL") == "C"
        return tools(argv)

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return None if name == "mst" else f"/usr/bin/{name}"

    with patch_module_args(args), pytest.MonkeyPatch.context() as mp:
        mp.setattr(basic.AnsibleModule, "run_command", run_command)
        mp.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
        with pytest.raises(SystemExit):
            rdma_facts.main()
    return json.loads(capsys.readouterr().out)


def test_module_returns_facts_unchanged(capsys):
    out = run_module({"expect_devices": ["mlx5_0", "mlx5_1"]}, FakeTools(), capsys)
    assert out["changed"] is False
    assert [p["device"] for p in out["ansible_facts"]["rdma"]["ports"]] == ["mlx5_0", "mlx5_1"]


def test_module_fails_on_missing_expected_device(capsys):
    out = run_module({"expect_devices": ["mlx5_0", "mlx5_7"]}, FakeTools(), capsys)
    assert out["failed"] is True
    assert out["msg"] == "RDMA device(s) mlx5_7 not found on this host (found: mlx5_0, mlx5_1)"


def test_module_reports_tool_error_with_rc(capsys):
    tools = FakeTools({"ibv_devinfo": (255, "", "Failed to get IB devices list: Function not implemented")})
    out = run_module({}, tools, capsys)
    assert out["failed"] is True and out["rc"] == 255
    assert "ibv_devinfo -v" in out["msg"]


@pytest.mark.parametrize(
    "value, missing",
    [
        ("eth0", []),  # an exact name is a prefix of itself
        ("eth", []),  # NCCL: a prefix matches eth0
        ("ens", ["ens"]),
        ("=eth", ["eth"]),  # = : exact names only
        ("=eth0,lo", []),
        ("eth0,ib", ["ib"]),  # each item of the list must match something
        ("^docker,lo", []),  # an exclude list names no interface to find
        ("", []),
        (" eth1 ", ["eth1"]),
    ],
)
def test_missing_socket_ifnames_reads_nccls_syntax(value, missing):
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import missing_socket_ifnames

    assert missing_socket_ifnames(value, ["lo", "eth0", "enp65s0f0np0"]) == missing


def test_module_fails_naming_a_socket_ifname_that_matches_no_interface(capsys, monkeypatch):
    monkeypatch.setattr(os, "listdir", lambda path: ["lo", "eth0"] if path == "/sys/class/net" else [])
    out = run_module({"expect_devices": ["mlx5_0"], "expect_socket_ifname": "bond0"}, FakeTools(), capsys)
    assert out["failed"] is True
    assert out["msg"] == (
        "NCCL_SOCKET_IFNAME bond0: no interface matches bond0 on this host (interfaces: eth0, lo; fabric.nccl.socket_ifname / nccl_env_socket_ifname)"
    )
    ok = run_module({"expect_devices": ["mlx5_0"], "expect_socket_ifname": "eth"}, FakeTools(), capsys)
    assert "failed" not in ok and ok["ansible_facts"]["rdma"]["devices"]


class ComingUp(FakeTools):
    """mlx5_1 (down in the fixtures) comes up after ``after`` reads, as a port does after the SM's sweep."""

    def __init__(self, after):
        super().__init__()
        self.after = after

    def __call__(self, argv):
        rc, out, err = super().__call__(argv)
        tool = os.path.basename(argv[0])
        if sum(1 for c in self.calls if c[0] == tool) > self.after:
            if tool == "ibv_devinfo":
                out = out.replace("PORT_DOWN (1)", "PORT_ACTIVE (4)").replace("DISABLED (3)", "LINK_UP (5)")
            if tool == "ibstat":
                out = out.replace("State: Down", "State: Active").replace("Physical state: Disabled", "Physical state: LinkUp")
        return rc, out, err


def test_module_waits_for_an_expected_port_to_come_up(capsys, monkeypatch):
    monkeypatch.setattr(rdma_facts.time, "sleep", lambda s: None)
    tools = ComingUp(after=2)
    out = run_module({"expect_devices": ["mlx5_0", "mlx5_1"], "wait_up": 30}, tools, capsys)
    assert [p["up"] for p in out["ansible_facts"]["rdma"]["ports"]] == [True, True]
    assert sum(1 for c in tools.calls if c[0] == "ibv_devinfo") == 3


def test_module_reads_once_without_wait_or_when_the_port_is_not_expected(capsys, monkeypatch):
    monkeypatch.setattr(rdma_facts.time, "sleep", lambda s: None)
    tools = ComingUp(after=2)
    out = run_module({"expect_devices": ["mlx5_0", "mlx5_1"]}, tools, capsys)
    assert [p["up"] for p in out["ansible_facts"]["rdma"]["ports"]] == [True, False]
    tools = ComingUp(after=2)
    run_module({"expect_devices": ["mlx5_0"], "wait_up": 30}, tools, capsys)
    assert sum(1 for c in tools.calls if c[0] == "ibv_devinfo") == 1


def test_module_gives_up_at_the_deadline_with_the_port_as_it_is(capsys, monkeypatch):
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(rdma_facts.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(rdma_facts.time, "sleep", lambda s: None)
    tools = ComingUp(after=100)
    out = run_module({"expect_devices": ["mlx5_1"], "wait_up": 25}, tools, capsys)
    assert out["changed"] is False and out["ansible_facts"]["rdma"]["ports"][1]["up"] is False
    assert sum(1 for c in tools.calls if c[0] == "ibv_devinfo") == 3  # read at 10, 20, 30 s (deadline 25)
    bad = run_module({"expect_devices": ["mlx5_1"], "wait_up": -1}, FakeTools(), capsys)
    assert bad["failed"] and bad["msg"] == "wait_up: -1 is not allowed (allowed: seconds, 0 or more)"


def test_module_does_not_wait_in_check_mode(capsys, monkeypatch):
    monkeypatch.setattr(rdma_facts.time, "sleep", lambda s: None)
    tools = ComingUp(after=2)
    out = run_module({"expect_devices": ["mlx5_1"], "wait_up": 30, "_ansible_check_mode": True}, tools, capsys)
    assert out["ansible_facts"]["rdma"]["ports"][1]["up"] is False
    assert sum(1 for c in tools.calls if c[0] == "ibv_devinfo") == 1
