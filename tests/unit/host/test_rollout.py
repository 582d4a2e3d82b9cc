"""The rollout's wave planner (module_utils/host/rollout.py; issue 36 item 1): waves, topology spread, budget,
summary. Pure: no Ansible, no lab."""

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.linerate.fabric.plugins.module_utils.host import rollout
from ansible_collections.linerate.fabric.plugins.module_utils.host.rollout import Node, RolloutError


def su_fleet(nodes, per_su=32, rails=8, per_rack=4, per_domain=None):
    """A rail-optimised fleet: every node of a scalable unit on the SU's rail leaves; racks of per_rack
    nodes; NVLink domains of per_domain nodes (None: no domain labels)."""
    out = []
    for i in range(nodes):
        su = i // per_su
        out.append(
            Node(
                name=f"gpu{i + 1:04d}",
                leaf=tuple(f"su{su}-leaf{r}" for r in range(rails)),
                rack=f"rack{i // per_rack}",
                nvlink_domain=None if per_domain is None else f"nvl{i // per_domain}",
            )
        )
    return out


def check_plan(p, nodes, spread=rollout.SPREAD_KEYS):
    names = [n.name for n in nodes]
    # every node exactly once
    assert sorted(p.order) == sorted(names) and len(p.order) == len(set(p.order))
    assert p.sizes == [len(w) for w in p.waves] and all(p.sizes)
    # no wave over max_unavailable, the canary first and no larger than asked
    assert max(p.sizes) <= p.max_unavailable
    assert p.sizes[0] <= p.canary
    by_name = {n.name: n for n in nodes}
    for wave in p.waves:
        seen = set()
        for name in wave:
            toks = by_name[name].tokens(spread)
            assert seen.isdisjoint(toks), (wave, toks & seen)
            seen |= toks
    return True


def test_the_canary_comes_first_then_waves_double_up_to_max_unavailable():
    nodes = [Node(f"n{i}") for i in range(1, 31)]
    p = rollout.plan(nodes, max_unavailable=8, canary=1)
    assert p.sizes == [1, 2, 4, 8, 8, 7]
    assert p.waves[0] == ["n1"] and p.waves[1] == ["n2", "n3"]
    p = rollout.plan(nodes, max_unavailable=8, canary=3)
    assert p.sizes == [3, 6, 8, 8, 5]
    # a canary above max_unavailable is max_unavailable
    p = rollout.plan(nodes, max_unavailable=2, canary=5)
    assert p.canary == 2 and p.sizes[:2] == [2, 2]


def test_without_slow_start_the_wave_after_the_canary_is_max_unavailable():
    nodes = [Node(f"n{i}") for i in range(1, 31)]
    p = rollout.plan(nodes, max_unavailable=8, canary=1, slow_start=False)
    assert p.sizes == [1, 8, 8, 8, 5] and p.waves[0] == ["n1"]
    assert p.as_dict()["slow_start"] is False
    # the lab's four nodes (inventory/lab): the canary, then the other three at once
    assert rollout.plan(nodes[:4], max_unavailable=3, canary=1, spread=[], slow_start=False).waves == [["n1"], ["n2", "n3", "n4"]]
    # spread still holds in the wide waves
    racked = [Node(f"n{i}", rack=f"r{i % 2}") for i in range(1, 9)]
    p = rollout.plan(racked, max_unavailable=4, canary=1, spread=["rack"], slow_start=False)
    assert p.sizes == [1, 2, 2, 2, 1]
    assert all(len({n % 2 for n in (int(x[1:]) for x in w)}) == len(w) for w in p.waves)
    with pytest.raises(RolloutError, match=r"fabric.rollout.slow_start: 'no' is not allowed \(allowed: true or false\)"):
        rollout.plan(nodes, slow_start="no")


def test_names_sort_naturally_and_the_plan_does_not_depend_on_the_given_order():
    nodes = [Node(f"node{i}") for i in (10, 2, 1, 3)]
    p = rollout.plan(nodes, max_unavailable=4)
    assert p.order == ["node1", "node2", "node3", "node10"]
    assert rollout.plan(list(reversed(nodes)), max_unavailable=4).waves == p.waves


