"""NVUE's show parsers (switch/nvue_show.py): `nv show interface` by header positions, JSON first; the row
markers and column orders of each release."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import nvue_show


# ------------------------------------------------------------- NVUE nv show interface


def test_nvue_show_interface_cl5x_blank_speed_is_blank_not_the_next_cell():
    summary = nvue_show.parse_interface_summary(fixture("switch", "real_nvue_show_interface_cl5x.txt"))
    assert len(summary) == 16 and "" not in summary
    assert summary["BLUE"] == {"up": True, "mtu": 65575, "speed": ""}
    assert summary["swp4"] == {"up": False, "mtu": 1500, "speed": ""}
    assert summary["swp1"] == {"up": True, "mtu": 9000, "speed": "1G"}
    assert summary["eth0"] == {"up": True, "mtu": 1500, "speed": "1G"}
    assert summary["swp6"]["mtu"] == 9216


def test_nvue_show_interface_older_column_order_with_row_markers():
    summary = nvue_show.parse_interface_summary(fixture("switch", "nvue_show_interface.txt"))
    assert summary == {
        "eth0": {"up": True, "mtu": 1500, "speed": "1G"},
        "swp1": {"up": True, "mtu": 9216, "speed": "400G"},
        "swp2": {"up": False, "mtu": 9216, "speed": ""},
    }


def test_nvue_show_interface_json_is_read_first():
    summary = nvue_show.parse_interface_summary(fixture("switch", "nvue_show_interface.json"))
    assert summary["swp1"] == {"up": True, "mtu": 9216, "speed": "400G"}
    assert summary["swp2"] == {"up": False, "mtu": 9216, "speed": ""}
    assert summary["vlan110"] == {"up": True, "mtu": None, "speed": ""}


def test_nvue_show_interface_row_across_columns_names_the_line():
    text = fixture("switch", "real_nvue_show_interface_cl5x.txt").replace("swp4        down          1500 ", "swp4        down         21500 ")
    with pytest.raises(ParseError, match=r"line 31 does not fit the header's columns: 'swp4 "):
        nvue_show.parse_interface_summary(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no 'Interface ... State' header"),
        ("Error: The requested item does not exist.\n", "Error: The requested item does not exist."),
        ("Interface  State  MTU\n---------  -----  ---\nswp1              9216\n", "line 3: no State for 'swp1'"),
        ('{"swp1": {"type": "swp"}}', "'swp1' has no link object"),
        ('{"swp1": ', "invalid JSON"),
    ],
)
def test_nvue_show_interface_bad_input(text, message):
    with pytest.raises(ParseError, match=message):
        nvue_show.parse_interface_summary(text)


# ------------------------------------------------------------- EOS show interfaces status


@pytest.mark.parametrize(
    "name, ports",
    [
        ("real_nvue_show_interface_cl52_leaf01.txt", ["eth0", "lo", "swp1", "swp49", "swp50", "swp51", "swp52"]),
        ("real_nvue_show_interface_cl52_spine02.txt", ["eth0", "lo", "swp1", "swp2", "swp3", "swp4"]),
    ],
)
def test_nvue_show_interface_cl52_second_summary_row_of_the_same_interface(name, ports):
    summary = nvue_show.parse_interface_summary(fixture("switch", name))
    assert list(summary) == ports
    assert summary["lo"] == {"up": True, "mtu": 65536, "speed": ""}
    assert summary["swp1"] == {"up": True, "mtu": 9216, "speed": "1G"}


def test_nvue_show_interface_other_oper_states_read_as_not_up():
    text = "Interface  State    MTU\n---------  -------  -----\nswp1       dormant  9216\nlo         unknown  65536\n"
    summary = nvue_show.parse_interface_summary(text)
    assert summary == {"swp1": {"up": False, "mtu": 9216, "speed": ""}, "lo": {"up": False, "mtu": 65536, "speed": ""}}
    assert nvue_show.parse_interface_summary('{"swp1": {"link": {"oper-status": "lowerlayerdown"}}}') == {"swp1": {"up": False, "mtu": None, "speed": ""}}
