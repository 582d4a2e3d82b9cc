"""The parser classes of issue 38 ("never drop data silently"), each on a published real-format
fixture (its ``#source:`` line names where it comes from), in every parser the class applies to.

1. a name or line the pattern does not expect is read or named in ``warnings``, never dropped
   (and the property over every parser: test_parsers_never_drop.py);
2. a fact printed in another place than the parser expected is still read (nccl-tests' NCCL
   version in an ``NCCL INFO NCCL version`` line; the network named only by NCCL's IB transport);
3. a complete nccl-tests table followed by the validation-failure lines returns the table with
   ``passed: False``;
4. the older ``sminfo`` layout (hex LID, no state field) parses;
5. masked values (``xxxx`` in a GID) read as unknown, with a warning.
"""

import re

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.checks import ib as ib_checks
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import ibdiag, ibtools, mlnx_qos, mlxconfig
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import nccl_log, nccl_tests


# ------------------------------------------------------------------ 1. nothing vanishes


def _with_row_renamed(text, old, new):
    assert re.search(r"^\s*%s\s" % re.escape(old), text, re.MULTILINE), old
    return re.sub(r"^(\s*)%s(\s)" % re.escape(old), r"\g<1>%s\g<2>" % new, text, count=1, flags=re.MULTILINE)


def test_mlxconfig_reads_a_parameter_name_with_lower_case_letters():
    # a published ConnectX-7 query (schmaustech/containerize-mft-tools); the database has names the
    # upper-case-only pattern did not expect: such a row vanished (184 of 185 parameters, no warning)
    text = fixture("mlxconfig", "real_query_cx7_elided.txt")
    before = mlxconfig.parse_mlxconfig(text)["devices"][0]["params"]
    after = mlxconfig.parse_mlxconfig(_with_row_renamed(text, "SAFE_MODE_ENABLE", "SAFE_MODE_enable_P1.x"))
    params = after["devices"][0]["params"]
    assert len(params) == len(before)
    assert params["SAFE_MODE_enable_P1.x"]["next_boot"] == before["SAFE_MODE_ENABLE"]["next_boot"]
    assert after["warnings"] == []


def test_mlxconfig_names_a_line_it_cannot_read():
    text = fixture("mlxconfig", "real_query_e_cx4.txt")
    result = mlxconfig.parse_mlxconfig(text.replace("Configurations:", "-W- Parameter FOO is deprecated\nConfigurations:", 1))
    assert any("-W- Parameter FOO is deprecated" in w and w.startswith("line ") for w in result["warnings"])
    assert result["devices"][0]["params"]  # the rest is still read


def test_mlnx_qos_names_an_unknown_field_and_another_tools_lines():
    # a published mlnx_qos dump (real_trust_dscp_dump.txt) with a field this parser does not know
    text = fixture("mlnx_qos", "real_trust_dscp_dump.txt")
    assert mlnx_qos.parse_mlnx_qos(text)["warnings"] == []
    result = mlnx_qos.parse_mlnx_qos(text.replace("Cable len:", "Buffer ownership: sw\nCable len:", 1))
    assert result["warnings"] == [w for w in result["warnings"] if "Buffer ownership: sw" in w] != []
    # spiderpool's script prints sysfs ECN lines after the mlnx_qos block: each one named
    mixed = mlnx_qos.parse_mlnx_qos(fixture("mlnx_qos", "real_filtered_pfc_buffer.txt"))
    assert mixed["pfc_enabled_priorities"] == [5]
    assert sum("ECN Enabled for priority" in w for w in mixed["warnings"]) == 16


def test_nccl_tests_configuration_value_that_is_not_a_number_is_named():
    text = fixture("nccl_tests", "real_oci_a100_two_nodes.txt")
    line = next(x for x in text.splitlines() if "nThread" in x)
    result = nccl_tests.parse_nccl_tests(text.replace(line, line.replace("graph: 0", "graph: auto"), 1))
    assert any("graph" in w and "'auto'" in w for w in result["warnings"])
    assert result["passed"] is True  # a configuration oddity does not fail the run


