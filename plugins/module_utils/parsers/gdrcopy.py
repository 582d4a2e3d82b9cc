"""Parser for gdrcopy's sanity test (``gdrcopy_sanity`` from v2.4, ``sanity`` before; NVIDIA/gdrcopy tests/).

v2.4+ prints ``Total: N, Passed: P, Failed: F, Waived: W`` and the failed/waived tests' names
(testsuites/testsuite.cpp), exit 1 on a failure; v2.0-v2.3 are a libcheck suite
(``Running suite(s): Sanity`` / ``NN%: Checks: N, Failures: F, Errors: E``). Pure function,
stdlib only, importable on its own.
"""

from __future__ import annotations

import re
from typing import Optional, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]

_TOTAL = re.compile(r"^Total: (\d+), Passed: (\d+), Failed: (\d+), Waived: (\d+)\s*$", re.M)
_CHECK = re.compile(r"^(\d+)%: Checks: (\d+), Failures: (\d+), Errors: (\d+)\s*$", re.M)
_CHECK_FAIL = re.compile(r"^[^:\s]+:\d+:[FE]:[^:]*:(\w+):\d+:", re.M)


class GdrcopySanity(TypedDict):
    """``parse_gdrcopy_sanity``: the summary in either format, the tests named, ``ok`` (no failure, rc 0)."""

    format: str
    total: int
    passed: int
    failed: int
    waived: int
    failed_tests: list[str]
    waived_tests: list[str]
    warnings: list[str]
    ok: bool


def parse_gdrcopy_sanity(text: Optional[str], rc: Optional[int] = None) -> GdrcopySanity:
    """gdrcopy's sanity output -> ``{"format", "total", "passed", "failed", "waived", "failed_tests",
    "waived_tests", "ok", "warnings"}`` (a ``List of <kind> tests:`` this parser does not know is named
    there with its tests). ``rc``: its exit status (EXIT_FAILURE on any failure, both formats).

    Raises ParseError on output with no summary (the driver not loaded aborts before it:
    ``error opening driver``; an unknown option prints ``Invalid option``)."""
    text = text or ""
    m = _TOTAL.search(text)
    if m:
        total, passed, failed, waived = map(int, m.groups())
        lists: dict[str, list[str]] = {"failed": [], "waived": []}
        current: Optional[str] = None
        warnings: list[str] = []
        for line in text[m.end() :].splitlines():
            heading = re.match(r"^List of (\w+) tests:\s*$", line)
            if heading:
                current = heading.group(1)
                if current not in lists:  # a list this parser does not know: its tests are named, not dropped
                    warnings.append("a list of %s tests this parser does not know: %r" % (current, line.strip()))
                    lists[current] = []
            elif current and line.startswith("    ") and line.strip():
                lists[current].append(line.strip())
            elif not line.strip():
                continue
            else:
                current = None
        warnings += ["%s test not counted: %s" % (kind, name) for kind, names in lists.items() if kind not in ("failed", "waived") for name in names]
        res = GdrcopySanity(
            format="testsuite",
            total=total,
            passed=passed,
            failed=failed,
            waived=waived,
            failed_tests=lists["failed"],
            waived_tests=lists["waived"],
            warnings=warnings,
            ok=False,
        )
    else:
        m = _CHECK.search(text)
        if not m:
            error = next((x.strip() for x in text.splitlines() if re.search(r"error|Invalid option|not found", x, re.I)), None)
            raise ParseError("gdrcopy_sanity", error or "no test summary in the output", text)
        _pct, total, failures, errors = map(int, m.groups())
        res = GdrcopySanity(
            format="libcheck",
            total=total,
            passed=total - failures - errors,
            failed=failures + errors,
            waived=0,
            failed_tests=_CHECK_FAIL.findall(text),
            waived_tests=[],
            warnings=[],
            ok=False,
        )
    res["ok"] = res["failed"] == 0 and rc in (None, 0)
    return res
