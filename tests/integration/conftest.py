"""Integration tests leave no lab behind.

The lab fixtures bring labs up (the RoCE lab under the default id, the IB lab
under its own id). A lab that was not running when the session started is
removed when it ends, whether the tests passed or not, and so is one whose
`up` failed half way: a failed CI run must not leave containers, networks or
namespaces on the machine. A lab an operator had up before (`make lab`) is
left as it was found, unless a test rebuilt it (test_site starts from a fresh
lab), in which case the rebuilt one stays up as `make lab` would leave it.
"""
import os
import subprocess
import sys

import pytest

from conftest import REPO, ansible_env

LABCTL = os.path.join(REPO, "lab", "labctl.py")


def lab_is_up(env=None):
    res = subprocess.run([sys.executable, LABCTL, "status"], cwd=REPO, env=env or ansible_env(),
                         capture_output=True, text=True, timeout=120)
    return res.returncode == 0


def lab_down(env=None):
    subprocess.run([sys.executable, LABCTL, "down"], cwd=REPO, env=env or ansible_env(),
                   capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session", autouse=True)
def no_lab_left_behind():
    was_up = lab_is_up()
    yield
    if not was_up or os.environ.get("CI"):
        lab_down()
