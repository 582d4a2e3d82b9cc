"""Run the InfiniBand diag tools and check the subnet (module ib_fabric_check).

``sminfo``, ``ibnetdiscover``, ``iblinkinfo``, ``smpquery pkeys`` and ``ibqueryerrors`` run
through a ``Runner`` under ``timeout <seconds>`` with the extra environment
the module is given (the locale stays C); their output is parsed
(``ibdiag``) and compared with the intent (``ibcheck``). A subnet that
cannot be discovered raises ``ToolFailure`` with what was found so far.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import ib as ibcheck
from ansible_collections.linerate.fabric.plugins.module_utils.checks.sched_topology import ib_observed_map
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import ibdiag
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import parse_ibqueryerrors

# ibqueryerrors reads every port's PortCounters over the whole subnet. Its own thresholds come from
# /etc/infiniband-diags/error_thresholds (a site may have raised them); an empty threshold file makes
# every threshold zero (ibqueryerrors(8): "The default threshold is zero"), so every non-zero counter
# is printed and fabric.verify.ib_error_thresholds alone decides. Exit status 1 means "errors beyond
# thresholds" (ibqueryerrors(8) EXIT STATUS), not a failure; read-only: never -k / -K (clear).
IBQUERYERRORS_ARGV = ["ibqueryerrors", "--threshold-file", "/dev/null"]


def diag(run, timeout, args, env, ok_rcs=(0,)):
    """The tool's output (stderr appended when it printed any); another exit than ``ok_rcs`` raises ParseError naming the tool."""
    rc, out, err = run(["timeout", str(timeout)] + args, env=env)
    text = out + (("\n" + err) if err.strip() else "")
    if rc not in ok_rcs:
        raise ParseError(args[0], f"exit {rc}: {err.strip() or out.strip()}", text)
    return text


def pkey_tables(tool, nd, partitions, expected_links):
    """``(tables, names)``: each member port's pkey table (None when unreadable) by port GUID, and its name.

    ``tool(args)`` returns a diag tool's text; only CA ports the discovery shows with a LID are queried.
    """
    lids = {}
    names = {ibdiag.norm_guid(e["guid"]): f"{e['host']} {e['device']}" for e in expected_links if e.get("guid")}
    for n in nd["nodes"].values():
        if n["type"] != "ca":
            continue
        for pnum, port in n["ports"].items():
            if port.get("port_guid") and port.get("lid"):
                lids[port["port_guid"]] = (port["lid"], pnum)
                names.setdefault(port["port_guid"], n["desc"])
    tables = {}
    for part in partitions:
        for guid in part["guids"]:
            guid = ibdiag.norm_guid(guid)
            if guid in tables or guid not in lids:
                continue
            try:
                tables[guid] = ibdiag.parse_smpquery_pkeys(tool(["smpquery", "pkeys", str(lids[guid][0])]))["pkeys"]
            except ParseError:
                tables[guid] = None
    return tables, names


