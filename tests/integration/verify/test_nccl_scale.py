"""NCCL at production shape against the lab (issue 37): one rank per GPU, the per-node NET loopback
and the scaling series name the node of a slow rail as the straggler; a cable swap changes the
scheduler's topology rendered from the observed cabling and is named. Matrix cases (make
test-integration): each adds several nccl-tests runs or a cabling verification to the suite."""

import json
import os

import pytest

from conftest import REPO, lab_fault, run_playbook

FAST = [
    "-e",
    "verify_fabric_nccl_timeout=120",
    "-e",
    "verify_fabric_nccl_min_bytes=256M",
    "-e",
    "verify_fabric_nccl_max_bytes=256M",
    "-e",
    "verify_fabric_nccl_iterations=5",
]
OUT = os.path.join(REPO, "inventory", "lab-output")
REPORT = os.path.join(OUT, "reports", "latest", "report.json")
TOPOLOGY = os.path.join(OUT, "sched_topology")


def verify(*extra, expect_ok):
    before = os.stat(REPORT).st_mtime_ns if os.path.exists(REPORT) else None
    res = run_playbook("playbooks/verify.yml", *FAST, *extra, timeout=900)
    assert os.path.exists(REPORT) and os.stat(REPORT).st_mtime_ns != before, res.stdout[-4000:]
    with open(REPORT) as f:
        report = json.load(f)
    assert (res.returncode == 0) == expect_ok, json.dumps(report["findings"], indent=1)[:6000] + res.stdout[-3000:]
    return report


def of(report, code):
    return [f for f in report["findings"] if f["code"] == code]


@pytest.mark.matrix
def test_a_slow_rail_is_named_by_its_nodes_loopback_and_the_series_straggler(converged):
    checks = '{"verify_fabric_checks": ["nccl_loopback", "nccl", "nccl_scaling"]}'
    lab_fault("speed", "node3", "mlx5_1", "200")
    try:
        report = verify("-e", checks, expect_ok=False)
    finally:
        lab_fault("speed", "node3", "mlx5_1", "400")
    loop = report["checks"]["nccl_loopback"]
    assert [(f["node"], f["code"]) for f in report["findings"] if f["check"] == "nccl_loopback"] == [("node3", "NCCL_LOOPBACK_LOW")]
    by_node = {c["name"].split()[0]: c for c in loop["cases"]}
    assert by_node["node3"]["busbw"] < by_node["node3"]["threshold"] <= by_node["node1"]["busbw"]
    # one rank per GPU: 8 processes on each node, every rank through its own GPU's rail
    assert "8 ranks a node" in loop["detail"]
    series = report["checks"]["nccl_scaling"]
    assert series["straggler"] == "node3", series
    steps = {c["name"]: c for c in series["cases"]}
    assert steps["fleet:2"]["ok"] and not steps["fleet:4"]["ok"] and steps["fleet:4"]["efficiency"] < 0.6
    (straggler,) = of(report, "NCCL_STRAGGLER")
    assert straggler["node"] == "node3" and "fleet:4" in straggler["message"]
    assert "node3" in of(report, "NCCL_SCALING_LOW")[0]["evidence"]["added"]

    healthy = verify("-e", checks, expect_ok=True)
    assert healthy["checks"]["nccl_scaling"]["straggler"] is None
    assert not [f for f in healthy["findings"] if f["check"] in ("nccl_loopback", "nccl_scaling")]


def topology(*extra, expect_ok):
    res = run_playbook("playbooks/sched_topology.yml", *extra, timeout=900)
    assert (res.returncode == 0) == expect_ok, res.stdout[-5000:]
    return res


def read(path):
    with open(os.path.join(TOPOLOGY, path)) as f:
        return f.read()


@pytest.mark.matrix
def test_a_cable_swap_changes_the_rendered_topology_and_is_named(converged):
    topology(expect_ok=True)
    healthy = read("slurm/topology.conf")
    rules = [ln for ln in healthy.splitlines() if not ln.startswith("#")]
    assert rules == ["SwitchName=leaf1_leaf2 Nodes=node[1-4]", "SwitchName=spine1 Switches=leaf1_leaf2"]
    assert "kind: Topology" in read("kueue/topology.yaml")
    again = topology(expect_ok=True)
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1].split("localhost")[1].split("\n")[0]
    lab_fault("cable-swap", "leaf1", "swp1", "swp3")
    try:
        refused = topology(expect_ok=False)
        # the callback folds long messages: compare with the whitespace joined
        assert "CABLE_SWAPPED: leaf1 swp1 and swp3: cables swapped" in " ".join(refused.stdout.split())
        assert read("slurm/topology.conf") == healthy  # nothing written while refused
        topology("-e", "linerate_sched_topology_accept_observed=true", expect_ok=True)
        seen = read("slurm/topology.conf")
        assert seen != healthy and "# accepted as observed: CABLE_SWAPPED: leaf1 swp1 and swp3" in seen
        assert "node1: mlx5_0 -> leaf1 swp3" in seen and "node3: mlx5_0 -> leaf1 swp1" in seen
    finally:
        lab_fault("cable-swap-restore", "leaf1", "swp1", "swp3")
    topology(expect_ok=True)
    assert read("slurm/topology.conf") == healthy
