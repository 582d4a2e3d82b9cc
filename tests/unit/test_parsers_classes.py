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
from ansible_collections.linerate.fabric.plugins.module_utils import common
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import counters
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import iblink
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import lldp
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import mlxconfig
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import perftest
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import perftest_lat
from ansible_collections.linerate.fabric.plugins.module_utils.switch import counters as switch_counters
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import eos


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
    assert res["ports"]["Ethernet0"]["UC1"] == {
        "type": "UC",
        "index": 1,
        "wred_drop_pkts": 60,
        "wred_drop_bytes": 43,
        "ecn_marked_pkts": 39,
        "ecn_marked_bytes": 1,
    }
    assert res["ports"]["Ethernet0"]["ALL20"]["ecn_marked_pkts"] is None
    assert len(res["ports"]["Ethernet0"]) == 30


def test_sonic_queue_table_with_an_unknown_column_reads_the_known_ones():
    text = fixture("counters", "sonic_queue_counters_wred_unittest.txt").replace("WredDrp/bytes", "Future/bytes")
    res = switch_counters.parse_sonic_queue_counters(text)
    assert res["warnings"] == ["column 'Future/bytes' is not read (unknown to this parser)"]
    assert res["columns"] == ["wred_drop_pkts", "ecn_marked_pkts", "ecn_marked_bytes"]
    assert res["ports"]["Ethernet0"]["UC2"] == {"type": "UC", "index": 2, "wred_drop_pkts": 82, "ecn_marked_pkts": 39, "ecn_marked_bytes": 21}


@pytest.mark.parametrize(
    "name, ports, first",
    [
        (
            "real_eos_lldp_neighbors_ntc.txt",
            ["Ethernet1", "Ethernet2", "Ethernet3/1", "Management1/1"],
            ("Ethernet3/1", "tg104.sjc.aristanetworks.com", "Ethernet3/2"),
        ),
        ("real_eos_lldp_neighbors_ntc_rule.txt", ["Ethernet%d" % i for i in range(2, 8)], ("Ethernet4", "arista2", "Ethernet4")),
    ],
)
def test_eos_lldp_neighbors_text(name, ports, first):
    res = lldp.parse_eos_lldp_neighbors(fixture("lldp", name))
    assert res["ports"] == ports and res["warnings"] == []
    port, system, rport = first
    assert res["neighbors"][port] == [{"system_name": system, "port_id": rport, "port_id_type": "ifname", "port_descr": None, "chassis_id": None}]


def test_eos_lldp_neighbors_detail_text():
    res = lldp.parse_eos_lldp_neighbors(fixture("lldp", "real_eos_lldp_neighbors_detail_ntc.txt"))
    assert res["ports"] == ["Ethernet1", "Ethernet2", "Ethernet3"]
    assert res["neighbors"]["Ethernet2"] == [
        {"system_name": "spine2.company.com", "port_id": "Ethernet2", "port_id_type": "ifname", "port_descr": None, "chassis_id": "2cc2.6081.eaf9"}
    ]


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
    assert row.index("unconf 40G") < header.index("Speed")  # the cell starts before its header word
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
        "Port": "Et1",
        "Name": "a b",
        "Status": "connected",
        "Vlan": "1",
        "Duplex": "full",
        "Speed": "unconf",
        "Type": "40GBASE-CR4",
    }
    # right-aligned numbers end at the header's end, however wide
    spans = common.column_spans("Port        FCS  Align", words=True)
    assert common.split_columns("Et1   123456789  0", spans) == {"Port": "Et1", "FCS": "123456789", "Align": "0"}
    # a left-aligned cell that runs into the next column's header (not ending with it) does not fit
    assert common.split_columns("Et1     connectedXXX", common.column_spans("Port   Status  Vlan", words=True)) is None
    # a cell of several words keeps its text; a blank cell is ""
    assert common.split_columns("a  b   c", [("A", 0, 1), ("B", 3, 4), ("C", 9, 10)]) == {"A": "a", "B": "b   c", "C": ""}


# ------------------------------------------------------------------ 3. NCCL fallbacks


def test_collnet_sharp_fallback_is_not_the_jobs_error():
    res = nccl_log.parse_nccl_log(fixture("nccl_logs", "collnet_sharp_fallback_then_gdrdma.txt"))
    assert res["error"] is None and res["error_code"] is None
    assert res["transport"] == "IB" and res["gdr"] is True and res["init_complete_ranks"] == 2
    assert [f["signal"] for f in res["fallbacks"]] == ["collnet_unavailable"]
    assert "Cannot initialize CollNet, using point-to-point network instead" in res["warnings"]


def test_collnet_fallback_that_never_completes_init_is_fatal():
    text = "\n".join(
        line for line in fixture("nccl_logs", "collnet_sharp_fallback_then_gdrdma.txt").splitlines() if "Init COMPLETE" not in line and "via NET" not in line
    )
    res = nccl_log.parse_nccl_log(text)
    assert res["error"] == "NET/IB : SHARP coll init error: Cannot create SHARP job(-11)"
    assert res["error_code"] == "system error"


