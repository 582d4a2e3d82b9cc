"""Optics and mlxlink's verdict in the link-health check (issue 24, item 3): mlxlink -m Module Info
(mstflint mlxlink_commander.cpp getValueAndThresholdsStr: "<value[,lane...]> [<low>..<high>]", or N/A)
judged against the module's own thresholds and fabric.verify's margins; the lab's mlxlink prints the
model's optics and the optic-degrade fault makes OPTIC_RX_POWER_LOW and OPTIC_TEMP_HIGH fire."""

import pytest

from linerate_lab import faults
from linerate_lab.tools import mlxlink as sim_mlxlink

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.checks import link_limits
from ansible_collections.linerate.fabric.plugins.module_utils import findings
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import module_value, parse_mlxlink
from checks.test_links import CABLING, MLXLINK, ethtool, node, run

DDM = (
    "Temperature [C]                    : {temp}\n"
    "Voltage [mV]                       : 3261.2 [2970..3630]\n"
    "Bias Current [mA]                  : 8.380,8.380,8.380,8.380 [2..15]\n"
    "Rx Power Current [dBm]             : {rx}\n"
    "Tx Power Current [dBm]             : 1.562,1.427,1.559,1.761 [-8.508..5]\n"
)


def optical(rx="1.886,1.989,2.281,1.976 [-10.41..6]", temp="54 [-5..75]", tech="Optical Module (separated)", rec="No issue was observed", opcode="0"):
    text = MLXLINK.replace("Temperature [C]                    : N/A\n", DDM.format(temp=temp, rx=rx))
    text = text.replace("Copper cable, passive, unequalized", tech)
    return text.replace("Recommendation                     : No issue was observed", f"Recommendation                     : {rec}").replace(
        "Status Opcode                      : 0", f"Status Opcode                      : {opcode}"
    )


def judge(text, fabric=None):
    f, rows = run({"node1": node([ethtool()] * 1, devices=("mlx5_0",), mlx=[text])}, fabric or {"transport": "roce", "link_speed_gbps": 400, "verify": {}})
    return f, rows[0]


def test_module_values_are_lane_lists_with_the_modules_thresholds():
    assert module_value("1.886,1.989,2.281,1.976 [-10.41..6]") == {"values": [1.886, 1.989, 2.281, 1.976], "low": -10.41, "high": 6.0}
    assert module_value("54 [-5..75]") == {"values": [54.0], "low": -5.0, "high": 75.0}
    assert module_value("N/A") is None and module_value(None) is None
    with pytest.raises(ValueError, match="not an mlxlink module value"):
        module_value("52")
    with pytest.raises(ParseError, match=r"^mlxlink: not an mlxlink module value .*'-3 dBm'"):
        parse_mlxlink(optical(rx="-3 dBm"))


def test_a_healthy_optic_passes_and_shows_its_values():
    f, row = judge(optical())
    assert f == [] and row["ok"]
    assert row["optics"] == {"rx_power_dbm": [1.886, 1.989, 2.281, 1.976], "temperature_c": 54.0}


def test_rx_power_below_the_low_threshold_names_the_lanes_node_device_and_switch_port():
    f, row = judge(optical(rx="1.886,-11.2,2.281,-12.5 [-10.41..6]"))
    assert [(x["code"], x["severity"], x["node"], x["device"], x["switch"], x["switch_port"]) for x in f] == [
        ("OPTIC_RX_POWER_LOW", "error", "node1", "mlx5_0", "leaf1", "swp1")
    ]
    assert f[0]["evidence"]["lanes"] == {1: -11.2, 3: -12.5} and f[0]["evidence"]["low_threshold_dbm"] == -10.41
    assert "lane 1 -11.2 dBm, lane 3 -12.5 dBm, below -10.41 dBm" in f[0]["message"]
    assert f[0]["message"].endswith("(cabled to leaf1 swp1)") and not row["ok"]


def test_the_margin_moves_the_floor_up_and_at_the_floor_passes():
    fabric = {"transport": "roce", "link_speed_gbps": 400, "verify": {"optic_rx_power_margin_db": 3.0}}
    assert judge(optical(rx="-7.41,-7.41,-7.41,-7.41 [-10.41..6]"), fabric)[0] == []
    f, _ = judge(optical(rx="-7.42,-7.41,-7.41,-7.41 [-10.41..6]"), fabric)
    assert [x["code"] for x in f] == ["OPTIC_RX_POWER_LOW"] and f[0]["evidence"]["lanes"] == {0: -7.42}


