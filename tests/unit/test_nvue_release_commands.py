"""Every command the NVUE driver sends exists on the Cumulus Linux release it is sent to.

The releases, and what each one has, come from the NVUE reference the lab's simulator is built on
(lab/switchsim/nvue_reference.json: ``shows``, ``paths`` and ``configs``, each with ``since`` and
``until``). Per release the driver runs a whole change window and every read against that release's
simulator; each command it sent is then looked up in the reference:

- a command that is no form of the reference is invented;
- a form the release does not have may be sent only as a probe the switch refuses, where the driver
  then reads the same thing through a form the release has (``ERROR_COUNTER_FORMS``,
  ``PHY_HEALTH_FORMS``), or where the capability is newer than the release (``since``): the driver
  reports it unread (transceivers before 5.11, physical-layer errors before 5.10);
- a step that fails on a command the reference gives the release, or on one the reference removed
  (``until``) without the driver having another form, fails this test naming the command.

So a removal entered in the reference (an ``until``) fails here by the command's name until the driver
sends what replaced it (test_a_removal_in_the_reference_fails_by_name).
"""

import json
import re
import shlex

import pytest

from switch_testlib import SimSwitch, driver_for, render  # puts lab/switchsim on sys.path
import sim_nvue  # noqa: E402

from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError  # noqa: E402

PORTS = ["swp1", "swp2"]
_PLACEHOLDERS = dict(sim_nvue._PLACEHOLDERS, **{"<minutes>": r"\d+", "<revision>": r"\d+"})


def _rel(value):
    return tuple(int(x) for x in str(value).split(".")[:2])


def _on(entry, release):
    """Whether the reference gives ``release`` this entry (``since`` <= release <= ``until``)."""
    return _rel(entry["since"]) <= _rel(release) and ("until" not in entry or _rel(entry["until"]) >= _rel(release))


def _pattern(form):
    return " ".join(_PLACEHOLDERS.get(t, re.escape(t)) for t in form.split(" "))


def reference_entries(line, ref):
    """The reference entries ``line`` is a form of (every release's), as (kind, entry); [] when invented."""
    if line.startswith(("nv set ", "nv unset ")):
        toks = shlex.split(line)
        path = " ".join(toks[2:-1] if toks[1] == "set" else toks[2:])
        found = []
        for e in ref["paths"]:
            if not re.fullmatch(_pattern(e["path"]), path):
                continue
            spec = ref["value_types"][e["value"]] if isinstance(e["value"], str) else e["value"]
            if toks[1] == "unset" or sim_nvue.check_value(spec, toks[-1], path.split()[-1]) is None:
                found.append(("paths", e))
        return found
    if line.startswith("nv show "):
        bare = re.sub(r" (-o|--output) \S+$", "", line)
        return [("shows", e) for e in ref["shows"] if re.fullmatch(_pattern(e["command"]), bare)]
    if line.startswith("nv config "):
        return [("configs", e) for e in ref["configs"] if re.fullmatch(_pattern(e["command"]), line)]
    return []


class Recorder:
    """The release's simulator behind Driver.send, noting which driver step sent what and what came back."""

    def __init__(self, sim):
        self.sim, self.step, self.sent = sim, None, []

    def __call__(self, command, timeout=None):
        out = self.sim(command, timeout)
        self.sent.append((self.step, command, out))
        return out


def drive(tmp_path, monkeypatch, release):
    """The NVUE driver through a change window and every read on ``release``'s simulator:
    ([(step, command, answer)], {step: SwitchError raised})."""
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    sim = SimSwitch(tmp_path, "nvue", PORTS)
    sim.sw.spec["nvue_release"] = release
    d = driver_for("nvue", "sw", host="127.0.1.9", username="u", password="p")
    rec = d.send = Recorder(sim)
    raised = {}

    def push():
        want = d.parse(render("nvue", PORTS, switch_fabric_nvue_release=release))
        have = d.parse(d.get_running())
        d.push(d.commands(want, have, d.managed_scope(want, PORTS)))

    steps = [
        ("pending", d.pending),
        ("begin", lambda: d.begin("linerate-test")),
        ("push", push),
        ("commit", lambda: d.commit(300)),
        ("confirm", d.confirm),
        ("oper", lambda: d.oper(PORTS)),
        ("qos_counters", lambda: d.qos_counters(PORTS)),
        ("error_counters", lambda: d.error_counters(PORTS)),
        ("pfcwd_storms", lambda: d.pfcwd_storms(PORTS)),
        ("transceivers", lambda: d.transceivers(PORTS)),
        ("phy_errors", lambda: d.phy_errors(PORTS)),
        ("lldp", d.lldp_neighbors),
        ("abort", d.abort),
        ("rollback", d.rollback),
    ]
    for name, step in steps:
        rec.step = name
        try:
            step()
        except SwitchError as exc:
            raised[name] = exc
    return rec.sent, raised


