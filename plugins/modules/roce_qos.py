#!/usr/bin/python
"""RoCE QoS of one port: trust, PFC, DSCP map, ECN, RDMA-CM defaults, MTU."""

DOCUMENTATION = r"""
---
module: roce_qos
short_description: Configure lossless RoCE on one ConnectX port (mlnx_qos, ECN, RDMA-CM, MTU)
description:
  - Reads the port's QoS with C(mlnx_qos -i <netdev>), its ECN controls from
    C(/sys/class/net/<netdev>/ecn/roce_np|roce_rp/...), the RDMA-CM defaults with
    C(cma_roce_mode -d <dev> -p <port>) and C(cma_roce_tos -d <dev> -p <port>), and the MTU with
    C(ip -j link show dev <netdev>); compares each managed setting with the desired value and runs
    only the commands for what differs, in this order - C(mlnx_qos -i <netdev> --trust <t> --pfc <vector>),
    C(mlnx_qos -i <netdev> --dscp2prio set,<dscp>,<prio>) per differing DSCP, the ECN sysfs writes,
    C(cma_roce_mode ... -m 2), C(cma_roce_tos ... -t <tos>), C(ip link set dev <netdev> mtu <n>).
  - After applying it reads everything again and fails if a setting did not take.
  - Only options that are set are managed; the rest of the port's configuration is left alone
    (for example DSCP values not named in O(dscp2prio)).
  - These settings do not survive a reboot or driver restart by themselves; the C(roce_qos) role
    installs a systemd unit that re-applies them at boot.
  - With O(ports), the same settings are applied to every port of the list in one module execution, one
    port after the other, as a loop over them would do; a port that fails does not stop the others, and
    the module fails afterwards naming each failed port.
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - mlnx_qos, cma_roce_mode and cma_roce_tos (mlnx-tools, DOCA-OFED / MLNX_OFED) and ip (iproute2) on the target
options:
  netdev:
    description:
      - The port's network interface (for example C(enp65s0f0np0)).
      - Exactly one of O(netdev) and O(ports) is required.
    type: str
  device:
    description: The RDMA device of the port (for example C(mlx5_0)); required with O(roce_mode) or O(roce_tos).
    type: str
  port:
    description: The port number on O(device).
    type: int
    default: 1
  ports:
    description:
      - Several ports in one execution, instead of O(netdev), O(device) and O(port); every other option
        applies to each of them.
      - Every port is checked (O(ports[].device) with O(roce_mode) or O(roce_tos)) before any is read or changed.
    type: list
    elements: dict
    suboptions:
      netdev:
        description: The port's network interface.
        type: str
        required: true
      device:
        description: The RDMA device of the port; required with O(roce_mode) or O(roce_tos).
        type: str
      port:
        description: The port number on O(ports[].device).
        type: int
        default: 1
  trust:
    description: Priority trust mode.
    type: str
    choices: [dscp, pcp]
  pfc_priorities:
    description: Priorities with PFC enabled - exactly these (the no-drop priority); every other is disabled.
    type: list
    elements: int
  dscp2prio:
    description: DSCP to priority entries that must hold (only with trust C(dscp)); other DSCPs are left alone.
    type: dict
  ecn_priorities:
    description: Priorities whose ECN is managed (notification and/or reaction point, see O(ecn_points)).
    type: list
    elements: int
  ecn_points:
    description: Which ECN roles to manage - C(np) (notification point, sends CNPs) and C(rp) (reaction point, slows down).
    type: list
    elements: str
    choices: [np, rp]
    default: [np, rp]
  ecn_enabled:
    description: Enable (true) or disable ECN on O(ecn_priorities).
    type: bool
    default: true
  cnp_dscp:
    description: DSCP of the congestion notification packets this port sends.
    type: int
  cnp_priority:
    description: 802.1p priority of those CNPs.
    type: int
  roce_mode:
    description: Default RoCE mode of RDMA-CM connections on this port.
    type: str
    choices: [v1, v2]
  roce_tos:
    description: Default IP ToS of RDMA-CM connections on this port (DSCP << 2).
    type: int
  mtu:
    description: MTU of the netdev.
    type: int
  mtu_change:
    description:
      - Which MTU changes this run makes. C(any) - raise or lower to O(mtu). C(lower) - only lower it (a raise is
        left for later and returned in C(mtu_deferred)). C(raise) - only raise it.
      - The switch MTU has to be raised before the host MTU and lowered after it, or frames of the larger MTU are
        dropped by the switch meanwhile; C(site.yml) lowers in the host stage (before the switches) and raises
        after the switch stage.
    type: str
    choices: [any, lower, raise]
    default: any
  sysfs_net:
    description: Where the netdevs' sysfs directories are (the ECN controls are C(<sysfs_net>/<netdev>/ecn/...)).
    type: path
    default: /sys/class/net
  state:
    description:
      - V(present) - read the port, change what differs.
      - V(rendered) - only what the port's boot unit runs for these settings (RV(boot), RV(boot_commands),
        RV(boot_tmpfiles)), computed from the options alone, as for a port that has none of them (netcommon's
        C(rendered)); nothing is read or run, no OFED tool is needed (C(playbooks/render.yml)).
    type: str
    choices: [present, rendered]
    default: present
attributes:
  check_mode:
    support: full
    description: Only reads; C(commands) lists what would run, C(after) what would result.
  diff_mode:
    support: full
    description: One line per managed setting, before and after; with O(ports), one diff per port.
notes:
  - Needs C(mlnx_qos), C(cma_roce_mode) and C(cma_roce_tos) (mlnx-tools, part of MLNX_OFED / DOCA-OFED)
    and the mlx5 ECN sysfs controls; runs as root.
"""

