"""Counter and link-health parsers on published real outputs (tests/unit/fixtures/counters/SOURCES.md)."""
import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import (
    RDMA_COUNTERS, missing_counters, mlx5_phy_counters, mlx5_priority_counters, parse_ethtool_stats, parse_hw_counters, parse_rdma_statistic)
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import (
    IB_ERROR_COUNTERS, ber_value, parse_ibqueryerrors, parse_mlxlink, parse_perfquery)
from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import (
    parse_eos_pfc_counters, parse_nvue_roce_counters, parse_sonic_pfc_counters, parse_sonic_queue_counters)


def fx(name):
    return fixture("counters", name)


# ---------------------------------------------------------------- ethtool -S
def test_ethtool_mlx5_priority_and_phy_counters():
    stats = parse_ethtool_stats(fx("ethtool_mlx5_composed.txt"))["stats"]
    prio = mlx5_priority_counters(stats)
    assert prio[3] == {"rx_bytes": 5849302847, "rx_packets": 1411999, "rx_discards": 0, "tx_bytes": 4928100234,
                       "tx_packets": 1203145, "rx_pause": 142, "rx_pause_duration": 1247, "tx_pause": 87,
                       "tx_pause_duration": 512, "rx_pause_transition": 71}
    assert prio[0]["rx_pause"] == 0 and set(prio) == {0, 3}
    phy = mlx5_phy_counters(stats)
    assert phy["rx_corrected_bits_phy"] == 14648 and phy["link_down_events_phy"] == 0
    assert "rx_fec_uncorrectable_phy" not in phy  # not exposed by this driver: absent, not zero


@pytest.mark.parametrize("text, match", [
    ("no stats available\n", "no stats available"),
    ("Cannot get stats strings information: Operation not supported\n", "Cannot get stats"),
    ("NIC statistics:\n     rx_packets: many\n", "line 2: .*not an integer"),
    ("NIC statistics:\n     rx_packets 12\n", "line 2: .*not 'name: value'"),
    ("", "no output"),
])
def test_ethtool_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_ethtool_stats(text)


# ---------------------------------------------------------------- rdma statistic / hw_counters
def test_rdma_statistic_mofed_one_line_per_link():
    links = parse_rdma_statistic(fx("rdma_statistic_mofed.txt"))["links"]
    assert set(links) == {"mlx5_0/1", "mlx5_1/1"}
    l0 = links["mlx5_0/1"]
    assert l0["out_of_buffer"] == 135 and l0["resp_cqe_error"] == 1009 and l0["np_cnp_sent"] == 0
    assert missing_counters(l0) == []


def test_rdma_statistic_pretty_form_and_old_kernel_lacks_counters():
    links = parse_rdma_statistic(fx("rdma_statistic_pretty_2019.txt"))["links"]
    l0 = links["mlx5_0/1"]
    assert l0["local_ack_timeout_err"] == 0 and len(l0) == 10
    # a 2019 kernel/firmware without out_of_sequence / CNP counters: named, never taken as zero
    assert {"out_of_sequence", "np_cnp_sent", "rp_cnp_handled"} <= set(missing_counters(l0))


@pytest.mark.parametrize("text, match", [
    ("link mlx5_0/1 rx_write_requests\n", "do not pair up"),
    ("link mlx5_0/1 rx_write_requests x\n", "not an integer"),
    ("link mlx5_0 rx_write_requests 0\n", "no DEV/PORT"),
    ("error: unknown option\n", "unknown option"),
    ("rx_write_requests 0\n", "does not start with 'link"),
])
def test_rdma_statistic_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_rdma_statistic(text)


def test_hw_counters_grep_form():
    text = ("/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent:1052612505\n"
            "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:1811101\n")
    c = parse_hw_counters(text)["counters"]
    assert c == {"np_cnp_sent": 1052612505, "out_of_sequence": 1811101}
    assert "rp_cnp_handled" in missing_counters(c, RDMA_COUNTERS)
    with pytest.raises(ParseError, match="not an integer"):
        parse_hw_counters("/sys/x/np_cnp_sent:abc\n")


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


@pytest.mark.parametrize("text, match", [
    ("ibwarn: [1234] mad_rpc_open_port: can't open UMAD port ((null):0)\n", "can't open"),
    ("SymbolErrorCounter:..............0\n", "not a perfquery counter line"),
    ("# Port counters: Lid 3 port 1\nSymbolErrorCounter:........x\n", "not a number"),
    ("# Port counters: Lid 3 port 1\nthis is not it\n", "line 2"),
])
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
    coloured = {"State", "Physical state", "Recommendation", "Effective Physical BER", "Raw Physical BER",
                "Effective Physical Errors", "Link Down Counter"}
    text = _mlxlink_coloured(fx("mlxlink_bf3_mft4.30.txt"), coloured)
    assert "\x1b[0mPhysical state" in text and "\n\x1b[0m\n" in text
    r = parse_mlxlink(text)
    plain = parse_mlxlink(fx("mlxlink_bf3_mft4.30.txt"))
    assert r == plain
    assert r["physical_state"] == "LinkUp" and r["effective_ber"] == pytest.approx(1.5e-254)
    assert "\x1b[0mPhysical state" not in r["sections"]["Operational Info"]
    with pytest.raises(ParseError, match="not an mlxlink BER"):  # what a colour code hides stays an error
        parse_mlxlink("\x1b[31mPhysical Counters and BER Info\n---\nRaw Physical BER : \x1b[31mhigh\n\x1b[0m")


