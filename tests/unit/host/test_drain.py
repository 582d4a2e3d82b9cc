"""node_drain: the exact scontrol / kubectl argv, check mode, idempotence, return to service only of what
linerate drained, a foreign drain or cordon left alone; the lab's stand-ins answer as the real tools do."""

import json
import os
import sys

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.host import drain
from ansible_collections.linerate.fabric.plugins.modules import node_drain
from module_harness import Tools, run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "lab", "schedsim"))
import schedsim  # noqa: E402

FLAP = {"code": "LINK_FLAP", "severity": "error", "device": "mlx5_1", "node": "node2"}
WARN = {"code": "PCIE_SLOT_LIMITED", "severity": "warning", "device": "mlx5_0", "node": "node2"}


@pytest.fixture()
def sim(tmp_path, monkeypatch):
    monkeypatch.setattr(schedsim, "STATE_DIR", str(tmp_path))
    schedsim.init(["node1", "node2", "node3"])

    def tool(name):
        def handler(args):
            try:
                return 0, {"scontrol": schedsim.scontrol, "kubectl": schedsim.kubectl}[name](args), ""
            except schedsim.Exit as e:
                return e.rc, e.out, e.err

        return handler

    return Tools({"scontrol": tool("scontrol"), "kubectl": tool("kubectl")})


def run(capsys, tools, scheduler, nodes, check=False, diff=False, **policy):
    return run_module(node_drain.main, dict({"scheduler": scheduler, "nodes": nodes}, **policy), tools, capsys, check=check, diff=diff)


def slurm_node(name):
    return drain.parse_scontrol_node(schedsim.scontrol(["show", "node", name]))


def k8s_node(name):
    return drain.parse_kubectl_node(schedsim.kubectl(["get", "node", name, "-o", "json"]))


NODES = [{"name": "node1", "findings": [], "verified": True}, {"name": "node2", "findings": [FLAP, WARN], "verified": True}]


def test_slurm_drains_the_faulty_node_with_the_code_in_the_reason(sim, capsys):
    res = run(capsys, sim, "slurm", NODES, diff=True)
    assert res["changed"] and res["drained"] == ["node2"] and res["returned"] == []
    assert sim.calls == [
        ["scontrol", "show", "node", "node1"],
        ["scontrol", "show", "node", "node2"],
        ["scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=linerate: LINK_FLAP mlx5_1"],
        ["scontrol", "show", "node", "node2"],
    ]
    n = slurm_node("node2")
    assert n["state"] == "IDLE+DRAIN" and n["reason"] == "linerate: LINK_FLAP mlx5_1" and n["reason_by"].startswith("root@")
    assert slurm_node("node1")["state"] == "IDLE"
    assert res["diff"] == {"before": "node2: IDLE\n", "after": "node2: IDLE+DRAIN Reason=linerate: LINK_FLAP mlx5_1\n"}
    # idempotent: the same findings again change nothing and run no update
    sim.calls.clear()
    again = run(capsys, sim, "slurm", NODES)
    assert not again["changed"] and again["commands"] == []
    assert [c[1] for c in sim.calls] == ["show", "show"]


def test_slurm_check_mode_shows_the_drain_and_changes_nothing(sim, capsys):
    res = run(capsys, sim, "slurm", NODES, check=True, diff=True)
    assert res["changed"] and res["commands"] == [["scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=linerate: LINK_FLAP mlx5_1"]]
    assert [c[1] for c in sim.calls] == ["show", "show"]
    assert slurm_node("node2")["state"] == "IDLE"
    assert res["diff"]["after"] == "node2: drained: linerate: LINK_FLAP mlx5_1\n"


