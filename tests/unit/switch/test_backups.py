"""Backups that cannot hurt (issue 25): written atomically with a digest, chosen and checked before a
restore; a restore that deletes outside the managed scope refused unless forced; restore results redacted;
SIGINT/SIGTERM at any step of a window end at the backup with nothing pending."""

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess

import pytest
from ansible.module_utils.testing import patch_module_args

from switch_testlib import make, render, sim_conn_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch import backups
from ansible_collections.linerate.fabric.plugins.module_utils.switch.backups import (
    BackupError,
    choose_backup,
    load_restore,
    prune_backups,
    verify_backup,
    write_backup,
)
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply
from ansible_collections.linerate.fabric.plugins.module_utils.switch.redact import Redactor

PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}
NVUE = "nv set system hostname leaf1\nnv set interface eth0 ip address 192.168.200.11/24\nnv set interface swp1 link mtu 9216\n"
SONIC = json.dumps({"DEVICE_METADATA": {"localhost": {"hostname": "leaf1"}}, "PORT": {"Ethernet0": {"mtu": "9100"}}}, indent=4) + "\n"
EOS = "hostname leaf1\n!\ninterface Ethernet1/1\n   mtu 9214\n!\ninterface Management1\n   ip address 10.0.0.5/24\n!\nend\n"
TEXT = {"nvue": NVUE, "sonic": SONIC, "eos": EOS}


def listing(d):
    return sorted(os.listdir(d))


# ---------------------------------------------------------------- writing


def test_backup_has_a_sha256sum_digest_both_0600_and_no_temporary_left(tmp_path):
    p = write_backup(str(tmp_path), "leaf1", "nvue", NVUE, "20261122T040000Z")
    assert p == str(tmp_path / "leaf1" / "20261122T040000Z.nvue.cfg")
    assert open(p).read() == NVUE
    digest = open(p + ".sha256").read()
    assert digest == hashlib.sha256(NVUE.encode()).hexdigest() + "  20261122T040000Z.nvue.cfg\n"
    assert oct(os.stat(p).st_mode & 0o777) == oct(os.stat(p + ".sha256").st_mode & 0o777) == "0o600"
    assert listing(tmp_path / "leaf1") == ["20261122T040000Z.nvue.cfg", "20261122T040000Z.nvue.cfg.sha256"]
    if shutil.which("sha256sum"):
        ok = subprocess.run(["sha256sum", "-c", "20261122T040000Z.nvue.cfg.sha256"], cwd=tmp_path / "leaf1", capture_output=True, text=True)
        assert ok.returncode == 0, ok.stdout + ok.stderr


def test_backup_never_overwrites_a_backup_or_a_leftover_digest(tmp_path):
    d = tmp_path / "leaf1"
    d.mkdir()
    (d / "T1.eos.cfg.sha256").write_text("orphan")  # a digest whose backup never made it
    a = write_backup(str(tmp_path), "leaf1", "eos", "a\n", "T1")
    b = write_backup(str(tmp_path), "leaf1", "eos", "b\n", "T1")
    assert [os.path.basename(x) for x in (a, b)] == ["T1-1.eos.cfg", "T1-2.eos.cfg"]
    assert (d / "T1.eos.cfg.sha256").read_text() == "orphan"
    assert open(b + ".sha256").read().endswith("  T1-2.eos.cfg\n")


