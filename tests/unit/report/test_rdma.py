"""The ib_write_bw check's views in the report (module_utils/report/rdma.py): the worst-link grid, the pair
matrix, the failing links, derived from the stored rows."""

from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.report import heatmap as report_heatmap
from ansible_collections.linerate.fabric.plugins.module_utils.report import rdma as report_rdma
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma as checks_rdma

from checks.test_rdma import CABLING, NODES, rounds_tests
from checks.test_plans import FABRIC
from report.test_report import cells, parse_svg, row


def test_worst_link_grid_names_each_endpoints_worst_test():
    rows = [
        row("n1", "n2", 385.0),
        row("n3", "n1", 370.0),
        row("n1", "n4", 150.0, "RDMA_BW_LOW"),
        row("n2", "n3", 381.0),
        row("n4", "n2", None, "RDMA_QP_FAILED"),
        row("n2", "n1", 390.0, rail="mlx5_1"),
    ]
    grid = report_rdma.worst_links(rows)
    assert grid["rails"] == ["mlx5_0", "mlx5_1"] and grid["nodes"] == ["n1", "n2", "n3", "n4"]
    c = grid["cells"]
    assert c["n1"]["mlx5_0"] == {"gbps": 150.0, "ok": False, "code": "RDMA_BW_LOW", "peer": "n4", "tests": 3, "failing": 1}
    # no result is worse than low bandwidth
    assert (c["n4"]["mlx5_0"]["peer"], c["n4"]["mlx5_0"]["gbps"], c["n4"]["mlx5_0"]["failing"]) == ("n2", None, 2)
    # all passing: the lowest bandwidth
    assert (c["n3"]["mlx5_0"]["peer"], c["n3"]["mlx5_0"]["gbps"], c["n3"]["mlx5_0"]["ok"]) == ("n1", 370.0, True)
    assert c["n1"]["mlx5_1"]["peer"] == "n2" and "mlx5_1" not in c["n3"]
    check = {"tests": rows, "threshold_gbps": 360}
    root = parse_svg(report_heatmap.heatmap_svg({"fabric": FABRIC, "checks": {"ib_write_bw": check}}))
    (cell,) = cells(root, node="n1", rail="mlx5_0")
    assert cell.get("class") == "cell fail" and cell.get("data-peer") == "n4"
    assert cells(root, node="n3", rail="mlx5_1")[0].get("class") == "cell none"
    md = report_markdown.to_markdown(
        {"generated_at": "t", "fabric": FABRIC, "findings": [], "summary": {"passed": False, "errors": 1, "warnings": 0}, "checks": {"ib_write_bw": check}}
    )
    assert "| n1 | FAIL 150.0 (n4, 1/3 failing) | 390.0 (n2) |" in md
    assert "| n3 | 370.0 (n1) |  |" in md


def test_bandwidth_matrix_is_derived_from_the_stored_tests():
    _, evaluated = checks_rdma.rdma_findings(rounds_tests("node3"), FABRIC, CABLING)
    m = report_rdma.bandwidth_matrix(checks_rdma.rdma_rows(evaluated))
    assert list(m) == ["mlx5_0"] and m["mlx5_0"]["nodes"] == NODES
    assert len(m["mlx5_0"]["cells"]) == 6
    assert sum(not c["ok"] for c in m["mlx5_0"]["cells"].values()) == 3
    (bad,) = [t for t in evaluated if not t["ok"] and t["client"][0] == "node1"]
    assert m["mlx5_0"]["cells"][("node1", bad["server"][0])] == {"gbps": bad["gbps"], "ok": False, "code": "RDMA_BW_LOW"}


def test_worst_link_ties_and_failures_rank():
    rows = [
        row("a", "b", 380.0),
        row("c", "a", 380.0),
        row("a", "d", 390.0),
        row("e", "f", 100.0, "RDMA_BW_LOW"),
        row("f", "g", None, "RDMA_TEST_ERROR"),
        row("f", "h", 50.0),
    ]
    c = report_rdma.worst_links(rows)["cells"]
    assert c["a"]["mlx5_0"]["peer"] == "b" and c["a"]["mlx5_0"]["tests"] == 3  # the first of equals
    assert (c["f"]["mlx5_0"]["peer"], c["f"]["mlx5_0"]["code"], c["f"]["mlx5_0"]["failing"]) == ("g", "RDMA_TEST_ERROR", 2)
    assert (c["h"]["mlx5_0"]["gbps"], c["h"]["mlx5_0"]["ok"]) == (50.0, True)
    assert report_rdma.failing_links(rows) == [rows[4], rows[3]]
