"""The drain budget and its circuit breaker (issue 35): allowances, the trip before any drain, a breaker that
stays tripped until reset, the durable state (0600, atomic, never forgotten when unreadable), node_drain
holding and freezing, and the drain_breaker module."""

import json
import os
import stat
import sys

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.host import breaker, drain
from ansible_collections.linerate.fabric.plugins.modules import drain_breaker, node_drain
from module_harness import Tools, run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "lab", "schedsim"))
import schedsim  # noqa: E402

NOW = 1_800_000_000.0


def select(fs):
    return drain.selected(fs)


def flap(node, **kw):
    return faults.finding("LINK_FLAP", "x", node=node, device="mlx5_1", **kw)


def unseen(node):
    return faults.finding("NODE_NOT_VERIFIED", "x", node=node, reason="unreachable")


@pytest.mark.parametrize(
    "count,percent,fleet,want",
    [
        (10, 5, 4, 1),  # a small cluster can always drain one node
        (10, 5, 2000, 10),  # the count is lower
        (1000, 5, 2000, 100),  # the percentage is lower
        (10, 50, 4, 2),
        (3, 100, 0, 1),
    ],
)
def test_allowance(count, percent, fleet, want):
    assert breaker.allowance(count, percent, fleet) == want


def test_one_own_fault_drains_within_the_budget():
    d = breaker.plan([flap("node2")], breaker.empty_state(), {}, 4, select, now=NOW)
    assert d["drain"] == ["node2"] and not d["breaker"]["tripped"] and d["allowed"] == {"run": 1, "window": 1}
    assert breaker.breaker_finding(d, faults.finding) == []


def test_two_unreachable_of_four_trip_the_breaker_and_drain_nothing():
    d = breaker.plan([unseen("node3"), unseen("node4"), flap("node2")], breaker.empty_state(), {}, 4, select, now=NOW)
    assert d["breaker"]["tripped"] and d["tripped_now"] and d["drain"] == []
    assert d["unseen"] == ["node3", "node4"] and "per-run budget of 1" in d["breaker"]["reason"]
    assert d["held"]["node2"].startswith("the drain breaker is tripped")
    (f,) = breaker.breaker_finding(d, faults.finding)
    assert f["code"] == "DRAIN_BREAKER_TRIPPED" and f["severity"] == "error" and f["held"] == ["node2"]
    assert "playbooks/drain_breaker_reset.yml" in f["message"]


def test_draining_off_trips_nothing_and_holds_the_candidates():
    d = breaker.plan([unseen("node3"), unseen("node4"), flap("node2")], breaker.empty_state(), {}, 4, select, enabled=False, now=NOW)
    assert not d["breaker"]["tripped"] and d["drain"] == [] and "draining is off" in d["held"]["node2"]
    assert breaker.breaker_finding(d, faults.finding) == []


def test_explained_and_not_verified_findings_never_count_as_candidates():
    found = [flap(f"n{i}", explained_by="leaf1") for i in range(30)] + [flap("n99")]
    d = breaker.plan(found, breaker.empty_state(), {}, 2000, select, now=NOW)
    assert d["drain"] == ["n99"] and d["candidates"] == ["n99"] and not d["breaker"]["tripped"]
    assert d["held"]["n0"] == "its failures are explained by leaf1"


def test_nodes_linerate_already_holds_drained_cost_no_budget():
    state = breaker.empty_state()
    state["drained"] = {"node2": {"at": breaker.now_stamp(NOW - 3600), "reason": "linerate: LINK_FLAP mlx5_1"}}
    state["events"] = [{"action": "drain", "node": "node2", "at": breaker.now_stamp(NOW - 3600)}]
    d = breaker.plan([flap("node2")], state, {}, 4, select, now=NOW)
    assert d["drain"] == ["node2"] and d["candidates"] == [] and not d["breaker"]["tripped"]
    # a new node in the same window: the window's allowance (1 of 4) is spent
    d = breaker.plan([flap("node2"), flap("node3")], state, {}, 4, select, now=NOW)
    assert d["breaker"]["tripped"] and "the window's budget of 1" in d["breaker"]["reason"]


def test_the_window_slides():
    state = breaker.empty_state()
    state["events"] = [{"action": "drain", "node": "node2", "at": breaker.now_stamp(NOW - 25 * 3600)}]
    assert not breaker.plan([flap("node3")], state, {}, 4, select, now=NOW)["breaker"]["tripped"]
    state["events"] = [{"action": "drain", "node": "node2", "at": breaker.now_stamp(NOW - 23 * 3600)}]
    assert breaker.plan([flap("node3")], state, {}, 4, select, now=NOW)["breaker"]["tripped"]
    policy = {"budget": {"window_hours": 12}}
    assert not breaker.plan([flap("node3")], state, policy, 4, select, now=NOW)["breaker"]["tripped"]


