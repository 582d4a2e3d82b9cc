"""Run the benchmarks of verification: perftest (ib_write_bw / ib_read_bw) and nccl-tests.

The logic of the ib_write_bw and nccl_tests modules, over a ``Runner``
(module_utils/runner.py): the exact argv, parallel processes and retries,
deadlines, and the parsed result. ``p`` is the module's parameters.
"""
import json
import os
import shutil
import tempfile
import time

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.nccl_log import parse_nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.perftest import parse_ib_write_bw
from ansible_collections.linerate.fabric.plugins.module_utils.runner import finish
from ansible_collections.linerate.fabric.plugins.module_utils.verify import split_log_by_host

# a client whose server does not listen yet prints one of these; it is started again
CONNECT_RETRY = ("Couldn't connect to", "Unable to init the socket connection")


# ---------------------------------------------------------------- perftest

def perftest_argv(binary, p, test, index, json_path=None):
    """The perftest argv of one rail (``test``: device, tcp_port, ib_port, gpu, server)."""
    argv = [binary, "-d", test["device"], "-i", str(test.get("ib_port", 1)), "-p", str(test["tcp_port"]),
            "-F", "--report_gbits", "-q", str(p["qps"]), "-s", str(p["size"])]
    if p["duration"]:
        argv += ["-D", str(p["duration"])]
    else:
        argv += ["-n", str(p["iterations"])]
    if p["gid_index"] is not None:
        argv += ["-x", str(p["gid_index"])]
    if p["tclass"] is not None:
        argv += [f"--tclass={p['tclass']}"]
    if p["sl"] is not None:
        argv += ["-S", str(p["sl"])]
    if p["use_cuda"]:
        argv += [f"--use_cuda={test.get('gpu', index)}"]
    if json_path:
        argv += ["--out_json", f"--out_json_file={json_path}"]
    argv += list(p["extra_args"])
    if p["mode"] == "client":
        argv.append(test["server"])
    return argv


def _perftest_result(job, rc, out, err, killed, p, timeout):
    res = {"device": job["test"]["device"], "tcp_port": job["test"]["tcp_port"],
           "server": job["test"].get("server"), "argv": job["argv"], "exit_status": rc, "stdout": out, "stderr": err,
           "attempts": job["attempts"], "gbps": None, "error": None, "parsed": None}
    if killed:
        res["error"] = f"killed after {timeout} s" + (" (no client connected)" if p["mode"] == "server" else "")
    try:
        parsed = parse_ib_write_bw(out + "\n" + err)
        res["parsed"] = parsed
        res["gbps"] = parsed["bw_average_gbps"]
        if rc not in (0, None):
            res["error"] = f"exit status {rc}"
    except ParseError as e:
        res["error"] = res["error"] or str(e).split(": ", 1)[-1]
    if job["json_path"] and os.path.exists(job["json_path"]):
        try:
            with open(job["json_path"]) as f:
                res["json"] = json.load(f)
        except ValueError as e:
            res["json_error"] = str(e)
        os.remove(job["json_path"])
    return res


def run_perftest(run, p):
    """Start every rail's process at once; clients retry until their server listens.

    ``run``: a Runner. Every process is killed at ``p["timeout"]`` (default duration + 60 s);
    returns one result per test, in the order of ``p["tests"]``.
    """
    binary = run.path(p["tool"])
    timeout = p["timeout"] or (p["duration"] or 10) + 60
    deadline = time.monotonic() + timeout
    connect_deadline = time.monotonic() + p["connect_timeout"]
    tmp = tempfile.mkdtemp(prefix="linerate-perftest-")
    jobs = []
    for i, test in enumerate(p["tests"]):
        jpath = os.path.join(tmp, f"{test['device']}.json") if p["out_json"] else None
        argv = perftest_argv(binary, p, test, i, jpath)
        jobs.append({"test": test, "argv": argv, "json_path": jpath, "attempts": 0, "proc": run.start(argv)})
    results = []
    pending = list(jobs)
    while pending:
        job = pending.pop(0)
        rc, out, err, killed = finish(job["proc"], deadline)
        job["attempts"] += 1
        retry = (p["mode"] == "client" and rc not in (0, None) and any(s in (out + err) for s in CONNECT_RETRY)
                 and time.monotonic() < connect_deadline)
        if retry:
            time.sleep(0.5)
            job["proc"] = run.start(job["argv"])
            pending.append(job)
            continue
        results.append(_perftest_result(job, rc, out, err, killed, p, timeout))
    shutil.rmtree(tmp, ignore_errors=True)
    order = {t["device"]: i for i, t in enumerate(p["tests"])}
    return sorted(results, key=lambda r: order[r["device"]])