def test_a_rank_that_never_completes_init_is_fatal():
    text = fixture("nccl_logs", "collnet_sharp_fallback_then_gdrdma.txt").replace(
        "rank 3 nranks 8 cudaDev 1 nvmlDev 1 busId cb000 commId 0x70fba02a8d314739 - Init COMPLETE",
        "rank 3 nranks 8 cudaDev 1 nvmlDev 1 busId cb000 commId 0x70fba02a8d314739 - Init START",
    )
    res = nccl_log.parse_nccl_log(text)
    assert res["ranks_without_init_complete"] == [3]
    # the fallback did not let rank 3 go on: its error return is the job's error again
    assert res["error"] == "NET/IB : SHARP coll init error: Cannot create SHARP job(-11)"
    clean = "\n".join(line for line in text.splitlines() if "->" not in line and "WARN" not in line)
    assert nccl_log.parse_nccl_log(clean)["error"] == "rank(s) 3 printed Init START but never Init COMPLETE"


def test_net_plugin_symbol_fallback_then_ib_is_not_an_error():
    text = (
        "n1:1:2 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v10 symbol.\n"
        "n1:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)\n" + fixture("nccl_logs", "real_gdrdma_init_moc.txt")
    )
    res = nccl_log.parse_nccl_log(text)
    assert res["error"] is None and res["transport"] == "IB"
    assert "no_external_net_plugin" in [f["signal"] for f in res["fallbacks"]]


def test_real_fatal_errors_stay_fatal():
    assert nccl_log.parse_nccl_log(fixture("nccl_logs", "real_error_ib_completion_azure.txt"))["error"]
    socket = nccl_log.parse_nccl_log(fixture("nccl_logs", "real_socket_fallback.txt"))
    assert socket["transport"] == "Socket"


def test_nccl_tests_failure_names_the_cause_before_the_fallbacks():
    text = (
        "n1:1:2 [0] transport.cc:384 NCCL WARN Cannot initialize CollNet, using point-to-point network instead\n"
        "n1:1:2 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.2<5000> failed : Connection refused\n"
        "n1: Test NCCL failure common.cu:1005 'unhandled system error'\n"
    )
    with pytest.raises(ParseError) as err:
        nccl_tests.parse_nccl_tests(text)
    msg = str(err.value)
    assert msg.index("Connection refused") < msg.index("fallback, not the cause: NCCL WARN Cannot initialize CollNet")


# ------------------------------------------------------------------ 4. echoed command with a placeholder


@pytest.mark.parametrize(
    "echo, server, placeholders, dev",
    [
        # the command as its source documents it (real-outputs/perftest.md: the MOC client run)
        ("ib_write_bw -a -R -T 41 -F -x 3 -m 4096 -p 10000 --report_gbits -d mlx5_2 -q 1 <server_ip>", "<server_ip>", ["<server_ip>"], "mlx5_2"),
        ("$ ib_write_bw -d <mlx5_X> -x 3 -F 192.168.60.174", "192.168.60.174", ["<mlx5_X>"], "<mlx5_X>"),
        ("$ ib_write_bw -d mlx5_2 -F 192.168.60.174 > /tmp/perftest_log 2>&1", "192.168.60.174", None, "mlx5_2"),
    ],
)
def test_echoed_command_keeps_argv_after_a_placeholder(echo, server, placeholders, dev):
    res = perftest.parse_ib_write_bw(echo + "\n" + fixture("perftest", "real_client_sweep_roce_cx7.txt"))
    assert res["command"]["server"] == server
    assert res["command"]["ib_dev"] == dev
    assert res["command"].get("placeholders") == placeholders
    assert res["command"]["argv"][-1] == server
    assert res["max_bw_average_gbps"] > 200


# ------------------------------------------------------------------ 5. new parsers


@pytest.mark.parametrize(
    "name, changes",
    [
        ("real_set_cx4_link_type_ib.txt", {"LINK_TYPE_P1": {"from": "ETH(2)", "to": "IB(1)"}}),
        ("real_set_cx4_dual_port_eth.txt", {"LINK_TYPE_P1": {"from": "IB(1)", "to": "ETH(2)"}, "LINK_TYPE_P2": {"from": "IB(1)", "to": "ETH(2)"}}),
        ("real_set_cx5_sriov_mstconfig.txt", {"SRIOV_EN": {"from": "False(0)", "to": "True(1)"}, "NUM_OF_VFS": {"from": "0", "to": "8"}}),
    ],
)
def test_mlxconfig_set_applied_and_reboot_needed(name, changes):
    res = mlxconfig.parse_mlxconfig_set(fixture("mlxconfig", name))
    assert res["applied"] is True and res["reboot_required"] is True
    assert res["changes"] == changes


