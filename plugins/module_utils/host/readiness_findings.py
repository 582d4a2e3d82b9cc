"""Host readiness below the fabric, the controller half (action verify_report): the readiness facts of
host/readiness.py's ``collect`` turned into findings with stable codes (findings.FAULT_CODES).

- ``host_findings(node, facts, ...)``: one node's PCIe links (``link_findings``: against the lower of both
  ends' capability; a GPU's speed only on a reading under load, ``gpu_reading``), MaxReadReq, GPU<->NIC
  affinity, ACS, IOMMU and limits;
- ``parity_findings(facts_by_node)``: version skew across nodes; ``gpu_link_notes`` and ``rail_summary``
  for the report.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding
from ansible_collections.linerate.fabric.plugins.module_utils.host.readiness import NEAR, link_reference
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import GTS

# ACSCtl flags that send peer-to-peer requests or completions up to the root complex.
ACS_REDIRECT = ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl")
COMPONENTS = ("kernel", "ofed", "gpu_driver", "nvidia_peermem", "nccl")


def _f(code, message, node, device=None, pci=None, **kw):
    return finding(code, message, node=node, device=device, check="readiness", pci_address=pci, **kw)


def host_findings(node, facts, min_max_read_req=4096, min_memlock_kb=-1, min_shm_bytes=1 << 30):
    """Findings of one node's readiness facts. ``min_memlock_kb`` -1: unlimited is required."""
    out = []
    for u in facts.get("unread") or []:
        out.append(_f("READINESS_UNPROVEN", f"{u['what']}: {u['error']}; {u['unproven']}", node, what=u["what"]))
    for g in facts.get("gpus") or []:
        out += link_findings(node, f"GPU{g['index']}", g, gpu=g["index"])
    for nic in facts.get("nics") or []:
        d, pci = nic["device"], nic.get("pci")
        out += link_findings(node, d, nic)
        mrr = nic.get("max_read_req")
        if mrr is not None and mrr < min_max_read_req:
            out.append(_f("MAX_READ_REQ_LOW", f"{d} ({pci}) DevCtl MaxReadReq {mrr} bytes < {min_max_read_req}", node, d, pci))
        gpu = nic.get("gpu")
        if gpu and gpu.get("link") not in NEAR:
            out.append(
                _f(
                    "GPU_NIC_AFFINITY",
                    f"rail {d} ({pci}) has no GPU behind its PCIe switch: nearest is GPU"
                    f"{gpu['index']} at {gpu['link']} (needs PIX or PXB for GPUDirect RDMA "
                    "at line rate)",
                    node,
                    d,
                    pci,
                    gpu=gpu["index"],
                )
            )
        acs = {b["address"]: [k for k in ACS_REDIRECT if (b.get("acs_ctl") or {}).get(k)] for b in nic.get("path") or []}
        acs = {a: on for a, on in acs.items() if on}
        if acs:
            where = "; ".join(f"{a} {' '.join(k + '+' for k in on)}" for a, on in acs.items())
            out.append(
                _f(
                    "ACS_ENABLED",
                    f"ACS redirect on the bridge(s) between {d} ({pci}) and GPU{gpu['index']} "
                    f"({gpu.get('pci')}): {where}; peer-to-peer traffic goes through the root complex",
                    node,
                    d,
                    pci,
                    bridge=next(iter(acs)),
                    bridges=sorted(acs),
                )
            )
    iommu = facts.get("iommu") or {}
    if iommu.get("mode") == "translated":
        out.append(
            _f(
                "IOMMU_NOT_PASSTHROUGH",
                "the IOMMU translates DMA (units: "
                + ", ".join(iommu.get("units") or [])
                + "; no iommu=pt on the kernel command line): GPUDirect RDMA pays address translation",
                node,
            )
        )
    mem = facts.get("memlock_kb")
    if mem is not None and mem != -1 and (min_memlock_kb == -1 or mem < min_memlock_kb):
        want = "unlimited" if min_memlock_kb == -1 else f"{min_memlock_kb} KiB"
        out.append(_f("MEMLOCK_LIMITED", f"RLIMIT_MEMLOCK is {mem} KiB, NCCL/verbs need {want} to register memory", node))
    shm = facts.get("shm_bytes")
    if shm is not None and shm < min_shm_bytes:
        out.append(_f("SHM_SMALL", f"/dev/shm is {shm >> 20} MiB < {min_shm_bytes >> 20} MiB (NCCL's shared-memory transport between local ranks)", node))
    return out


