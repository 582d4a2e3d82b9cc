# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""The NCCL checks: nccl-tests results and NCCL's configuration read back, in findings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.linerate.fabric.plugins.module_utils.checks.cabling import _where
from ansible_collections.linerate.fabric.plugins.module_utils.checks.thresholds import derived, nccl_threshold_gbytes
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import untangle_tagged
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import parse_nccl_conf

# ---------------------------------------------------------------- nccl

_HOST_LINE_RE = re.compile(r"^\s*(?P<host>[\w.-]+):\d+:\d+ \[\d+\]")


def split_log_by_host(text):
    """NCCL log lines grouped by the host that printed them (``host:pid:tid [dev]``).

    mpirun ``--tag-output`` output is untangled first (lines split by another
    rank's chunk are whole again, see ``nccl_log.untangle_tagged``).
    """
    out = {}
    for line in untangle_tagged(text).splitlines():
        m = _HOST_LINE_RE.match(line)
        if m:
            out.setdefault(m.group("host"), []).append(line)
    return {h: "\n".join(lines) for h, lines in out.items()}


def _socket_finding(run, node, ports, log, check):
    """NCCL_NET_SOCKET: the node's NCCL fell back to a socket transport, with the reason its settings give."""
    hca = (run.get("hca") or {}).get(node) or log.get("env", {}).get("NCCL_IB_HCA")
    names = {p["device"] for p in ports}
    listed = {h.split(":")[0].lstrip("^=") for h in (hca or "").split(",") if h}
    if hca and not (listed & names):
        layer, why = "hca_selection", f"NCCL_IB_HCA={hca} names no cabled device ({', '.join(sorted(names))})"
    elif log.get("env", {}).get("NCCL_IB_DISABLE") == "1":
        layer, why = "hca_selection", "NCCL_IB_DISABLE=1"
    else:
        layer, why = "interface_selection", "no usable IB device (ports down, driver, or interface selection)"
    return finding("NCCL_NET_SOCKET", f"{node}: NCCL used NET/{log['transport']}, not NET/IB: {why}", node=node, layer=layer, check=check)


def _no_gdr_findings(node, log, check, expect_gdr):
    """NCCL_NO_GDR: NET/IB without GPU Direct RDMA where it is expected."""
    if not (expect_gdr and log.get("gdr") is False):
        return []
    return [
        finding(
            "NCCL_NO_GDR",
            f"{node}: GPU Direct RDMA disabled (no GDRDMA channels): nvidia_peermem not loaded or NCCL_NET_GDR_LEVEL too strict",
            node=node,
            check=check,
        )
    ]


def _few_nics_findings(node, ports, log, check):
    """NCCL_FEW_NICS: one per cabled NIC that NCCL's NET/IB does not use."""
    used = {d["device"] for d in log.get("ib_devices") or []}
    if not (ports and len(used) < len(ports)):
        return []
    return [
        finding(
            "NCCL_FEW_NICS",
            f"{node}: NCCL uses {len(used)} of {len(ports)} cabled NICs; {p['device']} carries no traffic",
            node=node,
            device=p["device"],
            switch=p.get("switch"),
            switch_port=p.get("switch_port"),
            check=check,
        )
        for p in ports
        if p["device"] not in used
    ]


def _log_error_findings(node, log, check):
    """The error a node's NCCL log ends with: a QP set-up, a transport retry, or another failure."""
    err = log.get("error")
    if not err:
        return []
    code = (
        "NCCL_QP_FAILED" if re.search(r"ibv_modify_qp|GID", err) else "NCCL_TRANSPORT_RETRY" if re.search(r"status=12|error 12|retry", err) else "NCCL_FAILED"
    )
    return [finding(code, f"{node}: {err}", node=node, check=check)]


def _host_findings(run, node, ports, log, check, expect_gdr):
    """The findings of one node's NCCL log: a socket fallback says all; else GDR, NICs used, its error."""
    transport = log.get("transport")
    if transport and transport != "IB":
        return [_socket_finding(run, node, ports, log, check)]
    out = []
    if transport == "IB":
        out += _no_gdr_findings(node, log, check, expect_gdr) + _few_nics_findings(node, ports, log, check)
    return out + _log_error_findings(node, log, check)


