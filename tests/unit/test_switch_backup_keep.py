"""Backup retention and the restore's two flags (issue 36 item 5): switch/backups.py prune_backups and the
switch_config module's backup_keep, accept_no_digest, allow_deletions and the refused force."""
import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from switch_testlib import make

from ansible_collections.linerate.fabric.plugins.module_utils.switch import backups
from ansible_collections.linerate.fabric.plugins.module_utils.switch.backups import BackupError, prune_backups

NVUE = "nv set system hostname leaf1\nnv set interface swp1 link mtu 9216\n"


def _write(tmp_path, stamps, label="window", platform="nvue", when=None):
    out = []
    for i, stamp in enumerate(stamps):
        p = backups.write_backup(str(tmp_path), "leaf1", platform, NVUE, stamp, label)
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
    os.utime(lock, (1_700_000_002, 1_700_000_002))   # taken before the backups of 00:02 on
    gone = prune_backups(str(tmp_path), "leaf1", "nvue", 1)
    assert gone == names[:1]    # 00:01 is a second before the lock: kept on the clock's granularity
    assert _left(tmp_path) == sorted(_with_digests(names[1:]) + [backups.LOCK_NAME])
    lock.unlink()
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == names[1:4]


def test_other_platforms_and_other_files_are_left(tmp_path):
    _write(tmp_path, ["20261101T000001Z", "20261101T000002Z"], platform="eos")
    nv = _write(tmp_path, ["20261101T000001Z", "20261101T000002Z"])
    (tmp_path / "leaf1" / "notes.txt").write_text("mine")
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == nv[:1]
    assert "notes.txt" in _left(tmp_path) and "20261101T000001Z.eos.cfg" in _left(tmp_path)
    assert prune_backups(str(tmp_path), "leaf2", "nvue", 1) == []   # no directory: nothing to do


@pytest.mark.parametrize("keep", [0, -1, True, "3", 2.0, None])
def test_a_keep_that_is_no_count_is_refused_naming_it(tmp_path, keep):
    names = _write(tmp_path, ["20261101T000001Z", "20261101T000002Z"])
    with pytest.raises(BackupError) as err:
        prune_backups(str(tmp_path), "leaf1", "nvue", keep)
    assert err.value.reason == (f"switch_fabric_backup_keep {keep!r} is not allowed (allowed: an integer >= 1, "
                                "the backups kept per switch)")
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
    assert names[0] not in _left(tmp_path)   # the backup went first: an orphan digest harms nothing


def test_a_backup_and_every_directory_made_for_it_are_private(tmp_path):
    p = backups.write_backup(str(tmp_path / "out" / "backups"), "leaf1", "nvue", NVUE, "20261101T000001Z")
    modes = {os.path.relpath(d, tmp_path): os.stat(d).st_mode & 0o777
             for d in (tmp_path / "out", tmp_path / "out" / "backups", tmp_path / "out" / "backups" / "leaf1")}
    assert modes == {"out": 0o700, "out/backups": 0o700, "out/backups/leaf1": 0o700}
    assert os.stat(p).st_mode & 0o777 == 0o600 and os.stat(p + ".sha256").st_mode & 0o777 == 0o600


# ---------------------------------------------------------------- the module

def _module(monkeypatch, capsys, args, answers=None, window=None):
    from ansible_collections.linerate.fabric.plugins.modules import switch_config
    d, fake = make("nvue", "leaf1", answers or {"nv config show -o commands": NVUE})
    d.close = lambda: None
    monkeypatch.setattr(switch_config, "make_driver", lambda p: d)
    calls = {}
    if window is not None:
        def run_apply(driver, want_text, **kw):
            calls.update(kw, want_text=want_text)
            return window(kw)
        monkeypatch.setattr(switch_config, "run_apply", run_apply)
    base = {"name": "leaf1", "platform": "nvue", "host": "127.0.1.1", "username": "admin", "password": "pw",
            "known_hosts": "/nonexistent"}
    with patch_module_args(dict(base, **args)):
        with pytest.raises(SystemExit):
            switch_config.main()
    return json.loads(capsys.readouterr().out), fake, calls


def _pushed(backup_path):
    def window(kw):
        return {"changed": True, "commands": ["nv set x"], "before": "", "after": "", "rolled_back": False,
                "backup_path": backup_path, "diff": {"before": "", "after": ""}}
    return window


def test_the_module_keeps_backup_keep_after_a_window_that_wrote_one(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(4)])
    taken = str(tmp_path / "leaf1" / names[-1])
    res, _fake, calls = _module(monkeypatch, capsys, {"config": NVUE, "backup_dir": str(tmp_path), "backup_keep": 2},
                                window=_pushed(taken))
    assert res["changed"] is True and res["backups_removed"] == names[:2]
    assert _left(tmp_path) == _with_digests(names[2:])
    assert calls["force"] is False   # a push deletes nothing outside the scope


def test_the_module_keeps_every_backup_without_backup_keep(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])
    res, _fake, _calls = _module(monkeypatch, capsys, {"config": NVUE, "backup_dir": str(tmp_path)},
                                 window=_pushed(str(tmp_path / "leaf1" / names[-1])))
    assert "backups_removed" not in res and _left(tmp_path) == _with_digests(names)


