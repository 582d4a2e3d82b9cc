"""The simulated RDMA data path: what a RoCE/IB port of a lab node can do.

The verification simulators (ib_write_bw, nccl-tests) have no RDMA hardware
to drive, so they compute what the real data path would do from three
sources, exactly the ones the real data path depends on:

- the netdev's real kernel state inside the node container (carrier, MTU,
  addresses): the GID table is derived from the addresses as the mlx5
  driver does (index 0/1: RoCE v1/v2 of the MAC's link-local address,
  2/3: RoCE v1/v2 of the first IPv4 address, ...);
- the NIC settings the host tools wrote into the fabric model (QoS trust,
  PFC, DSCP map, default ToS) and the node's loaded kernel modules;
- the switch ports' operational state the switch simulators publish
  (up, MTU, PFC priorities).

Each side of a test describes its own port (``local_port``); the two
descriptions travel over the test's TCP connection, as QPN/PSN/GID do for
the real tools, and ``path()`` decides what the link between them gives.
Stdlib only (runs inside the node containers).
"""

import hashlib
import ipaddress
import json
import os
import subprocess
import zlib

from linerate_lab import congestion, model, subnet
from linerate_lab.tools import common

# RoCE v2 bytes on the wire per packet besides the payload: preamble+IFG 20,
# Ethernet 14 + FCS 4, IPv4 20, UDP 8, BTH 12, ICRC 4.
ROCE_WIRE_OVERHEAD = 82
# Frame bytes counted against an interface MTU besides the RDMA payload
# (IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4); 4096 + 60 fits a 4200 MTU.
ROCE_MTU_OVERHEAD = 60
IB_MTUS = (256, 512, 1024, 2048, 4096)
# An uncongested pair on a non-blocking fabric never fills a queue: it runs at
# line rate whatever PFC/ECN are (nothing pauses, nothing drops). What a lossy
# class costs shows only under incast (linerate_lab.congestion).
# DMA/PCIe and verbs efficiency of a healthy ConnectX port at large messages.
HCA_EFFICIENCY = 0.985


