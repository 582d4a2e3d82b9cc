"""fabric.rollout: the host stack's serial and max_fail_percentage, from the intent (issue 25 item 4)."""
import os

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent import fabric as intent
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import show

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def problems(rollout):
    return schema.validate_fabric({"transport": "roce", "rollout": rollout})


def test_default_is_one_node_at_a_time_stopping_at_the_first_failure():
    assert intent.effective({})["rollout"] == {"batch": "100%", "max_fail_percentage": 0}
    assert intent.published({})["rollout"] == {"batch": "100%", "max_fail_percentage": 0}


@pytest.mark.parametrize("batch", [1, 4, 100000, "1%", "25%", "100%"])
def test_batches_ansible_serial_takes(batch):
    assert problems({"batch": batch}) == []


@pytest.mark.parametrize("batch", [0, -1, 100001, True, 2.5, "0%", "101%", "25", "25 %", "%", "a%", None, [1]])
def test_batches_refused_with_key_value_and_what_is_allowed(batch):
    assert problems({"batch": batch}) == [
        f"fabric.rollout.batch: {show(batch)} is not allowed (allowed: a number of nodes >= 1 or a percentage "
        "'1%'..'100%' of gpu_nodes (the host stack's serial: nodes changed at a time))"]


@pytest.mark.parametrize("value,ok", [(0, True), (50, True), (100, True), (-1, False), (101, False),
                                      ("10", False), (True, False), (1.5, False)])
def test_max_fail_percentage(value, ok):
    expected = [] if ok else [
        f"fabric.rollout.max_fail_percentage: {show(value)} is not allowed (allowed: an integer 0..100)"]
    assert problems({"max_fail_percentage": value}) == expected


def test_unknown_key_and_non_mapping():
    assert problems({"serial": 2}) == [
        "fabric.rollout.serial: 2 is not allowed (unknown key; allowed keys: batch, max_fail_percentage)"]
    assert problems(3) == ["fabric.rollout: 3 is not allowed (allowed: a mapping)"]


def _play(name):
    with open(os.path.join(ROOT, "playbooks", "stages", "hosts.yml"), encoding="utf-8") as f:
        return next(p for p in yaml.safe_load(f) if p["name"] == name)


def test_the_host_stack_play_rolls_from_the_intent():
    play = _play("Install and configure the RDMA host stack")
    assert play["serial"] == "{{ linerate_host_rollout.batch }}"
    assert play["max_fail_percentage"] == "{{ linerate_host_rollout.max_fail_percentage }}"
    # the validated intent, as the validate play left it on localhost (serial is templated without a host)
    assert "hostvars['localhost'].linerate_host_rollout_intent" in play["vars"]["linerate_host_rollout"]
