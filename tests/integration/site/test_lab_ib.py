"""The InfiniBand lab end to end: `labctl up --transport infiniband` builds
the nodes of inventory/lab-ib around an ibsim subnet in a container; site.yml
converges the host stack and the real OpenSM (master node1, standby node2),
and the verification report carries the subnet check beside the port,
ib_write_bw and nccl-tests checks. A second run changes nothing; a cable
removed from the subnet is named in the report by switch, port, node and
device.

The lab runs under its own id, slot and state directory, beside the RoCE lab
the other tests use, and is removed at the end.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, ansible_env, run_playbook

INVENTORY = "inventory/lab-ib"


def recap(output):
    tail = output.split("PLAY RECAP", 1)[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=\d+", tail, re.M)}


@pytest.fixture(scope="module")
def ib_lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("ib-lab")
    # A copy of the inventory: the lab writes its connection file beside
    # hosts.yml, and a `make lab-ib` lab may be using the repository's.
    inventory = str(base / "inventory")
    shutil.copytree(os.path.join(REPO, INVENTORY), inventory, symlinks=False, ignore=shutil.ignore_patterns("lab-connection.yml"))
    env = ansible_env(
        LINERATE_LAB_ID="itib",
        LINERATE_LAB_SLOT="3",
        LINERATE_LAB_STATE_DIR=str(base / "state"),
        # node1..node4 are also the RoCE lab's names: facts of their own
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(base / "facts"),
    )

    def labctl(*args, timeout=900):
        res = subprocess.run(
            [sys.executable, os.path.join(REPO, "lab", "labctl.py"), *args], cwd=REPO, env=env, text=True, capture_output=True, timeout=timeout
        )
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout + res.stderr

    labctl("down")
    try:
        # A failed `up` (or test) still removes what was made: no lab left behind.
        out = labctl("up", "--transport", "infiniband", "--inventory", inventory)
        assert "subnet simulator (ibsim) up" in out, out
        yield {"env": env, "labctl": labctl, "reports": str(base / "reports"), "inventory": inventory}
    finally:
        subprocess.run([sys.executable, os.path.join(REPO, "lab", "labctl.py"), "down"], cwd=REPO, env=env, capture_output=True, timeout=300)


def playbook(lab, name, *args):
    return run_playbook(
        f"playbooks/{name}",
        "-e",
        f"verify_fabric_reports_dir={lab['reports']}",
        "-e",
        f"ib_subnet_manager_report={lab['reports']}/ib_fabric_check.json",
        *args,
        inventory=lab["inventory"],
        env=lab["env"],
    )


def report(lab):
    with open(os.path.join(lab["reports"], "latest", "report.json")) as f:
        return json.load(f)


def test_site_converges_and_the_report_has_the_subnet(ib_lab):
    res = playbook(ib_lab, "site.yml", "-e", "verify_fabric_when_requested=false")
    assert res.returncode == 0, res.stdout[-6000:]
    doc = report(ib_lab)
    checks = doc["checks"]
    assert doc["fabric"]["transport"] == "infiniband" and doc["summary"]["passed"], doc["findings"]
    for name in ("subnet_manager", "ib_topology", "ib_partitions", "ports", "ib_write_bw", "nccl:all_reduce_perf"):
        assert checks[name]["passed"], (name, checks[name])
    # node1's port is the MASTER, with the intent's priority; the cabling is the inventory's
    assert checks["subnet_manager"]["detail"].startswith("MASTER 0xa088c20300000101 ")
    assert "priority 15" in checks["subnet_manager"]["detail"]
    assert checks["ib_topology"]["detail"] == "3 switches, 4 CAs, 6 links as cabled"
    # NCCL ran over the IB transport, not sockets
    assert set(checks["nccl:all_reduce_perf"]["transports"].values()) == {"IB"}


def test_second_run_changes_nothing(ib_lab):
    res = playbook(ib_lab, "site.yml")
    assert res.returncode == 0, res.stdout[-6000:]
    counts = recap(res.stdout)
    assert {"node1", "node2", "node3", "node4"} <= set(counts)
    assert all(c == 0 for c in counts.values()), counts


@pytest.mark.matrix
def test_port_errors_on_an_inter_switch_link_and_a_host_link_name_both_ends(ib_lab):
    # the healthy lab: every port of the subnet read, nothing counted (test_site_converges' report: this test
    # runs before the cable pull, whose traffic into the pulled port leaves discards counted on it)
    doc = report(ib_lab)
    pe = doc["checks"].get("ib_port_errors")
    assert pe and pe["passed"] and pe["detail"].startswith("112 ports of 7 nodes read by ibqueryerrors"), pe
    # leaf1 port 7 is the uplink to spine1 port 1; leaf1 port 2 is node2 mlx5_0's cable
    ib_lab["labctl"]("fault", "ib-errors", "leaf1", "7", "SymbolErrorCounter=250,LinkDownedCounter=3")
    ib_lab["labctl"]("fault", "ib-errors", "leaf1", "2", "PortRcvErrors=7")
    try:
        res = playbook(ib_lab, "verify.yml")
        assert res.returncode != 0, "verification passed with port errors in the subnet"
        doc = report(ib_lab)
        found = sorted(
            (f["switch"], f["switch_port"], f["node"], f["device"], f.get("peer_switch"), f.get("peer_port"))
            for f in doc["findings"]
            if f["code"] == "IB_LINK_ERRORS"
        )
        assert found == [("leaf1", "2", "node2", "mlx5_0", None, None), ("leaf1", "7", None, None, "spine1", "1")], doc["findings"]
        isl = next(f for f in doc["findings"] if f["code"] == "IB_LINK_ERRORS" and f["switch_port"] == "7")
        assert isl["evidence"]["counters"]["leaf1 port 7"] == {"SymbolErrorCounter": 250, "LinkDownedCounter": 3}
        assert not doc["checks"]["ib_port_errors"]["passed"] and doc["checks"]["ib_topology"]["passed"]
    finally:
        ib_lab["labctl"]("fault", "ib-errors-clear", "leaf1", "7")
        ib_lab["labctl"]("fault", "ib-errors-clear", "leaf1", "2")


@pytest.mark.matrix
def test_a_cable_pulled_in_the_subnet_is_named_in_the_report(ib_lab):
    ib_lab["labctl"]("fault", "ib-unlink", "leaf1", "2")
    try:
        res = playbook(ib_lab, "verify.yml")
        assert res.returncode != 0, "verification passed with a cable missing"
        doc = report(ib_lab)
        missing = [f for f in doc["findings"] if f["code"] == "IB_LINK_MISSING"]
        assert [(f["switch"], f["switch_port"], f["node"], f["device"]) for f in missing] == [("leaf1", "2", "node2", "mlx5_0")], doc["findings"]
        assert not doc["checks"]["ib_topology"]["passed"] and doc["checks"]["subnet_manager"]["passed"]
    finally:
        ib_lab["labctl"]("fault", "ib-relink", "leaf1", "2")


@pytest.mark.matrix
def test_the_scheduler_topology_comes_from_what_ibnetdiscover_saw(ib_lab):
    """playbooks/sched_topology.yml on InfiniBand (issue 37): rendered from the subnet check's ibnetdiscover
    map, each leaf's nodes under the spine; a cable pulled in the subnet stops it, naming the missing link.
    Matrix: the RoCE lab's test_nccl_scale.py proves the render and its refusal from LLDP."""
    out = os.path.join(ib_lab["inventory"] + "-output", "sched_topology", "slurm", "topology.conf")
    res = playbook(ib_lab, "sched_topology.yml")
    assert res.returncode == 0, res.stdout[-5000:]
    with open(out) as f:
        healthy = f.read()
    assert healthy.startswith("# Rendered by linerate from the cabling check observed (ibnetdiscover)")
    assert [ln for ln in healthy.splitlines() if not ln.startswith("#")] == [
        "SwitchName=leaf1 Nodes=node[1-2]",
        "SwitchName=leaf2 Nodes=node[3-4]",
        "SwitchName=spine1 Switches=leaf1,leaf2",
    ]
    ib_lab["labctl"]("fault", "ib-unlink", "leaf1", "2")
    try:
        refused = playbook(ib_lab, "sched_topology.yml", "-e", "linerate_sched_topology_accept_observed=true")
        assert refused.returncode != 0
        assert "IB_LINK_MISSING: leaf1 port 2: link to node2 mlx5_0 is missing" in " ".join(refused.stdout.split())
        with open(out) as f:
            assert f.read() == healthy  # nothing written while refused
    finally:
        ib_lab["labctl"]("fault", "ib-relink", "leaf1", "2")
