"""The LLDP parsers (plugins/module_utils/parsers/lldp.py) on published outputs of NVUE, SONiC, EOS and
lldpd (fixtures/lldp/SOURCES.md) and on the refusals: every line read or named, never dropped unsaid.
The comparison of the tables with the inventory is tested in tests/unit/checks/test_cabling.py."""

import pytest

from parser_fixtures import fixture, fixture_source
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import lldp


def test_fixtures_of_published_outputs_name_their_source():
    for name in ("nvue_interface_lldp_cl5.txt", "sonic_lldp_table_2macs.txt", "eos_lldp_neighbors_sonic_mgmt.json", "lldpctl_json_one_interface.json"):
        assert fixture_source("lldp", name).startswith("https://")


def test_nvue_table_host_by_mac_switch_by_port_and_ports_without_neighbour():
    t = lldp.parse_nvue_lldp(fixture("lldp", "nvue_interface_lldp_cl5.txt"))
    assert t["neighbors"]["swp1"] == [
        {"system_name": "server01", "port_id": "48:b0:2d:76:ee:8e", "port_id_type": "mac", "port_descr": None, "chassis_id": None}
    ]
    assert t["neighbors"]["swp51"][0]["port_id"] == "swp1" and t["neighbors"]["swp51"][0]["port_id_type"] == "ifname"
    assert len(t["ports"]) == 10
    quiet = "Interface  Speed  Type  Remote Host  Remote Port\n---------  -----  ----  -----------  -----------\nswp9       400G   swp\n"
    assert lldp.parse_nvue_lldp(quiet) == {"neighbors": {}, "ports": ["swp9"], "warnings": []}


def test_sonic_table_keeps_two_neighbours_on_one_port_and_a_blank_system_name():
    t = lldp.parse_sonic_lldp_table(fixture("lldp", "sonic_lldp_table_2macs.txt"))
    assert [n["port_id"] for n in t["neighbors"]["Ethernet0"]] == ["00:00:00:00:00:01", "00:00:00:00:00:02"]
    assert t["neighbors"]["Ethernet0"][1]["port_descr"] == "Second MAC"
    t = lldp.parse_sonic_lldp_table(fixture("lldp", "sonic_lldp_table_composed_no_sysname.txt"))
    assert t["neighbors"]["eth0"][1] == {"system_name": None, "port_id": "a8:a1:59:45:23:3e", "port_id_type": "mac", "port_descr": None, "chassis_id": None}
    assert t["warnings"] == []


def test_sonic_table_count_disagreeing_is_a_warning():
    text = fixture("lldp", "sonic_lldp_table_2macs.txt").replace("displayed:  2", "displayed:  3")
    assert lldp.parse_sonic_lldp_table(text)["warnings"] == ["the table says 3 entries, 2 were read"]


def test_eos_json_and_empty_table():
    t = lldp.parse_eos_lldp_neighbors(fixture("lldp", "eos_lldp_neighbors_sonic_mgmt.json"))
    assert t["neighbors"]["Ethernet4"][0]["system_name"] == "vlab-03"
    assert t["neighbors"]["Ethernet7"][0]["port_id"] == "fortyGigE0/0"
    assert lldp.parse_eos_lldp_neighbors(fixture("lldp", "eos_lldp_neighbors_empty.json"))["neighbors"] == {}


def test_lldpctl_one_interface_object_and_many_interfaces_list():
    one = lldp.parse_lldpctl_json(fixture("lldp", "lldpctl_json_one_interface.json"))
    assert one["neighbors"]["eth0"] == [
        {"system_name": "ns-2.example.com", "port_id": "00:00:00:00:00:02", "port_id_type": "mac", "port_descr": "eth1", "chassis_id": "00:00:00:00:00:02"}
    ]
    many = lldp.parse_lldpctl_json(fixture("lldp", "lldpctl_json_composed_many.json"))
    assert many["ports"] == ["eth0", "enp65s0f0np0", "enp66s0f0np0"]
    assert many["neighbors"]["enp65s0f0np0"][0]["system_name"] == "leaf01"
    assert many["neighbors"]["enp66s0f0np0"][0]["system_name"] is None
    assert many["neighbors"]["enp66s0f0np0"][0]["port_id_type"] == "local"
    assert lldp.parse_lldpctl_json('{"lldp": {}}')["neighbors"] == {}


@pytest.mark.parametrize(
    "parser,text,where",
    [
        (lldp.parse_nvue_lldp, "Error: The requested item does not exist.", "Error"),
        (lldp.parse_sonic_lldp_table, "Usage: show [OPTIONS] COMMAND\n", "line 1"),
        (lldp.parse_eos_lldp_neighbors, '{"errors": ["Invalid input"]}', "Invalid input"),
        (lldp.parse_eos_lldp_neighbors, "% Invalid input", "% Invalid input"),
        (lldp.parse_lldpctl_json, "lldpctl: unable to connect to socket /run/lldpd.socket", "not JSON"),
        (lldp.parse_lldpctl_json, '{"lldp": {"interface": ["eth0"]}}', "not an object"),
    ],
)
def test_errors_raise_parse_error(parser, text, where):
    with pytest.raises(ParseError, match=where):
        parser(text)


