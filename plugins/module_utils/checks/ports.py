"""The node side of the ``ports`` check (module rdma_port_check).

Reads each cabled port with ``ibv_devinfo -v -d <device> -i <port>`` and its
netdev's MTU, carrier (sysfs) and IPv4 addresses (``ip -j -4 addr show``),
through a ``Runner``; the findings are ``port_findings`` over what was
read, computed here once (the report takes them as they are).
"""
import json

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibtools import parse_ibv_devinfo
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding

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
    out.update(present=True, state=STATES.get(p.get("state"), p.get("state")),
               phys_state=PHYS.get(p.get("phys_state"), p.get("phys_state")),
               speed_gbps=p.get("rate_gbps"), width=p.get("active_width_lanes"),
               active_mtu=p.get("active_mtu"), link_layer=p.get("link_layer"),
               gid=gid_info(p.get("gids"), gid_index))
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


def port_findings(node, ports, expected, fabric):
    """Port check of one node. ``ports``: what rdma_port_check returned per device."""
    out = []
    speed = fabric.get("link_speed_gbps")
    width = fabric.get("link_width")
    mtu = (fabric.get("mtu") or {}).get("host")
    roce = fabric.get("transport", "roce") == "roce"
    seen = {p.get("device"): p for p in ports or []}
    for exp in expected or []:
        dev = exp["device"]
        where = {"node": node, "device": dev, "switch": exp.get("switch"), "switch_port": exp.get("switch_port"),
                 "check": "ports"}
        p = seen.get(dev)
        if p is None or not p.get("present", True):
            out.append(finding("PORT_MISSING", f"{node} {dev}: device not found ({(p or {}).get('error') or 'absent'})",
                               **where))
            continue
        state, phys = p.get("state"), p.get("phys_state")
        if state != "ACTIVE" or (phys and phys != "LinkUp"):
            out.append(finding("PORT_DOWN", f"{node} {dev} port {p.get('port', 1)}: state {state}, physical state "
                               f"{phys} (cabled to {exp.get('switch')} {exp.get('switch_port')})", **where))
            continue
        if speed and p.get("speed_gbps") is not None and float(p["speed_gbps"]) < float(speed):
            out.append(finding("PORT_SPEED", f"{node} {dev}: link at {p['speed_gbps']:g} Gb/s, expected {speed} Gb/s",
                               actual=p["speed_gbps"], expected=speed, **where))
        if width and p.get("width") is not None and int(p["width"]) != int(width):
            out.append(finding("PORT_WIDTH", f"{node} {dev}: link width {p['width']}X, expected {width}X",
                               actual=p["width"], expected=width, **where))
        if roce and mtu and p.get("mtu") is not None and int(p["mtu"]) != int(mtu):
            out.append(finding("MTU_MISMATCH", f"{node} {dev} ({p.get('netdev')}): MTU {p['mtu']}, intent "
                               f"fabric.mtu.host {mtu}", actual=p["mtu"], expected=mtu, **where))
        if roce:
            addr = (exp.get("address") or "").split("/")[0]
            ipv4 = p.get("ipv4") or []
            gid = p.get("gid")
            if p.get("gid_table") and (gid is None or gid.get("type") != "RoCE v2" or not gid.get("ipv4")):
                index = (gid or {}).get("index", p.get("gid_index"))
                what = ("no GID index to check: none holds a RoCE v2 IPv4 GID on this node (NCCL_IB_GID_INDEX "
                        "could not be discovered)" if index is None else
                        f"GID index {index} is {'empty' if gid is None else gid.get('type') + ' ' + str(gid.get('gid'))}, "
                        "not a RoCE v2 IPv4 GID")
                out.append(finding("GID_MISSING", f"{node} {dev} ({p.get('netdev')}): {what}"
                                   + (f"; rail address {addr} is not on the netdev" if addr and addr not in ipv4 else ""),
                                   **where))
            elif not ipv4 or (addr and addr not in ipv4):
                out.append(finding("GID_MISSING", f"{node} {dev} ({p.get('netdev')}): no RoCE v2 IPv4 GID"
                                   + (f"; rail address {addr} is not on the netdev" if addr else ""), **where))
    return out


def port_check(results, hosts):
    """The ``ports`` check of the report from what rdma_port_check returned on each node.

    ``results``: {node: the module's result}; the findings are the node's own
    (rdma_port_check computes them with ``port_findings``), never computed again.
    ``hosts``: {node: rdma_ports}, one case per cabled port. A skipped result
    gives no cases; a result without ``findings`` raises KeyError naming the node.
    Returns ``(findings, check or None)``.
    """
    findings, cases = [], []
    for node, result in results.items():
        if not result or result.get("skipped"):
            continue
        if "findings" not in result:
            raise KeyError(f"{node}: the rdma_port_check result has no findings ({result.get('msg') or 'not run'})")
        mine_all = list(result["findings"])
        findings += mine_all
        for p in hosts.get(node) or []:
            mine = [x for x in mine_all if x["device"] == p["device"]]
            cases.append({"name": f"{node} {p['device']}", "ok": not mine, "code": mine[0]["code"] if mine else None,
                          "message": "; ".join(x["message"] for x in mine) or None, "findings": mine})
    if not cases:
        return findings, None
    return findings, {"passed": all(c["ok"] for c in cases), "cases": cases,
                      "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} ports OK"}