@pytest.mark.parametrize("where", ["write", "fsync", "link-digest", "link-backup", "dir-fsync"])
def test_a_failed_write_leaves_no_file_under_a_final_name(tmp_path, monkeypatch, where):
    real = {"write": os.write, "fsync": os.fsync, "link": os.link}
    calls = {"link": 0, "fsync": 0}

    def fail(*a):
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "write":
        monkeypatch.setattr(backups.os, "write", lambda fd, data: fail() if len(data) > 100 else real["write"](fd, data))
    elif where == "fsync":
        monkeypatch.setattr(backups.os, "fsync", fail)
    elif where == "dir-fsync":
        monkeypatch.setattr(backups, "fsync_dir", fail)
    else:

        def link(src, dst):
            calls["link"] += 1
            if (where == "link-digest" and dst.endswith(".sha256")) or (where == "link-backup" and dst.endswith(".cfg")):
                fail()
            return real["link"](src, dst)

        monkeypatch.setattr(backups.os, "link", link)
    with pytest.raises(BackupError) as err:
        write_backup(str(tmp_path), "leaf1", "nvue", NVUE * 10, "T1")
    assert str(err.value) == (f"backup {tmp_path}/leaf1/T1.nvue.cfg: cannot be written (No space left on device); nothing was kept under that name")
    assert listing(tmp_path / "leaf1") == []


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_a_full_disk_stops_the_window_before_any_change(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    monkeypatch.setattr(backups.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
    sent = len(sim.sent)
    with pytest.raises(SwitchError) as err:
        run_apply(
            d,
            render(platform, PORTS[platform], switch_fabric_set_speed=False),
            ports=PORTS[platform],
            backup_dir=str(tmp_path / "b"),
            stamp="T1",
            post_check=False,
        )
    assert str(err.value) == (
        f"switch sw: backup {tmp_path}/b/sw/T1.{platform}.cfg: cannot be written (No space "
        "left on device); nothing was kept under that name; the change window stops before "
        "any change, nothing is sent"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert listing(tmp_path / "b" / "sw") == []
    # reads, and the window lock taken and released (switch/test_window_lock.py)
    lock = (
        r"|^(bash timeout 10 )?(mkdir /var/(lock|tmp)/linerate.lock |cat /var/(lock|tmp)/linerate.lock/holder "
        r"|(sudo )?rm -rf /var/(lock|tmp)/linerate.lock$)"
    )
    reads = {"nvue": r"^nv (config (show|diff|revision)\b)" + lock, "sonic": r"^(show |cat |sudo config list-checkpoints)" + lock, "eos": r"^show " + lock}
    assert all(re.match(reads[platform], c) for c in sim.sent[sent:]), sim.sent[sent:]
    assert d.get_running() == before and d.pending() == []


def test_a_restores_own_backup_is_named_before_restore_in_a_0700_folder(tmp_path):
    p = write_backup(str(tmp_path), "leaf1", "sonic", SONIC, "T1", label="restore")
    assert p == str(tmp_path / "leaf1" / "T1.before-restore.sonic.cfg")
    assert open(p + ".sha256").read().endswith("  T1.before-restore.sonic.cfg\n")
    assert oct(os.stat(tmp_path / "leaf1").st_mode & 0o777) == "0o700"


def test_temporary_names_in_use_are_stepped_over_and_left_alone(tmp_path):
    d = tmp_path / "leaf1"
    d.mkdir()
    taken = [f".tmp-{os.getpid()}-0.part", f".tmp-{os.getpid()}-1.part"]
    for t in taken:
        (d / t).write_text("someone else's")
    write_backup(str(tmp_path), "leaf1", "eos", EOS, "T1")
    assert listing(d) == taken + ["T1.eos.cfg", "T1.eos.cfg.sha256"]


def test_a_backup_name_taken_between_the_digest_and_the_backup_is_stepped_over(tmp_path, monkeypatch):
    real = backups._publish

    def race(tmp, final):
        if final.endswith("T1.nvue.cfg"):  # another writer publishes that backup first
            with open(final, "w") as f:
                f.write("theirs")
            raise FileExistsError(errno.EEXIST, "exists", final)
        return real(tmp, final)

    monkeypatch.setattr(backups, "_publish", race)
    p = write_backup(str(tmp_path), "leaf1", "nvue", NVUE, "T1")
    assert p == str(tmp_path / "leaf1" / "T1-1.nvue.cfg") and open(p).read() == NVUE
    # our digest of the lost name is withdrawn, the other writer's backup left as it is
    assert listing(tmp_path / "leaf1") == ["T1-1.nvue.cfg", "T1-1.nvue.cfg.sha256", "T1.nvue.cfg"]
    assert (tmp_path / "leaf1" / "T1.nvue.cfg").read_text() == "theirs"


# ---------------------------------------------------------------- choosing


def _backups(tmp_path, names, platform="nvue", text=NVUE):
    d = tmp_path / "leaf1"
    d.mkdir(exist_ok=True)
    for n in names:
        (d / n).write_text(text)
        (d / (n + ".sha256")).write_text(backups.digest_line(n, text.encode()))
    return d


def test_latest_is_the_newest_pre_window_backup_by_stamp_then_number(tmp_path):
    d = _backups(
        tmp_path,
        [
            "20261122T040000Z.nvue.cfg",
            "20261122T040000Z-1.nvue.cfg",
            "20261122T040000Z-2.nvue.cfg",
            "20261122T040000Z-10.nvue.cfg",
            "20261121T235959Z-99.nvue.cfg",
        ],
    )
    assert choose_backup(str(tmp_path), "leaf1", "nvue", "latest") == str(d / "20261122T040000Z-10.nvue.cfg")
    # a restore's own backup, another platform's and stray files never count
    _backups(tmp_path, ["20261123T000000Z.before-restore.nvue.cfg", "20261123T000000Z.eos.cfg", "20261123T000000Z.nvue.cfg.bak", ".tmp-1-0.part"])
    assert choose_backup(str(tmp_path), "leaf1", "nvue", "latest") == str(d / "20261122T040000Z-10.nvue.cfg")
    assert [os.path.basename(p) for p in backups.pre_window_backups(str(tmp_path), "leaf1", "nvue")] == [
        "20261121T235959Z-99.nvue.cfg",
        "20261122T040000Z.nvue.cfg",
        "20261122T040000Z-1.nvue.cfg",
        "20261122T040000Z-2.nvue.cfg",
        "20261122T040000Z-10.nvue.cfg",
    ]


def test_a_stamp_names_exactly_one_file_and_a_path_is_taken_as_given(tmp_path):
    d = _backups(tmp_path, ["20261122T040000Z.nvue.cfg", "20261122T040000Z-1.nvue.cfg"])
    assert choose_backup(str(tmp_path), "leaf1", "nvue", "20261122T040000Z") == str(d / "20261122T040000Z.nvue.cfg")
    assert choose_backup(str(tmp_path), "leaf1", "nvue", "20261122T040000Z-1") == str(d / "20261122T040000Z-1.nvue.cfg")
    assert choose_backup(str(tmp_path), "leaf1", "nvue", "/x/y.nvue.cfg") == "/x/y.nvue.cfg"
    with pytest.raises(BackupError, match=r"20261122T050000Z\.nvue\.cfg: does not exist$"):
        choose_backup(str(tmp_path), "leaf1", "nvue", "20261122T050000Z")
    with pytest.raises(BackupError) as err:
        choose_backup(str(tmp_path), "leaf1", "nvue", "newest*")
    assert str(err.value) == (
        f"backup {d}: switch_fabric_restore_backup 'newest*' is not a backup name: allowed "
        "are a UTC timestamp like 20261122T040000Z (or 20261122T040000Z-1), latest, or the "
        "path of a backup file"
    )
    with pytest.raises(BackupError, match="no pre-window backup of leaf9"):
        choose_backup(str(tmp_path), "leaf9", "nvue", "latest")


def test_an_invalid_latest_is_refused_naming_it_never_an_older_one(tmp_path):
    d = _backups(tmp_path, ["20261122T040000Z.nvue.cfg"])
    (d / "20261122T050000Z.nvue.cfg").write_text("")  # the disk was full
    parse = make("nvue")[0].parse
    with pytest.raises(BackupError) as err:
        load_restore(str(tmp_path), "leaf1", "nvue", "latest", parse)
    assert str(err.value).startswith(f"backup {d}/20261122T050000Z.nvue.cfg: is empty (0 bytes)")
    assert "it is the latest pre-window backup; an older one is never taken instead" in str(err.value)
    # named explicitly, the older one is restorable
    path, text, warnings = load_restore(str(tmp_path), "leaf1", "nvue", "20261122T040000Z", parse)
    assert (path, text, warnings) == (str(d / "20261122T040000Z.nvue.cfg"), NVUE, [])


def test_no_backup_to_restore_and_an_unreadable_digest_are_named_exactly(tmp_path):
    with pytest.raises(BackupError) as err:
        choose_backup(str(tmp_path), "leaf9", "nvue", "latest")
    assert str(err.value) == (f"backup {tmp_path}/leaf9: no pre-window backup of leaf9 (<stamp>.nvue.cfg) in this directory")
    d = _backups(tmp_path, ["T1.nvue.cfg"])
    os.unlink(d / "T1.nvue.cfg.sha256")
    (d / "T1.nvue.cfg.sha256").mkdir()
    with pytest.raises(BackupError) as err:
        backups.read_digest(str(d / "T1.nvue.cfg"))
    assert str(err.value) == f"backup {d}/T1.nvue.cfg: its digest {d}/T1.nvue.cfg.sha256 cannot be read: Is a directory"


# ---------------------------------------------------------------- checking


def _parse(platform):
    return make(platform)[0].parse


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_verify_accepts_a_good_backup_and_refuses_each_bad_kind(tmp_path, platform):
    p = write_backup(str(tmp_path), "sw", platform, TEXT[platform], "T1")
    parse = _parse(platform)
    assert verify_backup(p, platform, parse) == (TEXT[platform], [])

    def refused(match, force=False):
        with pytest.raises(BackupError) as err:
            verify_backup(p, platform, parse, accept_no_digest=force)
        assert str(err.value).startswith(f"backup {p}: ") and re.search(match, str(err.value)), str(err.value)

    # truncated (a line lost): the digest no longer matches, forced or not
    with open(p, "w") as f:
        f.write(TEXT[platform][: len(TEXT[platform]) // 2])
    refused(
        r"does not match its digest T1\.%s\.cfg\.sha256 \(sha256 [0-9a-f]{64}, recorded [0-9a-f]{64}\): "
        r"truncated or modified; refused$" % platform
    )
    refused("does not match its digest", force=True)
    # empty, or blank
    for empty in ("", "\n  \n"):
        with open(p, "w") as f:
            f.write(empty)
        refused(r"is empty \(%d bytes\): restoring it would erase the switch's configuration; refused$" % len(empty), force=True)
    # no digest: refused unless forced, and said so
    with open(p, "w") as f:
        f.write(TEXT[platform])
    os.unlink(p + ".sha256")
    refused(r"has no digest file T1\.%s\.cfg\.sha256 .* restore it with switch_fabric_restore_accept_no_digest=true$" % platform)
    assert verify_backup(p, platform, parse, accept_no_digest=True) == (
        TEXT[platform],
        [f"{p} has no digest: restored without one because switch_fabric_restore_accept_no_digest is true"],
    )
    # a digest file that is not one sha256sum line, or that names another file
    with open(p + ".sha256", "w") as f:
        f.write("deadbeef  T1.cfg\n")
    refused(r"is not one sha256sum line$", force=True)
    with open(p + ".sha256", "w") as f:
        f.write(backups.digest_line("T2.cfg", TEXT[platform].encode()))
    refused(r"is for 'T2.cfg', not 'T1\.%s\.cfg'$" % platform, force=True)


BROKEN = {"nvue": "nv set system hostname leaf1\nrm -rf /\n", "sonic": '{"PORT": {"Ethernet0": {"mtu": "9', "eos": "hostname leaf1\n% Invalid input\n"}
NOTHING = {"nvue": "# only a comment\n", "sonic": "{}\n", "eos": "!\nend\n"}


@pytest.mark.parametrize(
    "platform,why",
    [
        ("nvue", "nvue: unexpected output line: 'rm -rf /'"),
        ("sonic", 'sonic: running configuration is not JSON: \'{"PORT": {"Ethernet0": {"mtu": "9\''),
        ("eos", "eos: % Invalid input"),
    ],
)
def test_a_backup_the_parser_refuses_is_named_with_the_parsers_words_not_the_switchs(tmp_path, platform, why):
    p = write_backup(str(tmp_path), "sw", platform, BROKEN[platform], "T1")
    with pytest.raises(BackupError) as err:
        verify_backup(p, platform, _parse(platform), accept_no_digest=True)
    assert err.value.reason == f"cannot be parsed as a {platform} configuration: {why}; refused"


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_verify_refuses_what_the_platform_parser_cannot_read_even_with_a_matching_digest(tmp_path, platform):
    p = write_backup(str(tmp_path), "sw", platform, BROKEN[platform], "T1")
    with pytest.raises(BackupError, match=f"cannot be parsed as a {platform} configuration: .*; refused$"):
        verify_backup(p, platform, _parse(platform), accept_no_digest=True)
    p = write_backup(str(tmp_path), "sw", platform, NOTHING[platform], "T2")
    with pytest.raises(BackupError, match=f"holds no {platform} configuration"):
        verify_backup(p, platform, _parse(platform), accept_no_digest=True)
    p = write_backup(str(tmp_path), "sw", "eos" if platform != "eos" else "nvue", TEXT[platform], "T3")
    with pytest.raises(BackupError, match=f"is not a {platform} backup"):
        verify_backup(p, platform, _parse(platform), accept_no_digest=True)


# ---------------------------------------------------------------- deletions outside the managed scope

# (backup, running = backup + settings added after it outside the scope, what the refusal names)
OUTSIDE = {
    "nvue": (
        NVUE,
        NVUE + "nv set system aaa user bob hashed-password '$6$salt$hash'\nnv set interface swp3 link mtu 9000\n",
        ["nv set system aaa user bob hashed-password <redacted-1>"],
    ),
    "sonic": (
        SONIC,
        json.dumps(
            {
                "DEVICE_METADATA": {"localhost": {"hostname": "leaf1", "hwsku": "SN5600"}},
                "PORT": {"Ethernet0": {"mtu": "9100"}, "Ethernet4": {"mtu": "9100"}},
                "MGMT_INTERFACE": {"eth0|10.0.0.5/24": {"gwaddr": "10.0.0.1"}},
                "SNMP_COMMUNITY": {"s3cr3t": {"TYPE": "RO"}},
            }
        ),
        ["DEVICE_METADATA|localhost hwsku=SN5600", "MGMT_INTERFACE|eth0|10.0.0.5/24 gwaddr=10.0.0.1", "SNMP_COMMUNITY|<redacted-1> TYPE=RO"],
    ),
    "eos": (
        EOS,
        "hostname leaf1\nusername bob privilege 15 secret sha512 $6$salt$hash\ninterface Ethernet1/1\n"
        "   mtu 9214\n   description x\ninterface Ethernet3/1\n   mtu 9000\ninterface Management1\n"
        "   ip address 10.0.0.5/24\n",
        ["username bob privilege 15 secret sha512 <redacted-1>", "interface Ethernet1/1 / description x"],
    ),
}
READ = {"nvue": "nv config show -o commands", "sonic": "show runningconfiguration all", "eos": "show running-config"}


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_restore_deleting_outside_the_managed_scope_is_refused_before_anything_is_sent(platform, check):
    backup, running, named = OUTSIDE[platform]
    d, fake = make(platform, "leaf1", {READ[platform]: running})
    with pytest.raises(SwitchError) as err:
        run_apply(d, backup, full=True, check_mode=check)
    msg = str(err.value)
    assert msg.startswith(
        f"switch leaf1: restoring this backup would delete {len(named)} setting(s) outside the managed scope (QoS, PFC, ECN, MTU and speed of the data ports): "
    )
    assert msg.endswith("; nothing is sent. If that is intended, restore with switch_fabric_restore_allow_deletions=true")
    for n in named:
        assert n in msg
    assert "$6$salt$hash" not in msg and "s3cr3t" not in msg
    # the data port's own MTU (swp3, Ethernet4, Ethernet3/1) is in the scope: not named
    assert not re.search(r"swp3|Ethernet4 |Ethernet3/1", msg)
    assert fake.sent == [READ[platform]] and (err.value.rolled_back, err.value.changed) == (False, False)


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_forced_restore_deletes_and_says_so(platform):
    backup, running, named = OUTSIDE[platform]
    d, fake = make(platform, "leaf1", {READ[platform]: running})
    res = run_apply(d, backup, full=True, check_mode=True, force=True)
    assert res["changed"] is True and len(res["warnings"]) == 1
    assert res["warnings"][0].startswith(f"forced: the restore deletes {len(named)} setting(s) outside the managed scope: ")
    assert "$6$salt$hash" not in json.dumps(res) and "s3cr3t" not in json.dumps(res)


def test_restore_deleting_only_inside_the_scope_needs_no_force():
    d, fake = make("nvue", "leaf1", {READ["nvue"]: NVUE + "nv set interface swp3 link mtu 9000\nnv set qos pfc linerate switch-priority 3\n"})
    res = run_apply(d, NVUE, full=True, check_mode=True)
    assert res["commands"] == ["nv unset interface swp3 link mtu", "nv unset qos pfc linerate switch-priority"]
    assert "warnings" not in res


def test_restore_changing_a_value_outside_the_scope_is_not_a_deletion():
    d, fake = make("nvue", "leaf1", {READ["nvue"]: NVUE.replace("hostname leaf1", "hostname other")})
    res = run_apply(d, NVUE, full=True, check_mode=True)
    assert res["commands"] == ["nv set system hostname leaf1"]


def test_an_empty_backup_would_be_refused_twice_over():
    # even past the file check (forced, digest regenerated), the driver refuses to erase the switch
    for platform, empty in (("nvue", "# x\n"), ("sonic", "{}"), ("eos", "end\n")):
        d, fake = make(platform, "leaf1", {READ[platform]: TEXT[platform]})
        with pytest.raises(SwitchError, match="restoring this backup would delete"):
            run_apply(d, empty, full=True)
        assert fake.sent == [READ[platform]]


# ---------------------------------------------------------------- redaction

SECRETS = {
    "nvue": (
        "nv set system aaa user bob hashed-password '$6$AAAA'\n"
        "nv set service snmp-server readonly-community commA access any\n"
        "nv set system aaa tacacs server 5 secret tacA\n",
        "nv set system aaa user bob hashed-password '$6$BBBB'\n"
        "nv set service snmp-server readonly-community commB access any\n"
        "nv set system aaa tacacs server 5 secret tacB\n",
    ),
    "eos": (
        "username bob privilege 15 role network-admin secret sha512 $6$AAAA\nenable password sha512 $6$enA\n"
        "snmp-server community commA ro\ntacacs-server host 10.0.0.9 key 7 tacA\n",
        "username bob privilege 15 role network-admin secret sha512 $6$BBBB\nenable password sha512 $6$enB\n"
        "snmp-server community commB ro\ntacacs-server host 10.0.0.9 key 7 tacB\n",
    ),
    "sonic": (
        {"SNMP_COMMUNITY": {"commA": {"TYPE": "RO"}}, "TACPLUS": {"global": {"passkey": "tacA"}}, "SNMP_USER": {"u": {"SNMP_USER_AUTH_PASSWORD": "authA"}}},
        {"SNMP_COMMUNITY": {"commB": {"TYPE": "RO"}}, "TACPLUS": {"global": {"passkey": "tacB"}}, "SNMP_USER": {"u": {"SNMP_USER_AUTH_PASSWORD": "authB"}}},
    ),
}
LEAKS = ("$6$AAAA", "$6$BBBB", "$6$enA", "$6$enB", "commA", "commB", "tacA", "tacB", "authA", "authB")


def _with_secrets(platform, which):
    sec = SECRETS[platform][which]
    if platform == "sonic":
        db = json.loads(SONIC)
        db.update(sec)
        return json.dumps(db, indent=4) + "\n"
    return TEXT[platform] + sec if platform == "nvue" else TEXT[platform].replace("!\nend\n", sec)


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_restore_result_has_no_secret_in_commands_before_after_or_diff(tmp_path, platform):
    running, backup = _with_secrets(platform, 0), _with_secrets(platform, 1)
    d, fake = make(platform, "leaf1", {READ[platform]: running})
    # (forced: the other community is a deletion outside the managed scope)
    res = run_apply(d, backup, full=True, check_mode=True, force=True)
    text = json.dumps(res)
    assert res["changed"] is True and res["commands"]
    for leak in LEAKS:
        assert leak not in text, (leak, text)
    assert "<redacted-1>" in text
    # and outside check mode: what was sent carries the secrets, the before-restore backup keeps them all
    # reads: the deletion check, (SONiC: clear_pending and the pending check), the re-read after begin, then the
    # read-back
    answers = {READ[platform]: [running] * 4 + [backup] if platform == "sonic" else [running, running, backup]}
    if platform == "nvue":  # the confirm reads its own revision awaiting confirmation, then that it is kept
        answers["nv config revision"] = ["1  applied_and_saved\n"] * 2 + [
            "1  applied_and_saved\n2  confirm_pending\n",
            "1  applied_and_saved\n2  applied_and_saved\n",
        ]
        answers["nv config apply --confirm 5 -y"] = "applied [rev_id: 2]"
    if platform == "sonic":
        answers["cat /etc/sonic/config_db.json"] = running
        answers["sudo config list-checkpoints"] = "[]"
        answers["systemctl show -p SubState --value linerate-deadman-T1.timer"] = "waiting"  # the dead-man timer
        answers["systemctl show -p SubState --value linerate-deadman-T1-push.timer"] = "waiting"  # and the push's
    d, fake = make(platform, "leaf1", answers)
    res = run_apply(d, backup, full=True, backup_dir=str(tmp_path), stamp="T1", backup_label="restore", force=True)
    assert not any(leak in json.dumps(res) for leak in LEAKS)
    assert any(s in " ".join(fake.sent) for s in ("tacB", "commB", "$6$BBBB"))
    assert open(res["backup_path"]).read() == running


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_restore_errors_are_redacted(platform):
    running, backup = _with_secrets(platform, 0), _with_secrets(platform, 1)
    d, fake = make(
        platform,
        "leaf1",
        {
            READ[platform]: running,
            "nv config revision": "1  applied_and_saved\n",
            "sudo config list-checkpoints": "[]",
            "cat /etc/sonic/config_db.json": running,
        },
    )
    real = d.send

    def send(command, timeout=None):
        out = real(command, timeout)
        if any(s in command for s in ("tacB", "commB", "$6$BBBB")):
            return {"nvue": "Error: bad value", "eos": "% Invalid input", "sonic": "Error: bad value"}[platform]
        return out

    d.send = send
    with pytest.raises(SwitchError) as err:
        run_apply(d, backup, full=True, force=True)
    e = err.value
    assert "rejected command" in str(e) and e.command and "<redacted-" in e.command + str(e)
    for leak in LEAKS:
        assert leak not in str(e) and leak not in (e.command or "") and leak not in (e.output or "")


def test_the_windows_own_result_is_not_redacted():
    # a QoS profile called "key" or "password" looks like a secret keyword; the window leaves it as it is
    want = render("nvue", ["swp1"], switch_fabric_profile="password")
    d, fake = make("nvue", "leaf1", {READ["nvue"]: NVUE})
    d.profile = "password"
    res = run_apply(d, want, ports=["swp1"], check_mode=True)
    assert "nv set qos pfc password switch-priority 3" in res["commands"]
    assert "redacted" not in json.dumps(res)
    assert Redactor("nvue").text("nv set qos pfc password switch-priority 3") != "nv set qos pfc password switch-priority 3"  # it would have been masked


# ---------------------------------------------------------------- the module


def _module(monkeypatch, capsys, args, answers, platform="nvue", check=False):
    from ansible_collections.linerate.fabric.plugins.modules import switch_config

    d, fake = make(platform, "leaf1", answers)
    d.close = lambda: None
    monkeypatch.setattr(switch_config, "make_driver", lambda p: d)
    base_args = {"name": "leaf1", "platform": platform, "host": "127.0.1.1", "username": "admin", "password": "pw", "known_hosts": "/nonexistent"}
    with patch_module_args(dict(base_args, _ansible_check_mode=check, _ansible_diff=True, **args)):
        with pytest.raises(SystemExit):
            switch_config.main()
    return json.loads(capsys.readouterr().out), fake


def test_module_refuses_a_bad_latest_before_contacting_the_switch(tmp_path, monkeypatch, capsys):
    _backups(tmp_path, ["20261122T040000Z.nvue.cfg"])
    (tmp_path / "leaf1" / "20261122T050000Z.nvue.cfg").write_text(NVUE[:20])  # truncated, no digest
    res, fake = _module(monkeypatch, capsys, {"restore_backup": "latest", "backup_dir": str(tmp_path)}, {READ["nvue"]: NVUE})
    assert res["failed"] is True and fake.sent == [] and res["changed"] is False and res["rolled_back"] is False
    assert res["backup"] == str(tmp_path / "leaf1" / "20261122T050000Z.nvue.cfg")
    assert res["msg"].startswith(f"switch leaf1: backup {tmp_path}/leaf1/20261122T050000Z.nvue.cfg: has no digest")
    assert res["msg"].endswith("name the backup to restore with switch_fabric_restore_backup=<UTC timestamp or path>); nothing was sent to the switch")


def test_module_restores_latest_with_secrets_masked_everywhere(tmp_path, monkeypatch, capsys):
    backup = _with_secrets("nvue", 1)
    _backups(tmp_path, ["20261122T040000Z.nvue.cfg"], text=backup)
    res, fake = _module(
        monkeypatch,
        capsys,
        {"restore_backup": "latest", "backup_dir": str(tmp_path), "allow_deletions": True},
        {READ["nvue"]: _with_secrets("nvue", 0)},
        check=True,
    )
    assert res["changed"] is True and res["restored_from"] == str(tmp_path / "leaf1" / "20261122T040000Z.nvue.cfg")
    out = json.dumps(res)
    assert not any(leak in out for leak in LEAKS) and "<redacted-" in out and "diff" in res


def test_module_accept_no_digest_allows_a_backup_without_digest_with_a_warning(tmp_path, monkeypatch, capsys):
    (tmp_path / "leaf1").mkdir()
    (tmp_path / "leaf1" / "20261122T040000Z.nvue.cfg").write_text(NVUE)
    res, fake = _module(
        monkeypatch, capsys, {"restore_backup": "20261122T040000Z", "backup_dir": str(tmp_path), "accept_no_digest": True}, {READ["nvue"]: NVUE}, check=True
    )
    assert res["changed"] is False and res["commands"] == []
    assert res["restore_warnings"] == [
        f"{tmp_path}/leaf1/20261122T040000Z.nvue.cfg has no digest: restored without one because switch_fabric_restore_accept_no_digest is true"
    ]


# ---------------------------------------------------------------- signals

# where each step of the window is, in each platform's commands: (regex, how many matches to let pass)
STEPS = {
    "begin": {"nvue": (r"^nv config revision$", 1), "sonic": (r"^sudo config checkpoint ", 0), "eos": (r"^configure session linerate-", 0)},
    "push": {"nvue": (r"^nv set ", 1), "sonic": (r"^sudo (config interface|sonic-db-cli)", 1), "eos": (r"^(qos map|interface |mtu |priority-flow-control)", 1)},
    "commit": {"nvue": (r"^nv config apply --confirm \d", 0), "eos": (r"^commit timer ", 0)},
    # the first read, (sonic: the pending check's,) the re-read after begin, then the read-back
    "read-back": {"nvue": (r"^nv config show -o commands$", 2), "sonic": (r"^show runningconfiguration all$", 3), "eos": (r"^show running-config$", 2)},
    "post-check": {"nvue": (r"^nv show interface$", 0), "sonic": (r"^show interfaces status$", 0), "eos": (r"^show interfaces status$", 0)},
    "confirm": {"nvue": (r"^nv config (confirm|apply --confirm-yes)", 0), "sonic": (r"^sudo config save", 0), "eos": (r"^configure session \S+ commit$", 0)},
}
CASES = [(p, s) for s in STEPS for p in ("nvue", "sonic", "eos") if p in STEPS[s]]


def arm_interrupt(d, sim, plan):
    """plan: list of (regex, skip, when, how); each fires once, in order, at its matching command."""
    state = {"plan": list(plan), "seen": 0, "fired": []}
    orig_open = d.open_connection

    def fire(how):
        state["fired"].append(how)
        if how == "keyboard":
            raise KeyboardInterrupt()
        os.kill(os.getpid(), signal.SIGTERM if how == "sigterm" else signal.SIGINT)

    def open_connection(params):
        conn = orig_open(params)
        real = conn.send_command

        def send_command(command, **kw):
            hit = None
            if state["plan"] and re.search(state["plan"][0][0], command):
                if state["seen"] < state["plan"][0][1]:
                    state["seen"] += 1
                else:
                    hit = state["plan"].pop(0)
                    state["seen"] = 0
            if hit and hit[2] == "before":
                fire(hit[3])
            out = real(command, **kw)
            if hit and hit[2] == "after":
                fire(hit[3])
            return out

        conn.send_command = send_command
        return conn

    d.open_connection = open_connection
    return state


def sim_clean(platform, sw, saved_before):
    if platform == "nvue":
        return sw.pending is None and sw.confirm is None and not [r for r in sw.revisions if r["state"] == "confirm_pending"]
    if platform == "eos":
        return all(s["state"] == "completed" for s in sw.sessions.values())
    return not sw.checkpoints and sw.saved == saved_before


def _window(d, platform, tmp_path, stamp="T1"):
    # speed left out: the EOS template's speed form is being changed elsewhere; the signal path is the subject
    return run_apply(
        d,
        render(platform, PORTS[platform], switch_fabric_set_speed=False),
        ports=PORTS[platform],
        want_pfc=[3],
        want_ecn=True,
        confirm_timeout=300,
        backup_dir=str(tmp_path / "b"),
        stamp=stamp,
    )


@pytest.mark.parametrize("how", ["sigterm", "sigint", "keyboard"])
@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("platform,step", CASES)
def test_a_signal_at_each_step_ends_at_the_backup_with_nothing_pending(tmp_path, monkeypatch, own_handlers, platform, step, when, how):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    regex, skip = STEPS[step][platform]
    state = arm_interrupt(d, sim, [])
    before = d.get_running()
    saved_before = getattr(sim.sw, "saved", None)
    state["plan"] = [(regex, skip, when, how)]
    with pytest.raises(SwitchError) as err:
        _window(d, platform, tmp_path)
    e = err.value
    assert state["fired"] == [how], "the interrupt never fired"
    name = {"sigterm": "SIGTERM", "sigint": "SIGINT", "keyboard": "SIGINT (KeyboardInterrupt)"}[how]
    assert str(e).startswith(
        f"switch sw: interrupted by {name} during {step}; rolled back: the running config is "
        "byte-identical to the pre-window backup and nothing is pending (backup "
    ), str(e)
    assert (e.rolled_back, e.changed) == (True, False)
    assert d.get_running() == before and d.pending() == [] and sim_clean(platform, sim.sw, saved_before)
    assert (tmp_path / "b" / "sw" / f"T1.{platform}.cfg").read_text() == before
    assert signal.getsignal(signal.SIGTERM) is own_handlers and signal.getsignal(signal.SIGINT) is own_handlers
    # the next window goes through
    assert _window(d, platform, tmp_path, stamp="T2")["changed"] is True and d.pending() == []


FIRST_RECOVERY = {"nvue": r"^nv config detach$", "sonic": r"^sudo config list-checkpoints$", "eos": r"^end$"}


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_a_second_signal_does_not_interrupt_the_recovery(tmp_path, monkeypatch, own_handlers, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    state = arm_interrupt(d, sim, [])
    before = d.get_running()
    saved_before = getattr(sim.sw, "saved", None)
    regex, skip = STEPS["push"][platform]
    state["plan"] = [(regex, skip, "after", "sigterm"), (FIRST_RECOVERY[platform], 0, "before", "sigint")]
    with pytest.raises(SwitchError) as err:
        _window(d, platform, tmp_path)
    assert state["fired"] == ["sigterm", "sigint"]
    assert str(err.value).endswith("; SIGINT received during the recovery was held until it ended")
    assert "interrupted by SIGTERM during push; rolled back" in str(err.value)
    assert err.value.rolled_back is True
    assert d.get_running() == before and d.pending() == [] and sim_clean(platform, sim.sw, saved_before)
    assert signal.getsignal(signal.SIGINT) is own_handlers


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_a_signal_before_the_first_change_touches_nothing(tmp_path, monkeypatch, own_handlers, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    state = arm_interrupt(d, sim, [])
    before = d.get_running()
    state["plan"] = [(READ[platform] + "$", 0, "after", "sigterm")]
    with pytest.raises(SwitchError) as err:
        _window(d, platform, tmp_path)
    assert str(err.value) == "switch sw: interrupted by SIGTERM during read, before the first change: the switch was not touched"
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert not (tmp_path / "b").exists() and d.get_running() == before and d.pending() == []


def test_a_signal_while_the_backup_is_written_leaves_no_backup_and_touches_nothing(tmp_path, monkeypatch, own_handlers):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, "nvue", PORTS["nvue"])
    before = d.get_running()
    real = os.fsync
    monkeypatch.setattr(backups.os, "fsync", lambda fd: (real(fd), os.kill(os.getpid(), signal.SIGTERM)))
    with pytest.raises(SwitchError) as err:
        _window(d, "nvue", tmp_path)
    assert str(err.value) == "switch sw: interrupted by SIGTERM during backup, before the first change: the switch was not touched"
    assert listing(tmp_path / "b" / "sw") == [] and d.get_running() == before


def test_a_signal_after_the_confirm_reports_the_change_as_done(tmp_path, monkeypatch, own_handlers):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, "nvue", PORTS["nvue"])
    before = d.get_running()
    real_view = d.view
    calls = {"n": 0}

    def view(facts, scope):  # the result's "after", built once the change is confirmed
        calls["n"] += 1
        if calls["n"] == 5:  # four views build the result before the window, the fifth after the confirm
            os.kill(os.getpid(), signal.SIGINT)
        return real_view(facts, scope)

    d.view = view
    with pytest.raises(SwitchError) as err:
        _window(d, "nvue", tmp_path)
    assert str(err.value) == "switch sw: interrupted by SIGINT after the change was confirmed: the switch is at the intent with nothing pending"
    assert (err.value.rolled_back, err.value.changed) == (False, True)
    assert d.get_running() != before and d.pending() == []


def test_a_digest_name_taken_in_between_leaves_no_temporary_file(tmp_path, monkeypatch):
    real = backups._publish
    raced = []

    def race(tmp, final):
        if final.endswith("T1.eos.cfg.sha256") and not raced:
            raced.append(final)
            with open(final, "w") as f:
                f.write("theirs")
            raise FileExistsError(errno.EEXIST, "exists", final)
        return real(tmp, final)

    monkeypatch.setattr(backups, "_publish", race)
    p = write_backup(str(tmp_path), "leaf1", "eos", EOS, "T1")
    assert os.path.basename(p) == "T1-1.eos.cfg"
    assert listing(tmp_path / "leaf1") == ["T1-1.eos.cfg", "T1-1.eos.cfg.sha256", "T1.eos.cfg.sha256"]


def test_a_backup_error_is_a_switch_error_naming_the_file_and_the_switch(tmp_path):
    """One error type for switch/: BackupError is a SwitchError (caught where a switch failure is), its
    message names the file, its switch the switch the backup is of, and nothing was sent (rolled_back False)."""
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.backups import BackupError, verify_backup
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError

    path = tmp_path / "leaf1" / "20261122T040506Z.eos.cfg"
    path.parent.mkdir()
    path.write_text("")
    with pytest.raises(SwitchError) as err:
        verify_backup(str(path), "eos", lambda text: text)
    assert isinstance(err.value, BackupError)
    assert str(err.value).startswith(f"backup {path}: is empty (0 bytes)")
    assert (err.value.switch, err.value.path, err.value.rolled_back, err.value.changed) == ("leaf1", str(path), False, False)


# ------------------------------------------------------------------ retention (was switch/test_backups.py)
# Backup retention and the restore's two flags (issue 36 item 5): switch/backups.py prune_backups and the
# switch_config module's backup_keep, accept_no_digest, allow_deletions and the refused force.
KEEP_NVUE = "nv set system hostname leaf1\nnv set interface swp1 link mtu 9216\n"


def _write(tmp_path, stamps, label="window", platform="nvue", when=None):
    out = []
    for i, stamp in enumerate(stamps):
        p = backups.write_backup(str(tmp_path), "leaf1", platform, KEEP_NVUE, stamp, label)
        t = (when if when is not None else 1_700_000_000) + i
        os.utime(p, (t, t))
        out.append(os.path.basename(p))
    return out


def _left(tmp_path):
    return sorted(os.listdir(tmp_path / "leaf1"))


def _with_digests(names):
    return sorted(names + [n + ".sha256" for n in names])


def test_the_oldest_beyond_keep_are_removed_with_their_digests(tmp_path):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(6)])
    gone = prune_backups(str(tmp_path), "leaf1", "nvue", 3, taken=str(tmp_path / "leaf1" / names[-1]))
    assert gone == names[:3]
    assert _left(tmp_path) == _with_digests(names[3:])


def test_keep_counts_a_restores_own_backups_too_in_stamp_order(tmp_path):
    pre = _write(tmp_path, ["20261101T000001Z", "20261101T000003Z"])
    own = _write(tmp_path, ["20261101T000002Z", "20261101T000004Z"], label="restore")
    assert own == ["20261101T000002Z.before-restore.nvue.cfg", "20261101T000004Z.before-restore.nvue.cfg"]
    gone = prune_backups(str(tmp_path), "leaf1", "nvue", 2, taken=str(tmp_path / "leaf1" / own[-1]))
    assert gone == [pre[0], own[0]]
    assert _left(tmp_path) == _with_digests([pre[1], own[1]])


def test_two_in_one_second_are_ordered_by_their_number(tmp_path):
    names = _write(tmp_path, ["20261101T000000Z"] * 3 + ["20261101T000001Z"])
    assert names[:3] == ["20261101T000000Z.nvue.cfg", "20261101T000000Z-1.nvue.cfg", "20261101T000000Z-2.nvue.cfg"]
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 2) == names[:2]


def test_the_newest_pre_window_backup_is_kept_whatever_the_count(tmp_path):
    """After restores, the newest pre-window backup (what restoring latest uses) is never removed."""
    pre = _write(tmp_path, ["20261101T000001Z"])
    own = _write(tmp_path, ["20261101T000002Z", "20261101T000003Z"], label="restore")
    gone = prune_backups(str(tmp_path), "leaf1", "nvue", 1, taken=str(tmp_path / "leaf1" / own[-1]))
    assert gone == [own[0]]
    assert _left(tmp_path) == _with_digests(pre + own[1:])


def test_the_backup_just_taken_is_kept_even_when_it_sorts_oldest(tmp_path):
    names = _write(tmp_path, ["20261101T000001Z", "20261101T000002Z", "20261101T000003Z"])
    gone = prune_backups(str(tmp_path), "leaf1", "nvue", 1, taken=str(tmp_path / "leaf1" / names[0]))
    assert gone == [names[1]]
    assert _left(tmp_path) == _with_digests([names[0], names[2]])


def test_backups_of_a_window_under_way_are_kept(tmp_path):
    """The controller's lock file is there (a window under way, or killed): what it took since is kept."""
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(5)], when=1_700_000_000)
    lock = tmp_path / "leaf1" / backups.LOCK_NAME
    lock.write_text("linerate someone@other pid=1 run=r time=20261101T000002Z\n")
    os.utime(lock, (1_700_000_002, 1_700_000_002))  # taken before the backups of 00:02 on
    gone = prune_backups(str(tmp_path), "leaf1", "nvue", 1)
    assert gone == names[:1]  # 00:01 is a second before the lock: kept on the clock's granularity
    assert _left(tmp_path) == sorted(_with_digests(names[1:]) + [backups.LOCK_NAME])
    lock.unlink()
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == names[1:4]


