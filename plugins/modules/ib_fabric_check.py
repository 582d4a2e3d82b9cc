#!/usr/bin/python
"""Check a live InfiniBand subnet against the intended cabling."""

DOCUMENTATION = r"""
module: ib_fabric_check
short_description: Check the InfiniBand subnet manager, topology and partitions
description:
  - Runs C(sminfo), C(ibnetdiscover), C(iblinkinfo), C(smpquery pkeys) and C(ibqueryerrors) on the target
    and compares what they report with the intended SM, cabling and partitions, and every port's
    error counters (switch ports, inter-switch links and CA ports over the whole subnet) with the thresholds.
  - Each problem is a finding with a stable code and the exact node and port
    (IB_SM_NOT_MASTER, IB_SM_PRIORITY_MISMATCH, IB_LINK_MISSING, IB_PORTS_SWAPPED,
    IB_LINK_MISWIRED, IB_UNEXPECTED_LINK, IB_UNEXPECTED_DEVICE, IB_LINK_DEGRADED,
    IB_PARTITION_NOT_IN_FORCE, IB_LINK_ERRORS naming both ends of the link, IB_COUNTERS_UNREADABLE).
  - Each tool runs under C(timeout) with the locale pinned to C.
  - Read-only; never changes the fabric.
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - ibnetdiscover, iblinkinfo, sminfo and smpquery (infiniband-diags) on the target
options:
  checks:
    description: Which checks to run.
    type: list
    elements: str
    choices: [sm, topology, partitions, errors]
    default: [sm, topology, partitions, errors]
  environment:
    description: Extra environment for the diag tools (the lab sets LD_PRELOAD, SIM_HOST, IBSIM_*).
    type: dict
    default: {}
  expected_sm_guid:
    description: Port GUID the master SM must run on; empty for any.
    type: str
  expected_sm_priority:
    description: Priority the master SM must have.
    type: int
  expected_sm_node:
    description: Name reported as the node of SM findings.
    type: str
  expected_links:
    description: Intended host cabling, from each host's C(rdma_ports).
    type: list
    elements: dict
    default: []
  switch_links:
    description: Intended switch-to-switch cables (C(switch), C(port), C(peer), C(peer_port)).
    type: list
    elements: dict
    default: []
  switches:
    description: Inventory switch name -> its node GUID (or null to match by NodeDescription).
    type: dict
    default: {}
  link_width:
    description: Intended link width (lanes).
    type: int
  link_speed_gbps:
    description: Intended nominal link speed (width x lane rate), Gb/s.
    type: float
  partitions:
    description: Partitions with members resolved to port GUIDs (as C(ib_intent) returns them).
    type: list
    elements: dict
    default: []
  error_thresholds:
    description:
      - The errors check. PortCounters error counter -> the count a port may show (above it is IB_LINK_ERRORS).
        Counters not named keep 0. Allowed counters are SymbolErrorCounter, LinkErrorRecoveryCounter,
        LinkDownedCounter, PortRcvErrors, PortRcvRemotePhysicalErrors, PortRcvSwitchRelayErrors,
        PortXmitDiscards, PortXmitConstraintErrors, PortRcvConstraintErrors, LocalLinkIntegrityErrors,
        ExcessiveBufferOverrunErrors and VL15Dropped (fabric.verify.ib_error_thresholds).
    type: dict
    default: {}
  errors_baseline:
    description:
      - RV(port_errors) of an earlier run. The counts are then judged over the window since it,
        otherwise as they stand (since the counters were last cleared).
    type: dict
    default: {}
  timeout:
    description: Seconds each diag tool may run.
    type: int
    default: 30
  fail_on_findings:
    description: Fail the task when there are findings.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check the subnet
  linerate.fabric.ib_fabric_check:
    expected_sm_priority: 15
    expected_links: [{host: node1, device: mlx5_0, switch: leaf1, switch_port: 1}]
    switches: {leaf1: null}
    link_width: 4
    link_speed_gbps: 400
"""

RETURN = r"""
findings:
  description: Problems found, each with code, node, port, message.
  type: list
  elements: dict
  returned: always
sminfo:
  description: The parsed sminfo answer.
  type: dict
  returned: when the sm check ran and an SM answered
sminfo_error:
  description: Why no SM answered (the sminfo error), instead of RV(sminfo).
  type: str
  returned: when the sm check ran and no SM answered
pkey_tables:
  description: Port GUID -> the pkeys in its table (C(0x8010)), for the partition members that could be read.
  type: dict
  returned: when the partitions check ran with partitions
discovery_warnings:
  description:
    - Failed queries ibnetdiscover reported while it went on discovering (each also a task warning);
      nodes behind those routes may be missing from the topology the checks saw.
  type: list
  elements: str
  returned: when ibnetdiscover reported a failed query
port_errors:
  description: C(<GUID>/<port>) (a switch's node GUID, a CA's port GUID) -> the error counters ibqueryerrors printed for it.
  type: dict
  returned: when the errors check ran and ibqueryerrors could be read
port_errors_summary:
  description: ibqueryerrors' summary (nodes and ports checked), the thresholds applied and the window.
  type: dict
  returned: when the errors check ran and ibqueryerrors could be read
port_errors_error:
  description: Why the port error counters could not be read (beside the finding IB_COUNTERS_UNREADABLE).
  type: str
  returned: when the errors check ran and ibqueryerrors failed
summary:
  description: Counts of discovered switches, CAs and links.
  type: dict
  returned: when the topology check ran
observed:
  description:
    - "The cabling as ibnetdiscover discovered it, named by the inventory (module_utils/checks/sched_topology.py
      ib_observed_map): C(hosts) (node -> [device, switch, switch_port]), C(links) (switch, port, peer,
      peer_port), C(read), C(warnings); the input of playbooks/sched_topology.yml on InfiniBand."
  type: dict
  returned: when the topology check ran
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.probes.ib_fabric import fabric_check, findings_message
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type="list", elements="str", choices=["sm", "topology", "partitions", "errors"], default=["sm", "topology", "partitions", "errors"]),
            environment=dict(type="dict", default={}),
            expected_sm_guid=dict(type="str"),
            expected_sm_priority=dict(type="int"),
            expected_sm_node=dict(type="str"),
            expected_links=dict(type="list", elements="dict", default=[]),
            switch_links=dict(type="list", elements="dict", default=[]),
            switches=dict(type="dict", default={}),
            link_width=dict(type="int"),
            link_speed_gbps=dict(type="float"),
            partitions=dict(type="list", elements="dict", default=[]),
            error_thresholds=dict(type="dict", default={}),
            errors_baseline=dict(type="dict", default={}),
            timeout=dict(type="int", default=30),
            fail_on_findings=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    try:
        result = fabric_check(Runner(module), module.params)
    except ToolFailure as e:
        module.fail_json(msg=e.msg, **e.kw)
    for warning in result.get("discovery_warnings", []):
        module.warn(warning)
    if result["findings"] and module.params["fail_on_findings"]:
        module.fail_json(msg=findings_message(result["findings"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
