"""The cabling of the fabric intent: every host's ``rdma_ports`` and every switch
(platform, role, uplinks) against each other and the intent.

A switch port is cabled once, a rail address and a port GUID used once, every
port names a switch of the inventory; on InfiniBand a switch port is a number
and the switches have no SSH platform. Stdlib only; ``schema.validate()`` runs
it after the intent's own tree.
"""

import ipaddress
import re

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS, LINK_SPEEDS_GBPS, TRANSPORTS
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import (
    FORMATS,
    Problems,
    check_format,
    has_format,
    is_int,
    one_of,
    show,
    unknown_keys,
)
from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers, network_os, profiles

SWITCH_PLATFORMS = ("nvue", "sonic", "eos")
# InfiniBand switches are managed by the subnet manager, not over SSH.
IB_SWITCH_PLATFORMS = ("infiniband",)
SWITCH_ROLES = ("leaf", "spine")
# ansible_network_os, bare or collection-qualified (arista.eos.eos,
# nvidia.nvue.nvue, dellemc.enterprise_sonic.sonic): the last part names the
# platform (module_utils/switch/network_os.py, the one table the drivers and the role read too).
NETWORK_OS_ALLOWED = " | ".join(network_os.ALIASES) + ", bare or collection-qualified such as arista.eos.eos; or set switch_platform: nvue | sonic | eos"
# Keys of one entry of a host's rdma_ports (guid: the InfiniBand port GUID).
PORT_KEYS = {"device", "netdev", "address", "switch", "switch_port", "pci", "guid"}
UPLINK_KEYS = {"port", "peer", "peer_port"}
# Host stacks linerate can build on. The distribution's rdma-core ("inbox")
# lacks ibdev2netdev, show_gids and mlnx_qos, which rdma_facts, roce_qos and
# verification read, so it is rejected with that reason.
MOFED_SOURCES = ("doca", "mlnx_ofed")
INBOX_REASON = (
    "the distribution's rdma-core (inbox) has no ibdev2netdev, show_gids or mlnx_qos, which rdma_facts, roce_qos and verification need; use doca or mlnx_ofed"
)
# InfiniBand switch port numbers: 8-bit, port 0 is the switch's management port.
IB_PORT_RANGE = (1, 255)


def _switch_port(p, key, value, transport, switch):
    """A switch port: a port name on Ethernet, a port number on InfiniBand."""
    if transport == "infiniband":
        if not is_int(value) or not IB_PORT_RANGE[0] <= value <= IB_PORT_RANGE[1]:
            p.add(key, value, f"allowed: an InfiniBand switch port number {IB_PORT_RANGE[0]}..{IB_PORT_RANGE[1]}")
            return False
        return True
    if not has_format(value, "port"):
        p.add(key, value, f"allowed: a port name of {switch}: " + FORMATS["port"][1])
        return False
    return True


def _switch_names(switches):
    return ", ".join(sorted(map(str, switches))) or "(the inventory has none)"


def validate_cabling(fabric, hosts, switches):
    """Cross-checks of the per-host cabling against the switches and the intent.

    ``hosts``: {inventory_name: {"rdma_ports": [...], "mofed_source": ...}} for
    every host that feeds a switch port (and every RDMA host).
    ``switches``: {inventory_name: {"switch_platform": ..., ...}}.
    """
    transport = fabric.get("transport", DEFAULTS["transport"]) if isinstance(fabric, dict) else None
    if transport not in TRANSPORTS:
        transport = DEFAULTS["transport"]
    check = _Cabling(transport, switches)
    for sw, sv in sorted(switches.items(), key=lambda kv: str(kv[0])):
        check.switch(sw, sv if isinstance(sv, dict) else {}, fabric)
    for host, hv in sorted(hosts.items(), key=lambda kv: str(kv[0])):
        check.host(host, hv if isinstance(hv, dict) else {})
    if transport != "infiniband":
        for key, value, allowed in port_speed_problems(fabric, hosts, switches):
            check.p.add(key, value, allowed)
    return check.p.items


