"""The PCIe tree of a lab GPU node, derived from the fabric model.

An HGX-style board: every NIC (rail r) sits behind a PCIe switch together
with one GPU, the rail-aligned one (GPU ``r * gpus / nics``); the switch
hangs off a CPU root port. For a NIC on bus B::

    root port   (B-3):01.0   secondary B-2, subordinate B+1
    switch USP  (B-2):00.0   secondary B-1, subordinate B+1
    switch DSP  (B-1):00.0 -> NIC  B:00.0
    switch DSP  (B-1):01.0 -> GPU  (B+1):00.0

GPUs without a NIC of their own sit alone under a root port on the bus
nvidia-smi has always shown for them. ACS is off on the switch ports (as
NVIDIA's GPUDirect guides require) unless ``node["pcie_acs"]`` says the
BIOS turned it on; the root ports keep theirs (the kernel enables ACS on
root ports; peer traffic inside a switch never reaches them).

Link state: ConnectX-7 is PCIe Gen5 x16, ConnectX-6 Gen4 x16, H100 SXM
Gen5 x16. Each link has two ends: the endpoint and the port above it (its
slot: the switch downstream port, or the root port), each with its own LnkCap,
and one LnkSta shown by both. A link trains at the lower of the two ends'
capabilities (PCIe base spec, link training): a Gen5 NIC in a Gen4 slot runs
Gen4 x16, which lspci shows as ``Speed 16GT/s (downgraded)`` on the NIC -
pciutils compares LnkSta with the function's own LnkCap only (ls-caps.c,
cap_express_link) - and ``(ok)`` on the slot. ``nic["pcie_slot"]`` /
``node["gpu_pcie_slot"][index]`` (the pcie-slot fault) hold a slot's
capability when it is less than Gen5 x16; ``nic["pcie"]`` (the pcie-degrade
fault) what the NIC's link trained at when it is less than both ends allow.

GPUs train their link down at rest, as NVIDIA's do (the driver lowers the
link with the GPU's performance state; open-gpu-kernel-modules issue 1010):
an idle GPU's link runs at Gen1 (2.5GT/s) at its full width, and trains up
to what both ends allow while a GPU workload runs on it - a simulated
nccl-tests rank or perftest ``--use_cuda`` holds its GPUs for as long as it
runs (``hold_gpus``; ``busy_gpus`` lists the holders, which nvidia-smi
shows as compute processes). ``node["gpu_pcie_stuck"][index]`` (the
pcie-gpu-stuck fault) is the generation a GPU's link stays at under load.
"""

import contextlib
import fcntl
import json
import os
import tempfile

from . import model

GPU_BUS_IDS = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]
GT = {1: "2.5GT/s", 2: "5GT/s", 3: "8GT/s", 4: "16GT/s", 5: "32GT/s", 6: "64GT/s"}
NIC_GEN = {"MT4129": 5, "MT4125": 4, "MT4123": 4, "MT4119": 3}
NIC_NAMES = {
    "MT4129": "Mellanox Technologies MT2910 Family [ConnectX-7]",
    "MT4125": "Mellanox Technologies MT2892 Family [ConnectX-6 Dx]",
    "MT4123": "Mellanox Technologies MT28908 Family [ConnectX-6]",
}
GPU_NAME = "NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)"
SWITCH = "Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)"
ROOT = "Intel Corporation Device 352a (rev 04)"


def _bus(nic):
    return int(nic["pci"].split(":")[1], 16)