def test_two_nodes_of_one_leaf_rack_or_domain_never_share_a_wave():
    nodes = [
        Node("a", leaf=("l1",)),
        Node("b", leaf=("l1",)),
        Node("c", leaf=("l2",), rack="r1"),
        Node("d", leaf=("l3",), rack="r1"),
        Node("e", leaf=("l4",), nvlink_domain="d1"),
        Node("f", leaf=("l5",), nvlink_domain="d1"),
    ]
    p = rollout.plan(nodes, max_unavailable=6, canary=6)
    assert p.waves == [["a", "c", "e"], ["b", "d", "f"]]
    # spread on nothing: one wave of all six
    assert rollout.plan(nodes, max_unavailable=6, canary=6, spread=[]).waves == [["a", "b", "c", "d", "e", "f"]]
    # only racks: a and b may share a wave now
    assert rollout.plan(nodes, max_unavailable=6, canary=6, spread=["rack"]).waves == [["a", "b", "c", "e", "f"], ["d"]]


def test_a_node_on_several_leaves_conflicts_with_every_node_on_any_of_them():
    nodes = [Node("a", leaf=("l1", "l2")), Node("b", leaf=("l2", "l3")), Node("c", leaf=("l3", "l4"))]
    assert rollout.plan(nodes, max_unavailable=3, canary=3).waves == [["a", "c"], ["b"]]


def test_the_largest_group_goes_first_so_waves_reach_the_lower_bound():
    # 3 SUs of 4 nodes, rail-optimised: 4 waves of one node per SU is the least possible
    nodes = su_fleet(12, per_su=4, rails=2, per_rack=1)
    p = rollout.plan(nodes, max_unavailable=3, canary=3)
    assert p.sizes == [3, 3, 3, 3]
    assert all(len({n[:7] for n in w}) for w in p.waves)


def test_percentages_round_down_and_never_below_one():
    assert rollout.resolve_count("10%", 2000) == 200
    assert rollout.resolve_count("10%", 4) == 1
    assert rollout.resolve_count("100%", 7) == 7
    assert rollout.resolve_count("33%", 10) == 3
    assert rollout.resolve_count(5, 3) == 5


@pytest.mark.parametrize("value", [0, -1, True, "0%", "101%", "5", 2.0, None, [1]])
def test_max_unavailable_refused_with_key_value_and_what_is_allowed(value):
    with pytest.raises(RolloutError) as e:
        rollout.resolve_count(value, 10)
    assert str(e.value) == (f"fabric.rollout.max_unavailable: {value!r} is not allowed (allowed: a number of nodes >= 1 or '1%'..'100%')")


def test_bad_canary_spread_and_duplicate_nodes_are_refused():
    with pytest.raises(RolloutError, match=r"fabric.rollout.canary: 0 is not allowed"):
        rollout.plan([Node("a")], canary=0)
    with pytest.raises(RolloutError, match=r"fabric.rollout.spread: \['switch'\] is not allowed"):
        rollout.plan([Node("a")], spread=["switch"])
    with pytest.raises(RolloutError, match=r"rollout nodes: a given twice"):
        rollout.plan([Node("a"), Node("a")])


def test_labels_and_leaves_from_hostvars_and_observed_cabling():
    hv = {
        "n1": {
            "rdma_ports": [{"device": "mlx5_0", "switch": "leaf2"}, {"device": "mlx5_1", "switch": "leaf1"}],
            "linerate_rack": "r1",
            "linerate_nvlink_domain": "nvl-a",
        },
        "n2": {"rdma_ports": [{"device": "mlx5_0", "switch": "leaf1"}]},
    }
    nodes = rollout.nodes_from_hostvars(["n1", "n2"], hv)
    assert nodes == [Node("n1", ("leaf1", "leaf2"), "r1", "nvl-a"), Node("n2", ("leaf1",), None, None)]
    # the observed cabling joins the declared one: a wrong inventory can only make a wave smaller
    nodes = rollout.nodes_from_hostvars(["n1", "n2"], hv, observed={"n2": ["leaf9"], "n1": "leaf7"})
    assert nodes[1].leaf == ("leaf1", "leaf9") and nodes[0].leaf == ("leaf1", "leaf2")


