"""Take the nodes verification found faulty out of the scheduler, and put them back when they pass.

Read, plan, apply, read again - as roce.py does - for two schedulers:

* Slurm, through ``scontrol``: ``scontrol show node <name>`` (the key=value
  record of src/api/node_info.c slurm_sprint_node_table: ``State=IDLE+DRAIN``,
  ``Reason=<text> [<user>@<time>]``), ``scontrol update NodeName=<name>
  State=DRAIN Reason=<text>`` and ``State=RESUME`` (src/scontrol/update_node.c).
  A node linerate drained carries a reason that starts with ``linerate:``; a
  node drained or down for any other reason is never resumed or re-reasoned.
* Kubernetes, through ``kubectl``: ``kubectl get node <name> -o json``
  (``spec.unschedulable``, ``spec.taints``, ``metadata.annotations``),
  ``kubectl cordon`` / ``uncordon``, ``kubectl taint nodes <name>
  linerate.fabric/fault=<CODE>:NoSchedule`` and ``kubectl annotate node``. A
  node linerate cordoned carries the annotation ``linerate.fabric/cordoned``;
  one cordoned by someone else gets linerate's taint but is never uncordoned.

Which findings drain a node is the intent's ``fabric.remediation`` policy
(``selected``). Stdlib only, no I/O but through ``run`` (Runner).
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES, NEVER_DRAIN
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.scheduler import parse_kubectl_node, parse_scontrol_node

SCHEDULERS = ("slurm", "kubernetes")
REASON_PREFIX = "linerate:"
# Kubernetes: the taint key and the annotations linerate owns on a node.
TAINT_KEY = "linerate.fabric/fault"
TAINT_EFFECT = "NoSchedule"
CORDONED_ANNOTATION = "linerate.fabric/cordoned"
REASON_ANNOTATION = "linerate.fabric/reason"
# One Slurm reason names this many findings, then "+N more" (the full list is in the report).
REASON_MAX_FAULTS = 4
# A Kubernetes taint value is a label value: at most 63 of [A-Za-z0-9_.-], alphanumeric at both ends
# (k8s.io/apimachinery pkg/util/validation IsValidLabelValue).
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
SEVERITY_ORDER = {"error": 0, "warning": 1}


# ---------------------------------------------------------------- policy


def selected(findings, drain_codes=(), drain_severities=("error",), exempt_codes=()):
    """The findings that drain: a code in ``drain_codes`` or a severity in ``drain_severities``,
    unless the code is in ``exempt_codes``; sorted errors first, then by code and device.

    Never a finding that is not the node's own: one ``explained_by`` a shared element (attribution),
    or a code of ``breaker.NEVER_DRAIN`` (``NODE_NOT_VERIFIED``: what the run could not see)."""
    out = [
        f
        for f in findings or []
        if f.get("code") not in set(exempt_codes)
        and f.get("code") not in NEVER_DRAIN
        and not f.get("explained_by")
        and (f.get("code") in set(drain_codes) or f.get("severity") in set(drain_severities))
    ]
    return sorted(out, key=lambda f: (SEVERITY_ORDER.get(f.get("severity"), 2), str(f.get("code")), str(f.get("device") or "")))


def faults(findings):
    """[(code, device)] of ``findings``, each once, in their order."""
    seen, out = set(), []
    for f in findings:
        key = (f["code"], f.get("device") or "")
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def reason(fault_list):
    """``linerate: LINK_FLAP mlx5_1; PORT_DOWN mlx5_0`` (at most REASON_MAX_FAULTS, then ``+N more``)."""
    shown = [f"{code} {device}".strip() for code, device in fault_list[:REASON_MAX_FAULTS]]
    more = len(fault_list) - REASON_MAX_FAULTS
    return f"{REASON_PREFIX} " + "; ".join(shown) + (f"; +{more} more" if more > 0 else "")


def check_policy(drain_codes, drain_severities, exempt_codes):
    """Problems of a policy (unknown codes or severities), each naming the key, the value and what is allowed."""
    problems = []
    for key, codes in (("drain_codes", drain_codes), ("exempt_codes", exempt_codes)):
        for code in codes or []:
            if code not in FAULT_CODES:
                problems.append(f"{key}: {code!r} is not a linerate fault code (allowed: one of {', '.join(sorted(FAULT_CODES))})")
            elif key == "drain_codes" and code in NEVER_DRAIN:
                problems.append(
                    f"drain_codes: {code!r} never drains a node (what the run could not see, or a "
                    "shared element's finding) (allowed: a code of a node's own fault)"
                )
    for sev in drain_severities or []:
        if sev not in SEVERITY_ORDER:
            problems.append(f"drain_severities: {sev!r} is not allowed (allowed: error | warning)")
    return problems


# ---------------------------------------------------------------- Slurm


def slurm_out_of_service(node):
    """True when the node takes no new jobs (drained, draining, down or failed)."""
    return node["base"] in ("DOWN", "FAIL") or any(f in ("DRAIN", "FAIL") for f in node["flags"]) or node["base"] in ("DRAINED", "DRAINING", "DRAIN")


def slurm_ours(node):
    return slurm_out_of_service(node) and (node["reason"] or "").startswith(REASON_PREFIX)


def slurm_plan(node, want_reason, verified, return_to_service):
    """(action, argv tail after ``scontrol``, note) for one node, from its state and what the run found."""
    n = node["name"]
    if want_reason:
        if not slurm_out_of_service(node):
            return "drain", ["update", f"NodeName={n}", "State=DRAIN", f"Reason={want_reason}"], None
        if slurm_ours(node):
            if node["reason"] == want_reason:
                return "none", None, "drained by linerate for the same faults"
            return "reason", ["update", f"NodeName={n}", "State=DRAIN", f"Reason={want_reason}"], None
        return "foreign", None, (f"out of service for another reason ({node['state']}, Reason={node['reason'] or '-'}): left alone")
    if not verified:
        return "none", None, "not re-checked in this run: left as it is"
    if slurm_ours(node):
        if not return_to_service:
            return "none", None, "passes again; fabric.remediation.return_to_service is false: left drained"
        return "resume", ["update", f"NodeName={n}", "State=RESUME"], None
    if slurm_out_of_service(node):
        return "foreign", None, (f"out of service for another reason ({node['state']}, Reason={node['reason'] or '-'}): left alone")
    return "none", None, "in service and passing"


def slurm_view(node):
    if node is None:
        return "unknown"
    return node["state"] + (f" Reason={node['reason']}" if node.get("reason") else "")


# ---------------------------------------------------------------- Kubernetes


def taint_value(fault_list):
    """The taint's value: the first fault's code (a label value; codes are [A-Z_])."""
    code = fault_list[0][0]
    if not LABEL_VALUE.fullmatch(code) or len(code) > 63:
        raise ToolFailure(f"fault code {code!r} is not a Kubernetes label value (taint value)")
    return code


def k8s_ours(node):
    return [t for t in node["taints"] if t.get("key") == TAINT_KEY]


def k8s_plan(node, want_faults, verified, return_to_service):
    """(action, [argv tails after ``kubectl``], note) for one node."""
    n = node["name"]
    ours = k8s_ours(node)
    cordoned_by_us = CORDONED_ANNOTATION in node["annotations"]
    if want_faults:
        value, text = taint_value(want_faults), reason(want_faults)
        cmds = []
        if not node["unschedulable"]:
            cmds.append(["cordon", n])
            cmds.append(["annotate", "node", n, f"{CORDONED_ANNOTATION}=true"])
        have = [t for t in ours if t.get("effect") == TAINT_EFFECT]
        if not have:
            cmds.append(["taint", "nodes", n, f"{TAINT_KEY}={value}:{TAINT_EFFECT}"])
        elif have[0].get("value") != value:
            cmds.append(["taint", "nodes", n, f"{TAINT_KEY}={value}:{TAINT_EFFECT}", "--overwrite"])
        if node["annotations"].get(REASON_ANNOTATION) != text:
            cmds.append(["annotate", "node", n, f"{REASON_ANNOTATION}={text}", "--overwrite"])
        note = None if (not node["unschedulable"] or cordoned_by_us) else "cordoned by someone else: tainted, and will not be uncordoned by linerate"
        return ("drain" if cmds else "none"), cmds, note or (None if cmds else "drained by linerate for the same faults")
    if not verified:
        return "none", [], "not re-checked in this run: left as it is"
    if not ours and not cordoned_by_us and REASON_ANNOTATION not in node["annotations"]:
        if node["unschedulable"]:
            return "foreign", [], "cordoned by someone else: left alone"
        return "none", [], "in service and passing"
    if not return_to_service:
        return "none", [], "passes again; fabric.remediation.return_to_service is false: left drained"
    cmds = [["taint", "nodes", n, f"{TAINT_KEY}:{t.get('effect')}-"] for t in ours]
    drop = [a for a in (CORDONED_ANNOTATION, REASON_ANNOTATION) if a in node["annotations"]]
    if cordoned_by_us and node["unschedulable"]:
        cmds.append(["uncordon", n])
    if drop:
        cmds.append(["annotate", "node", n, *[f"{a}-" for a in drop]])
    note = None if cordoned_by_us or not node["unschedulable"] else "cordoned by someone else: linerate's taint removed, the cordon left"
    return "resume", cmds, note


def k8s_view(node):
    if node is None:
        return "unknown"
    taints = ",".join(f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in node["taints"]) or "-"
    return f"{'SchedulingDisabled' if node['unschedulable'] else 'Ready'} taints={taints}"


# ---------------------------------------------------------------- the workflow


class Scheduler:
    """One scheduler's read and write through ``run`` (a Runner: argv -> (rc, out, err))."""

    def __init__(self, kind, run, binary):
        if kind not in SCHEDULERS:
            raise ToolFailure(f"scheduler: {kind!r} is not allowed (allowed: {' | '.join(SCHEDULERS)})")
        self.kind, self.run, self.bin = kind, run, binary

    def read(self, name):
        if self.kind == "slurm":
            argv = [self.bin, "show", "node", name]
        else:
            argv = [self.bin, "get", "node", name, "-o", "json"]
        rc, out, err = self.run(argv)
        if rc != 0:
            raise ToolFailure.exited(argv, rc, out, err, what=name)
        try:
            return parse_scontrol_node(out) if self.kind == "slurm" else parse_kubectl_node(out)
        except ValueError as e:
            raise ToolFailure.exited(argv, rc, out, err, what=name, detail=f"unexpected output ({e})") from None

    def plan(self, node, want_faults, verified, return_to_service):
        if self.kind == "slurm":
            action, tail, note = slurm_plan(node, reason(want_faults) if want_faults else None, verified, return_to_service)
            return action, [] if tail is None else [[self.bin, *tail]], note
        action, tails, note = k8s_plan(node, want_faults, verified, return_to_service)
        return action, [[self.bin, *t] for t in tails], note

    def view(self, node):
        return slurm_view(node) if self.kind == "slurm" else k8s_view(node)

    def apply(self, argv):
        rc, out, err = self.run(argv)
        if rc != 0:
            raise ToolFailure.exited(argv, rc, out, err)


