#!/usr/bin/env python3
"""The ib_write_bw schedule without Ansible: N simulated nodes on loopback, full plan.

Each node is a thread running ``probes/schedule.py:run_schedule`` (what the module does on a node)
with its own 127.0.0.x address and a stand-in perftest that really listens, connects and
then sleeps the test's duration. What it measures is the schedule's own cost per round (the
rounds synchronising through the servers, the retries, process starts) against the floor,
rounds x duration; the Ansible side (one async start, one collection) is a fixed cost on top.

    .venv/bin/python bench/schedule_loopback.py --nodes 32 --rails 2 --duration 2
"""

import argparse
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "unit"))

from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma  # noqa: E402

import schedule_sim  # noqa: E402  (the stand-in perftest and the threads, shared with the unit tests)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("--duration", type=int, default=2)
    ap.add_argument("--base-port", type=int, default=24000)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="linerate-schedule-bench-")
    nodes = [f"n{i:02d}" for i in range(args.nodes)]
    addresses = {n: f"127.0.1.{i + 1}" for i, n in enumerate(nodes)}

    def params(parts):
        return {
            "tool": "ib_write_bw",
            "size": 1048576,
            "qps": 4,
            "duration": args.duration,
            "iterations": 5000,
            "gid_index": None,
            "tclass": None,
            "sl": None,
            "use_cuda": False,
            "out_json": False,
            "extra_args": [],
            "timeout": args.duration + 20,
            "connect_timeout": 15,
            "base_port": args.base_port,
            "port_stride": 16,
            "port_rounds": 64,
            "parts": parts,
            "tests": [{"device": f"mlx5_{i}"} for i in range(args.rails)],
        }

    out, _log, wall, rounds = schedule_sim.play(tmp, nodes, addresses, params, setattr)
    tests = rdma.evaluate_tests(rdma.round_tests(out), 100)
    floor = len(rounds) * args.duration
    print(
        f"{args.nodes} nodes x {args.rails} rails, {len(rounds)} rounds of {args.duration} s: {len(tests)} tests, "
        f"{sum(t['ok'] for t in tests)} passed; {wall:.1f} s against a floor of {floor} s "
        f"(x{wall / floor:.2f}, {(wall - floor) / len(rounds):.2f} s a round above it); "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
