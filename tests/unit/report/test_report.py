"""Report writers: JSON, Markdown, JUnit XML and the SVG heat map."""

import json
import os
from unittest import mock
from xml.etree import ElementTree as ET

import pytest

from ansible_collections.linerate.fabric.plugins.action.verify_report import ActionModule
from ansible_collections.linerate.fabric.plugins.module_utils.checks import accounting
from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import junit as report_junit
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.report import page as report_page
from ansible_collections.linerate.fabric.plugins.module_utils.report import heatmap as report_heatmap
from ansible_collections.linerate.fabric.plugins.module_utils.report import rdma as report_rdma
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma as checks_rdma
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults

from checks.test_rdma import CABLING, NODES, PORTS, rounds_tests
from checks.test_plans import FABRIC


def make_report():
    found, evaluated = checks_rdma.rdma_findings(rounds_tests("node3"), FABRIC, CABLING)
    checks = {
        "ports": {"passed": True, "detail": "8/8", "cases": [{"name": "node1 mlx5_0", "ok": True}]},
        "ib_write_bw": checks_rdma.rdma_check(evaluated, 360.0, found),
    }
    return report.build_report(found, faults.summarize(found), checks, dict(FABRIC, name="lab"))


SVG = "{http://www.w3.org/2000/svg}"


def parse_svg(text):
    """The heat map as an XML tree (fails unless it is well-formed SVG)."""
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag == SVG + "svg" and int(root.get("width")) > 0 and int(root.get("height")) > 0
    return root


def cells(root, **attrs):
    """The heat map's cells (rects of class cell) whose data-* attributes match."""
    return [r for r in root.iter(SVG + "rect") if (r.get("class") or "").startswith("cell ") and all(r.get(f"data-{k}") == v for k, v in attrs.items())]


def texts(root):
    return [t.text for t in root.iter(SVG + "text")]


def named_report(names, bad=None, rails=("mlx5_0", "mlx5_1"), gbps_bad=150.0):
    """A report of every pair of ``names`` on every rail; tests touching ``bad`` = (node, rail) get gbps_bad."""
    tests = []
    for k, rnd in enumerate(plans.round_robin(names)):
        for server, client in rnd:
            for i, rail in enumerate(rails):
                g = 380.0 + i + k / 10
                if bad and rail == bad[1] and bad[0] in (server, client):
                    g = gbps_bad
                tests.append({"round": k, "server": [server, rail], "client": [client, rail], "gbps": g, "client_error": None, "server_error": None})
    return report_of(tests)


def report_of(tests):
    found, evaluated = checks_rdma.rdma_findings(tests, FABRIC, {})
    checks = {"ib_write_bw": checks_rdma.rdma_check(evaluated, 360.0, found)}
    return report.build_report(found, faults.summarize(found), checks, dict(FABRIC, name="dc1"))


def row(client, server, gbps, code=None, rail="mlx5_0", rnd=0, error=None):
    """One stored ib_write_bw test (a row of checks_rdma.RDMA_TEST_FIELDS)."""
    return [rnd, client, server, rail, gbps, code, error, None]


def test_json_has_stable_codes_and_locations(tmp_path):
    doc = make_report()
    files = report.write_reports(doc, str(tmp_path))
    data = json.load(open(files["json"]))
    assert data["schema_version"] == 2 and data["summary"]["passed"] is False
    f = data["findings"][0]
    assert (f["code"], f["node"], f["device"], f["switch"], f["switch_port"]) == ("RDMA_BW_LOW", "node3", "mlx5_0", "leaf1", "swp3")
    assert os.path.islink(tmp_path / "latest") and os.readlink(tmp_path / "latest") == os.path.basename(files["dir"])
    # a second report gets its own directory and moves latest
    files2 = report.write_reports(doc, str(tmp_path))
    assert files2["dir"] != files["dir"] and os.readlink(tmp_path / "latest") == os.path.basename(files2["dir"])