def test_the_budget_is_the_intent_s():
    found = [flap(f"n{i}") for i in range(12)]
    assert breaker.plan(found, breaker.empty_state(), {}, 2000, select, now=NOW)["breaker"]["tripped"]
    policy = {"budget": {"max_nodes_per_run": 12, "max_nodes_per_window": 12}}
    d = breaker.plan(found, breaker.empty_state(), policy, 2000, select, now=NOW)
    assert not d["breaker"]["tripped"] and len(d["drain"]) == 12


def test_a_tripped_breaker_stays_tripped_until_reset(tmp_path):
    path = str(tmp_path / "remediation" / "state.json")
    d = breaker.plan([unseen("node3"), unseen("node4")], breaker.load(path), {}, 4, select, now=NOW)
    state, changed = breaker.record(breaker.load(path), d, now=NOW)
    assert changed
    breaker.save(path, state)
    # the next run: one node's own fault, well within the budget - still nothing
    d2 = breaker.plan([flap("node2")], breaker.load(path), {}, 4, select, now=NOW + 60)
    assert d2["breaker"]["tripped"] and not d2.get("tripped_now") and d2["drain"] == []
    assert d2["breaker"]["since"] == breaker.now_stamp(NOW)
    # reset: closed, who and when kept; a second reset changes nothing
    state, changed = breaker.reset(breaker.load(path), "ops", now=NOW + 120)
    assert changed and state["breaker"] == {"tripped": False, "reset_at": breaker.now_stamp(NOW + 120), "reset_by": "ops"}
    assert state["events"][-1]["action"] == "reset" and "budget" in state["events"][-1]["was"]["reason"]
    breaker.save(path, state)
    assert breaker.reset(breaker.load(path), "ops")[1] is False
    d3 = breaker.plan([flap("node2")], breaker.load(path), {}, 4, select, now=NOW + 180)
    assert d3["drain"] == ["node2"] and not d3["breaker"]["tripped"]


def test_record_keeps_drains_returns_and_the_held_set():
    d = breaker.plan([flap("node2")], breaker.empty_state(), {}, 4, select, now=NOW)
    state, changed = breaker.record(breaker.empty_state(), d, drained=["node2"], reasons={"node2": "linerate: LINK_FLAP mlx5_1"}, now=NOW)
    assert changed and state["drained"]["node2"]["reason"] == "linerate: LINK_FLAP mlx5_1"
    assert [e["action"] for e in state["events"]] == ["drain"]
    # drained again (a reason update): no second drain event, the first time kept
    again, _ = breaker.record(state, d, drained=["node2"], reasons={"node2": "linerate: X"}, now=NOW + 10)
    assert [e["action"] for e in again["events"]] == ["drain"] and again["drained"]["node2"]["at"] == breaker.now_stamp(NOW)
    back, changed = breaker.record(again, d, returned=["node2"], now=NOW + 20)
    assert changed and back["drained"] == {} and [e["action"] for e in back["events"]] == ["drain", "return"]
    assert breaker.record(back, d, now=NOW + 30) == (back, False)
    # events older than 30 days go
    old, changed = breaker.record(back, d, now=NOW + 31 * 86400)
    assert changed and old["events"] == []


def test_the_state_file_is_private_and_atomic(tmp_path):
    path = tmp_path / "out" / "remediation" / "state.json"
    breaker.save(str(path), breaker.empty_state())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]
    assert breaker.load(str(path)) == breaker.empty_state()


@pytest.mark.parametrize("text", ["", "{", "[]", '{"version": 1}', '{"version": 2, "breaker": {}, "drained": {}, "events": []}'])
def test_an_unreadable_state_is_an_error_never_an_empty_state(tmp_path, text):
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(breaker.StateError, match="state.json"):
        breaker.load(str(path))


def test_the_validation_refuses_a_bad_budget_naming_the_key():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema

    probs = schema.validate_fabric(
        {
            "remediation": {
                "budget": {"max_percent_per_run": 0, "window_hours": "24", "max_nodes_per_run": 30, "nope": 1},
                "attribution": {"min_nodes": 1},
                "drain_codes": ["NODE_NOT_VERIFIED", "LEAF_SUSPECT"],
            }
        }
    )
    text = "\n".join(probs)
    for want in (
        "fabric.remediation.budget.max_percent_per_run: 0 is not allowed (allowed: an integer 1..100)",
        "fabric.remediation.budget.window_hours: '24' is not allowed",
        "fabric.remediation.budget.max_nodes_per_run: 30 is not allowed (allowed: at most fabric.remediation.budget.max_nodes_per_window (20)",
        "fabric.remediation.budget.nope: 1 is not allowed (unknown key",
        "fabric.remediation.attribution.min_nodes: 1 is not allowed (allowed: an integer 2..100000)",
        "fabric.remediation.drain_codes[0]: 'NODE_NOT_VERIFIED' is not allowed",
        "fabric.remediation.drain_codes[1]: 'LEAF_SUSPECT' is not allowed",
    ):
        assert want in text, text
    assert schema.validate_fabric({"remediation": {"budget": {"max_nodes_per_run": 20}}}) == []


# ---------------------------------------------------------------- node_drain holds and freezes


