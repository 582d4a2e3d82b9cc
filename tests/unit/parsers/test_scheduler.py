"""Unit tests for plugins/module_utils/parsers/scheduler.py: Slurm's ``scontrol show node`` and
``kubectl get node -o json`` records, on the fixtures of tests/unit/fixtures/drain (SOURCES.md)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.scheduler import parse_kubectl_node, parse_scontrol_node


def test_a_drained_node_with_the_reason_slurmctld_stamped():
    node = parse_scontrol_node(fixture("drain", "scontrol_show_node_drained.txt"))
    assert node == {
        "name": "gpu02",
        "state": "IDLE+DRAIN",
        "base": "IDLE",
        "flags": ["DRAIN"],
        "reason": "linerate: LINK_FLAP mlx5_1",
        "reason_by": "root@2026-11-26T20:39:38",
    }


def test_the_one_line_form_ends_the_reason_at_the_next_known_key():
    # scontrol -o: one line; Reason= runs to the optional keys printed after it
    text = "NodeName=n1 Arch=x86_64 State=DOWN* Reason=cable pulled [ops@2026-12-01T10:00:00] Comment=rack 7\n"
    node = parse_scontrol_node(text)
    assert (node["base"], node["flags"], node["reason"], node["reason_by"]) == ("DOWN", [], "cable pulled", "ops@2026-12-01T10:00:00")


def test_a_record_without_nodename_or_state_is_an_error():
    with pytest.raises(ParseError, match="scontrol: no NodeName=/State= in the output"):
        parse_scontrol_node("slurm_load_node error: Invalid node name specified\n")


def test_a_cordoned_kubernetes_node():
    node = parse_kubectl_node(fixture("drain", "kubectl_get_node_cordoned.json"))
    assert node["name"] == "gpu02" and node["unschedulable"] is True
    assert {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}.items() <= node["taints"][0].items()


@pytest.mark.parametrize(
    "text,message",
    [
        ('Error from server (NotFound): nodes "gpu09" not found', "kubectl: not JSON"),
        ('{"kind": "Pod"}', "kubectl: not a Node object \\(kind Pod\\)"),
        ("[1, 2]", "kubectl: not a Node object \\(kind list\\)"),
    ],
)
def test_what_is_not_a_node_object_is_an_error(text, message):
    with pytest.raises(ParseError, match=message):
        parse_kubectl_node(text)
