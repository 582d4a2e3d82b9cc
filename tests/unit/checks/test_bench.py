"""ib_send_bw and ib_write_lat in verification: the exact argv, the module's refusals, the
thresholds (fabric.verify.latency_us_max validated, per-transport default), findings naming
node, device and peer, and the report's sections (JSON cases, Markdown, JUnit per pair)."""

import os
from xml.etree import ElementTree as ET

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import bench as benchcheck
from ansible_collections.linerate.fabric.plugins.module_utils.probes import perftest
from ansible_collections.linerate.fabric.plugins.module_utils.probes import schedule
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import junit as report_junit
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds as checks_thresholds
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.modules import ib_write_bw
from module_harness import Tools, run_module

from checks.test_rdma import CABLING
from probes.test_perftest import PARAMS, fake_tool, runner_for
from checks.test_plans import FABRIC, INTENT

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
SERVER = {"device": "mlx5_1", "tcp_port": 18516, "server": "10.0.0.2"}


# ---------------------------------------------------------------- argv


def test_send_bw_argv_is_ib_write_bws_with_the_send_binary():
    argv = perftest.perftest_argv("/usr/bin/ib_send_bw", dict(PARAMS, tool="ib_send_bw", duration=3), SERVER, 1)
    assert argv == [
        "/usr/bin/ib_send_bw",
        "-d",
        "mlx5_1",
        "-i",
        "1",
        "-p",
        "18516",
        "-F",
        "--report_gbits",
        "-q",
        "4",
        "-s",
        "1048576",
        "-D",
        "3",
        "-x",
        "3",
        "--tclass=104",
        "10.0.0.2",
    ]


def test_latency_argv_has_no_bandwidth_options():
    p = dict(PARAMS, tool="ib_write_lat", size=2, duration=0, iterations=1000, qps=4)
    assert perftest.perftest_argv("ib_write_lat", p, SERVER, 1) == [
        "ib_write_lat",
        "-d",
        "mlx5_1",
        "-i",
        "1",
        "-p",
        "18516",
        "-F",
        "-s",
        "2",
        "-n",
        "1000",
        "-x",
        "3",
        "--tclass=104",
        "10.0.0.2",
    ]
    server = dict(p, mode="server", gid_index=None, tclass=None, sl=2, duration=5)
    assert perftest.perftest_argv("ib_send_lat", dict(server, tool="ib_send_lat"), SERVER, 0) == [
        "ib_send_lat",
        "-d",
        "mlx5_1",
        "-i",
        "1",
        "-p",
        "18516",
        "-F",
        "-s",
        "2",
        "-D",
        "5",
        "-S",
        "2",
    ]


def test_schedule_check_mode_gives_each_parts_latency_argv():
    p = dict(
        PARAMS,
        tool="ib_write_lat",
        size=2,
        duration=0,
        iterations=1000,
        base_port=18515,
        port_stride=16,
        port_rounds=64,
        tests=[{"device": "mlx5_0"}],
        parts=[{"round": 1, "role": "client", "peer": "node2", "peer_address": "10.0.0.2"}, {"round": 2, "role": "idle", "peer": None}],
    )

    class Run:
        def which(self, tool):
            return f"/usr/bin/{tool}"

    [part] = schedule.run_schedule(Run(), p, check=True)
    assert part["results"][0]["argv"] == [
        "/usr/bin/ib_write_lat",
        "-d",
        "mlx5_0",
        "-i",
        "1",
        "-p",
        "18531",
        "-F",
        "-s",
        "2",
        "-n",
        "1000",
        "-x",
        "3",
        "--tclass=104",
        "10.0.0.2",
    ]


def test_module_check_mode_latency_argv_and_refusals(capsys):
    res = run_module(
        ib_write_bw.main,
        {"mode": "client", "tool": "ib_write_lat", "size": 2, "duration": 0, "iterations": 1000, "gid_index": 3, "tests": [SERVER]},
        Tools({}),
        capsys,
        check=True,
    )
    assert res["tests"][0]["argv"] == ["/usr/bin/ib_write_lat", "-d", "mlx5_1", "-i", "1", "-p", "18516", "-F", "-s", "2", "-n", "1000", "-x", "3", "10.0.0.2"]
    for bad, key in (({"use_cuda": True}, "use_cuda"), ({"out_json": True}, "out_json"), ({"extra_args": ["-q", "2"]}, "extra_args")):
        res = run_module(ib_write_bw.main, dict({"mode": "client", "tool": "ib_write_lat", "tests": [SERVER]}, **bad), Tools({}), capsys, check=True)
        assert res["failed"] and res["msg"].startswith(f"{key}: ") and "ib_write_lat" in res["msg"]


# ---------------------------------------------------------------- results


def lat_tool(tmp_path, fixture, rc=0):
    return fake_tool(tmp_path, [(rc, fixture)])


