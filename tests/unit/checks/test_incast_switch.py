"""The switches' own counters and lossless state over the benchmarks (checks/incast_switch.py), each
finding whole: code, severity, layer, both ends, evidence and message, so a changed word, threshold or
argument fails (test_verify_incast_switch.py reads the counters through each platform's driver)."""

from test_verify_incast_exact import fault

from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast_switch
from ansible_collections.linerate.fabric.plugins.module_utils import findings

HOSTS = {
    "node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}],
    "node2": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2"}],
    "node3": [{"device": "mlx5_0", "switch": "leaf2", "switch_port": "swp1"}],
}
SW_FABRIC = {"transport": "roce", "roce": {"no_drop_priority": 3, "ecn": {"enabled": True}}}


def port(rx=None, tx=None, drops=None, ecn=None):
    """One port of a switch_counters snapshot of a platform that splits pauses per priority (SONiC)."""
    return {
        "rx_pause": rx or {},
        "tx_pause": tx or {},
        "rx_pause_total": None,
        "tx_pause_total": None,
        "drops": drops or {},
        "ecn_marked": ecn,
        "cnp_tx": None,
        "per_priority": True,
        "missing": [],
    }


def test_switch_counters_and_lossless_state_exact():
    before = {
        "failed": False,
        "ports": {"swp1": port({"3": 5}, {"3": 1}, {"3": 0}, 10), "swp2": port({"3": 0}, {}, {"3": 2, "0": 0}, 0)},
        "lossless": {
            "swp1": {"headroom": [3], "pfc": [3], "pfcwd": [3], "storms": {"3": {"detected": 1, "stormed": False}}},
            "swp2": {"headroom": [3], "pfc": [3], "pfcwd": [3], "storms": {}},
        },
    }
    after = {
        "failed": False,
        "ports": {"swp1": port({"3": 25, "5": 4}, {"3": 1, "0": 1}, {"3": 0}, 30), "swp2": port({"3": 0}, {}, {"3": 9, "0": 100}, 0)},
        "lossless": {
            "swp1": {"headroom": [4], "pfc": [3], "pfcwd": [4], "missing": ["buffer pool"], "storms": {"3": {"detected": 3, "stormed": False}}},
            "swp2": {"headroom": [], "pfc": [], "pfcwd": [3], "storms": {"3": {"detected": 0, "stormed": True}}},
        },
    }
    rails = [{"device": "mlx5_0", "receiver": "node1", "senders": ["node2", "node3"]}]
    reads = {"leaf1": {"before": before, "after": after}, "leaf2": {"before": before, "after": {"failed": True, "msg": "leaf2: timed out"}}}
    out, unproven = incast_switch.switch_findings(reads, SW_FABRIC, HOSTS, {}, rails, findings.finding)
    node1 = {"node": "node1", "device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}
    node2 = {"node": "node2", "device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2"}
    assert out == [
        fault(
            "SWITCH_PAUSE_WRONG_PRIORITY",
            "error",
            "pfc",
            "leaf1 swp1 (towards node1 mlx5_0): pause frames +1 on "
            "priority 0, +4 on priority 5 during the benchmarks; only the no-drop priority 3 may pause (PFC enabled "
            "on another priority, or traffic classified into the wrong one)",
            **node1,
            evidence={"pause": {"0": 1, "3": 20, "5": 4}},
        ),
        fault(
            "SWITCH_DROPS_NO_DROP",
            "error",
            "pfc",
            "leaf1 swp2 (towards node2 mlx5_0): +7 packets of the no-drop "
            "priority 3 dropped during the benchmarks: the class is not lossless on this port (PFC off or not "
            "honoured on the path)",
            **node2,
            evidence={"drops": {"3": 7, "0": 100}},
        ),
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "leaf2: the switch's congestion counters could not be read (leaf2: timed out); pause frames, ECN marks and drops on its ports are not proven",
            switch="leaf2",
            counter="switch_counters",
        ),
        fault(
            "SWITCH_NO_HEADROOM",
            "error",
            "pfc",
            "leaf1 swp1 (towards node1 mlx5_0): no lossless headroom for the "
            "no-drop priority 3 (priorities with headroom: [4]): PFC is on but what is in flight when the pause goes "
            "out has nowhere to go, so the port drops under incast",
            **node1,
            evidence={"headroom": [4], "pfc": [3]},
        ),
        fault(
            "PFC_WATCHDOG_OFF",
            "error",
            "pfc",
            "leaf1 swp1 (towards node1 mlx5_0): the PFC watchdog does not guard "
            "the no-drop priority 3 (guarded: [4]): a NIC that keeps sending pause frames would stall this queue and "
            "spread back through the fabric",
            **node1,
            evidence={"pfcwd": [4]},
        ),
        fault(
            "PFC_STORM",
            "error",
            "pfc",
            "leaf1 swp1 (towards node1 mlx5_0): the PFC watchdog detected 2 pause "
            "storm(s) on the no-drop priority 3 during verification: node1 mlx5_0 keeps sending pause frames (the "
            "watchdog drops the queue meanwhile)",
            **node1,
            evidence={"detected": 2, "stormed": False},
        ),
        fault(
            "SWITCH_NO_HEADROOM",
            "error",
            "pfc",
            "leaf1 swp2 (towards node2 mlx5_0): no lossless headroom for the "
            "no-drop priority 3 (priorities with headroom: []): PFC is off but what is in flight when the pause goes "
            "out has nowhere to go, so the port drops under incast",
            **node2,
            evidence={"headroom": [], "pfc": []},
        ),
        fault(
            "PFC_STORM",
            "error",
            "pfc",
            "leaf1 swp2 (towards node2 mlx5_0): the PFC watchdog holds a stormed queue "
            "on the no-drop priority 3 during verification: node2 mlx5_0 keeps sending pause frames (the watchdog "
            "drops the queue meanwhile)",
            **node2,
            evidence={"detected": 0, "stormed": True},
        ),
    ]
    assert unproven == {"leaf1": ["buffer pool"]}
    assert rails == [
        {
            "device": "mlx5_0",
            "receiver": "node1",
            "senders": ["node2", "node3"],
            "switch_pause": {"node1": 20, "node2": 0, "node3": None},
            "switch_ecn_marked": {"node1": 20, "node2": 0, "node3": None},
            "switch_drops": {"node1": 0, "node2": 7, "node3": None},
        }
    ]


