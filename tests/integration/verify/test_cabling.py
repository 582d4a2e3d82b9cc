"""RoCE cabling by LLDP against the lab: the healthy lab has no cabling finding; swapped cables
on a leaf (NVUE and SONiC) are caught as CABLE_SWAPPED naming both nodes, devices and ports;
after the undo the check is clean again."""

import json
import os

from conftest import lab_fault, run_playbook
from verify_lab import REPORT

ONLY_CABLING = ["-e", '{"verify_fabric_checks": ["cabling"]}']
SWAPS = [("leaf1", "swp1", "swp2"), ("leaf2", "Ethernet8", "Ethernet16")]


def verify(expect_ok):
    res = run_playbook("playbooks/verify.yml", *ONLY_CABLING, timeout=600)
    assert (res.returncode == 0) == expect_ok, res.stdout[-5000:]
    with open(REPORT) as f:
        return json.load(f)


def owner(lab, switch, port):
    """(node, device) the lab cables to switch/port."""
    peer = lab["switches"][switch]["ports"][port]["peer"]
    return tuple(peer.split(":", 1))


def test_swapped_cables_are_caught_naming_both_ends_and_undo_is_clean(converged):
    lab = converged
    n = len(lab["nodes"])
    assert n >= 3, "the swaps below need three nodes (LAB_NODES=3)"
    report = verify(expect_ok=True)
    cab = report["checks"]["cabling"]
    assert cab["passed"], cab
    # every host port and both ends of every uplink, all seen by LLDP as cabled
    uplink_ends = sum(2 * len(s.get("uplinks") or []) for name, s in lab["switches"].items() if name != "spine1")
    assert len(cab["cases"]) == 2 * n + uplink_ends and all(c["ok"] for c in cab["cases"])
    assert [f for f in report["findings"] if f["check"] == "cabling"] == []

    try:
        for swap in SWAPS:
            lab_fault("cable-swap", *swap)
        report = verify(expect_ok=False)
        swapped = [f for f in report["findings"] if f["code"] == "CABLE_SWAPPED"]
        assert len(swapped) == 2, report["findings"]
        for switch, a, b in SWAPS:
            f = next(x for x in swapped if x["switch"] == switch)
            assert {f["switch_port"], f["other_switch_port"]} == {a, b}
            here, there = owner(lab, switch, f["switch_port"]), owner(lab, switch, f["other_switch_port"])
            assert (f["node"], f["device"]) == here
            assert (f["peer_node"], f["peer_device"]) == there
            assert f["severity"] == "error" and f["layer"] == "cabling"
            assert f"{here[0]} {here[1]}" in f["message"] and f"{there[0]} {there[1]}" in f["message"]
        assert {f["code"] for f in report["findings"]} == {"CABLE_SWAPPED"}
        with open(os.path.join(os.path.dirname(REPORT), "summary.md")) as md:
            assert "### Cabling (LLDP)" in md.read()
    finally:
        for swap in SWAPS:
            lab_fault("cable-swap-restore", *swap)

    report = verify(expect_ok=True)
    assert report["checks"]["cabling"]["passed"]
    assert [f for f in report["findings"] if f["check"] == "cabling"] == []