def test_a_swapped_cable_the_inventory_misses_still_keeps_two_nodes_of_one_leaf_apart():
    # declared: n1 on leaf1, n2 on leaf2; LLDP saw n2's port on leaf1 (a cable moved): never in one wave
    hv = {"n1": {"rdma_ports": [{"device": "mlx5_0", "switch": "leaf1"}]}, "n2": {"rdma_ports": [{"device": "mlx5_0", "switch": "leaf2"}]}}
    assert rollout.plan(rollout.nodes_from_hostvars(["n1", "n2"], hv), max_unavailable=2, canary=2).waves == [["n1", "n2"]]
    nodes = rollout.nodes_from_hostvars(["n1", "n2"], hv, observed={"n2": ["leaf1"]})
    assert rollout.plan(nodes, max_unavailable=2, canary=2).waves == [["n1"], ["n2"]]


def test_the_observed_leaves_come_from_the_last_reports_cabling_check():
    import json
    from ansible_collections.linerate.fabric.plugins.filter.rollout import rollout_observed, rollout_plan

    report = {"generated_at": "2026-12-02T10:00:00Z", "checks": {"cabling": {"passed": False, "observed_leaves": {"n2": ["leaf1"], "n3": "bad"}}}}
    got = rollout_observed(json.dumps(report))
    assert got == {"leaves": {"n2": ["leaf1"]}, "generated": "2026-12-02T10:00:00Z"}
    # no report, not JSON, no cabling check: the declared cabling alone
    for text in ("", None, [], "{not json", json.dumps({"checks": {}}), json.dumps([1]), json.dumps({"checks": {"cabling": {"passed": True}}})):
        assert rollout_observed(text) == {}
    hv = {"n1": {"rdma_ports": [{"device": "mlx5_0", "switch": "leaf1"}]}, "n2": {"rdma_ports": [{"device": "mlx5_0", "switch": "leaf2"}]}}
    intent = {"max_unavailable": 2, "canary": 2, "spread": ["leaf"]}
    p = rollout_plan(["n1", "n2"], hv, intent, got)
    assert p["waves"] == [["n1"], ["n2"]]
    assert p["leaves_from"] == "declared rdma_ports and the cabling LLDP saw (report of 2026-12-02T10:00:00Z)"
    assert rollout_plan(["n1", "n2"], hv, intent, {})["leaves_from"] == "declared rdma_ports"
    assert rollout_plan(["n1", "n2"], hv, intent, None)["waves"] == [["n1", "n2"]]


@pytest.mark.parametrize("value", [5, "rack 1", "-r1", "x" * 129, ["r1"], {"a": 1}])
def test_bad_labels_are_refused_naming_the_variable_the_node_and_the_value(value):
    with pytest.raises(RolloutError) as e:
        rollout.nodes_from_hostvars(["n1"], {"n1": {"linerate_rack": value}})
    assert str(e.value) == f"linerate_rack of n1: {value!r} is not allowed (allowed: {rollout.LABEL_ALLOWED})"


def test_2000_nodes_rail_optimised_with_racks_and_domains_plan_in_hours_of_waves_and_fast():
    nodes = su_fleet(2000, per_su=32, rails=8, per_rack=4, per_domain=8)
    t0 = time.process_time()
    p = rollout.plan(nodes, max_unavailable="5%", canary=1)
    spent = time.process_time() - t0
    check_plan(p, nodes)
    assert p.max_unavailable == 100
    # 63 SUs (the last one of 16 nodes): at most 63 nodes a wave; 32 nodes per SU: at least 32 waves,
    # plus the canary and the widening ones
    assert max(p.sizes) == 63
    assert 32 <= len(p.waves) <= 40, p.sizes
    # generous: a plan takes milliseconds; this only catches a quadratic blow-up
    assert spent < 20


def test_2000_nodes_without_constraints_one_at_a_time_is_2000_waves():
    nodes = [Node(f"n{i}") for i in range(2000)]
    p = rollout.plan(nodes, max_unavailable=1, spread=[])
    assert p.sizes == [1] * 2000 and check_plan(p, nodes, spread=[])


