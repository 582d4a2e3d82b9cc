"""Cancel is a failure like any other (issue 36): the journal of in-flight windows, the watch on the
controller (SIGKILL of ansible-playbook's process group does not reach the module), and the next run's
report - with the in-process simulators."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from switch_testlib import ROOT, render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch import journal, lock
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_lock import earlier_window

PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}
ALL = ["nvue", "sonic", "eos"]


@pytest.fixture(autouse=True)
def lab_state(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    journal.CAUSE.clear()
    yield
    journal.CAUSE.clear()


def window(d, platform, backups, **kw):
    return run_apply(d, render(platform, PORTS[platform]), ports=PORTS[platform], post_check=False, backup_dir=str(backups), **kw)


def cut_off_mid_push(d, cause=None):
    """The first command lands, then the signal comes (as the controller watch or ansible-runner sends it)."""
    orig = d.push

    def push(cmds):
        orig(cmds[:1])
        if cause:
            journal.CAUSE["name"] = cause
        os.kill(os.getpid(), signal.SIGTERM)
        orig(cmds[1:])

    d.push = push


@pytest.mark.parametrize("platform", ALL)
def test_a_window_cut_off_keeps_its_journal_with_the_outcome(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    seen = {}
    orig_begin = d.begin

    def begin(tag):
        seen["entry"] = journal.read(journal.journal_path(str(tmp_path / "b"), "sw"))  # written before the change
        orig_begin(tag)

    d.begin = begin
    cut_off_mid_push(d)
    with pytest.raises(SwitchError) as err:
        window(d, platform, tmp_path / "b", stamp="T1")
    assert "interrupted by SIGTERM during push; rolled back" in str(err.value)
    assert seen["entry"]["state"] == "in-flight" and seen["entry"]["run"] == "T1"
    assert seen["entry"]["backup_path"] == str(tmp_path / "b" / "sw" / f"T1.{platform}.cfg")
    me = lock.Holder.me("x")
    assert (seen["entry"]["pid"], seen["entry"]["machine"], seen["entry"]["start"]) == (me.pid, me.machine, me.start)
    entry = journal.read(journal.journal_path(str(tmp_path / "b"), "sw"))
    assert entry["state"] == "cut-off" and entry["rolled_back"] is True and entry["outcome"] == str(err.value)
    assert oct(os.stat(journal.journal_path(str(tmp_path / "b"), "sw")).st_mode & 0o777) == "0o600"
    assert d.get_running() == before and d.pending() == []


@pytest.mark.parametrize("platform", ALL)
def test_a_window_whose_result_is_returned_removes_its_journal(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    res = window(d, platform, tmp_path / "b", stamp="T1")
    assert res["changed"] is True
    assert journal.read(journal.journal_path(str(tmp_path / "b"), "sw")) is None
    # a failure Ansible prints (not a cancel) removes it too
    orig = d.push

    def push(cmds):
        raise SwitchError("sw", "injected")

    d.push = push
    with pytest.raises(SwitchError):
        run_apply(
            d, render(platform, PORTS[platform], switch_fabric_mtu=9000), ports=PORTS[platform], post_check=False, backup_dir=str(tmp_path / "b"), stamp="T2"
        )
    d.push = orig
    assert journal.read(journal.journal_path(str(tmp_path / "b"), "sw")) is None


def test_the_controllers_end_is_named_as_the_cause(tmp_path):
    d, sim = sim_driver(tmp_path, "nvue", PORTS["nvue"])
    cut_off_mid_push(d, cause="the end of its controller (ansible-playbook pid 4242: killed, e.g. SIGKILL of its process group)")
    with pytest.raises(SwitchError) as err:
        window(d, "nvue", tmp_path / "b", stamp="T1")
    assert str(err.value).startswith(
        "switch sw: interrupted by the end of its controller (ansible-playbook pid 4242: killed, e.g. SIGKILL of its process group) during push; rolled back"
    )


def test_the_controller_watch_fires_when_the_process_ends():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    ended = threading.Event()
    t = journal.watch_controller(child.pid, on_end=ended.set)
    assert t is not None and not ended.is_set()
    child.stdin.close()  # the child ends when its input does: an event, not a time
    child.wait(timeout=60)
    assert ended.wait(timeout=60)
    assert journal.CAUSE["name"] == (f"the end of its controller (ansible-playbook pid {child.pid}: killed, e.g. SIGKILL of its process group)")
    assert journal.watch_controller(2**22 + 12345) is None  # no such process: nothing to watch


def test_the_controller_is_the_first_ancestor_outside_the_session():
    """As Ansible's worker does (setsid), a module in its own session finds the process that started it."""
    code = (
        "import sys; sys.path.insert(0, %r); from ansible_collections.linerate.fabric.plugins.module_utils."
        "switch import journal; print(journal.controller_pid())" % os.path.join(ROOT, ".collections")
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, start_new_session=True, check=True).stdout
    assert int(out) == os.getpid()
    assert journal.parent_pid(os.getpid()) == os.getppid() and journal.parent_pid(2**22 + 12345) is None


