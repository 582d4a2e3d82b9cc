"""Processes that run beside the node containers (the switch simulators, ibsim).

Each is started once, detached, with a pid file under the lab state; ``up``
is idempotent and ``down`` stops them all. A part of the lab registers here.
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = os.path.dirname(os.path.dirname(HERE))

# name -> function(model, state_dir) returning argv, or None when not needed.
REGISTRY = {}


def register(name):
    def deco(fn):
        REGISTRY[name] = fn
        return fn
    return deco


def _pidfile(state, name):
    return os.path.join(state, "run", f"{name}.pid")


def running(state, name):
    try:
        pid = int(open(_pidfile(state, name)).read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def start_all(model, state, wait=15.0):
    os.makedirs(os.path.join(state, "run"), exist_ok=True)
    for name, argv_for in REGISTRY.items():
        argv = argv_for(model, state)
        if not argv or running(state, name):
            continue
        logf = open(os.path.join(state, "run", f"{name}.log"), "ab")
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=LAB,
                                env=dict(os.environ, LINERATE_LAB_STATE=os.path.join(state, "fabric")))
        with open(_pidfile(state, name), "w") as f:
            f.write(str(proc.pid))
        ready = os.path.join(state, "run", f"{name}.ready")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and proc.poll() is None and not os.path.exists(ready):
            time.sleep(0.1)
        if proc.poll() is not None:
            raise SystemExit(f"lab: service {name} exited ({proc.returncode}); "
                             f"see {os.path.join(state, 'run', name + '.log')}")


def stop_all(state, timeout=5.0):
    for name in list(REGISTRY):
        pid = running(state, name)
        if not pid:
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        for suffix in (".pid", ".ready"):
            p = os.path.join(state, "run", name + suffix)
            if os.path.exists(p):
                os.remove(p)


def python():
    return sys.executable
