"""`make mutation`: mutation testing of the intent validation, the switch drivers
and change window, and the verification findings (counters, link health,
cabling), each group against the unit tests that cover it.

The mutants are mutmut's (its parso-based mutation engine: numbers, strings,
comparison and boolean operators, keywords, assignments, return values ...).
mutmut's own runner starts one pytest process per mutant and, in 2.5.1,
crashes on its cache when mutants are tested slower than it expects (a race
between its worker and its line-number bookkeeping: "Attribute Mutant.line is
required"). So this driver runs them itself: the parent imports pytest and
the collection once; for each mutant it forks, the child executes the mutated
source into the already-imported module(s) of that file (every name the tests
reach through the module is the mutant's), runs pytest in-process with -x
and exits with pytest's status. No file on disk is changed.

A table built at import from a mutated file's helpers (the variable rules
that intent/rules_*.py build with varcheck's integer(), listing() ...) holds
the original closures: a file's entry may name modules to rebuild
(importlib.reload, in order) after its mutant is installed, so those tables
are made from the mutant.

A mutant is killed when the tests fail (or it does not compile), survives
when they pass, and counts as killed on a timeout (the tests did not pass).
Prints every survivor as a diff and the figure per group; exits 1 below
--min (percent killed). Not part of `make test`: minutes per group.

With --sample N only N mutants of the group, drawn at random (--seed), are
tested: the figure is then an estimate, printed with its 95 % Wilson interval,
and --min applies to the estimate.

Usage: python tests/mutation.py [--min 90] [--timeout 60] [--only SUBSTR] [--sample N [--seed S]] [group ...]
"""

import argparse
import difflib
import importlib
import math
import os
import random
import signal
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "ansible_collections.linerate.fabric"

# Per file: the module names it is imported under, the unit tests that exercise
# it (fastest-failing first; each mutant runs only its file's tests), and
# optionally the modules to rebuild from the mutant (tables built at import).
SWITCH_TESTS = [
    "tests/unit/switch/test_window.py",
    "tests/unit/switch/test_nvue.py",
    "tests/unit/switch/test_sonic.py",
    "tests/unit/switch/test_eos.py",
    "tests/unit/switch/test_module_common.py",
    "tests/unit/test_switch_ports.py",
    "tests/unit/test_switch_faults.py",
    "tests/unit/switch/test_network_os.py",
    "tests/unit/test_switch_counters_sim.py",
    "tests/unit/test_switch_lldp_module.py",
    "tests/unit/test_switch_lldp_sim.py",
]
# The variable rules are tables built at import from varcheck's helpers and the intent's constants:
# a mutant of those files is rebuilt into them (every module after it in this order).
RULE_TABLES = ("fabric", "cabling", "infiniband", "varcheck", "knobs", "rules_hosts", "rules_fabric", "variables")


def _rebuilt(name):
    """The rule-table modules built from ``name`` (intent/<name>.py): those after it in RULE_TABLES."""
    after = RULE_TABLES[RULE_TABLES.index(name) + 1 :] if name in RULE_TABLES else ()
    return tuple(f"{PKG}.plugins.module_utils.intent.{m}" for m in after if m in ("rules_hosts", "rules_fabric", "variables"))


