"""NVUE: parser, exact delta commands, idempotence, push and rollback paths."""

import pytest

from switch_testlib import fixture, make, render, sim_driver, unlocked

from ansible_collections.linerate.fabric.plugins.module_utils.switch import nvue, nvue_show
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

PORTS = ["swp1", "swp2"]

EXPECTED = [
    "nv set qos pfc linerate switch-priority 3",
    "nv set qos mapping linerate trust l3",
    "nv set qos mapping linerate dscp 26 switch-priority 3",
    "nv set qos mapping linerate dscp 48 switch-priority 6",
    "nv set qos congestion-control linerate traffic-class 3 ecn enabled",
    "nv set qos congestion-control linerate traffic-class 3 min-threshold 153600",
    "nv set qos congestion-control linerate traffic-class 3 max-threshold 1536000",
    "nv set qos congestion-control linerate traffic-class 3 probability 100",
    "nv set qos egress-scheduler linerate traffic-class 6 mode strict",
    "nv set qos egress-scheduler linerate traffic-class 0 mode dwrr",
    "nv set qos egress-scheduler linerate traffic-class 0 bw-percent 50",
    "nv set qos egress-scheduler linerate traffic-class 3 mode dwrr",
    "nv set qos egress-scheduler linerate traffic-class 3 bw-percent 50",
    "nv set interface swp1 link mtu 9216",
    "nv set interface swp1 link speed 400G",
    "nv set interface swp1 qos mapping profile linerate",
    "nv set interface swp1 qos egress-scheduler profile linerate",
    "nv set interface swp1 qos pfc-watchdog state enable",
    "nv set interface swp1 qos congestion-control profile linerate",
    "nv set interface swp2 link mtu 9216",
    "nv set interface swp2 link speed 400G",
    "nv set interface swp2 qos pfc profile linerate",
    "nv set interface swp2 qos mapping profile linerate",
    "nv set interface swp2 qos egress-scheduler profile linerate",
    "nv set interface swp2 qos pfc-watchdog state enable",
    "nv set interface swp2 qos congestion-control profile linerate",
]


def test_parse_config_show_commands():
    facts = nvue.parse_nvue_commands(fixture("nvue_config_show_commands.txt"))
    assert facts["qos pfc linerate switch-priority"] == "3,4"
    assert facts["interface swp1 link mtu"] == "9000"
    assert facts["system hostname"] == "leaf1"


def test_parse_skips_comments_and_the_trailing_apply():
    assert nvue.parse_nvue_commands("# header\nnv set system hostname x\nnv config apply\n") == {"system hostname": "x"}


def test_parse_rejects_non_config_output():
    with pytest.raises(ValueError):
        nvue.parse_nvue_commands("Error: The requested item does not exist.")


def test_exact_delta_commands():
    d, _ = make("nvue")
    want = d.parse(render("nvue", PORTS))
    have = d.parse(fixture("nvue_config_show_commands.txt"))
    assert d.commands(want, have, d.managed_scope(want, PORTS)) == EXPECTED


def test_unset_only_inside_scope():
    d, _ = make("nvue")
    want = d.parse(render("nvue", PORTS, switch_fabric_ecn_enabled=False))
    have = d.parse(fixture("nvue_config_show_commands.txt") + render("nvue", PORTS))
    cmds = d.commands(want, have, d.managed_scope(want, PORTS))
    assert "nv unset qos congestion-control linerate traffic-class 3 ecn" in cmds
    assert "nv unset interface swp1 qos congestion-control profile" in cmds
    assert not any("qos pfc other" in c or "description" in c for c in cmds)


def test_idempotent_when_running_equals_intent():
    d, _ = make("nvue")
    text = render("nvue", PORTS)
    want = d.parse(text)
    assert d.commands(want, d.parse(fixture("nvue_config_show_commands.txt") + text), d.managed_scope(want, PORTS)) == []


