"""The report's SVG bandwidth heat map (heatmap.svg): the node-by-node matrix up to MATRIX_MAX_NODES,
the worst-link grid and the failing links beyond. Stdlib only, like report.py.
"""

from xml.sax.saxutils import escape, quoteattr

from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import gbps_text, rdma_view

# ---------------------------------------------------------------- SVG heat map

FAIL_FILL = "url(#lr-fail)"
FAIL_EDGE = "#67000d"
UNTESTED = "#e6e6e6"
CHAR_W = 6.8  # px of one 11 px monospace character (DejaVu Sans Mono's advance is 0.602 em: 6.6 px)
MATRIX_GAP = 32  # px between two pair matrices side by side (and after a matrix's title)


def text_width(text, font_size=11):
    """The width in px of ``text`` in the heat map's monospace font at ``font_size``, rounded up
    (CHAR_W per character at 11 px): what the layout reserves for a title so the next one never overlaps it."""
    return round(CHAR_W * font_size / 11 * len(str(text)) + 0.5)


def _green(fraction):
    """A passing link: light green at the threshold, dark green at line rate."""
    f = max(0.0, min(1.0, fraction))
    lo, hi = (199, 233, 192), (0, 109, 44)
    return "#%02x%02x%02x" % tuple(round(a + (b - a) * f) for a, b in zip(lo, hi))


def _fill(c, threshold, line_rate):
    if c is None:
        return UNTESTED
    if not c.get("ok"):
        return FAIL_FILL
    span = max(1e-9, line_rate - threshold)
    return _green((float(c.get("gbps") or 0) - threshold) / span)


def _cell_svg(out, x, y, w, h, c, threshold, line_rate, title, attrs, text=True, kind="cell", suffix=""):
    """One cell: a rect (class ok / fail / none) with its title; failing cells hatched red, edged and crossed."""
    state = "none" if c is None else ("ok" if c.get("ok") else "fail")
    extra = "".join(f" {k}={quoteattr(str(v))}" for k, v in attrs.items())
    edge = f' stroke="{FAIL_EDGE}" stroke-width="2"' if state == "fail" else ""
    out.append(
        f'<rect class="{kind} {state}" x="{x}" y="{y}" width="{w}" height="{h}" '
        f'fill="{_fill(c, threshold, line_rate)}"{edge}{extra}><title>{escape(title)}</title></rect>'
    )
    if state == "fail":
        # the marker: a cross over the cell, so a failing link reads without colour
        out.append(
            f'<path class="{kind}-fail-mark" d="M{x + 2},{y + 2}L{x + w - 2},{y + h - 2}M{x + w - 2},{y + 2}'
            f'L{x + 2},{y + h - 2}" stroke="{FAIL_EDGE}" stroke-width="1.5"/>'
        )
    if text and c is not None:
        g = c.get("gbps")
        dark = state == "fail" or (float(g or 0) - threshold) / max(1e-9, line_rate - threshold) > 0.6
        weight = ' font-weight="bold"' if state == "fail" else ""
        out.append(
            f'<text x="{x + w / 2:g}" y="{y + h - 4}" text-anchor="middle" font-size="9" '
            f'fill="{"#ffffff" if dark else "#000000"}"{weight}>{"-" if g is None else f"{float(g):.0f}"}{suffix}</text>'
        )


def _legend(out, x, y, threshold, line_rate):
    out.append(f'<g class="legend"><text x="{x}" y="{y + 11}">legend:</text>')
    x += 60
    for k in range(5):
        v = threshold + (line_rate - threshold) * k / 4
        out.append(
            f'<rect x="{x}" y="{y}" width="40" height="14" fill="{_green(k / 4)}"/>'
            f'<text x="{x + 20}" y="{y + 26}" text-anchor="middle" font-size="9">{v:g}</text>'
        )
        x += 40
    out.append(f'<text x="{x + 6}" y="{y + 11}">Gb/s, passing (threshold {threshold:g} .. line rate {line_rate:g})</text>')
    x += 6 + CHAR_W * 52
    _cell_svg(out, round(x), y, 40, 14, {"ok": False, "gbps": None}, threshold, line_rate, "failing link", {}, text=False, kind="swatch")
    out.append(f'<text x="{round(x) + 46}" y="{y + 11}">failing: below threshold or an error (red, hatched, crossed)</text>')
    x += 46 + CHAR_W * 62
    out.append(f'<rect x="{round(x)}" y="{y}" width="40" height="14" fill="{UNTESTED}"/><text x="{round(x) + 46}" y="{y + 11}">not tested</text></g>')
    return round(x) + 46 + CHAR_W * 12


