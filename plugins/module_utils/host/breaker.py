# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""The drain budget and its circuit breaker (docs/audit.md#the-drain-budget-and-its-breaker).

A drain takes capacity out of a running cluster. When the evidence is wrong (the controller lost its
path, a threshold is wrong, a leaf rebooted), a drain per node with a finding turns one fault into an
outage. So before any drain:

- ``plan`` decides, from the run's findings after attribution (checks/attribution.py), which nodes
  would be drained for faults of their own (``candidates``: new drains, not nodes linerate already
  holds drained), and counts the nodes the run could not see (``NODE_NOT_VERIFIED``: its evidence is
  incomplete). When the candidates plus the unseen exceed the per-run budget, or the drains of the
  sliding window plus the candidates exceed the window's, the breaker trips: nothing is drained and
  nothing returned in this run, and it stays tripped across runs until an operator resets it
  (``playbooks/drain_breaker_reset.yml``).
- ``record`` writes what the run did into the state file (drains with their time and reason, returns,
  a trip); ``reset`` closes the breaker, keeping who reset it and when.

The budget (``fabric.remediation.budget``): ``max_nodes_per_run`` and ``max_percent_per_run`` of the
fleet (the inventory's gpu_nodes), ``window_hours``, ``max_nodes_per_window`` and
``max_percent_per_window``; the allowance is the lower of the count and the percentage, and at least 1
(one faulty node of a small cluster can always be drained).

The state file (JSON, 0600 in a 0700 directory, written atomically) lives in linerate's durable
output directory (``<linerate_output_dir>/remediation/state.json``). An unreadable state file is an
error, never an empty state: an empty state would forget a tripped breaker and the window's drains.

Stdlib only.
"""

import calendar
import json
import math
import os
import tempfile
import time

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.findings import NEVER_DRAIN

STATE_VERSION = 1
DEFAULTS = {"max_nodes_per_run": 10, "max_percent_per_run": 5, "window_hours": 24, "max_nodes_per_window": 20, "max_percent_per_window": 10}
RESET_PLAYBOOK = "playbooks/drain_breaker_reset.yml"


class StateError(ToolFailure):
    """The state file cannot be read or written (the host layer's ToolFailure, for the one
    case its callers tell apart: verify_report goes on without the state when remediation is off)."""


def empty_state():
    return {"version": STATE_VERSION, "breaker": {"tripped": False}, "drained": {}, "events": []}


def now_stamp(now=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))


def _epoch(stamp):
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def load(path):
    """The state at ``path``; the empty state when the file does not exist. Raises ``StateError`` when it
    exists and cannot be read or is not linerate's state (never forgets a tripped breaker silently)."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return empty_state()
    except OSError as e:
        raise StateError(f"{path}: cannot be read ({e})") from None
    try:
        state = json.loads(text)
    except ValueError as e:
        raise StateError(f"{path}: not JSON ({e}); move it aside only after reading it: it may hold a tripped breaker and the window's drains") from None
    if (
        not isinstance(state, dict)
        or state.get("version") != STATE_VERSION
        or not isinstance(state.get("breaker"), dict)
        or not isinstance(state.get("drained"), dict)
        or not isinstance(state.get("events"), list)
    ):
        raise StateError(f"{path}: not a linerate drain state (version {STATE_VERSION} with breaker, drained, events)")
    return state


def save(path, state):
    """Write ``state`` atomically (a temporary file in the same directory, then a rename), 0600 in 0700."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
        fd, tmp = tempfile.mkstemp(prefix=".state.", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(state, f, indent=1, sort_keys=True)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as e:
        raise StateError(f"{path}: cannot be written ({e})") from None


def budget(policy):
    given = dict((policy or {}).get("budget") or {})
    return {k: given.get(k, v) for k, v in DEFAULTS.items()}


def allowance(count, percent, fleet):
    """The lower of ``count`` and ``percent`` of ``fleet`` nodes, at least 1."""
    return max(1, min(int(count), int(math.floor(float(percent) * max(0, int(fleet)) / 100.0))))


def window_drains(state, hours, now=None):
    """The drain events of the last ``hours`` hours."""
    t = time.time() if now is None else now
    return [e for e in state.get("events") or [] if e.get("action") == "drain" and e.get("at") and t - _epoch(e["at"]) <= float(hours) * 3600]


def own_faults(findings, select):
    """{node: [finding]} of the findings that would drain their node: ``select`` (drain.selected with the
    policy) of those that are the node's own (not ``explained_by`` an element, not in NEVER_DRAIN)."""
    by_node = {}
    for f in findings or []:
        if f.get("node") and not f.get("explained_by") and f.get("code") not in NEVER_DRAIN:
            by_node.setdefault(f["node"], []).append(f)
    return {n: sel for n, fs in by_node.items() for sel in [select(fs)] if sel}


def plan(findings, state, policy, fleet, select, enabled=True, now=None):
    """The run's remediation decision, before any scheduler is touched.

    Returns {"enabled", "breaker": {"tripped", "tripped_now", "since", "reason", "reset"}, "budget",
    "allowed": {"run", "window"}, "drain": [nodes to drain], "held": {node: why}, "unseen": [nodes],
    "window_drains": n}."""
    b = budget(policy)
    own = own_faults(findings, select)
    held_drained = set((state.get("drained") or {}))
    candidates = sorted(n for n in own if n not in held_drained)
    unseen = sorted({f["node"] for f in findings or [] if f.get("code") == "NODE_NOT_VERIFIED" and f.get("node")})
    explained = sorted({f["node"] for f in findings or [] if f.get("node") and f.get("explained_by") and f["node"] not in own})
    run_allow = allowance(b["max_nodes_per_run"], b["max_percent_per_run"], fleet)
    win_allow = allowance(b["max_nodes_per_window"], b["max_percent_per_window"], fleet)
    recent = window_drains(state, b["window_hours"], now)
    br = dict(state.get("breaker") or {"tripped": False})
    out = {
        "enabled": bool(enabled),
        "budget": b,
        "allowed": {"run": run_allow, "window": win_allow},
        "candidates": candidates,
        "unseen": unseen,
        "window_drains": len(recent),
        "drain": [],
        "held": {},
        "fleet": int(fleet),
    }
    for n in explained:
        out["held"][n] = "its failures are explained by " + ", ".join(
            sorted({f["explained_by"] for f in findings if f.get("node") == n and f.get("explained_by")})
        )
    reason = None
    if br.get("tripped"):
        reason = None  # tripped before: it stays so, with its own reason
    elif len(candidates) + len(unseen) > run_allow:
        reason = (
            f"{len(candidates)} node(s) to drain and {len(unseen)} not verified in this run exceed the "
            f"per-run budget of {run_allow} (fabric.remediation.budget: max_nodes_per_run "
            f"{b['max_nodes_per_run']}, max_percent_per_run {b['max_percent_per_run']} of {fleet})"
        )
    elif len(recent) + len(candidates) > win_allow:
        reason = (
            f"{len(recent)} drain(s) in the last {b['window_hours']} h and {len(candidates)} more exceed "
            f"the window's budget of {win_allow} (max_nodes_per_window {b['max_nodes_per_window']}, "
            f"max_percent_per_window {b['max_percent_per_window']} of {fleet})"
        )
    if reason and enabled:
        br = {"tripped": True, "since": now_stamp(now), "reason": reason}
        out["tripped_now"] = True
    out["breaker"] = dict(br, reset=f"ansible-playbook -i <inventory> {RESET_PLAYBOOK}")
    if not enabled:
        out["held"].update({n: "draining is off (fabric.remediation.drain / linerate_drain)" for n in candidates})
    elif br.get("tripped"):
        why = f"the drain breaker is tripped ({br.get('reason')})"
        out["held"].update({n: why for n in candidates})
    else:
        # every node with a fault of its own; those linerate already holds drained cost no budget
        out["drain"] = sorted(own)
    return out


def breaker_finding(decision, finding):
    """DRAIN_BREAKER_TRIPPED when the decision's breaker is open (``finding``: findings.finding)."""
    br = decision.get("breaker") or {}
    if not br.get("tripped") or not decision.get("enabled"):
        return []
    held = sorted(decision.get("held") or {})
    return [
        finding(
            "DRAIN_BREAKER_TRIPPED",
            f"the drain breaker is tripped{' in this run' if decision.get('tripped_now') else ' since ' + str(br.get('since'))}: "
            f"{br.get('reason')}; nothing is drained or returned to service until an operator resets it "
            f"({br['reset']})" + (f"; held: {', '.join(held)}" if held else ""),
            check="remediation",
            since=br.get("since"),
            reason=br.get("reason"),
            held=held,
        )
    ]


def record(state, decision, drained=(), returned=(), reasons=None, now=None):
    """The state after the run: the breaker as decided, each drain and return as an event, the set of
    nodes linerate holds drained. Returns (new state, changed)."""
    new = json.loads(json.dumps(state))
    stamp = now_stamp(now)
    changed = False
    if decision.get("tripped_now"):
        br = decision["breaker"]
        new["breaker"] = {"tripped": True, "since": br["since"], "reason": br["reason"]}
        new["events"].append({"action": "trip", "at": stamp, "reason": br["reason"]})
        changed = True
    for n in drained or ():
        why = (reasons or {}).get(n, "")
        if n not in state.get("drained", {}):
            new["events"].append({"action": "drain", "node": n, "at": stamp, "reason": why})
        new["drained"][n] = {"at": (state.get("drained", {}).get(n) or {}).get("at", stamp), "reason": why}
        changed = True
    for n in returned or ():
        if n in new["drained"]:
            del new["drained"][n]
        new["events"].append({"action": "return", "node": n, "at": stamp})
        changed = True
    # keep a bounded history: the events of the last 30 days and at most 10,000
    t = time.time() if now is None else now
    keep = [e for e in new["events"] if t - _epoch(e["at"]) <= 30 * 86400][-10000:]
    if len(keep) != len(new["events"]):
        new["events"] = keep
        changed = True
    return new, changed


def reset(state, by, now=None):
    """(state with the breaker closed, changed): changed only when it was tripped."""
    if not (state.get("breaker") or {}).get("tripped"):
        return state, False
    new = json.loads(json.dumps(state))
    stamp = now_stamp(now)
    new["events"].append({"action": "reset", "at": stamp, "by": by, "was": {k: v for k, v in new["breaker"].items() if k != "tripped"}})
    new["breaker"] = {"tripped": False, "reset_at": stamp, "reset_by": by}
    return new, True
