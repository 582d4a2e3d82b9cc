"""Every failure of a change window ends at the backup, on NVUE, SONiC and EOS.

The drivers run their real send() over an in-process simulator
(switch_testlib.SimConn) with the simulator's own faults armed at each step
of the window: a command rejected (first or mid-push), the commit or the
confirm rejected, the session dropped mid-push or after the commit, the
switch hanging, an error reading back after the push, a post-check finding.
Each case asserts: the error names the switch and the step, rolled_back is
True, the running config is byte-identical to the pre-window backup, nothing
is pending on the simulator itself (NVUE pending/confirm-pending revision,
EOS config session, SONiC checkpoint or saved config), and the next window
goes through. Faults before the first change give rolled_back False and
changed False.
"""

import pytest

from switch_testlib import arm, render, sim_conn_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}

# where each step of the window is, in each platform's commands
PUSH = {
    "nvue": r"^nv set ",
    "sonic": r"^sudo (config interface|sonic-db-cli)",
    "eos": r"^(qos map|interface |mtu |speed |qos trust|priority-flow-control|tx-queue|random-detect)",
}
COMMIT = {"nvue": r"^nv config apply --confirm", "sonic": r"^sudo config checkpoint ", "eos": r"^commit timer "}
CONFIRM = {"nvue": r"^nv config apply --confirm-yes", "sonic": r"^sudo config save", "eos": r"^configure session \S+ commit$"}
READ = {"nvue": r"^nv config show -o commands$", "sonic": r"^show runningconfiguration all$", "eos": r"^show running-config$"}
# reads of the running config before the push (SONiC's pending check reads it too,
# and the re-read after begin)
READS_BEFORE = {"nvue": 2, "sonic": 3, "eos": 2}

CASES = {
    "reject-first-push": lambda p: ("reject", PUSH[p], 1, 0),
    "reject-mid-push": lambda p: ("reject", PUSH[p], 1, 3),
    "reject-commit": lambda p: ("reject", COMMIT[p], 1, 0),
    "reject-confirm": lambda p: ("reject", CONFIRM[p], 1, 0),
    "drop-mid-push": lambda p: ("drop", PUSH[p], 1, 2),
    "drop-after-commit": lambda p: ("drop_after", COMMIT[p], 1, 0),
    "drop-at-confirm": lambda p: ("drop", CONFIRM[p], 1, 0),
    "drop-after-confirm": lambda p: ("drop_after", CONFIRM[p], 1, 0),
    "hang-mid-push": lambda p: ("hang", PUSH[p], 1, 2),
    "hang-after-commit": lambda p: ("hang_after", COMMIT[p], 1, 0),
    "readback-error": lambda p: ("reject", READ[p], 1, READS_BEFORE[p]),
    "drop-at-readback": lambda p: ("drop", READ[p], 1, READS_BEFORE[p]),
}
STEP = {
    "reject-first-push": "push",
    "reject-mid-push": "push",
    "reject-commit": None,
    "reject-confirm": "confirm",
    "drop-mid-push": "push",
    "drop-after-commit": None,
    "drop-at-confirm": "confirm",
    "drop-after-confirm": "confirm",
    "hang-mid-push": "push",
    "hang-after-commit": None,
    "readback-error": "read-back",
    "drop-at-readback": "read-back",
}


def sim_clean(platform, sw, saved_before):
    """Pending state as the simulator itself holds it (not as the driver reports it)."""
    if platform == "nvue":
        return sw.pending is None and sw.confirm is None and not [r for r in sw.revisions if r["state"] == "confirm_pending"]
    if platform == "eos":
        return all(s["state"] == "completed" for s in sw.sessions.values())
    return not sw.checkpoints and sw.saved == saved_before


