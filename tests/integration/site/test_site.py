"""site.yml against a freshly reset lab: a preview that changes nothing, the
converge, a second run with changed=0, and drift corrected by one run.

The tests run in order on one lab (module scope); the lab is reset first.
"""

import datetime
import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, ansible_env, on, podman_exec, recap, run_playbook

NODE = "node2"


def labctl(*args, timeout=900):
    res = subprocess.run(
        [sys.executable, os.path.join(REPO, "lab", "labctl.py"), *args], cwd=REPO, env=ansible_env(), text=True, capture_output=True, timeout=timeout
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def switch_configs():
    d = os.path.join(REPO, "lab", "state", "switchsim")
    return {
        f: hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest() for f in sorted(os.listdir(d)) if f.endswith(".json") and f != "credentials.json"
    }


def node_state(node):
    """What the roles change on a node, read back raw."""
    sources = podman_exec(node, "ls", "/etc/apt/sources.list.d/").stdout
    pkgs = podman_exec(node, "dpkg-query", "-W", "-f=${Package} ${Version}\n").stdout
    links = on(node, "ip", "-o", "addr", "show")
    return {"sources": sources, "packages": hashlib.sha256(pkgs.encode()).hexdigest(), "addresses": links}


@pytest.fixture(scope="module")
def fresh_lab():
    labctl("down")
    labctl("up", "--nodes", os.environ.get("LAB_NODES", "4"))
    os.environ["LINERATE_LAB_STATE"] = os.path.join(REPO, "lab", "state", "fabric")
    sys.path.insert(0, os.path.join(REPO, "lab", "sim"))
    from linerate_lab import model

    return model.load()


def test_preview_of_a_fresh_lab_changes_nothing(fresh_lab):
    nodes_before = {n: node_state(n) for n in fresh_lab["nodes"]}
    switches_before = switch_configs()
    res = run_playbook("playbooks/site.yml", "--check", "--diff")
    assert res.returncode == 0, res.stdout[-5000:]
    out = res.stdout
    assert "would configure the OFED repository and install mlnx-ofed-all=24.10-1.1.4.0" in out
    assert "+URIs: file:/srv/linerate-apt" in out
    # The switch diffs are the real delta of each platform's running config.
    assert re.search(r"^\+.*priority-flow-control", out, re.M), "no EOS PFC line in the diff"
    assert re.search(r"^\+.*nv set .*pfc", out, re.M) or "pfc" in out
    counts = recap(out)
    assert all(counts[n]["changed"] > 0 for n in fresh_lab["nodes"]), counts
    assert all(counts[s]["changed"] > 0 for s in fresh_lab["switches"]), counts
    assert {n: node_state(n) for n in fresh_lab["nodes"]} == nodes_before
    assert switch_configs() == switches_before


def test_converge(fresh_lab):
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    res = run_playbook("playbooks/site.yml")
    assert res.returncode == 0, res.stdout[-6000:]
    counts = recap(res.stdout)
    assert all(c["failed"] == 0 for c in counts.values())
    assert all(counts[n]["changed"] > 0 for n in fresh_lab["nodes"])
    # The changes asked for verification, and it passed.
    with open(os.path.join(REPO, "inventory", "lab-output", "reports", "latest", "report.json")) as f:
        report = json.load(f)
    assert report["generated_at"] >= started, "no verification ran in this converge"
    assert report["summary"]["passed"] is True, report["findings"]


def test_second_run_changes_nothing(fresh_lab):
    res = run_playbook("playbooks/site.yml")
    assert res.returncode == 0, res.stdout[-4000:]
    counts = recap(res.stdout)
    assert {h: c["changed"] for h, c in counts.items()} == {h: 0 for h in counts}, counts
    # Every node reads as its last converge left it (converge stamp) and every switch is at its
    # intent (pre-check delta): the host stack and the rollout run on nobody.
    for play in (
        "Install and configure the RDMA host stack",
        "Write NCCL's environment from the ports as they are now",
        "Roll out the fabric config, one batch at a time",
    ):
        assert re.search(rf"PLAY \[{re.escape(play)}\] \**\nskipping: no hosts matched", res.stdout), play
    assert "as the last converge left it" in run_playbook("playbooks/hosts.yml", "-v").stdout


@pytest.mark.matrix
def test_every_role_run_anyway_changes_nothing(fresh_lab):
    """The stamp only skips what would change nothing: run every role on every node (the roles'
    own idempotence) and the stamps stay as they were. Matrix: each role's idempotence is molecule's
    (converge, then idempotence, in make test); the second run above keeps changed=0 in the core."""
    before = {n: on(n, "cat", "/var/lib/linerate/converged.json") for n in fresh_lab["nodes"]}
    res = run_playbook("playbooks/hosts.yml", "-e", "linerate_full_run=true")
    assert res.returncode == 0, res.stdout[-4000:]
    assert "TASK [nccl_env : Write /etc/nccl.conf" in res.stdout and "TASK [mofed : " in res.stdout
    counts = recap(res.stdout)
    assert {h: c["changed"] for h, c in counts.items()} == {h: 0 for h in counts}, counts
    assert {n: on(n, "cat", "/var/lib/linerate/converged.json") for n in fresh_lab["nodes"]} == before
    assert on(NODE, "stat", "-c", "%a", "/var/lib/linerate/converged.json").strip() == "600"


def drift(node):
    """A node left wrong: trust mode, PFC vector, rail address (so no RoCEv2
    GID), peermem unloaded, a firmware value pending for next boot."""
    on(node, "mlnx_qos", "-i", "enp65s0f0np0", "--trust", "pcp", "--pfc", "0,0,0,0,0,0,0,0")
    on(node, "ip", "addr", "flush", "dev", "enp193s0f0np0", "scope", "global")
    on(node, "rmmod", "nvidia_peermem")
    on(node, "mlxconfig", "-d", "0000:41:00.0", "-y", "set", "CNP_DSCP_P1=10")


def observe(node):
    qos = on(node, "mlnx_qos", "-i", "enp65s0f0np0")
    gids = podman_exec(node, "show_gids", "mlx5_1").stdout
    mods = on(node, "lsmod")
    fw = on(node, "mlxconfig", "-d", "0000:41:00.0", "-e", "q", "CNP_DSCP_P1")
    return {
        "trust": re.search(r"Priority trust state: (\w+)", qos).group(1),
        "pfc": re.search(r"enabled\s+((?:\d\s+){7}\d)", qos).group(1).split(),
        "roce_v2_ipv4_gid": bool(re.search(r"192\.168\.101\.\d+\s+v2", gids)),
        "peermem": bool(re.search(r"^nvidia_peermem\s", mods, re.M)),
        "cnp_dscp_next_boot": re.search(r"CNP_DSCP_P1\s+\S+\s+\S+\s+(\S+)", fw).group(1),
    }


def test_drift_is_previewed_then_corrected_by_one_run(fresh_lab):
    healthy = observe(NODE)
    assert healthy == {
        "trust": "dscp",
        "pfc": ["0", "0", "0", "1", "0", "0", "0", "0"],
        "roce_v2_ipv4_gid": True,
        "peermem": True,
        "cnp_dscp_next_boot": "48",
    }, healthy
    drift(NODE)
    broken = observe(NODE)
    assert broken == {"trust": "pcp", "pfc": ["0"] * 8, "roce_v2_ipv4_gid": False, "peermem": False, "cnp_dscp_next_boot": "10"}, broken

    preview = run_playbook("playbooks/site.yml", "--check", "--diff", "--limit", f"localhost,{NODE}")
    assert preview.returncode == 0, preview.stdout[-5000:]
    assert recap(preview.stdout)[NODE]["changed"] > 0
    assert observe(NODE) == broken, "the preview changed the node"

    res = run_playbook("playbooks/site.yml")
    assert res.returncode == 0, res.stdout[-6000:]
    counts = recap(res.stdout)
    assert counts[NODE]["changed"] > 0
    assert all(counts[n]["changed"] == 0 for n in fresh_lab["nodes"] if n != NODE), counts
    assert observe(NODE) == healthy

    # the corrected fabric was verified by the run above; the second run is about the converge
    again = run_playbook("playbooks/site.yml", "--skip-tags", "verify")
    assert again.returncode == 0, again.stdout[-4000:]
    assert all(c["changed"] == 0 for c in recap(again.stdout).values()), recap(again.stdout)
