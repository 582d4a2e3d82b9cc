"""Unit tests for plugins/module_utils/parsers/nccl_tests.py on our own fixtures."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
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
    assert result["devices"][5] == {
        "rank": 5,
        "group": 0,
        "pid": 41205,
        "host": "gpu-a08",
        "device": 1,
        "bus_id": "0000:3b:00",
        "name": "NVIDIA H100 80GB HBM3",
    }
    assert len(result["rows"]) == 8
    last = result["rows"][-1]
    assert (last["size"], last["count"], last["type"], last["redop"], last["root"]) == (8589934592, 2147483648, "float", "sum", -1)
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
    assert result["failures"] == [
        "#wrong elements at sizes [67108864, 134217728]",
        "2 out-of-bounds values",
        "average bus bandwidth 148.432 below NCCL_TESTS_MIN_BW",
    ]
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


@pytest.mark.parametrize(
    "name, message",
    [
        ("error_nccl_failure.txt", "Test NCCL failure common.cu:1035 'remote process exited or there was a network error"),
        ("error_cuda_failure.txt", "Test CUDA failure common.cu:1171 'out of memory'"),
    ],
)
def test_aborted_tests_raise(name, message):
    with pytest.raises(ParseError, match=message):
        parse_nccl_tests(fixture("nccl_tests", name))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty output"),
        ("mpirun was unable to launch the specified application\n", "no result rows"),
        ("{not json", "invalid JSON output"),
    ],
)
def test_non_results_raise(text, message):
    with pytest.raises(ParseError, match=message):
        parse_nccl_tests(text)


def test_run_without_rows_reports_nccl_warnings():
    with pytest.raises(ParseError, match="no result rows in output; NCCL WARN NET/IB : ibv_modify_qp failed"):
        parse_nccl_tests(fixture("nccl_tests", "error_mpi_abort_with_warn.txt"))


def test_interleaved_warnings_are_kept():
    result = parse_nccl_tests(fixture("nccl_tests", "all_reduce_2_19_two_nodes.txt"))
    assert result["nccl_warnings"] == []


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
        "   536870912     134217728     float     sum   244833    2.19     N/A  2e-06   244844    2.19     N/A  2e-06",
    )
    result = parse_nccl_tests(text)
    assert result["passed"] is False
    assert result["failures"] == ["no bus bandwidth read at sizes [536870912]"]


def test_nccl_tests_row_that_fits_no_column_is_a_warning_and_fails():
    text = fixture("nccl_tests", "real_allreduce_issue78.txt").replace(
        "   536870912     134217728     float     sum   244833", "   536870912 134217728 float 244833"
    )
    result = parse_nccl_tests(text)
    assert len(result["rows"]) == 1
    assert result["warnings"][0].startswith("line 6: result row does not fit")
    assert result["passed"] is False
