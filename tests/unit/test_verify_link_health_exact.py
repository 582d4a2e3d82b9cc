"""Link health's findings whole (module_utils/checks/links.py): code, severity, layer, where, evidence and
message of each, host side (ethtool -S / perfquery, mlxlink, the optical module); the switch side's are in
checks/test_links_switch.py. The other link-health test files check which findings come out; these check
every field of each."""

import pytest

from parser_fixtures import fixture

from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import links as linkcheck
from ansible_collections.linerate.fabric.plugins.module_utils import findings
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import linkhealth
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError

ROCE = {"transport": "roce", "verify": {}}
CABLING = cabling.cabling_index(
    {
        "node1": [
            {"device": "mlx5_0", "netdev": "eth1", "switch": "leaf1", "switch_port": "swp1"},
            {"device": "mlx5_1", "netdev": "eth2", "switch": "leaf2", "switch_port": "swp1"},
        ],
        "node2": [{"device": "mlx5_0", "netdev": None, "switch": None, "switch_port": None}],
    }
)
MLXLINK = fixture("counters", "mlxlink_bf3_mft4.30.txt")
NAMES = (
    "rx_packets",
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "rx_fec_uncorrectable_phy",
    "link_down_events_phy",
    "tx_prio3_pause",
    "tx_prio3_pause_duration",
)


def ethtool(drop=(), **c):
    return "NIC statistics:\n" + "".join(f"     {n}: {c.get(n, 0)}\n" for n in NAMES if n not in drop)


def snap(devices, phy, mlx=None, phy_err=None, mlx_err=None):
    return {
        "devices": list(devices),
        "phy": phy,
        "phy_err": phy_err or [""] * len(devices),
        "mlxlink": mlx if mlx is not None else [MLXLINK] * len(devices),
        "mlxlink_err": mlx_err or [""] * len(devices),
    }


def run(data, fabric=ROCE):
    return linkcheck.link_health_findings(data, fabric, CABLING, findings.finding, cabling._where)


def health(code, severity, layer, message, node, device, switch, switch_port, netdev, **extra):
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
        "netdev": netdev,
        **extra,
    }


NODE1_0 = {"node": "node1", "device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1", "netdev": "eth1"}
NODE1_1 = {"node": "node1", "device": "mlx5_1", "switch": "leaf2", "switch_port": "swp1", "netdev": "eth2"}


# ---------------------------------------------------------------- host side: counters over the window