def test_slurm_returns_only_what_linerate_drained_once_it_passes(sim, capsys):
    run(capsys, sim, "slurm", NODES)
    schedsim.scontrol(["update", "NodeName=node3", "State=DRAIN", "Reason=disk replacement"])
    sim.calls.clear()
    passing = [{"name": n, "findings": [], "verified": True} for n in ("node1", "node2", "node3")]
    res = run(capsys, sim, "slurm", passing)
    assert res["returned"] == ["node2"] and res["left_alone"] == ["node3"]
    assert ["scontrol", "update", "NodeName=node2", "State=RESUME"] in sim.calls
    assert not [c for c in sim.calls if "NodeName=node3" in c]
    assert slurm_node("node2")["state"] == "IDLE" and slurm_node("node2")["reason"] is None
    n3 = slurm_node("node3")
    assert n3["state"] == "IDLE+DRAIN" and n3["reason"] == "disk replacement"


def test_slurm_a_foreign_drain_keeps_its_reason_even_with_faults(sim, capsys):
    schedsim.scontrol(["update", "NodeName=node2", "State=DRAIN", "Reason=disk replacement"])
    res = run(capsys, sim, "slurm", NODES)
    assert not res["changed"] and res["left_alone"] == ["node2"]
    assert "another reason" in res["nodes"]["node2"]["note"]
    assert slurm_node("node2")["reason"] == "disk replacement"


def test_slurm_not_rechecked_stays_drained_and_new_faults_update_the_reason(sim, capsys):
    run(capsys, sim, "slurm", NODES)
    res = run(capsys, sim, "slurm", [{"name": "node2", "findings": [], "verified": False}])
    assert not res["changed"] and slurm_node("node2")["state"] == "IDLE+DRAIN"
    port = dict(FLAP, code="PORT_DOWN", device="mlx5_0")
    sim.calls.clear()
    res = run(capsys, sim, "slurm", [{"name": "node2", "findings": [FLAP, port], "verified": True}])
    assert res["nodes"]["node2"]["action"] == "reason"
    assert ["scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=linerate: LINK_FLAP mlx5_1; PORT_DOWN mlx5_0"] in sim.calls


def test_slurm_return_to_service_off_leaves_it_drained(sim, capsys):
    run(capsys, sim, "slurm", NODES)
    res = run(capsys, sim, "slurm", [{"name": "node2", "findings": [], "verified": True}], return_to_service=False)
    assert not res["changed"] and slurm_node("node2")["state"] == "IDLE+DRAIN"


@pytest.mark.parametrize(
    "policy,drains",
    [
        ({}, True),  # errors drain
        ({"drain_severities": []}, False),  # nothing drains
        ({"drain_severities": [], "drain_codes": ["LINK_FLAP"]}, True),  # by code
        ({"exempt_codes": ["LINK_FLAP"]}, False),  # exempt
    ],
)
def test_policy_selects_what_drains(sim, capsys, policy, drains):
    res = run(capsys, sim, "slurm", [{"name": "node2", "findings": [FLAP], "verified": True}], **policy)
    assert res["drained"] == (["node2"] if drains else [])


def test_a_warning_alone_does_not_drain_unless_asked(sim, capsys):
    assert run(capsys, sim, "slurm", [{"name": "node2", "findings": [WARN], "verified": True}])["drained"] == []
    res = run(capsys, sim, "slurm", [{"name": "node2", "findings": [WARN], "verified": True}], drain_severities=["error", "warning"])
    assert slurm_node("node2")["reason"] == "linerate: PCIE_SLOT_LIMITED mlx5_0" and res["drained"] == ["node2"]


def test_bad_policy_fails_naming_key_and_value_and_changes_nothing(sim, capsys):
    res = run(capsys, sim, "slurm", NODES, drain_codes=["LINK_FLAPS"])
    assert res["failed"] and "drain_codes: 'LINK_FLAPS' is not a linerate fault code" in res["msg"]
    assert sim.calls == []
    res = run(capsys, sim, "slurm", NODES, drain_severities=["fatal"])
    assert res["failed"] and "drain_severities: 'fatal'" in res["msg"]


def test_unknown_node_fails_with_scontrols_answer(sim, capsys):
    res = run(capsys, sim, "slurm", [{"name": "node9", "findings": [FLAP], "verified": True}])
    assert res["failed"] and "Node node9 not found" in res["msg"]


