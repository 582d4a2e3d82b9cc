"""Unit tests for plugins/module_utils/parsers/linkhealth.py on published real outputs (tests/unit/fixtures/counters/SOURCES.md)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import (
    IB_ERROR_COUNTERS,
    ber_value,
    parse_ibqueryerrors,
    parse_mlxlink,
    parse_perfquery,
)


def fx(name):
    return fixture("counters", name)


# ---------------------------------------------------------------- perfquery
def test_perfquery_extended_hca():
    p = parse_perfquery(fx("perfquery_extended_pcx.txt"))["ports"]
    assert len(p) == 1 and p[0]["lid"] == 1719 and p[0]["port"] == 1 and p[0]["extended"]
    c = p[0]["counters"]
    assert c["PortXmitData"] == 36298026860928 and c["PortXmitWait"] == 22730501 and c["CounterSelect"] == 0
    assert all(c[k] == 0 for k in IB_ERROR_COUNTERS)


def test_perfquery_basic_switch_port():
    p = parse_perfquery(fx("perfquery_basic_switch.txt"))["ports"][0]
    assert p["lid"] == 3 and not p["extended"] and p["capmask"] == "0x1B01"
    assert p["counters"]["SymbolErrorCounter"] == 0 and p["counters"]["CounterSelect2"] == 0


@pytest.mark.parametrize(
    "text, match",
    [
        ("ibwarn: [1234] mad_rpc_open_port: can't open UMAD port ((null):0)\n", "can't open"),
        ("SymbolErrorCounter:..............0\n", "not a perfquery counter line"),
        ("# Port counters: Lid 3 port 1\nSymbolErrorCounter:........x\n", "not a number"),
        ("# Port counters: Lid 3 port 1\nthis is not it\n", "line 2"),
    ],
)
def test_perfquery_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_perfquery(text)


# ---------------------------------------------------------------- mlxlink
def test_mlxlink_mft_4_30_bluefield3():
    r = parse_mlxlink(fx("mlxlink_bf3_mft4.30.txt"))
    assert r["state"] == "Active" and r["physical_state"] == "LinkUp" and r["speed"] == "100G"
    assert r["fec"] == "Standard RS-FEC - RS(528,514)" and r["recommendation"] == "No issue was observed"
    assert r["effective_errors"] == 0 and r["raw_errors_per_lane"] == [0, 0, 0, 0]
    assert r["effective_ber"] == pytest.approx(1.5e-254) and r["link_down"] == 0
    assert r["time_since_clear_min"] == pytest.approx(25074.8)
    assert r["sections"]["Tool Information"]["MFT Version"] == "mft 4.30.1-8"
    assert r["sections"]["Module Info"]["Attenuation (5g,7g,12g)[dB]"] == "0,0,0"


def test_ber_values():
    assert ber_value("15E-255") == pytest.approx(1.5e-254)
    assert ber_value("1E-13") == pytest.approx(1e-13) and ber_value("N/A") is None
    with pytest.raises(ValueError):
        ber_value("high")


def _mlxlink_coloured(text, coloured):
    """``text`` as mlxlink writes it to a pipe on Linux (mstflint mlxlink_record.cpp): a coloured
    record gets the colour code before its value and the reset after its newline, i.e. at the
    start of the next line (a section's last record leaves a line holding only the reset)."""
    out, pending = [], ""
    for line in text.splitlines():
        key, sep, value = line.partition(" : ")
        if sep and key.strip() in coloured:
            out.append(pending + key + sep + "\x1b[32m" + value.lstrip())
            pending = "\x1b[0m"
        else:
            out.append(pending + line)
            pending = ""
    return "\n".join(out) + "\n" + pending


def test_mlxlink_colour_codes_in_captured_output():
    coloured = {"State", "Physical state", "Recommendation", "Effective Physical BER", "Raw Physical BER", "Effective Physical Errors", "Link Down Counter"}
    text = _mlxlink_coloured(fx("mlxlink_bf3_mft4.30.txt"), coloured)
    assert "\x1b[0mPhysical state" in text and "\n\x1b[0m\n" in text
    r = parse_mlxlink(text)
    plain = parse_mlxlink(fx("mlxlink_bf3_mft4.30.txt"))
    assert r == plain
    assert r["physical_state"] == "LinkUp" and r["effective_ber"] == pytest.approx(1.5e-254)
    assert "\x1b[0mPhysical state" not in r["sections"]["Operational Info"]
    with pytest.raises(ParseError, match="not an mlxlink BER"):  # what a colour code hides stays an error
        parse_mlxlink("\x1b[31mPhysical Counters and BER Info\n---\nRaw Physical BER : \x1b[31mhigh\n\x1b[0m")


@pytest.mark.parametrize(
    "text, match",
    [
        ("-E- Failed to open device: mlx5_9\n", "Failed to open device"),
        ("State : Active\n", "inside a section"),
        ("Physical Counters and BER Info\n------\nEffective Physical BER : lots\n", "not an mlxlink BER"),
        ("Physical Counters and BER Info\n------\nRaw Physical Errors Per Lane : 0,x\n", "not a list of numbers"),
    ],
)
def test_mlxlink_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_mlxlink(text)


def test_ibqueryerrors_ca():
    r = parse_ibqueryerrors(fx("ibqueryerrors_ca_mailinglist.txt"))
    assert r["nodes"] == [
        {
            "guid": None,
            "name": "rd240 mlx4_0",
            "ports": {1: {"PortXmitWait": 4294967295}, 2: {"PortXmitWait": 1}},
            # a CA's "Errors for" line has no GUID: its port lines name the port GUIDs
            "port_guids": {1: "0xe41d2d0300e0bae1", 2: "0xe41d2d0300e0bae2"},
        }
    ]
    assert r["summary"] == {"nodes_checked": 4, "bad_nodes": 4, "ports_checked": 43, "bad_ports": 14}
    assert r["thresholds"] == "" and r["suppressed"] == []


def test_ibqueryerrors_switch_port_and_all():
    r = parse_ibqueryerrors(fx("ibqueryerrors_switch_ibsim.txt"))
    sw = r["nodes"][0]
    assert sw["guid"] == "0x200002" and sw["name"] == "hxa-su1-leaf-r1"
    assert sw["ports"][33] == {"SymbolErrorCounter": 250, "LinkDownedCounter": 3} and "ALL" in sw["ports"]
    assert r["summary"]["bad_ports"] == 1


def test_ibqueryerrors_of_the_real_infiniband_diags_against_the_lab_subnet():
    # infiniband-diags 44.0 ibqueryerrors --threshold-file /dev/null against ibsim 0.10 (the lab-ib net file)
    r = parse_ibqueryerrors(fx("ibqueryerrors_lab_ibsim_errors.txt"))
    assert [(n["guid"], n["name"]) for n in r["nodes"]] == [("0xe41d2d0300a00003", "spine1"), (None, "node2 mlx5_0"), ("0xe41d2d0300a00001", "leaf1")]
    assert r["nodes"][1]["ports"] == {1: {"PortRcvErrors": 7}}
    assert r["nodes"][1]["port_guids"] == {1: "0xa088c20300000201"}
    assert r["nodes"][2]["ports"][7] == {"SymbolErrorCounter": 250, "LinkDownedCounter": 3}
    assert r["summary"] == {"nodes_checked": 7, "bad_nodes": 3, "ports_checked": 112, "bad_ports": 3}
    clean = parse_ibqueryerrors(fx("ibqueryerrors_lab_ibsim_clean.txt"))
    assert clean["nodes"] == [] and clean["summary"]["bad_ports"] == 0 and clean["thresholds"] == ""


def test_ibqueryerrors_clean_fabric_has_only_a_summary():
    r = parse_ibqueryerrors("\n## Summary: 5 nodes checked, 0 bad nodes found\n##          42 ports checked, 0 ports have errors beyond threshold\n")
    assert r["nodes"] == [] and r["summary"]["bad_ports"] == 0


@pytest.mark.parametrize(
    "text, match",
    [
        ("ibwarn: [123] mad_rpc_open_port: can't open UMAD port\n", "can't open"),
        ("   GUID 0x1 port 1: [PortRcvErrors == 5]\n", "before an 'Errors for' line"),
        ('Errors for "x"\n   GUID 0x1 port 1: PortRcvErrors 5\n', "no '\\[Counter == value\\]'"),
        ('Errors for "x"\nsomething else\n', "not an ibqueryerrors line"),
    ],
)
def test_ibqueryerrors_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_ibqueryerrors(text)


# ---------------------------------------------------------------- exact refusals and edge layouts (mutation testing)


@pytest.mark.parametrize(
    "parse,text,message",
    [
        (
            parse_perfquery,
            "perfquery: iberror: [31270] main: can't resolve destination port 99\n",
            "perfquery: perfquery: iberror: [31270] main: can't resolve destination port 99",
        ),
        (parse_ibqueryerrors, "ibqueryerrors: iberror: failed to open the umad port\n", "ibqueryerrors: ibqueryerrors: iberror: failed to open the umad port"),
        (parse_mlxlink, "\x1b[0m\n", "mlxlink: no section (Operational Info ...)"),  # colour codes and nothing else
    ],
)
def test_tool_errors_are_refused_naming_the_tool_and_the_line(parse, text, message):
    with pytest.raises(ParseError) as err:
        parse(text)
    assert str(err.value) == message


def test_mlxlink_per_lane_errors_left_blank_are_none_not_a_refusal():
    text = fx("mlxlink_bf3_mft4.30.txt").replace("Raw Physical Errors Per Lane       : 0,0,0,0", "Raw Physical Errors Per Lane       : ")
    assert parse_mlxlink(text)["raw_errors_per_lane"] is None


@pytest.mark.parametrize(
    "parse,text,message",
    [
        (parse_mlxlink, "mlxlink: No such device mlx5_9\n", "mlxlink: mlxlink: No such device mlx5_9"),
        (
            parse_ibqueryerrors,
            "ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (Lid 5)\n",
            "ibqueryerrors: ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (Lid 5)",
        ),
    ],
)
def test_device_and_mad_errors_are_refused_exact(parse, text, message):
    with pytest.raises(ParseError) as err:
        parse(text)
    assert str(err.value) == message


def test_a_module_named_optical_by_its_cable_type_alone_with_its_serial():
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import module_info

    assert module_info(
        {
            "Identifier": "OSFP",
            "Cable Type": "Optical Module (separated)",
            "Vendor Name": "NVIDIA",
            "Vendor Part Number": "MMA4Z00-NS",
            "Vendor Serial Number": "MT2312FT01234",
        }
    ) == {
        "identifier": "OSFP",
        "cable_technology": None,
        "cable_type": "Optical Module (separated)",
        "vendor": "NVIDIA",
        "part_number": "MMA4Z00-NS",
        "serial": "MT2312FT01234",
        "optical": True,
        "ddm": {"temperature_c": None, "voltage_mv": None, "bias_ma": None, "rx_power_dbm": None, "tx_power_dbm": None},
    }