GROUPS = {
    "intent": {
        # the fabric intent: its defaults and derive, the words of a problem, the schema, the cabling
        **{
            f"plugins/module_utils/intent/{name}.py": (
                [f"{PKG}.plugins.module_utils.intent.{name}"],
                [
                    "tests/unit/intent/test_problems.py",
                    "tests/unit/intent/test_cabling.py",
                    "tests/unit/intent/test_schema.py",
                    "tests/unit/intent/test_fabric.py",
                    "tests/unit/test_validate_action.py",
                    "tests/unit/intent/test_rules_hosts.py",
                    "tests/unit/intent/test_rules_fabric.py",
                    "tests/unit/intent/test_variables.py",
                    "tests/unit/intent/test_knobs.py",
                ],
                _rebuilt(name),
            )
            for name in ("fabric", "problems", "schema", "cabling")
        },
        "plugins/module_utils/intent/infiniband.py": (
            [f"{PKG}.plugins.module_utils.intent.infiniband"],
            [
                "tests/unit/intent/test_infiniband.py",
                "tests/unit/intent/test_schema.py",
                "tests/unit/intent/test_fabric.py",
                "tests/unit/intent/test_rules_hosts.py",
                "tests/unit/intent/test_rules_fabric.py",
            ],
            _rebuilt("infiniband"),
        ),
        "plugins/action/validate_intent.py": (
            [f"{PKG}.plugins.action.validate_intent"],
            ["tests/unit/test_validate_action.py", "tests/unit/test_validate_once.py", "tests/unit/intent/test_knobs.py"],
        ),
        **{
            f"plugins/module_utils/intent/{name}.py": (
                [f"{PKG}.plugins.module_utils.intent.{name}"],
                [
                    "tests/unit/intent/test_rules_hosts.py",
                    "tests/unit/intent/test_rules_fabric.py",
                    "tests/unit/intent/test_varcheck.py",
                    "tests/unit/intent/test_fabric.py",
                    "tests/unit/intent/test_variables.py",
                    "tests/unit/intent/test_knobs.py",
                    "tests/unit/test_validate_action.py",
                ],
                _rebuilt(name),
            )
            for name in ("variables", "varcheck", "knobs", "rules_hosts", "rules_fabric")
        },
        "plugins/module_utils/intent/mpikey.py": (
            [f"{PKG}.plugins.module_utils.intent.mpikey"],
            [
                "tests/unit/intent/test_mpikey.py",
                "tests/unit/intent/test_rules_hosts.py",
                "tests/unit/intent/test_rules_fabric.py",
                "tests/unit/test_logic_edges.py",
            ],
        ),
    },
    "switch": {
        # the platform drivers, with the tests of what they read back per platform (QoS and error
        # counters, lossless headroom, the PFC watchdog and its storms) for the verification
        **{
            f"plugins/module_utils/switch/{name}.py": (
                [f"{PKG}.plugins.module_utils.switch.{name}"],
                [
                    "tests/unit/switch/test_drivers.py",
                    *SWITCH_TESTS,
                    "tests/unit/test_nvue_lossless.py",
                    "tests/unit/test_lossless_watchdog_storm.py",
                    "tests/unit/switch/test_buffers.py",
                    "tests/unit/test_verify_incast_switch.py",
                    "tests/unit/test_verify_link_health_switch.py",
                    "tests/unit/test_switch_parsers_unexpected.py",
                ],
            )
            for name in ("base", "drivers", "eos", "module_common", "nvue", "sonic")
        },
        # SONiC's CONFIG_DB delta: the managed fields and the commands a difference becomes
        "plugins/module_utils/switch/sonic_delta.py": (
            [f"{PKG}.plugins.module_utils.switch.sonic_delta"],
            [
                "tests/unit/switch/test_sonic_delta.py",
                "tests/unit/switch/test_sonic.py",
                "tests/unit/switch/test_drivers.py",
                "tests/unit/switch/test_buffers.py",
                "tests/unit/test_lossless_watchdog_storm.py",
            ],
        ),
        # what SONiC's show commands print and the lossless headroom read (the driver's oper reads)
        "plugins/module_utils/switch/sonic_show.py": (
            [f"{PKG}.plugins.module_utils.switch.sonic_show"],
            [
                "tests/unit/switch/test_sonic_show.py",
                "tests/unit/switch/test_sonic.py",
                "tests/unit/test_switch_parsers_unexpected.py",
                "tests/unit/switch/test_buffers.py",
                "tests/unit/test_lossless_watchdog_storm.py",
                "tests/unit/test_parsers_real.py",
                "tests/unit/switch/test_drivers.py",
            ],
        ),
        # what NVUE's show commands print (the driver's oper reads), with the NVUE read-back tests
        "plugins/module_utils/switch/nvue_show.py": (
            [f"{PKG}.plugins.module_utils.switch.nvue_show"],
            [
                "tests/unit/switch/test_nvue_show.py",
                "tests/unit/switch/test_drivers.py",
                "tests/unit/switch/test_nvue_tables.py",
                "tests/unit/test_nvue_lossless.py",
                "tests/unit/switch/test_nvue.py",
                "tests/unit/test_switch_parsers_unexpected.py",
                "tests/unit/test_parsers_real.py",
            ],
        ),
        # lossless headroom: the SKU's rows, the buffer model, the SKU check (the SONiC driver and the
        # template filter call it through the module object)
        "plugins/module_utils/switch/buffers.py": (
            [f"{PKG}.plugins.module_utils.switch.buffers"],
            [
                "tests/unit/switch/test_buffers.py",
                "tests/unit/test_switch_buffers.py",
                "tests/unit/intent/test_cabling.py",
                "tests/unit/switch/test_sonic.py",
                "tests/unit/test_lossless_watchdog_storm.py",
            ],
        ),
        # The change window (its lock, signals, rollback and recovery verdicts) and the backups it
        # writes and a rollback or restore chooses: their own tests first.
        "plugins/module_utils/switch/window.py": (
            [f"{PKG}.plugins.module_utils.switch.window"],
            [
                "tests/unit/switch/test_window.py",
                "tests/unit/switch/test_window_lock.py",
                "tests/unit/switch/test_drivers.py",
                *SWITCH_TESTS[1:],
                "tests/unit/switch/test_backups.py",
            ],
        ),
        "plugins/module_utils/switch/window_lock.py": (
            [f"{PKG}.plugins.module_utils.switch.window_lock"],
            [
                "tests/unit/switch/test_window_lock.py",
                "tests/unit/switch/test_window.py",
                "tests/unit/switch/test_journal.py",
                "tests/unit/switch/test_module_common.py",
            ],
        ),
        "plugins/module_utils/switch/window_checks.py": (
            [f"{PKG}.plugins.module_utils.switch.window_checks"],
            [
                "tests/unit/switch/test_window_checks.py",
                "tests/unit/switch/test_window.py",
                "tests/unit/switch/test_module_common.py",
                "tests/unit/test_lossless_watchdog_storm.py",
            ],
        ),
        "plugins/module_utils/switch/window_signals.py": (
            [f"{PKG}.plugins.module_utils.switch.window_signals"],
            ["tests/unit/switch/test_window_signals.py", "tests/unit/switch/test_backups.py"],
        ),
        "plugins/module_utils/switch/backups.py": (
            [f"{PKG}.plugins.module_utils.switch.backups"],
            ["tests/unit/switch/test_window.py", "tests/unit/switch/test_backups.py"],
        ),
    },
    # Verification's counters: the host and switch counter parsers (per platform) and the
    # incast phase's checks that turn them into findings (PFC, ECN, CNPs, loss, lossless state).
    "counters": {
        **{
            f"plugins/module_utils/{name.replace('.', '/')}.py": (
                [f"{PKG}.plugins.module_utils.{name}"],
                [
                    "tests/unit/parsers/test_counters.py",
                    "tests/unit/switch/test_counters.py",
                    "tests/unit/test_parsers_counters_errors.py",
                    "tests/unit/test_parsers_real.py",
                    "tests/unit/test_parsers_classes.py",
                    "tests/unit/test_verify_link_health_switch.py",
                    "tests/unit/test_switch_counters_sim.py",
                    "tests/unit/test_switch_parsers_unexpected.py",
                ],
            )
            for name in ("parsers.counters", "switch.counters")
        },
        "plugins/module_utils/checks/incast.py": (
            [f"{PKG}.plugins.module_utils.checks.incast"],
            [
                "tests/unit/test_verify_incast_exact.py",
                "tests/unit/checks/test_incast.py",
                "tests/unit/test_verify_incast_hw.py",
                "tests/unit/test_verify_incast_rotation.py",
            ],
        ),
        # the switches' side: their congestion counters and lossless state over the benchmarks
        "plugins/module_utils/checks/incast_switch.py": (
            [f"{PKG}.plugins.module_utils.checks.incast_switch"],
            [
                "tests/unit/checks/test_incast_switch.py",
                "tests/unit/test_verify_incast_switch.py",
                "tests/unit/test_lossless_watchdog_storm.py",
                "tests/unit/test_nvue_lossless.py",
            ],
        ),
    },
    # Link health: the perfquery / mlxlink / ibqueryerrors parsers and the check that judges
    # error counters, BER and optics, host and switch side.
    "links": {
        f"plugins/module_utils/{name.replace('.', '/')}.py": (
            [f"{PKG}.plugins.module_utils.{name}"],
            [
                "tests/unit/test_verify_link_health_exact.py",
                "tests/unit/checks/test_links.py",
                "tests/unit/checks/test_links_switch.py",
                "tests/unit/checks/test_link_limits.py",
                "tests/unit/test_verify_link_health_switch.py",
                "tests/unit/test_verify_optics_switch.py",
                "tests/unit/test_verify_ber_switch.py",
                "tests/unit/test_verify_link_health_optics.py",
                "tests/unit/test_verify_link_health_ethtool_m.py",
                "tests/unit/test_ib_port_errors.py",
                "tests/unit/parsers/test_linkhealth.py",
                "tests/unit/test_parsers_counters_errors.py",
                "tests/unit/test_parsers_real.py",
                "tests/unit/test_lossless_watchdog_storm.py",
            ],
        )
        # the host side, the switches' side and the limits and optical-module judge both share
        for name in ("parsers.linkhealth", "checks.links", "checks.links_switch", "checks.link_limits")
    },
    # RoCE cabling by LLDP: the parsers and the comparison (its findings and their severity).
    "cabling": {
        f"plugins/module_utils/{name.replace('.', '/')}.py": (
            [f"{PKG}.plugins.module_utils.{name}"],
            [
                "tests/unit/checks/test_cabling.py",
                "tests/unit/test_switch_lldp_sim.py",
                "tests/unit/test_parsers_classes.py",
                "tests/unit/test_switch_parsers_unexpected.py",
                "tests/unit/parsers/test_lldp.py",
                # the other checks locate endpoints and walk a
                # switch's cabled ports through checks/cabling.py
                "tests/unit/test_verify_incast_exact.py",
                "tests/unit/test_verify_link_health_exact.py",
            ],
        )
        for name in ("parsers.lldp", "checks.cabling")
    },
}


