"""The management-path guard on every netdev change (issue 25 item 5): rdma_netdev (link, addresses) and
roce_qos (QoS, MTU, and the late MTU raise) plan with their own module in check mode, ask
disruption_guard (action netdev_change) about exactly the netdevs that change, and only then apply.
The refusal itself is run through the module with the arguments the roles build."""

import os

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.modules import disruption_guard

from module_harness import run_module
from test_cross_layer import ROOT, Vars
from host.test_mgmtpath import CONTROLLER, NODE, host, ip_tools  # noqa: F401 (fixture)


def load(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


def named(tasks, name):
    return next(t for t in tasks if t.get("name") == name)


# what a plan registers: one port changes, one is as wanted, one could not be read
PLAN = {
    "ports": [
        {"name": "enp193s0f0np0", "netdev": "enp193s0f0np0", "changed": True},
        {"name": "enp65s0f0np0", "netdev": "enp65s0f0np0", "changed": False},
        {"name": "enp65s0f1np1", "netdev": "enp65s0f1np1", "failed": True, "msg": "not found"},
    ]
}


def test_path_yml_reads_the_connection_and_checks_the_path_only():
    read, check = load("roles", "host_disruption", "tasks", "path.yml")
    assert read["ansible.builtin.command"] == {"argv": ["printenv", "SSH_CONNECTION"]}
    assert read["become"] is False and read["check_mode"] is False
    args = check["linerate.fabric.disruption_guard"]
    assert args["action"] == "{{ host_disruption_action }}"
    assert args["targets"] == "{{ host_disruption_targets | default([]) }}"
    assert args["check_in_use"] is False and "force" not in args
    # the same connection resolution as begin.yml's first guard
    begin = load("roles", "host_disruption", "tasks", "begin.yml")[1]
    assert args["local_address"] == begin["linerate.fabric.disruption_guard"]["local_address"]
    assert args["peer_address"] == begin["linerate.fabric.disruption_guard"]["peer_address"]
    assert check["vars"] == begin["vars"]


def _rdma_netdev_block():
    (block,) = [t for t in load("roles", "rdma_netdev", "tasks", "main.yml") if "block" in t]
    return block


def test_rdma_netdev_plans_guards_then_applies():
    block = _rdma_netdev_block()
    plan, guard, apply = block["block"]
    assert (
        plan["linerate.fabric.rdma_netdev"]
        == apply["linerate.fabric.rdma_netdev"]
        == {"ports": "{{ rdma_netdev_module_ports }}", "exclusive": "{{ rdma_netdev_exclusive }}"}
    )
    assert plan["check_mode"] is True and plan["failed_when"] is False and plan["register"] == "rdma_netdev_plan"
    assert "check_mode" not in apply and apply["register"] == "rdma_netdev_result"
    assert guard["ansible.builtin.include_role"] == {"name": "linerate.fabric.host_disruption", "tasks_from": "path"}
    assert guard["vars"] == {"host_disruption_action": "netdev_change", "host_disruption_targets": "{{ rdma_netdev_changing }}"}
    assert guard["when"] == "rdma_netdev_changing | length > 0"
    v = Vars(rdma_netdev_plan=PLAN)
    assert v.resolve(block["vars"]["rdma_netdev_changing"]) == ["enp193s0f0np0"]
    v = Vars(rdma_netdev_plan={"ports": [dict(p, changed=False) for p in PLAN["ports"][:2]]})
    assert v.resolve(block["vars"]["rdma_netdev_changing"]) == []


@pytest.mark.parametrize(
    "tasks_file,plan_name,guard_name,apply_name,register",
    [
        (
            "configure.yml",
            "Plan the RoCE QoS change of each cabled port (reads only)",
            "Refuse a change of a netdev Ansible's connection runs over",
            "Configure RoCE QoS on each cabled port",
            "roce_qos_plan",
        ),
        (
            "mtu.yml",
            "Plan the MTU raise of each cabled port (reads only)",
            "Refuse an MTU change of a netdev Ansible's connection runs over",
            "Raise the MTU of each cabled port to the intent's host MTU",
            "roce_qos_mtu_plan",
        ),
    ],
)
def test_roce_qos_plans_guards_then_applies(tasks_file, plan_name, guard_name, apply_name, register):
    tasks = load("roles", "roce_qos", "tasks", tasks_file)
    names = [t["name"] for t in tasks]
    assert names.index(plan_name) + 1 == names.index(guard_name) == names.index(apply_name) - 1
    plan, guard, apply = named(tasks, plan_name), named(tasks, guard_name), named(tasks, apply_name)
    assert plan["linerate.fabric.roce_qos"] == apply["linerate.fabric.roce_qos"]
    assert plan["vars"] == apply["vars"]
    assert plan["check_mode"] is True and plan["failed_when"] is False and plan["register"] == register
    assert guard["ansible.builtin.include_role"] == {"name": "linerate.fabric.host_disruption", "tasks_from": "path"}
    assert guard["vars"]["host_disruption_action"] == "netdev_change"
    assert guard["vars"]["host_disruption_targets"] == "{{ roce_qos_changing }}"
    assert guard["when"] == "fabric_effective.transport == 'roce' and roce_qos_changing | length > 0"
    assert Vars(**{register: PLAN}).resolve(guard["vars"]["roce_qos_changing"]) == ["enp193s0f0np0"]


def test_the_roles_refusal_when_the_connection_runs_over_a_changing_rail(capsys, host):  # noqa: F811 (the fixture imported above)
    # the connection arrives on a VLAN of rail enp193s0f0np0; the plan changes that rail
    host.netdev("enp193s0f0np0.100", lower=["enp193s0f0np0"])
    block = _rdma_netdev_block()
    targets = Vars(rdma_netdev_plan=PLAN).resolve(block["vars"]["rdma_netdev_changing"])
    args = {
        "action": "netdev_change",
        "targets": targets,
        "local_address": NODE,
        "peer_address": CONTROLLER,
        "check_in_use": False,
        "sysfs": host.sysfs,
        "procfs": host.procfs,
    }
    tools = ip_tools("enp193s0f0np0.100")
    res = run_module(disruption_guard.main, args, tools, capsys)
    assert res["failed"] is True
    assert res["msg"] == (
        "refusing to change enp193s0f0np0: Ansible reaches this host over "
        "enp193s0f0np0.100 -> enp193s0f0np0 -> 0000:c1:00.0, and the action takes down "
        "enp193s0f0np0 (the connection runs over it). Apply it from the console or the BMC, "
        "or connect through a management interface on another NIC."
    )
    assert tools.calls == [["ip", "-json", "addr", "show"], ["ip", "-json", "route", "get", CONTROLLER]]
    # the same plan with the connection on the Intel NIC: allowed, nothing else read
    res = run_module(disruption_guard.main, args, ip_tools("eno1"), capsys)
    assert not res.get("failed") and res["changed"] is False


def test_the_in_use_check_reads_the_sysfs_the_inventory_names():
    use = next(
        t["linerate.fabric.disruption_guard"]
        for t in load("roles", "host_disruption", "tasks", "begin.yml")
        if (t.get("linerate.fabric.disruption_guard") or {}).get("check_in_use") is True
    )
    assert use["check_in_use"] is True and use["sysfs"] == "{{ host_disruption_sysfs }}"
    assert load("roles", "host_disruption", "defaults", "main.yml")["host_disruption_sysfs"] == "/sys"
    lab = load("inventory", "lab", "group_vars", "gpu_nodes", "hardware.yml")
    assert lab["host_disruption_sysfs"] == "/run/linerate-lab/sys"
