"""Switch ports' bit error rate and FEC counters: the parsers on published outputs of every release
layout, N/A values and malformed output."""
import json

import pytest

from parser_fixtures import fixture

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import ber


def errors(pre=None, post=None, corrected=None, uncorrected=None, mode=None):
    return {"pre_fec_ber": pre, "post_fec_ber": post, "fec_corrected": corrected, "fec_uncorrected": uncorrected,
            "fec_mode": mode}


# ---------------------------------------------------------------- SONiC: one layout per release

def test_sonic_202211_counters_only():
    res = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202211_unittest.txt"))
    assert res == {"Ethernet0": errors(corrected=130402, uncorrected=3),
                   "Ethernet4": errors(corrected=110412, uncorrected=1),
                   "Ethernet8": errors(corrected=100317, uncorrected=0)}


def test_sonic_202411_ber_columns_and_the_period_line():
    res = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202411_docs.txt"))
    assert res["Ethernet8"] == errors(pre=1.98e-19, post=0.0, corrected=0, uncorrected=0)
    assert list(res) == ["Ethernet0", "Ethernet8", "Ethernet16"]
    period = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202411_period.txt"))
    assert period["Ethernet4"] == errors(corrected=0, uncorrected=0)


@pytest.mark.parametrize("name", ["real_sonic_fec_stats_202505_docs.txt", "real_sonic_fec_stats_master_docs.txt"])
def test_sonic_later_columns_are_not_read_and_do_not_shift_the_ber(name):
    res = ber.parse_sonic_fec_stats(fixture("switch", name))
    assert res["Ethernet16"] == errors(pre=1.77e-20, post=0.0, corrected=0, uncorrected=0)


def test_sonic_na_ber_is_none_not_zero():
    res = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202511_unittest.txt"))
    assert res["Ethernet0"] == errors(corrected=130402, uncorrected=3)
    assert res["Ethernet9"]["pre_fec_ber"] is None and res["Ethernet9"]["fec_uncorrected"] == 0


# ---------------------------------------------------------------- NVUE: phy-detail (5.10 - 5.14), phy health (5.15+)

def test_nvue_phy_detail_reference():
    res = ber.parse_nvue_phy_health(fixture("switch", "real_nvue_phy_detail_reference.txt"), "swp1")
    assert res == {"swp1": errors(pre=1e-7, post=1.5e-254, uncorrected=0)}


@pytest.mark.parametrize("name", ["real_nvue_phy_detail_cl510.txt", "real_nvue_phy_health_cl515.txt",
                                  "real_nvue_phy_health_reference.txt"])
def test_nvue_zero_ber_is_printed_as_15e_255(name):
    res = ber.parse_nvue_phy_health(fixture("switch", name), "swp1")["swp1"]
    assert res == errors(pre=1.5e-254, post=1.5e-254, uncorrected=0)


def test_nvue_lane_stats_table_does_not_overwrite_the_port_rows():
    text = fixture("switch", "real_nvue_phy_health_reference.txt").replace(
        "raw-ber                    15E-255", "raw-ber                    2E-5").replace(
        "effective-errors           0", "effective-errors           4096")
    assert ber.parse_nvue_phy_health(text, "swp3") == {"swp3": errors(pre=2e-5, post=1.5e-254, uncorrected=4096)}


# ---------------------------------------------------------------- EOS: PHYs of a port

def test_eos_worst_phy_and_summed_codewords():
    res = ber.parse_eos_phy_detail(fixture("switch", "real_eos_phy_detail_anta_success.json"))
    # the switch chip's line side 5.38e-10 is the worst of its three PHYs; codewords 3 + 2 + 0
    assert res["Ethernet1/1"] == errors(pre=5.378509864228316e-10, corrected=5, uncorrected=0)
    unc = ber.parse_eos_phy_detail(fixture("switch", "real_eos_phy_detail_anta_uncorrected.json"))
    assert unc["Ethernet1/1"]["fec_uncorrected"] == 20 and unc["Ethernet1/1"]["fec_corrected"] == 35
    high = ber.parse_eos_phy_detail(fixture("switch", "real_eos_phy_detail_anta_high_ber.json"))
    assert high["Ethernet3/1/1"]["pre_fec_ber"] == pytest.approx(2.54e-2, rel=1e-3)
    assert high["Ethernet1/2"] == errors()   # no FEC data on any PHY: nothing read, nothing invented


def test_eos_fec_mode_revision_1_text_and_management_port():
    doc = json.loads(fixture("switch", "real_eos_phy_detail_anta_success.json"))
    doc["interfacePhyStatuses"]["Ethernet1/1"]["phyStatuses"][0]["fec"]["encoding"] = "reedSolomon"
    doc["interfacePhyStatuses"]["Ethernet9/1"] = {"phyStatuses": [{"text": "PHY state  linkUp\n"}]}
    doc["interfacePhyStatuses"]["Management1"] = {"phyStatuses": []}
    res = ber.parse_eos_phy_detail(doc)
    assert res["Ethernet1/1"]["fec_mode"] == "reedSolomon" and res["Ethernet9/1"] == errors()
    assert "Management1" not in res


# ---------------------------------------------------------------- not the command's output

@pytest.mark.parametrize("parser, text", [
    (ber.parse_sonic_fec_stats, ""),
    (ber.parse_sonic_fec_stats, 'Usage: show interfaces counters [OPTIONS] COMMAND [ARGS]...\n\n'
                                'Error: No such command "fec-stats".'),
    (ber.parse_sonic_fec_stats, "    IFACE    STATE    RX_OK\n---------  -------  -----\nEthernet0  U  1\n"),
    (ber.parse_sonic_fec_stats, "    IFACE    STATE    FEC_CORR    FEC_UNCORR\n"
                                "Ethernet0        U     lots           0\n"),
    (ber.parse_sonic_fec_stats, "    IFACE    STATE    FEC_CORR    FEC_UNCORR\nEthernet0        U     1\n"),
    (ber.parse_nvue_phy_health, "Error: The requested item does not exist."),
    (ber.parse_nvue_phy_health, "                 operational\n---------  -----\nsymbol-errors  0\n"),
    (ber.parse_nvue_phy_health, "raw-ber  high\neffective-ber  0\n"),
    (ber.parse_eos_phy_detail, "% Invalid input"),
    (ber.parse_eos_phy_detail, '{"interfacePhyStatuses": {"Ethernet1/1": {"phyStatuses": {}}}}'),
    (ber.parse_eos_phy_detail, '{"interfacePhyStatuses": {"Ethernet1/1": '
                               '{"phyStatuses": [{"preFecBer": {"value": "x"}}]}}}'),
])
def test_malformed_output_raises(parser, text):
    with pytest.raises(ParseError):
        parser(text)
