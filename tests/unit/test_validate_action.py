"""The validate_intent action: which hosts it reads, what it answers; and the
boot script that renders rdma_ports (no inventory value can add a line)."""

import os
import subprocess
from unittest import mock

import jinja2
import pytest
from ansible.plugins.filter.core import FilterModule

from ansible_collections.linerate.fabric.plugins.action.validate_intent import ActionModule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import FORMATS
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FABRIC = {"name": "t", "transport": "roce"}
PORT = {"device": "mlx5_0", "netdev": "enp65s0f0np0", "address": "192.168.100.1/24", "switch": "leaf1", "switch_port": "swp1"}


def run_action(groups, hostvars, fabric=FABRIC, **args):
    task = mock.MagicMock()
    task.args = {"fabric": fabric, **args}
    task.async_val = 0
    task.check_mode = False
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars={"groups": groups, "hostvars": hostvars})


def test_valid_inventory_sets_fabric_effective():
    groups = {"all": ["node1", "leaf1"], "gpu_nodes": ["node1"], "switches": ["leaf1"]}
    hostvars = {"node1": {"rdma_ports": [PORT]}, "leaf1": {"switch_platform": "nvue"}}
    res = run_action(groups, hostvars)
    assert not res.get("failed"), res
    assert res["ansible_facts"]["fabric_effective"]["roce"]["no_drop_priority"] == 3
    assert res["msg"] == "fabric 't' (roce, 400 Gb/s): 1 RDMA host(s), 1 switch(es), intent valid"
    assert res["changed"] is False


def test_a_host_outside_gpu_nodes_that_feeds_a_switch_port_is_validated():
    bad = dict(PORT, switch_port="swp2\nreboot", address="192.168.100.2/24")
    groups = {"all": ["node1", "stray", "leaf1"], "gpu_nodes": ["node1"], "switches": ["leaf1"]}
    hostvars = {"node1": {"rdma_ports": [PORT]}, "stray": {"rdma_ports": [bad]}, "leaf1": {"switch_platform": "nvue"}}
    res = run_action(groups, hostvars)
    assert res["failed"] is True
    assert "stray: rdma_ports[0].switch_port: 'swp2\\nreboot' is not allowed" in res["msg"]
    assert res["msg"].startswith("the fabric intent has 1 problem(s); nothing was changed:")
    assert "ansible_facts" not in res


def test_check_cabling_false_validates_the_tree_alone():
    # A role scenario: one container with rdma_ports, no switches in its inventory.
    groups = {"all": ["node1"], "gpu_nodes": ["node1"]}
    hostvars = {"node1": {"rdma_ports": [PORT]}}
    res = run_action(groups, hostvars)
    assert res["failed"] is True and "rdma_ports[0].switch: 'leaf1' is not allowed" in res["msg"]
    res = run_action(groups, hostvars, check_cabling=False)
    assert not res.get("failed"), res
    assert res["msg"] == "fabric 't' (roce, 400 Gb/s): 0 RDMA host(s), 0 switch(es), intent valid"
    res = run_action(groups, hostvars, fabric=dict(FABRIC, mtu={"host": 99999}), check_cabling=False)
    assert res["failed"] is True and "fabric.mtu.host: 99999 is not allowed" in res["msg"]
    res = run_action(groups, hostvars, check_cabling="no")
    assert res["failed"] is True and res["msg"] == "check_cabling: 'no' is not allowed (allowed: true, false)"


@pytest.mark.parametrize(
    "network_os,ok",
    [("arista.eos.eos", True), ("nvidia.nvue.nvue", True), ("cumulus", True), ("dellemc.enterprise_sonic.sonic", True), ("cisco.ios.ios", False)],
)
def test_ansible_network_os_names_the_platform(network_os, ok):
    groups = {"all": ["node1", "leaf1"], "gpu_nodes": ["node1"], "switches": ["leaf1"]}
    hostvars = {"node1": {"rdma_ports": [PORT]}, "leaf1": {"ansible_network_os": network_os}}
    if network_os.endswith("sonic"):
        # at 400G SONiC needs the platform's headroom row (sonic-swss's table stops at 100G)
        hostvars["leaf1"]["switch_sonic_pg_lookup"] = {400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}}
    res = run_action(groups, hostvars)
    assert bool(res.get("failed")) is not ok, res
    if not ok:
        # under the key the operator wrote, with the values it takes
        assert res["problems"] == [f"leaf1: ansible_network_os: '{network_os}' is not allowed (allowed: " + cabling.NETWORK_OS_ALLOWED + ")"]
        assert "leaf1: switch_platform" not in res["msg"]


