"""Switch-port optical modules (transceiver DOM): the parsers on published outputs, N/A values, empty
cages and malformed output; the simulators' answers for a healthy port and for the model's optics
override, read back through the parsers; the commands each driver sends (read-only)."""

import json

import pytest

from parser_fixtures import fixture
from switch_testlib import make, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import optics

PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}
NONE_DDM = {"rx_power_dbm": None, "temperature_c": None}


# ---------------------------------------------------------------- parsers on published outputs


def test_nvue_reference_example():
    m = optics.parse_nvue_platform_transceiver(fixture("switch", "real_nvue_platform_transceiver_cl511.txt"), "swp2")
    assert m["swp2"].pop("fields")["vendor-name"] == "Mellanox"  # every field as printed (issue 38)
    assert m == {
        "swp2": {
            "present": True,
            "optical": True,
            "vendor": "Mellanox",
            "part_number": "MFA1A00-C003",
            "cable_technology": "Active cable",
            "ddm": {"rx_power_dbm": {"values": [-0.64], "low": -13.31, "high": 5.4}, "temperature_c": {"values": [42.56], "low": -10.0, "high": 80.0}},
        }
    }


def test_sonic_qsfp28_aoc_four_lanes():
    m = optics.parse_sonic_transceiver_eeprom(fixture("switch", "real_sonic_eeprom_dom_qsfp28.txt"))["Ethernet0"]
    assert m["present"] and m["optical"] and m["vendor"] == "Mellanox" and m["part_number"] == "MFA1A00-C003"
    assert m["ddm"]["rx_power_dbm"] == {"values": [0.3802, -0.4871, -0.086, 0.383], "low": -13.5067, "high": 3.4001}
    assert m["ddm"]["temperature_c"] == {"values": [30.9258], "low": -5.0, "high": 75.0}


def test_sonic_qsfp_dd_eight_lanes():
    m = optics.parse_sonic_transceiver_eeprom(fixture("switch", "real_sonic_eeprom_dom_qsfp_dd.txt"))["Ethernet8"]
    assert len(m["ddm"]["rx_power_dbm"]["values"]) == 8 and m["ddm"]["rx_power_dbm"]["values"][2] == -22.9243
    assert (m["ddm"]["rx_power_dbm"]["low"], m["ddm"]["rx_power_dbm"]["high"]) == (-11.9044, 6.9999)
    assert m["ddm"]["temperature_c"] == {"values": [44.9883], "low": -10.0, "high": 80.0}
    assert m["cable_technology"] == "1550 nm DFB" and m["optical"]


def test_sonic_copper_module_without_thresholds_has_no_ddm_entries():
    """sfpshow leaves N/A values out: the copper OSFP prints no thresholds, so neither entry is proven."""
    m = optics.parse_sonic_transceiver_eeprom(fixture("switch", "real_sonic_eeprom_dom_osfp_copper.txt"))["Ethernet72"]
    assert m["present"] and not m["optical"] and m["ddm"] == NONE_DDM


def test_eos_detail_json():
    m = optics.parse_eos_transceiver_detail(fixture("switch", "eos_transceiver_detail_dwdm.json"))["Ethernet5/2"]
    assert m["cable_technology"] == "100G-DWDM-E" and m["optical"] and m["vendor"] is None
    assert m["ddm"]["rx_power_dbm"]["values"] == [-0.53]
    assert round(m["ddm"]["rx_power_dbm"]["low"], 2) == -25.09 and m["ddm"]["temperature_c"]["high"] == 80.0


# ---------------------------------------------------------------- N/A, empty cage, malformed


def test_nvue_na_power_and_empty_cage():
    text = fixture("switch", "real_nvue_platform_transceiver_cl511.txt").replace("0.8625 mW / -0.64 dBm", "N/A").replace("42.56 C", "N/A")
    assert optics.parse_nvue_platform_transceiver(text, "swp2")["swp2"]["ddm"] == NONE_DDM
    empty = "status                 : unplugged\nerror-status           : N/A\nidentifier             : N/A"
    assert optics.parse_nvue_platform_transceiver(empty, "swp9") == {"swp9": optics.empty_cage()}


def test_sonic_na_lane_and_empty_cage():
    text = fixture("switch", "real_sonic_eeprom_dom_qsfp28.txt").replace("                RX3Power: -0.0860dBm\n", "")
    m = optics.parse_sonic_transceiver_eeprom(text + "Ethernet200: SFP EEPROM Not detected\n")
    assert m["Ethernet0"]["ddm"]["rx_power_dbm"] is None and m["Ethernet0"]["ddm"]["temperature_c"]
    assert m["Ethernet200"] == optics.empty_cage() and not m["Ethernet200"]["present"]


def test_eos_missing_value_is_none():
    doc = json.loads(fixture("switch", "eos_transceiver_detail_dwdm.json"))
    del doc["interfaces"]["Ethernet5/2"]["temperature"]
    doc["interfaces"]["Ethernet5/2"]["rxPower"] = None
    m = optics.parse_eos_transceiver_detail(doc)["Ethernet5/2"]
    assert m["ddm"] == NONE_DDM


