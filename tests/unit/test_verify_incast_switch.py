"""The switches' own congestion counters over the benchmarks (incast_switch.switch_findings): two
snapshots read through each platform's driver from the simulator's real formats, judged per
fabric port - pauses on the wrong priority, drops of the no-drop priority, what is not proven."""

import json

import pytest

from switch_testlib import sim_driver
from test_switch_counters_sim import PORTS, pfc_on, put_counters

from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast_switch
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils import findings

FABRIC = {"transport": "roce", "roce": {"no_drop_priority": 3, "ecn": {"enabled": True}}}


def hosts(platform):
    """node1 mlx5_0 on the first port, node2 mlx5_0 on the second, both on switch sw (rdma_ports)."""
    a, b = PORTS[platform]
    return {"node1": [{"device": "mlx5_0", "switch": "sw", "switch_port": a}], "node2": [{"device": "mlx5_0", "switch": "sw", "switch_port": b}]}


def snapshot(d, platform):
    """What role task switch_fabric/counters.yml keeps, after Ansible's JSON round trip (keys become strings)."""
    ports = d.qos_counters(PORTS[platform])
    return json.loads(json.dumps({"failed": False, "msg": "", "platform": platform, "ports": ports, "ports_missing": []}))


def rails():
    return [{"device": "mlx5_0", "receiver": "node2", "senders": ["node1"]}]


def window(tmp_path, monkeypatch, platform, before_counters, after_counters):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, _ = sim_driver(tmp_path, platform, PORTS[platform])
    pfc_on(d, platform, PORTS[platform])
    port = PORTS[platform][1]
    put_counters(port, before_counters)
    before = snapshot(d, platform)
    put_counters(port, after_counters)
    after = snapshot(d, platform)
    r = rails()
    f, unproven = incast_switch.switch_findings({"sw": {"before": before, "after": after}}, FABRIC, hosts(platform), {}, r, findings.finding)
    return f, unproven, r


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_pauses_on_the_no_drop_priority_are_evidence_not_a_finding(tmp_path, monkeypatch, platform):
    f, unproven, r = window(
        tmp_path,
        monkeypatch,
        platform,
        {"tx_pause": [0, 0, 0, 100, 0, 0, 0, 0], "ecn_marked": {"3": 10}},
        {"tx_pause": [0, 0, 0, 4100, 0, 0, 0, 0], "ecn_marked": {"3": 260}},
    )
    assert f == []
    assert r[0]["switch_pause"] == {"node2": 4000, "node1": 0}
    if platform == "eos":
        assert r[0]["switch_ecn_marked"]["node2"] is None
        assert unproven == {"sw": ["pause frames per priority", "ECN-marked packets", "queue drops"]}
    else:
        assert r[0]["switch_ecn_marked"]["node2"] == 250
    if platform == "nvue":
        assert unproven == {"sw": ["pause frames on priorities other than the RoCE one"]}


def test_sonic_pauses_on_another_priority_name_the_port_and_the_priority(tmp_path, monkeypatch):
    f, _, _ = window(tmp_path, monkeypatch, "sonic", {}, {"rx_pause": [0, 0, 0, 50, 7, 0, 0, 0]})
    assert [(x["code"], x["switch"], x["switch_port"], x["node"], x["device"]) for x in f] == [
        ("SWITCH_PAUSE_WRONG_PRIORITY", "sw", "Ethernet8", "node2", "mlx5_0")
    ]
    assert "+7 on priority 4" in f[0]["message"] and f[0]["evidence"]["pause"] == {"0": 0, "1": 0, "2": 0, "3": 50, "4": 7, "5": 0, "6": 0, "7": 0}


def test_nvue_cannot_split_priorities_so_it_never_blames_one(tmp_path, monkeypatch):
    f, unproven, _ = window(tmp_path, monkeypatch, "nvue", {}, {"rx_pause": [0, 0, 0, 0, 9, 0, 0, 0]})
    assert [x["code"] for x in f] == []
    assert unproven["sw"]


@pytest.mark.parametrize("platform", ["nvue", "sonic"])
def test_drops_of_the_no_drop_priority(tmp_path, monkeypatch, platform):
    f, _, r = window(tmp_path, monkeypatch, platform, {"drops": [0, 0, 0, 5, 0, 0, 0, 0]}, {"drops": [0, 0, 0, 905, 0, 0, 0, 0]})
    assert [(x["code"], x["switch_port"], x["node"]) for x in f] == [("SWITCH_DROPS_NO_DROP", PORTS[platform][1], "node2")]
    assert "+900 packets of the no-drop priority 3" in f[0]["message"]
    assert r[0]["switch_drops"]["node2"] == 900


def test_lossy_drops_are_not_the_no_drop_class(tmp_path, monkeypatch):
    f, _, r = window(tmp_path, monkeypatch, "sonic", {}, {"drops": [12, 0, 0, 0, 0, 0, 0, 0]})
    assert f == [] and r[0]["switch_drops"]["node2"] == 0