@pytest.mark.parametrize("platform", ALL)
def test_the_next_run_reports_a_cut_off_window_and_whether_the_switch_is_clean(tmp_path, platform):
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    push = d.push
    cut_off_mid_push(d)
    with pytest.raises(SwitchError):
        window(d, platform, tmp_path / "b", stamp="T1")
    d.push = push
    rep = earlier_window(d, str(tmp_path / "b"))
    assert rep["clean"] is True and rep["entry"]["run"] == "T1"
    assert rep["report"] == (
        f"an earlier change window on this switch (run T1, pid {os.getpid()}) was cut off: "
        f"{rep['entry']['outcome']}. Now: the running config is byte-identical to its backup "
        f"{tmp_path}/b/sw/T1.{platform}.cfg, nothing pending"
    )
    # a window killed outright (no outcome), its change still live: not clean, and said so
    path = journal.journal_path(str(tmp_path / "b"), "sw")
    entry = dict(rep["entry"], outcome=None, state="in-flight", step="push", pid=2**22 + 12345)
    journal.write(path, entry)
    run_apply(d, render(platform, PORTS[platform]), ports=PORTS[platform], post_check=False, lock=False)
    assert d.get_running() != before
    rep = earlier_window(d, str(tmp_path / "b"))
    assert rep["clean"] is False
    assert (
        "was cut off: cut off during push with no outcome written (its process ended without a word: killed "
        "outright). Now: the running config differs from its backup"
    ) in rep["report"]
    assert rep["report"].endswith(f"Restore that backup (playbooks/switch_rollback.yml) once you know why; the journal {path} stays until the switch is clean")
    # its process still runs on this controller: in flight, not cut off
    journal.write(path, dict(entry, pid=os.getppid(), start=lock.start_time(os.getppid())))
    rep = earlier_window(d, str(tmp_path / "b"))
    assert rep["clean"] is False and rep["report"].endswith("is still running on this controller: wait for it")


@pytest.mark.parametrize("platform", ALL)
def test_the_pre_checks_read_with_the_intent_returns_the_cut_off_window(tmp_path, platform):
    """switch_info as the pre-check calls it (config given: the delta too) keeps earlier_window in its
    result, so the role's pre-check can remove the journal of a clean switch (it once lost it to the delta)."""
    from ansible_collections.linerate.fabric.plugins.modules import switch_info

    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    push = d.push
    cut_off_mid_push(d)
    with pytest.raises(SwitchError):
        window(d, platform, tmp_path / "b", stamp="T1")
    d.push = push
    p = {
        "name": "sw",
        "backup_dir": str(tmp_path / "b"),
        "config": render(platform, PORTS[platform]),
        "fabric_ports": PORTS[platform],
        "return_running_config": False,
        "no_drop_priority": 3,
        "ecn": True,
        "require_ports_up": False,
    }
    got = switch_info.read(p, d)
    assert got["earlier_window"]["clean"] is True and got["earlier_window"]["entry"]["run"] == "T1"
    assert got["earlier_window"]["path"] == journal.journal_path(str(tmp_path / "b"), "sw")
    assert got["commands"]  # the intent is not on the switch: the delta is there beside it


def test_no_journal_no_report_and_an_unreadable_one_is_named(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS["sonic"])
    assert earlier_window(d, str(tmp_path / "b")) is None
    path = journal.journal_path(str(tmp_path / "b"), "sw")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("{trunc")
    rep = earlier_window(d, str(tmp_path / "b"))
    assert rep["clean"] is False and rep["report"] == (
        f"the window journal {path} is not one linerate wrote ('{{trunc'): read the switch by hand, then remove it"
    )
    journal.write(path, {"a": 1})
    assert json.load(open(path)) == {"a": 1} and not os.path.exists(f"{path}.{os.getpid()}.tmp")


# ---------------------------------------------------------------- the outcome printed on SIGINT / SIGTERM


def module_like(tmp_path, name):
    """A process standing in for a cut-off module: it ends when its input closes (an event, not a time)."""
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)