def heatmap_svg(report, matrix_max_nodes=None, view=None):
    """The ib_write_bw heat map as SVG: legend, node x rail worst-link grid, and per rail the pair matrix.

    Host names are written as the inventory has them. Passing links are green (darker nearer line rate);
    failing links are red with a white hatch, a dark edge and a cross, so they read without colour too.
    Every cell carries a ``<title>`` (tooltip) with the endpoints, Gb/s and fault code. The pair matrices
    are drawn up to ``matrix_max_nodes`` (MATRIX_MAX_NODES) nodes; the grid at any size. ``view``:
    rdma_view(report) when the caller has it already.
    """
    view = view or rdma_view(report, matrix_max_nodes)
    rdma, grid, matrix, limit = view["check"], view["grid"], view["matrix"], view["limit"]
    line_rate = float((report.get("fabric") or {}).get("link_speed_gbps") or 1)
    threshold = float(rdma.get("threshold_gbps") or line_rate)
    nodes = grid["nodes"]
    label_w = round(CHAR_W * max([len(str(n)) for n in nodes] + [8]) + 12)
    out = []
    s = report.get("summary") or {}
    fab = report.get("fabric") or {}
    caption = f"ib_write_bw Gb/s - fabric {fab.get('name')}: {rdma.get('detail') or 'no tests'}; {'PASSED' if s.get('passed') else 'FAILED'}"
    out.append(f'<text class="title" x="16" y="22" font-size="15" font-weight="bold">{escape(caption)}</text>')
    width = max(_legend(out, 16, 34, threshold, line_rate), 16 + text_width(caption, 15) + 16)
    y = 86
    if not nodes:
        out.append(f'<text x="16" y="{y}">no ib_write_bw tests in this report</text>')
        y += 20
    else:
        y, width = _grid_svg(out, grid, y, width, label_w, threshold, line_rate)
        y, width = _matrices_svg(out, matrix, len(nodes), limit, y, width, label_w, threshold, line_rate)
    height = y + 10
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{round(width)}" height="{round(height)}" '
        f'viewBox="0 0 {round(width)} {round(height)}" font-family="DejaVu Sans Mono, monospace" font-size="11">'
        f"<title>ib_write_bw heat map: {escape(str(fab.get('name')))}</title>"
        '<defs><pattern id="lr-fail" patternUnits="userSpaceOnUse" width="6" height="6" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d7191c"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2"/></pattern></defs>'
        '<rect width="100%" height="100%" fill="#ffffff"/>'
    )
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + head + "\n".join(out) + "</svg>\n"


