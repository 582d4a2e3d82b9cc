"""NVUE interface error counters: ``nv show interface <swp> counters`` (5.5.0 and later) read by
switch/counters.parse_nvue_interface_counters, and the driver's choice between it and ``link stats``."""

import pytest

from parser_fixtures import fixture
from switch_testlib import make

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_nvue_interface_counters, parse_nvue_link_stats

SUMMARY = fixture("switch", "real_nvue_show_interface_cl519.txt")  # swp1 up, swp2 down
REFUSED = "Error: The requested item does not exist."


@pytest.mark.parametrize("name, carrier", [("reference", 6), ("cl515", 4), ("cl519", 4)])
def test_the_published_outputs_read_totals_and_carrier_transitions(name, carrier):
    c = parse_nvue_interface_counters(fixture("switch", f"real_nvue_interface_counters_{name}.txt"))
    assert {k: c[k] for k in ("in-errors", "out-errors", "in-drops", "out-drops", "carrier-transitions")} == {
        "in-errors": 0,
        "out-errors": 0,
        "in-drops": 0,
        "out-drops": 0,
        "carrier-transitions": carrier,
    }
    assert list(c["sections"]) == ["Detailed Counters", "Drop Counters", "Error Counters", "Packet Size Statistics", "Ingress Buffer Statistics"]
    assert c["sections"]["Error Counters"]["FCS Errors"] == {"Receive": 0, "Transmit": None}  # n/a
    assert c["sections"]["Ingress Buffer Statistics"]["7"]["rx-buffer-discards"] == "0 Bytes"


def test_receive_and_transmit_are_not_swapped():
    c = parse_nvue_interface_counters(fixture("switch", "nvue_interface_counters_nonzero.txt"))
    assert (c["in-errors"], c["out-errors"], c["in-drops"], c["out-drops"], c["carrier-transitions"]) == (12, 3, 7, 2, 4)
    assert c["sections"]["Drop Counters"]["Queue Drops"] == {"Receive": None, "Transmit": 2}


def test_link_stats_and_counters_give_the_driver_the_same_keys():
    stats = parse_nvue_link_stats(fixture("counters", "nvue_link_stats_reference.txt"))
    counters = parse_nvue_interface_counters(fixture("switch", "real_nvue_interface_counters_reference.txt"))
    keys = ("in-errors", "in-drops", "out-errors", "out-drops", "carrier-transitions")
    assert {k: stats[k] for k in keys} == {k: counters[k] for k in keys}


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no output"),
        (REFUSED + "\n", "The requested item does not exist"),
        ("carrier-transitions  4\n", "no table under a '----' rule"),
        ("        operational\n-----  -----\nfoo  1\n", "no carrier-transitions, Total Errors or Total Drops"),
        ("   operational\n-----  -----\ncarrier-transitions  many\n", "carrier-transitions: 'many' is not a counter"),
        (
            "   operational\n-----  -----\ncarrier-transitions  4\n\nError Counters\n====\n    Total Errors  1  2\n",
            "section 'Error Counters' has no header and dashed rule",
        ),
        (
            "   operational\n-----  -----\ncarrier-transitions  4\n\nError Counters\n====\n"
            "    Counter       Receive  Transmit\n    ------------  -------  --------\n    Total Errors  lots     0\n",
            "'lots' is not a counter",
        ),
        (
            "   operational\n-----  -----\ncarrier-transitions  4\n\nError Counters\n====\n"
            "    Counter       Receive  Transmit\n    ------------  -------  --------\n    Total Errors  1        2        3\n",
            "'2        3' is not a counter",
        ),
    ],
)
def test_foreign_text_is_a_parse_error(text, message):
    with pytest.raises(ParseError, match=message):
        parse_nvue_interface_counters(text)


def test_the_driver_reads_counters_and_keeps_that_form():
    d, fake = make(
        "nvue",
        answers={
            "nv show interface": SUMMARY,
            "nv show interface swp1 counters": fixture("switch", "nvue_interface_counters_nonzero.txt"),
            "nv show interface swp2 counters": fixture("switch", "real_nvue_interface_counters_cl519.txt"),
        },
    )
    res = d.error_counters(["swp1", "swp2", "swp99"])
    assert res == {
        "swp1": {"errors": {"in-errors": 12, "out-errors": 3}, "link_down": 4, "link_down_unit": "transitions", "missing": []},
        "swp2": {"errors": {"in-errors": 0, "out-errors": 0}, "link_down": 4, "link_down_unit": "transitions", "missing": []},
    }
    assert fake.sent == ["nv show interface", "nv show interface swp1 counters", "nv show interface swp2 counters"]


def test_a_switch_that_refuses_counters_is_read_through_link_stats_once_probed():
    d, fake = make(
        "nvue",
        answers={
            "nv show interface": SUMMARY,
            "nv show interface swp1 counters": REFUSED,
            "nv show interface swp1 link stats": fixture("counters", "nvue_link_stats_reference.txt"),
            "nv show interface swp2 link stats": fixture("counters", "nvue_link_stats_described.txt"),
        },
    )
    res = d.error_counters(["swp1", "swp2"])
    assert res["swp1"] == {"errors": {"in-errors": 0, "out-errors": 0}, "link_down": 6, "link_down_unit": "transitions", "missing": []}
    assert fake.sent == ["nv show interface", "nv show interface swp1 counters", "nv show interface swp1 link stats", "nv show interface swp2 link stats"]


def test_a_switch_that_answers_neither_form_names_both():
    d, _fake = make("nvue", answers={"nv show interface": SUMMARY, "nv show interface swp1 counters": REFUSED, "nv show interface swp1 link stats": "garbage"})
    with pytest.raises(SwitchError) as err:
        d.error_counters(["swp1"])
    msg = str(err.value)
    assert "no interface error counters" in msg
    assert f"'nv show interface swp1 counters': {REFUSED}" in msg
    assert "'nv show interface swp1 link stats': nv show interface link stats: no table under a '----' rule" in msg


def test_the_simulator_answers_counters_in_the_published_layout(tmp_path, monkeypatch):
    """The lab's rendering has the user guide's sections, columns and n/a cells: the published fixture and the
    simulator's output of a healthy port parse to the same tables (carrier-transitions aside)."""
    from switch_testlib import sim_driver

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    _d, sim = sim_driver(tmp_path, "nvue", ["swp1"])
    lab = parse_nvue_interface_counters(sim("nv show interface swp1 counters"))
    real = parse_nvue_interface_counters(fixture("switch", "real_nvue_interface_counters_cl519.txt"))
    assert lab["sections"] == real["sections"] and list(lab["top"]) == list(real["top"]) == ["carrier-transitions"]
    assert sim("nv show interface swp9 counters").startswith("Error: The requested item does not exist")
