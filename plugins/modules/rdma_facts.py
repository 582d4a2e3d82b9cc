#!/usr/bin/python
"""Gather the RDMA facts of a node."""

DOCUMENTATION = r"""
---
module: rdma_facts
short_description: Gather RDMA devices, ports and RoCE GIDs of a node
description:
  - Runs C(ibdev2netdev -v), C(ibv_devinfo -v), C(ibstat), C(show_gids) and, where MFT is
    installed, C(mst status -v); joins their outputs per device and port.
  - Returns per device the firmware version, PSID, PCI address and NUMA node, and per port the
    link layer, state, physical state, speed, width, netdev, active MTU, the GID table and the
    RoCEv2 IPv4 GID index (the one NCCL and perftest should use).
  - Fails with the tool's own message when a tool reports an error (no device, driver not
    loaded, permission denied, tool missing). An empty device list is never a success.
  - Read-only; runs the same in check mode.
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - ibv_devinfo, ibdev2netdev, show_gids, ibstat (rdma-core / DOCA-OFED) and rdma (iproute2) on the target
options:
  expect_devices:
    description:
      - RDMA device names that must be present (for example the devices of the host's
        C(rdma_ports)). A missing one fails the task, naming it.
    type: list
    elements: str
    default: []
  expect_socket_ifname:
    description:
      - A value of C(NCCL_SOCKET_IFNAME) whose interfaces must exist, read as NCCL reads it - a comma-separated
        list of name prefixes (C(eth) matches C(eth0)), exact names after C(=); a C(^) (exclude) list names no
        interface and is not checked. No matching interface in C(/sys/class/net) fails the task, naming it.
    type: str
  wait_up:
    description:
      - Seconds to wait, reading again every second, while a port of O(expect_devices) is not up (C(ACTIVE) and
        C(LinkUp)), as right after a subnet manager starts (its first sweep brings InfiniBand ports to C(ACTIVE))
        or a firmware reset restarts the driver. The facts are then the last read; a port still down is reported
        as it is. C(0) reads once. Not in check mode (nothing was started or reset to wait for).
    type: int
    default: 0
extends_documentation_fragment:
  - linerate.fabric.read_only
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.rdma).
notes:
  - The tools come from MLNX_OFED / DOCA-OFED (C(ibdev2netdev), C(show_gids)) and rdma-core
    (C(ibv_devinfo), C(ibstat)); install them first (role C(mofed)).
"""

EXAMPLES = r"""
- name: Gather RDMA facts
  linerate.fabric.rdma_facts:
    expect_devices: "{{ rdma_ports | map(attribute='device') | list }}"

- name: Show the RoCEv2 GID index of each port
  ansible.builtin.debug:
    msg: "{{ item.device }} port {{ item.port }}: GID {{ item.roce_v2_ipv4_gid_index }}"
  loop: "{{ ansible_facts.rdma.ports }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(rdma).
  returned: success
  type: complex
  contains:
    rdma:
      description: C(devices) keyed by device name (ports keyed by number) and C(ports), one row
        per device port with device, port, netdev, pci, numa_node, link_layer, state,
        physical_state, speed_gbps, width, active_mtu, up, roce_v2_ipv4_gid_index, fw_version, psid.
      type: dict
      sample:
        ports:
          - device: mlx5_0
            port: 1
            netdev: enp65s0f0np0
            pci: "0000:41:00.0"
            numa_node: 0
            link_layer: Ethernet
            state: PORT_ACTIVE
            physical_state: LinkUp
            speed_gbps: 400
            width: 4X
            active_mtu: 4096
            up: true
            roce_v2_ipv4_gid_index: 3
            fw_version: 28.39.2048
            psid: MT_0000000838
"""

import os
import time

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from ansible_collections.linerate.fabric.plugins.module_utils.host.rdma import collect
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import missing_socket_ifnames

SYS_NET = "/sys/class/net"


def compute(module, run):
    p = module.params
    if p["wait_up"] < 0:
        raise ToolFailure(f"wait_up: {p['wait_up']} is not allowed (allowed: seconds, 0 or more)")
    deadline = time.monotonic() + (0 if module.check_mode else p["wait_up"])
    expect = set(p["expect_devices"])
    while True:
        facts = collect(run)
        down = [port for port in facts["ports"] if port["device"] in expect and not port.get("up")]
        if not down or time.monotonic() >= deadline:
            break
        time.sleep(1)  # the ports' own time to come up (wait_up), polled once a second
    missing = [d for d in p["expect_devices"] if d not in facts["devices"]]
    if missing:
        raise ToolFailure(
            f"RDMA device(s) {', '.join(missing)} not found on this host (found: {', '.join(sorted(facts['devices'])) or 'none'})",
            ansible_facts={"rdma": facts},
        )
    ifname = p["expect_socket_ifname"]
    interfaces = sorted(os.listdir(SYS_NET)) if ifname else []
    absent = missing_socket_ifnames(ifname, interfaces) if ifname else []
    if absent:
        raise ToolFailure(
            f"NCCL_SOCKET_IFNAME {ifname}: no interface matches {', '.join(absent)} on this host "
            f"(interfaces: {', '.join(interfaces)}; fabric.nccl.socket_ifname / nccl_env_socket_ifname)",
            ansible_facts={"rdma": facts},
        )
    return {"changed": False, "ansible_facts": {"rdma": facts}}


def main():
    # mst (MFT) is optional: without it the PCI addresses come from sysfs.
    host_module(
        {
            "expect_devices": {"type": "list", "elements": "str", "default": []},
            "expect_socket_ifname": {"type": "str"},
            "wait_up": {"type": "int", "default": 0},
        },
        compute,
        optional=("mst",),
    )


if __name__ == "__main__":
    main()
