"""fabric.rollout: the host stack's waves from the intent (issue 25 item 4, issue 36 item 1): validation, the plays."""

import os

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import effective, published
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import show

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def problems(rollout):
    return schema.validate_fabric({"transport": "roce", "rollout": rollout})


DEFAULT = {"max_unavailable": "10%", "canary": 1, "max_fail_percentage": 0, "spread": ["leaf", "rack", "nvlink_domain"], "slow_start": True, "batch": None}


def test_default_is_a_canary_then_waves_of_10_percent_spread_stopping_at_the_first_failed_wave():
    assert effective({})["rollout"] == DEFAULT
    assert published({})["rollout"] == DEFAULT


@pytest.mark.parametrize("value", [1, 4, 100000, "1%", "25%", "100%"])
def test_max_unavailable_counts_and_percentages(value):
    assert problems({"max_unavailable": value}) == []


@pytest.mark.parametrize("value", [0, -1, 100001, True, 2.5, "0%", "101%", "25", "25 %", None, [1]])
def test_max_unavailable_refused_with_key_value_and_what_is_allowed(value):
    assert problems({"max_unavailable": value}) == [
        f"fabric.rollout.max_unavailable: {show(value)} is not allowed (allowed: a number of nodes 1..100000 or a "
        "percentage '1%'..'100%' of the nodes rolled (the most nodes disrupted at once; a percentage is rounded "
        "down, at least 1))"
    ]


@pytest.mark.parametrize("value,ok", [(1, True), (5, True), (0, False), (True, False), ("1", False), (1.0, False)])
def test_canary(value, ok):
    expected = [] if ok else [f"fabric.rollout.canary: {show(value)} is not allowed (allowed: an integer 1..100000)"]
    assert problems({"canary": value, "max_unavailable": 10}) == expected


@pytest.mark.parametrize("value,ok", [(True, True), (False, True), ("false", False), (0, False), (None, False)])
def test_slow_start_is_a_boolean(value, ok):
    expected = (
        []
        if ok
        else [
            f"fabric.rollout.slow_start: {show(value)} is not allowed (allowed: true (after the canary, waves double "
            "up to max_unavailable) or false (the wave after the canary is max_unavailable nodes))"
        ]
    )
    assert problems({"slow_start": value}) == expected


def test_a_canary_larger_than_max_unavailable_is_refused_naming_both():
    assert problems({"canary": 5, "max_unavailable": 4}) == [
        "fabric.rollout.canary: 5 is not allowed (allowed: at most fabric.rollout.max_unavailable (4); the canary wave is the first, smallest wave)"
    ]
    # against a percentage the plan takes the smaller (the nodes are known only then)
    assert problems({"canary": 5, "max_unavailable": "1%"}) == []


@pytest.mark.parametrize(
    "value,ok",
    [
        ([], True),
        (["leaf"], True),
        (["rack", "nvlink_domain"], True),
        (["leaf", "leaf"], False),
        (["switch"], False),
        ("leaf", False),
        (None, False),
        ([1], False),
    ],
)
def test_spread(value, ok):
    expected = (
        []
        if ok
        else [
            f"fabric.rollout.spread: {show(value)} is not allowed (allowed: a list of leaf, rack, nvlink_domain, each "
            "at most once (never two nodes of one such group disrupted in the same wave); [] spreads on nothing)"
        ]
    )
    assert problems({"spread": value}) == expected


def test_batch_is_the_old_name_of_max_unavailable_and_not_both():
    assert problems({"batch": 4}) == []
    assert problems({"batch": 4, "max_unavailable": 4}) == [
        "fabric.rollout.batch: 4 is not allowed (allowed: only one of batch and max_unavailable (batch is the old "
        "name of max_unavailable: the most nodes disrupted at once))"
    ]
    from ansible_collections.linerate.fabric.plugins.filter import rollout as rollout_filter

    assert rollout_filter._rollout_keys(effective({"rollout": {"batch": 3}})["rollout"])["max_unavailable"] == 3
    assert rollout_filter._rollout_keys(effective({})["rollout"])["max_unavailable"] == "10%"


@pytest.mark.parametrize("batch", [1, 4, 100000, "1%", "25%", "100%"])
def test_batches_ansible_serial_takes(batch):
    assert problems({"batch": batch}) == []


@pytest.mark.parametrize("batch", [0, -1, 100001, True, 2.5, "0%", "101%", "25", "25 %", "%", "a%", [1]])
def test_batches_refused_with_key_value_and_what_is_allowed(batch):
    assert problems({"batch": batch}) == [
        f"fabric.rollout.batch: {show(batch)} is not allowed (allowed: a number of nodes >= 1 or a percentage "
        "'1%'..'100%' of gpu_nodes (the host stack's serial: nodes changed at a time))"
    ]


@pytest.mark.parametrize("value,ok", [(0, True), (50, True), (100, True), (-1, False), (101, False), ("10", False), (True, False), (1.5, False)])
def test_max_fail_percentage(value, ok):
    expected = [] if ok else [f"fabric.rollout.max_fail_percentage: {show(value)} is not allowed (allowed: an integer 0..100)"]
    assert problems({"max_fail_percentage": value}) == expected


def test_unknown_key_and_non_mapping():
    assert problems({"serial": 2}) == [
        "fabric.rollout.serial: 2 is not allowed (unknown key; allowed keys: batch, canary, max_fail_percentage, max_unavailable, slow_start, spread)"
    ]
    assert problems(3) == ["fabric.rollout: 3 is not allowed (allowed: a mapping)"]


