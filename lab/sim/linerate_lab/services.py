"""Processes that run beside the node containers (the switch simulators, ibsim).

Each is started once, detached, with a pid file under the lab state; ``up``
is idempotent and ``down`` stops them all. A part of the lab registers here.
"""

import os
import signal
import subprocess
import sys
import time

from linerate_lab import waits

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = os.path.dirname(os.path.dirname(HERE))

# name -> function(model, state_dir) returning (argv, env, ready_file), or
# None when the lab does not need it (a RoCE lab has no ibsim, ...).
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


def start_all(model, state, wait=None):
    os.makedirs(os.path.join(state, "run"), exist_ok=True)
    for name, spec_for in REGISTRY.items():
        spec = spec_for(model, state)
        if not spec or running(state, name):
            continue
        argv, extra_env, ready = spec
        if os.path.exists(ready):
            os.remove(ready)
        log = os.path.join(state, "run", f"{name}.log")
        with open(log, "ab") as logf:
            proc = subprocess.Popen(
                argv,
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=os.path.dirname(LAB),
                env=dict(os.environ, LINERATE_LAB_STATE=os.path.join(state, "fabric"), **extra_env),
            )
        with open(_pidfile(state, name), "w") as f:
            f.write(str(proc.pid))
        # bounded by the service's state (waits.py): its ready file, or its exit; not a fixed time
        try:
            waits.wait_for(
                f"lab: service {name} (pid {proc.pid})",
                lambda: True if os.path.exists(ready) else None,
                lambda: None if proc.poll() is None else f"exited with status {proc.returncode} before it was ready; see {log}",
                deadline=wait,
            )
        except waits.WaitError as exc:
            if proc.poll() is None:
                proc.kill()
            raise SystemExit(str(exc) if log in str(exc) else f"{exc}; see {log}") from None


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


def switchsim_dir(state):
    """The switch simulators' own files: apart from the model that nodes mount."""
    return os.path.join(state, "switchsim")


@register("switchsim")
def _switchsim(model, state):
    """SSH servers speaking NVUE, SONiC and EOS on the switches' loopback addresses."""
    if not any(sw["platform"] in ("nvue", "sonic", "eos") for sw in model["switches"].values()):
        return None
    data = switchsim_dir(state)
    repo = os.path.dirname(LAB)
    argv = [
        sys.executable,
        os.path.join(LAB, "switchsim", "run.py"),
        "--state",
        os.path.join(state, "fabric"),
        "--credentials-yml",
        os.path.join(repo, "inventory", "lab", "group_vars", "switches", "credentials.yml"),
        "--log",
        os.path.join(state, "run", "switchsim.log"),
    ]
    return argv, {"LINERATE_SWITCHSIM_DIR": data}, os.path.join(data, "switchsim.pid")