@pytest.mark.parametrize(
    "parser, text",
    [
        (optics.parse_nvue_platform_transceiver, "Error: The requested item does not exist."),
        (optics.parse_nvue_platform_transceiver, "just some words"),
        (optics.parse_nvue_platform_transceiver, ""),
        (optics.parse_sonic_transceiver_eeprom, "Usage: show interfaces transceiver eeprom"),
        (optics.parse_sonic_transceiver_eeprom, "Ethernet0: SFP EEPROM detected\n        ChannelMonitorValues:\n                RX1Power: lots\n"),
        (optics.parse_eos_transceiver_detail, "% Invalid input"),
        (optics.parse_eos_transceiver_detail, '{"interfaces": {"Management1": {}}}'),
    ],
)
def test_malformed_output_raises(parser, text):
    with pytest.raises(ParseError):
        parser(text)


# ---------------------------------------------------------------- simulators through the drivers


def put_optics(port, optic):
    from simcore import model

    with model.locked() as m:
        m["switches"]["sw"].setdefault("ports", {}).setdefault(port, {})["optics"] = optic


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_sim_healthy_and_overridden_optics(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    healthy, degraded = PORTS[platform]
    put_optics(degraded, {"rx_power_dbm": -14.0, "temperature_c": 78})
    res = d.transceivers(PORTS[platform])
    assert set(res) == set(PORTS[platform])
    h, b = res[healthy], res[degraded]
    assert h["present"] and h["optical"]
    if platform != "eos":  # EOS's transceiver detail carries no vendor name or part number
        assert h["vendor"] == "NVIDIA" and h["part_number"]
    rx, temp = h["ddm"]["rx_power_dbm"], h["ddm"]["temperature_c"]
    assert len(rx["values"]) == 8 and all(-1.5 <= v <= 2 for v in rx["values"])  # 400G: 8 lanes
    assert (rx["low"], rx["high"]) == (-10.41, 6.0) and (temp["low"], temp["high"]) == (-5.0, 75.0)
    assert 40 <= temp["values"][0] <= 55
    assert b["ddm"]["rx_power_dbm"]["values"] == [-14.0] * 8 and b["ddm"]["temperature_c"]["values"] == [78.0]
    assert all(not c.startswith(("nv set", "sudo config", "configure")) for c in sim.sent)  # read-only


def test_sim_nvue_refuses_the_form_before_5_11(tmp_path, monkeypatch):
    import sim_nvue

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    forms = [pat for pat, _ in sim_nvue.show_forms("5.10")]
    assert not any("platform" in f for f in forms)
    assert any("platform" in f for f, _ in sim_nvue.show_forms("5.11"))


def test_sim_empty_cage(tmp_path, monkeypatch):
    import sim_optics

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    assert optics.parse_sonic_transceiver_eeprom(sim_optics.render_sonic("Ethernet16", None)) == {"Ethernet16": optics.empty_cage()}
    assert optics.parse_nvue_platform_transceiver(sim_optics.render_nvue(None), "swp9") == {"swp9": optics.empty_cage()}
    assert optics.parse_eos_transceiver_detail(sim_optics.render_eos_json({"Ethernet9/1": None})) == {}


# ---------------------------------------------------------------- the commands each driver sends


def test_nvue_driver_commands():
    d, fake = make(
        "nvue",
        answers={"nv show interface": _nvue_summary(), "nv show platform transceiver swp1": fixture("switch", "real_nvue_platform_transceiver_cl511.txt")},
    )
    res = d.transceivers(["swp1", "swp9"])
    assert list(res) == ["swp1"] and res["swp1"]["vendor"] == "Mellanox"
    assert fake.sent == ["nv show interface", "nv show platform transceiver swp1"]


def _nvue_summary():
    from switch_testlib import fixture as switch_fixture

    return switch_fixture("nvue_show_interface.txt")


def test_sonic_driver_commands():
    d, fake = make("sonic", answers={"show interfaces transceiver eeprom --dom Ethernet0": fixture("switch", "real_sonic_eeprom_dom_qsfp28.txt")})
    res = d.transceivers(["Ethernet0"])
    assert fake.sent == ["show interfaces transceiver eeprom --dom Ethernet0"]
    assert len(res["Ethernet0"]["ddm"]["rx_power_dbm"]["values"]) == 4


def test_eos_driver_commands():
    d, fake = make("eos", answers={"show interfaces transceiver detail | json": fixture("switch", "eos_transceiver_detail_dwdm.json")})
    res = d.transceivers(["Ethernet5/2", "Ethernet9/1"])
    assert fake.sent == ["show interfaces transceiver detail | json"]
    assert list(res) == ["Ethernet5/2", "Ethernet9/1"] and res["Ethernet5/2"]["optical"] is True
    # a port EOS does not list holds no module with diagnostics: not optical, said so, never judged
    assert res["Ethernet9/1"] == {
        "present": None,
        "optical": False,
        "vendor": None,
        "part_number": None,
        "cable_technology": "no module with digital diagnostics (EOS lists none here)",
        "ddm": {"rx_power_dbm": None, "temperature_c": None},
    }


def test_a_driver_without_a_transceiver_read_says_so_and_switch_counters_leaves_them_unproven():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import base
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import read_ports_or_why

    class Bare:  # a driver of a platform whose transceiver read is not built (the base method)
        name = "leaf9"

    d = Bare()
    optics, why = read_ports_or_why({"name": "leaf9", "fabric_ports": ["swp1"]}, lambda ports: base.Driver.transceivers(d, ports), None)
    assert optics is None and "Bare: reading optical modules is not built for this platform" in why