def _busbw_findings(run, fabric, nics_min, suspects, check):
    """NCCL_BUSBW_LOW for a run that finished under the threshold, its layer from the other findings."""
    test = run.get("test", "all_reduce_perf")
    busbw = run.get("busbw")
    threshold = nccl_threshold_gbytes(fabric, nics_min)
    if run.get("error") or (busbw is not None and busbw >= threshold):
        return []
    layer = (
        "hca_selection"
        if "NCCL_NET_SOCKET" in suspects
        else "peermem"
        if "NCCL_NO_GDR" in suspects
        else "hca_selection"
        if "NCCL_FEW_NICS" in suspects
        else "pfc"
    )
    got = "no result" if busbw is None else f"{busbw:.2f} GB/s"
    return [
        finding(
            "NCCL_BUSBW_LOW",
            f"{test}: bus bandwidth {got} < {threshold:g} GB/s ({derived(fabric)['nccl_busbw_min_gbytes_per_nic']:g} GB/s x {nics_min} NICs)",
            layer=layer,
            check=check,
            actual=busbw,
            expected=threshold,
        )
    ]


def nccl_findings(run, fabric, hosts, expect_gdr=True):
    """Findings from one nccl-tests run.

    ``run``: {"test", "busbw" (GB/s at the largest size, or None), "error",
    "logs": {host: parsed NCCL log}, "hca": {host: NCCL_IB_HCA or None}}.
    ``hosts``: {node: rdma_ports}. Host names in logs are inventory names
    (the lab's and most clusters' hostnames); ``aliases`` in ``run`` maps
    others.
    """
    out = []
    test = run.get("test", "all_reduce_perf")
    check = f"nccl:{test}"
    aliases = run.get("aliases") or {}
    cabled = {n: len(p) for n, p in hosts.items()}
    nics_min = min(cabled.values()) if cabled else 0
    for host, log in sorted((run.get("logs") or {}).items()):
        node = aliases.get(host, host)
        out += _host_findings(run, node, hosts.get(node) or [], log, check, expect_gdr)
    suspects = {f["code"] for f in out}
    if suspects & {"NCCL_QP_FAILED", "NCCL_TRANSPORT_RETRY"}:
        # the other ranks only saw their peer go away: the specific failure explains them
        out = [f for f in out if f["code"] != "NCCL_FAILED"]
    if run.get("error") and not any(f["code"] in ("NCCL_QP_FAILED", "NCCL_TRANSPORT_RETRY", "NCCL_FAILED") for f in out):
        out.append(finding("NCCL_FAILED", f"{test}: {run['error']}", check=check))
    return out + _busbw_findings(run, fabric, nics_min, suspects, check)


# ---------------------------------------------------------------- NCCL's configuration, read back


def _hca_list(value):
    """``=mlx5_0:1,mlx5_1`` -> ['mlx5_0:1', 'mlx5_1:1'] (NCCL's '=' exact-match prefix dropped, port 1 implied)."""
    v = str(value or "").strip()
    return [x if ":" in x else f"{x}:1" for x in (y.strip() for y in v.lstrip("^=").split(",")) if x]


def tuned_file_findings(node, state):
    """NCCL_TUNED_MISSING for a node whose play saw the tuning sweep's tuned file (controller) absent,
    unreadable or unusable while tuning is in use (``state``: role task nccl_env.yml's
    ``verify_fabric_nccl_tuned``: path, exists, readable, required, problems); [] otherwise."""
    if not state or not _truthy(state.get("required")):
        return []
    path = state.get("path") or "the tuned NCCL file"
    if not _truthy(state.get("exists")):
        why = "absent"
    elif not _truthy(state.get("readable")):
        why = "not readable"
    elif state.get("problems"):
        why = "; ".join(state["problems"])
    else:
        return []
    return [
        finding(
            "NCCL_TUNED_MISSING",
            f"{node}: {path}: {why} while NCCL tuning is in use; its tuner rows are "
            "not applied (restore it: playbooks/nccl_tune.yml -e verify_fabric_nccl_tune_rollback=true, or "
            "sweep again)",
            node=node,
            check="nccl_conf",
        )
    ]


