"""The management path is sacred: what a disruptive host action would cut.

Every disruptive action of the host stack (the OFED driver restart, a
firmware reset with mlxfwreset, a netdev change by rdma_netdev) asks
``refusal()`` first, with the connection Ansible uses:

1. **The connection's interfaces.** The node's own address of the SSH
   connection (``SSH_CONNECTION``'s third field, else ``ansible_host``) is
   found in ``ip -json addr show``; the route back to the controller
   (``SSH_CONNECTION``'s first field) in ``ip -json route get <addr>``. Both
   interfaces carry the connection.
2. **Down to the hardware.** Each interface is followed through its lower
   devices: ``/sys/class/net/<if>/lower_<dev>`` links (a VLAN's parent, a
   bond's or a bridge's ports, a macvlan's parent; kernel
   ``netdev_adjacent_sysfs_add``) and, for a bond, ``bonding/slaves``. A
   device with no lower device is physical when ``/sys/class/net/<if>/device``
   exists; that link resolves to its PCI function (``0000:41:00.0``). A VF's
   ``physfn`` names the PF it lives on.
3. **What the action touches.** A driver restart (``openibd restart``) unloads
   the mlx5/mlx4 drivers: every function bound to them (``device/driver``) or
   of vendor 0x15b3 (Mellanox). ``mlxfwreset`` resets the whole card: every
   function of the same PCI bus and device (``0000:41:00``; a dual-port
   ConnectX is ``.0`` and ``.1``), VFs of those PFs included. A netdev change
   touches the functions under that netdev, and the netdev itself when the
   connection's interfaces are named (an address on a ConnectX netdev with no
   PCI link, such as an IPoIB child, is found by name). A ``reboot`` cuts every
   connection and ``ansible.builtin.reboot`` waits for it: no path is refused,
   only the in-use check applies (every device).

The refusal names the action, the connection's chain (``bond0 -> enp65s0f0np0
-> 0000:41:00.0``) and how to proceed; it is not overridable: a host whose
management runs over the NIC is changed from its console.

``in_use()``: processes that hold an RDMA device open (its
``/dev/infiniband/uverbsN``, found in ``/proc/<pid>/fd``, as ``lsof`` does;
``/sys/class/infiniband_verbs/uverbsN/ibdev`` names its device).
"""

import json
import os
import re

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure

ACTIONS = ("driver_restart", "firmware_reset", "netdev_change", "reboot")
MELLANOX_VENDOR = "0x15b3"
# Drivers openibd stops (MLNX_OFED's openibd: mlx5_ib, mlx5_core, mlx4_*).
OFED_DRIVERS = ("mlx5_core", "mlx4_core", "mlx4_en", "mlx5_ib", "mlx4_ib")
BDF = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def card(bdf):
    """'0000:41:00.1' -> '0000:41:00' (the functions mlxfwreset resets together)."""
    full = bdf if bdf.count(":") == 2 else "0000:" + bdf
    return full.rsplit(".", 1)[0].lower()


def full_bdf(bdf):
    return (bdf if bdf.count(":") == 2 else "0000:" + bdf).lower()


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def lower_devices(sysfs, ifname):
    """The devices directly under ``ifname`` (VLAN parent, bond/bridge ports), sorted."""
    net = os.path.join(sysfs, "class", "net", ifname)
    lowers = {n[len("lower_") :] for n in _listdir(net) if n.startswith("lower_")}
    slaves = _read(os.path.join(net, "bonding", "slaves"))
    if slaves:
        lowers.update(slaves.split())
    return sorted(lowers)


def pci_function(sysfs, ifname):
    """The PCI function of a physical netdev (its PF for a VF), or None."""
    dev = os.path.join(sysfs, "class", "net", ifname, "device")
    if not os.path.exists(dev):
        return None
    real = os.path.realpath(dev)
    physfn = os.path.join(real, "physfn")
    if os.path.exists(physfn):
        real = os.path.realpath(physfn)
    name = os.path.basename(real)
    return name.lower() if BDF.fullmatch(name.lower()) else None


def chain(sysfs, ifname, seen=None):
    """{'netdevs': [ifname and every device below it], 'functions': [PCI functions], 'paths': ['a -> b -> bdf']}."""
    seen = set() if seen is None else seen
    if ifname in seen:
        return {"netdevs": [], "functions": [], "paths": []}
    seen.add(ifname)
    out = {"netdevs": [ifname], "functions": [], "paths": []}
    lowers = lower_devices(sysfs, ifname)
    for low in lowers:
        sub = chain(sysfs, low, seen)
        out["netdevs"] += sub["netdevs"]
        out["functions"] += sub["functions"]
        out["paths"] += [f"{ifname} -> {p}" for p in sub["paths"]]
    if not lowers:
        fn = pci_function(sysfs, ifname)
        if fn:
            out["functions"].append(fn)
            out["paths"].append(f"{ifname} -> {fn}")
        else:
            out["paths"].append(f"{ifname} (no PCI device)")
    out["functions"] = sorted(set(out["functions"]))
    return out


def connection_interfaces(run, local_address, peer_address):
    """The interfaces of the connection: the one holding ``local_address`` and the route to ``peer_address``."""
    found = []
    if local_address:
        argv = ["ip", "-json", "addr", "show"]
        rc, out, err = run(argv)
        if rc != 0:
            raise ToolFailure.exited(argv, rc, out, err)
        for link in json.loads(out or "[]"):
            if any(a.get("local") == local_address for a in link.get("addr_info", [])):
                found.append(link["ifname"])
    if peer_address:
        argv = ["ip", "-json", "route", "get", peer_address]
        rc, out, err = run(argv)
        if rc != 0:
            raise ToolFailure.exited(argv, rc, out, err)
        for route in json.loads(out or "[]"):
            if route.get("dev") and route["dev"] != "lo":
                found.append(route["dev"])
    return list(dict.fromkeys(found))