def test_latency_result_reads_t_avg_and_the_distribution(tmp_path):
    binary = lat_tool(tmp_path, "lat_write_composed_v4.txt")
    p = dict(PARAMS, tool="ib_write_lat", size=2, duration=0, iterations=1000, tests=[SERVER])
    [res] = perftest.run_perftest(runner_for(binary, "ib_write_lat"), p)
    assert res["error"] is None and res["gbps"] is None and res["latency_usec"] == 1.60
    assert res["latency"] == {"t_min_usec": 1.52, "t_typical_usec": 1.58, "t_avg_usec": 1.60, "p99_usec": 1.79, "p99_9_usec": 4.11, "t_max_usec": 4.11}


def test_old_latency_layout_falls_back_to_t_typical():
    with open(os.path.join(FIX, "perftest", "lat_send_composed_old.txt")) as f:
        from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest_lat import parse_perftest_lat

        average, figures = perftest.latency_figures(parse_perftest_lat(f.read()))
    assert average == figures["t_typical_usec"] and "t_avg_usec" not in figures


def test_send_bw_result_refuses_another_tests_output(tmp_path):
    binary = lat_tool(tmp_path, "client_ib_sweep_gbits_25x.txt")
    p = dict(PARAMS, tool="ib_send_bw", tests=[SERVER])
    [res] = perftest.run_perftest(runner_for(binary, "ib_send_bw"), p)
    assert res["gbps"] is None and "not ib_send_bw" in res["error"]


def test_latency_error_is_the_tools_error(tmp_path):
    binary = lat_tool(tmp_path, "error_device_not_found.txt", rc=1)
    p = dict(PARAMS, tool="ib_write_lat", size=2, duration=0, iterations=1000, tests=[SERVER])
    [res] = perftest.run_perftest(runner_for(binary, "ib_write_lat"), p)
    assert res["latency_usec"] is None and "not found" in res["error"]


# ---------------------------------------------------------------- thresholds


def test_latency_threshold_per_transport_and_from_the_intent():
    assert benchcheck.threshold("ib_write_lat", FABRIC) == 5.0
    assert benchcheck.threshold("ib_write_lat", published(dict(INTENT, transport="infiniband"))) == 3.0
    assert benchcheck.threshold("ib_write_lat", published(dict(INTENT, verify=dict(INTENT["verify"], latency_us_max=2.5)))) == 2.5
    # ib_send_bw: exactly ib_write_bw's, from the link speed
    assert benchcheck.threshold("ib_send_bw", FABRIC) == checks_thresholds.rdma_threshold_gbps(FABRIC) == 360.0
    assert benchcheck.threshold("ib_send_bw", published(dict(INTENT, link_speed_gbps=200))) == 180.0
    with pytest.raises(ValueError, match="ib_read_lat"):
        benchcheck.threshold("ib_read_lat", FABRIC)


@pytest.mark.parametrize("value", [0, -1, 1001, "5", True])
def test_latency_us_max_is_validated(value):
    problems = schema.validate({"name": "lab", "transport": "roce", "verify": {"latency_us_max": value}})
    hits = [p for p in problems if "fabric.verify.latency_us_max" in str(p)]
    assert len(hits) == 1 and "0 < x <= 1000" in str(hits[0])


def test_latency_us_max_accepts_a_number_or_null():
    for value in (None, 4, 7.5):
        problems = schema.validate({"name": "lab", "transport": "roce", "verify": {"latency_us_max": value}})
        assert not [p for p in problems if "latency_us_max" in str(p)]


# ---------------------------------------------------------------- findings


def record(rnd, role, peer, device, **res):
    return {"round": rnd, "role": role, "peer": peer, "results": [dict({"device": device, "error": None, "gbps": None, "latency_usec": None}, **res)]}


def lat_logs(bad_usec=None, error=None):
    logs = {
        "node1": [record(0, "client", "node2", "mlx5_0", latency_usec=bad_usec or 1.6, latency={"p99_usec": 1.8}, error=error)],
        "node2": [record(0, "server", "node1", "mlx5_0", latency_usec=bad_usec or 1.6)],
        "node3": [record(0, "client", "node4", "mlx5_0", latency_usec=1.7, latency={"p99_usec": 1.9})],
        "node4": [record(0, "server", "node3", "mlx5_0", latency_usec=1.7)],
    }
    return logs


def judge(tool, logs, known=()):
    limit = benchcheck.threshold(tool, FABRIC)
    evaluated = benchcheck.evaluate(tool, benchcheck.bench_tests(logs), limit)
    found = benchcheck.findings(tool, evaluated, FABRIC, CABLING, limit, known)
    return evaluated, found, benchcheck.check(tool, evaluated, limit, found)


