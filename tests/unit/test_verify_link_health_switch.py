"""Link health counted by the switches (links_switch.switch_link_findings): interface error counters
read through each platform's driver from the simulator's real formats (two snapshots, as
playbooks/verify.yml takes them), judged per cabled port against fabric.verify's thresholds;
merged into the host side's finding of the same port; what cannot be read is a warning."""

import json

import pytest

from parser_fixtures import fixture
from switch_testlib import sim_driver
from test_switch_counters_sim import PORTS, put_counters

from ansible_collections.linerate.fabric.plugins.module_utils.checks import links_switch
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils import findings
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_eos_intf_errors, parse_nvue_link_stats, parse_sonic_intf_counters

FABRIC = {"transport": "roce", "verify": {"link_errors_max": 0, "link_flaps_max": 0}}


def hosts(platform):
    a, b = PORTS[platform]
    return {"node1": [{"device": "mlx5_0", "switch": "sw", "switch_port": a}], "node2": [{"device": "mlx5_0", "switch": "sw", "switch_port": b}]}


def snapshot(d, platform):
    """What switch_fabric/counters.yml keeps, after Ansible's JSON round trip."""
    errors = d.error_counters(PORTS[platform])
    return json.loads(json.dumps({"failed": False, "msg": "", "platform": platform, "ports": {}, "ports_missing": [], "errors": errors, "errors_msg": ""}))


def window(tmp_path, monkeypatch, platform, before, after, fabric=FABRIC, prior=()):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, _ = sim_driver(tmp_path, platform, PORTS[platform])
    port = PORTS[platform][1]
    put_counters(port, before)
    b = snapshot(d, platform)
    put_counters(port, after)
    a = snapshot(d, platform)
    return links_switch.switch_link_findings({"sw": {"before": b, "after": a}}, fabric, hosts(platform), {}, findings.finding, list(prior))


# ------------------------------------------------------------------ parsers on real outputs


def test_sonic_portstat_both_layouts():
    new = parse_sonic_intf_counters(fixture("counters", "sonic_intf_counters_unittest.txt"))
    assert new["ports"]["Ethernet8"]["RX_ERR"] == 100 and new["ports"]["Ethernet4"]["RX_DRP"] == 1000
    assert new["ports"]["Ethernet0"]["TX_ERR"] is None and new["ports"]["Ethernet0"]["state"] == "D"
    old = parse_sonic_intf_counters(fixture("counters", "sonic_intf_counters_wiki2018.txt"))
    assert old["ports"]["Ethernet12"] == {
        "state": None,
        "RX_OK": 458052204029,
        "RX_ERR": 0,
        "RX_DRP": 17614,
        "RX_OVR": 0,
        "TX_OK": 388341776615,
        "TX_ERR": 0,
        "TX_DRP": 0,
        "TX_OVR": 0,
    }


def test_sonic_portstat_bad_rows_name_the_line():
    head = fixture("counters", "sonic_intf_counters_unittest.txt").splitlines()[:2]
    with pytest.raises(ParseError, match="line 3"):
        parse_sonic_intf_counters("\n".join(head + ["Ethernet0  U  8  0.00 B/s  0.00%  x  0  0  1  0.00 B/s  0.00%  0  0  0"]))
    with pytest.raises(ParseError, match="line 3.*values"):
        parse_sonic_intf_counters("\n".join(head + ["Ethernet0  U  8"]))
    with pytest.raises(ParseError, match="header"):
        parse_sonic_intf_counters("Ethernet0  U  8")


def test_nvue_link_stats_both_layouts():
    ref = parse_nvue_link_stats(fixture("counters", "nvue_link_stats_reference.txt"))
    assert ref["carrier-transitions"] == 6 and ref["in-errors"] == 0 and ref["out-errors"] == 0
    assert ref["stats"]["in-bytes"] == 39220000 and ref["stats"]["out-pkts"] == 501951
    desc = parse_nvue_link_stats(fixture("counters", "nvue_link_stats_described.txt"))
    assert desc["in-errors"] == 0 and desc["carrier-transitions"] == 6 and desc["out-errors"] is None
    with pytest.raises(ParseError, match="does not exist"):
        parse_nvue_link_stats("Error: The requested item does not exist: interface swp99")
    with pytest.raises(ParseError, match="in-errors"):
        parse_nvue_link_stats("   operational\n-----  -----\nin-errors  lots")


def test_eos_errors_json():
    c = parse_eos_intf_errors(fixture("counters", "eos_intf_errors_anta.json"))
    assert set(c["ports"]) == {"Ethernet1", "Ethernet6"}
    assert c["ports"]["Ethernet1"]["fcsErrors"] == 0 and len(c["ports"]["Ethernet1"]) == 7
    assert parse_eos_intf_errors({"interfaceErrorCounters": {"Et1": {"fcsErrors": 3}}})["ports"]["Et1"] == {"fcsErrors": 3}
    for bad in ("{", {"interfaceErrorCounters": {"Et1": {"fcsErrors": "3"}}}, {"errors": ["invalid command"]}, {}):
        with pytest.raises(ParseError):
            parse_eos_intf_errors(bad)


