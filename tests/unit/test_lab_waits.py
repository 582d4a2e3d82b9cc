"""Lab waits bounded by the state they wait for (issue 26, item 8).

The switch simulator's fault injection once exited 1 for spine1 on a loaded machine (load average 5 on
2 cores): it gave the simulator a fixed 10 s, and read the answer file while the simulator was still
writing it. Now a wait lasts while the process that brings the state is alive, ends at once (naming
the simulator and why) when it is not, and the answer appears whole.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))
sys.path.insert(0, os.path.join(ROOT, "lab", "switchsim"))

from linerate_lab import waits  # noqa: E402

FAULT = os.path.join(ROOT, "lab", "switchsim", "fault.py")


class Clock:
    """A fake monotonic clock: sleep() advances it, so waits of minutes run in no time."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


# --------------------------------------------------------------------------- waits.wait_for


def test_a_state_that_comes_late_is_waited_for_while_its_process_lives():
    clock = Clock()
    # answers after 40 s of a loaded machine: four times the old fixed 10 s
    got = waits.wait_for("sim", lambda: "answer" if clock.t >= 40 else None, lambda: None, clock=clock, sleep=clock.sleep, interval=0.5)
    assert got == "answer" and 40 <= clock.t < 41


def test_a_gone_process_ends_the_wait_at_once_with_its_reason():
    clock = Clock()
    with pytest.raises(waits.WaitError) as e:
        waits.wait_for(
            "the switch simulator for spine1",
            lambda: None,
            lambda: "exited with status 1" if clock.t >= 3 else None,
            clock=clock,
            sleep=clock.sleep,
            interval=1,
        )
    assert str(e.value) == "the switch simulator for spine1: exited with status 1"
    assert clock.t == 3  # not the overall deadline


def test_an_answer_given_just_before_the_exit_is_taken():
    answered = []

    def gone():
        answered.append(True)  # the process answered, then exited, between the two looks
        return "exited"

    assert waits.wait_for("sim", lambda: "ok" if answered else None, gone, sleep=lambda s: None) == "ok"


def test_a_live_process_that_never_answers_ends_at_the_overall_deadline(monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_WAIT_S", "90")
    clock = Clock()
    with pytest.raises(waits.WaitError) as e:
        waits.wait_for("ibsim (pid 7)", lambda: None, lambda: None, clock=clock, sleep=clock.sleep, interval=1)
    assert clock.t == 90
    assert str(e.value).startswith("ibsim (pid 7): no answer after 90 s although the process is alive")
    assert "LINERATE_LAB_WAIT_S=90" in str(e.value)


def test_the_default_overall_deadline_is_generous(monkeypatch):
    monkeypatch.delenv("LINERATE_LAB_WAIT_S", raising=False)
    assert waits.deadline_s() == 600.0


@pytest.mark.parametrize("bad", ["0", "-5", "soon", "nan"])
def test_a_bad_overall_deadline_is_refused_naming_the_key_and_value(monkeypatch, bad):
    monkeypatch.setenv("LINERATE_LAB_WAIT_S", bad)
    with pytest.raises(waits.WaitError) as e:
        waits.deadline_s()
    assert str(e.value) == f"LINERATE_LAB_WAIT_S: {bad!r} is not allowed (allowed: a positive number of seconds)"


def test_pid_alive():
    assert waits.pid_alive(os.getpid())
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert not waits.pid_alive(p.pid)


def test_a_zombie_is_not_alive():
    """An exited child not reaped yet (ibsim's, until stop() waits on it) runs nothing."""

    def state(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0]

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        waits.wait_for("the child's exit", lambda: True if state(p.pid) == "Z" else None, deadline=60)
        assert not waits.pid_alive(p.pid)
    finally:
        p.wait()


# --------------------------------------------------------------------------- fault.py, no simulator


def _fault(state, *args, env=None):
    return subprocess.run(
        [sys.executable, FAULT, "--state", str(state), *args], capture_output=True, text=True, env=dict(os.environ, **(env or {})), timeout=120
    )


def test_no_simulator_fails_at_once_naming_the_switch_and_withdraws_the_request(tmp_path):
    t0 = time.monotonic()
    r = _fault(tmp_path, "spine1", "reject", "commit", "1")
    assert r.returncode == 2, r
    assert r.stderr.startswith(f"fault: spine1 reject: the switch simulator for spine1 (state {tmp_path}/switchsim): not running (no live pid in"), r.stderr
    assert time.monotonic() - t0 < 10
    assert not list(tmp_path.glob("switchsim/faults/*.json"))  # nothing left for a simulator started later


def test_a_stale_pid_file_is_not_a_running_simulator(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    (tmp_path / "switchsim").mkdir()
    (tmp_path / "switchsim" / "switchsim.pid").write_text(f"{p.pid}\n")
    r = _fault(tmp_path, "leaf1", "clear")
    assert r.returncode == 2 and "not running" in r.stderr and "leaf1" in r.stderr


def test_a_simulator_that_exits_after_taking_the_request_is_named(tmp_path, monkeypatch):
    """A stand-in simulator process that takes the request and dies without answering."""
    import fault

    d = tmp_path / "switchsim" / "faults"
    d.mkdir(parents=True)
    taker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import glob, os, sys, time\n"
                f"d = {str(d)!r}\n"
                "while not glob.glob(os.path.join(d, '*.json')): time.sleep(0.01)\n"
                "[os.remove(p) for p in glob.glob(os.path.join(d, '*.json'))]\n"
                "sys.exit(3)\n"
            ),
        ]
    )
    (tmp_path / "switchsim" / "switchsim.pid").write_text(f"{taker.pid}\n")
    # the stand-in is this test's child: its zombie still answers kill(0) until reaped (poll() reaps it)
    monkeypatch.setattr(fault.waits, "pid_alive", lambda pid: taker.poll() is None)
    try:
        with pytest.raises(waits.WaitError) as e:
            fault.inject(str(tmp_path), {"switch": "spine1", "action": "clear"}, deadline=60)
    finally:
        if taker.poll() is None:
            taker.kill()
    msg = str(e.value)
    assert msg.startswith(f"the switch simulator for spine1 (state {tmp_path}/switchsim), pid {taker.pid}, fault clear:")
    assert f"the simulator (pid {taker.pid}) exited after taking the request (it may be half applied)" in msg


