#!/usr/bin/python
"""Module: check every cabled RDMA port of a host (state, speed, width, MTU, GID)."""

DOCUMENTATION = r"""
---
module: rdma_port_check
short_description: Check that every cabled RDMA port is ACTIVE / LinkUp at the expected speed and width
description:
  - Runs C(ibv_devinfo -v -d <device> -i <port>) for each port in I(ports) and reads the
    netdev's MTU and IPv4 addresses from the kernel.
  - Compares with the fabric intent and returns one finding per problem, each naming the
    node's device and the switch port it is cabled to (stable codes PORT_MISSING,
    PORT_DOWN, PORT_SPEED, PORT_WIDTH, MTU_MISMATCH, GID_MISSING).
  - Read-only; never reports C(changed). Runs the same in check mode.
options:
  ports:
    description: The host's cabled RDMA ports (the inventory's C(rdma_ports)).
    type: list
    elements: dict
    required: true
  fabric:
    description: The effective fabric intent (C(fabric_effective)).
    type: dict
    required: true
  gid_index:
    description: The GID index RDMA traffic uses; must be a RoCE v2 IPv4 GID (RoCE only).
    type: int
    default: 3
  node:
    description: The name findings use for this host (the inventory name).
    type: str
    required: true
  fail_on_findings:
    description: Fail the task when a port has a problem.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reads only; the same result in check mode.
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Check the RDMA ports
  linerate.fabric.rdma_port_check:
    ports: "{{ rdma_ports }}"
    fabric: "{{ fabric_effective }}"
    node: "{{ inventory_hostname }}"
"""

RETURN = r"""
ports:
  description: What each port reports.
  returned: always
  type: list
  elements: dict
  sample: [{device: mlx5_0, netdev: enp65s0f0np0, present: true, state: ACTIVE, phys_state: LinkUp,
            speed_gbps: 400.0, width: 4, mtu: 4200, active_mtu: 4096, ipv4: [192.168.100.11],
            gid: {index: 3, type: RoCE v2, ipv4: 192.168.100.11}}]
findings:
  description: Problems found, each with code, severity, layer, node, device, switch, switch_port, message.
  returned: always
  type: list
  elements: dict
passed:
  description: True when no port has a problem.
  returned: always
  type: bool
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.ibtools import parse_ibv_devinfo
from ansible_collections.linerate.fabric.plugins.module_utils.verify import port_findings

STATES = {"PORT_ACTIVE": "ACTIVE", "PORT_DOWN": "DOWN", "PORT_INIT": "INIT", "PORT_ARMED": "ARMED"}
PHYS = {"LINK_UP": "LinkUp", "DISABLED": "Disabled", "POLLING": "Polling", "SLEEP": "Sleep"}


def read_sys(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def gid_info(gids, index):
    for g in gids or []:
        if g.get("index") == index:
            text = g.get("gid", "")
            ipv4 = text.split("ffff:")[-1] if text.startswith("::ffff:") and "." in text else None
            return {"index": index, "type": g.get("type"), "gid": text, "ipv4": ipv4}
    return None


def check_port(module, devinfo, ip, port, gid_index):
    dev, netdev, ib_port = port["device"], port.get("netdev"), int(port.get("ib_port", 1))
    out = {"device": dev, "netdev": netdev, "port": ib_port, "present": False}
    rc, stdout, stderr = module.run_command([devinfo, "-v", "-d", dev, "-i", str(ib_port)],
                                            environ_update={"LC_ALL": "C"})
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
        mtu = read_sys(f"/sys/class/net/{netdev}/mtu")
        out["mtu"] = int(mtu) if mtu and mtu.isdigit() else None
        out["carrier"] = read_sys(f"/sys/class/net/{netdev}/carrier") == "1"
        rc, stdout, _err = module.run_command([ip, "-j", "-4", "addr", "show", "dev", netdev],
                                              environ_update={"LC_ALL": "C"})
        try:
            out["ipv4"] = [a["local"] for e in json.loads(stdout or "[]") for a in e.get("addr_info", [])]
        except ValueError:
            out["ipv4"] = []
    out["gid_table"] = bool(p.get("gids"))
    out["gid_index"] = gid_index
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(ports=dict(type="list", elements="dict", required=True),
                           fabric=dict(type="dict", required=True),
                           gid_index=dict(type="int", default=3),
                           node=dict(type="str", required=True),
                           fail_on_findings=dict(type="bool", default=False)),
        supports_check_mode=True)
    devinfo = module.get_bin_path("ibv_devinfo", required=True)
    ip = module.get_bin_path("ip", required=True, opt_dirs=["/usr/sbin", "/sbin"])
    ports = [check_port(module, devinfo, ip, p, module.params["gid_index"]) for p in module.params["ports"]]
    findings = port_findings(module.params["node"], ports, module.params["ports"], module.params["fabric"])
    result = dict(changed=False, ports=ports, findings=findings, passed=not findings)
    if findings and module.params["fail_on_findings"]:
        module.fail_json(msg="; ".join(f["message"] for f in findings), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
