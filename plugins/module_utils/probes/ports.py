"""The probe of the ``ports`` check (module rdma_port_check), on the node.

Reads each cabled port with ``ibv_devinfo -v -d <device> -i <port>`` and its
netdev's MTU, carrier (sysfs) and IPv4 addresses (``ip -j -4 addr show``),
through a ``Runner``; the findings are ``checks/ports.py:port_findings`` over
what was read, computed here once (the report takes them as they are).
"""

import json

from ansible_collections.linerate.fabric.plugins.module_utils.checks.ports import port_findings
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibtools import parse_ibv_devinfo

STATES = {"PORT_ACTIVE": "ACTIVE", "PORT_DOWN": "DOWN", "PORT_INIT": "INIT", "PORT_ARMED": "ARMED"}
PHYS = {"LINK_UP": "LinkUp", "DISABLED": "Disabled", "POLLING": "Polling", "SLEEP": "Sleep"}


def read_sys(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def gid_info(gids, index):
    """The GID at ``index`` of a port's table: {index, type, gid, ipv4 (of an IPv4-mapped GID)}, None if absent."""
    for g in gids or []:
        if g.get("index") == index:
            text = g.get("gid", "")
            ipv4 = text.split("ffff:")[-1] if text.startswith("::ffff:") and "." in text else None
            return {"index": index, "type": g.get("type"), "gid": text, "ipv4": ipv4}
    return None


def check_port(run, port, gid_index, read=read_sys):
    """What one port reports; a device or port ibv_devinfo cannot show gives ``present: false`` and ``error``."""
    dev, netdev, ib_port = port["device"], port.get("netdev"), int(port.get("ib_port", 1))
    out = {"device": dev, "netdev": netdev, "port": ib_port, "present": False}
    rc, stdout, stderr = run(["ibv_devinfo", "-v", "-d", dev, "-i", str(ib_port)])
    try:
        if rc != 0:
            raise ParseError("ibv_devinfo", (stderr or stdout).strip() or f"exit status {rc}")
        data = parse_ibv_devinfo(stdout)
        hca = next(d for d in data["devices"] if d.get("hca_id") == dev)
        p = next(x for x in hca["ports"] if x.get("port") == ib_port)
    except (ParseError, StopIteration) as e:
        out["error"] = str(e) or f"{dev} port {ib_port} not listed"
        return out
    out.update(
        present=True,
        state=STATES.get(p.get("state"), p.get("state")),
        phys_state=PHYS.get(p.get("phys_state"), p.get("phys_state")),
        speed_gbps=p.get("rate_gbps"),
        width=p.get("active_width_lanes"),
        active_mtu=p.get("active_mtu"),
        link_layer=p.get("link_layer"),
        gid=gid_info(p.get("gids"), gid_index),
    )
    if netdev:
        mtu = read(f"/sys/class/net/{netdev}/mtu")
        out["mtu"] = int(mtu) if mtu and mtu.isdigit() else None
        out["carrier"] = read(f"/sys/class/net/{netdev}/carrier") == "1"
        rc, stdout, _err = run(["ip", "-j", "-4", "addr", "show", "dev", netdev])
        try:
            out["ipv4"] = [a["local"] for e in json.loads(stdout or "[]") for a in e.get("addr_info", [])]
        except ValueError:
            out["ipv4"] = []
    out["gid_table"] = bool(p.get("gids"))
    out["gid_index"] = gid_index
    return out


def check_ports(run, node, ports, fabric, gid_index, read=read_sys):
    """rdma_port_check's result: {changed, ports, findings, passed}."""
    seen = [check_port(run, p, gid_index, read) for p in ports]
    findings = port_findings(node, seen, ports, fabric)
    return {"changed": False, "ports": seen, "findings": findings, "passed": not findings}
