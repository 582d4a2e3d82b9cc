"""JUnit from the report: a time only where one was measured (never a made-up time="0"), and a failure
whose findings are empty has no body (never a stray "[]") (issue 26)."""

import xml.etree.ElementTree as ET

from ansible_collections.linerate.fabric.plugins.module_utils.report import junit as report_junit


def junit(checks, meta=None):
    doc = {"checks": checks, "meta": meta or {}}
    return ET.fromstring(report_junit.to_junit(doc).split("\n", 1)[1])


def test_failure_without_findings_has_no_body_and_with_findings_their_json():
    root = junit(
        {
            "nccl": {
                "cases": [
                    {"name": "a", "ok": False, "code": "NCCL_SOCKET", "message": "fell back to sockets", "findings": []},
                    {"name": "b", "ok": False, "code": "NCCL_SOCKET", "message": "m", "findings": [{"host": "gpu001"}]},
                ]
            }
        }
    )
    a, b = root.iter("failure")
    assert a.attrib == {"message": "fell back to sockets", "type": "NCCL_SOCKET"} and a.text is None
    assert b.text.replace(" ", "").replace("\n", "") == '[{"host":"gpu001"}]'
    assert "[]" not in report_junit.to_junit({"checks": {"x": {"passed": False, "detail": "no data"}}})
    assert root.find("testsuite").attrib["failures"] == "2"


def test_times_only_where_measured():
    root = junit(
        {"ports": {"cases": [{"name": "gpu001", "ok": True, "seconds": 1.25}, {"name": "gpu002", "ok": True}]}, "nccl": {"passed": True, "detail": "ok"}},
        meta={"phases": [{"phase": "ports", "seconds": 12.5}, {"phase": "report", "seconds": 0.4}]},
    )
    ports, nccl = root.findall("testsuite")
    assert ports.attrib["time"] == "12.500" and "time" not in nccl.attrib
    one, two = ports.findall("testcase")
    assert one.attrib["time"] == "1.250" and "time" not in two.attrib
    assert 'time="0"' not in report_junit.to_junit({"checks": {"nccl": {"passed": True}}, "meta": {}})


def test_ib_write_bw_tests_claim_no_time():
    check = {
        "threshold_gbps": 300,
        "passed": False,
        "tests": [[1, "gpu001", "gpu002", "mlx5_0", 390.1, None, "", ""], [1, "gpu003", "gpu004", "mlx5_0", 120.0, "RDMA_BW_LOW", "", ""]],
    }
    text = report_junit.to_junit({"checks": {"ib_write_bw": check}, "meta": {}})
    root = ET.fromstring(text.split("\n", 1)[1])
    ok, low = root.iter("testcase")
    assert "time" not in ok.attrib and "time" not in low.attrib
    assert low.find("failure").attrib["type"] == "RDMA_BW_LOW" and low.find("failure").text is None