@pytest.mark.parametrize("text, match", [
    ("-E- Failed to open device: mlx5_9\n", "Failed to open device"),
    ("State : Active\n", "inside a section"),
    ("Physical Counters and BER Info\n------\nEffective Physical BER : lots\n", "not an mlxlink BER"),
    ("Physical Counters and BER Info\n------\nRaw Physical Errors Per Lane : 0,x\n", "not a list of numbers"),
])
def test_mlxlink_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_mlxlink(text)


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
        parse_sonic_pfc_counters("  Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7\n"
                                 "Ethernet0 1 2\n")
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
    doc = {"interfaceCounters": {"Ethernet3/1/1": {"rxFrames": 1, "txFrames": 0},
                                 "Ethernet3/2/1": {"rxFrames": 0, "txFrames": 2}}}
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


@pytest.mark.parametrize("text, match", [
    ("     Port    TxQ    Bogus/pkts\n", "line 1: .*no counter column this parser knows"),
    ("Ethernet0    UC0     1\n", "before the 'Port TxQ"),
    ("     Port    TxQ    Counter/pkts\nEthernet0    XX0     1\n", "is not a queue"),
    ("     Port    TxQ    Counter/pkts\nEthernet0    UC0     1  2\n", "2 values for 1 columns"),
])
def test_sonic_queue_counters_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_sonic_queue_counters(text)


def test_ibqueryerrors_ca():
    r = parse_ibqueryerrors(fx("ibqueryerrors_ca_mailinglist.txt"))
    assert r["nodes"] == [{"guid": None, "name": "rd240 mlx4_0",
                           "ports": {1: {"PortXmitWait": 4294967295}, 2: {"PortXmitWait": 1}},
                           # a CA's "Errors for" line has no GUID: its port lines name the port GUIDs
                           "port_guids": {1: "0xe41d2d0300e0bae1", 2: "0xe41d2d0300e0bae2"}}]
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
    assert [(n["guid"], n["name"]) for n in r["nodes"]] == [
        ("0xe41d2d0300a00003", "spine1"), (None, "node2 mlx5_0"), ("0xe41d2d0300a00001", "leaf1")]
    assert r["nodes"][1]["ports"] == {1: {"PortRcvErrors": 7}}
    assert r["nodes"][1]["port_guids"] == {1: "0xa088c20300000201"}
    assert r["nodes"][2]["ports"][7] == {"SymbolErrorCounter": 250, "LinkDownedCounter": 3}
    assert r["summary"] == {"nodes_checked": 7, "bad_nodes": 3, "ports_checked": 112, "bad_ports": 3}
    clean = parse_ibqueryerrors(fx("ibqueryerrors_lab_ibsim_clean.txt"))
    assert clean["nodes"] == [] and clean["summary"]["bad_ports"] == 0 and clean["thresholds"] == ""


def test_ibqueryerrors_clean_fabric_has_only_a_summary():
    r = parse_ibqueryerrors("\n## Summary: 5 nodes checked, 0 bad nodes found\n"
                            "##          42 ports checked, 0 ports have errors beyond threshold\n")
    assert r["nodes"] == [] and r["summary"]["bad_ports"] == 0


@pytest.mark.parametrize("text, match", [
    ("ibwarn: [123] mad_rpc_open_port: can't open UMAD port\n", "can't open"),
    ("   GUID 0x1 port 1: [PortRcvErrors == 5]\n", "before an 'Errors for' line"),
    ('Errors for "x"\n   GUID 0x1 port 1: PortRcvErrors 5\n', "no '\\[Counter == value\\]'"),
    ('Errors for "x"\nsomething else\n', "not an ibqueryerrors line"),
])
def test_ibqueryerrors_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_ibqueryerrors(text)


# ---------------------------------------------------------------- exact refusals and edge layouts (mutation testing)

@pytest.mark.parametrize("parse,text,message", [
    (parse_perfquery, "perfquery: iberror: [31270] main: can't resolve destination port 99\n",
     "perfquery: perfquery: iberror: [31270] main: can't resolve destination port 99"),
    (parse_ibqueryerrors, "ibqueryerrors: iberror: failed to open the umad port\n",
     "ibqueryerrors: ibqueryerrors: iberror: failed to open the umad port"),
    (parse_mlxlink, "\x1b[0m\n", "mlxlink: no section (Operational Info ...)"),   # colour codes and nothing else
])
def test_tool_errors_are_refused_naming_the_tool_and_the_line(parse, text, message):
    with pytest.raises(ParseError) as err:
        parse(text)
    assert str(err.value) == message


