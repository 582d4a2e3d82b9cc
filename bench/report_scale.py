#!/usr/bin/env python3
"""How long the verification report takes for a large fabric, heat map included.

    .venv/bin/python bench/report_scale.py                      # 256 nodes x 8 rails
    .venv/bin/python bench/report_scale.py --nodes 64 --rails 8 --plan sampled --repeat 1

Builds a synthetic ib_write_bw result set with real-looking host names
(``dgx-a100-rack07-node03``: 8 nodes a rack), one injected bad link, and
times what the verify_report action does on the controller: the diagnosis
(plugins/module_utils/checks/rdma.py: rdma_findings; report.rdma_check: each test
stored once) and the report files (plugins/module_utils/report/report.py:
report.json, summary.md, junit.xml, heatmap.svg), the best of ``--repeat``
runs. No lab needed; bench/run.py runs it as its section ``report``, one
process per size. Peak memory is the controller process's: the resident
peak (ru_maxrss) and the Python heap's peak during one report (tracemalloc,
measured in a run of its own, since tracing slows Python down).
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), ".collections"))

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.report import report as rep  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils import findings  # noqa: E402

# As the validation publishes it (fabric_effective, with its derived values): what verification reads.
FABRIC = published(
    {
        "name": "bench",
        "transport": "roce",
        "link_speed_gbps": 400,
        "link_width": 4,
        "mtu": {"host": 4200, "switch": 9216},
        "verify": {"ib_write_bw_fraction": 0.9},
    }
)


def host_names(n, per_rack=8):
    return [f"dgx-a100-rack{i // per_rack + 1:02d}-node{i % per_rack + 1:02d}" for i in range(n)]


def synthetic(nodes, rails, plan="full", bad=None):
    """(tests, cabling): every planned pair on every rail at ~385 Gb/s; ``bad`` = (node, device) at 150."""
    rounds = plans.round_robin(nodes) if plan == "full" else plans.sampled_plan(nodes, 2)
    devices = [f"mlx5_{r}" for r in range(rails)]
    cabling = {(n, d): {"device": d, "switch": f"leaf{r + 1}", "switch_port": f"swp{k + 1}"} for k, n in enumerate(nodes) for r, d in enumerate(devices)}
    tests = []
    for k, rnd in enumerate(rounds):
        for server, client in rnd:
            for d in devices:
                gbps = 380.0 + (hash((server, client, d)) % 90) / 10
                if bad and bad[1] == d and bad[0] in (server, client):
                    gbps = 150.0
                tests.append({"round": k, "server": [server, d], "client": [client, d], "gbps": gbps, "client_error": None, "server_error": None})
    return tests, cabling, rounds


def report_once(tests, cabling, nodes, rounds, out_dir):
    """One verify_report on the controller: (diagnosis s, files s, the files' sizes, what was named)."""
    t0 = time.perf_counter()
    found, evaluated = rdma.rdma_findings(tests, FABRIC, cabling)
    checks = {"ib_write_bw": rdma.rdma_check(evaluated, thresholds.rdma_threshold_gbps(FABRIC), found)}
    doc = rep.build_report(found, findings.summarize(found), checks, FABRIC, {"nodes": nodes, "rounds": rounds})
    t1 = time.perf_counter()
    files = rep.write_reports(doc, out_dir)
    t2 = time.perf_counter()
    sizes = {k: os.path.getsize(v) for k, v in files.items() if k != "dir"}
    return t1 - t0, t2 - t1, sizes, sorted({f"{f['node']} {f['device']}" for f in found})


def heap_peak_mib(tests, cabling, nodes, rounds):
    """The Python heap's peak (MiB) during one report, inputs excluded (tracemalloc)."""
    with tempfile.TemporaryDirectory() as tmp:
        tracemalloc.start()
        report_once(tests, cabling, nodes, rounds, tmp)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return round(peak / 2**20)


def run(n_nodes=256, rails=8, plan="full", out_dir=None, repeat=3):
    nodes = host_names(n_nodes)
    bad = (nodes[min(len(nodes) - 1, 50)], f"mlx5_{min(rails - 1, 5)}")
    tests, cabling, rounds = synthetic(nodes, rails, plan, bad)
    runs = []
    for _k in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(report_once(tests, cabling, nodes, rounds, out_dir or tmp))
    diagnosis, write, sizes, named = min(runs, key=lambda r: r[0] + r[1])
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "section": "report",
        "nodes": n_nodes,
        "rails": rails,
        "plan": plan,
        "tests": len(tests),
        "runs": repeat,
        "diagnosis_s": round(diagnosis, 2),
        "write_s": round(write, 2),
        "total_s": round(diagnosis + write, 2),
        "heatmap_kib": round(sizes.get("heatmap", 0) / 1024),
        "json_kib": round(sizes.get("json", 0) / 1024),
        "junit_kib": round(sizes.get("junit", 0) / 1024),
        "named": named,
        "injected": f"{bad[0]} {bad[1]}",
        "peak_rss_mib": round(rss_mib),
        "peak_heap_mib": heap_peak_mib(tests, cabling, nodes, rounds),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--plan", choices=("full", "sampled"), default="full")
    ap.add_argument("--keep", metavar="DIR", help="write the report files here (and keep them)")
    ap.add_argument("--repeat", type=int, default=3, help="report this many times, keep the fastest (default 3)")
    args = ap.parse_args()
    print(json.dumps(run(args.nodes, args.rails, args.plan, args.keep, max(1, args.repeat))))


if __name__ == "__main__":
    main()