# ---------------------------------------------------------------- nccl-tests

def nccl_argv(p, mpirun, json_path=None):
    """The mpirun argv: one process per host, each driving ``gpus`` GPUs, ``env`` passed with -x."""
    argv = [mpirun, "--allow-run-as-root", "-np", str(len(p["hosts"])),
            "-H", ",".join(f"{h}:1" for h in p["hosts"]), "--bind-to", "none", "--map-by", "slot"]
    if p["ssh_args"]:
        argv += ["--mca", "plm_rsh_args", p["ssh_args"]]
    argv += list(p["mpirun_args"])
    for key, value in sorted((p["env"] or {}).items()):
        argv += ["-x", f"{key}={value}"]
    argv += [p["test"], "-b", p["min_bytes"], "-e", p["max_bytes"], "-f", str(p["step_factor"]),
             "-g", str(p["gpus"]), "-n", str(p["iterations"])]
    if json_path:
        argv += ["-J", json_path]
    return argv


def largest_busbw(results):
    """Bus bandwidth at the largest size (the better of out-of-place and in-place), None without rows."""
    rows = [r for r in results.get("rows") or [] if (r.get("out_of_place") or {}).get("busbw") is not None]
    if not rows:
        return None
    last = max(rows, key=lambda r: r["size"])
    return max(last["out_of_place"]["busbw"], (last.get("in_place") or {}).get("busbw") or 0)


def run_nccl_tests(run, p):
    """Run nccl-tests through mpirun (killed at ``p["timeout"]``) and parse its table and NCCL's logs."""
    mpirun = run.path(p["mpirun"])
    run.path(p["test"])
    json_path = None
    if p["json"]:
        fd, json_path = tempfile.mkstemp(prefix="linerate-nccl-", suffix=".json")
        os.close(fd)
    argv = nccl_argv(p, mpirun, json_path)
    rc, out, _err, _killed = finish(run.start(argv, merge_stderr=True), time.monotonic() + p["timeout"])
    out = out or ""
    result = dict(changed=False, test=p["test"], argv=argv, exit_status=rc, stdout=out, busbw=None, avg_busbw=None,
                  error=None, parsed=None, logs={})
    try:
        if json_path and os.path.getsize(json_path) > 0:
            with open(json_path) as f:
                parsed = parse_nccl_tests(f.read())
        else:
            parsed = parse_nccl_tests(out)
        result.update(parsed=parsed, busbw=largest_busbw(parsed), avg_busbw=parsed.get("avg_bus_bandwidth"))
        if parsed.get("failures"):
            result["error"] = "; ".join(parsed["failures"])
    except ParseError as e:
        result["error"] = str(e).split(": ", 1)[-1]
    finally:
        if json_path and os.path.exists(json_path):
            os.remove(json_path)
    if rc is None:
        result["error"] = f"killed after {p['timeout']} s" + (f"; {result['error']}" if result["error"] else "")
    elif rc != 0 and not result["error"]:
        result["error"] = f"mpirun exit status {rc}"
    for host, text in split_log_by_host(out).items():
        try:
            result["logs"][host] = parse_nccl_log(text)
        except ParseError as e:
            result["logs"][host] = {"transport": None, "error": str(e)}
    result["passed"] = result["error"] is None
    return result