def test_oper_parsers():
    summary = nvue_show.parse_interface_summary(fixture("nvue_show_interface.txt"))
    assert summary["swp1"]["up"] is True and summary["swp2"]["up"] is False
    on = nvue_show.parse_roce_status(fixture("nvue_roce_status_on.txt"))
    assert on["pfc"] == [3] and on["ecn"] is True and on["trust"] == "dscp"
    off = nvue_show.parse_roce_status(fixture("nvue_roce_status_off.txt"))
    assert off["pfc"] == [] and off["ecn"] is False and off["trust"] == "pcp"
    assert nvue.parse_revisions(fixture("nvue_revision.txt"))[-1] == ("2", "applied_and_saved")


def test_roce_status_real_global_outputs_cl50_and_cl512():
    # 'nv show qos roce' as the 5.0 docs print it (description column) and as
    # the 5.12 docs print it (no description; mode lossless-single-ipool)
    want = {"pfc": [3], "trust": "pcp,dscp", "ecn": True, "min_threshold": "146.48 KB", "max_threshold": "1.43 MB"}
    assert nvue_show.parse_roce_status(fixture("real_nvue_roce_status_global_cl50.txt")) == want
    assert nvue_show.parse_roce_status(fixture("real_nvue_roce_status_global_cl512.txt")) == want


def test_check_mode_only_reads():
    d, fake = make("nvue", answers={"nv config show -o commands": fixture("nvue_config_show_commands.txt")})
    res = run_apply(d, render("nvue", PORTS), ports=PORTS, check_mode=True)
    # reads only: the running config, and the window lock (reported, never taken)
    assert fake.sent == [
        "nv config show -o commands",
        "cat /var/lock/linerate.lock/holder 2>/dev/null ; stat -c lock-mtime=%Y /var/lock/linerate.lock 2>/dev/null ; date +switch-now=%s",
    ]
    assert res["changed"] is True and res["commands"] == EXPECTED
    assert "+nv set" not in res["diff"]["before"] and "link mtu 9216" in res["diff"]["after"]


def test_rejected_set_detaches_pending_revision(tmp_path):
    running = fixture("nvue_config_show_commands.txt")
    d, fake = make(
        "nvue",
        answers={
            "nv config show -o commands": running,
            "nv config revision": fixture("nvue_revision.txt"),
            "nv set interface swp1 link speed 400G": "Error: '400G' is not a valid value for 'speed'",
        },
    )
    with pytest.raises(SwitchError) as err:
        run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path), stamp="T1")
    assert "switch sw: push failed: rejected command 'nv set interface swp1 link speed 400G'" in str(err.value)
    assert err.value.rolled_back is True and err.value.changed is False
    sent = unlocked(fake.sent)
    assert sent[:5] == [
        "nv config show -o commands",
        "nv config diff",
        "nv config revision",
        "nv config revision",
        "nv config show -o commands",
    ]  # begin, then the re-read
    i = sent.index("nv set interface swp1 link speed 400G")
    assert sent[i + 1 :] == ["nv config detach", "nv config show -o commands", "nv config diff", "nv config revision"]
    assert not any(c.startswith("nv config apply") for c in fake.sent)
    backup = tmp_path / "sw" / "T1.nvue.cfg"
    assert backup.read_text() == running and oct(backup.stat().st_mode & 0o777) == "0o600"


def test_failed_post_check_reapplies_previous_revision(tmp_path):
    running = fixture("nvue_config_show_commands.txt")
    after = running + render("nvue", PORTS)
    d, fake = make(
        "nvue",
        answers={
            "nv config show -o commands": [running, running, after, running],
            # the pending check, begin, then the undo (rev 3 is ours, awaiting confirmation), the verification
            "nv config revision": [fixture("nvue_revision.txt")] * 2
            + [
                fixture("nvue_revision.txt") + "3  confirm_pending\n",
                fixture("nvue_revision.txt").replace("2                     applied_and_saved", "2  applied") + "3  rolled_back\n4  applied_and_saved\n",
            ],
            "nv show interface": fixture("nvue_show_interface.txt"),  # swp2 is down
            "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
            "nv show interface swp2 qos roce status": fixture("nvue_roce_status_on.txt"),
            **LOSSLESS_ON,
            "nv config apply --confirm 2 -y": "applied [rev_id: 3]",
        },
    )
    with pytest.raises(SwitchError) as err:
        run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path), confirm_timeout=120, want_pfc=[3], want_ecn=True, stamp="T2")
    assert "switch sw: post-check failed: swp2: link is down; rolled back: the running config is byte-identical" in str(err.value)
    assert "nv config apply --confirm 2 -y" in fake.sent
    assert "nv config apply 2 -y" in fake.sent and "nv config apply --confirm-yes" not in fake.sent
    assert err.value.rolled_back is True


