"""The verification play against the lab, as the tests of tests/integration/verify/ run it: verify() runs
playbooks/verify.yml and reads the report it wrote, find() asserts a finding, and the ``healthy`` fixture is
one verification of the healthy lab that the files share (test_verify, test_link_health, test_lossless)."""

import json
import os

import pytest

from conftest import REPO, run_playbook

# Short tests: the simulated links need no warm-up; every wait is bounded.
FAST = ["-e", "verify_fabric_ib_write_bw_duration=2", "-e", "verify_fabric_ib_write_bw_connect_timeout=6", "-e", "verify_fabric_nccl_timeout=120"]
LATEST = os.path.join(REPO, "inventory", "lab-output", "reports", "latest")
REPORT = os.path.join(LATEST, "report.json")
_HEALTHY = {}


def verify(*extra, expect_ok):
    before = os.stat(REPORT).st_mtime_ns if os.path.exists(REPORT) else None
    res = run_playbook("playbooks/verify.yml", *FAST, *extra, timeout=600)
    report = None
    if os.path.exists(REPORT) and os.stat(REPORT).st_mtime_ns != before:
        with open(REPORT) as f:
            report = json.load(f)
    # on a surprise, the findings first (the stdout tail is the end of the summary, not its findings)
    findings = json.dumps(report["findings"], indent=1)[:6000] if report else "(no new report)"
    assert (res.returncode == 0) == expect_ok, f"findings: {findings}\n\n{res.stdout[-4000:]}"
    assert report is not None, res.stdout[-4000:]
    return report


def codes(report):
    return {(f["code"], f.get("node"), f.get("device")) for f in report["findings"]}


def find(report, code, node=None, device=None):
    hits = [f for f in report["findings"] if f["code"] == code and (node is None or f.get("node") == node) and (device is None or f.get("device") == device)]
    assert hits, f"no {code} {node} {device} in {sorted(codes(report), key=str)}"
    return hits


def port_of(lab, node, device):
    nic = next(n for n in lab["nodes"][node]["nics"] if n["device"] == device)
    return nic["switch"], str(nic["switch_port"])


@pytest.fixture
def healthy(converged):
    """One full verification of the healthy lab, shared by the tests that read it (test_link_health
    too): (report, its directory). The run costs minutes and the lab is the same converged lab."""
    if not _HEALTHY:
        report = verify(expect_ok=True)
        _HEALTHY.update(report=report, dir=os.path.realpath(LATEST))
    return _HEALTHY["report"], _HEALTHY["dir"]