EXAMPLES = r"""
- name: What the boot unit of a rail would run, without reading the port (an offline preview)
  linerate.fabric.roce_qos:
    state: rendered
    ports: [{netdev: enp65s0f0np0, device: mlx5_0}]
    trust: dscp
    pfc_priorities: [3]
    dscp2prio: {26: 3, 48: 6}
    roce_mode: v2
    roce_tos: 104
    mtu: 4200
  register: rail_boot

- name: Lossless RoCE on priority 3, DSCP 26, ECN, RoCE v2, MTU 4200
  linerate.fabric.roce_qos:
    netdev: enp65s0f0np0
    device: mlx5_0
    trust: dscp
    pfc_priorities: [3]
    dscp2prio: {26: 3, 48: 6}
    ecn_priorities: [3]
    cnp_dscp: 48
    cnp_priority: 6
    roce_mode: v2
    roce_tos: 104
    mtu: 4200

- name: The same on both rails in one call
  linerate.fabric.roce_qos:
    ports:
      - {netdev: enp65s0f0np0, device: mlx5_0}
      - {netdev: enp193s0f0np0, device: mlx5_1}
    trust: dscp
    pfc_priorities: [3]
    roce_mode: v2
    mtu: 4200
"""

RETURN = r"""
before:
  description: Each managed setting as read before the run.
  returned: without O(ports)
  type: dict
  sample: {trust: pcp, pfc: [0, 0, 0, 0, 0, 0, 0, 0], dscp2prio: {"26": 3}, ecn: {np: {"3": 0}, rp: {"3": 0}},
           roce_mode: v1, roce_tos: 0, mtu: 1500}
after:
  description: Each managed setting as read after the run (in check mode, as it would be).
  returned: without O(ports)
  type: dict
commands:
  description:
    - The changing commands run (in check mode, that would run); sysfs writes appear as C([write, path, value]).
    - With O(ports), every port's, in order.
  returned: always
  type: list
  elements: list
mtu_deferred:
  description: The MTU change O(mtu_change) left for later, C({from, to}); null when none.
  returned: without O(ports)
  type: dict
  sample: {from: 1500, to: 4200}
boot:
  description:
    - Every step that sets the port from its defaults, in the order above, whatever the port holds now - what the
      port's boot unit runs after a reboot or a driver restart (role C(roce_qos) writes it to a per-rail script).
      Commands as argv lists; sysfs writes as C([write, path, value]). The MTU is always set there.
  returned: without O(ports)
  type: list
  elements: list
  sample: [[mlnx_qos, -i, enp65s0f0np0, --trust, dscp, --pfc, "0,0,0,1,0,0,0,0"], [ip, link, set, dev, enp65s0f0np0, mtu, "4200"]]
boot_commands:
  description:
    - The command steps of RV(boot) as the port's boot script runs them, one C(sh) line each, every argument
      shell-quoted - rendered here, once; role C(roce_qos) writes them into the rail's script as they are.
  returned: without O(ports)
  type: list
  elements: str
  sample: ["mlnx_qos -i enp65s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0", "ip link set dev enp65s0f0np0 mtu 4200"]
boot_tmpfiles:
  description:
    - The sysfs writes of RV(boot) as tmpfiles.d C(w) lines (C(w <path> - - - - <value>)); role C(roce_qos) writes
      them into the rail's ECN file, which the boot script applies with C(systemd-tmpfiles --create). Empty without
      ECN settings.
  returned: without O(ports)
  type: list
  elements: str
  sample: ["w /sys/class/net/enp65s0f0np0/ecn/roce_np/enable/3 - - - - 1"]
netdev:
  description: The netdev.
  returned: without O(ports)
  type: str
device:
  description: The RDMA device.
  returned: without O(ports)
  type: str
ports:
  description:
    - With O(ports), one result per port, in the order given, with the fields a result without O(ports) has.
      A port that failed has C(failed) and C(msg) (and what the failure read) instead.
  returned: with O(ports)
  type: list
  elements: dict
  contains:
    netdev:
      description: The netdev.
      type: str
      returned: always
    device:
      description: The RDMA device.
      type: str
      returned: always
    port:
      description: The port number on the device.
      type: int
      returned: always
    changed:
      description: Whether the port was (or in check mode would be) changed.
      type: bool
      returned: success
    before:
      description: Each managed setting as read before the run.
      type: dict
      returned: success
    after:
      description: Each managed setting as read after the run (in check mode, as it would be).
      type: dict
      returned: success
    commands:
      description: The changing commands of this port.
      type: list
      elements: list
      returned: success
    mtu_deferred:
      description: The MTU change O(mtu_change) left for later, C({from, to}); null when none.
      type: dict
      returned: success
    boot:
      description: What the port's boot unit runs (see C(boot) above).
      type: list
      elements: list
      returned: success
    boot_commands:
      description: The command steps of the boot plan as C(sh) lines (see C(boot_commands) above).
      type: list
      elements: str
      returned: success
    boot_tmpfiles:
      description: The sysfs writes of the boot plan as tmpfiles.d lines (see C(boot_tmpfiles) above).
      type: list
      elements: str
      returned: success
"""

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure, duplicate_port, each_port
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from ansible_collections.linerate.fabric.plugins.module_utils.host.roce import Port, Sysfs, boot_result, configure, desired

