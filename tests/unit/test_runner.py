"""module_utils/runner.py: read_tool, the one run-and-parse of a reading tool."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.runner import read_tool


def tool(rc, out, err=""):
    calls = []

    def run(argv):
        calls.append(argv)
        return rc, out, err

    run.calls = calls
    return run


def parse_words(text):
    """A parser that knows the tool's error line (``-E- ...``) and wants at least one word."""
    for line in text.splitlines():
        if line.startswith("-E-"):
            raise ParseError("t", line[4:])
    if not text.strip():
        raise ParseError("t", "empty output")
    return text.split()


def test_a_tool_that_exited_0_returns_what_its_parser_read():
    run = tool(0, "a b\n", "noise on stderr")
    assert read_tool(run, ["t", "-q"], parse_words) == ["a", "b"] and run.calls == [["t", "-q"]]


def test_a_failed_tool_is_named_by_its_own_error_where_the_parser_knows_it():
    with pytest.raises(ToolFailure) as e:
        read_tool(tool(3, "progress\n", "-E- no such device\n"), ["t", "-d", "x"], parse_words)
    assert e.value.msg == "t -d x exited 3: t: no such device"
    assert e.value.kw == {"rc": 3, "stdout": "progress\n", "stderr": "-E- no such device\n", "cmd": ["t", "-d", "x"]}


def test_a_failed_tool_whose_output_reads_well_still_fails_with_its_output():
    with pytest.raises(ToolFailure) as e:
        read_tool(tool(1, "a b\n", "permission denied\n"), ["t"], parse_words)
    assert e.value.msg == "t exited 1: permission denied" and e.value.kw["rc"] == 1


def test_output_that_is_not_the_format_fails_even_when_the_tool_exited_0():
    with pytest.raises(ToolFailure) as e:
        read_tool(tool(0, "", "said on stderr\n"), ["t"], parse_words)
    assert e.value.msg == "t: t: empty output"

    def parse_number(text):
        if not text.strip().isdigit():
            raise ValueError("not a number")  # a reader of host/ raising ValueError, not ParseError
        return int(text)

    with pytest.raises(ToolFailure, match=r"^t: not a number$"):
        read_tool(tool(0, "x\n"), ["t"], parse_number)
    assert read_tool(tool(0, "42\n"), ["t"], parse_number) == 42


def test_empty_out_reads_err_reads_stderr_of_a_tool_that_exited_0_with_nothing_on_stdout():
    assert read_tool(tool(0, " \n", "c d\n"), ["t"], parse_words, empty_out_reads_err=True) == ["c", "d"]
    assert read_tool(tool(0, "a\n", "c d\n"), ["t"], parse_words, empty_out_reads_err=True) == ["a"]


def test_tail_quotes_the_end_of_a_failed_tools_output():
    err = "x" * 500 + " the error"
    with pytest.raises(ToolFailure) as e:
        read_tool(tool(1, "", err), ["t"], lambda text: None, tail=True)
    assert e.value.msg.endswith(" the error") and e.value.msg == "t exited 1: " + err[-400:]
    with pytest.raises(ToolFailure) as e:
        read_tool(tool(1, "", err), ["t"], lambda text: None)
    assert e.value.msg == "t exited 1: " + err[:400]
