"""Host readiness below the fabric: PCIe, ACS, IOMMU, GPU<->NIC affinity, versions, limits.

Two halves, stdlib only:

- ``collect(run, devices, ...)`` runs on a node (module host_readiness):
  it calls the tools through ``run(argv) -> (rc, stdout, stderr)`` (raising
  OSError for a missing tool) and returns the node's facts; what it could
  not read goes to ``unread`` with what that leaves unproven.
- ``host_findings(node, facts, ...)`` and ``parity_findings(facts_by_node)``
  run on the controller (action verify_report) and turn the facts into
  findings with stable codes (findings.FAULT_CODES).
"""
import os

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.dpkg import parse_dpkg_query
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibtools import (
    parse_ibdev2netdev, parse_ibv_devinfo)
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import (
    nearest_gpus, nearest_nics, parse_lspci, parse_nvidia_smi_topo, path_between, pci_address, upstream_port)
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding

# ACSCtl flags that send peer-to-peer requests or completions up to the root complex.
ACS_REDIRECT = ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl")
NEAR = ("PIX", "PXB")
COMPONENTS = ("kernel", "ofed", "gpu_driver", "nvidia_peermem", "nccl")

UNPROVEN = {
    "lspci": "PCIe link speed/width, MaxReadReq and ACS between GPU and NIC are not proven",
    "ibdev2netdev": "the NICs' PCI addresses are unknown: their PCIe links and ACS are not proven",
    "ibv_devinfo": "ConnectX firmware version and PSID parity are not proven",
    "nvidia-smi": "GPU<->NIC affinity (rail alignment), ACS between GPU and NIC and GPU driver parity are not proven",
    "ofed_info": "OFED version parity is not proven",
    "nvidia_peermem": "nvidia-peermem version parity is not proven",
    "nccl": "NCCL version parity is not proven",
    "iommu": "the IOMMU mode is not proven",
    "shm": "the /dev/shm size NCCL's shared-memory transport needs is not proven",
}


def _try(run, argv):
    """(stdout, None) or (None, why)."""
    try:
        rc, out, err = run(argv)
    except OSError as e:
        return None, f"{argv[0]} not found ({e})"
    if rc != 0:
        return None, f"{' '.join(argv)} exited {rc}: {(err or out).strip()[:200]}"
    return out, None


def _gpus_csv(text):
    gpus = []
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) >= 3 and cols[0].isdigit():
            gpus.append({"index": int(cols[0]), "pci": pci_address(cols[1]), "driver": cols[2]})
    return gpus


def _is_nvidia_gpu(dev):
    """A GPU as lspci names it: an NVIDIA 3D or VGA controller (PCI vendor 10de)."""
    return (dev.get("class") in ("3D controller", "VGA compatible controller")
            and str(dev.get("description", "")).startswith("NVIDIA"))


def _link_facts(fn, pci):
    """Add a function's own link (LnkCap, LnkSta) and its upstream port's (the slot: the bridge above it)."""
    dev = pci.get(fn.get("pci")) or {}
    for k in ("lnkcap", "lnksta"):
        if k in dev:
            fn[k] = dev[k]
    up = upstream_port(pci, fn["pci"]) if fn.get("pci") in pci else None
    if up:
        fn["upstream"] = {"address": up["address"], "port_type": up.get("port_type"),
                          "lnkcap": up.get("lnkcap"), "lnksta": up.get("lnksta")}


def _iommu(sys_root, proc_root):
    """The IOMMU mode from /sys/class/iommu and the kernel command line."""
    try:
        units = sorted(os.listdir(os.path.join(sys_root, "class", "iommu")))
    except OSError:
        units = []
    try:
        with open(os.path.join(proc_root, "cmdline")) as f:
            cmdline = f.read().strip()
    except OSError as e:
        return None, f"{proc_root}/cmdline unreadable ({e})"
    args = cmdline.split()
    if "iommu=pt" in args or "iommu.passthrough=1" in args:
        mode = "passthrough"
    elif any(a in args for a in ("intel_iommu=off", "amd_iommu=off", "iommu=off")) or not units:
        mode = "off"
    else:
        mode = "translated"
    return {"mode": mode, "units": units, "cmdline": cmdline}, None