def remediate(sched, nodes, policy, check_mode):
    """Drain / return each of ``nodes`` ([{"name", "host", "findings", "verified"}]) per ``policy``
    ({"drain_codes", "drain_severities", "exempt_codes", "return_to_service"}).

    Returns {"changed", "nodes": {name: {...}}, "drained", "returned", "left_alone", "commands", "diff"}."""
    out = {"nodes": {}, "drained": [], "returned": [], "left_alone": [], "held": [], "commands": [], "drained_hosts": [], "returned_hosts": [], "reasons": {}}
    before_lines, after_lines = [], []
    # the run's decision (host/breaker.py plan): a tripped breaker acts on nobody; ``drain_nodes`` (inventory
    # names) are the only nodes a drain may take; a node with an error that is not its own is not passing
    frozen = bool(policy.get("breaker_tripped"))
    allowed = policy.get("drain_nodes")
    for item in nodes:
        name = item["name"]
        host = item.get("host") or name
        chosen = selected(item.get("findings"), policy.get("drain_codes") or (), policy.get("drain_severities") or (), policy.get("exempt_codes") or ())
        held = None
        if frozen:
            held = "the drain breaker is tripped: nothing is drained or returned to service until it is reset"
        elif allowed is not None and chosen and host not in allowed:
            held = "held by the run's drain decision (budget or attribution)"
        not_own = not chosen and any(
            f.get("severity") == "error" and (f.get("explained_by") or f.get("code") in NEVER_DRAIN) for f in item.get("findings") or []
        )
        want = [] if held else faults(chosen)
        verified = bool(item.get("verified")) and not held and not not_own
        node = sched.read(name)
        action, cmds, note = sched.plan(node, want, verified, policy.get("return_to_service", True))
        if held:
            note = held
            out["held"].append(name)
        elif not_own and bool(item.get("verified")):
            note = "its errors are not its own (explained by a shared element, or not verified): left as it is"
        after = node
        if cmds and not check_mode:
            for argv in cmds:
                sched.apply(argv)
            after = sched.read(name)
            _confirm(sched, after, action, want)
        rec = {
            "host": item.get("host") or name,
            "action": action,
            "before": sched.view(node),
            "after": sched.view(after) if not check_mode or not cmds else f"(would) {action}",
            "faults": [f"{c} {d}".strip() for c, d in want],
            "commands": cmds,
        }
        if note:
            rec["note"] = note
        out["nodes"][name] = rec
        out["commands"] += cmds
        if cmds and action in ("drain", "reason"):
            out["drained"].append(name)
            out["drained_hosts"].append(host)
            out["reasons"][host] = reason(want)
        elif cmds and action == "resume":
            out["returned"].append(name)
            out["returned_hosts"].append(host)
        elif action == "foreign":
            out["left_alone"].append(name)
        if cmds:
            before_lines.append(f"{name}: {sched.view(node)}\n")
            after_lines.append(f"{name}: " + (sched.view(after) if not check_mode else ("drained: " + reason(want) if want else "in service")) + "\n")
    out["changed"] = bool(out["commands"])
    out["diff"] = {"before": "".join(before_lines), "after": "".join(after_lines)}
    return out


def _confirm(sched, node, action, want):
    """Fail when the scheduler did not take the change (read back after applying)."""
    if sched.kind == "slurm":
        ok = slurm_ours(node) if action in ("drain", "reason") else not slurm_out_of_service(node)
        if action in ("drain", "reason") and ok:
            ok = node["reason"] == reason(want)
    else:
        ours = k8s_ours(node)
        ok = (node["unschedulable"] and bool(ours)) if action == "drain" else not ours
    if not ok:
        raise ToolFailure(f"{node['name']}: the {action} did not take: the scheduler shows {sched.view(node)}")
