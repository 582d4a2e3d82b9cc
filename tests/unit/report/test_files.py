"""The report directory and ``latest`` written atomically, private, and never half (issue 36 item 5):
report/files.py and the verify_report action's failure when a report cannot be written."""

import errno
import json
import os
import stat
from unittest import mock

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.report import files as rf
from ansible_collections.linerate.fabric.plugins.module_utils.report import report

FILES = {
    "report.json": '{"passed": true}\n',
    "summary.md": "# Fabric verification: PASSED\n",
    "report.html": "<html></html>\n",
    "junit.xml": "<testsuites/>\n",
    "heatmap.svg": "<svg/>\n",
}


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def _tree(d):
    return sorted(os.listdir(d))


def test_a_report_is_private_complete_and_latest_names_it(tmp_path):
    reports = tmp_path / "out" / "reports"
    out = rf.publish(str(reports), "20261202T120000Z", FILES)
    assert out == str(reports / "20261202T120000Z")
    assert os.readlink(reports / "latest") == "20261202T120000Z"
    assert _mode(reports) == 0o700 and _mode(tmp_path / "out") == 0o700 and _mode(out) == 0o700
    assert {n: (open(os.path.join(out, n)).read(), _mode(os.path.join(out, n))) for n in FILES} == {n: (t, 0o600) for n, t in FILES.items()}
    assert _tree(reports) == ["20261202T120000Z", "latest"]  # no temporary name left


def test_an_existing_reports_dir_is_made_private(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir(mode=0o755)
    os.chmod(reports, 0o755)
    rf.publish(str(reports), "20261202T120000Z", FILES)
    assert _mode(reports) == 0o700


def test_the_same_stamp_twice_gets_its_own_directory_and_moves_latest(tmp_path):
    first = rf.publish(str(tmp_path), "20261202T120000Z", FILES)
    second = rf.publish(str(tmp_path), "20261202T120000Z", dict(FILES, **{"report.json": "2\n"}))
    third = rf.publish(str(tmp_path), "20261202T120000Z", FILES)
    assert [os.path.basename(p) for p in (first, second, third)] == ["20261202T120000Z", "20261202T120000Z-2", "20261202T120000Z-3"]
    assert os.readlink(tmp_path / "latest") == "20261202T120000Z-3"
    assert open(os.path.join(first, "report.json")).read() == FILES["report.json"]  # never replaced
    assert open(os.path.join(second, "report.json")).read() == "2\n"


def _full_disk_at(name, monkeypatch):
    real = rf.write_private

    def write(path, text):
        if os.path.basename(path) == name:
            with open(path, "w") as f:  # a part of it, as a full disk leaves it
                f.write(text[:3])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, text)

    monkeypatch.setattr(rf, "write_private", write)


@pytest.mark.parametrize("name", ["report.json", "junit.xml", "heatmap.svg"])
def test_a_failed_write_keeps_the_previous_report_and_latest(tmp_path, monkeypatch, name):
    before = rf.publish(str(tmp_path), "20261202T110000Z", FILES)
    _full_disk_at(name, monkeypatch)
    with pytest.raises(rf.ReportWriteError) as err:
        rf.publish(str(tmp_path), "20261202T120000Z", dict(FILES, **{"report.json": '{"passed": false}\n'}))
    assert err.value.path.endswith(name)
    assert "No space left on device" in str(err.value)
    assert "nothing of this report was kept, the earlier reports and latest are as they were" in str(err.value)
    assert _tree(tmp_path) == ["20261202T110000Z", "latest"]  # no half directory, no temporary one
    assert os.readlink(tmp_path / "latest") == os.path.basename(before)
    assert open(tmp_path / "latest" / "report.json").read() == FILES["report.json"]


def test_latest_that_cannot_be_replaced_keeps_nothing_of_the_new_run(tmp_path, monkeypatch):
    rf.publish(str(tmp_path), "20261202T110000Z", FILES)
    real = os.replace

    def replace(src, dst):
        if os.path.basename(dst) == "latest":
            raise OSError(errno.EROFS, "Read-only file system")
        return real(src, dst)

    monkeypatch.setattr(rf.os, "replace", replace)
    with pytest.raises(rf.ReportWriteError) as err:
        rf.publish(str(tmp_path), "20261202T120000Z", FILES)
    assert err.value.path == str(tmp_path / "latest") and "Read-only file system" in err.value.reason
    assert _tree(tmp_path) == ["20261202T110000Z", "latest"]
    assert os.readlink(tmp_path / "latest") == "20261202T110000Z"


