"""The change window of base.py on its own: result fields, refusals and their messages, the
post-check's problems, backups, the platform interface, recovery's report."""

import datetime
import os

import pytest

from switch_testlib import make, unlocked

from ansible_collections.linerate.fabric.plugins.module_utils.switch import backups, base, drivers, module_common
from ansible_collections.linerate.fabric.plugins.module_utils.switch import window as switch_window
from ansible_collections.linerate.fabric.plugins.module_utils.switch import window_lock
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

RUNNING = "nv set interface swp1 link mtu 9000\nnv set system hostname leaf1\n"
WANT = "nv set interface swp1 link mtu 9216\n"


def test_check_mode_result_fields_and_diff_headers():
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING})
    res = run_apply(d, WANT, ports=["swp1"], check_mode=True)
    assert res == {
        "changed": True,
        "commands": ["nv set interface swp1 link mtu 9216"],
        "before": "nv set interface swp1 link mtu 9000\n",
        "after": "nv set interface swp1 link mtu 9216\n",
        "backup_path": None,
        "rolled_back": False,
        "diff": {
            "before": "nv set interface swp1 link mtu 9000\n",
            "after": "nv set interface swp1 link mtu 9216\n",
            "before_header": "leaf7 (running)",
            "after_header": "leaf7 (intent)",
        },
    }
    # the lock is read (holder, its age and the switch's clock in one command), nothing is taken or sent
    assert fake.sent == [
        "nv config show -o commands",
        "cat /var/lock/linerate.lock/holder 2>/dev/null ; stat -c lock-mtime=%Y /var/lock/linerate.lock 2>/dev/null ; date +switch-now=%s",
    ]


def test_at_intent_result_is_unchanged():
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING})
    res = run_apply(d, "nv set interface swp1 link mtu 9000\n", ports=["swp1"])
    assert res["changed"] is False and res["commands"] == [] and res["before"] == res["after"]
    assert res["diff"]["before"] == res["diff"]["after"] == "nv set interface swp1 link mtu 9000\n"
    assert fake.sent == ["nv config show -o commands"]


def test_successful_window_result(tmp_path):
    after = "nv set interface swp1 link mtu 9216\nnv set system hostname leaf1\n"
    d, fake = make(
        "nvue",
        "leaf7",
        {
            "nv config show -o commands": [RUNNING, RUNNING, after],
            "nv config apply --confirm 2 -y": "applied [rev_id: 2]",
            "nv config revision": [
                "1  applied_and_saved\n",
                "1  applied_and_saved\n",
                "1  applied_and_saved\n2  confirm_pending\n",
                "1  applied_and_saved\n2  applied_and_saved\n",
            ],
        },
    )
    res = run_apply(d, WANT, ports=["swp1"], backup_dir=str(tmp_path), post_check=False, stamp="T9", confirm_timeout=90)
    assert res["changed"] is True and res["after"] == "nv set interface swp1 link mtu 9216\n"
    assert res["before"] == "nv set interface swp1 link mtu 9000\n" and res["rolled_back"] is False
    assert res["backup_path"] == str(tmp_path / "leaf7" / "T9.nvue.cfg")
    assert unlocked(fake.sent) == [
        "nv config show -o commands",
        "nv config diff",
        "nv config revision",
        "nv config revision",
        "nv config show -o commands",
        "nv set interface swp1 link mtu 9216",
        "nv config apply --confirm 2 -y",
        "nv config show -o commands",
        "nv config revision",
        "nv config apply --confirm-yes",
        "nv config revision",
    ]


@pytest.mark.parametrize("ports", [["swp 1"], ["swp1", 7], ["x" * 65], ["-swp1"]])
def test_bad_port_names_are_refused_before_anything_is_sent(ports):
    d, fake = make("nvue", "leaf7")
    with pytest.raises(SwitchError) as err:
        run_apply(d, WANT, ports=ports)
    bad = [p for p in ports if p != "swp1"]
    assert str(err.value) == (f"switch leaf7: fabric port name(s) {bad!r} refused: allowed are letters, digits and _ . / : - (at most 64), nothing is sent")
    assert err.value.rolled_back is False and err.value.changed is False and fake.sent == []


def test_port_names_of_the_three_platforms_are_accepted():
    d, fake = make("eos", "leaf7", {"show running-config": ""})
    ports = ["Ethernet1/1", "Port-Channel10", "Ethernet1/1.100", "x" * 64, "Eth_1:2"]
    assert run_apply(d, "", ports=ports)["commands"] == []


