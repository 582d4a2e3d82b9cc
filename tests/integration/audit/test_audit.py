"""playbooks/audit.yml on the lab: a converged lab audits clean (changed=0, no
drift, PASSED); drift injected on every layer plus faults is all named, and
the audit changes nothing on the nodes or the switches. The lab is put back
(re-converged) at the end.
"""

import hashlib
import json
import os
import re

import pytest

from conftest import REPO, lab_fault, on, recap, run_playbook, switch_fault

REPORT = os.path.join(REPO, "inventory", "lab-output", "reports", "latest", "report.json")
NODE = "node2"
NETDEV = "enp65s0f0np0"  # mlx5_0
PCI = "0000:41:00.0"  # mlx5_0
MODE = "audit: read-only, nothing was changed"


def switch_configs():
    d = os.path.join(REPO, "lab", "state", "switchsim")
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".json") and f != "credentials.json":
            with open(os.path.join(d, f), "rb") as fh:
                out[f] = hashlib.sha256(fh.read()).hexdigest()
    return out


def node_state(node):
    """What the audit must leave byte-identical on a node."""
    return {
        "qos": on(node, "mlnx_qos", "-i", NETDEV),
        "nccl.conf": on(node, "cat", "/etc/nccl.conf"),
        "firmware": on(node, "mlxconfig", "-d", PCI, "-e", "q"),
        "addresses": on(node, "ip", "-o", "addr", "show"),
        "authorized_keys": on(node, "sh", "-c", "cat /root/.ssh/authorized_keys* 2>/dev/null || true"),
        "packages": on(node, "dpkg-query", "-W", "-f=${Package} ${Version}\n"),
    }


def audit(*extra, expect_ok):
    res = run_playbook("playbooks/audit.yml", *extra, timeout=900)
    assert (res.returncode == 0) == expect_ok, res.stdout[-6000:]
    with open(REPORT) as f:
        return res, json.load(f)


def drift_of(report):
    return [f for f in report["findings"] if f["check"] == "drift"]


def find(report, code, **match):
    hits = [f for f in report["findings"] if f["code"] == code and all(f.get(k) == v for k, v in match.items())]
    assert hits, f"no {code} {match} in {sorted((f['code'], f.get('node') or f.get('switch'), f.get('key')) for f in report['findings'])}"
    return hits


def test_converged_lab_audits_clean(converged):
    res, report = audit(expect_ok=True)
    counts = recap(res.stdout)
    assert counts and all(c["failed"] == 0 for c in counts.values()), counts
    # Nothing changed on any node or switch. The one change an audit may make is the controller's own
    # record (the launchers under the output directory, written when their text differs from what this
    # controller last wrote: on a controller that never verified this fabric). Ansible counts a run_once
    # task delegated to the controller against the play's first host, so such a change reads as
    # "node1 changed=N" in the recap; every changed line must name the controller as where it happened.
    changed = re.findall(r"^changed: \[([^\]]+)\]", res.stdout, re.M)
    assert all(c.endswith(" -> localhost") for c in changed), [c for c in changed if not c.endswith(" -> localhost")]
    assert {h for h, c in counts.items() if c["changed"]} <= {c.split(" ")[0] for c in changed}, (counts, changed)
    assert report["mode"] == MODE
    assert report["summary"]["passed"] is True, report["findings"]
    assert drift_of(report) == []
    checks = report["checks"]
    assert checks["drift"]["passed"] and {c["name"] for c in checks["drift"]["cases"]} >= {f"{n} drift" for n in converged["nodes"]} | {
        f"{s} drift" for s in converged["switches"]
    }
    assert checks["ports"]["passed"] and checks["nccl_conf"]["passed"]
    # no benchmark without audit_benchmarks
    assert not {"ib_write_bw", "incast", "nccl:all_reduce_perf"} & set(checks)
    latest = os.path.dirname(REPORT)
    with open(os.path.join(latest, "summary.md")) as f:
        md = f.read()
    assert md.startswith("# Fabric audit: PASSED") and MODE in md
    with open(os.path.join(latest, "junit.xml")) as f:
        assert MODE in f.read()