def _play(name):
    with open(os.path.join(ROOT, "playbooks", "stages", "hosts.yml"), encoding="utf-8") as f:
        return next(p for p in yaml.safe_load(f) if p["name"] == name)


def test_the_plan_is_made_once_on_localhost_for_every_tag():
    play = _play("Compare each node with what its last converge left")
    task = next(t for t in play["tasks"] if t["name"].startswith("Plan the rollout in waves"))
    assert task["run_once"] is True and task["delegate_to"] == "localhost" and task["delegate_facts"] is True
    assert task["tags"] == ["always"]
    expr = task["ansible.builtin.set_fact"]["linerate_host_rollout_plan"]
    assert "ansible_play_hosts | difference(groups['linerate_converged']" in expr
    assert "linerate.fabric.rollout_plan(hostvars, fabric_effective.rollout," in expr


def test_the_host_stack_play_runs_the_plans_order_in_its_waves():
    play = _play("Install and configure the RDMA host stack")
    # Ansible keeps a list pattern's order and batches it by a serial list (checked on ansible-core 2.19,
    # docs/host-stack.md "Rolling host changes"; the lab integration test shows it end to end)
    # each wave closed by its controller-local host (rollout filter SENTINEL): a wave is never all failed
    assert play["hosts"] == ("{{ hostvars['localhost'].linerate_host_rollout_plan.play_order | default('gpu_nodes:!linerate_converged') }}")
    assert play["serial"] == "{{ hostvars['localhost'].linerate_host_rollout_plan.play_sizes | default(1) }}"
    assert play["gather_facts"] is False
    # the budget is the plan's, per wave: Ansible's max_fail_percentage would fail the wave's other nodes mid-role
    assert "max_fail_percentage" not in play
    pre = play["pre_tasks"]
    assert "linerate.fabric.rollout_halt(hostvars, ansible_play_hosts" in pre[0]["ansible.builtin.set_fact"]["linerate_host_rollout_halt"]
    assert pre[0]["run_once"] is True
    assert pre[1]["ansible.builtin.set_fact"]["host_disruption_rollout_state"] == "skipped"
    # the nodes still out of service hold their places of max_unavailable: the wave defers the rest
    assert "linerate.fabric.rollout_room(hostvars, ansible_play_hosts" in pre[2]["ansible.builtin.set_fact"]["linerate_host_rollout_room"]
    assert pre[2]["run_once"] is True and pre[2]["delegate_facts"] is True
    assert pre[3]["ansible.builtin.set_fact"]["host_disruption_rollout_state"] == "skipped"
    assert "inventory_hostname in room.defer" in pre[3]["when"]
    assert pre[4]["ansible.builtin.meta"] == "end_host"
    assert "linerate_rollout_sentinel | default(false)" in pre[4]["when"]
    # facts gathered with the play's tags (as Ansible's own gathering in a tagged play): not under --tags validate
    assert "ansible.builtin.setup" in pre[5] and "tags" not in pre[5] and play["tags"] == ["hosts"]
    assert all(t["tags"] == ["always"] for t in pre[:5] + play["post_tasks"])
    assert play["post_tasks"][0]["ansible.builtin.set_fact"] == {"host_disruption_rollout_state": "done"}


def test_every_wave_is_closed_by_a_controller_local_host_added_before_the_play():
    from ansible_collections.linerate.fabric.plugins.filter.rollout import rollout_plan

    hv = {f"n{i}": {} for i in range(1, 6)}
    p = rollout_plan(list(hv), hv, {"max_unavailable": 2, "canary": 1, "spread": []})
    assert p["waves"] == [["n1"], ["n2", "n3"], ["n4", "n5"]]
    assert p["sentinels"] == ["linerate_rollout_wave_0", "linerate_rollout_wave_1", "linerate_rollout_wave_2"]
    assert p["play_order"] == ["n1", "linerate_rollout_wave_0", "n2", "n3", "linerate_rollout_wave_1", "n4", "n5", "linerate_rollout_wave_2"]
    assert p["play_sizes"] == [2, 3, 3] and p["order"] == ["n1", "n2", "n3", "n4", "n5"]
    plan_play = _play("Compare each node with what its last converge left")
    add = next(t for t in plan_play["tasks"] if "ansible.builtin.add_host" in t)
    assert add["loop"] == "{{ hostvars['localhost'].linerate_host_rollout_plan.sentinels }}"
    assert add["ansible.builtin.add_host"]["ansible_connection"] == "local"
    assert add["ansible.builtin.add_host"]["ansible_become"] is False
    assert add["ansible.builtin.add_host"]["groups"] == ["linerate_rollout_sentinels"]
    # add_host makes it groups['all'][0], the host the output directory's default is read from
    assert add["ansible.builtin.add_host"]["inventory_dir"] == "{{ inventory_dir }}"


def test_the_report_play_keeps_localhost_and_stops_the_failed_and_skipped_nodes():
    play = _play("Report the rollout")
    assert play["hosts"] == "{{ ['localhost'] + hostvars['localhost'].linerate_host_rollout_plan.order | default([]) }}"
    names = [t["name"] for t in play["tasks"]]
    probe = play["tasks"][1]
    assert probe["ignore_unreachable"] is True and probe["delegate_to"] == "{{ item }}"
    assert "rollout_unmarked(hostvars)" in probe["loop"]
    assert names[-1] == "Stop the nodes whose disruptive step failed or that the halt left as they were"
    assert "['failed', 'skipped']" in play["tasks"][-1]["when"]
