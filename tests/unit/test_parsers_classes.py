"""The five failure classes of issue 23 ("Parsers against published real outputs"), each on a
published real-format fixture (its ``#source:`` line names the repository, file, commit and lines).

1. strict gates: read the known parts, warn about the rest, ParseError only when nothing is usable;
2. right-aligned cells of fixed-width tables placed by the header's spans;
3. NCCL fallbacks of optional features are not the job's fatal error;
4. an echoed command line with a ``<placeholder>`` keeps its argv;
5. ``mlxconfig set`` outcome, ``ibstatus``, the perftest latency tests and ``ib_send_bw``.
"""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils import common, counters, lldp, switch_counters
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import eos, nvue


# ------------------------------------------------------------------ 1. strict gates

def test_ethtool_filtered_listing_without_banner_is_read():
    # `ethtool -S <dev> | grep prio` prints no 'NIC statistics:' banner: the counters are still the counters
    full = fixture("counters", "ethtool_mlx5_cx6dx_k5.15.txt")
    filtered = "".join(line + "\n" for line in full.splitlines() if "prio0" in line)
    assert "NIC statistics" not in filtered and filtered.count("\n") >= 3
    res = counters.parse_ethtool_stats(filtered)
    assert res["warnings"] == []
    assert res["stats"] == {k: v for k, v in counters.parse_ethtool_stats(full)["stats"].items() if "prio0" in k}
    assert counters.mlx5_priority_counters(res["stats"])[0]["rx_bytes"] > 0


def test_ethtool_unreadable_line_is_a_warning_and_nothing_readable_is_an_error():
    res = counters.parse_ethtool_stats("NIC statistics:\n     rx_packets: 12\n     garbage here\n")
    assert res["stats"] == {"rx_packets": 12}
    assert res["warnings"] == ["line 3: 'garbage here' is not 'name: value'"]
    with pytest.raises(ParseError, match=r"ethtool -S: line 1: 'garbage' is not 'name: value'"):
        counters.parse_ethtool_stats("garbage\n")
    with pytest.raises(ParseError, match="no stats available"):
        counters.parse_ethtool_stats("no stats available\n")


def test_sonic_wredcounters_columns_are_read():
    res = switch_counters.parse_sonic_queue_counters(fixture("counters", "sonic_queue_counters_wred_unittest.txt"))
    assert res["columns"] == ["wred_drop_pkts", "wred_drop_bytes", "ecn_marked_pkts", "ecn_marked_bytes"]
    assert res["warnings"] == []
    assert res["ports"]["Ethernet0"]["UC1"] == {"type": "UC", "index": 1, "wred_drop_pkts": 60,
                                                 "wred_drop_bytes": 43, "ecn_marked_pkts": 39,
                                                 "ecn_marked_bytes": 1}
    assert res["ports"]["Ethernet0"]["ALL20"]["ecn_marked_pkts"] is None
    assert len(res["ports"]["Ethernet0"]) == 30


def test_sonic_queue_table_with_an_unknown_column_reads_the_known_ones():
    text = fixture("counters", "sonic_queue_counters_wred_unittest.txt").replace("WredDrp/bytes", "Future/bytes")
    res = switch_counters.parse_sonic_queue_counters(text)
    assert res["warnings"] == ["column 'Future/bytes' is not read (unknown to this parser)"]
    assert res["columns"] == ["wred_drop_pkts", "ecn_marked_pkts", "ecn_marked_bytes"]
    assert res["ports"]["Ethernet0"]["UC2"] == {"type": "UC", "index": 2, "wred_drop_pkts": 82,
                                                 "ecn_marked_pkts": 39, "ecn_marked_bytes": 21}