def setup_paths():
    """The sys.path the unit tests' conftests build, so modules import once here."""
    for p in (os.path.join(ROOT, "lab", "sim"), os.path.join(ROOT, "lab", "ibsim"), os.path.join(ROOT, ".collections")):
        if p not in sys.path:
            sys.path.insert(0, p)
    os.environ.setdefault("LINERATE_HYPOTHESIS_PROFILE", "mutation")


def mutants(path):
    """(mutation id, mutated source) for every mutant mutmut makes of ``path``."""
    from mutmut import ALL, Context, list_mutations, mutate

    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        source = f.read()
    for mid in list_mutations(Context(source=source, mutation_id=ALL, filename=path)):
        mutated, count = mutate(Context(source=source, mutation_id=mid, filename=path))
        if count:
            yield mid, source, mutated


def _graft_function(old, new):
    """Give ``old`` the mutant's code, keeping the function object (and so every reference to it)."""
    if len(old.__code__.co_freevars) != len(new.__code__.co_freevars):
        return False
    old.__code__, old.__defaults__, old.__kwdefaults__ = new.__code__, new.__defaults__, new.__kwdefaults__
    return True


def _graft_class(old, new):
    """Give the class ``old`` the mutant's methods and attributes, in place: subclasses (a
    platform driver of base.SwitchDriver), other modules' imports and registries keep the old
    class object, so a mutant rebound only in its own module would never run."""
    for attr, value in new.__dict__.items():
        if attr in ("__dict__", "__weakref__", "__module__", "__qualname__", "__doc__"):
            continue
        current = old.__dict__.get(attr)
        if isinstance(current, types.FunctionType) and isinstance(value, types.FunctionType) and _graft_function(current, value):
            continue
        setattr(old, attr, value)


