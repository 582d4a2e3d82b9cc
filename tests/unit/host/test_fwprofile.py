"""Firmware profiles (module_utils/host/fwprofile.py), their intent key and module mlxconfig's profile option."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.host import connectx
from ansible_collections.linerate.fabric.plugins.module_utils.host import fwprofile
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import FIRMWARE_PROFILES, effective
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.modules import mlxconfig

from module_harness import Tools, fixture, run_module

PCI = "0000:41:00.0"
QUERY = ["mlxconfig", "-d", PCI, "-e", "q"]


@pytest.mark.parametrize(
    "device_type,value", [("ConnectX6DX", 44), ("BlueField2", 44), ("ConnectX6", 44), ("ConnectX7", 0), ("BlueField3", 0), ("ConnectX8", 0), ("connectx7", 0)]
)
def test_gpudirect_per_generation(device_type, value):
    params, notes = fwprofile.profile_params("gpudirect", device_type)
    assert params == {"ADVANCED_PCI_SETTINGS": True, "ATS_ENABLED": False, "MAX_ACC_OUT_READ": value}
    assert notes == []


def test_gpudirect_on_an_unknown_generation_leaves_max_acc_out_read_alone_and_says_so():
    params, notes = fwprofile.profile_params("gpudirect", "ConnectX4")
    assert params == {"ADVANCED_PCI_SETTINGS": True, "ATS_ENABLED": False}
    assert len(notes) == 1 and "MAX_ACC_OUT_READ left alone: ConnectX4" in notes[0] and "ConnectX-7" in notes[0]


def test_default_and_none():
    assert fwprofile.profile_params("default", "ConnectX7") == ({"ADVANCED_PCI_SETTINGS": False, "ATS_ENABLED": False}, [])
    assert fwprofile.profile_params("none", "ConnectX7") == ({}, [])
    for profile in fwprofile.PROFILES:
        assert set(fwprofile.profile_params(profile, "ConnectX7")[0]) <= set(fwprofile.MANAGED)


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match=r"'fast' is not allowed \(allowed: gpudirect \| default \| none\)"):
        fwprofile.profile_params("fast", "ConnectX7")


def test_intent_knows_the_same_profiles_and_defaults_to_default():
    assert FIRMWARE_PROFILES == fwprofile.PROFILES
    assert effective({})["firmware"] == {"profile": "default"}
    assert schema.validate_fabric({"firmware": {"profile": "gpudirect"}}) == []
    assert schema.validate_fabric({"firmware": {"profile": "none"}}) == []


@pytest.mark.parametrize(
    "given,message",
    [
        ({"profile": "fast"}, "fabric.firmware.profile: 'fast' is not allowed (allowed: gpudirect | default | none)"),
        ({"profile": True}, "fabric.firmware.profile: True is not allowed (allowed: gpudirect | default | none)"),
        ({"profil": "gpudirect"}, "fabric.firmware.profil: 'gpudirect' is not allowed (unknown key; allowed keys: profile)"),
    ],
)
def test_intent_messages_name_key_value_and_allowed(given, message):
    assert schema.validate_fabric({"firmware": given}) == [message]


def test_intent_firmware_block_must_be_a_mapping():
    assert schema.validate_fabric({"firmware": "gpudirect"}) == ["fabric.firmware: 'gpudirect' is not allowed (allowed: a mapping)"]


APPLIED = fixture("connectx", "query_cx7_eth_applied.txt")
# The same card once ADVANCED_PCI_SETTINGS runs: the hidden MAX_ACC_OUT_READ shows (default 0 = auto).
VISIBLE = APPLIED.replace(
    "        PCI_WR_ORDERING ",
    "        MAX_ACC_OUT_READ                                0                                 0                                 32\n        PCI_WR_ORDERING ",
)


def card(text):
    def mlxconfig_tool(args):
        if args == ["-d", PCI, "-e", "q"]:
            return 0, text, ""
        raise AssertionError(args)

    return Tools({"mlxconfig": mlxconfig_tool, "mlxfwreset": lambda args: (1, "", "-E- not supported")})


def test_gpudirect_skips_the_hidden_parameter_and_names_it(capsys):
    tools = card(APPLIED)
    out = run_module(mlxconfig.main, {"device": PCI, "params": {"LINK_TYPE_P1": "ETH"}, "profile": "gpudirect"}, tools, capsys)
    assert tools.calls == [QUERY]
    assert out["changed"] is False
    assert out["profile_params"] == {"ADVANCED_PCI_SETTINGS": True, "ATS_ENABLED": False}
    assert out["profile_skipped"] == ["MAX_ACC_OUT_READ"]
    # the warning the module emits (module.warn) for it
    dev = {"device_type": "ConnectX7", "params": {"ADVANCED_PCI_SETTINGS": {}, "ATS_ENABLED": {}}}
    desired, used, skipped, notes = connectx.with_profile(dev, {"LINK_TYPE_P1": "ETH"}, "gpudirect")
    assert skipped == ["MAX_ACC_OUT_READ"] and "MAX_ACC_OUT_READ" not in desired
    assert desired == {"ADVANCED_PCI_SETTINGS": True, "ATS_ENABLED": False, "LINK_TYPE_P1": "ETH"}
    assert len(notes) == 1 and "MAX_ACC_OUT_READ skipped" in notes[0] and "ADVANCED_PCI_SETTINGS=1" in notes[0]


def test_gpudirect_sets_max_acc_out_read_once_visible(capsys):
    tools = card(VISIBLE)
    out = run_module(mlxconfig.main, {"device": PCI, "params": {"LINK_TYPE_P1": "ETH"}, "profile": "gpudirect"}, tools, capsys, check=True)
    assert out["changed"] is True and out["profile_skipped"] == []
    assert out["commands"] == [["mlxconfig", "-d", PCI, "-y", "set", "MAX_ACC_OUT_READ=0"]]


def test_default_profile_turns_advanced_pci_settings_back_off_and_explicit_params_win(capsys):
    out = run_module(mlxconfig.main, {"device": PCI, "params": {"LINK_TYPE_P1": "ETH"}, "profile": "default"}, card(APPLIED), capsys, check=True)
    assert out["commands"] == [["mlxconfig", "-d", PCI, "-y", "set", "ADVANCED_PCI_SETTINGS=0"]]
    out = run_module(mlxconfig.main, {"device": PCI, "params": {"ADVANCED_PCI_SETTINGS": True}, "profile": "default"}, card(APPLIED), capsys, check=True)
    assert out["changed"] is False and out["profile_params"] == {"ADVANCED_PCI_SETTINGS": False, "ATS_ENABLED": False}


def test_no_profile_and_none_profile_manage_only_the_given_params(capsys):
    plain = run_module(mlxconfig.main, {"device": PCI, "params": {"LINK_TYPE_P1": "ETH"}}, card(APPLIED), capsys)
    assert plain["changed"] is False and "profile" not in plain
    none = run_module(mlxconfig.main, {"device": PCI, "params": {"LINK_TYPE_P1": "ETH"}, "profile": "none"}, card(APPLIED), capsys)
    assert none["changed"] is False and none["profile_params"] == {}