def test_collect_outcomes_waits_for_each_module_and_prints_its_outcome(tmp_path):
    rundir = tmp_path / "run"
    rundir.mkdir()
    mod = module_like(tmp_path, "leaf1")
    jpath = journal.journal_path(str(tmp_path / "b"), "leaf1")
    journal.write(jpath, {"state": "cut-off", "outcome": "switch leaf1: interrupted by SIGTERM during push; rolled back: ..."})
    journal.write(str(rundir / "leaf1.1.json"), {"journal": jpath, "pid": mod.pid, "switch": "leaf1", "deadline": 2**40})
    ended = threading.Event()

    def collect():
        seen["lines"] = journal.collect_outcomes(str(rundir))
        ended.set()

    seen = {}
    t = threading.Thread(target=collect)
    t.start()
    assert not ended.wait(timeout=0.5)  # the module still runs: its outcome is awaited, not guessed
    mod.stdin.close()
    mod.wait(timeout=60)
    assert ended.wait(timeout=60)
    assert seen["lines"] == ["switch leaf1: interrupted by SIGTERM during push; rolled back: ..."]
    assert journal.read(jpath) is None and os.listdir(rundir) == []  # shown: the next run has nothing to report


def test_collect_outcomes_names_a_window_without_an_outcome_in_time(tmp_path):
    rundir = tmp_path / "run"
    rundir.mkdir()
    mod = module_like(tmp_path, "leaf2")
    try:
        jpath = journal.journal_path(str(tmp_path / "b"), "leaf2")
        journal.write(jpath, {"state": "in-flight", "step": "confirm", "outcome": None})
        journal.write(str(rundir / "leaf2.1.json"), {"journal": jpath, "pid": mod.pid, "switch": "leaf2", "deadline": 0})  # its confirm time is over
        assert journal.collect_outcomes(str(rundir)) == [
            f"switch leaf2: the window (pid {mod.pid}) has no outcome yet (it was in-flight during confirm); the next "
            f"run reads {jpath} and the switch and reports it"
        ]
        assert journal.read(jpath) is not None  # kept for the next run
    finally:
        mod.stdin.close()
        mod.wait(timeout=60)


def test_the_journal_names_its_entry_to_the_controller_and_removes_it_when_done(tmp_path, monkeypatch):
    rundir = tmp_path / "run"
    rundir.mkdir()
    monkeypatch.setenv(journal.RUNDIR_ENV, str(rundir))
    j = journal.Journal(journal.journal_path(str(tmp_path / "b"), "leaf1"))
    j.begin(switch="leaf1", confirm_timeout=120)
    ptr = journal.read(str(rundir / f"leaf1.{os.getpid()}.json"))
    assert ptr["journal"] == j.path and ptr["pid"] == os.getpid() and ptr["switch"] == "leaf1"
    assert 120 + journal.OUTCOME_MARGIN_S - 5 < ptr["deadline"] - __import__("time").time() <= 120 + journal.OUTCOME_MARGIN_S
    j.done()
    assert os.listdir(rundir) == [] and journal.read(j.path) is None


def test_the_callback_passes_the_signal_on_prints_the_outcomes_then_lets_ansible_end_the_run(tmp_path, monkeypatch):
    from ansible_collections.linerate.fabric.plugins.callback import window_outcome

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setenv(journal.RUNDIR_ENV, "unset-again-after-the-test")
    monkeypatch.delenv(journal.RUNDIR_ENV)  # the callback sets it; it is unset again after the test
    mark = tmp_path / "worker-got"
    # a stand-in for Ansible's worker: it records the signal it is passed, then ends
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys\n"
            "def h(s, f):\n    open(sys.argv[1], 'w').write(signal.Signals(s).name); sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, h)\nprint('ready', flush=True)\nsys.stdin.read()",
            str(mark),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout.readline().strip() == "ready"
    try:
        cb = window_outcome.CallbackModule()
        assert os.environ[journal.RUNDIR_ENV] == cb.rundir and os.path.isdir(cb.rundir)
        assert signal.getsignal(signal.SIGTERM) == cb._handler
        jpath = journal.journal_path(str(tmp_path / "b"), "leaf1")
        journal.write(jpath, {"state": "cut-off", "outcome": "switch leaf1: interrupted by SIGTERM during push; rolled back"})
        journal.write(os.path.join(cb.rundir, "leaf1.1.json"), {"journal": jpath, "pid": worker.pid, "switch": "leaf1", "deadline": 2**40})
        shown, ended = [], []
        cb._display.display = lambda msg, **kw: shown.append(msg)
        cb.previous[signal.SIGTERM] = lambda s, f: ended.append(s)
        cb._handler(signal.SIGTERM, None)
        worker.wait(timeout=60)
        assert mark.read_text() == "SIGTERM"  # passed on to the worker
        assert shown == ["SIGTERM: the change windows it cut off ended so:", "  switch leaf1: interrupted by SIGTERM during push; rolled back"]
        assert ended == [signal.SIGTERM]  # then Ansible's own handler
        assert not os.path.exists(cb.rundir)
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
        shutil.rmtree(os.environ.get(journal.RUNDIR_ENV, str(tmp_path / "none")), ignore_errors=True)
        if worker.poll() is None:
            worker.kill()
            worker.wait()
