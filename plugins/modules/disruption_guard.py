#!/usr/bin/python
"""Refuse a disruptive host action that would cut the management connection or an RDMA job."""

DOCUMENTATION = r"""
---
module: disruption_guard
short_description: Refuse a driver restart, firmware reset or netdev change that cuts Ansible's connection or a running job
description:
  - The check every disruptive action of the host stack makes first (the OFED driver restart, C(mlxfwreset),
    a netdev change). Changes nothing.
  - B(Management path.) Finds the interfaces of the connection Ansible uses (the one holding O(local_address),
    from C(ip -json addr show); the route to O(peer_address), from C(ip -json route get)), follows each through
    its lower devices (C(/sys/class/net/<if>/lower_*), a bond's C(bonding/slaves)) to the PCI functions under it
    (C(/sys/class/net/<if>/device), a VF's C(physfn)), and fails when the action takes one of them down -
    C(driver_restart) every function bound to an mlx driver (or of vendor 0x15b3); C(firmware_reset) every
    function of the same card as a target (mlxfwreset resets all PFs of the device); C(netdev_change) a target
    netdev that is one of the connection's devices or shares its PCI function. This refusal cannot be forced.
  - B(In use.) With O(check_in_use), fails when a process holds an RDMA device the action takes away open
    (C(/dev/infiniband/uverbsN) among its C(/proc/<pid>/fd); C(/sys/class/infiniband_verbs/uverbsN/ibdev) names
    the device), naming each process, unless O(force).
version_added: 0.3.0
author: linerate developers (@linerate)
options:
  action:
    description: What is about to happen.
    type: str
    required: true
    choices: [driver_restart, firmware_reset, netdev_change, reboot]
  targets:
    description:
      - C(firmware_reset) - the PCI addresses to reset; C(netdev_change) - the netdevs to change;
        C(driver_restart), C(reboot) - not used (every RDMA device goes down; a reboot is expected to cut the
        connection, so only the in-use check applies).
    type: list
    elements: str
    default: []
  local_address:
    description:
      - The node's address the connection arrives at (the third field of C(SSH_CONNECTION), else C(ansible_host);
        a name is resolved). Empty with O(peer_address) empty - a local or container connection - checks no path.
    type: str
    default: ""
  peer_address:
    description: The controller's address as the node sees it (the first field of C(SSH_CONNECTION)).
    type: str
    default: ""
  check_in_use:
    description: Refuse while a process holds an RDMA device the action takes away.
    type: bool
    default: true
  force:
    description: Go on although RDMA devices are in use (the management refusal stays).
    type: bool
    default: false
  sysfs:
    description: Where sysfs is mounted.
    type: path
    default: /sys
  procfs:
    description: Where procfs is mounted.
    type: path
    default: /proc
attributes:
  check_mode:
    support: full
    description: Reads only, in both modes.
  diff_mode:
    support: none
    description: It reads and decides; it changes nothing, so there is no diff.
"""

EXAMPLES = r"""
- name: Refuse a firmware reset of the card Ansible connects through
  linerate.fabric.disruption_guard:
    action: firmware_reset
    targets: ["0000:41:00.0"]
    # SSH_CONNECTION read with become: false: "<controller> <port> <node address> 22"
    local_address: "{{ linerate_ssh_connection.stdout.split()[2] }}"
    peer_address: "{{ linerate_ssh_connection.stdout.split()[0] }}"
"""

RETURN = r"""
management:
  description: The connection's interfaces, every netdev under them, their PCI functions and the chains read.
  returned: always
  type: dict
  sample: {interfaces: [bond0.100], netdevs: [bond0.100, bond0, enp65s0f0np0],
           functions: ["0000:41:00.0"], paths: ["bond0.100 -> bond0 -> enp65s0f0np0 -> 0000:41:00.0"]}
in_use:
  description: The processes holding an RDMA device the action takes away.
  returned: always
  type: list
  elements: dict
  sample: [{pid: 4242, comm: ib_write_bw, device: mlx5_0}]
"""

import socket

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host import mgmtpath
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module


def resolve(address):
    """An address as given, or a name's first IPv4/IPv6 address."""
    if not address:
        return ""
    try:
        return socket.getaddrinfo(address, None)[0][4][0]
    except (socket.gaierror, UnicodeError) as e:
        raise ToolFailure(f"local_address: {address!r} does not resolve ({e}); the connection's interface cannot be found") from None


def guard(run, p):
    targets = p["targets"]
    if p["action"] == "firmware_reset":
        bad = [t for t in targets if not mgmtpath.BDF.fullmatch(mgmtpath.full_bdf(t))]
        if bad or not targets:
            raise ToolFailure(f"targets: {bad or targets!r} is not allowed (allowed: one or more PCI addresses such as 0000:41:00.0 for action firmware_reset)")
    if p["action"] == "netdev_change" and not targets:
        raise ToolFailure("targets: [] is not allowed (allowed: the netdevs to change, for action netdev_change)")
    mgmt, refused = mgmtpath.refusal(run, p["sysfs"], p["action"], targets, resolve(p["local_address"]), p["peer_address"])
    if refused:
        raise ToolFailure(refused, management=mgmt)
    held = []
    if p["check_in_use"]:
        held = mgmtpath.in_use(p["procfs"], p["sysfs"], mgmtpath.devices_of(p["sysfs"], p["action"], targets))
        if held and not p["force"]:
            names = ", ".join(f"{h['comm']} (pid {h['pid']}) on {h['device']}" for h in held)
            raise ToolFailure(
                f"refusing to {p['action'].replace('_', ' ')}: RDMA devices are in use by {names}; "
                "drain the node first (host_disruption_drain_command) or force it "
                "(host_disruption_force: true)",
                management=mgmt,
                in_use=held,
            )
    return {"changed": False, "management": mgmt, "in_use": held}


def main():
    host_module(
        {
            "action": {"type": "str", "required": True, "choices": list(mgmtpath.ACTIONS)},
            "targets": {"type": "list", "elements": "str", "default": []},
            "local_address": {"type": "str", "default": ""},
            "peer_address": {"type": "str", "default": ""},
            "check_in_use": {"type": "bool", "default": True},
            "force": {"type": "bool", "default": False},
            "sysfs": {"type": "path", "default": "/sys"},
            "procfs": {"type": "path", "default": "/proc"},
        },
        lambda module, run: guard(run, module.params),
    )


if __name__ == "__main__":
    main()
