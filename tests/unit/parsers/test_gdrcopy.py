"""Unit tests for plugins/module_utils/parsers/gdrcopy.py: both summary formats of gdrcopy's sanity
test, on the fixtures of tests/unit/fixtures/gdrcopy (SOURCES.md)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.gdrcopy import parse_gdrcopy_sanity


def test_the_2_4_testsuite_summary_with_its_failed_and_waived_tests():
    res = parse_gdrcopy_sanity(fixture("gdrcopy", "gdrcopy_sanity_2.4_fail.txt"), rc=1)
    assert res == {
        "format": "testsuite",
        "total": 29,
        "passed": 26,
        "failed": 2,
        "waived": 1,
        "failed_tests": ["basic_cumemalloc", "invalidation_fork_after_gdr_map_cumemalloc"],
        "waived_tests": ["basic_vmmalloc"],
        "warnings": [],
        "ok": False,
    }


def test_the_libcheck_summary_of_2_3_names_the_failed_checks():
    res = parse_gdrcopy_sanity(fixture("gdrcopy", "sanity_2.3_libcheck_fail.txt"))
    assert (res["format"], res["total"], res["failed"], res["passed"]) == ("libcheck", 10, 2, 8)
    assert res["failed_tests"] == ["basic_cumemalloc", "invalidation_fork_access_after_free_cumemalloc"]
    assert res["ok"] is False


def test_a_passing_run_is_ok_only_with_a_zero_exit_status():
    text = "Total: 3, Passed: 3, Failed: 0, Waived: 0\n"
    assert parse_gdrcopy_sanity(text, rc=0)["ok"] is True
    assert parse_gdrcopy_sanity(text, rc=1)["ok"] is False


def test_a_list_this_parser_does_not_know_is_named_not_dropped():
    text = "Total: 2, Passed: 1, Failed: 0, Waived: 0\n\nList of skipped tests:\n    basic_with_tokens\n"
    res = parse_gdrcopy_sanity(text)
    assert res["warnings"] == ["a list of skipped tests this parser does not know: 'List of skipped tests:'", "skipped test not counted: basic_with_tokens"]


@pytest.mark.parametrize(
    "text,message",
    [
        ("error opening driver: No such file or directory\n", "gdrcopy_sanity: error opening driver"),
        ("", "gdrcopy_sanity: no test summary in the output"),
    ],
)
def test_output_without_a_summary_is_an_error(text, message):
    with pytest.raises(ParseError, match=message):
        parse_gdrcopy_sanity(text)
