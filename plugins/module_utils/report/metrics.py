"""A node-exporter textfile per node from a verification or audit report (issue 27).

``node_metrics(report)`` -> {node: text} in the Prometheus text exposition
format (prometheus/docs content/docs/instrumenting/exposition_formats.md;
node_exporter's textfile collector reads ``*.prom`` from its directory). Every
value is read from the report (report.json), nothing is measured here:

per rail (labels fabric, node, device):
  linerate_rdma_bandwidth_gbps        worst ib_write_bw of the rail in the run (Gb/s)
  linerate_rdma_tests / _tests_failing ib_write_bw tests of the rail, and those failing
  linerate_link_errors_window         physical errors counted over the verification window (delta)
  linerate_link_flaps_window          link-down events over the window (delta)
  linerate_link_effective_ber / _raw_ber  mlxlink's BER at the end of the window
  linerate_incast_pause_frames / _ecn_marked / _cnp_sent / _cnp_handled / _out_of_sequence
                                      the incast's counter deltas on the node's port
per node (labels fabric, node):
  linerate_findings{code,severity}    findings naming the node
  linerate_node_passed                1 when no error names the node
  linerate_last_run_timestamp_seconds, linerate_last_pass_timestamp_seconds
  linerate_node_verified              0 when the node did not finish this run (its other values are not this run's)
  linerate_node_explained{element}    1 when a shared element explains the node's failures (not drained for them)
fleet-wide (labels fabric; on every node's textfile and the controller's, fleet_metrics):
  linerate_drain_breaker_tripped      1 while the drain breaker is open
  linerate_drain_held_nodes           nodes with an own fault the drain decision held
  linerate_suspect_element_nodes{code,kind,element}  nodes a shared element explains
  linerate_nccl_busbw_gbytes{test}    the run's nccl-tests bus bandwidth (fabric-wide, on every node)

Stdlib only.
"""

import calendar
import time

INCAST = (
    ("pause", "linerate_incast_pause_frames"),
    ("ecn_marked", "linerate_incast_ecn_marked"),
    ("cnp_sent", "linerate_incast_cnp_sent"),
    ("cnp_handled", "linerate_incast_cnp_handled"),
    ("out_of_sequence", "linerate_incast_out_of_sequence"),
)
HELP = {
    "linerate_rdma_bandwidth_gbps": ("gauge", "Worst ib_write_bw of the rail in the last linerate run (Gb/s)."),
    "linerate_rdma_tests": ("gauge", "ib_write_bw tests of the rail in the last run."),
    "linerate_rdma_tests_failing": ("gauge", "ib_write_bw tests of the rail that failed in the last run."),
    "linerate_link_errors_window": ("gauge", "Physical errors counted on the rail over the last run's window."),
    "linerate_link_flaps_window": ("gauge", "Link-down events on the rail over the last run's window."),
    "linerate_link_effective_ber": ("gauge", "mlxlink effective physical BER of the rail."),
    "linerate_link_raw_ber": ("gauge", "mlxlink raw physical BER of the rail."),
    "linerate_incast_pause_frames": ("gauge", "PFC pause frames of the rail's port during the last incast."),
    "linerate_incast_ecn_marked": ("gauge", "ECN-marked RoCE packets received on the rail during the last incast."),
    "linerate_incast_cnp_sent": ("gauge", "CNPs sent by the rail during the last incast."),
    "linerate_incast_cnp_handled": ("gauge", "CNPs handled by the rail during the last incast."),
    "linerate_incast_out_of_sequence": ("gauge", "Out-of-sequence packets on the rail during the last incast."),
    "linerate_nccl_busbw_gbytes": ("gauge", "nccl-tests bus bandwidth of the last run (GB/s)."),
    "linerate_findings": ("gauge", "Findings of the last run naming the node, by code and severity."),
    "linerate_node_passed": ("gauge", "1 when the last run found no error on the node."),
    "linerate_last_run_timestamp_seconds": ("gauge", "When the last linerate run's report was generated."),
    "linerate_last_pass_timestamp_seconds": ("gauge", "When a linerate run last passed on the node."),
    "linerate_node_verified": (
        "gauge",
        "1 when the node finished the last run's verification (0: unreachable, failed or left the run: its other values are not this run's).",
    ),
    "linerate_node_explained": ("gauge", "1 when the node's failures in the last run are explained by a shared element (label element): not drained for them."),
    "linerate_drain_breaker_tripped": ("gauge", "1 while the drain circuit breaker is open: nothing is drained or returned until an operator resets it."),
    "linerate_drain_held_nodes": ("gauge", "Nodes with a fault of their own the last run's drain decision held (breaker, budget or draining off)."),
    "linerate_suspect_element_nodes": ("gauge", "Nodes whose failures one shared element explains in the last run (labels code, kind, element)."),
}


def _esc(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**kw):
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in kw.items()) + "}"


def epoch(stamp):
    """``2026-11-26T19:38:42Z`` -> seconds since the epoch."""
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def _num(v):
    return repr(float(v)) if isinstance(v, float) else str(int(v))


