"""Shared pytest wiring: the collection on sys.path, the lab fixture."""

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))
sys.path.insert(0, os.path.join(REPO, "lab", "sim"))
VENV_BIN = os.path.join(REPO, ".venv", "bin")


def ansible_env(**extra):
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        CONTAINERS_CONF=os.path.join(REPO, "lab", "containers.conf"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        PATH=VENV_BIN + os.pathsep + env.get("PATH", ""),
    )
    env.update(extra)
    return env


def run_playbook(playbook, *args, inventory="inventory/lab", check=False, timeout=900, env=None):
    """Run ansible-playbook from the repo root; returns CompletedProcess (text)."""
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory, playbook, *args]
    res = subprocess.run(argv, cwd=REPO, env=env or ansible_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({res.returncode}):\n{res.stdout[-6000:]}")
    return res


def container(node):
    """Lab node NODE's podman container: lab/labctl.py's names, with LINERATE_LAB_ID's id when one is set."""
    lab_id = os.environ.get("LINERATE_LAB_ID")
    return f"linerate-{lab_id}-{node}" if lab_id else f"linerate-{node}"


def podman_exec(node, *argv, check=False, timeout=60, workdir=None):
    """ARGV in lab node NODE's container; the CompletedProcess (text, stdout and stderr apart). check=True
    fails the test on a non-zero exit, naming the command and what it printed."""
    cwd = ["-w", workdir] if workdir else []
    res = subprocess.run(["podman", "exec", *cwd, container(node), *argv], env=ansible_env(), text=True, capture_output=True, timeout=timeout)
    if check:
        assert res.returncode == 0, f"{node}: {argv} exited {res.returncode}: {res.stdout}{res.stderr}"
    return res


def on(node, *argv):
    """ARGV in lab node NODE's container, which must succeed; its stdout."""
    return podman_exec(node, *argv, check=True).stdout


def recap(output):
    """The last PLAY RECAP of an ansible-playbook run: {host: {"ok", "changed", "unreachable", "failed"}}."""
    tail = output.rsplit("PLAY RECAP", 1)[-1]
    return {
        m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)), "unreachable": int(m.group(4)), "failed": int(m.group(5))}
        for m in re.finditer(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", tail, re.M)
    }


def switch_fault(*args):
    """lab/switchsim/fault.py ARGS against the lab's switch simulators: a fault as config drift on the switch
    itself (what its driver reads); fails the test on error."""
    state = os.path.join(REPO, "lab", "state")
    env = dict(ansible_env(), LINERATE_SWITCHSIM_DIR=os.path.join(state, "switchsim"))
    argv = [sys.executable, os.path.join(REPO, "lab", "switchsim", "fault.py"), "--state", os.path.join(state, "fabric"), *args]
    res = subprocess.run(argv, env=env, text=True, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr + res.stdout


def lab_fault(*args):
    """labctl.py fault ARGS against the lab this session's environment names; fails the test on error. The
    timeout is an upper bound for a wedged labctl (a fault on every node runs one podman exec per node)."""
    res = subprocess.run(
        [sys.executable, os.path.join(REPO, "lab", "labctl.py"), "fault", *args], cwd=REPO, env=ansible_env(), text=True, capture_output=True, timeout=300
    )
    assert res.returncode == 0, res.stderr + res.stdout


@pytest.fixture(scope="session")
def lab():
    """The lab, up (idempotent). Tests that change it put it back."""
    nodes = os.environ.get("LAB_NODES", "4")
    subprocess.run([sys.executable, os.path.join(REPO, "lab", "labctl.py"), "up", "--nodes", nodes], cwd=REPO, check=True, env=ansible_env(), timeout=900)
    sys.path.insert(0, os.path.join(REPO, "lab", "sim"))
    os.environ["LINERATE_LAB_STATE"] = os.path.join(REPO, "lab", "state", "fabric")
    from linerate_lab import model

    return model.load()


@pytest.fixture(scope="session")
def converged(lab):
    """The lab as site.yml leaves it (hosts and switches), converged once a session.

    Every test that changes the lab (a fault, drift, a re-converge) puts it back
    in a finally, so the integration files share one converge instead of
    paying for one each. test_site.py tears the lab down for its fresh-machine
    tests; it runs first (pytest_collection_modifyitems) and leaves the lab
    converged, so this run is then the idempotent one.
    """
    run_playbook("playbooks/site.yml", "--skip-tags", "verify", check=True, timeout=1500)
    return lab


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "matrix: one more fault or case of a class that a core integration test already proves "
        "(make test-integration runs them; make test, and so CI, leaves them out to stay within its time)",
    )


# Files that bring the lab down and up again (a fresh machine) run before the
# files that share the converged lab.
FIRST = ("test_site.py",)


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: 0 if os.path.basename(str(item.fspath)) in FIRST else 1)


def _labctl(*args):
    return subprocess.run(
        [sys.executable, os.path.join(REPO, "lab", "labctl.py"), *args],
        cwd=REPO,
        env=dict(os.environ, CONTAINERS_CONF=os.path.join(REPO, "lab", "containers.conf")),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="session", autouse=True)
def no_lab_left_behind(request):
    """Integration tests leave no lab behind.

    A RoCE lab that was not running when the session started is removed when
    it ends, whether the tests passed or not (the IB lab fixture removes its
    own in a finally). On CI it is always removed. A lab an operator had up
    before (`make lab`) is left up. Unit-only sessions never touch podman.
    """
    integration = any("integration" in str(item.fspath) for item in request.session.items)
    was_up = integration and _labctl("status").returncode == 0
    yield
    if integration and (not was_up or os.environ.get("CI")):
        _labctl("down")
