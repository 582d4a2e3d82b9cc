"""The modules end to end with the device I/O replaced: arguments, check mode, changed, no_log."""
import json

import pytest
from ansible.module_utils.testing import patch_module_args

from switch_testlib import fixture, make, render

from ansible_collections.linerate.fabric.plugins.modules import switch_config, switch_info

PORTS = ["swp1", "swp2"]
ARGS = {"name": "leaf1", "platform": "nvue", "host": "127.0.1.1", "username": "admin",
        "password": "s3cret-pw", "known_hosts": "/nonexistent", "fabric_ports": PORTS}


def run_module(mod, args, monkeypatch, capsys, answers, check=False):
    d, fake = make("nvue", "leaf1", answers)
    d.close = lambda: None
    monkeypatch.setattr(mod, "make_driver", lambda p: d)
    extra = {"_ansible_check_mode": check, "_ansible_diff": True}
    with patch_module_args(dict(args, **extra)):
        with pytest.raises(SystemExit):
            mod.main()
    return json.loads(capsys.readouterr().out), fake


def test_switch_config_check_mode_reports_commands_and_diff_only(monkeypatch, capsys, tmp_path):
    args = dict(ARGS, config=render("nvue", PORTS), backup_dir=str(tmp_path))
    res, fake = run_module(switch_config, args, monkeypatch, capsys,
                           {"nv config show -o commands": fixture("nvue_config_show_commands.txt")}, check=True)
    assert res["changed"] is True and fake.sent == ["nv config show -o commands"]
    assert "nv set interface swp2 qos pfc profile linerate" in res["commands"]
    assert "link mtu 9216" in res["diff"]["after"] and res["backup_path"] is None
    assert res["command_log"][0]["output"].startswith("<running configuration")
    assert "s3cret-pw" not in json.dumps(res) and not list(tmp_path.iterdir())


def test_switch_config_unchanged_when_at_intent(monkeypatch, capsys, tmp_path):
    text = render("nvue", PORTS)
    res, fake = run_module(switch_config, dict(ARGS, config=text, backup_dir=str(tmp_path)), monkeypatch, capsys,
                           {"nv config show -o commands": text})
    assert res["changed"] is False and res["commands"] == [] and fake.sent == ["nv config show -o commands"]


def test_switch_config_failure_names_the_switch(monkeypatch, capsys, tmp_path):
    res, _ = run_module(switch_config, dict(ARGS, config=render("nvue", PORTS), backup_dir=str(tmp_path)),
                        monkeypatch, capsys, {"nv config show -o commands": fixture("nvue_config_show_commands.txt"),
                                              "nv config diff": "- set:\n    system:\n      hostname: x"})
    assert res["failed"] and res["msg"].startswith("switch leaf1: uncommitted configuration is pending")


