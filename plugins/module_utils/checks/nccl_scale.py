"""The NET loopback on every node and the scaling series (pure: nccl-tests results in, findings out).

- **Loopback**: nccl-tests on one node, one rank per GPU, with ``NCCL_P2P_DISABLE=1`` and
  ``NCCL_SHM_DISABLE=1`` so every hop of the ring leaves through a NIC to the switch and back (what
  Azure NHC's ``check_nccl_allreduce_ib_loopback`` runs on every node in parallel). It proves each
  node's own rails without a peer: a node below ``thresholds.nccl_loopback_threshold_gbytes`` is
  named (NCCL_LOOPBACK_LOW), whatever the other nodes do.
- **Series**: nccl-tests over 2, 4, 8 ... nodes (then all of them), the nodes taken leaf group by leaf
  group (``series_steps``), and the same within each leaf group; each step's efficiency is its bus
  bandwidth over the first multi-node step's (bus bandwidth is normalised for the rank count, so a
  healthy ring keeps it flat as it grows). A step below ``min_efficiency`` is NCCL_SCALING_LOW and
  names the nodes it added.
- **Straggler**: the node the collective waits for: among the nodes the first failing step added, the
  one whose own loopback was slowest (its per-rank timing: the time its ranks took through its own
  NICs); without a loopback result, the first failing step's nodes are named as suspects.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding

LOOPBACK_ENV = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
LOOPBACK_CHECK = "nccl_loopback"
SERIES_CHECK = "nccl_scaling"
DEFAULT_MIN_EFFICIENCY = 0.90


def loopback_findings(results: dict, fabric: dict, hosts: dict, ranks: int) -> tuple:
    """(findings, cases) of the per-node loopback. ``results``: {node: {"busbw", "error"}} (an nccl_tests
    run on that node alone); ``hosts``: {node: rdma_ports}; ``ranks``: ranks per node."""
    out, cases = [], []
    for node in sorted(results):
        r = results[node] or {}
        nics = len(hosts.get(node) or [])
        threshold = thresholds.nccl_loopback_threshold_gbytes(fabric, max(1, nics), max(1, ranks))
        busbw = r.get("busbw")
        if r.get("error") or busbw is None:
            why = r.get("error") or "no result"
            f = [finding("NCCL_LOOPBACK_FAILED", f"{node}: NET loopback failed: {why}", node=node, check=LOOPBACK_CHECK)]
        elif busbw < threshold:
            f = [
                finding(
                    "NCCL_LOOPBACK_LOW",
                    f"{node}: NET loopback {busbw:.2f} GB/s < {threshold:g} GB/s "
                    f"({ranks} ranks through {nics} NIC(s), P2P and SHM off): its own rails are slow",
                    node=node,
                    check=LOOPBACK_CHECK,
                    actual=busbw,
                    expected=threshold,
                )
            ]
        else:
            f = []
        out += f
        cases.append(
            {
                "name": f"{node} loopback",
                "ok": not f,
                "code": f[0]["code"] if f else None,
                "busbw": busbw,
                "threshold": threshold,
                "message": f[0]["message"] if f else None,
            }
        )
    return out, cases


def _ordered(nodes: list, group_of: dict) -> list:
    groups = []
    for n in nodes:
        g = group_of.get(n, "")
        if g not in groups:
            groups.append(g)
    return [n for g in groups for n in nodes if group_of.get(n, "") == g]


def _counts(total: int) -> list:
    out, n = [], 2
    while n < total:
        out.append(n)
        n *= 2
    return out + [total] if total >= 2 else []


def series_steps(nodes: list, group_of: dict = None) -> list:
    """The runs of the series: [{"name", "group", "nodes", "added"}], the fleet's steps 2, 4, 8 ... then
    every node (nodes in ``group_of``'s groups, so a step fills a leaf group before the next), then the
    same within each group of two nodes or more. ``group_of``: {node: leaf group} (None: one group)."""
    group_of = group_of or {}
    order = _ordered(list(nodes), group_of)
    steps = []
    for label, members in [("fleet", order)] + [
        (g, [n for n in order if group_of.get(n) == g]) for g in sorted(set(group_of.values())) if len(set(group_of.values())) > 1
    ]:
        prev = []
        for c in _counts(len(members)):
            steps.append({"name": f"{label}:{c}", "group": label, "nodes": members[:c], "added": [n for n in members[:c] if n not in prev]})
            prev = members[:c]
    return steps


def efficiency(steps: list) -> list:
    """Each step with ``efficiency``: its bus bandwidth over its group's first step's (None without a
    result), and ``step_efficiency`` over the step before it."""
    out, first, before = [], {}, {}
    for s in steps:
        busbw, g = s.get("busbw"), s["group"]
        ref = first.setdefault(g, busbw) if busbw is not None else first.get(g)
        e = busbw / ref if busbw is not None and ref else None
        prev = before.get(g)
        out.append(dict(s, efficiency=e, step_efficiency=busbw / prev if busbw is not None and prev else None))
        if busbw is not None:
            before[g] = busbw
    return out


def series_findings(steps: list, loopback: dict = None, min_efficiency: float = DEFAULT_MIN_EFFICIENCY) -> tuple:
    """(findings, cases, straggler): NCCL_SCALING_LOW for every step below ``min_efficiency`` (or failed),
    NCCL_STRAGGLER for the node named (``straggler``; None when every step scaled)."""
    if not 0 < min_efficiency <= 1:
        raise ValueError(f"min_efficiency {min_efficiency}: a share of the first step, above 0 and at most 1")
    out, cases, first_bad = [], [], {}
    for s in efficiency(steps):
        e, bad = s["efficiency"], None
        if s.get("error") or s.get("busbw") is None:
            bad = f"{s['name']} ({len(s['nodes'])} nodes): no result ({s.get('error') or 'not run'})"
        elif e is not None and e < min_efficiency:
            bad = f"{s['name']}: {s['busbw']:.2f} GB/s, {e:.0%} of the first step's (at least {min_efficiency:.0%} asked for); it added {', '.join(s['added'])}"
        if bad:
            out.append(
                finding(
                    "NCCL_SCALING_LOW",
                    bad,
                    check=SERIES_CHECK,
                    actual=e,
                    expected=min_efficiency,
                    evidence={"step": s["name"], "nodes": s["nodes"], "added": s["added"]},
                )
            )
            first_bad.setdefault(s["group"], s)
        cases.append(
            {
                "name": s["name"],
                "ok": not bad,
                "busbw": s.get("busbw"),
                "efficiency": e,
                "step_efficiency": s["step_efficiency"],
                "nodes": len(s["nodes"]),
                "message": bad,
            }
        )
    who = straggler(first_bad.get("fleet") or next(iter(first_bad.values()), None), loopback or {})
    if who:
        out.append(who)
    return out, cases, who["node"] if who else None


def straggler(step: dict, loopback: dict):
    """The NCCL_STRAGGLER finding for the first step that did not scale, or None."""
    if not step:
        return None
    timed = [(loopback[n]["busbw"], n) for n in step["added"] if (loopback.get(n) or {}).get("busbw") is not None]
    if not timed:
        return finding(
            "NCCL_STRAGGLER",
            f"{step['name']}: one of {', '.join(step['added'])} slows the collective (no loopback result tells which)",
            check=SERIES_CHECK,
            evidence={"step": step["name"], "suspects": step["added"]},
        )
    busbw, node = min(timed)
    others = sorted(b for b, n in timed if n != node)
    beside = f"; the others added {others[0]:.2f} GB/s or more" if others else ""
    return finding(
        "NCCL_STRAGGLER",
        f"{node}: slows the collective from {step['name']} on: its own NET loopback {busbw:.2f} GB/s{beside}",
        node=node,
        check=SERIES_CHECK,
        actual=busbw,
        evidence={"step": step["name"], "added": step["added"]},
    )


# ---------------------------------------------------------------- the report (checks/registry.py)


def _ranks(run: dict) -> int:
    """A run's ranks on its node: mpirun's -np times nccl-tests' -g (both from its argv)."""
    argv = [str(a) for a in run.get("argv") or []]
    np_ = int(argv[argv.index("-np") + 1]) if "-np" in argv else 1
    g = int(argv[argv.index("-g") + 1]) if "-g" in argv else 1
    return np_ * g


def _is_loopback(run: dict) -> bool:
    argv = [str(a) for a in run.get("argv") or []]
    return all(f"{k}={v}" in argv for k, v in LOOPBACK_ENV.items())


def loopback_report(ctx) -> tuple:
    """check ``nccl_loopback``: each node's own run (host variable ``verify_fabric_nccl_loopback``)."""
    runs = {n: ctx.data[n].get("verify_fabric_nccl_loopback") for n in ctx.nodes}
    runs = {n: r for n, r in runs.items() if r and not r.get("skipped") and not r.get("skipped_run")}
    if not runs:
        return [], {}
    results, ranks = {}, 1
    for n, r in runs.items():
        if not _is_loopback(r):
            results[n] = {"busbw": None, "error": "not a NET loopback: the run did not set " + " and ".join(f"{k}={v}" for k, v in LOOPBACK_ENV.items())}
        else:
            failed = r.get("msg") if r.get("failed") else None  # the module itself failed (no mpirun, a bad layout)
            results[n] = {"busbw": r.get("busbw"), "error": r.get("error") or failed}
        ranks = max(ranks, _ranks(r))
    found, cases = loopback_findings(results, ctx.fabric, ctx.hosts, ranks)
    ok = sum(1 for c in cases if c["ok"])
    return found, {
        LOOPBACK_CHECK: {
            "passed": not found,
            "cases": cases,
            "detail": f"{ok}/{len(cases)} node(s) at their NET loopback threshold ({ranks} ranks a node, P2P and SHM off)",
        }
    }


def series_report(ctx) -> tuple:
    """check ``nccl_scaling``: the series' runs (``verify_fabric_nccl_series``: the registered loop, each
    result's ``item`` its step) and the nodes' own loopback where it ran (the straggler)."""
    reg = next((ctx.data[n].get("verify_fabric_nccl_series") for n in ctx.nodes if ctx.data[n].get("verify_fabric_nccl_series")), None)
    results = [r for r in (reg or {}).get("results") or [] if isinstance(r, dict) and r.get("item")]
    results = [r for r in results if not r.get("skipped") and not r.get("skipped_run")]
    if not results:
        return [], {}
    steps = [dict(r["item"], busbw=r.get("busbw"), error=r.get("error") or (r.get("msg") if r.get("failed") else None)) for r in results]
    loopback = {
        n: {"busbw": (ctx.data[n].get("verify_fabric_nccl_loopback") or {}).get("busbw")} for n in ctx.nodes if ctx.data[n].get("verify_fabric_nccl_loopback")
    }
    # the share asked for rides each step (role variable verify_fabric_nccl_scaling_min_efficiency)
    minimum = float(results[0]["item"].get("min_efficiency") or DEFAULT_MIN_EFFICIENCY)
    found, cases, who = series_findings(steps, loopback, minimum)
    detail = "; ".join(
        f"{c['name']} {c['busbw']:.1f} GB/s" + (f" ({c['efficiency']:.0%})" if c["efficiency"] else "") if c["busbw"] is not None else f"{c['name']} no result"
        for c in cases
    )
    return found, {SERIES_CHECK: {"passed": not found, "cases": cases, "straggler": who, "detail": detail + (f"; straggler {who}" if who else "")}}
