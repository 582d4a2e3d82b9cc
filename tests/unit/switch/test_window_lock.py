"""One window per switch (issue 25): the lock on the switch and the controller, the re-read after begin,
recovery that touches only linerate's own state, and SONiC's dead-man timer - at driver level, with the
in-process simulators."""

import json
import math
import os
import re
import time

import pytest

from switch_testlib import SimSwitch, render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock, sonic
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_lock import WindowLock
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


OTHER_MACHINE = "0123456789abcdef0123456789abcdef"


def holder_line(user="ops", host="elsewhere", pid=4242, run="R1", when=None, machine=OTHER_MACHINE, start=777):
    return lock.Holder(user, host, pid, run, time.time() if when is None else when, machine=machine, start=start).line()


def take_by_hand(sim, platform, line, age=0):
    """Another window's lock, written on the switch ``age`` seconds ago by the switch's own clock."""
    out = sim.sw.execute(sim.sw.new_context("ops"), f"{SHELL[platform]}mkdir {LOCK[platform]} && echo '{line}' > {LOCK[platform]}/holder")
    assert out == ""
    for path in (LOCK[platform], LOCK[platform] + "/holder"):
        sim.sw.fs_mtime[sim.sw._norm(path)] = sim.sw.now() - age


def lock_read_command(platform):
    p = LOCK[platform]
    return f"{SHELL[platform]}cat {p}/holder 2>/dev/null ; stat -c lock-mtime=%Y {p} 2>/dev/null ; date +switch-now=%s"


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
    # unique: this machine's id and this process's start time, not only a short hostname
    assert (me.machine, me.start) == (lock.machine_id(), lock.start_time(os.getpid())) and me.machine
    assert seen["read"] == seen["line"]
    p, sh = LOCK[platform], SHELL[platform]
    rm = ("sudo " if platform == "sonic" else "") + f"rm -rf {p}"
    assert sim.sent[1] == f"{sh}mkdir {p} && echo '{seen['line']}' > {p}/holder"
    assert sim.sent[-2:] == [lock_read_command(platform), sh + rm]
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
        with pytest.raises(SwitchError) as err:  # operator 2 arrives in the middle of operator 1's window
            window(d2, platform, stamp="T9")
        result["err"] = err.value

    d.begin = begin_then_second_operator
    res = window(d, platform, stamp="T1")
    err = result["err"]
    me = lock.Holder.me("T1")
    assert str(err).startswith(
        f"switch sw: another change window holds this switch: {me.user}@{me.host} (machine {me.machine[:12]}, pid {os.getpid()}, run T1, since "
    )
    assert f"lock {LOCK[platform]} on the switch); nothing is sent" in str(err)
    assert (err.rolled_back, err.changed) == (False, False)
    # the second operator read and tried the lock, nothing else
    assert all("linerate.lock" in c or c in ("nv config show -o commands", "show runningconfiguration all", "show running-config") for c in sim2.sent)
    # the first operator's change landed and is the only one
    assert res["changed"] is True and d.get_running() != before and d.pending() == []