def test_normalize_mac_forms():
    assert lldp.normalize_mac("0C-42-A1-01-00-00") == "0c:42:a1:01:00:00"
    assert lldp.normalize_mac("0c42.a101.0000") == "0c:42:a1:01:00:00"
    assert lldp.normalize_mac("swp1") is None


def test_parsers_exact_errors_blank_lines_misfit_rows_and_a_header_alone():
    with pytest.raises(ParseError) as e:
        lldp.parse_eos_lldp_neighbors("% Invalid input (privileged mode required)\n")
    assert str(e.value) == "show lldp neighbors: % Invalid input (privileged mode required)"
    with pytest.raises(ParseError) as e:
        lldp.parse_lldpctl_json('{"interfaces": []}')
    assert str(e.value) == "lldpctl -f json: no 'lldp' object"
    table = (
        "Interface  Speed  Type  Remote Host  Remote Port\n"
        "---------  -----  ----  -----------  -----------\n"
        "swp1       400G   swp   node1        0c:42:a1:01:00:00\n"
        "\n"
        "swp2xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 400G\n"
        "swp3       400G   swp   leaf9        swp7\n"
    )
    assert lldp.parse_nvue_lldp(table) == {
        "neighbors": {
            "swp1": [{"system_name": "node1", "port_id": "0c:42:a1:01:00:00", "port_id_type": "mac", "port_descr": None, "chassis_id": None}],
            "swp3": [{"system_name": "leaf9", "port_id": "swp7", "port_id_type": "ifname", "port_descr": None, "chassis_id": None}],
        },
        "ports": ["swp1", "swp3"],
        "warnings": ["line 5: 'swp2xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 400G' does not fit the table's columns: not read"],
    }
    assert lldp.parse_nvue_lldp("Interface  Speed  Type  Remote Host  Remote Port\n") == {"neighbors": {}, "ports": [], "warnings": []}


def test_eos_detail_reads_the_port_description_and_an_empty_quoted_system_name():
    detail = (
        "Interface Ethernet1 detected 1 LLDP neighbors:\n\n"
        '  Neighbor 0c42.a101.0000/"0c42.a101.0000", age 3 seconds\n'
        "  - Chassis ID type: MAC address (4)\n    Chassis ID     : 0c42.a101.0000\n"
        "  - Port ID type: MAC address (3)\n    Port ID     : 0c42.a101.0000\n"
        '  - Port Description: "enp65s0f0np0"\n  - System Name: ""\n'
    )
    assert lldp.parse_eos_lldp_neighbors(detail) == {
        "neighbors": {
            "Ethernet1": [
                {"system_name": None, "port_id": "0c42.a101.0000", "port_id_type": "mac", "port_descr": "enp65s0f0np0", "chassis_id": "0c42.a101.0000"}
            ]
        },
        "ports": ["Ethernet1"],
        "warnings": [],
    }


@pytest.mark.parametrize(
    "parser,text,message",
    [
        (
            lldp.parse_sonic_lldp_table,
            "LocalPort    RemoteDevice    RemotePortID    Capability    RemotePortDescr\n"
            "-----------  --------------  --------------  ------------  -----------------\n"
            "             leaf9           Ethernet1       BR            x\n",
            "show lldp table: line 3: 'leaf9           Ethernet1       BR            x' has no LocalPort",
        ),
        (
            lldp.parse_sonic_lldp_table,
            "\nUsage: show [OPTIONS] COMMAND\n",
            "show lldp table: line 1: 'Usage: show [OPTIONS] COMMAND': no 'LocalPort ...' table header",
        ),
        (
            lldp.parse_eos_lldp_neighbors,
            '{"lldpNeighbors": [{"port": "Ethernet1", "neighborDevice": 5, "neighborPort": "x"}]}',
            "show lldp neighbors: lldpNeighbors[0] (Ethernet1): neighborDevice/neighborPort is not text",
        ),
    ],
)
def test_parser_refusals_exact(parser, text, message):
    with pytest.raises(ParseError) as err:
        parser(text)
    assert str(err.value) == message


