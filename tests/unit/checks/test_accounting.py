"""Every node and switch in scope accounted for (module_utils/checks/accounting.py): the reason a node did not
finish, each switch read, natural order; through the report action: report/test_report.py."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import accounting

from report.test_report import UNREACHABLE


@pytest.mark.parametrize(
    "probe, reason, text",
    [
        (UNREACHABLE, "unreachable", "unreachable (Failed to connect"),
        ({"item": "node3", "ping": "pong", "changed": False}, "left_play", "it answers now"),
        # report.yml's probe: the node's sshd banner, waited for from the controller
        ({"item": "node3", "state": "started", "port": 22, "elapsed": 0, "failed": False}, "left_play", "it answers now"),
        (
            {"item": "node3", "failed": False, "elapsed": 10, "msg": "Timeout when waiting for search string ^SSH- in 10.89.240.14:22"},
            "unreachable",
            "does not answer (Timeout when waiting for search string",
        ),
        ({"item": "node3", "failed": False, "msg": "python3: not found"}, "unreachable", "does not answer (python3: not found)"),
        ({"item": "node3", "skipped": True}, "unknown", "left no result"),
        (None, "unknown", "left no result"),
    ],
)
def test_each_reason_a_node_did_not_finish(probe, reason, text):
    got, msg = accounting.node_reason("node3", None, probe)
    assert got == reason and text in msg and msg.startswith("node3: not verified")


def test_a_recorded_failure_wins_over_the_probe():
    assert accounting.node_reason("node3", {"task": "T", "msg": "m"}, UNREACHABLE)[0] == "failed"


SNAP = {"failed": False, "msg": "", "platform": "cumulus", "ports": {"swp1": {}}, "errors": {}}


def test_switches_read_are_accounted_for():
    lldp = {"leaf1": {"neighbors": {"swp1": []}, "changed": False}, "leaf2": {"neighbors": {}}}
    f, check = accounting.switch_findings(["leaf1", "leaf2"], lldp, {"leaf1": {"before": SNAP, "after": SNAP}})
    assert f == [] and check["passed"] and check["detail"] == "2/2 switches in scope read"


def test_an_unreachable_switch_is_an_error_naming_each_failed_read():
    # what the role's failed_when: false leaves of a failed read: failed cleared, msg kept, no table
    lldp = {"leaf1": {"failed": False, "failed_when_result": False, "msg": "TCP connection to device failed"}, "leaf2": {"neighbors": {}}}
    counters = {"leaf1": {"before": dict(SNAP, failed=True, msg="timed out"), "after": SNAP}}
    f, check = accounting.switch_findings(["leaf1", "leaf2"], lldp, counters)
    (x,) = f
    assert (x["code"], x["severity"], x["switch"], x["node"]) == ("SWITCH_UNREACHABLE", "error", "leaf1", None)
    assert x["message"] == ("leaf1: not verified: LLDP neighbours: TCP connection to device failed; counters (before): timed out")
    assert not check["passed"] and check["unreachable"] == ["leaf1"]
    assert [c["ok"] for c in check["cases"]] == [False, True]


def test_a_switch_that_left_the_run_and_a_skipped_read():
    f, _check = accounting.switch_findings(["leaf1", "leaf2"], {"leaf2": {"skipped": True}}, {}, left=["leaf1"])
    assert [x["switch"] for x in f] == ["leaf1"] and "left the play" in f[0]["message"]
    assert accounting.switch_findings([], {}, {}) == ([], None)


def test_nodes_and_switches_in_scope_are_accounted_for_in_natural_order():
    _f, check = accounting.node_findings(["node10", "node2", "node1"], ["node10", "node2", "node1"])
    assert [c["name"] for c in check["cases"]] == ["node1 verified", "node2 verified", "node10 verified"]
    _f, check = accounting.switch_findings(["leaf10", "leaf2"])
    assert [c["name"] for c in check["cases"]] == ["leaf2 reachable", "leaf10 reachable"]


def test_a_recorded_unreachable_node_is_named_unreachable_not_failed():
    rec = {"task": "Check that the node answers before verifying it", "msg": "timed out", "unreachable": True}
    assert accounting.node_reason("node3", rec)[0] == "unreachable"
    assert accounting.node_reason("node3", dict(rec, unreachable=False))[0] == "failed"
    assert accounting.node_reason("node3", dict(rec, unreachable="True"))[0] == "unreachable"