def sh(argv):
    res = subprocess.run(argv, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    return res.stdout if res.returncode == 0 else ""


def list_netdevs():
    return sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []


def netdev_state(netdev):
    """Carrier, MTU and addresses of a netdev, from the kernel."""
    base = f"/sys/class/net/{netdev}"
    if not os.path.isdir(base):
        return {"exists": False, "carrier": False, "mtu": 0, "ipv4": [], "ipv6": [], "mac": None}

    def read(name, default=""):
        try:
            with open(os.path.join(base, name)) as f:
                return f.read().strip()
        except OSError:
            return default

    try:
        addrs = json.loads(sh(["ip", "-j", "addr", "show", "dev", netdev]) or "[]")
    except ValueError:
        addrs = []

    def family(name):
        return [a["local"] for entry in addrs for a in entry.get("addr_info", []) if a.get("family") == name]

    return {
        "exists": True,
        "carrier": read("carrier", "0") == "1" and read("operstate") in ("up", "unknown"),
        "mtu": int(read("mtu", "0") or 0),
        "ipv4": family("inet"),
        "ipv6": family("inet6"),
        "mac": read("address"),
    }


def active_mtu(netdev_mtu, link_layer="Ethernet"):
    """The RDMA MTU the mlx5 driver derives from the netdev MTU (largest IB MTU that fits)."""
    if link_layer != "Ethernet":
        return 4096
    fits = [m for m in IB_MTUS if m + ROCE_MTU_OVERHEAD <= netdev_mtu]
    return fits[-1] if fits else 256


def perftest_gid(gid):
    """perftest prints a GID as 16 decimal bytes separated by colons."""
    raw = ipaddress.IPv6Address(gid).packed
    return ":".join(f"{b:02d}" if b < 100 else str(b) for b in raw)


def local_port(device, ib_port=1, gid_index=None, tos=None, node=None, rdma_cm=False, sl=0):
    """Everything the other end of a test needs to know about this port (JSON-safe).

    ``error`` is set when the port cannot be used at all (no such device, port not
    active); ``gid`` is None when ``gid_index`` is not a RoCE v2 IPv4 GID.
    ``tos`` is the traffic class the program itself sets on its QPs (perftest
    ``--tclass``, NCCL ``NCCL_IB_TC``); None means class 0, as for a real verbs
    QP. Only an RDMA-CM QP (``rdma_cm=True``, perftest ``-R``) without an explicit
    ToS inherits the node's RDMA-CM default ToS (cma_roce_tos).
    """
    m = model.load()
    n = model.node(m, node)
    nic = model.nic(m, device, node)
    if nic is None:
        return {"device": device, "error": "no_device"}
    subnet.refresh_nic(m, node or model.node_name(), nic)
    state = netdev_state(nic["netdev"])
    sw = (m.get("switches", {}).get(nic.get("switch")) or {}).get("ports", {}).get(str(nic.get("switch_port"))) or {}
    up = nic.get("cable", "up") == "up" and state["carrier"] and sw.get("up", True) is not False
    if "subnet_state" in nic and nic["subnet_state"][0] != 4:
        up = False  # an IB port the SM has not made ACTIVE carries no RDMA traffic
    # the table show_gids prints (one GID table in the lab: an IPv6 address that came up
    # first moves the RoCE v2 IPv4 GID, and perftest/NCCL see it where show_gids does)
    table = common.gids(nic, state) if state["exists"] else []
    gid = None
    if gid_index is not None:
        entry = next((e for e in table if e[0] == gid_index), None)
        gid = {"index": gid_index, "gid": entry[1], "type": entry[2], "ipv4": entry[3]} if entry else None
    qos = nic.get("qos") or {}
    if tos is None:
        tos = int((nic.get("cma") or {}).get("tos") or 0) if rdma_cm else 0
    dscp = tos >> 2
    trust = qos.get("trust", "pcp")
    prio = int((qos.get("dscp2prio") or {}).get(str(dscp), 0)) if trust == "dscp" else 0
    pfc = list(qos.get("pfc") or [0] * 8)
    return {
        "node": n and (node or model.node_name()),
        "device": device,
        "port": ib_port,
        "netdev": nic["netdev"],
        "error": None if up else "port_down",
        "link_layer": nic.get("link_layer", "Ethernet"),
        "speed_gbps": nic.get("speed_gbps", 0),
        "width": nic.get("width", 4),
        "netdev_mtu": state["mtu"],
        "active_mtu": active_mtu(state["mtu"], nic.get("link_layer", "Ethernet")),
        "ipv4": state["ipv4"],
        "gid_index": gid_index,
        "gid": gid,
        "gids": [list(e) for e in table],
        "tos": tos,
        "sl": sl,
        "priority": prio,
        "host_pfc": bool(pfc[prio]) if 0 <= prio < 8 else False,
        "switch": nic.get("switch"),
        "switch_port": nic.get("switch_port"),
        "switch_up": sw.get("up", True) is not False,
        "switch_mtu": sw.get("mtu"),
        "switch_pfc": list(sw.get("pfc") or []),
        "switch_speed_gbps": sw.get("speed_gbps"),
        # the switch simulators' buffer model (switchsim/simcore.py): priorities with lossless headroom
        "switch_headroom": None if sw.get("headroom") is None else list(sw["headroom"]),
        "switch_ecn": sw.get("ecn", True) is not False,
        # faults/host.py pfc-storm: a NIC on this switch storms on this priority, its watchdog off (congestion.py)
        "switch_storm": congestion.unguarded_storm(m, nic.get("switch"), prio) if nic.get("switch") else None,
        "transport": m.get("transport", "roce"),
        # faults/host.py rx-degrade / flaky: what this port receives at most, the share of tests it fails
        "rx_limit_gbps": nic.get("rx_limit_gbps"),
        "flaky": nic.get("flaky"),
        # faults/switch.py uplink-degrade: the leaf's uplinks in order (ECMP), True where degraded
        "uplinks_degraded": [bool(u.get("degraded")) for u in (m.get("switches", {}).get(nic.get("switch")) or {}).get("uplinks") or []],
    }


# what a test through a degraded element keeps (a dirty strand, a mis-set queue: retransmissions)
DEGRADED_FRACTION = 0.4


def _share(salt):
    """A test's draw in [0, 1), fixed by its identity (ends and TCP port): reproducible runs."""
    return zlib.crc32(str(salt).encode()) / 2**32


def path(a, b, requested_mtu=4096, salt=None, qps=1):
    """What the link a -> b (a writes into b) gives: {"ok", "error", "gbps", "mtu", "notes"}.

    ``error``: port_down | gid | mtu_drop ; ``gbps`` is the payload rate at large
    messages with several QPs. ``salt``: the test's identity (ends, TCP port): a flaky port
    fails the tests whose draw falls below its share, each the same for the same test.
    Between two leaves each of the test's ``qps`` queue pairs is its own flow: RoCE v2
    carries a per-QP UDP source port, which the switches' ECMP hash spreads over the
    uplinks, so the QPs a degraded uplink carries are slow and the test's aggregate drops
    by their share.
    """
    for side in (a, b):
        if side.get("error"):
            return {"ok": False, "error": side["error"], "side": side, "gbps": 0.0, "notes": []}
    roce = a.get("link_layer") == "Ethernet"
    if roce and (
        a.get("gid") is None or b.get("gid") is None or a["gid"]["type"] != "v2" or b["gid"]["type"] != "v2" or not a["gid"]["ipv4"] or not b["gid"]["ipv4"]
    ):
        bad = a if (a.get("gid") is None or a["gid"]["type"] != "v2" or not a["gid"]["ipv4"]) else b
        return {"ok": False, "error": "gid", "side": bad, "gbps": 0.0, "notes": []}
    mtu = min(requested_mtu, a["active_mtu"])
    notes = []
    if roce:
        frame = mtu + ROCE_MTU_OVERHEAD
        limits = [("host", b["node"], b["device"], b["netdev_mtu"])]
        for side in (a, b):
            if side.get("switch_mtu"):
                limits.append(("switch", side["switch"], side["switch_port"], side["switch_mtu"]))
        for kind, who, port, limit in limits:
            if frame > limit:
                return {
                    "ok": False,
                    "error": "mtu_drop",
                    "side": b if kind == "host" else a,
                    "where": {"kind": kind, "name": who, "port": port, "mtu": limit, "frame": frame},
                    "gbps": 0.0,
                    "mtu": mtu,
                    "notes": notes,
                }
    speed = min(a["speed_gbps"], b["speed_gbps"])
    for side in (a, b):
        if side.get("switch_speed_gbps"):
            speed = min(speed, side["switch_speed_gbps"])
    eff = HCA_EFFICIENCY
    if roce:
        eff *= mtu / (mtu + ROCE_WIRE_OVERHEAD)
        lossless = all(s["host_pfc"] and s["priority"] in s["switch_pfc"] for s in (a, b))
        if not lossless:
            notes.append("lossy")  # same rate for one pair; incast drops (congestion.py)
    if b.get("rx_limit_gbps"):
        speed = min(speed, float(b["rx_limit_gbps"]))  # rx-degrade: only the receiving side limits
        notes.append("rx-degraded")
    gbps = speed * eff
    for side in (a, b):
        if side.get("switch_storm"):
            gbps *= congestion.STORM_BACKPRESSURE_FRACTION
            notes.append(f"pause storm from {side['switch_storm']} on {side['switch']}")
            break
    for side in (a, b):
        if side.get("flaky") and salt is not None and _share(f"{salt}|{side['node']}") < float(side["flaky"]):
            gbps *= DEGRADED_FRACTION
            notes.append(f"flaky {side['node']} {side['device']}")
    if a.get("switch") and b.get("switch") and a["switch"] != b["switch"]:
        slow, seen = 0, []
        for q in range(max(1, int(qps))):
            # a digest, not crc32: CRC is linear, and flows that differ in one character land alike
            h = int.from_bytes(hashlib.sha256(f"{a['node']}|{b['node']}|{a['device']}|{salt}|{q}".encode()).digest()[:4], "big")
            hit = [
                side["switch"]
                for k, side in enumerate((a, b))
                if (side.get("uplinks_degraded") or []) and side["uplinks_degraded"][(h >> k) % len(side["uplinks_degraded"])]
            ]
            slow += bool(hit)
            seen += [s for s in hit if s not in seen]
        if slow:
            gbps *= 1 - slow / max(1, int(qps)) * (1 - DEGRADED_FRACTION)
            notes += [f"uplink of {s}" for s in seen]
    return {"ok": True, "error": None, "gbps": gbps, "mtu": mtu, "notes": notes}


def node_modules(node=None):
    n = model.node(model.load(), node)
    return list(n.get("modules") or [])