def test_nccl_tests_result_cell_that_is_not_a_number_fails_the_run():
    text = fixture("nccl_tests", "real_oci_h100_2_23.txt")
    row = next(x for x in text.splitlines() if re.match(r"^\s+\d+\s+\d+\s+float", x))
    cells = row.split()
    broken = row[: row.rindex(cells[-1])] + "??"
    result = nccl_tests.parse_nccl_tests(text.replace(row, broken, 1))
    assert result["passed"] is False
    assert any("not numbers" in f for f in result["failures"])
    assert any(r.get("in_place", {}).get("unread") == {"wrong": "??"} for r in result["rows"])


def test_show_gids_reads_a_row_after_a_prompt_and_names_an_unread_one():
    text = fixture("show_gids", "real_k8s_macvlan_tabs.txt")
    result = ibtools.parse_show_gids(text)
    assert result["warnings"] == [] and result["count"] == len(result["gids"])
    broken = ibtools.parse_show_gids(text.replace("mlx5_0\t1\t4\t", "mlx5_0\t1\tfour\t", 1))
    assert any("mlx5_0\\t1\\tfour" in w for w in broken["warnings"])


# ------------------------------------------------------------------ 2. a fact in another place


def test_nccl_tests_reads_the_nccl_version_from_an_nccl_info_line():
    # OCI H100 (oracle-quickstart/oci-hpc) prints a bare "NCCL version 2.23.4+cuda12.6"; with
    # NCCL_DEBUG=INFO NCCL prints it as "<host>:<pid>:<tid> [0] NCCL INFO NCCL version ..." (the
    # published MOC logs, fixtures/nccl_logs/real_gdrdma_init_moc.txt), and nothing else says it
    text = fixture("nccl_tests", "real_oci_h100_2_23.txt")
    assert nccl_tests.parse_nccl_tests(text)["nccl_version"] == "2.23.4"
    info = text.replace("NCCL version 2.23.4+cuda12.6", "h100-ord01-03-14:1942267:1942267 [0] NCCL INFO NCCL version 2.23.4+cuda12.6", 1)
    assert "\nNCCL version" not in info
    assert nccl_tests.parse_nccl_tests(info)["nccl_version"] == "2.23.4"
    moc = fixture("nccl_logs", "real_gdrdma_init_moc.txt")
    assert nccl_log.parse_nccl_log(moc)["nccl_version"] == "2.26.2"  # the log parser reads the same line


def test_nccl_log_names_ib_from_the_ib_transports_own_warn():
    # stas00/ml-engineering: a WARN from transport/net_ib.cc ("NET/IB : Got completion ...") and the
    # error chain after it; no "Using" line. The network is IB: NCCL's IB transport printed it.
    result = nccl_log.parse_nccl_log(fixture("nccl_logs", "real_error_ib_completion_azure.txt"))
    assert result["transport"] == "IB" and result["network"] == "IB"
    assert result["error"].startswith("NET/IB : Got completion")
    # a "Using" line still wins over the hint
    socket = nccl_log.parse_nccl_log(fixture("nccl_logs", "real_socket_fallback.txt"))
    assert socket["transport"] == "Socket"
    # aws-ofi-nccl's own WARN (aws-samples/awsome-distributed-training efa-cheatsheet.md, commit 7217859f67bc,
    # line 14, quoted there as the error FI_EFA_SET_CUDA_SYNC_MEMOPS prevents): the network is the plugin's
    ofi = nccl_log.parse_nccl_log(
        "register_rail_mr_buffer:617 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 4. RC: -22, Error: Invalid argument\n"
    )
    assert ofi["transport"] == "AWS Libfabric" and ofi["error"]
    # a plugin that was not found names no network in use
    missing = nccl_log.parse_nccl_log(fixture("nccl_logs", "real_error_net_plugin_not_found.txt"))
    assert missing["transport"] is None and missing["error"]


