"""scripts/check_commit_subject.py, the commit-msg hook: subjects of at most 72 characters (issue 39)."""

import importlib.util
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check_commit_subject.py"
_spec = importlib.util.spec_from_file_location("check_commit_subject", SCRIPT)
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


def test_a_short_subject_with_a_body_passes():
    assert hook.problems("rollout: waves hold the place of a lost node\n\nThe detail.\n") == []
    assert hook.problems("x" * 72 + "\n") == []


def test_a_subject_over_72_is_refused_with_its_length():
    (p,) = hook.problems("x" * 73 + "\n\nbody\n")
    assert "73 characters" in p and "at most 72" in p


def test_the_body_is_separated_by_a_blank_line():
    assert hook.problems("subject\nbody right under it\n") == ["the second line is not blank (subject, blank line, body)"]


def test_git_comments_and_the_scissors_are_not_the_message():
    msg = "# Please enter the commit message\n\nsubject\n\nbody\n" + hook.SCISSORS + "\n" + "y" * 200 + "\n"
    assert hook.problems(msg) == []
    assert hook.problems("# only comments\n\n") == ["the message is empty"]


def test_the_hook_exits_non_zero_on_a_long_subject(tmp_path):
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.write_text("z" * 100 + "\n", encoding="utf-8")
    good.write_text("short\n", encoding="utf-8")
    r = subprocess.run([sys.executable, str(SCRIPT), str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "100 characters" in r.stderr
    assert subprocess.run([sys.executable, str(SCRIPT), str(good)]).returncode == 0
