"""Every published real output (a fixture named real_* or whose first line is ``#source: <URL>``) is read.

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



def _is_real(path):
    """A published real output: named ``real_*`` or carrying a ``#source:`` first line."""
    tool, fname = path.split("/", 1)
    return fname.startswith("real_") or fixture_source(tool, fname) is not None


CASES = [(module, name, path) for module, name, *globs in PARSERS
         for path in _fixtures(globs) if _is_real(path)]


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


# Parsers for which fewer than three published outputs have been found so
# far, keyed "<module>.<function>" (two modules have a parse_interfaces_status),
# with how many there are: the gap stays visible here (docs/parsers.md lists
# it too, with what was searched) and a count may only go up.
KNOWN_THIN = {
    "counters.parse_ethtool_stats": 0,
    "counters.parse_hw_counters": 0,
    "counters.parse_rdma_statistic": 0,
    "dpkg.parse_dpkg_query": 0,
    "ibdiag.parse_iblinkinfo": 0,
    "ibdiag.parse_sminfo": 0,
    "ibdiag.parse_smpquery_pkeys": 0,
    "linkhealth.parse_ibqueryerrors": 0,
    "linkhealth.parse_mlxlink": 0,
    "lldp.parse_eos_lldp_neighbors": 2,
    "lldp.parse_lldpctl_json": 1,
    "lldp.parse_nvue_lldp": 2,
    "lldp.parse_sonic_lldp_table": 2,
    "mlxconfig.parse_mlxfwreset": 0,
    "mlxconfig.parse_mlxfwreset_query": 0,
    "ncclconf.parse_nccl_conf": 0,
    "ofed.parse_madison": 0,
    "switch.eos.parse_sessions": 0,
    "switch.nvue.parse_nvue_commands": 0,
    "switch.nvue.parse_revisions": 1,
    "switch.sonic.parse_config_db": 0,
    "switch_counters.parse_eos_intf_errors": 1,
    "switch_counters.parse_eos_pfc_counters": 0,
    "switch_counters.parse_nvue_link_stats": 2,
    "switch_counters.parse_nvue_roce_counters": 1,
}


def real_outputs_per_parser():
    """{"<module>.<function>": number of published real outputs that parser reads}, every registered parser."""
    counts = {"%s.%s" % (module, name): 0 for module, name, *_ in PARSERS}
    for key in counts:
        counts[key] = len({path for module, name, path in CASES if "%s.%s" % (module, name) == key})
    return counts


def test_at_least_three_real_outputs_per_parser():
    counts = real_outputs_per_parser()
    thin = {key: n for key, n in counts.items() if n < 3 and key not in KNOWN_THIN}
    assert not thin, "parsers with fewer than 3 published real outputs, not in KNOWN_THIN: %s" % thin
    lower = {key: (counts.get(key), n) for key, n in KNOWN_THIN.items() if counts.get(key, 0) < n}
    assert not lower, "a parser's real outputs went down (now, listed): %s" % lower
    stale = [key for key, n in KNOWN_THIN.items() if counts.get(key, 0) >= 3 or counts.get(key, 0) > n]
    assert not stale, "KNOWN_THIN entries to lower or remove: %s" % stale
