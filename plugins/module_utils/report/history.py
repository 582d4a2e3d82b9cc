"""Report history and trends (issue 27): the previous run of the same scope, what changed since
(bandwidth drops, error-rate rises), the last pass, and pruning of old run directories. Stdlib only,
like report.py.
"""

import json
import os
import re
import shutil

from ansible_collections.linerate.fabric.plugins.module_utils.checks.names import natural_key
from ansible_collections.linerate.fabric.plugins.module_utils.checks.rdma import stored_rows
from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import worst_links

# ---------------------------------------------------------------- history and trends (issue 27)

# How many runs <reports_dir> keeps (the oldest beyond it are removed after a write; latest is never removed).
HISTORY_KEEP = 30
# A rail's worst ib_write_bw (or a nccl-tests busbw) lower than the previous run's by more than this share is a trend.
TREND_BANDWIDTH_DROP = 0.05
# A BER that grew by more than this factor since the previous run is a trend (a BER moves in orders of magnitude).
TREND_BER_FACTOR = 10.0
_RUN_DIR = re.compile(r"\d{8}T\d{6}Z(-\d+)?")


def scope_of(report):
    """What makes two runs comparable: the mode (verification or audit) and the nodes verified."""
    return {"mode": "audit" if report.get("mode") else "verify", "nodes": sorted(str(n) for n in ((report.get("meta") or {}).get("nodes") or []))}


def run_dirs(reports_dir):
    """The run directories of ``reports_dir`` (``<timestamp>[-n]``), oldest first."""
    try:
        names = [n for n in os.listdir(reports_dir) if _RUN_DIR.fullmatch(n) and os.path.isdir(os.path.join(reports_dir, n))]
    except FileNotFoundError:
        return []
    return sorted(names, key=lambda n: (n.split("-")[0], int(n.split("-")[1]) if "-" in n else 1))


def previous_report(reports_dir, report):
    """(directory, report) of the newest earlier run of the same scope, or (None, None)."""
    want = scope_of(report)
    for name in reversed(run_dirs(reports_dir)):
        try:
            with open(os.path.join(reports_dir, name, "report.json")) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and scope_of(doc) == want:
            return name, doc
    return None, None


def _finding_key(f):
    return (f.get("code"), f.get("node"), f.get("device"), f.get("switch"), f.get("switch_port"))


def _rail_bandwidth(report):
    grid = worst_links(stored_rows((report.get("checks") or {}).get("ib_write_bw") or {}))
    return {(n, r): c["gbps"] for n, rails in grid["cells"].items() for r, c in rails.items() if c.get("gbps") is not None}


def _ports(report):
    return {(p["node"], p["device"]): p for p in ((report.get("checks") or {}).get("link_health") or {}).get("ports") or []}


def trends(report, previous, bandwidth_drop=TREND_BANDWIDTH_DROP, ber_factor=TREND_BER_FACTOR):
    """What changed since ``previous`` (a report of the same scope): bandwidth down by more than
    ``bandwidth_drop``, BER up by more than ``ber_factor``, window error counts or flaps up, findings new and gone."""
    out = {"bandwidth_down": [], "busbw_down": [], "ber_rising": [], "errors_rising": [], "findings_new": [], "findings_gone": []}
    before, now = _rail_bandwidth(previous), _rail_bandwidth(report)
    for key in sorted(set(before) & set(now), key=lambda k: (natural_key(k[0]), natural_key(k[1]))):
        b, a = float(before[key]), float(now[key])
        if b > 0 and (b - a) / b > bandwidth_drop:
            out["bandwidth_down"].append({"node": key[0], "device": key[1], "before_gbps": b, "gbps": a, "drop": round((b - a) / b, 4)})
    for name, c in (report.get("checks") or {}).items():
        p = (previous.get("checks") or {}).get(name) or {}
        if name.startswith("nccl:") and p.get("busbw_gbytes") and c.get("busbw_gbytes") is not None:
            b, a = float(p["busbw_gbytes"]), float(c["busbw_gbytes"])
            if b > 0 and (b - a) / b > bandwidth_drop:
                out["busbw_down"].append({"test": name, "before_gbytes": b, "gbytes": a, "drop": round((b - a) / b, 4)})
    pb, pa = _ports(previous), _ports(report)
    for key in sorted(set(pb) & set(pa), key=lambda k: (natural_key(k[0]), natural_key(k[1]))):
        b, a = pb[key], pa[key]
        for ber in ("effective_ber", "raw_ber"):
            if a.get(ber) is not None and b.get(ber) is not None and a[ber] > max(b[ber], 0) * ber_factor and a[ber] > 0:
                out["ber_rising"].append({"node": key[0], "device": key[1], "counter": ber, "before": b[ber], "now": a[ber]})
        for cnt in ("errors", "flaps"):
            if (a.get(cnt) or 0) > (b.get(cnt) or 0):
                out["errors_rising"].append({"node": key[0], "device": key[1], "counter": cnt, "before": b.get(cnt) or 0, "now": a.get(cnt)})
    old = {_finding_key(f): f for f in previous.get("findings") or []}
    new = {_finding_key(f): f for f in report.get("findings") or []}
    short = ("code", "severity", "node", "device", "switch", "switch_port")
    out["findings_new"] = [{k: new[x].get(k) for k in short} for x in new if x not in old]
    out["findings_gone"] = [{k: old[x].get(k) for k in short} for x in old if x not in new]
    return out


def last_pass(report, previous=None):
    """{node: time of its last passing run}: this run's time for a node verified with no error finding,
    else what the previous run of the same scope recorded (report.json history.last_pass)."""
    out = dict(((previous or {}).get("history") or {}).get("last_pass") or {})
    failed = {f.get("node") for f in report.get("findings") or [] if f.get("severity") == "error"}
    for node in (report.get("meta") or {}).get("nodes") or []:
        if node not in failed:
            out[str(node)] = report["generated_at"]
    return out


def attach_history(report, reports_dir, bandwidth_drop=TREND_BANDWIDTH_DROP, ber_factor=TREND_BER_FACTOR):
    """Add ``history`` ({previous, last_pass}) and ``trends`` (against the previous run of the same scope) to
    ``report`` before it is rendered; returns it."""
    name, prev = previous_report(reports_dir, report) if reports_dir else (None, None)
    report["history"] = {"previous": name, "previous_generated_at": (prev or {}).get("generated_at"), "last_pass": last_pass(report, prev)}
    if prev is not None:
        report["trends"] = trends(report, prev, bandwidth_drop, ber_factor)
    return report


def prune_history(reports_dir, keep=HISTORY_KEEP):
    """Remove the oldest run directories beyond ``keep`` (never the one ``latest`` points to); returns their names."""
    if keep < 1:
        raise ValueError(f"history keep: {keep!r} is not allowed (allowed: an integer >= 1)")
    latest = os.path.basename(os.path.realpath(os.path.join(reports_dir, "latest")))
    runs = run_dirs(reports_dir)
    gone = [n for n in runs[: max(0, len(runs) - keep)] if n != latest]
    for name in gone:
        shutil.rmtree(os.path.join(reports_dir, name))
    return gone
