"""GPUDirect check (module_utils/checks/gpudirect.py): ib_write_bw --use_cuda tests in, findings out; gdrcopy's
sanity output parsed in both of its formats (NVIDIA/gdrcopy tests/testsuites/testsuite.cpp from v2.4,
the libcheck suite of v2.0-v2.3); the ib_write_bw argv with --use_cuda on the rail's nearest GPU."""

import pytest

from parser_fixtures import fixture

from ansible_collections.linerate.fabric.plugins.module_utils.checks import gpudirect
from ansible_collections.linerate.fabric.plugins.module_utils.probes.perftest import perftest_argv
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES

LIMIT = 360.0
READINESS = {
    "n1": {"gpus": [{"index": 0}], "rails": [{"device": "mlx5_0", "gpu": 3, "link": "SYS"}, {"device": "mlx5_1", "gpu": 1, "link": "PIX"}]},
    "n2": {"gpus": [{"index": 0}], "rails": []},
}


def _rail(device, gpu, gbps=None, error=None, stdout="", stderr=""):
    return {
        "device": device,
        "gbps": gbps,
        "error": error,
        "stdout": stdout,
        "stderr": stderr,
        "argv": ["ib_write_bw", "-d", device, f"--use_cuda={gpu}", "10.0.0.2"],
    }


def _logs(client_rails, server_rails=None):
    server_rails = server_rails or [{"device": r["device"], "gbps": r["gbps"], "error": None} for r in client_rails]
    return {
        "n1": [{"round": 0, "role": "client", "peer": "n2", "results": client_rails}],
        "n2": [{"round": 0, "role": "server", "peer": "n1", "results": server_rails}],
    }


def test_codes_are_registered():
    assert FAULT_CODES["GPUDIRECT_UNAVAILABLE"][0] == "error"
    assert FAULT_CODES["GPUDIRECT_RDMA_SLOW"][1] == "pcie"
    assert FAULT_CODES["GDRCOPY_SANITY_FAILED"][0] == "error"


def test_argv_puts_each_rail_on_its_nearest_gpu():
    p = {
        "tool": "ib_write_bw",
        "qps": 4,
        "size": 1048576,
        "duration": 3,
        "iterations": 5000,
        "gid_index": 3,
        "tclass": 106,
        "sl": None,
        "use_cuda": True,
        "extra_args": [],
        "mode": "client",
    }
    argv = perftest_argv("/usr/bin/ib_write_bw", p, {"device": "mlx5_9", "tcp_port": 18515, "gpu": 5, "server": "10.0.0.2"}, 5)
    assert argv == [
        "/usr/bin/ib_write_bw",
        "-d",
        "mlx5_9",
        "-i",
        "1",
        "-p",
        "18515",
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
        "--tclass=106",
        "--use_cuda=5",
        "10.0.0.2",
    ]


def test_tests_read_the_gpu_from_the_argv_and_pair_the_server():
    found = gpudirect.tests(_logs([_rail("mlx5_0", 3, gbps=391.2)]))
    assert [(t["round"], t["client"], t["server"], t["gpu"], t["gbps"]) for t in found] == [(0, ["n1", "mlx5_0"], ["n2", "mlx5_0"], 3, 391.2)]


def test_a_real_gpudirect_run_at_line_rate_passes():
    text = fixture("perftest", "real_client_gpudirect_h100.txt")
    ev = gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_1", 1, gbps=LIMIT + 1, stdout=text)])), LIMIT)
    assert [(t["ok"], t["code"]) for t in ev] == [(True, None)]
    assert gpudirect.findings(ev, LIMIT, READINESS) == []


def test_slow_from_gpu_memory_names_gpu_link_and_host_figure():
    ev = gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_0", 3, gbps=212.5)])), LIMIT)
    f = gpudirect.findings(ev, LIMIT, READINESS, host_gbps={("n1", "mlx5_0"): 392.0})
    assert [(x["code"], x["node"], x["device"], x["check"]) for x in f] == [("GPUDIRECT_RDMA_SLOW", "n1", "mlx5_0", "gpudirect")]
    assert f[0]["message"] == (
        "n1 mlx5_0 -> GPU3: ib_write_bw from GPU memory 212.5 Gb/s < 360 Gb/s to n2 mlx5_0; the GPU is SYS from "
        "the rail; from host memory the rail ran 392.0 Gb/s (the fabric is fine: the GPU's PCIe path - switch, "
        "ACS, IOMMU - is not)"
    )
    assert f[0]["evidence"]["link"] == "SYS" and f[0]["evidence"]["host_gbps"] == 392.0
    # host memory slow too: no claim that the fabric is fine
    f = gpudirect.findings(ev, LIMIT, READINESS, host_gbps={("n1", "mlx5_0"): 200.0})
    assert "fabric is fine" not in f[0]["message"]
    # the threshold itself: at the limit passes, just under fails
    assert gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_0", 3, gbps=LIMIT)])), LIMIT)[0]["ok"]
    assert not gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_0", 3, gbps=LIMIT - 0.1)])), LIMIT)[0]["ok"]


