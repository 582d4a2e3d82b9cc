"""What every node tool shares: the model, the kernel's netdev view, devices.

The node's netdevs are real (dummy interfaces in the container), so MTU,
admin state and IP addresses come from the kernel through ``read_netdev()``
— the one function tests replace. Everything the hardware decides (cable,
trained speed, firmware, driver state) comes from the fabric model.
"""

import ipaddress
import json
import os
import subprocess
import sys

from .. import hardware, kmods, model, subnet

IFF_UP = 0x1


def read_netdev(name):
    """The kernel's view of a netdev, or None when it does not exist.

    {"name", "up" (admin, IFF_UP), "operstate", "mtu", "ipv4": [addr],
    "ipv6": [addr]} — addresses in the order ``ip addr`` lists them.
    """
    try:
        out = subprocess.run(["ip", "-j", "addr", "show", "dev", name], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    info = json.loads(out.stdout)[0]
    addrs = info.get("addr_info", [])
    return {
        "name": name,
        "up": "UP" in info.get("flags", []),
        "operstate": info.get("operstate", "UNKNOWN"),
        "mtu": int(info.get("mtu", 1500)),
        "ipv4": [a["local"] for a in addrs if a.get("family") == "inet"],
        "ipv6": [a["local"] for a in addrs if a.get("family") == "inet6"],
    }


def load_node(ports=False):
    """(model, node) for this container's node; ports: the tool shows port
    state, which on the InfiniBand lab is read from the subnet (subnet.py)."""
    m = model.load()
    node = model.node(m)
    if ports:
        subnet.refresh(m, model.node_name(), node)
    return m, node


def loaded(node, module):
    return kmods.canonical(module) in node.get("modules", [])


def rdma_nics(node):
    """The NICs with an RDMA device: mlx5_ib must be loaded (ib_core under it)."""
    if not (loaded(node, "mlx5_ib") and loaded(node, "ib_core")):
        return []
    # a function lost in a reset (lab fault reset-lost) has no RDMA device
    return sorted((n for n in node["nics"] if not n.get("lost")), key=lambda n: n["device"])


def verbs_nics(node):
    """RDMA devices libibverbs sees: also needs ib_uverbs (/dev/infiniband/uverbs*)."""
    if not loaded(node, "ib_uverbs"):
        return []
    return sorted(rdma_nics(node), key=lambda n: int(n["device"].rsplit("_", 1)[1]))


def is_ib(nic):
    return nic["link_layer"] == "InfiniBand"


def port_state(nic, nd=None):
    """(state, phys_state) as numbers: 4 ACTIVE / 2 INIT / 1 DOWN; 5 LinkUp,
    3 Disabled, 2 Polling. A RoCE port follows its netdev's admin state."""
    nd = nd if nd is not None else read_netdev(nic["netdev"])
    admin_up = bool(nd and nd["up"]) if not is_ib(nic) else True
    if not admin_up:
        return 1, 3
    if nic.get("cable") != "up":
        return 1, 2
    if is_ib(nic) and "subnet_state" in nic:  # what the SM made of it (subnet.py)
        return tuple(nic["subnet_state"])
    if is_ib(nic) and not nic.get("lid"):
        return 2, 5
    return 4, 5


STATE_NAMES = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE"}
PHYS_NAMES = {2: "Polling", 3: "Disabled", 5: "LinkUp"}


def ib_speed_name(nic):
    """'NDR' etc.: per-lane rate of the trained link."""
    lane = nic["speed_gbps"] / max(1, nic.get("width", 4))
    for rate, name in ((100, "NDR"), (50, "HDR"), (25, "EDR"), (14, "FDR"), (10, "QDR"), (5, "DDR")):
        if lane >= rate:
            return name
    return "SDR"


def active_mtu(netdev_mtu):
    """IB MTU enum RoCE derives from the netdev MTU (mlx5: mtu minus headers)."""
    payload = netdev_mtu - 88
    for enum, size in ((5, 4096), (4, 2048), (3, 1024), (2, 512)):
        if payload >= size:
            return enum, size
    return 1, 256


def gids(nic, nd=None):
    """The port's GID table as the kernel fills it for RoCE.

    [(index, gid_sysfs_string, type 'v1'|'v2', ipv4 or None)]: the default
    GID (fe80::EUI-64 of the MAC) at 0/1, then v1/v2 for each IPv4 address
    (IPv4-mapped), then for each non-link-local IPv6 address. The kernel
    fills the table in the order the addresses came up: an IPv6 address
    configured before the IPv4 one (the NIC's ``gids_first``, set by the
    gid-index-moved fault) takes 2/3 and pushes the IPv4 GIDs to 4/5.
    """
    if is_ib(nic):
        guid = nic["port_guid"][2:]
        return [(0, _sysfs_gid("fe80" + "0" * 12 + guid), "v1", None)]
    nd = nd if nd is not None else read_netdev(nic["netdev"])
    table = []
    eui = hardware.eui64_from_mac(nic["mac"])
    default = _sysfs_gid("fe80" + "0" * 12 + eui)
    table += [(0, default, "v1", None), (1, default, "v2", None)]
    idx = 2
    first = [a for a in (nd or {}).get("ipv6", []) if a in (nic.get("gids_first") or [])]
    for addr in first:
        g = _sysfs_gid(ipaddress.IPv6Address(addr).exploded.replace(":", ""))
        table += [(idx, g, "v1", None), (idx + 1, g, "v2", None)]
        idx += 2
    for addr in (nd or {}).get("ipv4", []):
        mapped = ipaddress.IPv6Address("::ffff:" + addr)
        g = _sysfs_gid(mapped.exploded.replace(":", ""))
        table += [(idx, g, "v1", addr), (idx + 1, g, "v2", addr)]
        idx += 2
    for addr in (nd or {}).get("ipv6", []):
        ip = ipaddress.IPv6Address(addr)
        if ip.is_link_local or addr in first:
            continue
        g = _sysfs_gid(ip.exploded.replace(":", ""))
        table += [(idx, g, "v1", None), (idx + 1, g, "v2", None)]
        idx += 2
    return table


def _sysfs_gid(hex32):
    return ":".join(hex32[i : i + 4] for i in range(0, 32, 4))


def compressed_gid(sysfs_gid):
    """inet_ntop's form (glibc writes IPv4-mapped addresses dotted)."""
    ip = ipaddress.IPv6Address(sysfs_gid)
    if ip.ipv4_mapped:
        return f"::ffff:{ip.ipv4_mapped}"
    return str(ip)


def guid_colons(guid):
    """0xa088c20300100110 -> a088:c203:0010:0110 (ibv_devinfo's form)."""
    h = guid[2:] if guid.startswith("0x") else guid
    return ":".join(h[i : i + 4] for i in range(0, 16, 4))


# --- MFT device names --------------------------------------------------------


def mst_name(node, nic):
    """/dev/mst/mt4129_pciconf<N>: numbered in PCI order."""
    ordered = sorted(node["nics"], key=lambda n: n["pci"])
    return f"/dev/mst/{hardware.CX7['mst_name']}_pciconf{ordered.index(nic)}"


def resolve_mft_device(node, dev):
    """The NIC an MFT ``-d`` argument names (PCI BDF, /dev/mst path, mlx5_N,
    netdev), or None. /dev/mst paths exist only after ``mst start``."""
    if not dev:
        return None
    if dev.startswith("/dev/mst/"):
        if not node.get("mst_started"):
            return None
        for nic in node["nics"]:
            if mst_name(node, nic) == dev:
                return nic
        return None
    for nic in node["nics"]:
        if dev in (nic["device"], nic["netdev"]):
            return nic
    bdf = dev.lower()
    if bdf.count(":") == 1:
        bdf = "0000:" + bdf
    for nic in node["nics"]:
        if nic["pci"].lower() == bdf:
            return nic
    return None


def out(text=""):
    sys.stdout.write(text)


def err(text):
    sys.stderr.write(text)


def delegate(real, prog, argv):
    """Run the real tool ``real`` (the binary the simulator was diverted from) as ``prog``; 1 when it cannot start."""
    try:
        os.execv(real, [prog] + list(argv))
    except OSError as e:
        err(f"{prog}: {e.strerror}: {real}\n")
        return 1


def is_root():
    return os.geteuid() == 0
