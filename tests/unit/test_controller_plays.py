"""Controller-side plays run locally whatever connection the inventory gives a host (issue 40, point 1).

A play that only shares facts or validates (hosts: all, switches, localhost) must not open the
connection the inventory names: ansible.netcommon.network_cli with nvidia.nvue.nvue (no cliconf
plugin installed) makes every such host UNREACHABLE before linerate's own modules reach the
switch over netmiko. A play var ``ansible_connection: local`` beats the inventory's (the
``connection:`` keyword alone does not). The test runs the playbooks' controller plays
(ansible-playbook, no lab, nothing reachable: every address is port 1 of 127.0.0.1) against an
inventory that gives the hosts each connection an operator may set.
"""

import glob
import os
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, ".venv", "bin")
# hosts patterns of plays whose tasks run on the controller (the switch plays reach the switch
# over netmiko from there; the others only share facts, validate or write reports locally)
CONTROLLER_PATTERNS = ("localhost", "switches", "all")
# plays that keep the inventory's connections on purpose, with the reason
KEEP_CONNECTION = {
    # the remediate role delegates the drain to remediate_control_host (a Slurm or Kubernetes
    # control node reached by its own connection): a play var would force it local too
    ("playbooks/stages/act_on_findings.yml", "Drain the nodes the findings name, return the ones linerate drained that pass (opt-in)"),
    ("playbooks/stages/act_on_findings.yml", "Give the verification's verdict"),
}
# every connection an operator may give a switch, with the ansible_network_os that goes with it
SWITCHES = {
    "leaf01": ("ansible.netcommon.network_cli", "nvidia.nvue.nvue", "nvue"),
    "leaf02": ("ansible.netcommon.httpapi", "nvidia.nvue.httpapi", "nvue"),
    "leaf03": ("network_cli", "nvidia.nvue.nvue", "nvue"),
    "leaf04": ("ssh", "cumulus", "nvue"),
    "leaf05": ("ansible.netcommon.network_cli", "dellemc.enterprise_sonic.sonic", "sonic"),
    "leaf06": ("ansible.netcommon.httpapi", "dellemc.enterprise_sonic.sonic", "sonic"),
    "leaf07": ("paramiko", "nvue", "nvue"),
    "leaf08": ("ansible.builtin.ssh", "nvidia.nvue.nvue", "nvue"),
    "spine01": ("ansible.netcommon.network_cli", "arista.eos.eos", "eos"),
    "spine02": ("httpapi", "arista.eos.eos", "eos"),
}


