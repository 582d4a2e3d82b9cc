"""Every published real output (fixtures named real_*, source on their first line) is read.

A ``real_error_*`` fixture is a failure the tool printed: the parser must
raise ParseError, or (NCCL logs, whose failures are data) return ``error``.
Any other real fixture must parse to a non-empty result without warnings
about unread lines, and its source line must name a public URL.
"""

import pytest

from parser_fixtures import fixture, fixture_source
from parser_registry import PARSERS
from test_parsers_fuzz import _fixtures, _function
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError

CASES = [(module, name, path) for module, name, *globs in PARSERS
         for path in _fixtures(globs) if path.split("/")[-1].startswith("real_")]


def _warnings(result):
    if isinstance(result, dict):
        found = [w for w in result.get("warnings") or [] if isinstance(w, str) and w.startswith("line ")]
        for value in result.values():
            found += _warnings(value)
        return found
    if isinstance(result, list):
        return [w for item in result for w in _warnings(item)]
    return []


@pytest.mark.parametrize("module, name, path", CASES, ids=["%s:%s" % (n, p) for _, n, p in CASES])
def test_real_output_is_read(module, name, path):
    tool, fname = path.split("/", 1)
    source = fixture_source(tool, fname)
    assert source and source.startswith("https://"), "real fixture without a #source: URL line"
    parser = _function(module, name)
    text = fixture(tool, fname)
    if fname.startswith("real_error_"):
        try:
            result = parser(text)
        except ParseError as err:
            assert str(err).strip()
            return
        assert result.get("error"), "a failure output read as a success"
        return
    result = parser(text)
    assert result, "empty result"
    assert _warnings(result) == [], "lines the parser could not read"


# Tools for which fewer than three published outputs have been found so far,
# with how many there are: the gap stays visible here (docs/parsers.md
# lists it too) and a count may only go up.
KNOWN_THIN = {"ibnetdiscover": 2, "parse_revisions": 1}


def test_at_least_three_real_outputs_per_tool():
    per_tool = {}
    for module, name, path in CASES:
        per_tool.setdefault(path.split("/")[0] if not path.startswith("switch/") else name, set()).add(path)
    counts = {tool: len(paths) for tool, paths in per_tool.items()}
    thin = {tool: n for tool, n in counts.items() if n < 3 and n < KNOWN_THIN.get(tool, 3)}
    assert not thin, "tools with fewer than 3 published real outputs: %s" % thin
    assert all(counts.get(tool, 0) >= n for tool, n in KNOWN_THIN.items())
