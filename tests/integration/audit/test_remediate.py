"""Acting on the audit's findings against the lab (issue 27) and its real Slurm (issue 37): a flap injected on
one node -> audit.yml with draining drains exactly that node in Slurm (the lab's slurmctld, Debian's; the real
scontrol on the inventory's slurm_controllers host) with the code and device in the reason (sinfo -R); --check
shows the drain and changes nothing; a node drained by someone else is left alone; the metrics file on the node
holds the report's values; after the undo the re-check returns the node to service and the summary shows the
trend. Every node is returned to service at the start and the fault undone in a finally."""

import json
import os
import subprocess
import pytest

from conftest import REPO, ansible_env, lab_fault, on, run_playbook

NODE, DEVICE, FOREIGN = "node2", "mlx5_1", "node3"
REPORTS = os.path.join(REPO, "inventory", "lab-output", "reports")
CTL = "slurmctld"  # the lab's Slurm controller: its container and inventory host (lab/slurmlab.py)
PROM = "/var/lib/node_exporter/textfile_collector/linerate.prom"
ACT = ["-e", "linerate_drain=true", "-e", "linerate_metrics=true", "-e", '{"verify_fabric_checks": ["ports", "link_health"]}']


def scontrol(*argv):
    """The real scontrol, on the lab's controller."""
    return on(CTL, "scontrol", *argv)


def slurm(node):
    """{state, base, flags, reason, reason_by} of ``scontrol show node`` (the parser the role reads it with)."""
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.scheduler import parse_scontrol_node

    return parse_scontrol_node(scontrol("show", "node", node))


def reasons():
    """``sinfo -R``: node -> (reason, user, time) of every node out of service with a reason."""
    out = {}
    for line in on(CTL, "sinfo", "-R", "-N", "-h", "-o", "%N|%E|%u|%H").splitlines():
        name, reason, user, when = line.split("|")
        out[name] = (reason, user, when)
    return out


def in_service(nodes):
    """Every node back in service (Slurm refuses RESUME on a node that is not drained or down)."""
    for n in nodes:
        node = slurm(n)
        if "DRAIN" in node["flags"] or node["base"] in ("DOWN", "FAIL"):
            scontrol("update", f"NodeName={n}", "State=RESUME")
    assert not reasons(), reasons()


