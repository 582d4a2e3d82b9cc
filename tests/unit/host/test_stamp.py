"""The converge stamp: what the probes read, what counts as a difference, the module's check and
write (0600, rewritten only when it differs), and the probes and inputs the action plugin builds."""

import json
import os

from module_harness import Tools, run_module

from ansible_collections.linerate.fabric.plugins.action import host_stamp as action
from ansible_collections.linerate.fabric.plugins.module_utils.host import stamp
from ansible_collections.linerate.fabric.plugins.modules import host_stamp

QOS = "Priority trust state: dscp\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0\n"
ADDR = [
    {
        "ifname": "enp65s0f0np0",
        "mtu": 4200,
        "operstate": "UP",
        "addr_info": [{"family": "inet", "local": "192.168.100.11", "prefixlen": 24, "valid_life_time": 4294967295, "preferred_life_time": 4294967295}],
    }
]


class Host:
    """A node's answers: tools by argv, mutable between runs."""

    def __init__(self):
        self.answers = {("mlnx_qos", "-i", "enp65s0f0np0"): (0, QOS, ""), ("ip", "-json", "addr", "show", "dev", "enp65s0f0np0"): (0, json.dumps(ADDR), "")}

    def tools(self):
        return Tools({name: (lambda args, name=name: self.answers[(name, *args)]) for name in {k[0] for k in self.answers}})


PROBES = {"commands": [["mlnx_qos", "-i", "enp65s0f0np0"], ["ip", "-json", "addr", "show", "dev", "enp65s0f0np0"]]}


def observe(host, probes=PROBES):
    return stamp.observe(host.tools(), probes)


def test_same_answers_are_converged_and_each_difference_is_named():
    host = Host()
    before = observe(host)
    assert stamp.compare(stamp.stamp("in", PROBES, before), "in", observe(host))[0] is True
    host.answers[("mlnx_qos", "-i", "enp65s0f0np0")] = (0, QOS.replace("dscp", "pcp"), "")
    ok, reason, differ = stamp.compare(stamp.stamp("in", PROBES, before), "in", observe(host))
    assert ok is False and differ == ["cmd: mlnx_qos -i enp65s0f0np0"]
    assert "mlnx_qos -i enp65s0f0np0" in reason


def test_exit_status_and_a_missing_tool_are_answers():
    host = Host()
    before = observe(host)
    host.answers[("mlnx_qos", "-i", "enp65s0f0np0")] = (1, QOS, "")
    assert observe(host) != before
    tools = host.tools()
    tools.handlers["mlnx_qos"] = lambda args: (_ for _ in ()).throw(OSError("mlnx_qos not found"))
    missing = stamp.observe(tools, PROBES)
    assert missing["cmd: mlnx_qos -i enp65s0f0np0"] not in (before["cmd: mlnx_qos -i enp65s0f0np0"], "")


def test_address_lifetimes_do_not_count_but_addresses_do():
    host = Host()
    before = observe(host)
    aged = json.loads(json.dumps(ADDR))
    aged[0]["addr_info"][0]["valid_life_time"] = 3600
    host.answers[("ip", "-json", "addr", "show", "dev", "enp65s0f0np0")] = (0, json.dumps(aged), "")
    assert observe(host) == before
    aged[0]["addr_info"][0]["local"] = "192.168.100.99"
    host.answers[("ip", "-json", "addr", "show", "dev", "enp65s0f0np0")] = (0, json.dumps(aged), "")
    assert observe(host) != before


def test_other_inputs_or_an_old_stamp_are_not_converged():
    host = Host()
    rec = stamp.stamp("in", PROBES, observe(host))
    assert stamp.compare(rec, "other", observe(host))[:2] == (False, "the intent, a role variable or linerate's code changed since the last converge")
    assert stamp.compare(dict(rec, version=0), "in", observe(host))[0] is False
    assert stamp.compare(None, "in", observe(host))[0] is False


def test_files_content_mode_and_absence(tmp_path):
    f = tmp_path / "nccl.conf"
    f.write_text("NCCL_IB_HCA=mlx5_0\n")
    probes = {"files": [str(f), str(tmp_path / "ecn" / "*")]}
    (tmp_path / "ecn").mkdir()
    (tmp_path / "ecn" / "3").write_text("1\n")
    before = stamp.observe(None, probes)
    assert stamp.observe(None, probes) == before
    os.chmod(f, 0o600)
    assert stamp.observe(None, probes)[f"file: {f}"] != before[f"file: {f}"]
    os.chmod(f, 0o644)
    assert stamp.observe(None, probes) == before
    f.write_text("NCCL_IB_HCA=mlx5_1\n")
    assert stamp.observe(None, probes)[f"file: {f}"] != before[f"file: {f}"]
    f.unlink()
    assert stamp.observe(None, probes)[f"file: {f}"] == "absent"
    (tmp_path / "ecn" / "3").write_text("0\n")
    assert stamp.observe(None, probes)[f"file: {tmp_path / 'ecn' / '*'}"] != before[f"file: {tmp_path / 'ecn' / '*'}"]


