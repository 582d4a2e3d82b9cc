"""The ``apt-cache madison`` parser (plugins/module_utils/parsers/apt.py) on the published rows
(fixtures/apt_madison/SOURCES.md): every row read, apt's notes skipped, any other line refused by number.
ofed_preflight's use of it is tested in tests/unit/host/test_ofed.py."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import apt


def test_madison_reads_the_published_rows_and_refuses_a_line_that_is_no_row():
    assert apt.parse_madison(fixture("apt_madison", "real_bash_jessie.txt")) == {
        "bash": ["4.3-11+deb8u1", "4.3-11+deb8u1"]
    }  # the binary row and the source package's row
    with pytest.raises(ParseError, match=r"line 2: not a 'package \| version \| source' row: 'bash 4.3-12'"):
        apt.parse_madison("bash | 4.3-11 | http://x jessie/main amd64 Packages\nbash 4.3-12\n")
    with pytest.raises(ParseError, match=r"line 1: not a 'package \| version \| source' row"):
        apt.parse_madison("bash |  | http://x jessie/main amd64 Packages\n")
