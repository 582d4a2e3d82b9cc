"""GPUDirect RDMA check: ib_write_bw from GPU memory and gdrcopy's sanity test; tests in, findings out.

``ib_write_bw --use_cuda=<gpu>`` runs on the first rounds' pairs of ib_write_bw's plan (the same
schedule, module ib_write_bw with ``use_cuda``), each rail with the GPU nearest to it (the
readiness check's rails). Its threshold is ib_write_bw's (``ib_write_bw_fraction`` x line
rate): a rail-aligned GPU (PIX/PXB) reaches what host memory reaches. Where perftest cannot
use GPU memory at all the finding says why, from perftest's own words (linux-rdma/perftest):

- ``Unsupported memory type`` (perftest_parameters.c parser(): ``--use_cuda`` with
  ``cuda_memory_supported()`` false) - perftest built without CUDA (no cuda.h at configure);
- ``Couldn't allocate MR`` - the NIC could not register GPU memory: no nvidia_peermem and no DMA-BUF;
- ``No such device ID (N) exists in system`` / ``There are no available device(s) that support
  CUDA`` / ``cuInit(0) returned N`` / ``Failed to load CUDA library dynamically`` (cuda_memory.c).

gdrcopy's sanity test (``gdrcopy_sanity`` from v2.4, ``sanity`` before; NVIDIA/gdrcopy
tests/): v2.4+ prints ``Total: N, Passed: P, Failed: F, Waived: W`` and the failed/waived
tests' names (testsuites/testsuite.cpp), exit 1 on a failure; v2.0-v2.3 are a libcheck
suite (``Running suite(s): Sanity`` / ``NN%: Checks: N, Failures: F, Errors: E``).
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma as checks_rdma
from ansible_collections.linerate.fabric.plugins.module_utils.checks.thresholds import rdma_threshold_gbps
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.gdrcopy import parse_gdrcopy_sanity

CHECK = "gpudirect"
# perftest's words -> why GPU memory could not be used
UNAVAILABLE = (
    (
        re.compile(r"Unsupported memory type"),
        "perftest was built without CUDA (it refuses --use_cuda: 'Unsupported memory type'); build it with cuda.h present",
    ),
    (
        re.compile(r"Couldn't allocate MR"),
        "the NIC could not register GPU memory (Couldn't allocate MR): nvidia_peermem is not loaded and DMA-BUF is not in use",
    ),
    (re.compile(r"No such device ID \(\d+\) exists in system"), "the GPU index does not exist on the node"),
    (
        re.compile(
            r"There are no available device\(s\) that support CUDA|cuInit\(0\) returned \d+|"
            r"Failed to load CUDA library dynamically"
        ),
        "CUDA is not usable on the node (driver / libcuda)",
    ),
)


def unavailable_reason(text):
    """Why perftest could not use GPU memory, or None when its error is something else."""
    for pattern, why in UNAVAILABLE:
        m = pattern.search(text or "")
        if m:
            return f"{why} [{m.group(0)}]"
    return None


def gpu_nodes(readiness_by_node):
    """(nodes with a GPU, nodes without one, nodes whose GPUs are unknown) from the readiness facts."""
    have, none, unknown = [], [], []
    for node, facts in sorted((readiness_by_node or {}).items()):
        if facts is None:
            unknown.append(node)
        elif facts.get("gpus"):
            have.append(node)
        else:
            none.append(node)
    return have, none, unknown


def tests(logs):
    """The GPU-memory tests from the schedule records ({node: [{round, role, peer, results}]}):
    [{round, client, server, gbps, gpu (the client's --use_cuda), client_error, server_error}]."""
    out = []
    for rnd, node, peer, r, s in checks_rdma.paired_results(logs, round_of=int):
        gpu = next((a.split("=", 1)[1] for a in r.get("argv") or [] if str(a).startswith("--use_cuda=")), None)
        out.append(
            {
                "round": rnd,
                "client": [node, r["device"]],
                "server": [peer, r.get("peer_device") or r["device"]],
                "gbps": r.get("gbps"),
                "gpu": None if gpu is None else int(gpu),
                "client_error": r.get("error"),
                "server_error": s.get("error"),
                "client_text": (r.get("stdout") or "") + (r.get("stderr") or "") + (r.get("error") or ""),
                "server_text": (s.get("stdout") or "") + (s.get("stderr") or "") + (s.get("error") or ""),
            }
        )
    return out


def evaluate(found, limit):
    """Each test with ``ok``, ``code``, ``blame`` (the end whose perftest named the cause) and ``reason``."""
    out = []
    for t in found:
        code, blame, reason = None, None, None
        for side in ("client", "server"):
            why = unavailable_reason(t.get(f"{side}_text"))
            if why:
                code, blame, reason = "GPUDIRECT_UNAVAILABLE", side, why
                break
        if code is None and (t.get("client_error") or t.get("server_error") or t.get("gbps") is None):
            code, blame = checks_rdma._test_error_code(t)
            if code == "RDMA_BW_LOW":
                code = "RDMA_TEST_ERROR"
        elif code is None and t["gbps"] < limit:
            code = "GPUDIRECT_RDMA_SLOW"
        out.append(dict(t, ok=code is None, code=code, blame=blame, reason=reason))
    return out


def _rail_link(readiness_by_node, node, device):
    for rail in ((readiness_by_node or {}).get(node) or {}).get("rails") or []:
        if rail.get("device") == device:
            return rail.get("link")
    return None


def findings(evaluated, limit, readiness_by_node=None, host_gbps=None):
    """One finding per failing test. GPUDIRECT_UNAVAILABLE names the end whose perftest said why;
    GPUDIRECT_RDMA_SLOW names the client with its GPU, the GPU's PCIe distance to the rail and,
    where ib_write_bw ran the same rail from host memory (``host_gbps``: {(node, device): gbps}),
    that figure - host memory at line rate and GPU memory below it points at the GPU's path
    (PCIe switch, ACS, IOMMU), not the fabric. Other tool errors keep ib_write_bw's codes."""
    out = []
    host_gbps = host_gbps or {}
    for t in evaluated:
        if t["ok"]:
            continue
        end = t[t["blame"]] if t.get("blame") else t["client"]
        peer = t["server"] if end == t["client"] else t["client"]
        head = f"{end[0]} {end[1]} -> GPU{t['gpu']}" if t.get("gpu") is not None else f"{end[0]} {end[1]}"
        evidence = {"gbps": t.get("gbps"), "client": t["client"], "server": t["server"], "gpu": t.get("gpu")}
        if t["code"] == "GPUDIRECT_UNAVAILABLE":
            msg = f"{head}: GPU memory cannot be used for RDMA: {t['reason']}"
        elif t["code"] == "GPUDIRECT_RDMA_SLOW":
            link = _rail_link(readiness_by_node, *t["client"])
            host = host_gbps.get(tuple(t["client"]))
            msg = f"{head}: ib_write_bw from GPU memory {t['gbps']:.1f} Gb/s < {limit:g} Gb/s to {peer[0]} {peer[1]}"
            if link:
                msg += f"; the GPU is {link} from the rail"
                evidence["link"] = link
            if host is not None:
                msg += f"; from host memory the rail ran {host:.1f} Gb/s"
                evidence["host_gbps"] = host
                if host >= limit:
                    msg += " (the fabric is fine: the GPU's PCIe path - switch, ACS, IOMMU - is not)"
        else:
            err = t.get("client_error") or t.get("server_error") or "no result"
            msg = f"{head}: ib_write_bw --use_cuda failed: {str(err).strip().splitlines()[0]}"
        out.append(
            faults.finding(
                t["code"], msg, node=end[0], device=end[1], check=CHECK, round=t["round"], peer={"node": peer[0], "device": peer[1]}, evidence=evidence
            )
        )
    return out


def check(evaluated, limit, found, not_applicable=None):
    """``checks.gpudirect`` of the report. ``not_applicable``: {node: why} of nodes the test did not run on."""
    cases = [
        {
            "name": f"{t['client'][0]}:{t['client'][1]} (GPU{t['gpu']}) -> {t['server'][0]}:{t['server'][1]} (round {t['round']})",
            "ok": t["ok"],
            "code": t["code"],
            "gbps": t.get("gbps"),
            "message": next(
                (
                    f["message"]
                    for f in found
                    if f.get("round") == t["round"] and f["node"] in (t["client"][0], t["server"][0]) and f["device"] == t["client"][1]
                ),
                None,
            ),
        }
        for t in evaluated
    ]
    cases += [
        {"name": f"{n}: not applicable", "ok": True, "code": None, "gbps": None, "message": why, "not_applicable": True}
        for n, why in sorted((not_applicable or {}).items())
    ]
    ran = [c for c in cases if not c.get("not_applicable")]
    ok = sum(c["ok"] for c in ran)
    detail = f"{ok}/{len(ran)} rails from GPU memory >= {limit:g} Gb/s" if ran else "not applicable"
    if not_applicable:
        detail += f"; not applicable on {len(not_applicable)} node(s) (no GPU)"
    return {"passed": not [f for f in found if f["severity"] == "error"] and ok == len(ran), "threshold_gbps": limit, "cases": cases, "detail": detail}


def gdrcopy_findings(results):
    """{node: {"binary", "rc", "stdout", "stderr"} | {"skipped": why}} -> (findings, cases).
    A node without gdrcopy is a case marked not applicable, never a finding."""
    found, cases = [], []
    for node, r in sorted((results or {}).items()):
        if r.get("skipped"):
            cases.append({"name": f"{node}: gdrcopy sanity", "ok": True, "not_applicable": True, "message": r["skipped"]})
            continue
        try:
            parsed = parse_gdrcopy_sanity((r.get("stdout") or "") + "\n" + (r.get("stderr") or ""), r.get("rc"))
        except ParseError as e:
            msg = f"{node}: {r.get('binary')} gave no result (exit status {r.get('rc')}): {str(e).split(': ', 1)[-1]}"
            found.append(faults.finding("GDRCOPY_SANITY_FAILED", msg, node=node, check=CHECK, evidence={"rc": r.get("rc")}))
            cases.append({"name": f"{node}: gdrcopy sanity", "ok": False, "message": msg})
            continue
        if not parsed["ok"]:
            names = ", ".join(parsed["failed_tests"]) or "see its output"
            msg = f"{node}: {r.get('binary')} failed {parsed['failed']} of {parsed['total']} tests (exit status {r.get('rc')}): {names}"
            found.append(faults.finding("GDRCOPY_SANITY_FAILED", msg, node=node, check=CHECK, evidence=parsed))
        cases.append(
            {"name": f"{node}: gdrcopy sanity", "ok": parsed["ok"], "message": f"{parsed['passed']}/{parsed['total']} passed, {parsed['waived']} waived"}
        )
    return found, cases


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report(ctx):
    """check ``gpudirect``: ib_write_bw from GPU memory on the first rounds' pairs, gdrcopy's sanity test.
    Nodes without a GPU are cases marked not applicable."""
    nodes, data = ctx.nodes, ctx.data
    logs = ctx.logs("verify_fabric_bench_log", CHECK)
    gdr = {n: data[n]["verify_fabric_gdrcopy"] for n in nodes if data[n].get("verify_fabric_gdrcopy")}
    facts = {n: (data[n].get("verify_fabric_readiness") or {}).get("facts") for n in nodes}
    none = gpu_nodes(facts)[1]
    measured = tests(logs)
    if not measured and not gdr:
        return [], {}
    limit = rdma_threshold_gbps(ctx.fabric)
    evaluated = evaluate(measured, limit)
    host = {tuple(t["client"]): t["gbps"] for t in checks_rdma.round_tests(ctx.logs("verify_fabric_rdma_log")) if t.get("gbps") is not None}
    found = findings(evaluated, limit, facts, host)
    entry = check(evaluated, limit, found, {n: "no GPU on the node (nvidia-smi lists none)" for n in none})
    gfound, gcases = gdrcopy_findings(gdr)
    entry["cases"] += gcases
    entry["passed"] = entry["passed"] and not gfound
    return found + gfound, {CHECK: entry}
