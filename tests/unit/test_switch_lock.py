"""One window per switch (issue 25): the lock on the switch and the controller, the re-read after begin,
recovery that touches only linerate's own state, and SONiC's dead-man timer - at driver level, with the
in-process simulators."""
import json
import os
import time

import pytest

from switch_testlib import SimSwitch, render, sim_driver, unlocked

from ansible_collections.linerate.fabric.plugins.module_utils.switch import base, lock
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import WindowLock, run_apply
from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for

PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}
LOCK = {"nvue": "/var/lock/linerate.lock", "sonic": "/var/lock/linerate.lock", "eos": "/var/tmp/linerate.lock"}
SHELL = {"nvue": "", "sonic": "", "eos": "bash timeout 10 "}
ALL = ["nvue", "sonic", "eos"]


@pytest.fixture(autouse=True)
def lab_state(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))


def second(tmp_path, sim, platform):
    """A second operator's driver on the same simulated switch (its own session)."""
    d = driver_for(platform, "sw", host="127.0.1.9", username="u", password="p")
    other = SimSwitch.__new__(SimSwitch)
    other.sw, other.ctx, other.sent = sim.sw, sim.sw.new_context("ops"), []
    other.ctx["term_length"] = 0
    d.send = other
    return d, other


def window(d, platform, **kw):
    kw.setdefault("ports", PORTS[platform])
    kw.setdefault("post_check", False)
    return run_apply(d, render(platform, PORTS[platform]), **kw)


def holder_line(user="ops", host="elsewhere", pid=4242, run="R1", when=None):
    return lock.Holder(user, host, pid, run, time.time() if when is None else when).line()


def take_by_hand(sim, platform, line):
    out = sim.sw.execute(sim.sw.new_context("ops"), f"{SHELL[platform]}mkdir {LOCK[platform]} && echo '{line}' > "
                                                    f"{LOCK[platform]}/holder")
    assert out == ""


# ---------------------------------------------------------------- the lock on the switch

