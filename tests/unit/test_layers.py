"""module_utils is a house of floors (docs/architecture.md "module_utils: the map"): every import
points down. Read from the source (ast), so a lazy import inside a function counts too.

    probes/    run a check's tools on a node    <- + parsers, switch, intent, host, checks
    report/    write the verification report   <- + parsers, switch, intent, host, checks
    checks/    findings from facts/measurements <- + parsers, switch, intent, host
    host/      read, plan, apply on a node      <- + parsers, switch, intent
    intent/    validation and derive            <- + parsers, switch
    switch/    switch drivers and their tables  <- + parsers
    parsers/   text in, data out                <- may import the helpers only
    common helpers (common, runner, findings)   <- imported by everything, import nothing of ours

A check judges what the host code reads and runs (readiness facts, the launchers' command lines);
the host code never imports a check, the intent neither. A probe (the node side of a check: the
tools it runs) and the report writers both stand on the checks; neither imports the other, and a
check imports neither.
"""

import ast
import pathlib

import pytest

MODULE_UTILS = pathlib.Path(__file__).resolve().parents[2] / "plugins" / "module_utils"
PREFIX = "ansible_collections.linerate.fabric.plugins.module_utils"
HELPERS = "helpers"
ALLOWED = {
    HELPERS: {HELPERS},
    "parsers": {HELPERS, "parsers"},
    "switch": {HELPERS, "parsers", "switch"},
    "intent": {HELPERS, "parsers", "switch", "intent"},
    "host": {HELPERS, "parsers", "switch", "intent", "host"},
    "checks": {HELPERS, "parsers", "switch", "intent", "host", "checks"},
    "probes": {HELPERS, "parsers", "switch", "intent", "host", "checks", "probes"},
    "report": {HELPERS, "parsers", "switch", "intent", "host", "checks", "report"},
}


def floor(parts):
    """The floor of a module named by its parts under module_utils (('parsers', 'lldp') -> parsers)."""
    return parts[0] if parts[0] in ALLOWED else HELPERS


def imported(tree):
    """The module_utils modules a source imports, as parts under module_utils."""
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            base = node.module[len(PREFIX) :].lstrip(".").split(".") if node.module != PREFIX else []
            names = [base + [a.name] if len(base) <= 1 else base for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name[len(PREFIX) :].lstrip(".").split(".") for a in node.names if a.name.startswith(PREFIX + ".")]
        for parts in names:
            if parts and parts != [""]:
                yield node.lineno, parts


def sources():
    return sorted(p for p in MODULE_UTILS.rglob("*.py") if "__pycache__" not in p.parts)


def upward_imports(path, text=None):
    rel = path.relative_to(MODULE_UTILS).with_suffix("").parts
    mine = floor(rel)
    tree = ast.parse(text if text is not None else path.read_text(encoding="utf-8"))
    return [
        f"{'/'.join(rel)}.py:{line} ({mine}) imports {'.'.join(parts)} ({floor(parts)})" for line, parts in imported(tree) if floor(parts) not in ALLOWED[mine]
    ]


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(MODULE_UTILS)))
def test_every_import_points_down(path):
    assert not upward_imports(path)


def test_the_packages_are_the_floors():
    packages = {p.name for p in MODULE_UTILS.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(ALLOWED) - {HELPERS}
    assert {p.stem for p in MODULE_UTILS.glob("*.py")} - {"__init__"} == {"common", "runner", "findings"}


@pytest.mark.parametrize(
    "where, source, floor_",
    [
        ("parsers/lldp.py", f"from {PREFIX}.checks import cabling\n", "checks"),
        ("parsers/lldp.py", f"from {PREFIX}.host.dpkg import hold\n", "host"),
        ("intent/fabric.py", f"def f():\n    from {PREFIX}.checks.plans import full_plan\n", "checks"),
        ("host/rdma.py", f"from {PREFIX}.probes.ports import check_ports\n", "probes"),
        ("intent/rails.py", f"import {PREFIX}.host.roce\n", "host"),
        ("switch/base.py", f"from {PREFIX} import intent\n", "intent"),
        ("common.py", f"from {PREFIX}.parsers import lldp\n", "parsers"),
        ("host/drain.py", f"from {PREFIX}.report.report import build_report\n", "report"),
        ("checks/rdma.py", f"from {PREFIX}.report.rdma import worst_links\n", "report"),
        ("checks/ports.py", f"def f():\n    from {PREFIX}.probes.ports import check_ports\n", "probes"),
        ("probes/ports.py", f"from {PREFIX}.report import report\n", "report"),
        ("report/history.py", f"from {PREFIX}.probes import perftest\n", "probes"),
        ("switch/drivers.py", f"from {PREFIX}.intent import fabric\n", "intent"),
    ],
)
def test_an_upward_import_fails(where, source, floor_):
    found = upward_imports(MODULE_UTILS / where, source)
    assert len(found) == 1 and found[0].endswith(f"({floor_})"), found


def test_a_downward_import_passes():
    assert upward_imports(MODULE_UTILS / "checks" / "links.py", f"from {PREFIX}.parsers.counters import x\nfrom {PREFIX} import common\n") == []
