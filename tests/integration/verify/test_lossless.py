"""Lossless RoCE against the lab (issue 23 item 3): a port without headroom, a switch whose PFC
watchdog is off and a NIC that keeps sending pause frames are each caught with a code naming the
switch and port (and the node and device cabled there); a healthy lab has none of these codes.

Written alongside the unit tests; run by the lead with the rest of tests/integration (the lab)."""

import pytest

from conftest import lab_fault, switch_fault
from verify_lab import find, healthy, port_of, verify  # noqa: F401  (healthy: a fixture)

LOSSLESS = {"SWITCH_NO_HEADROOM", "PFC_WATCHDOG_OFF", "PFC_STORM"}


def test_healthy_lab_has_no_lossless_findings(converged, healthy):  # noqa: F811 (the fixture imported above)
    report, _ = healthy
    assert not [f for f in report["findings"] if f["code"] in LOSSLESS]


@pytest.mark.matrix
def test_switch_headroom_zero_is_named_with_switch_and_port(converged):
    # leaf2 is the lab's SONiC leaf: its driver reads the lossless BUFFER_PG back
    node, device = next((n, x["device"]) for n, v in sorted(converged["nodes"].items()) for x in v["nics"] if x["switch"] == "leaf2")
    switch, port = port_of(converged, node, device)
    switch_fault(switch, "headroom_zero", port)
    lab_fault("switch-headroom-zero", switch, port)
    try:
        report = verify(expect_ok=False)
    finally:
        lab_fault("switch-headroom-restore", switch, port)
        switch_fault(switch, "headroom_restore", port)
    hits = find(report, "SWITCH_NO_HEADROOM", node, device)
    assert {(x["switch"], x["switch_port"], x["severity"]) for x in hits} == {(switch, port, "error")}


@pytest.mark.matrix
def test_pfc_watchdog_off_is_named_with_switch_and_port(converged):
    node, device = next((n, x["device"]) for n, v in sorted(converged["nodes"].items()) for x in v["nics"] if x["switch"] == "leaf2")
    switch, _ = port_of(converged, node, device)
    switch_fault(switch, "pfcwd_off")
    lab_fault("pfc-watchdog-off", switch)
    try:
        report = verify(expect_ok=False)
    finally:
        lab_fault("pfc-watchdog-restore", switch)
        switch_fault(switch, "pfcwd_restore")
    hits = [f for f in report["findings"] if f["code"] == "PFC_WATCHDOG_OFF"]
    assert hits and {x["switch"] for x in hits} == {switch}
    cabled = {str(x["switch_port"]) for n in converged["nodes"].values() for x in n["nics"] if x["switch"] == switch}
    assert cabled <= {x["switch_port"] for x in hits}


@pytest.mark.matrix
def test_nvue_switch_headroom_zero_is_named_with_switch_and_port(converged):
    # leaf1 is the lab's NVUE leaf (lab/switchsim/topology.py): its driver reads the lossless headroom back
    # from `nv show interface <swp> qos buffer ingress-priority-group -o json`
    node, device = next((n, x["device"]) for n, v in sorted(converged["nodes"].items()) for x in v["nics"] if x["switch"] == "leaf1")
    switch, port = port_of(converged, node, device)
    switch_fault(switch, "headroom_zero", port)
    lab_fault("switch-headroom-zero", switch, port)
    try:
        report = verify(expect_ok=False)
    finally:
        lab_fault("switch-headroom-restore", switch, port)
        switch_fault(switch, "headroom_restore", port)
    hits = find(report, "SWITCH_NO_HEADROOM", node, device)
    assert {(x["switch"], x["switch_port"], x["severity"]) for x in hits} == {("leaf1", port, "error")}
    assert not [f for f in report["findings"] if f["code"] == "SWITCH_NO_HEADROOM" and f.get("switch") != "leaf1"]


@pytest.mark.matrix
def test_nvue_pfc_watchdog_off_is_named_with_switch_and_port(converged):
    # NVUE: `nv set interface <swp> qos pfc-watchdog state disable` applied on every port (drift), read back
    # from `nv show interface <swp> qos pfc-watchdog -o json`
    node, device = next((n, x["device"]) for n, v in sorted(converged["nodes"].items()) for x in v["nics"] if x["switch"] == "leaf1")
    switch, _ = port_of(converged, node, device)
    switch_fault(switch, "pfcwd_off")
    lab_fault("pfc-watchdog-off", switch)
    try:
        report = verify(expect_ok=False)
    finally:
        lab_fault("pfc-watchdog-restore", switch)
        switch_fault(switch, "pfcwd_restore")
    hits = [f for f in report["findings"] if f["code"] == "PFC_WATCHDOG_OFF"]
    assert hits and {x["switch"] for x in hits} == {"leaf1"}
    cabled = {str(x["switch_port"]) for n in converged["nodes"].values() for x in n["nics"] if x["switch"] == switch}
    assert cabled <= {x["switch_port"] for x in hits}


@pytest.mark.matrix
def test_pfc_storm_is_named_with_node_device_switch_and_port(converged):
    node, device = next((n, x["device"]) for n, v in sorted(converged["nodes"].items()) for x in v["nics"] if x["switch"] == "leaf2")
    switch, port = port_of(converged, node, device)
    lab_fault("pfc-storm", node, device)
    try:
        report = verify(expect_ok=False)
    finally:
        lab_fault("pfc-storm-stop", node, device)
    hits = find(report, "PFC_STORM", node, device)
    # the host's pause counters over the window (link_health) and the switch's watchdog (incast)
    assert {x["check"] for x in hits} == {"link_health", "incast"}
    assert {(x["switch"], x["switch_port"]) for x in hits} == {(switch, port)}
    assert not [f for f in report["findings"] if f["code"] == "PFC_STORM" and f.get("node") not in (node, None)]