def test_switch_info_reports_ports(monkeypatch, capsys):
    res, _ = run_module(switch_info, ARGS, monkeypatch, capsys, {
        "nv config show -o commands": fixture("nvue_config_show_commands.txt"),
        "nv show interface": fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt")})
    assert res["changed"] is False and res["pending"] == []
    assert res["ports"] == {"swp1": {"up": True, "pfc": [3], "ecn": True},
                            "swp2": {"up": False, "pfc": [], "ecn": False}}
    assert res["ports_down"] == ["swp2"] and "running_config" not in res
    assert res["problems"] == ["swp2: link is down"]  # PFC and ECN are not judged unless asked


def test_switch_info_post_check_is_the_one_switch_config_runs(monkeypatch, capsys):
    answers = {"nv config show -o commands": fixture("nvue_config_show_commands.txt"),
               "nv show interface": fixture("nvue_show_interface.txt"),
               "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
               "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt")}
    res, _ = run_module(switch_info, dict(ARGS, no_drop_priority=3, ecn=True), monkeypatch, capsys, answers)
    assert res["problems"] == ["swp2: link is down", "swp2: PFC on priorities [] (want [3])", "swp2: ECN off (want on)"]
    res, _ = run_module(switch_info, dict(ARGS, no_drop_priority=4, ecn=False, require_ports_up=False),
                        monkeypatch, capsys, answers)
    assert res["problems"] == ["swp1: PFC on priorities [3] (want [4])", "swp1: ECN on (want off)",
                               "swp2: PFC on priorities [] (want [4])"]


def test_switch_counters_reads_the_roce_class_and_names_what_nvue_lacks(monkeypatch, capsys):
    from ansible_collections.linerate.fabric.plugins.modules import switch_counters
    counters = fixture_counters("nvue_roce_counters_cl512.txt")
    res, fake = run_module(switch_counters, ARGS, monkeypatch, capsys, {
        "nv show interface": fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
        "nv show interface swp1 qos roce counters": counters,
        "nv show interface swp2 qos roce counters": counters,
        "nv show interface swp1 link stats": link_stats("nvue_link_stats_reference.txt"),
        "nv show interface swp2 link stats": link_stats("nvue_link_stats_described.txt")})
    assert res["changed"] is False and res["ports_missing"] == []
    assert res["errors_msg"] == ""
    assert res["errors"]["swp1"] == {"errors": {"in-errors": 0, "out-errors": 0}, "link_down": 6,
                                     "link_down_unit": "transitions", "missing": []}
    assert res["errors"]["swp2"]["missing"] == ["out-errors"]
    swp1 = res["ports"]["swp1"]
    assert swp1["ecn_marked"] == 693777677344 and swp1["drops"] == {"3": 663060754115}
    assert swp1["tx_pause"] == {"3": 0} and not swp1["per_priority"] and swp1["missing"]
    assert res["ports"]["swp2"]["tx_pause"] == {"roce": 0}  # PFC off: the RoCE class has no priority
    assert not [c for c in fake.sent if c.startswith("nv set") or "apply" in c]


def test_switch_counters_bad_output_fails_naming_the_switch(monkeypatch, capsys):
    from ansible_collections.linerate.fabric.plugins.modules import switch_counters
    res, _ = run_module(switch_counters, dict(ARGS, fabric_ports=["swp1"]), monkeypatch, capsys, {
        "nv show interface": fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp1 qos roce counters": "operational applied\nrx-stats\n"})
    assert res["failed"] and res["msg"].startswith("leaf1: nv show qos roce counters: no table")


def test_switch_counters_unreadable_error_counters_keep_the_congestion_counters(monkeypatch, capsys):
    from ansible_collections.linerate.fabric.plugins.modules import switch_counters
    res, _ = run_module(switch_counters, dict(ARGS, fabric_ports=["swp1"]), monkeypatch, capsys, {
        "nv show interface": fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp1 qos roce counters": fixture_counters("nvue_roce_counters_cl512.txt"),
        "nv show interface swp1 link stats": "Error: The requested item does not exist."})
    assert not res.get("failed") and res["ports"]["swp1"]["ecn_marked"] == 693777677344
    assert res["errors"] == {} and "leaf1" in res["errors_msg"]
    assert "nv show interface swp1 link stats" in res["errors_msg"] and "does not exist" in res["errors_msg"]


def link_stats(name):
    from parser_fixtures import fixture as source_fixture
    return source_fixture("counters", name)


def fixture_counters(name):
    """A counters fixture as the switch printed it (without its ``#source:`` line)."""
    from parser_fixtures import fixture as source_fixture
    return source_fixture("counters", name)


def test_switch_info_config_returns_the_delta_switch_config_would_push(monkeypatch, capsys, tmp_path):
    """The pre-check's delta is the window's: same read, same commands, nothing sent beyond reads."""
    answers = {"nv config show -o commands": fixture("nvue_config_show_commands.txt"),
               "nv show interface": fixture("nvue_show_interface.txt"),
               "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
               "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt")}
    text = render("nvue", PORTS)
    info, fake = run_module(switch_info, dict(ARGS, config=text), monkeypatch, capsys, answers)
    window, _ = run_module(switch_config, dict(ARGS, config=text, backup_dir=str(tmp_path)), monkeypatch, capsys,
                           answers, check=True)
    assert info["commands"] and info["commands"] == window["commands"]
    assert not [c for c in fake.sent if c.startswith("nv set") or "apply" in c]
    at_intent, _ = run_module(switch_info, dict(ARGS, config=text), monkeypatch, capsys,
                              dict(answers, **{"nv config show -o commands": text}))
    assert at_intent["commands"] == []
    plain, _ = run_module(switch_info, ARGS, monkeypatch, capsys, answers)
    assert "commands" not in plain


def test_switch_info_config_outside_the_managed_scope_fails(monkeypatch, capsys):
    answers = {"nv config show -o commands": fixture("nvue_config_show_commands.txt"),
               "nv show interface": fixture("nvue_show_interface.txt"),
               "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
               "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt")}
    res, _ = run_module(switch_info, dict(ARGS, config="nv set system hostname evil\n"), monkeypatch, capsys,
                        answers)
    assert res["failed"] and "outside the managed scope" in res["msg"]