def test_mofed_source_of_a_host_is_read():
    groups = {"all": ["node1", "leaf1"], "gpu_nodes": ["node1"], "switches": ["leaf1"]}
    hostvars = {"node1": {"rdma_ports": [PORT], "mofed_source": "inbox"}, "leaf1": {"switch_platform": "nvue"}}
    res = run_action(groups, hostvars)
    assert "node1: mofed_source: 'inbox' is rejected" in res["msg"]


def test_ib_switches_are_read_as_infiniband():
    fabric = {"transport": "infiniband", "mtu": {"host": 4092, "switch": 4096}, "infiniband": {"subnet_manager": {"routing_engine": "minhop"}}}
    port = {"device": "mlx5_0", "netdev": "ibp65s0", "switch": "ibsw1", "switch_port": 1}
    groups = {"all": ["n1", "ibsw1"], "gpu_nodes": ["n1"], "ib_switches": ["ibsw1"], "subnet_managers": ["n1"]}
    res = run_action(groups, {"n1": {"rdma_ports": [port]}, "ibsw1": {}}, fabric)
    assert not res.get("failed"), res
    assert res["ansible_facts"]["fabric_effective"]["infiniband"]["subnet_manager"]["master"] == "n1"


def render_netdev_script(ports):
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.join(ROOT, "roles", "rdma_netdev", "templates")), trim_blocks=True, undefined=jinja2.StrictUndefined
    )
    env.filters.update(FilterModule().filters())
    # one script per rail (linerate-rail@<netdev>.service runs <rdma_netdev_rail_dir>/<netdev>.sh)
    (port,) = ports
    return env.get_template("etc/linerate/rails/rail.sh.j2").render(rdma_netdev_rail=port, ansible_managed="managed")


def test_boot_script_lines_and_quoting():
    text = render_netdev_script([PORT])
    assert text.splitlines()[-3:] == [
        '# "mlx5_0" -> "leaf1" "swp1"',
        "ip link set dev enp65s0f0np0 up",
        "ip addr replace 192.168.100.1/24 dev enp65s0f0np0",
    ]


def test_a_newline_in_a_port_never_becomes_a_command(tmp_path):
    evil = dict(PORT, switch_port="swp1\ntouch " + str(tmp_path / "pwned"), netdev="x;touch " + str(tmp_path / "p2"))
    text = render_netdev_script([evil])
    commands = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert commands[0] == "set -e"
    assert all(ln.startswith(("ip link set dev 'x;touch ", "ip addr replace ")) for ln in commands[1:]), commands
    # Run by a real shell (with ip replaced by true): nothing else executes.
    script = tmp_path / "s.sh"
    script.write_text(text.replace("\nip ", "\ntrue "))
    subprocess.run(["sh", str(script)], check=True)
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "p2").exists()


def test_a_value_that_cannot_be_read_is_one_problem_among_the_others():
    from ansible.errors import AnsibleFilterError

    groups = {"all": ["node1", "node2", "leaf1"], "gpu_nodes": ["node1", "node2"], "switches": ["leaf1"]}
    hostvars = {"node1": {"rdma_ports": "PLAN"}, "node2": {"rdma_ports": [dict(PORT, switch_port="swp 2")]}, "leaf1": {"switch_platform": "nvue"}}
    task = mock.MagicMock()
    task.args = {"fabric": FABRIC}
    templar = mock.MagicMock()

    def template(v):
        if v == "PLAN":
            raise AnsibleFilterError("rail_ports: rails: 33 is not allowed (allowed: an integer 1..32)")
        return v

    templar.template.side_effect = template
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        res = action.run(task_vars={"groups": groups, "hostvars": hostvars})
    assert res["problems"][0] == ("node1: rdma_ports: could not be read: rail_ports: rails: 33 is not allowed (allowed: an integer 1..32)")
    assert any(p.startswith("node2: rdma_ports[0].switch_port: 'swp 2'") for p in res["problems"])


