"""The incast phase's findings whole (module_utils/checks/incast.py): code, severity, layer, both ends,
evidence and message, for the host counters (ethtool -S) and the RDMA hw_counters (the switches' own
counters and lossless state: checks/test_incast_switch.py). The other incast test files check which
findings come out; these check each finding's every field, so a changed word, threshold or argument fails."""

from checks.test_incast import CABLING, FABRIC, phase
import test_verify_incast_hw as hw

from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast
from ansible_collections.linerate.fabric.plugins.module_utils import findings


def fault(code, severity, layer, message, node=None, device=None, switch=None, switch_port=None, **extra):
    return {
        "code": code,
        "severity": severity,
        "layer": layer,
        "check": "incast",
        "node": node,
        "device": device,
        "switch": switch,
        "switch_port": switch_port,
        "message": message,
        **extra,
    }


# ---------------------------------------------------------------- host counters (ethtool -S)


def test_no_pause_wrong_priority_and_a_single_discard_exact():
    f, rails = incast.incast_findings(
        phase(pauses={("node2", "mlx5_0"): 0}, extra={("node3", "mlx5_1"): {"tx_prio5_pause": 7, "rx_prio0_pause": 2, "rx_prio3_discards": 1}}), FABRIC, CABLING
    )
    assert f == [
        fault(
            "INCAST_NO_PAUSE",
            "error",
            "pfc",
            "node2 mlx5_0 -> node1: no PFC pause on priority 3 under incast of 3 although the intent declares it lossless",
            "node2",
            "mlx5_0",
            "leaf1",
            "swp2",
            evidence={"k": 3, "flows": {"node2": 128.0, "node3": 128.0, "node4": 128.0}, "pause": {"node1": 0, "node2": 0, "node3": 100, "node4": 100}},
        ),
        fault(
            "INCAST_PAUSE_WRONG_PRIORITY",
            "error",
            "pfc",
            "node3 mlx5_1: pause frames on rx_prio0_pause +2, tx_prio5_pause +7; only the no-drop priority 3 may pause",
            "node3",
            "mlx5_1",
            "leaf2",
            "swp3",
            evidence={"deltas": {"rx_prio0_pause": 2, "tx_prio5_pause": 7}},
        ),
        fault("INCAST_DROPS", "error", "pfc", "node3 mlx5_1: rx_prio3_discards +1 on the no-drop priority under incast", "node3", "mlx5_1", "leaf2", "swp3"),
    ]
    assert rails[1]["discards"] == {"node1": 0, "node2": 0, "node3": 1, "node4": 0}
    assert rails[1]["pause"]["node3"] == 100


def test_every_flow_failing_blames_the_receiver_listing_each_flow_and_pause():
    f, _ = incast.incast_findings(phase(gbps={("node2", "mlx5_0"): 40.0, ("node3", "mlx5_0"): 50.5}, pauses={("node4", "mlx5_0"): 0}), FABRIC, CABLING)
    assert f == [
        fault(
            "INCAST_GOODPUT_LOW",
            "error",
            "pfc",
            "every incast flow into node1 mlx5_0 failed the lossless proof (node2 40.0, node3 50.5, node4 "
            "128.0 Gb/s, fair share threshold 120.0; pauses on priority 3: node2 100, node3 100, node4 0)",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            evidence={"k": 3, "flows": {"node2": 40.0, "node3": 50.5, "node4": 128.0}, "pause": {"node1": 0, "node2": 100, "node3": 100, "node4": 0}},
        )
    ]


def test_a_low_flow_and_a_failed_flow_exact():
    p = phase(gbps={("node2", "mlx5_1"): 60.25})
    p["node3"]["results"][1] = {"device": "mlx5_1", "gbps": None, "error": "ib_write_bw: Couldn't connect to node1"}
    f, _ = incast.incast_findings(p, FABRIC, CABLING)
    assert f == [
        fault("INCAST_FAILED", "error", "host", "node3 mlx5_1 -> node1: ib_write_bw: Couldn't connect to node1", "node3", "mlx5_1", "leaf2", "swp3"),
        fault(
            "INCAST_GOODPUT_LOW",
            "error",
            "pfc",
            "node2 mlx5_1 -> node1: 60.2 Gb/s under incast of 3 (threshold 120.0 Gb/s); pauses on priority 3: 100",
            "node2",
            "mlx5_1",
            "leaf2",
            "swp2",
            evidence={"k": 3, "flows": {"node2": 60.25, "node3": None, "node4": 128.0}, "pause": {"node1": 0, "node2": 100, "node3": 100, "node4": 100}},
        ),
    ]


