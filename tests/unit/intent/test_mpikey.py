"""The launcher's MPI key: restricted in authorized_keys (addresses, expiry),
removed after the run."""

import datetime
import getpass
import os
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.linerate.fabric.plugins.filter.mpi_key_options import FilterModule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import mpikey

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.path.join(ROOT, ".venv", "bin")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=BIN + os.pathsep + os.environ["PATH"])
options = FilterModule().filters()["mpi_key_options"]
PUB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ4l0vPr5dvQ3x0gOqkzq0G8x0k1c4y1h9f3Jj3l5G7Z linerate-mpi"


def test_options_restrict_source_and_every_forwarding():
    assert options(["10.0.0.11", "10.0.0.12", "10.0.0.11"], expiry="20261123") == (
        'from="10.0.0.11,10.0.0.12",expiry-time="20261123",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty'
    )
    assert options(["10.0.0.11"], expiry="none") == ('from="10.0.0.11",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty')


def test_the_default_expiry_is_a_day_on_the_hour_in_utc():
    now = datetime.datetime.now(datetime.timezone.utc)
    text = options(["10.0.0.11"])
    stamp = text.split('expiry-time="', 1)[1].split('"', 1)[0]
    assert stamp.endswith("Z") and len(stamp) == 13 and stamp[10:12] == "00"
    end = datetime.datetime.strptime(stamp[:-1], "%Y%m%d%H%M").replace(tzinfo=datetime.timezone.utc)
    assert datetime.timedelta(hours=24) <= end - now <= datetime.timedelta(hours=25, minutes=1)
    assert 'expiry-time="' in options(["10.0.0.11"], valid_hours=2, utc=False)
    assert not options(["10.0.0.11"], valid_hours=2, utc=False).split('expiry-time="')[1].split('"')[0].endswith("Z")


@pytest.mark.parametrize(
    "hours,now,stamp",
    [
        (24, datetime.datetime(2026, 11, 22, 9, 0, tzinfo=datetime.timezone.utc), "202611230900Z"),
        (24, datetime.datetime(2026, 11, 22, 9, 0, 1, tzinfo=datetime.timezone.utc), "202611231000Z"),
        (1, datetime.datetime(2026, 12, 31, 23, 30, tzinfo=datetime.timezone.utc), "202701010100Z"),
        (720, datetime.datetime(2026, 1, 1, 0, 0, tzinfo=datetime.timezone.utc), "202601310000Z"),
    ],
)
def test_expiry_time(hours, now, stamp):
    assert mpikey.expiry_time(hours, now=now) == stamp
    assert mpikey.expiry_time(hours, now=now, utc=False) == stamp[:-1]


@pytest.mark.parametrize("hours", [0, 721, -1, True, "24", 1.5, None])
def test_expiry_hours_out_of_range(hours):
    with pytest.raises(ValueError) as e:
        mpikey.expiry_time(hours)
    assert str(e.value) == f"valid_hours: {hours!r} is not allowed (allowed: an integer 1..720)"


@pytest.mark.parametrize("spec", ["20261123", "20261123Z", "202611230900", "202611230900Z", "20261123090030Z"])
def test_timespecs_sshd_reads(spec):
    assert mpikey.check_timespec(spec) == spec


@pytest.mark.parametrize(
    "spec", ["2026112", "20261323", "20261131", "202611232500", "2026112309", "20261123z", "20261123\nx", 20261123, "20261123ZZ", '20261123",command="sh']
)
def test_timespecs_sshd_refuses(spec):
    with pytest.raises(ValueError) as e:
        mpikey.key_options(["10.0.0.1"], expiry=spec)
    assert str(e.value) == (f"expiry: {spec!r} is not allowed (allowed: YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z] (sshd expiry-time), a real date)")


@pytest.mark.parametrize(
    "given,pattern", [("10.1.0.0/16", ["10.1.0.0/16"]), ("10.1.2.3/16", ["10.1.0.0/16"]), ("fd00::1", ["fd00::1"]), ("10.0.0.7", ["10.0.0.7"])]
)
def test_from_patterns(given, pattern):
    assert mpikey.from_patterns([given], resolve=None) == pattern
    assert mpikey.from_patterns([given]) == pattern


def test_host_names_become_their_addresses():
    # sshd's default UseDNS no never matches a name: from= gets what the name resolves to
    table = {"gpu001.mgmt.example.org": ["10.0.0.11"], "gpu002.mgmt.example.org": ["10.0.0.12", "fd00::12"]}
    assert mpikey.from_patterns(["gpu001.mgmt.example.org", "10.0.0.11", "gpu002.mgmt.example.org"], resolve=table.__getitem__) == [
        "10.0.0.11",
        "10.0.0.12",
        "fd00::12",
    ]
    assert mpikey.key_options(["gpu002.mgmt.example.org"], resolve=table.__getitem__) == (
        'from="10.0.0.12,fd00::12",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty'
    )
    # the form alone (the intent validation) accepts the name without looking it up
    assert mpikey.from_patterns(["gpu001.mgmt.example.org"], resolve=None) == []
    assert mpikey.from_patterns(["localhost"]) in (["127.0.0.1"], ["::1", "127.0.0.1"], ["127.0.0.1", "::1"])


