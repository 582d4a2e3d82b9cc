"""Host readiness below the fabric, the node half: PCIe, ACS, IOMMU, GPU<->NIC affinity, versions, limits.

``collect(run, devices, ...)`` runs on a node (module host_readiness), stdlib only: it calls the tools
through ``run(argv) -> (rc, stdout, stderr)`` (raising OSError for a missing tool) and returns the node's
facts; what it could not read goes to ``unread`` with what that leaves unproven. The controller half
(action verify_report) that turns the facts into findings is host/readiness_findings.py.
"""

import os
import subprocess
import time

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, tool_failed
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.dpkg import parse_dpkg_query
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibtools import parse_ibdev2netdev, parse_ibv_devinfo
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import (
    nearest_gpus,
    nearest_nics,
    parse_lspci,
    parse_nvidia_smi_topo,
    path_between,
    pci_address,
    upstream_port,
)

# topo -m links that put a GPU behind the NIC's PCIe switch (GPUDirect RDMA at line rate)
NEAR = ("PIX", "PXB")

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
        return None, tool_failed(argv, rc, out, err, limit=200)
    return out, None


# nvidia-smi --help-query-gpu: the link now ("may be reduced when the GPU is not in use") and the most this
# GPU and system configuration allow (gen.max: the lower of the GPU's gen.gpumax and the host port's gen.hostmax)
SMI_LINK = ("pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.gen.gpumax", "pcie.link.gen.hostmax", "pcie.link.width.current", "pcie.link.width.max")
SMI_KEYS = ("gen_current", "gen_max", "gen_gpumax", "gen_hostmax", "width_current", "width_max")
GPU_QUERY = "--query-gpu=index,pci.bus_id,driver_version," + ",".join(SMI_LINK)
GPU_QUERY_OLD = "--query-gpu=index,pci.bus_id,driver_version"  # drivers without gen.gpumax / gen.hostmax
APPS_QUERY = "--query-compute-apps=gpu_bus_id,pid,process_name"


def _int(text):
    return int(text) if text.strip().isdigit() else None


def _gpus_csv(text):
    gpus = []
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) >= 3 and cols[0].isdigit():
            g = {"index": int(cols[0]), "pci": pci_address(cols[1]), "driver": cols[2]}
            if len(cols) >= 3 + len(SMI_KEYS):
                g["smi_link"] = {k: _int(v) for k, v in zip(SMI_KEYS, cols[3:])}
            gpus.append(g)
    return gpus


def _apps_csv(text):
    """``--query-compute-apps=gpu_bus_id,pid,process_name`` -> {GPU PCI address: [{"pid", "name"}]}."""
    busy = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",", 2)]
        if len(cols) == 3 and pci_address(cols[0]) and cols[1].isdigit():
            busy.setdefault(pci_address(cols[0]), []).append({"pid": int(cols[1]), "name": cols[2]})
    return busy


def _is_nvidia_gpu(dev):
    """A GPU as lspci names it: an NVIDIA 3D or VGA controller (PCI vendor 10de)."""
    return dev.get("class") in ("3D controller", "VGA compatible controller") and str(dev.get("description", "")).startswith("NVIDIA")


def _link_facts(fn, pci):
    """Add a function's own link (LnkCap, LnkSta) and its upstream port's (the slot: the bridge above it)."""
    dev = pci.get(fn.get("pci")) or {}
    for k in ("lnkcap", "lnksta"):
        if k in dev:
            fn[k] = dev[k]
    up = upstream_port(pci, fn["pci"]) if fn.get("pci") in pci else None
    if up:
        fn["upstream"] = {"address": up["address"], "port_type": up.get("port_type"), "lnkcap": up.get("lnkcap"), "lnksta": up.get("lnksta")}


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


def link_reference(fn):
    """What a link can train at: the lower of its own LnkCap and its upstream port's (the slot), per width and
    speed ({"width", "speed_gts", "gen"}); the device's own LnkCap without the upstream port; None without LnkCap.
    Which GPUs to read again under load (_speed_low) and what readiness_findings.link_findings judges against."""
    cap = fn.get("lnkcap")
    if not cap:
        return None
    ucap = (fn.get("upstream") or {}).get("lnkcap") or {}
    speeds = [v for v in (cap.get("speed_gts"), ucap.get("speed_gts")) if v]
    return {
        "width": min(cap["width"], ucap["width"]) if ucap.get("width") else cap["width"],
        "speed_gts": min(speeds) if speeds else None,
        "gen": min([g for g in (cap.get("gen"), ucap.get("gen")) if g] or [None]) if speeds else None,
    }


def _speed_low(g):
    """Whether GPU ``g``'s link runs below its maximum speed now (lspci LnkSta vs the lower LnkCap of both
    ends, else nvidia-smi gen.current vs gen.max); None: unknown."""
    ref = link_reference(g)
    if ref and g.get("lnksta") and ref.get("speed_gts"):
        return (g["lnksta"].get("speed_gts") or 0) < ref["speed_gts"]
    smi = g.get("smi_link") or {}
    if smi.get("gen_current") and smi.get("gen_max"):
        return smi["gen_current"] < smi["gen_max"]
    return None