def test_intent_outside_the_scope_is_refused_naming_the_ports():
    d, fake = make("nvue", "leaf7")
    with pytest.raises(SwitchError) as err:
        run_apply(d, "nv set system hostname x\n" + WANT, ports=["swp1", "swp2"])
    assert str(err.value) == (
        "switch leaf7: refusing config outside the managed scope (QoS, PFC, ECN, MTU and "
        "speed of the fabric ports swp1, swp2 and uplinks), nothing is sent: "
        "nv set system hostname x"
    )
    assert err.value.rolled_back is False and fake.sent == []
    with pytest.raises(SwitchError) as err:
        run_apply(d, WANT, ports=[])
    assert "speed of the fabric ports (none) and uplinks), nothing is sent: nv set interface swp1 link mtu 9216" in str(err.value)


def test_out_of_scope_lists_ten_lines_then_counts():
    d, _ = make("nvue", "leaf7")
    lines = [f"nv set system h{n} x" for n in range(12)]
    with pytest.raises(SwitchError) as err:
        run_apply(d, "\n".join(lines), ports=["swp1"])
    assert err.value.reason.endswith("nothing is sent: " + "; ".join(lines[:10]) + " (and 2 more)")
    with pytest.raises(SwitchError) as err:
        run_apply(d, "\n".join(lines[:10]), ports=["swp1"])
    assert err.value.reason.endswith("nothing is sent: " + "; ".join(lines[:10]))


def test_pending_config_refuses_the_push():
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING, "nv config diff": "- x: 1", "nv config revision": "5  confirm_pending\n"})
    with pytest.raises(SwitchError) as err:
        run_apply(d, WANT, ports=["swp1"])
    assert str(err.value) == (
        "switch leaf7: uncommitted configuration is pending, refusing to push: pending NVUE revision:\n- x: 1; applied revision(s) awaiting confirmation: 5"
    )
    assert err.value.rolled_back is False and err.value.changed is False
    assert unlocked(fake.sent) == ["nv config show -o commands", "nv config diff", "nv config revision"]


def test_restore_matching_the_backup_still_reports_what_is_pending():
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING, "nv config revision": "5  confirm_pending\n"})
    with pytest.raises(SwitchError) as err:
        run_apply(d, RUNNING, full=True)
    assert str(err.value) == (
        "switch leaf7: the running config matches the backup but configuration is still pending: applied revision(s) awaiting confirmation: 5"
    )
    # revision 5 is not this run's, and no stale linerate window left it: it is left as it is
    assert err.value.rolled_back is False and err.value.changed is False
    assert "nv config apply --confirm-yes" not in fake.sent and "nv config detach" not in fake.sent
    # a window that died (its stale lock broken by this run) left it: the restore confirms it (it is the backup)
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING, "nv config revision": "5  confirm_pending\n"})
    d.stale_window = object()
    with pytest.raises(SwitchError) as err:
        run_apply(d, RUNNING, full=True)
    assert err.value.rolled_back is False and err.value.changed is True  # it confirmed one
    # the restore read the running config (nothing outside the scope deleted), then confirmed the revision
    # that already is the backup
    assert unlocked(fake.sent)[:5] == [
        "nv config show -o commands",
        "nv config diff",
        "nv config revision",
        "nv config show -o commands",
        "nv config apply --confirm-yes",
    ]


def test_restore_matching_the_backup_with_nothing_pending_is_unchanged():
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING})
    res = run_apply(d, RUNNING, full=True)
    assert res["changed"] is False and "cleared" not in res and res["commands"] == []
    assert unlocked(fake.sent) == ["nv config show -o commands", "nv config diff", "nv config revision"]
    res = run_apply(d, RUNNING, full=True, check_mode=True)
    assert res["changed"] is False


def test_restore_reports_what_it_cleared():
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING, "nv config diff": ["- x: 1", ""]})
    d.stale_window = object()  # the pending revision is a dead window's (its stale lock was broken)
    res = run_apply(d, RUNNING, full=True)
    assert res["changed"] is True and res["cleared"] == ["nv config detach (discarded a pending revision)"]


def test_failure_after_the_backup_names_step_and_backup(tmp_path):
    d, fake = make(
        "nvue",
        "leaf7",
        {
            "nv config show -o commands": RUNNING,
            "nv config revision": "1  applied_and_saved\n",
            "nv set interface swp1 link mtu 9216": "Error: mtu out of range",
        },
    )
    with pytest.raises(SwitchError) as err:
        run_apply(d, WANT, ports=["swp1"], backup_dir=str(tmp_path), stamp="T4")
    backup = tmp_path / "leaf7" / "T4.nvue.cfg"
    assert str(err.value) == (
        "switch leaf7: push failed: rejected command 'nv set interface swp1 link mtu 9216': "
        "Error: mtu out of range; rolled back: the running config is byte-identical to the "
        f"pre-window backup and nothing is pending (backup {backup})"
    )
    assert (err.value.rolled_back, err.value.changed) == (True, False)
    assert err.value.command == "nv set interface swp1 link mtu 9216"
    assert err.value.output == "Error: mtu out of range"