def test_errors_a_storm_and_flaps_are_errors_a_missing_flap_counter_a_warning():
    data = {
        "node1": {
            "transport": "roce",
            "start": snap(["mlx5_0", "mlx5_1"], [ethtool(rx_crc_errors_phy=2, link_down_events_phy=1, tx_prio3_pause=10), ethtool()]),
            "end": snap(
                ["mlx5_0", "mlx5_1"],
                [
                    ethtool(rx_crc_errors_phy=9, rx_fec_uncorrectable_phy=1, link_down_events_phy=3, tx_prio3_pause=200011, tx_prio3_pause_duration=5000),
                    ethtool(drop=("link_down_events_phy",)),
                ],
            ),
        }
    }
    f, rows = run(data)
    assert f == [
        health(
            "LINK_ERRORS",
            "error",
            "link",
            "node1 mlx5_0: rx_crc_errors_phy +7, rx_fec_uncorrectable_phy +1 over the verification window (threshold 0) (cabled to leaf1 swp1)",
            **NODE1_0,
            evidence={"deltas": {"rx_crc_errors_phy": 7, "rx_fec_uncorrectable_phy": 1}, "threshold": 0},
        ),
        health(
            "PFC_STORM",
            "error",
            "pfc",
            "node1 mlx5_0: tx_prio3_pause +200001 over the verification window (more "
            "than 100000): the NIC keeps sending pause frames (a stuck receive path: a PFC storm) (cabled to leaf1 "
            "swp1)",
            **NODE1_0,
            evidence={"deltas": {"tx_prio3_pause": 200001}, "pause_duration_us": {"tx_prio3_pause_duration": 5000}, "threshold": 100000},
        ),
        health(
            "LINK_FLAP",
            "error",
            "link",
            "node1 mlx5_0: link_down_events_phy +2: the link went down and came back during verification (threshold 0) (cabled to leaf1 swp1)",
            **NODE1_0,
            evidence={"link_down_events_phy": 2, "threshold": 0},
        ),
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_1: ethtool -S does not expose link_down_events_phy; link flaps counted by it are not proven on this port",
            **NODE1_1,
            counter="link_down_events_phy",
        ),
    ]
    copper = "not judged: Copper cable, passive, unequalized"
    assert rows == [
        {
            "node": "node1",
            "device": "mlx5_0",
            "tool": "ethtool -S",
            "errors": 8,
            "flaps": 2,
            "effective_ber": 1.5e-254,
            "raw_ber": 1.5e-254,
            "fec": "Standard RS-FEC - RS(528,514)",
            "missing": [],
            "optics": copper,
            "switch": "leaf1",
            "switch_port": "swp1",
            "netdev": "eth1",
            "ok": False,
        },
        {
            "node": "node1",
            "device": "mlx5_1",
            "tool": "ethtool -S",
            "errors": 0,
            "flaps": None,
            "effective_ber": 1.5e-254,
            "raw_ber": 1.5e-254,
            "fec": "Standard RS-FEC - RS(528,514)",
            "missing": ["link_down_events_phy"],
            "optics": copper,
            "switch": "leaf2",
            "switch_port": "swp1",
            "netdev": "eth2",
            "ok": True,
        },
    ]
    assert linkcheck.check(f, rows)["detail"] == "1/2 ports without physical errors, flaps or high BER over the window; 1 warning(s)"


def test_what_cannot_be_read_is_a_warning_naming_why_and_a_high_ber_an_error():
    old = fixture("counters", "mlxlink_cx4_e_forum2022.txt")  # no BER lines, no Module Info
    bad = (
        MLXLINK.replace("Effective Physical BER             : 15E-255", "Effective Physical BER             : 3E-9")
        .replace("Recommendation                     : No issue was observed", "Recommendation                     : Check the cable")
        .replace("Status Opcode                      : 0", "Status Opcode                      : 1026")
    )
    data = {
        "node1": {
            "start": snap(["mlx5_0", "mlx5_1"], ["", ethtool()], phy_err=["ethtool: no such device", ""]),
            "end": snap(["mlx5_0", "mlx5_1"], ["", ethtool(drop=("rx_crc_errors_phy",))], mlx=[old, bad]),
        },
        "node2": {"start": snap(["mlx5_0"], [ethtool()]), "end": snap(["mlx5_0"], [ethtool()], mlx=[""], mlx_err=["mlxlink: -E- Device not found\n"])},
    }
    f, rows = run(data)
    assert f == [
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_0: ethtool -S unreadable (ethtool: no such device); "
            "physical errors and link flaps over the verification window are not proven on this port",
            **NODE1_0,
            counter="ethtool -S",
        ),
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_0: mlxlink prints no Effective Physical BER (older MFT or firmware); the link's bit error rate is not proven",
            **NODE1_0,
            counter="Effective Physical BER",
        ),
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_0: mlxlink prints no Raw Physical BER (older MFT or firmware); the link's bit error rate is not proven",
            **NODE1_0,
            counter="Raw Physical BER",
        ),
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_0: mlxlink printed no Module Info; the module's Rx power and temperature are not proven",
            **NODE1_0,
            counter="Module Info",
        ),
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_1: ethtool -S does not expose rx_crc_errors_phy; physical errors counted by it are not proven on this port",
            **NODE1_1,
            counter="rx_crc_errors_phy",
        ),
        health(
            "LINK_BER_HIGH",
            "error",
            "link",
            "node1 mlx5_1: Effective Physical BER 3.00e-09 above 1e-12 (fabric.verify.effective_ber_max); mlxlink: Check the cable (cabled to leaf2 swp1)",
            **NODE1_1,
            evidence={"effective_ber": 3e-09, "threshold": 1e-12, "fec": "Standard RS-FEC - RS(528,514)"},
        ),
        health(
            "MLXLINK_RECOMMENDATION",
            "warning",
            "link",
            "node1 mlx5_1: mlxlink recommends: Check the cable (Status Opcode 1026) (cabled to leaf2 swp1)",
            **NODE1_1,
            evidence={"recommendation": "Check the cable", "status_opcode": 1026},
        ),
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node2 mlx5_0: mlxlink unreadable (mlxlink: -E- Device not found); the link's BER, FEC and module are not proven",
            "node2",
            "mlx5_0",
            None,
            None,
            None,
            counter="mlxlink",
        ),
    ]
    assert [(r["device"], r["missing"], r["ok"]) for r in rows] == [
        ("mlx5_0", ["Effective Physical BER", "Raw Physical BER"], True),
        ("mlx5_1", ["rx_crc_errors_phy"], False),
        ("mlx5_0", [], True),
    ]
    assert rows[0]["optics"] == "not read"