def audit(sent, raised, release, ref):
    """What the driver sent on ``release`` that the reference does not give it: one line per command."""
    problems = []
    for step, command, answer in sent:
        entries = reference_entries(command, ref)
        if not entries:
            problems.append(f"{release} {step}: {command!r} is no form of the NVUE reference")
            continue
        if any(_on(e, release) for _k, e in entries):
            continue
        refused = answer.startswith("Error:")
        newer = all(_rel(e["since"]) > _rel(release) for _k, e in entries)
        if refused and step not in raised:
            continue  # a probe the switch refused; the step read the same through a form the release has
        if refused and newer:
            continue  # a capability newer than the release: the driver reports it unread
        gone = sorted({e["until"] for _k, e in entries if "until" in e})
        why = f"removed after {', '.join(gone)}" if gone else f"since {entries[0][1]['since']}"
        problems.append(f"{release} {step}: {command!r} does not exist on {release} ({why})")
    for step, exc in raised.items():
        failed = [c for s, c, a in sent if s == step and a.startswith("Error:")]
        if not failed or any(any(_on(e, release) for _k, e in reference_entries(c, ref)) for c in failed):
            problems.append(f"{release} {step}: the driver failed on a release that has what it reads: {exc}")
    return problems


@pytest.mark.parametrize("release", sim_nvue.load_reference()["releases"])
def test_every_command_the_nvue_driver_sends_exists_on_the_release(tmp_path, monkeypatch, release):
    ref = sim_nvue.load_reference()
    sent, raised = drive(tmp_path, monkeypatch, release)
    assert not audit(sent, raised, release, ref), "\n".join(audit(sent, raised, release, ref))
    # the steps that may fail are the capabilities the release lacks, and nothing else
    assert sorted(raised) == sorted([s for s, since in (("transceivers", "5.11"), ("phy_errors", "5.10")) if _rel(release) < _rel(since)])
    # the error counters come from `counters` (5.5.0+) on every release of the reference; link stats stays unsent
    counters = [c for s, c, _a in sent if s == "error_counters"]
    assert counters == ["nv show interface"] + [f"nv show interface {p} counters" for p in PORTS]


def _with(ref, command, **change):
    return dict(ref, shows=[dict(e, **change) if e["command"] == command else e for e in ref["shows"]])


def test_a_removal_in_the_reference_fails_by_name(tmp_path, monkeypatch):
    """An ``until`` entered for a form the driver has no other form for: the release's simulator refuses it
    as NVUE refuses a path it lacks, and the audit names the command and the release."""
    ref = _with(sim_nvue.load_reference(), "nv show interface <interface-id> qos roce status", until="5.14")
    monkeypatch.setattr(sim_nvue, "load_reference", lambda path=None: json.loads(json.dumps(ref)))
    sent, raised = drive(tmp_path, monkeypatch, "5.15")
    answers = {c: a for _s, c, a in sent}
    assert answers["nv show interface swp1 qos roce status"] == "Error: The requested item does not exist."
    problems = audit(sent, raised, "5.15", ref)
    assert "5.15 oper: 'nv show interface swp1 qos roce status' does not exist on 5.15 (removed after 5.14)" in problems
    # the release before the removal is untouched
    (tmp_path / "old").mkdir()
    sent, raised = drive(tmp_path / "old", monkeypatch, "5.14")
    assert audit(sent, raised, "5.14", ref) == []


def test_a_removed_counters_form_falls_back_to_link_stats(tmp_path, monkeypatch):
    """Were ``counters`` removed, the release's simulator refuses it and the driver reads link stats, which that
    release has: no problem, and the probe is sent once (the answered form is kept for the next port)."""
    ref = _with(sim_nvue.load_reference(), "nv show interface <interface-id> counters", until="5.16")
    monkeypatch.setattr(sim_nvue, "load_reference", lambda path=None: json.loads(json.dumps(ref)))
    sent, raised = drive(tmp_path, monkeypatch, "5.17")
    assert audit(sent, raised, "5.17", ref) == []
    assert [c for s, c, _a in sent if s == "error_counters"] == [
        "nv show interface",
        "nv show interface swp1 counters",
        "nv show interface swp1 link stats",
        "nv show interface swp2 link stats",
    ]


def test_an_invented_command_is_named():
    ref = sim_nvue.load_reference()
    assert reference_entries("nv show interface swp1 link counters", ref) == []
    assert audit([("error_counters", "nv show interface swp1 link counters", "x")], {}, "5.17", ref) == [
        "5.17 error_counters: 'nv show interface swp1 link counters' is no form of the NVUE reference"
    ]
    # the value picks the entry: ecn enable is 5.9 - 5.14, enabled 5.15 on
    line = "nv set qos congestion-control linerate traffic-class 3 ecn enable"
    assert [e["until"] for _k, e in reference_entries(line, ref)] == ["5.14"]
    assert audit(
        [("push", line, "Error: 'enable' is not one of ['enabled', 'disabled'] (at 'ecn')")], {"push": SwitchError("sw", "rejected")}, "5.15", ref
    ) == [f"5.15 push: {line!r} does not exist on 5.15 (removed after 5.14)"]