def _run(groups, hostvars, fabric=FABRIC, template=None, **args):
    task = mock.MagicMock()
    task.args = {"fabric": fabric, **args}
    templar = mock.MagicMock()
    templar.template.side_effect = template or (lambda v: v)
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars={"groups": groups, "hostvars": hostvars})


def test_every_variable_of_hosts_and_switches_is_read():
    groups = {"all": ["node1", "node2", "leaf1"], "gpu_nodes": ["node1", "node2"], "switches": ["leaf1"]}
    hostvars = {
        "node1": {"mofed_source": "inbox"},
        "node2": {"rdma_ports": [dict(PORT, address="192.168.100.2/24")]},
        "leaf1": {"switch_platform": "nvue", "switch_role": "core", "ib_switch_guid": "0xzz", "switch_uplinks": "swp31"},
    }
    res = _run(groups, hostvars)
    assert res["msg"] == (
        "the fabric intent has 5 problem(s); nothing was changed:\n"
        "- leaf1: switch_role: 'core' is not allowed (allowed: leaf | spine)\n"
        "- leaf1: ib_switch_guid: '0xzz' is not allowed (allowed: a port GUID such as 0xa088c20300000101)\n"
        "- leaf1: switch_uplinks: 'swp31' is not allowed (allowed: a list of {port, peer, peer_port})\n"
        "- node1: mofed_source: 'inbox' is rejected: " + cabling.INBOX_REASON + "\n"
        "- node1: rdma_ports: None is not allowed (allowed: a list of the host's cabled RDMA ports)"
    )
    assert res["failed"] is True and res["changed"] is False


def test_groups_can_be_renamed():
    groups = {"all": ["a1", "s1", "i1", "m1"], "gpus": ["a1"], "tor": ["s1"], "ib": ["i1"], "sms": ["m1"]}
    hostvars = {"a1": {"rdma_ports": [dict(PORT, switch="s1")]}, "s1": {"switch_platform": "nvue"}, "i1": {}, "m1": {}}
    res = _run(groups, hostvars, host_group="gpus", switch_group="tor", ib_switch_group="ib", sm_group="sms")
    # i1 comes from the IB switch group, so it is an infiniband switch, refused on RoCE.
    assert res["problems"] == ["i1: switch_platform: 'infiniband' is not allowed (allowed: nvue | sonic | eos)"]
    res = _run(groups, hostvars)
    # Default group names: a1 is not in gpu_nodes but feeds a port, so it is validated; s1 is no switch.
    assert res["problems"] == ["a1: rdma_ports[0].switch: 's1' is not allowed (allowed: a host of group switches: (the inventory has none))"]


def test_a_fabric_value_that_cannot_be_templated_is_named_by_its_key():
    from ansible.errors import AnsibleUndefinedVariable

    def template(v):
        if v == "{{ site_speed }}":
            raise AnsibleUndefinedVariable("'site_speed' is undefined")
        return v

    res = _run({"all": [], "gpu_nodes": []}, {}, fabric={"name": "t", "link_speed_gbps": "{{ site_speed }}"}, template=template)
    assert res["failed"] is True
    # only the read problem: a half-read intent is not checked further
    assert res["problems"] == ["fabric.link_speed_gbps: could not be read: 'site_speed' is undefined"]
    assert "ansible_facts" not in res


def test_no_fabric_at_all():
    res = _run({"all": []}, {}, fabric=None)
    assert res["failed"] is True
    assert res["problems"] == ["fabric: the variable is not defined (set it in group_vars/all; see inventory/example-roce)"]


def test_renamed_host_group_is_read_and_fabric_comes_from_the_inventory_by_default():
    groups = {"all": ["a1", "a2", "s1"], "gpus": ["a1", "a2"], "switches": ["s1"]}
    hostvars = {"a1": {"rdma_ports": [dict(PORT, switch="s1")]}, "a2": {}, "s1": {"switch_platform": "nvue"}}
    task = mock.MagicMock()
    task.args = {"host_group": "gpus"}
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        res = action.run(task_vars={"groups": groups, "hostvars": hostvars, "fabric": {"transport": "roce", "name": "inv"}})
    # a2 is in the host group without cabling; the fabric is the inventory's.
    assert res["problems"] == ["a2: rdma_ports: None is not allowed (allowed: a list of the host's cabled RDMA ports)"]
    assert ActionModule._VALID_ARGS == frozenset(
        ("fabric", "host_group", "check_cabling", "switch_group", "ib_switch_group", "sm_group", "validated_digest", "nccl_tests")
    )
    assert ActionModule.TRANSFERS_FILES is False