def test_markdown_summary(tmp_path):
    md = report_markdown.to_markdown(make_report())
    assert md.startswith("# Fabric verification: FAILED")
    assert "| RDMA_BW_LOW | pfc | node3 | mlx5_0 | leaf1 | swp3 |" in md
    assert "### ib_write_bw mlx5_0" in md and "FAIL 150.0" in md


def test_junit_xml_shape():
    root = ET.fromstring(report_junit.to_junit(make_report()).split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("tests") == "7" and root.get("failures") == "3"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"ports", "ib_write_bw"}
    for s in suites.values():
        assert int(s.get("tests")) == len(s.findall("testcase"))
        assert int(s.get("failures")) == len(s.findall("testcase/failure"))
        for tc in s.findall("testcase"):
            assert tc.get("classname").startswith("linerate.verify.") and tc.get("name")
    assert {f.get("type") for f in suites["ib_write_bw"].findall("testcase/failure")} == {"RDMA_BW_LOW"}


def test_large_fabric_shows_the_grid_and_the_failing_links_not_the_matrix(monkeypatch):
    names = [f"dgx-a100-rack{i // 8 + 1:02d}-node{i % 8 + 1:02d}" for i in range(12)]
    doc = named_report(names, bad=(names[5], "mlx5_1"))
    small_md, small_svg = report_markdown.to_markdown(doc), parse_svg(report_heatmap.heatmap_svg(doc))
    assert "### ib_write_bw mlx5_1 (Gb/s, client row" in small_md and "failing links" not in small_md
    assert cells(small_svg, rail="mlx5_1", row=names[5], col=names[0])
    monkeypatch.setattr(report_rdma, "MATRIX_MAX_NODES", 8)
    monkeypatch.setattr(report_markdown, "FAILING_LINKS_MAX", 4)
    md = report_markdown.to_markdown(doc)
    assert "client row" not in md and "### ib_write_bw worst link per node and rail" in md
    assert f"| {names[5]} | 380.0 (" in md and "| FAIL 150.0 (" in md
    assert "### ib_write_bw failing links (11; the pair matrix is shown up to 8 nodes, this fabric has 12)" in md
    listed = [line for line in md.splitlines() if line.startswith("- ") and "RDMA_BW_LOW" in line]
    assert len(listed) == 4 and all(names[5] in line and "mlx5_1: 150.0 Gb/s" in line for line in listed)
    assert "- ... and 7 more (report.json: checks.ib_write_bw.tests)" in md
    root = parse_svg(report_heatmap.heatmap_svg(doc))
    assert not cells(root, row=names[5]) and not [g for g in root.iter(SVG + "g") if g.get("class") == "matrix"]
    grid = {(c.get("data-node"), c.get("data-rail")): c.get("class") for c in cells(root)}
    assert grid[(names[5], "mlx5_1")] == "cell fail" and grid[(names[5], "mlx5_0")] == "cell ok"
    # on the bad rail every endpoint's worst link is the one with the bad node; the bad node fails with every peer
    assert sorted(k for k, v in grid.items() if v == "cell fail") == [(n, "mlx5_1") for n in names]
    failing = {c.get("data-node"): (c.get("data-failing"), c.get("data-tests")) for c in cells(root, rail="mlx5_1")}
    assert failing.pop(names[5]) == ("11", "11") and set(failing.values()) == {("1", "11")}
    assert "150 11/11" in texts(root) and "150 1/11" in texts(root)
    # every host named, as written
    assert set(names) <= set(texts(root))


def test_report_json_is_indented_only_while_small(tmp_path, monkeypatch):
    doc = make_report()
    small = open(report.write_reports(doc, str(tmp_path))["json"]).read()
    monkeypatch.setattr(report, "JSON_INDENT_MAX", 100)
    big = open(report.write_reports(doc, str(tmp_path))["json"]).read()
    assert small.count("\n") > 50 and big.count("\n") == 1
    assert json.loads(small) == json.loads(big) == json.loads(json.dumps(doc))


