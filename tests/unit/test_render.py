"""playbooks/render.yml: the whole fabric's switch commands and host files for an intent, offline
(issue 40, point 7), and the rendered examples of the module docs as pasted. Runs ansible-playbook
on a copy of inventory/example-roce, whose hosts resolve nowhere: nothing can be contacted, and
the switches carry the conventional network_cli connection."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.modules import roce_qos, switch_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, ".venv", "bin")
VAULT = ["-e", "vault_switch_user=admin", "-e", "vault_switch_password=x"]


def _env(tmp):
    return dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"),
        ANSIBLE_FACT_CACHING="memory",
        PATH=BIN + os.pathsep + os.environ["PATH"],
    )


def _playbook(tmp, *argv):
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), *argv], cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=600)


def _recap(stdout):
    out = {}
    for line in stdout.split("PLAY RECAP", 1)[-1].splitlines()[1:]:
        if ":" in line:
            host, counts = line.split(":", 1)
            out[host.strip()] = {k: int(v) for k, v in (c.split("=") for c in counts.split())}
    return out


def _example(module, state):
    return next(t for t in yaml.safe_load(module.EXAMPLES) if any(isinstance(v, dict) and v.get("state") == state for v in t.values()))


def test_the_switch_config_rendered_example_works_as_pasted(tmp_path):
    task = _example(switch_config, "rendered")
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                task,
                {"ansible.builtin.copy": {"content": "{{ " + task["register"] + ".rendered | to_json }}", "dest": str(tmp_path / "out.json"), "mode": "0644"}},
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    r = _playbook(tmp_path, str(tmp_path / "play.yml"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    config = task["linerate.fabric.switch_config"]["config"]
    # a switch that has none of it gets every line of the intent, in the platform's order
    assert yaml.safe_load((tmp_path / "out.json").read_text()) == config.strip().splitlines()


def test_the_roce_qos_rendered_example_works_as_pasted(tmp_path):
    task = _example(roce_qos, "rendered")
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                task,
                {"ansible.builtin.copy": {"content": "{{ " + task["register"] + " | to_json }}", "dest": str(tmp_path / "out.json"), "mode": "0644"}},
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    r = _playbook(tmp_path, str(tmp_path / "play.yml"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    res = yaml.safe_load((tmp_path / "out.json").read_text())
    assert res["changed"] is False
    (port,) = res["ports"]
    # the rail's boot script: the module's plan from the options alone (nothing read; no mlnx_qos here)
    assert port["boot_commands"] == [
        "mlnx_qos -i enp65s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0",
        "mlnx_qos -i enp65s0f0np0 --dscp2prio set,26,3",
        "mlnx_qos -i enp65s0f0np0 --dscp2prio set,48,6",
        "cma_roce_mode -d mlx5_0 -p 1 -m 2",
        "cma_roce_tos -d mlx5_0 -p 1 -t 104",
        "ip link set dev enp65s0f0np0 mtu 4200",
    ]
    assert port["boot_tmpfiles"] == []


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("render")
    inv = tmp / "inv"
    shutil.copytree(os.path.join(ROOT, "inventory", "example-roce"), inv)
    hosts = (inv / "hosts.yml").read_text()
    # the conventional connection of Ansible's network modules, which the preview never opens
    hosts = re.sub(r"ansible_connection: local .*", "ansible_connection: ansible.netcommon.network_cli\n        ansible_network_os: nvidia.nvue.nvue", hosts)
    (inv / "hosts.yml").write_text(hosts)
    out = tmp / "out"
    first = _playbook(tmp, "-i", str(inv), "playbooks/render.yml", *VAULT, "-e", f"linerate_output_dir={out}")
    second = _playbook(tmp, "-i", str(inv), "playbooks/render.yml", *VAULT, "-e", f"linerate_output_dir={out}")
    inventory = subprocess.run(
        [os.path.join(BIN, "ansible-inventory"), "-i", str(inv), "--list", "--yaml"], cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=300
    )
    return {"first": first, "second": second, "out": out / "render", "inv": inv, "tmp": tmp, "hostvars": _hostvars(yaml.safe_load(inventory.stdout))}


def _hostvars(tree):
    out = {}

    def walk(group, inherited):
        gvars = dict(inherited, **(group.get("vars") or {}))
        for name, hv in (group.get("hosts") or {}).items():
            out.setdefault(name, {}).update(dict(gvars, **(hv or {})))
        for child in (group.get("children") or {}).values():
            walk(child or {}, gvars)

    walk(tree["all"], {})
    return out


def test_the_preview_runs_on_the_controller_and_a_second_run_changes_nothing(rendered):
    r = rendered["first"]
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    recap = _recap(r.stdout)
    assert {"leaf01", "leaf08", "spine01", "spine02", "gpu001", "gpu004", "localhost"} <= set(recap)
    assert all(c["unreachable"] == 0 and c["failed"] == 0 for c in recap.values()), recap
    again = _recap(rendered["second"].stdout)
    assert rendered["second"].returncode == 0
    assert all(c["changed"] == 0 for c in again.values()), again


def test_every_switch_has_its_commands_and_its_intent(rendered):
    out = rendered["out"]
    for sw in [f"leaf0{i}" for i in range(1, 9)] + ["spine01", "spine02"]:
        assert (out / sw / "commands.txt").read_text().strip(), sw
    leaf = (out / "leaf01" / "commands.txt").read_text().splitlines()
    intent = (out / "leaf01" / "intent.nv-commands.txt").read_text()
    assert intent.startswith("# Ansible managed") and "nv set qos pfc linerate switch-priority 3" in intent
    # a switch that has none of the intent gets every command of it, and only those
    assert leaf == [line for line in intent.splitlines() if line.startswith("nv ")]
    # leaf01's fabric ports: swp1..swp4 from the nodes' rails, swp31/swp32 its uplinks
    ports = sorted({m for line in leaf for m in re.findall(r"nv set interface (swp\d+) ", line)})
    assert ports == ["swp1", "swp2", "swp3", "swp31", "swp32", "swp4"]
    assert "nv set interface swp1 link speed 400G" in leaf
    spine = (out / "spine01" / "commands.txt").read_text().splitlines()
    assert "interface Ethernet1/1" in spine and "speed 400g-8" in spine and "mtu 9214" in spine
    assert (out / "spine01" / "intent.eos.cfg").is_file()


def test_every_node_has_the_files_the_roles_write(rendered):
    out, hv = rendered["out"], rendered["hostvars"]
    for node in ("gpu001", "gpu004"):
        base = out / node
        rails = hv[node].get("rdma_ports")
        assert rails is None or isinstance(rails, (list, str))
        conf = (base / "etc" / "nccl.conf").read_text().splitlines()
        hca = next(line for line in conf if line.startswith("NCCL_IB_HCA="))
        assert hca.startswith("NCCL_IB_HCA==mlx5_") and len(hca.split(",")) == 8
        # gdr_level auto: nothing of GDR anywhere (NCCL's own rule); nccl.conf is System-configuration only
        assert "NCCL_IB_TC=104" in conf and not any(line.startswith("NCCL_NET_GDR_LEVEL") for line in conf)
        assert not (base / "etc" / "nccl" / "tuned-job.env").exists()
        assert not any(line.startswith("NCCL_IB_GID_INDEX") for line in conf)  # the node's (NOTES.txt)
        assert (base / "etc" / "default" / "nccl").is_file() and (base / "etc" / "profile.d" / "nccl.sh").is_file()
        scripts = sorted((base / "etc" / "linerate" / "rails").iterdir())
        assert len(scripts) == 8
        for script in scripts:
            netdev = script.name[:-3]
            text = script.read_text()
            assert f"ip link set dev {netdev} up" in text and re.search(rf"ip addr replace \S+/\d+ dev {netdev}", text)
            qos = (base / "etc" / "linerate" / "roce-qos" / script.name).read_text()
            assert f"mlnx_qos -i {netdev} --trust dscp --pfc 0,0,0,1,0,0,0,0" in qos
            assert f"ip link set dev {netdev} mtu 4200" in qos
            ecn = (base / "etc" / "linerate" / "roce-qos" / f"{netdev}.ecn.conf").read_text()
            assert f"w /sys/class/net/{netdev}/ecn/roce_np/enable/3 - - - - 1" in ecn
        for unit in ("linerate-rail@.service", "linerate-roce-qos@.service"):
            assert (base / "etc" / "systemd" / "system" / unit).is_file()
        assert (base / "etc" / "modules-load.d" / "nvidia-peermem.conf").read_text().strip().endswith("nvidia_peermem")
        assert "URIs: https://linux.mellanox.com/" in (base / "etc" / "apt" / "sources.list.d" / "linerate-ofed.sources").read_text()
        assert oct((base / "etc" / "linerate" / "rails" / scripts[0].name).stat().st_mode & 0o777) == "0o755"
    notes = (out / "NOTES.txt").read_text()
    assert "gpu001: NCCL_IB_GID_INDEX: not in the preview" in notes


def test_a_pinned_gid_index_is_in_the_preview(rendered, tmp_path):
    out = tmp_path / "out"
    r = _playbook(
        rendered["tmp"],
        "-i",
        str(rendered["inv"]),
        "playbooks/render.yml",
        *VAULT,
        "-e",
        f"linerate_output_dir={out}",
        "-e",
        "nccl_env_gid_index=3",
        "--limit",
        "gpu001,localhost",
    )
    assert r.returncode == 0, r.stdout[-3000:]
    assert "NCCL_IB_GID_INDEX=3" in (out / "render" / "gpu001" / "etc" / "nccl.conf").read_text().splitlines()
    assert "NCCL_IB_GID_INDEX" not in (out / "render" / "NOTES.txt").read_text()


def _tasks(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return yaml.safe_load(f)


def _walk(tasks):
    for t in tasks:
        yield t
        yield from _walk(t.get("block") or [])


def _task(rel, name):
    return next(t for t in _walk(_tasks(rel)) if t.get("name") == name)


def test_the_roles_preview_derives_the_files_as_the_roles_do():
    """The render task files restate the roles' own file lists and module call: kept equal here."""
    apply = _task("roles/rdma_netdev/tasks/main.yml", "Persist the RDMA netdevs across reboots (one boot unit per rail)")
    render = _task("roles/rdma_netdev/tasks/render.yml", "Add the rails' boot scripts and unit to the preview")
    assert render["vars"]["rdma_netdev_rail_files"] == apply["vars"]["rdma_netdev_rail_files"]
    conf = _task("roles/roce_qos/tasks/configure.yml", "Configure RoCE QoS on each cabled port")
    plan = _task("roles/roce_qos/tasks/render.yml", "Compute each cabled port's boot plan (no contact)")
    assert plan["linerate.fabric.roce_qos"] == dict(conf["linerate.fabric.roce_qos"], state="rendered")
    assert plan["vars"] == conf["vars"]
    persist = _task("roles/roce_qos/tasks/configure.yml", "Install the boot-time RoCE QoS configuration (one unit per rail)")
    files = _task("roles/roce_qos/tasks/render.yml", "Add the rails' boot scripts, ECN files and unit to the preview")
    assert files["vars"]["roce_qos_rail_files"] == persist["vars"]["roce_qos_rail_files"]
    nccl = _task("roles/nccl_env/tasks/configure.yml", "Write /etc/nccl.conf, the launcher environment file and the profile script")
    preview = _task("roles/nccl_env/tasks/render.yml", "Derive the NCCL settings from the intent, every cabled port as up")
    written = [f["path"] for f in nccl["linerate.fabric.host_files"]["files"]]
    with open(os.path.join(ROOT, "roles", "nccl_env", "tasks", "render.yml"), encoding="utf-8") as f:
        text = f.read()
    for path in written:  # every file the role writes is in its preview
        assert "'path': " + path.strip("{} ") in text, path
    derive = _task("roles/nccl_env/tasks/configure.yml", "Derive the NCCL settings from the facts and the intent")
    options = re.sub(r"\s+", " ", derive["ansible.builtin.set_fact"]["nccl_env_result"].split("nccl_env_settings", 1)[1])
    mine = re.sub(r"\s+", " ", preview["ansible.builtin.set_fact"]["nccl_env_result"].split("nccl_env_settings", 1)[1])
    assert mine == options
