"""report.html (module_utils/report/page.py): one self-contained page beside summary.md, saying what it says,
its cells coloured by the state they name."""

import os
import re
from xml.etree import ElementTree as ET
import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.report import page as report_page

from report.test_report import SVG, named_report


import html
import html.parser


class _Refs(html.parser.HTMLParser):
    """Every attribute that could fetch something, and the tags."""

    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [(tag, k, v) for k, v in attrs if k in ("src", "href", "xlink:href", "srcset", "data")]


def test_report_html_is_one_self_contained_file_beside_summary_md(tmp_path):
    doc = named_report([f"node{i}" for i in range(1, 6)], bad=("node3", "mlx5_1"))
    files = report.write_reports(doc, str(tmp_path))
    assert os.path.dirname(files["html"]) == os.path.dirname(files["markdown"])
    text = open(files["html"], encoding="utf-8").read()
    assert text.startswith("<!DOCTYPE html>")
    parser = _Refs()
    parser.feed(text)
    assert parser.refs == []
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    assert not re.search(r"url\((?!#)", text) and "@import" not in text
    # the heat map inline, with its failing cells; the summary's sections as HTML tables
    svg = text[text.index("<svg") : text.index("</svg>") + 6]
    root = ET.fromstring(svg)
    assert any("fail" in (r.get("class") or "") for r in root.iter(SVG + "rect"))
    assert '<h1 class="failed">Fabric verification: FAILED</h1>' in text
    assert "<th>client \\ server</th>" in text
    assert re.search(r'<td class="fail">FAIL 150.0 \(node\d, 4/4 failing\)</td>', text)


def test_report_html_says_what_summary_md_says():
    doc = named_report(["a1", "a2", "a3"])
    md, page = report_markdown.to_markdown(doc), report_page.to_html(doc)
    assert '<h1 class="passed">Fabric verification: PASSED</h1>' in page
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith("| client") and "---" not in line:
            for cell in line.strip("| ").split(" | "):
                cell = html.escape(cell, quote=False)
                assert f">{cell}</td>" in page or f">{cell}</th>" in page, cell


def test_markdown_html_keeps_escaped_pipes_bold_code_and_lists():
    out = report_page.markdown_html("## T\n\n| a | b |\n|---|---|\n| x \\| y | **z** |\n\n- `c` <d>\ntext & more\n")
    assert "<h2>T</h2>" in out and "<td>x | y</td>" in out and "<td><strong>z</strong></td>" in out
    assert "<li><code>c</code> &lt;d&gt;</li>" in out and "<p>text &amp; more</p>" in out


@pytest.mark.parametrize(
    "cell, cls",
    [
        ("FAIL", "fail"),
        ("FAIL 150.0 (node1, 4/4 failing)", "fail"),
        ("ok", "ok"),
        ("pass", "ok"),
        ("pass (2 warnings)", "ok"),
        ("unproven (1 not read)", "unproven"),
        ("not read (leaf1 not read)", "unproven"),
        ("partly read", "unproven"),
        ("warning", "unproven"),
        ("385.2", None),
    ],
)
def test_html_cells_are_coloured_by_the_state_they_name(cell, cls):
    out = report_page.markdown_html(f"| a |\n|---|\n| {cell} |\n")
    assert (f'<td class="{cls}">' if cls else "<td>") + html.escape(cell, quote=False) + "</td>" in out
