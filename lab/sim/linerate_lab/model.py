"""The fabric model: the lab's one shared description of the physics.

Every simulated tool reads it; writers hold an exclusive flock on
``fabric.json.lock`` for the whole read-modify-write, so node containers,
the switch simulators and ``lab/fault`` never lose each other's updates.
"""

import contextlib
import fcntl
import json
import os
import socket
import tempfile

DEFAULT_STATE = "/var/lib/linerate-lab"


def state_dir():
    return os.environ.get("LINERATE_LAB_STATE", DEFAULT_STATE)


def model_path():
    return os.path.join(state_dir(), "fabric.json")


def node_name():
    return os.environ.get("LINERATE_LAB_NODE") or socket.gethostname().split(".")[0]


class ModelMissing(RuntimeError):
    pass


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ModelMissing(f"no fabric model at {path}: is the lab up (make lab-up)?") from None


def load():
    """A consistent snapshot for readers (shared lock)."""
    path = model_path()
    with _lock(fcntl.LOCK_SH):
        return _read(path)


@contextlib.contextmanager
def _lock(mode):
    lock_path = model_path() + ".lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def save_unlocked(model, path=None):
    """Atomically replace the model file (caller holds the lock)."""
    path = path or model_path()
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".fabric.", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(model, f, indent=1, sort_keys=True)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


@contextlib.contextmanager
def locked():
    """Read-modify-write: ``with locked() as m: m[...] = ...`` saves on exit."""
    path = model_path()
    with _lock(fcntl.LOCK_EX):
        m = _read(path)
        yield m
        save_unlocked(m, path)


def node(model, name=None):
    name = name or node_name()
    try:
        return model["nodes"][name]
    except KeyError:
        raise ModelMissing(f"node {name!r} is not in the fabric model") from None


def nic(model, device, name=None):
    for n in node(model, name)["nics"]:
        if n["device"] == device:
            return n
    return None


def nic_by_pci(model, pci, name=None):
    pci = pci.lower()
    if pci.count(":") == 1:  # "41:00.0" short form
        pci = "0000:" + pci
    for n in node(model, name)["nics"]:
        if n["pci"].lower() == pci:
            return n
    return None
