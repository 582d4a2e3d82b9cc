"""House rules of the code base (issue 39), held by a test so they stay true.

(a) Tests mirror the tree: every module ``plugins/module_utils/<package>/<module>.py`` has its test file
    ``tests/unit/<package>/test_<module>.py``. A module not mirrored yet is listed in ``NOT_MIRRORED``
    with the reason and where it is tested today: a ratchet. A module added without a test file fails,
    and so does an entry that is no longer needed (its test file exists, or the module is gone).
(b) A check is registered in one place: ``checks/registry.py``'s ``CHECKS`` (one name, one report
    function each); a fault code is defined once, in ``findings.py``'s ``FAULT_CODES``.
"""

import ast
import collections
import pathlib
import re

from ansible_collections.linerate.fabric.plugins.module_utils import findings
from ansible_collections.linerate.fabric.plugins.module_utils.checks import registry

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULE_UTILS = ROOT / "plugins" / "module_utils"
UNIT = ROOT / "tests" / "unit"

# Every package of module_utils is mirrored: each of its modules has its test file. A module that must wait
# (moved by someone else's open change, say) is listed in NOT_MIRRORED with the reason and the test file
# that tests it today; the list was emptied by issue 39 and may only shrink back to empty.
MIRRORED = tuple(sorted(p.name for p in MODULE_UTILS.iterdir() if (p / "__init__.py").is_file()))

NOT_MIRRORED: dict[str, str] = {}


def _modules():
    """'<package>/<module>' of every module of a package of module_utils (its __init__ aside)."""
    return sorted(f"{p.parent.name}/{p.stem}" for p in MODULE_UTILS.glob("*/*.py") if p.stem != "__init__")


def _test_file(module):
    package, name = module.split("/")
    return UNIT / package / f"test_{name}.py"


def test_every_module_has_its_test_file_or_a_reason():
    missing = [m for m in _modules() if m not in NOT_MIRRORED and not _test_file(m).is_file()]
    assert missing == [], f"modules without tests/unit/<package>/test_<module>.py (add it; NOT_MIRRORED only for what waits, with the reason): {missing}"


def test_the_allowlist_only_shrinks():
    modules = set(_modules())
    stale = sorted(m for m in NOT_MIRRORED if m not in modules or _test_file(m).is_file())
    assert stale == [], f"NOT_MIRRORED entries whose module is gone or has its test file now (drop them): {stale}"
    assert all(reason.strip() for reason in NOT_MIRRORED.values())


def test_a_reason_names_test_files_that_exist():
    # "where it is tested today" stays true: every test file a reason names is there, and a module waits
    # only with a place it is tested
    named = {m: re.findall(r"\btest_\w+\.py\b", r) for m, r in NOT_MIRRORED.items()}
    tests = {p.name for p in UNIT.rglob("test_*.py")}
    assert {m: [f for f in files if f not in tests] for m, files in named.items() if set(files) - tests} == {}
    assert [m for m in NOT_MIRRORED if not named[m]] == []


def test_every_package_is_mirrored():
    # a new package is mirrored from its first module: MIRRORED is read from the tree, not a list to forget
    assert {"checks", "host", "intent", "parsers", "probes", "report", "switch"} <= set(MIRRORED)


def test_every_test_file_of_a_package_names_a_module_of_it():
    strays = [
        str(p.relative_to(ROOT))
        for package in MIRRORED
        for p in (UNIT / package).glob("test_*.py")
        if not (MODULE_UTILS / package / (p.stem[len("test_") :] + ".py")).is_file()
    ]
    assert strays == [], f"test files that mirror no module (tests/unit/<package>/test_<module>.py): {strays}"


def _duplicates(items):
    return sorted(k for k, n in collections.Counter(items).items() if n > 1)


def test_the_duplicate_finder_finds_duplicates():
    # the checks below would pass on anything if this did not work
    assert _duplicates(["ports", "nccl", "ports", "incast", "nccl"]) == ["nccl", "ports"]
    assert _duplicates(["ports"]) == []


