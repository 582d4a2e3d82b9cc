"""report.html in a real browser: headless Chromium lays the heat map out with its own fonts, the test reads
the title boxes back from the DOM (getBBox) and checks them in a screenshot of the page.

Run by ``make test-browser`` (installs the Debian package chromium the way ``make deps`` installs the lab's
packages; not part of ``make test``). Without chromium every test here is skipped, saying so. With
``LINERATE_REPORT_HTML=<path to report.html>`` (``make test-browser`` passes the lab's
``inventory/lab-output/reports/latest/report.html`` when there is one) that report is checked too.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.report import page as report_page

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "unit"))  # the unit tests' report builders

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test-browser installs it)")

# Appended to a copy of the page (report.html itself carries no script): every text box of the heat map in
# page pixels, as the browser laid it out, written into the page for --dump-dom to return.
MEASURE = """
<script>
const svg = document.querySelector('.heatmap svg');
const r0 = svg.getBoundingClientRect();
const box = (t) => { const r = t.getBoundingClientRect();
  return {text: t.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom,
          title: t.matches('g.matrix > text:first-of-type')}; };
const out = {svg: {x0: r0.left, y0: r0.top, x1: r0.right, y1: r0.bottom, width: svg.width.baseVal.value},
             dpr: window.devicePixelRatio, texts: [...svg.querySelectorAll('text')].map(box)};
const pre = document.createElement('pre'); pre.id = 'lr-boxes'; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>
"""


# the browser window's width in px, for the measure and the screenshot alike
WINDOW_W = 1800


def chromium(*args, timeout=120):
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--force-device-scale-factor=1",
        *args,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True)


def measured(page, tmp_path):
    """The browser's boxes of the heat map's texts in ``page`` (report.html's text)."""
    path = tmp_path / "measure.html"
    path.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = chromium(f"--window-size={WINDOW_W},1000", "--virtual-time-budget=5000", "--dump-dom", path.as_uri()).stdout
    start = dom.index('<pre id="lr-boxes">') + len('<pre id="lr-boxes">')
    text = dom[start : dom.index("</pre>", start)]
    return json.loads(text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&"))


def png_pixels(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, color, _c, _f, interlace = head
    assert depth == 8 and color in (2, 6) and interlace == 0, head
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, [[tuple(r[x * bpp : x * bpp + 3]) for x in range(width)] for r in rows]


def overlap(a, b):
    return a["x0"] < b["x1"] - 0.5 and b["x0"] < a["x1"] - 0.5 and a["y0"] < b["y1"] - 0.5 and b["y0"] < a["y1"] - 0.5


def check_page(page, tmp_path, rails):
    boxes = measured(page, tmp_path)
    titles = [t for t in boxes["texts"] if t["title"]]
    assert len(titles) == rails, titles
    for i, a in enumerate(titles):
        # inside the picture, clear of every other title and of every other text
        assert a["x1"] <= boxes["svg"]["x1"] + 0.5, (a, boxes["svg"])
        others = [b for b in boxes["texts"] if b is not a and overlap(a, b)]
        assert not others, (a, others)
    # the screenshot: each title drawn where the DOM says (dark pixels inside its box)
    shot = tmp_path / "shot.png"
    # the same width as measured (the text above the heat map wraps by it), tall enough for all of it
    w, h = WINDOW_W, int(boxes["svg"]["y1"]) + 40
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    chromium(f"--window-size={w},{h}", f"--screenshot={shot}", path.as_uri())
    width, height, px = png_pixels(shot)
    assert (width, height) == (w, h)
    for t in titles:
        ink = [px[y][x] for y in range(int(t["y0"]), int(t["y1"])) for x in range(int(t["x0"]), int(t["x1"]))]
        assert sum(1 for p in ink if max(p) < 100) > 5 * len(t["text"]), t
    return boxes


@pytest.mark.parametrize("n", [2, 4, 5])
def test_the_heat_map_titles_of_a_report_never_overlap_in_the_browser(n, tmp_path):
    from report.test_report import named_report

    doc = named_report([f"node{i}" for i in range(1, n + 1)], bad=("node2", "mlx5_1"))
    check_page(report_page.to_html(doc), tmp_path, rails=2)


# Appended to a copy of a page: every resource the page itself requested (Resource Timing), once loaded.
RESOURCES = """
<script>
window.addEventListener('load', () => {
  const pre = document.createElement('pre'); pre.id = 'lr-resources';
  pre.textContent = JSON.stringify(performance.getEntriesByType('resource').map(e => e.name));
  document.body.appendChild(pre);
});
</script>
"""


def requests(page, tmp_path, name):
    """The URLs ``page`` requested as Chromium rendered it (its Resource Timing entries, Chromium's own
    background traffic aside)."""
    path = tmp_path / f"{name}.html"
    path.write_text(page.replace("</body>", RESOURCES + "</body>"), encoding="utf-8")
    dom = chromium("--virtual-time-budget=5000", "--dump-dom", path.as_uri()).stdout
    start = dom.index('<pre id="lr-resources">') + len('<pre id="lr-resources">')
    return set(json.loads(dom[start : dom.index("</pre>", start)].replace("&amp;", "&")))


def test_the_page_loads_nothing_from_the_network(tmp_path):
    """What the page requests as Chromium renders it: nothing (a page that does fetch is seen to)."""
    from report.test_report import named_report

    page = report_page.to_html(named_report(["a", "b", "c"], bad=("b", "mlx5_0")))
    control = page.replace("</body>", '<img src="http://127.0.0.1:9/probe.png"></body>')
    assert any("127.0.0.1:9/probe.png" in u for u in requests(control, tmp_path, "control"))
    assert requests(page, tmp_path, "report") == set()


@pytest.mark.skipif(not os.environ.get("LINERATE_REPORT_HTML"), reason="LINERATE_REPORT_HTML not set (no lab report)")
def test_the_lab_report_opens_and_its_titles_do_not_overlap(tmp_path):
    page = open(os.environ["LINERATE_REPORT_HTML"], encoding="utf-8").read()
    path = tmp_path / "lab.html"
    path.write_text(page, encoding="utf-8")
    dom = chromium("--virtual-time-budget=5000", "--dump-dom", path.as_uri()).stdout
    assert '<h1 class="' in dom and "Fabric " in dom, dom[:2000]
    rails = page.count('<g class="matrix"')
    if not rails:
        pytest.skip("the lab's latest report has no ib_write_bw pair matrix (a run without ib_write_bw): it opens; there are no titles to lay out")
    check_page(page, tmp_path, rails)
