"""mlxconfig module: exact argv, changed, check mode, idempotence, reset and its verification."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.host import connectx
from ansible_collections.linerate.fabric.plugins.modules import mlxconfig

from module_harness import Tools, fixture, run_module

PCI = "0000:41:00.0"
DESIRED = {"LINK_TYPE_P1": "ETH", "ADVANCED_PCI_SETTINGS": True, "SRIOV_EN": False, "ATS_ENABLED": 0}
QUERY = ["mlxconfig", "-d", PCI, "-e", "q"]
SET = ["mlxconfig", "-d", PCI, "-y", "set", "ADVANCED_PCI_SETTINGS=1", "LINK_TYPE_P1=ETH"]
FWQ = ["mlxfwreset", "-d", PCI, "q"]
RESET = ["mlxfwreset", "-d", PCI, "-l", "3", "-y", "reset"]
STAGES = {"defaults": "query_cx7_ib_defaults.txt", "pending": "query_cx7_eth_pending.txt", "applied": "query_cx7_eth_applied.txt"}


class Card:
    """A ConnectX-7 whose answers follow what was done to it."""

    def __init__(self, stage="defaults", reset_applies=True, fwreset_query=None):
        self.stage = stage
        self.reset_applies = reset_applies
        self.fwreset_query = fwreset_query or (0, fixture("connectx", "fwreset_query_cx7.txt"), "")
        self.tools = Tools({"mlxconfig": self.mlxconfig, "mlxfwreset": self.mlxfwreset})

    def mlxconfig(self, args):
        if args == ["-d", PCI, "-e", "q"]:
            return 0, fixture("connectx", STAGES[self.stage]), ""
        if args[:4] == ["-d", PCI, "-y", "set"]:
            self.stage = "pending"
            return 0, fixture("connectx", "set_cx7_eth.txt"), ""
        raise AssertionError(args)

    def mlxfwreset(self, args):
        if args == ["-d", PCI, "q"]:
            return self.fwreset_query
        if args == ["-d", PCI, "-l", "3", "-y", "reset"]:
            if self.reset_applies:
                self.stage = "applied"
            return 0, fixture("connectx", "fwreset_cx7_ok.txt"), ""
        raise AssertionError(args)


def run(card, capsys, **kw):
    args = {"device": PCI, "params": DESIRED}
    args.update(kw.pop("args", {}))
    return run_module(mlxconfig.main, args, card.tools, capsys, **kw)


def test_fresh_device_sets_only_what_differs(capsys):
    card = Card()
    out = run(card, capsys)
    assert card.tools.calls == [QUERY, SET, QUERY, FWQ]
    assert out["changed"] is True
    assert out["commands"] == [["mlxconfig", "-d", PCI, "-y", "set", "ADVANCED_PCI_SETTINGS=1", "LINK_TYPE_P1=ETH"]]
    assert out["before"]["LINK_TYPE_P1"] == {"default": "IB(1)", "current": "IB(1)", "next_boot": "IB(1)"}
    assert out["after"]["LINK_TYPE_P1"] == {"default": "IB(1)", "current": "IB(1)", "next_boot": "ETH(2)"}
    assert out["pending_reset"] is True
    assert out["pending_params"] == ["ADVANCED_PCI_SETTINGS", "LINK_TYPE_P1"]
    assert out["reset_kind"] == "mlxfwreset_level_3"
    assert "diff" not in out


def test_check_mode_runs_only_queries_and_shows_diff(capsys):
    card = Card()
    out = run(card, capsys, check=True, diff=True)
    assert card.tools.calls == [QUERY, FWQ]
    assert card.stage == "defaults"
    assert out["changed"] is True
    assert out["commands"] == [SET]
    assert out["after"]["LINK_TYPE_P1"]["next_boot"] == "ETH"
    assert out["pending_reset"] is True and out["reset_kind"] == "mlxfwreset_level_3"
    assert "LINK_TYPE_P1=IB(1) (current IB(1))" in out["diff"]["before"]
    assert "LINK_TYPE_P1=ETH (current IB(1))" in out["diff"]["after"]


def test_idempotent_when_running_firmware_matches(capsys):
    card = Card("applied")
    out = run(card, capsys)
    assert card.tools.calls == [QUERY]
    assert out["changed"] is False
    assert out["pending_reset"] is False and out["reset_kind"] is None
    assert out["commands"] == []
    assert out["before"] == out["after"]


def test_change_left_pending_by_an_earlier_run_is_reported_not_rewritten(capsys):
    card = Card("pending")
    out = run(card, capsys)
    assert card.tools.calls == [QUERY, FWQ]
    assert out["changed"] is False
    assert out["pending_reset"] is True
    assert out["pending_params"] == ["ADVANCED_PCI_SETTINGS", "LINK_TYPE_P1"]


def test_reset_applies_and_verifies(capsys):
    card = Card("pending")
    out = run(card, capsys, args={"state": "reset"})
    assert card.tools.calls == [QUERY, FWQ, RESET, QUERY]
    assert out["changed"] is True
    assert out["reset_applied"] == "mlxfwreset_level_3"
    assert out["pending_reset"] is False
    assert out["after"]["LINK_TYPE_P1"]["current"] == "ETH(2)"


def test_reset_from_scratch_sets_then_resets(capsys):
    card = Card()
    out = run(card, capsys, args={"state": "reset"})
    assert card.tools.calls == [QUERY, SET, QUERY, FWQ, RESET, QUERY]
    assert out["changed"] is True and card.stage == "applied"


def test_reset_in_check_mode_runs_nothing(capsys):
    card = Card("pending")
    out = run(card, capsys, check=True, args={"state": "reset"})
    assert card.tools.calls == [QUERY, FWQ]
    assert out["changed"] is True
    assert out["commands"] == [RESET]
    assert card.stage == "pending"


def test_reset_with_nothing_pending_is_idempotent(capsys):
    card = Card("applied")
    out = run(card, capsys, args={"state": "reset"})
    assert card.tools.calls == [QUERY]
    assert out["changed"] is False and out["reset_applied"] is None


def test_parameter_still_different_after_reset_fails_instead_of_looping(capsys):
    card = Card("pending", reset_applies=False)
    out = run(card, capsys, args={"state": "reset"})
    assert out["failed"] is True
    assert card.tools.calls == [QUERY, FWQ, RESET, QUERY]  # one reset, no retry
    assert "still differs on ADVANCED_PCI_SETTINGS, LINK_TYPE_P1" in out["msg"]
    assert out["pending_params"] == ["ADVANCED_PCI_SETTINGS", "LINK_TYPE_P1"]


def test_unsupported_mlxfwreset_means_reboot_and_reset_state_refuses(capsys):
    unsupported = (1, "-E- Unsupported Device: 0000:41:00.0 (ConnectX3).\n", "")
    out = run(Card("pending", fwreset_query=unsupported), capsys)
    assert out["reset_kind"] == "reboot" and out["pending_reset"] is True
    card = Card("pending", fwreset_query=unsupported)
    out = run(card, capsys, args={"state": "reset"})
    assert out["failed"] is True and "need a reboot" in out["msg"]
    assert RESET not in card.tools.calls


def test_cold_reboot_params(capsys):
    out = run(Card("pending"), capsys, args={"cold_reboot_params": ["ADVANCED_PCI_SETTINGS"]})
    assert out["reset_kind"] == "cold_reboot"
    assert "power cycle" in out["reset_reason"]


def test_reboot_params(capsys):
    out = run(Card("pending"), capsys, args={"reboot_params": ["LINK_TYPE_P1"]})
    assert out["reset_kind"] == "reboot" and "host boot" in out["reset_reason"]


def test_verified_state(capsys):
    card = Card("applied")
    out = run(card, capsys, args={"state": "verified"})
    assert out["changed"] is False and card.tools.calls == [QUERY]
    out = run(Card("pending"), capsys, args={"state": "verified"})
    assert out["failed"] is True and "ADVANCED_PCI_SETTINGS, LINK_TYPE_P1" in out["msg"]


def test_unknown_parameter_fails_naming_it(capsys):
    card = Card("applied")
    out = run(card, capsys, args={"params": {"LINK_TYPE_P2": "ETH"}})
    assert out["failed"] is True
    assert "LINK_TYPE_P2" in out["msg"] and card.tools.calls == [QUERY]


def test_tool_error_fails_with_rc_and_output(capsys):
    err = "-E- Failed to open device: 0000:41:00.0. No such file or directory\n"
    tools = Tools({"mlxconfig": lambda args: (3, err, "")})
    out = run_module(mlxconfig.main, {"device": PCI, "params": DESIRED}, tools, capsys)
    assert out["failed"] is True and out["rc"] == 3
    assert "Failed to open device" in out["msg"]


def test_bad_pci_address_fails_before_running_anything(capsys):
    tools = Tools({})
    out = run_module(mlxconfig.main, {"device": "mlx5_0", "params": DESIRED}, tools, capsys)
    assert out["failed"] is True and "PCI address" in out["msg"] and tools.calls == []


@pytest.mark.parametrize(
    "want,cell,same",
    [
        ("ETH", {"raw": "ETH(2)", "label": "ETH", "value": 2}, True),
        ("eth", {"raw": "ETH(2)", "label": "ETH", "value": 2}, True),
        (2, {"raw": "ETH(2)", "label": "ETH", "value": 2}, True),
        ("ETH(2)", {"raw": "ETH(2)", "label": "ETH", "value": 2}, True),
        (True, {"raw": "True(1)", "label": "True", "value": 1}, True),
        (False, {"raw": "True(1)", "label": "True", "value": 1}, False),
        (8, {"raw": "8", "label": None, "value": 8}, True),
        ("IB", {"raw": "ETH(2)", "label": "ETH", "value": 2}, False),
        ("force_relax", {"raw": "force_relax(1)", "label": "force_relax", "value": 1}, True),
    ],
)
def test_value_matching(want, cell, same):
    assert connectx.matches(want, cell) is same


def test_forced_reset_runs_a_burned_image(capsys):
    card = Card("applied")
    out = run(card, capsys, args={"state": "reset", "force": True})
    assert card.tools.calls == [QUERY, RESET, QUERY]
    assert out["changed"] is True and out["reset_applied"] == "mlxfwreset_level_3"