# --------------------------------------------------------------------------- fault.py and the real simulator


def _free_port():
    s = socket.socket()
    s.bind(("127.0.1.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def simulator(tmp_path):
    import topology

    state = tmp_path / "state"
    topology.write(str(state), nodes=2, port=_free_port())
    log = open(tmp_path / "switchsim.log", "w")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "lab", "switchsim", "run.py"), "--state", str(state)], stdout=log, stderr=subprocess.STDOUT)
    pidfile = state / "switchsim" / "switchsim.pid"
    try:
        waits.wait_for(
            "switch simulator", lambda: True if pidfile.exists() else None, lambda: None if proc.poll() is None else (tmp_path / "switchsim.log").read_text()
        )
        yield state, proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.terminate()
            proc.wait(timeout=60)
        log.close()


def test_fault_injection_outlasts_a_starved_simulator(simulator):
    """The flake, reproduced: the simulator gets no CPU for longer than the old fixed 10 s."""
    state, proc = simulator
    os.kill(proc.pid, signal.SIGSTOP)
    inj = subprocess.Popen(
        [sys.executable, FAULT, "--state", str(state), "spine1", "reject", "^commit", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(11)
    assert inj.poll() is None, inj.communicate()  # still waiting: the simulator lives
    os.kill(proc.pid, signal.SIGCONT)
    out, err = inj.communicate(timeout=120)
    assert inj.returncode == 0, err
    assert out.strip() == "fault: spine1 reject ^commit"
    armed = _fault(state, "spine1", "armed")
    assert armed.returncode == 0, armed.stderr
    assert json.loads(armed.stdout) == [{"kind": "reject", "match": "^commit", "count": 1, "skip": 0}]
    assert _fault(state, "spine1", "clear").returncode == 0
    assert json.loads(_fault(state, "spine1", "armed").stdout) == []
    assert not list((state / "switchsim" / "faults").iterdir())  # answered, read, removed


def test_a_simulator_killed_mid_wait_ends_the_wait_at_once(simulator):
    state, proc = simulator
    os.kill(proc.pid, signal.SIGSTOP)
    inj = subprocess.Popen(
        [sys.executable, FAULT, "--state", str(state), "spine1", "link_down", "Ethernet1/1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(1)
    proc.kill()
    proc.wait()
    t0 = time.monotonic()
    _out, err = inj.communicate(timeout=120)
    assert time.monotonic() - t0 < 30
    assert inj.returncode == 2
    assert f"fault: spine1 link_down: the switch simulator for spine1 (state {state}/switchsim), pid {proc.pid}" in err
    assert "exited before taking the request" in err
    assert not list((state / "switchsim" / "faults").glob("*.json"))  # withdrawn


def test_a_refusal_is_exit_1_with_the_simulators_words(simulator):
    state, _proc = simulator
    r = _fault(state, "spine1", "link_down", "Ethernet99/1")
    assert r.returncode == 1
    assert r.stderr.strip() == "fault: spine1 link_down: the simulator refused: spine1 has no fabric port 'Ethernet99/1'"
    r = _fault(state, "spine9", "clear")
    assert r.returncode == 1 and "switch 'spine9' is not served here" in r.stderr