def test_other_platforms_and_other_files_are_left(tmp_path):
    _write(tmp_path, ["20261101T000001Z", "20261101T000002Z"], platform="eos")
    nv = _write(tmp_path, ["20261101T000001Z", "20261101T000002Z"])
    (tmp_path / "leaf1" / "notes.txt").write_text("mine")
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == nv[:1]
    assert "notes.txt" in _left(tmp_path) and "20261101T000001Z.eos.cfg" in _left(tmp_path)
    assert prune_backups(str(tmp_path), "leaf2", "nvue", 1) == []  # no directory: nothing to do


@pytest.mark.parametrize("keep", [0, -1, True, "3", 2.0, None])
def test_a_keep_that_is_no_count_is_refused_naming_it(tmp_path, keep):
    names = _write(tmp_path, ["20261101T000001Z", "20261101T000002Z"])
    with pytest.raises(BackupError) as err:
        prune_backups(str(tmp_path), "leaf1", "nvue", keep)
    assert err.value.reason == (f"switch_fabric_backup_keep {keep!r} is not allowed (allowed: an integer >= 1, the backups kept per switch)")
    assert _left(tmp_path) == _with_digests(names)


def test_a_backup_removed_never_leaves_its_cfg_without_its_digest(tmp_path, monkeypatch):
    names = _write(tmp_path, ["20261101T000001Z", "20261101T000002Z"])
    real = backups._unlink

    def unlink(path):
        if path.endswith(".sha256"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(backups, "_unlink", unlink)
    with pytest.raises(BackupError) as err:
        prune_backups(str(tmp_path), "leaf1", "nvue", 1)
    assert err.value.path.endswith(names[0] + ".sha256") and "Permission denied" in err.value.reason
    assert names[0] not in _left(tmp_path)  # the backup went first: an orphan digest harms nothing


def test_a_backup_and_every_directory_made_for_it_are_private(tmp_path):
    p = backups.write_backup(str(tmp_path / "out" / "backups"), "leaf1", "nvue", KEEP_NVUE, "20261101T000001Z")
    modes = {
        os.path.relpath(d, tmp_path): os.stat(d).st_mode & 0o777
        for d in (tmp_path / "out", tmp_path / "out" / "backups", tmp_path / "out" / "backups" / "leaf1")
    }
    assert modes == {"out": 0o700, "out/backups": 0o700, "out/backups/leaf1": 0o700}
    assert os.stat(p).st_mode & 0o777 == 0o600 and os.stat(p + ".sha256").st_mode & 0o777 == 0o600


# ---------------------------------------------------------------- the module


def _keep_module(monkeypatch, capsys, args, answers=None, window=None):
    from ansible_collections.linerate.fabric.plugins.modules import switch_config

    d, fake = make("nvue", "leaf1", answers or {"nv config show -o commands": KEEP_NVUE})
    d.close = lambda: None
    monkeypatch.setattr(switch_config, "make_driver", lambda p: d)
    calls = {}
    if window is not None:

        def run_apply(driver, want_text, **kw):
            calls.update(kw, want_text=want_text)
            return window(kw)

        monkeypatch.setattr(switch_config, "run_apply", run_apply)
    base = {"name": "leaf1", "platform": "nvue", "host": "127.0.1.1", "username": "admin", "password": "pw", "known_hosts": "/nonexistent"}
    with patch_module_args(dict(base, **args)):
        with pytest.raises(SystemExit):
            switch_config.main()
    return json.loads(capsys.readouterr().out), fake, calls


def _pushed(backup_path):
    def window(kw):
        return {
            "changed": True,
            "commands": ["nv set x"],
            "before": "",
            "after": "",
            "rolled_back": False,
            "backup_path": backup_path,
            "diff": {"before": "", "after": ""},
        }

    return window


def test_the_module_keeps_backup_keep_after_a_window_that_wrote_one(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(4)])
    taken = str(tmp_path / "leaf1" / names[-1])
    res, _fake, calls = _keep_module(monkeypatch, capsys, {"config": KEEP_NVUE, "backup_dir": str(tmp_path), "backup_keep": 2}, window=_pushed(taken))
    assert res["changed"] is True and res["backups_removed"] == names[:2]
    assert _left(tmp_path) == _with_digests(names[2:])
    assert calls["force"] is False  # a push deletes nothing outside the scope