_SHARED_SCALARS = (int, float, complex, str, bytes, bool, tuple, frozenset, type(None))


def _rebind_elsewhere(name, old_value, new_value, skip):
    """Other loaded modules that imported ``old_value`` (``from .x import CONST``) see the mutant's.
    A scalar (an int or a string may be the same object as an unrelated one) only under its own name."""
    scalar = isinstance(old_value, _SHARED_SCALARS)
    for mod in list(sys.modules.values()):
        namespace = getattr(mod, "__dict__", None)
        if mod is skip or not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if value is old_value and (key == name or not scalar):
                namespace[key] = new_value


def install_mutant(module, code):
    """Execute the mutant into ``module`` and carry every changed function, class and constant
    to the objects the rest of the process already holds."""
    before = dict(module.__dict__)
    exec(code, module.__dict__)  # noqa: S102 - the point of mutation testing
    for key, new in list(module.__dict__.items()):
        old = before.get(key)
        if old is None or old is new or getattr(new, "__module__", module.__name__) != module.__name__:
            continue
        if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType) and old.__closure__ is None and _graft_function(old, new):
            module.__dict__[key] = old  # a closure (a rule built by a factory) keeps its new cells: rebound below
        elif isinstance(old, type) and isinstance(new, type):
            _graft_class(old, new)
            module.__dict__[key] = old
        elif not isinstance(old, types.ModuleType):
            _rebind_elsewhere(key, old, new, module)