def test_an_unreadable_listing_and_a_missing_counter_are_warnings_naming_them():
    p = phase(drop=[("node4", "mlx5_0")])
    p["node2"]["counters"]["mlx5_1"] = ["", "NIC statistics:\n"]
    f, rails = incast.incast_findings(p, FABRIC, CABLING)
    assert [x for x in f if x["code"] == "COUNTER_MISSING"] == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node4 mlx5_0: the driver does not expose rx_prio3_pause; PFC pauses on priority 3 cannot be proven",
            "node4",
            "mlx5_0",
            "leaf1",
            "swp4",
            counter="rx_prio3_pause",
        ),
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node4 mlx5_0: the driver does not expose tx_prio3_pause; PFC pauses on priority 3 cannot be proven",
            "node4",
            "mlx5_0",
            "leaf1",
            "swp4",
            counter="tx_prio3_pause",
        ),
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node2 mlx5_1: ethtool -S unreadable (ethtool -S: no output); PFC under incast cannot be proven on this port",
            "node2",
            "mlx5_1",
            "leaf2",
            "swp2",
        ),
    ]
    assert rails[0]["missing"] == ["node4:rx_prio3_pause", "node4:tx_prio3_pause"]


# ---------------------------------------------------------------- RDMA hw_counters


def test_hw_counters_of_another_link_or_none_at_all_and_receiver_loss_exact():
    after = hw.healthy()
    after["node1"].update(out_of_sequence=4, packet_seq_err=1)
    f, rail = hw.run(after, texts={"node2": [hw.stat("mlx5_1"), hw.stat("mlx5_1")]})
    assert f == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node2 mlx5_0: RDMA hw_counters unreadable (no link mlx5_0/1 in the "
            "output (has: mlx5_1/1)); ECN marking, CNPs and loss under incast are not proven on this port",
            "node2",
            "mlx5_0",
            "leaf1",
            "swp2",
            counter="hw_counters",
        ),
        fault(
            "INCAST_OUT_OF_SEQUENCE",
            "error",
            "pfc",
            "node1 mlx5_0: out_of_sequence +4, packet_seq_err +1 under "
            "incast: packets of the no-drop priority 3 were lost on the way in (senders' local_ack_timeout_err: "
            "{'node3': 0})",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            evidence={"deltas": {"out_of_sequence": 4, "packet_seq_err": 1}, "local_ack_timeout_err": {"node3": 0}},
        ),
    ]
    assert rail["out_of_sequence"] == {"node1": 4, "node3": 0}
    phase_ = {n: {"hw": {"mlx5_0": [hw.stat(), hw.stat(**hw.healthy().get(n, {}))]}} for n in hw.NODES}
    del phase_["node3"]["hw"]
    rails = [{"device": "mlx5_0", "receiver": "node1", "senders": ["node2", "node3"], "k": 2, "flows": {"node2": 190.0, "node3": 188.0}, "missing": []}]
    assert incast.hw_findings(phase_, hw.FABRIC, hw.CABLING, rails, findings.finding, cabling._where) == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node3 mlx5_0: RDMA hw_counters unreadable (rdma statistic: no output); ECN marking, CNPs and loss under incast are not proven on this port",
            "node3",
            "mlx5_0",
            "leaf1",
            "swp3",
            counter="hw_counters",
        )
    ]
    assert incast._link("", "mlx5_0") == (None, "rdma statistic: no output")
    assert incast._link("link mlx5_0/1 np_cnp_sent 1\n", "mlx5_0", 2) == (None, "no link mlx5_0/2 in the output (has: mlx5_0/1)")


def test_marks_without_cnps_and_cnps_not_handled_exact():
    f, _ = hw.run({"node1": {"np_ecn_marked_roce_packets": 900}, "node2": {"rp_cnp_handled": 450}})
    assert f == [
        fault(
            "INCAST_ECN_NO_CNP",
            "error",
            "pfc",
            "node1 mlx5_0: np_ecn_marked_roce_packets +900 but "
            "np_cnp_sent +0: the receiver does not answer ECN marks with CNPs (DCQCN notification point off?)",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            evidence={"marked": 900, "cnp_sent": 0},
        )
    ]
    f, _ = hw.run({"node1": {"np_ecn_marked_roce_packets": 900, "np_cnp_sent": 800}, "node2": {"rp_cnp_handled": 450}})
    assert f == [
        fault(
            "INCAST_ECN_NO_CNP",
            "error",
            "pfc",
            "node3 mlx5_0: rp_cnp_handled +0 although node1 sent 800 "
            "CNPs: this sender does not slow down on CNPs (DCQCN reaction point off, or the CNPs do not "
            "reach it)",
            "node3",
            "mlx5_0",
            "leaf1",
            "swp3",
            evidence={"cnp_sent": 800, "cnp_handled": 0},
        )
    ]