def test_an_uplink_storm_names_the_peer_switch_and_an_unread_switch_or_port_is_unproven():
    uplinks = {"leaf1": [{"port": "swp9", "peer": "spine1", "peer_port": "Ethernet1/1"}]}
    snap = {
        "failed": False,
        "ports": {"swp1": port()},
        "lossless": {"swp9": {"headroom": [3], "pfc": [3], "pfcwd": [3], "storms": {"3": {"detected": 0, "stormed": True}}}},
    }
    out, _ = incast_switch.switch_findings({"leaf1": {"before": snap, "after": snap}}, SW_FABRIC, {"node1": HOSTS["node1"]}, uplinks, [], findings.finding)
    where = {"switch": "leaf1", "switch_port": "swp9", "peer_switch": "spine1", "peer_port": "Ethernet1/1"}
    assert out == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "leaf1 swp9: the switch does not report this port's congestion counters; pause frames and drops on it are not proven",
            counter="switch_counters",
            **where,
        ),
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "spine1: the switch's congestion counters could not be read (no "
            "snapshot before the benchmarks); pause frames, ECN marks and drops on its ports are not proven",
            switch="spine1",
            counter="switch_counters",
        ),
        fault(
            "PFC_STORM",
            "error",
            "pfc",
            "leaf1 swp9 (towards spine1 Ethernet1/1): the PFC watchdog holds a stormed "
            "queue on the no-drop priority 3 during verification: the peer spine1 Ethernet1/1 keeps pausing this "
            "port (the watchdog drops the queue meanwhile)",
            evidence={"detected": 0, "stormed": True},
            **where,
        ),
    ]


def test_switch_side_defaults_to_roce_names_a_failed_first_snapshot_and_reads_the_intents_priority():
    fabric = {"roce": {"no_drop_priority": 4}}  # no transport: RoCE, the default
    good = {"failed": False, "ports": {"swp1": port(drops={"4": 0})}, "lossless": {"swp1": {"headroom": [3], "pfc": [4], "pfcwd": [4], "storms": {}}}}
    bad = {"failed": True, "msg": "leaf2: authentication failed"}
    reads = {"leaf1": {"before": good, "after": good}, "leaf2": {"before": bad, "after": good}}
    hosts = {"node1": HOSTS["node1"], "node3": HOSTS["node3"]}
    out, _ = incast_switch.switch_findings(reads, fabric, hosts, {}, [], findings.finding)
    assert out == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "leaf2: the switch's congestion counters could not be read (leaf2: "
            "authentication failed); pause frames, ECN marks and drops on its ports are not proven",
            switch="leaf2",
            counter="switch_counters",
        ),
        fault(
            "SWITCH_NO_HEADROOM",
            "error",
            "pfc",
            "leaf1 swp1 (towards node1 mlx5_0): no lossless headroom for the "
            "no-drop priority 4 (priorities with headroom: [3]): PFC is on but what is in flight when the pause goes "
            "out has nowhere to go, so the port drops under incast",
            node="node1",
            device="mlx5_0",
            switch="leaf1",
            switch_port="swp1",
            evidence={"headroom": [3], "pfc": [4]},
        ),
        # the lossless state is judged on the snapshot after alone: leaf2's is readable
        fault(
            "SWITCH_NO_HEADROOM",
            "error",
            "pfc",
            "leaf2 swp1 (towards node3 mlx5_0): no lossless headroom for the "
            "no-drop priority 4 (priorities with headroom: [3]): PFC is on but what is in flight when the pause goes "
            "out has nowhere to go, so the port drops under incast",
            node="node3",
            device="mlx5_0",
            switch="leaf2",
            switch_port="swp1",
            evidence={"headroom": [3], "pfc": [4]},
        ),
    ]