def collect(run, devices, sys_root="/sys", proc_root="/proc", shm_path="/dev/shm",
            nccl_packages=("libnccl2",), memlock=None, kernel=None):
    """The readiness facts of this node for the RDMA ``devices`` (names)."""
    facts = {"nics": [], "gpus": [], "versions": {}, "unread": [], "warnings": []}
    unread = facts["unread"]

    def miss(what, why):
        unread.append({"what": what, "error": why, "unproven": UNPROVEN[what]})

    facts["versions"]["kernel"] = kernel or os.uname().release
    nics = {d: {"device": d} for d in devices}
    out, why = _try(run, ["ibdev2netdev", "-v"])
    if out is not None:
        try:
            for p in parse_ibdev2netdev(out)["ports"]:
                if p["device"] in nics and p.get("pci"):
                    nics[p["device"]]["pci"] = pci_address(p["pci"])
        except ParseError as e:
            why = str(e)
    if why:
        miss("ibdev2netdev", why)
    out, why = _try(run, ["ibv_devinfo"])
    if out is not None:
        try:
            for d in parse_ibv_devinfo(out)["devices"]:
                if d["hca_id"] in nics:
                    nics[d["hca_id"]].update(fw_ver=d.get("fw_ver"), psid=d.get("board_id"))
        except ParseError as e:
            why = str(e)
    if why:
        miss("ibv_devinfo", why)

    pci = {}
    out, why = _try(run, ["lspci", "-D", "-vvv"])
    if out is not None:
        try:
            parsed = parse_lspci(out)
            pci = parsed["devices"]
            facts["warnings"] += parsed["warnings"]
        except ParseError as e:
            why = str(e)
    if why:
        miss("lspci", why)

    topo = None
    out, why = _try(run, ["nvidia-smi", "--query-gpu=index,pci.bus_id,driver_version", "--format=csv,noheader"])
    if out is not None:
        facts["gpus"] = _gpus_csv(out)
        if facts["gpus"]:
            facts["versions"]["gpu_driver"] = facts["gpus"][0]["driver"]
        out, why = _try(run, ["nvidia-smi", "topo", "-m"])
        if out is not None:
            try:
                topo = parse_nvidia_smi_topo(out)
                facts["warnings"] += topo["warnings"]
            except ParseError as e:
                why = str(e)
    if why:
        miss("nvidia-smi", why)

    if not facts["gpus"] and pci:
        # no nvidia-smi: the GPUs lspci lists (NVIDIA 3D / VGA controllers), so their PCIe links are still judged
        facts["gpus"] = [{"index": i, "pci": a, "driver": None, "source": "lspci"} for i, a in
                         enumerate(sorted(a for a, d in pci.items() if _is_nvidia_gpu(d)))]
    for g in facts["gpus"]:
        _link_facts(g, pci)
    if topo:
        # the launchers' binding (module_utils/host/launchers.py): each GPU's CPUs, NUMA node and nearest rails
        rails = nearest_nics(topo)
        for g in facts["gpus"]:
            aff = topo["affinity"].get(f"GPU{g['index']}") or {}
            g["cpus"], g["numa"] = aff.get("cpu"), aff.get("numa")
            g["nearest_nics"] = [{"device": d, "link": lk} for d, lk in rails.get(g["index"], []) if d in nics]
    near = nearest_gpus(topo) if topo else {}
    gpu_pci = {g["index"]: g["pci"] for g in facts["gpus"]}
    for d, nic in nics.items():
        dev = pci.get(nic.get("pci")) or {}
        for k in ("max_read_req", "numa_node"):
            if k in dev:
                nic[k] = dev[k]
        _link_facts(nic, pci)
        if near.get(d):
            g, link = near[d][0]
            nic["gpu"] = {"index": g, "link": link, "pci": gpu_pci.get(g)}
            if link in NEAR and nic.get("pci") in pci and gpu_pci.get(g) in pci:
                nic["path"] = [{"address": b["address"], "port_type": b.get("port_type"), "acs_ctl": b.get("acs_ctl")}
                               for b in path_between(pci, nic["pci"], gpu_pci[g])]
        facts["nics"].append(nic)
    facts["rails"] = [{"device": n["device"], "pci": n.get("pci"), "gpu": (n.get("gpu") or {}).get("index"),
                       "gpu_pci": (n.get("gpu") or {}).get("pci"), "link": (n.get("gpu") or {}).get("link")}
                      for n in facts["nics"]]

    out, why = _try(run, ["ofed_info", "-s"])
    if out is not None:
        facts["versions"]["ofed"] = out.strip().rstrip(":") or None
    else:
        miss("ofed_info", why)
    out, why = _try(run, ["modinfo", "-F", "version", "nvidia_peermem"])
    if out is not None and out.strip():
        facts["versions"]["nvidia_peermem"] = out.strip()
    else:
        miss("nvidia_peermem", why or "modinfo printed no version for nvidia_peermem")
    out, why = _try(run, ["dpkg-query", "-W", "-f=${Package} ${Version} ${db:Status-Abbrev}\n", *nccl_packages])
    if out is not None:
        try:
            pk = parse_dpkg_query(out)
            ver = next((pk[p]["version"] for p in nccl_packages if (pk.get(p) or {}).get("version")), None)
        except ParseError as e:
            ver, why = None, str(e)
        if ver:
            facts["versions"]["nccl"] = ver
        else:
            miss("nccl", why or f"none of {', '.join(nccl_packages)} is installed as a package")
    else:
        miss("nccl", why)

    iommu, why = _iommu(sys_root, proc_root)
    if iommu:
        facts["iommu"] = iommu
    else:
        miss("iommu", why)
    facts["memlock_kb"] = memlock
    try:
        st = os.statvfs(shm_path)
        facts["shm_bytes"] = st.f_frsize * st.f_blocks
    except OSError as e:
        miss("shm", f"{shm_path}: {e}")
    return facts


