"""The nccl-tests probe (module_utils/probes/nccl_tests.py): the mpirun argv, the run under its deadline, its
table and each host's NCCL log parsed, what is missing named."""

import os


from ansible_collections.linerate.fabric.plugins.module_utils.probes import nccl_tests as probes_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner

from probes.test_perftest import FIX, BinModule, script


NCCL = {
    "test": "all_reduce_perf",
    "hosts": ["10.0.0.1", "10.0.0.2"],
    "gpus": 8,
    "min_bytes": "1G",
    "max_bytes": "4G",
    "step_factor": 2,
    "iterations": 20,
    "env": {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring"},
    "json": False,
    "mpirun": "mpirun",
    "mpirun_args": ["--mca", "btl_tcp_if_include", "eth0"],
    "ssh_args": "-i /root/.ssh/k",
    "timeout": 60,
}


def test_nccl_tests_argv():
    assert probes_nccl_tests.nccl_argv(NCCL, "/usr/bin/mpirun", "/tmp/r.json") == [
        "/usr/bin/mpirun",
        "--allow-run-as-root",
        "-np",
        "2",
        "-H",
        "10.0.0.1:1,10.0.0.2:1",
        "--bind-to",
        "none",
        "--map-by",
        "slot",
        "--tag-output",
        "--mca",
        "plm_rsh_args",
        "-i /root/.ssh/k",
        "--mca",
        "btl_tcp_if_include",
        "eth0",
        "-x",
        "NCCL_ALGO=Ring",
        "-x",
        "NCCL_DEBUG=INFO",
        "all_reduce_perf",
        "-b",
        "1G",
        "-e",
        "4G",
        "-f",
        "2",
        "-g",
        "8",
        "-n",
        "20",
        "-J",
        "/tmp/r.json",
    ]


def test_largest_busbw():
    results = {
        "rows": [
            {"size": 1, "out_of_place": {"busbw": 5.0}, "in_place": {"busbw": 6.0}},
            {"size": 4, "out_of_place": {"busbw": 90.0}, "in_place": {"busbw": 91.0}},
        ]
    }
    assert probes_nccl_tests.largest_busbw(results) == 91.0
    assert probes_nccl_tests.largest_busbw({"rows": []}) is None


def nccl_runner(mpirun):
    return Runner(BinModule({"mpirun": mpirun, "all_reduce_perf": "/usr/bin/all_reduce_perf"}))


def test_a_missing_benchmark_binary_fails_naming_it():
    class Failing(BinModule):
        def fail_json(self, **kw):
            raise RuntimeError(kw["msg"])

    run = Runner(Failing({"mpirun": "/usr/bin/mpirun"}))
    try:
        probes_nccl_tests.run_nccl_tests(run, NCCL)
    except RuntimeError as e:
        assert str(e).startswith("all_reduce_perf: command not found")
    else:
        raise AssertionError("a missing all_reduce_perf must fail the module")


def test_nccl_tests_run_parses_the_table_and_each_hosts_log(tmp_path):
    table = os.path.join(FIX, "nccl_tests", "all_reduce_2_19_two_nodes.txt")
    mpirun = script(tmp_path, "mpirun", f"cat {table} >&2; exit 0")
    res = probes_nccl_tests.run_nccl_tests(nccl_runner(mpirun), NCCL)
    assert res["argv"][0] == mpirun and res["argv"][-2:] == ["-n", "20"]
    assert res["exit_status"] == 0 and res["error"] is None and res["passed"] is True
    assert res["busbw"] == probes_nccl_tests.largest_busbw(res["parsed"]) and res["busbw"] > 0
    assert res["avg_busbw"] == res["parsed"]["avg_bus_bandwidth"] and res["stdout"] == open(table).read()


def test_nccl_tests_failing_mpirun_without_a_table_reports_what_is_missing(tmp_path):
    mpirun = script(tmp_path, "mpirun", "echo 'nothing useful'; exit 3")
    res = probes_nccl_tests.run_nccl_tests(nccl_runner(mpirun), NCCL)
    assert res["exit_status"] == 3 and res["passed"] is False and res["busbw"] is None
    assert res["error"] == "no result rows in output" and res["parsed"] is None


def test_nccl_tests_table_with_a_failing_mpirun_names_its_exit_status(tmp_path):
    table = os.path.join(FIX, "nccl_tests", "all_reduce_2_19_two_nodes.txt")
    res = probes_nccl_tests.run_nccl_tests(nccl_runner(script(tmp_path, "mpirun", f"cat {table}; exit 2")), NCCL)
    assert res["error"] == "mpirun exit status 2" and res["passed"] is False and res["busbw"] > 0


def test_nccl_tests_killed_at_the_timeout_keeps_what_it_printed(tmp_path):
    mpirun = script(tmp_path, "mpirun", "echo '# nThread 1 nGpus 8'; exec sleep 30")
    res = probes_nccl_tests.run_nccl_tests(nccl_runner(mpirun), dict(NCCL, timeout=1))
    assert res["exit_status"] is None and res["error"].startswith("killed after 1 s")
    assert "# nThread 1 nGpus 8" in res["stdout"] and res["passed"] is False
