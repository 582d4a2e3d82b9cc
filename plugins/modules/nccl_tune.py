#!/usr/bin/python
"""Module: measure NCCL algorithm/protocol candidates with nccl-tests, propose and prove scoped tuner-plugin rows."""

DOCUMENTATION = r"""
---
module: nccl_tune
short_description: Measure NCCL algorithm/protocol candidates with nccl-tests and propose scoped tuner-plugin rows
description:
  - Phase C(sweep) runs nccl-tests through C(mpirun) (as M(linerate.fabric.nccl_tests) does, one process per
    host) at each scale of I(scales) (the first N hosts) - NCCL's defaults (the baseline) and every candidate
    (C(NCCL_ALGO)/C(NCCL_PROTO) set in the environment of that run only), interleaved, I(repeats) rounds.
    Per message size a candidate beats the baseline when its median gains I(margin_percent) and its worst
    run beats the baseline's best; contiguous sizes one candidate wins become a proposed row of the example
    tuner plugin's config, scoped to the collective, the size range and the node and rank counts
    (docs/tuning.md).
  - Phase C(confirm) runs, at every scale, each of I(check_tests) with NCCL's defaults and with the tuner
    plugin reading the staged config I(tuner_config_file), interleaved; a proposed row is kept only where the
    file reproduces its gain, and nothing is kept when any collective at any scale is worse with the file
    (beyond I(tolerance_percent) and the noise) or fewer than two scales were measured.
  - Never writes anything on the hosts (C(changed) is always false) and never returns a Debugging-section
    variable of NCCL's documentation as a setting; the tuned file's text (C(document)) is for
    M(linerate.fabric.nccl_tuned_file) to write. In check mode only returns the plan.
extends_documentation_fragment:
  - linerate.fabric.nccl_mpirun
requirements:
  - nccl-tests binaries built with MPI, and mpirun, on every rank's host
  - for C(confirm), the example tuner plugin (NVIDIA/nccl plugins/tuner/example, C(libnccl-tuner-example.so))
    where NCCL finds it on every host
options:
  phase:
    description: C(sweep) measures and proposes; C(confirm) proves the proposed rows with the tuner plugin.
    type: str
    choices: [sweep, confirm]
    default: sweep
  min_bytes:
    description: C(-b), the smallest size measured.
    type: str
    default: 1M
  max_bytes:
    description: C(-e), the largest size.
    type: str
    default: 1G
  scales:
    description:
      - Node counts to measure at (each the first N of I(hosts)), two or more distinct ones for a winner.
        Default the first 2 and all hosts.
    type: list
    elements: int
  candidates:
    description: The (algorithm, protocol) pairs tried; each a mapping of C(algorithm) and C(protocol).
    type: list
    elements: dict
  check_tests:
    description: The collectives proven no worse with the tuner file at every scale (phase C(confirm)).
    type: list
    elements: str
    default: [all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf]
  repeats:
    description: Rounds of interleaved runs (every configuration once a round; 2 at least, so noise shows).
    type: int
    default: 3
  margin_percent:
    description: How much a candidate's median must beat the baseline's at a size, in percent.
    type: float
    default: 5.0
  tolerance_percent:
    description: How much lower than the baseline's median a collective may be with the tuner file, in percent.
    type: float
    default: 3.0
  min_points:
    description: The fewest consecutive measured sizes a proposed row spans.
    type: int
    default: 2
  proposed:
    description: The rows phase C(sweep) proposed (its C(proposed)); phase C(confirm) only.
    type: list
    elements: dict
    default: []
  tuner_plugin:
    description: C(NCCL_TUNER_PLUGIN) for the confirm runs and the tuned file.
    type: str
    default: libnccl-tuner-example.so
  tuner_config_file:
    description: Where the proposed rows are staged on every host (C(NCCL_TUNER_CONFIG_FILE)); phase C(confirm).
    type: path
  max_runs:
    description: The most nccl-tests runs of this phase.
    type: int
    default: 200
  time_budget:
    description: Seconds this phase may take; no run starts that would not fit.
    type: int
    default: 1800
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
- name: Measure NCCL's algorithm/protocol candidates at 2 and 4 nodes
  linerate.fabric.nccl_tune:
    hosts: "{{ groups['gpu_nodes'] | map('extract', hostvars, 'ansible_host') | list }}"
    scales: [2, 4]
    repeats: 3
    margin_percent: 5
  register: sweep
  run_once: true

- name: Prove the proposed rows with the tuner plugin, staged at /var/lib/linerate/nccl-tuner-candidate.conf
  linerate.fabric.nccl_tune:
    phase: confirm
    hosts: "{{ groups['gpu_nodes'] | map('extract', hostvars, 'ansible_host') | list }}"
    scales: [2, 4]
    proposed: "{{ sweep.proposed }}"
    tuner_config_file: /var/lib/linerate/nccl-tuner-candidate.conf
  run_once: true
"""

