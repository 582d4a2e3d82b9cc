"""host_files: a role's files, directories and units in one call; only the delta is written,
check mode changes nothing, a failing validate leaves the old file, units enabled/started once."""

import os
import stat

from ansible_collections.linerate.fabric.plugins.module_utils.host import hostfiles
from ansible_collections.linerate.fabric.plugins.modules import host_files
from module_harness import Tools, run_module


class Systemd:
    """systemctl of a host: units enabled/active, every call recorded by Tools."""

    def __init__(self, enabled=(), active=(), fail=None):
        self.enabled, self.active, self.fail = set(enabled), set(active), fail

    def __call__(self, args):
        if self.fail and args[0] == self.fail:
            return 1, "", f"Failed to {args[0]} unit: Unit file {args[-1]} does not exist.\n"
        if args[0] == "is-enabled":
            return (0, "enabled\n", "") if args[1] in self.enabled else (1, "disabled\n", "")
        if args[0] == "is-active":
            return (0, "active\n", "") if args[1] in self.active else (3, "inactive\n", "")
        if args[0] == "enable":
            self.enabled.add(args[1])
        elif args[0] == "start":
            self.active.add(args[1])
        return 0, "", ""


def shell_check(args):
    with open(args[-1], encoding="utf-8") as f:
        text = f.read()
    return (2, "", f"{args[-1]}: 1: Syntax error: end of file unexpected\n") if "if [" in text and "fi" not in text else (0, "", "")


def run(capsys, args, systemd=None, check=False, diff=False):
    tools = Tools({"systemctl": systemd or Systemd(), "sh": shell_check})
    return run_module(host_files.main, args, tools, capsys, check=check, diff=diff), tools.calls


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_writes_only_what_differs_and_second_run_is_unchanged(tmp_path, capsys):
    same, other = tmp_path / "same.conf", tmp_path / "other.conf"
    same.write_text("A=1\n")
    os.chmod(same, 0o644)
    other.write_text("B=old\n")
    os.chmod(other, 0o644)
    args = {
        "directories": [{"path": str(tmp_path / "d")}],
        "files": [
            {"path": str(same), "content": "A=1\n"},
            {"path": str(other), "content": "B=new\n"},
            {"path": str(tmp_path / "d" / "new.sh"), "content": "echo hi\n", "mode": "0755"},
        ],
    }
    result, calls = run(capsys, args)
    assert result["changed"] is True
    assert result["files"] == [{"path": str(other), "action": "updated"}, {"path": str(tmp_path / "d" / "new.sh"), "action": "created"}]
    assert result["created"] == [str(tmp_path / "d" / "new.sh")]
    assert result["directories"] == [{"path": str(tmp_path / "d"), "action": "created"}]
    assert other.read_text() == "B=new\n"
    assert mode(tmp_path / "d" / "new.sh") == 0o755
    assert calls == []  # no units: systemctl is never asked
    again, _ = run(capsys, args)
    assert again["changed"] is False and again["files"] == [] and again["directories"] == []


def test_mode_only_difference_is_a_change(tmp_path, capsys):
    f = tmp_path / "x.conf"
    f.write_text("x\n")
    os.chmod(f, 0o600)
    result, _ = run(capsys, {"files": [{"path": str(f), "content": "x\n", "mode": "0644"}]})
    assert result["changed"] is True and result["files"] == [{"path": str(f), "action": "attributes"}]
    assert mode(f) == 0o644


def test_check_mode_reports_and_changes_nothing_with_diff(tmp_path, capsys):
    f = tmp_path / "nccl.conf"
    f.write_text("NCCL_IB_GID_INDEX=3\n")
    args = {
        "directories": [{"path": str(tmp_path / "new")}],
        "files": [{"path": str(f), "content": "NCCL_IB_GID_INDEX=5\n"}, {"path": str(tmp_path / "gone"), "state": "absent"}],
    }
    result, _ = run(capsys, args, check=True, diff=True)
    assert result["changed"] is True
    assert result["diff"] == [{"before_header": str(f), "after_header": str(f), "before": "NCCL_IB_GID_INDEX=3\n", "after": "NCCL_IB_GID_INDEX=5\n"}]
    assert f.read_text() == "NCCL_IB_GID_INDEX=3\n"
    assert not (tmp_path / "new").exists()


def test_diff_only_under_diff(tmp_path, capsys):
    result, _ = run(capsys, {"files": [{"path": str(tmp_path / "a"), "content": "a\n"}]})
    assert "diff" not in result


def test_absent_removes_and_reports(tmp_path, capsys):
    f = tmp_path / "nvidia-peermem.conf"
    f.write_text("nvidia_peermem\n")
    result, _ = run(capsys, {"files": [{"path": str(f), "state": "absent"}]}, diff=True)
    assert result["changed"] is True and not f.exists()
    assert result["files"] == [{"path": str(f), "action": "removed"}]
    assert result["diff"][0]["before"] == "nvidia_peermem\n" and result["diff"][0]["after"] == ""
    again, _ = run(capsys, {"files": [{"path": str(f), "state": "absent"}]})
    assert again["changed"] is False