# ------------------------------------------------------------------ drivers on the simulators


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_drivers_read_the_model_counters_read_only(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    put_counters(PORTS[platform][1], {"rx_errors": 12, "tx_errors": 3, "link_down": 2})
    c = d.error_counters(PORTS[platform])
    quiet, bad = c[PORTS[platform][0]], c[PORTS[platform][1]]
    assert not any(quiet["errors"].values())
    if platform == "nvue":
        assert bad["errors"] == {"in-errors": 12, "out-errors": 3}
        assert bad["link_down"] == 4 and bad["link_down_unit"] == "transitions" and bad["missing"] == []
    elif platform == "sonic":
        assert bad["errors"] == {"RX_ERR": 12, "TX_ERR": 3} and bad["link_down"] is None
        assert bad["missing"] == ["link down events"]
    else:
        assert bad["errors"]["fcsErrors"] == 12 and bad["errors"]["outErrors"] == 3 and bad["link_down"] is None
    assert all(not cmd.startswith(("nv set", "sudo config", "configure")) for cmd in sim.sent)


def test_a_damaged_cable_counts_at_the_switch_end_too(tmp_path, monkeypatch):
    """lab fault crc-errors on a NIC: the switch port at the cable's other end counts RX errors as well;
    a flap counts link downs there; ending the fault keeps what was counted."""
    import time

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, _ = sim_driver(tmp_path, "nvue", PORTS["nvue"])
    from simcore import model
    from linerate_lab import faults, linkphys

    with model.locked() as m:
        sw = m["switches"]["sw"].setdefault("ports", {}).setdefault("swp2", {})
        sw["peer"] = "node1:mlx5_0"
        nic = {"device": "mlx5_0", "netdev": "eth2", "switch": "sw", "switch_port": "swp2"}
        m.setdefault("nodes", {})["node1"] = {"nics": [nic]}
        linkphys.start(nic, "crc", now=time.time() - 10)
        linkphys.start(nic, "flap", now=time.time() - 1)
    c = d.error_counters(["swp2"])["swp2"]
    assert c["errors"]["in-errors"] >= 10 * linkphys.CRC_ERRORS_PER_S and c["link_down"] == 2
    with model.locked() as m:
        nic = m["nodes"]["node1"]["nics"][0]
        faults._fold_switch_side(m, nic, "crc")
        linkphys.stop(nic, "crc")
    after = d.error_counters(["swp2"])["swp2"]
    assert after["errors"]["in-errors"] >= c["errors"]["in-errors"]


# ------------------------------------------------------------------ judging


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_switch_errors_over_the_window_name_node_device_switch_and_port(tmp_path, monkeypatch, platform):
    f, unproven, shown = window(tmp_path, monkeypatch, platform, {"rx_errors": 100}, {"rx_errors": 150})
    errs = [x for x in f if x["code"] == "LINK_ERRORS"]
    assert len(errs) == 1
    x = errs[0]
    assert (x["node"], x["device"], x["switch"], x["switch_port"]) == ("node2", "mlx5_0", "sw", PORTS[platform][1])
    assert x["severity"] == "error" and x["check"] == "link_health"
    assert x["evidence"]["counted_by"] == "switch" and "counted by the switch" in x["message"]
    assert shown[("node2", "mlx5_0")]["switch_errors"] >= 50 and shown[("node1", "mlx5_0")]["switch_errors"] == 0
    assert [y for y in f if y["code"] == "COUNTER_MISSING"] == []
    if platform == "nvue":
        assert x["evidence"]["deltas"] == {"in-errors": 50} and unproven == {}
    else:
        assert unproven == {"sw": ["link down events"]}


def test_errors_at_the_threshold_pass(tmp_path, monkeypatch):
    fabric = {"transport": "roce", "verify": {"link_errors_max": 50}}
    f, _, _ = window(tmp_path, monkeypatch, "nvue", {"rx_errors": 100}, {"rx_errors": 150}, fabric=fabric)
    assert f == []
    f, _, _ = window(tmp_path, monkeypatch, "nvue", {"rx_errors": 100}, {"rx_errors": 151}, fabric=fabric)
    assert [x["code"] for x in f] == ["LINK_ERRORS"]


def test_a_switch_side_flap_is_link_flap_carrier_transitions_halved(tmp_path, monkeypatch):
    f, _, shown = window(tmp_path, monkeypatch, "nvue", {"link_down": 1}, {"link_down": 3})
    flap = [x for x in f if x["code"] == "LINK_FLAP"]
    assert len(flap) == 1 and flap[0]["evidence"]["link_down"] == 2 and flap[0]["node"] == "node2"
    assert shown[("node2", "mlx5_0")]["switch_flaps"] == 2


def test_the_host_side_finding_of_the_same_port_takes_the_switch_evidence(tmp_path, monkeypatch):
    host = findings.finding(
        "LINK_ERRORS",
        "node2 mlx5_0: rx_crc_errors_phy +40",
        node="node2",
        device="mlx5_0",
        switch="sw",
        switch_port="swp2",
        check="link_health",
        evidence={"deltas": {"x": 40}},
    )
    other = findings.finding("LINK_ERRORS", "node1 mlx5_0: rx_crc_errors_phy +1", node="node1", device="mlx5_0", check="link_health")
    f, _, _ = window(tmp_path, monkeypatch, "nvue", {"rx_errors": 0}, {"rx_errors": 40}, prior=[host, other])
    assert [x for x in f if x["code"] == "LINK_ERRORS"] == []
    assert host["evidence"]["switch_counted"]["deltas"] == {"in-errors": 40}
    assert host["evidence"]["deltas"] == {"x": 40} and "the switch counted it too" in host["message"]
    assert "switch_counted" not in (other.get("evidence") or {})


def test_an_unreadable_switch_or_port_warns_and_does_not_crash():
    h = {"node1": [{"device": "mlx5_0", "switch": "sw", "switch_port": "swp1"}]}
    ok = {"errors": {"swp1": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []}}, "errors_msg": ""}
    cases = [
        {"before": ok, "after": {"errors": {}, "errors_msg": "sw: nv show interface link stats: no output"}},
        {"before": ok, "after": {"failed": True, "msg": "ssh timed out"}},
        {"before": ok},
        {"before": ok, "after": {"ports": {}}},
    ]
    for read in cases:
        f, _, _ = links_switch.switch_link_findings({"sw": read}, FABRIC, h, {}, findings.finding)
        assert [(x["code"], x["severity"], x["switch"]) for x in f] == [("COUNTER_MISSING", "warning", "sw")]
        assert "not proven" in f[0]["message"]
    f, _, _ = links_switch.switch_link_findings({"sw": {"before": ok, "after": {"errors": {}, "errors_msg": ""}}}, FABRIC, h, {}, findings.finding)
    assert [(x["code"], x["node"], x["switch_port"]) for x in f] == [("COUNTER_MISSING", "node1", "swp1")]