def test_apply_then_second_run_is_idempotent_on_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", PORTS)
    res = run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"), want_pfc=[3], want_ecn=True)
    assert res["changed"] and "nv config apply --confirm-yes" in sim.sent
    assert not any(c.startswith("nv config confirm") for c in sim.sent)
    assert sim.sw.confirm is None and sim.sw.pending is None
    again = run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"))
    assert again["changed"] is False and again["commands"] == []
    assert sim.sw.port_config()["swp1"]["pfc"] == [3]


# ---------------------------------------------------------------- parser messages


@pytest.mark.parametrize(
    "text,message",
    [
        ("nv unset system hostname", "nvue: not an 'nv set' line: 'nv unset system hostname'"),
        ("hello", "nvue: unexpected output line: 'hello'"),
        ('nv set system hostname "x', "nvue: No closing quotation: 'nv set system hostname \"x'"),
        ("nv set system", "nvue: 'nv set' line without a value: 'nv set system'"),
    ],
)
def test_parse_errors_name_the_line(text, message):
    with pytest.raises(nvue.ParseError) as err:
        nvue.parse_nvue_commands(text)
    assert str(err.value) == message and err.value.tool == "nvue"


def test_parse_quoted_values_and_driver_wraps_errors():
    assert nvue.parse_nvue_commands("  nv set interface swp1 description 'a b'  \n") == {"interface swp1 description": "a b"}
    d, _ = make("nvue", "leaf3")
    with pytest.raises(SwitchError) as err:
        d.parse("hello")
    assert str(err.value) == "switch leaf3: nvue: unexpected output line: 'hello'"


def test_commands_quote_what_the_shell_would_split():
    d, _ = make("nvue")
    want = {"interface swp1 description": "a b", "qos pfc linerate switch-priority": "3,4"}
    assert d.commands(want, {}, lambda k: True) == ["nv set interface swp1 description 'a b'", "nv set qos pfc linerate switch-priority 3,4"]
    assert d.view(want, lambda k: k.startswith("interface")) == "nv set interface swp1 description 'a b'\n"
    assert d.out_of_scope(want, lambda k: k.startswith("qos"), []) == ["nv set interface swp1 description 'a b'"]


def test_scope_is_the_profile_and_the_fabric_ports():
    scope = nvue.nvue_scope("linerate", ["swp1"])
    inside = [
        "qos pfc linerate switch-priority",
        "qos mapping linerate trust",
        "qos congestion-control linerate",
        "interface swp1 link mtu",
        "interface swp1 link speed",
        "interface swp1 qos pfc profile",
    ]
    outside = [
        "qos pfc other switch-priority",
        "qos pfc linerate2 x",
        "qos roce mode",
        "interface swp2 link mtu",
        "interface swp1 link mtu2",
        "interface swp1 description",
        "system hostname",
    ]
    assert [scope(k) for k in inside] == [True] * len(inside)
    assert [scope(k) for k in outside] == [False] * len(outside)


HEADER = (
    "  Interface  MTU    Speed  State  Remote Host  Remote Port  Type  Summary\n"
    "  ---------  -----  -----  -----  -----------  -----------  ----  -------------------------\n"
)


