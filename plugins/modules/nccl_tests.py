#!/usr/bin/python
"""Module: run nccl-tests across nodes through mpirun and parse results and NCCL's log."""

DOCUMENTATION = r"""
---
module: nccl_tests
short_description: Run nccl-tests (all_reduce_perf, all_gather_perf) across nodes with mpirun
description:
  - Launches one process per node with Open MPI's C(mpirun) (ranks started over SSH),
    each driving I(gpus) GPUs (C(-g)), with C(NCCL_DEBUG=INFO) so the log shows the
    network NCCL chose, GPUDirect RDMA and the NICs it uses.
  - Forces the ring algorithm (C(NCCL_ALGO=Ring)) by default - on two nodes NCCL's tree
    would keep part of the traffic off the network and hide a slow NIC.
  - Parses the result table (or the C(-J) JSON file where the build writes one) and
    the NCCL log of every host. Changes nothing on the hosts (C(changed) is always
    false); in check mode only returns the command line.
options:
  test:
    description: The nccl-tests binary.
    type: str
    choices: [all_reduce_perf, all_gather_perf]
    default: all_reduce_perf
  hosts:
    description: Addresses mpirun starts the ranks on (one process per host); the first is this host.
    type: list
    elements: str
    required: true
  gpus:
    description: GPUs per process (C(-g)).
    type: int
    default: 8
  min_bytes:
    description: C(-b).
    type: str
    default: 1G
  max_bytes:
    description: C(-e).
    type: str
    default: 4G
  step_factor:
    description: C(-f).
    type: int
    default: 2
  iterations:
    description: C(-n).
    type: int
    default: 20
  env:
    description: Environment passed to every rank (C(-x NAME=value)); NCCL also reads /etc/nccl.conf.
    type: dict
    default: {NCCL_DEBUG: INFO, NCCL_ALGO: Ring}
  json:
    description: Ask nccl-tests for its JSON result file (C(-J)) and parse that.
    type: bool
    default: false
  mpirun:
    description: The mpirun binary.
    type: str
    default: mpirun
  mpirun_args:
    description: More mpirun arguments (e.g. C(--mca btl_tcp_if_include eth0)).
    type: list
    elements: str
    default: []
  ssh_args:
    description: SSH options mpirun uses to reach the other hosts (key, known hosts).
    type: str
  timeout:
    description: Seconds before the whole run is killed.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    description: Runs no benchmark; returns the mpirun argv it would run (C(skipped_run)).
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Run all_reduce_perf across the nodes
  linerate.fabric.nccl_tests:
    hosts: "{{ groups['gpu_nodes'] | map('extract', hostvars, 'ansible_host') | list }}"
    gpus: 8
    mpirun_args: [--mca, btl_tcp_if_include, eth0, --mca, oob_tcp_if_include, eth0]
  run_once: true
"""

RETURN = r"""
test:
  description: The nccl-tests binary that ran.
  returned: always
  type: str
argv:
  description: The mpirun command line.
  returned: always
  type: list
exit_status:
  description: mpirun's exit status (null when killed at the timeout).
  returned: when it ran
  type: int
busbw:
  description: Bus bandwidth (GB/s, out-of-place) at the largest size; null on failure.
  returned: when it ran
  type: float
avg_busbw:
  description: nccl-tests' "Avg bus bandwidth" (GB/s).
  returned: when it ran
  type: float
parsed:
  description: The nccl-tests parser's result (table, devices, summary).
  returned: when the run produced a table
  type: dict
logs:
  description: The NCCL log parser's result per host (transport, gdr, ib_devices, error, ...).
  returned: when it ran
  type: dict
error:
  description: Why the run failed (nccl-tests failure lines, NCCL WARNs), else null.
  returned: when it ran
  type: str
stdout:
  description: Raw output.
  returned: when it ran
  type: str
"""

import os
import subprocess
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.nccl_log import parse_nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.verify import split_log_by_host


def build_argv(p, mpirun, json_path=None):
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
    rows = [r for r in results.get("rows") or [] if (r.get("out_of_place") or {}).get("busbw") is not None]
    if not rows:
        return None
    last = max(rows, key=lambda r: r["size"])
    return max(last["out_of_place"]["busbw"], (last.get("in_place") or {}).get("busbw") or 0)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            test=dict(type="str", choices=["all_reduce_perf", "all_gather_perf"], default="all_reduce_perf"),
            hosts=dict(type="list", elements="str", required=True),
            gpus=dict(type="int", default=8),
            min_bytes=dict(type="str", default="1G"),
            max_bytes=dict(type="str", default="4G"),
            step_factor=dict(type="int", default=2),
            iterations=dict(type="int", default=20),
            env=dict(type="dict", default={"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring"}),
            json=dict(type="bool", default=False),
            mpirun=dict(type="str", default="mpirun"),
            mpirun_args=dict(type="list", elements="str", default=[]),
            ssh_args=dict(type="str"),
            timeout=dict(type="int", default=600)),
        supports_check_mode=True)
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, test=p["test"], argv=build_argv(p, p["mpirun"]), skipped_run=True)
    mpirun = module.get_bin_path(p["mpirun"], required=True)
    module.get_bin_path(p["test"], required=True)
    json_path = None
    if p["json"]:
        fd, json_path = tempfile.mkstemp(prefix="linerate-nccl-", suffix=".json")
        os.close(fd)
    argv = build_argv(p, mpirun, json_path)
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=p["timeout"], env=dict(os.environ, LC_ALL="C"), check=False)
        rc, out = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
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
    module.exit_json(**result)


if __name__ == "__main__":
    main()