def test_site_preview_of_a_converged_lab_changes_nothing(converged):
    res = run_playbook("playbooks/site.yml", "--check", "--diff", timeout=1500)
    assert res.returncode == 0, res.stdout[-5000:]
    counts = recap(res.stdout)
    assert all(c["changed"] == 0 for c in counts.values()), counts


def test_drift_and_faults_are_all_named_and_nothing_changes(converged):
    on(NODE, "mlnx_qos", "-i", NETDEV, "--trust", "pcp", "--pfc", "0,0,0,0,0,0,0,0")
    on(NODE, "sed", "-i", "s/^NCCL_IB_TC=.*/NCCL_IB_TC=0/", "/etc/nccl.conf")
    on(NODE, "mlxconfig", "-d", PCI, "-y", "set", "CNP_DSCP_P1=10")
    switch_fault("leaf1", "pfc_off", "swp3")
    lab_fault("speed", "node3", "mlx5_1", "200")
    try:
        nodes_before = {n: node_state(n) for n in converged["nodes"]}
        switches_before = switch_configs()
        res, report = audit(expect_ok=False)
        # the audit changed nothing, anywhere
        assert {n: node_state(n) for n in converged["nodes"]} == nodes_before
        assert switch_configs() == switches_before
    finally:
        lab_fault("speed", "node3", "mlx5_1", "400")
    assert report["mode"] == MODE and report["summary"]["passed"] is False
    assert "nothing was changed" in res.stdout or MODE in json.dumps(report)
    trust = find(report, "DRIFT_ROCE_QOS", node=NODE, device="mlx5_0", key="trust")[0]
    assert (trust["current"], trust["intended"]) == ("pcp", "dscp")
    find(report, "DRIFT_ROCE_QOS", node=NODE, device="mlx5_0", key="pfc")
    tc = find(report, "DRIFT_NCCL_CONF", node=NODE, key="NCCL_IB_TC")[0]
    assert (tc["current"], tc["intended"]) == ("0", "104")
    fw = find(report, "DRIFT_FIRMWARE", node=NODE, device="mlx5_0", key="CNP_DSCP_P1")[0]
    assert (fw["current"], fw["intended"], fw["pci"]) == ("10", "48", PCI)
    sw = find(report, "DRIFT_SWITCH", switch="leaf1")[0]
    assert any("swp3" in c for c in sw["commands"]), sw["commands"]
    find(report, "PORT_SPEED", node="node3", device="mlx5_1")
    # only what was broken drifted
    assert {f.get("node") or f.get("switch") for f in drift_of(report) if f["severity"] == "error"} <= {NODE, "node3", "leaf1"}
    assert not [f for f in drift_of(report) if f.get("node") == "node1"]
    # put the lab back: one converge of what drifted repairs it, and the audit is clean again
    run_playbook("playbooks/site.yml", "--skip-tags", "verify", "--limit", f"localhost,{NODE},leaf1", check=True, timeout=1500)
    _, again = audit(expect_ok=True)
    assert drift_of(again) == [] and again["summary"]["passed"]


@pytest.mark.matrix
def test_a_host_whose_role_fails_stays_in_the_audit(converged):
    # A pulled cable stops a host role in check mode (a port that is down):
    # the audit records the layer and still runs node3's read-only checks.
    lab_fault("port-down", "node3", "mlx5_1")
    try:
        before = node_state("node3")
        res, report = audit(expect_ok=False)
        assert node_state("node3") == before
    finally:
        lab_fault("port-up", "node3", "mlx5_1")
    assert recap(res.stdout)["node3"]["failed"] == 0, res.stdout[-4000:]
    find(report, "PORT_DOWN", node="node3", device="mlx5_1")
    ports = {c["name"] for c in report["checks"]["ports"]["cases"]}
    assert any("node3" in name for name in ports), ports
    for f in report["findings"]:
        if f["code"] == "AUDIT_LAYER_FAILED":
            assert f["node"] == "node3" and "could not be audited" in f["message"]
