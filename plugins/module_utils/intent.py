"""The fabric intent: its defaults, its schema and the cross-layer checks.

The intent (inventory variable ``fabric``) is the only place a fabric value
is written; every role derives its settings from the merged result
(``fabric_effective``). ``validate()`` runs on the controller before any host
or switch is touched and returns every problem at once, each naming the key,
the value and what is allowed.

Stdlib only: used by the validate action plugin, by filters and by tests.
"""
import copy
import ipaddress
import re

TRANSPORTS = ("roce", "infiniband")
SWITCH_PLATFORMS = ("nvue", "sonic", "eos")
# InfiniBand switches are managed by the subnet manager, not over SSH.
IB_SWITCH_PLATFORMS = ("infiniband",)
SWITCH_ROLES = ("leaf", "spine")
# Ethernet rates and InfiniBand 4X rates (SDR 10, DDR 20, QDR 40, FDR 56,
# EDR 100, HDR 200, NDR 400, XDR 800).
LINK_SPEEDS_GBPS = (10, 20, 25, 40, 50, 56, 100, 200, 400, 800)
LINK_WIDTHS = (1, 2, 4, 8)
TRUST_MODES = ("dscp", "pcp")
GID_TYPES = ("v2",)
NCCL_GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")

# Per-port protocol overhead that RoCE adds on top of the RDMA MTU
# (Ethernet + IP + UDP + BTH + ICRC ...); 4096 + 104 is the usual minimum.
ROCE_HEADER_BYTES = 104
IB_MTUS = (256, 512, 1024, 2048, 4096)

DEFAULTS = {
    "name": "fabric",
    "transport": "roce",
    "link_speed_gbps": 400,
    "link_width": 4,
    "mtu": {"host": 4200, "switch": 9216},
    "roce": {
        "trust": "dscp",
        "no_drop_priority": 3,
        "data_dscp": 26,
        "cnp_dscp": 48,
        "cnp_priority": 6,
        "gid_type": "v2",
        "ecn": {
            "enabled": True,
            "min_threshold_kb": 150,
            "max_threshold_kb": 1500,
            "probability_percent": 100,
        },
    },
    "infiniband": {},
    "nccl": {
        "socket_ifname": "eth0",
        "gdr_level": "PHB",
        "overrides": {},
    },
    "verify": {
        "ib_write_bw_fraction": 0.90,
        "nccl_busbw_fraction": 0.80,
    },
}

# Keys of one entry of a host's rdma_ports (guid: the InfiniBand port GUID).
PORT_KEYS = {"device", "netdev", "address", "switch", "switch_port", "pci", "guid"}

# Keys that belong to one transport only.
TRANSPORT_ONLY = {"roce": "roce", "infiniband": "infiniband"}


class Problems:
    """Collects problems as ``key: value is not allowed (allowed: ...)``."""

    def __init__(self):
        self.items = []

    def add(self, key, value, allowed):
        self.items.append(f"{key}: {value!r} is not allowed ({allowed})")

    def note(self, message):
        self.items.append(message)

    def __bool__(self):
        return bool(self.items)


