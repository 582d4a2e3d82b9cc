"""Real outputs captured on an NVIDIA H100 (tests/unit/fixtures/gpu_capture/SOURCES.md).

The lab cannot produce these: they are what nvidia-smi, nccl-tests 2.19.6 and 2.13.11 and NCCL 2.28.9
printed on a GPU. Each test pins what the parser must read from them.
"""

import json
import os

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.parsers import nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import pcie

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "gpu_capture")


def capture(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def test_nvidia_smi_topo_with_its_underlined_header_is_read():
    text = capture("nvidia-smi-topo-m.txt")
    assert "\x1b[4m" in text  # the real header carries a terminal escape even in a file
    topo = pcie.parse_nvidia_smi_topo(text)
    assert topo["devices"] == ["GPU0"]
    assert topo["links"] == {"GPU0": {"GPU0": "X"}}
    assert topo["affinity"] == {"GPU0": {"cpu": "0-15", "numa": 0}}
    assert topo["nic_names"] == {} and topo["warnings"] == []
    assert pcie.nearest_gpus(topo) == {}  # no NIC: nothing is near a GPU


@pytest.mark.parametrize(
    "name,version,test",
    [
        ("nccl-tests-2.19.6-all_reduce_perf-g1.txt", "2.19.6", "all_reduce_perf"),
        ("nccl-tests-2.13.11-all_reduce_perf-g1.txt", None, None),  # 2.13 prints neither
    ],
)
def test_nccl_tests_text_of_two_releases(name, version, test):
    res = nccl_tests.parse_nccl_tests(capture(name))
    assert res["nccl_tests_version"] == version and res["test"] == test
    assert len(res["rows"]) == 13
    last = res["rows"][-1]
    assert last["size"] == 134217728 and last["count"] == 33554432 and last["type"] == "float"
    assert last["out_of_place"]["algbw"] == pytest.approx(1449.3 if version else 1450.81)
    # one GPU: no bus traffic, so the average bus bandwidth is 0 and must never pass a threshold
    assert res["avg_bus_bandwidth"] == 0 and res["max_busbw"] == 0.0
    assert res["out_of_bounds"] == 0 and res["warnings"] == []


def test_nccl_tests_json_of_2_19_6():
    res = nccl_tests.parse_nccl_tests(capture("nccl-tests-2.19.6-J.json"))
    assert res["format"] == "json" and res["test"] == "all_reduce_perf"  # from args[0]: experiment_name is ""
    assert res["nccl_version"] == "2.28.9"
    assert [r["size"] for r in res["rows"]] == [1048576, 8388608, 67108864]
    assert res["rows"][0]["root"] == -1
    assert res["out_of_bounds_ok"] is True  # written as the string "true"
    assert res["avg_bus_bandwidth_ok"] is None  # "unchecked"
    assert res["nccl_last_error"] is None  # "errors": [""]
    assert res["devices"] == [{"rank": 0, "group": 0, "pid": 1171, "host": "vm", "device": 0, "bus_id": "0000:00:06", "name": "NVIDIA H100 80GB HBM3"}]


def test_a_release_without_J_prints_its_usage_exits_0_and_writes_nothing():
    text = capture("nccl-tests-option-refusals.txt")
    old = text.split("=== 2.13.11 -J\n", 1)[1]
    assert old.splitlines()[0].endswith("all_reduce_perf: invalid option -- 'J'")
    assert "invalid option '?'" in old and "USAGE: all_reduce_perf" in old
    assert "-J,--output_file" not in old and "rc=0" in old and "No such file or directory" in old
    new = text.split("=== 2.13.11 -J\n", 1)[0]
    assert "[-J,--output_file <file>" in new and "unrecognized option '--bogus-option'" in new


def test_the_lab_nccl_tests_refuses_J_at_2_13_11_as_the_real_binary_does(capsys):
    """The lab's simulated all_reduce_perf at 2.13.11 answers -J with the real binary's words, usage and status."""
    from labsim import lab  # noqa: F401  (puts lab/sim on sys.path)
    from linerate_lab.tools import all_reduce_perf

    real = capture("nccl-tests-option-refusals.txt").split("=== 2.13.11 -J\n", 1)[1]
    real_lines = real.splitlines()
    assert all_reduce_perf.main(["-b", "1M", "-e", "8M", "-g", "1", "-J", "/tmp/x.json"], version="2.13.11-1") == 0
    out, err = capsys.readouterr()
    assert err.strip() == real_lines[0].replace("/tmp/build-v2.13.11/", "")  # "<argv0>: invalid option -- 'J'"
    usage = real_lines[1 : real_lines.index("rc=0")]
    assert out.splitlines() == usage  # the usage, line for line, as 2.13.11 prints it


def test_ncclsocket_between_two_hosts_is_the_tcp_fallback():
    log = nccl_log.parse_nccl_log(capture("nccl-debug-info-two-hosts-socket-rank0.txt"))
    assert log["transport"] == "Socket" and log["network"] == "Socket"
    assert log["gdr"] is False and log["ib_devices"] == []
    assert log["nranks"] == 2 and log["init_complete"] is True
    assert log["nccl_version"] == "2.28.9" and log["cuda_version"] == "13.0"
    assert {"signal": "no_ib_device", "line": "NET/IB : No device found."} in log["fallbacks"]


def test_one_rank_init_log_names_the_socket_network_and_no_ib_device():
    log = nccl_log.parse_nccl_log(capture("nccl-tests-2.19.6-J-debug-info.txt"))
    assert log["network"] == "Socket" and log["nranks"] == 1 and log["error"] is None
    assert log["socket_interfaces"] == [{"index": 0, "interface": "eth0", "address": "192.0.2.2"}]
    assert json.dumps(log)
