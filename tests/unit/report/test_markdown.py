"""The report people read (issue 40 point 8): heat-map titles that never overlap, BER as a person reads it,
natural port order, report.html beside summary.md, every state named as it is."""

import json
import os
import re
from xml.etree import ElementTree as ET

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import accounting
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults


# ---------------------------------------------------------------- BER for people


@pytest.mark.parametrize(
    "value, text",
    [
        (1.5e-254, "< 1e-15"),
        (0, "< 1e-15"),
        (0.0, "< 1e-15"),
        (9.9e-16, "< 1e-15"),
        (1e-15, "1.0e-15"),
        (1.5e-12, "1.5e-12"),
        (2.4e-4, "2.4e-4"),
        (3e-8, "3.0e-8"),
        (None, ""),
        ("n/a", "n/a"),
    ],
)
def test_a_ber_reads_as_a_person_reads_it(value, text):
    assert report_markdown.ber_text(value) == text


def link_health_report(ports, findings=()):
    check = {"passed": True, "detail": "ports", "ports": ports}
    return report.build_report(
        list(findings), faults.summarize(list(findings)), {"link_health": check}, {"name": "lab", "transport": "roce", "link_speed_gbps": 400}
    )


def port(node, device, switch_port, ber=1.5e-254):
    return {
        "node": node,
        "device": device,
        "switch": "leaf1",
        "switch_port": switch_port,
        "errors": 0,
        "flaps": 0,
        "switch_errors": 0,
        "switch_flaps": 0,
        "effective_ber": ber,
        "raw_ber": 2.5e-9,
        "fec": "RS",
    }


def test_the_link_health_table_shows_none_counted_as_an_upper_bound_and_keeps_the_value_in_json():
    doc = link_health_report([port("node1", "mlx5_0", "swp1")])
    md = report_markdown.to_markdown(doc)
    assert "| node1 | mlx5_0 | leaf1 swp1 | 0 | 0 | 0 | 0 | < 1e-15 | 2.5e-9 | RS |" in md
    assert "e-254" not in md and "e-255" not in md
    assert json.loads(report.render_reports(doc)["report.json"])["checks"]["link_health"]["ports"][0]["effective_ber"] == 1.5e-254


def test_a_rising_ber_trend_is_written_for_people():
    doc = link_health_report([])
    doc["history"] = {"previous": "x", "previous_generated_at": "y"}
    doc["trends"] = {
        "bandwidth_down": [],
        "busbw_down": [],
        "errors_rising": [],
        "findings_new": [],
        "findings_gone": [],
        "ber_rising": [{"node": "node1", "device": "mlx5_0", "counter": "effective_ber", "before": 1.5e-254, "now": 3.2e-11}],
    }
    assert "- BER rising: node1 mlx5_0 effective_ber < 1e-15 -> 3.2e-11" in report_markdown.to_markdown(doc)


# ---------------------------------------------------------------- natural order


def test_ports_and_devices_sort_in_natural_order_in_the_link_health_table():
    ports = [port("node10", "mlx5_0", "swp10"), port("node2", "mlx5_10", "swp3"), port("node2", "mlx5_2", "swp2")]
    md = report_markdown.to_markdown(link_health_report(ports))
    rows = [line.split(" | ")[:2] for line in md.splitlines() if line.startswith("| node") and "device" not in line]
    assert rows == [["| node2", "mlx5_2"], ["| node2", "mlx5_10"], ["| node10", "mlx5_0"]]


def test_cabling_cases_and_unproven_ports_sort_naturally():
    cases = [{"name": n, "ok": True, "code": None} for n in ("leaf1 swp10 <- node10 mlx5_0", "leaf1 swp2 <- node2 mlx5_0")]
    checks = {
        "cabling": {"passed": True, "detail": "2/2", "cases": cases},
        "incast": {
            "passed": True,
            "detail": "x",
            "rails": [],
            "coverage": {"rounds": 1, "ports": [0, 2], "uplinks": [0, 0], "unproven_ports": ["leaf1 swp10", "leaf1 swp9"]},
        },
    }
    md = report_markdown.to_markdown(report.build_report([], faults.summarize([]), checks, {"name": "lab"}))
    assert md.index("leaf1 swp2 <- node2") < md.index("leaf1 swp10 <- node10")
    assert "- not proven: leaf1 swp9, leaf1 swp10" in md