RETURN = r"""
proposed:
  description: Phase C(sweep) - the tuner rows it proposes (collective, min_bytes, max_bytes, algorithm, protocol,
    channels, nodes, ranks, pipe_ops, reg_buff, gain_percent).
  returned: always
  type: list
tuner_config:
  description: The proposed rows as the example tuner plugin's CSV (to stage on every host); empty without rows.
  returned: always
  type: str
tuner_rows:
  description: Phase C(confirm) - the rows that held (empty - no winner - otherwise).
  returned: always
  type: list
why:
  description: Why there is no winner (null with one).
  returned: always
  type: str
rows:
  description: The table, one row per scale and configuration (key, value, runs, median, gain_percent, kept,
    winner, why); in phase C(confirm) the sweep's rows are not repeated, its own checks are.
  returned: always
  type: list
scales:
  description: The node counts measured.
  returned: always
  type: list
nccl_version:
  description: The NCCL release the runs used (nccl-tests' table).
  returned: when it ran
  type: str
runs:
  description: nccl-tests runs made by this phase.
  returned: always
  type: int
stopped:
  description: Why this phase stopped before its end (run bound, time budget), else null.
  returned: always
  type: str
failed_baseline:
  description: Why the baseline could not be measured (the task fails), else null.
  returned: always
  type: str
document:
  description: Phase C(confirm) (and C(sweep) when it proposes nothing) - the tuned file's text (JSON) - the
    rows and what they were measured on, no measurement, so the same result gives the same bytes.
  returned: always
  type: str
markdown:
  description: The table as Markdown.
  returned: always
  type: str
plan:
  description: The configurations per scale.
  returned: always
  type: list
max_runs_planned:
  description: Runs the plan takes without a bound.
  returned: always
  type: int
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import preview_in_check_mode
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune, nccl_tuned
from ansible_collections.linerate.fabric.plugins.module_utils.probes.nccl_tests import NCCL_MPIRUN_ARGS, run_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def checked(p):
    """The options checked before anything runs: ``(scales, candidates, None)`` or ``(None, None, problem)``."""
    hosts = p["hosts"]
    scales = p["scales"] if p["scales"] is not None else sorted({min(2, len(hosts)), len(hosts)})
    for n in scales:
        if isinstance(n, bool) or not 2 <= n <= len(hosts):
            return (
                None,
                None,
                (f"scales: {n!r} is not allowed (allowed: node counts 2..{len(hosts)}, the number of hosts; a scale of 1 node does not cross the fabric)"),
            )
    if len(set(scales)) != len(scales):
        return None, None, f"scales: {scales} repeats a node count (allowed: distinct node counts)"
    candidates = p["candidates"] if p["candidates"] is not None else [dict(c) for c in nccl_tune.DEFAULT_CANDIDATES]
    if not candidates:
        return None, None, "candidates: an empty list is not allowed (allowed: one or more {algorithm, protocol})"
    for i, c in enumerate(candidates):
        problem = nccl_tune.candidate_problem(c)
        if problem:
            return None, None, f"candidates[{i}]: {c!r} is not allowed ({problem})"
    if nccl_tune.TUNER_COLLECTIVE.get(p["test"]) is None:
        return None, None, f"test: {p['test']!r} is not allowed (allowed: a collective the tuner plugin chooses for)"
    bad = [t for t in p["check_tests"] if t not in nccl_tune.TESTS]
    if bad or not p["check_tests"]:
        return None, None, (f"check_tests: {bad or p['check_tests']!r} is not allowed (allowed: one or more of {', '.join(nccl_tune.TESTS)})")
    if p["repeats"] < 2:
        return None, None, f"repeats: {p['repeats']} is not allowed (allowed: 2 or more; one run shows no noise)"
    if p["min_points"] < 1:
        return None, None, f"min_points: {p['min_points']} is not allowed (allowed: 1 or more)"
    if p["phase"] == "confirm":
        if not p["tuner_config_file"]:
            return None, None, "tuner_config_file: needed for phase confirm (the staged tuner config on every host)"
        for i, row in enumerate(p["proposed"]):
            problem = nccl_tuned.row_problem(row)
            if problem:
                return None, None, f"proposed[{i}]: {row!r} is not allowed ({problem})"
    return scales, candidates, None


def argument_spec():
    """The module's options (a new dict each call: its defaults are lists and a dict)."""
    return dict(
        NCCL_MPIRUN_ARGS,
        phase=dict(type="str", choices=["sweep", "confirm"], default="sweep"),
        min_bytes=dict(type="str", default="1M"),
        max_bytes=dict(type="str", default="1G"),
        scales=dict(type="list", elements="int"),
        candidates=dict(type="list", elements="dict"),
        check_tests=dict(type="list", elements="str", default=list(nccl_tune.TESTS)),
        repeats=dict(type="int", default=3),
        margin_percent=dict(type="float", default=5.0),
        tolerance_percent=dict(type="float", default=3.0),
        min_points=dict(type="int", default=2),
        proposed=dict(type="list", elements="dict", default=[]),
        tuner_plugin=dict(type="str", default=nccl_tuned.TUNER_PLUGIN),
        tuner_config_file=dict(type="path"),
        max_runs=dict(type="int", default=200),
        time_budget=dict(type="int", default=1800),
        env=dict(type="dict", default={"NCCL_DEBUG": "INFO"}),
    )


