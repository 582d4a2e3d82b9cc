"""Filter rail_ports: a host's rdma_ports from a rail pattern."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.intent import rails

DOCUMENTATION = r"""
name: rail_ports
author: linerate
version_added: "0.1.0"
short_description: Generate a host's rdma_ports from a rail pattern
description:
  - In a rail-optimised cluster rail I(r) of every node is cabled to the leaf of rail I(r) (one leaf per rail,
    per scalable unit), node I(n) to port I(n) of that leaf, and each rail has its own subnet. This filter
    writes that pattern once for all hosts, so a 256-node inventory is a few lines.
  - The result is an ordinary C(rdma_ports) list; C(playbooks/validate.yml) checks it like entries written by
    hand (names, ports cabled once, addresses used once, not network or broadcast).
  - "Patterns are strings with placeholders C({rail}) (0-based), C({rail1}) (1-based), C({node}) (the node's
    number), C({su}) (0-based scalable unit) and C({port}) (the leaf port of the node); each may carry an
    integer format such as C({node:03d}). Nothing else is evaluated."
positional: plan
options:
  _input:
    description:
      - The node, as its number or its inventory host name; a name gives the last number in its first label
        (C(gpu017) is node 17, C(dgx-a-0042.example.org) is node 42).
    type: raw
    required: true
  plan:
    description: The rail pattern.
    type: dict
    required: true
    suboptions:
      rails:
        description: Rails per node (1-32). Default the length of O(plan.device) or O(plan.netdev) when one is
          a list.
        type: int
      device:
        description: RDMA device per rail, a pattern such as C(mlx5_{rail}) or a list with one name per rail
          (real 8-rail nodes often skip device numbers used by storage NICs).
        type: raw
        required: true
      netdev:
        description: Netdev per rail, a pattern or a list with one name per rail.
        type: raw
        required: true
      switch:
        description: The leaf of the rail, such as C(leaf{rail1:02d}) or C(su{su}-leaf{rail}).
        type: str
        required: true
      switch_port:
        description: The port of the node on that leaf, such as C(swp{port}), C(Ethernet{port}) or C({port})
          (an all-digit result is an InfiniBand port number).
        type: str
        required: true
      subnet:
        description: The rail's IPv4 network, such as C(10.{rail}.0.0/16); node_base gets its first host
          address, each next node the next one. Omit it for ports without a rail address.
        type: str
      address_offset:
        description: Added to the host number in O(plan.subnet) (for example to start at .11).
        type: int
        default: 0
      node_base:
        description: The number of the first node.
        type: int
        default: 1
      nodes_per_leaf:
        description: Nodes per leaf (one scalable unit); 0 means one leaf per rail for all nodes.
        type: int
        default: 0
      port_base:
        description: The leaf port of the first node of a unit.
        type: int
        default: 1
      port_step:
        description: Port numbers between two nodes (8 for SONiC C(Ethernet0), C(Ethernet8), ...).
        type: int
        default: 1
      pci:
        description: PCI address per rail, a pattern or a list.
        type: raw
      rails_per_leaf:
        description:
          - Rails cabled to one leaf (a divisor of O(plan.rails)); rails 0..k-1 on the first leaf, the next k on
            the second (8-rail nodes on 4 leaves - V(2)). Patterns name the leaf with C({leaf}) (0-based) or
            C({leaf1}).
          - A node's rails on one leaf take neighbouring ports (node 1 rails 0 and 1 on ports 1 and 2, node 2 on
            3 and 4), unless O(plan.rail_port_offset) puts them in blocks.
        type: int
        default: 1
      rail_port_offset:
        description: Ports between a node's two rails on one leaf (blocks - with 32 nodes per leaf, V(32) puts
          the first rail on ports 1-32 and the second on 33-64).
        type: int
      port_offsets:
        description: Added to the port on each leaf, one integer per leaf (for leaves whose first fabric port is
          not O(plan.port_base), such as ports already used by uplinks).
        type: list
        elements: int
notes:
  - A plan that cannot be expanded fails with a message naming the key, the value and what is allowed.
  - docs/intent.md in the collection describes the fabric intent, the rdma_ports keys and their formats.
"""

EXAMPLES = r"""
# 8 rails on 4 leaves (rails 0,1 on leaf1; 2,3 on leaf2; ...), a node's two rails on neighbouring ports
#   rail_plan:
#     device: "mlx5_{rail}"
#     netdev: "enp{rail}s0f0np0"
#     rails: 8
#     rails_per_leaf: 2
#     switch: "leaf{leaf1}"
#     switch_port: "swp{port}"
#     subnet: "10.{rail}.0.0/16"
# group_vars/gpu_nodes/rails.yml: 8 rails, leaf per rail, port per node
#   rail_plan:
#     device: [mlx5_0, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_9, mlx5_10, mlx5_11]
#     netdev: "enp{rail}s0f0np0"
#     switch: "leaf{rail1:02d}"
#     switch_port: "swp{port}"
#     subnet: "10.{rail}.0.0/16"
#   rdma_ports: "{{ inventory_hostname | linerate.fabric.rail_ports(rail_plan) }}"

- name: Show the ports of gpu042 in 256 nodes of units of 32 (leaf su<unit>-r<rail>, SONiC ports Ethernet0, 8, ...)
  ansible.builtin.debug:
    msg: >-
      {{ 'gpu042' | linerate.fabric.rail_ports({'device': 'mlx5_{rail}', 'rails': 8, 'netdev': 'eth{rail1}',
         'switch': 'su{su}-r{rail}', 'switch_port': 'Ethernet{port}', 'port_base': 0, 'port_step': 8,
         'nodes_per_leaf': 32, 'subnet': '10.{rail}.0.0/16'}) }}
"""

RETURN = r"""
_value:
  description: The node's rdma_ports, one entry per rail with device, netdev, switch, switch_port and, when
    O(plan.subnet) / O(plan.pci) are set, address and pci.
  type: list
  elements: dict
  sample:
    - {device: mlx5_0, netdev: enp0s0f0np0, switch: leaf01, switch_port: swp17, address: 10.0.0.17/16}
"""


def rail_ports(node, plan):
    try:
        return rails.expand(node, plan)
    except rails.PlanError as e:
        raise AnsibleFilterError(str(e)) from None


class FilterModule:
    def filters(self):
        return {"rail_ports": rail_ports}
