#!/usr/bin/python
"""Read a switch's LLDP neighbour table (read-only), for the cabling check."""

DOCUMENTATION = r"""
---
module: switch_lldp
short_description: Read the LLDP neighbours a switch sees on its ports
description:
  - Connects over SSH (netmiko) and reads, without changing anything, the switch's LLDP
    neighbour table in the platform's own format - NVUE C(nv show interface lldp), SONiC
    C(show lldp table), EOS C(show lldp neighbors | json) - parsed by module_utils/parsers/lldp.py.
  - Verification compares the neighbours with the inventory's cabling (C(rdma_ports) of the
    nodes, C(switch_uplinks) of the switches); see docs/verification.md, check C(cabling).
  - A switch that cannot be reached, or whose output cannot be read, is reported with
    C(unreadable=true) and the reason in C(msg) instead of failing, so the caller can say
    which cabling this leaves unproven.
version_added: "0.1.0"
author: linerate developers (@linerate)
extends_documentation_fragment:
  - linerate.fabric.switch_connection
  - linerate.fabric.switch_connection.switch_read_only
"""
EXAMPLES = r"""
- name: Read the LLDP neighbours of a leaf
  linerate.fabric.switch_lldp:
    name: "{{ inventory_hostname }}"
    platform: "{{ switch_platform }}"
    host: "{{ ansible_host }}"
    username: "{{ switch_username }}"
    password: "{{ switch_password }}"
    known_hosts: "{{ switch_known_hosts }}"
  register: lldp
"""
RETURN = r"""
neighbors:
  description:
    - Per local port, the neighbours LLDP shows there - C(system_name), C(port_id),
      C(port_id_type) (mac, ifname, local), C(port_descr), C(chassis_id); null where the
      platform's table does not carry the field.
  returned: always
  type: dict
  sample: {"swp1": [{"system_name": "node1", "port_id": "0c:42:a1:00:01:00", "port_id_type": "mac",
           "port_descr": null, "chassis_id": null}]}
ports:
  description: Every local port the table lists (with or without a neighbour).
  returned: always
  type: list
  elements: str
warnings_read:
  description: What the table itself says could not be read completely.
  returned: always
  type: list
  elements: str
unreadable:
  description: True when the switch could not be reached or its table not parsed; C(msg) says why.
  returned: always
  type: bool
command:
  description: The command sent.
  returned: always
  type: str
"""
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import read_only_module


def read(p, driver):
    # a table that cannot be read is a result (unreadable, with the reason), not a failure
    result = dict(neighbors={}, ports=[], warnings_read=[], unreadable=False, command=driver.lldp_command)
    try:
        table = driver.lldp_neighbors()
        result.update(neighbors=table["neighbors"], ports=table["ports"], warnings_read=table["warnings"])
    except SwitchError as exc:
        result.update(unreadable=True, msg=str(exc))
    except ParseError as exc:
        result.update(unreadable=True, msg=f"switch {p['name']}: {exc}")
    return result


def main():
    read_only_module(read)


if __name__ == "__main__":
    main()