def run(capsys, host, args, check=False):
    return run_module(host_stamp.main, args, host.tools(), capsys, check=check)


def test_module_writes_0600_once_then_reads_it_back(capsys, tmp_path):
    host, path = Host(), tmp_path / "state" / "converged.json"
    first = run(capsys, host, {"state": "check", "inputs": "in", "path": str(path)})
    assert first["converged"] is False and "no converge stamp" in first["reason"] and not path.exists()
    preview = run(capsys, host, {"state": "write", "inputs": "in", "probes": PROBES, "path": str(path)}, check=True)
    assert preview["changed"] is True and not path.exists()
    wrote = run(capsys, host, {"state": "write", "inputs": "in", "probes": PROBES, "path": str(path)})
    assert wrote["changed"] is True and wrote["probes"] == 2
    assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"
    again = run(capsys, host, {"state": "write", "inputs": "in", "probes": PROBES, "path": str(path)})
    assert again["changed"] is False
    same = run(capsys, host, {"state": "check", "inputs": "in", "path": str(path)})
    assert same["converged"] is True and same["changed"] is False and same["probes"] == 2
    host.answers[("mlnx_qos", "-i", "enp65s0f0np0")] = (0, QOS.replace("1   0   0   0   0\n", "0   0   0   0   0\n"), "")
    drift = run(capsys, host, {"state": "check", "inputs": "in", "path": str(path)})
    assert drift["converged"] is False and drift["differ"] == ["cmd: mlnx_qos -i enp65s0f0np0"]
    other = run(capsys, host, {"state": "check", "inputs": "other", "path": str(path)})
    assert other["converged"] is False


def test_module_unreadable_stamp_is_not_converged(capsys, tmp_path):
    path = tmp_path / "converged.json"
    path.write_text("{not json")
    res = run(capsys, Host(), {"state": "check", "inputs": "in", "path": str(path)})
    assert res["converged"] is False


PORTS = [{"device": "mlx5_0", "netdev": "enp65s0f0np0"}, {"device": "mlx5_1", "netdev": "enp193s0f0np0", "port": 2}]


def test_probes_of_a_roce_host_cover_every_layer():
    managed = [
        {"paths": ["/etc/linerate", "/etc/linerate/rdma-netdev.sh"], "units": {"linerate-rdma-netdev.service": {}}},
        {"paths": ["/etc/nccl.conf"], "units": {}},
        {"paths": ["/etc/systemd/system/linerate-roce-qos.service"], "units": {"linerate-roce-qos.service": {}, "linerate-rdma-netdev.service": {}}},
    ]
    probes = action.host_probes(PORTS, "roce", ["0000:41:00.0"], managed, ["", "/etc/apt/keyrings/ofed.asc"], sysfs_net="/host/sys/class/net")
    cmds = probes["commands"]
    for argv in (
        ["uname", "-r"],
        ["lsmod"],
        ["show_gids"],
        ["ibv_devinfo", "-v"],
        ["mlnx_qos", "-i", "enp193s0f0np0"],
        ["cma_roce_tos", "-d", "mlx5_1", "-p", "2"],
        ["cma_roce_mode", "-d", "mlx5_0", "-p", "1"],
        ["ip", "-json", "addr", "show", "dev", "enp65s0f0np0"],
        ["mlxconfig", "-d", "0000:41:00.0", "-e", "q"],
        ["systemctl", "is-enabled", "linerate-rdma-netdev.service", "linerate-roce-qos.service"],
        ["systemctl", "is-active", "linerate-rdma-netdev.service", "linerate-roce-qos.service"],
    ):
        assert argv in cmds, argv
    assert any(a[0] == "dpkg-query" for a in cmds)
    assert probes["files"] == [
        "/etc/os-release",
        "/host/sys/class/net/enp65s0f0np0/ecn/roce_*/*",
        "/host/sys/class/net/enp65s0f0np0/ecn/roce_*/enable/*",
        "/host/sys/class/net/enp193s0f0np0/ecn/roce_*/*",
        "/host/sys/class/net/enp193s0f0np0/ecn/roce_*/enable/*",
        "/etc/linerate",
        "/etc/linerate/rdma-netdev.sh",
        "/etc/nccl.conf",
        "/etc/systemd/system/linerate-roce-qos.service",
        "/etc/apt/keyrings/ofed.asc",
    ]