@pytest.mark.parametrize(
    "tail, message",
    [
        (" Apply new Configuration? (y/n) [n] : n\n", "aborted by the user"),
        (" Apply new Configuration? (y/n) [n] : \n", "ends at the 'Apply new Configuration\\?' prompt"),
        (" Apply new Configuration? (y/n) [n] : y\nApplying... Failed!\n-E- Failed to set configuration\n", "mlxconfig set: Failed to set configuration"),
        (" Apply new Configuration? (y/n) [n] : y\nApplying... Failed!\n", "Applying... Failed!"),
        ("-E- Aborted by user.\n", "Aborted by user"),
    ],
)
def test_mlxconfig_set_failures_are_errors(tail, message):
    text = fixture("mlxconfig", "real_set_cx4_link_type_ib.txt")
    text = text[: text.index(" Apply new Configuration?")] + tail
    with pytest.raises(ParseError, match=message):
        mlxconfig.parse_mlxconfig_set(text)
    with pytest.raises(ParseError, match="doesn't support LINK_TYPE_P1"):
        mlxconfig.parse_mlxconfig_set(fixture("mlxconfig", "error_set_unsupported.txt"))


def test_ibstatus_two_ports():
    res = iblink.parse_ibstatus(fixture("ibstatus", "real_cx3_fdr_two_ports.txt"))
    assert res["warnings"] == []
    assert res["ports"][1] == {
        "device": "mlx4_0",
        "port": 2,
        "default_gid": "fe80:0000:0000:0000:0002:c903:00a4:e722",
        "base_lid": 2,
        "sm_lid": 2,
        "state": "ACTIVE",
        "state_code": 4,
        "physical_state": "LinkUp",
        "physical_state_code": 5,
        "rate_text": "56 Gb/sec (4X FDR)",
        "rate_gbps": 56,
        "rate_note": "4X FDR",
        "link_layer": "InfiniBand",
    }


def test_ibstatus_ndr_rate_and_errors():
    text = fixture("ibstatus", "real_cx3_one_port.txt").replace("56 Gb/sec (4X FDR)", "400 Gb/sec (4X NDR)")
    port = iblink.parse_ibstatus(text)["ports"][0]
    assert (port["rate_gbps"], port["rate_note"]) == (400, "4X NDR")
    with pytest.raises(ParseError, match="ibstatus: empty output"):
        iblink.parse_ibstatus("")
    with pytest.raises(ParseError, match="ibstatus: .*command not found"):
        iblink.parse_ibstatus("bash: ibstatus: command not found\n")


def test_write_lat_all_columns():
    res = perftest_lat.parse_perftest_lat(fixture("perftest", "lat_write_composed_v4.txt"))
    assert (res["test"], res["verb"], res["device"], res["link_type"]) == ("RDMA_Write Latency Test", "write", "mlx5_0", "Ethernet")
    assert res["results"] == [
        {
            "bytes": 2,
            "iterations": 1000,
            "t_min_usec": 1.52,
            "t_max_usec": 4.11,
            "t_typical_usec": 1.58,
            "t_avg_usec": 1.6,
            "t_stdev_usec": 0.05,
            "p99_usec": 1.79,
            "p99_9_usec": 4.11,
        }
    ]
    assert res["t_avg_usec"] == 1.6 and res["remote"][0]["ipv4"] == "10.0.0.2"


def test_send_lat_old_three_columns_and_duration_mode():
    old = perftest_lat.parse_perftest_lat(fixture("perftest", "lat_send_composed_old.txt"))
    assert old["columns"] == ["bytes", "iterations", "t_min_usec", "t_max_usec", "t_typical_usec"]
    assert (old["t_typical_usec"], old["t_avg_usec"], old["p99_usec"]) == (1.35, None, None)
    dur = perftest_lat.parse_perftest_lat(fixture("perftest", "lat_write_composed_duration.txt"))
    assert dur["results"] == [{"bytes": 2, "iterations": 3152640, "t_avg_usec": 1.58, "tps_average": 632528.0}]


def test_latency_failures_raise():
    with pytest.raises(ParseError, match="ib_write_lat: Couldn't connect to 10.0.0.2:18515"):
        perftest_lat.parse_perftest_lat("$ ib_write_lat -d mlx5_0 10.0.0.2\nCouldn't connect to 10.0.0.2:18515\n")
    with pytest.raises(ParseError, match="no latency table"):
        perftest_lat.parse_perftest_lat(fixture("perftest", "real_client_sweep_roce_cx7.txt"))


def test_send_bw_reads_the_bw_table_and_refuses_another_test():
    text = fixture("perftest", "real_client_sweep_roce_cx7.txt").replace("RDMA_Write BW Test", "Send BW Test")
    res = perftest.parse_ib_send_bw(text)
    assert res["verb"] == "send" and res["max_bw_average_gbps"] > 200
    with pytest.raises(ParseError, match="ib_send_bw: output of RDMA_Write BW Test"):
        perftest.parse_ib_send_bw(fixture("perftest", "real_client_sweep_roce_cx7.txt"))
