"""Parsers for the schedulers' node records: Slurm's ``scontrol show node <name>`` (the key=value
record of src/api/node_info.c slurm_sprint_node_table) and ``kubectl get node <name> -o json``.
Pure functions, stdlib only, importable on their own (host/drain.py reads and acts on them).
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]


# Reason= runs to the end of its line, or (scontrol -o, one line) to the optional keys printed after it.
_REASON = re.compile(r"(?:^|\s)Reason=(.*?)(?=\s(?:Comment|Extra|InstanceId|InstanceType|ReservationName)=|$)")


class ScontrolNode(TypedDict):
    """``parse_scontrol_node``: the node's name, its state (``base`` and ``+`` flags), the reason and who set it."""

    name: str
    state: str
    base: str
    flags: list[str]
    reason: Optional[str]
    reason_by: Optional[str]


class KubectlNode(TypedDict):
    """``parse_kubectl_node``: what a drain reads and changes."""

    name: Optional[str]
    unschedulable: bool
    taints: list[dict[str, Any]]
    annotations: dict[str, str]


def parse_scontrol_node(text: Optional[str]) -> ScontrolNode:
    """``scontrol show node <name>`` -> {"name", "state", "base", "flags", "reason", "reason_by"}.

    The record is key=value pairs separated by blanks; ``Reason=`` runs to the end of its line
    and ends with `` [user@time]`` when slurmctld stamped it (slurm_sprint_node_table)."""
    name: Optional[str] = None
    state: Optional[str] = None
    reason_text: Optional[str] = None
    by: Optional[str] = None
    for line in (text or "").splitlines():
        s = line.strip()
        r = _REASON.search(s)
        if r:
            reason_text = r.group(1)
            m = re.fullmatch(r"(.*) \[([^\[\]@]*)@([^\[\]]*)\]", reason_text)
            if m:
                reason_text, by = m.group(1), f"{m.group(2)}@{m.group(3)}"
            s = s[: r.start()]
        for tok in s.split():
            k, _sep, v = tok.partition("=")
            if k == "NodeName" and name is None:
                name = v
            elif k == "State":
                state = v
    if name is None or state is None:
        raise ParseError("scontrol", "no NodeName=/State= in the output", text)
    parts = state.split("+")
    return ScontrolNode(name=name, state=state, base=parts[0].rstrip("*~#!%$@^-"), flags=parts[1:], reason=reason_text, reason_by=by)


def parse_kubectl_node(text: Any) -> KubectlNode:
    """``kubectl get node <name> -o json`` -> {"name", "unschedulable", "taints", "annotations"}."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as err:
        raise ParseError("kubectl", f"not JSON: {err}", text) from None
    if not isinstance(doc, dict) or doc.get("kind") != "Node":
        raise ParseError("kubectl", "not a Node object (kind %s)" % (doc.get("kind") if isinstance(doc, dict) else type(doc).__name__), text)
    spec, meta = doc.get("spec") or {}, doc.get("metadata") or {}
    return KubectlNode(
        name=meta.get("name"),
        unschedulable=bool(spec.get("unschedulable")),
        taints=[t for t in spec.get("taints") or [] if isinstance(t, dict)],
        annotations=dict(meta.get("annotations") or {}),
    )
