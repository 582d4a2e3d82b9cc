"""The subnet-manager plays target the subnet_managers group only where the inventory has one: a RoCE
inventory without it runs them on no host and without the "Could not match supplied host pattern" warning
(issue 26); an InfiniBand inventory runs them on its subnet managers, --limit applying."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def list_hosts(inventory, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    r = subprocess.run(
        [PLAYBOOK, "-i", f"inventory/{inventory}", "playbooks/stages/subnet_manager.yml", "--list-hosts", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.mark.parametrize("inventory,count,extra", [("example-roce", 0, ()), ("example-ib", 2, ()), ("example-ib", 1, ("--limit", "subnet_managers[0]"))])
def test_subnet_manager_plays_hosts(inventory, count, extra):
    r = list_hosts(inventory, *extra)
    assert "Could not match supplied host pattern" not in r.stdout + r.stderr
    assert "[WARNING]" not in r.stdout + r.stderr
    assert r.stdout.count(f"hosts ({count}):") == 3, r.stdout
