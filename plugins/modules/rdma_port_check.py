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
    PORT_DOWN, PORT_SPEED, PORT_WIDTH, MTU_MISMATCH, GID_MISSING). These findings are the
    ones the C(verify_report) action shows; it does not compute them again.
  - Read-only; never reports C(changed). Runs the same in check mode.
requirements:
  - ibv_devinfo (rdma-core) and ip (iproute2) on the target
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
    description:
      - The GID index RDMA traffic uses (C(NCCL_IB_GID_INDEX), discovered by role nccl_env); it must hold a RoCE v2
        IPv4 GID (RoCE only).
      - Not set where none was discovered (no port of the node holds a RoCE v2 IPv4 GID); every RoCE port with a GID
        table is then reported C(GID_MISSING), saying so. There is no assumed index.
    type: int
  node:
    description: The name findings use for this host (the inventory name).
    type: str
    required: true
  fail_on_findings:
    description: Fail the task when a port has a problem.
    type: bool
    default: false
extends_documentation_fragment:
  - linerate.fabric.read_only
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.probes.ports import check_ports
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ports=dict(type="list", elements="dict", required=True),
            fabric=dict(type="dict", required=True),
            gid_index=dict(type="int"),
            node=dict(type="str", required=True),
            fail_on_findings=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = check_ports(Runner(module), p["node"], p["ports"], p["fabric"], p["gid_index"])
    if result["findings"] and p["fail_on_findings"]:
        module.fail_json(msg="; ".join(f["message"] for f in result["findings"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
