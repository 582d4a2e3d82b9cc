"""Acting on the audit's findings against the lab (issue 27): a flap injected on one node -> audit.yml with
draining drains exactly that node in Slurm (lab/schedsim's scontrol) with the code and device in the reason;
--check shows the drain and changes nothing; a node drained by someone else is left alone; the metrics file on
the node holds the report's values; after the undo the re-check returns the node to service and the summary
shows the trend. The stand-ins' state is reset at the start and the fault undone in a finally."""
import json
import os
import subprocess
import sys
import pytest

from conftest import REPO, ansible_env, lab_fault, run_playbook
from test_audit import on

NODE, DEVICE, FOREIGN = "node2", "mlx5_1", "node3"
REPORTS = os.path.join(REPO, "inventory", "lab-output", "reports")
SCHEDSIM = os.path.join(REPO, "lab", "schedsim")
PROM = "/var/lib/node_exporter/textfile_collector/linerate.prom"
ACT = ["-e", "linerate_drain=true", "-e", "linerate_metrics=true",
       "-e", '{"verify_fabric_checks": ["ports", "link_health"]}']


def sched(tool, *argv):
    res = subprocess.run([os.path.join(SCHEDSIM, tool), *argv], env=ansible_env(), text=True,
                         capture_output=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def slurm(node):
    """{State, Reason} of ``scontrol show node`` (the stand-in's state, as the role reads it)."""
    sys.path.insert(0, os.path.join(REPO, ".collections"))
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.scheduler import parse_scontrol_node
    return parse_scontrol_node(sched("scontrol", "show", "node", node))


def audit(*extra, expect_ok):
    res = run_playbook("playbooks/audit.yml", *ACT, *extra, timeout=900)
    assert (res.returncode == 0) == expect_ok, res.stdout[-6000:]
    with open(os.path.join(REPORTS, "latest", "report.json")) as f:
        return res, json.load(f)


@pytest.mark.matrix
def test_flap_drains_that_node_only_and_it_returns_after_the_fix(converged):
    nodes = sorted(converged["nodes"])
    sched("schedsim.py", "init", "--nodes", ",".join(nodes))
    sched("scontrol", "update", f"NodeName={FOREIGN}", "State=DRAIN", "Reason=disk replacement")
    # --check: the read-only checks do not run under --check, the drift does: a drift on the node is
    # previewed as its drain, and nothing changes in the scheduler
    lab_fault("tc-mismatch", NODE)
    try:
        res = run_playbook("playbooks/audit.yml", *ACT, "--check", "--diff", timeout=900)
        # the drain's diff: the node's state in the scheduler now, and what the run would make it
        assert f"-{NODE}: IDLE\n+{NODE}: drained: linerate: DRIFT_NCCL_CONF" in res.stdout, res.stdout[-6000:]
        assert f"+{FOREIGN}" not in res.stdout
        assert slurm(NODE)["state"] == "IDLE" and slurm(FOREIGN)["reason"] == "disk replacement"
    finally:
        lab_fault("tc-restore", NODE)

    lab_fault("flap", NODE, DEVICE)
    try:

        res, report = audit(expect_ok=False)
        flaps = [f for f in report["findings"] if f["code"] == "LINK_FLAP"]
        assert {(f["node"], f["device"]) for f in flaps} == {(NODE, DEVICE)}, report["findings"]
        drained = {n for n in nodes if "DRAIN" in slurm(n)["flags"]}
        assert drained == {NODE, FOREIGN}
        assert slurm(NODE)["reason"].startswith(f"linerate: LINK_FLAP {DEVICE}")
        assert slurm(FOREIGN)["reason"] == "disk replacement"
        # the node's textfile holds the report's values
        prom = on(NODE, "cat", PROM)
        port = next(p for p in report["checks"]["link_health"]["ports"] if p["node"] == NODE and p["device"] == DEVICE)
        assert (f'linerate_link_flaps_window{{fabric="lab",node="{NODE}",device="{DEVICE}",mode="audit"}} '
                f'{port["flaps"]}') in prom
        assert f'linerate_findings{{fabric="lab",node="{NODE}",code="LINK_FLAP",severity="error",mode="audit"}} ' \
               f'{len(flaps)}' in prom
        assert f'linerate_node_passed{{fabric="lab",node="{NODE}",mode="audit"}} 0' in prom
        assert on(NODE, "stat", "-c", "%a", PROM).strip() == "644"
    finally:
        lab_fault("flap-stop", NODE, DEVICE)

    # the re-check passes: linerate's drain is lifted, the foreign one is not
    res, report = audit(expect_ok=True)
    assert "DRAIN" not in slurm(NODE)["flags"] and slurm(NODE)["reason"] is None
    assert slurm(FOREIGN)["reason"] == "disk replacement" and "DRAIN" in slurm(FOREIGN)["flags"]
    assert {n for n in nodes if "DRAIN" in slurm(n)["flags"]} == {FOREIGN}
    assert [x["code"] for x in report["trends"]["findings_gone"] if x["node"] == NODE] == ["LINK_FLAP"]
    with open(os.path.join(REPORTS, "latest", "summary.md")) as f:
        md = f.read()
    assert "## Trend since the previous run" in md and f"- finding gone: LINK_FLAP (error) {NODE} {DEVICE}" in md
    assert f'linerate_node_passed{{fabric="lab",node="{NODE}",mode="audit"}} 1' in on(NODE, "cat", PROM)
    # a second run changes nothing in the scheduler
    before = sched("schedsim.py", "state")
    audit(expect_ok=True)
    assert sched("schedsim.py", "state") == before
    sched("scontrol", "update", f"NodeName={FOREIGN}", "State=RESUME")