node_strategy = st.builds(
    lambda i, leaves, rack, dom: Node(f"n{i}", tuple(sorted(set(leaves))), rack, dom),
    st.integers(0, 10_000),
    st.lists(st.sampled_from(["l1", "l2", "l3", "l4", "l5"]), max_size=3),
    st.one_of(st.none(), st.sampled_from(["r1", "r2", "r3"])),
    st.one_of(st.none(), st.sampled_from(["d1", "d2"])),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(node_strategy, min_size=1, max_size=60, unique_by=lambda n: n.name),
    st.one_of(st.integers(1, 20), st.sampled_from(["1%", "10%", "50%", "100%"])),
    st.integers(1, 6),
    st.sets(st.sampled_from(rollout.SPREAD_KEYS)),
)
def test_property_every_node_once_no_wave_too_large_no_group_twice_canary_first_deterministic(nodes, limit, canary, spread):
    spread = sorted(spread)
    p = rollout.plan(nodes, max_unavailable=limit, canary=canary, spread=spread)
    check_plan(p, nodes, spread)
    assert p.max_unavailable == rollout.resolve_count(limit, len(nodes))
    assert p.waves == rollout.plan(list(reversed(nodes)), max_unavailable=limit, canary=canary, spread=spread).waves


def _plan_dict(waves, budget=0):
    nodes = {n: {"wave": i, "leaf": ["l1"] if n.endswith("1") else [], "rack": None, "nvlink_domain": None} for i, w in enumerate(waves) for n in w}
    return {
        "waves": waves,
        "order": [n for w in waves for n in w],
        "max_unavailable": 2,
        "canary": 1,
        "spread": ["leaf"],
        "max_fail_percentage": budget,
        "nodes": nodes,
    }


def test_a_wave_over_its_budget_halts_the_later_waves_and_one_within_does_not():
    plan = _plan_dict([["a"], ["b", "c"], ["d", "e", "f", "g"], ["h"]], budget=25)
    done = {n: "done" for n in plan["order"]}
    assert rollout.halted_at(plan, done) is None
    # one of four is 25 %: within the budget (Ansible's rule: more than the percentage)
    assert rollout.halted_at(plan, {**done, "d": "unreachable"}) is None
    # one of two is 50 %: over it
    assert rollout.halted_at(plan, {**done, "b": "failed"}) == 1
    # only the waves before the one asked about count
    assert rollout.halted_at(plan, {**done, "h": "failed"}, before=3) is None
    assert rollout.halted_at(plan, {**done, "h": "failed"}) == 3
    # budget 0: the first failure halts
    assert rollout.halted_at(_plan_dict([["a"], ["b"]]), {"a": "failed", "b": "done"}) == 0


def test_states_from_marks_and_the_probe():
    plan = _plan_dict([["a"], ["b", "c"], ["d"], ["e"]])
    marks = {"a": {"state": "done"}, "b": {"state": "failed", "reason": "x"}, "d": {"state": "skipped"}}
    assert rollout.states_of(plan, marks, {"c": False, "e": True}) == {"a": "done", "b": "failed", "c": "unreachable", "d": "skipped", "e": "failed"}


def test_summary_names_every_node_counts_states_and_finds_the_concurrency():
    plan = _plan_dict([["n1"], ["n2", "n3"], ["n4"]])
    marks = {
        "n1": {"state": "done", "steps": [{"action": "firmware_reset", "start": "2026-01-01T00:00:00", "end": "2026-01-01T00:01:00"}]},
        "n2": {"state": "done", "steps": [{"action": "firmware_reset", "start": "2026-01-01T00:01:00", "end": "2026-01-01T00:02:00"}]},
        "n3": {"state": None, "steps": [{"action": "firmware_reset", "start": "2026-01-01T00:01:10"}]},
        "n4": {"state": "skipped", "reason": "halted"},
    }
    s = rollout.summary(plan, marks, {"n3": False}, converged=["n5"], unseen=["n6"])
    assert {n: v["state"] for n, v in s["nodes"].items()} == {
        "n1": "done",
        "n2": "done",
        "n3": "unreachable",
        "n4": "skipped",
        "n5": "converged",
        "n6": "unreachable",
    }
    assert s["counts"] == {"done": 2, "failed": 0, "unreachable": 2, "skipped": 1, "converged": 1}
    assert s["halted_at_wave"] == 1 and s["passed"] is False
    assert s["waves"][1] == {"wave": 1, "nodes": ["n2", "n3"], "failed": ["n3"], "over_budget": True}
    # n1 ends when n2 starts: not at once; n2 and n3 overlap (n3's step never ended)
    assert s["max_disrupted_at_once"] == 2
    assert s["same_group_overlaps"] == []
    assert s["nodes"]["n4"]["reason"] == "halted"