def test_failure_that_cannot_be_undone_says_so():
    after = "nv set interface swp1 link mtu 9216\nnv set system hostname leaf1\n"
    d, fake = make(
        "nvue",
        "leaf7",
        {
            "nv config show -o commands": [RUNNING, RUNNING, after],
            "nv config revision": ["1  applied_and_saved\n"] * 2 + ["1  applied_and_saved\n2  applied_and_saved\n"],
            "nv config apply --confirm 5 -y": "applied [rev_id: 2]",
            "nv config apply 1 -y": "Error: cannot apply",
        },
    )
    d.oper = lambda ports: {"swp1": {"up": False, "pfc": [], "ecn": False}}
    with pytest.raises(SwitchError) as err:
        run_apply(d, WANT, ports=["swp1"])
    assert str(err.value) == (
        "switch leaf7: post-check failed: swp1: link is down; ROLLBACK INCOMPLETE, the switch may be modified: "
        "rejected command 'nv config apply 1 -y': Error: cannot apply; "
        "rejected command 'nv config apply 1 -y': Error: cannot apply"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, True)


def test_non_switch_failures_in_the_window_are_named_by_type():
    d, fake = make("nvue", "leaf7", {"nv config show -o commands": RUNNING, "nv config revision": "1  applied_and_saved\n"})

    def broken(cmds):
        raise KeyError("boom")

    d.push = broken
    with pytest.raises(SwitchError) as err:
        run_apply(d, WANT, ports=["swp1"])
    assert err.value.reason.startswith("push failed: KeyError: 'boom'; rolled back: ")
    assert err.value.command is None and err.value.output is None


def test_post_check_only_on_fabric_ports_and_not_in_a_restore():
    after = "nv set interface swp1 link mtu 9216\nnv set system hostname leaf1\n"
    revs = ["1  applied_and_saved\n"] * 2 + ["1  applied_and_saved\n2  confirm_pending\n", "1  applied_and_saved\n2  applied_and_saved\n"]
    d, _ = make("nvue", "leaf7", {"nv config show -o commands": [RUNNING, RUNNING, after], "nv config revision": list(revs)})
    d.oper = lambda ports: pytest.fail("no post-check in a restore")
    assert run_apply(d, after, ports=["swp1"], full=True)["changed"] is True
    qos = "nv set qos pfc linerate switch-priority 3\n"
    d, _ = make("nvue", "leaf7", {"nv config show -o commands": [RUNNING, RUNNING, RUNNING + qos], "nv config revision": list(revs)})
    d.oper = lambda ports: pytest.fail("no post-check without ports")
    assert run_apply(d, qos, ports=[])["changed"] is True


# ---------------------------------------------------------------- backups and stamps


def test_timestamp_is_utc_compact():
    t = datetime.datetime(2026, 11, 22, 4, 5, 6, tzinfo=datetime.timezone.utc)
    assert base.timestamp(t) == "20261122T040506Z"
    assert len(base.timestamp()) == 16 and base.timestamp().endswith("Z")


def test_backups_never_overwrite_and_restores_are_marked(tmp_path):
    paths = [backups.write_backup(str(tmp_path), "leaf1", "eos", f"cfg{n}\n", "T1") for n in range(3)]
    assert paths == [str(tmp_path / "leaf1" / name) for name in ("T1.eos.cfg", "T1-1.eos.cfg", "T1-2.eos.cfg")]
    assert [open(p).read() for p in paths] == ["cfg0\n", "cfg1\n", "cfg2\n"]
    r = backups.write_backup(str(tmp_path), "leaf1", "eos", "x", "T1", label="restore")
    assert r == str(tmp_path / "leaf1" / "T1.before-restore.eos.cfg")
    assert oct(os.stat(r).st_mode & 0o777) == "0o600"
    assert oct(os.stat(tmp_path / "leaf1").st_mode & 0o777) == "0o700"
    with pytest.raises(ValueError) as err:
        backups.write_backup(str(tmp_path), "leaf1", "eos", "x", "T1", label="other")
    assert str(err.value) == "backup label 'other' (allowed: window, restore)"


# ---------------------------------------------------------------- the platform interface

ABSTRACT = ["parse_config", "commands", "managed_scope", "out_of_scope", "view", "pending", "begin", "abort", "commit", "confirm", "rollback", "undo", "oper"]


