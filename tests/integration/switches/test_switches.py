"""Integration: the change-window playbooks over real SSH to the switch simulators.

One simulator process serves leaf1 (NVUE), leaf2 (SONiC) and spine1 (EOS) on
127.0.1.1-3 at a free port, from a fabric model in a temp state dir; the
playbooks run from .venv/bin/ansible-playbook with a temp inventory.
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for
from conftest import recap
from switch_lab import ADDR, FAST, PLAYBOOK, REPO, SWITCHES, Lab, free_port, waits


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(str(tmp_path_factory.mktemp("switchlab")))
    yield lab
    lab.stop()


def test_check_mode_shows_the_diff_and_changes_nothing(lab):
    before = {n: lab.running(n) for n in SWITCHES}
    rc, out = lab.play("switches.yml", "--check", "--diff")
    assert rc == 0, out
    r = recap(out)
    assert all(r[n]["changed"] == 1 for n in SWITCHES), out
    assert "+nv set interface swp1 qos pfc profile linerate" in out
    assert '"pfc_enable": "3"' in out
    assert "+   priority-flow-control priority 3 no-drop" in out
    assert {n: lab.running(n) for n in SWITCHES} == before
    assert not any(lab.backups_of(n) for n in SWITCHES)


def test_apply_then_second_run_changes_nothing(lab):
    rc, out = lab.play("switches.yml", *FAST)
    assert rc == 0, out
    assert all(recap(out)[n]["changed"] == 1 for n in SWITCHES), out
    for n in SWITCHES:
        (backup,) = lab.backups_of(n)
        assert oct(os.stat(backup).st_mode & 0o777) == "0o600"
    # spine1 is EOS (family 7050x4 by default): its MTU is capped at the platform's 9214
    for sw, port, mtu in (("leaf1", "swp1", 9216), ("leaf2", "Ethernet8", 9216), ("spine1", "Ethernet4/1", 9214)):
        st = lab.model_port(sw, port)
        assert st["pfc"] == [3] and st["mtu"] == mtu and st["trust"] == "dscp" and st["ecn"]["enabled"], st
    rc, out = lab.play("switches.yml", *FAST)
    assert rc == 0, out
    assert all(recap(out)[n]["changed"] == 0 for n in SWITCHES), out


def test_pfc_fault_reaches_the_model_and_a_rerun_repairs_it(lab):
    lab.fault("leaf1", "pfc_off", "swp2")
    assert lab.model_port("leaf1", "swp2")["pfc"] == []
    rc, out = lab.play("switches.yml", *FAST)
    assert rc == 0, out
    r = recap(out)
    assert (r["leaf1"]["changed"], r["leaf2"]["changed"], r["spine1"]["changed"]) == (1, 0, 0), out
    assert lab.model_port("leaf1", "swp2")["pfc"] == [3]


def test_command_rejected_mid_push_leaves_each_switch_at_its_backup(lab):
    lab.fault("leaf1", "reject", r"nv set interface swp2 link mtu")
    lab.fault("leaf2", "reject", r"config interface mtu Ethernet8 ")
    lab.fault("spine1", "reject", r"^interface Ethernet3/1$")  # after two ports' mtu went into the session
    rc, out = lab.play("switches.yml", "-e", "switch_fabric_mtu=9000", "-e", "switch_fabric_serial=3", "-e", "switch_fabric_max_fail_percentage=100")
    assert rc != 0, out
    assert "switch leaf1: push failed: rejected command 'nv set interface swp2 link mtu 9000'" in out
    assert "switch leaf2: push failed: rejected command 'sudo config interface mtu Ethernet8 9000'" in out
    assert "switch spine1: push failed: rejected command 'interface Ethernet3/1'" in out
    assert out.count("rolled_back: true") == 3, out
    for n in SWITCHES:
        assert lab.running(n) == open(lab.backups_of(n)[-1]).read(), n
    assert lab.model_port("leaf2", "Ethernet0")["mtu"] == 9216
    for n in SWITCHES:
        lab.fault(n, "clear")


def test_unreachable_switch_fails_clearly_and_max_fail_percentage_decides(lab):
    closed = free_port()
    inv = lab.write_inventory("inv-unreachable", {"leaf1": {"ansible_port": closed}})
    before = {n: lab.running(n) for n in ("leaf2", "spine1")}
    rc, out = lab.play("switches.yml", "-e", "switch_fabric_mtu=9000", inventory=inv)
    assert rc != 0
    assert f"switch leaf1: unreachable at 127.0.1.1:{closed}" in out
    assert recap(out)["leaf1"]["unreachable"] == 1, out
    assert {n: lab.running(n) for n in ("leaf2", "spine1")} == before  # 1/3 failed > 0 %: nothing rolled out
    rc, out = lab.play(
        "switches.yml", "-e", "switch_fabric_mtu=9000", "-e", "switch_fabric_serial=3", "-e", "switch_fabric_max_fail_percentage=50", inventory=inv
    )
    r = recap(out)
    assert rc != 0 and r["leaf1"]["unreachable"] == 1 and r["leaf1"]["failed"] == 0, out
    assert "UNREACHABLE!" in out
    assert r["leaf2"]["changed"] == 1 and r["spine1"]["changed"] == 1, out  # 1/3 <= 50 %: the rest went on
    assert lab.model_port("spine1", "Ethernet1/1")["mtu"] == 9000


def test_auth_failure_and_unknown_host_key_name_the_switch(lab):
    empty = os.path.join(lab.tmp, "empty_known_hosts")
    open(empty, "w").close()
    inv = lab.write_inventory("inv-bad", {"leaf1": {"switch_known_hosts": empty}, "leaf2": {"switch_password": "wrong"}})
    with open(os.path.join(inv, "group_vars", "switches", "credentials.yml")) as f:
        assert "ansible_password" in f.read()  # the older switch_password (host_vars below) wins where set
    os.makedirs(os.path.join(inv, "host_vars"), exist_ok=True)
    with open(os.path.join(inv, "host_vars", "leaf2.yml"), "w") as f:
        f.write("switch_password: wrong\n")
    rc, out = lab.play("switches.yml", "--tags", "precheck", "-e", "switch_fabric_max_fail_percentage=100", inventory=inv)
    assert rc != 0
    assert "switch leaf1: SSH host key of 127.0.1.1" in out and "not in the known_hosts file" in out, out
    assert "switch leaf2: authentication failed for user 'admin'" in out, out
    assert lab.creds["password"] not in out


def test_public_key_login(lab):
    for n in SWITCHES:
        assert lab.running(n, key_file=lab.key) == lab.running(n)


def test_round_trip_wrong_config_then_restore_is_byte_identical(lab):
    good = {n: lab.running(n) for n in SWITCHES}
    rc, out = lab.play("switches.yml", "-e", "switch_fabric_no_drop_priority=5", "-e", "switch_fabric_mtu=4200", "-e", "switch_fabric_serial=3")
    assert rc == 0, out
    assert lab.model_port("leaf2", "Ethernet0")["pfc"] == [5]
    assert all(lab.running(n) != good[n] for n in SWITCHES)
    rc, out = lab.play("switch_rollback.yml", "-e", "switch_fabric_restore_backup=latest", *FAST)
    assert rc == 0, out
    assert {n: lab.running(n) for n in SWITCHES} == good
    assert lab.model_port("leaf2", "Ethernet0")["pfc"] == [3]


# Faults at each step of the window, one play per fault with every platform faulting at the same step.
# Regexes per platform: the push commands, the commit (SONiC: its checkpoint), the confirm, the read.
PUSH = {"leaf1": r"^nv set ", "leaf2": r"^sudo (config interface|sonic-db-cli)", "spine1": r"^(interface |mtu )"}
COMMIT = {"leaf1": r"^nv config apply --confirm", "leaf2": r"^sudo config checkpoint ", "spine1": r"^commit timer "}
CONFIRM = {"leaf1": r"^nv config apply --confirm-yes", "leaf2": r"^sudo config save", "spine1": r"^configure session \S+ commit$"}
READ = {"leaf1": r"^nv config show -o commands$", "leaf2": r"^show runningconfiguration all$", "spine1": r"^show running-config$"}
# without the precheck play; each count includes the window's re-read after begin (issue 25)
READS_BEFORE = {"leaf1": "2", "leaf2": "3", "spine1": "2"}
FAULTS = {
    "reject-first-push": lambda n: ("reject", PUSH[n], "1"),
    "reject-at-commit": lambda n: ("reject", COMMIT[n], "1"),
    "reject-at-confirm": lambda n: ("reject", CONFIRM[n], "1"),
    "drop-mid-push": lambda n: ("drop", PUSH[n], "1", "--skip", "1"),
    "drop-after-commit": lambda n: ("drop_after", COMMIT[n], "1"),
    "hang-after-commit": lambda n: ("hang_after", COMMIT[n], "1"),
    "hang-mid-push": lambda n: ("hang", PUSH[n], "1", "--skip", "1"),
    "readback-error": lambda n: ("reject", READ[n], "1", "--skip", READS_BEFORE[n]),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_at_each_step_ends_byte_identical_with_nothing_pending(lab, fault):
    before = {n: lab.running(n) for n in SWITCHES}
    assert before == {n: lab.running(n) for n in SWITCHES}
    for n in SWITCHES:
        lab.fault(n, *FAULTS[fault](n))
    t0 = time.time()
    # an MTU no earlier test leaves on the switches, so every switch has a delta to push
    rc, out = lab.play(
        "switches.yml",
        "--skip-tags",
        "precheck",
        "-e",
        "switch_fabric_mtu=8800",
        "-e",
        "switch_fabric_serial=3",
        "-e",
        "switch_fabric_max_fail_percentage=100",
        "-e",
        "switch_fabric_command_timeout=5",
    )
    took = time.time() - t0
    for n in SWITCHES:
        lab.fault(n, "clear")
    assert rc != 0, out
    r = recap(out)
    for n in SWITCHES:
        assert r[n]["failed"] == 1 and r[n]["changed"] == 0, (n, out)
        assert re.search(rf"switch {n}: \S+ failed: .*rolled back: the running config is byte-identical", out), (n, out)
        assert lab.running(n) == before[n], n
        assert lab.pending(n) == [], n
        assert open(lab.backups_of(n)[-1]).read() == before[n]
    assert out.count("rolled_back: true") == 3, out
    assert "Pattern not detected" not in out
    assert took < 120, took  # hangs are bounded by command_timeout, drops noticed at once


def test_rollback_latest_twice_never_puts_the_bad_config_back(lab):
    good = {n: lab.running(n) for n in SWITCHES}
    rc, out = lab.play("switches.yml", "-e", "switch_fabric_mtu=4200", "-e", "switch_fabric_serial=3")
    assert rc == 0, out
    bad = {n: lab.running(n) for n in SWITCHES}
    assert all(bad[n] != good[n] for n in SWITCHES)
    # an intent error that does not concern switches must not block an emergency restore
    earlier = {n: set(lab.backups_of(n)) for n in SWITCHES}
    inv = lab.write_inventory("inv-bad-nccl")
    with open(os.path.join(inv, "group_vars", "all", "fabric.yml"), "a") as f:
        f.write("nccl_bogus_key_for_the_test: 1\n")
    for attempt in (1, 2):
        rc, out = lab.play("switch_rollback.yml", "-e", "switch_fabric_restore_backup=latest", *FAST, inventory=inv)
        assert rc == 0, out
        assert {n: lab.running(n) for n in SWITCHES} == good, attempt
        assert all(lab.pending(n) == [] for n in SWITCHES)
        r = recap(out)
        assert all(r[n]["changed"] == (1 if attempt == 1 else 0) for n in SWITCHES), out
    for n in SWITCHES:
        own = [b for b in set(lab.backups_of(n)) - earlier[n] if ".before-restore." in b]
        assert len(own) == 1 and open(own[0]).read() == bad[n]


def test_rollback_clears_pending_state_and_fails_while_it_remains(lab):
    good = {n: lab.running(n) for n in SWITCHES}
    rc, out = lab.play("switches.yml", "-e", "switch_fabric_mtu=4200", "-e", "switch_fabric_serial=3")
    assert rc == 0, out
    # a window that died after its commit, and a revision left pending: the restore clears both
    lab.fault("spine1", "hang_after", r"^commit timer ")
    lab.fault("leaf1", "hang", r"^nv config apply --confirm")
    lab.fault("leaf2", "hang", r"^sudo config interface mtu ")
    rc, out = lab.play(
        "switches.yml",
        "--skip-tags",
        "precheck",
        "-e",
        "switch_fabric_mtu=9000",
        "-e",
        "switch_fabric_serial=3",
        "-e",
        "switch_fabric_max_fail_percentage=100",
        "-e",
        "switch_fabric_command_timeout=5",
    )
    assert rc != 0, out
    for n in SWITCHES:
        lab.fault(n, "clear")
    rc, out = lab.play("switch_rollback.yml", "-e", "switch_fabric_restore_backup=latest", *FAST)
    assert rc == 0, out
    assert {n: lab.running(n) for n in SWITCHES} != good  # latest pre-window backup is the mtu=4200 one
    assert all(lab.pending(n) == [] for n in SWITCHES)
    # pending state that cannot be cleared makes the restore fail, naming it
    lab.fault("spine1", "reject", r"^configure session linerate-OLD abort$", "5")
    d = driver_for(
        "eos", "spine1", host=ADDR["spine1"], port=lab.port, username=lab.creds["username"], known_hosts=lab.known_hosts, password=lab.creds["password"]
    )
    try:
        d.run("configure session linerate-OLD")
        d.run("end")
    finally:
        d.close()
    rc, out = lab.play("switch_rollback.yml", "--limit", "spine1", "-e", "switch_fabric_restore_backup=latest")
    lab.fault("spine1", "clear")
    assert rc != 0 and "switch spine1: rejected command 'configure session linerate-OLD abort'" in out, out
    assert "rolled_back: false" in out
    rc, out = lab.play("switch_rollback.yml", "--limit", "spine1", "-e", "switch_fabric_restore_backup=latest")
    assert rc == 0 and lab.pending("spine1") == [], out
    # another administrator's session is not linerate's to abort: the restore names it and stops
    d = driver_for(
        "eos", "spine1", host=ADDR["spine1"], port=lab.port, username=lab.creds["username"], known_hosts=lab.known_hosts, password=lab.creds["password"]
    )
    try:
        d.run("configure session maint")
        d.run("end")
        rc, out = lab.play("switch_rollback.yml", "--limit", "spine1", "-e", "switch_fabric_restore_backup=latest")
        assert rc != 0 and "configure session maint is pending" in out, out
        assert ("maint", "pending") in __import__("ansible_collections.linerate.fabric.plugins.module_utils.switch.eos", fromlist=["x"]).parse_sessions(
            d.run("show configuration sessions")
        )
        d.run("configure session maint abort")
    finally:
        d.close()


RELAY = r"""
import os, selectors, socket, sys
host, port, mark = sys.argv[1], int(sys.argv[2]), sys.argv[3]
open(mark, "a").write(f"{host}:{port}\n")
s = socket.create_connection((host, port))
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ)
sel.register(s, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if key.fileobj == 0:
            data = os.read(0, 65536)
            if not data:
                sys.exit(0)
            s.sendall(data)
        else:
            data = s.recv(65536)
            if not data:
                sys.exit(0)
            os.write(1, data)
"""


def test_jump_host_through_an_ssh_config_file_with_host_keys_checked(lab):
    """switch_ssh_config_file: an OpenSSH config whose ProxyCommand relays (a bastion's job)."""
    relay = os.path.join(lab.tmp, "relay.py")
    mark = os.path.join(lab.tmp, "relay.log")
    with open(relay, "w") as f:
        f.write(RELAY)
    cfg = os.path.join(lab.tmp, "ssh_config")
    with open(cfg, "w") as f:
        # %p is the config's Port (paramiko expands it from the config, not from ansible_port)
        f.write(f"Host 127.0.1.*\n  Port {lab.port}\n  ProxyCommand {sys.executable} {relay} %h %p {mark}\n")
    inv = lab.write_inventory("inv-jump", {n: {"switch_ssh_config_file": cfg} for n in SWITCHES})
    rc, out = lab.play("switches.yml", "--tags", "precheck", inventory=inv)
    assert rc == 0, out
    with open(mark) as f:
        assert sorted(set(f.read().split())) == sorted(f"{ADDR[n]}:{lab.port}" for n in SWITCHES)
    empty = os.path.join(lab.tmp, "empty_known_hosts_jump")
    open(empty, "w").close()
    inv = lab.write_inventory("inv-jump-nokey", {"leaf1": {"switch_ssh_config_file": cfg, "switch_known_hosts": empty}})
    rc, out = lab.play("switches.yml", "--tags", "precheck", "--limit", "leaf1", inventory=inv)
    assert rc != 0 and "switch leaf1: SSH host key of 127.0.1.1" in out, out


# ---------------------------------------------------------------- issue 25: backups that cannot hurt, signals


def test_a_backup_that_cannot_be_written_stops_the_window_before_any_change(lab):
    """The disk-full class: the backup cannot be written completely (here the switch's backup directory is a
    file, so the temporary file cannot be created; the unit tests inject ENOSPC at write, fsync and rename).
    The window stops before any change, no .cfg is left, nothing is pending."""
    before = {n: lab.running(n) for n in SWITCHES}
    broken = os.path.join(lab.tmp, "backups-broken")
    os.makedirs(broken, exist_ok=True)
    for n in SWITCHES:
        with open(os.path.join(broken, n), "w") as f:
            f.write("not a directory\n")
    rc, out = lab.play(
        "switches.yml",
        "--skip-tags",
        "precheck",
        "-e",
        "switch_fabric_mtu=8700",
        "-e",
        f"switch_fabric_backup_dir={broken}",
        "-e",
        "switch_fabric_serial=3",
        "-e",
        "switch_fabric_max_fail_percentage=100",
    )
    assert rc != 0, out
    r = recap(out)
    for n in SWITCHES:
        assert r[n]["failed"] == 1 and r[n]["changed"] == 0, (n, out)
        # the window's lock beside the backups is the first file it writes there: either names the path
        assert re.search(
            rf"switch {n}: (backup|lock) \S+/{n}/\S+: cannot be written .*the change window stops "
            "before any change, nothing is sent",
            out,
        ), (n, out)
        assert lab.running(n) == before[n] and lab.pending(n) == []
    assert not glob.glob(os.path.join(broken, "**", "*.cfg*"), recursive=True)


def test_rollback_refuses_an_empty_or_truncated_latest_and_names_it(lab):
    good = {n: lab.running(n) for n in SWITCHES}
    rc, out = lab.play("switches.yml", "-e", "switch_fabric_mtu=4300", *FAST)
    assert rc == 0, out
    changed = {n: lab.running(n) for n in SWITCHES}
    for n in SWITCHES:
        latest = lab.backups_of(n)[-1]
        assert open(latest).read() == good[n] and os.path.exists(latest + ".sha256")
        oct_mode = oct(os.stat(latest + ".sha256").st_mode & 0o777)
        assert oct_mode == "0o600", oct_mode
    # leaf1: emptied (the full disk of the issue); leaf2, spine1: truncated
    for n in SWITCHES:
        latest = lab.backups_of(n)[-1]
        text = open(latest).read()
        with open(latest, "w") as f:
            f.write("" if n == "leaf1" else text[: len(text) // 2])
    rc, out = lab.play("switch_rollback.yml", "-e", "switch_fabric_restore_backup=latest", *FAST, "-e", "switch_fabric_max_fail_percentage=100")
    assert rc != 0, out
    for n in SWITCHES:
        latest = lab.backups_of(n)[-1]
        reason = "is empty" if n == "leaf1" else "does not match its digest"
        assert f"switch {n}: backup {latest}: {reason}" in out, (n, out)
        assert "an older one is never taken instead" in out
        assert lab.running(n) == changed[n] and lab.pending(n) == []  # nothing was sent
    # even with both flags, an empty or mismatching backup is never restored
    rc, out = lab.play(
        "switch_rollback.yml",
        "-e",
        "switch_fabric_restore_backup=latest",
        "-e",
        "switch_fabric_restore_accept_no_digest=true",
        "-e",
        "switch_fabric_restore_allow_deletions=true",
        *FAST,
        "-e",
        "switch_fabric_max_fail_percentage=100",
    )
    assert rc != 0 and all(lab.running(n) == changed[n] for n in SWITCHES), out
    rc, out = lab.play("switch_rollback.yml", "-e", "switch_fabric_restore_backup=latest", "-e", "switch_fabric_restore_accept_no_digest=maybe", *FAST)
    # refused before any contact by the role's argument spec, naming the key and the value
    assert rc != 0 and "switch_fabric_restore_accept_no_digest" in out and "'maybe' is not a valid boolean" in out, out
    # the flag that did both is refused, naming the two that replace it
    rc, out = lab.play("switch_rollback.yml", "-e", "switch_fabric_restore_backup=latest", "-e", "switch_fabric_restore_force=true", *FAST)
    assert rc != 0 and "switch_fabric_restore_accept_no_digest=true" in out and "switch_fabric_restore_allow_deletions=true" in out, out
    assert all(lab.running(n) == changed[n] for n in SWITCHES)
    # put the switches back for the tests after this one (the backups before this test's window)
    for n in SWITCHES:
        d = driver_for(SWITCHES[n], n, host=ADDR[n], port=lab.port, username=lab.creds["username"], known_hosts=lab.known_hosts, password=lab.creds["password"])
        try:
            from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

            run_apply(d, good[n], full=True)
        finally:
            d.close()
        assert lab.running(n) == good[n]


# SIGTERM (what AWX and ansible-runner send) in CI; Ctrl-C the same path in the matrix (make test-integration)
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.matrix), signal.SIGTERM])
def test_a_cancelled_run_ends_at_the_backup_with_nothing_pending(lab, sig):
    """Ctrl-C (SIGINT to the process group) or an AWX cancel (SIGTERM) mid-window: every switch ends
    byte-identical to its backup with nothing pending, within the confirm time."""
    before = {n: lab.running(n) for n in SWITCHES}
    for n in SWITCHES:  # the second push command hangs: the window is mid-push when the signal comes
        lab.fault(n, "hang", PUSH[n], "1", "--skip", "1")
    known = {n: set(lab.backups_of(n)) for n in SWITCHES}
    cmd = [
        PLAYBOOK,
        "-i",
        lab.inventory,
        os.path.join(REPO, "playbooks", "switches.yml"),
        "-e",
        f"switch_fabric_backup_dir={lab.backups}",
        "--skip-tags",
        "precheck",
        "-e",
        "switch_fabric_mtu=8600",
        "-e",
        "switch_fabric_serial=3",
        # the hang outlasts the signal (sent ~2 s into the push); the confirm timer holds 3 commands
        "-e",
        "switch_fabric_command_timeout=40",
        "-e",
        "switch_fabric_confirm_timeout=120",
    ]
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        # every switch is in its hanging push: each hang fault has met its command (not "2 s passed")
        lab.wait_reached(sorted(SWITCHES), p)
        os.killpg(p.pid, sig)
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        for n in SWITCHES:
            lab.fault(n, "clear")
    assert p.returncode != 0, out
    # the modules may outlive ansible-playbook for their recovery: within the confirm time, all are back
    deadline = time.time() + 120
    while time.time() < deadline and not all(lab.running(n) == before[n] and lab.pending(n) == [] for n in SWITCHES):
        time.sleep(2)  # the confirm time (120 s) is the product's own bound here, not a lab wait
    for n in SWITCHES:
        assert lab.running(n) == before[n], (n, out)
        assert lab.pending(n) == [], (n, out)
        new = sorted(set(lab.backups_of(n)) - known[n])
        assert len(new) == 1 and open(new[0]).read() == before[n]
    if "interrupted by" in out:  # where ansible-playbook still printed the module's result
        assert f"interrupted by {signal.Signals(sig).name} during push; rolled back" in out, out


# one platform in CI (the lock is the window's, the same code on each); the others in the matrix
@pytest.mark.parametrize("name", [n if i == 0 else pytest.param(n, marks=pytest.mark.matrix) for i, n in enumerate(sorted(SWITCHES))])
def test_a_second_operator_is_refused_while_a_window_holds_the_switch(lab, name):
    """Two ansible-playbook runs racing on one switch: the second is refused, naming the first (user@host,
    pid, run), before any change; --check reports the lock; the first ends as it would alone and leaves no
    lock behind (issue 25; unit level: tests/unit/switch/test_window_lock.py)."""
    before = lab.running(name)
    known = set(lab.backups_of(name))
    lab.fault(name, "hang", PUSH[name], "1", "--skip", "1")  # the first window stays mid-push ~30 s
    cmd = [
        PLAYBOOK,
        "-i",
        lab.inventory,
        os.path.join(REPO, "playbooks", "switches.yml"),
        "--limit",
        name,
        "-e",
        f"switch_fabric_backup_dir={lab.backups}",
        "--skip-tags",
        "precheck",
        "-e",
        "switch_fabric_mtu=8800",
        "-e",
        "switch_fabric_command_timeout=30",
        "-e",
        "switch_fabric_confirm_timeout=120",
    ]
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    first = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        # the first window has its backup: it holds the lock
        waits.wait_for(
            "the first window taking its backup",
            lambda: True if set(lab.backups_of(name)) - known else None,
            lambda: None if first.poll() is None else "the first window ended first",
        )
        rc, out = lab.play("switches.yml", "--limit", name, "--skip-tags", "precheck", "-e", "switch_fabric_mtu=4000")
        assert rc != 0, out
        # the holder is the first run's module process on this controller: unique (user@host, this controller's
        # machine id, pid), its run id and time
        assert re.search(
            rf"switch {name}: (another|Another) change window holds this switch: \S+@\S+ \(machine "
            rf"[0-9a-f]{{12}}, pid \d+, run \d{{8}}T\d{{6}}Z, since ",
            " ".join(out.split()),
        ), out
        assert "nothing is sent" in out
        rc, out = lab.play("switches.yml", "--limit", name, "--skip-tags", "precheck", "--check", "-e", "switch_fabric_mtu=4000")
        assert "the switch is locked by another change window" in out, out
        # with the pre-check too, the refusal names the holder (the pending state it reads is that window's own)
        rc, out = lab.play("switches.yml", "--limit", name, "-e", "switch_fabric_mtu=4000")
        assert rc != 0 and re.search(
            r"(another|Another) change window holds this switch: \S+@\S+ \(machine "
            r"[0-9a-f]{12}, pid \d+",
            " ".join(out.split()),
        ), out
        lab.fault(name, "clear")
        first_out, _ = first.communicate(timeout=180)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        lab.fault(name, "clear")
    # the first window failed on its hung push and rolled back; the second one made no backup and no change
    assert len(set(lab.backups_of(name)) - known) == 1, first_out
    assert lab.running(name) == before and lab.pending(name) == []
    d = driver_for(
        SWITCHES[name], name, host=ADDR[name], port=lab.port, username=lab.creds["username"], known_hosts=lab.known_hosts, password=lab.creds["password"]
    )
    try:
        assert d.lock_holder() == ""  # no lock left on the switch
    finally:
        d.close()
    assert not os.path.exists(os.path.join(lab.backups, name, "linerate.lock"))


# ---------------------------------------------------------------- issue 36: cancel, locks (matrix)


def window_journal(lab, name):
    """The switch's entry in the window journal (<backup_dir>/<switch>/window.json), None when there is none."""
    try:
        with open(os.path.join(lab.backups, name, "window.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def driver(lab, name):
    return driver_for(
        SWITCHES[name], name, host=ADDR[name], port=lab.port, username=lab.creds["username"], known_hosts=lab.known_hosts, password=lab.creds["password"]
    )


@pytest.mark.matrix
@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_sigkill_of_the_process_group_mid_window_ends_at_the_backup_and_the_next_run_reports_it(lab, name):
    """SIGKILL of ansible-playbook's process group (ansible-runner without a container) mid-push: Ansible's
    worker called setsid, so the module lives on; it sees its controller end, rolls back, and writes the
    outcome into the window journal. The switch ends byte-identical with nothing pending, and the next run's
    pre-check reports which switch, which window and which state before it changes anything."""
    before = lab.running(name)
    known = set(lab.backups_of(name))
    lab.fault(name, "hang", PUSH[name], "1", "--skip", "1")  # the window stays mid-push
    cmd = [
        PLAYBOOK,
        "-i",
        lab.inventory,
        os.path.join(REPO, "playbooks", "switches.yml"),
        "--limit",
        name,
        "-e",
        f"switch_fabric_backup_dir={lab.backups}",
        "--skip-tags",
        "precheck",
        "-e",
        "switch_fabric_mtu=8400",
        "-e",
        "switch_fabric_command_timeout=40",
        "-e",
        "switch_fabric_confirm_timeout=120",
    ]
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        try:
            lab.wait_reached([name], p)
        except waits.WaitError:
            raise AssertionError(p.communicate(timeout=60)[0]) from None
        entry = window_journal(lab, name)
        assert entry and entry["state"] == "in-flight" and entry["switch"] == name  # written before the change
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate(timeout=60)
        # the module outlives its process group: its outcome lands in the journal (a file, not a time)
        entry = waits.wait_for(
            f"the journal of {name} getting the window's outcome",
            lambda: (lambda e: e if e and e.get("state") == "cut-off" else None)(window_journal(lab, name)),
            lambda: None if lock_alive(entry) else "the module ended without an outcome",
        )
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        lab.fault(name, "clear")
    assert entry["outcome"].startswith(f"switch {name}: interrupted by the end of its controller (ansible-playbook pid "), entry
    assert "during push; rolled back: the running config is byte-identical to the pre-window backup" in entry["outcome"], entry
    assert lab.running(name) == before and lab.pending(name) == []
    new = sorted(set(lab.backups_of(name)) - known)
    assert len(new) == 1 and open(new[0]).read() == before and entry["backup_path"] == new[0]
    d = driver(lab, name)
    try:
        assert d.lock_read()["exists"] is False  # released by the recovery
    finally:
        d.close()
    # the next run reports it first (which switch, which window, which state), then goes on
    rc, out = lab.play("switches.yml", "--limit", name, "--check", "-e", "switch_fabric_mtu=8400")
    flat = " ".join(out.split())
    assert (
        f"switch {name}: an earlier change window on this switch (run {entry['run']}, pid {entry['pid']}) was "
        f"cut off: switch {name}: interrupted by the end of its controller"
    ) in flat, out
    assert f"Now: the running config is byte-identical to its backup {new[0]}, nothing pending" in flat, out
    assert window_journal(lab, name) is not None  # check mode removes nothing
    rc, out = lab.play("switches.yml", "--limit", name, "--tags", "precheck")
    assert rc == 0 and "an earlier change window on this switch" in out, out  # clean: the run goes on
    # the switch is clean: the pre-check removed the cut-off window's journal entry
    assert window_journal(lab, name) is None, out


def lock_alive(entry):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock

    return lock.pid_alive(entry["pid"], entry.get("start"))


@pytest.mark.matrix
@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_two_controllers_with_the_same_hostname_cannot_break_each_others_live_lock(lab, name):
    """A live window of another controller named like this one (same user@host, a pid that does not run
    here, another machine id): refused naming it, its lock left as it is, nothing sent. A dead window of
    this very controller (same machine id, its process gone) is broken with a warning."""
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock

    before = lab.running(name)
    me = lock.Holder.me("x")
    other = lock.Holder(me.user, me.host, 999999, "20261202T000000Z", time.time(), machine="0123456789abcdef0123456789abcdef", start=4242)
    d = driver(lab, name)
    try:
        assert d.lock_take(other.line()) == ""
        rc, out = lab.play("switches.yml", "--limit", name, "--skip-tags", "precheck", "-e", "switch_fabric_mtu=8300")
        assert rc != 0, out
        assert (
            f"switch {name}: another change window holds this switch: {me.user}@{me.host} (machine 0123456789ab, pid 999999, run 20261202T000000Z, since "
        ) in " ".join(out.split()), out
        assert lab.running(name) == before and d.lock_holder() == other.line()
        # the same holder on this very machine with its process gone is a dead window: broken
        d.lock_remove()
        dead = lock.Holder(me.user, me.host, 999999, "20261202T000000Z", time.time(), machine=me.machine, start=4242)
        assert d.lock_take(dead.line()) == ""
        rc, out = lab.play("switches.yml", "--limit", name, "--skip-tags", "precheck", "-e", "switch_fabric_mtu=8300")
        assert rc == 0, out
        assert "its process 999999 no longer runs on this controller" in " ".join(out.split()), out
        assert d.lock_read()["exists"] is False
    finally:
        d.close()
    restore(lab, name, before)


@pytest.mark.matrix
@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_an_empty_lock_directory_is_refused_while_young_and_broken_once_old(lab, name):
    """An empty lock (a window cut off between mkdir and writing its name): younger than 60 s by the
    switch's clock it is a window taking it (refused, said so); older, the next window - and the emergency
    restore - breaks it with a warning (docs/switches.md)."""
    before = lab.running(name)
    d = driver(lab, name)
    try:
        assert d.run(d.shell(f"mkdir {d.lock_path}"), check=False).strip() == ""
        rc, out = lab.play("switches.yml", "--limit", name, "--skip-tags", "precheck", "-e", "switch_fabric_mtu=8200")
        assert rc != 0 and "a window that has not written its name yet" in out, out
        assert lab.running(name) == before and d.lock_read()["exists"] is True
        lab.fault(name, "clock_skew", "120")  # the switch's clock moves on: the empty lock is 120 s old
        rc, out = lab.play("switches.yml", "--limit", name, "--skip-tags", "precheck", "-e", "switch_fabric_mtu=8200")
        flat = " ".join(out.split())
        assert rc == 0, out
        assert re.search(
            r"broke the stale window lock \S+ of nobody \(empty\): it names no holder and is 1[2-9]\d s "
            r"old by the switch's clock",
            flat,
        ), out
        assert d.lock_read()["exists"] is False
    finally:
        lab.fault(name, "clear")
        d.close()
    restore(lab, name, before)


def restore(lab, name, text):
    """Put a switch back to ``text`` (the config before the test) for the tests after it."""
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

    d = driver(lab, name)
    try:
        run_apply(d, text, full=True, force=True)
    finally:
        d.close()
    assert lab.running(name) == text