def test_show_interface_repeated_rows_of_one_interface_are_its_summary_lines():
    text = HEADER + (
        "+ eth0       1500   1G     up                               eth   IP Address: 10.0.0.1/24\n"
        "+ eth0                                                            IP Address: fe80::1/64\n"
        "\n"
        "+ swp1       9216   400G   down   node1        mlx5_0       swp\n"
        "                                                                  continued summary\n"
    )
    assert nvue_show.parse_interface_summary(text) == {"eth0": {"up": True, "mtu": 1500, "speed": "1G"}, "swp1": {"up": False, "mtu": 9216, "speed": "400G"}}


def test_show_interface_real_cl5x_blank_speed_and_wrapped_summary():
    res = nvue_show.parse_interface_summary(fixture("real_nvue_show_interface_cl5x.txt"))
    assert res["BLUE"] == {"up": True, "mtu": 65575, "speed": ""}
    assert res["eth0"] == {"up": True, "mtu": 1500, "speed": "1G"}


@pytest.mark.parametrize(
    "rows,message",
    [
        (
            "+ swp9                                                            only a summary\n",
            "nvue: line 3: no State for 'swp9': '+ swp9                                                            only a summary'",
        ),
        (
            "+ swp1       9216   400G   up x   node1        mlx5_0       swp\n",
            "nvue: line 3: no State for 'swp1': '+ swp1       9216   400G   up x   node1        mlx5_0       swp'",
        ),
        ("+ swp1       9216   400G   upper_state node1\n", "nvue: line 3 does not fit the header's columns: '+ swp1       9216   400G   upper_state node1'"),
    ],
)
def test_show_interface_bad_rows_are_named(rows, message):
    with pytest.raises(nvue.ParseError) as err:
        nvue_show.parse_interface_summary(HEADER + rows)
    assert str(err.value) == message and err.value.tool == "nvue"


def test_show_interface_without_a_rule_counts_lines_from_the_header():
    text = "Interface  State  MTU\nswp1       up     9216\nswp2\n"
    with pytest.raises(nvue.ParseError) as err:
        nvue_show.parse_interface_summary(text)
    assert str(err.value) == "nvue: line 3: no State for 'swp2': 'swp2'"
    assert nvue_show.parse_interface_summary(text.replace("swp2\n", "")) == {"swp1": {"up": True, "mtu": 9216, "speed": ""}}


@pytest.mark.parametrize(
    "text,message",
    [
        ("Error: The requested item does not exist.\nmore", "nvue: Error: The requested item does not exist."),
        ("swp1 up\n", "nvue: nv show interface: no 'Interface ... State' header line"),
        ("Interface  MTU\n", "nvue: nv show interface: no 'Interface ... State' header line"),
        ('{"swp1": {"link": {}}}', "nvue: nv show interface -o json: 'swp1' has no link state"),
        ('{"swp1": 3}', "nvue: nv show interface -o json: 'swp1' has no link object"),
        ('{"swp1": ', "nvue: nv show interface -o json: invalid JSON: Expecting value: line 1 column 9 (char 8)"),
    ],
)
def test_show_interface_errors(text, message):
    with pytest.raises(nvue.ParseError) as err:
        nvue_show.parse_interface_summary(text)
    assert str(err.value) == message and err.value.tool == "nvue"


def test_show_interface_json():
    assert nvue_show.parse_interface_summary(
        '{"swp1": {"link": {"oper-status": {"up": {}}, "mtu": 9216, "speed": "400G"}}, "swp2": {"link": {"state": "down", "mtu": "x"}}}'
    ) == {"swp1": {"up": True, "mtu": 9216, "speed": "400G"}, "swp2": {"up": False, "mtu": None, "speed": ""}}


def test_roce_status_whole_result_and_errors():
    assert nvue_show.parse_roce_status(fixture("nvue_roce_status_on.txt")) == {
        "pfc": [3],
        "trust": "dscp",
        "ecn": True,
        "min_threshold": "150.00 KB",
        "max_threshold": "1.46 MB",
    }
    assert nvue_show.parse_roce_status("") == {"pfc": [], "trust": "", "ecn": False, "min_threshold": "", "max_threshold": ""}
    with pytest.raises(nvue.ParseError) as err:
        nvue_show.parse_roce_status("Error: The requested item does not exist.\n")
    assert str(err.value) == "nvue: Error: The requested item does not exist."