def test_the_running_config_is_read_and_parsed_once_for_every_platform(monkeypatch):
    """get_running sends the platform's running_command; parse is its parse_config with a refusal named
    as the switch's (base.py, not restated per driver)."""

    def refuse(self, text):
        raise ValueError(f"line 1: {text!r} is not a config line")

    cls = type("Plain", (base.Driver,), dict({m: (lambda self, *a: None) for m in ABSTRACT}, running_command="show config", parse_config=refuse))
    d = cls("sw9")
    monkeypatch.setattr(d, "send", lambda command, timeout=None: f"answer to {command}")
    assert d.get_running() == "answer to show config" and d.log == [("show config", "answer to show config")]
    with pytest.raises(SwitchError, match=r"^switch sw9: line 1: 'x' is not a config line$"):
        d.parse("x")
    assert {p: c.running_command for p, c in drivers.DRIVERS.items()} == {
        "nvue": "nv config show -o commands",
        "sonic": "show runningconfiguration all",
        "eos": "show running-config",
    }
    assert module_common._CONFIG_READS == {
        "nv config show -o commands",
        "show runningconfiguration all",
        "cat /etc/sonic/config_db.json",
        "show running-config",
    }


@pytest.mark.parametrize("missing", ABSTRACT)
def test_a_platform_must_implement_every_step(missing):
    cls = type("Partial", (base.Driver,), {m: (lambda self, *a: None) for m in ABSTRACT if m != missing})
    with pytest.raises(TypeError, match=missing):
        cls("sw")
    full = type("Full", (base.Driver,), {m: (lambda self, *a: None) for m in ABSTRACT})("sw")
    assert full.full_scope()("any", "key") is True and full.clear_pending("x") == []
    assert (full.port, full.connect_timeout, full.command_timeout, full.profile) == (22, 10, 30, "linerate")


# ---------------------------------------------------------------- recovery's report


class Toy(base.Driver):
    """A switch whose undo and read-back are scripted."""

    platform = "toy"

    def __init__(self, texts, pend=(), undo_errors=()):
        super().__init__("toy1")
        self.texts, self.pend, self.undo_errors, self.calls = list(texts), list(pend), list(undo_errors), []

    def undo(self):
        self.calls.append("undo")
        if self.undo_errors:
            raise SwitchError(self.name, self.undo_errors.pop(0))

    def get_running(self):
        return self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]

    def pending(self):
        return self.pend.pop(0) if self.pend else []

    parse = parse_config = commands = managed_scope = out_of_scope = view = begin = abort = commit = confirm = rollback = oper = lambda self, *a: None


def test_recover_restored_at_once():
    assert switch_window.recover(Toy(["backup"]), "backup") == (True, "")


def test_recover_reports_every_attempt():
    d = Toy(["other"], pend=[["rev 5"], ["rev 5"]])
    assert switch_window.recover(d, "backup", nested=True) == (
        False,
        "running config differs from the backup; still pending: rev 5; running config differs from the backup; still pending: rev 5",
    )
    assert d.calls == ["undo", "undo"]


def test_recover_second_attempt_after_a_failed_undo():
    d = Toy(["backup"], undo_errors=["session lost"])
    assert switch_window.recover(d, "backup") == (True, "")
    assert d.calls == ["undo", "undo"]
    d = Toy(["backup"], undo_errors=["a", "b"])
    assert switch_window.recover(d, "backup") == (False, "a; b")
    assert switch_window.recover(Toy(["backup"], undo_errors=["a"]), "backup", attempts=1) == (False, "a")


# ---------------------------------------------------------------- the confirm timer's budget


@pytest.mark.parametrize(
    "platform,used,confirms",
    [
        ("nvue", 100.0, True),  # well inside the 120 s timer
        ("nvue", 111.0, False),  # 9 s left: the switch may be rolling back by the time the confirm lands
        ("eos", 111.0, False),
        ("sonic", 100.0, True),
        ("sonic", 111.0, False),  # the dead-man timer (systemd-run) rolls a SONiC switch back on its own too
    ],
)
def test_a_confirm_is_not_sent_when_the_post_checks_used_the_confirm_timer(tmp_path, monkeypatch, platform, used, confirms):
    from switch_testlib import render, sim_driver

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    ports = ["swp1"] if platform == "nvue" else ["Ethernet0"] if platform == "sonic" else ["Ethernet1/1"]
    d, sim = sim_driver(tmp_path, platform, ports)
    before = d.get_running()
    clock = iter([0.0, used])
    monkeypatch.setattr(switch_window.time, "monotonic", lambda: next(clock))
    kw = dict(ports=ports, confirm_timeout=120, post_check=False)
    if confirms:
        res = switch_window.run_apply(d, render(platform, ports), **kw)
        assert res["changed"] is True and res["confirm_timer_used_s"] == used
        return
    with pytest.raises(SwitchError) as err:
        switch_window.run_apply(d, render(platform, ports), **kw)
    assert f"used {used:.0f} s of the 120 s confirm timer" in str(err.value)
    assert err.value.rolled_back is True and d.get_running() == before
    assert not any(c.startswith(("nv config apply --confirm-yes", "configure session")) and c.endswith(("--confirm-yes", " commit")) for c in sim.sent)


