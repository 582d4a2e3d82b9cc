"""What every switch platform driver does, asserted once for NVUE, SONiC and EOS (issue 39; napalm's shared
getter tests are the model).

Each driver runs its real ``send()`` over the platform's in-process simulator (switch_testlib.SimConn), so
the contract is met by the commands each platform really prints and accepts:

- read: the running config parses into facts; the rendered intent parses with the same parser; the full
  scope's view is text; the reads return the shapes of base.py's model (``LockState``, ``PortOper``,
  ``Storm``, ``Lossless``, parsers/lldp.py's ``LldpTable``).
- render and diff: a factory switch needs commands; after the window none are left (idempotent: a second
  window is ``changed: false`` and sends nothing that writes); check mode changes nothing.
- window phases: begin, push, commit, confirm in that order, the lock taken and released, nothing pending.
- failure modes: a port name or an intent outside the managed scope is refused before anything is sent;
  a command the switch rejects mid-push ends at the backup with nothing pending.

The per-platform files (tests/unit/switch/test_nvue.py, switch/test_sonic.py, switch/test_eos.py) assert
each platform's exact commands; tests/unit/test_switch_faults.py every fault at every step.
"""

import re

import pytest

from switch_testlib import arm, render, sim_conn_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import DRIVERS
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

PLATFORMS = ("nvue", "sonic", "eos")
PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}
# a command of each platform's push that the simulator can be made to reject (test_switch_faults.PUSH)
PUSH = {
    "nvue": r"^nv set ",
    "sonic": r"^sudo (config interface|sonic-db-cli)",
    "eos": r"^(qos map|interface |mtu |speed |qos trust|priority-flow-control|tx-queue|random-detect)",
}
# what changes each platform's configuration (or arms its rollback), in its own commands
WRITES = {
    "nvue": r"^nv (set|unset|config (apply|detach))\b",
    "sonic": r"^sudo (config (interface|checkpoint|save|rollback|pfcwd)|sonic-db-cli CONFIG_DB h(set|del)|systemd-run)\b",
    "eos": r"^(configure session|commit timer|write memory)\b",
}
# the window's phases, each one Driver method, in the order the window calls them
PHASES = ("begin", "push", "commit", "confirm")


