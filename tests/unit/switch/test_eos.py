"""EOS: running-config tree, exact delta commands, idempotence, session/commit-timer paths."""

import pytest

from switch_testlib import fixture, make, render, sim_driver, unlocked

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import eos
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

PORTS = ["Ethernet1/1", "Ethernet2/1"]
ECN = "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100"
WD = [
    "priority-flow-control pause watchdog",
    "priority-flow-control pause watchdog port action drop",
    "priority-flow-control pause watchdog port timer timeout 0.2 polling-interval auto recovery-time 0.2",
]

EXPECTED = [
    "qos map dscp 26 to traffic-class 3",
    "qos map dscp 48 to traffic-class 6",
    "interface Ethernet1/1",
    "no priority-flow-control priority 4 no-drop",
    "mtu 9214",
    "speed 400g-8",
    *WD,
    "tx-queue 3",
    ECN,
    "exit",
    "exit",
    "interface Ethernet2/1",
    "mtu 9214",
    "speed 400g-8",
    "qos trust dscp",
    "priority-flow-control on",
    "priority-flow-control priority 3 no-drop",
    *WD,
    "tx-queue 3",
    ECN,
    "exit",
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
    assert eos.parse_sessions(fixture("eos_sessions.txt")) == [("linerate_20261122T040000Z", "completed"), ("maint", "pending")]


def test_pending_session_blocks_the_push():
    d, fake = make("eos", answers={"show running-config": fixture("eos_running.txt"), "show configuration sessions": fixture("eos_sessions.txt")})
    with pytest.raises(SwitchError, match="switch sw: uncommitted configuration is pending.*maint is pending"):
        run_apply(d, render("eos", PORTS), ports=PORTS)
    assert not any(c.startswith("configure") for c in fake.sent)


def test_rejected_line_aborts_the_session(tmp_path):
    listing = fixture("eos_sessions.txt").replace("* maint                          pending   ", "  linerate-T1                    pending   ")
    d, fake = make(
        "eos",
        answers={
            "show running-config": fixture("eos_running.txt"),
            "speed 400g-8": "% Invalid input (at token 1: '400g-8')",
            "show configuration sessions": ["", listing, ""],
        },
    )
    with pytest.raises(SwitchError, match="switch sw: push failed: rejected command 'speed 400g-8'") as err:
        run_apply(d, render("eos", PORTS), ports=PORTS, backup_dir=str(tmp_path), stamp="T1")
    sent = unlocked(fake.sent)
    assert sent[2:4] == ["configure session linerate-T1", "show running-config"]  # begin, then the re-read
    i = sent.index("speed 400g-8")
    assert sent[i + 1 :] == ["end", "show configuration sessions", "configure session linerate-T1 abort", "show running-config", "show configuration sessions"]
    assert err.value.rolled_back is True
    assert not any(c.startswith("commit") for c in fake.sent)


def test_commit_timer_then_abort_when_post_check_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "eos", PORTS)
    before = d.get_running()
    sim.sw.link_down.add("Ethernet2/1")
    with pytest.raises(SwitchError, match="post-check failed: Ethernet2/1: link is down; rolled back") as err:
        run_apply(d, render("eos", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"), confirm_timeout=3723, want_pfc=[3], want_ecn=True, stamp="T2")
    assert "commit timer 01:02:03" in sim.sent
    assert "configure session linerate-T2 abort" in sim.sent
    assert err.value.rolled_back is True and d.get_running() == before


def test_apply_confirm_and_idempotence_on_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "eos", PORTS)
    res = run_apply(d, render("eos", PORTS), ports=PORTS, want_pfc=[3], want_ecn=True, stamp="T3")
    assert res["changed"] and unlocked(sim.sent)[-2:] == ["configure session linerate-T3 commit", "write memory"]
    assert sim.sw.sessions["linerate-T3"]["state"] == "completed"
    assert run_apply(d, render("eos", PORTS), ports=PORTS)["commands"] == []


# ---------------------------------------------------------------- parsers: headers, rows, JSON, messages


def test_interfaces_status_json():
    assert eos.parse_interfaces_status(fixture("eos_interfaces_status.json")) == {
        "Ethernet1/1": {"up": True, "status": "connected"},
        "Ethernet2/1": {"up": False, "status": "notconnect"},
    }


@pytest.mark.parametrize(
    "text,message",
    [
        ('{"interfaceStatuses": []}', "eos: show interfaces status | json: no interfaceStatuses object"),
        ('{"interfaces": {}}', "eos: show interfaces status | json: no interfaceStatuses object"),
        ('{"interfaceStatuses": {"Et1": {}}}', "eos: show interfaces status | json: 'Et1' has no linkStatus"),
        ("Port-Channel10   uplink   connected   routed\n", "eos: show interfaces status: no 'Port ... Status' header line"),
        ("", "eos: show interfaces status: no 'Port ... Status' header line"),
        ("% Invalid input\n", "eos: line 1: % Invalid input"),
        ("Port   Name   LinkStatus\n", "eos: line 1: no Port and Status columns in the header: 'Port   Name   LinkStatus'"),
        ("Port   Name   Status\nEt1    x    connected\n", "eos: line 2 does not fit the header's columns: 'Et1    x    connected'"),
    ],
)
def test_interfaces_status_errors(text, message):
    with pytest.raises(eos.ParseError) as err:
        eos.parse_interfaces_status(text)
    assert str(err.value) == message and err.value.tool == "eos"


def test_interfaces_status_text_after_a_preamble():
    text = "Load interval: 5 min\nInterface Status summary follows\n\n" + fixture("eos_interfaces_status.txt").replace("\n", "\n\n", 1)
    assert eos.parse_interfaces_status(text) == {"Ethernet1/1": {"up": True, "status": "connected"}, "Ethernet2/1": {"up": False, "status": "notconnect"}}


def test_sessions_rows_without_user_or_terminal():
    text = (
        "  Name      State         User    Terminal\n"
        "  --------- ------------- ------- --------\n"
        "  s1        completed\n"
        "* s2        pending       admin   vty3\n"
        "  lonely\n"
    )
    assert eos.parse_sessions(text) == [("s1", "completed"), ("s2", "pending")]
    assert eos.parse_sessions("s1 pending\n") == []  # no table rule: no rows


def test_parse_errors_name_eos():
    with pytest.raises(eos.ParseError) as err:
        eos.parse_eos_config("% Invalid input (at token 1)\n")
    assert str(err.value) == "eos: % Invalid input (at token 1)" and err.value.tool == "eos"
    d, _ = make("eos", "spine1")
    with pytest.raises(SwitchError) as err:
        d.parse("% Invalid input\n")
    assert str(err.value) == "switch spine1: eos: % Invalid input"


# ---------------------------------------------------------------- pending state and the session steps


def test_pending_names_each_unfinished_session():
    text = fixture("eos_sessions.txt") + "  other                          pendingCommitTimer   ops   vty\n"
    d, fake = make("eos", answers={"show configuration sessions": text})
    assert d.pending() == ["configure session maint is pending", "configure session other is pendingCommitTimer"]
    assert fake.sent == ["show configuration sessions"]


def test_session_window_commands():
    d, fake = make("eos", answers={"abort": "% Not in a session"})
    d.begin("T1")
    d.commit(59)
    d.commit(3600 * 25 + 61)
    d.confirm()
    d.begin("T2")
    d.rollback()
    d.begin("T3")
    d.abort()  # never fails
    assert fake.sent == [
        "configure session linerate-T1",
        "commit timer 00:00:59",
        "commit timer 25:01:01",
        "configure session linerate-T1 commit",
        "write memory",
        "configure session linerate-T2",
        "configure session linerate-T2 abort",
        "configure session linerate-T3",
        "abort",
    ]
    assert d._session is None


@pytest.mark.parametrize("state,aborts", [("pending", True), ("pendingCommitTimer", True), ("completed", False), (None, False)])
def test_undo_aborts_the_window_session_unless_completed(state, aborts):
    row = f"  linerate-T1    {state}    admin   vty\n" if state else ""
    listing = "  Name   State   User   Terminal\n  -----  -----  -----  -----\n" + row
    d, fake = make("eos", answers={"show configuration sessions": listing, "end": "% Invalid input"})
    d.begin("T1")
    d.undo()
    assert fake.sent == ["configure session linerate-T1", "end", "show configuration sessions"] + (["configure session linerate-T1 abort"] if aborts else [])
    assert d._session is None
    fake.sent.clear()
    d.undo()
    assert fake.sent == ["end"]


def test_clear_pending_aborts_only_linerate_sessions():
    # another administrator's sessions (maint, other) stay; linerate's own unfinished ones are aborted
    text = fixture("eos_sessions.txt") + (
        "  other                          pendingCommitTimer   ops   vty\n"
        "  linerate-T7                    pendingCommitTimer   admin vty\n"
        "  linerate_T6                    pending              admin vty\n"
    )
    d, fake = make("eos", answers={"show configuration sessions": text, "end": "% Invalid input"})
    assert d.clear_pending("x") == ["configure session linerate-T7 abort (was pendingCommitTimer)", "configure session linerate_T6 abort (was pending)"]
    assert fake.sent == ["end", "show configuration sessions", "configure session linerate-T7 abort", "configure session linerate_T6 abort"]


# ---------------------------------------------------------------- read-only reads, ports the switch lacks


def test_oper_skips_ports_the_switch_does_not_have():
    d, fake = make("eos", answers={"show interfaces status": fixture("eos_interfaces_status.txt"), "show running-config": fixture("eos_running.txt")})
    assert d.oper(["Ethernet9/1", "Ethernet1/1", "Ethernet2/1"]) == {
        "Ethernet1/1": {"pfc": [3, 4], "ecn": False, "up": True, "headroom": [3, 4], "pfcwd": []},
        "Ethernet2/1": {"pfc": [], "ecn": True, "up": False, "headroom": [], "pfcwd": []},
    }


def counters(name):
    from parser_fixtures import fixture as source_fixture

    return source_fixture("counters", name)


def test_qos_counters_totals_and_what_eos_lacks():
    d, _ = make("eos", answers={"show priority-flow-control counters | json": counters("eos_pfc_counters_eapi_r3.json")})
    assert d.qos_counters(["Ethernet9", "Ethernet3/1/1", "Ethernet3/2/1"]) == {
        p: {
            "rx_pause": None,
            "tx_pause": None,
            "rx_pause_total": rx,
            "tx_pause_total": tx,
            "ecn_marked": None,
            "drops": None,
            "cnp_tx": None,
            "per_priority": False,
            "missing": ["pause frames per priority", "ECN-marked packets", "queue drops"],
        }
        for p, rx, tx in (("Ethernet3/1/1", 1, 0), ("Ethernet3/2/1", 0, 2))
    }


def test_error_counters_skip_ports_the_switch_does_not_have():
    d, _ = make("eos", answers={"show interfaces counters errors | json": counters("eos_intf_errors_anta.json")})
    zero = {k: 0 for k in ("inErrors", "frameTooLongs", "outErrors", "frameTooShorts", "fcsErrors", "alignmentErrors", "symbolErrors")}
    res = d.error_counters(["Ethernet9", "Ethernet1", "Ethernet6"])
    assert list(res) == ["Ethernet1", "Ethernet6"]
    assert res["Ethernet6"] == {"errors": zero, "link_down": None, "link_down_unit": None, "missing": ["link down events"]}


# ---------------------------------------------------------------- scope, delta and view of the config tree


def test_line_keys():
    assert [
        eos.line_key(x)
        for x in (
            "mtu 9216",
            "mtu",
            "mtus 3",
            "l2 mtu 9000",
            "speed forced 100gfull",
            "priority-flow-control priority 3 no-drop",
            "priority-flow-control on",
            "random-detect ecn minimum-threshold 1 kbytes",
            "description a b",
        )
    ] == ["mtu", "mtu", "mtus 3", "l2 mtu", "speed", "priority-flow-control priority 3", "priority-flow-control on", "random-detect ecn", "description"]


def test_scope_and_out_of_scope_of_an_intent():
    want = eos.parse_eos_config(
        "hostname x\n"
        "qos map dscp 26 to traffic-class 3\n"
        "interface Ethernet1/1\n"
        "   mtu 9216\n"
        "   description fabric\n"
        "   tx-queue 3\n"
        "      random-detect ecn minimum-threshold 1 kbytes\n"
        "      bandwidth percent 50\n"
        "interface Ethernet9/1\n"
        "   mtu 9216\n"
    )
    scope = eos.eos_scope(want, ["Ethernet1/1"])
    assert scope((), "qos map dscp 26") and not scope((), "qos map dscp 27") and not scope((), "hostname")
    port = ("interface Ethernet1/1",)
    assert [scope(port, k) for k in ("mtu", "speed", "qos trust", "priority-flow-control on", "tx-queue 3", "description", "shutdown")] == [True] * 5 + [
        False
    ] * 2
    assert scope(port + ("tx-queue 3",), "random-detect ecn") and not scope(port + ("tx-queue 3",), "bandwidth percent")
    assert not scope(("interface Ethernet9/1",), "mtu") and not scope(("interface Ethernet9/1", "tx-queue 3"), "random-detect ecn")
    d, _ = make("eos")
    assert d.out_of_scope(want, scope, ["Ethernet1/1"]) == [
        "hostname x",
        "interface Ethernet1/1 / description fabric",
        "interface Ethernet1/1 / tx-queue 3 / bandwidth percent 50",
        "interface Ethernet9/1",
    ]
    assert d.view(want, scope) == (
        "qos map dscp 26 to traffic-class 3\ninterface Ethernet1/1\n   mtu 9216\n   tx-queue 3\n      random-detect ecn minimum-threshold 1 kbytes\n"
    )
    assert d.view({}, scope) == ""
    assert d.full_scope()(("a",), "b") is True


def test_delta_removes_in_scope_lines_never_a_physical_interface():
    have = eos.parse_eos_config(
        "qos map dscp 27 to traffic-class 2\ninterface Ethernet1/1\n   mtu 9000\n"
        "   qos trust cos\n   description keep\n   tx-queue 3\n      random-detect ecn x\n"
    )
    want = eos.parse_eos_config("interface Ethernet1/1\n   mtu 9216\n   tx-queue 3\n")
    scope = eos.eos_scope(eos.parse_eos_config("qos map dscp 27 to traffic-class 3\n"), ["Ethernet1/1"])
    assert eos.eos_commands(want, have, scope) == [
        "no qos map dscp 27 to traffic-class 2",
        "interface Ethernet1/1",
        "no qos trust cos",
        "mtu 9216",
        "tx-queue 3",
        "no random-detect ecn x",
        "exit",
        "exit",
    ]
    assert eos.eos_commands({}, have, lambda path, key: True) == ["no qos map dscp 27 to traffic-class 2"]


def test_qos_from_tree_needs_pfc_on():
    tree = eos.parse_eos_config("interface Et1\n   priority-flow-control priority 3 no-drop\n   priority-flow-control priority 4 drop\n")
    assert eos.qos_from_tree(tree, "Et1") == {"pfc": [], "ecn": False}
    tree = eos.parse_eos_config(
        "interface Et1\n   priority-flow-control on\n   priority-flow-control priority 4 drop\n   priority-flow-control priority 3 no-drop\n"
    )
    assert eos.qos_from_tree(tree, "Et1") == {"pfc": [3], "ecn": False}
    assert eos.qos_from_tree(tree, "Et2") == {"pfc": [], "ecn": False}


def test_template_renders_the_family_profile_and_the_driver_diffs_uc_tx_queue():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.profiles import eos_profile

    d, _ = make("eos")
    text = render("eos", ["Ethernet1/1"], switch_fabric_eos_profile=eos_profile("7280r3"), switch_fabric_mtu=9000)
    want = d.parse(text)
    blk = want["interface Ethernet1/1"][1]
    assert [ln for ln, _ in blk.values()][:2] == ["mtu 9000", "speed 400g-8"]  # below the limit: the intent's
    assert "uc-tx-queue 3" in blk and "tx-queue 3" not in blk
    assert blk["uc-tx-queue 3"][1]["random-detect ecn"][0] == ECN
    assert d.commands(want, {}, d.managed_scope(want, ["Ethernet1/1"]))[-4:] == ["uc-tx-queue 3", ECN, "exit", "exit"]
    assert d.commands(want, want, d.managed_scope(want, ["Ethernet1/1"])) == []
    assert d.out_of_scope(want, d.managed_scope(want, ["Ethernet1/1"]), ["Ethernet1/1"]) == []
    assert eos.qos_from_tree(want, "Ethernet1/1") == {"pfc": [3], "ecn": True}
    # a queue block of the other keyword on the switch is in scope: removed
    have = d.parse(text.replace("uc-tx-queue 3", "uc-tx-queue 5"))
    assert "no uc-tx-queue 5" in d.commands(want, have, d.managed_scope(want, ["Ethernet1/1"]))
    wide = render("eos", ["Ethernet1/1"], switch_fabric_eos_profile=eos_profile("7060x6"))
    assert "   speed 400g-4\n" in wide and "   tx-queue 3\n" in wide and "   mtu 9214\n" in wide


def test_template_refuses_a_port_speed_the_family_has_no_form_for():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.profiles import eos_profile

    with pytest.raises(
        AnsibleFilterError,
        match=r"EOS 7050x4 has no speed form for 800 Gb/s on Ethernet1/1 \(it has 10g, 25g, 40g, "
        r"50g-1, 100g-2, 200g-4, 400g-8\): set switch_eos_family or the port speed",
    ):
        render(
            "eos", [], switch_fabric_eos_profile=eos_profile("7050x4"), switch_fabric_ports_effective=[{"name": "Ethernet1/1", "speed_gbps": 800, "peer": ""}]
        )


# ------------------------------------------------------------------ show interfaces status (was test_parsers_switch.py)
def test_eos_interfaces_status_blank_name_and_spaced_vlan_cells():
    status = eos.parse_interfaces_status(fixture("real_eos_interfaces_status_ceos.txt"))
    assert list(status) == ["Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4", "Ethernet5", "Ma0", "Po1"]
    assert status["Ethernet5"] == {"up": True, "status": "connected"}


def test_eos_interfaces_status_named_ports_and_notconnect():
    status = eos.parse_interfaces_status(fixture("eos_interfaces_status.txt"))
    assert status == {"Ethernet1/1": {"up": True, "status": "connected"}, "Ethernet2/1": {"up": False, "status": "notconnect"}}


def test_eos_interfaces_status_json_is_read_first():
    status = eos.parse_interfaces_status(fixture("eos_interfaces_status.json"))
    assert status == {"Ethernet1/1": {"up": True, "status": "connected"}, "Ethernet2/1": {"up": False, "status": "notconnect"}}


@pytest.mark.parametrize(
    "text, message",
    [
        ("% Invalid input\n", "line 1: % Invalid input"),
        ("", "no 'Port ... Status' header"),
        ("Port   Name  Status     Vlan\nEt1    x     connectedroutedXX\n", "line 2 does not fit"),
        ('{"interfaceStatuses": {"Ethernet1": {}}}', "'Ethernet1' has no linkStatus"),
    ],
)
def test_eos_interfaces_status_bad_input(text, message):
    with pytest.raises(ParseError, match=message):
        eos.parse_interfaces_status(text)