# ---------------------------------------------------------------- each state named as it is


def test_a_check_whose_switch_could_not_be_read_is_unproven_not_pass():
    # the cabling check passes (CABLE_UNVERIFIED is a warning) but nothing of leaf1 was read
    hosts = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}]}
    found, cases = cabling.check_cabling(hosts, {}, {"leaf1": {"unreadable": True, "msg": "SSH timeout"}})
    checks = {"cabling": cabling.summary(found, cases)}
    assert checks["cabling"]["passed"]
    md = report_markdown.to_markdown(report.build_report(found, faults.summarize(found), checks, {"name": "lab"}))
    assert re.search(r"\| cabling \| unproven \(\d+ not read or not proven\) \|", md), md
    assert "| cabling | pass |" not in md
    assert "| leaf1 swp1 <- node1 mlx5_0 | not read (leaf1 not read) |" in md
    assert " | ok | " not in md


@pytest.mark.parametrize(
    "case, state",
    [
        ({"ok": True, "code": None}, "ok"),
        ({"ok": False, "code": "CABLE_MISSING"}, "FAIL"),
        ({"ok": True, "code": "CABLE_UNVERIFIED"}, "unproven"),
        ({"ok": True, "code": "CABLE_UNEXPECTED"}, "warning"),
        ({"skipped": True, "message": "leaf1 not read"}, "not read (leaf1 not read)"),
        ({"skipped": True}, "skipped"),
    ],
)
def test_each_case_state_is_named(case, state):
    assert report_markdown.case_state(case) == state


def test_a_passing_check_with_warnings_says_so():
    f = [faults.finding("CABLE_UNEXPECTED", "x", check="cabling")]
    assert report_markdown.check_state("cabling", {"passed": True}, f) == "pass (1 warning)"
    assert report_markdown.check_state("cabling", {"passed": True}, []) == "pass"
    assert report_markdown.check_state("cabling", {"passed": False}, f) == "FAIL"


# ---------------------------------------------------------------- report.html


# ---------------------------------------------------------------- a report whatever fails


def test_a_report_is_written_when_every_node_is_unreachable_naming_each(tmp_path):
    """The reachability check failed on every node: the rescue recorded each (unreachable), no node is left
    to verify, and the report is still written, latest pointing at it, every node named unreachable."""
    from unittest import mock
    from ansible_collections.linerate.fabric.plugins.action.verify_report import ActionModule
    from checks.test_rdma import NODES, PORTS
    from checks.test_plans import FABRIC

    msg = "timed out waiting for ping module test: Failed to connect to the host via ssh: Connection refused"
    hostvars = {
        n: {"rdma_ports": PORTS[n], "verify_fabric_not_verified": {"task": "Check that the node answers before verifying it", "msg": msg, "unreachable": True}}
        for n in NODES
    }
    task = mock.MagicMock()
    task.args = {
        "nodes": [],
        "fabric": FABRIC,
        "scope": NODES,
        "probes": {"results": []},
        "switch_scope": [],
        "reports_dir": str(tmp_path),
        "fail": False,
        "meta": {"phase_marks": {}},
    }
    task.async_val, task.check_mode = 0, False
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        res = action.run(task_vars={"hostvars": hostvars})
    assert not res.get("failed") and res["passed"] is False
    latest = tmp_path / "latest"
    assert os.path.realpath(latest) == os.path.realpath(res["report_files"]["dir"])
    doc = json.loads((latest / "report.json").read_text())
    nv = [f for f in doc["findings"] if f["code"] == "NODE_NOT_VERIFIED"]
    assert sorted((f["node"], f["reason"]) for f in nv) == [(n, "unreachable") for n in sorted(NODES)]
    assert all(f["message"].startswith(f"{f['node']}: not verified: unreachable") for f in nv)
    md = (latest / "summary.md").read_text()
    assert md.startswith("# Fabric verification: FAILED")
    assert f"| nodes | FAIL | 0/{len(NODES)} nodes in scope verified; not verified: {', '.join(NODES)} |" in md
    assert '<h1 class="failed">' in (latest / "report.html").read_text()
    root = ET.parse(latest / "junit.xml").getroot()
    failing = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failing[: len(NODES)] == [f"{n} verified" for n in NODES], failing


