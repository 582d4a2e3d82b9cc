#!/usr/bin/python
"""Module: sweep NCCL settings with nccl-tests and keep only what beats NCCL's default by a margin."""

DOCUMENTATION = r"""
---
module: nccl_tune
short_description: Sweep NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE, NCCL_NTHREADS, NCCL_NET_GDR_LEVEL with nccl-tests
description:
  - Runs nccl-tests through C(mpirun) (as M(linerate.fabric.nccl_tests) does, one process per host) first
    with NCCL's defaults (the baseline), then with each value of each swept key, every configuration
    I(repeats) times, and decides per key whether a value is kept (docs/tuning.md).
  - A value is kept only when the median of its runs beats the baseline's median by at least
    I(margin_percent) and its worst run beats the baseline's best run; a failed run or a NCCL warning
    about the value rejects it. Of several kept values the highest median wins. A kept value is the
    baseline of the keys after it.
  - Values the NCCL release does not accept (read from the baseline's output) are skipped, not run;
    C(NCCL_NET_GDR_LEVEL) is swept only where NCCL's log shows GPUDirect RDMA on every node.
  - Bounded by I(max_runs) runs and I(time_budget) seconds; what the bound leaves out is reported as not run.
  - Changes nothing on the hosts (C(changed) is always false); the winner is returned for role nccl_env's
    derivation to write (the tuned-settings file). In check mode only returns the plan.
extends_documentation_fragment:
  - linerate.fabric.nccl_mpirun
requirements:
  - nccl-tests binaries built with MPI, and mpirun, on every rank's host
options:
  min_bytes:
    description: C(-b), the smallest size of the metric's range.
    type: str
    default: 1M
  max_bytes:
    description: C(-e), the largest size.
    type: str
    default: 1G
  values:
    description:
      - The keys swept, in order, each with the values tried; a key is one of C(NCCL_ALGO), C(NCCL_PROTO),
        C(NCCL_BUFFSIZE), C(NCCL_NTHREADS), C(NCCL_NET_GDR_LEVEL).
    type: list
    elements: dict
    required: true
  repeats:
    description: Runs of each configuration (the median decides; 2 at least, so noise can be seen).
    type: int
    default: 3
  margin_percent:
    description: How much the median must beat the baseline's median by, in percent.
    type: float
    default: 5.0
  max_runs:
    description: The most nccl-tests runs of the whole sweep.
    type: int
    default: 60
  time_budget:
    description: Seconds the whole sweep may take; no run starts that would not fit.
    type: int
    default: 1800
  tuned_now:
    description:
      - The settings of the tuned-settings file now (the last winner, in /etc/nccl.conf). The baseline sets
        each of these keys to its neutral value (NCCL's default; the intent's GDR level) in the environment,
        which NCCL reads over /etc/nccl.conf, so the baseline is NCCL's default again (docs/tuning.md).
    type: dict
    default: {}
  gdr_level:
    description: The NCCL_NET_GDR_LEVEL NCCL uses without tuning (the intent's); a candidate equal to it is skipped.
    type: str
  env:
    description: Environment passed to every rank of every run (C(-x NAME=value)).
    type: dict
    default: {NCCL_DEBUG: INFO}
  mpirun_args:
    description: More mpirun arguments.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds before one run is killed.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    description: Runs nothing; returns the configurations and the most runs they take (C(plan), C(max_runs_planned)).
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Sweep NCCL's algorithm and protocol, 3 runs each, keep what beats the default by 5 %
  linerate.fabric.nccl_tune:
    hosts: "{{ groups['gpu_nodes'] | map('extract', hostvars, 'ansible_host') | list }}"
    values:
      - {key: NCCL_ALGO, values: [Ring, Tree]}
      - {key: NCCL_PROTO, values: [Simple, LL128, LL]}
    repeats: 3
    margin_percent: 5
  run_once: true
"""