def plan_runs(p, scales, candidates):
    """(the plan: per scale and test the configurations run, the most runs it can take)."""
    if p["phase"] == "sweep":
        plan = [{"nodes": n, "test": p["test"], "configs": ["baseline"] + [nccl_tune.label(c) for c in candidates]} for n in scales]
        return plan, len(scales) * (1 + len(candidates)) * p["repeats"]
    plan = [{"nodes": n, "test": t, "configs": ["baseline", "tuner file"]} for n in scales for t in p["check_tests"]]
    return plan, len(plan) * 2 * p["repeats"]


def run_sweep(p, run, scales, candidates, budget, context, out):
    """Phase sweep: baseline and candidates interleaved; the winners proposed, or why there is none."""
    result = nccl_tune.sweep(run, p["test"], scales, candidates, p["repeats"], p["margin_percent"], budget, p["gpus"], p["min_points"])
    context["nccl_version"] = result["nccl_version"]
    out.update(
        proposed=result["proposed"],
        rows=result["rows"],
        nccl_version=result["nccl_version"],
        runs=result["runs"],
        stopped=result["stopped"],
        failed_baseline=result["failed"],
    )
    if result["proposed"]:
        out["tuner_config"] = nccl_tuned.tuner_config(result["proposed"])
    else:
        out["why"] = "no winner: " + (
            f"cut short ({result['stopped']})" if result["stopped"] else "no candidate beat NCCL's pick at any size range at any scale"
        )
        out["document"] = nccl_tuned.tuned_document([], context, p["tuner_plugin"])


def run_confirm(p, run, scales, budget, context, out):
    """Phase confirm: the tuner file against the baseline on every check test and scale; the rows kept."""
    tuner_env = {"NCCL_TUNER_PLUGIN": p["tuner_plugin"], "NCCL_TUNER_CONFIG_FILE": p["tuner_config_file"]}
    result = nccl_tune.confirm(
        run, p["check_tests"], scales, tuner_env, p["proposed"], p["repeats"], p["margin_percent"], p["tolerance_percent"], budget, p["test"]
    )
    context["nccl_version"] = result.get("nccl_version")
    out["nccl_version"] = result.get("nccl_version")
    out.update(
        tuner_rows=[{k: r[k] for k in nccl_tuned.TUNER_FIELDS} for r in result["rows"]],
        rows=result["checks"],
        runs=result["runs"],
        stopped=result["stopped"],
        why=result["why"],
    )
    out["document"] = nccl_tuned.tuned_document(result["rows"], context, p["tuner_plugin"])
    out["tuner_config"] = nccl_tuned.tuner_config(result["rows"]) if result["rows"] else ""


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    scales, candidates, problem = checked(p)
    if problem:
        module.fail_json(msg=problem)
    base = {k: str(v) for k, v in (p["env"] or {}).items()}
    debug = nccl_tuned.debugging_keys(base)
    if debug:
        module.fail_json(
            msg=f"env: {', '.join(debug)} is not allowed (NCCL Debugging-section variables would "
            "change every configuration, the baseline included; allowed: System-configuration "
            "variables such as NCCL_DEBUG)"
        )
    plan, most = plan_runs(p, scales, candidates)
    preview_in_check_mode(
        module, lambda: {"proposed": [], "tuner_rows": [], "runs": 0, "plan": plan, "max_runs_planned": most, "document": "", "tuner_config": ""}
    )
    runner = Runner(module)

    def run(nodes, test, extra):
        return run_nccl_tests(runner, dict(p, hosts=p["hosts"][:nodes], test=test, json=False, env={**base, **extra}))

    started = time.monotonic()
    budget = nccl_tune.Budget(p["max_runs"], p["time_budget"])
    context = {
        "test": p["test"],
        "min_bytes": p["min_bytes"],
        "max_bytes": p["max_bytes"],
        "scales": scales,
        "gpus_per_node": p["gpus"],
        "margin_percent": p["margin_percent"],
        "repeats": p["repeats"],
        "tolerance_percent": p["tolerance_percent"],
        "check_tests": list(p["check_tests"]),
        "candidates": [nccl_tune.label(c) for c in candidates],
    }
    out = dict(
        changed=False,
        plan=plan,
        max_runs_planned=most,
        scales=scales,
        proposed=[],
        tuner_rows=[],
        tuner_config="",
        why=None,
        failed_baseline=None,
        stopped=None,
        document="",
    )
    if p["phase"] == "sweep":
        run_sweep(p, run, scales, candidates, budget, context, out)
    else:
        run_confirm(p, run, scales, budget, context, out)
    out["seconds"] = round(time.monotonic() - started, 1)
    out["markdown"] = "\n".join(
        nccl_tune.table_markdown(
            {"rows": out["rows"], "tuner_rows": out["tuner_rows"] or out["proposed"], "why": out["why"], "stopped": out["stopped"]},
            p["margin_percent"],
            p["repeats"],
        )
    )
    if out["failed_baseline"]:
        module.fail_json(msg=f"nccl_tune: {out['failed_baseline']}", **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
