"""The ib_write_bw heat map (module_utils/report/heatmap.py): hosts as written, failing pairs marked without
colour too, titles that never overlap, the matrices up to their limit."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.report import heatmap as report_heatmap

from report.test_report import SVG, cells, named_report, parse_svg, texts


def test_svg_heat_map_names_hosts_as_written_and_marks_the_failing_pair():
    names = ["DGX-H100-Rack12-Node07", "dgx-h100-rack12-node08", "gpu_a.example.com", "dgx-h100-rack13-node01"]
    doc = named_report(names, bad=("gpu_a.example.com", "mlx5_1"))
    root = parse_svg(report_heatmap.heatmap_svg(doc))
    labels = texts(root)
    for n in names:
        assert n in labels  # as the inventory writes it: case, dots and underscores kept
    # the legend explains the colours, the failing mark and untested cells
    legend = next(g for g in root.iter(SVG + "g") if g.get("class") == "legend")
    assert any("failing" in (t.text or "") for t in legend.iter(SVG + "text"))
    assert any("not tested" in (t.text or "") for t in legend.iter(SVG + "text"))
    assert root.find(f"{SVG}defs/{SVG}pattern[@id='lr-fail']") is not None
    # the failing pair's cell (both triangles) is failing: hatched red, and titled with the code
    for row, col in (("gpu_a.example.com", "DGX-H100-Rack12-Node07"), ("DGX-H100-Rack12-Node07", "gpu_a.example.com")):
        (cell,) = cells(root, rail="mlx5_1", row=row, col=col)
        assert cell.get("class") == "cell fail" and cell.get("fill") == "url(#lr-fail)"
        assert "150.0 Gb/s (RDMA_BW_LOW)" in cell.find(SVG + "title").text
        (ok,) = cells(root, rail="mlx5_0", row=row, col=col)  # the other rail of the same pair passed
        assert ok.get("class") == "cell ok" and ok.get("fill").startswith("#")
    failing = cells(root, rail="mlx5_1")
    assert {(c.get("data-row"), c.get("data-col")) for c in failing if c.get("class") == "cell fail" and c.get("data-row")} == {
        (a, b) for a in names for b in names if a != b and "gpu_a.example.com" in (a, b)
    }
    # a cross over each failing cell, so the failure reads without colour
    marks = [p for p in root.iter(SVG + "path") if p.get("class") == "cell-fail-mark"]
    assert len(marks) == len([c for c in cells(root) if c.get("class") == "cell fail"])
    assert not cells(root, rail="mlx5_1", row=names[0], col=names[0])[0].get("class").endswith("fail")


def test_svg_of_a_healthy_fabric_has_no_failing_cell():
    root = parse_svg(report_heatmap.heatmap_svg(named_report(["a1", "a2", "a3"])))
    assert {c.get("class") for c in cells(root)} == {"cell ok", "cell none"}
    assert not [p for p in root.iter(SVG + "path") if p.get("class") == "cell-fail-mark"]


def test_pair_matrices_stop_at_the_limit_given():
    doc = named_report(["a1", "a2", "a3"], bad=("a2", "mlx5_0"))
    drawn = parse_svg(report_heatmap.heatmap_svg(doc, matrix_max_nodes=3))
    assert len([g for g in drawn.iter(SVG + "g") if g.get("class") == "matrix"]) == 2
    grid_only = parse_svg(report_heatmap.heatmap_svg(doc, matrix_max_nodes=2))
    assert not [g for g in grid_only.iter(SVG + "g") if g.get("class") == "matrix"]
    assert cells(grid_only, node="a2", rail="mlx5_0")[0].get("class") == "cell fail"
    assert any("pair matrices are drawn up to 2 nodes" in (t or "") for t in texts(grid_only))


# DejaVu Sans Mono's advance is 0.602 em (1233/2048), bold too: the width a browser draws a line of it at.
ADVANCE_EM = 0.602


def text_boxes(svg_text, selector=None):
    """[(x0, y0, x1, y1, text)] of the SVG's unrotated text elements, as the font draws them: the ink box is
    the advance times the characters wide and the font size high above the baseline. ``selector``: a class."""
    root = parse_svg(svg_text)
    default = float(root.get("font-size") or 11)
    out = []
    for g in root.iter():
        for t in g.findall(SVG + "text"):
            if t.get("transform") or (selector and t.get("class") != selector):
                continue
            size = float(t.get("font-size") or default)
            w = ADVANCE_EM * size * len(t.text or "")
            x, y = float(t.get("x")), float(t.get("y"))
            x0 = {"middle": x - w / 2, "end": x - w}.get(t.get("text-anchor"), x)
            out.append((x0, y - size, x0 + w, y, t.text))
    return out


def overlaps(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def matrix_titles(svg_text):
    """The pair matrices' titles: the first text of each g.matrix (today's class-less layout included)."""
    root = parse_svg(svg_text)
    default = float(root.get("font-size") or 11)
    out = []
    for g in root.iter(SVG + "g"):
        if g.get("class") == "matrix":
            t = g.find(SVG + "text")
            w = ADVANCE_EM * default * len(t.text)
            out.append((float(t.get("x")), float(t.get("y")) - default, float(t.get("x")) + w, float(t.get("y")), t.text))
    return out


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("rails", [("mlx5_0", "mlx5_1"), ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")])
def test_the_pair_matrix_titles_never_overlap_and_stay_inside_the_picture(n, rails):
    svg = report_heatmap.heatmap_svg(named_report([f"node{i}" for i in range(1, n + 1)], rails=rails))
    titles = matrix_titles(svg)
    assert len(titles) == len(rails)
    width = int(parse_svg(svg).get("width"))
    for i, a in enumerate(titles):
        assert a[2] <= width, (a, width)
        for b in titles[i + 1 :]:
            assert not overlaps(a, b), (n, a, b)
    # no title runs into any other text of the picture either (row labels, cell values, the next matrix)
    boxes = text_boxes(svg)
    for a in titles:
        hit = [b for b in boxes if b[4] != a[4] and overlaps(a, b)]
        assert not hit, (a, hit)


def test_the_header_and_legend_fit_the_picture_whatever_its_size():
    svg = report_heatmap.heatmap_svg(named_report(["a", "b"], rails=("mlx5_0",)))
    width = int(parse_svg(svg).get("width"))
    for box in text_boxes(svg):
        assert box[2] <= width + 1, box


def test_text_width_reserves_at_least_what_the_font_draws():
    for s in ("mlx5_10: client row -> server column", "x", "Ethernet248"):
        assert report_heatmap.text_width(s) >= ADVANCE_EM * 11 * len(s)
        assert report_heatmap.text_width(s, 15) >= ADVANCE_EM * 15 * len(s)
