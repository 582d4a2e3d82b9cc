"""The ibsim net file of the lab's InfiniBand fabric: the model (from an Ansible inventory), the faults that
change its physics (unlink, relink, swap, degrade), and the ibnetdiscover-compatible node records ibsim reads."""

import hashlib
import json
import os
import subprocess
import sys

DEFAULT_SWITCH_PORTS = 36
# ibsim enable masks: PortInfo LinkWidthEnabled / LinkSpeedEnabled bits
WIDTH_MASK = {1: 1, 4: 2, 8: 4, 12: 8}
SPEED_MASK = {"SDR": 1, "DDR": 2, "QDR": 4}
LANE_OF = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0}


def _guid_int(g):
    return int(str(g), 16)


def _fmt_guid(i):
    return "0x%016x" % i


def default_switch_guid(name):
    """A stable switch GUID from its name (Mellanox OUI prefix e41d2d)."""
    h = int(hashlib.sha256(name.encode()).hexdigest()[:10], 16)
    return _fmt_guid((0xE41D2D << 40) | h)


def default_port_guid(host, device):
    h = int(hashlib.sha256(f"{host}/{device}".encode()).hexdigest()[:10], 16) & ~1
    return _fmt_guid((0xA088C2 << 40) | h | 1)


def speed_name(speed_gbps, width):
    """Nominal link speed (Gb/s) and width -> the ibsim lane speed it can show."""
    lane = float(speed_gbps) / max(int(width), 1)
    if lane >= 10:
        return "QDR"
    if lane >= 5:
        return "DDR"
    return "SDR"


def model_from_inventory(inv):
    """`ansible-inventory --list` JSON -> a fabric model (transport infiniband)."""
    hostvars = inv.get("_meta", {}).get("hostvars", {})
    switches_group = set(inv.get("switches", {}).get("hosts", [])) | set(inv.get("ib_switches", {}).get("hosts", []))
    model = {"version": 1, "transport": "infiniband", "nodes": {}, "switches": {}, "faults": []}
    fabric = {}
    for hv in hostvars.values():
        if "fabric" in hv:
            fabric = hv["fabric"]
            break
    speed = fabric.get("link_speed_gbps", 40)
    width = fabric.get("link_width", 4)
    for name in sorted(switches_group):
        hv = hostvars.get(name, {})
        model["switches"][name] = {
            "guid": hv.get("ib_switch_guid") or default_switch_guid(name),
            "nports": int(hv.get("ib_switch_ports", DEFAULT_SWITCH_PORTS)),
            "ports": {},
        }
    for name in sorted(hostvars):
        if name in switches_group:
            continue
        ports = hostvars[name].get("rdma_ports") or []
        if not ports:
            continue
        nics = []
        for p in ports:
            pguid = p.get("guid") or default_port_guid(name, p["device"])
            nics.append(
                {
                    "device": p["device"],
                    "netdev": p.get("netdev"),
                    "port": 1,
                    "node_guid": _fmt_guid(_guid_int(pguid) - 1),
                    "port_guid": _fmt_guid(_guid_int(pguid)),
                    "link_layer": "InfiniBand",
                    "speed_gbps": speed,
                    "width": width,
                    "cable": "up",
                    "switch": p["switch"],
                    "switch_port": str(p["switch_port"]),
                }
            )
            sw = model["switches"].setdefault(p["switch"], {"guid": default_switch_guid(p["switch"]), "nports": DEFAULT_SWITCH_PORTS, "ports": {}})
            sw["ports"][str(p["switch_port"])] = {"peer": f"{name}:{p['device']}", "speed_gbps": speed, "up": True}
        model["nodes"][name] = {"nics": nics}
    for name in sorted(switches_group):
        for up in hostvars.get(name, {}).get("switch_uplinks") or []:
            for a, ap, b, bp in ((name, up["port"], up["peer"], up["peer_port"]), (up["peer"], up["peer_port"], name, up["port"])):
                sw = model["switches"].setdefault(a, {"guid": default_switch_guid(a), "nports": DEFAULT_SWITCH_PORTS, "ports": {}})
                sw["ports"][str(ap)] = {"peer": f"{b}:{bp}", "up": True, "speed_gbps": up.get("speed_gbps", speed), "width": up.get("width", width)}
    return model


