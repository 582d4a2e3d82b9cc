#!/usr/bin/env python3
"""The host stack's rollout in waves: what it costs the controller on lab nodes, and a model to 2,000.

    .venv/bin/python bench/rollout.py --sizes 4 8 16      # measure on the lab (rebuilds it per size), then model
    .venv/bin/python bench/rollout.py --model-only        # the model alone, from every measurement file

Measured per lab size (the real playbooks/hosts.yml, ``--tags connectx_firmware`` with one firmware parameter
changed, so every node takes a level-3 mlxfwreset in its wave, then the same change back): wall time, the
controller's task results (the PLAY RECAP's ok + failed + skipped + rescued + ignored + unreachable) and its
CPU seconds (the ansible-playbook process tree, ``wait4``), and the rollout summary's waves and the most nodes
disrupted at once.

The model takes the per-node and per-wave task results and the CPU per task result from the measurements (a
least-squares line over the sizes), the waves from the real planner (module_utils/host/rollout.py) on a
2,000-node rail-optimised fleet, and the durations of real hardware stated in DURATIONS (each with its source
or marked as an assumption), and prints task results, controller CPU and wall time for the waves and for the
one-node-at-a-time turns the waves replaced. Benchmarks, not tests: nothing fails on a figure. The lab must be
free (wrap in ``flock /tmp/linerate-lab.lock``); it is left at the last size measured.
"""

import argparse
import datetime
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, ".collections"))

import run as bench  # noqa: E402  (bench/run.py: the lab and playbook helpers)

from ansible_collections.linerate.fabric.plugins.module_utils.host import rollout  # noqa: E402

PARAM = "VF_VPD_ENABLE"
RESULTS = os.path.join(HERE, "results")

# Durations on real hardware of one node's disruptive step (seconds). A site's own drain hook and its
# hardware decide these; the model states what it assumed so the figure can be redone with others.
DURATIONS = {
    # MFT's mlxfwreset (NVIDIA MFT documentation, "mlxfwreset - Loading Firmware on 5th Generation Devices
    # Tool"): level 3 is "Driver restart and PCI reset", no host reboot. How long it takes is not published;
    # ASSUMPTION: 120 s for the reset of the node's NICs one after another (8 rails), driver reload included.
    "mlxfwreset": 120,
    # wait_for_connection after the reset: the management NIC is not a ConnectX (the disruption guard refuses
    # otherwise), so SSH answers at once; ASSUMPTION: 15 s (one reconnect with ControlPersist gone).
    "wait": 15,
    # the RDMA check (rdma_facts expect_devices) and the undrain: measured on the lab as one task each
    # (about a second); ASSUMPTION on real hosts: 10 s for both.
    "check": 10,
    # a server reboot for parameters read at boot (connectx_firmware_allow_reboot): ASSUMPTION 600 s, the
    # POST of a GPU server with 8 GPUs and 8-10 NICs (5-10 minutes is what operators report).
    "reboot": 600,
    # the drain hook before the step: site-specific (a Slurm drain waits for the node's jobs);
    # ASSUMPTION 0 s: the model counts the rollout's own time, nodes drained beforehand.
    "drain": 0,
}


def recap(output):
    """The PLAY RECAP's counters summed over hosts: task results of the run."""
    keys = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
    totals = dict.fromkeys(keys, 0)
    tail = output.split("PLAY RECAP", 1)[-1]
    for line in tail.splitlines():
        for k in keys:
            m = re.search(rf"\b{k}=(\d+)", line)
            if m:
                totals[k] += int(m.group(1))
    totals["results"] = sum(totals[k] for k in keys if k != "changed")
    return totals