def test_revisions_rows_with_only_id_and_state():
    text = "Rev ID  State\n------  -----\n1       applied\n2       confirm_pending\nx y\n\n"
    # issue 38: a row the table lists is a revision, whatever its id (a revision is never left out)
    assert nvue.parse_revisions(text) == [("1", "applied"), ("2", "confirm_pending"), ("x", "y")]
    # a row without a State: the window cannot tell whether it awaits confirmation
    with pytest.raises(nvue.ParseError, match=r"line 7: no State for revision '3': '3'"):
        nvue.parse_revisions(text + "3\n")
    # a bare listing (no header) keeps the numbered lines; a capture's prompt is not a revision
    assert nvue.parse_revisions("1  applied\nfoo bar\n") == [("1", "applied")]
    assert nvue.parse_revisions("cumulus@sw:~$ nv config revision\n" + text + "cumulus@sw:~$\n")[-1] == ("x", "y")


# ---------------------------------------------------------------- pending state and the revision steps

REVS = "Rev ID  State\n1       applied_and_saved\n2       applied\n3       rolled_back\n"


def test_pending_names_the_diff_and_each_revision_awaiting_confirmation():
    d, fake = make("nvue", answers={"nv config diff": "  - set: x\n", "nv config revision": REVS + "4  confirm_pending\n5  confirm_pending\n"})
    assert d.pending() == ["pending NVUE revision:\n- set: x", "applied revision(s) awaiting confirmation: 4, 5"]
    assert fake.sent == ["nv config diff", "nv config revision"]
    d, _ = make("nvue", answers={"nv config revision": REVS})
    assert d.pending() == []


def test_begin_remembers_the_last_applied_revision_for_rollback():
    d, fake = make("nvue", answers={"nv config revision": REVS, "nv config apply 2 -y": "applied [rev_id: 6]"})
    d.begin("T1")
    d.rollback()
    d.rollback()
    assert fake.sent == ["nv config revision", "nv config apply 2 -y", "nv config apply 6 -y"]


def test_rollback_without_an_earlier_revision_is_refused():
    d, fake = make("nvue", "leaf3", {"nv config revision": "1  confirm_pending\n"})
    d.begin("T1")
    with pytest.raises(SwitchError) as err:
        d.rollback()
    assert str(err.value) == "switch leaf3: no earlier applied revision to roll back to"
    d.undo()  # begin found nothing applied: only the pending revision is discarded
    assert fake.sent == ["nv config revision", "nv config detach"]


def test_commit_confirm_and_abort_commands():
    d, fake = make(
        "nvue",
        answers={
            "nv config detach": "Error: nothing to detach",
            "nv config apply --confirm 3 -y": "applied [rev_id: 4]",
            "nv config revision": [REVS + "4  confirm_pending\n", REVS + "4  applied_and_saved\n"],
        },
    )
    d.commit(125.7)
    d.confirm()
    d.abort()  # never fails: the pending revision may already be gone
    # the reference has no `nv config confirm`: the timer is in minutes, the wait ends through apply
    assert fake.sent == ["nv config apply --confirm 3 -y", "nv config revision", "nv config apply --confirm-yes", "nv config revision", "nv config detach"]


@pytest.mark.parametrize("seconds,minutes", [(1, 1), (59, 1), (60, 1), (61, 2), (300, 5), (3600, 60)])
def test_the_confirm_timer_is_sent_in_whole_minutes_rounded_up(seconds, minutes):
    assert nvue.confirm_minutes(seconds) == minutes


@pytest.mark.parametrize("seconds", [0, -5])
def test_a_confirm_timer_that_is_not_positive_is_refused(seconds):
    with pytest.raises(ValueError, match="must be positive"):
        nvue.confirm_minutes(seconds)


