"""checks/readiness.py: the readiness check's judge over the nodes' facts and its report (issue 39: a check's
report lives in its check's module)."""

from host.test_readiness_findings import _facts, _nic

from ansible_collections.linerate.fabric.plugins.module_utils.checks import readiness as checks_readiness
from ansible_collections.linerate.fabric.plugins.module_utils.checks.context import Inputs
from ansible_collections.linerate.fabric.plugins.module_utils.report.markdown import to_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.report.report import build_report


def test_the_check_judges_each_node_then_parity_and_renders_the_rails():
    def node(fw):
        f = _facts()
        f["nics"] = [dict(_nic(), fw_ver=fw, psid="MT_0000000838")]
        f["rails"] = [{"device": "mlx5_1", "pci": "0000:c1:00.0", "gpu": 4, "gpu_pci": "0000:c2:00.0", "link": "PIX"}]
        f["versions"] = {"kernel": "6.1"}
        return {"verify_fabric_readiness": {"changed": False, "facts": f}}

    data = {"node1": node("28.39.2048"), "node2": node("28.39.2048"), "node3": node("28.38.1002"), "node4": {}}
    f, check = checks_readiness.readiness_check(["node1", "node2", "node3", "node4"], data, {"min_memlock_kb": -1})
    assert [(x["code"], x["node"], x["device"]) for x in f] == [("VERSION_SKEW", "node3", "mlx5_1")]
    assert check["passed"] is False and [c["ok"] for c in check["cases"]] == [True, True, False]
    assert check["cases"][2]["code"] == "VERSION_SKEW" and set(check["rails"]) == {"node1", "node2", "node3"}
    md = to_markdown(build_report(f, {"passed": False, "errors": 1, "warnings": 0}, {"readiness": check}, {}))
    assert "| node3 | mlx5_1 | 0000:c1:00.0 | 4 | 0000:c2:00.0 | PIX |" in md
    assert checks_readiness.readiness_check(["node4"], data, {}) == ([], None)


def test_the_report_reads_its_limits_from_the_task_and_says_nothing_without_facts():
    fx = _facts()
    fx["nics"] = [dict(_nic(), fw_ver="28.39.2048", psid="MT_0000000838")]
    data = {"node1": {"verify_fabric_readiness": {"changed": False, "facts": fx}}, "node2": {}}
    # the task's limits arrive as strings from templating: the report makes them integers
    seen = {}
    ctx = Inputs(["node1", "node2"], data, {}, args={"readiness": {"min_memlock_kb": "-1"}}, template=lambda v: seen.setdefault("args", v))
    found, entries = checks_readiness.report(ctx)
    assert list(entries) == ["readiness"] and entries["readiness"]["detail"].startswith("1/1 nodes ready")
    assert seen["args"] == {"min_memlock_kb": "-1"}
    assert checks_readiness.report(Inputs(["node2"], {"node2": {}}, {})) == ([], {})
