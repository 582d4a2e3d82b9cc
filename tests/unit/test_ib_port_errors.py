"""Fabric-wide InfiniBand port error counters (issue 24, item 3): ibqueryerrors over the whole subnet,
judged against fabric.verify.ib_error_thresholds, each finding naming both ends of the link (from
ibnetdiscover), placed in the report (switch, port, node, device, peer switch) under ib_port_errors.

Fixtures: the real infiniband-diags 44.0 ibqueryerrors against ibsim on the lab-ib net file
(fixtures/counters/SOURCES.md) and the lab-ib ibnetdiscover capture."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import ib as ibcheck
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import ibdiag
from ansible_collections.linerate.fabric.plugins.module_utils.probes import ib_fabric as ibfabric
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import parse_ibqueryerrors
from module_harness import fixture
from probes.test_ib_fabric import ARGS, Diag, counters, run
from checks.test_ib import _intent

LINKS, UPLINKS, SWITCHES = _intent()
ND = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
ERRORS = counters("ibqueryerrors_lab_ibsim_errors.txt")
LEAF1, SPINE1, NODE2_PORT = "0xe41d2d0300a00001", "0xe41d2d0300a00003", "0xa088c20300000201"


def judge(text=ERRORS, thresholds=None, baseline=None):
    limits = dict(ibcheck.IB_PORT_ERROR_DEFAULTS, **(thresholds or {}))
    pc = ibcheck.port_error_counters(parse_ibqueryerrors(text))
    return ibcheck.check_port_errors(pc, ND, SWITCHES, LINKS, limits, baseline)


def test_port_counters_are_keyed_by_the_guid_of_each_port_line_without_the_switch_aggregate():
    pc = ibcheck.port_error_counters(parse_ibqueryerrors(ERRORS))
    assert pc == {
        f"{SPINE1}/1": {"PortXmitDiscards": 12},
        f"{NODE2_PORT}/1": {"PortRcvErrors": 7},
        f"{LEAF1}/7": {"SymbolErrorCounter": 250, "LinkDownedCounter": 3},
    }


def test_each_link_is_one_finding_naming_both_ends_and_what_each_end_counted():
    f = judge()
    assert [(x["code"], x["node"], x["port"], x["peer"], x["peer_port"], x["link_kind"]) for x in f] == [
        ("IB_LINK_ERRORS", "leaf1", 2, "node2 mlx5_0", 1, "host"),
        ("IB_LINK_ERRORS", "leaf1", 7, "spine1", 1, "isl"),
    ]
    host, isl = f
    # the CA end counted it; the switch end (where the cable is) is the finding's node
    assert host["counters"] == {"node2 mlx5_0 port 1": {"PortRcvErrors": 7}}
    assert host["message"] == (
        "link leaf1 port 2 <-> node2 mlx5_0 port 1: node2 mlx5_0 port 1 counted PortRcvErrors 7 "
        "(thresholds PortRcvErrors 0, since the counters were last cleared)"
    )
    # leaf1 port 7 <-> spine1 port 1 is one cable: both ends' counts in one finding
    assert isl["counters"] == {"leaf1 port 7": {"LinkDownedCounter": 3, "SymbolErrorCounter": 250}, "spine1 port 1": {"PortXmitDiscards": 12}}
    assert isl["message"].startswith(
        "inter-switch link leaf1 port 7 <-> spine1 port 1: leaf1 port 7 counted "
        "LinkDownedCounter 3, SymbolErrorCounter 250; spine1 port 1 counted "
        "PortXmitDiscards 12 (thresholds "
    )
    assert isl["peer_type"] == "switch" and isl["thresholds"] == {"LinkDownedCounter": 0, "SymbolErrorCounter": 0, "PortXmitDiscards": 0}


def test_a_count_at_its_threshold_passes_one_above_fails():
    limits = {"SymbolErrorCounter": 250, "LinkDownedCounter": 3, "PortXmitDiscards": 12, "PortRcvErrors": 7}
    assert judge(thresholds=limits) == []
    f = judge(thresholds=dict(limits, SymbolErrorCounter=249))
    assert [(x["node"], x["port"], x["counters"]) for x in f] == [("leaf1", 7, {"leaf1 port 7": {"SymbolErrorCounter": 250}})]


def test_a_counter_without_a_threshold_is_not_judged():
    text = (
        'Errors for 0xe41d2d0300a00001 "leaf1"\n   GUID 0xe41d2d0300a00001 port 1: [PortXmitWait == 9999]\n\n## Summary: 7 nodes checked, 1 bad nodes found\n'
    )
    assert judge(text) == []


def test_with_a_baseline_only_the_window_counts_and_a_cleared_counter_counts_what_it_shows():
    base = {f"{LEAF1}/7": {"SymbolErrorCounter": 250, "LinkDownedCounter": 1}, f"{SPINE1}/1": {"PortXmitDiscards": 12}, f"{NODE2_PORT}/1": {"PortRcvErrors": 9}}
    f = judge(baseline=base)
    # leaf1 7: Symbol +0, LinkDowned +2; spine1 +0; node2 went 9 -> 7: cleared, 7 counted
    assert [(x["node"], x["port"], x["counters"]) for x in f] == [
        ("leaf1", 2, {"node2 mlx5_0 port 1": {"PortRcvErrors": 7}}),
        ("leaf1", 7, {"leaf1 port 7": {"LinkDownedCounter": 2}}),
    ]
    assert f[1]["message"].endswith("over the window since the baseline)")


def test_the_module_accepts_exit_1_and_returns_counters_summary_and_findings(capsys):
    res, calls = run(capsys, Diag(queryerrors=(1, ERRORS, "")), checks=["errors"], fail_on_findings=False)
    assert calls == [["timeout", "7", "ibnetdiscover"], ["timeout", "7", "ibqueryerrors", "--threshold-file", "/dev/null"]]
    assert [(x["code"], x["node"], x["port"]) for x in res["findings"]] == [("IB_LINK_ERRORS", "leaf1", 2), ("IB_LINK_ERRORS", "leaf1", 7)]
    assert res["port_errors"][f"{LEAF1}/7"] == {"SymbolErrorCounter": 250, "LinkDownedCounter": 3}
    assert res["port_errors_summary"]["ports_checked"] == 112
    assert res["port_errors_summary"]["window"] == "since last clear" and res["changed"] is False
    res, _ = run(capsys, Diag(queryerrors=(1, ERRORS, "")), checks=["errors"])
    assert res["failed"] and res["msg"] == (
        "InfiniBand fabric check: IB_LINK_ERRORS leaf1 port 2 <-> node2 mlx5_0 port 1; IB_LINK_ERRORS leaf1 port 7 <-> spine1 port 1"
    )


def test_the_module_judges_the_window_against_a_baseline_and_the_given_thresholds(capsys):
    res, _ = run(
        capsys,
        Diag(queryerrors=(1, ERRORS, "")),
        checks=["errors"],
        fail_on_findings=False,
        errors_baseline={f"{NODE2_PORT}/1": {"PortRcvErrors": 7}},
        error_thresholds={"SymbolErrorCounter": 1000, "LinkDownedCounter": 5, "PortXmitDiscards": 20},
    )
    assert res["findings"] == [] and res["port_errors_summary"]["window"] == "baseline"
    assert res["port_errors_summary"]["thresholds"]["SymbolErrorCounter"] == 1000


@pytest.mark.parametrize(
    "rc,out,err",
    [
        (255, "", "ibwarn: [1] mad_rpc_open_port: can't open UMAD port ((null):0)\nibqueryerrors: iberror: failed: Failed to open port; (null):0\n"),
        (124, "", ""),
        (0, "garbage\n", ""),
    ],
)
def test_a_sweep_that_fails_is_an_error_finding_never_a_pass(capsys, rc, out, err):
    res, _ = run(capsys, Diag(queryerrors=(rc, out, err)), checks=["errors"], fail_on_findings=False)
    assert [x["code"] for x in res["findings"]] == ["IB_COUNTERS_UNREADABLE"]
    assert "port_errors" not in res and res["port_errors_error"].startswith("ibqueryerrors: ")
    assert faults.FAULT_CODES["IB_COUNTERS_UNREADABLE"][0] == "error"


@pytest.mark.parametrize(
    "thresholds,msg",
    [
        ({"PortXmitWait": 5}, "error_thresholds.PortXmitWait: 5: unknown counter; allowed: SymbolErrorCounter, "),
        ({"SymbolErrorCounter": -1}, "error_thresholds.SymbolErrorCounter: -1: allowed: an integer >= 0"),
        ({"SymbolErrorCounter": True}, "error_thresholds.SymbolErrorCounter: True: allowed: an integer >= 0"),
    ],
)
def test_bad_thresholds_fail_naming_key_value_and_what_is_allowed_before_any_tool_runs(thresholds, msg):
    calls = []

    def tool(argv, env=None):
        calls.append(argv)
        return 0, "", ""

    from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure

    with pytest.raises(ToolFailure) as e:
        ibfabric.fabric_check(tool, dict(ARGS, checks=["errors"], error_thresholds=thresholds))
    assert e.value.msg.startswith(msg) and calls == []


def test_the_report_places_host_links_on_node_and_device_and_isls_on_both_switches():
    f = ibcheck.ib_findings(
        {"findings": judge(), "port_errors_summary": {"ports_checked": 112, "nodes_checked": 7, "window": "since last clear"}}, set(SWITCHES)
    )
    assert [
        (x["code"], x["severity"], x["check"], x["switch"], x["switch_port"], x["node"], x["device"], x.get("peer_switch"), x.get("peer_port")) for x in f
    ] == [
        ("IB_LINK_ERRORS", "error", "ib_port_errors", "leaf1", "2", "node2", "mlx5_0", None, None),
        ("IB_LINK_ERRORS", "error", "ib_port_errors", "leaf1", "7", None, None, "spine1", "1"),
    ]
    checks = ibcheck.ib_checks(
        {"findings": [], "sminfo": {}, "summary": {}, "port_errors_summary": {"ports_checked": 112, "nodes_checked": 7, "window": "since last clear"}}, f
    )
    assert not checks["ib_port_errors"]["passed"]
    assert checks["ib_port_errors"]["detail"].startswith("112 ports of 7 nodes read by ibqueryerrors (since last clear); ")
    clean = ibcheck.ib_checks({"findings": [], "port_errors_summary": {"ports_checked": 112, "nodes_checked": 7, "window": "since last clear"}}, [])
    assert clean["ib_port_errors"]["passed"]
    # an older result without the errors check has no ib_port_errors check (nothing claimed)
    assert "ib_port_errors" not in ibcheck.ib_checks({"findings": []}, [])