def _plays():
    for path in sorted(glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        rel = os.path.relpath(path, ROOT)
        for play in doc if isinstance(doc, list) else []:
            if isinstance(play, dict) and "hosts" in play:
                yield rel, play


def _controller_side(hosts):
    return str(hosts).split(":")[0] in CONTROLLER_PATTERNS


def test_every_controller_play_sets_the_local_connection_as_a_play_var():
    seen = []
    for rel, play in _plays():
        if not _controller_side(play["hosts"]) or (rel, play["name"]) in KEEP_CONNECTION:
            continue
        seen.append((rel, play["name"]))
        assert play.get("connection") == "local", (rel, play["name"])
        assert (play.get("vars") or {}).get("ansible_connection") == "local", (rel, play["name"])
        assert play["vars"].get("ansible_python_interpreter") == "{{ ansible_playbook_python }}", (rel, play["name"])
    names = {r for r, _ in seen}
    # the plays that shared the intent through the inventory's connection are among them
    assert ("playbooks/validate.yml", "Share the validated intent with every host") in seen
    assert ("playbooks/validate.yml", "Validate the fabric intent") in seen
    assert {"playbooks/render.yml", "playbooks/k8s.yml", "playbooks/stages/switches.yml"} <= names
    # the exceptions are real plays (a renamed play would silently lose its exception)
    plays = {(r, p["name"]) for r, p in _plays()}
    assert KEEP_CONNECTION <= plays


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    """example-roce's intent and cabling, its hosts given every connection, localhost listed with ssh."""
    tmp = tmp_path_factory.mktemp("connections")
    inv = tmp / "inv"
    shutil.copytree(os.path.join(ROOT, "inventory", "example-roce", "group_vars"), inv / "group_vars")
    unreachable = {"ansible_host": "127.0.0.1", "ansible_port": 1}
    leaves = {
        name: dict(
            unreachable,
            ansible_connection=conn,
            ansible_network_os=nos,
            switch_platform=platform,
            switch_role="leaf",
            switch_uplinks=[
                {"port": f"swp{31 + i}", "peer": spine, "peer_port": f"Ethernet{int(name[4:])}/1"} for i, spine in enumerate(("spine01", "spine02"))
            ],
        )
        for name, (conn, nos, platform) in SWITCHES.items()
        if name.startswith("leaf")
    }
    for name, (_, _, platform) in SWITCHES.items():
        if platform == "sonic":
            # sonic-swss's table stops at 100G: a 400G row, as the operator gives the
            # platform's pg_profile_lookup.ini, lets the 400G intent validate
            leaves[name]["switch_sonic_pg_lookup"] = {400000: {"5m": {"size": 90112, "xon": 18432, "xoff": 71680}}}
            leaves[name]["switch_uplinks"] = [
                {"port": "Ethernet248", "peer": "spine01", "peer_port": f"Ethernet{int(name[4:])}/1"},
                {"port": "Ethernet256", "peer": "spine02", "peer_port": f"Ethernet{int(name[4:])}/1"},
            ]
    spines = {
        name: dict(unreachable, ansible_connection=conn, ansible_network_os=nos, switch_platform=platform, switch_role="spine")
        for name, (conn, nos, platform) in SWITCHES.items()
        if name.startswith("spine")
    }
    hosts = {
        "all": {
            "hosts": {"localhost": {"ansible_connection": "ssh", **unreachable}},
            "children": {
                "gpu_nodes": {"hosts": {f"gpu00{i}": dict(unreachable, ansible_connection="ssh") for i in range(1, 5)}},
                "switches": {"children": {"leaves": {"hosts": leaves}, "spines": {"hosts": spines}}},
            },
        }
    }
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts, sort_keys=False))
    return tmp


def _run(tmp, playbook, *args):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"),
        ANSIBLE_FACT_CACHING="memory",
        PATH=BIN + os.pathsep + os.environ["PATH"],
    )
    return subprocess.run(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            str(tmp / "inv"),
            playbook,
            "-e",
            "vault_switch_user=admin",
            "-e",
            "vault_switch_password=x",
            "-e",
            f"linerate_output_dir={tmp / 'out'}",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _recap(stdout):
    """{host: {ok: n, unreachable: n, failed: n, ...}} from the PLAY RECAP."""
    out = {}
    for line in stdout.split("PLAY RECAP", 1)[-1].splitlines()[1:]:
        if ":" not in line:
            continue
        host, counts = line.split(":", 1)
        out[host.strip()] = {k: int(v) for k, v in (c.split("=") for c in counts.split())}
    return out


@pytest.mark.parametrize(
    "playbook,args",
    [
        ("playbooks/validate.yml", ()),
        # every playbook's validation (the same two plays) and the change window's summary on localhost
        ("playbooks/switches.yml", ("--tags", "summary")),
        # the offline preview: every switch, node and localhost play, with their modules and file writes
        ("playbooks/render.yml", ()),
    ],
)
def test_controller_plays_reach_no_host_whatever_the_inventory_connection(inventory, playbook, args):
    r = _run(inventory, playbook, *args)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    recap = _recap(r.stdout)
    assert set(SWITCHES) | {"localhost", "gpu001", "gpu004"} <= set(recap), recap
    for host, counts in recap.items():
        assert counts["unreachable"] == 0 and counts["failed"] == 0, (host, counts)
    # every host got the validated intent (the share play ran on each, not only skipped)
    assert all(recap[h]["ok"] >= 1 for h in SWITCHES), recap
    assert "intent valid" in " ".join(r.stdout.split())