def window(d, platform, **kw):
    return run_apply(d, render(platform, PORTS[platform]), ports=PORTS[platform], want_pfc=[3], want_ecn=True, confirm_timeout=300, **kw)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_fault_ends_at_the_backup_with_nothing_pending(tmp_path, monkeypatch, platform, case):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    saved_before = getattr(sim.sw, "saved", None)
    kind, match, count, skip = CASES[case](platform)
    arm(sim, kind, match, count, skip)
    with pytest.raises(SwitchError) as err:
        window(d, platform, backup_dir=str(tmp_path / "b"), stamp="T1")
    e = err.value
    assert str(e).startswith("switch sw: ")
    step = STEP[case] or ("begin" if platform == "sonic" else "commit")
    assert f" {step} failed: " in str(e)
    assert "rolled back: the running config is byte-identical" in str(e), str(e)
    assert e.rolled_back is True and e.changed is False
    assert sim.sw.rejects[0]["count"] == 0, "the fault never fired"
    # the switch itself: byte-identical and nothing pending
    assert d.get_running() == before
    assert d.pending() == []
    assert sim_clean(platform, sim.sw, saved_before)
    backup = (tmp_path / "b" / "sw" / f"T1.{platform}.cfg").read_text()
    assert backup == before
    if kind in ("drop", "drop_after", "hang", "hang_after"):
        assert sim.connections >= 2 and ("lost during" in str(e) or "no answer within" in str(e))
    # the next window is not blocked (the NVUE revision left confirm_pending used to block it)
    sim.sw.rejects.clear()
    res = window(d, platform, backup_dir=str(tmp_path / "b"), stamp="T2")
    assert res["changed"] is True and d.pending() == []


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_post_check_finding_rolls_back(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    saved_before = getattr(sim.sw, "saved", None)
    sim.sw.link_down.add(PORTS[platform][1])
    with pytest.raises(SwitchError) as err:
        window(d, platform, stamp="T1")
    assert f"post-check failed: {PORTS[platform][1]}: link is down; rolled back" in str(err.value)
    assert err.value.rolled_back is True
    assert d.get_running() == before and d.pending() == [] and sim_clean(platform, sim.sw, saved_before)
    sim.sw.link_down.clear()
    assert window(d, platform, stamp="T2")["changed"] is True
    assert d.pending() == [] and sim_clean(platform, sim.sw, getattr(sim.sw, "saved", None))


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
@pytest.mark.parametrize("kind", ["reject", "drop"])
def test_fault_before_the_first_change_is_rolled_back_false(tmp_path, monkeypatch, platform, kind):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    arm(sim, kind, READ[platform])  # the first read of the window
    with pytest.raises(SwitchError) as err:
        window(d, platform, backup_dir=str(tmp_path / "b"), stamp="T1")
    assert err.value.rolled_back is False and err.value.changed is False
    assert "rolled back" not in str(err.value)
    assert not (tmp_path / "b").exists()
    assert d.get_running() == before


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_rollback_that_cannot_finish_says_false_and_what_is_left(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    before = d.get_running()
    arm(sim, "reject", CONFIRM[platform])
    # every read after the push fails, so neither the undo nor its verification can succeed
    arm(sim, "reject", READ[platform], count=50, skip=READS_BEFORE[platform])
    with pytest.raises(SwitchError) as err:
        window(d, platform, stamp="T1")
    e = err.value
    assert e.rolled_back is False and e.changed is True
    assert "ROLLBACK INCOMPLETE" in str(e) and str(e).startswith("switch sw: ")
    sim.sw.rejects.clear()
    assert d.get_running() == before or d.pending()  # honest: whichever it is, the message said so


def test_dropped_session_is_named_at_once_not_after_the_read_timeout():
    """The real netmiko path: a closed paramiko channel raises at the first empty read."""
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import base

    class Chan:
        closed = True
        eof_received = True

        def get_transport(self):
            return None

    class Conn:
        remote_conn = Chan()

        def read_channel(self):
            return ""

    c = Conn()
    base._watch_channel(c)
    with pytest.raises(EOFError, match="closed the SSH session"):
        c.read_channel()
    Chan.closed, Chan.eof_received = False, False

    class Transport:
        def is_active(self):
            return True

    Chan.get_transport = lambda self: Transport()
    assert c.read_channel() == ""  # an open, quiet channel keeps waiting


LEFTOVER = {  # pending state a failed window leaves, typed into the simulator as an operator would
    # NVUE names no revision after linerate: the dead window's own lock (stale) says whose it is
    "nvue": [
        "nv set interface swp1 link mtu 1500",
        "mkdir /var/lock/linerate.lock && echo 'linerate ops@elsewhere pid=1 run=X time=20200101T000000Z' > /var/lock/linerate.lock/holder",
    ],
    "eos": ["configure session linerate-X", "interface Ethernet1/1", "mtu 1500", "end"],
    "sonic": ["sudo config checkpoint linerate-X"],
}


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_restore_clears_pending_state_and_is_idempotent(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    factory = d.get_running()
    window(d, platform, backup_dir=str(tmp_path / "b"), stamp="T1")
    pre_window = tmp_path / "b" / "sw" / f"T1.{platform}.cfg"
    assert pre_window.read_text() == factory and d.get_running() != factory
    ctx = sim.sw.new_context("ops")
    for line in LEFTOVER[platform]:
        sim.sw.execute(ctx, line)
    for path in [p for p in sim.sw.fs if "linerate.lock" in p]:  # the dead window's lock: an hour old
        sim.sw.fs_mtime[path] = sim.sw.now() - 3600  # by the switch's own clock
    assert d.pending()
    res = run_apply(d, pre_window.read_text(), full=True, backup_dir=str(tmp_path / "b"), stamp="T2", backup_label="restore")
    assert res["changed"] is True and res["cleared"]
    assert d.get_running() == factory and d.pending() == []
    assert sim_clean(platform, sim.sw, getattr(sim.sw, "saved", None))
    own = tmp_path / "b" / "sw" / f"T2.before-restore.{platform}.cfg"
    assert own.exists() and own.read_text() != factory
    again = run_apply(d, pre_window.read_text(), full=True, backup_dir=str(tmp_path / "b"), stamp="T3", backup_label="restore")
    assert again["changed"] is False and again["commands"] == []
    assert not (tmp_path / "b" / "sw" / f"T3.before-restore.{platform}.cfg").exists()


def test_restore_fails_while_pending_state_remains(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_conn_driver(tmp_path, "eos", PORTS["eos"])
    factory = d.get_running()
    sim.sw.execute(sim.sw.new_context("ops"), "configure session linerate-X")
    arm(sim, "reject", r"^configure session linerate-X abort$", count=5)
    with pytest.raises(SwitchError, match="switch sw: rejected command 'configure session linerate-X abort'") as err:
        run_apply(d, factory, full=True, backup_label="restore")
    assert err.value.rolled_back is False


def test_backup_names_keep_restore_backups_apart(tmp_path):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.backups import write_backup

    a = write_backup(str(tmp_path), "sw", "eos", "x", "T1")
    b = write_backup(str(tmp_path), "sw", "eos", "y", "T1", "restore")
    c = write_backup(str(tmp_path), "sw", "eos", "z", "T1")
    assert [p.rsplit("/", 1)[1] for p in (a, b, c)] == ["T1.eos.cfg", "T1.before-restore.eos.cfg", "T1-1.eos.cfg"]
    with pytest.raises(ValueError, match="backup label 'other'"):
        write_backup(str(tmp_path), "sw", "eos", "x", "T1", "other")


OUTSIDE = {"nvue": "nv set system hostname pwned\n", "eos": "username evil secret x\ninterface Management1\n   mtu 1500\n", "sonic": None}


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_config_outside_the_managed_scope_is_refused_before_anything_is_sent(tmp_path, monkeypatch, platform):
    import json
    from switch_testlib import make

    text = render(platform, PORTS[platform])
    if platform == "sonic":
        db = json.loads(text)
        db["PORT"]["Ethernet99"] = {"mtu": "1500"}  # not a fabric port
        db["SYSLOG_SERVER"] = {"10.0.0.1": {"source": "x"}}  # not QoS at all
        text = json.dumps(db)
    else:
        text += OUTSIDE[platform]
    d, fake = make(platform)
    with pytest.raises(SwitchError, match="switch sw: refusing config outside the managed scope") as err:
        run_apply(d, text, ports=PORTS[platform])
    assert fake.sent == [] and err.value.rolled_back is False
    msg = str(err.value)
    if platform == "nvue":
        assert "nv set system hostname pwned" in msg
    elif platform == "eos":
        assert "username evil secret x" in msg and "interface Management1" in msg
    else:
        assert "PORT|Ethernet99 mtu=1500" in msg and "SYSLOG_SERVER|10.0.0.1 source=x" in msg
    # the intent alone is inside the scope
    assert (
        d.out_of_scope(
            d.parse(render(platform, PORTS[platform])), d.managed_scope(d.parse(render(platform, PORTS[platform])), PORTS[platform]), PORTS[platform]
        )
        == []
    )


@pytest.mark.parametrize("bad", ["swp1;reboot", "swp1 swp2", "swp1\nnv config apply", "", "$(id)", "x" * 65])
def test_unsafe_port_names_are_refused_before_anything_is_sent(bad):
    from switch_testlib import make

    d, fake = make("nvue")
    with pytest.raises(SwitchError, match="fabric port name"):
        run_apply(d, render("nvue", ["swp1"]), ports=["swp1", bad])
    assert fake.sent == []


def test_templates_quote_what_they_render():
    import json

    nv = render("nvue", ["swp1"], switch_fabric_profile="my prof")
    assert "nv set qos pfc 'my prof' switch-priority 3" in nv
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import nvue

    assert nvue.parse_nvue_commands(nv)["qos pfc my prof switch-priority"] == "3"
    son = json.loads(render("sonic", ['Ether"net0']))
    assert 'Ether"net0' in son["PORT"] and 'Ether"net0|3' in son["QUEUE"]