def test_empty_report_still_renders():
    doc = report.build_report([], faults.summarize([]), {}, dict(FABRIC, name="lab"))
    root = parse_svg(report_heatmap.heatmap_svg(doc))
    assert "no ib_write_bw tests in this report" in texts(root)
    assert "PASSED" in report_markdown.to_markdown(doc)
    ET.fromstring(report_junit.to_junit(doc).split("\n", 1)[1])


def test_summary_printer(tmp_path):
    """scripts/report_summary.py (what make lab prints): the summary, exit 1 failed, 2 no report;
    module_utils/report/report.py has no command-line entry (no print, no sys.exit: ansible-test sanity)."""
    import subprocess
    import sys

    files = report.write_reports(make_report(), str(tmp_path))
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "scripts", "report_summary.py")
    r = subprocess.run([sys.executable, script, str(tmp_path / "latest")], capture_output=True, text=True, check=False)
    assert r.returncode == 1 and "Fabric verification: FAILED" in r.stdout
    assert f"Full report: {os.path.realpath(tmp_path / 'latest')}/" in r.stdout
    r = subprocess.run([sys.executable, script, str(tmp_path / "nothing")], capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "no verification report at" in r.stderr
    assert os.path.exists(files["markdown"])
    src = open(report.__file__, encoding="utf-8").read()
    assert "print(" not in src and "sys.exit" not in src and "__main__" not in src


# ---------------------------------------------------------------- each ib_write_bw test stored once


def test_report_json_stores_each_test_once(tmp_path):
    tests = rounds_tests("node3")
    tests[0]["gbps"] = 387.123  # a passing test's one-off figure: it must appear once in report.json
    found, evaluated = checks_rdma.rdma_findings(tests, FABRIC, CABLING)
    doc = report.build_report(found, faults.summarize(found), {"ib_write_bw": checks_rdma.rdma_check(evaluated, 360.0, found)}, dict(FABRIC, name="lab"))
    text = open(report.write_reports(doc, str(tmp_path))["json"]).read()
    assert text.count("387.123") == 1
    check = json.loads(text)["checks"]["ib_write_bw"]
    assert set(check) == {"passed", "threshold_gbps", "detail", "test_fields", "tests"}
    assert check["test_fields"] == list(checks_rdma.RDMA_TEST_FIELDS) and len(check["tests"]) == len(tests) == 6
    assert check["detail"] == "3/6 links >= 360 Gb/s" and check["passed"] is False
    # read back as dicts, every test is what the diagnosis evaluated
    keys = ("round", "client", "server", "gbps", "ok", "code", "client_error", "server_error")
    assert checks_rdma.rdma_tests(check) == [{k: t[k] for k in keys} for t in evaluated]


def test_schema_1_reports_render_as_schema_2():
    """A report.json written before the rows (tests as dicts, with matrix and cases) still reads the same."""
    doc = make_report()
    old = json.loads(json.dumps(doc))
    old["checks"]["ib_write_bw"]["tests"] = checks_rdma.rdma_tests(doc["checks"]["ib_write_bw"])
    del old["checks"]["ib_write_bw"]["test_fields"]
    assert checks_rdma.rdma_tests(old["checks"]["ib_write_bw"]) == checks_rdma.rdma_tests(doc["checks"]["ib_write_bw"])
    assert report_markdown.to_markdown(old) == report_markdown.to_markdown(doc) and report_junit.to_junit(old) == report_junit.to_junit(doc)


def test_junit_cases_are_derived_from_the_tests():
    doc = make_report()
    suite = ET.fromstring(report_junit.to_junit(doc).split("\n", 1)[1]).find("testsuite[@name='ib_write_bw']")
    rows = doc["checks"]["ib_write_bw"]["tests"]
    names = [tc.get("name") for tc in suite.findall("testcase")]
    assert names == [f"{c}:{d} -> {s}:{d} (round {k})" for k, c, s, d, *_ in rows]
    failed = {tc.get("name"): tc.find("failure") for tc in suite.findall("testcase") if tc.find("failure") is not None}
    assert len(failed) == 3 and all("node3" in n for n in failed)
    assert {(f.get("type"), f.get("message")) for f in failed.values()} == {("RDMA_BW_LOW", "150.0 Gb/s < 360 Gb/s")}


def test_junit_error_message_and_escaped_host_names():
    names = ['rack&1-"a"', "r<2>", "plain-3"]
    tests = [
        {
            "round": 0,
            "client": [names[0], "mlx5_0"],
            "server": [names[1], "mlx5_0"],
            "gbps": None,
            "client_error": "Couldn't connect to r<2>:18515",
            "server_error": None,
        },
        {"round": 0, "client": [names[2], "mlx5_0"], "server": [names[1], "mlx5_0"], "gbps": 385.0, "client_error": None, "server_error": None},
    ]
    root = ET.fromstring(report_junit.to_junit(report_of(tests)).split("\n", 1)[1])
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert set(cases) == {f"{names[0]}:mlx5_0 -> {names[1]}:mlx5_0 (round 0)", f"{names[2]}:mlx5_0 -> {names[1]}:mlx5_0 (round 0)"}
    failure = cases[f"{names[0]}:mlx5_0 -> {names[1]}:mlx5_0 (round 0)"].find("failure")
    assert (failure.get("type"), failure.get("message")) == ("RDMA_CONNECT_FAILED", "Couldn't connect to r<2>:18515")
    assert root.get("tests") == "2" and root.get("failures") == "1"


def test_written_files_are_the_texts_rendered_once(tmp_path):
    doc = make_report()
    rendered = report.render_reports(doc)
    assert set(rendered) == {"report.json", "summary.md", "junit.xml", "heatmap.svg", "report.html"}
    assert rendered["summary.md"] == report_markdown.to_markdown(doc) and rendered["junit.xml"] == report_junit.to_junit(doc)
    assert rendered["heatmap.svg"] == report_heatmap.heatmap_svg(doc)
    assert rendered["report.html"] == report_page.to_html(doc)
    given = report.write_reports(doc, str(tmp_path), rendered=rendered)
    own = report.write_reports(doc, str(tmp_path))
    for key, name in (("json", "report.json"), ("markdown", "summary.md"), ("junit", "junit.xml"), ("heatmap", "heatmap.svg"), ("html", "report.html")):
        assert open(given[key]).read() == open(own[key]).read() == rendered[name]


# ---------------------------------------------------------------- every node and switch accounted for


def run_report(nodes, hostvars, **args):
    """The verify_report action on the controller, nothing written: its result."""
    task = mock.MagicMock()
    task.args = {"nodes": nodes, "fabric": FABRIC, "write": False, **args}
    task.async_val = 0
    task.check_mode = False
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars={"hostvars": hostvars})


