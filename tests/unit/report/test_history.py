"""History and trends of the reports (report.py) and the node-exporter textfile (metrics.py): values match the
report, the previous run of the same scope is the one compared, the oldest runs beyond keep are pruned."""

import json
import os

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.report import report as rep
from ansible_collections.linerate.fabric.plugins.module_utils.report import history as report_history
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma as checks_rdma

FABRIC = {"name": "lab", "transport": "roce", "link_speed_gbps": 400, "link_width": 4, "mtu": {}, "verify": {}}


def make(gbps=(390.0, 391.0), flaps=0, ber=1e-15, findings=(), stamp="2026-11-26T10:00:00Z", mode=None, nodes=("node1", "node2")):
    rows = [
        [1, "node1", "node2", "mlx5_0", gbps[0], None, None, None],
        [1, "node1", "node2", "mlx5_1", gbps[1], None if gbps[1] > 360 else "RDMA_BW_LOW", None, None],
    ]
    checks = {
        "ib_write_bw": {"passed": True, "threshold_gbps": 360.0, "test_fields": list(checks_rdma.RDMA_TEST_FIELDS), "tests": rows},
        "link_health": {
            "passed": True,
            "ports": [
                {"node": "node2", "device": "mlx5_1", "errors": 3 * flaps, "flaps": flaps, "effective_ber": ber, "raw_ber": 1e-9, "fec": "RS"},
                {"node": "node1", "device": "mlx5_0", "errors": 0, "flaps": 0, "effective_ber": 1e-15, "raw_ber": 1e-9, "fec": "RS"},
            ],
        },
        "incast": {
            "passed": True,
            "rails": [
                {
                    "device": "mlx5_0",
                    "k": 1,
                    "receiver": "node1",
                    "senders": ["node2"],
                    "pause": {"node1": 0, "node2": 17},
                    "ecn_marked": {"node1": 40, "node2": 0},
                    "cnp_sent": {"node1": 12},
                    "cnp_handled": {"node2": 12},
                }
            ],
        },
        "nccl:all_reduce_perf": {"passed": True, "busbw_gbytes": 180.5},
    }
    summary = {
        "passed": not findings,
        "errors": sum(f["severity"] == "error" for f in findings),
        "warnings": sum(f["severity"] != "error" for f in findings),
        "codes": {},
    }
    doc = rep.build_report(list(findings), summary, checks, FABRIC, {"nodes": list(nodes)}, mode=mode)
    doc["generated_at"] = stamp
    return doc


FLAP = {"code": "LINK_FLAP", "severity": "error", "node": "node2", "device": "mlx5_1", "switch": "leaf1", "switch_port": "swp2", "message": "flap"}


def write(tmp_path, doc):
    os.makedirs(tmp_path, exist_ok=True)
    report_history.attach_history(doc, str(tmp_path))
    return rep.write_reports(doc, str(tmp_path))


def test_trends_against_the_previous_run_of_the_same_scope(tmp_path):
    write(tmp_path, make(stamp="2026-11-26T10:00:00Z"))
    # an audit in between is another scope: not the one compared
    write(tmp_path, make(stamp="2026-11-26T11:00:00Z", gbps=(100.0, 100.0), mode="audit: read-only"))
    doc = make(stamp="2026-11-26T12:00:00Z", gbps=(390.0, 300.0), flaps=1, ber=1e-12, findings=[FLAP])
    files = write(tmp_path, doc)
    t = doc["trends"]
    assert doc["history"]["previous"] == "20261126T100000Z"
    assert t["bandwidth_down"] == [
        {"node": "node1", "device": "mlx5_1", "before_gbps": 391.0, "gbps": 300.0, "drop": round(91 / 391, 4)},
        {"node": "node2", "device": "mlx5_1", "before_gbps": 391.0, "gbps": 300.0, "drop": round(91 / 391, 4)},
    ]
    assert t["ber_rising"] == [{"node": "node2", "device": "mlx5_1", "counter": "effective_ber", "before": 1e-15, "now": 1e-12}]
    assert {(x["counter"], x["now"]) for x in t["errors_rising"]} == {("errors", 3), ("flaps", 1)}
    assert [x["code"] for x in t["findings_new"]] == ["LINK_FLAP"] and t["findings_gone"] == []
    md = open(files["markdown"]).read()
    assert "## Trend since the previous run (20261126T100000Z" in md
    assert "- bandwidth down: node1 mlx5_1 391.0 -> 300.0 Gb/s (-23.3 %)" in md
    assert "- finding new: LINK_FLAP (error) node2 mlx5_1 leaf1 swp2" in md
    assert json.load(open(files["json"]))["trends"] == t
    # the next run: the flap is gone, bandwidth back
    doc = make(stamp="2026-11-26T13:00:00Z")
    write(tmp_path, doc)
    assert [x["code"] for x in doc["trends"]["findings_gone"]] == ["LINK_FLAP"]
    assert doc["trends"]["bandwidth_down"] == []
    assert doc["history"]["last_pass"]["node2"] == "2026-11-26T13:00:00Z"


def test_small_drop_is_no_trend_and_first_run_says_so(tmp_path):
    doc = make()
    files = write(tmp_path, doc)
    assert "trends" not in doc and "No earlier run of the same scope" in open(files["markdown"]).read()
    doc = make(stamp="2026-11-26T11:00:00Z", gbps=(380.0, 391.0))  # -2.6 %: under the 5 % default
    write(tmp_path, doc)
    assert doc["trends"]["bandwidth_down"] == []


def test_last_pass_carries_over_a_failing_run(tmp_path):
    write(tmp_path, make(stamp="2026-11-26T10:00:00Z"))
    doc = make(stamp="2026-11-26T11:00:00Z", findings=[FLAP])
    write(tmp_path, doc)
    assert doc["history"]["last_pass"] == {"node1": "2026-11-26T11:00:00Z", "node2": "2026-11-26T10:00:00Z"}


def test_prune_keeps_the_newest_and_latest(tmp_path):
    for h in range(5):
        write(tmp_path, make(stamp=f"2026-11-26T1{h}:00:00Z"))
    gone = report_history.prune_history(str(tmp_path), keep=2)
    assert gone == ["20261126T100000Z", "20261126T110000Z", "20261126T120000Z"]
    assert report_history.run_dirs(str(tmp_path)) == ["20261126T130000Z", "20261126T140000Z"]
    assert os.path.realpath(os.path.join(tmp_path, "latest")).endswith("20261126T140000Z")
    with pytest.raises(ValueError, match="keep: 0 is not allowed"):
        report_history.prune_history(str(tmp_path), keep=0)
