"""Link health's switch side whole (module_utils/checks/links_switch.py): code, severity, layer, where,
evidence and message of what the switches count on their cabled ports - interface errors and flaps (merged
into the host's finding of the same port), unread switches and counters, their own optical modules - so a
changed word, threshold or argument fails (test_verify_ber_switch.py, test_verify_optics_switch.py and
test_verify_link_health_switch.py judge what each platform's driver reads)."""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import links_switch
from ansible_collections.linerate.fabric.plugins.module_utils import findings

ROCE = {"transport": "roce", "verify": {}}


def switch_health(code, severity, layer, message, node=None, device=None, switch=None, switch_port=None, **extra):
    return {
        "code": code,
        "severity": severity,
        "layer": layer,
        "check": "link_health",
        "node": node,
        "device": device,
        "switch": switch,
        "switch_port": switch_port,
        "message": message,
        **extra,
    }


def test_switch_errors_flaps_merge_and_unread_counters_exact():
    hosts = {
        "node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}],
        "node2": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2"}],
    }
    uplinks = {"leaf1": [{"port": "swp9", "peer": "spine1", "peer_port": "Ethernet1/1"}]}

    def errors(swp1_in, swp1_out, swp1_down, swp9_rx, swp9_down):
        return {
            "failed": False,
            "errors_msg": "",
            "errors": {
                "swp1": {
                    "errors": {"in-errors": swp1_in, "out-errors": swp1_out},
                    "link_down": swp1_down,
                    "link_down_unit": "transitions",
                },  # NVUE: carrier-transitions, down and up
                "swp2": {"errors": {"in-errors": 0}, "link_down": 0, "missing": ["link down events", "out-errors"]},
                "swp9": {"errors": {"RX_ERR": swp9_rx}, "link_down": swp9_down},
            },
        }

    reads = {
        "leaf1": {"before": errors(1, 0, 2, 5, 1), "after": errors(4, 2, 5, 2, 3)},
        "spine1": {"before": errors(0, 0, 0, 0, 0), "after": {"failed": False, "errors_msg": "spine1: show interfaces counters errors: timed out"}},
    }
    prior = [findings.finding("LINK_FLAP", "node1 mlx5_0: link_down_events_phy +1", node="node1", device="mlx5_0", check="link_health")]
    out, unproven, shown = links_switch.switch_link_findings(reads, ROCE, hosts, uplinks, findings.finding, prior)
    node1 = {"node": "node1", "device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}
    up = {"switch": "leaf1", "switch_port": "swp9", "peer_switch": "spine1", "peer_port": "Ethernet1/1"}
    assert out == [
        switch_health(
            "LINK_ERRORS",
            "error",
            "link",
            "leaf1 swp1 (towards node1 mlx5_0): in-errors +3, out-errors +2 "
            "counted by the switch over the verification window (threshold 0): the cable, optic or port "
            "corrupts frames",
            **node1,
            evidence={"counted_by": "switch", "switch": "leaf1", "switch_port": "swp1", "deltas": {"in-errors": 3, "out-errors": 2}, "threshold": 0},
        ),
        switch_health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "leaf1 swp2 (towards node2 mlx5_0): the switch does not report out-errors on this port; errors it would count are not proven",
            node="node2",
            device="mlx5_0",
            switch="leaf1",
            switch_port="swp2",
            counter="out-errors",
        ),
        switch_health(
            "LINK_ERRORS",
            "error",
            "link",
            "leaf1 swp9 (towards spine1 Ethernet1/1): RX_ERR +2 counted by "
            "the switch over the verification window (threshold 0): the cable, optic or port corrupts frames",
            **up,
            evidence={"counted_by": "switch", "switch": "leaf1", "switch_port": "swp9", "deltas": {"RX_ERR": 2}, "threshold": 0},
        ),
        switch_health(
            "LINK_FLAP",
            "error",
            "link",
            "leaf1 swp9 (towards spine1 Ethernet1/1): the switch saw the link go down 2 time(s) during verification (threshold 0)",
            **up,
            evidence={"counted_by": "switch", "switch": "leaf1", "switch_port": "swp9", "link_down": 2, "threshold": 0},
        ),
        switch_health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "spine1: the switch's interface error counters could not be "
            "read (spine1: show interfaces counters errors: timed out); errors and flaps counted by the "
            "switch on its ports are not proven",
            switch="spine1",
            counter="switch interface error counters",
        ),
    ]
    assert unproven == {"leaf1": ["link down events"]}
    assert shown == {("node1", "mlx5_0"): {"switch_errors": 5, "switch_flaps": 2}, ("node2", "mlx5_0"): {"switch_errors": 0, "switch_flaps": 0}}
    # the host already counted node1's flap: the switch's count joins that finding, not a second one
    assert prior[0]["message"] == "node1 mlx5_0: link_down_events_phy +1; the switch counted it too: leaf1 swp1 link down +2"
    assert prior[0]["evidence"] == {"switch_counted": {"counted_by": "switch", "switch": "leaf1", "switch_port": "swp1", "link_down": 2, "threshold": 0}}


def test_a_switch_without_its_first_snapshot_is_unproven():
    hosts = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}]}
    assert links_switch.switch_link_findings({"leaf1": {"after": {"failed": False, "errors": {}}}}, ROCE, hosts, {}, findings.finding) == (
        [
            switch_health(
                "COUNTER_MISSING",
                "warning",
                "hca",
                "leaf1: the switch's interface error counters could not be "
                "read (no snapshot before the benchmarks); errors and flaps counted by the switch on its ports "
                "are not proven",
                switch="leaf1",
                counter="switch interface error counters",
            )
        ],
        {},
        {},
    )