def _grid_svg(out, grid, y, width, label_w, threshold, line_rate):
    """The node x rail grid of worst links, in blocks of up to 64 rows side by side; ``(y, width)`` after it."""
    nodes, rails = grid["nodes"], grid["rails"]
    cw, ch, per_block = max(72, round(CHAR_W * max(len(r) for r in rails) + 8)), 16, 64
    section = "worst link per node and rail (Gb/s, then failing/tests when any failed: the bad endpoint fails with every peer; tooltip: the peer)"
    out.append(f'<text class="section" x="16" y="{y}" font-weight="bold">{section}</text>')
    width = max(width, 16 + text_width(section) + 16)
    y += 12
    block_w = label_w + cw * len(rails) + 24
    x0 = 16
    for b in range(0, len(nodes), per_block):
        block = nodes[b : b + per_block]
        for j, rail in enumerate(rails):
            out.append(f'<text x="{x0 + label_w + j * cw + cw / 2:g}" y="{y + 12}" text-anchor="middle">{escape(rail)}</text>')
        for i, node in enumerate(block):
            yy = y + 18 + i * ch
            out.append(f'<text x="{x0}" y="{yy + 12}">{escape(str(node))}</text>')
            for j, rail in enumerate(rails):
                c = grid["cells"].get(node, {}).get(rail)
                title = (
                    f"{node} {rail}: not tested"
                    if c is None
                    else f"{node} {rail}: worst {gbps_text(c['gbps'])} Gb/s with {c['peer']}"
                    + (f" ({c['code']})" if c.get("code") else "")
                    + f"; {c['failing']} of {c['tests']} tests failing"
                )
                _cell_svg(
                    out,
                    x0 + label_w + j * cw,
                    yy,
                    cw - 1,
                    ch - 1,
                    c,
                    threshold,
                    line_rate,
                    title,
                    {
                        "data-node": node,
                        "data-rail": rail,
                        "data-peer": "" if c is None else c["peer"],
                        "data-failing": 0 if c is None else c["failing"],
                        "data-tests": 0 if c is None else c["tests"],
                    },
                    suffix=f" {c['failing']}/{c['tests']}" if c and c["failing"] else "",
                )
        x0 += block_w
    return y + 18 + ch * min(len(nodes), per_block) + 24, max(width, x0)


def _matrices_svg(out, matrix, n_nodes, limit, y, width, label_w, threshold, line_rate):
    """Per rail, the pair matrix (one test per pair, shown in both triangles), two a row; ``(y, width)``
    after them (a note instead above ``limit`` nodes)."""
    drawn = list(matrix.items())
    if n_nodes > limit:
        out.append(
            f'<text x="16" y="{y}">pair matrices are drawn up to {limit} nodes; this fabric has '
            f"{n_nodes}: the grid above and summary.md's failing links tell which pairs failed</text>"
        )
        y += 20
    cell = 24
    x0, row_h = 16, 0
    for k, (rail, m) in enumerate(drawn):
        mn = m["nodes"]
        top = label_w  # the column labels, rotated
        heading = f"{rail}: client row -> server column"
        # a matrix is as wide as its cells or its title, whichever is wider: the next one starts after both
        pw = max(label_w + cell * len(mn), text_width(heading)) + MATRIX_GAP
        if k and k % 2 == 0:
            x0, y = 16, y + row_h
        out.append(
            f'<g class="matrix" data-rail={quoteattr(rail)}><text class="matrix-title" x="{x0}" y="{y + 12}" font-weight="bold">{escape(heading)}</text>'
        )
        for j, b in enumerate(mn):
            cx, cy = x0 + label_w + j * cell + cell / 2 + 4, y + 18 + top
            out.append(f'<text x="{cx:g}" y="{cy}" transform="rotate(-90 {cx:g} {cy})">{escape(str(b))}</text>')
        for i, a in enumerate(mn):
            yy = y + 24 + top + i * cell
            out.append(f'<text x="{x0}" y="{yy + 16}">{escape(str(a))}</text>')
            for j, b in enumerate(mn):
                c = None if a == b else (m["cells"].get((a, b)) or m["cells"].get((b, a)))
                title = (
                    f"{a} {rail}"
                    if a == b
                    else f"{a} <-> {b} {rail}: not tested"
                    if c is None
                    else f"{a} <-> {b} {rail}: {gbps_text(c.get('gbps'))} Gb/s" + (f" ({c['code']})" if c.get("code") else "")
                )
                _cell_svg(
                    out, x0 + label_w + j * cell, yy, cell - 1, cell - 1, c, threshold, line_rate, title, {"data-rail": rail, "data-row": a, "data-col": b}
                )
        out.append("</g>")
        row_h = max(row_h if k % 2 else 0, 24 + top + cell * len(mn) + 32)
        x0 += pw
        width = max(width, x0)
    return y + row_h, width
