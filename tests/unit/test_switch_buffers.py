"""The SONiC simulator's PFC watchdog grammar and buffer model, and the lab faults of the buffer model
(switch-headroom-zero, pfc-watchdog-off) with their undo."""

import os
import sys

import pytest

from switch_testlib import SimSwitch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lab", "sim"))

PORTS = ["Ethernet0", "Ethernet8"]


@pytest.fixture
def sim(tmp_path):
    return SimSwitch(tmp_path, "sonic", PORTS)


def test_pfcwd_start_writes_pfc_wd_and_show_reads_it(sim):
    assert sim("sudo config pfcwd start --action drop ports Ethernet0 detection-time 200 --restoration-time 300") == ""
    assert sim.sw.db["PFC_WD"]["Ethernet0"] == {"action": "drop", "detection_time": "200", "restoration_time": "300"}
    out = sim("show pfcwd config")
    assert out.splitlines()[0].split() == ["PORT", "ACTION", "DETECTION", "TIME", "RESTORATION", "TIME", "HISTORY"]
    assert out.splitlines()[2].split() == ["Ethernet0", "drop", "200", "300", "disable"]
    assert sim("sudo config pfcwd stop Ethernet0") == "" and "PFC_WD" not in sim.sw.db


@pytest.mark.parametrize(
    "cmd, err",
    [
        ("sudo config pfcwd start --action shout ports Ethernet0 detection-time 200", "'shout' is not one of"),
        ("sudo config pfcwd start --action drop ports Ethernet0 detection-time 50", "100<=x<=5000"),
        ("sudo config pfcwd start --action drop ports Ethernet0 detection-time 200 --restoration-time 70000", "100<=x<=60000"),
        ("sudo config pfcwd start --action drop ports Ethernet99 detection-time 200", "Invalid port Ethernet99"),
        ("sudo config pfcwd start --storm-mode drop ports Ethernet0 detection-time 200", "No such option"),
        ("sudo config pfcwd arm", "No such command"),
    ],
)
def test_pfcwd_refuses_what_the_cli_refuses(sim, cmd, err):
    assert err in sim(cmd)
    assert "PFC_WD" not in sim.sw.db


def test_buffer_model_headroom_from_buffer_pg(sim):
    db = sim.sw.db
    # the SN5600's own 400G 5m row (ACS-SN5600 pg_profile_lookup.ini), and one with less xoff than it asks
    db["BUFFER_PROFILE"] = {
        "pg_lossless_400000_5m_profile": {"pool": "ingress_lossless_pool", "size": "250880", "xon": "19456", "xoff": "231424", "dynamic_th": "0"},
        "small": {"pool": "ingress_lossless_pool", "size": "55296", "xon": "18432", "xoff": "36864"},
        "zero": {"pool": "ingress_lossless_pool", "size": "0", "xoff": "0"},
    }
    db["BUFFER_PG"] = {"Ethernet0|3-4": {"profile": "pg_lossless_400000_5m_profile"}, "Ethernet8|3": {"profile": "zero"}, "Ethernet8|4": {"profile": "small"}}
    assert sim.sw.lossless_headroom("Ethernet0", {}) == [3, 4]
    # xoff 0: no headroom; less than the platform's row asks: what is in flight overflows it (drops under incast)
    assert sim.sw.lossless_headroom("Ethernet8", {}) == []


def test_fault_headroom_zero_is_saved_drift_and_restore_undoes_it(sim):
    sim.sw.db["BUFFER_PROFILE"] = {"p": {"pool": "ingress_lossless_pool", "size": "250880", "xoff": "231424"}}
    sim.sw.db["BUFFER_PG"] = {"Ethernet0|0": {"profile": "p"}, "Ethernet0|3": {"profile": "p"}}
    sim.sw.fault_headroom_zero("Ethernet0")
    assert sim.sw.db["BUFFER_PG"] == {"Ethernet0|0": {"profile": "p"}} == sim.sw.saved["BUFFER_PG"]
    assert sim.sw.buffer_state("Ethernet0", {})["headroom"] == [0]
    sim.sw.fault_headroom_restore("Ethernet0")
    assert sim.sw.db["BUFFER_PG"]["Ethernet0|3"] == {"profile": "p"}


def test_lab_faults_headroom_and_watchdog_with_undo():
    from linerate_lab import faults

    m = {
        "nodes": {},
        "faults": [],
        "switches": {"leaf2": {"ports": {"Ethernet0": {"pfc": [3], "headroom": [3], "pfcwd": [3]}, "Ethernet8": {"pfc": [3], "headroom": [3]}}}},
    }
    faults.switch_headroom_zero(None, m, "leaf2", "Ethernet0")
    faults.switch_headroom_zero(None, m, "leaf2", "Ethernet0")  # twice: the undo keeps the first state
    assert m["switches"]["leaf2"]["ports"]["Ethernet0"]["headroom"] == []
    faults.switch_headroom_restore(None, m, "leaf2", "Ethernet0")
    assert m["switches"]["leaf2"]["ports"]["Ethernet0"]["headroom"] == [3] and m["faults"] == []
    faults.pfc_watchdog_off(None, m, "leaf2")
    assert all(p["pfcwd"] == [] for p in m["switches"]["leaf2"]["ports"].values())
    faults.pfc_watchdog_restore(None, m, "leaf2")
    assert m["switches"]["leaf2"]["ports"]["Ethernet0"]["pfcwd"] == [3]
    assert "pfcwd" not in m["switches"]["leaf2"]["ports"]["Ethernet8"] and m["faults"] == []
    with pytest.raises(faults.FaultError, match="allowed: leaf2"):
        faults.pfc_watchdog_off(None, m, "leaf9")