def node_drain(nodes, check=False):
    """The node_drain module on the controller host, as the remediate role runs it; the module's result."""
    args = {"scheduler": "slurm", "nodes": nodes, "return_to_service": True}
    argv = [os.path.join(REPO, ".venv", "bin", "ansible"), CTL, "-i", "inventory/lab", "-m", "linerate.fabric.node_drain", "-a", json.dumps(args)] + (
        ["--check"] if check else []
    )
    res = subprocess.run(
        argv, cwd=REPO, env=ansible_env(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json"), text=True, capture_output=True, timeout=120
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return json.loads(res.stdout)["plays"][0]["tasks"][0]["hosts"][CTL]


def test_drain_and_resume_in_the_real_slurm(lab):
    """The real slurmctld: a node with a flap drains with linerate's code as the reason (sinfo -R), by the
    controller's user; again with the same finding changes nothing; a node drained by someone else is left
    alone; the node re-checked and passing is resumed and leaves sinfo -R. Under a minute (no playbook)."""
    nodes = sorted(lab["nodes"])
    in_service(nodes)
    flap = {"code": "LINK_FLAP", "severity": "error", "node": NODE, "device": DEVICE}
    scontrol("update", f"NodeName={FOREIGN}", "State=DRAIN", "Reason=disk replacement")
    try:
        preview = node_drain([{"name": NODE, "findings": [flap], "verified": True}], check=True)
        assert preview["changed"] and NODE not in reasons()  # check mode: nothing reaches Slurm
        res = node_drain([{"name": NODE, "findings": [flap], "verified": True}, {"name": FOREIGN, "findings": [], "verified": True}])
        assert res["changed"] and res["drained"] == [NODE] and res["left_alone"] == [FOREIGN]
        assert res["commands"] == [["scontrol", "update", f"NodeName={NODE}", "State=DRAIN", f"Reason=linerate: LINK_FLAP {DEVICE}"]]
        got = reasons()
        assert set(got) == {NODE, FOREIGN} and got[NODE][:2] == (f"linerate: LINK_FLAP {DEVICE}", "root")
        assert slurm(NODE)["flags"] == ["DRAIN"] and got[FOREIGN][0] == "disk replacement"
        assert not node_drain([{"name": NODE, "findings": [flap], "verified": True}])["changed"]
        assert reasons() == got
        # the node passes again: linerate's drain is lifted, the other one stays
        res = node_drain([{"name": NODE, "findings": [], "verified": True}, {"name": FOREIGN, "findings": [], "verified": True}])
        assert res["returned"] == [NODE] and res["left_alone"] == [FOREIGN]
        # resumed: IDLE again (slurmctld flags it NOT_RESPONDING until its next ping of the node's slurmd)
        back = slurm(NODE)
        assert set(reasons()) == {FOREIGN} and back["base"] == "IDLE" and "DRAIN" not in back["flags"]
        assert back["reason"] is None
    finally:
        in_service(nodes)


def audit(*extra, expect_ok):
    res = run_playbook("playbooks/audit.yml", *ACT, *extra, timeout=900)
    assert (res.returncode == 0) == expect_ok, res.stdout[-6000:]
    with open(os.path.join(REPORTS, "latest", "report.json")) as f:
        return res, json.load(f)


@pytest.mark.matrix
def test_flap_drains_that_node_only_and_it_returns_after_the_fix(converged):
    nodes = sorted(converged["nodes"])
    in_service(nodes)
    fresh_breaker()  # the drain budget's window from nothing: earlier tests' drains would count
    scontrol("update", f"NodeName={FOREIGN}", "State=DRAIN", "Reason=disk replacement")
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
        # an audit of the counters alone lasts seconds: a window longer than the lab's flap period (8 s,
        # linerate_lab/linkphys.py) sees the link go down at least once
        res, report = audit("-e", "verify_fabric_link_health_min_window_s=12", expect_ok=False)
        flaps = [f for f in report["findings"] if f["code"] == "LINK_FLAP"]
        assert {(f["node"], f["device"]) for f in flaps} == {(NODE, DEVICE)}, report["findings"]
        drained = {n for n in nodes if "DRAIN" in slurm(n)["flags"]}
        assert drained == {NODE, FOREIGN}
        assert slurm(NODE)["reason"].startswith(f"linerate: LINK_FLAP {DEVICE}")
        assert slurm(FOREIGN)["reason"] == "disk replacement"
        # sinfo -R, as an operator reads it: linerate's code as the reason, by the controller's user
        assert reasons()[NODE][0].startswith(f"linerate: LINK_FLAP {DEVICE}") and reasons()[NODE][1] == "root"
        # the node's textfile holds the report's values
        prom = on(NODE, "cat", PROM)
        port = next(p for p in report["checks"]["link_health"]["ports"] if p["node"] == NODE and p["device"] == DEVICE)
        assert (f'linerate_link_flaps_window{{fabric="lab",node="{NODE}",device="{DEVICE}",mode="audit"}} {port["flaps"]}') in prom
        assert f'linerate_findings{{fabric="lab",node="{NODE}",code="LINK_FLAP",severity="error",mode="audit"}} {len(flaps)}' in prom
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
    before = reasons()
    audit(expect_ok=True)
    assert reasons() == before
    scontrol("update", f"NodeName={FOREIGN}", "State=RESUME")


# ---------------------------------------------------------------- issue 35: attribution, the budget, the breaker

STATE = os.path.join(REPO, "inventory", "lab-output", "remediation", "state.json")
FLEET_PROM = os.path.join(REPO, "inventory", "lab-output", "metrics", "linerate-fleet.prom")


def fresh_breaker():
    """The lab's drain state from nothing (the window's drains of earlier tests would count)."""
    if os.path.exists(STATE):
        os.unlink(STATE)


def drained(nodes):
    return {n for n in nodes if "DRAIN" in slurm(n)["flags"]}


@pytest.mark.matrix
def test_a_leaf_that_reboots_drains_no_node_and_is_named_once(converged):
    """switch-reboot leaf1: every node's mlx5_0 (cabled to leaf1) flaps; the audit with draining on names one
    LEAF_SUSPECT leaf1 explaining the 4 nodes, drains none of them, and the metrics say which element."""
    nodes = sorted(converged["nodes"])
    in_service(nodes)
    fresh_breaker()
    lab_fault("switch-reboot", "leaf1")
    try:
        res, report = audit(expect_ok=False)
    finally:
        lab_fault("switch-reboot-stop", "leaf1")
    suspects = [f for f in report["findings"] if f.get("check") == "attribution"]
    assert [(f["code"], f["element"], f["explains"]) for f in suspects] == [("LEAF_SUSPECT", "leaf1", nodes)], report["findings"]
    flaps = [f for f in report["findings"] if f["code"] == "LINK_FLAP" and f.get("node")]
    assert {f["node"] for f in flaps} == set(nodes) and {f["device"] for f in flaps} == {"mlx5_0"}
    assert all(f["explained_by"] == "leaf1" for f in report["findings"] if f.get("node") and f["severity"] == "error")
    assert drained(nodes) == set(), res.stdout[-4000:]
    rem = report["remediation"]
    assert rem["enabled"] and rem["drain"] == [] and not rem["breaker"]["tripped"]
    assert set(rem["held"]) == set(nodes) and all("explained by leaf1" in w for w in rem["held"].values())
    with open(os.path.join(REPORTS, "latest", "summary.md")) as f:
        assert "**LEAF_SUSPECT leaf1** explains 4 node(s)" in f.read()
    prom = on(NODE, "cat", PROM)
    assert ('linerate_suspect_element_nodes{fabric="lab",code="LEAF_SUSPECT",kind="leaf",element="leaf1",mode="audit"} 4') in prom
    assert f'linerate_node_explained{{fabric="lab",node="{NODE}",element="leaf1",mode="audit"}} 1' in prom


def test_nodes_unreachable_from_the_controller_trip_the_breaker_until_it_is_reset(converged, tmp_path):
    """node3 and node4 unreachable from the controller (their address, for this run only, a closed loopback
    port: the nodes themselves are fine) while node2's rail is down: the report names CONTROLLER_PATH and
    DRAIN_BREAKER_TRIPPED, nothing is drained (node2's own fault is held), the state keeps the breaker open
    and the metrics say so - then the documented reset closes it, and a second reset changes nothing."""
    import socket

    nodes = sorted(converged["nodes"])
    in_service(nodes)
    fresh_breaker()
    with socket.socket() as s:  # a loopback port nothing listens on (bound, then closed)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    override = tmp_path / "unreachable.yml"
    override.write_text("all:\n  hosts:\n" + "".join(f"    {n}:\n      ansible_host: 127.0.0.1\n      ansible_port: {port}\n" for n in ("node3", "node4")))
    # node2's own fault: a state (the cable pulled), not a rate a short window might not see
    lab_fault("port-down", NODE, DEVICE)
    try:
        res, report = audit("-i", str(override), expect_ok=False)
    finally:
        lab_fault("port-up", NODE, DEVICE)
    codes = {(f["code"], f.get("node")) for f in report["findings"]}
    assert {
        ("NODE_NOT_VERIFIED", "node3"),
        ("NODE_NOT_VERIFIED", "node4"),
        ("PORT_DOWN", NODE),
        ("CONTROLLER_PATH", None),
        ("DRAIN_BREAKER_TRIPPED", None),
    } <= codes, codes
    (path,) = [f for f in report["findings"] if f["code"] == "CONTROLLER_PATH"]
    assert path["explains"] == ["node3", "node4"] and path["element"] == "controller"
    rem = report["remediation"]
    assert rem["breaker"]["tripped"] and rem["tripped_now"] and rem["drain"] == []
    assert rem["unseen"] == ["node3", "node4"] and "per-run budget of 1" in rem["breaker"]["reason"]
    assert NODE in rem["held"] and drained(nodes) == set(), res.stdout[-4000:]
    assert "drain breaker: TRIPPED since" in res.stdout
    with open(STATE) as f:
        state = json.load(f)
    assert state["breaker"]["tripped"] and state["drained"] == {}
    assert oct(os.stat(STATE).st_mode & 0o777) == "0o600"
    # the metrics: the breaker on a node's own file, every node's state in the controller's fleet file
    assert 'linerate_drain_breaker_tripped{fabric="lab",mode="audit"} 1' in on("node1", "cat", PROM)
    with open(FLEET_PROM) as f:
        fleet = f.read()
    for n in ("node3", "node4"):
        assert f'linerate_node_verified{{fabric="lab",node="{n}",mode="audit"}} 0' in fleet
        assert f'linerate_node_passed{{fabric="lab",node="{n}",mode="audit"}} 0' in fleet
    assert 'linerate_drain_breaker_tripped{fabric="lab",mode="audit"} 1' in fleet
    # the reset: the documented command; it closes the breaker once
    res = run_playbook("playbooks/drain_breaker_reset.yml", "-e", "drain_breaker_reset_by=ci", timeout=300, check=True)
    assert "drain breaker closed; it had tripped at" in res.stdout and "changed=1" in res.stdout
    with open(STATE) as f:
        state = json.load(f)
    assert state["breaker"] == {"tripped": False, "reset_at": state["breaker"]["reset_at"], "reset_by": "ci"}
    assert state["events"][-1]["action"] == "reset"
    res = run_playbook("playbooks/drain_breaker_reset.yml", timeout=300, check=True)
    assert "was not tripped: nothing to reset" in res.stdout and "changed=0" in res.stdout
