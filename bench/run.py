#!/usr/bin/env python3
"""linerate benchmarks on the lab: what a converge, a second run, a change
window and a fabric verification cost, and how that grows with the fleet.

    .venv/bin/python bench/run.py                      # everything, sizes 4 8 16 32
    .venv/bin/python bench/run.py --sizes 4 8 --only converge

Each section prints rows as it goes and a table at the end; results are also
written to bench/results/<timestamp>.json. Benchmarks, not tests: nothing
here fails on a figure. Sizes other than the running lab's rebuild the lab
(the image is kept).
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VENV_BIN = os.path.join(REPO, ".venv", "bin")


def env(**extra):
    e = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        CONTAINERS_CONF=os.path.join(REPO, "lab", "containers.conf"),
        ANSIBLE_NOCOLOR="1",
        PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
    )
    e.update(extra)
    return e


class Ran:
    """A finished command: returncode, stdout (with stderr) and the peak resident memory of its
    process tree's largest process (``wait4``: the command and every child it waited for), in MiB."""

    def __init__(self, returncode, stdout, peak_rss_mib, cpu_s=None):
        self.returncode, self.stdout, self.peak_rss_mib, self.cpu_s = returncode, stdout, peak_rss_mib, cpu_s


def timed(argv, **kw):
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, env=kw.pop("env", env()), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - t0, Ran(proc.returncode, out, round(usage.ru_maxrss / 1024, 1), round(usage.ru_utime + usage.ru_stime, 1))


# podman's cgroup of the lab's containers (cgroupfs manager): the CPU the simulated nodes and
# switches used (their sshd, the modules Ansible runs there, the simulated tools)
LAB_CGROUP = ("/sys/fs/cgroup/cpuacct/libpod_parent/cpuacct.usage", "/sys/fs/cgroup/libpod_parent/cpu.stat")


def lab_cpu_s():
    """CPU seconds the lab's containers have used so far, None where the cgroup is not found."""
    for path in LAB_CGROUP:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if path.endswith("cpu.stat"):
            return int(re.search(r"usage_usec (\d+)", text).group(1)) / 1e6
        return int(text) / 1e9
    return None


def playbook(path, *args, extra_env=None):
    lab0 = lab_cpu_s()
    dt, res = timed([os.path.join(VENV_BIN, "ansible-playbook"), "-i", "inventory/lab", path, *args], env=env(**(extra_env or {})))
    lab1 = lab_cpu_s()
    if res.returncode != 0:
        raise SystemExit(f"bench: {path} failed ({res.returncode}):\n{res.stdout[-4000:]}")
    return dt, dict(
        recap(res.stdout), peak_rss_mib=res.peak_rss_mib, controller_cpu_s=res.cpu_s, lab_cpu_s=None if lab0 is None or lab1 is None else round(lab1 - lab0, 1)
    )


