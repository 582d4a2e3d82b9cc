#!/usr/bin/env python3
"""What issue #12's verification additions cost on the running lab: playbooks/verify.yml
with the old checks (ports, ib_write_bw, nccl) against the default checks (+ link_health, + incast phase,
+ NCCL read-back, + counter snapshots), alternating, same short durations as the tests.

    .venv/bin/python bench/verify_overhead.py [--runs 2] [--duration 2]

Needs a running lab (LINERATE_LAB_ID / LINERATE_LAB_SLOT as for labctl). Prints one row
per run and the medians; writes bench/results/verify-overhead-<timestamp>.json.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OLD = '{"verify_fabric_checks": ["ports", "ib_write_bw", "nccl"]}'


def run(extra, duration):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        PATH=os.path.join(REPO, ".venv", "bin") + os.pathsep + os.environ.get("PATH", ""),
    )
    argv = [
        "ansible-playbook",
        "-i",
        "inventory/lab",
        "playbooks/verify.yml",
        "-e",
        f"verify_fabric_ib_write_bw_duration={duration}",
        "-e",
        "verify_fabric_ib_write_bw_connect_timeout=6",
        *extra,
    ]
    t0 = time.monotonic()
    res = subprocess.run(argv, cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return time.monotonic() - t0, res.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--duration", type=int, default=2)
    a = ap.parse_args()
    rows = []
    for i in range(a.runs):
        for name, extra in (("old checks", ["-e", OLD]), ("default checks", [])):
            secs, rc = run(extra, a.duration)
            rows.append({"run": i, "variant": name, "seconds": round(secs, 1), "rc": rc})
            print(f"{name:15s} run {i}: {secs:6.1f} s rc={rc}", flush=True)
    med = {v: statistics.median(r["seconds"] for r in rows if r["variant"] == v) for v in ("old checks", "default checks")}
    print(f"median old {med['old checks']:.1f} s, default {med['default checks']:.1f} s, extra {med['default checks'] - med['old checks']:.1f} s")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"verify-overhead-{datetime.datetime.utcnow():%Y%m%dT%H%M%SZ}.json")
    with open(path, "w") as f:
        json.dump({"rows": rows, "median": med, "duration": a.duration}, f, indent=1)
    return 0 if all(r["rc"] in (0, 2) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