def test_a_check_is_registered_once():
    names = [c.name for c in registry.CHECKS]
    assert _duplicates(names) == [], "a check name registered twice in CHECKS"
    reports = [id(c.report) for c in registry.CHECKS]
    assert _duplicates(reports) == [], "one report function registered for two checks"
    assert {n for p in registry.PHASES for n in p.checks} <= set(names), "a phase runs a check CHECKS does not know"


def _plugin_trees():
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _assigned_names(tree):
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if isinstance(target, ast.Name):
                yield target.id
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                yield target.value.id + "[]"


def test_checks_and_fault_codes_have_one_home():
    # a second CHECKS table, a Check(...) built elsewhere, FAULT_CODES defined or written outside findings.py
    registry_py = MODULE_UTILS / "checks" / "registry.py"
    findings_py = MODULE_UTILS / "findings.py"
    elsewhere = []
    for path, tree in _plugin_trees():
        names = set(_assigned_names(tree))
        if path != registry_py and (
            {"CHECKS", "PHASES"} & names
            or any(isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "Check" for n in ast.walk(tree))
        ):
            elsewhere.append(f"{path.relative_to(ROOT)}: registers a check")
        if path != findings_py and {"FAULT_CODES", "FAULT_CODES[]"} & names:
            elsewhere.append(f"{path.relative_to(ROOT)}: defines fault codes")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("update", "setdefault", "__setitem__")
                and getattr(node.func.value, "attr", getattr(node.func.value, "id", None)) == "FAULT_CODES"
            ):
                elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno}: changes FAULT_CODES")
    assert elsewhere == []


def test_a_fault_code_is_defined_once():
    # a dict literal keeps the last of two equal keys without a word: read the source, not the dict
    tree = ast.parse((MODULE_UTILS / "findings.py").read_text(encoding="utf-8"))
    (table,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "FAULT_CODES" for t in n.targets)]
    keys = [k.value for k in table.keys]
    assert _duplicates(keys) == [], "a fault code defined twice in FAULT_CODES"
    assert sorted(keys) == sorted(findings.FAULT_CODES)


# (c) Size: no product file over 600 lines, no function over 80 without its reason in a comment (issue 39
#     item 6). Product code is what ships or runs the lab: plugins/, lab/, bench/, scripts/ (tests aside).
#     A reason is a comment ``# long: <why>`` on the line of the ``def`` (or its decorators), the line
#     above them, or the first line of the body. LONG_FUNCTIONS is a ratchet like NOT_MIRRORED: what is
#     listed waits to be split; an entry that is no longer long (or gone) must be dropped.
PRODUCT = ("plugins", "lab", "bench", "scripts")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
LONG_REASON = re.compile(r"#\s*long:\s*\S")
LONG_FILES: set[str] = set()
LONG_FUNCTIONS: set[str] = set()


def _product_files():
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if not {"state", "__pycache__", "mutants"} & set(rel.parts):
                yield rel, path


def _long_functions(source, filename="<src>"):
    """'<name>:<first line>' of every function over MAX_FUNCTION_LINES lines without a ``# long:`` reason."""
    lines = source.splitlines()
    tree = ast.parse(source, filename=filename)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.end_lineno - node.lineno + 1 <= MAX_FUNCTION_LINES:
            continue
        top = min([node.lineno] + [d.lineno for d in node.decorator_list])
        body = node.body[0].lineno
        near = lines[max(top - 2, 0) : body]
        if not any(LONG_REASON.search(line) for line in near):
            out.append(f"{node.name}:{node.lineno}")
    return out


def test_the_length_finder_finds_long_functions_and_reads_reasons():
    long_body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert _long_functions(f"def f():\n{long_body}\n") == ["f:1"]
    assert _long_functions(f"# long: one table, one row a line\ndef f():\n{long_body}\n") == []
    assert _long_functions(f"@dec\ndef f():  # long: a dispatch on the command\n{long_body}\n") == []
    assert _long_functions(f"# a comment that gives no reason\ndef f():\n{long_body}\n") == ["f:2"]
    short = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 2))
    assert _long_functions(f"def f():\n{short}\n    return 1\n") == []