# ---------------------------------------------------------------- findings (controller)

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
            out.append(_f("MAX_READ_REQ_LOW", f"{d} ({pci}) DevCtl MaxReadReq {mrr} bytes < {min_max_read_req}",
                          node, d, pci))
        gpu = nic.get("gpu")
        if gpu and gpu.get("link") not in NEAR:
            out.append(_f("GPU_NIC_AFFINITY", f"rail {d} ({pci}) has no GPU behind its PCIe switch: nearest is GPU"
                                              f"{gpu['index']} at {gpu['link']} (needs PIX or PXB for GPUDirect RDMA "
                                              "at line rate)", node, d, pci, gpu=gpu["index"]))
        acs = {b["address"]: [k for k in ACS_REDIRECT if (b.get("acs_ctl") or {}).get(k)] for b in nic.get("path") or []}
        acs = {a: on for a, on in acs.items() if on}
        if acs:
            where = "; ".join(f"{a} {' '.join(k + '+' for k in on)}" for a, on in acs.items())
            out.append(_f("ACS_ENABLED", f"ACS redirect on the bridge(s) between {d} ({pci}) and GPU{gpu['index']} "
                                         f"({gpu.get('pci')}): {where}; peer-to-peer traffic goes through the root complex",
                          node, d, pci, bridge=next(iter(acs)), bridges=sorted(acs)))
    iommu = facts.get("iommu") or {}
    if iommu.get("mode") == "translated":
        out.append(_f("IOMMU_NOT_PASSTHROUGH", "the IOMMU translates DMA (units: " + ", ".join(iommu.get("units") or [])
                      + "; no iommu=pt on the kernel command line): GPUDirect RDMA pays address translation", node))
    mem = facts.get("memlock_kb")
    if mem is not None and mem != -1 and (min_memlock_kb == -1 or mem < min_memlock_kb):
        want = "unlimited" if min_memlock_kb == -1 else f"{min_memlock_kb} KiB"
        out.append(_f("MEMLOCK_LIMITED", f"RLIMIT_MEMLOCK is {mem} KiB, NCCL/verbs need {want} to register memory", node))
    shm = facts.get("shm_bytes")
    if shm is not None and shm < min_shm_bytes:
        out.append(_f("SHM_SMALL", f"/dev/shm is {shm >> 20} MiB < {min_shm_bytes >> 20} MiB (NCCL's shared-memory "
                                   "transport between local ranks)", node))
    return out


