#!/usr/bin/env python3
"""Fleet model: the REAL verification plan, evaluation, localisation and report code
(plugins/module_utils/checks/plans.py, rdma.py and the verify filters) against a simulated fabric of
64 .. 2,000 nodes x 8 rails, with injected fault classes.

    .venv/bin/python bench/fleet.py                       # 64 256 1024 2000 nodes, every class
    .venv/bin/python bench/fleet.py --sizes 64 256 --trials 5

Only the data path is simulated (which ib_write_bw test fails); everything the controller
computes is the project's own code: ``sampled_plan`` (topology-aware first rounds),
``verify_retest_rounds`` (re-tests in both directions), ``round_tests``, ``rdma_findings``
(evaluation, localisation, findings), ``summarize``, ``incast_plan`` / ``incast_coverage``.

The fabric: rail-optimised scalable units (SU) of 32 nodes; rail r of the nodes of SU s
lands on leaf ``su<s>-r<r>``, each leaf has two uplinks (one per spine) and a flow between
two leaves takes one of them by a hash of its ends (ECMP). A same-rail test between nodes
of two SUs crosses both leaves' uplinks.

Fault classes (each a separate run; ``several``: all of them at once, on ~1 % of the rails):
send-only, receive-only, both (hard, every test that way fails), intermittent (fails 50 %
of its tests, both ways), uplink (one uplink of one leaf degraded: every flow hashed onto it).
Per size and class the table shows: re-test phases (and rounds) until every injected fault is
named with no false positive (``-`` = not within 3 re-test phases, the role's
verify_fabric_ib_write_bw_retest_phases), faults named / injected, injected rails that failed
none of their tests (``never failed``: a 50 % flaky rail passes n samples 2^-n of the time; no
localisation can name it), false positives (findings naming an element that is healthy),
partial findings (an injected element named with another direction or code: a flaky rail not
yet seen failing both ways, or an inconclusive pair one end of which it is), whether the summary failed, the controller's
time for the plan + evaluation + report code, and the process's peak memory.
Benchmarks, not tests: nothing here fails on a figure.
"""

import argparse
import json
import os
import random
import resource
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, ".collections"))


def _imports():
    """The collection as the tests load it (.collections/ansible_collections/linerate/fabric -> the checkout)."""
    from ansible_collections.linerate.fabric.plugins.filter import verify as vf
    from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling as checks_cabling
    from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans
    from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma
    from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds
    from ansible_collections.linerate.fabric.plugins.module_utils import findings as findings_mod

    return checks_cabling, plans, rdma, thresholds, findings_mod, vf


SU = 32
RAILS = 8
GOOD_GBPS, BAD_GBPS = 385.0, 150.0


def _published(fabric):
    """The intent as the validation publishes it (fabric_effective, with its derived values): what
    verification reads."""
    from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published

    return published(fabric)


FABRIC = _published({"transport": "roce", "link_speed_gbps": 400})
CLASSES = ("send", "receive", "both", "intermittent", "uplink", "several")
MAX_RETEST_PHASES = 3


