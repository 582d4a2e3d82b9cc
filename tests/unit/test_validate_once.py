"""validate_intent's digest: site.yml validates once, and a changed intent is validated again."""

import copy

from test_validate_action import PORT, run_action

GROUPS = {"all": ["node1", "leaf1"], "gpu_nodes": ["node1"], "switches": ["leaf1"]}
HOSTVARS = {"node1": {"rdma_ports": [PORT]}, "leaf1": {"switch_platform": "nvue"}}
FABRIC = {"name": "t", "transport": "roce"}


def test_the_same_inputs_are_not_validated_twice():
    first = run_action(GROUPS, HOSTVARS, fabric=FABRIC)
    assert not first.get("failed") and first["reused"] is False and len(first["digest"]) == 64
    again = run_action(GROUPS, HOSTVARS, fabric=copy.deepcopy(FABRIC), validated_digest=first["digest"])
    assert again["reused"] is True and again["digest"] == first["digest"] and again["changed"] is False
    assert "ansible_facts" not in again and again["problems"] == [] and "not checked again" in again["msg"]


def test_any_change_is_validated_in_full():
    digest = run_action(GROUPS, HOSTVARS, fabric=FABRIC)["digest"]
    # the intent (an -e override or an import's vars): an invalid one fails although a digest is given
    bad = run_action(GROUPS, HOSTVARS, fabric=dict(FABRIC, transport="ethernet"), validated_digest=digest)
    assert bad["failed"] is True and bad["reused"] is False and "fabric.transport" in bad["msg"]
    changed = run_action(GROUPS, HOSTVARS, fabric=dict(FABRIC, name="u"), validated_digest=digest)
    assert changed["reused"] is False and changed["ansible_facts"]["fabric_effective"]["name"] == "u"
    # the cabling of a host
    moved = {"node1": {"rdma_ports": [dict(PORT, switch_port="swp9")]}, "leaf1": HOSTVARS["leaf1"]}
    assert run_action(GROUPS, moved, fabric=FABRIC, validated_digest=digest)["reused"] is False
    # a switch's variables
    other = {"node1": HOSTVARS["node1"], "leaf1": {"switch_platform": "sonic"}}
    assert run_action(GROUPS, other, fabric=FABRIC, validated_digest=digest)["reused"] is False
    # the subnet managers
    sm = dict(GROUPS, subnet_managers=["node1"])
    assert run_action(sm, HOSTVARS, fabric=FABRIC, validated_digest=digest)["reused"] is False
    # another digest, or none
    assert run_action(GROUPS, HOSTVARS, fabric=FABRIC, validated_digest="0" * 64)["reused"] is False
    assert run_action(GROUPS, HOSTVARS, fabric=FABRIC, validated_digest="")["reused"] is False
