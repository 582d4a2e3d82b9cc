"""Drift findings of the read-only audit (playbooks/audit.yml).

The audit runs every host role and the switch role in check mode; each role
registers the results of the modules that hold its state (mlxconfig,
roce_qos, the NCCL configuration templates, switch_config, ...). What a
check-mode result *would* change is drift: the live state no longer is what
the intent makes it. This module turns those results into findings with
stable codes (faults.FAULT_CODES ``DRIFT_*``), each naming the node or
switch, the device, the layer, the key, the current and the intended value.

Stdlib only: used by the audit filter and by tests.
"""

import json

from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import Unreadable

MODE_TEXT = "audit: read-only, nothing was changed"

# Layer of the audit -> (finding code, report layer).
LAYER_CODES = {
    "firmware": ("DRIFT_FIRMWARE", "firmware"),
    "roce_qos": ("DRIFT_ROCE_QOS", "pfc"),
    "nccl_conf": ("DRIFT_NCCL_CONF", "hca_selection"),
    "rdma_netdev": ("DRIFT_HOST", "interface_selection"),
    "peermem": ("DRIFT_HOST", "peermem"),
    "mofed": ("DRIFT_HOST", "host"),
    "host": ("DRIFT_HOST", "host"),
    "subnet_manager": ("DRIFT_SUBNET_MANAGER", "subnet_manager"),
    "switch": ("DRIFT_SWITCH", "switch"),
}
SHOW_MAX = 60


def _show(value):
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= SHOW_MAX else text[: SHOW_MAX - 3] + "..."


def _results(registered):
    """The list of module results in a registered variable (a loop's ``results`` or one result).

    A result with a ``ports`` list (rdma_netdev, roce_qos: every port in one
    execution) is one result per port, as a loop over the ports would have
    registered; each names its port (``device``/``netdev``; rdma_netdev's
    ``name`` is the netdev).
    """
    if not isinstance(registered, dict):
        return []
    if isinstance(registered.get("results"), list):
        results = [r for r in registered["results"] if isinstance(r, dict)]
    else:
        results = [registered]
    out = []
    for r in results:
        if isinstance(r.get("ports"), list) and not r.get("skipped"):
            for port in r["ports"]:
                if isinstance(port, dict):
                    out.append(dict(port, netdev=port.get("netdev") or port.get("name")))
        else:
            out.append(r)
    return out


def _would_change(result):
    return bool(result.get("changed")) and not result.get("skipped") and not result.get("failed")


