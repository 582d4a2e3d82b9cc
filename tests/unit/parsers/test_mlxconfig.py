"""Unit tests for plugins/module_utils/parsers/mlxconfig.py on our own fixtures."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.mlxconfig import (
    parse_mlxconfig,
    parse_mlxfwreset,
    parse_mlxfwreset_query,
    normalize_value,
)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("ETH(2)", {"raw": "ETH(2)", "label": "ETH", "value": 2}),
        ("True(1)", {"raw": "True(1)", "label": "True", "value": 1}),
        ("_256KB(1)", {"raw": "_256KB(1)", "label": "_256KB", "value": 1}),
        ("48", {"raw": "48", "label": None, "value": 48}),
        ("Array[0..15]", {"raw": "Array[0..15]", "label": "Array", "value": None, "array": [0, 15]}),
        ("force_relax(1)", {"raw": "force_relax(1)", "label": "force_relax", "value": 1}),
    ],
)
def test_parse_value(raw, expected):
    assert normalize_value(raw) == expected


def test_plain_query_has_next_boot_column_only():
    device = parse_mlxconfig(fixture("mlxconfig", "query_cx6dx_q.txt"))["devices"][0]
    assert device["device_type"] == "ConnectX6DX"
    assert device["name"] == "MCX623106AN-CDA_Ax"
    assert device["description"].startswith("ConnectX-6 Dx EN adapter card")
    assert device["device"] == device["pci"] == "0000:c1:00.0"
    params = device["params"]
    assert len(params) == 14
    assert params["LINK_TYPE_P1"] == {"modified": False, "next_boot": {"raw": "ETH(2)", "label": "ETH", "value": 2}}
    assert params["CNP_DSCP_P1"]["next_boot"]["value"] == 48
    assert params["PCI_WR_ORDERING"]["next_boot"]["label"] == "force_relax"
    assert "current" not in params["SRIOV_EN"]


def test_extended_query_wide_columns_two_devices():
    devices = parse_mlxconfig(fixture("mlxconfig", "query_cx7_e_wide.txt"))["devices"]
    assert [d["pci"] for d in devices] == ["0000:41:00.0", "0000:81:00.0"]
    link = devices[0]["params"]["LINK_TYPE_P1"]
    assert link["modified"] is True
    assert (link["default"]["raw"], link["current"]["raw"], link["next_boot"]["raw"]) == ("IB(1)", "IB(1)", "ETH(2)")
    assert link["next_boot"]["value"] == 2
    assert devices[0]["params"]["NUM_OF_VFS"]["modified"] is False
    assert devices[0]["params"]["MODULE_SPLIT_M0"]["current"]["array"] == [0, 15]
    assert devices[1]["params"]["LINK_TYPE_P1"]["current"]["label"] == "ETH"
    assert len(devices[1]["params"]) == 2


def test_filtered_query_rows_are_next_boot():
    device = parse_mlxconfig(fixture("mlxconfig", "query_filtered.txt"))["devices"][0]
    assert device["device_type"] == "ConnectX5"
    assert device["params"]["LINK_TYPE_P1"]["next_boot"]["label"] == "IB"
    assert device["params"]["LINK_TYPE_P2"]["next_boot"]["value"] == 2


@pytest.mark.parametrize(
    "parser, name, message",
    [
        (parse_mlxconfig, "error_open_device.txt", "Failed to open device: 0000:c2:00.0"),
        (parse_mlxconfig, "error_set_unsupported.txt", "doesn't support LINK_TYPE_P1"),
    ],
)
def test_mlxconfig_errors_raise(parser, name, message):
    with pytest.raises(ParseError, match=message):
        parser(fixture("mlxconfig", name))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty output"),
        ("sh: 1: mlxconfig: command not found\n", "command not found"),
        ("hello\n", "no device/parameter table"),
    ],
)
def test_mlxconfig_non_output_raises(text, message):
    with pytest.raises(ParseError, match=message):
        parse_mlxconfig(text)


def test_mlxfwreset_query():
    result = parse_mlxfwreset_query(fixture("mlxfwreset", "query_cx7.txt"))
    assert result["default_level"] == 0
    assert result["supported_levels"] == [0, 3, 4]
    assert result["levels"][1] == {
        "id": 1,
        "description": 'Only ARM side will not remain up ("Immediate reset").',
        "supported": False,
        "default": False,
        "reason": None,
    }
    assert len(result["types"]) == 5
    assert result["types"][0]["default"] is True
    assert [s["supported"] for s in result["sync"]] == [False, True]


def test_mlxfwreset_reset_success():
    result = parse_mlxfwreset(fixture("mlxfwreset", "reset_ok.txt"))
    assert result["level"] == 3
    assert result["level_description"] == "Driver restart and PCI reset"
    assert result["success"] is True
    assert result["steps"][-1] == {"step": "Restarting MST", "status": "Skipped"}
    assert len(result["steps"]) == 5


@pytest.mark.parametrize("parser", [parse_mlxfwreset, parse_mlxfwreset_query])
def test_mlxfwreset_unsupported_device_raises(parser):
    with pytest.raises(ParseError, match="Unsupported Device"):
        parser(fixture("mlxfwreset", "error_unsupported.txt"))


def test_filtered_query_keeps_rows_with_their_device():
    devices = parse_mlxconfig(fixture("mlxconfig", "query_filtered_two_devices.txt"))["devices"]
    assert [(d["pci"], d["params"]["LINK_TYPE_P1"]["next_boot"]["label"]) for d in devices] == [("0000:41:00.0", "ETH"), ("0000:81:00.0", "IB")]


# ------------------------------------------ rows without a Configurations: header


def test_headerless_plain_query_row_is_next_boot():
    result = parse_mlxconfig(fixture("mlxconfig", "real_q_grep_row_cx4.txt"))
    device = result["devices"][0]
    assert device["index"] == 1 and device["device_type"] is None
    assert device["params"] == {"LINK_TYPE_P1": {"modified": False, "next_boot": {"raw": "ETH(2)", "label": "ETH", "value": 2}}}
    assert result["warnings"] == []


def test_headerless_extended_query_rows_are_default_current_next_boot():
    params = parse_mlxconfig(fixture("mlxconfig", "real_e_query_grep_rows_cx4.txt"))["devices"][0]["params"]
    assert list(params) == ["KEEP_IB_LINK_UP_P2", "KEEP_LINK_UP_ON_BOOT_P2", "MEMIC_SIZE_LIMIT"]
    keep = params["KEEP_IB_LINK_UP_P2"]
    assert keep["modified"] is True
    assert (keep["default"]["value"], keep["current"]["value"], keep["next_boot"]["value"]) == (0, 1, 1)
    assert params["MEMIC_SIZE_LIMIT"]["next_boot"]["label"] == "DISABLED"


def test_headerless_row_with_two_cells_is_not_guessed():
    text = "         LINK_TYPE_P1             ETH(2)      IB(1)\n         LINK_TYPE_P2             ETH(2)\n"
    result = parse_mlxconfig(text)
    assert list(result["devices"][0]["params"]) == ["LINK_TYPE_P2"]
    assert result["warnings"] == [
        "line 1: 2 value cells without a Configurations: header; expected 1 (q) or 3 (-e q): 'LINK_TYPE_P1             ETH(2)      IB(1)'"
    ]
    with pytest.raises(ParseError, match="no parameter could be read: line 1: 2 value cells"):
        parse_mlxconfig("  LINK_TYPE_P1   ETH(2)   IB(1)\n")
