"""The lab's names and paths (several labs live side by side: LINERATE_LAB_ID, LINERATE_LAB_SLOT) and how
lab/labctl.py runs commands: what labctl.py, labimage.py and labib.py share."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "sim"))
sys.path.insert(0, HERE)

STATE = os.environ.get("LINERATE_LAB_STATE_DIR", os.path.join(HERE, "state"))
FABRIC_DIR = os.path.join(STATE, "fabric")
IMAGE = "localhost/linerate-node"
# Several labs can live side by side (a developer's and a test run's):
# LINERATE_LAB_ID names one; its containers, network, namespace, subnet and
# switch loopback addresses are all its own.
LAB_ID = os.environ.get("LINERATE_LAB_ID", "")
_SLOT = int(os.environ.get("LINERATE_LAB_SLOT", "0"))
NETWORK = f"linerate-{LAB_ID + '-' if LAB_ID else ''}lab"
SUBNET = os.environ.get("LINERATE_LAB_SUBNET", f"10.89.{240 + _SLOT}.0/24")
FABRIC_NETNS = f"linerate-{LAB_ID + '-' if LAB_ID else ''}fabric"
PREFIX = f"linerate-{LAB_ID + '-' if LAB_ID else ''}"
LOOPBACK_BASE = f"127.0.{1 + _SLOT}"
MIRROR = os.environ.get("LINERATE_LAB_MIRROR", "")


def log(msg):
    print(f"lab: {msg}", flush=True)


def run(argv, check=True, capture=False, input=None, env=None):
    res = subprocess.run(
        argv, check=False, text=True, input=input, env=env, stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None
    )
    if check and res.returncode != 0:
        # debootstrap and apt say what went wrong on stdout, not stderr.
        err = "\n".join(((res.stdout or "") + (res.stderr or "")).strip().splitlines()[-20:]) if capture else ""
        raise SystemExit(f"lab: command failed ({res.returncode}): {' '.join(argv)}\n{err}")
    return res


def podman(*args, **kw):
    env = dict(os.environ, CONTAINERS_CONF=os.path.join(HERE, "containers.conf"))
    return run(["podman", *args], env=env, **kw)


def node_names(n):
    return [f"node{i}" for i in range(1, n + 1)]


def node_ip(index):
    base = SUBNET.split("/")[0].rsplit(".", 1)[0]
    return f"{base}.{10 + index}"
