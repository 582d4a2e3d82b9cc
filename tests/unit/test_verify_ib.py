"""InfiniBand subnet check results in the verification report: findings
placed on switch, port, node and device; checks subnet_manager, ib_topology
and ib_partitions; a check that could not run is an error, not a pass."""

from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import junit as report_junit
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.checks import ib as checks_ib
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults

from checks.test_ib import _check
from checks.test_plans import FABRIC

SWITCHES = {"leaf1", "leaf2", "spine1"}
SMINFO = {"guid": "0xa088c20300000101", "lid": 1, "priority": 15, "state_name": "SMINFO_MASTER", "master": True}


def result(findings, pkeys=4):
    return {
        "sminfo": SMINFO,
        "summary": {"switches": 3, "cas": 4, "links": 6},
        "findings": findings,
        "pkey_tables": {f"0x{i}": ["0xffff"] for i in range(pkeys)},
    }


def test_clean_subnet_passes_all_three_checks():
    f = checks_ib.ib_findings(result([]), SWITCHES)
    checks = checks_ib.ib_checks(result([]), f)
    assert f == []
    assert [checks[c]["passed"] for c in ("subnet_manager", "ib_topology", "ib_partitions")] == [True] * 3
    assert checks["subnet_manager"]["detail"] == "MASTER 0xa088c20300000101 (lid 1) priority 15"
    assert checks["ib_topology"]["detail"] == "3 switches, 4 CAs, 6 links as cabled"


def test_missing_and_swapped_links_name_switch_port_node_and_device():
    raw = _check("lab-ib-missing-swapped.txt")
    f = checks_ib.ib_findings(result(raw), SWITCHES)
    by = {x["code"]: x for x in f}
    missing = by["IB_LINK_MISSING"]
    assert (missing["switch"], missing["switch_port"], missing["node"], missing["device"]) == ("leaf1", "2", "node2", "mlx5_0")
    assert missing["layer"] == "cabling" and missing["check"] == "ib_topology"
    swapped = by["IB_PORTS_SWAPPED"]
    assert (swapped["switch"], swapped["switch_port"]) == ("leaf2", "1")
    assert swapped["evidence"]["ports"] == [1, 2]
    checks = checks_ib.ib_checks(result(raw), f)
    assert not checks["ib_topology"]["passed"] and checks["subnet_manager"]["passed"]
    assert not faults.summarize(f)["passed"]


def test_sm_not_master_and_partition_findings():
    raw = [
        {"code": "IB_SM_NOT_MASTER", "node": "node1", "port": None, "message": "SM 0xa088c20300000201 (lid 2) is SMINFO_STANDBY, not MASTER"},
        {"code": "IB_PARTITION_NOT_IN_FORCE", "node": "node4 mlx5_0", "port": 1, "message": "node4 mlx5_0 lacks pkey 0x0020"},
    ]
    f = checks_ib.ib_findings(result(raw), SWITCHES)
    assert [(x["code"], x["node"], x["device"], x["check"], x["layer"]) for x in f] == [
        ("IB_SM_NOT_MASTER", "node1", None, "subnet_manager", "subnet_manager"),
        ("IB_PARTITION_NOT_IN_FORCE", "node4", "mlx5_0", "ib_partitions", "partition"),
    ]
    checks = checks_ib.ib_checks(result(raw), f)
    assert not checks["subnet_manager"]["passed"] and not checks["ib_partitions"]["passed"]
    assert checks["ib_topology"]["passed"]


def test_unexpected_device_is_a_warning_placed_where_cabled():
    raw = [
        {
            "code": "IB_UNEXPECTED_DEVICE",
            "node": "rogue mlx5_0",
            "port": 9,
            "switch": "leaf2",
            "message": "CA 0x1 ('rogue mlx5_0') is not in the inventory, cabled to leaf2 port 9",
        }
    ]
    f = checks_ib.ib_findings(result(raw), SWITCHES)
    assert (f[0]["severity"], f[0]["switch"], f[0]["switch_port"], f[0]["node"]) == ("warning", "leaf2", "9", "rogue")
    assert faults.summarize(f)["passed"]


def test_a_check_that_could_not_run_fails_the_report():
    failed = {"failed": True, "host": "node1", "msg": "sminfo: iberror: failed: Failed to open '(null)' port '0'"}
    f = checks_ib.ib_findings(failed, SWITCHES)
    checks = checks_ib.ib_checks(failed, f)
    assert [x["code"] for x in f] == ["IB_CHECK_FAILED"]
    assert not checks["subnet_manager"]["passed"]
    assert checks["ib_topology"]["skipped"] and not checks["ib_topology"]["passed"]
    assert not faults.summarize(f)["passed"]


def test_report_markdown_and_junit_carry_the_subnet_checks():
    raw = _check("lab-ib-missing-swapped.txt")
    f = checks_ib.ib_findings(result(raw), SWITCHES)
    doc = report.build_report(f, faults.summarize(f), checks_ib.ib_checks(result(raw), f), dict(FABRIC, name="lab-ib", transport="infiniband"))
    md = report_markdown.to_markdown(doc)
    assert "| subnet_manager | pass | MASTER 0xa088c20300000101" in md
    assert "| ib_topology | FAIL |" in md
    assert "| IB_LINK_MISSING | cabling | node2 | mlx5_0 | leaf1 | 2 |" in md
    junit = report_junit.to_junit(doc)
    assert 'name="ib_topology"' in junit and 'type="IB_LINK_MISSING"' in junit