def run_child(path, modules, mutated, tests, rebuild=()):
    """In the forked child: the mutant in place of the module(s), the modules built from it
    rebuilt, then pytest."""
    import pytest

    try:
        code = compile(mutated, os.path.join(ROOT, path), "exec")
        for name in modules:
            install_mutant(sys.modules[name], code)
        for name in rebuild:
            importlib.reload(sys.modules[name])
    except Exception:  # a mutant that does not compile or import is killed
        os._exit(3)
    # Test modules bound names at import (from ... import ActionModule): import them again.
    unit = os.path.join(ROOT, "tests", "unit", "test_")
    for name, mod in list(sys.modules.items()):
        if (getattr(mod, "__file__", None) or "").startswith(unit):
            del sys.modules[name]
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    rc = pytest.main(["-x", "-q", "-p", "no:cacheprovider", *tests])
    os._exit(int(rc))


def test_mutant(path, modules, mutated, tests, timeout, rebuild=()):
    pid = os.fork()
    if pid == 0:
        try:
            run_child(path, modules, mutated, tests, rebuild)
        finally:
            os._exit(4)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.02)


def wilson(caught, total, z=1.96):
    """The 95 % Wilson score interval (percent) of a killed fraction measured on a sample."""
    if not total:
        return 0.0, 0.0
    p = caught / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return 100.0 * (centre - half), 100.0 * (centre + half)


def planned(files, only=None, sample=None, seed=0):
    """[(path, modules, tests, rebuild, mid, source, mutated)]: every mutant of the group, or ``sample``
    of them at random."""
    plan = []
    for path, (modules, tests, *rest) in files.items():
        if only and only not in path:
            continue
        rebuild = rest[0] if rest else ()
        plan += [(path, modules, tests, rebuild, mid, source, mutated) for mid, source, mutated in mutants(path)]
    if sample and sample < len(plan):
        plan = random.Random(seed).sample(plan, sample)
    return plan


def run_group(name, timeout, only=None, sample=None, seed=0):
    files = GROUPS[name]
    os.chdir(ROOT)
    import pytest

    # The baseline: the tests pass on the real code (and warm every import).
    every = sorted({t for spec in files.values() for t in spec[1]})
    if pytest.main(["-q", "-p", "no:cacheprovider", *every]) != 0:
        raise SystemExit(f"mutation {name}: the unit tests fail without mutants")
    counts = {"killed": 0, "survived": 0, "timeout": 0}
    survivors = []
    start = time.monotonic()
    for path, modules, tests, rebuild, mid, source, mutated in planned(files, only, sample, seed):
        for m in (*modules, *rebuild):
            importlib.import_module(m)
        result = test_mutant(path, modules, mutated, [os.path.join(ROOT, t) for t in tests], timeout, rebuild)
        counts[result] += 1
        if result == "survived":
            diff = "".join(
                ln
                for ln in difflib.unified_diff(source.splitlines(True), mutated.splitlines(True), path, path, n=0)
                if ln[0] in "-+" and ln[:3] not in ("---", "+++")
            )
            survivors.append(f"{path}:{mid.line_number + 1}\n{diff}")
        print(f"\r{name}: {sum(counts.values())} mutants, {counts['survived']} survived", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return counts, time.monotonic() - start, survivors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=float, default=90.0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant")
    ap.add_argument("--only", help="mutate only files whose path contains this")
    ap.add_argument("--sample", type=int, help="test only this many mutants of each group, drawn at random")
    ap.add_argument("--seed", type=int, default=0, help="the draw of --sample")
    ap.add_argument("groups", nargs="*", default=list(GROUPS))
    a = ap.parse_args()
    setup_paths()
    ok = True
    for name in a.groups:
        counts, took, survivors = run_group(name, a.timeout, a.only, a.sample, a.seed)
        total = sum(counts.values())
        caught = counts["killed"] + counts["timeout"]
        score = 100.0 * caught / total if total else 0.0
        print("\n".join(survivors))
        sampled = f" (a random sample, seed {a.seed}; 95 % interval {wilson(caught, total)[0]:.1f}-{wilson(caught, total)[1]:.1f} %)" if a.sample else ""
        print(
            f"mutation {name}: {caught}/{total} mutants killed ({score:.1f} %){sampled}: killed {counts['killed']}, "
            f"timeout {counts['timeout']}, survived {counts['survived']}; {took / 60:.1f} min",
            flush=True,
        )
        ok &= score >= a.min
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