class _Cabling:
    """The cabling's problems (``p``) and what is claimed across hosts and switches so far: each switch
    port once (``switch_ports``), each rail address in its own subnet (``addresses``), each GUID once."""

    def __init__(self, transport, switches):
        self.p = Problems()
        self.transport = transport
        self.switches = switches
        self.switch_ports = {}
        self.addresses = {}
        self.guids = {}

    def switch(self, sw, sv, fabric):
        """A switch: its platform (or ansible_network_os), the platform's limits, role, GUID, uplinks."""
        p, transport = self.p, self.transport
        allowed_platforms = IB_SWITCH_PLATFORMS if transport == "infiniband" else SWITCH_PLATFORMS
        if "switch_platform" not in sv and "ansible_network_os" in sv:
            # Reported under the key the operator wrote, not under switch_platform.
            os_value = sv["ansible_network_os"]
            platform = network_os.normalize(os_value)
            if platform not in allowed_platforms:
                p.add(
                    f"{sw}: ansible_network_os",
                    os_value,
                    "allowed: " + NETWORK_OS_ALLOWED
                    if transport != "infiniband"
                    else "allowed: none on InfiniBand (the subnet manager manages its switches, not SSH); remove it or the switch from the group",
                )
        else:
            platform = sv.get("switch_platform")
            one_of(p, f"{sw}: switch_platform", platform, allowed_platforms)
        # the platform's own limits: SONiC object names, EOS family (MTU, speed forms)
        for key, value, allowed in profiles.switch_problems(sw, sv, platform, fabric, DEFAULTS):
            p.add(key, value, allowed)
        one_of(p, f"{sw}: switch_role", sv.get("switch_role", "leaf"), SWITCH_ROLES)
        if "ib_switch_guid" in sv:
            check_format(p, f"{sw}: ib_switch_guid", sv["ib_switch_guid"], "guid")
        uplinks = sv.get("switch_uplinks")
        if uplinks is None:
            uplinks = []
        if not isinstance(uplinks, list):
            p.add(f"{sw}: switch_uplinks", uplinks, "allowed: a list of {port, peer, peer_port}")
            uplinks = []
        for i, up in enumerate(uplinks):
            self.uplink(f"{sw}: switch_uplinks[{i}]", sw, up)

    def uplink(self, key, sw, up):
        p, switches = self.p, self.switches
        if not isinstance(up, dict):
            p.add(key, up, "allowed: a mapping with port, peer, peer_port")
            return
        unknown_keys(p, key, up, UPLINK_KEYS)
        for k in sorted(UPLINK_KEYS - set(up)):
            p.add(f"{key}.{k}", None, "required; allowed keys: " + ", ".join(sorted(UPLINK_KEYS)))
        peer = up.get("peer")
        if "peer" in up and (not isinstance(peer, str) or peer not in switches or peer == sw):
            p.add(f"{key}.peer", peer, "allowed: another host of group switches: " + _switch_names(switches))
        port_ok = "port" in up and _switch_port(p, f"{key}.port", up["port"], self.transport, sw)
        if "peer_port" in up:
            _switch_port(p, f"{key}.peer_port", up["peer_port"], self.transport, peer if isinstance(peer, str) else "the peer")
        if port_ok:
            _claim(p, self.switch_ports, sw, up["port"], f"{sw} uplink to {show(peer)[1:-1]}")

    def host(self, host, hv):
        """A host: its MOFED source and its cabled RDMA ports, each device and netdev once."""
        p = self.p
        if hv.get("mofed_source") == "inbox":
            p.note(f"{host}: mofed_source: 'inbox' is rejected: {INBOX_REASON}")
        elif "mofed_source" in hv:
            one_of(p, f"{host}: mofed_source", hv["mofed_source"], MOFED_SOURCES)
        ports = hv.get("rdma_ports")
        if ports is None:
            p.add(f"{host}: rdma_ports", None, "allowed: a list of the host's cabled RDMA ports")
            return
        if not isinstance(ports, list) or not ports:
            p.add(f"{host}: rdma_ports", ports, "allowed: a non-empty list")
            return
        devices, netdevs = set(), set()
        for i, port in enumerate(ports):
            self.rdma_port(f"{host}: rdma_ports[{i}]", host, port, devices, netdevs)

    def rdma_port(self, key, host, port, devices, netdevs):
        p = self.p
        if not isinstance(port, dict):
            p.add(key, port, "allowed: a mapping with device, netdev, switch, switch_port")
            return
        unknown_keys(p, key, port, PORT_KEYS)
        dev = port.get("device")
        if check_format(p, f"{key}.device", dev, "device"):
            if dev in devices:
                p.add(f"{key}.device", dev, "allowed: each device once per host")
            devices.add(dev)
        netdev = port.get("netdev")
        if check_format(p, f"{key}.netdev", netdev, "netdev"):
            if netdev in netdevs:
                p.add(f"{key}.netdev", netdev, "allowed: each netdev once per host")
            netdevs.add(netdev)
        if "pci" in port:
            check_format(p, f"{key}.pci", port["pci"], "pci")
        if "guid" in port and check_format(p, f"{key}.guid", port["guid"], "guid"):
            g = int(port["guid"], 16)
            if g in self.guids:
                p.add(f"{key}.guid", port["guid"], f"allowed: a GUID used once; {self.guids[g]} has it")
            self.guids[g] = f"{host} {dev}"
        if port.get("address") is not None:
            _rail_address(p, f"{key}.address", port["address"], self.addresses, f"{host} {dev}")
        sw = port.get("switch")
        if not isinstance(sw, str) or sw not in self.switches:
            p.add(f"{key}.switch", sw, "allowed: a host of group switches: " + _switch_names(self.switches))
            return
        sp = port.get("switch_port")
        if _switch_port(p, f"{key}.switch_port", sp, self.transport, sw):
            _claim(p, self.switch_ports, sw, sp, f"{host} {dev}")


