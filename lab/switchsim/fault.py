#!/usr/bin/env python3
"""Inject a switch fault into the running simulator (the lab's fault hook).

    lab/switchsim/fault.py --state DIR SWITCH pfc_off PORT
    lab/switchsim/fault.py --state DIR SWITCH link_down|link_up PORT
    lab/switchsim/fault.py --state DIR SWITCH reject REGEX [COUNT] [--skip N]
    lab/switchsim/fault.py --state DIR SWITCH drop|drop_after|hang|hang_after REGEX [COUNT] [--skip N]
    lab/switchsim/fault.py --state DIR SWITCH headroom_zero|headroom_restore PORT
    lab/switchsim/fault.py --state DIR SWITCH pfcwd_off|pfcwd_restore
    lab/switchsim/fault.py --state DIR SWITCH clock_skew SECONDS
    lab/switchsim/fault.py --state DIR SWITCH clear
    lab/switchsim/fault.py --state DIR SWITCH armed

armed changes nothing: it prints, as JSON, the reject/drop/hang faults still waiting
for their command (a test waits on it: "the hang has been reached", not "2 s passed").

Writes a request file into <state>/switchsim/faults/, which the simulator
polls (every 0.2 s), and waits for its answer for as long as the simulator's
process is alive (lab/sim/linerate_lab/waits.py: no fixed deadline a loaded
machine misses; exit 2 with the reason when it is not running, exits, or never
answers within LINERATE_LAB_WAIT_S; exit 1 when it refuses the request). pfc_off changes the switch's
running config (drift an operator would see and a re-run repairs);
link_down/up change only the port's operational state; headroom_zero leaves a port
no lossless headroom (SONiC: its lossless BUFFER_PG entries are deleted and saved, drift a
re-run repairs; EOS/NVUE: the buffer model's state, which NVUE prints in ``nv show interface
PORT qos buffer ingress-priority-group``: the lossless priority group without headroom) and
headroom_restore undoes it; pfcwd_off stops the switch's PFC watchdog (SONiC: ``config pfcwd
stop``, saved; EOS: ``no priority-flow-control pause watchdog`` on every port; NVUE: ``nv set
interface PORT qos pfc-watchdog state disable`` on every port that had it enabled, applied as a
revision: drift ``nv show interface PORT qos pfc-watchdog`` shows and a re-run repairs) and
pfcwd_restore undoes it; clock_skew moves the switch's own clock (``date``, and the time of the
files its shell writes: the window lock's age) SECONDS ahead of the controller's, as on a switch
without NTP (clear puts it back); reject makes the next
COUNT commands matching REGEX fail with the platform's own error; drop closes
the SSH connection when such a command arrives (drop_after: once it has
run); hang stops the session answering (hang_after: once it has run). --skip
lets the first N matching commands through (e.g. the read-back after the
push, not the first read). The
request is also recorded in the fabric model's ``faults`` list.
"""

import argparse
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from simcore import data_dir  # noqa: E402  (puts lab/sim on sys.path)

from linerate_lab import waits  # noqa: E402


def simulator_pid(state):
    """The pid of the switch simulator serving ``state`` (its pid file, run.py), or None."""
    try:
        with open(os.path.join(data_dir(state), "switchsim.pid"), encoding="utf-8") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def inject(state, request, deadline=None):
    """Hand ``request`` to the simulator and return its answer ({"ok": ..., "error": ...}).

    The wait is bounded by the simulator's state, not by a clock: it lasts while the simulator's
    process is alive and has not answered (a loaded machine only makes it answer later), ends at
    once when there is no simulator for this state directory or it exits, and past the generous
    overall deadline (waits.deadline_s(), LINERATE_LAB_WAIT_S) of a live simulator that never
    answers. A request nobody took is withdrawn, so a simulator started later does not apply it.
    """
    switch = request.get("switch")
    pid = simulator_pid(state)
    where = f"the switch simulator for {switch} (state {data_dir(state)})"
    if pid is None or not waits.pid_alive(pid):
        raise waits.WaitError(
            f"{where}: not running (no live pid in {os.path.join(data_dir(state), 'switchsim.pid')}); "
            "start it with lab/switchsim/run.py --state DIR (make lab-up does)"
        )
    d = os.path.join(data_dir(state), "faults")
    os.makedirs(d, exist_ok=True)
    rid = f"{time.time():.6f}-{uuid.uuid4().hex[:8]}"
    tmp = os.path.join(d, f".{rid}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(request, f)
    req_path = os.path.join(d, f"{rid}.json")
    os.replace(tmp, req_path)
    done = os.path.join(d, f"{rid}.done")

    def answer():
        try:
            with open(done, encoding="utf-8") as f:
                res = json.load(f)
        except FileNotFoundError:
            return None
        os.remove(done)
        return res

    def gone():
        if waits.pid_alive(pid):
            return None
        taken = "after taking the request (it may be half applied)" if not os.path.exists(req_path) else "before taking the request"
        return f"the simulator (pid {pid}) exited {taken}; see its log"

    try:
        return waits.wait_for(f"{where}, pid {pid}, fault {request.get('action')}", answer, gone, deadline=deadline, interval=0.05)
    except waits.WaitError:
        try:
            os.remove(req_path)  # withdrawn: nobody applies it later
        except FileNotFoundError:
            pass
        raise


def record(state, request):
    os.environ["LINERATE_LAB_STATE"] = state
    from simcore import model

    with model.locked() as m:
        m.setdefault("faults", []).append(dict(request, kind="switch"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state", default=os.environ.get("LINERATE_LAB_STATE"))
    ap.add_argument("switch")
    ap.add_argument(
        "action",
        choices=[
            "pfc_off",
            "link_down",
            "link_up",
            "headroom_zero",
            "headroom_restore",
            "pfcwd_off",
            "pfcwd_restore",
            "reject",
            "drop",
            "drop_after",
            "hang",
            "hang_after",
            "clock_skew",
            "clear",
            "armed",
        ],
    )
    ap.add_argument("arg", nargs="?")
    ap.add_argument("count", nargs="?", type=int, default=1)
    ap.add_argument("--skip", type=int, default=0, help="let the first N matching commands through")
    a = ap.parse_args(argv)
    if not a.state:
        ap.error("--state is required (or set LINERATE_LAB_STATE)")
    req = {"switch": a.switch, "action": a.action}
    if a.action in ("pfc_off", "link_down", "link_up", "headroom_zero", "headroom_restore"):
        if not a.arg:
            ap.error(f"{a.action} needs a PORT")
        req["port"] = a.arg
    elif a.action == "clock_skew":
        if a.arg is None or not a.arg.lstrip("-").isdigit():
            ap.error("clock_skew needs whole SECONDS (the switch's clock ahead of the controller's)")
        req["seconds"] = int(a.arg)
    elif a.action not in ("clear", "armed", "pfcwd_off", "pfcwd_restore"):
        if not a.arg:
            ap.error(f"{a.action} needs a REGEX")
        req.update(match=a.arg, count=a.count, skip=a.skip)
    try:
        res = inject(os.path.abspath(a.state), req)
    except waits.WaitError as exc:
        print(f"fault: {a.switch} {a.action}: {exc}", file=sys.stderr)
        return 2
    if not res.get("ok"):
        print(f"fault: {a.switch} {a.action}: the simulator refused: {res.get('error')}", file=sys.stderr)
        return 1
    if a.action == "armed":
        print(json.dumps(res["armed"]))
        return 0
    record(os.path.abspath(a.state), req)
    print(f"fault: {a.switch} {a.action} {a.arg or ''}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