def _link(x):
    return f"Gen{x.get('gen') or '?'} x{x.get('width')} ({x.get('speed_gts')} GT/s)"


def _smi_link(fn):
    """A GPU's link from nvidia-smi alone (lspci had none): LnkCap from gen.gpumax / width.max, the slot from
    gen.hostmax, LnkSta from gen.current / width.current; {} when nvidia-smi did not give them."""
    smi = fn.get("smi_link") or {}
    if not (smi.get("gen_gpumax") and smi.get("width_max") and smi.get("gen_current") and smi.get("width_current")):
        return {}

    def at(gen, width):
        return {"gen": gen, "speed_gts": GTS.get(gen), "width": width}

    up = {
        "address": None,
        "port_type": "host port (nvidia-smi pcie.link.gen.hostmax)",
        "lnkcap": at(smi.get("gen_hostmax") or smi.get("gen_max") or smi["gen_gpumax"], smi["width_max"]),
    }
    return {"lnkcap": at(smi["gen_gpumax"], smi["width_max"]), "lnksta": at(smi["gen_current"], smi["width_current"]), "upstream": up}


def gpu_reading(g):
    """How a GPU's link is judged: ``(lnksta, state, speed_judged, why)``.

    NVIDIA GPUs train their PCIe link down at rest (Gen1) and up under load; the width does not change
    with the power state. So the width is judged on every reading, the speed only on one taken under load:
    at rest when nvidia-smi listed a process on the GPU, else the load workload's reading (collect's
    load_command); without one the speed stays unjudged, ``why`` says why (not a finding)."""
    rest = g.get("lnksta") or {}
    if g.get("busy"):
        names = ", ".join(f"{p['name']} (pid {p['pid']})" for p in g["busy"])
        return rest, f"under load ({names} ran on it)", True, None
    load = g.get("under_load") or {}
    if load.get("lnksta") or load.get("smi_link"):
        sta = load.get("lnksta") or _smi_link(dict(g, smi_link=load["smi_link"])).get("lnksta") or {}
        if sta.get("speed_gts"):
            return (
                {"width": rest.get("width") or sta.get("width"), "speed_gts": sta["speed_gts"], "gen": sta.get("gen")},
                f"under load ({load.get('workload')})",
                True,
                None,
            )
    why = g.get("load_unjudged") or "no reading under load (host_readiness load_command is empty)"
    return rest, "at rest", False, why


def link_findings(node, name, fn, gpu=None, **kw):
    """The PCIe link of one NIC or GPU against the right reference: the lower of its own capability
    (LnkCap) and its upstream port's (the slot: root port or switch downstream port, LnkCap of the bridge
    above it). A link runs at most at what both ends can do (link training), so:

    - below that reference: ``PCIE_DEGRADED`` (error) - a bad riser, slot, retimer or BIOS setting;
    - at it, but below the device's own capability: ``PCIE_SLOT_LIMITED`` (warning) naming the slot -
      e.g. a Gen5 ConnectX-7 in a Gen4 slot: full speed for that slot (lspci says "downgraded" for it,
      comparing with the device's own LnkCap only).

    Without the upstream port (not in lspci's output) the reference is the device's own capability.
    A GPU (``gpu``: its index) is read as gpu_reading says: its speed below the reference at rest is no
    finding (it trains up under load); under load it is. A ConnectX NIC keeps its link at rest: judged as read."""
    if gpu is not None and not fn.get("lnkcap"):
        fn = dict(fn, **_smi_link(fn))
    cap, sta, up = fn.get("lnkcap"), fn.get("lnksta"), fn.get("upstream") or {}
    if not cap or not sta:
        return []
    state, judge_speed, why = "as read", True, None
    if gpu is not None:
        sta, state, judge_speed, why = gpu_reading(fn)
        kw["gpu"] = gpu
    pci = fn.get("pci")
    ucap = up.get("lnkcap") or {}
    ref = link_reference(fn)
    ref_w, ref_s = ref["width"], ref["speed_gts"]
    slot = (
        f"upstream port {up.get('address') or '(address unknown)'} ({up.get('port_type') or 'bridge'}) capable of {_link(ucap)}"
        if ucap
        else "upstream port not seen by lspci"
    )
    evidence = {"lnkcap": cap, "lnksta": fn.get("lnksta"), "upstream": up or None, "reference": ref}
    if gpu is not None:
        evidence.update(
            state=state, judged=sta, under_load=fn.get("under_load"), speed_unjudged=None if judge_speed else f"at rest, trains up under load; {why}"
        )

    def finding(code, message):
        return [_f(code, message, node, name, pci, upstream=up.get("address"), slot=up.get("address"), evidence=evidence, **kw)]

    width, speed = sta.get("width") or 0, sta.get("speed_gts") or 0
    where = f" {state}" if gpu is not None else ""
    if width < ref_w or (judge_speed and ref_s and speed < ref_s):
        shown = _link(sta) if judge_speed else f"x{width} (width at rest; its speed at rest is not judged)"
        return finding(
            "PCIE_DEGRADED",
            f"{name} ({pci}) trained at PCIe {shown}{where if judge_speed else ''}, below what "
            f"both ends can do: {_link(ref)} (the device capable of {_link(cap)}; {slot})",
        )
    if ref_w < cap["width"] or (ref_s and cap.get("speed_gts") and ref_s < cap["speed_gts"]):
        runs = _link(sta) + where if judge_speed else f"at most {_link(ref)} (at rest {_link(sta)})"
        return finding(
            "PCIE_SLOT_LIMITED",
            f"{name} ({pci}) runs at PCIe {runs}, the limit of its slot: {slot}; "
            f"the device is capable of {_link(cap)}: full speed for this slot, a "
            f"{_link(cap)} slot would give it more",
        )
    return []


