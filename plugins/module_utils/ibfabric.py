"""Run the InfiniBand diag tools and check the subnet (module ib_fabric_check).

``sminfo``, ``ibnetdiscover``, ``iblinkinfo`` and ``smpquery pkeys`` run
through a ``Runner`` under ``timeout <seconds>`` with the extra environment
the module is given (the locale stays C); their output is parsed
(``ibdiag``) and compared with the intent (``ibcheck``). A subnet that
cannot be discovered raises ``ToolFailure`` with what was found so far.
"""
from ansible_collections.linerate.fabric.plugins.module_utils import ibcheck, ibdiag
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, ToolFailure


def diag(run, timeout, args, env):
    """The tool's output (stderr appended when it printed any); a non-zero exit raises ParseError naming the tool."""
    rc, out, err = run(["timeout", str(timeout)] + args, env=env)
    text = out + (("\n" + err) if err.strip() else "")
    if rc != 0:
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

    def tool(args):
        return diag(run, p["timeout"], args, env)

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
    if "topology" in p["checks"] or "partitions" in p["checks"]:
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
        findings += ibcheck.check_topology(nd, li, p["expected_links"], p["switch_links"],
                                           p["switches"], p["link_width"], p["link_speed_gbps"])
        result["summary"] = {
            "switches": sum(1 for n in nd["nodes"].values() if n["type"] == "switch"),
            "cas": sum(1 for n in nd["nodes"].values() if n["type"] == "ca"),
            "links": len(nd["links"]),
        }
    if "partitions" in p["checks"] and p["partitions"]:
        tables, names = pkey_tables(tool, nd, p["partitions"], p["expected_links"])
        findings += ibcheck.check_partitions(p["partitions"], tables, names)
        result["pkey_tables"] = {g: ["0x%04x" % k for k in v] for g, v in tables.items() if v}
    result["findings"] = findings
    return result


def findings_message(findings):
    """The failure message of ``fail_on_findings``: each finding's code, node and port."""
    return "InfiniBand fabric check: " + "; ".join(
        f"{f['code']} {f['node']}" + (f" port {f['port']}" if f["port"] is not None else "") for f in findings)