def test_infiniband_from_the_fabric_reads_perfquery_and_a_missing_snapshot_is_named():
    pq = fixture("counters", "perfquery_extended_pcx.txt")
    worse = pq.replace("SymbolErrorCounter:..............0", "SymbolErrorCounter:..............12").replace(
        "LinkDownedCounter:...............0", "LinkDownedCounter:...............1"
    )
    data = {"node1": {"start": snap(["mlx5_0"], [pq]), "end": snap(["mlx5_0"], [worse])}, "node2": {"start": {}, "end": snap(["mlx5_0"], [pq])}}
    f, rows = run(data, {"transport": "infiniband", "verify": {"link_errors_max": 10}})
    assert f == [
        health(
            "LINK_ERRORS",
            "error",
            "link",
            "node1 mlx5_0: SymbolErrorCounter +12 over the verification window (threshold 10) (cabled to leaf1 swp1)",
            **NODE1_0,
            evidence={"deltas": {"SymbolErrorCounter": 12}, "threshold": 10},
        ),
        health(
            "LINK_FLAP",
            "error",
            "link",
            "node1 mlx5_0: LinkDownedCounter +1: the link went down and came back during verification (threshold 0) (cabled to leaf1 swp1)",
            **NODE1_0,
            evidence={"LinkDownedCounter": 1, "threshold": 0},
        ),
        {
            "code": "COUNTER_MISSING",
            "severity": "warning",
            "layer": "hca",
            "check": "link_health",
            "node": "node2",
            "device": "mlx5_0",
            "switch": None,
            "switch_port": None,
            "message": "node2 mlx5_0: the link health snapshot at the start of verification is missing; physical errors "
            "and flaps over the window are not proven",
        },
    ]
    assert (rows[0]["tool"], rows[0]["errors"], rows[0]["flaps"]) == ("perfquery", 12, 1)


# ---------------------------------------------------------------- the optical module

DDM = (
    "Temperature [C]                    : {temp}\n"
    "Voltage [mV]                       : 3261.2 [2970..3630]\n"
    "Bias Current [mA]                  : 8.380,8.380,8.380,8.380 [2..15]\n"
    "Rx Power Current [dBm]             : {rx}\n"
    "Tx Power Current [dBm]             : 1.562,1.427,1.559,1.761 [-8.508..5]\n"
)


def optical(rx, temp):
    return MLXLINK.replace("Temperature [C]                    : N/A\n", DDM.format(temp=temp, rx=rx)).replace(
        "Copper cable, passive, unequalized", "Optical Module (separated)"
    )