def test_the_module_removes_nothing_when_no_backup_was_written(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])
    res, _fake, _calls = _module(monkeypatch, capsys, {"config": NVUE, "backup_dir": str(tmp_path), "backup_keep": 1},
                                 window=_pushed(None))
    assert "backups_removed" not in res and _left(tmp_path) == _with_digests(names)


def test_a_backup_that_cannot_be_removed_is_a_warning_the_change_stands(tmp_path, monkeypatch, capsys):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])

    def refuse(*a, **kw):
        raise BackupError(str(tmp_path / "leaf1" / names[0]), "cannot be removed (Permission denied)")
    from ansible_collections.linerate.fabric.plugins.modules import switch_config
    monkeypatch.setattr(switch_config, "prune_backups", refuse)
    warned = []
    monkeypatch.setattr(switch_config.AnsibleModule, "warn", lambda self, text: warned.append(text))
    res, _fake, _calls = _module(monkeypatch, capsys, {"config": NVUE, "backup_dir": str(tmp_path), "backup_keep": 1},
                                 window=_pushed(str(tmp_path / "leaf1" / names[-1])))
    assert not res.get("failed") and res["changed"] is True
    assert warned == [f"switch leaf1: old backups not removed: backup {tmp_path}/leaf1/{names[0]}: cannot be removed "
                      "(Permission denied)"]


@pytest.mark.parametrize("keep", [0, -3])
def test_the_module_refuses_a_backup_keep_below_1_before_contact(tmp_path, monkeypatch, capsys, keep):
    res, fake, calls = _module(monkeypatch, capsys, {"config": NVUE, "backup_dir": str(tmp_path), "backup_keep": keep},
                               window=_pushed(None))
    assert res["failed"] is True and fake.sent == [] and calls == {}
    assert res["msg"] == (f"switch leaf1: backup_keep {keep} is not allowed (allowed: an integer >= 1, the backups "
                          "kept per switch); nothing was sent to the switch")


@pytest.mark.parametrize("force", [True, False, "yes"])
def test_the_module_refuses_force_naming_the_two_flags(tmp_path, monkeypatch, capsys, force):
    res, fake, calls = _module(monkeypatch, capsys, {"restore_backup": "latest", "backup_dir": str(tmp_path),
                                                     "force": force}, window=_pushed(None))
    assert res["failed"] is True and fake.sent == [] and calls == {} and res["changed"] is False
    assert res["msg"].startswith("switch leaf1: force is not allowed any more: it was split in two, accept_no_digest ")
    assert "switch_fabric_restore_accept_no_digest" in res["msg"]
    assert "switch_fabric_restore_allow_deletions" in res["msg"]


@pytest.mark.parametrize("flags,no_digest_ok,deletions", [
    ({}, False, False),
    ({"accept_no_digest": True}, True, False),
    ({"allow_deletions": True}, False, True),
    ({"accept_no_digest": True, "allow_deletions": True}, True, True)])
def test_each_restore_flag_allows_only_its_own(tmp_path, monkeypatch, capsys, flags, no_digest_ok, deletions):
    (tmp_path / "leaf1").mkdir()
    (tmp_path / "leaf1" / "20261101T000001Z.nvue.cfg").write_text(NVUE)   # no digest
    res, fake, calls = _module(monkeypatch, capsys, dict({"restore_backup": "latest", "backup_dir": str(tmp_path)},
                                                         **flags), window=_pushed(None))
    if not no_digest_ok:
        assert res["failed"] is True and calls == {} and fake.sent == []
        assert "restore it with switch_fabric_restore_accept_no_digest=true" in res["msg"]
        return
    assert not res.get("failed") and calls["force"] is deletions and calls["full"] is True
    assert res["restore_warnings"] == [f"{tmp_path}/leaf1/20261101T000001Z.nvue.cfg has no digest: restored without "
                                       "one because switch_fabric_restore_accept_no_digest is true"]


def test_the_backup_a_cut_off_windows_journal_names_is_kept(tmp_path):
    """switch/journal.py's window.json names the backup the next run recovers from: never removed."""
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(5)])
    journal = tmp_path / "leaf1" / backups.JOURNAL_NAME
    journal.write_text(json.dumps({"switch": "leaf1", "backup_path": str(tmp_path / "leaf1" / names[1]),
                                   "step": "push"}))
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == [names[0], names[2], names[3]]
    assert _left(tmp_path) == sorted(_with_digests([names[1], names[4]]) + [backups.JOURNAL_NAME])


@pytest.mark.parametrize("text", ["{not json", json.dumps({"backup_path": None}), json.dumps(["x"])])
def test_an_unreadable_journal_keeps_every_backup(tmp_path, text):
    names = _write(tmp_path, [f"20261101T00000{i}Z" for i in range(3)])
    (tmp_path / "leaf1" / backups.JOURNAL_NAME).write_text(text)
    assert prune_backups(str(tmp_path), "leaf1", "nvue", 1) == []
    assert set(_with_digests(names)) <= set(_left(tmp_path))