@pytest.mark.parametrize(
    "stdout,stderr,why",
    [
        # perftest_parameters.c parser(): --use_cuda on a build without CUDA, then write_bw.c main()
        (" Unsupported memory type\n", " Parser function exited with Error\n", "perftest was built without CUDA"),
        ("initializing CUDA\n", "Couldn't allocate MR\n Unable to create the needed resources\n", "nvidia_peermem is not loaded"),
        ("initializing CUDA\n", "No such device ID (9) exists in system\n", "the GPU index does not exist"),
        ("initializing CUDA\ncuInit(0) returned 100\n", "", "CUDA is not usable"),
    ],
)
def test_unavailable_names_the_cause_and_the_end(stdout, stderr, why):
    client = [_rail("mlx5_1", 1, error="exit status 1", stdout=stdout, stderr=stderr)]
    ev = gpudirect.evaluate(gpudirect.tests(_logs(client, [{"device": "mlx5_1", "gbps": None, "error": "killed after 30 s (no client connected)"}])), LIMIT)
    assert (ev[0]["code"], ev[0]["blame"]) == ("GPUDIRECT_UNAVAILABLE", "client")
    f = gpudirect.findings(ev, LIMIT, READINESS)
    assert (f[0]["code"], f[0]["node"], f[0]["device"]) == ("GPUDIRECT_UNAVAILABLE", "n1", "mlx5_1")
    assert why in f[0]["message"] and f[0]["message"].startswith("n1 mlx5_1 -> GPU1: GPU memory cannot be used")


def test_server_side_cause_is_blamed_on_the_server():
    server = [{"device": "mlx5_1", "gbps": None, "error": "exit status 1", "stdout": " Unsupported memory type\n"}]
    ev = gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_1", 1, error="Couldn't connect to 10.0.0.2:18515")], server)), LIMIT)
    assert (ev[0]["code"], ev[0]["blame"]) == ("GPUDIRECT_UNAVAILABLE", "server")
    assert gpudirect.findings(ev, LIMIT)[0]["node"] == "n2"


def test_other_errors_keep_ib_write_bws_codes():
    ev = gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_1", 1, error="Failed to modify QP 0x0128 to RTR")])), LIMIT)
    assert ev[0]["code"] == "RDMA_QP_FAILED"
    ev = gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_1", 1)])), LIMIT)
    assert ev[0]["code"] == "RDMA_TEST_ERROR"


def test_gpu_nodes_and_not_applicable_cases():
    assert gpudirect.gpu_nodes({"a": {"gpus": [{"index": 0}]}, "b": {"gpus": []}, "c": None}) == (["a"], ["b"], ["c"])
    ev = gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_1", 1, gbps=380.0)])), LIMIT)
    c = gpudirect.check(ev, LIMIT, [], {"cpu1": "no GPU on the node (nvidia-smi lists none)"})
    assert c["passed"] and c["detail"] == "1/1 rails from GPU memory >= 360 Gb/s; not applicable on 1 node(s) (no GPU)"
    assert c["cases"][-1] == {
        "name": "cpu1: not applicable",
        "ok": True,
        "code": None,
        "gbps": None,
        "message": "no GPU on the node (nvidia-smi lists none)",
        "not_applicable": True,
    }
    assert gpudirect.check([], LIMIT, [], {"cpu1": "no GPU"})["detail"].startswith("not applicable")
    slow = gpudirect.evaluate(gpudirect.tests(_logs([_rail("mlx5_1", 1, gbps=100.0)])), LIMIT)
    assert not gpudirect.check(slow, LIMIT, gpudirect.findings(slow, LIMIT))["passed"]


# ---------------------------------------------------------------- gdrcopy

# testsuite.cpp run_tests(): the summary and the lists (v2.4 .. v2.5, gdrcopy_sanity)
SANITY_OK = "Total: 29, Passed: 27, Failed: 0, Waived: 2\n\nList of waived tests:\n    basic_vmmalloc\n    data_validation_vmmalloc\n"
SANITY_FAIL = (
    "Total: 29, Passed: 26, Failed: 2, Waived: 1\n\nList of failed tests:\n    basic_cumemalloc\n"
    "    invalidation_fork_after_gdr_map_cumemalloc\n\nList of waived tests:\n    basic_vmmalloc\n"
)
# libcheck's srunner output (gdrcopy v2.0 .. v2.3, `sanity`)
CHECK_FAIL = (
    "Running suite(s): Sanity\n80%: Checks: 10, Failures: 1, Errors: 1\n"
    "sanity.cpp:212:F:Basic:basic_cumemalloc:0: Assertion 'ret == 0' failed\n"
    "sanity.cpp:820:E:Invalidation:invalidation_fork_access_after_free_cumemalloc:0: (after this point) "
    "Received signal 11 (Segmentation fault)\n"
)