def recap(output):
    totals = {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0}
    tail = output.split("PLAY RECAP", 1)[-1]
    for m in re.finditer(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", tail):
        totals["ok"] += int(m.group(1))
        totals["changed"] += int(m.group(2))
        totals["unreachable"] += int(m.group(3))
        totals["failed"] += int(m.group(4))
    return totals


def lab(*args):
    dt, res = timed([os.path.join(VENV_BIN, "python"), "lab/labctl.py", *args])
    if res.returncode != 0:
        raise SystemExit(f"bench: labctl {' '.join(args)} failed:\n{res.stdout[-3000:]}")
    return dt


def lab_size():
    path = os.path.join(REPO, "lab", "state", "fabric", "fabric.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return len(json.load(f)["nodes"])


def ensure_lab(n, fresh=False):
    """A lab of n nodes; fresh: reset it first (nothing installed or configured)."""
    if fresh or lab_size() != n:
        lab("down")
        return lab("up", "--nodes", str(n))
    return 0.0


def floor(repeats=3, extra_env=None):
    """Ansible's own floor: one no-op task per host, same forks and connection (and strategy)."""
    times = [playbook(os.path.join(HERE, "floor.yml"), extra_env=extra_env)[0] for _ in range(repeats)]
    return statistics.median(times)


def section_converge(sizes, rows):
    """site.yml first converge, second run (converged nodes skipped by their stamp, switches with no
    delta left out), --check --diff, a full run of every role (linerate_full_run=true) and the floor,
    per lab size."""
    for n in sizes:
        up = ensure_lab(n, fresh=True)
        first, r1 = playbook("playbooks/site.yml")
        second, r2 = playbook("playbooks/site.yml")
        # the drift preview of the same converged lab, and every role run anyway (the roles' own cost)
        check, r3 = playbook("playbooks/site.yml", "--check", "--diff")
        full, r4 = playbook("playbooks/site.yml", "-e", "linerate_full_run=true")
        fl = floor()
        row = {
            "section": "converge",
            "nodes": n,
            "lab_up_s": round(up, 1),
            "first_s": round(first, 1),
            "first_changed": r1["changed"],
            "second_s": round(second, 1),
            "second_changed": r2["changed"],
            "check_s": round(check, 1),
            "check_changed": r3["changed"],
            "full_run_s": round(full, 1),
            "full_run_changed": r4["changed"],
            "floor_s": round(fl, 1),
            "second_over_floor": round(second / fl, 2),
            "check_over_floor": round(check / fl, 2),
            "full_run_over_floor": round(full / fl, 2),
            "peak_rss_mib": max(r["peak_rss_mib"] for r in (r1, r2, r3, r4)),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)


def lab_fabric():
    import yaml

    with open(os.path.join(REPO, "inventory", "lab", "group_vars", "all", "fabric.yml")) as f:
        return yaml.safe_load(f)["fabric"]


def switch_window(fabric, *args):
    """One change window that really pushes: the intent's ECN threshold moves each time."""
    dt, r = playbook("playbooks/switches.yml", "-e", json.dumps({"fabric": fabric}), *args)
    return dt, r


def section_switches(sizes, rows):
    """A change window on K switches against one: serial (one at a time) and parallel."""
    ensure_lab(sizes[0])
    fabric = lab_fabric()
    switches = ["leaf1", "leaf2", "spine1"]
    results = {}
    for label, args in (
        ("1 switch", ["--limit", "localhost,leaf1"]),
        (f"{len(switches)} serial", ["-e", "switch_fabric_serial=1"]),
        (f"{len(switches)} parallel", ["-e", f"switch_fabric_serial={len(switches)}"]),
    ):
        fabric["roce"]["ecn"]["min_threshold_kb"] += 10  # a real delta on every switch
        dt, r = switch_window(fabric, *args)
        results[label] = dt
        rows.append({"section": "switch window", "window": label, "seconds": round(dt, 1), "changed": r["changed"]})
        print(json.dumps(rows[-1]), flush=True)
    one = results["1 switch"]
    for label in list(results)[1:]:
        rows.append({"section": "switch window", "window": f"{label} / 1 switch", "seconds": round(results[label] / one, 2), "changed": ""})
    # Put the lab's intent back.
    playbook("playbooks/switches.yml")


VERIFY_DURATIONS = (2, 10)  # a short test shows the per-round cost; 10 s is verify_fabric's default


def section_verify(sizes, rows):
    """The full ib_write_bw verification (the full plan: every pair, in rounds of disjoint pairs;
    checks ports and ib_write_bw) against its measuring floor, rounds x one test's duration, at a
    2 s test and at the default 10 s: the ib_write_bw phase (report meta.phases) and the whole
    verify.yml."""
    for n in sizes:
        ensure_lab(n)
        playbook("playbooks/site.yml", "--skip-tags", "verify")
        for duration in VERIFY_DURATIONS:
            dt, rv = playbook(
                "playbooks/verify.yml",
                "-e",
                f"verify_fabric_ib_write_bw_duration={duration}",
                "-e",
                "verify_fabric_ib_write_bw_plan=full",
                "-e",
                json.dumps({"verify_fabric_checks": ["ports", "ib_write_bw"]}),
            )
            with open(os.path.join(REPO, "inventory", "lab-output", "reports", "latest", "report.json")) as f:
                report = json.load(f)
            rounds = len(report["meta"]["rounds"])
            phase = next((p["seconds"] for p in report["meta"].get("phases") or [] if p["phase"] == "ib_write_bw"), None)
            floor_s = rounds * duration
            sched = (report["checks"].get("ib_write_bw") or {}).get("schedule") or {}
            rows.append(
                {
                    "section": "verify",
                    "nodes": n,
                    "duration_s": duration,
                    "rounds": rounds,
                    "pairs": sum(len(r) for r in report["meta"]["rounds"]),
                    "floor_s": floor_s,
                    "phase_s": phase,
                    "phase_over_floor": round(phase / floor_s, 2) if phase else None,
                    "wall_s": round(dt, 1),
                    "wall_over_floor": round(dt / floor_s, 2),
                    # the machine's own floor: the CPU the run needed, spread over every core
                    "controller_cpu_s": rv["controller_cpu_s"],
                    "lab_cpu_s": rv["lab_cpu_s"],
                    "cpu_floor_s": round((rv["controller_cpu_s"] + (rv["lab_cpu_s"] or 0)) / os.cpu_count(), 1),
                    "slowest_round_s": max((r["seconds"] for r in sched.get("rounds") or []), default=None),
                    "client_retries": sched.get("client_retries"),
                    "passed": report["summary"]["passed"],
                    "peak_rss_mib": rv["peak_rss_mib"],
                }
            )
            print(json.dumps(rows[-1]), flush=True)


def section_sampled(sizes, rows):
    """The sampled ib_write_bw plan with one injected bad link (the last node's second rail trained at a
    quarter of its speed): the rounds it ran, whether ib_write_bw named that port, and the wall time."""
    duration = 2
    for n in sizes:
        ensure_lab(n)
        playbook("playbooks/site.yml", "--skip-tags", "verify")
        node, device = f"node{n}", "mlx5_1"
        lab("fault", "speed", node, device, "100")
        try:
            dt, res = timed(
                [
                    os.path.join(VENV_BIN, "ansible-playbook"),
                    "-i",
                    "inventory/lab",
                    "playbooks/verify.yml",
                    "-e",
                    f"verify_fabric_ib_write_bw_duration={duration}",
                    "-e",
                    "verify_fabric_ib_write_bw_plan=sampled",
                ]
            )
        finally:
            lab("fault", "speed", node, device, "400")
        with open(os.path.join(REPO, "inventory", "lab-output", "reports", "latest", "report.json")) as f:
            report = json.load(f)
        # every round that ran, the re-test rounds against known-good peers included
        tests = (report["checks"].get("ib_write_bw") or {}).get("tests") or []
        rounds = len({t[0] for t in tests})
        named = sorted({f"{f['node']} {f['device']}" for f in report["findings"] if f.get("check") == "ib_write_bw" and f.get("node") and f.get("device")})
        rows.append(
            {
                "section": "sampled",
                "nodes": n,
                "plan": report["meta"].get("plan"),
                "rounds": rounds,
                "first_phase_rounds": len(report["meta"]["rounds"]),
                "tests": len(tests),
                "injected": f"{node} {device}",
                "named_by_ib_write_bw": ", ".join(named) or "-",
                "found": f"{node} {device}" in named,
                "verify_rc": res.returncode,
                "wall_s": round(dt, 1),
                "floor_s": rounds * duration,
                "wall_over_floor": round(dt / (rounds * duration), 1),
                "peak_rss_mib": res.peak_rss_mib,
            }
        )
        print(json.dumps(rows[-1]), flush=True)


# Ansible's own defaults, against which ansible.cfg's tuning is measured.
UNTUNED = {
    "ANSIBLE_PIPELINING": "False",
    "ANSIBLE_SSH_ARGS": "-o ControlMaster=no",
    "ANSIBLE_GATHERING": "implicit",
    "ANSIBLE_CACHE_PLUGIN": "memory",
    "ANSIBLE_FORKS": "5",
}


def section_tuning(sizes, rows):
    """The second (changed=0) run of site.yml with Ansible's defaults and with ansible.cfg's
    tuning (pipelining, ControlPersist, fact cache, forks), per lab size."""
    for n in sizes:
        ensure_lab(n)
        playbook("playbooks/site.yml")  # converged
        before, r1 = playbook("playbooks/site.yml", extra_env=UNTUNED)
        after, r2 = playbook("playbooks/site.yml")
        rows.append(
            {
                "section": "tuning",
                "nodes": n,
                "ansible_defaults_s": round(before, 1),
                "tuned_s": round(after, 1),
                "speedup": round(before / after, 2),
                "changed": r1["changed"] + r2["changed"],
            }
        )
        print(json.dumps(rows[-1]), flush=True)


def section_report(sizes, rows):
    """The report (diagnosis, JSON, Markdown, JUnit, SVG heat map) of a synthetic fleet, no lab:
    64 and 256 nodes x 8 rails, full and sampled plans (bench/report_scale.py, one process each,
    so the peak memory is that run's own)."""
    for n, plan in ((64, "full"), (256, "sampled"), (256, "full")):
        _dt, res = timed([os.path.join(VENV_BIN, "python"), os.path.join(HERE, "report_scale.py"), "--nodes", str(n), "--rails", "8", "--plan", plan])
        if res.returncode != 0:
            raise SystemExit(f"bench: report_scale.py failed:\n{res.stdout[-3000:]}")
        row = json.loads(res.stdout.strip().splitlines()[-1])
        row["named"] = ", ".join(row["named"])
        rows.append(row)
        print(json.dumps(row), flush=True)


def section_check(sizes, rows):
    """`site.yml --check --diff` on a converged lab (the drift preview) against the floor."""
    for n in sizes:
        ensure_lab(n)
        playbook("playbooks/site.yml")  # converged
        dt, r = playbook("playbooks/site.yml", "--check", "--diff")
        fl = floor()
        rows.append(
            {
                "section": "check",
                "nodes": n,
                "check_diff_s": round(dt, 1),
                "changed": r["changed"],
                "floor_s": round(fl, 1),
                "check_over_floor": round(dt / fl, 2),
                "peak_rss_mib": r["peak_rss_mib"],
            }
        )
        print(json.dumps(rows[-1]), flush=True)


def mitogen_env():
    """ANSIBLE_STRATEGY=mitogen_linear from the venv's mitogen (requirements-dev.txt), or None."""
    res = subprocess.run(
        [os.path.join(VENV_BIN, "python"), "-c", "import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        return None
    return {"ANSIBLE_STRATEGY_PLUGINS": os.path.join(res.stdout.strip(), "plugins", "strategy"), "ANSIBLE_STRATEGY": "mitogen_linear"}


def section_mitogen(sizes, rows):
    """The second (changed=0) run and the floor with mitogen's strategy against plain Ansible
    (same ansible.cfg otherwise): measured, not adopted (docs/benchmarks.md)."""
    extra = mitogen_env()
    if extra is None:
        raise SystemExit("bench: mitogen is not installed in .venv (make venv installs requirements-dev.txt)")
    for n in sizes:
        ensure_lab(n)
        playbook("playbooks/site.yml")  # converged
        plain, r1 = playbook("playbooks/site.yml")
        fast, r2 = playbook("playbooks/site.yml", extra_env=extra)
        fl = floor()
        fl_m = floor(extra_env=extra)
        rows.append(
            {
                "section": "mitogen",
                "nodes": n,
                "plain_s": round(plain, 1),
                "mitogen_s": round(fast, 1),
                "speedup": round(plain / fast, 2),
                "changed": r1["changed"] + r2["changed"],
                "floor_s": round(fl, 1),
                "mitogen_floor_s": round(fl_m, 1),
                "plain_over_floor": round(plain / fl, 2),
                "mitogen_over_floor": round(fast / fl, 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)


SECTIONS = {
    "converge": section_converge,
    "tuning": section_tuning,
    "switches": section_switches,
    "verify": section_verify,
    "report": section_report,
    "check": section_check,
    "mitogen": section_mitogen,
    "sampled": section_sampled,
}


def print_table(rows):
    by = {}
    for r in rows:
        by.setdefault(r["section"], []).append(r)
    for section, items in by.items():
        cols = [k for k in items[0] if k != "section"]
        print(f"\n## {section}\n")
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in items:
            print("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--only", choices=sorted(SECTIONS), action="append")
    args = ap.parse_args()
    rows = []
    started = datetime.datetime.now(datetime.timezone.utc)
    for name in args.only or list(SECTIONS):
        SECTIONS[name](args.sizes, rows)
    print_table(rows)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", started.strftime("%Y%m%dT%H%M%SZ") + ".json")
    with open(out, "w") as f:
        json.dump({"started": started.isoformat(), "argv": sys.argv, "rows": rows}, f, indent=1)
    print(f"\nbench: results in {os.path.relpath(out, REPO)}")


if __name__ == "__main__":
    main()
