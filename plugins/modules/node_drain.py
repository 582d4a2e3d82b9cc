#!/usr/bin/python
"""Drain the nodes verification found faulty in Slurm or Kubernetes; return them when they pass again."""

DOCUMENTATION = r"""
---
module: node_drain
short_description: Drain (Slurm) or cordon and taint (Kubernetes) the nodes a verification found faulty, and return them to service
description:
  - For each node, reads its state from the scheduler first (C(scontrol show node <name>) or
    C(kubectl get node <name> -o json)), selects the findings that drain by the policy
    (O(drain_codes), O(drain_severities), O(exempt_codes)), computes the commands that bring the node to what
    the findings ask, runs them only outside check mode, and reads the node again (a change that did not take
    fails the module).
  - "Slurm: a faulty node is drained with C(scontrol update NodeName=<name> State=DRAIN Reason=linerate: <CODE> <device>[; ...]);
    a node linerate drained (its reason starts with C(linerate:)) that was re-checked in this run and passes
    is returned with C(scontrol update NodeName=<name> State=RESUME)."
  - "Kubernetes: a faulty node is cordoned (C(kubectl cordon)), annotated C(linerate.fabric/cordoned=true) when
    linerate cordoned it, tainted C(linerate.fabric/fault=<CODE>:NoSchedule) and annotated with the reason
    (C(linerate.fabric/reason)); on return the taint and the annotations are removed and the node uncordoned only
    when linerate cordoned it."
  - A node drained, down or cordoned for another reason is never returned to service and its reason is never
    replaced (RV(left_alone)). A node with no finding that was not re-checked in this run (O(nodes[].verified)
    false) is left as it is.
version_added: 0.3.0
author: linerate developers (@linerate)
requirements:
  - scontrol (Slurm) or kubectl (Kubernetes) on the host the task runs on, with the rights to update nodes
options:
  scheduler:
    description: Which scheduler holds the nodes.
    type: str
    required: true
    choices: [slurm, kubernetes]
  nodes:
    description: The nodes of this run, each with the findings that name it.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The node's name in the scheduler (Slurm NodeName, Kubernetes node name).
        type: str
        required: true
      host:
        description: The inventory host, for messages.
        type: str
      findings:
        description: The report's findings that name this node (code, severity, device, ...).
        type: list
        elements: dict
        default: []
      verified:
        description: The node was re-checked in this run (it finished the verification or audit).
        type: bool
        default: false
  drain_codes:
    description: Fault codes that drain whatever their severity (fabric.remediation.drain_codes).
    type: list
    elements: str
    default: []
  drain_severities:
    description: Severities that drain (fabric.remediation.drain_severities).
    type: list
    elements: str
    default: [error]
  exempt_codes:
    description: Fault codes that never drain (fabric.remediation.exempt_codes).
    type: list
    elements: str
    default: []
  return_to_service:
    description: Return a node linerate drained once it passes again.
    type: bool
    default: true
  breaker_tripped:
    description:
      - The run's drain decision says the drain breaker is open (the verification report's C(remediation.breaker),
        host/breaker.py) - no node is drained or returned to service, each is reported C(held).
    type: bool
    default: false
  drain_nodes:
    description:
      - The inventory hosts the run's drain decision lets a drain take (the report's C(remediation.drain), nodes
        with a fault of their own, within the budget). A node with a finding that selects but is not listed is
        held. Omitted, every node with a selected finding may be drained.
      - Findings C(explained_by) a shared element and C(NODE_NOT_VERIFIED) never drain, whatever is listed here.
    type: list
    elements: str
  scontrol:
    description: The scontrol binary, a name looked up in PATH or a path (the lab sets its stand-in).
    type: str
    default: scontrol
  kubectl:
    description: The kubectl binary, a name looked up in PATH or a path (the lab sets its stand-in).
    type: str
    default: kubectl
attributes:
  check_mode:
    support: full
    description: Reads every node and returns the commands it would run; runs none.
  diff_mode:
    support: full
    description: Each changed node's state before and after (or what it would be).
"""

EXAMPLES = r"""
- name: Drain the faulty nodes in Slurm
  linerate.fabric.node_drain:
    scheduler: slurm
    nodes:
      - {name: node2, findings: [{code: LINK_FLAP, severity: error, device: mlx5_1}], verified: true}
      - {name: node3, findings: [], verified: true}
"""

RETURN = r"""
nodes:
  description: Per scheduler node, the action (drain, reason, resume, foreign, none), state before and after, faults, commands and a note.
  returned: always
  type: dict
drained:
  description: The nodes drained (or whose linerate reason was updated) by this run.
  returned: always
  type: list
  elements: str
returned:
  description: The nodes returned to service by this run.
  returned: always
  type: list
  elements: str
drained_hosts:
  description: The inventory hosts of RV(drained).
  returned: always
  type: list
  elements: str
returned_hosts:
  description: The inventory hosts of RV(returned).
  returned: always
  type: list
  elements: str
reasons:
  description: Per inventory host drained, the reason written into the scheduler.
  returned: always
  type: dict
held:
  description: The nodes the run's decision held (breaker tripped, or outside RV(drained)'s budget).
  returned: always
  type: list
  elements: str
left_alone:
  description: The nodes out of service for another reason, which linerate does not touch.
  returned: always
  type: list
  elements: str
commands:
  description: The commands run (or that would run in check mode), as argv lists.
  returned: always
  type: list
  elements: list
"""

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host import drain
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module


def main():
    def compute(module, run):
        p = module.params
        problems = drain.check_policy(p["drain_codes"], p["drain_severities"], p["exempt_codes"])
        names = [n["name"] for n in p["nodes"]]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            problems.append(f"nodes: {', '.join(dup)} listed more than once")
        if problems:
            raise ToolFailure("node_drain: " + "; ".join(problems))
        binary = p["scontrol"] if p["scheduler"] == "slurm" else p["kubectl"]
        return drain.remediate(drain.Scheduler(p["scheduler"], run, binary), p["nodes"], p, module.check_mode)

    host_module(
        {
            "scheduler": {"type": "str", "required": True, "choices": list(drain.SCHEDULERS)},
            "nodes": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": {
                    "name": {"type": "str", "required": True},
                    "host": {"type": "str"},
                    "findings": {"type": "list", "elements": "dict", "default": []},
                    "verified": {"type": "bool", "default": False},
                },
            },
            "drain_codes": {"type": "list", "elements": "str", "default": []},
            "drain_severities": {"type": "list", "elements": "str", "default": ["error"]},
            "exempt_codes": {"type": "list", "elements": "str", "default": []},
            "return_to_service": {"type": "bool", "default": True},
            "breaker_tripped": {"type": "bool", "default": False},
            "drain_nodes": {"type": "list", "elements": "str"},
            "scontrol": {"type": "str", "default": "scontrol"},
            "kubectl": {"type": "str", "default": "kubectl"},
        },
        compute,
    )


if __name__ == "__main__":
    main()