def test_parse_gdrcopy_sanity_testsuite_format():
    ok = gpudirect.parse_gdrcopy_sanity(SANITY_OK, 0)
    assert ok == {
        "format": "testsuite",
        "total": 29,
        "passed": 27,
        "failed": 0,
        "waived": 2,
        "failed_tests": [],
        "waived_tests": ["basic_vmmalloc", "data_validation_vmmalloc"],
        "ok": True,
        "warnings": [],
    }
    bad = gpudirect.parse_gdrcopy_sanity(SANITY_FAIL + "Error: Encountered an error or a test failure with status=1\n", 1)
    assert (bad["failed"], bad["failed_tests"], bad["waived_tests"], bad["ok"]) == (
        2,
        ["basic_cumemalloc", "invalidation_fork_after_gdr_map_cumemalloc"],
        ["basic_vmmalloc"],
        False,
    )
    # a summary without failures but a failing exit status is not a pass
    assert not gpudirect.parse_gdrcopy_sanity(SANITY_OK, 1)["ok"]


def test_parse_gdrcopy_sanity_libcheck_format():
    r = gpudirect.parse_gdrcopy_sanity(CHECK_FAIL, 1)
    assert (r["format"], r["total"], r["passed"], r["failed"], r["ok"]) == ("libcheck", 10, 8, 2, False)
    assert r["failed_tests"] == ["basic_cumemalloc", "invalidation_fork_access_after_free_cumemalloc"]
    assert gpudirect.parse_gdrcopy_sanity("Running suite(s): Sanity\n100%: Checks: 10, Failures: 0, Errors: 0\n", 0)["ok"]


def test_parse_gdrcopy_sanity_without_summary_raises():
    with pytest.raises(ParseError, match="error opening driver"):
        gpudirect.parse_gdrcopy_sanity("GDRCOPY ERR: error opening driver (errno=2/No such file or directory)\n", 1)
    with pytest.raises(ParseError, match="no test summary"):
        gpudirect.parse_gdrcopy_sanity("", 0)


def test_gdrcopy_findings_and_not_applicable():
    f, cases = gpudirect.gdrcopy_findings(
        {
            "n1": {"binary": "/usr/bin/gdrcopy_sanity", "rc": 1, "stdout": SANITY_FAIL, "stderr": ""},
            "n2": {"binary": "/usr/bin/gdrcopy_sanity", "rc": 0, "stdout": SANITY_OK, "stderr": ""},
            "n3": {"skipped": "gdrcopy is not installed (no gdrcopy_sanity or sanity beside copybw on PATH)"},
            "n4": {"binary": "/usr/local/bin/sanity", "rc": 1, "stdout": "", "stderr": "error opening driver (errno=2/No such file or directory)\n"},
        }
    )
    assert [(x["code"], x["node"]) for x in f] == [("GDRCOPY_SANITY_FAILED", "n1"), ("GDRCOPY_SANITY_FAILED", "n4")]
    assert f[0]["message"] == ("n1: /usr/bin/gdrcopy_sanity failed 2 of 29 tests (exit status 1): basic_cumemalloc, invalidation_fork_after_gdr_map_cumemalloc")
    assert "error opening driver" in f[1]["message"]
    assert [(c["name"], c["ok"], c.get("not_applicable", False)) for c in cases] == [
        ("n1: gdrcopy sanity", False, False),
        ("n2: gdrcopy sanity", True, False),
        ("n3: gdrcopy sanity", True, True),
        ("n4: gdrcopy sanity", False, False),
    ]
    assert cases[1]["message"] == "27/29 passed, 2 waived"


# ---------------------------------------------------------------- the lab's ib_write_bw


def test_lab_perftest_refuses_use_cuda_when_built_without_cuda(lab):
    from linerate_lab.tools import ib_write_bw
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest import parse_ib_write_bw

    lab.update(lambda n: n.update(perftest_cuda=False))
    rc, out, err = lab.run(ib_write_bw, ["-d", "mlx5_0", "--use_cuda=0", "-D", "1", "10.0.0.2"])
    assert (rc, out, err) == (1, " Unsupported memory type\n", " Parser function exited with Error\n")
    with pytest.raises(ParseError):
        parse_ib_write_bw(out + err)
    # the check names the cause from those words
    assert "built without CUDA" in gpudirect.unavailable_reason(out + err)
    # built with CUDA: the option passes the parser and the run goes on (here: no server listening)
    lab.update(lambda n: n.update(perftest_cuda=True))
    rc, out, err = lab.run(ib_write_bw, ["-d", "mlx5_0", "--use_cuda=0", "-D", "1", "127.0.0.1"])
    assert "Unsupported memory type" not in out
    # the default follows the node's GPUs
    lab.update(lambda n: (n.pop("perftest_cuda"), n.update(gpus=0)))
    assert lab.run(ib_write_bw, ["-d", "mlx5_0", "--use_cuda=0", "127.0.0.1"])[1] == " Unsupported memory type\n"