def _truthy(value):
    return value is True or str(value).lower() in ("true", "yes", "1")


def nccl_conf_findings(node, conf, expected, gid_by_device, fabric, sl=None):
    """Compare a node's NCCL configuration with what the intent and the facts say it must be.

    ``conf``: ``{"path", "settings"}`` (settings from parse_nccl_conf) or ``{"path", "error"}``;
    ``expected``: nccl_env_settings' ``settings`` for this node (the one derivation both
    role nccl_env and the benchmarks use); ``gid_by_device``: ``{device: discovered RoCE v2
    IPv4 GID index}``. The traffic class is checked against the intent's derived
    ToS (``derived()``, data_dscp << 2), not against nccl_env_settings' output, so a
    wrong NCCL derivation cannot hide;
    ``conf["invalid"]``: the parse error of a file NCCL would mis-read; ``sl``: the
    InfiniBand service level the benchmarks ran on (None: not checked).
    """
    path = (conf or {}).get("path") or "/etc/nccl.conf"
    if (conf or {}).get("invalid"):
        return [finding("NCCL_CONF_INVALID", f"{node}: {path}: {conf['invalid']}", node=node, check="nccl_conf")]
    if not conf or conf.get("error") or conf.get("settings") is None:
        return [finding("NCCL_CONF_MISSING", f"{node}: {path}: {(conf or {}).get('error') or 'not read'}", node=node, check="nccl_conf")]
    got = conf["settings"]
    out = []
    transport = (fabric or {}).get("transport", "roce")
    if transport == "roce":
        dscp = ((fabric or {}).get("roce") or {}).get("data_dscp", DEFAULTS["roce"]["data_dscp"])
        want_tc = derived(fabric)["tos"]
        tc = got.get("NCCL_IB_TC")
        if tc is None or not str(tc).isdigit() or int(tc) != want_tc:
            out.append(
                finding(
                    "NCCL_TC_MISMATCH",
                    f"{node}: {path} has " + ("no NCCL_IB_TC (NCCL's default class 0)" if tc is None else f"NCCL_IB_TC={tc}") + f"; the intent's data DSCP "
                    f"{dscp} needs {want_tc} (DSCP << 2) - NCCL's traffic would ride another class than the "
                    "no-drop one the benchmarks prove",
                    node=node,
                    check="nccl_conf",
                    evidence={"path": path, "NCCL_IB_TC": tc, "expected": want_tc},
                )
            )
        gid = got.get("NCCL_IB_GID_INDEX")
        for device, index in sorted((gid_by_device or {}).items()):
            if index is None:
                continue  # no RoCE v2 GID at all: GID_MISSING from the port check says so
            if gid is None or not str(gid).isdigit() or int(gid) != int(index):
                out.append(
                    finding(
                        "NCCL_GID_INDEX_MISMATCH",
                        f"{node} {device}: {path} has NCCL_IB_GID_INDEX={'(unset)' if gid is None else gid}; the port's RoCE v2 IPv4 GID is at index {index}",
                        node=node,
                        device=device,
                        check="nccl_conf",
                        evidence={"path": path, "NCCL_IB_GID_INDEX": gid, "discovered": index},
                    )
                )
    if transport == "infiniband" and sl is not None:
        used = got.get("NCCL_IB_SL", "0")  # NCCL's default service level is 0
        if str(used) != str(sl):
            out.append(
                finding(
                    "NCCL_SL_MISMATCH",
                    f"{node}: {path} has NCCL_IB_SL={used}; the benchmarks ran on SL {sl}",
                    node=node,
                    check="nccl_conf",
                    evidence={"path": path, "NCCL_IB_SL": used, "expected": sl},
                )
            )
    want_hca = _hca_list((expected or {}).get("NCCL_IB_HCA"))
    have_hca = _hca_list(got.get("NCCL_IB_HCA"))
    if want_hca and sorted(want_hca) != sorted(have_hca):
        missing = [h for h in want_hca if h not in have_hca]
        extra = [h for h in have_hca if h not in want_hca]
        out.append(
            finding(
                "NCCL_HCA_MISMATCH",
                f"{node}: {path} has NCCL_IB_HCA={got.get('NCCL_IB_HCA', '(unset)')}; the cabled active ports are "
                f"{','.join(want_hca)}" + (f" (missing {','.join(missing)})" if missing else "") + (f" (not cabled/active {','.join(extra)})" if extra else ""),
                node=node,
                device=(missing or extra or [""])[0].split(":")[0] or None,
                check="nccl_conf",
                evidence={"path": path, "NCCL_IB_HCA": got.get("NCCL_IB_HCA"), "expected": (expected or {}).get("NCCL_IB_HCA")},
            )
        )
    return out


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def nccl_conf_check(nodes, data, fabric, cabling_index, sl=None):
    """Findings and report cases of the NCCL configuration read back (role task ports.yml)."""
    findings, cases = [], []
    for n in nodes:
        raw = data[n].get("verify_fabric_nccl_conf")
        if not raw:
            continue
        conf = {"path": raw.get("path")}
        if raw.get("error"):
            conf["error"] = raw["error"]
        else:
            try:
                conf["settings"] = parse_nccl_conf(raw.get("text") or "")
            except ParseError as e:
                conf["invalid"] = str(e)
        expected = data[n].get("verify_fabric_nccl_expected") or {}
        f = nccl_conf_findings(n, conf, expected.get("settings") or {}, expected.get("gids") or {}, fabric, sl)
        f += tuned_file_findings(n, data[n].get("verify_fabric_nccl_tuned"))
        for x in f:
            if x.get("device"):
                where = _where(cabling_index, n, x["device"])
                x["switch"] = where["switch"]
                x["switch_port"] = None if where["switch_port"] is None else str(where["switch_port"])
        findings += f
        cases.append(
            {"name": f"{n} nccl.conf", "ok": not f, "code": f[0]["code"] if f else None, "message": "; ".join(x["message"] for x in f) or None, "findings": f}
        )
    return findings, cases


