"""Unit tests for plugins/module_utils/parsers/_ibtext.py, the text helpers of ibtools.py and iblink.py."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import _ibtext


def test_lines_tolerate_none_and_crlf():
    assert _ibtext._lines(None) == [""]
    assert _ibtext._lines("a\r\nb\n") == ["a", "b", ""]


def test_no_data_quotes_the_error_lines_first():
    with pytest.raises(ParseError, match="^ibstat: ibwarn: umad_init failed; No IB devices found$"):
        _ibtext._raise_no_data("ibstat", "ibwarn: umad_init failed\nsomething\nNo IB devices found\n", "CA block")


@pytest.mark.parametrize(
    "text,message",
    [
        (None, "ibstat: empty output"),
        ("  \n", "ibstat: empty output"),
        ("\n  hello\n", "ibstat: no CA block in output \\(first line: 'hello'\\)"),
    ],
)
def test_no_data_without_error_lines(text, message):
    with pytest.raises(ParseError, match=message):
        _ibtext._raise_no_data("ibstat", text, "CA block")


@pytest.mark.parametrize("value,number", [("400", 400), ("2.5", 2.5), ("x", None), (None, None)])
def test_to_number(value, number):
    assert _ibtext._to_number(value) == number and type(_ibtext._to_number(value)) is type(number)


@pytest.mark.parametrize("value,split", [("PORT_ACTIVE (4)", ("PORT_ACTIVE", 4)), ("4096 (5)", ("4096", 5)), ("InfiniBand", ("InfiniBand", None))])
def test_split_enum(value, split):
    assert _ibtext._split_enum(value) == split


def test_int_or_text():
    assert (_ibtext._int_or_text("-12"), _ibtext._int_or_text("0x1a")) == (-12, "0x1a")


@pytest.mark.parametrize(
    "value,pattern,port",
    [
        (
            "400 Gb/sec (4X NDR)",
            r"([\d.]+)\s*Gb/sec(?:\s*\((.*)\))?",  # rdma link / ibstatus
            {"rate_text": "400 Gb/sec (4X NDR)", "rate_gbps": 400, "rate_note": "4X NDR"},
        ),
        ("2.5", r"([\d.]+)\s*(?:\((.*)\))?", {"rate_text": "2.5", "rate_gbps": 2.5}),  # ibstat, no note
        ("10 (FDR10)", r"([\d.]+)\s*(?:\((.*)\))?", {"rate_text": "10 (FDR10)", "rate_gbps": 10, "rate_note": "FDR10"}),
        ("unknown", r"([\d.]+)\s*(?:\((.*)\))?", {"rate_text": "unknown", "rate_gbps": None}),
    ],
)
def test_a_rate_keeps_its_text_its_gbps_and_its_note(value, pattern, port):
    read = {}
    _ibtext._read_rate(read, value, pattern)
    assert read == port
