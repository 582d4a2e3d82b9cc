"""playbooks/k8s.yml end to end (role k8s_render): written under linerate_output_dir, a second run changes
nothing, a file an earlier choice wrote is removed, and the launchers' layout binds the MPIJob's ranks.

No lab: the play runs on the controller against inventory/example-ib. It runs ansible-playbook four times
(about three minutes), so it is a `matrix` case (make test-integration); the rendering itself is unit-tested
in tests/unit/test_k8s_render*.py."""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import REPO

IMAGE = "registry.example.org/nccl-tests:2.13.11"


def _play(tmp_path, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    argv = [
        os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
        "-i",
        os.path.join(REPO, "inventory", "example-ib"),
        os.path.join(REPO, "playbooks", "k8s.yml"),
        "-e",
        f"linerate_output_dir={tmp_path / 'out'}",
        "-e",
        f"k8s_render_image={IMAGE}",
        *extra,
    ]
    run = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", run.stdout).group(1)


def _kinds(path):
    return [o["kind"] for o in yaml.safe_load_all(path.read_text()) if o]


@pytest.mark.matrix
def test_playbook_renders_idempotently_and_drops_what_it_no_longer_renders(tmp_path):
    out = tmp_path / "out" / "k8s"
    # the launchers' layout verification writes (verify_fabric_launchers): GPU i on rail i, NUMA 0 then 1
    launchers = tmp_path / "out" / "launchers"
    launchers.mkdir(parents=True)
    layout = [{"local_rank": i, "gpu": i, "gpu_pci": None, "numa": i // 4, "cpus": None, "nic": f"mlx5_{i}", "link": "PIX"} for i in range(8)]
    (launchers / "layout.json").write_text(json.dumps({"ranks_per_node": 8, "layout": layout}))
    assert _play(tmp_path) != "0"
    assert _kinds(out / "jobs" / "trainjob.yaml") == ["ConfigMap", "ClusterTrainingRuntime", "TrainJob"]
    assert _kinds(out / "network-operator" / "nv-ipam-pools.yaml") == ["IPPool"] * 8
    assert _kinds(out / "gpu-operator" / "clusterpolicy.yaml") == ["ClusterPolicy"]
    assert (out / "scheduling" / "kueue-manager-config.yaml").is_file()
    assert not (out / "jobs" / "pytorchjob.yaml").exists()
    mpi = next(yaml.safe_load_all((out / "jobs" / "mpijob.yaml").read_text()))
    argv = mpi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert argv[4:8] == ["--map-by", "ppr:4:numa", "--bind-to", "numa"] and "linerate-bind" in argv
    assert _play(tmp_path) == "0"
    _play(tmp_path, "-e", "k8s_render_gang_scheduler=volcano", "-e", "k8s_render_training_api=both")
    assert not (out / "scheduling" / "kueue.yaml").exists()
    assert not (out / "scheduling" / "kueue-manager-config.yaml").exists()
    assert (out / "scheduling" / "volcano-podgroups.yaml").is_file()
    assert _kinds(out / "jobs" / "pytorchjob.yaml") == ["ConfigMap", "PyTorchJob"]
    assert _play(tmp_path, "-e", "k8s_render_gang_scheduler=volcano", "-e", "k8s_render_training_api=both") == "0"
