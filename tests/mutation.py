"""`make mutation`: mutmut over the validation and the switch drivers, each
group with the unit tests that cover it; prints the figures and fails below
the threshold. Slow (minutes per group), so it is not part of `make test`.

Usage: python tests/mutation.py [--min 90] [group ...]   (groups: intent, switch, counters)
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".venv", "bin", "python")
MUTMUT = os.path.join(ROOT, ".venv", "bin", "mutmut")
PYTEST = f"{PY} -m pytest -x -q -p no:cacheprovider"

GROUPS = {
    "intent": {
        "paths": ["plugins/module_utils/intent.py", "plugins/module_utils/intent_ib.py",
                  "plugins/action/validate_intent.py"],
        "tests": ["tests/unit/test_intent_strict.py", "tests/unit/test_intent.py", "tests/unit/test_intent_ib.py",
                  "tests/unit/test_rail_ports.py", "tests/unit/test_validate_action.py"],
    },
    "switch": {
        "paths": ["plugins/module_utils/switch/"],
        "tests": ["tests/unit/test_switch_nvue.py", "tests/unit/test_switch_sonic.py", "tests/unit/test_switch_eos.py",
                  "tests/unit/test_switch_modules.py", "tests/unit/test_switch_ports.py",
                  "tests/unit/test_switch_counters_sim.py"],
    },
    "counters": {
        "paths": ["plugins/module_utils/counters.py", "plugins/module_utils/linkhealth.py",
                  "plugins/module_utils/switch_counters.py"],
        "tests": ["tests/unit/test_parsers_counters.py", "tests/unit/test_parsers_counters_errors.py"],
    },
}
STATES = ("killed", "survived", "timeout", "suspicious", "untested", "skipped")


def ids(state):
    out = subprocess.run([MUTMUT, "result-ids", state], cwd=ROOT, capture_output=True, text=True).stdout
    return [int(x) for x in re.findall(r"\d+", out)]


def run_group(name):
    g = GROUPS[name]
    cache = os.path.join(ROOT, ".mutmut-cache")
    if os.path.exists(cache):
        os.remove(cache)
    # No plugin autoload: pytest starts in a third of the time, once per mutant.
    env = dict(os.environ, LINERATE_HYPOTHESIS_PROFILE="mutation", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    start = time.monotonic()
    subprocess.run([MUTMUT, "run", "--paths-to-mutate", ",".join(g["paths"]), "--tests-dir", "tests/unit",
                    "--runner", PYTEST + " " + " ".join(g["tests"]), "--no-progress"], cwd=ROOT, env=env)
    took = time.monotonic() - start
    counts = {s: len(ids(s)) for s in STATES}
    survivors = subprocess.run([MUTMUT, "results"], cwd=ROOT, capture_output=True, text=True).stdout
    os.replace(cache, os.path.join(ROOT, f".mutmut-cache-{name}"))
    return counts, took, survivors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=float, default=90.0)
    ap.add_argument("groups", nargs="*", default=list(GROUPS))
    a = ap.parse_args()
    ok = True
    for name in a.groups:
        counts, took, survivors = run_group(name)
        total = sum(counts.values())
        # A timeout is a mutant the tests caught (they did not pass).
        caught = counts["killed"] + counts["timeout"]
        score = 100.0 * caught / total if total else 0.0
        print(survivors)
        print(f"mutation {name}: {caught}/{total} mutants killed ({score:.1f} %), "
              + ", ".join(f"{s} {n}" for s, n in counts.items() if n) + f"; {took / 60:.1f} min")
        ok &= score >= a.min
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