def test_overlaps_name_two_nodes_of_one_leaf_disrupted_at_once():
    nodes = {
        "a": {"leaf": ["l1"], "steps": [{"start": "t1", "end": "t3"}]},
        "b": {"leaf": ["l1"], "steps": [{"start": "t2", "end": "t4"}]},
        "c": {"leaf": ["l2"], "steps": [{"start": "t2", "end": "t4"}]},
        "d": {"leaf": ["l1"], "steps": [{"start": "t4", "end": "t5"}]},
    }
    o = rollout.overlaps(nodes, ["leaf"])
    assert o == {"max_disrupted_at_once": 3, "same_group_overlaps": [{"spread": "leaf", "group": "l1", "nodes": ["a", "b"]}]}


def test_the_step_filter_opens_and_closes_steps_on_the_controllers_clock():
    from ansible.errors import AnsibleFilterError

    from ansible_collections.linerate.fabric.plugins.filter.rollout import rollout_step

    steps = rollout_step([], "start", "firmware_reset")
    assert [set(s) for s in steps] == [{"action", "start"}] and steps[0]["action"] == "firmware_reset"
    closed = rollout_step(steps, "end")
    assert closed[0]["end"] >= closed[0]["start"] and "end" not in steps[0]
    assert closed[0]["start"].endswith("+00:00")
    again = rollout_step(closed, "start", "driver_restart")
    assert len(again) == 2 and "end" not in again[1]
    assert rollout_step([], "failed") == []
    with pytest.raises(AnsibleFilterError, match="key 'stop' is not allowed"):
        rollout_step(steps, "stop")


def test_the_report_shows_the_rollout_section_row_per_step():
    from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown

    assert report_markdown.rollout_lines({}) == []
    plan = _plan_dict([["n1"], ["n2", "n3"]])
    marks = {
        "n1": {"state": "done", "steps": [{"action": "firmware_reset", "start": "t1", "end": "t2"}]},
        "n2": {"state": "failed", "steps": [{"action": "driver_restart", "start": "t3", "failed": "t4"}]},
        "n3": {"state": "done"},
    }
    lines = report_markdown.rollout_lines({"rollout": rollout.summary(plan, marks, {})})
    assert lines[0] == "## Host rollout"
    assert lines[2] == ("2 wave(s), at most 2 node(s) at once (spread: leaf); 2 done, 1 failed; most disrupted at once: 1; halted after wave 1")
    assert "| n1 | 0 | done | firmware_reset | t1 | t2 |" in lines
    assert "| n2 | 1 | failed | driver_restart | t3 | failed t4 |" in lines
    assert "| n3 | 1 | done |  |  |  |" in lines


def test_a_node_still_out_of_service_holds_its_place_and_the_wave_defers_the_rest():
    plan = rollout.plan([Node(f"n{i}") for i in range(1, 11)], max_unavailable=4, canary=1, spread=[]).as_dict()
    assert plan["waves"] == [["n1"], ["n2", "n3"], ["n4", "n5", "n6", "n7"], ["n8", "n9", "n10"]]
    # nothing lost: the whole wave
    assert rollout.room(plan, {"n1": "done"}, plan["waves"][1]) == {"lost": [], "room": 4, "defer": [], "why": {}}
    # n2 failed, n3 unreachable: two places held, the next wave takes two and defers the last two in plan order
    states = {"n1": "done", "n2": "failed", "n3": "unreachable"}
    r = rollout.room(plan, states, ["n7", "n4", "n6", "n5"])
    assert (r["lost"], r["room"], r["defer"]) == (["n2", "n3"], 2, ["n6", "n7"])
    assert (
        r["why"]["n6"]
        == r["why"]["n7"]
        == (
            "deferred: n2, n3 still out of service (failed or unreachable in an earlier wave, or before the plan) hold "
            "their places of fabric.rollout.max_unavailable (4): this wave takes 2 node(s); run again once they are back"
        )
    )
    # a node that did not answer before the plan holds a place too; skipped and done nodes hold none
    states = {"n1": "done", "n2": "skipped", "n3": "done"}
    r = rollout.room(plan, states, plan["waves"][2], unseen=["n11"])
    assert (r["lost"], r["room"], r["defer"], list(r["why"])) == (["n11"], 3, ["n7"], ["n7"])
    # more lost than max_unavailable: the wave takes nothing
    lost = {f"n{i}": "failed" for i in range(1, 8)}
    r = rollout.room(plan, lost, plan["waves"][3])
    assert (r["lost"], r["room"], r["defer"]) == (["n1", "n2", "n3", "n4", "n5", "n6", "n7"], 0, ["n8", "n9", "n10"])
    assert "this wave takes 0 node(s)" in r["why"]["n8"]


