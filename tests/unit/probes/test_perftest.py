"""The ib_write_bw module and its probe (module_utils/probes/perftest.py; nccl-tests: probes/test_nccl_tests.py): exact argv, retries while the
server starts, deadlines, parsing; the processes run through the shared Runner with the C locale."""

import os
import stat
import time

from ansible_collections.linerate.fabric.plugins.module_utils.probes import perftest
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner, finish
from ansible_collections.linerate.fabric.plugins.modules import ib_write_bw, nccl_tests, nccl_tune
from module_harness import Tools, run_module

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")

PARAMS = {
    "mode": "client",
    "tool": "ib_write_bw",
    "size": 1048576,
    "qps": 4,
    "duration": 10,
    "iterations": 5000,
    "gid_index": 3,
    "tclass": 104,
    "sl": None,
    "use_cuda": False,
    "out_json": False,
    "extra_args": [],
    "timeout": None,
    "connect_timeout": 5,
}


def test_ib_write_bw_client_argv():
    argv = perftest.perftest_argv("/usr/bin/ib_write_bw", PARAMS, {"device": "mlx5_1", "tcp_port": 18516, "server": "10.0.0.2"}, 1)
    assert argv == [
        "/usr/bin/ib_write_bw",
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
        "10",
        "-x",
        "3",
        "--tclass=104",
        "10.0.0.2",
    ]


def test_ib_write_bw_server_argv_cuda_json_iterations():
    p = dict(PARAMS, mode="server", duration=0, gid_index=None, tclass=None, sl=5, use_cuda=True, extra_args=["--tclass=106"])
    argv = perftest.perftest_argv("ib_write_bw", p, {"device": "mlx5_0", "tcp_port": 18515, "gpu": 2}, 0, "/tmp/x.json")
    assert argv == [
        "ib_write_bw",
        "-d",
        "mlx5_0",
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
        "-n",
        "5000",
        "-S",
        "5",
        "--use_cuda=2",
        "--out_json",
        "--out_json_file=/tmp/x.json",
        "--tclass=106",
    ]


class BinModule:
    """What Runner needs of AnsibleModule to start a process: the binary found for a tool name."""

    def __init__(self, bins):
        self.bins = bins

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return self.bins.get(name, name if os.path.isabs(name) else None)

    def fail_json(self, **kw):
        raise AssertionError(kw)


def runner_for(binary, tool="ib_write_bw"):
    return Runner(BinModule({tool: binary}))


def fake_tool(tmp_path, outputs):
    """A stand-in binary printing the given outputs on successive calls (real perftest texts)."""
    state = tmp_path / "calls"
    state.write_text("0")
    script = tmp_path / "ib_write_bw"
    lines = ["#!/bin/sh", f"n=$(cat {state}); echo $((n+1)) > {state}"]
    for i, (rc, name) in enumerate(outputs):
        lines.append(f'if [ "$n" = "{i}" ]; then cat {os.path.join(FIX, "perftest", name)}; exit {rc}; fi')
    lines.append("exit 9")
    script.write_text("\n".join(lines) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_client_retries_until_the_server_listens_then_parses(tmp_path):
    binary = fake_tool(tmp_path, [(1, "error_couldnt_connect.txt"), (0, "client_ib_sweep_gbits_25x.txt")])
    p = dict(PARAMS, tests=[{"device": "mlx5_0", "tcp_port": 18515, "server": "10.0.0.2"}])
    [res] = perftest.run_perftest(runner_for(binary), p)
    assert res["attempts"] == 2 and res["error"] is None and res["gbps"] > 0
    assert res["parsed"]["role"] == "client"


def test_errors_are_reported_not_swallowed(tmp_path):
    binary = fake_tool(tmp_path, [(1, "error_completion.txt")])
    p = dict(PARAMS, tests=[{"device": "mlx5_0", "tcp_port": 18515, "server": "10.0.0.2"}])
    [res] = perftest.run_perftest(runner_for(binary), p)
    assert res["gbps"] is None and "Completion with error" in res["error"] and res["attempts"] == 1


def test_server_killed_at_timeout(tmp_path):
    script = tmp_path / "ib_write_bw"
    script.write_text("#!/bin/sh\necho '* Waiting for client to connect... *'\nexec sleep 30\n")
    script.chmod(0o755)
    p = dict(PARAMS, mode="server", timeout=1, tests=[{"device": "mlx5_0", "tcp_port": 18515}])
    [res] = perftest.run_perftest(runner_for(str(script)), p)
    assert res["exit_status"] is None and "no client connected" in res["error"]


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_runner_starts_processes_with_the_c_locale_and_merges_stderr_on_request(tmp_path, monkeypatch):
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    tool = script(tmp_path, "tool", 'echo "$LC_ALL $LANG $1"; echo oops >&2')
    run = Runner(BinModule({"tool": tool}))
    assert finish(run.start(["tool", "x"]), time.monotonic() + 10)[:3] == (0, "C C x\n", "oops\n")
    rc, out, err, killed = finish(run.start(["tool", "y"], merge_stderr=True), time.monotonic() + 10)
    assert (rc, out, err, killed) == (0, "C C y\noops\n", None, False)


def test_ib_write_bw_check_mode_returns_the_argv_and_runs_nothing(capsys):
    tools = Tools({})
    res = run_module(
        ib_write_bw.main,
        {"mode": "client", "gid_index": 3, "tests": [{"device": "mlx5_0", "tcp_port": 18515, "server": "10.0.0.2"}]},
        tools,
        capsys,
        check=True,
    )
    assert tools.calls == [] and res["changed"] is False and res["skipped_run"] is True
    assert res["tests"][0]["argv"] == [
        "/usr/bin/ib_write_bw",
        "-d",
        "mlx5_0",
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
        "10",
        "-x",
        "3",
        "10.0.0.2",
    ]


def test_ib_write_bw_rejects_a_client_test_without_its_server(capsys):
    res = run_module(ib_write_bw.main, {"mode": "client", "tests": [{"device": "mlx5_0", "tcp_port": 1}]}, Tools({}), capsys, check=True)
    assert res["failed"] and res["msg"] == "tests[0]: missing server"


def test_nccl_tests_check_mode_returns_the_argv(capsys):
    tools = Tools({})
    res = run_module(nccl_tests.main, {"hosts": ["10.0.0.1"]}, tools, capsys, check=True)
    assert tools.calls == [] and res["skipped_run"] is True and res["argv"][:4] == ["mpirun", "--allow-run-as-root", "-np", "1"]


def test_nccl_tune_check_mode_returns_the_plan_and_runs_nothing(capsys):
    tools = Tools({})
    res = run_module(
        nccl_tune.main,
        {"hosts": ["10.0.0.1", "10.0.0.2"], "candidates": [{"algorithm": "Ring", "protocol": "LL"}, {"algorithm": "Tree", "protocol": "LL"}]},
        tools,
        capsys,
        check=True,
    )
    res.pop("invocation")
    assert tools.calls == [] and res == {
        "changed": False,
        "skipped_run": True,
        "proposed": [],
        "tuner_rows": [],
        "runs": 0,
        "document": "",
        "tuner_config": "",
        "max_runs_planned": 9,
        "plan": [{"nodes": 2, "test": "all_reduce_perf", "configs": ["baseline", "Ring/LL", "Tree/LL"]}],
    }
