"""Module switch_lldp: one read-only command per platform, the parsed table, and an unreachable
or unreadable switch reported (unreadable, msg naming the switch) rather than failing."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from parser_fixtures import fixture
from switch_testlib import make

from ansible_collections.linerate.fabric.plugins.module_utils.switch import module_common
from ansible_collections.linerate.fabric.plugins.modules import switch_lldp
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Unreachable

ARGS = {"name": "leaf1", "platform": "nvue", "host": "127.0.1.1", "username": "admin", "password": "s3cret-pw", "known_hosts": "/nonexistent"}


def run(monkeypatch, capsys, platform, answers, check=False, send=None):
    d, fake = make(platform, "leaf1", answers)
    if send:
        d.send = send
    d.close = lambda: None
    monkeypatch.setattr(module_common, "make_driver", lambda p: d)
    with patch_module_args(dict(ARGS, platform=platform, _ansible_check_mode=check)):
        with pytest.raises(SystemExit):
            switch_lldp.main()
    return json.loads(capsys.readouterr().out), fake


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize(
    "platform,command,name,port",
    [
        ("nvue", "nv show interface lldp", "nvue_interface_lldp_cl5.txt", "swp1"),
        ("sonic", "show lldp table", "sonic_lldp_table_2macs.txt", "Ethernet0"),
        ("eos", "show lldp neighbors | json", "eos_lldp_neighbors_sonic_mgmt.json", "Ethernet4"),
    ],
)
def test_reads_the_platform_table_with_one_command(monkeypatch, capsys, check, platform, command, name, port):
    res, fake = run(monkeypatch, capsys, platform, {command: fixture("lldp", name)}, check=check)
    assert fake.sent == [command]
    assert res["changed"] is False and res["unreadable"] is False and res["command"] == command
    assert res["neighbors"][port][0]["system_name"] and port in res["ports"]


def test_rejected_or_unparsable_output_is_reported_not_failed(monkeypatch, capsys):
    res, _ = run(monkeypatch, capsys, "sonic", {"show lldp table": "Error: lldp container is not running"})
    assert res["unreadable"] is True and not res.get("failed") and res["neighbors"] == {}
    assert res["msg"] == "switch leaf1: rejected command 'show lldp table': Error: lldp container is not running"
    res, _ = run(monkeypatch, capsys, "sonic", {"show lldp table": "lldpctl: socket not found\n"})
    assert res["unreadable"] is True and not res.get("failed")
    assert res["msg"].startswith("switch leaf1: show lldp table: line 1:")


def test_unreachable_switch_is_reported_not_failed(monkeypatch, capsys):
    def down(command, timeout=None):
        raise Unreachable("leaf1", "unreachable at 127.0.1.1:22: timed out")

    res, _ = run(monkeypatch, capsys, "eos", {}, send=down)
    assert res["unreadable"] is True and not res.get("failed")
    assert res["msg"] == "switch leaf1: unreachable at 127.0.1.1:22: timed out"