# ------------------------------------------------------------------ 3. table, then failed checks


def _failed_validation(text):
    """A published table whose run failed its data check, in the lines nccl-tests prints for it
    (src/util.cu: "# Out of bounds values : %d FAILED"; src/common.h TESTCHECK: " .. %s pid %d: Test
    failure %s:%d"): one #wrong count, the FAILED summary, the back-trace of the exit."""
    row = next(x for x in text.splitlines() if re.match(r"^\s+\d+\s+\d+\s+float", x))
    wrong = row[: row.rindex("0")] + "7" + row[row.rindex("0") + 1 :]
    text = text.replace(row, wrong, 1).replace("# Out of bounds values : 0 OK", "# Out of bounds values : 7 FAILED")
    return text + " .. h100-ord01-03-14 pid 1942267: Test failure common.cu:1121\n"


def test_a_complete_table_followed_by_validation_failure_lines_is_returned_failed():
    text = _failed_validation(fixture("nccl_tests", "real_oci_h100_2_23.txt"))
    result = nccl_tests.parse_nccl_tests(text)
    assert result["passed"] is False
    assert result["rows"] and result["avg_bus_bandwidth"] is not None
    assert result["out_of_bounds"] == 7 and result["out_of_bounds_ok"] is False
    assert result["failed_checks"] == [".. h100-ord01-03-14 pid 1942267: Test failure common.cu:1121"]
    assert any("#wrong" in f for f in result["failures"])
    assert any("exited on a failed check" in f for f in result["failures"])


def test_an_abort_still_raises():
    # the abort line before the back-trace (Test NCCL/CUDA failure) is not a failed check
    with pytest.raises(ParseError, match="Test CUDA failure"):
        nccl_tests.parse_nccl_tests(
            fixture("nccl_tests", "real_oci_h100_2_23.txt") + "h100-ord01-03-14: Test CUDA failure common.cu:1171 'out of memory'\n"
            " .. h100-ord01-03-14 pid 1942267: Test failure common.cu:1043\n"
        )
    with pytest.raises(ParseError, match="Test failure"):  # the back-trace alone, no table
        nccl_tests.parse_nccl_tests(" .. gpu-c11 pid 51020: Test failure common.cu:1043\n")


# ------------------------------------------------------------------ 4. older IB diagnostic layouts


def test_sminfo_older_layout_hex_lid_without_state():
    result = ibdiag.parse_sminfo(fixture("sminfo", "real_ofed15_readme_hex_lid.txt"))
    assert result["lid"] == 1 and result["guid"] == ibdiag.norm_guid("0x2c9010b7c2ae1")
    assert result["activity_count"] == 20 and result["priority"] == 1
    assert result["state"] is None and result["master"] is None
    assert any("no state field" in w for w in result["warnings"])
    current = ibdiag.parse_sminfo(fixture("sminfo", "master.txt"))
    assert current["master"] is True and current["lid"] == 1 and current["warnings"] == []
    # the check does not take an unknown state for MASTER, nor call it another state
    (finding,) = ib_checks.check_sm(result)
    assert finding["code"] == "IB_SM_NOT_MASTER" and "unknown" in finding["message"]


# ------------------------------------------------------------------ 5. masked values


def test_a_masked_gid_is_read_as_unknown_with_a_warning():
    text = fixture("show_gids", "real_k8s_macvlan_tabs.txt")
    row = next(x for x in text.splitlines() if x.startswith("mlx5_0\t1\t6\t"))
    gid = row.split("\t")[3]
    masked = gid[:-9] + "xxxx:xxxx"
    result = ibtools.parse_show_gids(text.replace(row, row.replace(gid, masked), 1))
    entry = next(g for g in result["gids"] if g["device"] == "mlx5_0" and g["index"] == 6)
    assert entry["gid"] is None and entry["masked"] is True and entry["ipv4"]
    assert any(masked in w and "unknown" in w for w in result["warnings"])
    assert result["count"] == len(result["gids"])