def node_samples(report, node, shared=None):
    """[(metric, labels dict, value)] of ``node``; ``shared``: the fleet-wide samples (remediation_samples),
    computed once by the caller for every node, else here."""
    fab = (report.get("fabric") or {}).get("name") or "fabric"
    checks = report.get("checks") or {}
    base = {"fabric": fab, "node": node}
    out = []
    # late import: report.py is this file's sibling (the view of the stored ib_write_bw rows)
    from ansible_collections.linerate.fabric.plugins.module_utils.checks.rdma import stored_rows
    from ansible_collections.linerate.fabric.plugins.module_utils.report.rdma import worst_links

    grid = worst_links(stored_rows(checks.get("ib_write_bw") or {}))
    for rail, c in sorted((grid["cells"].get(node) or {}).items()):
        lab = dict(base, device=rail)
        if c.get("gbps") is not None:
            out.append(("linerate_rdma_bandwidth_gbps", lab, c["gbps"]))
        out += [("linerate_rdma_tests", lab, c["tests"]), ("linerate_rdma_tests_failing", lab, c["failing"])]
    for p in (checks.get("link_health") or {}).get("ports") or []:
        if p.get("node") != node:
            continue
        lab = dict(base, device=p["device"])
        for key, name in (
            ("errors", "linerate_link_errors_window"),
            ("flaps", "linerate_link_flaps_window"),
            ("effective_ber", "linerate_link_effective_ber"),
            ("raw_ber", "linerate_link_raw_ber"),
        ):
            if p.get(key) is not None:
                out.append((name, lab, p[key]))
    for r in (checks.get("incast") or {}).get("rails") or []:
        lab = dict(base, device=r["device"])
        for key, name in INCAST:
            v = (r.get(key) or {}).get(node)
            if v is not None:
                out.append((name, lab, v))
    for name, c in sorted(checks.items()):
        if name.startswith("nccl:") and c.get("busbw_gbytes") is not None:
            out.append(("linerate_nccl_busbw_gbytes", dict(base, test=name[5:]), c["busbw_gbytes"]))
    counts = {}
    for f in report.get("findings") or []:
        if f.get("node") == node:
            key = (f["code"], f["severity"])
            counts[key] = counts.get(key, 0) + 1
    for (code, sev), n in sorted(counts.items()):
        out.append(("linerate_findings", dict(base, code=code, severity=sev), n))
    errors = any(sev == "error" for _c, sev in counts)
    out.append(("linerate_node_passed", base, 0 if errors else 1))
    verified = node in ((report.get("meta") or {}).get("nodes") or [])
    out.append(("linerate_node_verified", base, 1 if verified else 0))
    for element in sorted({f["explained_by"] for f in report.get("findings") or [] if f.get("node") == node and f.get("explained_by")}):
        out.append(("linerate_node_explained", dict(base, element=element), 1))
    out += remediation_samples(report) if shared is None else shared
    out.append(("linerate_last_run_timestamp_seconds", base, epoch(report["generated_at"])))
    last = ((report.get("history") or {}).get("last_pass") or {}).get(node)
    if last:
        out.append(("linerate_last_pass_timestamp_seconds", base, epoch(last)))
    return out


def remediation_samples(report):
    """The drain decision's fleet-wide values (labels fabric): the breaker, the held nodes, the elements."""
    fab = (report.get("fabric") or {}).get("name") or "fabric"
    rem = report.get("remediation") or {}
    if not rem:
        return []
    out = [
        ("linerate_drain_breaker_tripped", {"fabric": fab}, 1 if (rem.get("breaker") or {}).get("tripped") else 0),
        ("linerate_drain_held_nodes", {"fabric": fab}, len(rem.get("held") or {})),
    ]
    for f in report.get("findings") or []:
        if f.get("check") == "attribution":
            out.append(
                (
                    "linerate_suspect_element_nodes",
                    {"fabric": fab, "code": f["code"], "kind": f.get("kind"), "element": f.get("element")},
                    len(f.get("explains") or []),
                )
            )
    return out


def fleet_metrics(report, scope=None):
    """The controller's textfile: every node in ``scope`` (default: the verified and every node a finding
    names), verified or not, passed or not, and the drain decision's values - the one place an
    unreachable node's state is exported (its own textfile cannot be written this run)."""
    mode = "audit" if report.get("mode") else "verify"
    fab = (report.get("fabric") or {}).get("name") or "fabric"
    verified = list((report.get("meta") or {}).get("nodes") or [])
    nodes = (
        list(scope)
        if scope is not None
        else verified + sorted({f["node"] for f in report.get("findings") or [] if f.get("node") and f["node"] not in verified})
    )
    errors = {f["node"] for f in report.get("findings") or [] if f.get("node") and f.get("severity") == "error"}
    samples = []
    for n in nodes:
        base = {"fabric": fab, "node": n}
        samples += [("linerate_node_verified", base, 1 if n in verified else 0), ("linerate_node_passed", base, 0 if n in errors or n not in verified else 1)]
    samples += remediation_samples(report)
    samples.append(("linerate_last_run_timestamp_seconds", {"fabric": fab}, epoch(report["generated_at"])))
    return render(samples, mode)


def render(samples, mode):
    """The textfile: # HELP / # TYPE once per metric, then its samples (mode label: verify | audit)."""
    lines, seen = [], set()
    for name, labels, value in sorted(samples, key=lambda s: s[0]):
        if name not in seen:
            seen.add(name)
            kind, text = HELP[name]
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        lines.append(f"{name}{_labels(**dict(labels, mode=mode))} {_num(value)}")
    return "\n".join(lines) + "\n"


def node_metrics(report, nodes=None):
    """{node: textfile text} for ``nodes`` (default: the report's meta.nodes and every node a finding names)."""
    mode = "audit" if report.get("mode") else "verify"
    if nodes is None:
        nodes = list((report.get("meta") or {}).get("nodes") or [])
        nodes += [f["node"] for f in report.get("findings") or [] if f.get("node") and f["node"] not in nodes]
    shared = remediation_samples(report)
    return {n: render(node_samples(report, n, shared), mode) for n in nodes}