def _entries(value):
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def port_speed_problems(fabric, hosts, switches):
    """(key, value, allowed) for every fabric port whose speed its switch's platform has nothing to render
    with: SONiC, no lossless headroom row for the speed and cable (module_utils/switch/buffers.py); EOS, no
    ``speed`` form in the family (module_utils/switch/profiles.py). NVUE carves the lossless buffers itself
    (``nv set qos roce``): no per-speed row to miss. The ports are the role's (fabric_ports)."""
    cabled = {h: {"rdma_ports": _entries(hv.get("rdma_ports"))} for h, hv in hosts.items() if isinstance(hv, dict)}
    for sw, sv in switches.items():
        if isinstance(sv, dict):
            cabled.setdefault(sw, {})["switch_uplinks"] = _entries(sv.get("switch_uplinks"))
    link_speed = (fabric if isinstance(fabric, dict) else {}).get("link_speed_gbps", DEFAULTS["link_speed_gbps"])
    out = []
    for sw, sv in sorted(switches.items(), key=lambda kv: str(kv[0])):
        sv = sv if isinstance(sv, dict) else {}
        platform = sv.get("switch_platform") or network_os.normalize(sv.get("ansible_network_os"))
        if platform not in ("sonic", "eos"):
            continue
        try:
            ports = fabric_ports(cabled, list(cabled), sw, sv.get("switch_fabric_link_speed_gbps", link_speed), _entries(sv.get("switch_fabric_extra_ports")))
        except (TypeError, ValueError):
            continue  # a speed that is no number: its own rule names it
        # a speed that is no link speed at all is its own key's problem (fabric.link_speed_gbps, ...)
        ports = [pt for pt in ports if pt["speed_gbps"] in LINK_SPEEDS_GBPS]
        if platform == "sonic":
            cable_key = "switch_fabric_cable_length" if "switch_fabric_cable_length" in sv else "switch_cable_length"
            lookup_key = "switch_fabric_sonic_pg_lookup" if "switch_fabric_sonic_pg_lookup" in sv else "switch_sonic_pg_lookup"
            sku_key = "switch_fabric_sonic_hwsku" if "switch_fabric_sonic_hwsku" in sv else "switch_sonic_hwsku"
            out += buffers.port_speed_problems(
                sw, ports, sv.get(cable_key, buffers.DEFAULT_CABLE), sv.get(lookup_key) or {}, cable_key, lookup_key, sv.get(sku_key) or None, sku_key
            )
        elif sv.get("switch_fabric_set_speed", True) not in (False, "false", "no", "off", 0, "0"):
            out += profiles.eos_port_speed_problems(sw, ports, sv.get("switch_eos_family"), skip=(link_speed,))
    return out