# ---------------------------------------------------------------- netmiko missing: say how to install it


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_a_switch_read_without_netmiko_says_how_to_install_it(platform, monkeypatch):
    import sys
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for

    for name in ("netmiko", "netmiko.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)  # import netmiko raises ImportError
    d = driver_for(platform, "leaf1", host="127.0.1.9", username="u", password="p")
    with pytest.raises(SwitchError) as err:
        d.connect()
    msg = str(err.value)
    assert msg.startswith("switch leaf1: netmiko is not installed in the Python that runs the switch modules")
    assert sys.executable in msg and "pip install 'netmiko>=4.3'" in msg and "requirements.txt" in msg
    # the report names the switch and carries the hint (a counters read that failed so)
    _f, check = accounting.switch_findings(["leaf1"], counters={"leaf1": {"before": {"failed": True, "msg": msg}}})
    assert "pip install 'netmiko>=4.3'" in check["cases"][0]["message"]


def test_a_failed_switch_read_shows_as_not_read_in_the_link_health_table():
    from ansible_collections.linerate.fabric.plugins.module_utils.checks import registry
    from ansible_collections.linerate.fabric.plugins.module_utils.checks.context import Inputs

    hosts = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}]}
    ok = {"errors": {"swp1": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []}}, "errors_msg": ""}
    snaps = {
        "transport": "roce",
        "start": {
            "devices": ["mlx5_0"],
            "phy": ["NIC statistics:\n     rx_packets: 1\n"],
            "phy_err": [""],
            "mlxlink": [""],
            "mlxlink_err": ["mlxlink: not found"],
        },
    }
    snaps["end"] = dict(snaps["start"])
    fabric = {"name": "lab", "transport": "roce", "link_speed_gbps": 400, "verify": {}}
    for read, state in (({"before": ok, "after": {"failed": True, "msg": "ssh timed out"}}, "ssh timed out"), ({"before": ok, "after": ok}, "read")):
        hostvars = {"node1": {"rdma_ports": hosts["node1"], "verify_fabric_link_health": snaps}, "leaf1": {"switch_fabric_counters": read}}
        data = {"node1": hostvars["node1"]}
        ctx = Inputs(["node1"], data, fabric, args={"switches": ["leaf1"]}, hostvars=hostvars)
        found, checks = registry.run(ctx, [c for c in registry.CHECKS if c.name == "link_health"])
        (row,) = checks["link_health"]["ports"]
        assert row["switch_read"] == state
        md = report_markdown.to_markdown(report.build_report(found, faults.summarize(found), checks, fabric))
        line = next(x for x in md.splitlines() if x.startswith("| node1 | mlx5_0 |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        if state == "read":
            assert cells[5:7] == ["0", "0"], line
        else:
            assert cells[5:7] == ["not read", "not read"], line
            assert "| link_health | unproven (" in md


def test_a_switch_that_answered_but_left_a_read_undone_is_partly_read_not_ok():
    ok = {"failed": False, "ports": {"swp1": {}}, "errors_msg": "", "ber_msg": ""}
    part = dict(ok, ber_msg="leaf1: nv show interface swp1 link phy health: Error: not supported")
    found, check = accounting.switch_findings(["leaf1", "leaf2"], counters={"leaf1": {"before": ok, "after": part}, "leaf2": {"before": ok, "after": ok}})
    assert found == [] and check["passed"]
    assert check["partly_read"] == {"leaf1": ["FEC / bit error rates (after): leaf1: nv show interface swp1 link phy health: Error: not supported"]}
    assert check["detail"] == "2/2 switches in scope read; partly read: leaf1"
    states = [report_markdown.case_state(c) for c in check["cases"]]
    assert states == ["partly read", "ok"]
    assert report_markdown.check_state("switches", check, found) == "unproven (1 not read or not proven)"
    _f, whole = accounting.switch_findings(["leaf2"], counters={"leaf2": {"before": ok, "after": ok}})
    assert report_markdown.check_state("switches", whole, []) == "pass" and whole["partly_read"] == {}


def test_the_phases_total_reads_in_minutes_once_it_is_long():
    def md(seconds):
        doc = report.build_report([], faults.summarize([]), {}, {"name": "lab"}, {"phases": [{"phase": "incast", "seconds": seconds}]})
        return report_markdown.to_markdown(doc)

    assert "Phases: incast 251.4 s; 251.4 s (4 min 11 s) in all." in md(251.4)
    assert "Phases: incast 41.8 s; 41.8 s in all." in md(41.8)