def test_the_module_keeps_every_backup_without_backup_keep(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])
    res, _fake, _calls = _keep_module(
        monkeypatch, capsys, {"config": KEEP_NVUE, "backup_dir": str(tmp_path)}, window=_pushed(str(tmp_path / "leaf1" / names[-1]))
    )
    assert "backups_removed" not in res and _left(tmp_path) == _with_digests(names)


def test_the_module_removes_nothing_when_no_backup_was_written(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])
    res, _fake, _calls = _keep_module(monkeypatch, capsys, {"config": KEEP_NVUE, "backup_dir": str(tmp_path), "backup_keep": 1}, window=_pushed(None))
    assert "backups_removed" not in res and _left(tmp_path) == _with_digests(names)


def test_a_backup_that_cannot_be_removed_is_a_warning_the_change_stands(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])

    def refuse(*a, **kw):
        raise BackupError(str(tmp_path / "leaf1" / names[0]), "cannot be removed (Permission denied)")

    from ansible_collections.linerate.fabric.plugins.modules import switch_config

    monkeypatch.setattr(switch_config, "prune_backups", refuse)
    warned = []
    monkeypatch.setattr(switch_config.AnsibleModule, "warn", lambda self, text: warned.append(text))
    res, _fake, _calls = _keep_module(
        monkeypatch, capsys, {"config": KEEP_NVUE, "backup_dir": str(tmp_path), "backup_keep": 1}, window=_pushed(str(tmp_path / "leaf1" / names[-1]))
    )
    assert not res.get("failed") and res["changed"] is True
    assert warned == [f"switch leaf1: old backups not removed: backup {tmp_path}/leaf1/{names[0]}: cannot be removed (Permission denied)"]


