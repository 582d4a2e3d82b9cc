"""The ib_write_bw and nccl_tests modules: exact argv, retries while the server starts, parsing."""
import os
import stat

from ansible_collections.linerate.fabric.plugins.modules import ib_write_bw, nccl_tests

FIX = os.path.join(os.path.dirname(__file__), "fixtures")

PARAMS = {"mode": "client", "tool": "ib_write_bw", "size": 1048576, "qps": 4, "duration": 10, "iterations": 5000,
          "gid_index": 3, "tclass": 104, "sl": None, "use_cuda": False, "out_json": False, "extra_args": [], "timeout": None, "connect_timeout": 5}


def test_ib_write_bw_client_argv():
    argv = ib_write_bw.build_argv("/usr/bin/ib_write_bw", PARAMS, {"device": "mlx5_1", "tcp_port": 18516,
                                                                   "server": "10.0.0.2"}, 1)
    assert argv == ["/usr/bin/ib_write_bw", "-d", "mlx5_1", "-i", "1", "-p", "18516", "-F", "--report_gbits",
                    "-q", "4", "-s", "1048576", "-D", "10", "-x", "3", "--tclass=104", "10.0.0.2"]


def test_ib_write_bw_server_argv_cuda_json_iterations():
    p = dict(PARAMS, mode="server", duration=0, gid_index=None, tclass=None, sl=5, use_cuda=True,
             extra_args=["--tclass=106"])
    argv = ib_write_bw.build_argv("ib_write_bw", p, {"device": "mlx5_0", "tcp_port": 18515, "gpu": 2}, 0, "/tmp/x.json")
    assert argv == ["ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18515", "-F", "--report_gbits", "-q", "4",
                    "-s", "1048576", "-n", "5000", "-S", "5", "--use_cuda=2", "--out_json", "--out_json_file=/tmp/x.json",
                    "--tclass=106"]


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
    [res] = ib_write_bw.run_all(None, binary, p)
    assert res["attempts"] == 2 and res["error"] is None and res["gbps"] > 0
    assert res["parsed"]["role"] == "client"


def test_errors_are_reported_not_swallowed(tmp_path):
    binary = fake_tool(tmp_path, [(1, "error_completion.txt")])
    p = dict(PARAMS, tests=[{"device": "mlx5_0", "tcp_port": 18515, "server": "10.0.0.2"}])
    [res] = ib_write_bw.run_all(None, binary, p)
    assert res["gbps"] is None and "Completion with error" in res["error"] and res["attempts"] == 1


def test_server_killed_at_timeout(tmp_path):
    script = tmp_path / "ib_write_bw"
    script.write_text("#!/bin/sh\necho '* Waiting for client to connect... *'\nexec sleep 30\n")
    script.chmod(0o755)
    p = dict(PARAMS, mode="server", timeout=1, tests=[{"device": "mlx5_0", "tcp_port": 18515}])
    [res] = ib_write_bw.run_all(None, str(script), p)
    assert res["exit_status"] is None and "no client connected" in res["error"]


NCCL = {"test": "all_reduce_perf", "hosts": ["10.0.0.1", "10.0.0.2"], "gpus": 8, "min_bytes": "1G", "max_bytes": "4G",
        "step_factor": 2, "iterations": 20, "env": {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring"}, "json": False,
        "mpirun": "mpirun", "mpirun_args": ["--mca", "btl_tcp_if_include", "eth0"],
        "ssh_args": "-i /root/.ssh/k", "timeout": 60}


def test_nccl_tests_argv():
    assert nccl_tests.build_argv(NCCL, "/usr/bin/mpirun", "/tmp/r.json") == [
        "/usr/bin/mpirun", "--allow-run-as-root", "-np", "2", "-H", "10.0.0.1:1,10.0.0.2:1", "--bind-to", "none",
        "--map-by", "slot", "--mca", "plm_rsh_args", "-i /root/.ssh/k", "--mca", "btl_tcp_if_include", "eth0",
        "-x", "NCCL_ALGO=Ring", "-x", "NCCL_DEBUG=INFO", "all_reduce_perf", "-b", "1G", "-e", "4G", "-f", "2",
        "-g", "8", "-n", "20", "-J", "/tmp/r.json"]


def test_largest_busbw():
    results = {"rows": [{"size": 1, "out_of_place": {"busbw": 5.0}, "in_place": {"busbw": 6.0}},
                        {"size": 4, "out_of_place": {"busbw": 90.0}, "in_place": {"busbw": 91.0}}]}
    assert nccl_tests.largest_busbw(results) == 91.0
    assert nccl_tests.largest_busbw({"rows": []}) is None
