"""Every node and switch in scope accounted for in the verification report.

Pure functions over plain data (stdlib only), used by the verify_report action.

A node is *in scope* when the verification plays were meant to run on it: the
play's hosts pattern and ``--limit`` (Ansible's ``ansible_play_hosts_all``).
It is *verified* when it was still in the play when the report was written
(``ansible_play_hosts``): Ansible removes a host from a play, and from every
later play of the run, when it becomes unreachable or a task fails on it. A
node in scope that is not verified is ``NODE_NOT_VERIFIED`` (an error), with
the reason Ansible left: the task that failed and its message (recorded by the
rescue of playbooks/stages/verify.yml), else what a reachability probe from the
controller says now (roles/verify_fabric/tasks/report.yml waits for the node's sshd banner from the
controller: a delegated ping to a node that does not answer ended the report play in ansible-core 2.19),
else "no result recorded".

A switch in scope is ``SWITCH_UNREACHABLE`` (an error) when a read the
verification made of it failed (LLDP neighbours, congestion/error counters:
the modules' message, e.g. the SSH timeout or refused login) or when it left
the switch plays before they read it (it failed earlier in the run).
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import Unreadable
from ansible_collections.linerate.fabric.plugins.module_utils.checks.names import natural_key
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding


def _text(v, limit=300):
    s = " ".join(str(v or "").split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _sorted(names):
    """Names in natural order: node2 before node10, leaf2 before leaf10."""
    return sorted(names, key=natural_key)


def node_reason(node, record=None, probe=None):
    """(reason, message) of a node in scope that did not finish.

    ``record``: what the verification's rescue kept, ``{"task", "msg", "unreachable"}`` (unreachable: the
    reachability check before the verification failed);
    ``probe``: the controller's probe of the node when the report was written (a registered result): a
    ``wait_for`` of its sshd banner (``state: started`` when it answers, else ``msg``) or a ``ping``
    (``ping: pong``; ``unreachable`` with ``msg``)."""
    if record:
        task, msg = _text(record.get("task")) or "an unnamed task", _text(record.get("msg")) or "no message"
        # the verification's first task, the reachability check, failed: the node never answered
        if str(record.get("unreachable")).lower() in ("true", "yes", "1"):
            return "unreachable", f"{node}: not verified: unreachable, it did not answer '{task}': {msg}"
        return "failed", f"{node}: not verified: failed at task '{task}': {msg}"
    if probe and not probe.get("skipped"):
        if probe.get("unreachable"):
            return "unreachable", (f"{node}: not verified: unreachable ({_text(probe.get('msg')) or 'no message'}); Ansible removed it from the play")
        # the ping of a node (ping: pong) or, from the controller, its sshd's banner (wait_for: state started)
        if probe.get("ping") != "pong" and probe.get("state") != "started":
            return "unreachable", (f"{node}: not verified: it does not answer ({_text(probe.get('msg')) or 'no message'}); Ansible removed it from the play")
        return "left_play", (
            f"{node}: not verified: it left the play before the verification finished (unreachable "
            "or failed earlier in the run; it answers now): see the play recap"
        )
    return "unknown", (
        f"{node}: not verified: Ansible removed it from the play (unreachable, or failed before the verification) and left no result: see the play recap"
    )


def node_findings(scope, verified, records=None, probes=None):
    """``NODE_NOT_VERIFIED`` for each node of ``scope`` not in ``verified``, and the report check.

    Returns ``(findings, check)``; the check has one case per node in scope, so
    JUnit shows every node, passing or failing."""
    records, probes = records or {}, probes or {}
    verified = set(verified or ())
    findings, cases = [], []
    for node in _sorted(dict.fromkeys(scope or ())):
        if node in verified:
            cases.append({"name": f"{node} verified", "ok": True, "code": None, "message": None})
            continue
        reason, msg = node_reason(node, records.get(node), probes.get(node))
        rec = records.get(node) or {}
        f = finding("NODE_NOT_VERIFIED", msg, node=node, check="nodes", reason=reason, **({"task": rec.get("task")} if rec.get("task") else {}))
        findings.append(f)
        cases.append({"name": f"{node} verified", "ok": False, "code": f["code"], "message": msg, "findings": [f]})
    n = len(cases)
    check = {
        "passed": not findings,
        "in_scope": n,
        "verified": n - len(findings),
        "not_verified": [f["node"] for f in findings],
        "detail": f"{n - len(findings)}/{n} nodes in scope verified" + (f"; not verified: {', '.join(f['node'] for f in findings)}" if findings else ""),
        "cases": cases,
    }
    return findings, check


def lldp_failure(read):
    """Why a registered switch_lldp result is not a neighbour table (None: it is, or it was not run).

    The role task reads with ``failed_when: false``, which clears ``failed``: a read
    that failed is one without ``neighbors``, its ``msg`` says why."""
    if not isinstance(read, dict) or read.get("skipped"):
        return None
    if read.get("failed") or read.get("unreadable") or "neighbors" not in read:
        return _text(read.get("msg")) or "the LLDP neighbour table could not be read"
    return None


def counters_failures(snapshots):
    """[(phase, why)] of the switch_fabric_counters snapshots that could not be read."""
    out = []
    for phase in _sorted((snapshots or {}) if isinstance(snapshots, dict) else {}):
        snap = snapshots[phase]
        if isinstance(snap, dict) and snap.get("failed"):
            out.append((phase, _text(snap.get("msg")) or "the counters could not be read"))
    return out


# the parts of a counters snapshot read apart (switch_counters): each can fail while the switch answers
PARTIAL_READS = (
    ("errors_msg", "interface error counters"),
    ("lossless_msg", "lossless state"),
    ("optics_msg", "optical modules"),
    ("ber_msg", "FEC / bit error rates"),
)


def partial_failures(snapshots):
    """[(phase, what, why)] of the parts of the switch_fabric_counters snapshots that failed while the
    switch answered (the snapshot itself was read)."""
    out = []
    for phase in _sorted((snapshots or {}) if isinstance(snapshots, dict) else {}):
        snap = snapshots[phase]
        if isinstance(snap, dict) and not snap.get("failed"):
            out += [(phase, what, _text(snap[key])) for key, what in PARTIAL_READS if snap.get(key)]
    return out


def switch_findings(scope, lldp=None, counters=None, left=()):
    """``SWITCH_UNREACHABLE`` for each switch of ``scope`` that could not be read, and the report check.

    ``lldp``: {switch: registered switch_lldp result}; ``counters``: {switch:
    {phase: snapshot}} (role task switch_fabric/counters.yml); ``left``: the
    switches in scope that were no longer in the switch plays (failed earlier in
    the run). Returns ``(findings, check)``; ``check`` is None without switches in scope."""
    lldp, counters, left = lldp or {}, counters or {}, set(left or ())
    findings, cases, partly = [], [], {}
    scope = _sorted(dict.fromkeys(scope or ()))
    if not scope:
        return [], None
    for sw in scope:
        why = []
        if sw in left:
            why.append("it left the play before verification read it (failed or unreachable earlier in the run)")
        lf = lldp_failure(lldp.get(sw))
        if lf:
            why.append(f"LLDP neighbours: {lf}")
        why += [f"counters ({phase}): {w}" for phase, w in counters_failures(counters.get(sw))]
        if not why:
            # it answered; a part it could not read is named (the checks that needed it say it is unproven)
            part = [f"{what} ({phase}): {w}" for phase, what, w in partial_failures(counters.get(sw))]
            cases.append({"name": f"{sw} reachable", "ok": True, "code": None, "message": ("partly read: " + "; ".join(part)) if part else None})
            if part:
                partly[sw] = part
            continue
        msg = f"{sw}: not verified: " + "; ".join(why)
        f = finding("SWITCH_UNREACHABLE", msg, switch=sw, check="switches", reasons=why)
        findings.append(f)
        cases.append({"name": f"{sw} reachable", "ok": False, "code": f["code"], "message": msg, "findings": [f]})
    n = len(cases)
    return findings, {
        "passed": not findings,
        "in_scope": n,
        "unreachable": [f["switch"] for f in findings],
        "partly_read": partly,
        "detail": f"{n - len(findings)}/{n} switches in scope read"
        + (f"; unreachable: {', '.join(f['switch'] for f in findings)}" if findings else "")
        + (f"; partly read: {', '.join(partly)}" if partly else ""),
        "cases": cases,
    }


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def _host_list(key, value):
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{key} must be a list of inventory host names (ansible_play_hosts_all), got {type(value).__name__} {str(value)[:80]!r}")
    return value


def report(ctx):
    """checks ``nodes`` and ``switches``: NODE_NOT_VERIFIED for each node in ``scope``
    (ansible_play_hosts_all) that is not in ``nodes`` (the hosts still in the play), with the
    reason the verification's rescue recorded (``verify_fabric_not_verified``) or the controller's
    probe (``probes``: the registered loop of report.yml's ping); SWITCH_UNREACHABLE for each switch in
    ``switch_scope`` that left the switch plays (``switches_left``) or whose reads failed."""
    errors = ctx.template_error if isinstance(ctx.template_error, tuple) else (ctx.template_error,)
    errors += (TypeError, ValueError, AttributeError)
    try:
        out = _accounting(ctx)
    except errors as e:
        raise Unreadable(f"the scope could not be read: {e}") from e
    findings, checks = [], {}
    for name, (found, c) in out.items():
        if c:
            findings += found
            checks[name] = c
    return findings, checks


def _accounting(ctx):
    args, hostvars, out = ctx.args, ctx.hostvars, {}
    scope = args.get("scope")
    if scope is not None:
        scope = [str(n) for n in _host_list("scope", ctx.template(scope))]
        missing = [n for n in scope if n not in ctx.nodes]
        records = {n: ctx.template(hostvars[n]["verify_fabric_not_verified"]) for n in missing if n in hostvars and "verify_fabric_not_verified" in hostvars[n]}
        probes = {}
        for r in (ctx.template(args.get("probes") or {}) or {}).get("results") or []:
            if isinstance(r, dict) and r.get("item") is not None:
                probes[str(r["item"])] = r
        out["nodes"] = node_findings(scope, ctx.nodes, records, probes)
    sw_scope = args.get("switch_scope")
    if sw_scope is not None:
        sw_scope = [str(s) for s in _host_list("switch_scope", ctx.template(sw_scope))]
        present = [s for s in sw_scope if s in hostvars]
        lldp = {s: ctx.template(hostvars[s]["switch_fabric_lldp"]) for s in present if "switch_fabric_lldp" in hostvars[s]}
        counters = {s: ctx.template(hostvars[s]["switch_fabric_counters"]) for s in present if "switch_fabric_counters" in hostvars[s]}
        left = [str(s) for s in _host_list("switches_left", ctx.template(args.get("switches_left") or []))]
        out["switches"] = switch_findings(sw_scope, lldp, counters, left)
    return out