def _rails(node):
    nics = sorted(node["nics"], key=lambda n: int(n["device"].rsplit("_", 1)[1]))
    gpus = node.get("gpus", 0)
    if not gpus:
        return nics, {}
    step = max(1, gpus // max(1, len(nics)))
    return nics, {r * step: nic for r, nic in enumerate(nics) if r * step < gpus}


GPU_CAP = (5, 16)  # H100 SXM: Gen5 x16
REST_GEN = 1  # an idle NVIDIA GPU's link: Gen1 (2.5GT/s), full width


def _load_dir(node_name=None):
    return os.path.join(model.state_dir(), "gpu-load", node_name or model.node_name())


@contextlib.contextmanager
def hold_gpus(gpus, name, pid=None):
    """Mark GPUs ``gpus`` (indices) of this node busy with process ``name`` while the block runs.

    One file per process, locked (flock) for as long as the process holds it: a holder that dies
    releases its lock with it, so a reader never counts a process that is gone. The file is
    locked before it is renamed into place, so no reader sees it unlocked while it is held."""
    pid = pid or os.getpid()
    d = _load_dir()
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".hold.")
    path = os.path.join(d, f"{pid}.json")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps({"pid": pid, "name": name, "gpus": sorted(set(int(g) for g in gpus))}).encode())
        os.replace(tmp, path)
        yield path
    finally:
        for p in (tmp, path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
        os.close(fd)


def busy_gpus(node_name=None):
    """{gpu index: [{"pid", "name"}]} of the processes holding this node's GPUs now (hold_gpus)."""
    d = _load_dir(node_name)
    try:
        names = sorted(os.listdir(d))
    except FileNotFoundError:
        return {}
    out = {}
    for n in names:
        if not n.endswith(".json"):
            continue
        path = os.path.join(d, n)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # held: the process runs
                with os.fdopen(os.dup(fd)) as f:
                    rec = json.load(f)
                for g in rec["gpus"]:
                    out.setdefault(g, []).append({"pid": rec["pid"], "name": rec["name"]})
                continue
            with contextlib.suppress(FileNotFoundError):  # its holder is gone without cleaning up
                os.unlink(path)
        finally:
            os.close(fd)
    return out


def gpu_buses(node):
    """PCI bus of each GPU index: behind its rail's switch, else nvidia-smi's usual bus."""
    _nics, paired = _rails(node)
    return [(_bus(paired[i]) + 1) if i in paired else GPU_BUS_IDS[i % 8] for i in range(node.get("gpus", 0))]


def paired_nic(node, gpu_index):
    """The NIC behind the same PCIe switch as GPU ``gpu_index`` (None: none)."""
    return _rails(node)[1].get(gpu_index)


SLOT = (5, 16)  # the PEX890xx switch's downstream ports and the CPU root ports: Gen5 x16


def slot_cap(spec):
    """(gen, width) of a slot from a pcie-slot fault's ``{"gen", "width"}`` (Gen5 x16 when absent)."""
    spec = spec or {}
    return spec.get("gen", SLOT[0]), spec.get("width", SLOT[1])


def trained(cap, slot, degraded=None):
    """(gen, width) a link trains at: the lower of both ends, or what a pcie-degrade fault forces."""
    gen, width = min(cap[0], slot[0]), min(cap[1], slot[1])
    degraded = degraded or {}
    return degraded.get("gen", gen), degraded.get("width", width)


def _addr(bus, dev=0, fn=0):
    return f"0000:{bus:02x}:{dev:02x}.{fn}"


def gpu_trained(slot, loaded, stuck_gen=None):
    """(gen, width) of a GPU's link: at rest Gen1 at the trained width; under load what both ends allow,
    or the generation a pcie-gpu-stuck fault keeps it at."""
    gen, width = trained(GPU_CAP, slot)
    if not loaded:
        return min(gen, REST_GEN), width
    return (min(gen, int(stuck_gen)) if stuck_gen else gen), width


def gpu_state(node, index, busy=None):
    """What nvidia-smi reports of GPU ``index``'s link: {"gen", "width", "gen_max", "gen_gpumax",
    "gen_hostmax", "width_max"} (max: the lower of the GPU's and the slot's capability)."""
    gpu_slots = node.get("gpu_pcie_slot") or {}
    slot = slot_cap(gpu_slots.get(str(index)) or gpu_slots.get(index))
    busy = busy_gpus() if busy is None else busy
    gen, width = gpu_trained(slot, index in busy, (node.get("gpu_pcie_stuck") or {}).get(str(index)))
    return {
        "gen": gen,
        "width": width,
        "gen_max": min(GPU_CAP[0], slot[0]),
        "gen_gpumax": GPU_CAP[0],
        "gen_hostmax": slot[0],
        "width_max": min(GPU_CAP[1], slot[1]),
    }


def _bridge(addr, kind, bus, numa, acs_on, cap=SLOT, sta=SLOT):
    """A PCI bridge lspci prints; a slot (the port above an endpoint) shows its own capability and the
    link it shares with the endpoint. ``bus``: (primary, secondary, subordinate)."""
    return {
        "address": addr,
        "class": "PCI bridge",
        "name": ROOT if kind == "Root Port" else SWITCH,
        "kind": kind,
        "bus": bus,
        "numa": numa,
        "acs": acs_on,
        "cap": cap,
        "sta": sta,
        "driver": "pcieport",
    }


def _gpu_link(node, i, busy):
    """(slot capability, trained (gen, width)) of GPU ``i``'s link."""
    gpu_slots = node.get("gpu_pcie_slot") or {}
    stuck = node.get("gpu_pcie_stuck") or {}
    slot = slot_cap(gpu_slots.get(str(i)) or gpu_slots.get(i))
    return slot, gpu_trained(slot, i in busy, stuck.get(str(i)))


def _nic_link(nic):
    """(NIC capability, slot capability, trained (gen, width)) of a NIC's link."""
    cap = (NIC_GEN.get(nic.get("ca_type"), 5), 16)
    slot = slot_cap(nic.get("pcie_slot"))
    return cap, slot, trained(cap, slot, nic.get("pcie"))


def _gpu_function(bus, numa, sta):
    return {
        "address": _addr(bus),
        "class": "3D controller",
        "name": GPU_NAME,
        "kind": "Endpoint",
        "numa": numa,
        "cap": GPU_CAP,
        "sta": sta,
        "mrr": 512,
        "driver": "nvidia",
    }


def _nic_function(nic):
    cap, _slot, sta = _nic_link(nic)
    return {
        "address": nic["pci"],
        "class": "Ethernet controller" if nic.get("link_layer") != "InfiniBand" else "Infiniband controller",
        "name": NIC_NAMES.get(nic.get("ca_type"), NIC_NAMES["MT4129"]),
        "kind": "Endpoint",
        "numa": nic.get("numa_node", 0),
        "cap": cap,
        "sta": sta,
        "mrr": (nic.get("pcie") or {}).get("max_read_req", 4096),
        "driver": "mlx5_core",
    }


def _switch_functions(node, gi, nic, busy):
    """A rail's PCIe switch: the root port above it, its upstream port, the NIC's and GPU ``gi``'s slots, the GPU."""
    acs = bool(node.get("pcie_acs"))
    b = _bus(nic)
    numa = nic.get("numa_node", 0)
    _cap, slot, sta = _nic_link(nic)
    gpu_slot, gpu_sta = _gpu_link(node, gi, busy)
    return [
        _bridge(_addr(b - 3, 1), "Root Port", (b - 3, b - 2, b + 1), numa, True),
        _bridge(_addr(b - 2), "Upstream Port", (b - 2, b - 1, b + 1), numa, False),
        _bridge(_addr(b - 1, 0), "Downstream Port", (b - 1, b, b), numa, acs, slot, sta),
        _bridge(_addr(b - 1, 1), "Downstream Port", (b - 1, b + 1, b + 1), numa, acs, gpu_slot, gpu_sta),
        _gpu_function(b + 1, _gpu_numa(node, gi), gpu_sta),
    ]


def _gpu_numa(node, i):
    return 0 if i < max(1, node.get("gpus", 0) // 2) else 1


def functions(node, busy=None):
    """Every PCI function of the node's GPU/NIC tree, in address order (dicts lspci prints).
    ``busy``: the GPU indices a workload runs on (default: busy_gpus(), this node's holders now)."""
    out = []
    nics, paired = _rails(node)
    busy = busy_gpus() if busy is None else busy
    for gi, nic in paired.items():
        out.extend(_switch_functions(node, gi, nic, busy))
    for nic in nics:
        if nic in paired.values():
            continue
        b = _bus(nic)
        _cap, slot, sta = _nic_link(nic)
        out.append(_bridge(_addr(b - 1, 1), "Root Port", (b - 1, b, b), nic.get("numa_node", 0), True, slot, sta))
    for i, b in enumerate(gpu_buses(node)):
        if i not in paired:
            slot, sta = _gpu_link(node, i, busy)
            out.append(_bridge(_addr(b - 1, 1), "Root Port", (b - 1, b, b), _gpu_numa(node, i), True, slot, sta))
            out.append(_gpu_function(b, _gpu_numa(node, i), sta))
    out.extend(_nic_function(nic) for nic in nics)
    return sorted(out, key=lambda f: f["address"])


def upstream_of(node, address):
    """The function of the port directly above ``address`` (the bridge whose secondary bus is its bus)."""
    bus = int(address.split(":")[1], 16)
    return next((f for f in functions(node) if f["class"] == "PCI bridge" and f["bus"][1] == bus), None)


def gt(gen):
    return GT.get(gen, "unknown")