def conf_report(ctx):
    """check ``nccl_conf``: NCCL's configuration read back from each node."""
    sl = ctx.template(ctx.args.get("sl"))
    f, cases = nccl_conf_check(ctx.nodes, ctx.data, ctx.fabric, ctx.cabling, None if sl in (None, "") else int(sl))
    if not cases:
        return [], {}
    return f, {
        "nccl_conf": {
            "passed": not f,
            "cases": cases,
            "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} nodes' NCCL_IB_TC / NCCL_IB_GID_INDEX / NCCL_IB_HCA agree with the intent and facts",
        }
    }


def report(ctx):
    """checks ``nccl:<test>``: each nccl-tests run (the task's ``nccl`` argument)."""
    findings, checks = [], {}
    for run_ in ctx.nccl_runs:
        if run_.get("skipped_run") or run_.get("skipped"):
            continue
        f = nccl_findings(run_, ctx.fabric, ctx.hosts, bool(ctx.args.get("expect_gdr", True)))
        findings += f
        nics = min((len(p) for p in ctx.hosts.values()), default=0)
        threshold = nccl_threshold_gbytes(ctx.fabric, nics)
        name = f"nccl:{run_.get('test', 'all_reduce_perf')}"
        busbw = run_.get("busbw")
        logs = run_.get("logs") or {}
        checks[name] = {
            "passed": not f,
            "busbw_gbytes": busbw,
            "threshold_gbytes": threshold,
            "transports": {h: (lg or {}).get("transport") for h, lg in logs.items()},
            "gdr": {h: (lg or {}).get("gdr") for h, lg in logs.items()},
            "detail": (f"busbw {busbw:.2f} GB/s" if busbw is not None else "no result")
            + f" (threshold {threshold:g} GB/s)"
            + (f"; {run_['error'][:160]}" if run_.get("error") else ""),
            "cases": [{"name": name, "ok": not f, "code": f[0]["code"] if f else None, "message": "; ".join(x["message"] for x in f) or None, "findings": f}],
        }
    return findings, checks
