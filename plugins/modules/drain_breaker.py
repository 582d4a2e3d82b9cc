#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""Record the run's drains in the drain budget's state, or reset its circuit breaker."""

DOCUMENTATION = r"""
---
module: drain_breaker
short_description: Keep the drain budget's state (drains in the window, the circuit breaker), or reset the breaker
description:
  - The drain budget (C(fabric.remediation.budget)) counts the nodes linerate drained in a sliding window and
    trips a circuit breaker when a run would drain more than it allows (the verification report's
    C(remediation) decision). This module keeps that state in a JSON file on the controller (0600 in a 0700
    directory, written atomically; an unreadable file is an error, never an empty state).
  - "O(action=record): after roles/remediate's drain, write the run's drains and returns as events and the
    breaker as the run decided it; changed when the state changed."
  - "O(action=reset): close a tripped breaker (playbooks/drain_breaker_reset.yml), recording who and when;
    changed only when it was tripped."
  - "O(action=show): read the state; never changed."
version_added: 0.4.0
author: linerate developers (@linerate)
options:
  state_file:
    description: The state file (default in the roles C(<linerate_output_dir>/remediation/state.json)).
    type: path
    required: true
  action:
    description: What to do with the state.
    type: str
    choices: [record, reset, show]
    default: show
  decision:
    description: The verification report's C(remediation) decision (O(action=record)).
    type: dict
    default: {}
  drained:
    description: The inventory hosts drained (or re-reasoned) in this run (O(action=record)).
    type: list
    elements: str
    default: []
  returned:
    description: The inventory hosts returned to service in this run (O(action=record)).
    type: list
    elements: str
    default: []
  reasons:
    description: The drain reason per drained inventory host (O(action=record)).
    type: dict
    default: {}
  by:
    description: Who resets the breaker (O(action=reset)), kept in the state's events.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    description: Computes the new state and reports changed; writes nothing.
  diff_mode:
    support: full
    description: The breaker before and after.
"""

EXAMPLES = r"""
- name: Reset the drain breaker after the cause was found
  linerate.fabric.drain_breaker:
    state_file: "{{ linerate_output_dir }}/remediation/state.json"
    action: reset
    by: "{{ lookup('ansible.builtin.env', 'USER') }}"
"""

RETURN = r"""
breaker:
  description: The breaker after the action (tripped, since, reason; reset_at, reset_by after a reset).
  returned: always
  type: dict
drained:
  description: The nodes linerate holds drained, with when and why.
  returned: always
  type: dict
window_drains:
  description: The drain events of the last C(decision.budget.window_hours) hours (24 when unknown).
  returned: always
  type: int
"""

from ansible_collections.linerate.fabric.plugins.module_utils.host import breaker
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module


def compute(module, run):
    p = module.params
    try:
        state = breaker.load(p["state_file"])
    except breaker.StateError as e:
        raise breaker.StateError(f"drain_breaker: {e}; nothing was changed") from None
    if p["action"] == "record":
        new, changed = breaker.record(state, p["decision"], p["drained"], p["returned"], p["reasons"])
    elif p["action"] == "reset":
        new, changed = breaker.reset(state, p["by"] or "unknown")
    else:
        new, changed = state, False
    if changed and not module.check_mode:
        try:
            breaker.save(p["state_file"], new)
        except breaker.StateError as e:
            raise breaker.StateError(f"drain_breaker: {e}") from None
    hours = ((p["decision"] or {}).get("budget") or {}).get("window_hours", breaker.DEFAULTS["window_hours"])
    return {
        "changed": changed,
        "breaker": new["breaker"],
        "drained": new["drained"],
        "window_drains": len(breaker.window_drains(new, hours)),
        "diff": {
            "before": f"breaker: {'tripped' if state['breaker'].get('tripped') else 'closed'}\n",
            "after": f"breaker: {'tripped' if new['breaker'].get('tripped') else 'closed'}\n",
        },
    }


def main():
    host_module(
        {
            "state_file": {"type": "path", "required": True},
            "action": {"type": "str", "choices": ["record", "reset", "show"], "default": "show"},
            "decision": {"type": "dict", "default": {}},
            "drained": {"type": "list", "elements": "str", "default": []},
            "returned": {"type": "list", "elements": "str", "default": []},
            "reasons": {"type": "dict", "default": {}},
            "by": {"type": "str", "default": ""},
        },
        compute,
    )


if __name__ == "__main__":
    main()