@pytest.mark.parametrize("keep", [0, -3])
def test_the_module_refuses_a_backup_keep_below_1_before_contact(tmp_path, monkeypatch, capsys, keep):
    res, fake, calls = _keep_module(monkeypatch, capsys, {"config": KEEP_NVUE, "backup_dir": str(tmp_path), "backup_keep": keep}, window=_pushed(None))
    assert res["failed"] is True and fake.sent == [] and calls == {}
    assert res["msg"] == (
        f"switch leaf1: backup_keep {keep} is not allowed (allowed: an integer >= 1, the backups kept per switch); nothing was sent to the switch"
    )


@pytest.mark.parametrize("force", [True, False, "yes"])
def test_the_module_refuses_force_naming_the_two_flags(tmp_path, monkeypatch, capsys, force):
    res, fake, calls = _keep_module(monkeypatch, capsys, {"restore_backup": "latest", "backup_dir": str(tmp_path), "force": force}, window=_pushed(None))
    assert res["failed"] is True and fake.sent == [] and calls == {} and res["changed"] is False
    assert res["msg"].startswith("switch leaf1: force is not allowed any more: it was split in two, accept_no_digest ")
    assert "switch_fabric_restore_accept_no_digest" in res["msg"]
    assert "switch_fabric_restore_allow_deletions" in res["msg"]