def test_a_name_that_does_not_resolve_is_named():
    def fail(name):
        raise OSError("Name or service not known")

    with pytest.raises(ValueError) as e:
        mpikey.from_patterns(["gpu009.mgmt.example.org"], resolve=fail)
    assert str(e.value) == (
        "verify_fabric_mpi_key_from: 'gpu009.mgmt.example.org' is not allowed (allowed: a host "
        "name that resolves to an address here (Name or service not known); sshd's default "
        "UseDNS no never matches a name, so from= lists addresses)"
    )
    with pytest.raises(ValueError) as e:
        mpikey.from_patterns(["gpu009"], resolve=lambda name: [])
    assert str(e.value) == ("verify_fabric_mpi_key_from: 'gpu009' is not allowed (allowed: a host name that resolves to an address)")


@pytest.mark.parametrize(
    "bad,message",
    [
        ([], "verify_fabric_mpi_key_from: [] is not allowed (allowed: a non-empty list of management addresses)"),
        ("10.0.0.1", "verify_fabric_mpi_key_from: '10.0.0.1' is not allowed"),
        (None, "verify_fabric_mpi_key_from: None is not allowed"),
        # a mapping or a number is not a list, even a non-empty one
        ({"10.0.0.1": "mgmt"}, "verify_fabric_mpi_key_from: {'10.0.0.1': 'mgmt'} is not allowed (allowed: a non-empty list of management addresses)"),
        (7, "verify_fabric_mpi_key_from: 7 is not allowed (allowed: a non-empty list of management addresses)"),
        ([5], "verify_fabric_mpi_key_from: 5 is not allowed (allowed: an IP address, a CIDR network or a host name)"),
        (['10.0.0.1",command="sh'], "verify_fabric_mpi_key_from: '10.0.0.1\",command=\"sh' is not allowed"),
        (["10.0.0.1,10.0.0.2"], "verify_fabric_mpi_key_from: '10.0.0.1,10.0.0.2' is not allowed"),
        (["a b"], "verify_fabric_mpi_key_from: 'a b' is not allowed"),
        (["10.0.0.300"], "verify_fabric_mpi_key_from: '10.0.0.300' is not allowed"),
        (["10.0.0.0/33"], "verify_fabric_mpi_key_from: '10.0.0.0/33' is not allowed"),
        (["host-"], "verify_fabric_mpi_key_from: 'host-' is not allowed"),
        (
            ["*.mgmt.example.org"],
            "verify_fabric_mpi_key_from: '*.mgmt.example.org' is not allowed (allowed: an IP "
            "address, a CIDR network or a host name (letters, digits, . -); sshd matches name patterns only with UseDNS yes)",
        ),
    ],
)
def test_bad_addresses_are_named(bad, message):
    with pytest.raises(AnsibleFilterError) as e:
        options(bad)
    assert message in str(e.value)


def _authorized_key(path, state, key_options=None):
    args = [f"user={getpass.getuser()}", f"path={path}", "manage_dir=false", f"state={state}", f"key='{PUB}'"]
    if key_options:
        args.append(f"key_options='{key_options}'")
    res = subprocess.run(
        [os.path.join(BIN, "ansible"), "localhost", "-m", "ansible.posix.authorized_key", "-a", " ".join(args)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_the_line_authorized_key_writes_and_its_removal(tmp_path):
    keys = tmp_path / "authorized_keys"
    other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherOtherOtherOtherOtherOtherOtherOther1 admin"
    keys.write_text(other + "\n")
    _authorized_key(keys, "present", options(["10.0.0.11", "10.0.0.12"], expiry="202611231000Z"))
    assert keys.read_text().splitlines() == [
        other,
        'from="10.0.0.11,10.0.0.12",expiry-time="202611231000Z",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty ' + PUB,
    ]
    _authorized_key(keys, "absent")
    assert keys.read_text().splitlines() == [other]


def test_the_role_restricts_and_takes_the_key_back():
    with open(os.path.join(ROOT, "roles", "verify_fabric", "tasks", "mpi_ssh.yml"), encoding="utf-8") as f:
        admit = f.read()
    assert 'key_options: "{{ verify_fabric_mpi_key_from | linerate.fabric.mpi_key_options }}"' in admit
    # nccl.yml and nccl_scaling.yml take the key back in their always sections, through mpi_ssh_return.yml
    for name in ("nccl.yml", "nccl_scaling.yml"):
        with open(os.path.join(ROOT, "roles", "verify_fabric", "tasks", name), encoding="utf-8") as f:
            assert "ansible.builtin.include_tasks: mpi_ssh_return.yml" in f.read().split("  always:", 1)[1], name
    with open(os.path.join(ROOT, "roles", "verify_fabric", "tasks", "mpi_ssh_return.yml"), encoding="utf-8") as f:
        back = f.read()
    assert back.count("state: absent") == 2 and back.count("not verify_fabric_keep_mpi_key | bool") == 2
