"""ethtool -m (module EEPROM and diagnostics): SFF-8472, SFF-8636 and CMIS as several ethtool releases print
them (fixtures/ethtool_module/SOURCES.md), read into the module shape checks/link_limits.py module_problems judges."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ethtool_module import NO_LIGHT_DBM, parse_ethtool_module


def read(name):
    return parse_ethtool_module(fixture("ethtool_module", name))


def test_sff8472_sfp_one_lane_with_its_alarm_thresholds():
    m = read("real_sff8472_sfp_bx10_ixgbe.txt")
    assert m.pop("fields")["Vendor name"] == ["FS"]  # every line as printed (issue 38)
    assert m == {
        "present": True,
        "optical": True,
        "vendor": "FS",
        "part_number": "SFP-GE-BX",
        "cable_technology": "Ethernet: BASE-BX10",
        "ddm": {"rx_power_dbm": {"values": [-5.62], "low": -25.53, "high": -1.5}, "temperature_c": {"values": [47.3], "low": -45.0, "high": 90.0}},
    }


def test_an_sfp_receiving_no_light_reads_minus_40_dbm_below_its_low_alarm():
    m = read("real_sff8472_sfp_lr_no_light_ethtool5.3.txt")  # ethtool 5.3: 0.0001 mW / -40.00 dBm
    assert m["ddm"]["rx_power_dbm"] == {"values": [-40.0], "low": -13.1, "high": 1.0}
    assert m["part_number"] == "TN-SFP-10G-LR" and m["cable_technology"] == "10G Ethernet: 10G Base-LR"


@pytest.mark.parametrize(
    "name, rx, low, temp",
    [
        ("real_sff8636_qsfp28_sr4_mellanox_cl37.txt", [-0.12, -0.09, 0.55, 0.55], -13.31, 30.56),  # tab-indented
        ("real_sff8636_qsfp28_sr4_hisense_k5.8.txt", [-0.11, 0.17, -0.11, 0.08], -14.0, 25.7),
    ],
)
def test_sff8636_qsfp28_four_lanes_without_a_space_before_the_channel(name, rx, low, temp):
    m = read(name)
    assert m["optical"] and m["cable_technology"] == "850 nm VCSEL"
    assert m["ddm"]["rx_power_dbm"] == {"values": rx, "low": low, "high": 5.4}
    assert m["ddm"]["temperature_c"] == {"values": [temp], "low": -10.0, "high": 80.0}


def test_sff8636_without_page_03h_has_no_thresholds_so_nothing_is_judged_as_passed():
    m = read("real_sff8636_qsfp_no_page3_cx3.txt")  # 'Alarm/warning flags implemented : No'
    assert m["optical"] and m["vendor"] == "AVAGO" and m["ddm"] == {"rx_power_dbm": None, "temperature_c": None}


def test_thresholds_of_0_mw_are_a_module_that_fills_none():
    m = read("real_sff8636_qsfp_40g_sr4_dark_cl37.txt")
    assert m["ddm"]["rx_power_dbm"] is None and m["ddm"]["temperature_c"] == {"values": [30.93], "low": -5.0, "high": 75.0}


def test_a_passive_dac_is_copper_not_optical():
    m = read("real_sff8636_qsfp_dac_mcp1600.txt")
    assert (m["optical"], m["cable_technology"], m["part_number"]) == (False, "Copper cable unequalized", "MCP1600-E00A")
    assert m["ddm"] == {"rx_power_dbm": None, "temperature_c": None}


def test_cmis_drops_the_lanes_a_4_lane_module_leaves_dark_in_its_8_lane_bank():
    m = read("real_cmis_qsfpdd_400g_xdr4_arista.txt")
    assert m.pop("fields")["Vendor PN"] == ["QDD-400G-XDR4"]  # every line as printed (issue 38)
    assert m == {
        "present": True,
        "optical": True,
        "vendor": "Arista Networks",
        "part_number": "QDD-400G-XDR4",
        "cable_technology": "1310 nm EML",
        "ddm": {"rx_power_dbm": {"values": [3.52, 2.7, 2.65, 2.6], "low": -8.9, "high": 5.5}, "temperature_c": {"values": [70.49], "low": -5.0, "high": 75.0}},
    }


def test_cmis_16_lanes_with_names_wider_than_the_column():
    text = fixture("ethtool_module", "real_cmis_qsfpdd_16lanes_mlxsw_2021.txt")
    thresholds = "\n Laser rx power high alarm threshold       : 3.5481 mW / 5.50 dBm\n Laser rx power low alarm threshold        : 0.1288 mW / -8.90 dBm\n"
    rx = parse_ethtool_module(text + thresholds)["ddm"]["rx_power_dbm"]
    assert len(rx["values"]) == 16 and rx["values"][9] == 0.65 and rx["low"] == -8.9


def test_a_lane_dark_before_a_lit_one_is_kept_and_all_dark_lanes_are_kept():
    text = fixture("ethtool_module", "real_cmis_qsfpdd_400g_xdr4_arista.txt")
    dead = (
        text.replace("Laser tx bias current (Channel 2)         : 81.878 mA", "Laser tx bias current (Channel 2)         : 0.000 mA")
        .replace("Transmit avg optical power (Channel 2)    : 1.6486 mW / 2.17 dBm", "Transmit avg optical power (Channel 2)    : 0.0000 mW / -inf dBm")
        .replace("Rcvr signal avg optical power (Channel 2) : 1.8629 mW / 2.70 dBm", "Rcvr signal avg optical power (Channel 2) : 0.0000 mW / -inf dBm")
    )
    assert parse_ethtool_module(dead)["ddm"]["rx_power_dbm"]["values"] == [3.52, NO_LIGHT_DBM, 2.65, 2.6]
    # a lane receiving nothing while its own laser runs is a fault, not an unused lane
    cut = text.replace("Rcvr signal avg optical power (Channel 4) : 1.8215 mW / 2.60 dBm", "Rcvr signal avg optical power (Channel 4) : 0.0000 mW / -inf dBm")
    assert parse_ethtool_module(cut)["ddm"]["rx_power_dbm"]["values"] == [3.52, 2.7, 2.65, NO_LIGHT_DBM]
    dark = fixture("ethtool_module", "real_sff8636_qsfp_40g_sr4_dark_cl37.txt").replace(
        "Laser rx power low alarm threshold        : 0.0000 mW / -inf dBm", "Laser rx power low alarm threshold        : 0.0490 mW / -13.10 dBm"
    )
    assert parse_ethtool_module(dark)["ddm"]["rx_power_dbm"]["values"] == [NO_LIGHT_DBM] * 4


def test_the_2025_json_series_layout_and_oma_readings():
    text = fixture("ethtool_module", "real_sff8636_qsfp28_sr4_hisense_k5.8.txt")
    spaced = text.replace("power(Channel", "power (Channel")  # the space the JSON series added
    assert parse_ethtool_module(spaced)["ddm"]["rx_power_dbm"]["values"] == [-0.11, 0.17, -0.11, 0.08]
    oma = text.replace("Rcvr signal avg optical power(Channel", "Receiver signal OMA(Channel")
    assert parse_ethtool_module(oma)["ddm"]["rx_power_dbm"]["values"] == [-0.11, 0.17, -0.11, 0.08]


SFP_DAC = """\
\tIdentifier                                : 0x03 (SFP)
\tExtended identifier                       : 0x04 (GBIC/SFP defined by 2-wire interface ID)
\tConnector                                 : 0x21 (Copper pigtail)
\tTransceiver codes                         : 0x01 0x00 0x00 0x00 0x00 0x04 0x80 0x00 0x00
\tTransceiver type                          : Infiniband: 1X Copper Passive
\tTransceiver type                          : Passive Cable
\tTransceiver type                          : FC: Twin Axial Pair (TW)
\tPassive Cu cmplnce.                       : 0x01 (SFF-8431 appendix E) [SFF-8472 rev10.4 only]
\tVendor name                               : Mellanox
\tVendor PN                                 : MC3309130-002
"""


def test_an_sfp_dac_is_copper_by_its_compliance_line():
    # composed from sfpid.c's strings (sff8079_show_transceiver, ..._wavelength_or_copper_compliance)
    m = parse_ethtool_module(SFP_DAC)
    assert (m["present"], m["optical"], m["cable_technology"]) == (True, False, "Passive Cable")


def test_an_empty_cage_reads_identifier_0x00():
    m = parse_ethtool_module("\tIdentifier                                : 0x00 (no module present, unknown, or unspecified)\n")
    assert m == {
        "present": False,
        "optical": False,
        "vendor": None,
        "part_number": None,
        "cable_technology": None,
        "ddm": {"rx_power_dbm": None, "temperature_c": None},
        "fields": {"Identifier": ["0x00 (no module present, unknown, or unspecified)"]},
    }


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "no output"),
        (
            "netlink error: mlx5_core: Query module eeprom by page failed, read 0 bytes, err -5\nnetlink error: Input/output error\n",
            "Query module eeprom by page failed",
        ),
        ("Cannot get Module EEPROM data: Input/output error\nSFP module not in cage?\n", "Cannot get Module EEPROM data"),
        ("Cannot get module EEPROM information: Operation not supported\n", "Cannot get module EEPROM information"),
        ("ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", "bad command line"),
        ('[ {\n  "identifier": 17\n} ]\n', "JSON output"),
        ("Offset\t\tValues\n------\t\t------\n0x0000:\t\t00 00 00 00\n", "hex dump"),
        ("\tVendor name                               : FS\n", "no 'Identifier' line first"),
        ("\tIdentifier                                : QSFP28\n", "is not '0x<code>"),
        ("\tIdentifier                                : 0x11 (QSFP28)\n\tsomething else\n", "line 2"),
        ("\tIdentifier                                : 0x11 (QSFP28)\n\tRcvr signal avg optical power(Channel 1)  : -3 dBm\n", "is not '<mW> mW / <dBm> dBm'"),
        ("\tIdentifier                                : 0x11 (QSFP28)\n\tModule temperature                        : hot\n", "not a value in degrees C"),
        (
            "\tIdentifier                                : 0x11 (QSFP28)\n\tRcvr signal avg optical power(Channel 2)  : 0.9720 mW / -0.12 dBm\n",
            r"channels \[2\] are not 1..1",
        ),
    ],
)
def test_what_is_not_a_decoded_module_is_a_parse_error_naming_it(text, match):
    with pytest.raises(ParseError, match=match):
        parse_ethtool_module(text)