def load_inventory(path):
    exe = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    exe = exe if os.path.exists(exe) else "ansible-inventory"
    out = subprocess.run([exe, "-i", path, "--list"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def ca_nodeid(host, device):
    """The simulated node id; ibsim also uses it as NodeDescription, which is
    what a real Linux host reports: "<hostname> <ibdev>"."""
    return f"{host} {device}"


def netfile_from_model(model):
    """The fabric model -> ibsim net file text (links as the model's physics say)."""
    links = {}  # (switch, port) -> (peer_nodeid, peer_port, width, speed)
    cas = []
    for host in sorted(model.get("nodes", {})):
        for nic in model["nodes"][host].get("nics", []):
            if nic.get("link_layer", "InfiniBand") != "InfiniBand":
                continue
            nid = ca_nodeid(host, nic["device"])
            up = nic.get("cable", "up") == "up"
            w = int(nic.get("width", 4))
            sp = speed_name(nic.get("speed_gbps", 40), w)
            peer = None
            if up and nic.get("switch"):
                peer = (nic["switch"], int(nic["switch_port"]))
                links[peer] = (nid, 1, w, sp)
            cas.append((nid, nic, peer, w, sp))
    lines = ["# linerate lab: ibsim net file generated from the fabric model", ""]
    for sw in sorted(model.get("switches", {})):
        s = model["switches"][sw]
        lines.append(f"switchguid={s.get('guid') or default_switch_guid(sw)}")
        lines.append(f'Switch\t{int(s.get("nports", DEFAULT_SWITCH_PORTS))} "{sw}"')
        pnums = {int(k) for k in s.get("ports", {})} | {k[1] for k in links if k[0] == sw}
        for pn in sorted(pnums):
            p = s.get("ports", {}).get(str(pn), {})
            if (sw, pn) in links:
                nid, rport, w, sp = links[(sw, pn)]
            else:
                peer = p.get("peer", "")
                if not p.get("up", True) or ":" not in peer:
                    continue
                pname, pport = peer.rsplit(":", 1)
                if pname not in model.get("switches", {}) or not pport.isdigit():
                    continue  # a CA peer that the node side does not cable (down)
                other = model["switches"][pname]["ports"].get(pport, {})
                if not other.get("up", True) or other.get("peer") != f"{sw}:{pn}":
                    continue
                w = int(min(p.get("width", 4), other.get("width", 4)))
                sp = speed_name(min(p.get("speed_gbps", 40), other.get("speed_gbps", 40)), w)
                nid, rport = pname, int(pport)
            lines.append(f'[{pn}]\t"{nid}"[{rport}]\tw={WIDTH_MASK.get(w, 2)} s={SPEED_MASK[sp]}')
        lines.append("")
    for nid, nic, peer, w, sp in cas:
        lines.append(f"caguid={nic['node_guid']}")
        lines.append(f'Ca\t1 "{nid}"')
        if peer:
            lines.append(f'[1]\t"{peer[0]}"[{peer[1]}]\tw={WIDTH_MASK.get(w, 2)} s={SPEED_MASK[sp]}')
        lines.append("")
    return "\n".join(lines)


def find_cable(model, switch, port):
    for host, node in model["nodes"].items():
        for nic in node.get("nics", []):
            if nic.get("switch") == switch and str(nic.get("switch_port")) == str(port):
                return nic
    return None


def apply_faults(model, faults):
    """The model's physics with the recorded faults applied (a copy)."""
    m = json.loads(json.dumps(model))
    for f in faults:
        kind = f["kind"]
        if kind == "unlink":
            nic = find_cable(m, f["switch"], f["port"])
            if nic:
                nic["cable"] = "down"
            sp = m["switches"].get(f["switch"], {}).get("ports", {}).get(str(f["port"]))
            if sp and not nic:
                sp["up"] = False
        elif kind == "relink":
            nic = find_cable(m, f["switch"], f["port"])
            if nic:
                nic["cable"] = "up"
            sp = m["switches"].get(f["switch"], {}).get("ports", {}).get(str(f["port"]))
            if sp:
                sp["up"] = True
        elif kind == "swap":
            a = find_cable(m, f["switch"], f["ports"][0])
            b = find_cable(m, f["switch"], f["ports"][1])
            if a:
                a["switch_port"] = str(f["ports"][1])
            if b:
                b["switch_port"] = str(f["ports"][0])
        elif kind == "degrade":
            nic = find_cable(m, f["switch"], f["port"])
            sp = m["switches"].get(f["switch"], {}).get("ports", {}).get(str(f["port"]))
            target = nic if nic is not None else sp
            if target is not None:
                w = int(f.get("width") or target.get("width", 4))
                lane = LANE_OF[f["speed"]] if f.get("speed") else float(target.get("speed_gbps", 40)) / int(target.get("width", 4))
                target["width"] = w
                target["speed_gbps"] = w * lane
                if nic is None and sp is not None:
                    peer_sw, peer_port = sp["peer"].rsplit(":", 1)
                    other = m["switches"].get(peer_sw, {}).get("ports", {}).get(peer_port)
                    if other is not None:
                        other["width"], other["speed_gbps"] = w, w * lane
        elif kind == "counters":
            pass  # PortCounters are not in the net file: set on the running ibsim (perf_set)
        else:
            raise ValueError(f"unknown fault {kind}")
    return m
