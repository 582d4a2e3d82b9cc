"""Unit tests for plugins/module_utils/parsers/nccl_tests.py and nccl_log.py on our own fixtures."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import parse_nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests


# ---------------------------------------------------------------- nccl-tests

def test_new_layout_2_19_two_nodes():
    result = parse_nccl_tests(fixture("nccl_tests", "all_reduce_2_19_two_nodes.txt"))
    assert result["nccl_tests_version"] == "2.19.6"
    assert result["test"] == "all_reduce_perf"
    assert result["nccl_version"] == "2.28.3"
    assert result["config"]["ngpus"] == 1
    assert result["config"]["step_factor"] == 4
    assert result["config"]["unalign"] == 0
    assert len(result["devices"]) == 8
    assert result["devices"][5] == {"rank": 5, "group": 0, "pid": 41205, "host": "gpu-a08", "device": 1,
                                    "bus_id": "0000:3b:00", "name": "NVIDIA H100 80GB HBM3"}
    assert len(result["rows"]) == 8
    last = result["rows"][-1]
    assert (last["size"], last["count"], last["type"], last["redop"], last["root"]) == (
        8589934592, 2147483648, "float", "sum", -1)
    assert last["out_of_place"] == {"time_us": 94871.0, "algbw": 90.54, "busbw": 158.45, "wrong": 0}
    assert last["in_place"]["busbw"] == 158.40
    assert result["avg_bus_bandwidth"] == 109.787
    assert result["avg_bus_bandwidth_gbits"] == pytest.approx(878.296)
    assert result["avg_bus_bandwidth_ok"] is None
    assert result["max_busbw"] == 158.45
    assert result["out_of_bounds"] == 0
    assert result["passed"] is True
    assert result["failures"] == []


def test_wrong_elements_and_min_bandwidth_failure():
    result = parse_nccl_tests(fixture("nccl_tests", "all_reduce_wrong_and_min_bw_failed.txt"))
    assert result["rows"][1]["out_of_place"]["wrong"] == 12
    assert result["rows"][2]["in_place"]["wrong"] == 3
    assert result["out_of_bounds"] == 2
    assert result["out_of_bounds_ok"] is False
    assert result["avg_bus_bandwidth_ok"] is False
    assert result["passed"] is False
    assert result["failures"] == ["#wrong elements at sizes [67108864, 134217728]", "2 out-of-bounds values",
                                  "average bus bandwidth 148.432 below NCCL_TESTS_MIN_BW"]
    assert result["nccl_last_error"] is None  # '# error: ' with nothing after it
    assert result["devices"][7]["name"] == "NVIDIA H200"


def test_validation_disabled_gives_none_wrong():
    result = parse_nccl_tests(fixture("nccl_tests", "all_reduce_no_validation.txt"))
    row = result["rows"][0]
    assert row["out_of_place"]["wrong"] is None
    assert row["in_place"]["busbw"] == 180.20
    assert result["config"]["validation"] == 0
    assert result["config"]["step_bytes"] == 1048576
    assert result["passed"] is True


def test_old_2x_all_gather_without_redop_tagged_output():
    result = parse_nccl_tests(fixture("nccl_tests", "all_gather_old_2x_tagged.txt"))
    assert result["columns"][:4] == ["size", "count", "type", "time"]
    assert result["nccl_version"] == "2.7.8"
    assert len(result["rows"]) == 5
    row = result["rows"][0]
    assert "redop" not in row
    assert row["out_of_place"] == {"time_us": 290.5, "algbw": 28.88, "busbw": 21.66, "error": 0.0}
    assert result["devices"][3]["group"] is None
    assert result["devices"][3]["bus_id"] == "0x0b"
    assert result["avg_bus_bandwidth"] == 22.6359


def test_json_output():
    result = parse_nccl_tests(fixture("nccl_tests", "all_reduce_2_19.json"))
    assert result["format"] == "json"
    assert result["test"] == "all_reduce_perf"
    assert result["nccl_version"] == "2.28.3"
    assert result["devices"][1]["host"] == "gpu-a08"
    assert [row["size"] for row in result["rows"]] == [67108864, 134217728, 268435456]
    assert result["rows"][0]["root"] == -1
    assert result["rows"][0]["out_of_place"] == {"time_us": 1390.51, "algbw": 48.262, "busbw": 48.262, "wrong": 0}
    assert result["rows"][2]["in_place"]["wrong"] is None
    assert result["avg_bus_bandwidth"] == 48.505
    assert result["avg_bus_bandwidth_ok"] is None  # "unchecked"
    assert result["passed"] is True


@pytest.mark.parametrize("name, message", [
    ("error_nccl_failure.txt", "Test NCCL failure common.cu:1035 'remote process exited or there was a network error"),
    ("error_cuda_failure.txt", "Test CUDA failure common.cu:1171 'out of memory'"),
])
def test_aborted_tests_raise(name, message):
    with pytest.raises(ParseError, match=message):
        parse_nccl_tests(fixture("nccl_tests", name))


@pytest.mark.parametrize("text, message", [
    ("", "empty output"),
    ("mpirun was unable to launch the specified application\n", "no result rows"),
    ("{not json", "invalid JSON output"),
])
def test_non_results_raise(text, message):
    with pytest.raises(ParseError, match=message):
        parse_nccl_tests(text)


# ---------------------------------------------------------------- NCCL_DEBUG logs

def test_log_ib_roce_with_gdr():
    log = parse_nccl_log(fixture("nccl_logs", "ib_roce_gdr_2_23.txt"))
    assert log["transport"] == "IB"
    assert log["gdr"] is True
    assert log["nccl_version"] == "2.23.4"
    assert log["cuda_version"] == "12.6"
    assert log["ib_devices"] == [{"index": 0, "device": "mlx5_0", "port": 1, "link_layer": "RoCE"},
                                 {"index": 1, "device": "mlx5_3", "port": 1, "link_layer": "RoCE"}]
    assert log["num_nics"] == 2
    assert log["relaxed_ordering"] is True
    assert log["oob_interface"] == "ens41np0"
    assert log["channels"] == {"rings": 4, "coll": 4, "collnet": 4, "nvls": 0, "p2p": 4}
    assert log["num_channels"] == 4
    assert log["net_channels"] == 3
    assert log["intra_node_paths"] == ["P2P/CUMEM/read"]
    assert log["nranks"] == 8
    assert log["init_complete"] is True
    assert log["init_complete_ranks"] == 1
    assert log["env"]["NCCL_IB_GID_INDEX"] == "3"
    assert log["fallbacks"] == [{"signal": "no_external_net_plugin",
                                 "line": "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."}]
    assert log["error"] is None
    assert log["warnings"] == []


def test_log_socket_fallback():
    log = parse_nccl_log(fixture("nccl_logs", "socket_fallback_2_18.txt"))
    assert log["transport"] == "Socket"
    assert log["gdr"] is False
    assert log["nccl_version"] == "2.18.5"
    assert log["socket_interfaces"][0] == {"index": 0, "interface": "ens1f0np0", "address": "172.16.12.12"}
    assert log["num_nics"] == 2
    signals = [f["signal"] for f in log["fallbacks"]]
    assert signals == ["no_ib_device", "socket_instead_of_ib"]
    assert log["nranks"] == 16
    assert log["error"] is None


def test_log_ibext_plugin_without_gdr():
    log = parse_nccl_log(fixture("nccl_logs", "ibext_plugin_no_gdr.txt"))
    assert log["transport"] == "IB"
    assert log["network"] == "IBext_v8"
    assert log["gdr"] is False
    assert log["relaxed_ordering"] is False
    assert [d["device"] for d in log["ib_devices"]] == ["mlx5_1", "mlx5_2"]
    assert [d["link_layer"] for d in log["ib_devices"]] == ["IB", "IB"]


def test_log_connection_refused_is_an_error():
    log = parse_nccl_log(fixture("nccl_logs", "error_connection_refused.txt"))
    assert log["error"] == "socketStartConnect: Connect to 10.89.3.5<37411> failed : Connection refused"
    assert log["error_code"] == "system error"
    assert log["nccl_version"] == "2.19.3"
    assert log["transport"] is None
    assert log["gdr"] is None


def test_log_missing_net_plugin_is_an_error_without_transport():
    log = parse_nccl_log(fixture("nccl_logs", "error_net_plugin_not_found.txt"))
    assert log["transport"] is None
    assert log["error"] == "Error: network AWS Libfabric not found."
    assert {f["signal"] for f in log["fallbacks"]} == {"no_external_net_plugin", "net_not_found"}


def test_log_wrapped_warn_line_is_rejoined():
    log = parse_nccl_log(fixture("nccl_logs", "error_completion_wrapped.txt"))
    assert log["warnings"] == [
        "NET/IB : Got completion from peer 172.16.11.17<41872> with status=12 opcode=0 len=0 vendor err 129 "
        "(Recv) localGid ::ffff:172.16.11.18 remoteGids::ffff:172.16.11.17 hca mlx5_0"]
    assert log["error"].startswith("NET/IB : Got completion from peer")
    assert log["error_code"] == "remote error"
    # no ``Using`` line, but the WARN is NCCL's IB transport's own (NET/IB, net_ib.cc): issue 38 class 2
    assert log["transport"] == "IB"


@pytest.mark.parametrize("text, message", [
    ("", "empty output"),
    ("step 10 loss 2.31\nstep 20 loss 2.07\n", "no NCCL_DEBUG lines"),
])
def test_log_without_nccl_lines_raises(text, message):
    with pytest.raises(ParseError, match=message):
        parse_nccl_log(text)


def test_log_init_failure_without_socket_interface():
    log = parse_nccl_log(fixture("nccl_logs", "error_init_no_socket_interface.txt"))
    assert log["error"] == "Bootstrap : no socket interface found"
    assert log["error_code"] == "internal error"
    assert log["env"] == {"NCCL_SOCKET_IFNAME": "ens9"}
    assert log["init_complete"] is False


def test_run_without_rows_reports_nccl_warnings():
    with pytest.raises(ParseError, match="no result rows in output; NCCL WARN NET/IB : ibv_modify_qp failed"):
        parse_nccl_tests(fixture("nccl_tests", "error_mpi_abort_with_warn.txt"))


def test_interleaved_warnings_are_kept():
    result = parse_nccl_tests(fixture("nccl_tests", "all_reduce_2_19_two_nodes.txt"))
    assert result["nccl_warnings"] == []


def test_log_merged_virtual_nics():
    log = parse_nccl_log(fixture("nccl_logs", "ibext_merged_nics.txt"))
    assert log["transport"] == "IB"
    assert log["network"] == "IBext_v9"
    assert [(d["device"], d["vnic"]) for d in log["ib_devices"]] == [
        ("mlx5_4", 0), ("mlx5_5", 0), ("mlx5_6", 1), ("mlx5_7", 1)]
    assert log["num_nics"] == 4
    assert log["oob_interface"] == "bond0"
    assert log["gdr"] is None  # nothing in this excerpt says


def test_log_sharp_devices_and_shared_gdr_channel():
    log = parse_nccl_log(fixture("nccl_logs", "ib_sharp.txt"))
    assert [d.get("sharp") for d in log["ib_devices"]] == [True, True]
    assert log["ib_devices"][1]["link_layer"] == "IB"
    assert log["gdr"] is True
    assert log["net_channels"] == 1


# ------------------------------------------ blank columns: read by header positions

def test_nccl_tests_old_alltoall_blank_redop_reads_columns_by_position():
    result = parse_nccl_tests(fixture("nccl_tests", "real_alltoall_blank_redop_issue78.txt"))
    row = result["rows"][0]
    assert (row["size"], row["count"], row["type"], row["redop"]) == (268435456, 1048576, "float", None)
    assert row["out_of_place"] == {"time_us": 520935.0, "algbw": 0.52, "busbw": 0.51, "error": 0.0}
    assert row["in_place"]["time_us"] == 519562.0 and row["in_place"]["busbw"] == 0.51
    assert result["rows"][1]["in_place"]["time_us"] == 1041299.0
    assert result["max_busbw"] == 0.51
    assert result["avg_bus_bandwidth"] == 0.507636
    assert result["passed"] is True and result["warnings"] == []


def test_nccl_tests_all_reduce_same_cluster_full_columns():
    result = parse_nccl_tests(fixture("nccl_tests", "real_allreduce_issue78.txt"))
    assert [r["redop"] for r in result["rows"]] == ["sum", "sum"]
    assert result["rows"][1]["in_place"]["busbw"] == 4.32
    assert result["max_busbw"] == 4.33


def test_nccl_tests_placement_order_from_group_line_and_blank_group():
    # mscclpp-test prints "in-place" first and leaves it blank
    result = parse_nccl_tests(fixture("nccl_tests", "real_mscclpp_alltoall_pr87.txt"))
    row = result["rows"][0]
    assert row["in_place"] is None
    assert row["out_of_place"] == {"time_us": 23275.0, "algbw": 46.13, "busbw": 43.25, "wrong": 0}
    assert result["passed"] is True


def test_nccl_tests_row_without_bandwidth_never_passes():
    text = fixture("nccl_tests", "real_allreduce_issue78.txt").replace(
        "   536870912     134217728     float     sum   244833    2.19    4.32  2e-06   244844    2.19    4.32  2e-06",
        "   536870912     134217728     float     sum   244833    2.19     N/A  2e-06   244844    2.19     N/A  2e-06")
    result = parse_nccl_tests(text)
    assert result["passed"] is False
    assert result["failures"] == ["no bus bandwidth read at sizes [536870912]"]


def test_nccl_tests_row_that_fits_no_column_is_a_warning_and_fails():
    text = fixture("nccl_tests", "real_allreduce_issue78.txt").replace(
        "   536870912     134217728     float     sum   244833",
        "   536870912 134217728 float 244833")
    result = parse_nccl_tests(text)
    assert len(result["rows"]) == 1
    assert result["warnings"][0].startswith("line 6: result row does not fit")
    assert result["passed"] is False


# ------------------------------------------------ NCCL logs: fatal wins over noise

def test_log_fatal_cuda_failure_wins_over_falling_back_warnings():
    log = parse_nccl_log(fixture("nccl_logs", "real_fallback_noise_then_cuda_failure_2_25.txt"))
    assert log["error"] == "Cuda failure 1 'invalid argument'"
    assert log["error_code"] == "unhandled cuda error"
    assert log["transport"] == "Socket"
    assert sum("falling back" in w for w in log["warnings"]) == 4


def test_log_falling_back_warnings_alone_are_not_an_error():
    text = fixture("nccl_logs", "real_fallback_noise_then_cuda_failure_2_25.txt")
    clean = text.split("\nGENOA-06:4766:4766 [1] enqueue.cc")[0]
    log = parse_nccl_log(clean)
    assert log["init_complete_ranks"] == 2
    assert log["error"] is None and log["error_code"] is None
    assert len(log["warnings"]) == 4


def test_log_net_plugin_load_failure_then_ib_is_not_the_error():
    log = parse_nccl_log(fixture("nccl_logs", "plugin_load_failed_then_ib_2_19.txt"))
    assert log["transport"] == "IB" and log["gdr"] is True
    assert log["error"] is None
    assert log["warnings"][0].startswith("NET/Plugin : Plugin load (libnccl-net-sharp.so) returned 2")
    assert [f["signal"] for f in log["fallbacks"]] == ["no_external_net_plugin"]


def test_log_libibverbs_missing_on_a_socket_run_is_a_fallback_not_an_error():
    log = parse_nccl_log(fixture("nccl_logs", "libibverbs_missing_socket_run_2_7.txt"))
    assert log["transport"] == "Socket" and log["init_complete"] is True
    assert log["error"] is None
    assert "ibverbs_unavailable" in [f["signal"] for f in log["fallbacks"]]


def test_log_noise_warning_is_the_error_when_nothing_shows_nccl_went_on():
    log = parse_nccl_log(fixture("nccl_logs", "libibverbs_missing_no_network.txt"))
    assert log["transport"] is None and log["init_complete"] is False
    assert log["error"] == "Failed to open libibverbs.so[.1]"