def test_temperature_above_the_high_threshold_less_the_margin():
    assert judge(optical(temp="75 [-5..75]"))[0] == []
    f, _ = judge(optical(temp="76 [-5..75]"))
    assert [(x["code"], x["evidence"]["temperature_c"]) for x in f] == [("OPTIC_TEMP_HIGH", 76.0)]
    fabric = {"transport": "roce", "link_speed_gbps": 400, "verify": {"optic_temp_margin_c": 10}}
    assert [x["code"] for x in judge(optical(temp="66 [-5..75]"), fabric)[0]] == ["OPTIC_TEMP_HIGH"]
    assert judge(optical(temp="65 [-5..75]"), fabric)[0] == []


def test_copper_is_not_judged_even_with_zero_ddm():
    # a passive DAC's DDM reads 0 [0..0] (MFT 4.35, ConnectX-7 NDR DAC as published) or N/A (the MFT 4.30 capture)
    f, row = judge(optical(rx="0,0,0,0 [0..0]", temp="0 [0..0]", tech="Copper cable, passive, unequalized"))
    assert f == [] and row["optics"] == "not judged: Copper cable, passive, unequalized"
    f, row = judge(MLXLINK)
    assert f == [] and row["optics"].startswith("not judged: Copper")


def test_an_optic_without_ddm_or_an_output_without_module_info_is_unproven_not_passed():
    f, _ = judge(optical(rx="N/A", temp="N/A"))
    assert [(x["code"], x["severity"], x["counter"]) for x in f] == [
        ("COUNTER_MISSING", "warning", "Module Info Rx power"),
        ("COUNTER_MISSING", "warning", "Module Info temperature"),
    ]
    no_module = MLXLINK.split("Module Info")[0] + "Physical Counters" + MLXLINK.split("Physical Counters")[1]
    f, row = judge(no_module)
    assert [(x["code"], x["counter"]) for x in f] == [("COUNTER_MISSING", "Module Info")] and row["optics"] == "not read"


@pytest.mark.parametrize("rec,opcode", [("Bad signal integrity", "1"), ("Cable is unplugged", "0")])
def test_mlxlinks_recommendation_is_a_warning_with_its_words(rec, opcode):
    f, row = judge(optical(rec=rec, opcode=opcode))
    assert [(x["code"], x["severity"]) for x in f] == [("MLXLINK_RECOMMENDATION", "warning")]
    assert f[0]["message"].startswith(f"node1 mlx5_0: mlxlink recommends: {rec} (Status Opcode {opcode})")
    assert row["ok"]  # a warning does not fail the port


def test_the_older_healthy_wording_with_a_full_stop_is_healthy():
    assert judge(optical(rec="No issue was observed."))[0] == []


@pytest.mark.parametrize(
    "key,value", [("optic_rx_power_margin_db", -1), ("optic_rx_power_margin_db", "3"), ("optic_temp_margin_c", 51), ("optic_temp_margin_c", True)]
)
def test_intent_margins_are_validated_with_key_value_and_what_is_allowed(key, value):
    msgs = schema.validate_fabric({"transport": "roce", "verify": {key: value}})
    assert [m for m in msgs if m.startswith(f"fabric.verify.{key}: ")] and "allowed: a number 0.." in msgs[0]


def test_the_lab_mlxlink_prints_healthy_optics_and_optic_degrade_makes_both_findings_fire(lab, monkeypatch):
    monkeypatch.setattr(sim_mlxlink, "uptime_s", lambda: 3600.0)
    rc, out, _ = lab.run(sim_mlxlink, ["-d", "mlx5_0", "-m", "-c"])
    assert rc == 0 and "Rx Power Current [dBm]             : 1.900,1.900,1.900,1.900 [-10.41..6]\n" in out
    m = parse_mlxlink(out)["module"]
    assert m["optical"] and m["ddm"]["temperature_c"] == {"values": [52.0], "low": -5.0, "high": 75.0}
    assert judge(out)[0] == []
    faults.apply("optic-degrade", ["node1", "mlx5_0"], lab=None)
    out = lab.run(sim_mlxlink, ["-d", "mlx5_0", "-m", "-c"])[1]
    f, _ = judge(out)
    assert [x["code"] for x in f] == ["OPTIC_RX_POWER_LOW", "OPTIC_TEMP_HIGH"]
    assert f[0]["evidence"]["lanes"] == {0: -14.0, 1: -14.0, 2: -14.0, 3: -14.0}
    faults.apply("optic-restore", ["node1", "mlx5_0"], lab=None)
    assert judge(lab.run(sim_mlxlink, ["-d", "mlx5_0", "-m", "-c"])[1])[0] == []


def test_the_codes_are_registered_with_their_severity():
    assert findings.FAULT_CODES["OPTIC_RX_POWER_LOW"][0] == "error"
    assert findings.FAULT_CODES["OPTIC_TEMP_HIGH"][0] == "error"
    assert findings.FAULT_CODES["MLXLINK_RECOMMENDATION"][0] == "warning"
    assert link_limits.DEFAULTS["optic_rx_power_margin_db"] == DEFAULTS["verify"]["optic_rx_power_margin_db"]
    assert CABLING
