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
version_added: 0.1.0
author: linerate developers (@linerate)
options:
  name:
    description: The netdev (for example C(enp65s0f0np0)).
    type: str
    required: true
  address:
    description: The rail address with prefix length; omit to only bring the link up.
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
    description: The state of the netdev (link, addresses) before and after.
"""

EXAMPLES = r"""
- name: Bring rail 0 up
  linerate.fabric.rdma_netdev:
    name: enp65s0f0np0
    address: 192.168.100.11/24
"""

RETURN = r"""
before:
  description: Admin state and IPv4 addresses before.
  returned: always
  type: dict
  sample: {up: false, addresses: []}
after:
  description: Admin state and IPv4 addresses after (what check mode would leave).
  returned: always
  type: dict
  sample: {up: true, addresses: [192.168.100.11/24]}
commands:
  description: The ip commands run (or that would run in check mode).
  returned: always
  type: list
  elements: list
"""

import ipaddress

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import exit_module
from ansible_collections.linerate.fabric.plugins.module_utils.netdev import ensure
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def main():
    module = AnsibleModule(
        argument_spec={"name": {"type": "str", "required": True},
                       "address": {"type": "str"},
                       "exclusive": {"type": "bool", "default": False}},
        supports_check_mode=True,
    )
    p = module.params
    if p["address"]:
        try:
            iface = ipaddress.ip_interface(p["address"])
        except ValueError:
            iface = None
        if iface is None or "/" not in p["address"] or iface.version != 4:
            module.fail_json(msg=f"address: {p['address']!r} is not allowed "
                                 "(allowed: an IPv4 address with prefix length, such as 192.168.100.11/24)")
        p["address"] = f"{iface.ip}/{iface.network.prefixlen}"
    exit_module(module, lambda: ensure(Runner(module), p["name"], p["address"], p["exclusive"], module.check_mode,
                                       module._diff))


if __name__ == "__main__":
    main()