def _flatten(state, prefix=""):
    out = {}
    for key, value in (state or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _drift(layer, message, node=None, device=None, key=None, current=None, intended=None, **extra):
    code, report_layer = LAYER_CODES[layer]
    return faults.finding(
        code, message, node=node, device=device, layer=report_layer, check="drift", audit_layer=layer, key=key, current=current, intended=intended, **extra
    )


def firmware_drift(node, registered, pci_to_device=None):
    """mlxconfig results: a desired value not in Next Boot is DRIFT_FIRMWARE; a
    desired value set for the next boot but not running yet is FIRMWARE_PENDING."""
    out = []
    names = pci_to_device or {}
    for r in _results(registered):
        if r.get("skipped") or r.get("failed"):
            continue
        pci = r.get("device") or (r.get("item") or {}).get("pci")
        dev = names.get(pci, pci)
        before, after = r.get("before") or {}, r.get("after") or {}
        drifted = set()
        for key in sorted(after):
            was = (before.get(key) or {}).get("next_boot")
            want = (after.get(key) or {}).get("next_boot")
            if r.get("changed") and was != want:
                drifted.add(key)
                out.append(
                    _drift(
                        "firmware", f"{node} {dev} ({pci}): firmware {key} is {was} (next boot), the intent makes it {want}", node, dev, key, was, want, pci=pci
                    )
                )
        for key in r.get("pending_params") or []:
            if key in drifted:
                continue
            cell = before.get(key) or {}
            out.append(
                faults.finding(
                    "FIRMWARE_PENDING",
                    f"{node} {dev} ({pci}): firmware {key} is {cell.get('current')} running, "
                    f"{cell.get('next_boot')} set for the next boot; needs a {r.get('reset_kind')} "
                    f"({r.get('reset_reason')})",
                    node=node,
                    device=dev,
                    check="drift",
                    audit_layer="firmware",
                    key=key,
                    current=cell.get("current"),
                    intended=cell.get("next_boot"),
                    pci=pci,
                )
            )
    return out


def state_drift(layer, node, registered):
    """Modules returning ``before``/``after`` state dicts (roce_qos, rdma_netdev,
    nvidia_peermem): one finding per key that would change."""
    out = []
    for r in _results(registered):
        if not _would_change(r):
            continue
        item = r.get("item") if isinstance(r.get("item"), dict) else {}
        dev = r.get("device") or item.get("device") or r.get("netdev") or item.get("netdev")
        before, after = r.get("before"), r.get("after")
        if isinstance(before, dict) and isinstance(after, dict):
            flat_b, flat_a = _flatten(before), _flatten(after)
            keys = [k for k in sorted(set(flat_b) | set(flat_a)) if flat_b.get(k) != flat_a.get(k)]
            for key in keys:
                out.append(
                    _drift(
                        layer,
                        f"{node} {dev or ''}: {key} is {_show(flat_b.get(key))}, the intent makes it {_show(flat_a.get(key))}".replace("  ", " "),
                        node,
                        dev,
                        key,
                        flat_b.get(key),
                        flat_a.get(key),
                    )
                )
            if keys:
                continue
        out.append(_changed(layer, node, r, dev))
    return out


def _conf_lines(text):
    """``{NAME: value}`` of the ``NAME=value`` lines of a configuration file's text."""
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        for prefix in ("export ",):
            if line.startswith(prefix):
                line = line[len(prefix) :]
        name, sep, value = line.partition("=")
        out[name.strip()] = value.strip() if sep else None
    return out


def file_drift(layer, node, registered):
    """File results (template/copy with diff, or host_files with one diff per file): one finding per
    NAME=value that differs, or one for the file when it is absent or only its comments/attributes differ."""
    out = []
    for r in _results(registered):
        if not _would_change(r):
            continue
        path = r.get("dest") or r.get("path") or (r.get("invocation") or {}).get("module_args", {}).get("dest")
        diffs = r.get("diff") if isinstance(r.get("diff"), list) else [r.get("diff") or {}]
        found = False
        for d in diffs:
            if not isinstance(d, dict) or "before" not in d or "after" not in d:
                continue
            if not isinstance(d["before"], str) or not isinstance(d["after"], str):
                continue
            path = d.get("after_header") or d.get("before_header") or path
            was, want = _conf_lines(d["before"]), _conf_lines(d["after"])
            for key in sorted(set(was) | set(want)):
                if was.get(key) != want.get(key):
                    found = True
                    cur = "absent" if key not in was else was[key]
                    new = "absent" if key not in want else want[key]
                    out.append(_drift(layer, f"{node} {path}: {key} is {_show(cur)}, the intent makes it {_show(new)}", node, None, key, cur, new, path=path))
        files = r.get("files") if isinstance(r.get("files"), list) else None
        if files is not None:
            # host_files: each file that would change without a NAME=value difference
            # (created empty, removed, comments or mode only) is a finding of its own.
            named = {f["path"] for f in out if f.get("path")}
            for entry in files:
                if isinstance(entry, dict) and entry.get("path") not in named:
                    out.append(_changed(layer, node, r, None, what=f"{entry.get('path')} ({entry.get('action')})"))
        elif not found:
            out.append(_changed(layer, node, r, None, what=path))
    return out


def _changed(layer, node, r, dev, what=None):
    """A result that would change without a readable before/after."""
    label = what or (r.get("item") if isinstance(r.get("item"), str) else None) or ", ".join(r.get("changed_paths") or []) or r.get("msg") or "state"
    cmds = r.get("commands") or []
    detail = f"; would run: {'; '.join(' '.join(map(str, c)) if isinstance(c, list) else str(c) for c in cmds[:3])}" if cmds else ""
    return _drift(layer, f"{node} {dev or ''}: {label} differs from the intent{detail}".replace("  ", " "), node, dev, str(label), None, None)


def switch_drift(switch, registered):
    """switch_config's check-mode result: the commands it would push are the drift."""
    out = []
    for r in _results(registered):
        if not _would_change(r):
            continue
        commands = [str(c) for c in r.get("commands") or []]
        shown = "; ".join(commands[:5]) + (f"; ... ({len(commands)} commands)" if len(commands) > 5 else "")
        out.append(
            faults.finding(
                "DRIFT_SWITCH",
                f"{switch}: the running config differs from the intent; would push: {shown or 'a replacement'}",
                switch=switch,
                layer="switch",
                check="drift",
                audit_layer="switch",
                key="running-config",
                current=r.get("before"),
                intended=r.get("after"),
                commands=commands,
            )
        )
    return out


# The layers and how their registered results read.
HOST_LAYERS = {
    "firmware": None,  # firmware_drift
    "roce_qos": state_drift,
    "rdma_netdev": state_drift,
    "peermem": state_drift,
    "nccl_conf": file_drift,
    "mofed": state_drift,
    "host": file_drift,
    "subnet_manager": file_drift,
}


def host_drift(node, collected, pci_to_device=None):
    """Every drift finding of one node from ``{layer: [registered, ...]}``."""
    out = []
    for layer in sorted(collected or {}, key=str):
        if layer not in HOST_LAYERS:
            raise ValueError(f"unknown audit layer {layer!r} (known: {', '.join(sorted(HOST_LAYERS))})")
        regs = collected[layer]
        for reg in regs if isinstance(regs, list) else [regs]:
            if layer == "firmware":
                out += firmware_drift(node, reg, pci_to_device)
            else:
                out += HOST_LAYERS[layer](layer, node, reg)
    return out


def layer_errors(node, errors):
    """AUDIT_LAYER_FAILED per layer whose role failed on the node (playbooks/tasks/audit_layer.yml):
    its drift is not known, so the audit cannot pass on it."""
    out = []
    for e in errors or []:
        if not isinstance(e, dict):
            continue
        layer = str(e.get("layer") or e.get("role") or "?")
        task = f" at '{e['task']}'" if e.get("task") else ""
        out.append(
            faults.finding(
                "AUDIT_LAYER_FAILED",
                f"{node}: the {layer} layer could not be audited (role {e.get('role') or layer}{task}: {e.get('msg') or 'failed'}); its drift is unproven",
                node=node,
                check="drift",
            )
        )
    return out


def pci_names(devices):
    """{pci: device} from the RDMA facts' ``devices`` ({device: {"pci": ...}})."""
    return {d["pci"]: name for name, d in (devices or {}).items() if isinstance(d, dict) and d.get("pci")}


def drift_findings(hosts, switches=None):
    """All drift findings: ``hosts`` = {node: {"layers": {layer: [registered]},
    "devices": RDMA facts' devices}}, ``switches`` = {switch: registered switch_config result}."""
    out = []
    for node in sorted(hosts or {}, key=str):
        h = hosts[node] or {}
        out += host_drift(node, h.get("layers") or {}, pci_names(h.get("devices")))
        out += layer_errors(node, h.get("errors"))
    for sw in sorted(switches or {}, key=str):
        out += switch_drift(sw, switches[sw])
    return out


def drift_check(findings, nodes, switches=()):
    """The report's ``drift`` check: one case per node and switch."""
    cases = []
    for who in list(nodes) + list(switches):
        mine = [f for f in findings if (f.get("node") or f.get("switch")) == who and f["severity"] == "error"]
        cases.append(
            {
                "name": f"{who} drift",
                "ok": not mine,
                "code": mine[0]["code"] if mine else None,
                "message": "; ".join(f["message"] for f in mine) or None,
                "findings": mine,
            }
        )
    bad = sum(not c["ok"] for c in cases)
    return {
        "passed": bad == 0,
        "cases": cases,
        "detail": f"{len(cases) - bad}/{len(cases)} nodes and switches as the intent makes them"
        + (f"; {sum(1 for f in findings if f['severity'] == 'error')} drifted key(s)" if bad else ""),
    }


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report(ctx):
    """check ``drift``: the audit's check-mode results of every role (``drift``)."""
    if ctx.args.get("drift") is None:
        return [], {}
    d = ctx.template(ctx.args["drift"])
    if d is None:
        return [], {}
    try:
        f = drift_findings((d or {}).get("hosts") or {}, (d or {}).get("switches") or {})
    except (ValueError, TypeError, AttributeError) as e:
        raise Unreadable(f"the audit's drift results could not be read: {e}") from e
    return f, {"drift": drift_check(f, sorted(((d or {}).get("hosts") or {}), key=str), sorted(((d or {}).get("switches") or {}), key=str))}
