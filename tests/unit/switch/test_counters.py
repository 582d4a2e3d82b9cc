"""Unit tests for plugins/module_utils/switch/counters.py on published real outputs (tests/unit/fixtures/counters/SOURCES.md)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import (
    parse_eos_pfc_counters,
    parse_nvue_roce_counters,
    parse_sonic_pfc_counters,
    parse_sonic_queue_counters,
)


def fx(name):
    return fixture("counters", name)


# ---------------------------------------------------------------- switches
def test_sonic_pfc_counters_unit_test_output():
    r = parse_sonic_pfc_counters(fx("sonic_pfc_counters_unittest.txt"))
    assert r["rx"]["Ethernet0"][0] == 1200 and r["rx"]["Ethernet8"][7] == 807
    assert r["tx"]["Ethernet4"][3] == 413 and set(r["tx"]) == {"Ethernet0", "Ethernet4", "Ethernet8"}


def test_sonic_pfc_counters_docs_indented():
    r = parse_sonic_pfc_counters(fx("sonic_pfc_counters_docs.txt"))
    assert set(r["rx"]) == {"Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"}
    assert r["tx"]["Ethernet12"] == {p: 0 for p in range(8)}


def test_sonic_pfc_counters_errors():
    with pytest.raises(ParseError, match="counters for 8 priorities"):
        parse_sonic_pfc_counters("  Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7\nEthernet0 1 2\n")
    with pytest.raises(ParseError, match="before a 'Port Rx/Tx"):
        parse_sonic_pfc_counters("Ethernet0 1 2 3 4 5 6 7 8\n")


def test_nvue_roce_counters_cl512():
    r = parse_nvue_roce_counters(fx("nvue_roce_counters_cl512.txt"))
    assert r["rx_pause"] == 0 and r["tx_pause"] == 0 and r["ecn_marked"] == 693777677344
    assert r["rx_roce_discards"] == 0 and r["tx_roce_discards"] == 663060754115 and r["cnp_tx"] == 0
    assert r["tree"]["rx-stats"]["rx-non-roce-stats"]["non-roce-bytes"] == 56520000
    assert r["tree"]["tx-stats"]["tx-roce-stats"]["buffer-usage"] == 7290000


def test_nvue_errors():
    with pytest.raises(ParseError, match="No Data"):
        parse_nvue_roce_counters("No Data\n")
    with pytest.raises(ParseError, match="no table"):
        parse_nvue_roce_counters("operational applied\nrx-stats\n")


def test_eos_pfc_counters_eapi_revision3():
    doc = {"interfaceCounters": {"Ethernet3/1/1": {"rxFrames": 1, "txFrames": 0}, "Ethernet3/2/1": {"rxFrames": 0, "txFrames": 2}}}
    assert parse_eos_pfc_counters(doc)["ports"]["Ethernet3/2/1"] == {"rx": 0, "tx": 2}
    with pytest.raises(ParseError, match="rxFrames/txFrames missing"):
        parse_eos_pfc_counters({"interfaceCounters": {"Ethernet1": {"rxFrames": 1}}})
    with pytest.raises(ParseError, match="not JSON"):
        parse_eos_pfc_counters("% Invalid input")


def test_sonic_queue_counters_unit_test_output():
    q = parse_sonic_queue_counters(fx("sonic_queue_counters_unittest.txt"))
    e0 = q["ports"]["Ethernet0"]
    assert e0["UC3"] == {"type": "UC", "index": 3, "pkts": 71, "bytes": 33, "drop_pkts": 53, "drop_bytes": 71}
    assert e0["MC9"]["type"] == "MC" and "ecn_marked_pkts" not in q["columns"]


def test_sonic_queue_counters_with_ecn_statistics():
    q = parse_sonic_queue_counters(fx("sonic_queue_counters_ecn_hld.txt"))
    assert q["ports"]["Ethernet16"]["UC1"]["ecn_marked_pkts"] == 1
    assert q["ports"]["Ethernet16"]["UC1"]["ecn_marked_bytes"] == 120


def test_sonic_queue_counters_all_with_na():
    q = parse_sonic_queue_counters(fx("sonic_queue_counters_trim_all.txt"))
    e0 = q["ports"]["Ethernet0"]
    assert e0["UC0"]["drop_pkts"] is None and e0["UC1"]["drop_pkts"] == 100 and e0["UC1"]["trim_sent_pkts"] == 50


@pytest.mark.parametrize(
    "text, match",
    [
        ("     Port    TxQ    Bogus/pkts\n", "line 1: .*no counter column this parser knows"),
        ("Ethernet0    UC0     1\n", "before the 'Port TxQ"),
        ("     Port    TxQ    Counter/pkts\nEthernet0    XX0     1\n", "is not a queue"),
        ("     Port    TxQ    Counter/pkts\nEthernet0    UC0     1  2\n", "2 values for 1 columns"),
    ],
)
def test_sonic_queue_counters_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_sonic_queue_counters(text)


def test_sonic_interface_counters_of_a_namespace_and_their_rates():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_sonic_intf_counters

    text = (
        "For namespace asic0:\n"
        "      IFACE    STATE    RX_OK       RX_BPS    RX_UTIL    RX_ERR    RX_DRP    RX_OVR    TX_OK       TX_BPS"
        "    TX_UTIL    TX_ERR    TX_DRP    TX_OVR\n"
        "-----------  -------  -------  -----------  ---------  --------  --------  --------  -------  -----------"
        "  ---------  --------  --------  --------\n"
        "  Ethernet0        U       10  653.87 MB/s     12.77%         1         2         3       20   2.00 KB/s"
        "      0.01%         4         5         6\n"
    )
    assert parse_sonic_intf_counters(text) == {
        "ports": {"Ethernet0": {"state": "U", "RX_OK": 10, "RX_ERR": 1, "RX_DRP": 2, "RX_OVR": 3, "TX_OK": 20, "TX_ERR": 4, "TX_DRP": 5, "TX_OVR": 6}},
        "columns": ["RX_OK", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_ERR", "TX_DRP", "TX_OVR"],
        "other_columns": ["RX_BPS", "RX_UTIL", "TX_BPS", "TX_UTIL"],
    }  # named, not read (issue 38)


@pytest.mark.parametrize(
    "text,message",
    [
        ("IFACE  STATE  RX_OK  TX_OK\n", "line 1: 'IFACE  STATE  RX_OK  TX_OK': no RX_ERR/TX_ERR column"),
        ("Ethernet0  U  1\n", "line 1: 'Ethernet0  U  1' before the 'IFACE ...' header"),
        ("Last cached time was 2024-01-01T00:00:00\n\n", "no 'IFACE ...' header"),
    ],
)
def test_sonic_interface_counters_refusals_exact(text, message):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_sonic_intf_counters

    with pytest.raises(ParseError) as err:
        parse_sonic_intf_counters(text)
    assert str(err.value) == f"show interfaces counters: {message}"


@pytest.mark.parametrize(
    "text,message",
    [
        ("Error: The requested item does not exist.\n", "Error: The requested item does not exist."),
        ("                     operational  applied\n-------------------  -----------  -------\nin-errors            x\n", "in-errors: 'x' is not a counter"),
        ("in-errors  0\n", "no table under a '----' rule"),
    ],
)
def test_nvue_link_stats_refusals_exact(text, message):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_nvue_link_stats

    with pytest.raises(ParseError) as err:
        parse_nvue_link_stats(text)
    assert str(err.value) == f"nv show interface link stats: {message}"


def test_switch_counter_parsers_blank_lines_none_and_eos_rows_without_frames():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_nvue_link_stats, parse_sonic_intf_counters

    text = "                     operational  applied\n-------------------  -----------  -------\nin-errors            3\n\nout-errors           4\n"
    assert parse_nvue_link_stats(text) == {
        "stats": {"in-errors": 3, "out-errors": 4},
        "in-errors": 3,
        "in-drops": None,
        "out-errors": 4,
        "out-drops": None,
        "carrier-transitions": None,
    }
    with pytest.raises(ParseError) as err:
        parse_sonic_intf_counters(None)
    assert str(err.value) == "show interfaces counters: no output"
    for row in ("5", '{"rxFrames": 1}'):
        with pytest.raises(ParseError) as err:
            parse_eos_pfc_counters('{"interfaceCounters": {"Et1": %s}}' % row)
        assert str(err.value) == "show priority-flow-control counters: Et1: rxFrames/txFrames missing"
