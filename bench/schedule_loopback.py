#!/usr/bin/env python3
"""The ib_write_bw schedule without Ansible: N simulated nodes on loopback, full plan.

Each node is a thread running ``benchmarks.run_schedule`` (what the module does on a node)
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
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from ansible_collections.linerate.fabric.plugins.module_utils import benchmarks, runner, verify  # noqa: E402

FIX = os.path.join(REPO, "tests", "unit", "fixtures", "perftest")
FAKE = r'''#!{python} -S
import os, socket, sys, time
a = sys.argv[1:]
port, dur = int(a[a.index("-p") + 1]), int(a[a.index("-D") + 1])
server = a[-1] if a[-1].count(".") == 3 else None
if server is None:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((os.environ["ADDR"], port)); s.listen(1)
    c, _ = s.accept(); s.close(); c.recv(10)
    c.recv(10)
    sys.stdout.write(open("{fix}/server_duration_no_banner.txt").read())
    sys.exit(0)
try:
    c = socket.create_connection((server, port), timeout=2)
except OSError:
    sys.stderr.write("Couldn't connect to %s:%d\n Unable to init the socket connection\n" % (server, port))
    sys.exit(1)
c.sendall(b"hello")
time.sleep(dur)
c.sendall(b"done")
sys.stdout.write(open("{fix}/client_ib_sweep_gbits_25x.txt").read())
'''


class NodeModule:
    def __init__(self, binary):
        self.binary = binary

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return self.binary

    def fail_json(self, **kw):
        raise RuntimeError(kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("--duration", type=int, default=2)
    ap.add_argument("--base-port", type=int, default=24000)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="linerate-schedule-bench-")
    binary = os.path.join(tmp, "ib_write_bw")
    with open(binary, "w") as f:
        f.write(FAKE.format(python=sys.executable, fix=FIX))
    os.chmod(binary, 0o755)
    nodes = [f"n{i:02d}" for i in range(args.nodes)]
    addresses = {n: f"127.0.1.{i + 1}" for i, n in enumerate(nodes)}
    rounds = verify.round_robin(nodes)
    local = threading.local()
    popen = runner.subprocess.Popen

    def node_popen(argv, **kw):
        return popen(argv, **dict(kw, env=dict(os.environ, ADDR=addresses[local.node])))
    runner.subprocess.Popen = node_popen
    out = {}

    def one(n):
        local.node = n
        p = {"tool": "ib_write_bw", "size": 1048576, "qps": 4, "duration": args.duration, "iterations": 5000,
             "gid_index": None, "tclass": None, "sl": None, "use_cuda": False, "out_json": False, "extra_args": [],
             "timeout": args.duration + 20, "connect_timeout": 15, "base_port": args.base_port, "port_stride": 16,
             "port_rounds": 64, "parts": verify.schedule_parts(rounds, n, 0, addresses),
             "tests": [{"device": f"mlx5_{i}"} for i in range(args.rails)]}
        out[n] = benchmarks.run_schedule(runner.Runner(NodeModule(binary)), p)
    threads = [threading.Thread(target=one, args=(n,)) for n in nodes]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    tests = verify.evaluate_tests(verify.round_tests(out), 100)
    floor = len(rounds) * args.duration
    print(f"{args.nodes} nodes x {args.rails} rails, {len(rounds)} rounds of {args.duration} s: {len(tests)} tests, "
          f"{sum(t['ok'] for t in tests)} passed; {wall:.1f} s against a floor of {floor} s "
          f"(x{wall / floor:.2f}, {(wall - floor) / len(rounds):.2f} s a round above it); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