def merge(defaults, given):
    """Deep-merge ``given`` over ``defaults`` (dicts merge, the rest replaces)."""
    out = copy.deepcopy(defaults)
    for key, value in (given or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def effective(fabric, sm_hosts=()):
    """The intent with defaults filled in, keeping only the chosen transport's block.

    On InfiniBand, ``infiniband.subnet_manager.master`` defaults to the first
    host of ``sm_hosts`` (group subnet_managers): every play names it from here.
    """
    fabric = fabric or {}
    transport = fabric.get("transport", DEFAULTS["transport"])
    merged = merge(DEFAULTS, fabric)
    other = "infiniband" if transport == "roce" else "roce"
    if other not in fabric:
        merged.pop(other, None)
    if transport == "infiniband" and sm_hosts:
        ib = merged.setdefault("infiniband", {})
        sm = dict(ib.get("subnet_manager") or {})
        if not sm.get("master"):
            sm["master"] = list(sm_hosts)[0]
        ib["subnet_manager"] = sm
    return merged


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int_in(p, key, value, lo, hi):
    if not _is_int(value) or not lo <= value <= hi:
        p.add(key, value, f"allowed: an integer {lo}..{hi}")
        return False
    return True


def _one_of(p, key, value, choices):
    if value not in choices:
        p.add(key, value, "allowed: " + " | ".join(str(c) for c in choices))
        return False
    return True


def _unknown_keys(p, prefix, given, known):
    for key in sorted(set(given or {}) - set(known)):
        p.add(f"{prefix}.{key}" if prefix else key, (given or {})[key],
              "unknown key; allowed keys: " + ", ".join(sorted(known)))


def validate_fabric(fabric):
    """Check the ``fabric`` tree on its own. Returns a list of messages."""
    p = Problems()
    if fabric is None:
        p.note("fabric: the variable is not defined (set it in group_vars/all; "
               "see inventory/example-roce)")
        return p.items
    if not isinstance(fabric, dict):
        p.add("fabric", fabric, "allowed: a mapping")
        return p.items
    _unknown_keys(p, "fabric", fabric, DEFAULTS)
    transport = fabric.get("transport", DEFAULTS["transport"])
    if not _one_of(p, "fabric.transport", transport, TRANSPORTS):
        return p.items
    # Keys of the other transport are a sign of a copied or mixed-up inventory.
    for block, owner in TRANSPORT_ONLY.items():
        if owner != transport and fabric.get(block):
            p.add(f"fabric.{block}", "...", f"only with fabric.transport: {owner}; "
                  f"this fabric is {transport}, remove the {block} block")
    f = effective(fabric)

    _one_of(p, "fabric.link_speed_gbps", f["link_speed_gbps"], LINK_SPEEDS_GBPS)
    _one_of(p, "fabric.link_width", f["link_width"], LINK_WIDTHS)

    mtu = f["mtu"]
    if isinstance(mtu, dict):
        _unknown_keys(p, "fabric.mtu", fabric.get("mtu"), DEFAULTS["mtu"])
        host_ok = _int_in(p, "fabric.mtu.host", mtu.get("host"), 1280, 9216)
        sw_ok = _int_in(p, "fabric.mtu.switch", mtu.get("switch"), 1280, 9216)
        if host_ok and sw_ok and mtu["host"] > mtu["switch"]:
            p.add("fabric.mtu.host", mtu["host"],
                  f"allowed: at most fabric.mtu.switch ({mtu['switch']}); a host MTU above "
                  "the switch MTU drops every full-size frame")
        if host_ok and transport == "roce" and mtu["host"] < 1024 + ROCE_HEADER_BYTES:
            p.add("fabric.mtu.host", mtu["host"],
                  f"allowed: at least {1024 + ROCE_HEADER_BYTES} for RoCE (RDMA MTU 1024 + headers)")
    else:
        p.add("fabric.mtu", mtu, "allowed: a mapping with host and switch")

    if transport == "roce":
        _validate_roce(p, fabric.get("roce") or {}, f["roce"])
    _validate_nccl(p, fabric.get("nccl") or {}, f["nccl"])
    _validate_verify(p, fabric.get("verify") or {}, f["verify"], f["link_speed_gbps"])
    return p.items


def _validate_roce(p, given, r):
    _unknown_keys(p, "fabric.roce", given, DEFAULTS["roce"])
    _one_of(p, "fabric.roce.trust", r["trust"], TRUST_MODES)
    _one_of(p, "fabric.roce.gid_type", r["gid_type"], GID_TYPES)
    prio_ok = _int_in(p, "fabric.roce.no_drop_priority", r["no_drop_priority"], 0, 7)
    cnp_ok = _int_in(p, "fabric.roce.cnp_priority", r["cnp_priority"], 0, 7)
    dscp_ok = _int_in(p, "fabric.roce.data_dscp", r["data_dscp"], 0, 63)
    cnp_dscp_ok = _int_in(p, "fabric.roce.cnp_dscp", r["cnp_dscp"], 0, 63)
    if prio_ok and cnp_ok and r["cnp_priority"] == r["no_drop_priority"]:
        p.add("fabric.roce.cnp_priority", r["cnp_priority"],
              f"allowed: any priority 0..7 except fabric.roce.no_drop_priority "
              f"({r['no_drop_priority']}); CNPs must not queue behind the data they throttle")
    if dscp_ok and cnp_dscp_ok and r["cnp_dscp"] == r["data_dscp"]:
        p.add("fabric.roce.cnp_dscp", r["cnp_dscp"],
              f"allowed: any DSCP 0..63 except fabric.roce.data_dscp ({r['data_dscp']})")
    ecn = r["ecn"]
    if not isinstance(ecn, dict):
        p.add("fabric.roce.ecn", ecn, "allowed: a mapping")
        return
    _unknown_keys(p, "fabric.roce.ecn", given.get("ecn"), DEFAULTS["roce"]["ecn"])
    if not isinstance(ecn.get("enabled"), bool):
        p.add("fabric.roce.ecn.enabled", ecn.get("enabled"), "allowed: true | false")
    lo_ok = _int_in(p, "fabric.roce.ecn.min_threshold_kb", ecn.get("min_threshold_kb"), 1, 100000)
    hi_ok = _int_in(p, "fabric.roce.ecn.max_threshold_kb", ecn.get("max_threshold_kb"), 1, 100000)
    if lo_ok and hi_ok and ecn["min_threshold_kb"] >= ecn["max_threshold_kb"]:
        p.add("fabric.roce.ecn.min_threshold_kb", ecn["min_threshold_kb"],
              f"allowed: below fabric.roce.ecn.max_threshold_kb ({ecn['max_threshold_kb']})")
    _int_in(p, "fabric.roce.ecn.probability_percent", ecn.get("probability_percent"), 1, 100)


def _validate_nccl(p, given, n):
    _unknown_keys(p, "fabric.nccl", given, DEFAULTS["nccl"])
    ifname = n.get("socket_ifname")
    if not isinstance(ifname, str) or not re.fullmatch(r"\^?=?[A-Za-z0-9_.:,-]{1,64}", ifname):
        p.add("fabric.nccl.socket_ifname", ifname,
              "allowed: an interface name or NCCL prefix list such as eth0 or ^lo,docker")
    _one_of(p, "fabric.nccl.gdr_level", n.get("gdr_level"), NCCL_GDR_LEVELS)
    overrides = n.get("overrides")
    if not isinstance(overrides, dict):
        p.add("fabric.nccl.overrides", overrides, "allowed: a mapping of NCCL_* names to values")
        return
    for key, value in overrides.items():
        if not re.fullmatch(r"NCCL_[A-Z0-9_]+", str(key)):
            p.add(f"fabric.nccl.overrides.{key}", value, "allowed: keys named NCCL_*")
        elif isinstance(value, (dict, list)) or value is None:
            p.add(f"fabric.nccl.overrides.{key}", value, "allowed: a string or number")


def _validate_verify(p, given, v, speed):
    _unknown_keys(p, "fabric.verify", given, DEFAULTS["verify"])
    for key in ("ib_write_bw_fraction", "nccl_busbw_fraction"):
        value = v.get(key)
        if not _is_num(value) or value <= 0:
            p.add(f"fabric.verify.{key}", value, "allowed: a fraction of line rate, 0 < x <= 1")
        elif value > 1:
            p.add(f"fabric.verify.{key}", value,
                  f"allowed: at most 1.0; {value} x {speed} Gb/s = {value * speed:g} Gb/s "
                  f"is above the line rate of {speed} Gb/s, so the check could never pass")


def validate_cabling(fabric, hosts, switches):
    """Cross-checks of the per-host cabling against the switches and the intent.

    ``hosts``: {inventory_name: {"rdma_ports": [...]}} for RDMA hosts.
    ``switches``: {inventory_name: {"switch_platform": ..., ...}}.
    """
    p = Problems()
    f = effective(fabric or {})
    transport = f.get("transport")
    seen_switch_ports = {}
    for sw, sv in sorted(switches.items()):
        platform = sv.get("switch_platform")
        _one_of(p, f"{sw}: switch_platform", platform,
                IB_SWITCH_PLATFORMS if transport == "infiniband" else SWITCH_PLATFORMS)
        role = sv.get("switch_role", "leaf")
        _one_of(p, f"{sw}: switch_role", role, SWITCH_ROLES)
        for i, up in enumerate(sv.get("switch_uplinks") or []):
            key = f"{sw}: switch_uplinks[{i}]"
            if not isinstance(up, dict) or not {"port", "peer", "peer_port"} <= set(up):
                p.add(key, up, "allowed: a mapping with port, peer, peer_port")
                continue
            if up["peer"] not in switches:
                p.add(f"{key}.peer", up["peer"], "allowed: a host of group switches: "
                      + ", ".join(sorted(switches)))
            _claim(p, seen_switch_ports, sw, up["port"], f"{sw} uplink to {up['peer']}")
    for host, hv in sorted(hosts.items()):
        ports = hv.get("rdma_ports")
        if ports is None:
            p.add(f"{host}: rdma_ports", None, "allowed: a list of the host's cabled RDMA ports")
            continue
        if not isinstance(ports, list) or not ports:
            p.add(f"{host}: rdma_ports", ports, "allowed: a non-empty list")
            continue
        devices = set()
        for i, port in enumerate(ports):
            key = f"{host}: rdma_ports[{i}]"
            if not isinstance(port, dict):
                p.add(key, port, "allowed: a mapping with device, netdev, switch, switch_port")
                continue
            unknown = set(port) - PORT_KEYS
            for k in sorted(unknown):
                p.add(f"{key}.{k}", port[k], "unknown key; allowed keys: " + ", ".join(sorted(PORT_KEYS)))
            dev = port.get("device")
            if not isinstance(dev, str) or not re.fullmatch(r"[a-z][a-z0-9_]*\d+", dev or ""):
                p.add(f"{key}.device", dev, "allowed: an RDMA device name such as mlx5_0")
            elif dev in devices:
                p.add(f"{key}.device", dev, "allowed: each device once per host")
            devices.add(dev)
            netdev = port.get("netdev")
            if not isinstance(netdev, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", netdev or ""):
                p.add(f"{key}.netdev", netdev, "allowed: a Linux interface name (1-15 characters)")
            if port.get("address") is not None:
                try:
                    ipaddress.ip_interface(port["address"])
                    if "/" not in str(port["address"]):
                        raise ValueError
                except ValueError:
                    p.add(f"{key}.address", port["address"], "allowed: an address with prefix length, "
                          "such as 192.168.100.11/24")
            sw = port.get("switch")
            if sw not in switches:
                p.add(f"{key}.switch", sw, "allowed: a host of group switches: "
                      + (", ".join(sorted(switches)) or "(the inventory has none)"))
                continue
            sp = port.get("switch_port")
            if sp in (None, ""):
                p.add(f"{key}.switch_port", sp, f"allowed: a port name of {sw}")
                continue
            if transport == "infiniband" and not _is_int(sp):
                p.add(f"{key}.switch_port", sp, "allowed: an InfiniBand switch port number")
            _claim(p, seen_switch_ports, sw, sp, f"{host} {dev}")
    return p.items


def _claim(p, seen, switch, port, who):
    key = (switch, str(port))
    if key in seen:
        p.add(f"{who}: switch_port", f"{switch} {port}",
              f"allowed: a switch port cabled once; {switch} {port} is already cabled to {seen[key]}")
    else:
        seen[key] = who


def validate(fabric, hosts=None, switches=None, sm_hosts=()):
    """Everything: the tree, the cabling, and on InfiniBand the subnet manager
    (partitions, routing engine, member GUIDs). Returns a list of messages."""
    problems = validate_fabric(fabric)
    if hosts is not None or switches is not None:
        problems += validate_cabling(fabric if isinstance(fabric, dict) else {},
                                     hosts or {}, switches or {})
    if isinstance(fabric, dict) and fabric.get("transport") == "infiniband" and not problems:
        problems += validate_infiniband(fabric, hosts or {}, switches or {}, sm_hosts)
    return problems


def validate_infiniband(fabric, hosts, switches, sm_hosts=()):
    try:
        from ansible_collections.linerate.fabric.plugins.module_utils import intent_ib
    except ImportError:  # loaded on its own, beside intent_ib.py
        import intent_ib
    known = {h: [p["guid"] for p in hv.get("rdma_ports") or [] if isinstance(p, dict) and p.get("guid")]
             for h, hv in hosts.items()}
    known.update({s: [sv["ib_switch_guid"]] for s, sv in switches.items() if sv.get("ib_switch_guid")})
    sm = (fabric.get("infiniband") or {}).get("subnet_manager")
    return intent_ib.validate_subnet_manager(sm, known, list(sm_hosts))


def line_rate_gbps(fabric):
    """The data rate one port should reach, from the intent."""
    return effective(fabric)["link_speed_gbps"]


def priority_mask(priorities):
    """PFC enable vector for mlnx_qos (list of 8 ints) from a priority list."""
    return [1 if i in set(priorities) else 0 for i in range(8)]


def roce_tos(dscp):
    """The IP TOS byte RDMA-CM should use for a DSCP (ECN bits left to the NIC)."""
    return dscp << 2
