"""report.html: summary.md's Markdown as one self-contained page, the ib_write_bw heat map inline."""

import html
import re

from ansible_collections.linerate.fabric.plugins.module_utils.report.heatmap import heatmap_svg
from ansible_collections.linerate.fabric.plugins.module_utils.report.markdown import to_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import rdma_view

# report.html's style, inline: tables scroll sideways on a narrow screen instead of squeezing their text, and
# the heat map keeps its own pixel size (its labels stay legible at any fabric size: the page scrolls).
HTML_STYLE = """
body{font-family:"DejaVu Sans",Arial,sans-serif;font-size:14px;margin:16px 24px;color:#111;background:#fff}
h1{font-size:22px}h1.passed{color:#006d2c}h1.failed{color:#b2182b}h2{font-size:18px;margin-top:28px}
h3{font-size:15px;margin-top:22px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top;white-space:nowrap}
td.wrap{white-space:normal;min-width:24em}
th{background:#eee}
td.fail{background:#fbd5d5;color:#67000d;font-weight:bold}td.ok{color:#006d2c}
td.unproven{background:#fff3c4}
code{font-family:"DejaVu Sans Mono",monospace;font-size:13px}
.heatmap svg{display:block;max-width:none;height:auto}
"""


def _inline(text):
    """One line of summary.md as HTML: escaped, **bold** and `code` kept."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _md_cells(line):
    """The cells of a Markdown table row (an escaped ``\\|`` is part of a cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def _td(cell):
    """A table cell, classed by the state it names (FAIL..., ok/pass, unproven/not read) for its colour."""
    low = cell.lower()
    cls = (
        "fail"
        if cell.startswith("FAIL")
        else "ok"
        if low in ("ok", "pass") or low.startswith("pass")
        else "unproven"
        if low.startswith(("unproven", "not read", "partly read", "warning"))
        else "wrap"
        if len(cell) > 80
        else ""
    )
    return f'<td class="{cls}">{_inline(cell)}</td>' if cls else f"<td>{_inline(cell)}</td>"


def markdown_html(markdown):
    """summary.md's Markdown (headings, tables, lists, paragraphs: what to_markdown writes) as HTML."""
    out, table, items, para = [], None, None, []

    def flush():
        nonlocal table, items, para
        if table is not None:
            head, rows = table[0], table[1:]
            out.append(
                '<div class="scroll"><table><thead><tr>'
                + "".join(f"<th>{_inline(c)}</th>" for c in head)
                + "</tr></thead><tbody>"
                + "".join("<tr>" + "".join(_td(c) for c in r) + "</tr>" for r in rows)
                + "</tbody></table></div>"
            )
        if items is not None:
            out.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in items) + "</ul>")
        if para:
            out.append("<p>" + " ".join(_inline(x) for x in para) + "</p>")
        table, items, para = None, None, []

    for line in markdown.splitlines():
        heading = re.match(r"(#{1,6}) (.*)", line)
        if line.startswith("|"):
            if table is None:
                flush()
                table = []
            if not re.fullmatch(r"\|(-+\|)+", line.strip()):
                table.append(_md_cells(line))
        elif line.startswith("- "):
            if items is None:
                flush()
                items = []
            items.append(line[2:])
        elif heading:
            flush()
            level = len(heading.group(1))
            cls = ""
            if level == 1:
                cls = ' class="failed"' if "FAILED" in heading.group(2) else ' class="passed"'
            out.append(f"<h{level}{cls}>{_inline(heading.group(2))}</h{level}>")
        elif not line.strip():
            flush()
        else:
            if table is not None or items is not None:
                flush()
            para.append(line)
    flush()
    return "\n".join(out)


def to_html(report, markdown=None, svg=None, view=None):
    """report.html: one self-contained page, summary.md's sections and the ib_write_bw heat map inline.

    Nothing is fetched (inline CSS, inline SVG, no script, no link): it opens from a mail or an archive, offline.
    ``markdown``, ``svg``: to_markdown / heatmap_svg of the report when the caller has them already."""
    view = view or rdma_view(report)
    markdown = markdown if markdown is not None else to_markdown(report, view)
    svg = svg if svg is not None else heatmap_svg(report, view=view)
    body = markdown_html(markdown)
    title = markdown.splitlines()[0].lstrip("# ") if markdown else "Fabric verification"
    fabric = (report.get("fabric") or {}).get("name")
    if view["grid"]["nodes"]:
        body += '\n<h2>ib_write_bw heat map</h2>\n<div class="scroll heatmap">' + svg.split("\n", 1)[1] + "</div>"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}: {html.escape(str(fabric))}</title>"
        f"<style>{HTML_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