def test_confirm_refuses_a_revision_that_is_not_the_windows_own():
    d, fake = make("nvue", answers={"nv config apply --confirm 5 -y": "applied [rev_id: 4]", "nv config revision": REVS + "9  confirm_pending\n"})
    d.commit(300)
    with pytest.raises(SwitchError, match=r"awaiting confirmation \(9\) are not this window's revision 4"):
        d.confirm()
    assert "nv config apply --confirm-yes" not in fake.sent


def test_confirm_fails_when_the_timer_already_rolled_back():
    d, fake = make("nvue", answers={"nv config apply --confirm 5 -y": "applied [rev_id: 4]", "nv config revision": REVS + "4  rolled_back\n"})
    d.commit(300)
    with pytest.raises(SwitchError, match="nothing awaits confirmation"):
        d.confirm()
    assert "nv config apply --confirm-yes" not in fake.sent


def test_confirm_fails_when_the_revision_still_awaits_confirmation_after_it():
    d, fake = make("nvue", answers={"nv config apply --confirm 5 -y": "applied [rev_id: 4]", "nv config revision": REVS + "4  confirm_pending\n"})
    d.commit(300)
    with pytest.raises(SwitchError, match="did not confirm: revision\\(s\\) 4 still await"):
        d.confirm()
    assert fake.sent.count("nv config apply --confirm-yes") == 1


