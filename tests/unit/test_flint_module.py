"""flint module: PSID guard, burn only when versions differ, check mode, idempotence."""
from ansible_collections.linerate.fabric.plugins.module_utils import flint as flint_utils
from ansible_collections.linerate.fabric.plugins.modules import flint

from module_harness import Tools, fixture, run_module

PCI = "0000:41:00.0"
IMAGE = "/var/lib/linerate/fw/cx7.bin"
DEVQ = ["flint", "-d", PCI, "q"]
IMGQ = ["flint", "-i", IMAGE, "q"]
BURN = ["flint", "-d", PCI, "-i", IMAGE, "-y", "burn"]


class Card:
    def __init__(self, state="device_28_39_2048.txt", image="image_28_43_1014.txt"):
        self.state, self.image = state, image
        self.tools = Tools({"flint": self.flint})

    def flint(self, args):
        if args == ["-d", PCI, "q"]:
            return 0, fixture("flint", self.state), ""
        if args == ["-i", IMAGE, "q"]:
            return 0, fixture("flint", self.image), ""
        if args == ["-d", PCI, "-i", IMAGE, "-y", "burn"]:
            self.state = "device_28_43_1014_pending.txt"
            return 0, "\n    Current FW version on flash:  28.39.2048\n    New FW version:               28.43.1014\n\nBurning FW image without signatures - OK\nRestoring signature                     - OK\n", ""
        raise AssertionError(args)


def test_burns_when_versions_differ(capsys):
    card = Card()
    out = run_module(flint.main, {"device": PCI, "image": IMAGE, "psid": "MT_0000000838"}, card.tools, capsys)
    assert card.tools.calls == [DEVQ, IMGQ, BURN, DEVQ]
    assert out["changed"] is True and out["commands"] == [BURN]
    assert out["pending_reset"] is True and out["reset_kind"] == "mlxfwreset_level_3"
    assert out["after"] == {"fw_version": "28.43.1014", "fw_version_running": "28.39.2048", "psid": "MT_0000000838"}


def test_check_mode_does_not_burn(capsys):
    card = Card()
    out = run_module(flint.main, {"device": PCI, "image": IMAGE}, card.tools, capsys, check=True, diff=True)
    assert card.tools.calls == [DEVQ, IMGQ]
    assert out["changed"] is True and out["commands"] == [BURN]
    assert "28.43.1014" in out["diff"]["after"]


def test_idempotent_when_burned(capsys):
    card = Card("device_28_43_1014_pending.txt")
    out = run_module(flint.main, {"device": PCI, "image": IMAGE}, card.tools, capsys)
    assert card.tools.calls == [DEVQ, IMGQ]
    assert out["changed"] is False and out["pending_reset"] is True  # burned, not running yet


def test_psid_mismatch_refuses(capsys):
    card = Card(image="image_other_psid.txt")
    out = run_module(flint.main, {"device": PCI, "image": IMAGE}, card.tools, capsys)
    assert out["failed"] is True and "refusing to burn another board's firmware" in out["msg"]
    assert BURN not in card.tools.calls


def test_expected_psid_checked_against_device(capsys):
    card = Card()
    out = run_module(flint.main, {"device": PCI, "image": IMAGE, "psid": "MT_0000001244"}, card.tools, capsys)
    assert out["failed"] is True and "not the expected MT_0000001244" in out["msg"]


def test_downgrade_needs_opt_in(capsys):
    card = Card(state="image_28_43_1014.txt", image="device_28_39_2048.txt")
    out = run_module(flint.main, {"device": PCI, "image": IMAGE}, card.tools, capsys)
    assert out["failed"] is True and "older" in out["msg"]


def test_read_flint_query_error():
    try:
        flint_utils.read_flint_query("-E- Cannot open Device: 0000:41:00.0. No such file or directory. MFE_CR_ERROR\n")
    except ValueError as e:
        assert "Cannot open Device" in str(e)
    else:
        raise AssertionError("no error")
