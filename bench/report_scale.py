#!/usr/bin/env python3
"""How long the verification report takes for a large fabric, heat map included.

    .venv/bin/python bench/report_scale.py                      # 256 nodes x 8 rails
    .venv/bin/python bench/report_scale.py --nodes 64 --rails 8 --plan sampled

Builds a synthetic ib_write_bw result set with real-looking host names
(``dgx-a100-rack07-node03``: 8 nodes a rack), one injected bad link, and
times what the verify_report action does on the controller: the diagnosis
(plugins/module_utils/verify.py: rdma_findings, bandwidth_matrix) and the
report files (plugins/module_utils/report.py: report.json, summary.md,
junit.xml, heatmap.svg). No lab needed; bench/run.py runs it as its section
``report``. Peak memory is the controller process's (ru_maxrss).
"""
import argparse
import json
import os
import resource
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "plugins", "module_utils"))

import report as rep  # noqa: E402  (module_utils, stdlib only)
import verify  # noqa: E402

FABRIC = {"name": "bench", "transport": "roce", "link_speed_gbps": 400, "link_width": 4,
          "mtu": {"host": 4200, "switch": 9216}, "verify": {"ib_write_bw_fraction": 0.9}}


def host_names(n, per_rack=8):
    return [f"dgx-a100-rack{i // per_rack + 1:02d}-node{i % per_rack + 1:02d}" for i in range(n)]


def synthetic(nodes, rails, plan="full", bad=None):
    """(tests, cabling): every planned pair on every rail at ~385 Gb/s; ``bad`` = (node, device) at 150."""
    rounds = verify.round_robin(nodes) if plan == "full" else verify.sampled_plan(nodes, 2)
    devices = [f"mlx5_{r}" for r in range(rails)]
    cabling = {(n, d): {"device": d, "switch": f"leaf{r + 1}", "switch_port": f"swp{k + 1}"}
               for k, n in enumerate(nodes) for r, d in enumerate(devices)}
    tests = []
    for k, rnd in enumerate(rounds):
        for server, client in rnd:
            for d in devices:
                gbps = 380.0 + (hash((server, client, d)) % 90) / 10
                if bad and bad[1] == d and bad[0] in (server, client):
                    gbps = 150.0
                tests.append({"round": k, "server": [server, d], "client": [client, d], "gbps": gbps,
                              "client_error": None, "server_error": None})
    return tests, cabling, rounds


def run(n_nodes=256, rails=8, plan="full", out_dir=None):
    nodes = host_names(n_nodes)
    bad = (nodes[min(len(nodes) - 1, 50)], f"mlx5_{min(rails - 1, 5)}")
    tests, cabling, rounds = synthetic(nodes, rails, plan, bad)
    t0 = time.monotonic()
    found, evaluated = verify.rdma_findings(tests, FABRIC, cabling)
    threshold = verify.rdma_threshold_gbps(FABRIC)
    checks = {"ib_write_bw": {
        "passed": not found, "threshold_gbps": threshold, "tests": evaluated,
        "matrix": verify.bandwidth_matrix(evaluated),
        "detail": f"{sum(t['ok'] for t in evaluated)}/{len(evaluated)} links >= {threshold:g} Gb/s",
        "cases": [{"name": f"{t['client'][0]}:{t['client'][1]} -> {t['server'][0]}:{t['server'][1]} (round {t['round']})",
                   "ok": t["ok"], "code": t["code"]} for t in evaluated]}}
    doc = rep.build_report(found, verify.summarize(found), checks, FABRIC, {"nodes": nodes, "rounds": rounds})
    t1 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        files = rep.write_reports(doc, out_dir or tmp)
        t2 = time.monotonic()
        sizes = {k: os.path.getsize(v) for k, v in files.items() if k != "dir"}
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"section": "report", "nodes": n_nodes, "rails": rails, "plan": plan, "tests": len(tests),
            "diagnosis_s": round(t1 - t0, 2), "write_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2),
            "heatmap_kib": round(sizes.get("heatmap", 0) / 1024), "json_kib": round(sizes.get("json", 0) / 1024),
            "named": sorted({f"{f['node']} {f['device']}" for f in found}), "injected": f"{bad[0]} {bad[1]}",
            "peak_rss_mib": round(peak_mib)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--plan", choices=("full", "sampled"), default="full")
    ap.add_argument("--keep", metavar="DIR", help="write the report files here (and keep them)")
    args = ap.parse_args()
    print(json.dumps(run(args.nodes, args.rails, args.plan, args.keep)))


if __name__ == "__main__":
    main()