# ---------------------------------------------------------------- the window's verdicts, whole (mutation testing)


class Book(base.Driver):
    """A switch whose configuration is ``key value`` lines: begin/push/commit/confirm/undo/discard act on
    it for real, every step is recorded in ``calls``, and a step named in ``fail`` raises SwitchError
    (once) with that reason. ``reads`` scripts what successive get_running calls return (then the config)."""

    platform = "book"

    def __init__(self, running, fail=None, reads=(), pend=(), oper=None, cleared=(), on_undo=None):
        super().__init__("book1")
        self.running, self.fail, self.reads, self.pend = running, dict(fail or {}), list(reads), list(pend)
        self.oper_state, self.cleared, self.on_undo = oper or {}, list(cleared), on_undo
        self.calls, self.saved, self.staged = [], None, []

    def _step(self, name):
        self.calls.append(name)
        if name in self.fail:
            raise SwitchError(self.name, self.fail.pop(name))

    def get_running(self):
        self._step("get_running")
        return self.reads.pop(0) if self.reads else self.running

    def parse_config(self, text):
        return dict(line.split(" ", 1) for line in text.splitlines() if line)

    def managed_scope(self, want, ports):
        return lambda key: True

    def out_of_scope(self, want, scope, ports):
        return []

    def commands(self, want, have, scope):
        return [f"{k} {v}" for k, v in sorted(want.items()) if have.get(k) != v]

    def view(self, facts, scope):
        return "".join(f"{k} {v}\n" for k, v in sorted(facts.items()))

    def pending(self):
        self._step("pending")
        return list(self.pend)

    def clear_pending(self, target_text):
        self._step("clear_pending")
        return list(self.cleared)

    def begin(self, tag):
        self._step("begin")
        self.saved = self.running

    def push(self, commands):
        self._step("push")
        self.staged = list(commands)

    def commit(self, confirm_timeout):
        self._step("commit")
        have = self.parse(self.running)
        have.update(self.parse("\n".join(self.staged)))
        self.running = self.view(have, None)

    def confirm(self):
        self._step("confirm")

    def undo(self):
        self._step("undo")
        if self.on_undo:
            self.on_undo()
        self.running = self.saved

    def discard(self):
        self._step("discard")

    def oper(self, ports):
        return self.oper_state

    abort = rollback = lambda self, *a: None


ROLLED_BACK = "rolled back: the running config is byte-identical to the pre-window backup and nothing is pending"


def book_window(d, want="mtu 9216\n", **kw):
    kw.setdefault("lock", False)
    kw.setdefault("post_check", False)
    return run_apply(d, want, ports=["p1"], **kw)


def test_a_failed_begin_discards_what_begin_made_and_never_undoes():
    d = Book("mtu 1500\n", fail={"begin": "no checkpoint space"})
    with pytest.raises(SwitchError) as err:
        book_window(d)
    assert str(err.value) == f"switch book1: begin failed: no checkpoint space; {ROLLED_BACK}"
    assert (err.value.rolled_back, err.value.changed) == (True, False)
    assert d.calls == ["get_running", "pending", "begin", "discard", "get_running", "pending"]