def test_module_info_is_read_whole():
    assert linkhealth.parse_mlxlink(optical("1.886,-11.2,2.281,-12.5 [-10.41..6]", "74.5 [-5..75]"))["module"] == {
        "identifier": "QSFP28",
        "cable_technology": "Optical Module (separated)",
        "cable_type": None,
        "vendor": "FS",
        "part_number": "Q28-PC03",
        "serial": None,
        "optical": True,
        "ddm": {
            "temperature_c": {"values": [74.5], "low": -5.0, "high": 75.0},
            "voltage_mv": {"values": [3261.2], "low": 2970.0, "high": 3630.0},
            "bias_ma": {"values": [8.38, 8.38, 8.38, 8.38], "low": 2.0, "high": 15.0},
            "rx_power_dbm": {"values": [1.886, -11.2, 2.281, -12.5], "low": -10.41, "high": 6.0},
            "tx_power_dbm": {"values": [1.562, 1.427, 1.559, 1.761], "low": -8.508, "high": 5.0},
        },
    }


def test_low_rx_power_and_a_hot_module_exact_with_the_margins():
    text = optical("1.886,-11.2,2.281,-12.5 [-10.41..6]", "74.5 [-5..75]")
    f, rows = run(
        {"node1": {"start": snap(["mlx5_0"], [ethtool()]), "end": snap(["mlx5_0"], [ethtool()], mlx=[text])}},
        {"transport": "roce", "verify": {"optic_rx_power_margin_db": 0.5, "optic_temp_margin_c": 1}},
    )
    assert f == [
        health(
            "OPTIC_RX_POWER_LOW",
            "error",
            "link",
            "node1 mlx5_0: optical module FS Q28-PC03 receives lane 1 -11.2 "
            "dBm, lane 3 -12.5 dBm, below -9.91 dBm (the module's low threshold -10.41 dBm + margin 0.5 dB, "
            "fabric.verify.optic_rx_power_margin_db): a dirty or damaged fibre, connector or far-end transmitter "
            "(cabled to leaf1 swp1)",
            **NODE1_0,
            evidence={"lanes": {1: -11.2, 3: -12.5}, "rx_power_dbm": [1.886, -11.2, 2.281, -12.5], "low_threshold_dbm": -10.41, "margin_db": 0.5},
        ),
        health(
            "OPTIC_TEMP_HIGH",
            "error",
            "link",
            "node1 mlx5_0: optical module Q28-PC03 at 74.5 C, above 74 C (its "
            "high threshold 75 C - margin 1 C, fabric.verify.optic_temp_margin_c): airflow or a failing module "
            "(cabled to leaf1 swp1)",
            **NODE1_0,
            evidence={"temperature_c": 74.5, "high_threshold_c": 75.0, "margin_c": 1.0},
        ),
    ]
    assert rows[0]["optics"] == {"rx_power_dbm": [1.886, -11.2, 2.281, -12.5], "temperature_c": 74.5}


def test_an_optical_module_without_readings_is_unproven_not_passed():
    text = optical("N/A", "N/A")
    f, rows = run({"node1": {"start": snap(["mlx5_0"], [ethtool()]), "end": snap(["mlx5_0"], [ethtool()], mlx=[text])}})
    assert f == [
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_0: the optical module (Q28-PC03) reports no Rx power or no alarm thresholds for it (mlxlink); it is not proven",
            **NODE1_0,
            counter="Module Info Rx power",
        ),
        health(
            "COUNTER_MISSING",
            "warning",
            "hca",
            "node1 mlx5_0: the optical module (Q28-PC03) reports no temperature or no alarm thresholds for it (mlxlink); it is not proven",
            **NODE1_0,
            counter="Module Info temperature",
        ),
    ]
    assert rows[0]["optics"] == {"rx_power_dbm": None, "temperature_c": None} and rows[0]["ok"]


# ---------------------------------------------------------------- edges (mutation testing)


def test_a_port_with_no_phy_read_at_either_end_says_no_output():
    for start, end in (([], []), ([ethtool()], [""])):
        data = {"node1": {"start": snap(["mlx5_0"], start), "end": snap(["mlx5_0"], end)}}
        assert run(data)[0] == [
            health(
                "COUNTER_MISSING",
                "warning",
                "hca",
                "node1 mlx5_0: ethtool -S unreadable (ethtool -S: no output); "
                "physical errors and link flaps over the verification window are not proven on this port",
                **NODE1_0,
                counter="ethtool -S",
            )
        ]