def test_a_counter_the_port_lacks_is_named():
    h = {"node1": [{"device": "mlx5_0", "switch": "sw", "switch_port": "Ethernet0"}]}
    snap = {"errors": {"Ethernet0": {"errors": {"RX_ERR": 0}, "link_down": None, "missing": ["TX_ERR", "link down events"]}}, "errors_msg": ""}
    f, unproven, _ = links_switch.switch_link_findings({"sw": {"before": snap, "after": snap}}, FABRIC, h, {}, findings.finding)
    assert [(x["code"], x["counter"], x["switch_port"]) for x in f] == [("COUNTER_MISSING", "TX_ERR", "Ethernet0")]
    assert unproven == {"sw": ["link down events"]}


def test_uplinks_are_judged_by_their_peer_and_infiniband_is_not():
    snap0 = {"errors": {"swp9": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []}}, "errors_msg": ""}
    snap1 = {"errors": {"swp9": {"errors": {"in-errors": 5}, "link_down": 0, "missing": []}}, "errors_msg": ""}
    up = {"sw": [{"port": "swp9", "peer": "spine", "peer_port": "swp1"}]}
    reads = {"sw": {"before": snap0, "after": snap1}, "spine": {"before": {"errors": {}}, "after": {"errors": {}}}}
    f, _, shown = links_switch.switch_link_findings(reads, FABRIC, {}, up, findings.finding)
    errs = [x for x in f if x["code"] == "LINK_ERRORS"]
    assert len(errs) == 1 and errs[0]["peer_switch"] == "spine" and errs[0]["switch_port"] == "swp9" and shown == {}
    assert links_switch.switch_link_findings(reads, {"transport": "infiniband"}, {}, up, findings.finding) == ([], {}, {})


def test_the_report_table_shows_the_switch_counts():
    checks = {
        "link_health": {
            "ports": [
                {"node": "n1", "device": "mlx5_0", "switch": "sw", "switch_port": "swp1", "errors": 0, "flaps": 0, "switch_errors": 42, "switch_flaps": None}
            ],
            "switch_unproven": {"sw": ["link down events"]},
        }
    }
    text = "\n".join(report_markdown._evidence(checks))
    assert "| switch errors | switch flaps |" in text and "| 42 |" in text
    assert "not proven on sw" in text and "link down events" in text