@pytest.mark.parametrize("platform", ALL)
def test_a_stale_lock_is_broken_with_a_warning_naming_the_old_holder(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    old = holder_line()  # by the controller's clock just taken; by the switch's 905 s ago
    start = time.monotonic()
    take_by_hand(sim, platform, old, age=300 + lock.LOCK_MARGIN_S + 5)
    res = window(d, platform, stamp="T1", confirm_timeout=300)
    took = time.monotonic() - start
    assert res["changed"] is True
    assert res["warnings"][0].startswith(f"broke the stale window lock {LOCK[platform]} of ops@elsewhere (machine 0123456789ab, pid 4242, run R1, since ")
    # the switch's clock goes on while the window runs: 905 s, plus at most the test's own time on a loaded machine
    age = int(re.search(r"it was taken (\d+) s ago", res["warnings"][0]).group(1))
    assert 905 <= age <= 905 + math.ceil(took), (age, took)
    assert "longer than the confirm timer (300 s) plus 600 s" in res["warnings"][0]
    assert d.stale_window == lock.Holder.parse(old)


@pytest.mark.parametrize("platform", ALL)
def test_a_lock_of_a_dead_process_on_this_controller_is_broken(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    me = lock.Holder.me("x")
    take_by_hand(sim, platform, holder_line(user=me.user, host=me.host, pid=999999, machine=me.machine))
    wl = WindowLock(d, "T1", 300, alive=lambda pid, start: pid != 999999)
    res = window(d, platform, stamp="T1", lock=wl)
    assert f"its process 999999 no longer runs on this controller ({me.host}, machine {me.machine[:12]})" in res["warnings"][0]


@pytest.mark.parametrize("platform", ALL)
def test_a_live_lock_of_another_controller_with_the_same_hostname_is_not_broken(tmp_path, platform):
    """Same user@host, a pid that does not run here: another machine (its machine id differs), so its
    process cannot be judged from here; the lock is young by the switch's clock: refused, left as it is."""
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    me = lock.Holder.me("x")
    line = holder_line(user=me.user, host=me.host, pid=999999)
    take_by_hand(sim, platform, line, age=30)
    with pytest.raises(SwitchError) as err:
        window(d, platform, stamp="T1", lock=WindowLock(d, "T1", 300, alive=lambda pid, start: False))
    assert str(err.value).startswith(
        f"switch sw: another change window holds this switch: {me.user}@{me.host} (machine 0123456789ab, pid 999999, run R1, since "
    )
    assert sim.sw.shell(f"cat {LOCK[platform]}/holder")[0] == line


@pytest.mark.parametrize("platform", ALL)
def test_a_reused_pid_on_this_controller_does_not_keep_a_dead_window_alive(tmp_path, platform):
    """The holder's pid runs here again, but as another process (its start time differs): gone."""
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    me = lock.Holder.me("x")
    take_by_hand(sim, platform, holder_line(user=me.user, host=me.host, pid=1, machine=me.machine, start=12345))
    res = window(d, platform, stamp="T1")  # pid 1 runs, started at boot: not at tick 12345
    assert "its process 1 no longer runs on this controller" in res["warnings"][0]
    assert lock.pid_alive(1, lock.start_time(1)) and not lock.pid_alive(1, 12345) and lock.pid_alive(1)


@pytest.mark.parametrize("platform", ALL)
def test_a_live_lock_is_not_broken(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    # the controller's clock says old (the line's time), the switch's own clock says young: live
    take_by_hand(sim, platform, holder_line(when=time.time() - 10_000), age=300 + lock.LOCK_MARGIN_S - 30)
    with pytest.raises(
        SwitchError,
        match=r"another change window holds this switch: ops@elsewhere \(machine "
        r"0123456789ab, pid 4242, run R1",
    ):
        window(d, platform, stamp="T1", confirm_timeout=300)
    assert d.get_running() == before
    assert "ops@elsewhere" in sim.sw.shell(f"cat {LOCK[platform]}/holder")[0]  # left as it was


def test_a_lock_naming_no_linerate_holder_is_refused_with_how_to_remove_it(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    take_by_hand(sim, "sonic", "someone typed this")
    with pytest.raises(
        SwitchError,
        match=r"names no linerate holder \('someone typed this'\); nothing is sent. "
        r"Remove it by hand \(rm -rf /var/lock/linerate.lock\)",
    ):
        window(d, "sonic", stamp="T1")


@pytest.mark.parametrize("platform", ALL)
def test_check_mode_reports_the_lock_and_changes_nothing(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    line = holder_line()  # once: a second call may fall in the next second (its stamp is the clock's)
    take_by_hand(sim, platform, line)
    state = json.dumps(sim.sw.to_json(), sort_keys=True)
    res = window(d, platform, check_mode=True)
    assert res["changed"] is True and res["commands"]
    assert res["warnings"] == [
        f"the switch is locked by another change window: ops@elsewhere (machine 0123456789ab, "
        f"pid 4242, run R1, since {lock.Holder.parse(line).stamp()}) ({LOCK[platform]}); a "
        "real run now would be refused unless the lock is stale"
    ]
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


# ---------------------------------------------------------------- empty, malformed, timer still running


@pytest.mark.parametrize("platform", ALL)
def test_an_empty_lock_is_broken_once_older_than_the_grace_and_refused_while_younger(tmp_path, platform):
    """A window cut off between mkdir and writing its name (before any change): documented in lock.py."""
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    ctx = sim.sw.new_context("ops")
    assert sim.sw.execute(ctx, f"{SHELL[platform]}mkdir {LOCK[platform]}") == ""
    with pytest.raises(SwitchError) as err:
        window(d, platform, stamp="T1")
    assert str(err.value).startswith(
        f"switch sw: another change window holds this switch: a window that has not "
        f"written its name yet (lock {LOCK[platform]} on the switch); nothing is sent. "
        "An empty lock is another window taking it this moment; once it is older than "
        "60 s by the switch's clock it is broken by the next window"
    )
    assert d.get_running() == before
    sim.sw.clock_skew_s = lock.EMPTY_GRACE_S + 5  # the switch's clock moves on
    res = window(d, platform, stamp="T2")
    assert res["changed"] is True and d.pending() == []
    m = re.fullmatch(
        f"broke the stale window lock {LOCK[platform]} of nobody \\(empty\\): it names no holder and is "
        r"(\d+) s old by the switch's clock \(more than 60 s\): a window cut off while taking it, before "
        r"any change",
        res["warnings"][0],
    )
    assert m and 65 <= int(m.group(1)) <= 70, res["warnings"]  # the skew, plus the second the clock may tick
    assert d.stale_window is None  # nothing of a window to clear
    assert sim.sw.shell(f"cat {LOCK[platform]}/holder")[0].endswith("No such file or directory")


def test_an_empty_lock_does_not_block_the_emergency_restore(tmp_path):
    d, sim = sim_driver(tmp_path, "nvue", PORTS["nvue"])
    before = d.get_running()
    window(d, "nvue", stamp="T1")
    sim.sw.execute(sim.sw.new_context("ops"), f"mkdir {LOCK['nvue']}")
    sim.sw.clock_skew_s = 3600
    res = run_apply(d, before, full=True)
    assert res["changed"] is True and d.get_running() == before
    assert "broke the stale window lock" in res["warnings"][0]


@pytest.mark.parametrize("platform", ALL)
def test_a_stale_lock_whose_window_timer_still_runs_is_not_broken(tmp_path, platform):
    """The holder is old by the switch's clock, but its window's confirm timer still runs on the switch (it
    was killed after the commit): refused naming the holder and the timer; the switch ends it by itself."""
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    dead = driver_for(platform, "sw", host="127.0.1.9", username="u", password="p")
    dead.send = sim
    dead.lock = None
    dead.confirm = lambda: (_ for _ in ()).throw(SystemExit("killed after the commit"))
    dead.undo = lambda: pytest.fail("a killed window runs no recovery")
    with pytest.raises(SystemExit):
        window(dead, platform, stamp="R1", lock=False, confirm_timeout=300)
    take_by_hand(sim, platform, holder_line(run="R1"), age=300 + lock.LOCK_MARGIN_S + 5)
    with pytest.raises(SwitchError) as err:  # another intent: the live change is not it
        run_apply(d, render(platform, PORTS[platform], switch_fabric_mtu=9000), ports=PORTS[platform], post_check=False, stamp="T2", confirm_timeout=300)
    msg = str(err.value)
    assert msg.startswith("switch sw: another change window holds this switch: ops@elsewhere (machine 0123456789ab, pid 4242, run R1, since ")
    assert re.search(
        r"Its lock looks stale \(it was taken 90[5-9] s ago, longer than the confirm timer \(300 s\) plus "
        r"600 s\), but its window's confirm timer still runs: ",
        msg,
    ), msg
    assert {
        "nvue": "NVUE revision",
        "sonic": "the dead-man timer linerate-deadman-R1.timer is waiting",
        "eos": "configure session linerate-R1 is pendingCommitTimer",
    }[platform] in msg
    assert msg.endswith("The switch ends that window by itself; run again after it")
    assert "ops@elsewhere" in sim.sw.shell(f"cat {LOCK[platform]}/holder")[0]


def test_a_lock_the_switch_cannot_date_is_an_error_naming_it(tmp_path):
    d, fake = make_scripted()
    with pytest.raises(
        SwitchError,
        match=r"reading the window lock /var/lock/linerate.lock: the switch did not print "
        r"its clock \(date \+%s\): 'bash: date: command not found'",
    ):
        d.lock_read()


def make_scripted():
    from switch_testlib import make

    return make("nvue", answers={lock_read_command("nvue"): "bash: date: command not found"})


# ---------------------------------------------------------------- the running config moved


@pytest.mark.parametrize("platform", ALL)
def test_a_change_landing_before_begin_stops_the_window_with_nothing_sent(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    other = {
        "nvue": ["nv set interface swp1 link mtu 1500", "nv config apply -y"],
        "sonic": ["sudo config interface mtu Ethernet0 1500", "sudo config save -y"],
        "eos": ["configure session ops1", "interface Ethernet1/1", "mtu 1500", "end", "configure session ops1 commit"],
    }[platform]
    orig = d.get_running
    calls = {"n": 0}

    def get_running():
        calls["n"] += 1
        if calls["n"] == 2:  # between the first read and begin: another administrator's change lands
            ctx = sim.sw.new_context("ops")
            for line in other:
                sim.sw.execute(ctx, line)
        return orig()

    d.get_running = get_running
    with pytest.raises(SwitchError) as err:
        window(d, platform, stamp="T1")
    assert str(err.value).startswith(
        "switch sw: the running config changed between the first read and the begin of the window: another change landed in between; nothing was sent"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert "mtu 1500" in orig() or '"mtu": "1500"' in orig()  # the other change stays
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
    theirs = {"nvue": None, "sonic": ["sudo config checkpoint ops-before-upgrade"], "eos": ["configure session ops-maint", "end"]}[platform]
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
        assert d.clear_pending(before) == ["systemctl stop linerate-deadman-OLD-push.timer linerate-deadman-OLD.timer; config delete-checkpoint linerate-OLD"]
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
    assert not any(
        c.startswith("nv config apply") and c.endswith(" -y") and c.split()[3].isdigit() for c in sim.sent
    )  # no re-apply of an older revision over theirs
    assert err.value.rolled_back is False and "ROLLBACK INCOMPLETE" in str(err.value)


def test_nvue_restore_leaves_a_pending_revision_it_cannot_attribute(tmp_path):
    d, sim = sim_driver(tmp_path, "nvue", PORTS["nvue"])
    before = d.get_running()
    sim.sw.execute(sim.sw.new_context("ops"), "nv set system hostname work-in-progress")
    with pytest.raises(SwitchError, match="uncommitted configuration is pending|still pending"):
        run_apply(d, before + "nv set interface swp1 link mtu 9000\n", full=True, force=True)
    assert sim.sw.pending is not None and sim.sw.pending["system hostname"] == "work-in-progress"


# ---------------------------------------------------------------- SONiC dead-man timer


def test_sonic_dead_man_covers_the_push_then_counts_the_confirm_time_from_its_end(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    seen = {}
    orig_push, orig_commit = d.push, d.commit

    def push(cmds):
        seen["push"] = json.loads(json.dumps(sim.sw.timers))
        seen["n"] = len(cmds)
        orig_push(cmds)

    def commit(timeout):
        seen["commit_at"] = time.time()
        orig_commit(timeout)
        seen["commit"] = json.loads(json.dumps(sim.sw.timers))

    d.push, d.commit = push, commit
    window(d, "sonic", stamp="T1", confirm_timeout=240)
    script = [
        "/bin/sh",
        "-c",
        "/usr/local/bin/config rollback linerate-T1 && /usr/local/bin/config save -y && /usr/local/bin/config delete-checkpoint linerate-T1",
    ]
    # during the push: only the push timer, with room for every command's timeout
    assert list(seen["push"]) == ["linerate-deadman-T1-push"]
    t = seen["push"]["linerate-deadman-T1-push"]
    assert t["state"] == "waiting" and t["command"] == script
    budget = seen["n"] * d.command_timeout + sonic.PUSH_MARGIN_S
    assert budget - 10 < t["deadline"] - time.time() <= budget
    # after the push: the confirm timer only, its 240 s counted from the end of the push
    assert list(seen["commit"]) == ["linerate-deadman-T1"]
    c = seen["commit"]["linerate-deadman-T1"]
    assert c["command"] == script and 0 <= c["deadline"] - seen["commit_at"] - 240 < 5
    arm_confirm = sim.sent.index(f"sudo systemd-run --unit=linerate-deadman-T1 --on-active=240s /bin/sh -c '{script[2]}'")
    assert sim.sent.index("sudo systemctl stop linerate-deadman-T1-push.timer") > arm_confirm  # never none
    i = sim.sent.index("sudo config save -y")
    assert sim.sent[i - 1 : i + 4] == [
        "systemctl show -p SubState --value linerate-deadman-T1.timer",
        "sudo config save -y",
        "systemctl show -p SubState --value linerate-deadman-T1.timer",
        "sudo systemctl stop linerate-deadman-T1.timer",
        "sudo config delete-checkpoint linerate-T1",
    ]
    assert sim.sw.timers == {} and sim.sw.checkpoints == {}


def test_sonic_a_change_is_never_live_unsaved_and_untimed(tmp_path):
    """After every command of the window's confirm, either a dead-man timer waits or the change is saved."""
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    states = []
    inner = d.send

    def send(command, timeout=None):
        out = inner(command, timeout)
        waiting = any(t["state"] == "waiting" for t in sim.sw.timers.values())
        states.append((command, waiting, sim.sw.db == sim.sw.saved))
        return out

    d.send = send
    window(d, "sonic", stamp="T1")
    push_end = max(
        i
        for i, (c, _w, _s) in enumerate(states)
        if c.startswith("sudo sonic-db-cli") or c.startswith("sudo config interface") or c.startswith("sudo config pfcwd")
    )
    assert push_end > 0
    for command, waiting, saved in states[push_end:]:
        assert waiting or saved, f"after {command!r} the change is live, unsaved and without a timer"


def test_sonic_a_fired_dead_man_rolls_back_saves_and_removes_its_checkpoint(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    before = d.get_running()
    d.confirm = lambda: (_ for _ in ()).throw(SystemExit("controller killed"))  # dies after the push
    d.undo = lambda: pytest.fail("a dead controller runs no recovery")
    with pytest.raises(SystemExit):
        window(d, "sonic", stamp="T1", confirm_timeout=120, lock=False)
    assert d.get_running() != before and sim.sw.timers["linerate-deadman-T1"]["state"] == "waiting"
    sim.sw.fire_due_timers(now=time.time() + 121)
    assert sim.sw.timers["linerate-deadman-T1"]["state"] == "elapsed"
    fresh = driver_for("sonic", "sw", host="127.0.1.9", username="u", password="p")
    fresh.send = sim
    assert fresh.get_running() == before
    assert fresh.pending() == [] and sim.sw.checkpoints == {}  # saved, and no checkpoint blocks the next window
    res = window(fresh, "sonic", stamp="T2")
    assert res["changed"] is True and fresh.pending() == []


def test_sonic_dead_man_timer_reverts_a_switch_whose_controller_vanished(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    before = d.get_running()
    d.confirm = lambda: (_ for _ in ()).throw(SystemExit("controller killed"))  # dies after the push
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
    assert again.execute(again.new_context("admin"), "systemctl show -p SubState --value linerate-deadman-T1.timer") == "elapsed"


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
        sim.sw.fire_due_timers(now=time.time() + 10_000)  # the timer ran out before the confirm
        orig()

    d.confirm = late_confirm
    with pytest.raises(
        SwitchError,
        match=r"the dead-man timer linerate-deadman-T1.timer is elapsed, not waiting "
        r"before config save: it has fired",
    ):
        window(d, "sonic", stamp="T1")
    assert d.get_running() == before and "sudo config save -y" not in sim.sent


def test_sonic_simulator_refuses_what_systemd_refuses(tmp_path):
    sim = SimSwitch(tmp_path, "sonic", ["Ethernet0"])
    ctx = sim.sw.new_context("admin")
    run = lambda line: sim.sw.execute(ctx, line)  # noqa: E731
    assert (
        run("systemd-run --unit=x --on-active=5s /usr/local/bin/config rollback c")
        == "Failed to start transient timer unit: Interactive authentication required."
    )
    assert (
        run("sudo systemd-run --unit=x --on-active=5s /usr/local/bin/config rollback c")
        == "Running timer as unit: x.timer\nWill run service as unit: x.service"
    )
    assert (
        run("sudo systemd-run --unit=x --on-active=5s /usr/local/bin/config rollback c") == "Failed to start transient timer unit: Unit x.timer already exists."
    )
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