def fabric_check(run, p):
    """ib_fabric_check's result ({changed, findings, sminfo | sminfo_error, summary, pkey_tables}) from its parameters."""
    env = {k: str(v) for k, v in p["environment"].items()}
    for key, value in sorted((p.get("error_thresholds") or {}).items()):
        if key not in ibcheck.IB_PORT_ERROR_DEFAULTS:
            raise ToolFailure(f"error_thresholds.{key}: {value!r}: unknown counter; allowed: " + ", ".join(ibcheck.IB_PORT_ERROR_DEFAULTS))
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ToolFailure(f"error_thresholds.{key}: {value!r}: allowed: an integer >= 0 (the count a port may show)")

    def tool(args, ok_rcs=(0,)):
        return diag(run, p["timeout"], args, env, ok_rcs)

    findings, result = [], {"changed": False}
    if "sm" in p["checks"]:
        try:
            sm = ibdiag.parse_sminfo(tool(["sminfo"]))
            result["sminfo"] = sm
        except ParseError as e:
            sm = None
            result["sminfo_error"] = str(e)
        findings += ibcheck.check_sm(sm, p["expected_sm_guid"] or None, p["expected_sm_priority"], p["expected_sm_node"])
    nd = None
    if {"topology", "partitions", "errors"} & set(p["checks"]):
        try:
            nd = ibdiag.parse_ibnetdiscover(tool(["ibnetdiscover"]))
        except ParseError as e:
            raise ToolFailure(f"cannot discover the subnet: {e}", findings=findings, **result) from e
        if nd["warnings"]:
            result["discovery_warnings"] = list(nd["warnings"])
    if "topology" in p["checks"]:
        try:
            li = ibdiag.parse_iblinkinfo(tool(["iblinkinfo"]))
        except ParseError as e:
            raise ToolFailure(f"iblinkinfo failed: {e}", findings=findings, **result) from e
        findings += ibcheck.check_topology(nd, li, p["expected_links"], p["switch_links"], p["switches"], p["link_width"], p["link_speed_gbps"])
        result["summary"] = {
            "switches": sum(1 for n in nd["nodes"].values() if n["type"] == "switch"),
            "cas": sum(1 for n in nd["nodes"].values() if n["type"] == "ca"),
            "links": len(nd["links"]),
        }
        # the scheduler's topology is rendered from this (playbooks/sched_topology.yml), not from the inventory
        result["observed"] = ib_observed_map(nd, p["expected_links"], p["switches"])
    if "partitions" in p["checks"] and p["partitions"]:
        tables, names = pkey_tables(tool, nd, p["partitions"], p["expected_links"])
        findings += ibcheck.check_partitions(p["partitions"], tables, names)
        result["pkey_tables"] = {g: ["0x%04x" % k for k in v] for g, v in tables.items() if v}
    if "errors" in p["checks"]:
        findings += port_errors(tool, nd, p, result)
    result["findings"] = findings
    return result


def port_errors(tool, nd, p, result):
    """The errors check: ibqueryerrors over the whole subnet, judged against the thresholds (IB_LINK_ERRORS).

    ``result`` gains ``port_errors`` ({"<GUID>/<port>": {counter: value}}, the input of a later
    check's ``errors_baseline``) and ``port_errors_summary`` (ibqueryerrors' own counts). A sweep
    that fails or prints what is not ibqueryerrors output is the finding IB_COUNTERS_UNREADABLE
    (with ``port_errors_error``): the counters are not proven, never passed.
    """
    try:
        iqe = parse_ibqueryerrors(tool(IBQUERYERRORS_ARGV, ok_rcs=(0, 1)))
    except ParseError as e:
        result["port_errors_error"] = str(e)
        return [
            ibcheck.finding(
                "IB_COUNTERS_UNREADABLE",
                p.get("expected_sm_node") or "subnet",
                None,
                f"the subnet's port error counters could not be read ({e}): errors on switch ports and inter-switch links are not proven",
            )
        ]
    limits = dict(ibcheck.IB_PORT_ERROR_DEFAULTS)
    limits.update({k: int(v) for k, v in (p.get("error_thresholds") or {}).items()})
    counters = ibcheck.port_error_counters(iqe)
    result["port_errors"] = counters
    result["port_errors_summary"] = dict(iqe["summary"] or {}, thresholds=limits, window="baseline" if p.get("errors_baseline") else "since last clear")
    return ibcheck.check_port_errors(counters, nd, p["switches"], p["expected_links"], limits, p.get("errors_baseline") or None)


def findings_message(findings):
    """The failure message of ``fail_on_findings``: each finding's code, node and port (and the far end of a link)."""
    return "InfiniBand fabric check: " + "; ".join(
        f"{f['code']} {f['node']}"
        + (f" port {f['port']}" if f["port"] is not None else "")
        + (f" <-> {f['peer']} port {f['peer_port']}" if f["code"] == "IB_LINK_ERRORS" and f.get("peer") else "")
        for f in findings
    )