def _stop(proc):
    """End the load workload: SIGTERM, then SIGKILL if it has not exited 10 s later."""
    proc.terminate()
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def _probe_under_load(run, start, facts, load_command, timeout, clock, sleep):
    """Read again, under load, the links of the idle GPUs whose speed reads below their maximum.

    NVIDIA GPUs train their PCIe link down at rest (Gen1) and up under load, so a reading at rest proves
    the width only. The workload starts; the reading is taken once nvidia-smi lists a process on every
    such GPU (or at ``timeout`` seconds with those that have one), and counts only for the GPUs still
    running it after the reading. Each GPU gets ``under_load`` (LnkSta, nvidia-smi link, the workload) or
    ``load_unjudged`` (why not)."""
    want = [g for g in facts["gpus"] if not g.get("busy") and _speed_low(g)]
    if not want:
        return
    if any("busy" not in g for g in want):  # listed by lspci alone: nvidia-smi cannot see a workload on them
        for g in want:
            g["load_unjudged"] = "nvidia-smi cannot run: no reading under load"
        return
    n = len(facts["gpus"])
    argv = [str(a).replace("{ngpus}", str(n)) for a in load_command]

    def unjudged(why, gpus=want):
        for g in gpus:
            g["load_unjudged"] = why

    try:
        proc = start(argv)
    except OSError as e:
        return unjudged(f"the load workload {' '.join(argv)} did not start ({e})")
    try:
        end = clock() + float(timeout)
        busy = {}
        while True:
            rc = proc.poll()
            if rc is not None:
                out, err = proc.communicate()
                return unjudged(tool_failed(argv, rc, out, err, what="the load workload never ran on the GPU", limit=200))
            out, why = _try(run, ["nvidia-smi", APPS_QUERY, "--format=csv,noheader"])
            if out is None:
                return unjudged(f"nvidia-smi could not say which GPUs run a process ({why})")
            busy = _apps_csv(out)
            if all(g["pci"] in busy for g in want) or clock() >= end:
                break
            sleep(0.2)
        loaded = [g for g in want if g["pci"] in busy]
        unjudged(f"the load workload {' '.join(argv)} did not reach this GPU within {timeout:g} s", [g for g in want if g["pci"] not in busy])
        lsp, why_l = _try(run, ["lspci", "-D", "-vvv"])
        smi, why_s = _try(run, ["nvidia-smi", GPU_QUERY, "--format=csv,noheader"])
        after, _w = _try(run, ["nvidia-smi", APPS_QUERY, "--format=csv,noheader"])
        still = _apps_csv(after or "")
        try:
            devs = parse_lspci(lsp)["devices"] if lsp is not None else {}
        except ParseError as e:
            devs, why_l = {}, str(e)
        links = {x["pci"]: x.get("smi_link") for x in _gpus_csv(smi or "")}
        for g in loaded:
            if g["pci"] not in still:
                g["load_unjudged"] = "the load workload left this GPU during the reading"
                continue
            reading = {"workload": f"{argv[0]} (pid {busy[g['pci']][0]['pid']})"}
            if (devs.get(g["pci"]) or {}).get("lnksta"):
                reading["lnksta"] = devs[g["pci"]]["lnksta"]
            if links.get(g["pci"]):
                reading["smi_link"] = links[g["pci"]]
            if len(reading) == 1:
                g["load_unjudged"] = f"no link reading under load (lspci: {why_l or 'no LnkSta'}; nvidia-smi: {why_s})"
            else:
                g["under_load"] = reading
    finally:
        if proc.poll() is None:
            _stop(proc)
    return None


def _read(run, argv, parse, what, miss):
    """``parse`` of what ``argv`` printed; None, with ``what`` recorded as unread, when the tool failed or
    printed what ``parse`` cannot read."""
    out, why = _try(run, argv)
    if out is not None:
        try:
            return parse(out)
        except ParseError as e:
            why = str(e)
    miss(what, why)
    return None


def _read_nics(run, nics, miss):
    """Each NIC's PCI address (ibdev2netdev) and firmware version and PSID (ibv_devinfo), into ``nics``."""
    d2n = _read(run, ["ibdev2netdev", "-v"], parse_ibdev2netdev, "ibdev2netdev", miss)
    for p in (d2n or {}).get("ports", []):
        if p["device"] in nics and p.get("pci"):
            nics[p["device"]]["pci"] = pci_address(p["pci"])
    devinfo = _read(run, ["ibv_devinfo"], parse_ibv_devinfo, "ibv_devinfo", miss)
    for d in (devinfo or {}).get("devices", []):
        if d["hca_id"] in nics:
            nics[d["hca_id"]].update(fw_ver=d.get("fw_ver"), psid=d.get("board_id"))


