#!/usr/bin/env python3
"""Inject a switch fault into the running simulator (the lab's fault hook).

    lab/switchsim/fault.py --state DIR SWITCH pfc_off PORT
    lab/switchsim/fault.py --state DIR SWITCH link_down|link_up PORT
    lab/switchsim/fault.py --state DIR SWITCH reject REGEX [COUNT] [--skip N]
    lab/switchsim/fault.py --state DIR SWITCH drop|drop_after|hang|hang_after REGEX [COUNT] [--skip N]
    lab/switchsim/fault.py --state DIR SWITCH headroom_zero|headroom_restore PORT
    lab/switchsim/fault.py --state DIR SWITCH pfcwd_off|pfcwd_restore
    lab/switchsim/fault.py --state DIR SWITCH clear

Writes a request file into <state>/switchsim/faults/, which the simulator
polls (every 0.2 s), and waits for its answer. pfc_off changes the switch's
running config (drift an operator would see and a re-run repairs);
link_down/up change only the port's operational state; headroom_zero leaves a port
no lossless headroom (SONiC: its lossless BUFFER_PG entries are deleted and saved, drift a
re-run repairs; EOS/NVUE: the buffer model's state) and headroom_restore undoes it;
pfcwd_off stops the switch's PFC watchdog (SONiC: ``config pfcwd stop``, saved) and
pfcwd_restore undoes it; reject makes the next
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

from simcore import data_dir  # noqa: E402


def inject(state, request, timeout=10.0):
    d = os.path.join(data_dir(state), "faults")
    os.makedirs(d, exist_ok=True)
    rid = f"{time.time():.6f}-{uuid.uuid4().hex[:8]}"
    tmp = os.path.join(d, f".{rid}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(request, f)
    os.replace(tmp, os.path.join(d, f"{rid}.json"))
    done = os.path.join(d, f"{rid}.done")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(done):
            with open(done, encoding="utf-8") as f:
                res = json.load(f)
            os.remove(done)
            return res
        time.sleep(0.05)
    raise TimeoutError("the switch simulator did not answer: is it running for this state directory?")


def record(state, request):
    os.environ["LINERATE_LAB_STATE"] = state
    from simcore import model
    with model.locked() as m:
        m.setdefault("faults", []).append(dict(request, kind="switch"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state", default=os.environ.get("LINERATE_LAB_STATE"))
    ap.add_argument("switch")
    ap.add_argument("action", choices=["pfc_off", "link_down", "link_up", "headroom_zero", "headroom_restore",
                                       "pfcwd_off", "pfcwd_restore", "reject", "drop", "drop_after",
                                       "hang", "hang_after", "clear"])
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
    elif a.action not in ("clear", "pfcwd_off", "pfcwd_restore"):
        if not a.arg:
            ap.error(f"{a.action} needs a REGEX")
        req.update(match=a.arg, count=a.count, skip=a.skip)
    res = inject(os.path.abspath(a.state), req)
    if not res.get("ok"):
        print(f"fault: {res.get('error')}", file=sys.stderr)
        return 1
    record(os.path.abspath(a.state), req)
    print(f"fault: {a.switch} {a.action} {a.arg or ''}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
