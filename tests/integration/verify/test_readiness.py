"""Host readiness against the lab: the healthy lab is ready (rails PIX, versions agree, idle
GPUs at Gen1 are no finding: they train up under load); each fault below the fabric is caught
with its code, node, device and PCI address, then put back."""

import json
import os

import pytest

from conftest import lab_fault, run_playbook
from verify_lab import REPORT

ONLY = ["-e", '{"verify_fabric_checks": ["readiness"]}']


def verify(expect_ok):
    res = run_playbook("playbooks/verify.yml", *ONLY, timeout=600)
    assert (res.returncode == 0) == expect_ok, res.stdout[-5000:]
    with open(REPORT) as f:
        return json.load(f)


def readiness(report):
    return [f for f in report["findings"] if f.get("check") == "readiness"]


def nic(lab, node, device):
    return next(n for n in lab["nodes"][node]["nics"] if n["device"] == device)


def test_healthy_lab_is_ready(converged):
    report = verify(expect_ok=True)
    assert readiness(report) == []
    check = report["checks"]["readiness"]
    assert check["passed"] and len(check["cases"]) == len(converged["nodes"])
    for node, rails in check["rails"].items():
        assert [(r["device"], r["gpu"], r["link"]) for r in rails] == [("mlx5_0", 0, "PIX"), ("mlx5_1", 4, "PIX")], node
        assert rails[0]["pci"] == nic(converged, node, "mlx5_0")["pci"]
    # the lab's GPUs rest at Gen1 like real ones: no finding; read again under load they train up to Gen5
    for node, gpus in check["gpu_links"].items():
        assert len(gpus) == 8, node
        assert {(g["at_rest"]["gen"], g["at_rest"]["width"]) for g in gpus} == {(1, 16)}, node
        assert {(g["speed_judged"], g["judged"]["gen"], g["judged"]["width"]) for g in gpus} == {(True, 5, 16)}, node
        assert all(g["state"].startswith("under load (all_reduce_perf") for g in gpus), gpus
    versions = check["versions"]
    assert len({json.dumps(v, sort_keys=True) for v in versions.values()}) == 1
    assert set(next(iter(versions.values()))) == {"kernel", "ofed", "gpu_driver", "nvidia_peermem", "nccl"}
    with open(os.path.join(os.path.dirname(REPORT), "summary.md")) as f:
        assert "### Rails (NIC -> nearest GPU, nvidia-smi topo -m)" in f.read()


def test_faults_below_the_fabric_are_caught(converged):
    pci = nic(converged, "node2", "mlx5_1")["pci"]
    lab_fault("pcie-degrade", "node2", "mlx5_1", "x8")
    lab_fault("acs-on", "node3")
    lab_fault("version-skew", "node1")
    try:
        report = verify(expect_ok=False)
    finally:
        lab_fault("pcie-restore", "node2", "mlx5_1")
        lab_fault("acs-off", "node3")
        lab_fault("version-restore", "node1")
    got = {(f["code"], f["node"], f["device"]) for f in readiness(report)}
    assert got == {
        ("PCIE_DEGRADED", "node2", "mlx5_1"),
        ("ACS_ENABLED", "node3", "mlx5_0"),
        ("ACS_ENABLED", "node3", "mlx5_1"),
        ("VERSION_SKEW", "node1", "mlx5_0"),
        ("VERSION_SKEW", "node1", "mlx5_1"),
    }, got
    degraded = next(f for f in readiness(report) if f["code"] == "PCIE_DEGRADED")
    assert degraded["pci_address"] == pci and "x8" in degraded["message"] and degraded["layer"] == "pcie"
    acs = [f for f in readiness(report) if f["code"] == "ACS_ENABLED"]
    assert all(f["pci_address"] == nic(converged, "node3", f["device"])["pci"] and f["bridge"] for f in acs)
    assert len(acs) == 2  # one per rail: the first bridge on the path that redirects is named
    skew = [f for f in readiness(report) if f["code"] == "VERSION_SKEW"]
    assert {(f["component"], f["value"]) for f in skew} == {("connectx_firmware", "28.38.1002")}
    assert {f["pci_address"] for f in skew} == {nic(converged, "node1", d)["pci"] for d in ("mlx5_0", "mlx5_1")}
    assert report["checks"]["readiness"]["passed"] is False
    # put back: ready again
    assert readiness(verify(expect_ok=True)) == []


# matrix: a PCIe severity case of the class test_faults_below_the_fabric_are_caught keeps in CI (the
# rule itself: tests/unit/host/test_readiness_findings.py and test_readiness.py)
@pytest.mark.matrix
def test_a_gen5_nic_in_a_gen4_slot_is_a_warning_and_a_link_below_both_the_error(converged):
    """A slot-limited link (negotiated = the slot's capability < the NIC's) warns, naming the slot, and the
    verification passes; a link trained below both ends is PCIE_DEGRADED and fails it."""
    pci = nic(converged, "node2", "mlx5_1")["pci"]
    lab_fault("pcie-slot", "node2", "mlx5_1", "gen4")
    try:
        report = verify(expect_ok=True)
        got = [(f["code"], f["node"], f["device"], f["severity"]) for f in readiness(report)]
        assert got == [("PCIE_SLOT_LIMITED", "node2", "mlx5_1", "warning")], got
        limited = readiness(report)[0]
        assert limited["pci_address"] == pci and limited["slot"] and limited["slot"] in limited["message"]
        lab_fault("pcie-degrade", "node2", "mlx5_1", "gen3")
        report = verify(expect_ok=False)
        got = [(f["code"], f["node"], f["device"]) for f in readiness(report)]
        assert got == [("PCIE_DEGRADED", "node2", "mlx5_1")], got
    finally:
        lab_fault("pcie-restore", "node2", "mlx5_1")
        lab_fault("pcie-slot-restore", "node2", "mlx5_1")


@pytest.mark.matrix
def test_a_gpu_link_stuck_under_load_is_named_with_node_gpu_and_slot(converged):
    """A GPU whose link stays at Gen1 under load reads like every idle GPU at rest; read again under
    the readiness load it is PCIE_DEGRADED, naming the node, the GPU, its PCI address and its slot."""
    from linerate_lab import pcie

    node = converged["nodes"]["node3"]
    gpu_pci = f"0000:{pcie.gpu_buses(node)[4]:02x}:00.0"
    slot = pcie.upstream_of(node, gpu_pci)["address"]
    lab_fault("pcie-gpu-stuck", "node3", "GPU4")
    try:
        report = verify(expect_ok=False)
    finally:
        lab_fault("pcie-gpu-stuck-restore", "node3", "GPU4")
    got = [(f["code"], f["node"], f["device"], f.get("gpu"), f["pci_address"], f["slot"]) for f in readiness(report)]
    assert got == [("PCIE_DEGRADED", "node3", "GPU4", 4, gpu_pci, slot)], got
    msg = readiness(report)[0]["message"]
    assert "Gen1 x16 (2.5 GT/s) under load (all_reduce_perf" in msg and f"upstream port {slot}" in msg, msg
    assert report["checks"]["readiness"]["passed"] is False
