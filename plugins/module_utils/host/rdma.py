"""RDMA facts of one node, assembled from what its tools print.

``collect(run)`` calls the tools through ``run(argv) -> (rc, stdout, stderr)``
(the module passes AnsibleModule.run_command; tests pass a fake) and joins
their parsed outputs per device and port. A tool that reports an error stops
the collection with that error (``ToolFailure``): an empty "no devices"
answer is never returned as a success.
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibtools import parse_ibdev2netdev, parse_ibstat, parse_ibv_devinfo, parse_show_gids
from ansible_collections.linerate.fabric.plugins.module_utils.runner import read_tool

TOOLS = ("ibdev2netdev", "ibv_devinfo", "ibstat", "show_gids")


def _call(run, argv, parser):
    return read_tool(run, argv, parser, empty_out_reads_err=True)


def roce_v2_ipv4_index(gids, device, port):
    """The lowest GID index that is RoCE v2 over an IPv4 address (NCCL's choice)."""
    rows = [g for g in gids if g["device"] == device and g["port"] == port and g.get("version") == "v2" and g.get("ipv4")]
    return min((g["index"] for g in rows), default=None)


def _numa(run, pci, sysfs_root="/sys"):
    """The NUMA node of a PCI function, as the kernel reports it (-1: none)."""
    path = f"{sysfs_root}/bus/pci/devices/{pci}/numa_node"
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _mst_numa(run):
    """NUMA nodes from ``mst status -v`` (MFT), keyed by RDMA device; {} if absent."""
    try:
        rc, out, _err = run(["mst", "status", "-v"])
    except OSError:
        return {}
    if rc != 0:
        return {}
    numa = {}
    for line in out.splitlines():
        cols = line.split()
        # DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA
        if len(cols) >= 6 and re.fullmatch(r"mlx\d+_\d+", cols[3]) and re.fullmatch(r"-?\d+", cols[-1]):
            numa[cols[3]] = int(cols[-1])
    return numa


def collect(run, with_mst=True):
    d2n = _call(run, ["ibdev2netdev", "-v"], parse_ibdev2netdev)
    devinfo = _call(run, ["ibv_devinfo", "-v"], parse_ibv_devinfo)
    stat = _call(run, ["ibstat"], parse_ibstat)
    gids = _call(run, ["show_gids"], parse_show_gids)["gids"]
    mst_numa = _mst_numa(run) if with_mst else {}

    devices = {}
    for dev in devinfo["devices"]:
        devices[dev["hca_id"]] = {
            "device": dev["hca_id"],
            "fw_version": dev.get("fw_ver"),
            "node_guid": dev.get("node_guid"),
            "sys_image_guid": dev.get("sys_image_guid"),
            "psid": dev.get("board_id"),
            "vendor_part_id": dev.get("vendor_part_id"),
            "ports": {},
        }
        for p in dev["ports"]:
            devices[dev["hca_id"]]["ports"][p["port"]] = {
                "port": p["port"],
                "state": p.get("state"),
                "active_mtu": p.get("active_mtu"),
                "max_mtu": p.get("max_mtu"),
                "link_layer": p.get("link_layer"),
                "width": p.get("active_width"),
            }
    for ca in stat["cas"]:
        dev = devices.get(ca["name"])
        if dev is None:
            continue
        dev["ca_type"] = ca.get("ca_type")
        for p in ca["ports"]:
            port = dev["ports"].setdefault(p["port"], {"port": p["port"]})
            port.update(
                ibstat_state=p.get("state"),
                physical_state=p.get("physical_state"),
                speed_gbps=p.get("rate_gbps"),
                port_guid=p.get("port_guid"),
                link_layer=port.get("link_layer") or p.get("link_layer"),
            )
    for entry in d2n["ports"]:
        dev = devices.get(entry["device"])
        if dev is None:
            continue
        if entry.get("pci"):
            dev["pci"] = entry["pci"]
        if entry.get("description") or entry.get("part_id"):
            dev["part_number"] = entry.get("part_id")
            dev["description"] = entry.get("description")
        port = dev["ports"].setdefault(entry["port"], {"port": entry["port"]})
        port.update(netdev=entry["netdev"], netdev_state=entry.get("netdev_state"))
    for name, dev in devices.items():
        pci = dev.get("pci")
        dev["numa_node"] = mst_numa.get(name, _numa(run, pci) if pci else None)
        for port in dev["ports"].values():
            port["roce_v2_ipv4_gid_index"] = roce_v2_ipv4_index(gids, name, port["port"])
            port["gids"] = [{k: g[k] for k in ("index", "gid", "ipv4", "version")} for g in gids if g["device"] == name and g["port"] == port["port"]]
            port["up"] = port.get("state") == "PORT_ACTIVE" and port.get("physical_state") in (None, "LinkUp")
    return {"devices": devices, "ports": flatten(devices)}


def flatten(devices):
    """One row per (device, port), sorted: the shape templates loop over."""
    rows = []
    for name in sorted(devices, key=_natural):
        dev = devices[name]
        for num in sorted(dev["ports"]):
            p = dev["ports"][num]
            rows.append(
                {
                    "device": name,
                    "port": num,
                    "netdev": p.get("netdev"),
                    "pci": dev.get("pci"),
                    "numa_node": dev.get("numa_node"),
                    "link_layer": p.get("link_layer"),
                    "state": p.get("state"),
                    "physical_state": p.get("physical_state"),
                    "speed_gbps": p.get("speed_gbps"),
                    "width": p.get("width"),
                    "active_mtu": p.get("active_mtu"),
                    "up": p.get("up"),
                    "roce_v2_ipv4_gid_index": p.get("roce_v2_ipv4_gid_index"),
                    "fw_version": dev.get("fw_version"),
                    "psid": dev.get("psid"),
                }
            )
    return rows


def _natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
