"""The launcher's MPI key: restricted in authorized_keys, removed after the run."""
import getpass
import os
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.linerate.fabric.plugins.filter.mpi_key_options import FilterModule
from ansible_collections.linerate.fabric.plugins.module_utils import mpikey

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, ".venv", "bin")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=BIN + os.pathsep + os.environ["PATH"])
options = FilterModule().filters()["mpi_key_options"]
PUB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ4l0vPr5dvQ3x0gOqkzq0G8x0k1c4y1h9f3Jj3l5G7Z linerate-mpi"


def test_options_restrict_source_and_every_forwarding():
    assert options(["10.0.0.11", "10.0.0.12", "10.0.0.11"]) == (
        'from="10.0.0.11,10.0.0.12",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty')


@pytest.mark.parametrize("given,pattern", [("10.1.0.0/16", "10.1.0.0/16"), ("10.1.2.3/16", "10.1.0.0/16"),
                                           ("fd00::1", "fd00::1"), ("gpu001.mgmt.example.org", "gpu001.mgmt.example.org"),
                                           ("*.mgmt.example.org", "*.mgmt.example.org")])
def test_from_patterns(given, pattern):
    assert mpikey.from_patterns([given]) == [pattern]


@pytest.mark.parametrize("bad,message", [
    ([], "verify_fabric_mpi_key_from: [] is not allowed (allowed: a non-empty list of management addresses)"),
    ("10.0.0.1", "verify_fabric_mpi_key_from: '10.0.0.1' is not allowed"),
    (None, "verify_fabric_mpi_key_from: None is not allowed"),
    ([5], "verify_fabric_mpi_key_from: 5 is not allowed (allowed: an IP address, a CIDR network or a host name)"),
    (['10.0.0.1",command="sh'], "verify_fabric_mpi_key_from: '10.0.0.1\",command=\"sh' is not allowed"),
    (["10.0.0.1,10.0.0.2"], "verify_fabric_mpi_key_from: '10.0.0.1,10.0.0.2' is not allowed"),
    (["a b"], "verify_fabric_mpi_key_from: 'a b' is not allowed"),
    (["10.0.0.300"], "verify_fabric_mpi_key_from: '10.0.0.300' is not allowed"),
    (["10.0.0.0/33"], "verify_fabric_mpi_key_from: '10.0.0.0/33' is not allowed"),
    (["host-"], "verify_fabric_mpi_key_from: 'host-' is not allowed"),
])
def test_bad_addresses_are_named(bad, message):
    with pytest.raises(AnsibleFilterError) as e:
        options(bad)
    assert message in str(e.value)


def _authorized_key(path, state, key_options=None):
    args = [f"user={getpass.getuser()}", f"path={path}", "manage_dir=false", f"state={state}", f"key='{PUB}'"]
    if key_options:
        args.append(f"key_options='{key_options}'")
    res = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-m", "ansible.posix.authorized_key",
                          "-a", " ".join(args)], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_the_line_authorized_key_writes_and_its_removal(tmp_path):
    keys = tmp_path / "authorized_keys"
    other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherOtherOtherOtherOtherOtherOtherOther1 admin"
    keys.write_text(other + "\n")
    _authorized_key(keys, "present", options(["10.0.0.11", "10.0.0.12"]))
    assert keys.read_text().splitlines() == [
        other,
        'from="10.0.0.11,10.0.0.12",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty ' + PUB,
    ]
    _authorized_key(keys, "absent")
    assert keys.read_text().splitlines() == [other]


def test_the_role_restricts_and_takes_the_key_back():
    with open(os.path.join(ROOT, "roles", "verify_fabric", "tasks", "mpi_ssh.yml"), encoding="utf-8") as f:
        admit = f.read()
    assert 'key_options: "{{ verify_fabric_mpi_key_from | linerate.fabric.mpi_key_options }}"' in admit
    with open(os.path.join(ROOT, "roles", "verify_fabric", "tasks", "nccl.yml"), encoding="utf-8") as f:
        nccl = f.read()
    always = nccl.split("  always:", 1)[1]
    assert "state: absent" in always and "not verify_fabric_keep_mpi_key | bool" in always
