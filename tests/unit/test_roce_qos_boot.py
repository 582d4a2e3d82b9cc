"""roce_qos at boot (issue 25 item 6): one unit per rail, bound to its netdev, running that rail's
script - the module's own boot plan for the port - and the single unit of earlier releases migrated.

The role's task arguments are evaluated the way a run evaluates them (test_cross_layer's Vars over the
role defaults), with ``lookup('ansible.builtin.template', ...)`` rendering the role's real templates."""

import os
import subprocess

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.host import roce

from test_cross_layer import ROOT, TEXT, Vars, host_vars, module_args

ROLE = os.path.join(ROOT, "roles", "roce_qos")
PORTS = [{"netdev": "enp65s0f0np0", "device": "mlx5_0", "port": 1}, {"netdev": "enp193s0f0np0", "device": "mlx5_1", "port": 1}]


def tasks(name="configure.yml"):
    with open(os.path.join(ROLE, "tasks", name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def task(name):
    return next(t for t in tasks() if t.get("name") == name)


def role_vars(ports=PORTS, **extra):
    """The defaults over one host, the module's result as registered, and a template lookup."""
    v = host_vars(published({"name": "xl", "transport": "roce"}))
    dict.update(v, **extra)
    args = module_args(v, task("Configure RoCE QoS on each cabled port"), "linerate.fabric.roce_qos")
    result = {"ports": [dict(p, changed=False, **roce.boot_result(dict(args, **p), p["netdev"], p["device"], p["port"])) for p in ports]}

    def lookup(kind, path, template_vars=None):
        assert kind == "ansible.builtin.template"
        tmpl = TEXT.get_template(os.path.relpath(os.path.join(ROLE, "templates", path), ROOT))
        ctx = Vars(v)
        dict.update(ctx, template_vars or {})
        return tmpl.environment.concat(tmpl.root_render_func(tmpl.new_context(ctx, shared=True)))

    dict.update(v, roce_qos_result=result, lookup=lookup)
    return v, args


def install(v):
    t = task("Install the boot-time RoCE QoS configuration (one unit per rail)")
    return {k: v.resolve(val) for k, val in t["vars"].items()}, t


def test_the_unit_template_binds_each_instance_to_its_netdev():
    with open(os.path.join(ROLE, "templates", "etc", "systemd", "system", "linerate-roce-qos@.service.j2"), encoding="utf-8") as f:
        lines = [ln for ln in f.read().splitlines() if ln and not ln.startswith("#")]
    assert "BindsTo=sys-subsystem-net-devices-%i.device" in lines
    assert ("After=sys-subsystem-net-devices-%i.device network-pre.target openibd.service linerate-rail@%i.service") in lines
    assert "WantedBy=sys-subsystem-net-devices-%i.device" in lines
    assert "WantedBy=multi-user.target" not in lines
    # bounded retry: every 5 s, at most 60 starts in 10 minutes
    for directive in (
        "Type=oneshot",
        "RemainAfterExit=yes",
        "Restart=on-failure",
        "RestartSec=5s",
        "StartLimitIntervalSec=600",
        "StartLimitBurst=60",
        "ExecStart={{ roce_qos_rail_dir }}/%I.sh",
    ):
        assert directive in lines, directive
    assert [ln for ln in lines if ln.startswith("ExecStart=")] == ["ExecStart={{ roce_qos_rail_dir }}/%I.sh"]


def test_one_script_per_rail_runs_the_module_boot_plan_and_passes_sh_n(tmp_path):
    v, args = role_vars()
    made, _ = install(v)
    files = {f["path"]: f for f in made["roce_qos_rail_files"]}
    assert sorted(files) == [
        "/etc/linerate/roce-qos/enp193s0f0np0.ecn.conf",
        "/etc/linerate/roce-qos/enp193s0f0np0.sh",
        "/etc/linerate/roce-qos/enp65s0f0np0.ecn.conf",
        "/etc/linerate/roce-qos/enp65s0f0np0.sh",
        "/etc/systemd/system/linerate-roce-qos@.service",
    ]
    for port in PORTS:
        script = files[f"/etc/linerate/roce-qos/{port['netdev']}.sh"]
        assert script["mode"] == "0755" and script["validate"] == "sh -n %s"
        body = [ln for ln in script["content"].splitlines() if ln and not ln.startswith("#")]
        n, d = port["netdev"], port["device"]
        assert body == [
            "set -e",
            f"mlnx_qos -i {n} --trust dscp --pfc 0,0,0,1,0,0,0,0",
            f"mlnx_qos -i {n} --dscp2prio set,26,3",
            f"mlnx_qos -i {n} --dscp2prio set,48,6",
            f"cma_roce_mode -d {d} -p 1 -m 2",
            f"cma_roce_tos -d {d} -p 1 -t 104",
            f"ip link set dev {n} mtu 4200",
            f"systemd-tmpfiles --create /etc/linerate/roce-qos/{n}.ecn.conf",
        ]
        path = tmp_path / f"{n}.sh"
        path.write_text(script["content"])
        assert subprocess.run(["sh", "-n", str(path)]).returncode == 0
        ecn = [ln for ln in files[f"/etc/linerate/roce-qos/{n}.ecn.conf"]["content"].splitlines() if ln and not ln.startswith("#")]
        assert ecn == [
            f"w /sys/class/net/{n}/ecn/roce_np/enable/3 - - - - 1",
            f"w /sys/class/net/{n}/ecn/roce_rp/enable/3 - - - - 1",
            f"w /sys/class/net/{n}/ecn/roce_np/cnp_dscp - - - - 48",
            f"w /sys/class/net/{n}/ecn/roce_np/cnp_802p_prio - - - - 6",
        ]
        # each rail's files name only that rail
        other = next(p["netdev"] for p in PORTS if p is not port)
        assert other not in script["content"]


def test_the_rail_files_write_the_modules_rendered_lines_and_render_no_plan_of_their_own():
    """One renderer per plan (issue 29 item 3): the script and the ECN file carry the module's
    boot_commands / boot_tmpfiles line for line; a line the module did not render never appears."""
    v, _ = role_vars()
    result = dict.__getitem__(v, "roce_qos_result")
    result["ports"][0]["boot_commands"] = ["echo from-the-module"]
    result["ports"][0]["boot_tmpfiles"] = ["w /from/the/module - - - - 7"]
    made, _ = install(v)
    files = {f["path"]: f for f in made["roce_qos_rail_files"]}
    body = [ln for ln in files["/etc/linerate/roce-qos/enp65s0f0np0.sh"]["content"].splitlines() if ln and not ln.startswith("#")]
    assert body == ["set -e", "echo from-the-module", "systemd-tmpfiles --create /etc/linerate/roce-qos/enp65s0f0np0.ecn.conf"]
    ecn = [ln for ln in files["/etc/linerate/roce-qos/enp65s0f0np0.ecn.conf"]["content"].splitlines() if ln and not ln.startswith("#")]
    assert ecn == ["w /from/the/module - - - - 7"]
    for name in ("rail.sh.j2", "rail.ecn.conf.j2"):
        with open(os.path.join(ROLE, "templates", "etc", "linerate", "roce-qos", name), encoding="utf-8") as f:
            text = f.read()
        assert ".boot " not in text and "argv" not in text and "map('quote')" not in text, name


def test_without_ecn_the_rail_has_no_tmpfiles_step_and_its_ecn_file_is_removed():
    v, _ = role_vars(roce_qos_manage_ecn=False)
    made, _ = install(v)
    files = {f["path"]: f for f in made["roce_qos_rail_files"]}
    assert files["/etc/linerate/roce-qos/enp65s0f0np0.ecn.conf"] == {"path": "/etc/linerate/roce-qos/enp65s0f0np0.ecn.conf", "state": "absent"}
    assert "systemd-tmpfiles" not in files["/etc/linerate/roce-qos/enp65s0f0np0.sh"]["content"]


def test_a_hostile_netdev_value_is_quoted_not_run(tmp_path):
    # validation refuses such names first; the script quotes every argument all the same
    v, _ = role_vars(ports=[{"netdev": "x;touch /tmp/p", "device": "mlx5_0", "port": 1}])
    made, _ = install(v)
    script = next(f for f in made["roce_qos_rail_files"] if f["path"].endswith(".sh"))["content"]
    assert "mlnx_qos -i 'x;touch /tmp/p' --trust dscp" in script


def test_units_are_one_instance_per_rail_systemd_escaped():
    v, _ = role_vars(ports=PORTS + [{"netdev": "rail-2", "device": "mlx5_2", "port": 1}])
    made, t = install(v)
    assert made["roce_qos_units"] == [
        {"name": "linerate-roce-qos@enp65s0f0np0.service"},
        {"name": "linerate-roce-qos@enp193s0f0np0.service"},
        {"name": "linerate-roce-qos@rail\\x2d2.service"},
    ]
    args = t["linerate.fabric.host_files"]
    assert args["units"] == "{{ roce_qos_units }}"
    assert args["directories"] == [{"path": "{{ roce_qos_rail_dir }}"}]
    assert t["register"] == "roce_qos_unit_file"  # host_stamp and audit read it
    assert t["notify"] == ["Re-apply RoCE QoS with the boot units", "linerate verify fabric"]


def test_the_single_unit_of_earlier_releases_is_disabled_then_removed():
    names = [t.get("name") for t in tasks()]
    find = names.index("Find the single RoCE QoS boot unit of earlier releases")
    disable = names.index("Disable the single RoCE QoS boot unit of earlier releases")
    new = names.index("Install the boot-time RoCE QoS configuration (one unit per rail)")
    assert find < disable < new
    assert tasks()[find]["ansible.builtin.stat"] == {"path": "/etc/systemd/system/linerate-roce-qos.service"}
    assert tasks()[find]["register"] == "roce_qos_old_unit"
    assert tasks()[disable]["ansible.builtin.systemd_service"] == {"name": "linerate-roce-qos.service", "enabled": False}
    assert tasks()[disable]["when"].endswith("and roce_qos_old_unit.stat.exists")
    v, _ = role_vars()
    made, t = install(v)
    assert t["linerate.fabric.host_files"]["files"] == "{{ roce_qos_rail_files + roce_qos_old_files }}"
    assert made["roce_qos_old_files"] == [
        {"path": "/etc/systemd/system/linerate-roce-qos.service", "state": "absent"},
        {"path": "/etc/linerate/roce-qos-ecn.conf", "state": "absent"},
    ]


def test_the_handler_runs_every_rail_script_the_call_wrote():
    # the scripts, not the units: a unit is bound to its netdev's device unit, which only udev creates
    with open(os.path.join(ROLE, "handlers", "main.yml"), encoding="utf-8") as f:
        (handler,) = yaml.safe_load(f)
    assert handler["name"] == "Re-apply RoCE QoS with the boot units"
    assert handler["ansible.builtin.command"] == {"argv": ["{{ roce_qos_rail_dir }}/{{ item }}.sh"]}
    assert handler["loop"] == "{{ roce_qos_result.ports | default([]) | map(attribute='netdev') | list }}"
    assert handler["changed_when"] is True
    assert "linerate-roce-qos@.service' not in roce_qos_unit_file.created" in handler["when"]


def test_the_module_task_passes_the_mtu_change():
    v, args = role_vars()
    assert args["mtu_change"] == "any"
    v, args = role_vars(roce_qos_mtu_change="lower")
    assert args["mtu_change"] == "lower"


@pytest.mark.parametrize("name", ["linerate-roce-qos.service.j2", "roce-qos-ecn.conf.j2"])
def test_the_single_unit_templates_are_gone(name):
    found = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(ROLE, "templates")) for f in fs]
    assert not [f for f in found if f.endswith(name)]