def test_one_storm_is_a_storm():
    snap = {
        "failed": False,
        "ports": {"swp1": port()},
        "lossless": {"swp1": {"headroom": [3], "pfc": [3], "pfcwd": [3], "storms": {"3": {"detected": 1, "stormed": False}}}},
    }
    before = dict(snap, lossless={"swp1": dict(snap["lossless"]["swp1"], storms={})})
    out, _ = incast_switch.lossless_findings({"leaf1": {"before": before, "after": snap}}, SW_FABRIC, {"node1": HOSTS["node1"]}, {}, findings.finding)
    assert [x["message"] for x in out] == [
        "leaf1 swp1 (towards node1 mlx5_0): the PFC watchdog detected 1 pause storm(s) on the no-drop priority 3 "
        "during verification: node1 mlx5_0 keeps sending pause frames (the watchdog drops the queue meanwhile)"
    ]


def test_switch_deltas_whole():
    before = {
        "ports": {
            "swp1": {
                "rx_pause": {"3": 1},
                "tx_pause": {},
                "rx_pause_total": 1,
                "tx_pause_total": None,
                "drops": {"3": 0},
                "ecn_marked": 5,
                "cnp_tx": 2,
                "per_priority": True,
                "missing": [],
            }
        }
    }
    after = {
        "ports": {
            "swp1": {
                "rx_pause": {"3": 4},
                "tx_pause": {},
                "rx_pause_total": 4,
                "tx_pause_total": None,
                "drops": {"3": 1},
                "ecn_marked": 9,
                "cnp_tx": 7,
                "per_priority": True,
                "missing": ["x"],
            },
            "swp2": {},
        }
    }  # not in the first snapshot: no delta
    assert incast_switch.switch_deltas(before, after) == {
        "swp1": {
            "rx_pause": {"3": 3},
            "tx_pause": {},
            "rx_pause_total": 3,
            "tx_pause_total": None,
            "drops": {"3": 1},
            "ecn_marked": 4,
            "cnp_tx": 5,
            "per_priority": True,
            "missing": ["x"],
        }
    }


def test_no_drops_leave_the_culprits_evidence_alone_and_an_integer_keyed_storm_counts():
    prior = [findings.finding("INCAST_NO_PAUSE", "x", node="node1", device="mlx5_0", check="incast")]
    snap = {"failed": False, "ports": {"swp1": port(drops={"3": 0})}}
    out, _ = incast_switch.switch_findings({"leaf1": {"before": snap, "after": snap}}, SW_FABRIC, {"node1": HOSTS["node1"]}, {}, [], findings.finding, prior)
    assert out == [] and "evidence" not in prior[0]
    stormy = {"failed": False, "ports": {}, "lossless": {"swp1": {"headroom": [3], "pfc": [3], "pfcwd": [3], "storms": {3: {"detected": 0, "stormed": True}}}}}
    out, _ = incast_switch.lossless_findings({"leaf1": {"before": {}, "after": stormy}}, SW_FABRIC, {"node1": HOSTS["node1"]}, {}, findings.finding)
    assert [x["code"] for x in out] == ["PFC_STORM"]
    # a failed read is switch_findings' to report: the lossless state of a failed snapshot is not judged
    failed = dict(stormy, failed=True, msg="timed out")
    assert incast_switch.lossless_findings({"leaf1": {"before": {}, "after": failed}}, SW_FABRIC, {"node1": HOSTS["node1"]}, {}, findings.finding) == ([], {})


def test_a_lossless_state_not_read_without_a_reason_is_unproven_as_not_read():
    snap = {"failed": False, "ports": {}, "lossless": None}
    out, unproven = incast_switch.lossless_findings({"leaf1": {"before": {}, "after": snap}}, SW_FABRIC, {"node1": HOSTS["node1"]}, {}, findings.finding)
    assert (out, unproven) == ([], {"leaf1": ["lossless headroom and PFC watchdog (not read)"]})
