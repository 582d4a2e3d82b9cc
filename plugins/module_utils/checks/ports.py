"""The judge of the ``ports`` check: what rdma_port_check read of each cabled port (probes/ports.py)
against the intent, and the report's ``ports`` check from every node's result.
"""

from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import Unreadable
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding


def port_findings(node, ports, expected, fabric):
    """Port check of one node. ``ports``: what rdma_port_check returned per device."""
    out = []
    speed = fabric.get("link_speed_gbps")
    width = fabric.get("link_width")
    mtu = (fabric.get("mtu") or {}).get("host")
    roce = fabric.get("transport", "roce") == "roce"
    seen = {p.get("device"): p for p in ports or []}
    for exp in expected or []:
        dev = exp["device"]
        where = {"node": node, "device": dev, "switch": exp.get("switch"), "switch_port": exp.get("switch_port"), "check": "ports"}
        p = seen.get(dev)
        if p is None or not p.get("present", True):
            out.append(finding("PORT_MISSING", f"{node} {dev}: device not found ({(p or {}).get('error') or 'absent'})", **where))
            continue
        state, phys = p.get("state"), p.get("phys_state")
        if state != "ACTIVE" or (phys and phys != "LinkUp"):
            out.append(
                finding(
                    "PORT_DOWN",
                    f"{node} {dev} port {p.get('port', 1)}: state {state}, physical state {phys} (cabled to {exp.get('switch')} {exp.get('switch_port')})",
                    **where,
                )
            )
            continue
        if speed and p.get("speed_gbps") is not None and float(p["speed_gbps"]) < float(speed):
            out.append(
                finding("PORT_SPEED", f"{node} {dev}: link at {p['speed_gbps']:g} Gb/s, expected {speed} Gb/s", actual=p["speed_gbps"], expected=speed, **where)
            )
        if width and p.get("width") is not None and int(p["width"]) != int(width):
            out.append(finding("PORT_WIDTH", f"{node} {dev}: link width {p['width']}X, expected {width}X", actual=p["width"], expected=width, **where))
        if roce and mtu and p.get("mtu") is not None and int(p["mtu"]) != int(mtu):
            out.append(
                finding(
                    "MTU_MISMATCH", f"{node} {dev} ({p.get('netdev')}): MTU {p['mtu']}, intent fabric.mtu.host {mtu}", actual=p["mtu"], expected=mtu, **where
                )
            )
        if roce:
            addr = (exp.get("address") or "").split("/")[0]
            ipv4 = p.get("ipv4") or []
            gid = p.get("gid")
            if p.get("gid_table") and (gid is None or gid.get("type") != "RoCE v2" or not gid.get("ipv4")):
                index = (gid or {}).get("index", p.get("gid_index"))
                what = (
                    "no GID index to check: none holds a RoCE v2 IPv4 GID on this node (NCCL_IB_GID_INDEX could not be discovered)"
                    if index is None
                    else f"GID index {index} is {'empty' if gid is None else gid.get('type') + ' ' + str(gid.get('gid'))}, not a RoCE v2 IPv4 GID"
                )
                out.append(
                    finding(
                        "GID_MISSING",
                        f"{node} {dev} ({p.get('netdev')}): {what}" + (f"; rail address {addr} is not on the netdev" if addr and addr not in ipv4 else ""),
                        **where,
                    )
                )
            elif not ipv4 or (addr and addr not in ipv4):
                out.append(
                    finding(
                        "GID_MISSING",
                        f"{node} {dev} ({p.get('netdev')}): no RoCE v2 IPv4 GID" + (f"; rail address {addr} is not on the netdev" if addr else ""),
                        **where,
                    )
                )
    return out


def port_check(results, hosts):
    """The ``ports`` check of the report from what rdma_port_check returned on each node.

    ``results``: {node: the module's result}; the findings are the node's own
    (rdma_port_check computes them with ``port_findings``), never computed again.
    ``hosts``: {node: rdma_ports}, one case per cabled port. A skipped result
    gives no cases; a result without ``findings`` raises KeyError naming the node.
    Returns ``(findings, check or None)``.
    """
    findings, cases = [], []
    for node, result in results.items():
        if not result or result.get("skipped"):
            continue
        if "findings" not in result:
            raise KeyError(f"{node}: the rdma_port_check result has no findings ({result.get('msg') or 'not run'})")
        mine_all = list(result["findings"])
        findings += mine_all
        for p in hosts.get(node) or []:
            mine = [x for x in mine_all if x["device"] == p["device"]]
            cases.append(
                {
                    "name": f"{node} {p['device']}",
                    "ok": not mine,
                    "code": mine[0]["code"] if mine else None,
                    "message": "; ".join(x["message"] for x in mine) or None,
                    "findings": mine,
                }
            )
    if not cases:
        return findings, None
    return findings, {"passed": all(c["ok"] for c in cases), "cases": cases, "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} ports OK"}


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report(ctx):
    """check ``ports``: the findings rdma_port_check computed on each node, taken as they are."""
    try:
        found, check = port_check({n: ctx.data[n].get("verify_fabric_port_result") for n in ctx.nodes}, ctx.hosts)
    except KeyError as e:
        raise Unreadable(f"the results could not be read: {e}") from e
    ctx.hints = [(x["node"], x["device"]) for x in ctx.findings + found if x.get("device")]
    return found, ({"ports": check} if check else {})
