"""Unit tests for plugins/module_utils/parsers/mlnx_qos.py on our own fixtures."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.mlnx_qos import parse_mlnx_qos


def test_dscp_trust_with_buffers_and_ets():
    qos = parse_mlnx_qos(fixture("mlnx_qos", "dscp_buffers_ets.txt"))
    assert qos["dcbx_mode"] == "OS controlled"
    assert qos["trust"] == "dscp"
    assert qos["dscp2prio"]["26"] == 3
    assert qos["dscp2prio"]["48"] == 6
    assert qos["dscp2prio"]["0"] == 0
    assert len(qos["dscp2prio"]) == 64
    assert qos["prio2dscp"]["3"] == [26]
    assert len(qos["prio2dscp"]["0"]) == 62  # wrapped over eight lines
    assert qos["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["pfc_enabled_priorities"] == [3]
    assert qos["prio2buffer"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["receive_buffer_size"] == [261888, 261888, 0, 0, 0, 0, 0, 0]
    assert qos["receive_buffer_max_buffer_size"] == 2097152
    assert qos["cable_len"] == 7
    assert qos["default_priority"] is None
    assert [tc["tc"] for tc in qos["tcs"]] == [0, 3, 6, 7]
    assert qos["tcs"][1] == {"tc": 3, "ratelimit": "unlimited", "ratelimit_gbps": None, "tsa": "ets", "bw_percent": 50, "priorities": [3, 4, 5]}
    assert qos["tcs"][2]["tsa"] == "strict"
    assert qos["tcs"][2]["ratelimit_gbps"] == 25.0
    assert qos["prio2tc"] == {"0": 0, "1": 0, "2": 0, "3": 3, "4": 3, "5": 3, "6": 6, "7": 7}


def test_old_ofed_without_trust_support_and_shell_trace():
    qos = parse_mlnx_qos(fixture("mlnx_qos", "old_ofed_no_trust.txt"))
    assert qos["dcbx_mode"] == "Firmware controlled"
    assert qos["trust"] == "none"
    assert qos["dscp2prio"] == {}
    assert qos["pfc"] == [0] * 8
    assert qos["pfc_enabled_priorities"] == []
    assert qos["prio2buffer"] is None
    assert qos["receive_buffer_size"] is None
    assert qos["notes"] == ["Priority trust state is not supported on your system", "Buffers commands are not supported on your system"]
    assert qos["prio2tc"]["1"] == 0 and qos["prio2tc"]["0"] == 1
    assert all(tc["tsa"] == "vendor" for tc in qos["tcs"])


def test_pcp_trust_single_strict_tc():
    qos = parse_mlnx_qos(fixture("mlnx_qos", "pcp_single_tc.txt"))
    assert qos["trust"] == "pcp"
    assert qos["pfc_enabled_priorities"] == [5]
    assert qos["prio2buffer"][5] == 1
    assert qos["receive_buffer_max_buffer_size"] == 262016
    assert qos["tcs"] == [{"tc": 0, "ratelimit": "unlimited", "ratelimit_gbps": None, "tsa": "strict", "bw_percent": None, "priorities": list(range(8))}]


@pytest.mark.parametrize(
    "name, message",
    [
        ("error_no_device.txt", r"OSError: \[Errno 19\] No such device"),
        ("error_permission.txt", "Operation not permitted"),
    ],
)
def test_errors_raise(name, message):
    with pytest.raises(ParseError, match=message):
        parse_mlnx_qos(fixture("mlnx_qos", name))


def test_empty_raises():
    with pytest.raises(ParseError, match="empty output"):
        parse_mlnx_qos("")