def test_a_node_still_out_of_service_holds_its_rack_and_leaf_for_the_rest_of_the_run():
    # four racks of three; n2 (rack r2) is lost in wave 1: a later wave must not reset its rack-mates n6 and n10
    # (two of r2 out at once), though the budget would have room for them
    nodes = [Node(f"n{i}", rack=f"r{(i - 1) % 4 + 1}") for i in range(1, 13)]
    plan = rollout.plan(nodes, max_unavailable=4, canary=1, spread=["rack"]).as_dict()
    states = {"n1": "done", "n2": "unreachable", "n3": "done"}
    later = [w for w in plan["waves"][2:]]
    r = rollout.room(plan, states, later[0])
    mates = [n for n in later[0] if plan["nodes"][n]["rack"] == "r2"]
    assert mates and set(mates) <= set(r["defer"])
    for n in mates:
        assert r["why"][n] == (
            "deferred: n2 still out of service (failed or unreachable in an earlier wave, or "
            "before the plan) and in rack r2 with it: fabric.rollout.spread keeps two of one rack "
            "from being out at once; run again once n2 is back"
        )
    # the rack-mate does not use a place: the wave's others fit in the three places n2 leaves
    others = [n for n in later[0] if n not in mates]
    assert len(others) <= 3 and not set(others) & set(r["defer"])
    # a leaf works the same, and a node unreachable before the plan holds its groups from its inventory labels
    nodes = [Node(f"m{i}", leaf=("leafA",) if i in (1, 5) else ("leafB",)) for i in range(1, 6)]
    plan = rollout.plan(nodes[1:], max_unavailable=4, canary=1, spread=["leaf"]).as_dict()
    wave = [n for w in plan["waves"] for n in w if n == "m5"]
    r = rollout.room(plan, {}, wave, unseen=["m1"], unseen_nodes=[nodes[0]])
    assert r["defer"] == ["m5"] and "in leaf leafA with it" in r["why"]["m5"]
    # without the groups of the unseen node only its place is held
    assert rollout.room(plan, {}, wave, unseen=["m1"])["defer"] == []


def test_the_room_filter_counts_the_nodes_ansible_dropped_as_out_of_service():
    from ansible_collections.linerate.fabric.plugins.filter.rollout import rollout_room

    plan = rollout.plan([Node(f"n{i}") for i in range(1, 8)], max_unavailable=3, canary=1, spread=[]).as_dict()
    assert plan["waves"] == [["n1"], ["n2", "n3"], ["n4", "n5", "n6"], ["n7"]]
    hostvars = {"n1": {"host_disruption_rollout_state": "done"}, "n2": {}, "n3": {"host_disruption_rollout_state": "failed"}}
    # n2: no mark and gone from the play (unreachable): out of service, as n3 (failed in its disruptive step)
    active = ["n1", "n4", "n5", "n6", "n7"]
    r = rollout_room(plan, hostvars, active, 2, ["n4", "n5", "n6"])
    assert (r["lost"], r["room"], r["defer"]) == (["n2", "n3"], 1, ["n5", "n6"])
    # a node that did not answer before the plan holds its rack, read from its inventory labels
    plan = rollout.plan([Node("n2", rack="r1"), Node("n3", rack="r2"), Node("n4", rack="r1")], max_unavailable=3, canary=1, spread=["rack"]).as_dict()
    r = rollout_room(plan, {"n1": {"linerate_rack": "r1"}}, ["n2", "n3", "n4"], 1, plan["waves"][1], ["n1"])
    assert r["lost"] == ["n1"] and "n4" in r["defer"] and "in rack r1 with it" in r["why"]["n4"]
    # an unseen node whose label is not allowed still holds its place, and the wave is not refused over it
    r = rollout_room(plan, {"n1": {"linerate_rack": ["not", "a", "name"]}}, ["n2", "n3", "n4"], 1, plan["waves"][1], ["n1"])
    assert r["lost"] == ["n1"] and r["room"] == 2 and r["defer"] == []
    # n2 still in the play with no mark yet counts as done (it finished its wave)
    assert rollout_room(plan, hostvars, active + ["n2"], 2, ["n4", "n5", "n6"])["lost"] == ["n3"]