def node_hostvars(extra=None):
    hv = {n: {"rdma_ports": PORTS[n]} for n in NODES}
    for n, v in (extra or {}).items():
        hv.setdefault(n, {}).update(v)
    return hv


UNREACHABLE = {
    "item": "node3",
    "unreachable": True,
    "changed": False,
    "msg": "Failed to connect to the host via ssh: ssh: connect to host 10.89.0.13 port 22: No route to host",
}


def test_a_fabric_without_its_published_derived_values_is_refused_with_the_reason():
    """Verification derives nothing of its own (issue 29 item 3): the raw intent is refused, naming what to pass."""
    raw = {k: v for k, v in FABRIC.items() if k != "derived"}
    res = run_report(NODES, node_hostvars(), fabric=raw, scope=NODES)
    assert res["failed"] is True
    assert res["msg"].startswith("verify_report: fabric: has no 'derived' values: pass fabric_effective")
    for bad in (raw, None, {"derived": None}, "fabric"):
        with pytest.raises(thresholds.NotPublished, match="pass fabric_effective as playbooks/validate.yml publishes it"):
            thresholds.rdma_threshold_gbps(bad)
    # the published values are used as they are, whatever they are
    assert thresholds.rdma_threshold_gbps(dict(raw, derived={"ib_write_bw_min_gbps": 1.5})) == 1.5