def test_failing_validate_leaves_the_old_file_and_names_it(tmp_path, capsys):
    f = tmp_path / "nccl.sh"
    f.write_text("export A=1\n")
    result, calls = run(capsys, {"files": [{"path": str(f), "content": "if [ -n x ]; then\n", "validate": "sh -n %s"}]})
    assert result["failed"] is True
    assert result["msg"].startswith(f"{f}: the new content fails its check (sh -n %s)")
    assert "Syntax error" in result["stderr"]
    assert f.read_text() == "export A=1\n"
    assert calls[0][:2] == ["sh", "-n"] and calls[0][2] != str(f)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".linerate")]


def test_passing_validate_installs(tmp_path, capsys):
    f = tmp_path / "nccl.sh"
    result, calls = run(capsys, {"files": [{"path": str(f), "content": "export A=1\n", "validate": "sh -n %s"}]})
    assert result["changed"] is True and f.read_text() == "export A=1\n"
    assert [c[:2] for c in calls] == [["sh", "-n"]]


def test_validate_without_placeholder_is_refused(tmp_path, capsys):
    result, _ = run(capsys, {"files": [{"path": str(tmp_path / "a"), "content": "a\n", "validate": "sh -n"}]})
    assert result["failed"] is True and "is not allowed (allowed: a command with %s" in result["msg"]
    assert not (tmp_path / "a").exists()


def test_unit_file_change_reloads_then_enables_and_starts(tmp_path, capsys, monkeypatch):
    # A changed file under a systemd unit directory (here one under tmp_path) asks for daemon-reload.
    root = tmp_path / "etc" / "systemd" / "system"
    root.mkdir(parents=True)
    systemd = Systemd()
    monkeypatch.setattr(hostfiles, "UNIT_DIRS", (str(root) + "/",))
    args = {
        "files": [{"path": str(root / "linerate-roce-qos.service"), "content": "[Unit]\n"}],
        "units": [{"name": "linerate-roce-qos.service", "state": "started"}],
    }
    result, calls = run(capsys, args, systemd=systemd)
    assert calls == [
        ["systemctl", "daemon-reload"],
        ["systemctl", "is-enabled", "linerate-roce-qos.service"],
        ["systemctl", "is-active", "linerate-roce-qos.service"],
        ["systemctl", "enable", "linerate-roce-qos.service"],
        ["systemctl", "start", "linerate-roce-qos.service"],
    ]
    assert result["changed"] is True
    assert result["units"]["linerate-roce-qos.service"] == {"before": {"enabled": False, "active": False}, "after": {"enabled": True, "active": True}}
    again, calls = run(capsys, args, systemd=systemd)
    assert again["changed"] is False and again["commands"] == []
    assert ["systemctl", "daemon-reload"] not in calls


def test_enabled_unit_is_not_started_without_state(tmp_path, capsys):
    result, calls = run(capsys, {"units": [{"name": "linerate-rdma-netdev.service"}]})
    assert result["commands"] == [["systemctl", "enable", "linerate-rdma-netdev.service"]]
    assert ["systemctl", "start", "linerate-rdma-netdev.service"] not in calls


def test_check_mode_names_unit_commands_without_running_them(tmp_path, capsys):
    systemd = Systemd()
    result, calls = run(capsys, {"units": [{"name": "u.service", "state": "started"}]}, systemd=systemd, check=True)
    assert result["changed"] is True
    assert result["commands"] == [["systemctl", "enable", "u.service"], ["systemctl", "start", "u.service"]]
    assert not systemd.enabled and not systemd.active
    assert [c[1] for c in calls] == ["is-enabled", "is-active"]


def test_failing_enable_fails_with_the_command(tmp_path, capsys):
    result, _ = run(capsys, {"units": [{"name": "u.service"}]}, systemd=Systemd(fail="enable"))
    assert result["failed"] is True
    assert result["msg"] == "systemctl enable u.service exited 1: Failed to enable unit: Unit file u.service does not exist."
    assert result["cmd"] == ["systemctl", "enable", "u.service"]


def test_relative_path_is_refused(capsys):
    result, _ = run(capsys, {"files": [{"path": "etc/nccl.conf", "content": "x"}]})
    assert result["failed"] is True
    assert result["msg"] == "files[].path: 'etc/nccl.conf' is not allowed (allowed: an absolute path)"


def test_missing_directory_fails_clearly(tmp_path, capsys):
    result, _ = run(capsys, {"files": [{"path": str(tmp_path / "no" / "f"), "content": "x"}]})
    assert result["failed"] is True and result["msg"] == f"{tmp_path / 'no' / 'f'}: its directory {tmp_path / 'no'} does not exist"


def test_check_mode_validates_a_file_whose_directory_the_run_would_create(tmp_path, capsys):
    # Preview of a fresh host: the script's directory is created by the same call in a real run.
    script = tmp_path / "linerate" / "rdma-netdev.sh"
    args = {
        "directories": [{"path": str(tmp_path / "linerate")}],
        "files": [{"path": str(script), "content": "ip link set dev x up\n", "validate": "sh -n %s"}],
    }
    result, calls = run(capsys, args, check=True)
    assert result["changed"] is True and result["created"] == [str(script)]
    assert [c[:2] for c in calls] == [["sh", "-n"]]
    assert not (tmp_path / "linerate").exists()
