#!/usr/bin/env python3
"""Print a verification report's Markdown summary; exit 0 when it passed, 1 when not, 2 when there is none.

    python scripts/report_summary.py inventory/<site>-output/reports/latest

`make lab` runs it after playbooks/site.yml. A checkout tool, not part of the collection: the
report's logic stays in plugins/module_utils/report/report.py (stdlib only, no printing there).
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # nothing written into the collection's tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".collections"))
from ansible_collections.linerate.fabric.plugins.module_utils.report import report  # noqa: E402


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "reports/latest"
    if not os.path.exists(path):
        print(f"report: no verification report at {path} (run playbooks/verify.yml)", file=sys.stderr)
        return 2
    print(report.summary_text(path), end="")
    where = os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path))
    print(f"\nFull report: {where}/ (report.html for a browser; report.json, summary.md, junit.xml, heatmap.svg)")
    with open(os.path.join(path, "report.json") if os.path.isdir(path) else path, encoding="utf-8") as f:
        return 0 if json.load(f)["summary"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