@pytest.mark.parametrize(
    "flags,no_digest_ok,deletions",
    [
        ({}, False, False),
        ({"accept_no_digest": True}, True, False),
        ({"allow_deletions": True}, False, True),
        ({"accept_no_digest": True, "allow_deletions": True}, True, True),
    ],
)
def test_each_restore_flag_allows_only_its_own(tmp_path, monkeypatch, capsys, flags, no_digest_ok, deletions):
    (tmp_path / "leaf1").mkdir()
    (tmp_path / "leaf1" / "20261101T000001Z.nvue.cfg").write_text(KEEP_NVUE)  # no digest
    res, fake, calls = _keep_module(monkeypatch, capsys, dict({"restore_backup": "latest", "backup_dir": str(tmp_path)}, **flags), window=_pushed(None))
    if not no_digest_ok:
        assert res["failed"] is True and calls == {} and fake.sent == []
        assert "restore it with switch_fabric_restore_accept_no_digest=true" in res["msg"]
        return
    assert not res.get("failed") and calls["force"] is deletions and calls["full"] is True
    assert res["restore_warnings"] == [
        f"{tmp_path}/leaf1/20261101T000001Z.nvue.cfg has no digest: restored without one because switch_fabric_restore_accept_no_digest is true"
    ]


def test_the_backup_a_cut_off_windows_journal_names_is_kept(tmp_path):
    """switch/journal.py's window.json names the backup the next run recovers from: never removed."""
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(5)])
    journal = tmp_path / "leaf1" / backups.JOURNAL_NAME
    journal.write_text(json.dumps({"switch": "leaf1", "backup_path": str(tmp_path / "leaf1" / names[1]), "step": "push"}))
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == [names[0], names[2], names[3]]
    assert _left(tmp_path) == sorted(_with_digests([names[1], names[4]]) + [backups.JOURNAL_NAME])


@pytest.mark.parametrize("text", ["{not json", json.dumps({"backup_path": None}), json.dumps(["x"])])
def test_an_unreadable_journal_keeps_every_backup(tmp_path, text):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])
    (tmp_path / "leaf1" / backups.JOURNAL_NAME).write_text(text)
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == []
    assert set(_with_digests(names)) <= set(_left(tmp_path))