def test_lldp_tables_exact_rows_ports_and_what_follows_the_total():
    t = lldp.parse_sonic_lldp_table(fixture("lldp", "sonic_lldp_table_2macs.txt") + "admin@sonic:~$ exit\n")
    assert t["ports"] == ["Ethernet0"] and t["warnings"] == []
    eos = (
        "Port       Neighbor Device ID             Neighbor Port ID           TTL\n"
        "           localhost                      Ethernet9                  120\n"
        "Et2        localhost                      Ethernet2                  120\n"
    )
    assert lldp.parse_eos_lldp_neighbors(eos) == {
        "neighbors": {"Ethernet2": [{"system_name": "localhost", "port_id": "Ethernet2", "port_id_type": "ifname", "port_descr": None, "chassis_id": None}]},
        "ports": ["Ethernet2"],
        "warnings": ["line 2: 'localhost                      Ethernet9                  120' has no Port: not read"],
    }
    detail = (
        "Interface Ethernet1 detected 0 LLDP neighbors:\n\n  nothing here\n"
        'Interface Ethernet2 detected 1 LLDP neighbors:\n\n  Neighbor 2cc2.6081.eaf9/"Ethernet2", age 12 seconds\n'
        '    Port ID     : "Ethernet2"\n  - System Name: "spine2"\n'
    )
    assert lldp.parse_eos_lldp_neighbors(detail) == {
        "neighbors": {"Ethernet2": [{"system_name": "spine2", "port_id": "Ethernet2", "port_id_type": "ifname", "port_descr": None, "chassis_id": None}]},
        "ports": ["Ethernet1", "Ethernet2"],  # issue 38: a line of no neighbour is named, not dropped
        "warnings": ["line 3: not read (before any 'Neighbor' line of Ethernet1): 'nothing here'"],
    }
    wrapped = '{"lldp": [{"interface": {"eth0": {"chassis": {"sw": {"id": {"value": "x"}}}, "port": {"id": {"type": "ifname", "value": "swp1"}}}}}]}'
    assert lldp.parse_lldpctl_json(wrapped)["neighbors"] == {
        "eth0": [{"system_name": "sw", "port_id": "swp1", "port_id_type": "ifname", "port_descr": None, "chassis_id": "x"}]
    }


NVUE_HEAD = "Interface  Speed  Type  Remote Host  Remote Port\n---------  -----  ----  -----------  -----------\n"


@pytest.mark.parametrize(
    "parser,text,message",
    [
        (
            lldp.parse_nvue_lldp,
            NVUE_HEAD + "swp1xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 400G\nswp2yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy 400G\n",
            "nv show interface lldp: line 3: 'swp1xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 400G' does not fit the table's columns",
        ),
        (lldp.parse_nvue_lldp, "Interface  Speed  Type  Remote Host\n", "nv show interface lldp: line 1: header lacks column 'Remote Port'"),
        (lldp.parse_nvue_lldp, "Error: The requested item does not exist.\n", "nv show interface lldp: Error: The requested item does not exist."),
        (
            lldp.parse_lldpctl_json,
            '{"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"value": "x"}}}, "port": "swp1"}}}}',
            "lldpctl -f json: interface eth0: port/chassis is not an object",
        ),
        (lldp.parse_lldpctl_json, None, "lldpctl -f json: no output"),
    ],
)
def test_more_parser_refusals_exact(parser, text, message):
    with pytest.raises(ParseError) as err:
        parser(text)
    assert str(err.value) == message


def test_parsers_no_output_an_empty_lldpd_and_a_lag_port_id_that_is_not_the_neighbours():
    with pytest.raises(ParseError) as err:
        lldp.parse_sonic_lldp_table("")
    assert str(err.value) == "show lldp table: no output"
    assert lldp.parse_lldpctl_json('{"lldp": {}}') == {"neighbors": {}, "ports": [], "warnings": []}
    detail = (
        "Interface Ethernet1 detected 1 LLDP neighbors:\n\n"
        '  Neighbor 2cc2.6081.eaf9/"Ethernet1", age 12 seconds\n'
        '  - Chassis ID type: MAC address (4)\n    Chassis ID     : 2cc2.6081.eaf9\n  - System Name: "spine2"\n'
        "  - IEEE802.1/IEEE802.3 Link Aggregation\n    Link Aggregation Status: Capable, Disabled (0x01)\n"
        "    Port ID                : 0\n"
    )
    assert lldp.parse_eos_lldp_neighbors(detail)["neighbors"] == {
        "Ethernet1": [{"system_name": "spine2", "port_id": None, "port_id_type": None, "port_descr": None, "chassis_id": "2cc2.6081.eaf9"}]
    }


def test_eos_lldp_detail_names_a_tlv_line_it_does_not_know():
    text = fixture("lldp", "real_eos_lldp_neighbors_detail_ntc.txt")
    assert lldp.parse_eos_lldp_neighbors(text)["warnings"] == []
    line = '    Port ID     : "Ethernet1"'
    assert line in text
    res = lldp.parse_eos_lldp_neighbors(text.replace(line, '    Zq_unexpected_Name     : "Ethernet1"', 1))
    assert res["neighbors"]["Ethernet1"][0]["port_id"] is None
    assert res["warnings"] == ["line 8: not read: 'Zq_unexpected_Name     : \"Ethernet1\"'"]
