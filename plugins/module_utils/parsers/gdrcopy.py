"""Parser for gdrcopy's sanity test (``gdrcopy_sanity`` from v2.4, ``sanity`` before; NVIDIA/gdrcopy tests/).

v2.4+ prints ``Total: N, Passed: P, Failed: F, Waived: W`` and the failed/waived tests' names
(testsuites/testsuite.cpp), exit 1 on a failure; v2.0-v2.3 are a libcheck suite
(``Running suite(s): Sanity`` / ``NN%: Checks: N, Failures: F, Errors: E``). Pure function,
stdlib only, importable on its own.
"""

import re

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError

_TOTAL = re.compile(r"^Total: (\d+), Passed: (\d+), Failed: (\d+), Waived: (\d+)\s*$", re.M)
_CHECK = re.compile(r"^(\d+)%: Checks: (\d+), Failures: (\d+), Errors: (\d+)\s*$", re.M)
_CHECK_FAIL = re.compile(r"^[^:\s]+:\d+:[FE]:[^:]*:(\w+):\d+:", re.M)


def parse_gdrcopy_sanity(text, rc=None):
    """gdrcopy's sanity output -> ``{"format", "total", "passed", "failed", "waived", "failed_tests",
    "waived_tests", "ok"}``. ``rc``: its exit status (EXIT_FAILURE on any failure, both formats).

    Raises ParseError on output with no summary (the driver not loaded aborts before it:
    ``error opening driver``; an unknown option prints ``Invalid option``)."""
    text = text or ""
    m = _TOTAL.search(text)
    if m:
        total, passed, failed, waived = map(int, m.groups())
        lists, current = {"failed": [], "waived": []}, None
        for line in text[m.end():].splitlines():
            if line.startswith("List of failed tests:"):
                current = "failed"
            elif line.startswith("List of waived tests:"):
                current = "waived"
            elif current and line.startswith("    ") and line.strip():
                lists[current].append(line.strip())
            elif not line.strip():
                continue
            else:
                current = None
        res = {"format": "testsuite", "total": total, "passed": passed, "failed": failed, "waived": waived,
               "failed_tests": lists["failed"], "waived_tests": lists["waived"]}
    else:
        m = _CHECK.search(text)
        if not m:
            line = next((x.strip() for x in text.splitlines() if re.search(r"error|Invalid option|not found", x, re.I)),
                        None)
            raise ParseError("gdrcopy_sanity", line or "no test summary in the output", text)
        _pct, total, failures, errors = map(int, m.groups())
        res = {"format": "libcheck", "total": total, "passed": total - failures - errors,
               "failed": failures + errors, "waived": 0, "failed_tests": _CHECK_FAIL.findall(text),
               "waived_tests": []}
    res["ok"] = res["failed"] == 0 and rc in (None, 0)
    return res