# ---------------------------------------------------------------- thresholds and defaults


def test_a_sender_without_rp_cnp_handled_is_unproven_naming_what():
    f, rail = hw.run(drop=("rp_cnp_handled",))
    assert f == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            f"{n} mlx5_0: the driver/firmware does not expose rp_cnp_handled; the senders slowing down on CNPs under incast is not proven",
            n,
            "mlx5_0",
            "leaf1",
            port,
            counter="rp_cnp_handled",
        )
        for n, port in (("node2", "swp2"), ("node3", "swp3"))
    ]
    assert rail["missing"] == ["node2:rp_cnp_handled", "node3:rp_cnp_handled"]


def test_a_flow_ran_alone_above_one_and_a_half_fair_shares_from_two_flows_on():
    # k=3 at 400 Gb/s: 200 Gb/s is exactly 1.5 fair shares, still a shared flow
    assert incast.incast_findings(phase(gbps={("node2", "mlx5_0"): 200.0}), FABRIC, CABLING)[0] == []
    p = phase(gbps={("node2", "mlx5_0"): 300.5, ("node3", "mlx5_0"): 190.0, ("node3", "mlx5_1"): 190.0, ("node2", "mlx5_1"): 190.0})
    del p["node4"]
    for n in p:
        p[n]["senders"] = ["node2", "node3"]
    f, rails = incast.incast_findings(p, FABRIC, CABLING)
    assert f == [
        fault(
            "INCAST_INCONCLUSIVE",
            "warning",
            "pfc",
            "node2 mlx5_0 -> node1: 300.5 Gb/s, above the fair "
            "share of 2 flows - it ran alone (the others had not started or had finished); its port's "
            "lossless class is not proven",
            "node2",
            "mlx5_0",
            "leaf1",
            "swp2",
            evidence={"k": 2, "gbps": 300.5},
        )
    ]
    assert [r.get("inconclusive") for r in rails] == [["node2"], None]


def test_each_rotation_rail_says_whether_it_passed():
    from test_verify_incast_rotation import ports, run_rotation

    nodes = ["n0", "n1", "n2", "n3"]
    cabled = ports(nodes)
    rounds, log = run_rotation(nodes, cabled, bad={("n3", "mlx5_1"): 20.0})
    f, rails, _ = incast.incast_rotation(log, FABRIC, cabling.cabling_index(cabled), nodes)
    failed = sorted((r["receiver"], r["device"]) for r in rails if r["ok"] is False)
    assert failed == sorted((g["receiver"], "mlx5_1") for r in rounds for g in r if "n3" in g["senders"])
    assert all(r["ok"] is True for r in rails if (r["receiver"], r["device"]) not in failed)


def test_the_intents_no_drop_priority_or_three_by_default():
    four = dict(FABRIC, roce=dict(FABRIC["roce"], no_drop_priority=4))
    rails_ = ("mlx5_0", "mlx5_1")
    no_prio3 = {(n, d): 0 for n in ("node1", "node2", "node3", "node4") for d in rails_}
    on4 = {(n, d): {"rx_prio4_pause": 100} for n in ("node2", "node3", "node4") for d in rails_}
    f, rails = incast.incast_findings(phase(pauses=no_prio3, extra=on4), four, CABLING)
    assert f == [] and rails[0]["pause"] == {"node1": 0, "node2": 100, "node3": 100, "node4": 100}
    no_roce = {k: v for k, v in FABRIC.items() if k != "roce"}
    f, rails = incast.incast_findings(phase(), no_roce, CABLING)
    assert f == [] and rails[0]["pause"] == {"node1": 0, "node2": 100, "node3": 100, "node4": 100}


def test_a_node_without_counters_for_a_rail_is_unreadable_with_no_output():
    p = phase()
    del p["node3"]["counters"]["mlx5_1"]
    assert incast.incast_findings(p, FABRIC, CABLING)[0] == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node3 mlx5_1: ethtool -S unreadable (ethtool -S: no output); PFC under incast cannot be proven on this port",
            "node3",
            "mlx5_1",
            "leaf2",
            "swp3",
        )
    ]