def _read_gpus(run, facts, miss):
    """The GPUs nvidia-smi lists (index, PCI address, driver, PCIe link, processes) into ``facts``; the
    ``topo -m`` matrix (None without it)."""
    topo = None
    out, why = _try(run, ["nvidia-smi", GPU_QUERY, "--format=csv,noheader"])
    if out is None and "is not a valid field" in (why or ""):
        facts["warnings"].append("nvidia-smi: this driver has no pcie.link.gen.gpumax/hostmax fields; the GPUs' PCIe links are judged from lspci only")
        out, why = _try(run, ["nvidia-smi", GPU_QUERY_OLD, "--format=csv,noheader"])
    if out is not None:
        facts["gpus"] = _gpus_csv(out)
        apps, awhy = _try(run, ["nvidia-smi", APPS_QUERY, "--format=csv,noheader"])
        if apps is None:
            facts["warnings"].append(f"nvidia-smi: which GPUs run a process is unknown ({awhy}): every GPU's link is taken as read at rest")
        busy = _apps_csv(apps or "")
        for g in facts["gpus"]:
            g["busy"] = busy.get(g["pci"], [])
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
    return topo


def _place(facts, nics, pci, topo):
    """Each GPU's binding (CPUs, NUMA node, nearest rails) and each NIC's PCIe facts, nearest GPU and the
    bridges between them, into ``facts`` (``nics``, ``rails``)."""
    if topo:
        # the launchers' binding (module_utils/intent/launchers.py): each GPU's CPUs, NUMA node and nearest rails
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
                nic["path"] = [
                    {"address": b["address"], "port_type": b.get("port_type"), "acs_ctl": b.get("acs_ctl")} for b in path_between(pci, nic["pci"], gpu_pci[g])
                ]
        facts["nics"].append(nic)
    facts["rails"] = [
        {
            "device": n["device"],
            "pci": n.get("pci"),
            "gpu": (n.get("gpu") or {}).get("index"),
            "gpu_pci": (n.get("gpu") or {}).get("pci"),
            "link": (n.get("gpu") or {}).get("link"),
        }
        for n in facts["nics"]
    ]


def _read_versions(run, versions, nccl_packages, miss):
    """OFED, nvidia-peermem and NCCL versions into ``versions``."""
    out, why = _try(run, ["ofed_info", "-s"])
    if out is not None:
        versions["ofed"] = out.strip().rstrip(":") or None
    else:
        miss("ofed_info", why)
    out, why = _try(run, ["modinfo", "-F", "version", "nvidia_peermem"])
    if out is not None and out.strip():
        versions["nvidia_peermem"] = out.strip()
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
            versions["nccl"] = ver
        else:
            miss("nccl", why or f"none of {', '.join(nccl_packages)} is installed as a package")
    else:
        miss("nccl", why)


def _read_limits(facts, sys_root, proc_root, shm_path, memlock, miss):
    """The IOMMU mode, the memlock limit and the /dev/shm size into ``facts``."""
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


def collect(
    run,
    devices,
    sys_root="/sys",
    proc_root="/proc",
    shm_path="/dev/shm",
    nccl_packages=("libnccl2",),
    memlock=None,
    kernel=None,
    load_command=(),
    load_timeout=60.0,
    start=None,
    clock=time.monotonic,
    sleep=time.sleep,
):
    """The readiness facts of this node for the RDMA ``devices`` (names).

    ``load_command`` (argv; ``{ngpus}`` is replaced by the number of GPUs): a GPU workload started with
    ``start(argv)`` (a Popen-like: poll, terminate, kill, communicate) while the links of the GPUs that read
    below their maximum at rest are read again (_probe_under_load). What could not be read goes to
    ``unread``, in the order read: the NICs, lspci, nvidia-smi, the versions, the limits."""
    facts = {"nics": [], "gpus": [], "versions": {}, "unread": [], "warnings": []}

    def miss(what, why):
        facts["unread"].append({"what": what, "error": why, "unproven": UNPROVEN[what]})

    facts["versions"]["kernel"] = kernel or os.uname().release
    nics = {d: {"device": d} for d in devices}
    _read_nics(run, nics, miss)
    lspci = _read(run, ["lspci", "-D", "-vvv"], parse_lspci, "lspci", miss)
    pci = lspci["devices"] if lspci else {}
    facts["warnings"] += lspci["warnings"] if lspci else []
    topo = _read_gpus(run, facts, miss)
    if not facts["gpus"] and pci:
        # no nvidia-smi: the GPUs lspci lists (NVIDIA 3D / VGA controllers), so their PCIe links are still judged
        facts["gpus"] = [
            {"index": i, "pci": a, "driver": None, "source": "lspci"} for i, a in enumerate(sorted(a for a, d in pci.items() if _is_nvidia_gpu(d)))
        ]
    for g in facts["gpus"]:
        _link_facts(g, pci)
    if load_command:
        _probe_under_load(run, start, facts, load_command, load_timeout, clock, sleep)
    _place(facts, nics, pci, topo)
    _read_versions(run, facts["versions"], nccl_packages, miss)
    _read_limits(facts, sys_root, proc_root, shm_path, memlock, miss)
    return facts