@pytest.mark.parametrize("platform", ALL)
def test_the_lock_is_taken_named_and_released_with_the_platforms_shell(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    seen = {}
    orig = d.lock_take

    def spy(line):
        seen["line"] = line
        out = orig(line)
        # while the window runs, any administrator reads the holder on the switch
        seen["read"] = sim.sw.shell(f"cat {LOCK[platform]}/holder")[0]
        return out
    d.lock_take = spy
    res = window(d, platform, stamp="T1", backup_dir=str(tmp_path / "b"))
    assert res["changed"] is True
    me = lock.Holder.parse(seen["line"])
    assert (me.pid, me.run, me.host) == (os.getpid(), "T1", lock.Holder.me("x").host)
    assert seen["read"] == seen["line"]
    p, sh = LOCK[platform], SHELL[platform]
    rm = ("sudo " if platform == "sonic" else "") + f"rm -rf {p}"
    assert sim.sent[1] == f"{sh}mkdir {p} && echo '{seen['line']}' > {p}/holder"
    assert sim.sent[-2:] == [f"{sh}cat {p}/holder 2>/dev/null", sh + rm]
    assert sim.sw.shell(f"cat {p}/holder")[0] == f"cat: {p}/holder: No such file or directory"
    assert not os.path.exists(tmp_path / "b" / "sw" / "linerate.lock")


@pytest.mark.parametrize("platform", ALL)
def test_a_second_window_is_refused_naming_the_first_before_any_change(tmp_path, platform):
    """Two operators interleaved: the second window runs while the first holds the switch."""
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    d2, sim2 = second(tmp_path, sim, platform)
    before = d.get_running()
    result = {}
    orig = d.begin

    def begin_then_second_operator(tag):
        orig(tag)
        with pytest.raises(SwitchError) as err:   # operator 2 arrives in the middle of operator 1's window
            window(d2, platform, stamp="T9")
        result["err"] = err.value
    d.begin = begin_then_second_operator
    res = window(d, platform, stamp="T1")
    err = result["err"]
    me = lock.Holder.me("T1")
    assert str(err).startswith(f"switch sw: another change window holds this switch: {me.user}@{me.host} "
                               f"(pid {os.getpid()}, run T1, since ")
    assert f"lock {LOCK[platform]} on the switch); nothing is sent" in str(err)
    assert (err.rolled_back, err.changed) == (False, False)
    # the second operator read and tried the lock, nothing else
    assert all("linerate.lock" in c or c in ("nv config show -o commands", "show runningconfiguration all",
                                             "show running-config") for c in sim2.sent)
    # the first operator's change landed and is the only one
    assert res["changed"] is True and d.get_running() != before and d.pending() == []


@pytest.mark.parametrize("platform", ALL)
def test_a_stale_lock_is_broken_with_a_warning_naming_the_old_holder(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    old = holder_line(when=time.time() - (300 + lock.LOCK_MARGIN_S + 5))
    take_by_hand(sim, platform, old)
    res = window(d, platform, stamp="T1", confirm_timeout=300)
    assert res["changed"] is True
    assert res["warnings"][0].startswith(f"broke the stale window lock {LOCK[platform]} of ops@elsewhere (pid 4242, "
                                         "run R1, since ")
    assert "longer than the confirm timer (300 s) plus 600 s" in res["warnings"][0]
    assert d.stale_window == lock.Holder.parse(old)


@pytest.mark.parametrize("platform", ALL)
def test_a_lock_of_a_dead_process_on_this_controller_is_broken(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    me = lock.Holder.me("x")
    take_by_hand(sim, platform, holder_line(user=me.user, host=me.host, pid=999999))
    wl = WindowLock(d, "T1", 300, alive=lambda pid: pid != 999999)
    res = window(d, platform, stamp="T1", lock=wl)
    assert f"its process 999999 no longer runs on this controller ({me.host})" in res["warnings"][0]


@pytest.mark.parametrize("platform", ALL)
def test_a_live_lock_is_not_broken(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    take_by_hand(sim, platform, holder_line(when=time.time() - 300 - lock.LOCK_MARGIN_S + 30))
    with pytest.raises(SwitchError, match=r"another change window holds this switch: ops@elsewhere \(pid 4242, "
                                          r"run R1"):
        window(d, platform, stamp="T1", confirm_timeout=300)
    assert d.get_running() == before
    assert "ops@elsewhere" in sim.sw.shell(f"cat {LOCK[platform]}/holder")[0]   # left as it was


def test_a_lock_naming_no_linerate_holder_is_refused_with_how_to_remove_it(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    take_by_hand(sim, "sonic", "someone typed this")
    with pytest.raises(SwitchError, match=r"names no linerate holder \('someone typed this'\); nothing is sent. "
                                          r"Remove it by hand \(rm -rf /var/lock/linerate.lock\)"):
        window(d, "sonic", stamp="T1")


@pytest.mark.parametrize("platform", ALL)
def test_check_mode_reports_the_lock_and_changes_nothing(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    line = holder_line()      # once: a second call may fall in the next second (its stamp is the clock's)
    take_by_hand(sim, platform, line)
    state = json.dumps(sim.sw.to_json(), sort_keys=True)
    res = window(d, platform, check_mode=True)
    assert res["changed"] is True and res["commands"]
    assert res["warnings"] == [f"the switch is locked by another change window: ops@elsewhere (pid 4242, run R1, "
                               f"since {lock.Holder.parse(line).stamp()}) ({LOCK[platform]}); a real run "
                               "now would be refused"]
    assert json.dumps(sim.sw.to_json(), sort_keys=True) == state
    assert "ops@elsewhere" in sim.sw.shell(f"cat {LOCK[platform]}/holder")[0]


def test_the_controller_copy_refuses_a_second_window_on_the_same_controller(tmp_path):
    d, sim = sim_driver(tmp_path, "nvue", PORTS["nvue"])
    d2, _ = second(tmp_path, sim, "nvue")
    copy = tmp_path / "b" / "sw" / "linerate.lock"
    orig = d.begin
    seen = {}

    def begin(tag):
        orig(tag)
        seen["copy"] = copy.read_text()
        seen["mode"] = oct(copy.stat().st_mode & 0o777)
        d2.lock_take = lambda line: pytest.fail("the controller copy refuses before the switch is asked")
        with pytest.raises(SwitchError, match=f"lock {copy} on this controller"):
            window(d2, "nvue", stamp="T9", backup_dir=str(tmp_path / "b"))
    d.begin = begin
    window(d, "nvue", stamp="T1", backup_dir=str(tmp_path / "b"))
    assert seen["copy"].startswith(f"linerate {lock.Holder.me('x').user}@") and " run=T1 " in seen["copy"]
    assert seen["mode"] == "0o600" and not copy.exists()


def test_holder_lines_round_trip_and_refuse_other_text():
    h = lock.Holder("a b", "host.x", 7, "T1", 0)
    assert h.line() == "linerate a_b@host.x pid=7 run=T1 time=19700101T000000Z"
    assert lock.Holder.parse(h.line()) == h
    for bad in ("", "linerate x", "linerate a@b pid=x run=T time=19700101T000000Z", h.line() + " extra"):
        assert lock.Holder.parse(bad) is None
    me = lock.Holder("u", "h", 1, "T", 1000)
    assert lock.stale(lock.Holder("u", "h", 2, "T", 1000), 300, me, now=1000 + 900, alive=lambda p: True) is None
    assert "901 s ago" in lock.stale(lock.Holder("u", "h", 2, "T", 1000), 300, me, now=1000 + 901,
                                     alive=lambda p: True)
    assert lock.stale(lock.Holder("u", "other", 2, "T", 1000), 300, me, now=1001, alive=lambda p: False) is None
    assert "process 2" in lock.stale(lock.Holder("u", "h", 2, "T", 1000), 300, me, now=1001, alive=lambda p: False)


# ---------------------------------------------------------------- the running config moved

@pytest.mark.parametrize("platform", ALL)
def test_a_change_landing_before_begin_stops_the_window_with_nothing_sent(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    other = {"nvue": ["nv set interface swp1 link mtu 1500", "nv config apply -y"],
             "sonic": ["sudo config interface mtu Ethernet0 1500", "sudo config save -y"],
             "eos": ["configure session ops1", "interface Ethernet1/1", "mtu 1500", "end",
                     "configure session ops1 commit"]}[platform]
    orig = d.get_running
    calls = {"n": 0}

    def get_running():
        calls["n"] += 1
        if calls["n"] == 2:   # between the first read and begin: another administrator's change lands
            ctx = sim.sw.new_context("ops")
            for line in other:
                sim.sw.execute(ctx, line)
        return orig()
    d.get_running = get_running
    with pytest.raises(SwitchError) as err:
        window(d, platform, stamp="T1")
    assert str(err.value).startswith("switch sw: the running config changed between the first read and the begin "
                                     "of the window: another change landed in between; nothing was sent")
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert "mtu 1500" in orig() or '"mtu": "1500"' in orig()   # the other change stays
    push = {"nvue": "nv set qos", "sonic": "sudo sonic-db-cli", "eos": "qos map"}[platform]
    assert not any(c.startswith(push) for c in sim.sent)
    # what begin made is gone: no checkpoint, timer or session of the window is left
    if platform == "sonic":
        assert sim.sw.checkpoints == {} and sim.sw.timers == {}
    if platform == "eos":
        assert "linerate-T1" not in sim.sw.sessions
    assert d.pending() == []


# ---------------------------------------------------------------- recovery touches only our own state

@pytest.mark.parametrize("platform", ALL)
def test_recovery_leaves_another_admins_session_revision_or_checkpoint(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    ctx = sim.sw.new_context("ops")
    # another administrator's own state, made while our window runs (after our pending check)
    theirs = {"nvue": None, "sonic": ["sudo config checkpoint ops-before-upgrade"],
              "eos": ["configure session ops-maint", "end"]}[platform]
    orig_push = d.push

    def push(cmds):
        for line in theirs or []:
            sim.sw.execute(ctx, line)
        orig_push(cmds[:1])
        raise SwitchError("sw", "injected failure after the first push")
    d.push = push
    with pytest.raises(SwitchError, match="push failed: injected failure"):
        window(d, platform, stamp="T1")
    assert d.get_running() == before
    if platform == "sonic":
        assert list(sim.sw.checkpoints) == ["ops-before-upgrade"] and sim.sw.timers == {}
    if platform == "eos":
        assert sim.sw.sessions["ops-maint"]["state"] == "pending"
    # the restore path too: linerate's leftovers only
    if platform == "eos":
        sim.sw.execute(ctx, "configure session linerate-OLD")
        sim.sw.execute(ctx, "end")
        cleared = d.clear_pending(before)
        assert cleared == ["configure session linerate-OLD abort (was pending)"]
        assert "ops-maint" in sim.sw.sessions
    if platform == "sonic":
        sim.sw.execute(ctx, "sudo config checkpoint linerate-OLD")
        assert d.clear_pending(before) == ["systemctl stop linerate-deadman-OLD.timer; "
                                           "config delete-checkpoint linerate-OLD"]
        assert list(sim.sw.checkpoints) == ["ops-before-upgrade"]


def test_nvue_undo_leaves_a_revision_that_is_not_ours(tmp_path):
    d, sim = sim_driver(tmp_path, "nvue", PORTS["nvue"])
    ctx = sim.sw.new_context("ops")
    orig_commit = d.commit

    def commit(timeout):
        orig_commit(timeout)
        # another administrator applies their own revision (with a confirm timer) over ours
        sim.sw.execute(ctx, "nv set system hostname other")
        sim.sw.execute(ctx, "nv config apply --confirm 5 -y")
        raise SwitchError("sw", "injected failure after the commit")
    d.commit = commit
    with pytest.raises(SwitchError) as err:
        window(d, "nvue", stamp="T1")
    waiting = [r["id"] for r in sim.sw.revisions if r["state"] == "confirm_pending"]
    assert waiting and str(waiting[-1]) != d._rev_applied
    assert not any(c.startswith("nv config apply") and c.endswith(" -y") and c.split()[3].isdigit()
                   for c in sim.sent)   # no re-apply of an older revision over theirs
    assert err.value.rolled_back is False and "ROLLBACK INCOMPLETE" in str(err.value)


def test_nvue_restore_leaves_a_pending_revision_it_cannot_attribute(tmp_path):
    d, sim = sim_driver(tmp_path, "nvue", PORTS["nvue"])
    before = d.get_running()
    sim.sw.execute(sim.sw.new_context("ops"), "nv set system hostname work-in-progress")
    with pytest.raises(SwitchError, match="uncommitted configuration is pending|still pending"):
        run_apply(d, before + "nv set interface swp1 link mtu 9000\n", full=True, force=True)
    assert sim.sw.pending is not None and sim.sw.pending["system hostname"] == "work-in-progress"


# ---------------------------------------------------------------- SONiC dead-man timer

def test_sonic_dead_man_timer_is_armed_at_begin_and_stopped_at_confirm(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    seen = {}
    orig = d.push

    def push(cmds):
        seen["timers"] = json.loads(json.dumps(sim.sw.timers))
        orig(cmds)
    d.push = push
    window(d, "sonic", stamp="T1", confirm_timeout=240)
    t = seen["timers"]["linerate-deadman-T1"]
    assert t["state"] == "waiting" and t["command"] == ["/usr/local/bin/config", "rollback", "linerate-T1"]
    assert 230 < t["deadline"] - time.time() <= 240
    assert ("sudo systemd-run --unit=linerate-deadman-T1 --on-active=240s /usr/local/bin/config rollback "
            "linerate-T1") in sim.sent
    i = sim.sent.index("systemctl show -p SubState --value linerate-deadman-T1.timer")
    assert sim.sent[i + 1:i + 4] == ["sudo systemctl stop linerate-deadman-T1.timer", "sudo config save -y",
                                     "sudo config delete-checkpoint linerate-T1"]
    assert sim.sw.timers == {} and sim.sw.checkpoints == {}


def test_sonic_dead_man_timer_reverts_a_switch_whose_controller_vanished(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    before = d.get_running()
    d.confirm = lambda: (_ for _ in ()).throw(SystemExit("controller killed"))   # dies after the push
    d.undo = lambda: pytest.fail("a dead controller runs no recovery")
    with pytest.raises(SystemExit):
        window(d, "sonic", stamp="T1", confirm_timeout=120)
    assert d.get_running() != before and sim.sw.timers["linerate-deadman-T1"]["state"] == "waiting"
    # the simulator restarts (state from disk), then the timer's time comes
    store = sim.sw.store
    again = type(sim.sw)("sw", sim.sw.spec, store)
    store.load(again)
    assert again.timers["linerate-deadman-T1"]["state"] == "waiting"
    again.fire_due_timers(now=time.time() + 121)
    assert again.timers["linerate-deadman-T1"]["state"] == "elapsed"
    assert json.loads(again.execute(again.new_context("admin"), "show runningconfiguration all")) == json.loads(before)
    assert again.execute(again.new_context("admin"),
                         "systemctl show -p SubState --value linerate-deadman-T1.timer") == "elapsed"


def test_sonic_restart_after_the_deadline_fires_the_timer(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    before = d.get_running()
    d.confirm = lambda: (_ for _ in ()).throw(SystemExit("controller killed"))
    with pytest.raises(SystemExit):
        window(d, "sonic", stamp="T1", confirm_timeout=120)
    sim.sw.timers["linerate-deadman-T1"]["deadline"] = time.time() - 1
    sim.sw.store.save(sim.sw)
    again = type(sim.sw)("sw", sim.sw.spec, sim.sw.store)
    sim.sw.store.load(again)
    assert again.timers["linerate-deadman-T1"]["state"] == "elapsed"
    assert again.db == json.loads(before)


def test_sonic_confirm_refuses_when_the_dead_man_timer_already_fired(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    before = d.get_running()
    orig = d.confirm

    def late_confirm():
        sim.sw.fire_due_timers(now=time.time() + 10_000)   # the timer ran out before the confirm
        orig()
    d.confirm = late_confirm
    with pytest.raises(SwitchError, match=r"the dead-man timer linerate-deadman-T1.timer is elapsed, not waiting: "
                                          r"it has fired"):
        window(d, "sonic", stamp="T1")
    assert d.get_running() == before and "sudo config save -y" not in sim.sent


def test_sonic_simulator_refuses_what_systemd_refuses(tmp_path):
    sim = SimSwitch(tmp_path, "sonic", ["Ethernet0"])
    ctx = sim.sw.new_context("admin")
    run = lambda line: sim.sw.execute(ctx, line)  # noqa: E731
    assert run("systemd-run --unit=x --on-active=5s /usr/local/bin/config rollback c") == \
        "Failed to start transient timer unit: Interactive authentication required."
    assert run("sudo systemd-run --unit=x --on-active=5s /usr/local/bin/config rollback c") == \
        "Running timer as unit: x.timer\nWill run service as unit: x.service"
    assert run("sudo systemd-run --unit=x --on-active=5s /usr/local/bin/config rollback c") == \
        "Failed to start transient timer unit: Unit x.timer already exists."
    assert run("sudo systemd-run --on-active=soon config rollback c") == "Failed to parse timer value: soon"
    assert run("sudo systemctl stop y.timer") == "Failed to stop y.timer: Unit y.timer not loaded."
    assert run("systemctl stop x.timer").startswith("Failed to stop x.timer: Interactive authentication required.")
    assert run("systemctl show -p SubState --value x.timer") == "waiting"
    assert run("sudo systemctl stop x.timer") == ""
    assert run("systemctl show -p SubState --value x.timer") == "dead"


@pytest.mark.parametrize("platform", ALL)
def test_simulated_shell_answers_as_coreutils_do(tmp_path, platform):
    sim = SimSwitch(tmp_path, platform, PORTS[platform])
    ctx = sim.sw.new_context("admin")
    sh, p = SHELL[platform], LOCK[platform]
    run = lambda line: sim.sw.execute(ctx, sh + line)  # noqa: E731
    assert run(f"mkdir {p} && echo 'a b' > {p}/holder") == ""
    assert run(f"mkdir {p} && echo 'c' > {p}/holder") == f"mkdir: cannot create directory '{p}': File exists"
    assert run(f"cat {p}/holder") == "a b"
    assert run(f"cat {p}") == f"cat: {p}: Is a directory"
    assert run(f"rm {p}") == f"rm: cannot remove '{p}': Is a directory"
    assert run(f"rm -rf {p}") == ""
    assert run(f"cat {p}/holder") == f"cat: {p}/holder: No such file or directory"
    assert run(f"cat {p}/holder 2>/dev/null") == ""
    assert run("mkdir /nonexistent/x") == "mkdir: cannot create directory '/nonexistent/x': No such file or directory"
