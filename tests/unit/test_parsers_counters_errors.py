"""Every error path of the counter / link-health parsers, with its exact message (tool, line number,
the offending text): the message is what an operator reads, so it is part of the behaviour."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.parsers import counters as C
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import linkhealth as L
from ansible_collections.linerate.fabric.plugins.module_utils.switch import counters as S
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError

CASES = [
    (C.parse_ethtool_stats, "", "ethtool -S: no output"),
    (C.parse_ethtool_stats, None, "ethtool -S: no output"),
    (C.parse_ethtool_stats, "NIC statistics:\n     rx_packets: 1\nno stats available\n", "ethtool -S: no stats available"),
    (C.parse_ethtool_stats, "Cannot get driver information: No such device\n", "ethtool -S: Cannot get driver information: No such device"),
    (
        C.parse_ethtool_stats,
        "Cannot get stats strings information: Operation not permitted\n",
        "ethtool -S: Cannot get stats strings information: Operation not permitted",
    ),
    (C.parse_ethtool_stats, "\n\nNIC statistics:\n\n     rx_packets: x1\n", "ethtool -S: line 5: 'rx_packets: x1': counter value is not an integer"),
    (C.parse_ethtool_stats, "NIC statistics:\n     : 5\n", "ethtool -S: line 2: ': 5' is not 'name: value'"),
    (C.parse_ethtool_stats, "\n\n", "ethtool -S: no output"),
    (C.parse_rdma_statistic, " \n", "rdma statistic: no output"),
    (C.parse_rdma_statistic, "\nlink mlx5_0\n", "rdma statistic: line 2: 'link mlx5_0': no DEV/PORT after 'link'"),
    (C.parse_rdma_statistic, "\nlink\n", "rdma statistic: line 2: 'link': no DEV/PORT after 'link'"),
    (C.parse_rdma_statistic, "\nrdma: command not found\n", "rdma statistic: rdma: command not found"),
    (C.parse_rdma_statistic, "\nfoo 1\n", "rdma statistic: line 2: 'foo 1' does not start with 'link DEV/PORT'"),
    (C.parse_rdma_statistic, "\nlink mlx5_0/1 a 1 b\n", "rdma statistic: line 2: 'link mlx5_0/1 a 1 b': counter names and values do not pair up"),
    (C.parse_rdma_statistic, "\nlink mlx5_0/1 a 1\n\tb x\n", "rdma statistic: line 3: 'b x': counter value is not an integer"),
    (C.parse_rdma_statistic, "\nlink mlx5_0/1 a 1\nb 2\n", "rdma statistic: line 3: 'b 2' does not start with 'link DEV/PORT'"),
    (C.parse_hw_counters, "\n", "hw_counters: no output (the driver exposes no hw_counters directory?)"),
    (C.parse_hw_counters, "\nnocolon\n", "hw_counters: line 2: 'nocolon' is not 'path:value'"),
    (C.parse_hw_counters, "\ngrep: /sys/x/hw_counters/*: No such file or directory\n", "hw_counters: grep: /sys/x/hw_counters/*: No such file or directory"),
    (C.parse_hw_counters, "\n/sys/a/np_cnp_sent:1\n/sys/a/x:y\n", "hw_counters: line 3: '/sys/a/x:y': counter value is not an integer"),
    (L.parse_perfquery, "", "perfquery: no output"),
    (L.parse_perfquery, "ibwarn: [1] x\n", "perfquery: ibwarn: [1] x"),
    (L.parse_perfquery, "perfquery: iberror: failed: Failed to query\n", "perfquery: perfquery: iberror: failed: Failed to query"),
    (L.parse_perfquery, "\n\nX:....1\n", "perfquery: line 3: 'X:....1' is not a perfquery counter line"),
    (
        L.parse_perfquery,
        "\n# Port counters: Lid 1 port 1\n\nSymbolErrorCounter:.....z\n",
        "perfquery: line 4: 'SymbolErrorCounter:.....z': value is not a number",
    ),
    (L.parse_perfquery, "\n\n", "perfquery: no output"),
    (L.parse_mlxlink, "", "mlxlink: no output"),
    (L.parse_mlxlink, "-E- Device not found\n", "mlxlink: -E- Device not found"),
    (L.parse_mlxlink, "\n\nState : x\n", "mlxlink: line 3: 'State : x' is not 'Key : value' inside a section"),
    (
        L.parse_mlxlink,
        "\nOperational Info\n----------------\nState : Active\nbroken line\n",
        "mlxlink: line 5: 'broken line' is not 'Key : value' inside a section",
    ),
    (L.parse_mlxlink, "Physical Counters and BER Info\n---\nRaw Physical BER : x1\n", "mlxlink: not an mlxlink BER: 'x1'"),
    (L.parse_ibqueryerrors, "", "ibqueryerrors: no output"),
    (L.parse_ibqueryerrors, "\n\n## Thresholds: x\n", "ibqueryerrors: neither errors nor a summary"),
    (L.parse_ibqueryerrors, "\n   GUID 0x1 port 2: [A == 1]\n", "ibqueryerrors: line 2: 'GUID 0x1 port 2: [A == 1]' before an 'Errors for' line"),
    (L.parse_ibqueryerrors, '\nErrors for "n"\n   GUID 0x1 port 2: junk\n', "ibqueryerrors: line 3: 'GUID 0x1 port 2: junk': no '[Counter == value]'"),
    (L.parse_ibqueryerrors, '\nErrors for "n"\n\nbad\n', "ibqueryerrors: line 4: 'bad' is not an ibqueryerrors line"),
    (S.parse_sonic_pfc_counters, "", "show pfc counters: no output"),
    (S.parse_sonic_pfc_counters, "\n\n", "show pfc counters: no output"),
    (S.parse_sonic_pfc_counters, "\nEthernet0 1\n", "show pfc counters: line 2: 'Ethernet0 1' before a 'Port Rx/Tx PFC0..' header"),
    (S.parse_sonic_pfc_counters, "\n  Port Rx    PFC0    PFC1\n\nEthernet0 1\n", "show pfc counters: line 4: 'Ethernet0 1': 1 counters for 2 priorities"),
    (S.parse_sonic_pfc_counters, "\n  Port Rx    PFC0    PFC1\nEthernet0 1 x\n", "show pfc counters: line 3: 'Ethernet0 1 x': 'x' is not a counter"),
    (S.parse_sonic_queue_counters, "", "show queue counters: no output"),
    (S.parse_sonic_queue_counters, "\nFor namespace :\n", "show queue counters: no 'Port TxQ' header"),
    (
        S.parse_sonic_queue_counters,
        "\n     Port    TxQ    X/pkts\n",
        "show queue counters: line 2: 'Port    TxQ    X/pkts': no counter column this parser knows (known: " + ", ".join(S._QUEUE_COLS) + ")",
    ),
    (S.parse_sonic_queue_counters, "\n\nEthernet0 UC0 1\n", "show queue counters: line 3: 'Ethernet0 UC0 1' before the 'Port TxQ ...' header"),
    (
        S.parse_sonic_queue_counters,
        "\n     Port    TxQ    Counter/pkts\n\nEthernet0 UC0 1 2\n",
        "show queue counters: line 4: 'Ethernet0 UC0 1 2': 2 values for 1 columns",
    ),
    (
        S.parse_sonic_queue_counters,
        "\n     Port    TxQ    Counter/pkts\nEthernet0 QQ0 1\n",
        "show queue counters: line 3: 'QQ0' is not a queue (UCn, MCn, ALLn)",
    ),
    (S.parse_sonic_queue_counters, "\n     Port    TxQ    Counter/pkts\nEthernet0 UC 1\n", "show queue counters: line 3: 'UC' is not a queue (UCn, MCn, ALLn)"),
    (
        S.parse_sonic_queue_counters,
        "\n     Port    TxQ    Counter/pkts\nEthernet0 UC1 1.5\n",
        "show queue counters: line 3: 'Ethernet0 UC1 1.5': '1.5' is not a counter",
    ),
    (S.parse_nvue_roce_counters, "", "nv show qos roce counters: no output"),
    (S.parse_nvue_roce_counters, "Error: The requested item does not exist\n", "nv show qos roce counters: Error: The requested item does not exist"),
    (S.parse_nvue_roce_counters, "x\n-----  ----\nrx-stats\n  Bad Key here\n", "nv show qos roce counters: line 4: 'Bad Key here' is not 'key  value'"),
    (S.parse_eos_pfc_counters, "{bad", "show priority-flow-control counters: not JSON: Expecting property name"),
    (S.parse_eos_pfc_counters, "[1]", "show priority-flow-control counters: not a JSON object"),
    (S.parse_eos_pfc_counters, {"errors": ["x"]}, "show priority-flow-control counters: ['x']"),
    (S.parse_eos_pfc_counters, {"foo": 1}, "show priority-flow-control counters: no interfaceCounters"),
]


@pytest.mark.parametrize("fn, text, message", CASES)
def test_error_message(fn, text, message):
    with pytest.raises(ParseError) as e:
        fn(text)
    assert str(e.value).startswith(message)
    if not message.endswith("Expecting property name"):
        assert str(e.value) == message


@pytest.mark.parametrize(
    "line",
    [
        "no stats available",
        "Cannot get stats strings information: Operation not supported",
        "Operation not supported",
        "ethtool: No such device",
        "Cannot get driver information",
        "Operation not permitted",
    ],
)
def test_every_ethtool_error_line(line):
    with pytest.raises(ParseError, match="^ethtool -S: " + line):
        C.parse_ethtool_stats("NIC statistics:\n" + line + "\n")


@pytest.mark.parametrize("line", ["ibwarn: x", "perfquery: iberror: x", "query failed", "Failed x", "can't open x", "No such device"])
def test_every_perfquery_error_line(line):
    with pytest.raises(ParseError, match="^perfquery: "):
        L.parse_perfquery("# Port counters: Lid 1 port 1\n" + line + "\n")


@pytest.mark.parametrize("line", ["-E- x", "Failed to open device x", "No such device", "mlxlink: command not found"])
def test_every_mlxlink_error_line(line):
    with pytest.raises(ParseError, match="^mlxlink: "):
        L.parse_mlxlink("Operational Info\n---\n" + line + "\n")


@pytest.mark.parametrize("line", ["ibwarn: x", "ibqueryerrors: iberror: x", "can't open UMAD"])
def test_every_ibqueryerrors_error_line(line):
    with pytest.raises(ParseError, match="^ibqueryerrors: "):
        L.parse_ibqueryerrors("## Summary: 1 nodes checked, 0 bad nodes found\n" + line + "\n")


def test_hw_counters_permission_denied():
    with pytest.raises(ParseError, match="^hw_counters: grep: x: Permission denied$"):
        C.parse_hw_counters("grep: x: Permission denied\n")


def test_mlx5_phy_counters_exact_names():
    names = [
        "rx_crc_errors_phy",
        "rx_symbol_err_phy",
        "link_down_events_phy",
        "rx_corrected_bits_phy",
        "rx_err_lane_0_phy",
        "rx_err_lane_1_phy",
        "rx_err_lane_2_phy",
        "rx_err_lane_3_phy",
        "rx_pcs_symbol_err_phy",
        "rx_fec_uncorrectable_phy",
        "rx_discards_phy",
        "tx_discards_phy",
        "rx_out_of_buffer",
        "rx_in_range_len_errors_phy",
        "rx_oversize_pkts_phy",
        "rx_undersize_pkts_phy",
    ]
    stats = {n: i for i, n in enumerate(names)} | {"rx_packets": 9, "rx_prio3_pause": 1}
    assert C.mlx5_phy_counters(stats) == {n: i for i, n in enumerate(names)}
    assert list(C.RDMA_COUNTERS[:6]) == ["np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "rp_cnp_ignored", "out_of_sequence", "packet_seq_err"]


def test_mlx5_priority_counter_kinds():
    kinds = ["pause", "pause_duration", "pause_transition", "discards", "bytes", "packets", "buf_discard", "cong_discard", "marked"]
    stats = {f"{d}_prio5_{k}": 1 for d in ("rx", "tx") for k in kinds} | {"rx_prio8_pause": 1, "rx_prio5_other": 1}
    assert C.mlx5_priority_counters(stats) == {5: {f"{d}_{k}": 1 for d in ("rx", "tx") for k in kinds}}


def test_hw_counters_blank_lines_and_paths():
    assert C.parse_hw_counters("\n/a/b/c/out_of_sequence:7\n\nlocal_ack_timeout_err:2\n")["counters"] == {"out_of_sequence": 7, "local_ack_timeout_err": 2}


def test_rdma_statistic_blank_lines_between_links():
    r = C.parse_rdma_statistic("link mlx5_0/1 a 1\n\nlink mlx5_1/1 a 2\n\tb 3\n")["links"]
    assert r == {"mlx5_0/1": {"a": 1}, "mlx5_1/1": {"a": 2, "b": 3}}


def test_perfquery_hex_and_blank_lines():
    r = L.parse_perfquery("\n# Port counters: Lid 1 port 2 (CapMask: 0x1A00)\n\nCounterSelect:....0x0100\n")
    assert r["ports"][0]["counters"] == {"CounterSelect": 256} and r["ports"][0]["port"] == 2


def test_mlxlink_fields_absent_on_older_mft():
    r = L.parse_mlxlink("Operational Info\n----------------\nState : Active\nWidth : 4x\nFEC : No FEC\n")
    assert r["width"] == "4x" and r["fec"] == "No FEC" and r["effective_ber"] is None and r["raw_ber"] is None
    assert r["raw_errors_per_lane"] is None and r["link_error_recovery"] is None and r["link_down"] is None
    r = L.parse_mlxlink("Physical Counters and BER Info\n---\nRaw Physical Errors Per Lane : N/A\nLink Error Recovery Counter : 4\nRaw Physical BER : 3E-9\n")
    assert r["raw_errors_per_lane"] is None and r["link_error_recovery"] == 4 and r["raw_ber"] == pytest.approx(3e-9)


def test_ibqueryerrors_thresholds_suppressed_and_extra_summary_lines():
    r = L.parse_ibqueryerrors(
        "## Summary: 2 nodes checked, 1 bad nodes found\n"
        "##          4 ports checked, 1 ports have errors beyond threshold\n"
        "## Thresholds: SymbolErrorCounter=10\n##          3 PMA query failures\n"
        "## Suppressed: PortXmitWait VL15Dropped\n"
    )
    assert r["thresholds"] == "SymbolErrorCounter=10" and r["suppressed"] == ["PortXmitWait", "VL15Dropped"]
    assert r["summary"] == {"nodes_checked": 2, "bad_nodes": 1, "ports_checked": 4, "bad_ports": 1}


def test_sonic_queue_counters_every_column_and_namespace_lines():
    cols = ["Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes", "EcnMarked/pkts", "EcnMarked/bytes", "Trim/pkts", "TrimSent/pkts", "TrimDrop/pkts"]
    text = (
        "For namespace :\n     Port    TxQ    " + "    ".join(cols) + "\n"
        "---------  -----  " + "  ".join("-" * 5 for _ in cols) + "\n"
        "Ethernet0   ALL7  " + "  ".join(str(i) for i in range(9)) + "\n"
    )
    q = S.parse_sonic_queue_counters(text)
    assert q["columns"] == ["pkts", "bytes", "drop_pkts", "drop_bytes", "ecn_marked_pkts", "ecn_marked_bytes", "trim_pkts", "trim_sent_pkts", "trim_drop_pkts"]
    row = q["ports"]["Ethernet0"]["ALL7"]
    assert row["type"] == "ALL" and row["index"] == 7 and row["trim_drop_pkts"] == 8 and row["pkts"] == 0


def test_sonic_pfc_counters_last_cached_and_na():
    r = S.parse_sonic_pfc_counters("Last cached time was 2024-01-01\n  Port Tx    PFC0    PFC1\n---------  ------  ------\nEthernet0     N/A   1,234\n")
    assert r == {"rx": {}, "tx": {"Ethernet0": {0: None, 1: 1234}}}


@pytest.mark.parametrize("raw, value", [("1.5 KB", 1500), ("2 GB", 2_000_000_000), ("1 TB", 10**12), ("3 Bytes", 3), ("0.5 Bytes", 0.5), ("yes", "yes")])
def test_nvue_value_units(raw, value):
    assert S._nvue_value(raw + "     description") == value
