"""Unit tests for plugins/module_utils/parsers/ncclconf.py: /etc/nccl.conf as NCCL's setEnvFile reads
it, and NCCL_SOCKET_IFNAME's matching (src/misc/socket.cc matchIfList)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import missing_socket_ifnames, parse_nccl_conf


def test_the_file_nccl_env_writes():
    assert parse_nccl_conf(fixture("ncclconf", "nccl_conf_lab.txt")) == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "104",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_NET_GDR_LEVEL": "PHB",
    }


def test_the_first_line_of_a_key_wins_and_values_are_verbatim():
    # setenv(..., 0): a later line does not overwrite; nothing is trimmed or unquoted
    assert parse_nccl_conf('NCCL_IB_TC=104\r\nNCCL_IB_TC=106\nNCCL_DEBUG= "INFO"\n') == {"NCCL_IB_TC": "104", "NCCL_DEBUG": ' "INFO"'}


@pytest.mark.parametrize("line", ["NCCL_IB_TC 104", "NCCL IB TC=104", "=104"])
def test_a_line_nccl_would_misread_is_an_error_naming_it(line):
    with pytest.raises(ParseError, match="nccl.conf: line 2 is not KEY=VALUE: %r" % line):
        parse_nccl_conf("# comment\n" + line + "\n")


@pytest.mark.parametrize(
    "value,missing",
    [
        ("eth", []),  # a prefix: eth0 matches
        ("=eth", ["eth"]),  # exact names after '='
        ("=eth0,ib0", ["ib0"]),
        ("^docker,lo", []),  # an exclude list names nothing NCCL must find
        ("", []),
        ("bond, eth1 ", ["bond"]),
    ],
)
def test_socket_ifname_items_that_match_no_interface(value, missing):
    assert missing_socket_ifnames(value, ["eth0", "eth1", "lo"]) == missing