def management(run, sysfs, local_address, peer_address):
    """{'interfaces', 'netdevs', 'functions', 'paths'} of the connection Ansible uses (empty without one)."""
    ifaces = connection_interfaces(run, local_address, peer_address)
    if (local_address or peer_address) and not ifaces:
        raise ToolFailure(
            f"cannot find the interface of this connection (node address {local_address or '-'}, "
            f"controller {peer_address or '-'}): neither ip -json addr show nor ip -json route get "
            "names one; refusing a disruptive action whose effect on it is unknown"
        )
    out = {"interfaces": ifaces, "netdevs": [], "functions": [], "paths": []}
    for name in ifaces:
        c = chain(sysfs, name)
        out["netdevs"] += [n for n in c["netdevs"] if n not in out["netdevs"]]
        out["functions"] += c["functions"]
        out["paths"] += c["paths"]
    out["functions"] = sorted(set(out["functions"]))
    return out


def _bus_device(sysfs, bdf):
    return os.path.join(sysfs, "bus", "pci", "devices", full_bdf(bdf))


def ofed_function(sysfs, bdf):
    """True when ``openibd restart`` takes the function down (mlx driver bound, or a Mellanox device)."""
    dev = _bus_device(sysfs, bdf)
    driver = os.path.basename(os.path.realpath(os.path.join(dev, "driver"))) if os.path.exists(os.path.join(dev, "driver")) else None
    return driver in OFED_DRIVERS or _read(os.path.join(dev, "vendor")) == MELLANOX_VENDOR


def touched(sysfs, mgmt, action, targets):
    """The management functions (or netdevs) the action takes down, each with why."""
    hits = []
    if action == "driver_restart":
        hits = [f"{fn} (driver restart unloads its mlx driver)" for fn in mgmt["functions"] if ofed_function(sysfs, fn)]
    elif action == "firmware_reset":
        cards = {card(t): t for t in targets}
        hits = [f"{fn} (mlxfwreset {cards[card(fn)]} resets every function of card {card(fn)})" for fn in mgmt["functions"] if card(fn) in cards]
    elif action == "netdev_change":
        for name in targets:
            if name in mgmt["netdevs"]:
                hits.append(f"{name} (the connection runs over it)")
                continue
            shared = sorted(set(chain(sysfs, name)["functions"]) & set(mgmt["functions"]))
            hits += [f"{name} on {fn} (the connection's function)" for fn in shared]
    elif action == "reboot":
        # ansible.builtin.reboot expects the connection to drop and waits for it
        hits = []
    else:
        raise ToolFailure(f"action: {action!r} is not allowed (allowed: {' | '.join(ACTIONS)})")
    return hits


def refusal(run, sysfs, action, targets, local_address, peer_address):
    """(management, message or None): the one check every disruptive path makes before acting."""
    mgmt = management(run, sysfs, local_address, peer_address)
    hits = touched(sysfs, mgmt, action, targets)
    if not hits:
        return mgmt, None
    what = {
        "driver_restart": "restart the RDMA driver",
        "firmware_reset": "reset the firmware of " + ", ".join(targets),
        "netdev_change": "change " + ", ".join(targets),
    }[action]
    return mgmt, (
        f"refusing to {what}: Ansible reaches this host over {', '.join(mgmt['paths'])}, and the "
        f"action takes down {'; '.join(hits)}. Apply it from the console or the BMC, or connect "
        "through a management interface on another NIC."
    )


def uverbs_devices(sysfs):
    """{'/dev/infiniband/uverbs0': 'mlx5_0', ...} from /sys/class/infiniband_verbs/uverbsN/ibdev."""
    base = os.path.join(sysfs, "class", "infiniband_verbs")
    out = {}
    for name in _listdir(base):
        ibdev = _read(os.path.join(base, name, "ibdev"))
        if name.startswith("uverbs") and ibdev:
            out[f"/dev/infiniband/{name}"] = ibdev
    return out


def in_use(procfs, sysfs, devices=None):
    """[{pid, comm, device}] of the processes holding an RDMA device open (all, or ``devices``)."""
    verbs = uverbs_devices(sysfs)
    held = []
    for pid in _listdir(procfs):
        if not pid.isdigit():
            continue
        fds = os.path.join(procfs, pid, "fd")
        devs = set()
        for fd in _listdir(fds):
            try:
                target = os.readlink(os.path.join(fds, fd))
            except OSError:
                continue
            ibdev = verbs.get(target)
            if ibdev and (devices is None or ibdev in devices):
                devs.add(ibdev)
        for ibdev in sorted(devs):
            held.append({"pid": int(pid), "comm": _read(os.path.join(procfs, pid, "comm")) or "?", "device": ibdev})
    return sorted(held, key=lambda h: (h["device"], h["pid"]))


def devices_of(sysfs, action, targets):
    """The RDMA devices an action takes away: all for a driver restart, the card's for a reset,
    the netdevs' for a netdev change (None: all)."""
    if action in ("driver_restart", "reboot"):
        return None
    base = os.path.join(sysfs, "class", "infiniband")
    out = set()
    for ibdev in _listdir(base):
        dev = os.path.join(base, ibdev, "device")
        fn = os.path.basename(os.path.realpath(dev)) if os.path.exists(dev) else None
        if not fn:
            continue
        if action == "firmware_reset" and card(fn) in {card(t) for t in targets}:
            out.add(ibdev)
        if action == "netdev_change" and fn in {f for t in targets for f in chain(sysfs, t)["functions"]}:
            out.add(ibdev)
    return out