def _port_order(port):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", port["name"])]


def fabric_ports(hostvars, hosts, switch, link_speed_gbps=None, extra=None):
    """Ports of ``switch`` that carry the RDMA fabric, sorted by name.

    From every host's ``rdma_ports`` entry whose ``switch`` is this switch,
    from this switch's own ``switch_uplinks`` and from the other switches'
    uplinks that land on it (``peer``/``peer_port``), plus ``extra``.
    Returns [{"name", "peer", "speed_gbps"}]. The switch_fabric_ports filter (the role) and the
    validation (port_speed_problems) read the same ports.
    """
    ports = {}

    def add(name, peer, speed):
        if not name:
            return
        ports.setdefault(str(name), {"name": str(name), "peer": peer, "speed_gbps": int(speed) if speed else None})

    for h in hosts:
        hv = hostvars[h]
        for rp in hv.get("rdma_ports") or []:
            if rp.get("switch") == switch:
                add(rp.get("switch_port"), f"{h}:{rp.get('device')}", rp.get("speed_gbps", link_speed_gbps))
        for up in hv.get("switch_uplinks") or []:
            if h == switch:
                add(up.get("port"), f"{up.get('peer')}:{up.get('peer_port')}", up.get("speed_gbps", link_speed_gbps))
            elif up.get("peer") == switch:
                add(up.get("peer_port"), f"{h}:{up.get('port')}", up.get("speed_gbps", link_speed_gbps))
    for e in extra or []:
        add(e.get("name"), e.get("peer", ""), e.get("speed_gbps", link_speed_gbps))
    return sorted(ports.values(), key=_port_order)


def _rail_address(p, key, value, seen, who):
    """An IPv4 host address with its prefix length, not the network or
    broadcast address of its subnet, used once in the fabric."""
    allowed = "allowed: an IPv4 host address with prefix length, such as 192.168.100.11/24"
    if not isinstance(value, str) or "/" not in value:
        p.add(key, value, allowed)
        return
    try:
        iface = ipaddress.ip_interface(value)
    except ValueError:
        p.add(key, value, allowed)
        return
    if iface.version != 4:
        p.add(key, value, allowed + "; rail addresses are IPv4: the RoCEv2 GID NCCL and ib_write_bw use is the IPv4-mapped one")
        return
    net = iface.network
    edges = (net.network_address, net.broadcast_address)
    if net.prefixlen == 32 or (net.prefixlen <= 30 and iface.ip in edges):
        p.add(
            key,
            value,
            allowed + f"; {iface.ip} is the network or broadcast address of {net}"
            if net.prefixlen != 32
            else allowed + "; a /32 has no neighbours on the rail",
        )
        return
    if iface.ip in seen:
        p.add(key, value, f"allowed: an address used once; {iface.ip} is already {seen[iface.ip]}'s")
        return
    seen[iface.ip] = who


def _claim(p, seen, switch, port, who):
    key = (switch, str(port))
    if key in seen:
        p.add(f"{who}: switch_port", f"{switch} {port}", f"allowed: a switch port cabled once; {switch} {port} is already cabled to {seen[key]}")
    else:
        seen[key] = who
