"""Verification reports: the JSON document and its files (report.json, summary.md, report.html,
junit.xml, heatmap.svg).

Stdlib only, usable from the verify_report action on the controller and on its own (the checkout's
command-line summary, scripts/report_summary.py, loads it so)::

    python scripts/report_summary.py reports/latest     # print the summary

``write_reports(report, reports_dir)`` writes ``<reports_dir>/<timestamp>/``
{report.json, summary.md, report.html, junit.xml, heatmap.svg} and points
``<reports_dir>/latest`` at it. report.html is summary.md as one self-contained
page (inline CSS, the heat map inline as SVG, nothing fetched), for a browser.

Each file has its writer: markdown.py (summary.md), junit.py, page.py (report.html), heatmap.py (the
SVG), with the ib_write_bw check's views in rdma.py (checks/rdma.py stores its rows); files.py writes
them, history.py keeps the trends.
"""

import datetime
import json
import os

from ansible_collections.linerate.fabric.plugins.module_utils.report import files as report_files
from ansible_collections.linerate.fabric.plugins.module_utils.report.heatmap import heatmap_svg
from ansible_collections.linerate.fabric.plugins.module_utils.report.junit import to_junit
from ansible_collections.linerate.fabric.plugins.module_utils.report.markdown import to_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.report.page import to_html
from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import rdma_view

# 2: checks.ib_write_bw stores each test once, as a row of RDMA_TEST_FIELDS (its matrix and JUnit cases
# are derived on read); 1 stored every test three times (tests, matrix, cases).
SCHEMA_VERSION = 2


# report.json is indented for people below this size (characters), one line above it.
JSON_INDENT_MAX = 1 << 20


# ---------------------------------------------------------------- the report document


def build_report(findings, summary, checks, fabric, meta=None, mode=None):
    """The JSON document: what ran, what was found, with stable codes.

    ``mode``: how it ran, e.g. the audit's "audit: read-only, nothing was changed"
    (absent for a verification)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fabric": {k: fabric.get(k) for k in ("name", "transport", "link_speed_gbps", "link_width", "mtu", "verify")},
        "summary": summary,
        "checks": checks,
        "findings": findings,
        "meta": meta or {},
    }
    if mode:
        doc["mode"] = mode
    return doc


# The NCCL tuning sweep's row fields in report.json (nccl_tuning.rows); runs and medians are GB/s.
TUNING_ROW_FIELDS = ("key", "value", "runs", "median", "min", "max", "gain_percent", "spread_percent", "kept", "winner", "why")


def tuning_section(sweep):
    """report.json ``nccl_tuning``: the sweep of this run (playbooks/nccl_tune.yml) in a fixed shape."""
    return {
        "metric": "avg_busbw_gbytes",
        "settings": dict(sweep.get("settings") or {}),
        "nccl_version": sweep.get("nccl_version"),
        "runs": sweep.get("runs"),
        "stopped": sweep.get("stopped"),
        "margin_percent": sweep.get("margin_percent"),
        "repeats": sweep.get("repeats"),
        "file": sweep.get("file"),
        "rows": [{k: row.get(k) for k in TUNING_ROW_FIELDS} for row in sweep.get("rows") or []],
    }


# ---------------------------------------------------------------- files


def render_reports(report):
    """{file name: text} of the five report files; the ib_write_bw view is derived once for all of them."""
    # json.dumps without indent or sorting is the C encoder at its fastest (json.dump and indent are pure
    # Python: many seconds for a 256-node full plan); a report small enough to read in an editor is
    # indented and sorted again for people.
    text = json.dumps(report)
    if len(text) < JSON_INDENT_MAX:
        text = json.dumps(report, indent=1, sort_keys=True)
    view = rdma_view(report)
    markdown, svg = to_markdown(report, view), heatmap_svg(report, view=view)
    return {
        "report.json": text + "\n",
        "summary.md": markdown,
        "junit.xml": to_junit(report),
        "heatmap.svg": svg,
        "report.html": to_html(report, markdown, svg, view),
    }


def write_reports(report, reports_dir, stamp=None, rendered=None):
    """Write the report files to ``<reports_dir>/<stamp>/`` and point ``latest`` at it;
    ``rendered``: render_reports(report) when the caller has it already.

    Atomic (report/files.py): every file 0600 in a 0700 directory, written whole in a temporary
    directory that is renamed to its run name, then ``latest`` replaced; a failure keeps nothing of this
    report and raises report_files.ReportWriteError, the earlier reports and ``latest`` as they were."""
    rendered = rendered or render_reports(report)
    stamp = stamp or report["generated_at"].replace(":", "").replace("-", "")
    files = {"json": "report.json", "markdown": "summary.md", "html": "report.html", "junit": "junit.xml", "heatmap": "heatmap.svg"}
    out = report_files.publish(reports_dir, stamp, {name: rendered[name] for name in files.values()})
    return {k: os.path.join(out, v) for k, v in files.items()} | {"dir": out}


def summary_text(path):
    """The Markdown summary of a report directory (or of report.json)."""
    if os.path.isdir(path):
        md = os.path.join(path, "summary.md")
        if os.path.exists(md):
            return open(md).read()
        path = os.path.join(path, "report.json")
    with open(path) as f:
        return to_markdown(json.load(f))
