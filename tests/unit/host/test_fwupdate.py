"""mlxfwmanager module: PSID guard, update only when versions differ, check mode, idempotence."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.host import fwupdate
from ansible_collections.linerate.fabric.plugins.modules import mlxfwmanager

from module_harness import Tools, fixture, run_module

PCI = "0000:41:00.0"
IMAGE = "/opt/mellanox/mlnx-fw-updater/firmware/fw-ConnectX7-rel-28_43_1014-MCX75310AAS-NEA_Ax.bin"
QUERY = ["mlxfwmanager", "--query", "-d", PCI, "-i", IMAGE]
UPDATE = ["mlxfwmanager", "-d", PCI, "-i", IMAGE, "-u", "-y"]


class Card:
    def __init__(self, state="query_update_required.txt"):
        self.state = state
        self.tools = Tools({"mlxfwmanager": self.mlxfwmanager})

    def mlxfwmanager(self, args):
        if args == QUERY[1:]:
            return 0, fixture("mlxfwmanager", self.state), ""
        if args[:6] == UPDATE[1:]:
            self.state = "query_burned_pending.txt"
            return 0, fixture("mlxfwmanager", "update_ok.txt"), ""
        raise AssertionError(args)


def run(card, capsys, **kw):
    args = {"device": PCI, "image": IMAGE}
    args.update(kw.pop("args", {}))
    return run_module(mlxfwmanager.main, args, card.tools, capsys, **kw)


def test_updates_when_versions_differ(capsys):
    card = Card()
    out = run(card, capsys, args={"psid": "MT_0000000838"})
    assert card.tools.calls == [QUERY, UPDATE, QUERY]
    assert out["changed"] is True and out["commands"] == [UPDATE]
    assert out["before"] == {"fw_version": "28.39.2048", "fw_version_running": "28.39.2048", "psid": "MT_0000000838"}
    assert out["after"] == {"fw_version": "28.43.1014", "fw_version_running": "28.39.2048", "psid": "MT_0000000838"}
    assert out["pending_reset"] is True and out["reset_kind"] == "mlxfwreset_level_3"


def test_check_mode_only_queries(capsys):
    card = Card()
    out = run(card, capsys, check=True, diff=True)
    assert card.tools.calls == [QUERY]
    assert out["changed"] is True and out["commands"] == [UPDATE]
    assert "28.43.1014" in out["diff"]["after"] and "28.39.2048" in out["diff"]["before"]


def test_idempotent_once_burned_and_reports_the_pending_reset(capsys):
    card = Card("query_burned_pending.txt")
    out = run(card, capsys)
    assert card.tools.calls == [QUERY]
    assert out["changed"] is False and out["pending_reset"] is True


def test_idempotent_when_running(capsys):
    card = Card("query_up_to_date.txt")
    out = run(card, capsys)
    assert out["changed"] is False and out["pending_reset"] is False and out["reset_kind"] is None


def test_image_for_another_psid_is_refused(capsys):
    card = Card("query_other_psid.txt")
    out = run(card, capsys)
    assert out["failed"] is True and "refusing to burn another board's firmware" in out["msg"]
    assert card.tools.calls == [QUERY]


def test_expected_psid(capsys):
    out = run(Card(), capsys, args={"psid": "MT_0000001244"})
    assert out["failed"] is True and "not the expected MT_0000001244" in out["msg"]


def test_downgrade_needs_opt_in_and_then_forces(capsys):
    out = run(Card("query_older_image.txt"), capsys)
    assert out["failed"] is True and "older" in out["msg"]
    card = Card("query_older_image.txt")
    out = run(card, capsys, check=True, args={"allow_downgrade": True})
    assert out["commands"] == [UPDATE + ["-f"]]


def test_bad_device_fails_before_running_anything(capsys):
    tools = Tools({})
    out = run_module(mlxfwmanager.main, {"device": "mlx5_0", "image": IMAGE}, tools, capsys)
    assert out["failed"] is True and tools.calls == []


def test_tool_error(capsys):
    tools = Tools({"mlxfwmanager": lambda a: (1, "-E- Failed to open image file: /nope\n", "")})
    out = run_module(mlxfwmanager.main, {"device": PCI, "image": "/nope"}, tools, capsys)
    assert out["failed"] is True and "Failed to open image file" in out["msg"] and out["rc"] == 1


def test_reader_on_the_real_layout_with_running_row():
    devs = fwupdate.read_mlxfwmanager_query(fixture("mlxfwmanager", "query_burned_pending.txt"))
    assert devs == [
        {
            "psid": "MT_0000000838",
            "part_number": "MCX75310AAS-NEAT_Ax",
            "pci": "41:00.0",
            "fw_current": "28.43.1014",
            "fw_available": "28.43.1014",
            "fw_running": "28.39.2048",
            "status": "Up to date",
        }
    ]
    with pytest.raises(ValueError):
        fwupdate.read_mlxfwmanager_query("Querying Mellanox devices firmware ...\n\n")