def test_healthy_latency_passes():
    evaluated, found, check = judge("ib_write_lat", lat_logs())
    assert found == [] and check["passed"] and check["threshold_usec"] == 5.0
    assert [c["name"] for c in check["cases"]] == ["node1:mlx5_0 -> node2:mlx5_0 (round 0)", "node3:mlx5_0 -> node4:mlx5_0 (round 0)"]
    assert check["detail"] == "2/2 links <= 5 us"


def test_high_latency_names_node_device_switch_port_and_peer():
    _ev, found, check = judge("ib_write_lat", lat_logs(bad_usec=6.4))
    [f] = found
    assert (f["code"], f["node"], f["device"], f["switch"], f["switch_port"], f["peer"]) == (
        "RDMA_LATENCY_HIGH",
        "node1",
        "mlx5_0",
        "leaf1",
        "swp1",
        {"node": "node2", "device": "mlx5_0"},
    )
    assert f["check"] == "ib_write_lat" and f["severity"] == "error" and "6.40 us average, 99% 1.80 us > 5 us" in f["message"]
    assert not check["passed"] and check["cases"][0]["code"] == "RDMA_LATENCY_HIGH" and check["cases"][1]["ok"]


def test_the_end_another_check_named_is_the_one_blamed():
    _ev, [f], _c = judge("ib_write_lat", lat_logs(bad_usec=6.4), known=[("RDMA_BW_LOW", "node2", "mlx5_0")])
    assert (f["node"], f["peer"]["node"]) == ("node2", "node1") and "ib_write_lat server" in f["message"]


def test_low_send_bandwidth_and_exactly_at_the_threshold():
    logs = {
        "node1": [record(0, "client", "node2", "mlx5_0", gbps=150.0)],
        "node2": [record(0, "server", "node1", "mlx5_0", gbps=150.0)],
        "node3": [record(0, "client", "node4", "mlx5_0", gbps=360.0)],
        "node4": [record(0, "server", "node3", "mlx5_0", gbps=360.0)],
    }
    _ev, [f], check = judge("ib_send_bw", logs)
    assert f["code"] == "RDMA_SEND_BW_LOW" and f["node"] == "node1" and "150.0 Gb/s < 360 Gb/s" in f["message"]
    assert check["threshold_gbps"] == 360.0 and [c["ok"] for c in check["cases"]] == [False, True]


def test_a_failed_test_is_classified_and_pinned_on_the_side_that_failed():
    logs = lat_logs()
    logs["node2"][0]["results"][0].update(error="Port number 1 state is Down", latency_usec=None)
    logs["node1"][0]["results"][0].update(error="Failed to exchange data between server and clients", latency_usec=None)
    _ev, [f], _c = judge("ib_write_lat", logs)
    assert (f["code"], f["node"], f["peer"]["node"]) == ("PORT_DOWN", "node2", "node1")
    # the same end already named PORT_DOWN by ib_write_bw or the port check: no second finding
    _ev, found, check = judge("ib_write_lat", logs, known=[("PORT_DOWN", "node2", "mlx5_0")])
    assert found == [] and not check["passed"] and check["cases"][0]["code"] == "PORT_DOWN"


def test_a_test_without_a_figure_or_error_is_a_test_error():
    logs = lat_logs()
    logs["node1"][0]["results"][0]["latency_usec"] = None
    _ev, [f], _c = judge("ib_write_lat", logs)
    assert f["code"] == "RDMA_TEST_ERROR"


def test_new_codes_are_stable_and_documented():
    assert faults.FAULT_CODES["RDMA_SEND_BW_LOW"][:2] == ("error", "link")
    assert faults.FAULT_CODES["RDMA_LATENCY_HIGH"][:2] == ("error", "link")
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "verification.md")) as f:
        doc = f.read()
    assert "| `RDMA_SEND_BW_LOW` |" in doc and "| `RDMA_LATENCY_HIGH` |" in doc


# ---------------------------------------------------------------- report


def test_report_markdown_and_junit_have_a_case_per_pair():
    _ev, found, lat = judge("ib_write_lat", lat_logs(bad_usec=6.4))
    doc = report.build_report(found, faults.summarize(found), {"ib_write_lat": lat}, FABRIC, {})
    md = report_markdown.to_markdown(doc)
    assert "### ib_write_lat (latency, usec; threshold 5)" in md
    assert "| node1:mlx5_0 -> node2:mlx5_0 (round 0) | 6.40 | 1.80 | FAIL RDMA_LATENCY_HIGH |" in md
    assert "| node3:mlx5_0 -> node4:mlx5_0 (round 0) | 1.70 | 1.90 | ok |" in md
    suite = ET.fromstring(report_junit.to_junit(doc)).find("testsuite[@name='ib_write_lat']")
    cases = suite.findall("testcase")
    assert suite.get("failures") == "1" and len(cases) == 2
    assert cases[0].find("failure").get("type") == "RDMA_LATENCY_HIGH" and cases[1].find("failure") is None
