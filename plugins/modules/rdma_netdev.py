#!/usr/bin/python
"""Bring an RDMA port's netdev up with its rail address."""

DOCUMENTATION = r"""
---
module: rdma_netdev
short_description: Bring an RDMA port's netdev up with its rail address
description:
  - Reads the interface with C(ip -json addr show dev NAME), and sets it administratively up and
    adds the rail address when they differ. Only the delta is applied; C(changed) comes from it.
  - The RoCEv2 IPv4 GID that NCCL and perftest use exists only once the netdev has its IPv4
    address, so this runs before anything reads GID indexes.
  - With O(exclusive=true), other global IPv4 addresses on the interface are removed.
  - The MTU is left to the C(roce_qos) role.
  - With O(ports), every port of the list is done in one module execution, one after the other, as a loop
    over them would do them; a port that fails does not stop the others, and the module fails afterwards
    naming each failed port.
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - ip (iproute2) on the target
options:
  name:
    description:
      - The netdev (for example C(enp65s0f0np0)).
      - Exactly one of O(name) and O(ports) is required.
    type: str
  address:
    description: The rail address with prefix length; omit to only bring the link up.
    type: str
  ports:
    description:
      - Several netdevs in one execution, instead of O(name) and O(address).
      - Every address is checked before any port is read or changed.
    type: list
    elements: dict
    suboptions:
      name:
        description: The netdev.
        type: str
        required: true
      address:
        description: The rail address with prefix length; omit to only bring the link up.
        type: str
      device:
        description: The RDMA device of the netdev (for example C(mlx5_0)); not used, only returned with the
          port's result so that what reads it can name the port.
        type: str
  exclusive:
    description: Remove other global IPv4 addresses from the interface.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reads the netdev; returns the ip commands it would run in C(commands).
  diff_mode:
    support: full
    description: The state of the netdev (link, addresses) before and after; with O(ports), one per port.
"""

EXAMPLES = r"""
- name: Bring rail 0 up
  linerate.fabric.rdma_netdev:
    name: enp65s0f0np0
    address: 192.168.100.11/24

- name: Bring both rails up in one call
  linerate.fabric.rdma_netdev:
    ports:
      - {name: enp65s0f0np0, address: 192.168.100.11/24, device: mlx5_0}
      - {name: enp193s0f0np0, address: 192.168.101.11/24, device: mlx5_1}
"""

RETURN = r"""
before:
  description: Admin state and IPv4 addresses before.
  returned: without O(ports)
  type: dict
  sample: {up: false, addresses: []}
after:
  description: Admin state and IPv4 addresses after (what check mode would leave).
  returned: without O(ports)
  type: dict
  sample: {up: true, addresses: [192.168.100.11/24]}
commands:
  description: The ip commands run (or that would run in check mode); with O(ports), every port's, in order.
  returned: always
  type: list
  elements: list
ports:
  description:
    - With O(ports), one result per port, in the order given. A port that failed has C(failed) and C(msg)
      (and what the failure read) instead of a complete result.
  returned: with O(ports)
  type: list
  elements: dict
  contains:
    name:
      description: The netdev.
      type: str
      returned: always
    device:
      description: The port's O(ports[].device), as given.
      type: str
      returned: always
    changed:
      description: Whether the port was (or in check mode would be) changed.
      type: bool
      returned: always
    before:
      description: Admin state and IPv4 addresses before.
      type: dict
      returned: success
    after:
      description: Admin state and IPv4 addresses after.
      type: dict
      returned: success
    commands:
      description: The ip commands of this port.
      type: list
      elements: list
      returned: success
"""

import ipaddress

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure, duplicate_port, each_port
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from ansible_collections.linerate.fabric.plugins.module_utils.host.netdev import ensure


def rail_address(value, where):
    """``a.b.c.d/len`` of a rail address option (None stays None); ToolFailure refusing any other."""
    if not value:
        return value
    try:
        iface = ipaddress.ip_interface(value)
    except ValueError:
        iface = None
    if iface is None or "/" not in value or iface.version != 4:
        raise ToolFailure(f"{where}: {value!r} is not allowed (allowed: an IPv4 address with prefix length, such as 192.168.100.11/24)")
    return f"{iface.ip}/{iface.network.prefixlen}"


def compute(module, run):
    p = module.params
    if p["ports"] is None:
        return ensure(run, p["name"], rail_address(p["address"], "address"), p["exclusive"], module.check_mode, module._diff)
    # Every port is checked before any is touched.
    error = duplicate_port(p["ports"], "name")
    if error:
        raise ToolFailure(error)
    for i, port in enumerate(p["ports"]):
        port["address"] = rail_address(port["address"], f"ports[{i}].address")
    return each_port(
        p["ports"],
        lambda port: ensure(run, port["name"], port["address"], p["exclusive"], module.check_mode, module._diff),
        lambda port: {"name": port["name"], "device": port["device"]},
        lambda port: port["name"],
    )


def main():
    host_module(
        {
            "name": {"type": "str"},
            "address": {"type": "str"},
            "ports": {
                "type": "list",
                "elements": "dict",
                "options": {"name": {"type": "str", "required": True}, "address": {"type": "str"}, "device": {"type": "str"}},
            },
            "exclusive": {"type": "bool", "default": False},
        },
        compute,
        mutually_exclusive=[["name", "ports"], ["address", "ports"]],
        required_one_of=[["name", "ports"]],
    )


if __name__ == "__main__":
    main()