def test_probes_of_an_infiniband_host_leave_roce_qos_out():
    cmds = action.host_probes(PORTS, "infiniband")["commands"]
    assert not [a for a in cmds if a[0] in ("mlnx_qos", "cma_roce_tos", "cma_roce_mode", "systemctl")]
    assert ["ibstat"] in cmds and ["ip", "-json", "addr", "show", "dev", "enp193s0f0np0"] in cmds


def test_inputs_are_the_intent_the_ports_and_role_variables_only():
    names = [
        "fabric_effective",
        "rdma_ports",
        "group_names",
        "roce_qos_trust",
        "nccl_env_socket_ifname",
        "mofed_version",
        "ansible_host",
        "inventory_hostname",
        "verify_fabric_rounds",
        "linerate_validation",
        "switch_fabric_serial",
        "connectx_firmware_params",
        "nvidia_peermem_load",
        "rdma_netdev_exclusive",
    ]
    assert action.input_names(names) == sorted(
        [
            "fabric_effective",
            "rdma_ports",
            "group_names",
            "roce_qos_trust",
            "nccl_env_socket_ifname",
            "mofed_version",
            "connectx_firmware_params",
            "nvidia_peermem_load",
            "rdma_netdev_exclusive",
        ]
    )
    a = stamp.inputs_digest({"roce_qos_trust": "dscp"}, "code")
    assert a == stamp.inputs_digest({"roce_qos_trust": "dscp"}, "code")
    assert a != stamp.inputs_digest({"roce_qos_trust": "pcp"}, "code")
    assert a != stamp.inputs_digest({"roce_qos_trust": "dscp"}, "other code")


def test_code_digest_follows_roles_plugins_and_playbooks(tmp_path):
    for sub in ("roles/r/tasks", "plugins/modules", "playbooks", "tests"):
        (tmp_path / sub).mkdir(parents=True)
    (tmp_path / "roles/r/tasks/main.yml").write_text("- debug: msg=a\n")
    (tmp_path / "tests/t.py").write_text("x = 1\n")
    before = action.code_digest(str(tmp_path))
    assert action.code_digest(str(tmp_path)) == before
    assert stamp.tree_digest(str(tmp_path), ("roles", "plugins", "playbooks")) == before
    (tmp_path / "tests/t.py").write_text("x = 2\n")
    assert stamp.tree_digest(str(tmp_path), ("roles", "plugins", "playbooks")) == before
    (tmp_path / "plugins/modules/__pycache__").mkdir()
    (tmp_path / "plugins/modules/__pycache__/m.cpython-311.pyc").write_bytes(b"\0")
    assert stamp.tree_digest(str(tmp_path), ("roles", "plugins", "playbooks")) == before
    (tmp_path / "roles/r/tasks/main.yml").write_text("- debug: msg=b\n")
    assert stamp.tree_digest(str(tmp_path), ("roles", "plugins", "playbooks")) != before


def test_refresh_takes_only_the_named_probes_and_never_hides_other_drift(capsys, tmp_path):
    host, path = Host(), tmp_path / "converged.json"
    run(capsys, host, {"state": "write", "inputs": "in", "probes": PROBES, "path": str(path)})
    recorded = path.read_text()
    addr = ("ip", "-json", "addr", "show", "dev", "enp65s0f0np0")
    moved = json.loads(json.dumps(ADDR))
    moved[0]["addr_info"][0]["local"] = "192.168.100.99"
    host.answers[addr] = (0, json.dumps(moved), "")
    res = run(capsys, host, {"state": "refresh", "inputs": "in", "keys": ["cmd: mlnx_qos"], "path": str(path)})
    assert res["changed"] is False and res["converged"] is False and "cmd: ip -json" in res["reason"]
    assert path.read_text() == recorded
    res = run(capsys, host, {"state": "refresh", "inputs": "other", "keys": ["cmd: ip"], "path": str(path)})
    assert res["changed"] is False and path.read_text() == recorded
    res = run(capsys, host, {"state": "refresh", "inputs": "in", "keys": ["cmd: ip"], "path": str(path)}, check=True)
    assert res["changed"] is True and path.read_text() == recorded
    res = run(capsys, host, {"state": "refresh", "inputs": "in", "keys": ["cmd: ip"], "path": str(path)})
    assert res["changed"] is True and res["reason"].startswith("refreshed: cmd: ip -json")
    assert run(capsys, host, {"state": "check", "inputs": "in", "path": str(path)})["converged"] is True
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    res = run(capsys, host, {"state": "refresh", "inputs": "in", "keys": ["cmd: ip"], "path": str(path)})
    assert res["changed"] is False and res["reason"] == "nothing to refresh"
