"""EOS: running-config tree, exact delta commands, idempotence, session/commit-timer paths."""
import pytest

from switch_testlib import fixture, make, render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch import eos
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError, run_apply

PORTS = ["Ethernet1/1", "Ethernet2/1"]
ECN = "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100"

EXPECTED = [
    "qos map dscp 26 to traffic-class 3",
    "qos map dscp 48 to traffic-class 6",
    "interface Ethernet1/1",
    "no priority-flow-control priority 4 no-drop",
    "mtu 9216",
    "speed 400g",
    "tx-queue 3", ECN, "exit",
    "exit",
    "interface Ethernet2/1",
    "mtu 9216",
    "speed 400g",
    "qos trust dscp",
    "priority-flow-control on",
    "priority-flow-control priority 3 no-drop",
    "tx-queue 3", ECN, "exit",
    "exit",
]


def test_parse_explodes_dscp_maps_and_keys_lines():
    tree = eos.parse_eos_config(fixture("eos_running.txt"))
    assert tree["qos map dscp 27"][0] == "qos map dscp 27 to traffic-class 2"
    intf = tree["interface Ethernet1/1"][1]
    assert intf["mtu"][0] == "mtu 9000"
    assert intf["priority-flow-control priority 4"][0] == "priority-flow-control priority 4 no-drop"
    assert eos.qos_from_tree(tree, "Ethernet1/1") == {"pfc": [3, 4], "ecn": False}
    assert eos.qos_from_tree(tree, "Ethernet2/1") == {"pfc": [], "ecn": True}


def test_exact_delta_commands():
    d, _ = make("eos")
    want = d.parse(render("eos", PORTS))
    have = d.parse(fixture("eos_running.txt"))
    assert d.commands(want, have, d.managed_scope(want, PORTS)) == EXPECTED


def test_idempotent():
    d, _ = make("eos")
    want = d.parse(render("eos", PORTS))
    assert d.commands(want, want, d.managed_scope(want, PORTS)) == []


def test_oper_parsers():
    st = eos.parse_interfaces_status(fixture("eos_interfaces_status.txt"))
    assert st["Ethernet1/1"]["up"] is True and st["Ethernet2/1"]["up"] is False
    assert eos.parse_sessions(fixture("eos_sessions.txt")) == [
        ("linerate_20261122T040000Z", "completed"), ("maint", "pending")]


def test_pending_session_blocks_the_push():
    d, fake = make("eos", answers={"show running-config": fixture("eos_running.txt"),
                                   "show configuration sessions": fixture("eos_sessions.txt")})
    with pytest.raises(SwitchError, match="switch sw: uncommitted configuration is pending.*maint is pending"):
        run_apply(d, render("eos", PORTS), ports=PORTS)
    assert not any(c.startswith("configure") for c in fake.sent)


def test_rejected_line_aborts_the_session(tmp_path):
    listing = fixture("eos_sessions.txt").replace("* maint                          pending   ",
                                                  "  linerate_T1                    pending   ")
    d, fake = make("eos", answers={
        "show running-config": fixture("eos_running.txt"),
        "speed 400g": "% Invalid input (at token 1: '400g')",
        "show configuration sessions": ["", listing, ""],
    })
    with pytest.raises(SwitchError, match="switch sw: push failed: rejected command 'speed 400g'") as err:
        run_apply(d, render("eos", PORTS), ports=PORTS, backup_dir=str(tmp_path), stamp="T1")
    assert fake.sent[2] == "configure session linerate_T1"
    i = fake.sent.index("speed 400g")
    assert fake.sent[i + 1:] == ["end", "show configuration sessions", "configure session linerate_T1 abort",
                                 "show running-config", "show configuration sessions"]
    assert err.value.rolled_back is True
    assert not any(c.startswith("commit") for c in fake.sent)


def test_commit_timer_then_abort_when_post_check_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "eos", PORTS)
    before = d.get_running()
    sim.sw.link_down.add("Ethernet2/1")
    with pytest.raises(SwitchError, match="post-check failed: Ethernet2/1: link is down; rolled back") as err:
        run_apply(d, render("eos", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"), confirm_timeout=3723,
                  want_pfc=[3], want_ecn=True, stamp="T2")
    assert "commit timer 01:02:03" in sim.sent
    assert "configure session linerate_T2 abort" in sim.sent
    assert err.value.rolled_back is True and d.get_running() == before


def test_apply_confirm_and_idempotence_on_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "eos", PORTS)
    res = run_apply(d, render("eos", PORTS), ports=PORTS, want_pfc=[3], want_ecn=True, stamp="T3")
    assert res["changed"] and sim.sent[-2:] == ["configure session linerate_T3 commit", "write memory"]
    assert sim.sw.sessions["linerate_T3"]["state"] == "completed"
    assert run_apply(d, render("eos", PORTS), ports=PORTS)["commands"] == []