def test_drops_go_into_the_evidence_of_the_incast_finding_that_names_the_rail():
    before = {"failed": False, "ports": {"Ethernet8": {"drops": {"3": 1}, "per_priority": True, "missing": []}}}
    after = {"failed": False, "ports": {"Ethernet8": {"drops": {"3": 41}, "per_priority": True, "missing": []}}}
    prior = [findings.finding("INCAST_NO_PAUSE", "x", node="node1", device="mlx5_0", check="incast")]
    f, _ = incast_switch.switch_findings(
        {"sw": {"before": before, "after": after}},
        FABRIC,
        {"node2": [{"device": "mlx5_0", "switch": "sw", "switch_port": "Ethernet8"}]},
        {},
        [],
        findings.finding,
        prior,
    )
    assert f == [] and prior[0]["evidence"]["switch_drops"] == {"sw Ethernet8": 40}


def test_a_cleared_counter_counts_from_zero():
    assert incast_switch._delta({"3": 500}, {"3": 20}) == {"3": 20}
    assert incast_switch._delta(500, 20) == 20 and incast_switch._delta(5, 20) == 15
    assert incast_switch._delta(5, None) is None


def test_an_unreadable_switch_or_port_is_a_warning_naming_it():
    cab = {"node1": [{"device": "mlx5_0", "switch": "sw", "switch_port": "swp1"}], "node2": [{"device": "mlx5_0", "switch": "sw2", "switch_port": "swp2"}]}
    good = {"failed": False, "ports": {"swp9": {"per_priority": True, "missing": []}}}
    reads = {"sw": {"before": good, "after": {"failed": True, "msg": "sw: authentication failed"}}, "sw2": {"before": good, "after": good}}
    f, _ = incast_switch.switch_findings(reads, FABRIC, cab, {}, [], findings.finding)
    assert [(x["code"], x["severity"], x["switch"], x.get("switch_port")) for x in f] == [
        ("COUNTER_MISSING", "warning", "sw", None),
        ("COUNTER_MISSING", "warning", "sw2", "swp2"),
    ]
    assert "authentication failed" in f[0]["message"] and "not proven" in f[0]["message"]
    # one snapshot only (the second play never ran)
    f, _ = incast_switch.switch_findings({"sw": {"before": good}}, FABRIC, {"n": cab["node1"]}, {}, [], findings.finding)
    assert "no snapshot after the benchmarks" in f[0]["message"]


def test_nothing_without_reads_or_on_infiniband():
    assert incast_switch.switch_findings({}, FABRIC, {}, {}, [], findings.finding) == ([], {})
    reads = {"sw": {"before": {"failed": True, "msg": "x"}}}
    cab = {"n": [{"device": "d", "switch": "sw", "switch_port": "p"}]}
    assert incast_switch.switch_findings(reads, {"transport": "infiniband"}, cab, {}, [], findings.finding) == ([], {})


def test_uplinks_are_judged_on_both_ends_and_named_by_their_peer():
    # leaf1 swp5 <-> spine1 Ethernet1/1: a SONiC-style per-priority split on both ends
    def snap(drops, rx):
        return {
            "failed": False,
            "ports": {p: {"drops": drops, "rx_pause": rx, "tx_pause": {}, "per_priority": True, "missing": []} for p in ("swp5", "Ethernet1/1")},
        }

    reads = {
        "leaf1": {"before": snap({"3": 0}, {"3": 0}), "after": snap({"3": 0}, {"3": 10, "5": 2})},
        "spine1": {"before": snap({"3": 0}, {}), "after": snap({"3": 77}, {})},
    }
    uplinks = {"leaf1": [{"port": "swp5", "peer": "spine1", "peer_port": "Ethernet1/1"}]}
    f, _ = incast_switch.switch_findings(reads, FABRIC, {}, uplinks, [], findings.finding)
    got = {(x["code"], x["switch"], x["switch_port"], x["peer_switch"], x["peer_port"]) for x in f}
    assert got == {
        ("SWITCH_PAUSE_WRONG_PRIORITY", "leaf1", "swp5", "spine1", "Ethernet1/1"),
        ("SWITCH_DROPS_NO_DROP", "spine1", "Ethernet1/1", "leaf1", "swp5"),
    }
    assert all(x["node"] is None for x in f)
    assert "spine1 Ethernet1/1 (towards leaf1 swp5): +77 packets" in next(x["message"] for x in f if x["code"] == "SWITCH_DROPS_NO_DROP")


def test_the_report_shows_the_switch_columns_and_what_is_not_proven():
    rail = {
        "device": "mlx5_0",
        "receiver": "node2",
        "senders": ["node1"],
        "k": 1,
        "flows": {"node1": 190.0},
        "pause": {"node1": 5},
        "switch_pause": {"node2": 4000, "node1": 0},
        "switch_drops": {"node2": 0, "node1": 0},
    }
    lines = report_markdown._evidence({"incast": {"rails": [rail], "switch_unproven": {"leaf1": ["queue drops"]}}})
    text = "\n".join(lines)
    assert "| node | Gb/s | pause | switch_pause | switch_drops |" in text
    assert "| node2 |  |  | 4000 | 0 |" in text
    assert "- not proven on leaf1 (the platform does not report them): queue drops" in text