def test_every_node_in_scope_verified_passes_with_one_case_each():
    res = run_report(NODES, node_hostvars(), scope=NODES)
    assert res["passed"] is True and res["findings"] == []
    f, check = accounting.node_findings(NODES, NODES)
    assert f == [] and check["passed"] and check["detail"] == "4/4 nodes in scope verified"
    assert [c["name"] for c in check["cases"]] == [f"{n} verified" for n in NODES]


def test_an_unreachable_node_is_not_verified_and_the_summary_fails():
    nodes = ["node1", "node2", "node4"]
    res = run_report(nodes, node_hostvars(), scope=NODES, probes={"results": [UNREACHABLE]})
    assert res["passed"] is False and res["summary"]["codes"] == {"NODE_NOT_VERIFIED": 1}
    (f,) = res["findings"]
    assert (f["code"], f["severity"], f["node"], f["reason"], f["check"]) == ("NODE_NOT_VERIFIED", "error", "node3", "unreachable", "nodes")
    assert "No route to host" in f["message"] and f["message"].startswith("node3: not verified: unreachable")
    assert "FAILED" in res["summary_markdown"].splitlines()[0]
    assert "| nodes | FAIL | 3/4 nodes in scope verified; not verified: node3 |" in res["summary_markdown"]


def test_a_node_that_failed_names_the_task_and_its_message():
    rec = {"verify_fabric_not_verified": {"task": "Check the RDMA ports", "msg": "rdma: command not found"}}
    res = run_report(["node1", "node2", "node4"], node_hostvars({"node3": rec}), scope=NODES, probes={"results": []})
    (f,) = res["findings"]
    assert (f["node"], f["reason"], f["task"]) == ("node3", "failed", "Check the RDMA ports")
    assert f["message"] == "node3: not verified: failed at task 'Check the RDMA ports': rdma: command not found"


def test_without_scope_nothing_is_accounted_for_the_old_way():
    res = run_report(["node1", "node2"], node_hostvars())
    assert res["passed"] is True and "nodes" not in res["summary_markdown"].split("| check |")[1].split("\n\n")[0]


def test_junit_shows_a_node_not_verified_as_a_failure(tmp_path):
    f, check = accounting.node_findings(NODES, ["node1", "node2", "node4"], probes={"node3": UNREACHABLE})
    doc = report.build_report(f, faults.summarize(f), {"nodes": check}, dict(FABRIC, name="lab"))
    root = ET.fromstring(report_junit.to_junit(doc).split("\n", 1)[1])
    suite = root.find("testsuite[@name='nodes']")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "1")
    failure = suite.find("testcase[@name='node3 verified']/failure")
    assert failure.get("type") == "NODE_NOT_VERIFIED" and "No route to host" in failure.get("message")
    assert suite.find("testcase[@name='node1 verified']/failure") is None
    assert not doc["summary"]["passed"] and report_markdown.to_markdown(doc).startswith("# Fabric verification: FAILED")


def test_the_action_reports_an_unreachable_switch_and_the_cabling_sees_it_unread():
    hv = node_hostvars(
        {"leaf1": {"switch_fabric_lldp": {"failed": False, "msg": "Authentication failed."}}, "leaf2": {"switch_fabric_lldp": {"neighbors": {}}}}
    )
    for n in NODES:
        hv[n]["verify_fabric_cabling"] = {"skipped": True}
    res = run_report(NODES, hv, scope=NODES, switches=["leaf1", "leaf2"], switch_scope=["leaf1", "leaf2"], switches_left=[])
    sw = [x for x in res["findings"] if x["code"] == "SWITCH_UNREACHABLE"]
    assert [x["switch"] for x in sw] == ["leaf1"] and "Authentication failed." in sw[0]["message"]
    unverified = [x for x in res["findings"] if x["code"] == "CABLE_UNVERIFIED" and x.get("switch") == "leaf1"]
    assert unverified and "Authentication failed." in unverified[0]["message"]
    assert res["passed"] is False


