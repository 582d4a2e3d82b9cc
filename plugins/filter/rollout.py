"""Filters for the host stack's rollout in waves (module_utils/host/rollout.py, playbooks/stages/hosts.yml)."""

import datetime

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.host import rollout


def _rollout_keys(intent):
    """max_unavailable from the intent (the legacy ``batch`` where it is given instead)."""
    intent = dict(intent or {})
    limit = intent.get("batch") if intent.get("batch") is not None else intent.get("max_unavailable", 1)
    return {
        "max_unavailable": limit,
        "canary": intent.get("canary", 1),
        "spread": list(intent.get("spread", rollout.SPREAD_KEYS)),
        "max_fail_percentage": int(intent.get("max_fail_percentage", 0)),
        "slow_start": intent.get("slow_start", True),
    }


# One controller-local host at the end of every wave (playbooks/stages/hosts.yml): it ends itself in the
# wave's first tasks, so no wave is ever all failed or unreachable. Ansible ends the whole playbook when
# every host of a serial batch failed (a canary wave of one node lost in its reboot): the rollout summary,
# the switches and the verification would never run, and nothing would say which node did it.
SENTINEL = "linerate_rollout_wave_{}"


def _with_sentinels(plan):
    """``play_order``/``play_sizes`` (the host stack play's hosts and serial): each wave and its sentinel."""
    names = [SENTINEL.format(i) for i in range(len(plan["waves"]))]
    plan["sentinels"] = names
    plan["play_order"] = [n for w, s in zip(plan["waves"], names) for n in list(w) + [s]]
    plan["play_sizes"] = [len(w) + 1 for w in plan["waves"]]
    return plan


def rollout_observed(text):
    """The last verification's observed leaves from its report.json text ({leaves, generated}; {} without)."""
    return rollout.observed_from_report(text)


def _marks(hostvars, names):
    marks = {}
    for name in names:
        hv = hostvars.get(name) or {}
        marks[name] = {
            "state": hv.get("host_disruption_rollout_state"),
            "steps": hv.get("host_disruption_rollout_steps") or [],
            "reason": hv.get("host_disruption_rollout_reason"),
        }
    return marks


def rollout_plan(names, hostvars, intent, observed=None):
    """The waves for the nodes ``names`` (``module_utils.host.rollout.plan``), as a dict. ``observed``:
    {node: [leaf]} seen by LLDP, or ``rollout_observed``'s {leaves, generated}; unioned with the declared
    cabling."""
    report = observed if isinstance(observed, dict) and "leaves" in observed else None
    leaves = report["leaves"] if report else observed
    try:
        nodes = rollout.nodes_from_hostvars(list(names), hostvars, leaves if isinstance(leaves, dict) else None)
        out = rollout.plan(nodes, **_rollout_keys(intent)).as_dict()
        _with_sentinels(out)
        out["leaves_from"] = (
            f"declared rdma_ports and the cabling LLDP saw (report of {report.get('generated')})"
            if report
            else ("declared rdma_ports and the observed cabling" if leaves else "declared rdma_ports")
        )
        return out
    except rollout.RolloutError as e:
        raise AnsibleFilterError(f"rollout_plan: {e}") from None


def _earlier_states(plan, hostvars, active, wave):
    """The states of the nodes of the waves before ``wave``: a node that is not in ``active``
    (ansible_play_hosts: Ansible dropped it, failed or unreachable) and did not mark itself counts as failed."""
    active = set(active or [])
    earlier = [n for w in plan["waves"][: int(wave)] for n in w]
    marks = _marks(hostvars, earlier)
    return {n: (marks[n]["state"] if marks[n]["state"] in ("done", "failed", "skipped") else ("done" if n in active else "failed")) for n in earlier}


def rollout_halt(plan, hostvars, active, wave):
    """At the start of wave ``wave``: the first earlier wave over its budget ({wave, failed}) or {}."""
    states = _earlier_states(plan, hostvars, active, wave)
    halt = rollout.halted_at(plan, states, before=int(wave))
    if halt is None:
        return {}
    return {"wave": halt, "failed": rollout.wave_failed(plan["waves"][halt], states)}


def rollout_room(plan, hostvars, active, wave, batch, unseen=()):
    """At the start of wave ``wave`` (``batch``: ansible_play_batch): the nodes still out of service from
    earlier waves or from before the plan (``unseen``, their groups from their inventory labels), and this
    wave's nodes in a group with one of them or beyond what they leave of max_unavailable
    (``module_utils.host.rollout.room``: {lost, room, defer, why})."""
    states = _earlier_states(plan, hostvars, active, wave)
    unseen = list(unseen or [])
    # an unseen node's groups from its inventory labels; one whose labels are not allowed (the plan never read
    # it) still holds its place: refusing here would stop every later wave over a node that is already out
    unseen_nodes = []
    for name in unseen:
        try:
            unseen_nodes += rollout.nodes_from_hostvars([name], hostvars)
        except rollout.RolloutError:
            continue
    return rollout.room(plan, states, list(batch or []), unseen, unseen_nodes)


def rollout_wave(plan, batch):
    """The index of the wave the play's current batch (ansible_play_batch) belongs to."""
    for name in batch or []:
        if name in plan["nodes"]:
            return plan["nodes"][name]["wave"]
    raise AnsibleFilterError(f"rollout_wave: none of {list(batch or [])} is in the rollout plan")


def rollout_step(steps, key, action=None):
    """The node's disruptive steps with the controller's time now (UTC, ISO 8601): ``key`` ``start`` opens a
    new step for ``action``; ``end`` or ``failed`` closes the last one (nothing to close: unchanged)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    steps = [dict(s) for s in steps or []]
    if key == "start":
        return steps + [{"action": action, "start": now}]
    if key not in ("end", "failed"):
        raise AnsibleFilterError(f"rollout_step: key {key!r} is not allowed (allowed: start | end | failed)")
    if steps:
        steps[-1][key] = now
    return steps


def rollout_unmarked(plan, hostvars):
    """The planned nodes with no rollout mark (neither done, nor failed in a disruptive step, nor
    skipped): Ansible dropped them, failed or unreachable; the report play asks them."""
    marks = _marks(hostvars, plan["order"])
    return [n for n in plan["order"] if marks[n]["state"] not in ("done", "failed", "skipped")]


def rollout_summary(plan, hostvars, probes=(), converged=(), unseen=()):
    """The rollout summary (``module_utils.host.rollout.summary``) from the nodes' marks and the
    results of the ping that asked the unmarked ones (``probes``: a registered loop's results)."""
    reachable = {r["item"]: not r.get("unreachable", False) for r in probes or [] if "item" in r}
    return rollout.summary(plan, _marks(hostvars, plan["order"]), reachable, list(converged or []), list(unseen or []))


class FilterModule:
    def filters(self):
        return {
            "rollout_plan": rollout_plan,
            "rollout_observed": rollout_observed,
            "rollout_halt": rollout_halt,
            "rollout_room": rollout_room,
            "rollout_wave": rollout_wave,
            "rollout_step": rollout_step,
            "rollout_unmarked": rollout_unmarked,
            "rollout_summary": rollout_summary,
        }
