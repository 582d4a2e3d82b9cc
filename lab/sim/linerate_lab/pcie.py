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
Gen5 x16; ``nic["pcie"]`` (set by the pcie-degrade fault) holds what the
NIC's link trained at when it is less.
"""

GPU_BUS_IDS = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]
GT = {1: "2.5GT/s", 2: "5GT/s", 3: "8GT/s", 4: "16GT/s", 5: "32GT/s", 6: "64GT/s"}
NIC_GEN = {"MT4129": 5, "MT4125": 4, "MT4123": 4, "MT4119": 3}
NIC_NAMES = {"MT4129": "Mellanox Technologies MT2910 Family [ConnectX-7]",
             "MT4125": "Mellanox Technologies MT2892 Family [ConnectX-6 Dx]",
             "MT4123": "Mellanox Technologies MT28908 Family [ConnectX-6]"}
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


def gpu_buses(node):
    """PCI bus of each GPU index: behind its rail's switch, else nvidia-smi's usual bus."""
    _nics, paired = _rails(node)
    return [(_bus(paired[i]) + 1) if i in paired else GPU_BUS_IDS[i % 8] for i in range(node.get("gpus", 0))]


def paired_nic(node, gpu_index):
    """The NIC behind the same PCIe switch as GPU ``gpu_index`` (None: none)."""
    return _rails(node)[1].get(gpu_index)


def _addr(bus, dev=0, fn=0):
    return f"0000:{bus:02x}:{dev:02x}.{fn}"


def functions(node):
    """Every PCI function of the node's GPU/NIC tree, in address order (dicts lspci prints)."""
    acs = bool(node.get("pcie_acs"))
    out = []
    nics, paired = _rails(node)
    numa_of_gpu = {}
    for i in range(node.get("gpus", 0)):
        numa_of_gpu[i] = 0 if i < max(1, node.get("gpus", 0) // 2) else 1
    buses = gpu_buses(node)

    def bridge(addr, kind, prim, sec, sub, numa, acs_on, gen=5):
        out.append({"address": addr, "class": "PCI bridge", "name": ROOT if kind == "Root Port" else SWITCH,
                    "kind": kind, "bus": (prim, sec, sub), "numa": numa, "acs": acs_on,
                    "cap": (gen, 16), "sta": (gen, 16), "driver": "pcieport"})

    def gpu(i, bus):
        out.append({"address": _addr(bus), "class": "3D controller", "name": GPU_NAME, "kind": "Endpoint",
                    "numa": numa_of_gpu[i], "cap": (5, 16), "sta": (5, 16), "mrr": 512, "driver": "nvidia"})

    for gi, nic in paired.items():
        b = _bus(nic)
        numa = nic.get("numa_node", 0)
        bridge(_addr(b - 3, 1), "Root Port", b - 3, b - 2, b + 1, numa, True)
        bridge(_addr(b - 2), "Upstream Port", b - 2, b - 1, b + 1, numa, False)
        bridge(_addr(b - 1, 0), "Downstream Port", b - 1, b, b, numa, acs)
        bridge(_addr(b - 1, 1), "Downstream Port", b - 1, b + 1, b + 1, numa, acs)
        gpu(gi, b + 1)
    for nic in nics:
        if nic in paired.values():
            continue
        b = _bus(nic)
        bridge(_addr(b - 1, 1), "Root Port", b - 1, b, b, nic.get("numa_node", 0), True)
    for i, b in enumerate(buses):
        if i not in paired:
            bridge(_addr(b - 1, 1), "Root Port", b - 1, b, b, numa_of_gpu[i], True)
            gpu(i, b)
    for nic in nics:
        cap_gen = NIC_GEN.get(nic.get("ca_type"), 5)
        link = nic.get("pcie") or {}
        out.append({"address": nic["pci"], "class": "Ethernet controller" if nic.get("link_layer") != "InfiniBand"
                    else "Infiniband controller", "name": NIC_NAMES.get(nic.get("ca_type"), NIC_NAMES["MT4129"]),
                    "kind": "Endpoint", "numa": nic.get("numa_node", 0), "cap": (cap_gen, 16),
                    "sta": (link.get("gen", cap_gen), link.get("width", 16)), "mrr": link.get("max_read_req", 4096),
                    "driver": "mlx5_core"})
    return sorted(out, key=lambda f: f["address"])


def gt(gen):
    return GT.get(gen, "unknown")