def test_a_config_that_moved_after_begin_is_left_and_the_run_refused_exact():
    d = Book("mtu 1500\n", reads=["mtu 1500\n", "mtu 1500\nhostname x\n", "mtu 1500\nhostname x\n"])
    with pytest.raises(base.ConfigMoved) as err:
        book_window(d)
    assert str(err.value) == (
        "switch book1: the running config changed between the first read and the begin of the window: another change "
        "landed in between; nothing was sent, the window's own checkpoint/session/timer removed. Run again to compute "
        "the change against the new config"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert "push" not in d.calls and "undo" not in d.calls
    d = Book("mtu 1500\n", reads=["mtu 1500\n", "mtu 1500\nhostname x\n"], fail={"discard": "session lost"})
    with pytest.raises(base.ConfigMoved) as err:
        book_window(d)
    assert str(err.value).endswith(
        "another change landed in between; nothing was sent; removing what begin made "
        "failed: session lost. Run again to compute the change against the new config"
    )


def test_discard_reports_a_moved_config_what_is_pending_and_a_failure():
    assert switch_window.discard(Book("a 1\n"), "a 1\n") == (True, "")
    assert switch_window.discard(Book("a 2\n"), "a 1\n") == (False, "moved")
    assert switch_window.discard(Book("a 1\n", pend=["rev 4", "rev 5"]), "a 1\n") == (False, "still pending: rev 4; rev 5")
    assert switch_window.discard(Book("a 1\n", fail={"discard": "timed out"}), "a 1\n") == (False, "timed out")


def test_a_read_back_off_intent_and_a_failed_post_check_are_both_named():
    d = Book("mtu 1500\n", oper={"p1": {"up": False}})
    d.commit = lambda confirm_timeout: d.calls.append("commit")  # the push does not take
    with pytest.raises(SwitchError) as err:
        book_window(d, post_check=True)
    assert str(err.value) == (f"switch book1: post-check failed: config not at intent after push, still to do: mtu 9216; p1: link is down; {ROLLED_BACK}")
    assert "confirm" not in d.calls and d.calls[-3:] == ["undo", "get_running", "pending"]


def test_a_failure_whose_recovery_gets_a_signal_finishes_the_recovery_and_says_so():
    import signal as _signal

    d = Book("mtu 1500\n", fail={"confirm": "connection reset"}, on_undo=lambda: os.kill(os.getpid(), _signal.SIGTERM))
    with pytest.raises(SwitchError) as err:
        book_window(d)
    assert str(err.value) == (f"switch book1: confirm failed: connection reset; {ROLLED_BACK}; SIGTERM received during the recovery was held until it ended")
    assert err.value.rolled_back is True and d.running == "mtu 1500\n"


def test_the_confirm_margin_is_ten_seconds_exactly(monkeypatch):
    clock = iter([0.0, 110.0])
    monkeypatch.setattr(switch_window.time, "monotonic", lambda: next(clock))
    assert book_window(Book("mtu 1500\n"), confirm_timeout=120)["confirm_timer_used_s"] == 110.0
    clock = iter([0.0, 110.1])
    monkeypatch.setattr(switch_window.time, "monotonic", lambda: next(clock))
    with pytest.raises(SwitchError) as err:
        book_window(Book("mtu 1500\n"), confirm_timeout=120)
    assert "used 110 s of the 120 s confirm timer (less than 10 s left)" in str(err.value)


def test_a_signal_after_an_emergency_restore_cleared_pending_state_says_so():
    import signal as _signal

    d = Book("mtu 1500\n", cleared=["discarded revision 7"])
    real = d.get_running

    def read():
        out = real()
        if d.calls.count("get_running") == 2:  # the read after clearing, before any change
            os.kill(os.getpid(), _signal.SIGTERM)
        return out

    d.get_running = read
    with pytest.raises(SwitchError) as err:
        book_window(d, "mtu 9216\n", full=True, force=True)
    assert str(err.value) == (
        "switch book1: interrupted by SIGTERM during read, before the first change: pending "
        "state left by an earlier window was cleared, the running config was not changed"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, True)
    assert "begin" not in d.calls


def test_a_lock_that_cannot_be_removed_is_a_note_naming_it():
    d = Book("mtu 1500\n")

    def holder():
        raise SwitchError("book1", "session lost")

    d.lock_holder = holder
    lock = window_lock.WindowLock(d, "T1", 300)
    lock.held = True
    assert lock.release() == (
        "could not remove the window lock /var/lock/linerate.lock on the switch (session "
        "lost): remove it by hand (rm -rf /var/lock/linerate.lock) - the next window breaks it "
        "once its process is gone"
    )
    assert lock.held is False and lock.release() is None


def test_a_restore_names_ten_deletions_and_counts_the_rest_a_forced_one_lists_all():
    backup = "nv set system hostname leaf1\n"
    users = [f"nv set system aaa user u{i:02d} full-name U{i}" for i in range(1, 13)]
    answers = {"nv config show -o commands": backup + "".join(u + "\n" for u in users)}
    d, fake = make("nvue", "leaf1", answers)
    with pytest.raises(SwitchError) as err:
        run_apply(d, backup, full=True, check_mode=True)
    assert str(err.value) == (
        "switch leaf1: restoring this backup would delete 12 setting(s) outside the managed scope "
        "(QoS, PFC, ECN, MTU and speed of the data ports): " + "; ".join(users[:10]) + " (and 2 more); nothing is sent. If that is intended, restore with "
        "switch_fabric_restore_allow_deletions=true"
    )
    d, fake = make("nvue", "leaf1", answers)
    assert run_apply(d, backup, full=True, check_mode=True, force=True)["warnings"] == [
        "forced: the restore deletes 12 setting(s) outside the managed scope: " + "; ".join(users)
    ]


def test_a_failed_begin_over_a_config_someone_else_changed_leaves_it_and_says_so():
    d = Book("mtu 1500\n", fail={"begin": "no checkpoint space"}, reads=["mtu 1500\n", "mtu 1500\nhostname x\n"])
    with pytest.raises(SwitchError) as err:
        book_window(d)
    assert str(err.value) == (
        "switch book1: begin failed: no checkpoint space; ROLLBACK INCOMPLETE, the switch may be "
        "modified: the running config was changed by someone else meanwhile: left as it is"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert "undo" not in d.calls


# ---------------------------------------------------------------- the window lock's verdicts, whole


class LockedBook(Book):
    """A Book whose switch-side lock is in memory: ``holder`` the line in it ('' when free); ``take_answer``
    what mkdir says when the lock cannot be made; ``release_error`` a failure reading it back at the end."""

    def __init__(self, running, holder="", take_answer=None, release_error=None, age_s=0, timers=(), empty=False, **kw):
        super().__init__(running, **kw)
        self.holder, self.take_answer, self.release_error = holder, take_answer, release_error
        self.age_s, self.timers, self.empty = age_s, list(timers), empty  # the lock's age by the switch's clock

    def lock_take(self, line):
        if self.take_answer:
            return self.take_answer
        if self.holder or self.empty:
            return f"mkdir: cannot create directory '{self.lock_path}': File exists"
        self.holder, self.age_s = line, 0
        return ""

    def lock_read(self):
        return {"text": self.lock_holder(), "exists": bool(self.holder) or self.empty, "age_s": self.age_s if self.holder or self.empty else None}

    def window_timers(self, run):
        self.calls.append(f"window_timers {run}")
        return self.timers

    def lock_holder(self):
        if self.release_error and "begin" in self.calls:  # read back at the end of the window
            raise SwitchError(self.name, self.release_error)
        return self.holder

    def lock_remove(self):
        self.holder, self.empty = "", False


NOW = 1800000000.0


def test_a_restore_already_at_the_backup_keeps_the_warning_of_the_stale_lock_it_broke():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock as switch_lock

    old = switch_lock.Holder("ops", "elsewhere", 4242, "R1", NOW - 1000)
    d = LockedBook("mtu 1500\n", holder=old.line(), age_s=1000)
    wl = window_lock.WindowLock(d, "T1", 300, now=NOW)
    res = run_apply(d, "mtu 1500\n", full=True, lock=wl)
    assert res["changed"] is False and res["commands"] == []
    assert res["warnings"] == [
        "broke the stale window lock /var/lock/linerate.lock of ops@elsewhere (pid 4242, run R1, "
        "since 20270115T074320Z): it was taken 1000 s ago, longer than the confirm timer "
        "(300 s) plus 600 s"
    ]
    assert d.holder == ""  # ours, released at the end


def test_a_lock_the_switch_refuses_to_create_stops_the_window_exact():
    d = LockedBook("mtu 1500\n", take_answer="mkdir: cannot create directory '/var/lock/linerate.lock': Permission denied\nmore")
    with pytest.raises(SwitchError) as err:
        run_apply(d, "mtu 9216\n", ports=["p1"], post_check=False, lock=window_lock.WindowLock(d, "T1", 300))
    assert str(err.value) == (
        "switch book1: could not create the window lock /var/lock/linerate.lock on the switch: "
        "mkdir: cannot create directory '/var/lock/linerate.lock': Permission denied; nothing is "
        "sent"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert "begin" not in d.calls


def test_a_failed_window_whose_lock_cannot_be_removed_names_both():
    d = LockedBook("mtu 1500\n", fail={"begin": "no checkpoint space"}, release_error="session lost")
    with pytest.raises(SwitchError) as err:
        run_apply(d, "mtu 9216\n", ports=["p1"], post_check=False, lock=window_lock.WindowLock(d, "T1", 300))
    assert str(err.value) == (
        f"switch book1: begin failed: no checkpoint space; {ROLLED_BACK}; could not remove the "
        "window lock /var/lock/linerate.lock on the switch (session lost): remove it by hand "
        "(rm -rf /var/lock/linerate.lock) - the next window breaks it once its process is gone"
    )
    assert (err.value.rolled_back, err.value.changed) == (True, False)


def test_a_controller_lock_that_cannot_be_written_stops_the_window_exact(tmp_path):
    (tmp_path / "book1").write_text("a file where the switch's backup folder should be")
    d = LockedBook("mtu 1500\n")
    with pytest.raises(SwitchError) as err:
        run_apply(d, "mtu 9216\n", ports=["p1"], post_check=False, backup_dir=str(tmp_path))
    assert str(err.value) == (
        f"switch book1: lock {tmp_path}/book1/linerate.lock: cannot be written (File exists); the change window stops before any change, nothing is sent"
    )
    assert (err.value.rolled_back, err.value.changed) == (False, False)
    assert d.holder == "" and "begin" not in d.calls


def test_a_restore_never_deletes_what_the_backup_lacks_past_a_physical_interface():
    backup = "hostname leaf1\n!\ninterface Ethernet1/1\n   mtu 9214\n!\nend\n"
    running = (
        "hostname leaf1\n!\ninterface Ethernet1/1\n   mtu 9214\n!\ninterface Ethernet5/1\n   description spare\n"
        "!\nusername bob privilege 15 nopassword\n!\nend\n"
    )
    d, fake = make("eos", "leaf1", {"show running-config": running})
    with pytest.raises(SwitchError) as err:
        run_apply(d, backup, full=True, check_mode=True)
    assert "would delete 1 setting(s)" in str(err.value) and "username bob privilege 15 nopassword" in str(err.value)


def test_a_lock_taken_over_while_we_ran_is_left_with_a_note():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock as switch_lock

    d = LockedBook("mtu 1500\n")
    wl = window_lock.WindowLock(d, "T1", 300, now=NOW)
    wl.take()
    other = switch_lock.Holder("ops", "elsewhere", 4242, "R2", NOW)
    d.holder = other.line()  # ours was broken as stale by another window meanwhile
    assert wl.release() == (
        "the window lock /var/lock/linerate.lock was taken over by ops@elsewhere (pid 4242, run "
        "R2, since 20270115T080000Z) (ours was broken as stale): left as it is"
    )
    assert d.holder == other.line()


def test_the_controller_copy_breaks_a_stale_lock_with_a_warning_and_refuses_a_live_one(tmp_path):
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import lock as switch_lock

    (tmp_path / "linerate.lock").write_text(switch_lock.Holder("ops", "elsewhere", 4242, "R1", NOW - 1000).line() + "\n")
    d = LockedBook("mtu 1500\n")
    wl = window_lock.WindowLock(d, "T1", 300, controller_dir=str(tmp_path), now=NOW)
    wl.take()
    assert wl.warnings == [
        "broke the stale controller lock of ops@elsewhere (pid 4242, run R1, since "
        "20270115T074320Z): it was taken 1000 s ago, longer than the confirm timer (300 s) plus "
        "600 s"
    ]
    live = window_lock.WindowLock(LockedBook("mtu 1500\n"), "T2", 300, controller_dir=str(tmp_path), now=NOW, alive=lambda pid, start=None: True)
    live.me = switch_lock.Holder("ops", "other-host", 4343, "T2", NOW)
    with pytest.raises(SwitchError) as err:
        live.take()
    assert str(err.value) == (
        f"switch book1: another change window holds this switch: {wl.me.describe()} (lock "
        f"{tmp_path}/linerate.lock on this controller); nothing is sent. It ends with that "
        "window; it is broken by the next window only once no confirm timer of it runs on the "
        "switch and it is older than the confirm timer plus 600 s by the switch's clock, or its "
        "process is gone from this very controller (same machine id)"
    )


def test_the_confirm_timer_used_is_reported_to_a_tenth_of_a_second(monkeypatch):
    clock = iter([0.0, 100.04])
    monkeypatch.setattr(switch_window.time, "monotonic", lambda: next(clock))
    assert book_window(Book("mtu 1500\n"), confirm_timeout=120)["confirm_timer_used_s"] == 100.0


def test_recovery_is_not_restored_while_the_config_differs_even_with_nothing_pending():
    assert switch_window.recover(Toy(["other"]), "backup", nested=True) == (
        False,
        "running config differs from the backup; running config differs from the backup",
    )


def test_every_command_still_to_do_after_the_push_is_named():
    d = Book("mtu 1500\n")
    d.commit = lambda confirm_timeout: d.calls.append("commit")  # the push does not take
    with pytest.raises(SwitchError) as err:
        book_window(d, "mtu 9216\nspeed 400G\n")
    assert str(err.value).startswith("switch book1: read-back failed: config not at intent after push, still to do: mtu 9216; speed 400G; rolled back")