def test_the_simulator_refuses_the_invented_confirm_verb_and_reads_bare_timers_as_minutes(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", PORTS)
    sw = sim.sw
    assert sw.execute({"user": "cumulus"}, "nv config confirm -y").startswith("Error: Invalid command")
    assert sw.execute({"user": "cumulus"}, "nv set qos pfc p switch-priority 3") == ""
    assert sw.execute({"user": "cumulus"}, "nv config apply --confirm 5 -y").startswith("applied [rev_id:")
    assert sw.confirm is not None
    status = sw.execute({"user": "cumulus"}, "nv config apply --confirm-status")
    assert "awaits confirmation" in status
    assert 290 < int(status.split(": ")[-1].split()[0]) <= 300  # a bare 5 is five minutes, not five seconds
    assert sw.execute({"user": "cumulus"}, "nv config apply --confirm-yes").startswith("applied [rev_id:")
    assert sw.confirm is None
    assert sw.execute({"user": "cumulus"}, "nv config apply --confirm-yes").startswith("Error:")
    assert sw.execute({"user": "cumulus"}, "nv config apply --bogus").startswith("Error: Invalid option")


@pytest.mark.parametrize(
    "revs,committed,applied,sent",
    [
        # not applied: only our own pending revision (our nv set lines) is detached
        (REVS, False, None, ["nv config detach"]),
        # the apply was sent but never reached the switch (no new revision): still our pending revision
        (REVS, True, None, ["nv config revision", "nv config detach"]),
        # our revision (the rev id our apply printed) awaits confirmation, or is applied: re-apply the one before
        (REVS + "4  confirm_pending\n", True, "4", ["nv config revision", "nv config apply 2 -y"]),
        (REVS + "4  applied_and_saved\n", True, "4", ["nv config revision", "nv config apply 2 -y"]),
        # the apply's answer was lost: the one revision that appeared since begin is ours
        (REVS + "4  confirm_pending\n", True, None, ["nv config revision", "nv config apply 2 -y"]),
        # another administrator's revision awaits confirmation, or two appeared: neither is touched
        (REVS + "4  applied\n5  confirm_pending\n", True, "4", ["nv config revision"]),
        (REVS + "4  applied\n5  applied_and_saved\n", True, None, ["nv config revision"]),
        # ours already rolled back by the timer (a newer applied revision is not ours): nothing to do
        (REVS + "4  rolled_back\n5  applied_and_saved\n", True, "4", ["nv config revision"]),
    ],
)
def test_undo_touches_only_this_windows_revision(revs, committed, applied, sent):
    d, fake = make("nvue", answers={"nv config revision": [REVS, revs]})
    d.begin("T1")
    d._committed, d._rev_applied = committed, applied
    d.undo()
    assert fake.sent == ["nv config revision"] + sent
    assert d._committed is (committed and sent[-1] != "nv config apply 2 -y")


def test_clear_pending_detaches_and_confirms_a_revision_that_is_the_backup():
    answers = {"nv config diff": "- x", "nv config show -o commands": "backup", "nv config revision": REVS + "4  confirm_pending\n7  confirm_pending\n"}
    d, fake = make("nvue", answers=dict(answers))
    # no stale linerate window was broken by this run: the pending revisions are someone else's, left alone
    assert d.clear_pending("backup") == [] and fake.sent == []
    d, fake = make("nvue", answers=answers)
    d.stale_window = object()  # this run broke a dead window's lock: what is pending is that window's
    assert d.clear_pending("backup") == ["nv config detach (discarded a pending revision)", "nv config apply --confirm-yes (revision 7 already is the backup)"]
    assert fake.sent == ["nv config diff", "nv config detach", "nv config revision", "nv config show -o commands", "nv config apply --confirm-yes"]
    d, fake = make("nvue", answers={"nv config show -o commands": "other", "nv config revision": REVS + "4  confirm_pending\n"})
    d.stale_window = object()
    assert d.clear_pending("backup") == []
    assert fake.sent == ["nv config diff", "nv config revision", "nv config show -o commands"]


# ---------------------------------------------------------------- read-only reads, ports the switch lacks

# the lossless read-back (headroom, PFC watchdog): swp1 lossless on priority 3 with its watchdog, swp2 neither
LOSSLESS_ON = {
    "nv show interface swp1 qos buffer ingress-priority-group -o json": fixture("nvue_buffer_pg_lossless.json"),
    "nv show interface swp2 qos buffer ingress-priority-group -o json": fixture("nvue_buffer_pg_lossless.json"),
    "nv show interface swp1 qos pfc-watchdog -o json": fixture("nvue_pfc_watchdog_on.json"),
    "nv show interface swp2 qos pfc-watchdog -o json": fixture("nvue_pfc_watchdog_on.json"),
}
LOSSLESS_SWP2_OFF = dict(
    LOSSLESS_ON,
    **{
        "nv show interface swp2 qos buffer ingress-priority-group -o json": fixture("nvue_buffer_pg_lossy.json"),
        "nv show interface swp2 qos pfc-watchdog -o json": fixture("nvue_pfc_watchdog_off.json"),
    },
)


def test_oper_skips_ports_the_switch_does_not_have():
    d, fake = make(
        "nvue",
        answers={
            "nv show interface": fixture("nvue_show_interface.txt"),
            "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
            "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
            **LOSSLESS_SWP2_OFF,
        },
    )
    res = d.oper(["swp9", "swp1", "swp2"])
    assert res == {
        "swp1": {"pfc": [3], "trust": "dscp", "ecn": True, "min_threshold": "150.00 KB", "max_threshold": "1.46 MB", "up": True, "headroom": [3], "pfcwd": [3]},
        "swp2": dict(nvue_show.parse_roce_status(fixture("nvue_roce_status_off.txt")), up=False, headroom=[], pfcwd=[]),
    }
    assert fake.sent == [
        "nv show interface",
        "nv show interface swp1 qos roce status",
        "nv show interface swp1 qos buffer ingress-priority-group -o json",
        "nv show interface swp1 qos pfc-watchdog -o json",
        "nv show interface swp2 qos roce status",
        "nv show interface swp2 qos buffer ingress-priority-group -o json",
        "nv show interface swp2 qos pfc-watchdog -o json",
    ]


# ---------------------------------------------------------------- counters on ports the switch lacks


def counter_fixture(name):
    from parser_fixtures import fixture as source_fixture

    return source_fixture("counters", name)


def test_qos_and_error_counters_skip_ports_the_switch_does_not_have():
    roce = counter_fixture("nvue_roce_counters_cl512.txt")
    d, fake = make(
        "nvue",
        answers={
            "nv show interface": fixture("nvue_show_interface.txt"),
            "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
            "nv show interface swp2 qos roce status": fixture("nvue_roce_status_off.txt"),
            "nv show interface swp1 qos roce counters": roce,
            "nv show interface swp2 qos roce counters": roce,
            "nv show interface swp1 link stats": counter_fixture("nvue_link_stats_reference.txt"),
            "nv show interface swp2 link stats": counter_fixture("nvue_link_stats_described.txt"),
        },
    )
    c = nvue.switch_counters.parse_nvue_roce_counters(roce)
    res = d.qos_counters(["swp9", "swp1", "swp2"])
    assert list(res) == ["swp1", "swp2"]
    assert res["swp1"] == {
        "rx_pause": {3: c["rx_pause"]},
        "tx_pause": {3: c["tx_pause"]},
        "rx_pause_total": c["rx_pause"],
        "tx_pause_total": c["tx_pause"],
        "ecn_marked": c["ecn_marked"],
        "drops": {3: c["tx_roce_discards"]},
        "cnp_tx": c["cnp_tx"],
        "per_priority": False,
        "missing": ["pause frames on priorities other than the RoCE one"],
    }
    assert res["swp2"]["rx_pause"] == {"roce": c["rx_pause"]} and res["swp2"]["drops"] == {"roce": c["tx_roce_discards"]}
    errs = d.error_counters(["swp9", "swp1", "swp2"])
    assert list(errs) == ["swp1", "swp2"]
    assert errs["swp1"] == {"errors": {"in-errors": 0, "out-errors": 0}, "link_down": 6, "link_down_unit": "transitions", "missing": []}
    assert errs["swp2"]["missing"] == ["out-errors"] and "out-errors" not in errs["swp2"]["errors"]
    assert not any(cmd.startswith("nv show interface swp9") for cmd in fake.sent)


@pytest.mark.parametrize("release, ecn", [("5.9", "enable"), ("5.14", "enable"), ("5.15", "enabled"), ("5.17", "enabled")])
def test_the_rendered_config_uses_the_release_form_and_the_release_simulator_takes_every_line(tmp_path, monkeypatch, release, ecn):
    from switch_testlib import SimSwitch

    text = render("nvue", ["swp1"], switch_fabric_nvue_release=release)
    assert f"nv set qos congestion-control linerate traffic-class 3 ecn {ecn}\n" in text
    assert "min-threshold 153600\n" in text and "KB" not in text
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    sim = SimSwitch(tmp_path, "nvue", ["swp1"])
    sim.sw.spec["nvue_release"] = release
    for line in text.splitlines():
        if line.startswith("nv "):
            assert sim(line) == "", line
    other = "enable" if ecn == "enabled" else "enabled"
    assert sim(f"nv set qos congestion-control linerate traffic-class 3 ecn {other}").startswith("Error:")


@pytest.mark.parametrize("prio, cnp, dwrr", [(3, 6, {0: 50, 3: 50}), (0, 6, {0: 100}), (3, 0, {3: 100})])
def test_cnp_strict_priority_and_dwrr_classes(prio, cnp, dwrr):
    d, _ = make("nvue")
    want = d.parse(render("nvue", PORTS, switch_fabric_no_drop_priority=prio, switch_fabric_cnp_priority=cnp))
    sched = {k: v for k, v in want.items() if k.startswith("qos egress-scheduler linerate ")}
    assert sched[f"qos egress-scheduler linerate traffic-class {cnp} mode"] == "strict"
    assert {int(k.split()[4]): int(v) for k, v in sched.items() if k.endswith("bw-percent")} == dwrr
    assert all(sched[f"qos egress-scheduler linerate traffic-class {tc} mode"] == "dwrr" for tc in dwrr)


def test_scope_covers_the_egress_scheduler_and_the_watchdog_of_fabric_ports_only():
    scope = nvue.nvue_scope("linerate", ["swp1"])
    assert scope("qos egress-scheduler linerate traffic-class 6 mode")
    assert scope("interface swp1 qos pfc-watchdog state")
    assert not scope("qos egress-scheduler default-global traffic-class 6 mode")
    assert not scope("interface swp2 qos pfc-watchdog state")
    assert not scope("qos roce state")