class Fabric:
    """N nodes x RAILS rails; ``faults``: {(node, device): {"send": p, "receive": p}} (p: a test's failure
    probability that way), ``uplinks``: {(leaf, index)} degraded uplinks."""

    def __init__(self, n, rails=RAILS, seed=0):
        self.nodes = [f"n{i:04d}" for i in range(n)]
        self.devices = [f"mlx5_{r}" for r in range(rails)]
        self.ports = {}
        for i, node in enumerate(self.nodes):
            s = i // SU
            self.ports[node] = [{"device": d, "switch": f"su{s}-r{r}", "switch_port": f"swp{i % SU + 1}"} for r, d in enumerate(self.devices)]
        self.leaves = sorted({p["switch"] for ps in self.ports.values() for p in ps})
        self.uplinks = {
            leaf: [
                {"port": "swp33", "peer": "spine1", "peer_port": f"Ethernet{k + 1}/1"},
                {"port": "swp34", "peer": "spine2", "peer_port": f"Ethernet{k + 1}/1"},
            ]
            for k, leaf in enumerate(self.leaves)
        }
        self.leaf = {(n, p["device"]): p["switch"] for n, ps in self.ports.items() for p in ps}
        self.faults, self.bad_uplinks = {}, set()
        self.misbehaved = set()  # (endpoint, way) whose own fault failed a test: what any plan could see
        self.rng = random.Random(seed)

    def inject(self, cls, count=1):
        """Faults of one class on random rails (or one uplink); returns what must be named."""
        want = []
        for _ in range(count):
            if cls == "uplink":
                leaf = self.rng.choice(self.leaves)
                self.bad_uplinks.add((leaf, 0))
                want.append(("uplink", leaf))
                continue
            while True:
                ep = (self.rng.choice(self.nodes), self.rng.choice(self.devices))
                if ep not in self.faults:
                    break
            p = {"send": {"send": 1.0}, "receive": {"receive": 1.0}, "both": {"send": 1.0, "receive": 1.0}, "intermittent": {"send": 0.5, "receive": 0.5}}[cls]
            self.faults[ep] = p
            want.append((ep, {"send": "send", "receive": "receive"}.get(cls, "both"), cls == "intermittent"))
        return want

    def ok(self, client, server, salt):
        """One test's outcome: the client writes into the server; a cross-leaf flow crosses one uplink
        of each leaf (ECMP hash of its ends)."""
        for ep, way in ((client, "send"), (server, "receive")):
            p = self.faults.get(ep, {}).get(way, 0.0)
            if p and (p >= 1.0 or self.rng.random() < p):
                self.misbehaved.add((ep, way))
                return False
        lc, ls = self.leaf[client], self.leaf[server]
        if lc != ls and self.bad_uplinks:
            h = zlib.crc32(f"{client}|{server}|{salt}".encode())
            if (lc, h % 2) in self.bad_uplinks or (ls, (h >> 1) % 2) in self.bad_uplinks:
                return False
        return True

    def uplink_ports(self, rounds, first_round, leaf_of):
        """(proven, all) uplink ports: those the ECMP hash of ``ok`` put a test of ``rounds`` on."""
        seen = set()
        for k, rnd in enumerate(rounds):
            for c, sv in self._flows(rnd, leaf_of):
                lc, ls = leaf_of[c], leaf_of[sv]
                if lc != ls:
                    h = zlib.crc32(f"{c}|{sv}|{first_round + k}".encode())
                    seen.update({(lc, h % 2), (ls, (h >> 1) % 2)})
        return [len(seen), sum(len(u) for u in self.uplinks.values())]

    @staticmethod
    def _flows(rnd, leaf_of):
        plans = _imports()[1]
        return plans.plan_tests([rnd], leaf_of)

    def run(self, rounds, first_round, logs):
        """Play ``rounds`` (every rail of every pair) into per-node logs as the role records them."""
        for k, rnd in enumerate(rounds):
            r = first_round + k
            for pair in rnd:
                server, client, k = pair[0], pair[1], (pair[2] if len(pair) > 2 else 0)
                results = []
                for i, d in enumerate(self.devices):
                    into = self.devices[(i + k) % len(self.devices)]
                    good = self.ok((client, d), (server, into), r)
                    results.append({"device": d, "gbps": GOOD_GBPS if good else BAD_GBPS, "error": None, **({"peer_device": into} if k else {})})
                logs[client].append({"round": r, "role": "client", "peer": server, "results": results})
                logs[server].append(
                    {"round": r, "role": "server", "peer": client, "results": [{"device": d, "gbps": None, "error": None} for d in self.devices]}
                )


def named(want, findings):
    """(named, false_positives, partial): each injected fault matched by a finding of its element and
    direction; false positives name a healthy element; partial ones name an injected element with
    another direction or code (a flaky rail not yet seen failing both ways, an inconclusive pair)."""
    hit, used = 0, set()
    for w in want:
        for i, f in enumerate(findings):
            if w[0] == "uplink":
                match = f["code"] == "UPLINK_DEGRADED" and w[1] in f.get("leaves", [])
            else:
                (node, device), direction, flaky = w
                match = (f.get("node"), f.get("device"), f.get("direction")) == (node, device, direction) and (f["code"] == "RDMA_INTERMITTENT") == flaky
            if match:
                hit += 1
                used.add(i)
                break
    rest = [f for i, f in enumerate(findings) if i not in used]
    injected = {tuple(w[0]) for w in want if w[0] != "uplink"}
    leaves = {w[1] for w in want if w[0] == "uplink"}
    on_injected = [f for f in rest if (f.get("node"), f.get("device")) in injected or (f["code"] == "UPLINK_DEGRADED" and set(f.get("leaves") or []) & leaves)]
    return hit, len(rest) - len(on_injected), len(on_injected)