@pytest.fixture(params=PLATFORMS)
def switch(request, tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    platform = request.param
    d, sim = sim_conn_driver(tmp_path, platform, PORTS[platform])
    return platform, d, sim


def window(d, platform, **kw):
    kw.setdefault("confirm_timeout", 300)
    return run_apply(d, render(platform, PORTS[platform]), ports=PORTS[platform], want_pfc=[3], want_ecn=True, **kw)


def phases(d, monkeypatch):
    """Record each phase method of ``d`` as the window calls it (the real method still runs)."""
    calls = []
    for name in PHASES + ("undo", "abort", "rollback", "discard"):
        real = getattr(d, name)

        def wrapped(*a, _name=name, _real=real, **kw):
            calls.append(_name)
            return _real(*a, **kw)

        monkeypatch.setattr(d, name, wrapped)
    return calls


def test_every_platform_has_a_driver_that_implements_the_whole_interface():
    assert sorted(DRIVERS) == sorted(PLATFORMS)
    for platform, cls in DRIVERS.items():
        assert issubclass(cls, Driver) and cls.platform == platform
        assert not cls.__abstractmethods__, f"{platform}: abstract methods left {sorted(cls.__abstractmethods__)}"
        assert cls.lldp_command and cls.lldp_parser and cls.error_patterns


def test_the_running_config_and_the_intent_parse_with_one_parser(switch):
    platform, d, _sim = switch
    have = d.parse(d.get_running())
    want = d.parse(render(platform, PORTS[platform]))
    assert have and want
    view = d.view(have, d.full_scope())
    assert isinstance(view, str) and view.strip()
    scope = d.managed_scope(want, PORTS[platform])
    assert d.out_of_scope(want, scope, PORTS[platform]) == []
    assert d.commands(want, have, scope), "a factory switch is not at the intent: the delta names commands"


def test_a_window_brings_the_switch_to_the_intent_and_a_second_is_unchanged(switch, tmp_path, monkeypatch):
    platform, d, sim = switch
    calls = phases(d, monkeypatch)
    first = window(d, platform, backup_dir=str(tmp_path / "b"), stamp="T1")
    assert first["changed"] is True and first["commands"] and first["rolled_back"] is False
    assert calls == list(PHASES), f"{platform}: the window's phases in order, no recovery: {calls}"
    assert first["before"] != first["after"]
    assert (tmp_path / "b" / "sw" / f"T1.{platform}.cfg").is_file()
    assert d.pending() == [] and d.lock_read() == {"text": "", "exists": False, "age_s": None}
    want = d.parse(render(platform, PORTS[platform]))
    assert d.commands(want, d.parse(d.get_running()), d.managed_scope(want, PORTS[platform])) == []
    calls.clear()
    sent = len(sim.sent)
    again = window(d, platform, backup_dir=str(tmp_path / "b"), stamp="T2")
    assert again["changed"] is False and again["commands"] == [] and calls == []
    assert again["before"] == again["after"] == first["after"]
    writes = [c for c in sim.sent[sent:] if re.search(WRITES[platform], c)]
    assert writes == [], f"{platform}: a window at the intent wrote {writes}"
    assert any(re.search(WRITES[platform], c) for c in sim.sent[:sent]), "the pattern finds the first window's writes"


def test_check_mode_previews_the_change_and_sends_nothing_that_writes(switch):
    platform, d, _sim = switch
    before = d.get_running()
    res = window(d, platform, check_mode=True)
    assert res["changed"] is True and res["commands"]
    assert res["diff"]["before"] != res["diff"]["after"] and res["after"] == res["diff"]["after"]
    assert d.get_running() == before and d.pending() == []


def test_after_the_window_the_reads_have_the_models_shape(switch):
    platform, d, _sim = switch
    window(d, platform)
    ports = PORTS[platform]
    oper = d.oper(ports)
    assert sorted(oper) == sorted(ports)
    for p in ports:
        st = oper[p]
        assert st["up"] is True and st["pfc"] == [3] and st["ecn"] is True, (platform, p, st)
        assert 3 in st["headroom"] and 3 in st["pfcwd"], (platform, p, st)
    storms = d.pfcwd_storms(ports)
    assert set(storms) <= set(ports)
    for per_prio in storms.values():
        for prio, storm in per_prio.items():
            assert isinstance(prio, str) and set(storm) == {"detected", "stormed"} and storm["detected"] >= 0
    lossless = d.lossless(ports)
    assert sorted(lossless) == sorted(ports)
    for st in lossless.values():
        assert set(st) == {"pfc", "headroom", "pfcwd", "storms", "missing"} and st["missing"] == []
    table = d.lldp_neighbors()
    assert set(table) == {"neighbors", "ports", "warnings"} and isinstance(table["ports"], list)
    state = d.lock_read()
    assert set(state) == {"text", "exists", "age_s"} and state["exists"] is False


@pytest.mark.parametrize("bad", ["swp1;reboot", "", "x" * 65])
def test_a_bad_port_name_is_refused_before_anything_is_sent(switch, bad):
    platform, d, sim = switch
    with pytest.raises(SwitchError) as err:
        run_apply(d, render(platform, PORTS[platform]), ports=PORTS[platform] + [bad])
    assert "refused" in str(err.value) and err.value.rolled_back is False
    assert sim.sent == []


def test_an_intent_outside_the_managed_scope_is_refused_before_anything_is_sent(switch):
    platform, d, sim = switch
    with pytest.raises(SwitchError) as err:
        run_apply(d, render(platform, PORTS[platform]), ports=PORTS[platform][:1])
    assert "outside the managed scope" in str(err.value) and err.value.rolled_back is False
    assert sim.sent == []


def test_a_rejected_push_ends_at_the_backup_with_nothing_pending(switch, tmp_path, monkeypatch):
    platform, d, sim = switch
    before = d.get_running()
    arm(sim, "reject", PUSH[platform], 1, 1)
    calls = phases(d, monkeypatch)
    with pytest.raises(SwitchError) as err:
        window(d, platform, backup_dir=str(tmp_path / "b"), stamp="T1")
    assert " push failed: " in str(err.value) and err.value.rolled_back is True and err.value.changed is False
    assert calls[:2] == ["begin", "push"] and "confirm" not in calls and "commit" not in calls
    assert d.get_running() == before and d.pending() == []
    assert d.lock_read()["exists"] is False
    assert (tmp_path / "b" / "sw" / f"T1.{platform}.cfg").read_text() == before