@pytest.mark.parametrize("key", ["scope", "switch_scope"])
def test_a_scope_that_is_not_a_list_is_refused_naming_the_key(key):
    res = run_report(NODES, node_hostvars(), **{key: "node1,node2"})
    assert res["failed"] and f"{key} must be a list of inventory host names" in res["msg"] and "'node1,node2'" in res["msg"]


def test_a_cross_rail_test_keeps_the_servers_device():
    """The cross-rail round (client mlx5_0 into the server's mlx5_1) is stored, read back and named with both
    devices; a row written before server_device existed reads as same-rail."""
    tests = [
        {
            "round": 3,
            "client": ["node1", "mlx5_0"],
            "server": ["node3", "mlx5_1"],
            "gbps": 120.0,
            "code": "RDMA_BW_LOW",
            "client_error": None,
            "server_error": None,
        },
        {"round": 0, "client": ["node1", "mlx5_0"], "server": ["node2", "mlx5_0"], "gbps": 385.0, "code": None, "client_error": None, "server_error": None},
    ]
    rows = checks_rdma.rdma_rows(tests)
    assert rows[0][8] == "mlx5_1" and rows[1][8] is None
    check = {"threshold_gbps": 360.0, "test_fields": list(checks_rdma.RDMA_TEST_FIELDS), "tests": rows}
    back = checks_rdma.rdma_tests(check)
    assert back[0]["server"] == ["node3", "mlx5_1"] and back[1]["server"] == ["node2", "mlx5_0"]
    old = dict(check, tests=[r[:8] for r in rows])
    assert checks_rdma.rdma_tests(old)[0]["server"] == ["node3", "mlx5_0"]
    xml = "".join(report_junit._rdma_testcases(check, '"ib_write_bw"'))
    assert "node1:mlx5_0 -&gt; node3:mlx5_1 (round 3)" in xml or "node1:mlx5_0 -> node3:mlx5_1 (round 3)" in xml


# ---------------------------------------------------------------- issue 35: attribution and the drain decision


def test_the_report_attributes_and_decides_before_any_drain(tmp_path):
    """Two of four nodes unreachable with draining on: CONTROLLER_PATH, the breaker trips in the decision (the
    report only reads the state: nothing is written), DRAIN_BREAKER_TRIPPED names the reset."""
    state = tmp_path / "remediation" / "state.json"
    probes = {"results": [dict(UNREACHABLE, item="node3"), dict(UNREACHABLE, item="node4")]}
    res = run_report(["node1", "node2"], node_hostvars(), scope=NODES, probes=probes, remediation={"enabled": True, "state_file": str(state), "fleet": 4})
    codes = [f["code"] for f in res["findings"]]
    assert "CONTROLLER_PATH" in codes and "DRAIN_BREAKER_TRIPPED" in codes, codes
    rem = res["remediation"]
    assert rem["breaker"]["tripped"] and rem["tripped_now"] and rem["drain"] == [] and rem["unseen"] == ["node3", "node4"]
    assert not state.exists()
    nv = [f for f in res["findings"] if f["code"] == "NODE_NOT_VERIFIED"]
    assert [f["explained_by"] for f in nv] == ["controller", "controller"]


def test_draining_off_reports_the_decision_and_an_unreadable_state_does_not_stop_it(tmp_path):
    state = tmp_path / "state.json"
    state.write_text("{broken")
    res = run_report(["node1", "node2"], node_hostvars(), remediation={"enabled": False, "state_file": str(state)})
    assert not res.get("failed") and "not JSON" in res["remediation"]["state_error"]
    assert not res["remediation"]["enabled"] and "DRAIN_BREAKER_TRIPPED" not in [f["code"] for f in res["findings"]]
    # with draining on, a forgotten breaker is never assumed closed: the report fails naming the file
    res = run_report(["node1", "node2"], node_hostvars(), remediation={"enabled": True, "state_file": str(state)})
    assert res["failed"] and "state.json" in res["msg"] and "not JSON" in res["msg"]
