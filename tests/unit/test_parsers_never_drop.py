"""Issue 38, class 1: nothing a tool prints vanishes silently.

A property over every registered parser and its text fixtures: take a line the
parser reads (its value is in the result) and give it, in the line's own
format, an unexpected name (``Name: value``, ``NAME    value`` and table rows:
the first cell) or an unexpected value (a word or a number the result
holds). The parser must then either read it (the new word is somewhere in
the result: a key, a value, a list item) or warn about it (the word is in a
``warnings`` entry), or raise ParseError; it must never return a result
that silently lost the line.

hypothesis draws the fixture, the line and the mutation (derandomized, so a
run is repeatable); a failure prints the parser, the fixture, the line
number and both lines. Parsers not yet held to this would be in ``NOT_YET``
with what they drop (empty since issue 38); the xfail is strict, so an entry
must go once its parser passes.
"""

import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from parser_fixtures import fixture
from parser_registry import PARSERS
from test_parsers_fuzz import _fixtures, _function
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError

NAME = "Zq_unexpected_Name"
WORD = "zqunexpectedvalue"
NUMBER = "zq4711x"

_TOKEN = re.compile(r"(?<![\w.:/-])[A-Za-z][A-Za-z0-9_]*(?![\w:/-])")
_NUMBER = re.compile(r"(?<![\w.:/-])\d+(?:\.\d+)?(?![\w.:/-])")
# ``Name: value``, ``Name=value`` or ``NAME    value`` (two or more spaces, or a TAB)
_KEYED = re.compile(r"^\s*\*?\s*(?P<name>[A-Za-z][\w\-. /()]*?)\s*(?::(?=\s)|=|\s{2,}|\t)\s*\S")

# "<module>.<function>": what the parser still drops (issue 38, not yet fixed)
# Parsers of structured output (JSON, a dict, a config DB): no text line to mutate; named, so a text
# parser that finds no fixture line fails instead of skipping.
STRUCTURED = {
    "parsers.counters.parse_hw_counters",
    "switch.counters.parse_eos_pfc_counters",
    "switch.counters.parse_eos_intf_errors",
    "parsers.lldp.parse_lldpctl_json",
    "switch.eos.parse_pfcwd_counters",
    "parsers.scheduler.parse_kubectl_node",
    "switch.sonic.parse_config_db",
    "switch.optics.parse_eos_transceiver_detail",
    "switch.ber.parse_eos_phy_detail",
}
# Text parsers whose fixtures give the generator no line it can change (a gap, not a pass): none now
# (apt-cache madison and ib_send_bw have published real fixtures since issue 38).
NO_LINE_YET = {}

# Parsers still dropping what they do not expect: none now (the last ten switch parsers read it, name it
# in a ``warnings`` entry, or raise ParseError since issue 38). A new parser that drops goes here with
# what it drops; the xfail is strict.
NOT_YET = {}


def _strings(value):
    """Every key and leaf of a result, as lower-case text."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key).lower()
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    else:
        yield str(value).lower()


def _mutations(line, read):
    """(kind, start, end, new word) for one line whose words ``read`` (a set) the result holds."""
    out = []
    keyed = _KEYED.match(line)
    values = [m for m in _TOKEN.finditer(line) if m.group().lower() in read]
    if keyed and line.count(":") <= 2 and (values or any(n.group() in read for n in _NUMBER.finditer(line))):
        out.append(("name", keyed.start("name"), keyed.end("name"), NAME))
    if values and values[-1].start() > (keyed.end("name") if keyed else -1):
        out.append(("value", values[-1].start(), values[-1].end(), WORD))
    numbers = [m for m in _NUMBER.finditer(line) if m.group() in read and line[m.end() : m.end() + 1] != ":"]
    if numbers:
        out.append(("number", numbers[-1].start(), numbers[-1].end(), NUMBER))
    return out


def _call(parser, text):
    try:
        return parser(text)
    except ParseError:
        return None


def _candidates(parser, globs):
    """(fixture, line index, kind, lines, base result, new word) for every mutation of a line whose
    words the result holds (the check then keeps only lines the parser reads: removing one changes
    the result)."""
    found = []
    for path in _fixtures(globs):
        tool, fname = path.split("/", 1)
        text = fixture(tool, fname)
        if text.lstrip().startswith(("{", "[")):
            continue  # structured output: its names are the tool's schema, read as keys
        base = _call(parser, text)
        if not base:
            continue
        read = set(_strings(base))
        lines = text.split("\n")
        for index, line in enumerate(lines):
            for kind, start, end, new in _mutations(line, read):
                found.append((path, index, kind, lines, base, line[:start] + new + line[end:], new))
    return found


def _params():
    params = []
    for module, name, *globs in PARSERS:
        key = "%s.%s" % (module, name)
        reason = NOT_YET.get(key) or NO_LINE_YET.get(key)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(module, name, globs, id=key, marks=marks))
    return params


@pytest.mark.parametrize("module, name, globs", _params())
def test_an_unexpected_name_or_value_is_read_or_warned(module, name, globs):
    parser = _function(module, name)
    candidates = _candidates(parser, globs)
    if not candidates and "%s.%s" % (module, name) in STRUCTURED:
        pytest.skip("structured output (JSON, a dict): no text line to change")
    assert candidates, "a text parser with no fixture line the generator can change: add a fixture or NO_LINE_YET"

    @settings(max_examples=min(60, len(candidates)), derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(candidates))
    def check(case):
        path, index, kind, lines, base, mutated, new = case
        if _call(parser, "\n".join(lines[:index] + lines[index + 1 :])) == base:
            return  # a line the parser does not read at all (a banner, a rule)
        text = "\n".join(lines[:index] + [mutated] + lines[index + 1 :])
        try:
            result = parser(text)
        except ParseError:
            return  # refused loudly: not silent
        if result == base:
            return  # the word sat where the parser reads nothing (a log prefix, a description)
        assert any(new.lower() in s for s in _strings(result)), (
            "%s dropped a line with an unexpected %s: %s line %d now reads %r, and %r is neither read "
            "nor warned about" % (name, kind, path, index + 1, mutated, new)
        )

    check()