RETURN = r"""
settings:
  description: "The winner, C({NCCL_*: value}) of the kept values only; empty when NCCL's defaults stay."
  returned: always
  type: dict
rows:
  description:
    - The sweep table, one row per configuration (C(key) is C(baseline) for the first) with C(value),
      C(runs) (GB/s, null for a failed run), C(median), C(gain_percent), C(spread_percent), C(kept),
      C(winner) and C(why).
  returned: when it ran
  type: list
nccl_version:
  description: The NCCL release the baseline ran (nccl-tests' table).
  returned: when it ran
  type: str
runs:
  description: nccl-tests runs made.
  returned: always
  type: int
stopped:
  description: Why the sweep stopped before its end (run bound, time budget), else null.
  returned: when it ran
  type: str
failed_baseline:
  description: Why the baseline could not be measured (the task fails), else null.
  returned: when it ran
  type: str
seconds:
  description: Wall time of the sweep.
  returned: when it ran
  type: float
document:
  description:
    - The tuned-settings file's text (JSON) for this winner - the settings and what they were measured on,
      no measurement, so the same winner gives the same bytes.
  returned: always
  type: str
markdown:
  description: The sweep table as Markdown.
  returned: when it ran
  type: str
plan:
  description: The configurations (key, value; the baseline's key is null).
  returned: always
  type: list
max_runs_planned:
  description: Runs the plan takes without a bound (configurations x repeats).
  returned: always
  type: int
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune
from ansible_collections.linerate.fabric.plugins.module_utils.checks.benchmarks import NCCL_MPIRUN_ARGS, run_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.common import preview_in_check_mode
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def sweep_values(values):
    """The ``values`` option checked: ``[{"key", "values": [str]}]``, or (None, problem)."""
    out = []
    for item in values:
        key = (item or {}).get("key")
        vals = (item or {}).get("values")
        if key not in nccl_tune.KEYS:
            return None, f"values: key {key!r} is not allowed (allowed: {', '.join(nccl_tune.KEYS)})"
        if not isinstance(vals, list) or not vals:
            return None, f"values: {key}: a non-empty list of values is needed"
        for v in vals:
            problem = nccl_tune.value_problem(key, v)
            if problem:
                return None, f"values: {key}: {v!r} is not allowed ({problem})"
        out.append({"key": key, "values": [str(v) for v in vals]})
    return out, None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            NCCL_MPIRUN_ARGS,
            min_bytes=dict(type="str", default="1M"),
            max_bytes=dict(type="str", default="1G"),
            values=dict(type="list", elements="dict", required=True),
            repeats=dict(type="int", default=3),
            margin_percent=dict(type="float", default=5.0),
            max_runs=dict(type="int", default=60),
            time_budget=dict(type="int", default=1800),
            tuned_now=dict(type="dict", default={}),
            gdr_level=dict(type="str"),
            env=dict(type="dict", default={"NCCL_DEBUG": "INFO"})),
        supports_check_mode=True)
    p = module.params
    values, problem = sweep_values(p["values"])
    if problem:
        module.fail_json(msg=problem)
    if p["repeats"] < 2:
        module.fail_json(msg=f"repeats: {p['repeats']} is not allowed (allowed: 2 or more; one run shows no noise)")
    configs, most = nccl_tune.plan(values, p["repeats"])
    preview_in_check_mode(module, lambda: {"settings": {}, "runs": 0, "plan": configs, "max_runs_planned": most,
                                           "document": ""})
    runner = Runner(module)
    base = {k: str(v) for k, v in (p["env"] or {}).items()}

    def run(extra):
        return run_nccl_tests(runner, dict(p, json=False, env={**base, **extra}))

    started = time.monotonic()
    budget = nccl_tune.Budget(p["max_runs"], p["time_budget"])
    result = nccl_tune.sweep(run, values, p["repeats"], p["margin_percent"],
                             nccl_tune.baseline_env(p["tuned_now"], p["gdr_level"]), budget, gdr_baseline=p["gdr_level"])
    context = {"test": p["test"], "min_bytes": p["min_bytes"], "max_bytes": p["max_bytes"], "nodes": len(p["hosts"]),
               "gpus_per_node": p["gpus"], "nccl_version": result["nccl_version"],
               "margin_percent": p["margin_percent"], "repeats": p["repeats"]}
    out = dict(changed=False, settings=result["settings"], rows=result["rows"], nccl_version=result["nccl_version"],
               runs=result["runs"], stopped=result["stopped"], failed_baseline=result["failed"],
               seconds=round(time.monotonic() - started, 1), plan=configs, max_runs_planned=most,
               document=nccl_tune.tuned_document(result["settings"], context),
               markdown="\n".join(nccl_tune.table_markdown(result, p["margin_percent"], p["repeats"])))
    if result["failed"]:
        module.fail_json(msg=f"nccl_tune: {result['failed']}", **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