def test_one_unreadable_side_of_the_hw_counters_and_ecn_on_by_default():
    f, _ = hw.run(texts={"node2": [hw.stat(), ""]}, fabric={"transport": "roce"}, after={"node2": {"rp_cnp_handled": 1}, "node3": {"rp_cnp_handled": 1}})
    assert f == [
        fault(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node2 mlx5_0: RDMA hw_counters unreadable (rdma statistic: no output); ECN marking, CNPs and loss under incast are not proven on this port",
            "node2",
            "mlx5_0",
            "leaf1",
            "swp2",
            counter="hw_counters",
        ),
        fault(
            "INCAST_NO_ECN",
            "error",
            "pfc",
            "node1 mlx5_0: no ECN mark and no CNP under incast of 2 although the "
            "intent enables ECN (fabric.roce.ecn): the switch port leaf1 swp1 towards the receiver does not mark",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            evidence={"ecn_marked": 0, "cnp_sent": 0},
        ),
    ]


def test_groups_come_in_round_order_and_a_flow_that_ran_alone_proves_nothing():
    log = {
        "a": [{"round": 1, "receiver": "a"}],
        "b": [{"round": 0, "receiver": "b"}, {"round": 1, "receiver": "a"}],
        "c": [{"round": 0, "receiver": "b"}, "junk", {"round": 2}],
    }
    assert incast.incast_groups(log) == [
        (0, "b", {"b": {"round": 0, "receiver": "b"}, "c": {"round": 0, "receiver": "b"}}),
        (1, "a", {"a": {"round": 1, "receiver": "a"}, "b": {"round": 1, "receiver": "a"}}),
    ]
    from test_verify_incast_rotation import FABRIC as ROTATION_FABRIC, ports, run_rotation

    nodes = ["n0", "n1", "n2"]
    cabled = ports(nodes)
    _, log = run_rotation(nodes, cabled, bad={("n1", "mlx5_0"): 301.0})  # above 1.5 fair shares of 2 flows
    f, _, cov = incast.incast_rotation(log, ROTATION_FABRIC, cabling.cabling_index(cabled), nodes)
    assert [(x["code"], x["node"], x["receiver"]) for x in f] == [("INCAST_INCONCLUSIVE", "n1", "n0"), ("INCAST_INCONCLUSIVE", "n1", "n2")]
    assert cov["ports"] == [4, 6] and cov["unproven_ports"] == ["n0 mlx5_0", "n2 mlx5_0"]


# ---------------------------------------------------------------- seed-47 survivors


def test_infiniband_reads_the_counters_it_has_past_a_node_without_them():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
    from checks.test_incast import INTENT

    p = phase()
    del p["node1"]["counters"]
    for n in p:
        p[n]["devices"] = ["mlx5_0"]
    f, rails = incast.incast_findings(p, published(dict(INTENT, transport="infiniband")), CABLING)
    assert f == [] and rails[0]["pause"] == {"node2": 100, "node3": 100, "node4": 100}


def test_a_flow_with_an_error_or_no_result_failed_and_tx_pauses_count():
    p = phase(pauses={("node2", "mlx5_0"): 0}, extra={("node2", "mlx5_0"): {"tx_prio3_pause": 7}})
    p["node3"]["results"][0]["error"] = "ib_write_bw: timeout"  # with a figure: still failed
    p["node4"]["results"] = [r for r in p["node4"]["results"] if r["device"] != "mlx5_0"]
    f, rails = incast.incast_findings(p, FABRIC, CABLING)
    assert f == [
        fault("INCAST_FAILED", "error", "host", "node3 mlx5_0 -> node1: ib_write_bw: timeout", "node3", "mlx5_0", "leaf1", "swp3"),
        fault("INCAST_FAILED", "error", "host", "node4 mlx5_0 -> node1: no result", "node4", "mlx5_0", "leaf1", "swp4"),
    ]
    assert rails[0]["pause"] == {"node1": 0, "node2": 7, "node3": 100, "node4": 100}


def test_the_receivers_missing_ecn_counter_and_loss_on_the_intents_priority():
    f, _ = hw.run(drop=("np_ecn_marked_roce_packets",))
    assert [x["message"] for x in f] == [
        "node1 mlx5_0: the driver/firmware does not expose np_ecn_marked_roce_packets; ECN marking by the switch under incast is not proven"
    ]
    after = hw.healthy()
    after["node1"].update(out_of_sequence=2)
    f, _ = hw.run(after, fabric=dict(hw.FABRIC, roce=dict(hw.FABRIC["roce"], no_drop_priority=4)))
    assert [x["message"] for x in f] == [
        "node1 mlx5_0: out_of_sequence +2 under incast: packets of the no-drop priority 4 were lost on the way in "
        "(senders' local_ack_timeout_err: {'node2': 0, 'node3': 0})"
    ]