def test_mlxlink_per_lane_errors_left_blank_are_none_not_a_refusal():
    text = fx("mlxlink_bf3_mft4.30.txt").replace("Raw Physical Errors Per Lane       : 0,0,0,0",
                                                 "Raw Physical Errors Per Lane       : ")
    assert parse_mlxlink(text)["raw_errors_per_lane"] is None


def test_sonic_interface_counters_of_a_namespace_and_their_rates():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_sonic_intf_counters
    text = ("For namespace asic0:\n"
            "      IFACE    STATE    RX_OK       RX_BPS    RX_UTIL    RX_ERR    RX_DRP    RX_OVR    TX_OK       TX_BPS"
            "    TX_UTIL    TX_ERR    TX_DRP    TX_OVR\n"
            "-----------  -------  -------  -----------  ---------  --------  --------  --------  -------  -----------"
            "  ---------  --------  --------  --------\n"
            "  Ethernet0        U       10  653.87 MB/s     12.77%         1         2         3       20   2.00 KB/s"
            "      0.01%         4         5         6\n")
    assert parse_sonic_intf_counters(text) == {
        "ports": {"Ethernet0": {"state": "U", "RX_OK": 10, "RX_ERR": 1, "RX_DRP": 2, "RX_OVR": 3, "TX_OK": 20,
                                "TX_ERR": 4, "TX_DRP": 5, "TX_OVR": 6}},
        "columns": ["RX_OK", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_ERR", "TX_DRP", "TX_OVR"],
        "other_columns": ["RX_BPS", "RX_UTIL", "TX_BPS", "TX_UTIL"]}   # named, not read (issue 38)


@pytest.mark.parametrize("text,message", [
    ("IFACE  STATE  RX_OK  TX_OK\n", "line 1: 'IFACE  STATE  RX_OK  TX_OK': no RX_ERR/TX_ERR column"),
    ("Ethernet0  U  1\n", "line 1: 'Ethernet0  U  1' before the 'IFACE ...' header"),
    ("Last cached time was 2024-01-01T00:00:00\n\n", "no 'IFACE ...' header"),
])
def test_sonic_interface_counters_refusals_exact(text, message):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_sonic_intf_counters
    with pytest.raises(ParseError) as err:
        parse_sonic_intf_counters(text)
    assert str(err.value) == f"show interfaces counters: {message}"


@pytest.mark.parametrize("text,message", [
    ("Error: The requested item does not exist.\n", "Error: The requested item does not exist."),
    ("                     operational  applied\n-------------------  -----------  -------\nin-errors            x\n",
     "in-errors: 'x' is not a counter"),
    ("in-errors  0\n", "no table under a '----' rule"),
])
def test_nvue_link_stats_refusals_exact(text, message):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_nvue_link_stats
    with pytest.raises(ParseError) as err:
        parse_nvue_link_stats(text)
    assert str(err.value) == f"nv show interface link stats: {message}"


@pytest.mark.parametrize("parse,text,message", [
    (parse_mlxlink, "mlxlink: No such device mlx5_9\n", "mlxlink: mlxlink: No such device mlx5_9"),
    (parse_ibqueryerrors, "ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (Lid 5)\n",
     "ibqueryerrors: ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (Lid 5)"),
])
def test_device_and_mad_errors_are_refused_exact(parse, text, message):
    with pytest.raises(ParseError) as err:
        parse(text)
    assert str(err.value) == message


def test_a_module_named_optical_by_its_cable_type_alone_with_its_serial():
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import module_info
    assert module_info({"Identifier": "OSFP", "Cable Type": "Optical Module (separated)", "Vendor Name": "NVIDIA",
                        "Vendor Part Number": "MMA4Z00-NS", "Vendor Serial Number": "MT2312FT01234"}) == {
        "identifier": "OSFP", "cable_technology": None, "cable_type": "Optical Module (separated)", "vendor": "NVIDIA",
        "part_number": "MMA4Z00-NS", "serial": "MT2312FT01234", "optical": True,
        "ddm": {"temperature_c": None, "voltage_mv": None, "bias_ma": None, "rx_power_dbm": None, "tx_power_dbm": None}}


def test_switch_counter_parsers_blank_lines_none_and_eos_rows_without_frames():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import (
        parse_nvue_link_stats, parse_sonic_intf_counters)
    text = ("                     operational  applied\n-------------------  -----------  -------\nin-errors            3\n"
            "\nout-errors           4\n")
    assert parse_nvue_link_stats(text) == {"stats": {"in-errors": 3, "out-errors": 4}, "in-errors": 3,
                                           "in-drops": None, "out-errors": 4, "out-drops": None,
                                           "carrier-transitions": None}
    with pytest.raises(ParseError) as err:
        parse_sonic_intf_counters(None)
    assert str(err.value) == "show interfaces counters: no output"
    for row in ("5", '{"rxFrames": 1}'):
        with pytest.raises(ParseError) as err:
            parse_eos_pfc_counters('{"interfaceCounters": {"Et1": %s}}' % row)
        assert str(err.value) == "show priority-flow-control counters: Et1: rxFrames/txFrames missing"