def gpu_link_notes(facts):
    """Per GPU how its PCIe link was judged, for the report: ``{"gpu", "pci", "state", "at_rest", "judged",
    "speed_judged", "note"}`` - a GPU below its maximum at rest is no finding; the note says so, and what
    its link did under load, or why its speed stays unjudged."""
    out = []
    for g in facts.get("gpus") or []:
        fn = g if g.get("lnkcap") else dict(g, **_smi_link(g))
        if not fn.get("lnkcap") or not fn.get("lnksta"):
            continue
        sta, state, judged, why = gpu_reading(fn)
        ref = link_reference(fn)
        if judged:
            note = f"{state}: {_link(sta)} (both ends allow {_link(ref)})"
        elif ref.get("speed_gts") and (sta.get("speed_gts") or 0) < ref["speed_gts"]:
            note = f"at rest {_link(sta)}, below {_link(ref)}: not a finding (GPUs train down at rest); speed unjudged: {why}"
        else:
            note = f"at rest {_link(sta)}: at what both ends allow"
        out.append({"gpu": g["index"], "pci": g.get("pci"), "state": state, "at_rest": fn["lnksta"], "judged": sta, "speed_judged": judged, "note": note})
    return out


def _majority(values):
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda v: (counts[v], str(v)))


def parity_findings(facts_by_node):
    """VERSION_SKEW per component whose value differs across nodes (and per ConnectX firmware/PSID)."""
    out = []
    for comp in COMPONENTS:
        have = {n: (f.get("versions") or {}).get(comp) for n, f in facts_by_node.items()}
        have = {n: v for n, v in have.items() if v}
        if len(set(have.values())) > 1:
            major = _majority(have.values())
            for n, v in sorted(have.items()):
                if v != major:
                    out.append(_f("VERSION_SKEW", f"{comp} {v} on {n}; the other nodes run {major}", n, component=comp, value=v, majority=major))
    fw = {
        (n, nic["device"]): (nic.get("fw_ver"), nic.get("psid"), nic.get("pci"))
        for n, f in facts_by_node.items()
        for nic in f.get("nics") or []
        if nic.get("fw_ver")
    }
    for psid in sorted({v[1] for v in fw.values()}, key=str):
        same = {k: v for k, v in fw.items() if v[1] == psid}
        if len({v[0] for v in same.values()}) > 1:
            major = _majority(v[0] for v in same.values())
            for (n, d), (ver, _p, pci) in sorted(same.items()):
                if ver != major:
                    out.append(
                        _f(
                            "VERSION_SKEW",
                            f"ConnectX firmware {ver} (PSID {psid}) on {n} {d} ({pci}); the other NICs of PSID {psid} run {major}",
                            n,
                            d,
                            pci,
                            component="connectx_firmware",
                            value=ver,
                            majority=major,
                        )
                    )
    return out


def rail_summary(facts_by_node):
    """{node: [{device, pci, gpu, gpu_pci, link}]}: the rail-aligned GPU of each NIC."""
    return {n: f.get("rails") or [] for n, f in facts_by_node.items()}