def latest_summary():
    path = os.path.join(REPO, "inventory", "lab-output", "rollout", "latest.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def firmware_run(value, extra=()):
    """hosts.yml, only the firmware role, with PARAM set to value: every node resets in its wave."""
    args = ["--tags", "connectx_firmware", "-e", json.dumps({"connectx_firmware_extra_params": {PARAM: value}}), *extra]
    dt, res = bench.timed([os.path.join(bench.VENV_BIN, "ansible-playbook"), "-i", "inventory/lab", "playbooks/hosts.yml", *args])
    if res.returncode != 0:
        raise SystemExit(f"bench: hosts.yml failed ({res.returncode}):\n{res.stdout[-4000:]}")
    s = latest_summary()
    return dict(
        recap(res.stdout),
        wall_s=round(dt, 1),
        controller_cpu_s=res.cpu_s,
        waves=len(s["waves"]),
        sizes=[len(w["nodes"]) for w in s["waves"]],
        max_disrupted_at_once=s["max_disrupted_at_once"],
        done=s["counts"]["done"],
    )


def measure(sizes, max_unavailable):
    rows = []
    # the lab is rail-optimised (every node on every leaf): spread on leaves would make every wave one node;
    # the bench spreads on racks (none labelled: no constraint) to measure the widening waves
    extra = ("-e", json.dumps({"fabric": dict(_lab_fabric(), rollout={"max_unavailable": max_unavailable, "spread": []})}))
    for n in sizes:
        bench.ensure_lab(n, fresh=False)
        bench.playbook("playbooks/hosts.yml")  # converged first: the two runs below change only the firmware
        for value in (True, False):
            row = dict(nodes=n, value=value, **firmware_run(value, extra))
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def _lab_fabric():
    import yaml

    with open(os.path.join(REPO, "inventory", "lab", "group_vars", "all", "fabric.yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)["fabric"]


def fit(xs, ys):
    """Least-squares line y = a + b x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def fleet(nodes=2000, per_su=32, rails=8, per_rack=4, per_domain=None):
    """A rail-optimised fleet: scalable units of per_su nodes on the unit's rail leaves, racks of per_rack."""
    return [
        rollout.Node(
            name=f"gpu{i + 1:04d}",
            leaf=tuple(f"su{i // per_su}-leaf{r}" for r in range(rails)),
            rack=f"rack{i // per_rack}",
            nvlink_domain=None if per_domain is None else f"nvl{i // per_domain}",
        )
        for i in range(nodes)
    ]


# ASSUMPTION: the controller has 8 cores for ansible-playbook's forks (a modest VM; the lab's has 2, shared).
CONTROLLER_CORES = 8


def model(rows, nodes=2000, max_unavailable="10%", reboot=False, cores=CONTROLLER_CORES):
    """Task results, controller CPU and wall time at ``nodes`` nodes, from the measured rows."""
    xs = [r["nodes"] for r in rows]
    if len(set(xs)) > 1:
        per_node_results = fit(xs, [r["results"] for r in rows])
    else:
        per_node_results = (0.0, sum(r["results"] / r["nodes"] for r in rows) / len(rows))
    cpu_per_result = sum(r["controller_cpu_s"] for r in rows) / sum(r["results"] for r in rows)
    # the lab's wall time per wave (its simulated reset takes about a second): the host stack's own work
    # per wave, the validation and the plan spread over the waves; on real nodes DURATIONS come on top
    wave_s = (0.0, sum(r["wall_s"] / r["waves"] for r in rows) / len(rows))
    plan = rollout.plan(fleet(nodes), max_unavailable=max_unavailable, canary=1)
    step = DURATIONS["drain"] + DURATIONS["mlxfwreset"] + DURATIONS["wait"] + DURATIONS["check"] + (DURATIONS["reboot"] if reboot else 0)
    results = per_node_results[0] + per_node_results[1] * nodes
    # a wave takes the disruptive step plus the host stack's own work: the lab's time per wave, or the
    # controller's CPU for the wave's task results spread over its cores, whichever is longer
    wall = sum(step + max(wave_s[1], len(w) * per_node_results[1] * cpu_per_result / cores) for w in plan.waves)
    # the turns the waves replaced: every node of the batch included the apply file once per node (the
    # file's block of 11 tasks reported skipped on the other N-1 nodes): N*(N-1)*11 more results, and
    # one node's step at a time; their controller CPU spread over the same cores
    turn_results = results + nodes * (nodes - 1) * 11
    turn_wall = max(nodes * (step + wave_s[1]), turn_results * cpu_per_result / cores)
    return {
        "nodes": nodes,
        "max_unavailable": plan.max_unavailable,
        "waves": len(plan.waves),
        "widest_wave": max(plan.sizes),
        "first_waves": plan.sizes[:8],
        "task_results": round(results),
        "controller_cpu_s": round(results * cpu_per_result),
        "disruptive_step_s": step,
        "controller_cores": cores,
        "wall_h": round(wall / 3600, 1),
        "turns": {"task_results": round(turn_results), "controller_cpu_s": round(turn_results * cpu_per_result), "wall_h": round(turn_wall / 3600, 1)},
        "fit": {
            "results_per_node": round(per_node_results[1], 1),
            "results_fixed": round(per_node_results[0], 1),
            "cpu_ms_per_result": round(cpu_per_result * 1000, 2),
            "lab_s_per_wave": round(wave_s[1], 1),
        },
        "durations": DURATIONS,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--max-unavailable", default=4, type=int, help="the lab runs' max_unavailable")
    ap.add_argument("--model-only", action="store_true", help="model from every bench/results/rollout-*.json")
    ap.add_argument("--nodes", type=int, default=2000, help="the modelled fleet")
    a = ap.parse_args(argv)
    if a.model_only:
        files = sorted(glob.glob(os.path.join(RESULTS, "rollout-*.json")))
        if not files:
            raise SystemExit("bench: no bench/results/rollout-*.json yet: run with --sizes first")
        rows = []
        for path in files:  # every size measured so far (a run per size is fine)
            with open(path, encoding="utf-8") as f:
                rows += json.load(f)["measured"]
    else:
        rows = measure(a.sizes, a.max_unavailable)
    out = {"measured": rows, "model": {"firmware_reset": model(rows, a.nodes), "firmware_reboot": model(rows, a.nodes, reboot=True)}}
    print(json.dumps(out["model"], indent=1))
    if not a.model_only:
        os.makedirs(RESULTS, exist_ok=True)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        with open(os.path.join(RESULTS, f"rollout-{stamp}.json"), "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