def test_no_product_file_over_600_lines():
    over = {str(rel) for rel, path in _product_files() if len(path.read_text(encoding="utf-8").splitlines()) > MAX_FILE_LINES}
    assert over - LONG_FILES == set(), f"product files over {MAX_FILE_LINES} lines (split them along a seam): {over}"
    assert LONG_FILES - over == set(), "LONG_FILES entries no longer over the limit (drop them)"


def test_no_function_over_80_lines_without_a_reason():
    found = set()
    for rel, path in _product_files():
        found.update(f"{rel}:{f.split(':')[0]}" for f in _long_functions(path.read_text(encoding="utf-8"), str(rel)))
    assert found - LONG_FUNCTIONS == set(), (
        f"functions over {MAX_FUNCTION_LINES} lines with no '# long: <why>' comment (split them, or say why they stay whole)"
    )
    assert LONG_FUNCTIONS - found == set(), "LONG_FUNCTIONS entries no longer long (drop them)"


# (d) A check is one module: its report(ctx) is defined in the check's own module, never in
#     checks/registry.py, which only lists the checks (CHECKS) and their phases (PHASES).
def _reports_defined_in_the_registry(checks):
    """The names of the checks whose report function (or, for one made by a factory such as bench's
    report_for(tool), the factory's closure) is defined in checks/registry.py."""
    return [c.name for c in checks if getattr(c.report, "__module__", "") == registry.__name__]


def test_a_check_report_lives_in_its_check_module():
    assert _reports_defined_in_the_registry(registry.CHECKS) == []
    assert all(c.report.__module__.startswith(registry.__name__.rsplit(".", 1)[0] + ".") for c in registry.CHECKS)


def test_the_report_home_finder_finds_one_in_the_registry():
    # the check above would pass on anything if this did not work: a report defined in the registry's module
    planted = registry.Check("planted", registry.run)
    assert _reports_defined_in_the_registry((*registry.CHECKS, planted)) == ["planted"]


# (e) Integration tests are grouped by the playbook they drive: ``tests/integration/<name>/test_*.py`` for
#     ``playbooks/<name>.yml``. What a group's files share (running its playbook, a lab of switch simulators)
#     is a module of the group without the ``test_`` prefix (verify/verify_lab.py, switches/switch_lab.py), or
#     tests/conftest.py for the whole lab (a node's container, a fault); a test file never imports another.
INTEGRATION = ROOT / "tests" / "integration"
PLAYBOOKS = ROOT / "playbooks"


def _misplaced_integration_tests(tests, playbooks):
    """The test files of ``tests`` (paths relative to tests/integration) not in a folder named for a playbook."""
    return sorted(str(t) for t in tests if len(t.parts) != 2 or t.parts[0] not in playbooks)


def _imported_test_modules(source):
    """The ``test_*`` modules a test file's source imports."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return sorted(n for n in names if n.split(".")[-1].startswith("test_"))


def test_integration_tests_are_grouped_by_the_playbook_they_drive():
    tests = [p.relative_to(INTEGRATION) for p in INTEGRATION.rglob("test_*.py")]
    assert len(tests) > 20
    assert _misplaced_integration_tests(tests, {p.stem for p in PLAYBOOKS.glob("*.yml")}) == []


def test_the_grouping_finder_finds_a_test_outside_a_playbook_folder():
    playbooks = {"site", "verify"}
    found = _misplaced_integration_tests(
        [pathlib.Path("site/test_site.py"), pathlib.Path("test_flat.py"), pathlib.Path("nowhere/test_x.py"), pathlib.Path("verify/deep/test_y.py")],
        playbooks,
    )
    assert found == ["nowhere/test_x.py", "test_flat.py", "verify/deep/test_y.py"]


def test_no_test_file_imports_another():
    found = {}
    for path in sorted(INTEGRATION.rglob("test_*.py")):
        imported = _imported_test_modules(path.read_text(encoding="utf-8"))
        if imported:
            found[str(path.relative_to(ROOT))] = imported
    assert found == {}, "test files import other test files (move what they share into a helper module)"


def test_the_import_finder_finds_test_modules():
    src = "import os\nimport test_switches as base\nfrom test_verify import find\nfrom verify_lab import verify\nfrom a.test_b import c\n"
    assert _imported_test_modules(src) == ["a.test_b", "test_switches", "test_verify"]