def test_remote_physical_errors_count_on_infiniband():
    pq = fixture("counters", "perfquery_extended_pcx.txt")
    worse = pq.replace("PortRcvRemotePhysicalErrors:.....0", "PortRcvRemotePhysicalErrors:.....3")
    f, _ = run({"node1": {"transport": "infiniband", "start": snap(["mlx5_0"], [pq]), "end": snap(["mlx5_0"], [worse])}})
    assert f == [
        health(
            "LINK_ERRORS",
            "error",
            "link",
            "node1 mlx5_0: PortRcvRemotePhysicalErrors +3 over the verification window (threshold 0) (cabled to leaf1 swp1)",
            **NODE1_0,
            evidence={"deltas": {"PortRcvRemotePhysicalErrors": 3}, "threshold": 0},
        )
    ]


def test_a_module_without_thresholds_is_not_judged():
    # thresholds [0..0]: the module states none (copper-like DDM on an optical part), nothing to judge against
    text = optical("-40,-40,-40,-40 [0..0]", "90 [0..0]")
    f, rows = run({"node1": {"start": snap(["mlx5_0"], [ethtool()]), "end": snap(["mlx5_0"], [ethtool()], mlx=[text])}})
    assert f == [] and rows[0]["optics"] == {"rx_power_dbm": [-40.0, -40.0, -40.0, -40.0], "temperature_c": 90.0}


def test_a_status_opcode_without_a_recommendation_and_the_report_case():
    text = MLXLINK.replace("Recommendation                     : No issue was observed\n", "").replace(
        "Status Opcode                      : 0", "Status Opcode                      : 5"
    )
    f, rows = run({"node1": {"start": snap(["mlx5_0"], [ethtool()]), "end": snap(["mlx5_0"], [ethtool()], mlx=[text])}})
    warn = health(
        "MLXLINK_RECOMMENDATION",
        "warning",
        "link",
        "node1 mlx5_0: mlxlink recommends: - (Status Opcode 5) (cabled to leaf1 swp1)",
        **NODE1_0,
        evidence={"recommendation": "", "status_opcode": 5},
    )
    assert f == [warn]
    assert linkcheck.check(f, rows)["cases"] == [{"name": "node1 mlx5_0", "ok": True, "code": None, "message": warn["message"], "findings": [warn]}]
    f, rows = run({"node1": {"start": snap(["mlx5_0"], [ethtool()]), "end": snap(["mlx5_0"], [ethtool(link_down_events_phy=1)])}})
    assert [(c["ok"], c["code"]) for c in linkcheck.check(f, rows)["cases"]] == [(False, "LINK_FLAP")]


# ---------------------------------------------------------------- seed-47 survivors


def test_local_link_integrity_errors_count_and_a_counter_new_at_the_end_counts_from_zero():
    pq = fixture("counters", "perfquery_extended_pcx.txt")
    worse = pq.replace("LocalLinkIntegrityErrors:........0", "LocalLinkIntegrityErrors:........2")
    f, _ = run({"node1": {"transport": "infiniband", "start": snap(["mlx5_0"], [pq]), "end": snap(["mlx5_0"], [worse])}})
    assert [x["message"] for x in f] == ["node1 mlx5_0: LocalLinkIntegrityErrors +2 over the verification window (threshold 0) (cabled to leaf1 swp1)"]
    f, _ = run({"node1": {"start": snap(["mlx5_0"], [ethtool(drop=("rx_crc_errors_phy",))]), "end": snap(["mlx5_0"], [ethtool(rx_crc_errors_phy=5)])}})
    assert [x["message"] for x in f] == ["node1 mlx5_0: rx_crc_errors_phy +5 over the verification window (threshold 0) (cabled to leaf1 swp1)"]


def test_perfquery_that_cannot_open_its_port_is_refused():
    with pytest.raises(ParseError) as err:
        linkhealth.parse_perfquery("umad: can't open /dev/infiniband/umad0\n")
    assert str(err.value) == "perfquery: umad: can't open /dev/infiniband/umad0"