def _link(x):
    return f"Gen{x.get('gen') or '?'} x{x.get('width')} ({x.get('speed_gts')} GT/s)"


def link_findings(node, name, fn, **kw):
    """The PCIe link of one NIC or GPU against the right reference: the lower of its own capability
    (LnkCap) and its upstream port's (the slot: root port or switch downstream port, LnkCap of the bridge
    above it). A link runs at most at what both ends can do (link training), so:

    - below that reference: ``PCIE_DEGRADED`` (error) - a bad riser, slot, retimer or BIOS setting;
    - at it, but below the device's own capability: ``PCIE_SLOT_LIMITED`` (warning) naming the slot -
      e.g. a Gen5 ConnectX-7 in a Gen4 slot: full speed for that slot (lspci says "downgraded" for it,
      comparing with the device's own LnkCap only).

    Without the upstream port (not in lspci's output) the reference is the device's own capability."""
    cap, sta, up = fn.get("lnkcap"), fn.get("lnksta"), fn.get("upstream") or {}
    if not cap or not sta:
        return []
    pci = fn.get("pci")
    ucap = up.get("lnkcap") or {}
    ref_w = min(cap["width"], ucap["width"]) if ucap.get("width") else cap["width"]
    speeds = [v for v in (cap.get("speed_gts"), ucap.get("speed_gts")) if v]
    ref_s = min(speeds) if speeds else None
    ref = {"width": ref_w, "speed_gts": ref_s,
           "gen": min([g for g in (cap.get("gen"), ucap.get("gen")) if g] or [None]) if speeds else None}
    slot = (f"upstream port {up['address']} ({up.get('port_type') or 'bridge'}) capable of {_link(ucap)}"
            if ucap else "upstream port not seen by lspci")
    evidence = {"lnkcap": cap, "lnksta": sta, "upstream": up or None, "reference": ref}
    width, speed = sta.get("width") or 0, sta.get("speed_gts") or 0
    if width < ref_w or (ref_s and speed < ref_s):
        return [_f("PCIE_DEGRADED", f"{name} ({pci}) trained at PCIe {_link(sta)}, below what both ends can do: "
                                    f"{_link(ref)} (the device capable of {_link(cap)}; {slot})", node,
                   name, pci,
                   upstream=up.get("address"), evidence=evidence, **kw)]
    if ref_w < cap["width"] or (ref_s and cap.get("speed_gts") and ref_s < cap["speed_gts"]):
        return [_f("PCIE_SLOT_LIMITED", f"{name} ({pci}) runs at PCIe {_link(sta)}, the limit of its slot: {slot}; "
                                        f"the device is capable of {_link(cap)}: full speed for this slot, a "
                                        f"{_link(cap)} slot would give it more", node, name, pci,
                   upstream=up.get("address"), slot=up.get("address"), evidence=evidence, **kw)]
    return []


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
                    out.append(_f("VERSION_SKEW", f"{comp} {v} on {n}; the other nodes run {major}", n,
                                  component=comp, value=v, majority=major))
    fw = {(n, nic["device"]): (nic.get("fw_ver"), nic.get("psid"), nic.get("pci"))
          for n, f in facts_by_node.items() for nic in f.get("nics") or [] if nic.get("fw_ver")}
    for psid in sorted({v[1] for v in fw.values()}, key=str):
        same = {k: v for k, v in fw.items() if v[1] == psid}
        if len({v[0] for v in same.values()}) > 1:
            major = _majority(v[0] for v in same.values())
            for (n, d), (ver, _p, pci) in sorted(same.items()):
                if ver != major:
                    out.append(_f("VERSION_SKEW", f"ConnectX firmware {ver} (PSID {psid}) on {n} {d} ({pci}); "
                                                  f"the other NICs of PSID {psid} run {major}", n, d, pci,
                                  component="connectx_firmware", value=ver, majority=major))
    return out


def rail_summary(facts_by_node):
    """{node: [{device, pci, gpu, gpu_pci, link}]}: the rail-aligned GPU of each NIC."""
    return {n: f.get("rails") or [] for n, f in facts_by_node.items()}
