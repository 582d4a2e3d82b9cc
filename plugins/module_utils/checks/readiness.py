"""The readiness check's report: the host readiness facts (host/readiness.py) judged per node and across
nodes (host/readiness_findings.py; role task readiness.yml)."""

from ansible_collections.linerate.fabric.plugins.module_utils.host import readiness_findings


def readiness_check(nodes, data, limits):
    """Findings and the report check of the host readiness facts (role task readiness.yml)."""
    ready = {n: data[n]["verify_fabric_readiness"]["facts"] for n in nodes if (data[n].get("verify_fabric_readiness") or {}).get("facts")}
    if not ready:
        return [], None
    f = [x for n, fx in ready.items() for x in readiness_findings.host_findings(n, fx, **limits)]
    f += readiness_findings.parity_findings(ready)
    bad = {x["node"] for x in f if x["severity"] == "error"}
    cases = [
        {
            "name": f"{n} readiness",
            "ok": n not in bad,
            "code": next((x["code"] for x in f if x["node"] == n and x["severity"] == "error"), None),
            "message": "; ".join(x["message"] for x in f if x["node"] == n) or None,
            "findings": [x for x in f if x["node"] == n],
        }
        for n in ready
    ]
    return f, {
        "passed": not bad,
        "rails": readiness_findings.rail_summary(ready),
        "versions": {n: fx.get("versions") for n, fx in ready.items()},
        # how each GPU's PCIe link was judged (at rest: width only; under load: speed too) and why
        "gpu_links": {n: readiness_findings.gpu_link_notes(fx) for n, fx in ready.items()},
        "detail": f"{len(ready) - len(bad)}/{len(ready)} nodes ready (PCIe, ACS, affinity, parity); {len(f)} finding(s)",
        "cases": cases,
    }


def report(ctx):
    """check ``readiness``: the host below the fabric, per node, then parity across nodes."""
    limits = {k: int(v) for k, v in (ctx.template(ctx.args.get("readiness") or {})).items()}
    f, check = readiness_check(ctx.nodes, ctx.data, limits)
    return (f, {"readiness": check}) if check else ([], {})