@pytest.mark.parametrize("name, ports, first", [
    ("real_eos_lldp_neighbors_ntc.txt", ["Ethernet1", "Ethernet2", "Ethernet3/1", "Management1/1"],
     ("Ethernet3/1", "tg104.sjc.aristanetworks.com", "Ethernet3/2")),
    ("real_eos_lldp_neighbors_ntc_rule.txt", ["Ethernet%d" % i for i in range(2, 8)],
     ("Ethernet4", "arista2", "Ethernet4")),
])
def test_eos_lldp_neighbors_text(name, ports, first):
    res = lldp.parse_eos_lldp_neighbors(fixture("lldp", name))
    assert res["ports"] == ports and res["warnings"] == []
    port, system, rport = first
    assert res["neighbors"][port] == [{"system_name": system, "port_id": rport, "port_id_type": "ifname",
                                       "port_descr": None, "chassis_id": None}]


def test_eos_lldp_neighbors_detail_text():
    res = lldp.parse_eos_lldp_neighbors(fixture("lldp", "real_eos_lldp_neighbors_detail_ntc.txt"))
    assert res["ports"] == ["Ethernet1", "Ethernet2", "Ethernet3"]
    assert res["neighbors"]["Ethernet2"] == [{"system_name": "spine2.company.com", "port_id": "Ethernet2",
                                              "port_id_type": "ifname", "port_descr": None,
                                              "chassis_id": "2cc2.6081.eaf9"}]


def test_eos_lldp_json_stays_first_and_text_errors_are_errors():
    assert lldp.parse_eos_lldp_neighbors('{"lldpNeighbors": []}')["ports"] == []
    with pytest.raises(ParseError, match=r"% Invalid input"):
        lldp.parse_eos_lldp_neighbors("% Invalid input (at token 1: 'lldp')\n")
    with pytest.raises(ParseError, match=r"no 'Port \.\.\.' table header"):
        lldp.parse_eos_lldp_neighbors("Last table change time   : 0:00:02 ago\n")


def test_lldp_table_unknown_column_is_a_warning():
    text = fixture("lldp", "real_eos_lldp_neighbors_ntc.txt").replace("TTL", "Age")
    res = lldp.parse_eos_lldp_neighbors(text)
    assert res["warnings"] == ["column 'Age' is not read (unknown to this parser)"]
    assert len(res["ports"]) == 4


# ------------------------------------------------------------------ 2. right-aligned cells

def test_eos_right_aligned_speed_cell_starting_left_of_its_header():
    text = fixture("switch", "real_eos_interfaces_status_ntc_unconf.txt")
    row = next(line for line in text.splitlines() if line.startswith("Et3/1/4"))
    header = text.splitlines()[0]
    assert row.index("unconf 40G") < header.index("Speed")   # the cell starts before its header word
    status = eos.parse_interfaces_status(text)
    assert status["Ethernet3/1/4"] == {"up": False, "status": "inactive"}
    assert status["Ethernet3/1/1"] == {"up": True, "status": "connected"}
    assert len(status) == 6


def test_split_columns_places_cells_by_the_header_spans():
    header = "Port       Name   Status       Vlan     Duplex Speed  Type"
    spans = common.column_spans(header, words=True)
    assert spans[5] == ("Speed", 47, 52)
    row = "Et1        a b    connected    1        full  unconf  40GBASE-CR4"
    assert row.index("unconf") == 46
    assert common.split_columns(row, spans) == {
        "Port": "Et1", "Name": "a b", "Status": "connected", "Vlan": "1", "Duplex": "full",
        "Speed": "unconf", "Type": "40GBASE-CR4"}
    # right-aligned numbers end at the header's end, however wide
    spans = common.column_spans("Port        FCS  Align", words=True)
    assert common.split_columns("Et1   123456789  0", spans) == {"Port": "Et1", "FCS": "123456789", "Align": "0"}
    # a left-aligned cell that runs into the next column's header (not ending with it) does not fit
    assert common.split_columns("Et1     connectedXXX", common.column_spans("Port   Status  Vlan", words=True)) is None
    # a cell of several words keeps its text; a blank cell is ""
    assert common.split_columns("a  b   c", [("A", 0, 1), ("B", 3, 4), ("C", 9, 10)]) == {"A": "a", "B": "b   c", "C": ""}