# --- role and connection variables, before any contact ------------------------

SW_OK = {"switch_platform": "nvue"}


def _contactless(groups, hostvars, fabric=FABRIC, template=None, extra=None, **args):
    """Run the action with every way to reach a host replaced by a failure."""
    task = mock.MagicMock()
    task.args = {"fabric": fabric, **args} if fabric is not None else dict(args)
    templar = mock.MagicMock()
    templar.template.side_effect = template or (lambda v: v)
    connection = mock.MagicMock()
    action = ActionModule(task, connection, mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    boom = AssertionError("contacted")
    with (
        mock.patch("ansible.plugins.action.ActionBase.run", return_value={}),
        mock.patch.object(ActionModule, "_execute_module", side_effect=boom),
        mock.patch.object(ActionModule, "_low_level_execute_command", side_effect=boom),
        mock.patch.object(ActionModule, "_transfer_data", side_effect=boom),
    ):
        res = action.run(task_vars={"groups": groups, "hostvars": hostvars, **(extra or {})})
    assert connection.method_calls == [] and connection.mock_calls == []
    return res


def _inv(node=None, leaf=None, **more):
    groups = {"all": ["node1", "leaf1", *more], "gpu_nodes": ["node1"], "switches": ["leaf1", *more]}
    hostvars = {"node1": {"rdma_ports": [PORT], **(node or {})}, "leaf1": {**SW_OK, **(leaf or {})}, **{k: {**SW_OK, **v} for k, v in more.items()}}
    return groups, hostvars


def test_bad_role_and_connection_variables_fail_before_any_contact():
    groups, hostvars = _inv(
        node={"mofed_repo_url": "https://r.example.org/doca\nTrusted: yes", "verify_fabric_incast_max_senders": 1, "audit_benchmarks": "maybe"},
        leaf={"ansible_port": "22a", "ansible_host": "leaf 1"},
        leaf2={"ansible_port": 70000},
    )
    res = _contactless(groups, hostvars, extra={"audit_benchmarks": "maybe"})
    assert res["failed"] is True and res["changed"] is False and "ansible_facts" not in res
    assert res["problems"] == [
        "node1: mofed_repo_url: 'https://r.example.org/doca\\nTrusted: yes' is not allowed (allowed: a URL of scheme "
        + " | ".join(variables.APT_SCHEMES)
        + ": at most 2048 characters, no whitespace, control character, quote, "
        "bracket or backslash)",
        "node1: verify_fabric_incast_max_senders: 1 is not allowed (allowed: an integer 2..1023: incast needs at least 2 senders to congest a port)",
        "leaf1: ansible_host: 'leaf 1' is not allowed (allowed: an IP address or a DNS name (labels of letters, digits, _ -, at most 253))",
        "leaf1: ansible_port: '22a' is not allowed (allowed: an integer 1..65535 (a TCP port))",
        "leaf2: ansible_port: 70000 is not allowed (allowed: an integer 1..65535 (a TCP port))",
        "audit_benchmarks: 'maybe' is not allowed (allowed: " + variables.BOOL_ALLOWED + ")",
    ]
    assert res["msg"].startswith("the fabric intent has 6 problem(s); nothing was changed:\n- node1: mofed_repo_url")


def test_good_role_variables_pass_and_change_the_digest():
    groups, hostvars = _inv(node={"mofed_repo_url": "file:/srv/linerate-apt", "mofed_hold": "yes"}, leaf={"ansible_port": 2201, "ansible_host": "127.0.1.1"})
    res = _contactless(groups, hostvars, extra={"audit_benchmarks": "true"})
    assert not res.get("failed"), res
    hostvars["node1"]["mofed_hold"] = "no"
    assert _contactless(groups, hostvars, extra={"audit_benchmarks": "true"})["digest"] != res["digest"]


def test_a_group_vars_mistake_is_one_line_naming_the_hosts():
    groups = {"all": ["n1", "n2", "n3", "n4", "n5"], "gpu_nodes": []}
    hostvars = {h: {"nccl_env_overrides": {"NCCL_IB_HCA": "mlx5_0\nNCCL_NET=Socket"}} for h in groups["all"]}
    res = _contactless(groups, hostvars, check_cabling=False)
    assert res["problems"] == [
        "n1, n2, n3 and 2 more host(s): nccl_env_overrides.NCCL_IB_HCA: 'mlx5_0\\nNCCL_NET=Socket' is not allowed (allowed: " + FORMATS["nccl_value"][1] + ")"
    ]


def test_a_secret_in_a_variable_is_not_shown():
    groups, hostvars = _inv(leaf={"ansible_password": "hunter2\nx", "mofed_repo_url": "https://bob:hunter2@r.example.org/doca/"})
    res = _contactless(groups, hostvars)
    assert "hunter2" not in res["msg"] and "hunter2" not in repr(res["problems"])
    assert "leaf1: ansible_password: '********' is not allowed" in res["msg"]
    assert "leaf1: mofed_repo_url: 'https://***@r.example.org/doca/' is not allowed (allowed: a URL without credentials" in res["msg"]


def test_a_value_complete_only_at_run_time_is_left_to_the_role():
    from ansible.errors import AnsibleUndefinedVariable

    def template(v):
        if v == "{{ fabric_effective.nccl.gdr_level }}":
            raise AnsibleUndefinedVariable("'fabric_effective' is undefined")
        if v == "{{ site_repo }}":
            raise AnsibleUndefinedVariable("'site_repo' is undefined")
        return v

    groups, hostvars = _inv(node={"nccl_env_gdr_level": "{{ fabric_effective.nccl.gdr_level }}", "mofed_repo_url": "{{ site_repo }}"})
    res = _contactless(groups, hostvars, template=template)
    assert res["problems"] == ["node1: mofed_repo_url: could not be read: 'site_repo' is undefined"]


def test_a_template_that_refers_to_itself_is_named_by_its_key():
    from ansible.errors import AnsibleTemplateError

    loop = "Recursive loop detected in template: maximum recursion depth exceeded"

    def template(v):
        if isinstance(v, str) and "{{" in v:
            raise AnsibleTemplateError(loop)
        return v

    groups, hostvars = _inv(node={"mofed_repo_url": "{{ mofed_repo_url }}"})
    fabric = {"name": "t", "mtu": {"host": "{{ fabric.mtu.host }}", "switch": 9216}}
    res = _contactless(groups, hostvars, fabric=fabric, template=template)
    assert res["problems"] == [f"fabric.mtu.host: could not be read: {loop}", f"node1: mofed_repo_url: could not be read: {loop}"]
    # the whole intent as one template
    res = _contactless(groups, {**hostvars, "node1": {"rdma_ports": [PORT]}}, fabric="{{ fabric }}", template=template)
    assert res["problems"] == [f"fabric: could not be read: {loop}"]


def test_a_yaml_alias_loop_in_the_intent_is_named():
    fabric = {"name": "t", "nccl": {"overrides": {}}}
    fabric["nccl"]["overrides"]["NCCL_X"] = fabric["nccl"]  # &a ... *a
    lst = [1]
    lst.append(lst)
    fabric["verify"] = {"x": lst}
    groups, hostvars = _inv()
    res = _contactless(groups, hostvars, fabric=fabric)
    tail = "could not be read: it contains itself (a YAML alias inside its own anchor); allowed: a value that does not refer to itself"
    assert res["problems"] == [f"fabric.nccl.overrides.NCCL_X: {tail}", f"fabric.verify.x[1]: {tail}"]
    assert res["failed"] is True


def test_the_intent_is_read_from_the_play_when_no_argument_is_given():
    groups, hostvars = _inv()
    res = _contactless(groups, hostvars, fabric=None, extra={"fabric": {"name": "from-vars"}})
    assert not res.get("failed"), res
    assert res["ansible_facts"]["fabric_effective"]["name"] == "from-vars"


def test_validate_yml_passes_no_templated_fabric():
    with open(os.path.join(ROOT, "playbooks", "validate.yml"), encoding="utf-8") as f:
        text = f.read()
    assert 'fabric: "{{ fabric' not in text and text.count("linerate.fabric.validate_intent:") == 2