def test_kubernetes_cordons_taints_and_returns(sim, capsys):
    res = run(capsys, sim, "kubernetes", NODES, diff=True)
    assert res["drained"] == ["node2"]
    assert sim.calls == [
        ["kubectl", "get", "node", "node1", "-o", "json"],
        ["kubectl", "get", "node", "node2", "-o", "json"],
        ["kubectl", "cordon", "node2"],
        ["kubectl", "annotate", "node", "node2", "linerate.fabric/cordoned=true"],
        ["kubectl", "taint", "nodes", "node2", "linerate.fabric/fault=LINK_FLAP:NoSchedule"],
        ["kubectl", "annotate", "node", "node2", "linerate.fabric/reason=linerate: LINK_FLAP mlx5_1", "--overwrite"],
        ["kubectl", "get", "node", "node2", "-o", "json"],
    ]
    n = k8s_node("node2")
    assert n["unschedulable"] and {"key": "linerate.fabric/fault", "value": "LINK_FLAP", "effect": "NoSchedule"} in n["taints"]
    sim.calls.clear()
    assert not run(capsys, sim, "kubernetes", NODES)["changed"]
    assert len(sim.calls) == 2
    sim.calls.clear()
    res = run(capsys, sim, "kubernetes", [{"name": "node2", "findings": [], "verified": True}])
    assert res["returned"] == ["node2"]
    assert sim.calls[1:4] == [
        ["kubectl", "taint", "nodes", "node2", "linerate.fabric/fault:NoSchedule-"],
        ["kubectl", "uncordon", "node2"],
        ["kubectl", "annotate", "node", "node2", "linerate.fabric/cordoned-", "linerate.fabric/reason-"],
    ]
    n = k8s_node("node2")
    assert not n["unschedulable"] and n["taints"] == [] and n["annotations"] == {}


def test_kubernetes_foreign_cordon_is_never_uncordoned(sim, capsys):
    schedsim.kubectl(["cordon", "node2"])
    res = run(capsys, sim, "kubernetes", NODES)
    assert ["kubectl", "cordon", "node2"] not in sim.calls and "someone else" in res["nodes"]["node2"]["note"]
    sim.calls.clear()
    res = run(capsys, sim, "kubernetes", [{"name": "node2", "findings": [], "verified": True}])
    assert ["kubectl", "uncordon", "node2"] not in sim.calls
    n = k8s_node("node2")
    assert n["unschedulable"] and not drain.k8s_ours(n)
    # a node cordoned by someone else without linerate's marks is left alone entirely
    schedsim.kubectl(["cordon", "node3"])
    sim.calls.clear()
    res = run(capsys, sim, "kubernetes", [{"name": "node3", "findings": [], "verified": True}])
    assert res["left_alone"] == ["node3"] and not res["changed"] and k8s_node("node3")["unschedulable"]


def test_kubernetes_check_mode_runs_no_write(sim, capsys):
    res = run(capsys, sim, "kubernetes", NODES, check=True)
    assert res["changed"] and {c[1] for c in sim.calls} == {"get"}
    assert not k8s_node("node2")["unschedulable"]


def test_parse_scontrol_reason_with_brackets_and_one_liner():
    text = schedsim.show_node(
        {
            "name": "gpu01",
            "base": "MIXED",
            "flags": ["DRAIN"],
            "reason": "linerate: X [a]",
            "reason_user": "slurm",
            "reason_time": "2024-01-01T00:00:00",
            "boot": "None",
        },
        True,
    )
    n = drain.parse_scontrol_node(text)
    assert n["state"] == "MIXED+DRAIN" and n["reason"] == "linerate: X [a]" and n["reason_by"] == "slurm@2024-01-01T00:00:00"
    assert drain.slurm_ours(n)