RANGES = (("cnp_dscp", 0, 63), ("cnp_priority", 0, 7), ("roce_tos", 0, 255), ("mtu", 68, 9216))


def check_values(p):
    """The numbers and priorities the argument spec cannot bound; ToolFailure naming the first out of range."""
    for key, lo, hi in RANGES:
        if p[key] is not None and not lo <= p[key] <= hi:
            raise ToolFailure(f"{key}: {p[key]} is not allowed (allowed: {lo}..{hi})")
    for key in ("pfc_priorities", "ecn_priorities"):
        bad = [x for x in p[key] or [] if not 0 <= x <= 7]
        if bad:
            raise ToolFailure(f"{key}: {bad} is not allowed (allowed: priorities 0..7)")


def _per_port(i, e):
    """A port's ToolFailure from the shared settings, named by its place when it is the port's own key."""
    return ToolFailure(f"ports[{i}].{e.msg}" if e.msg.startswith("device:") else e.msg)


def rendered(p):
    """state=rendered: the boot fields of each port from the options alone; nothing is read or run."""
    ports = p["ports"] if p["ports"] is not None else [{"netdev": p["netdev"], "device": p["device"], "port": p["port"]}]
    error = duplicate_port(ports, "netdev")
    if error:
        raise ToolFailure(error)
    out = []
    for i, port in enumerate(ports):
        try:
            out.append(dict(port, **boot_result(dict(p, **port), port["netdev"], port["device"], port["port"], p["sysfs_net"])))
        except ToolFailure as e:
            raise _per_port(i, e) from None
    if p["ports"] is None:
        return dict(out[0], changed=False)
    return {"changed": False, "ports": out}


def compute(module, run):
    p = module.params
    check_values(p)
    if p["state"] == "rendered":
        return rendered(p)
    sysfs = Sysfs(p["sysfs_net"])
    if p["ports"] is None:
        return configure(Port(run, p["netdev"], p["device"], p["port"], sysfs), p, module.check_mode)
    # Every port is checked before any is touched.
    error = duplicate_port(p["ports"], "netdev")
    if error:
        raise ToolFailure(error)
    for i, port in enumerate(p["ports"]):
        try:
            desired(dict(p, **port))
        except ToolFailure as e:
            raise _per_port(i, e) from None

    def apply(port):
        one = Port(run, port["netdev"], port["device"], port["port"], sysfs)
        try:
            return configure(one, dict(p, **port), module.check_mode)
        except ToolFailure as e:
            # what already ran on this port before it failed
            e.kw.setdefault("commands", one.commands)
            raise

    return each_port(p["ports"], apply, lambda port: {"netdev": port["netdev"], "device": port["device"], "port": port["port"]}, lambda port: port["netdev"])


def main():
    host_module(
        {
            "netdev": {"type": "str"},
            "device": {"type": "str"},
            "port": {"type": "int", "default": 1},
            "ports": {
                "type": "list",
                "elements": "dict",
                "options": {"netdev": {"type": "str", "required": True}, "device": {"type": "str"}, "port": {"type": "int", "default": 1}},
            },
            "trust": {"type": "str", "choices": ["dscp", "pcp"]},
            "pfc_priorities": {"type": "list", "elements": "int"},
            "dscp2prio": {"type": "dict"},
            "ecn_priorities": {"type": "list", "elements": "int"},
            "ecn_points": {"type": "list", "elements": "str", "choices": ["np", "rp"], "default": ["np", "rp"]},
            "ecn_enabled": {"type": "bool", "default": True},
            "cnp_dscp": {"type": "int"},
            "cnp_priority": {"type": "int"},
            "roce_mode": {"type": "str", "choices": ["v1", "v2"]},
            "roce_tos": {"type": "int"},
            "mtu": {"type": "int"},
            "mtu_change": {"type": "str", "choices": ["any", "lower", "raise"], "default": "any"},
            "sysfs_net": {"type": "path", "default": "/sys/class/net"},
            "state": {"type": "str", "choices": ["present", "rendered"], "default": "present"},
        },
        compute,
        mutually_exclusive=[["netdev", "ports"], ["device", "ports"], ["port", "ports"]],
        required_one_of=[["netdev", "ports"]],
    )


if __name__ == "__main__":
    main()
