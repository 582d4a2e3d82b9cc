"""The nccl-tests probe (modules nccl_tests, nccl_tune): the mpirun argv, whether the installed
nccl-tests writes JSON, and the run under a deadline with its table and NCCL's logs parsed.
"""

import os
import re
import tempfile
import time

from ansible_collections.linerate.fabric.plugins.module_utils.checks.nccl import split_log_by_host
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import parse_nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.runner import finish

# The options every module that runs nccl-tests through mpirun (nccl_tests, nccl_tune) takes and
# nccl_argv / run_nccl_tests read the same way; documented once (doc_fragments/nccl_mpirun.py).
NCCL_MPIRUN_ARGS = dict(
    hosts=dict(type="list", elements="str", required=True),
    test=dict(type="str", choices=["all_reduce_perf", "all_gather_perf"], default="all_reduce_perf"),
    gpus=dict(type="int", default=8),
    step_factor=dict(type="int", default=2),
    iterations=dict(type="int", default=20),
    mpirun=dict(type="str", default="mpirun"),
    mpirun_args=dict(type="list", elements="str", default=[]),
    ssh_args=dict(type="str"),
    timeout=dict(type="int", default=600),
)


def nccl_argv(p, mpirun, json_path=None):
    """The mpirun argv: one process per host, each driving ``gpus`` GPUs, ``env`` passed with -x; with
    ``launch: rank_per_gpu``, one rank per GPU of ``layout``, each bound by the per-rank wrapper
    (module_utils/intent/launchers.py)."""
    if p.get("launch") == "rank_per_gpu":
        if not p.get("layout"):
            raise ValueError("launch rank_per_gpu needs the node's layout (the readiness check's GPUs and rails)")
        return launchers.mpirun_argv(p, p["layout"], mpirun, json_path, hca=p.get("hca"))
    # --tag-output: each rank's chunks are tagged, so the parsers join a log line another rank's
    # output cut in two (nccl_log.untangle_tagged) instead of losing it
    argv = [
        mpirun,
        "--allow-run-as-root",
        "-np",
        str(len(p["hosts"])),
        "-H",
        ",".join(f"{h}:1" for h in p["hosts"]),
        "--bind-to",
        "none",
        "--map-by",
        "slot",
        "--tag-output",
    ]
    if p["ssh_args"]:
        argv += ["--mca", "plm_rsh_args", p["ssh_args"]]
    argv += list(p["mpirun_args"])
    for key, value in sorted((p["env"] or {}).items()):
        argv += ["-x", f"{key}={value}"]
    argv += [p["test"], "-b", p["min_bytes"], "-e", p["max_bytes"], "-f", str(p["step_factor"]), "-g", str(p["gpus"]), "-n", str(p["iterations"])]
    if json_path:
        argv += ["-J", json_path]
    return argv


# nccl-tests has -J/--output_file (a JSON result file) only from release 2.17.3 on (NVIDIA/nccl-tests
# src/common.cu longopts, tag v2.17.3); an older binary given -J prints its usage, exits 0 and runs nothing.
# Its own usage (-h, printed before MPI_Init or any GPU work) says which it is.
NCCL_JSON_OPTION = "--output_file"
NCCL_TESTS_HEADER = re.compile(r"^(?:\[[^\]]*\]<std\w+>:)?#\s*nccl-tests version (\S+)", re.M)


def nccl_json_supported(run, test):
    """(True, None) when the installed nccl-tests takes -J; else (False, why): the text table is read instead."""
    try:
        rc, out, err = run([test, "-h"])
    except OSError as e:
        return False, f"{test} -h could not run ({e}); reading the text table"
    text = (out or "") + (err or "")
    if NCCL_JSON_OPTION in text:
        return True, None
    if "USAGE:" in text:
        return False, (f"{test} lists no -J,{NCCL_JSON_OPTION} in its usage (nccl-tests before 2.17.3); reading the text table")
    return False, f"{test} -h printed no usage (exit status {rc}); reading the text table"


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
    json_path, json_note = None, None
    if p["json"]:
        supported, json_note = nccl_json_supported(run, p["test"])
        if supported:
            fd, json_path = tempfile.mkstemp(prefix="linerate-nccl-", suffix=".json")
            os.close(fd)
    argv = nccl_argv(p, mpirun, json_path)
    rc, out, _err, _killed = finish(run.start(argv, merge_stderr=True), time.monotonic() + p["timeout"])
    out = out or ""
    version = NCCL_TESTS_HEADER.search(out)
    result = dict(
        changed=False,
        test=p["test"],
        argv=argv,
        exit_status=rc,
        stdout=out,
        busbw=None,
        avg_busbw=None,
        error=None,
        parsed=None,
        logs={},
        json_used=json_path is not None,
        json_note=json_note,
        nccl_tests_version=version.group(1) if version else None,
    )
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