@pytest.fixture()
def sim(tmp_path, monkeypatch):
    monkeypatch.setattr(schedsim, "STATE_DIR", str(tmp_path))
    schedsim.init(["node1", "node2", "node3"])

    def tool(args):
        try:
            return 0, schedsim.scontrol(args), ""
        except schedsim.Exit as e:
            return e.rc, e.out, e.err

    return Tools({"scontrol": tool})


def slurm(name):
    return drain.parse_scontrol_node(schedsim.scontrol(["show", "node", name]))


FLAP = {"code": "LINK_FLAP", "severity": "error", "device": "mlx5_1", "node": "node2"}


def drain_run(capsys, tools, nodes, **kw):
    return run_module(node_drain.main, dict({"scheduler": "slurm", "nodes": nodes}, **kw), tools, capsys)


def test_a_tripped_breaker_drains_and_returns_nobody(sim, capsys):
    schedsim.scontrol(["update", "NodeName=node1", "State=DRAIN", "Reason=linerate: PORT_DOWN mlx5_0"])
    nodes = [{"name": "node1", "findings": [], "verified": True}, {"name": "node2", "findings": [FLAP], "verified": True}]
    res = drain_run(capsys, sim, nodes, breaker_tripped=True)
    assert not res["changed"] and res["commands"] == [] and sorted(res["held"]) == ["node1", "node2"]
    assert "breaker" in res["nodes"]["node2"]["note"]
    assert slurm("node2")["state"] == "IDLE" and "DRAIN" in slurm("node1")["flags"]
    # closed: node2 drains, node1 (linerate's, passing) returns
    res = drain_run(capsys, sim, nodes, breaker_tripped=False, drain_nodes=["node2"])
    assert res["drained_hosts"] == ["node2"] and res["returned_hosts"] == ["node1"]
    assert res["reasons"] == {"node2": "linerate: LINK_FLAP mlx5_1"}


def test_a_node_outside_the_decision_is_held(sim, capsys):
    nodes = [{"name": "node2", "findings": [FLAP], "verified": True}]
    res = drain_run(capsys, sim, nodes, drain_nodes=[])
    assert res["held"] == ["node2"] and res["commands"] == [] and slurm("node2")["state"] == "IDLE"


def test_explained_findings_never_drain_and_the_node_is_not_returned(sim, capsys):
    schedsim.scontrol(["update", "NodeName=node2", "State=DRAIN", "Reason=linerate: LINK_FLAP mlx5_1"])
    explained = dict(FLAP, explained_by="leaf2")
    nv = {"code": "NODE_NOT_VERIFIED", "severity": "error", "node": "node3"}
    res = drain_run(
        capsys,
        sim,
        [{"name": "node2", "findings": [explained], "verified": True}, {"name": "node3", "findings": [nv], "verified": False}],
        drain_codes=["LINK_FLAP"],
    )
    assert res["commands"] == [] and "DRAIN" in slurm("node2")["flags"] and slurm("node3")["state"] == "IDLE"
    assert "not its own" in res["nodes"]["node2"]["note"]


def test_node_drain_refuses_a_code_that_never_drains(sim, capsys):
    res = run_module(node_drain.main, {"scheduler": "slurm", "nodes": [], "drain_codes": ["NODE_NOT_VERIFIED"]}, sim, capsys)
    assert res["failed"] and "NODE_NOT_VERIFIED' never drains" in res["msg"]


# ---------------------------------------------------------------- drain_breaker


def breaker_run(capsys, check=False, **args):
    return run_module(drain_breaker.main, args, Tools({}), capsys, check=check, diff=True)


def test_drain_breaker_records_resets_and_is_idempotent(tmp_path, capsys):
    path = str(tmp_path / "r" / "state.json")
    d = breaker.plan([unseen("a"), unseen("b")], breaker.empty_state(), {}, 4, select)
    res = breaker_run(capsys, state_file=path, action="record", decision=d, check=True)
    assert res["changed"] and res["breaker"]["tripped"] and not os.path.exists(path)
    res = breaker_run(capsys, state_file=path, action="record", decision=d)
    assert res["changed"] and json.load(open(path))["breaker"]["tripped"]
    res = breaker_run(capsys, state_file=path, action="show")
    assert not res["changed"] and res["breaker"]["tripped"]
    res = breaker_run(capsys, state_file=path, action="reset", by="ops", check=True)
    assert res["changed"] and json.load(open(path))["breaker"]["tripped"]
    assert res["diff"] == {"before": "breaker: tripped\n", "after": "breaker: closed\n"}
    res = breaker_run(capsys, state_file=path, action="reset", by="ops")
    assert res["changed"] and not json.load(open(path))["breaker"]["tripped"]
    assert not breaker_run(capsys, state_file=path, action="reset", by="ops")["changed"]


def test_drain_breaker_fails_on_an_unreadable_state_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "state.json"
    path.write_text("{not json")
    res = breaker_run(capsys, state_file=str(path), action="reset", by="ops")
    assert res["failed"] and "not JSON" in res["msg"] and path.read_text() == "{not json"
