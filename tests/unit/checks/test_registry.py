"""The check registry (module_utils/checks/registry.py): the report action and the role know no check.

Adding a check is its module and one line in CHECKS (and, when it runs on the nodes, one in PHASES):
a check registered here appears in the report's summary and JUnit XML without a change to the
action; the tables agree with the role's argument spec, defaults and task files."""

import os
from unittest import mock
from xml.etree import ElementTree as ET

import yaml

from ansible_collections.linerate.fabric.plugins.filter.verify import FilterModule
from ansible_collections.linerate.fabric.plugins.module_utils.checks import registry
from ansible_collections.linerate.fabric.plugins.module_utils.checks.context import Inputs
from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import Unreadable

from report.test_report import node_hostvars, run_report
from checks.test_plans import FABRIC

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "verify_fabric")
NODES = ["node1", "node2", "node3"]


def _yaml(*path):
    with open(os.path.join(ROLE, *path)) as f:
        return yaml.safe_load(f)


def _spec():
    return _yaml("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


# ---------------------------------------------------------------- adding a check: one module, one line


def _fake_report(ctx):
    """A new check's report: one case per node, failing where the node's result says so."""
    results = {n: ctx.data[n].get("verify_fabric_fake") for n in ctx.nodes}
    if not any(results.values()):
        return [], {}
    found = [ctx_finding(n) for n, r in results.items() if r == "bad"]
    cases = [
        {
            "name": f"{n} fake",
            "ok": results[n] != "bad",
            "code": "FAKE_BAD" if results[n] == "bad" else None,
            "message": "the fake check failed" if results[n] == "bad" else None,
        }
        for n in ctx.nodes
    ]
    return found, {"fake": {"passed": not found, "detail": f"{len(found)} bad node(s)", "cases": cases}}


def ctx_finding(node):
    return {"code": "FAKE_BAD", "severity": "error", "layer": "fake", "node": node, "device": None, "message": f"{node}: the fake check failed"}


def test_a_registered_check_appears_in_the_report_without_touching_the_action(tmp_path):
    hv = node_hostvars()
    hv["node2"]["verify_fabric_fake"] = "bad"
    hv["node1"]["verify_fabric_fake"] = "good"
    checks = registry.CHECKS + (registry.Check("fake", _fake_report, ("verify_fabric_fake",)),)  # the one line
    with mock.patch.object(registry, "CHECKS", checks):
        res = run_report(NODES, hv, write=True, reports_dir=str(tmp_path))
    assert res["passed"] is False
    assert [(x["code"], x["node"]) for x in res["findings"]] == [("FAKE_BAD", "node2")]
    assert "| fake | FAIL | 1 bad node(s) |" in res["summary_markdown"]
    suite = next(s for s in ET.parse(res["report_files"]["junit"]).getroot() if s.get("name") == "fake")
    assert (suite.get("tests"), suite.get("failures")) == ("3", "1")
    failed = [c for c in suite if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["node2 fake"] and failed[0].find("failure").get("type") == "FAKE_BAD"
    # without the line the report has no such check
    res = run_report(NODES, hv)
    assert "| fake |" not in res["summary_markdown"] and res["passed"] is True


def test_the_checks_report_in_the_registry_order():
    """Each check's report is called once, in CHECKS' order, with the findings of those before it."""
    seen = []

    def probe(name):
        def report(ctx):
            seen.append((name, len(ctx.findings)))
            return [ctx_finding(name)], {name: {"passed": False, "detail": name}}

        return report

    checks = tuple(registry.Check(n, probe(n)) for n in ("b", "a", "c"))
    findings, out = registry.run(Inputs(NODES, {n: {} for n in NODES}, FABRIC), checks)
    assert seen == [("b", 0), ("a", 1), ("c", 2)] and list(out) == ["b", "a", "c"]
    assert [x["node"] for x in findings] == ["b", "a", "c"]


def test_an_unreadable_input_fails_the_report_with_its_message():
    def broken(ctx):
        raise Unreadable("the fake results could not be read: node1")

    with mock.patch.object(registry, "CHECKS", (registry.Check("fake", broken),)):
        res = run_report(NODES, node_hostvars())
    assert res["failed"] is True and res["msg"] == "verify_report: the fake results could not be read: node1"


# ---------------------------------------------------------------- the tables agree with the role


def test_every_selectable_check_is_a_choice_of_verify_fabric_checks_and_back():
    choices = _spec()["verify_fabric_checks"]["choices"]
    assert sorted(choices) == sorted(registry.selectable())
    assert len({c.name for c in registry.CHECKS}) == len(registry.CHECKS)


def test_the_role_defaults_are_the_registry_s():
    defaults = _yaml("defaults", "main.yml")
    assert sorted(defaults["verify_fabric_checks"]) == sorted(c.name for c in registry.CHECKS if c.selectable and c.default)
    assert sorted(defaults["verify_fabric_benchmark_checks"]) == sorted(c.name for c in registry.CHECKS if c.selectable and c.benchmark)


def test_the_action_reads_every_node_result_a_check_reads():
    assert set(registry.node_results()) == {
        "rdma_ports",
        "verify_fabric_port_result",
        "verify_fabric_rdma_log",
        "verify_fabric_nccl_expected",
        "verify_fabric_nccl_conf",
        "verify_fabric_incast_log",
        "verify_fabric_readiness",
        "verify_fabric_cabling",
        "verify_fabric_link_health",
        "verify_fabric_bench_log",
        "verify_fabric_gdrcopy",
        "verify_fabric_nccl_tuned",
        "verify_fabric_nccl_loopback",
        "verify_fabric_nccl_series",
    }


def test_every_selectable_check_has_a_phase_and_every_phase_a_task_file():
    phased = {c for p in registry.PHASES for c in p.checks}
    assert phased == set(registry.selectable())
    for p in registry.PHASES:
        assert os.path.exists(os.path.join(ROLE, "tasks", p.tasks)), p.tasks
        assert p.mark is None or p.mark in p.checks, p
        assert p.title[0].isupper() and "{" not in p.title, p.title
    marks = [p.mark for p in registry.PHASES if p.mark]
    assert len(marks) == len(set(marks)) and "setup" not in marks


def test_the_role_runs_the_phases_in_one_loop():
    """main.yml includes no check's task file itself, and marks only the setup: tasks/phase.yml does the rest."""
    tasks = _yaml("tasks", "main.yml")
    included = [t.get("ansible.builtin.include_tasks") for t in tasks if "ansible.builtin.include_tasks" in t]
    assert not {p.tasks for p in registry.PHASES} & set(included), included
    marks = [t for t in tasks if "verify_fabric_phase_marks" in (t.get("ansible.builtin.set_fact") or {})]
    assert [t["name"] for t in marks] == ["Mark the start of the setup phase"]
    (loop,) = [t for t in tasks if t.get("ansible.builtin.include_tasks") == "phase.yml"]
    assert "linerate.fabric.verify_phases" in loop["loop"]


def test_the_phases_of_the_default_checks_in_order():
    defaults = _yaml("defaults", "main.yml")["verify_fabric_checks"]
    phases = FilterModule().filters()["verify_phases"](defaults)
    assert [(p["tasks"], p["mark"], p["window"]) for p in phases] == [
        ("ports.yml", "ports", ""),
        ("link_health.yml", None, "start"),
        ("readiness.yml", "readiness", ""),
        ("launchers.yml", None, ""),
        ("cabling.yml", "cabling", ""),
        ("rdma.yml", "ib_write_bw", ""),
        ("incast.yml", "incast", ""),
        ("nccl.yml", "nccl", ""),
        ("link_health.yml", None, "end"),
    ]
    assert phases[0]["title"] == "Check the RDMA ports"  # tests/integration/verify/test_verify.py waits for it
    rdma = next(p for p in phases if p["tasks"] == "rdma.yml")
    assert (rdma["min_hosts"], rdma["checks"]) == (2, ["ib_write_bw", "ib_send_bw", "ib_write_lat", "gpudirect"])
    assert next(p for p in phases if p["tasks"] == "cabling.yml")["transport"] == "roce"
    assert next(p for p in phases if p["tasks"] == "launchers.yml")["flag"] == "verify_fabric_launchers"


def test_a_phase_runs_for_any_of_its_checks_and_is_timed_only_by_its_own():
    phases = registry.phases(["ib_send_bw"])
    assert [(p["tasks"], p["mark"]) for p in phases] == [("rdma.yml", None)]
    assert registry.phases([]) == []
    assert [p["tasks"] for p in registry.phases(["gpudirect"])] == ["gpudirect.yml", "rdma.yml"]
