#!/usr/bin/python
"""Validate and resolve the InfiniBand subnet-manager intent."""

DOCUMENTATION = r"""
module: ib_intent
short_description: Validate the InfiniBand subnet manager intent and resolve its members
description:
  - Checks C(fabric.infiniband.subnet_manager) (priorities, routing engine, root GUIDs,
    LMC, sweep interval, log settings, partitions) and fails with every error found.
  - Resolves partition members (inventory hosts or port GUIDs) and root switches to GUIDs.
  - Pure computation; changes nothing. Run it on the controller before OpenSM is touched.
version_added: 0.1.0
author: linerate developers (@linerate)
options:
  subnet_manager:
    description: The C(fabric_effective.infiniband.subnet_manager) mapping.
    type: dict
    required: true
  known_guids:
    description: Inventory host or switch name -> its port GUIDs (switches, their GUID).
    type: dict
    required: true
  sm_hosts:
    description: The hosts of group C(subnet_managers).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Validate the IB intent
  linerate.fabric.ib_intent:
    subnet_manager: "{{ fabric_effective.infiniband.subnet_manager }}"
    known_guids: {node1: ["0xa088c20300000101"], spine1: ["0xe41d2d0300a00003"]}
    sm_hosts: "{{ groups['subnet_managers'] }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
errors:
  description: "Every problem found, in the form key: value is not allowed (allowed: ...)."
  type: list
  elements: str
  returned: always
subnet_manager:
  description: The intent merged with defaults.
  type: dict
  returned: success
partitions:
  description: Partitions with members resolved to port GUIDs, pkey as 0x%04x.
  type: list
  elements: dict
  returned: success
root_guids:
  description: Root switch GUIDs.
  type: list
  elements: str
  returned: success
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband


def main():
    module = AnsibleModule(
        argument_spec=dict(
            subnet_manager=dict(type="dict", required=True),
            known_guids=dict(type="dict", required=True),
            sm_hosts=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    known = {k: [g for g in (v or []) if g] for k, v in module.params["known_guids"].items()}
    sm = module.params["subnet_manager"]
    errors = infiniband.validate_subnet_manager(sm, known, module.params["sm_hosts"])
    if errors:
        module.fail_json(msg="invalid InfiniBand intent:\n" + "\n".join(errors), errors=errors)
    module.exit_json(
        changed=False,
        errors=[],
        subnet_manager=infiniband.merged(sm),
        partitions=infiniband.resolve_partitions(sm, known),
        root_guids=infiniband.resolve_roots(sm, known),
    )


if __name__ == "__main__":
    main()