def test_stand_in_refuses_what_scontrol_refuses(sim):
    with pytest.raises(schedsim.Exit, match="You must specify a reason"):
        schedsim.scontrol(["update", "NodeName=node1", "State=DRAIN"])
    with pytest.raises(schedsim.Exit, match="Update of this parameter is not supported: Status=DRAIN"):
        schedsim.scontrol(["update", "NodeName=node1", "Status=DRAIN"])
    with pytest.raises(schedsim.Exit, match="Valid states are"):
        schedsim.scontrol(["update", "NodeName=node1", "State=DRAINED", "Reason=x"])
    with pytest.raises(schedsim.Exit, match="Invalid node state"):
        schedsim.scontrol(["update", "NodeName=node1", "State=RESUME"])
    # abbreviations the real parser takes
    schedsim.scontrol(["update", "N=node1", "st=drain", 'R="maint"'])
    assert slurm_node("node1")["reason"] == "maint"
    with pytest.raises(schedsim.Exit, match="invalid keyword: drain"):
        schedsim.scontrol(["drain", "node1"])


def test_stand_in_refuses_what_kubectl_refuses(sim):
    with pytest.raises(schedsim.Exit, match="invalid taint effect: NoSched"):
        schedsim.kubectl(["taint", "nodes", "node1", "a/b=c:NoSched"])
    with pytest.raises(schedsim.Exit, match='nodes "node9" not found'):
        schedsim.kubectl(["cordon", "node9"])
    schedsim.kubectl(["annotate", "node", "node1", "a/b=1"])
    with pytest.raises(schedsim.Exit, match="--overwrite is false"):
        schedsim.kubectl(["annotate", "node", "node1", "a/b=2"])
    assert json.loads(schedsim.kubectl(["get", "node", "node1", "-o", "json"]))["metadata"]["annotations"] == {"a/b": "1"}


# ---------------------------------------------------------------- the real Slurm's records (lab captures)


def test_real_slurm_22_05_records_are_read():
    """Records of Debian's slurmctld 22.05.8 in the lab (fixtures/drain/SOURCES.md): a drain slurmctld made
    itself is out of service and not linerate's, its reason and stamp apart."""
    with open(os.path.join(ROOT, "tests", "unit", "fixtures", "drain", "slurm_22.05_show_node_inval.txt")) as f:
        node = drain.parse_scontrol_node(f.read())
    assert node["name"] == "node2" and node["state"] == "UNKNOWN+DRAIN+INVALID_REG"
    assert node["base"] == "UNKNOWN" and node["flags"] == ["DRAIN", "INVALID_REG"]
    assert node["reason"] == "gres/gpu count reported lower than configured (0 < 8)"
    assert node["reason_by"] == "slurm@2026-12-02T13:01:23"
    assert drain.slurm_out_of_service(node) and not drain.slurm_ours(node)
    action, tail, _note = drain.slurm_plan(node, None, True, True)
    assert action == "foreign" and tail is None


def test_real_slurm_22_05_drain_by_linerate_in_both_layouts():
    """The lab's slurmctld after linerate's own drain command (fixtures/drain/SOURCES.md): the reason with both
    faults, stamped root@time, read alike from the multi-line and the one-line (scontrol -o) record."""
    d = os.path.join(ROOT, "tests", "unit", "fixtures", "drain")
    nodes = []
    for name in ("slurm_22.05_show_node_drained.txt", "slurm_22.05_show_node_drained_oneliner.txt"):
        with open(os.path.join(d, name)) as f:
            nodes.append(drain.parse_scontrol_node(f.read()))
    assert nodes[0] == nodes[1]
    node = nodes[0]
    assert (node["name"], node["state"], node["base"], node["flags"]) == ("node4", "IDLE+DRAIN", "IDLE", ["DRAIN"])
    assert node["reason"] == drain.reason([("LINK_FLAP", "mlx5_1"), ("PORT_DOWN", "mlx5_0")])
    assert node["reason_by"] == "root@2026-12-02T13:45:01"
    assert drain.slurm_ours(node)
    # the same faults again: nothing to do; fewer faults: the reason is replaced; none and re-checked: resume
    assert drain.slurm_plan(node, node["reason"], True, True)[0] == "none"
    assert drain.slurm_plan(node, drain.reason([("LINK_FLAP", "mlx5_1")]), True, True)[1] == [
        "update",
        "NodeName=node4",
        "State=DRAIN",
        "Reason=linerate: LINK_FLAP mlx5_1",
    ]
    assert drain.slurm_plan(node, None, True, True)[1] == ["update", "NodeName=node4", "State=RESUME"]