def test_an_unreadable_switch_does_not_stop_the_next_one_and_a_failure_without_words_is_named():
    hosts = {
        "node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}],
        "node2": [{"device": "mlx5_0", "switch": "leaf2", "switch_port": "swp1"}],
    }
    b = {"failed": False, "errors_msg": "", "errors": {"swp1": {"errors": {"in-errors": 0}, "link_down": 0}}}
    a = {"failed": False, "errors_msg": "", "errors": {"swp1": {"errors": {"in-errors": 3}, "link_down": 0}}}
    out, _, _ = links_switch.switch_link_findings(
        {"leaf1": {"before": {"failed": True}, "after": a}, "leaf2": {"before": b, "after": a}}, ROCE, hosts, {}, findings.finding
    )
    assert [(x["code"], x["switch"], x["message"]) for x in out] == [
        (
            "COUNTER_MISSING",
            "leaf1",
            "leaf1: the switch's interface error counters could not be read (the switch could "
            "not be read); errors and flaps counted by the switch on its ports are not proven",
        ),
        (
            "LINK_ERRORS",
            "leaf2",
            "leaf2 swp1 (towards node2 mlx5_0): in-errors +3 counted by the switch over the "
            "verification window (threshold 0): the cable, optic or port corrupts frames",
        ),
    ]


def test_the_switchs_own_modules_exact():
    from test_verify_optics_switch import judge, module

    out, unproven, _ = judge({"swp1": module(rx=[-14.0, 1.0, 1.0, 1.0]), "swp5": module(temp=71.0)})
    assert out == [
        switch_health(
            "OPTIC_RX_POWER_LOW",
            "error",
            "link",
            "leaf1 swp1 (towards node1 mlx5_0): optical module NVIDIA "
            "MMA4Z00-NS receives lane 0 -14 dBm, below -9.4 dBm (the module's low threshold -10.4 dBm + "
            "margin 1 dB, fabric.verify.optic_rx_power_margin_db): a dirty or damaged fibre, connector or "
            "far-end transmitter",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            evidence={
                "lanes": {0: -14.0},
                "rx_power_dbm": [-14.0, 1.0, 1.0, 1.0],
                "low_threshold_dbm": -10.4,
                "margin_db": 1.0,
                "module": "switch",
                "switch": "leaf1",
                "switch_port": "swp1",
            },
        ),
        switch_health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "leaf1 swp2 (towards node2 mlx5_0): the switch does not report this port's optical module; its Rx power and temperature are not proven",
            "node2",
            "mlx5_0",
            "leaf1",
            "swp2",
            counter="switch optical module",
        ),
        switch_health(
            "OPTIC_TEMP_HIGH",
            "error",
            "link",
            "leaf1 swp5 (towards spine1 Ethernet1/1): optical module "
            "MMA4Z00-NS at 71 C, above 70 C (its high threshold 75 C - margin 5 C, "
            "fabric.verify.optic_temp_margin_c): airflow or a failing module",
            switch="leaf1",
            switch_port="swp5",
            peer_switch="spine1",
            peer_port="Ethernet1/1",
            evidence={"temperature_c": 71.0, "high_threshold_c": 75.0, "margin_c": 5.0, "module": "switch", "switch": "leaf1", "switch_port": "swp5"},
        ),
    ]
    assert unproven == {}
    assert judge(None, "leaf1: show interfaces transceiver: timed out")[1] == {"leaf1": ["optical modules (leaf1: show interfaces transceiver: timed out)"]}


def test_the_switch_side_is_judged_on_roce_by_default_and_names_a_module_without_part_number():
    hosts = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}]}
    b = {"failed": False, "errors_msg": "", "errors": {"swp1": {"errors": {"in-errors": 0}, "link_down": 0}}}
    a = {"failed": False, "errors_msg": "", "errors": {"swp1": {"errors": {"in-errors": 2}, "link_down": 0}}}
    out, _, _ = links_switch.switch_link_findings({"leaf1": {"before": b, "after": a}}, {"verify": {}}, hosts, {}, findings.finding)
    assert [x["code"] for x in out] == ["LINK_ERRORS"]
    from test_verify_optics_switch import judge, module

    no_rx = module(part_number=None, ddm={"rx_power_dbm": None, "temperature_c": {"values": [40.0], "low": -5.0, "high": 75.0}})
    out, _, _ = judge({"swp1": no_rx, "swp2": module(), "swp5": module()})
    assert [x["message"] for x in out] == [
        "leaf1 swp1 (towards node1 mlx5_0): the optical module (?) reports no Rx power or no alarm thresholds for it (the switch); it is not proven"
    ]


def test_no_read_at_the_start_still_judges_the_rates_of_every_port_after_the_first():
    from test_verify_ber_switch import ERRORS, FABRIC, HOSTS, healthy, port

    after = healthy()
    after["swp2"] = port(pre_fec_ber=1e-3)  # the first port (swp1) is healthy: the judging goes on past it
    out, _, _ = links_switch.switch_link_findings(
        {
            "leaf1": {
                "before": {"failed": False, "errors": ERRORS, "errors_msg": "", "ber": None, "ber_msg": "timed out"},
                "after": {"failed": False, "errors": ERRORS, "errors_msg": "", "ber": after, "ber_msg": ""},
            }
        },
        FABRIC,
        HOSTS,
        {},
        findings.finding,
    )
    assert [(f["code"], f["switch_port"]) for f in out] == [("LINK_BER_HIGH", "swp2")]
