"""junit.xml: each check a test suite, its cases the testcases (ib_write_bw's derived from its stored
rows), for CI systems that read JUnit XML.
"""

import json
import re
from xml.sax.saxutils import escape

from ansible_collections.linerate.fabric.plugins.module_utils.checks.rdma import row_fields, stored_rows
from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import gbps_text

# what needs escaping in a double-quoted attribute value ('>' is legal there)
_XML_SPECIAL = re.compile(r'[&<"\n\r\t]')
_ATTR_ENTITIES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}


def _xml_text(value):
    """``value`` as the text of a double-quoted XML attribute (escaped only where it needs it)."""
    s = str(value)
    return s if _XML_SPECIAL.search(s) is None else escape(s, _ATTR_ENTITIES)


def _attr(value):
    return f'"{_xml_text(value)}"'


class _XmlTexts(dict):
    """_xml_text of each key, computed once (the host and rail names repeat in every ib_write_bw test)."""

    def __missing__(self, key):
        self[key] = _xml_text(key)
        return self[key]


def _time(seconds):
    """` time="<seconds>"` where the time was measured; nothing where it was not (never a made-up 0)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        return ""
    return f' time="{seconds:.3f}"'


def _testcase(classname, case):
    head = f"<testcase classname={classname} name={_attr(case['name'])}{_time(case.get('time', case.get('seconds')))}"
    if case.get("skipped"):
        return f"{head}><skipped message={_attr(case.get('message') or 'skipped')} /></testcase>"
    if not case.get("ok"):
        failure = f"<failure message={_attr(case.get('message') or 'failed')} type={_attr(case.get('code') or 'FAILED')}"
        findings = case.get("findings")
        # the findings as the failure's text where there are any; an empty list is no body at all
        body = f">{escape(json.dumps(findings, indent=1))}</failure>" if findings else " />"
        return f"{head}>{failure}{body}</testcase>"
    return f"{head} />"


def _rdma_testcases(check, classname):
    """ib_write_bw's testcases, derived from its stored tests: one per test, named by its ends and round.
    A passing test is written straight from its row (261,120 of them in a 256-node x 8-rail full plan)."""
    threshold = float(check.get("threshold_gbps") or 0)
    text = _XmlTexts()
    return [
        f'<testcase classname={classname} name="{text[client]}:{text[rail]} -> {text[server]}:{text[sdev]} (round {rnd})" />'
        if code is None
        else _testcase(
            classname,
            {
                "name": f"{client}:{rail} -> {server}:{sdev} (round {rnd})",
                "ok": False,
                "code": code,
                "message": cerr or serr or f"{gbps_text(gbps)} Gb/s < {threshold:g} Gb/s",
            },
        )
        for rnd, client, server, rail, gbps, code, cerr, serr, sdev in map(row_fields, stored_rows(check))
    ]


def _suite_cases(name, check, classname):
    """The testcase elements of one check: its cases, ib_write_bw's from its tests, else the check as one case."""
    if check.get("cases"):
        return [_testcase(classname, case) for case in check["cases"]]
    if check.get("tests"):
        return _rdma_testcases(check, classname)
    return [_testcase(classname, {"name": name, "ok": check.get("passed", False), "message": check.get("detail")})]


def to_junit(report):
    """JUnit XML: one testsuite per check, one testcase per test, failures carry the fault code;
    an audit's suites carry its mode as a property.

    Written as text (ElementTree costs seconds for the 261,120 tests of a full 256-node x 8-rail plan).
    """
    suites = []
    total_t = total_f = 0
    mode = report.get("mode")
    props = f'<properties><property name="mode" value={_attr(mode)} /></properties>' if mode else ""
    # a suite's time: the wall time of the verification phase of the same name (meta.phases), where measured
    phases = {p.get("phase"): p.get("seconds") for p in (report.get("meta") or {}).get("phases") or [] if isinstance(p, dict)}
    for name, c in report.get("checks", {}).items():
        cases = _suite_cases(name, c, _attr(f"linerate.verify.{name}"))
        body = "".join(cases)
        fails = body.count("><failure message=")  # names and messages are escaped: '<' is never theirs
        suites.append(
            f'<testsuite name={_attr(name)} tests="{len(cases)}" failures="{fails}" errors="0"{_time(phases.get(name))}>' + props + body + "</testsuite>"
        )
        total_t += len(cases)
        total_f += fails
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + f'<testsuites name="{"linerate-audit" if mode else "linerate-verify"}" tests="{total_t}" failures="{total_f}">'
        + "".join(suites)
        + "</testsuites>\n"
    )