def _clean_hit(want, findings):
    """Every injected fault named, nothing false, nothing partial (``named``)."""
    hit, fp, part = named(want, findings)
    return hit == len(want) and fp == 0 and part == 0


def as_seen(want, misbehaved):
    """``want`` with each intermittent rail's direction cut to the ways it has failed a test so far
    (``Fabric.misbehaved``), and one that has failed none left out: what the tests could show. A 50 %
    rail passes n tests a way 2^-n of the time; no plan names a way it has not failed."""
    out = []
    for w in want:
        if w[0] == "uplink" or not w[2]:
            out.append(w)
            continue
        ways = [d for d in ("send", "receive") if (tuple(w[0]), d) in misbehaved]
        if ways:
            out.append((w[0], "both" if len(ways) == 2 else ways[0], True))
    return out


def unobservable(want, tests):
    """Injected rail faults that failed none of the tests they took part in (an intermittent rail that
    passed every sample): no data names them, whatever the localisation."""
    failed = {tuple(t[side]) for t in tests if not t["ok"] for side in ("server", "client")}
    return sum(1 for w in want if w[0] != "uplink" and tuple(w[0]) not in failed)


def _inject(fab, cls, n):
    """The faults of class ``cls`` injected into ``fab`` (``several``: every class on ~1 % of the rails, one uplink)."""
    if cls == "several":
        k = max(1, n * RAILS // 100 // 4)
        return sum((fab.inject(c, k) for c in ("send", "receive", "both", "intermittent")), []) + fab.inject("uplink")
    if cls == "healthy":
        return []
    return fab.inject(cls)


def _retest(fab, vf, logs, done, hits):
    """Run the role's re-test phases (at most MAX_RETEST_PHASES) after the first rounds ``done``:
    (re-test rounds run, phases, controller seconds, trail). The trail holds (re-test rounds so far,
    phase, *hits()) after each round, the first rounds' entry first."""
    trail = [(0, 0, *hits())]
    retest_rounds = phases = 0
    controller = 0.0
    while phases < MAX_RETEST_PHASES:
        t0 = time.perf_counter()
        retest = vf.verify_retest_rounds(logs, fab.nodes, FABRIC, done, 1, fab.ports, phases)
        controller += time.perf_counter() - t0
        if not retest:
            break
        phases += 1
        for rnd in retest:
            fab.run([rnd], len(done), logs)
            done.append(rnd)
            retest_rounds += 1
            trail.append((retest_rounds, phases, *hits()))
    return retest_rounds, phases, controller, trail


def _settled(trail, col):
    """The trail entry from which column ``col`` holds for every later evaluation (None: the last does not)."""
    at = None
    for k in range(len(trail) - 1, -1, -1):
        if not trail[k][col]:
            break
        at = trail[k]
    return at


def scenario(n, cls, seed, sample_rounds=6):
    checks_cabling, plans, rdma, thresholds, findings_mod, vf = _imports()
    fab = Fabric(n, seed=seed)
    want = _inject(fab, cls, n)
    cabling = checks_cabling.cabling_index(fab.ports)
    logs = {node: [] for node in fab.nodes}
    controller = 0.0
    t0 = time.perf_counter()
    rounds = vf.verify_rounds(fab.nodes, "sampled", sample_rounds, fab.ports)
    controller += time.perf_counter() - t0
    fab.run(rounds, 0, logs)

    # whether the findings from every test so far name every fault with nothing false or partial (the
    # bench's instrument, not timed; the role computes the findings once, after its last phase)
    def hits():
        found = rdma.rdma_findings(rdma.round_tests(logs), FABRIC, cabling, uplinks=fab.uplinks)[0]
        return _clean_hit(want, found), _clean_hit(as_seen(want, fab.misbehaved), found)

    retest_rounds, phases, retest_s, trail = _retest(fab, vf, logs, list(rounds), hits)
    controller += retest_s
    t0 = time.perf_counter()
    findings, _ = rdma.rdma_findings(rdma.round_tests(logs), FABRIC, cabling, uplinks=fab.uplinks)
    controller += time.perf_counter() - t0
    # named from the first round after which every later evaluation (the final one included) names all
    named_at, seen_at = _settled(trail, 2), _settled(trail, 3)
    plan_up = plans.uplink_test_coverage(rounds, fab.leaf, fab.uplinks)["uplinks"]
    plan_ports = fab.uplink_ports(rounds, 0, fab.leaf)
    t0 = time.perf_counter()
    summary = findings_mod.summarize(findings)
    incast = plans.incast_plan(fab.nodes, 7, fab.leaf)
    cov = plans.incast_coverage(incast, fab.leaf, fab.uplinks)
    controller += time.perf_counter() - t0
    hit, fp, part = named(want, findings)
    blind = unobservable(want, rdma.evaluate_tests(rdma.round_tests(logs), thresholds.rdma_threshold_gbps(FABRIC)))
    return {
        "nodes": n,
        "class": cls,
        "seed": seed,
        "first_rounds": len(rounds),
        "retest_rounds": retest_rounds,
        "named_after": named_at and named_at[0],
        "named_phase": named_at and named_at[1],
        "seen_named_after": seen_at and seen_at[0],
        "retest_phases": phases,
        "unobservable": blind,
        "named": hit,
        "injected": len(want),
        "false_positives": fp,
        "partial": part,
        "passed": summary["passed"],
        "codes": summary["codes"],
        "incast_rounds": len(incast),
        "incast_ports": cov["ports"],
        "incast_uplinks": cov["uplinks"],
        "plan_uplinks": plan_up,
        "plan_uplink_ports": plan_ports,
        "controller_s": round(controller, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def row(r):
    phases = "-" if r["named_after"] is None else str(r["named_phase"])
    rounds = "-" if r["named_after"] is None else str(r["named_after"])
    seen = "-" if r.get("seen_named_after") is None else str(r["seen_named_after"])
    pct = lambda a, b: f"{100 * a / b:.0f} %" if b else "n/a"  # noqa: E731
    return (
        f"| {r['nodes']:>5} | {r['class']:<12} | {r['first_rounds']:>2} | {phases:>2} | {rounds:>2} | {seen:>2} | "
        f"{r['retest_rounds']:>2} | "
        f"{r['named']}/{r['injected']} | {r['unobservable']} | {r['false_positives']:>3} | {r['partial']} | "
        f"{'PASSED' if r['passed'] else 'FAILED':<6} | "
        f"{pct(*r['plan_uplinks'])} | {pct(*r['plan_uplink_ports'])} | "
        f"{r['incast_rounds']:>2} | {pct(*r['incast_ports'])} | {pct(*r['incast_uplinks'])} | "
        f"{r['controller_s']:>6.2f} | {r['peak_rss_mib']:>6.0f} |"
    )


HEAD = (
    "| nodes | fault class  | first rounds | re-test phases to name | re-test rounds to name | "
    "re-test rounds to name what failed | re-test rounds run | "
    "named | never failed | false pos. | partial | summary | ib_write_bw leaf uplinks | uplink ports (ECMP) | "
    "incast rounds | incast ports | incast uplinks | controller s | peak MiB |\n"
    "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: "
    "| ---: | ---: |"
)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 2000])
    ap.add_argument("--classes", nargs="+", default=["healthy", *CLASSES], choices=["healthy", *CLASSES])
    ap.add_argument("--trials", type=int, default=1, help="seeds per size and class (rows aggregate nothing)")
    ap.add_argument("--sample-rounds", type=int, default=6, help="circle rounds of the sampled plan (the role's verify_fabric_ib_write_bw_sample_rounds)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    rows = []
    print(HEAD, flush=True)
    for n in args.sizes:
        for cls in args.classes:
            for seed in range(args.trials):
                r = scenario(n, cls, seed, args.sample_rounds)
                rows.append(r)
                print(row(r), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