def test_latest_is_replaced_only_after_the_report_is_complete(tmp_path, monkeypatch):
    """At the moment ``latest`` changes, the directory it names holds every file whole."""
    seen = []
    real = os.replace

    def replace(src, dst):
        if os.path.basename(dst) == "latest":
            target = os.path.join(tmp_path, os.readlink(src))
            seen.append({n: open(os.path.join(target, n)).read() for n in sorted(os.listdir(target))})
        return real(src, dst)

    monkeypatch.setattr(rf.os, "replace", replace)
    rf.publish(str(tmp_path), "20261202T120000Z", FILES)
    assert seen == [dict(sorted(FILES.items()))]


def test_an_interrupt_while_writing_keeps_nothing_and_is_raised_as_it_is(tmp_path, monkeypatch):
    rf.publish(str(tmp_path), "20261202T110000Z", FILES)

    def interrupted(path, text):
        raise KeyboardInterrupt

    monkeypatch.setattr(rf, "write_private", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rf.publish(str(tmp_path), "20261202T120000Z", FILES)
    assert _tree(tmp_path) == ["20261202T110000Z", "latest"]


def test_a_killed_writers_temporary_directory_is_removed_a_live_ones_kept(tmp_path):
    dead, live = tmp_path / ".20261202T100000Z.41.partial", tmp_path / ".20261202T100000Z.42.partial"
    for d in (dead, live):
        d.mkdir()
        (d / "report.json").write_text("{")
    assert rf.remove_dead_partials(str(tmp_path), alive=lambda pid: pid == 42) == [dead.name]
    assert _tree(tmp_path) == [live.name]
    (tmp_path / "20261202T100000Z").mkdir()  # a run directory is never taken for a temporary one
    assert rf.remove_dead_partials(str(tmp_path), alive=lambda pid: False) == [live.name]
    assert _tree(tmp_path) == ["20261202T100000Z"]


def test_a_file_is_never_written_over(tmp_path):
    (tmp_path / "x").write_text("old")
    with pytest.raises(FileExistsError):
        rf.write_private(str(tmp_path / "x"), "new")
    assert (tmp_path / "x").read_text() == "old"


def test_write_reports_writes_every_file_through_the_atomic_path(tmp_path):
    doc = report.build_report([], {"passed": True, "errors": 0, "warnings": 0}, {}, {"name": "dc1"})
    files = report.write_reports(doc, str(tmp_path / "reports"))
    assert os.readlink(tmp_path / "reports" / "latest") == os.path.basename(files["dir"])
    assert sorted(os.listdir(files["dir"])) == sorted(FILES)
    assert all(_mode(files[k]) == 0o600 for k in ("json", "markdown", "html", "junit", "heatmap"))
    assert json.load(open(files["json"]))["fabric"]["name"] == "dc1"


def test_the_action_fails_saying_the_report_was_not_written(tmp_path, monkeypatch):
    """A report that cannot be written fails the run, naming the file and the cause; latest stays."""
    from ansible_collections.linerate.fabric.plugins.action.verify_report import ActionModule
    from checks.test_rdma import NODES, PORTS
    from checks.test_plans import FABRIC

    reports = tmp_path / "reports"
    rf.publish(str(reports), "20261202T110000Z", FILES)
    _full_disk_at("summary.md", monkeypatch)
    hostvars = {
        n: {"rdma_ports": PORTS[n], "verify_fabric_not_verified": {"task": "Check that the node answers", "msg": "unreachable", "unreachable": True}}
        for n in NODES
    }
    task = mock.MagicMock()
    task.args = {
        "nodes": [],
        "fabric": FABRIC,
        "scope": NODES,
        "probes": {"results": []},
        "switch_scope": [],
        "reports_dir": str(reports),
        "fail": False,
        "meta": {"phase_marks": {}},
    }
    task.async_val, task.check_mode = 0, False
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        res = action.run(task_vars={"hostvars": hostvars})
    assert res["failed"] is True and res["report_files"] == {}
    assert res["msg"].startswith("verify_report: the report could not be written: ")
    assert "summary.md: cannot be written (No space left on device)" in res["msg"]
    assert os.readlink(reports / "latest") == "20261202T110000Z"
    assert _tree(reports) == ["20261202T110000Z", "latest"]


def test_the_tuned_file_and_its_history_are_private(tmp_path, capsys):
    """tuned.json lives in the durable state too: 0600 in a 0700 directory (issue 36 item 5)."""
    from ansible_collections.linerate.fabric.plugins.modules import nccl_tuned_file
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tuned
    from module_harness import Tools, run_module

    path = tmp_path / "out" / "nccl" / "tuned.json"
    res = run_module(nccl_tuned_file.main, {"path": str(path), "document": nccl_tuned.tuned_document([], {"n": 1})}, Tools({}), capsys)
    assert res["changed"] is True
    assert _mode(path) == 0o600 and _mode(tmp_path / "out" / "nccl" / "tuned.history.json") == 0o600
    assert _mode(tmp_path / "out" / "nccl") == 0o700 and _mode(tmp_path / "out") == 0o700  # parents too
