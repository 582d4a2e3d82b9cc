"""The MTU order (issue 25 item 8): site.yml raises the switch MTU before the host MTU and lowers it after.

The host stage only lowers a host MTU (roce_qos_mtu_change: lower), the switch stage changes the switches,
then stages/host_mtu.yml raises the host MTU; the converge stamp is written after that raise, so a second
run still finds every node converged. Read from the playbooks and roles as Ansible loads them."""

import os

import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published

from test_cross_layer import ROOT, host_vars, module_args


def load(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_site_runs_hosts_then_switches_then_the_host_mtu_raise():
    site = load("playbooks", "site.yml")
    assert [p["ansible.builtin.import_playbook"] for p in site] == [
        "validate.yml",
        "stages/hosts.yml",
        "stages/switches.yml",
        "stages/host_mtu.yml",
        "stages/verify.yml",
    ]
    assert site[1]["vars"] == {"linerate_host_mtu_raise_later": True}
    assert "vars" not in site[2] and "vars" not in site[3]


def test_hosts_yml_alone_changes_the_mtu_in_either_direction():
    hosts = load("playbooks", "hosts.yml")
    assert [p["ansible.builtin.import_playbook"] for p in hosts] == ["validate.yml", "stages/hosts.yml"]
    assert not any("vars" in p for p in hosts)


def _mtu_change(**extra):
    v = host_vars(published({"name": "xl", "transport": "roce"}))
    dict.update(v, **extra)
    tasks = load("roles", "roce_qos", "tasks", "configure.yml")
    task = next(t for t in tasks if t.get("name") == "Configure RoCE QoS on each cabled port")
    return module_args(v, task, "linerate.fabric.roce_qos")["mtu_change"]


def test_the_host_stage_only_lowers_from_site_and_does_both_alone():
    assert _mtu_change() == "any"
    assert _mtu_change(linerate_host_mtu_raise_later=True) == "lower"
    assert _mtu_change(linerate_host_mtu_raise_later=False) == "any"


def test_the_late_play_raises_only_the_mtu_on_the_nodes_the_host_stage_ran():
    (play,) = load("playbooks", "stages", "host_mtu.yml")
    assert play["hosts"] == "gpu_nodes:!linerate_converged"
    assert play["become"] is True and play["tags"] == ["hosts"]
    assert play["pre_tasks"][0]["ansible.builtin.meta"] == "end_host"
    raise_task, stamp = play["tasks"]
    assert raise_task["ansible.builtin.import_role"] == {"name": "roce_qos", "tasks_from": "mtu"}
    assert raise_task["tags"] == ["roce_qos"]
    assert stamp["ansible.builtin.include_tasks"] == "../tasks/host_stamp_write.yml"
    mtu = next(t for t in load("roles", "roce_qos", "tasks", "mtu.yml") if t["name"] == "Raise the MTU of each cabled port to the intent's host MTU")
    v = host_vars(published({"name": "xl", "transport": "roce"}))
    args = module_args(v, mtu, "linerate.fabric.roce_qos")
    assert args == {
        "ports": [{"netdev": "enp65s0f0np0", "device": "mlx5_0", "port": 1}, {"netdev": "enp65s0f1np1", "device": "mlx5_1", "port": 1}],
        "mtu": 4200,
        "mtu_change": "raise",
    }
    assert mtu["when"] == "fabric_effective.transport == 'roce'"
    assert mtu["notify"] == "linerate verify fabric"


def test_the_stamp_waits_for_the_raise_from_site_and_is_written_once():
    plays = load("playbooks", "stages", "hosts.yml")
    last = plays[-1]["tasks"][-1]
    assert last["ansible.builtin.include_tasks"] == "../tasks/host_stamp_write.yml"
    assert last["when"] == "not (linerate_host_mtu_raise_later | default(false) | bool)"
    (write,) = load("playbooks", "tasks", "host_stamp_write.yml")
    assert write["linerate.fabric.host_stamp"]["state"] == "write"
    assert write["changed_when"] is False
    assert write["when"] == [
        "not ansible_check_mode",
        "linerate_host_stamp.inputs is defined",
        "ansible_run_tags | list == ['all'] and ansible_skip_tags | length == 0",
        "pending | length == 0",
    ]
    assert "roce_qos_unit_file | default(none)" in write["linerate.fabric.host_stamp"]["managed"]
