"""RoCE cabling by LLDP: compare the neighbours switches and hosts see with the inventory (pure).

Inputs, all plain data:

- ``hosts``: ``{node: [rdma_ports entry, ...]}`` (device, netdev, switch, switch_port);
- ``uplinks``: ``{switch: [{"port", "peer", "peer_port"}, ...]}`` (``switch_uplinks``);
- ``switch_reads``: ``{switch: switch_lldp result}`` (``neighbors`` per port, or
  ``unreadable`` with ``msg``); a switch absent here was not read;
- ``host_reads``: ``{node: {"macs": {netdev: mac}, "names": [...], "lldpctl": text or None,
  "error": text}}``: the node's MAC addresses (how lldpd names a host port by
  default), its own names (short and FQDN) and ``lldpctl -f json`` where lldpd runs.

Matching is as real switches report hosts: the system name is a host name,
short or fully qualified (compared on its first label, case-insensitively),
and the port ID is the netdev's MAC (lldpd's default) or its name (port ID
subtype ifname, or the port description). A switch peer's port is compared
by name, with EOS's short ``Et`` form expanded.

Findings (codes in findings.FAULT_CODES), each naming both ends - node, device
(netdev), switch, switch port, and for switch-to-switch links the peer:

- CABLE_SWAPPED     two ports of one switch see each other's intended neighbour
- CABLE_MISWIRED    a port sees another known endpoint than intended, or a
                    known endpoint sits on a port the inventory does not cable
- CABLE_MISSING     no LLDP neighbour on an intended switch-to-switch link
                    (switches run LLDP, so silence means no cable)
- CABLE_UNEXPECTED  a neighbour the inventory does not know, on a port it does not cable
- CABLE_UNVERIFIED  what could not be read (switch unreachable, no lldpd on a
                    host, a host port the switch sees no LLDP from) and what
                    that leaves unproven
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.checks.accounting import lldp_failure
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.lldp import normalize_mac, parse_lldpctl_json

CHECK = "cabling"
# Management and internal ports: their neighbours are not the fabric's concern.
MGMT_PORT = re.compile(r"^(eth\d+|Management\d.*|mgmt\d*|Ma\d.*|lo|bridge|docker\d*)$", re.I)


def short_name(name):
    """'node1.example.com' / 'NODE1' -> 'node1'."""
    return str(name or "").strip().split(".", 1)[0].lower()


def port_key(name):
    """A switch port name compared loosely: 'Et1/1' == 'Ethernet1/1', case-insensitive."""
    s = str(name or "").strip()
    s = re.sub(r"^Et(?=\d)", "Ethernet", s, flags=re.I)
    return s.lower()


def _label(end):
    if end[0] == "host":
        return f"{end[1]} {end[2]}" + (f" ({end[3]})" if end[3] else "")
    if end[0] == "switch":
        return f"{end[1]} {end[2]}"
    return f"unknown neighbour {end[1] or '(no system name)'} port {end[2] or '?'}"


def expected_ends(hosts, uplinks):
    """({(switch, port_key): end}, {(switch, port_key): port name as the inventory writes it});
    end = ("host", node, device, netdev) | ("switch", name, port, None)."""
    exp, names = {}, {}
    for node, ports in (hosts or {}).items():
        for p in ports or []:
            if p.get("switch") and p.get("switch_port") not in (None, ""):
                key = (p["switch"], port_key(p["switch_port"]))
                exp[key], names[key] = ("host", node, p["device"], p.get("netdev")), str(p["switch_port"])
    for sw, ups in (uplinks or {}).items():
        for u in ups or []:
            key, back = (sw, port_key(u["port"])), (u["peer"], port_key(u["peer_port"]))
            exp[key], names[key] = ("switch", u["peer"], str(u["peer_port"]), None), str(u["port"])
            if back not in exp:
                exp[back], names[back] = ("switch", sw, str(u["port"]), None), str(u["peer_port"])
    return exp, names


def switch_ports(sw, ends, names):
    """[(port, end, where)] of one switch's cabled ports (expected_ends) in port order: ``where`` names
    the far end (node and device, or peer_switch and peer_port) with switch and switch_port, as a
    finding on that port carries them."""
    out = []
    for key in sorted((k for k in ends if k[0] == sw), key=lambda k: names[k]):
        port, end = names[key], ends[key]
        where = {"node": end[1], "device": end[2]} if end[0] == "host" else {"peer_switch": end[1], "peer_port": end[2]}
        where.update(switch=sw, switch_port=port)
        out.append((port, end, where))
    return out


class _Identify:
    """Who a neighbour is, from its system name and port ID / description."""

    def __init__(self, hosts, switches, host_reads):
        self.nodes, self.netdevs, self.macs = {}, {}, {}
        for node, ports in (hosts or {}).items():
            names = {short_name(node)}
            read = (host_reads or {}).get(node) or {}
            names |= {short_name(n) for n in read.get("names") or [] if n}
            for n in names:
                self.nodes[n] = node
            for p in ports or []:
                if p.get("netdev"):
                    self.netdevs[(node, p["netdev"])] = p["device"]
            for netdev, mac in (read.get("macs") or {}).items():
                m = normalize_mac(mac)
                if m:
                    self.macs[(node, m)] = netdev
        self.switches = {short_name(s): s for s in switches}

    def __call__(self, nb):
        name = short_name(nb.get("system_name"))
        if name in self.nodes:
            node = self.nodes[name]
            netdev = None
            mac = normalize_mac(nb.get("port_id"))
            if mac and (node, mac) in self.macs:
                netdev = self.macs[(node, mac)]
            for cand in (nb.get("port_id"), nb.get("port_descr")):
                if netdev is None and (node, cand) in self.netdevs:
                    netdev = cand
            device = self.netdevs.get((node, netdev))
            return ("host", node, device, netdev)
        if name in self.switches:
            port = nb.get("port_id")
            return ("switch", self.switches[name], port, None)
        return ("unknown", nb.get("system_name"), nb.get("port_id"), None)


def _same(exp, obs):
    """Whether an observed end is the expected one (a host port whose netdev is unknown matches on the node)."""
    if exp[0] != obs[0] or exp[1] != obs[1]:
        return False
    if exp[0] == "host":
        return obs[2] is None or obs[2] == exp[2]
    return port_key(exp[2]) == port_key(obs[2]) or obs[2] is None


def _f(code, message, exp_end, switch, port, **extra):
    node = device = None
    if exp_end and exp_end[0] == "host":
        node, device = exp_end[1], exp_end[2]
    return finding(code, message, node=node, device=device, switch=switch, switch_port=port, check=CHECK, **extra)


def _peer(end):
    if end is None:
        return {}
    if end[0] == "host":
        return {"peer_node": end[1], "peer_device": end[2], "peer_netdev": end[3]}
    if end[0] == "switch":
        return {"peer_switch": end[1], "peer_port": end[2]}
    return {"peer_system_name": end[1], "peer_port_id": end[2]}


def check_cabling(hosts, uplinks, switch_reads, host_reads=None, host_lldp=True):
    """Findings and report cases of the cabling check. Returns ``(findings, cases)``."""
    host_reads = host_reads or {}
    switches = set(uplinks or {}) | {p["switch"] for ps in (hosts or {}).values() for p in ps or [] if p.get("switch")}
    switches |= {u["peer"] for ups in (uplinks or {}).values() for u in ups or []}
    ident = _Identify(hosts, switches, host_reads)
    exp, names = expected_ends(hosts, uplinks)
    findings, readable, observed = _switch_observed(switches, switch_reads, exp, ident)
    reported = set()  # expected (switch, port_key) already explained
    endpoints_reported = set()
    findings += _swaps(exp, observed, readable, names, reported, endpoints_reported)
    cases = []
    for (sw, pk), e in sorted(exp.items()):
        case, mine = _port_case(sw, pk, e, observed, readable, names, reported, endpoints_reported, findings)
        findings += [m for m in mine if m not in findings]
        cases.append(case)
    findings += _uncabled_ports(exp, observed, names, endpoints_reported)
    findings += _host_side(hosts, host_reads, ident, endpoints_reported, host_lldp)
    return findings, cases


def _switch_observed(switches, switch_reads, exp, ident):
    """``(findings, readable, observed)``: CABLE_UNVERIFIED for each switch whose LLDP neighbours were not
    read, the switches that were, and what they show: {(switch, port_key): [(end, local port name)]}."""
    findings, readable, observed = [], {}, {}
    for sw in sorted(switches):
        read = (switch_reads or {}).get(sw)
        if not read or read.get("unreadable") or read.get("failed") or read.get("skipped"):
            why = (read or {}).get("msg") or "not read"
            ends = [e for (s, _p), e in exp.items() if s == sw]
            findings.append(
                _f(
                    "CABLE_UNVERIFIED",
                    f"{sw}: LLDP neighbours could not be read ({why}): the cabling of its {len(ends)} intended link(s) is unproven from the switch side",
                    None,
                    sw,
                    None,
                    unproven=[_label(e) for e in ends],
                )
            )
            continue
        readable[sw] = True
        for port, nbs in (read.get("neighbors") or {}).items():
            for nb in nbs or []:
                observed.setdefault((sw, port_key(port)), []).append((ident(nb), port))
    return findings, readable, observed


def _swaps(exp, observed, readable, names, reported, endpoints_reported):
    """CABLE_SWAPPED: two ports of one switch each showing the other's intended end (``reported``,
    ``endpoints_reported`` gain both)."""
    findings = []
    for (sw, pk), e in sorted(exp.items()):
        if sw not in readable or (sw, pk) in reported:
            continue
        obs = [pair[0] for pair in observed.get((sw, pk), [])]
        if any(_same(e, o) for o in obs):
            continue
        for (sw2, pk2), e2 in sorted(exp.items()):
            if sw2 != sw or pk2 == pk or (sw2, pk2) in reported:
                continue
            obs2 = [pair[0] for pair in observed.get((sw2, pk2), [])]
            if any(_same(e2, o) for o in obs) and any(_same(e, o) for o in obs2) and not any(_same(e2, o) for o in obs2):
                p1, p2 = _port_name(observed, sw, pk, names), _port_name(observed, sw2, pk2, names)
                findings.append(
                    _f(
                        "CABLE_SWAPPED",
                        f"{sw} {p1} and {p2}: cables swapped: {p1} should have {_label(e)} and sees "
                        f"{_label(e2)}; {p2} should have {_label(e2)} and sees {_label(e)}",
                        e,
                        sw,
                        p1,
                        **_peer(e2),
                        other_switch_port=p2,
                    )
                )
                reported |= {(sw, pk), (sw2, pk2)}
                endpoints_reported |= {e[:3], e2[:3]}
                break
    return findings


def _port_case(sw, pk, e, observed, readable, names, reported, endpoints_reported, findings):
    """``(case, mine)``: the report case of one intended link and its findings (a swap found before,
    a missing or unproven neighbour, another end than intended)."""
    port = _port_name(observed, sw, pk, names)
    name = f"{sw} {port} <- {_label(e)}"
    if sw not in readable:
        return {"name": name, "skipped": True, "message": f"{sw} not read"}, []
    mine = []
    obs = observed.get((sw, pk), [])
    if (sw, pk) in reported:
        mine = [
            f
            for f in findings
            if f["code"] == "CABLE_SWAPPED" and f["switch"] == sw and port_key(port) in (port_key(f["switch_port"]), port_key(f.get("other_switch_port")))
        ]
    elif any(_same(e, pair[0]) for pair in obs):
        pass
    elif not obs:
        if e[0] == "switch":
            mine = [
                _f(
                    "CABLE_MISSING",
                    f"{sw} {port}: no LLDP neighbour where {_label(e)} should be (switches run LLDP: no cable, or the link is down)",
                    e,
                    sw,
                    port,
                    **_peer(e),
                )
            ]
        else:
            mine = [
                _f(
                    "CABLE_UNVERIFIED",
                    f"{sw} {port}: no LLDP neighbour where {_label(e)} should be: "
                    f"lldpd not running on {e[1]}, LLDP off on the port, or no cable; this port's cabling is "
                    "unproven",
                    e,
                    sw,
                    port,
                )
            ]
    else:
        o = obs[0][0]
        mine = [_f("CABLE_MISWIRED", f"{sw} {port}: should have {_label(e)}, LLDP shows {_label(o)}", e, sw, port, **_peer(o))]
        endpoints_reported.add(e[:3])
    errors = [m for m in mine if m["severity"] == "error"]
    return {
        "name": name,
        "ok": not errors,
        "code": mine[0]["code"] if mine else None,
        "message": "; ".join(m["message"] for m in mine) or None,
        "findings": mine,
    }, mine


def _uncabled_ports(exp, observed, names, endpoints_reported):
    """Neighbours on ports the inventory does not cable: a known end there is CABLE_MISWIRED, anything
    else CABLE_UNEXPECTED (management ports aside)."""
    findings = []
    for (sw, pk), items in sorted(observed.items()):
        if (sw, pk) in exp:
            continue
        for o, port in items:
            if MGMT_PORT.match(port):
                continue
            if o[0] in ("host", "switch"):
                where = None
                for key, e in exp.items():
                    if _same(e, o):
                        where = key
                findings.append(
                    _f(
                        "CABLE_MISWIRED",
                        f"{sw} {port}: LLDP shows {_label(o)}, which the inventory "
                        f"cables to {where[0] + ' ' + _port_name(observed, *where, names) if where else 'no port'}",
                        o if o[0] == "host" else None,
                        sw,
                        port,
                        **_peer(o),
                    )
                )
                endpoints_reported.add(o[:3])
            else:
                findings.append(_f("CABLE_UNEXPECTED", f"{sw} {port}: {_label(o)}, on a port the inventory does not cable", None, sw, port, **_peer(o)))
    return findings


def _port_name(observed, sw, pk, intended=None):
    """The port's name as the switch prints it (else as the inventory writes it)."""
    for _o, port in observed.get((sw, pk), []):
        return port
    return (intended or {}).get((sw, pk), pk)


def _host_side(hosts, host_reads, ident, endpoints_reported, host_lldp):
    """What each host's lldpd sees on its RDMA netdevs (where lldpd runs)."""
    out = []
    if not host_lldp:
        return out
    for node, ports in sorted((hosts or {}).items()):
        read = host_reads.get(node)
        if read is not None and read.get("host_lldp") is False:  # the inventory reads the switch side only here
            continue
        if not read or not read.get("lldpctl"):
            why = (read or {}).get("error") or "not read"
            out.append(
                finding(
                    "CABLE_UNVERIFIED",
                    f"{node}: lldpctl could not be read ({why}): the host side of its "
                    f"{len(ports or [])} RDMA port(s)' cabling is unproven (the switch side still counts)",
                    node=node,
                    check=CHECK,
                )
            )
            continue
        try:
            table = parse_lldpctl_json(read["lldpctl"])
        except ParseError as e:
            out.append(
                finding("CABLE_UNVERIFIED", f"{node}: lldpctl output unreadable ({e}): the host side of its cabling is unproven", node=node, check=CHECK)
            )
            continue
        for p in ports or []:
            nbs = table["neighbors"].get(p.get("netdev")) or []
            if not nbs or ("host", node, p["device"]) in endpoints_reported:
                continue
            want_sw, want_port = p.get("switch"), str(p.get("switch_port"))
            seen = []
            for nb in nbs:
                sw = ident.switches.get(short_name(nb.get("system_name")))
                ports_seen = {port_key(nb.get("port_id")), port_key(nb.get("port_descr"))}
                if sw == want_sw and port_key(want_port) in ports_seen:
                    break
                seen.append(f"{nb.get('system_name') or '(no system name)'} {nb.get('port_id') or '?'}")
            else:
                out.append(
                    finding(
                        "CABLE_MISWIRED",
                        f"{node} {p['device']} ({p.get('netdev')}): lldpd sees {', '.join(seen)}, the inventory cables it to {want_sw} {want_port}",
                        node=node,
                        device=p["device"],
                        switch=want_sw,
                        switch_port=want_port,
                        check=CHECK,
                        seen=seen,
                    )
                )
    return out


def summary(findings, cases, observed=None):
    """The report section; ``observed`` (``observed_map``) adds ``observed_leaves`` {node: [leaf]}: the
    switches LLDP saw each node's ports on, which the next host rollout spreads its waves over."""
    errors = [f for f in findings if f["severity"] == "error"]
    ok = sum(1 for c in cases if c.get("ok"))
    out = {
        "passed": not errors,
        "cases": cases,
        "detail": f"{ok}/{len(cases)} intended links seen by LLDP as cabled; {len(errors)} error(s), {len(findings) - len(errors)} warning(s)",
    }
    if observed is not None:
        out["observed_leaves"] = {node: sorted({p["switch"] for p in ports}) for node, ports in sorted((observed.get("hosts") or {}).items())}
    return out


def cabling_index(hosts):
    """{(node, device): rdma_ports entry} from {node: {"rdma_ports": [...]}} or {node: [...]}."""
    idx = {}
    for node, hv in (hosts or {}).items():
        ports = hv.get("rdma_ports", []) if isinstance(hv, dict) else hv
        for p in ports or []:
            idx[(node, p["device"])] = p
    return idx


def _where(cabling, node, device):
    p = cabling.get((node, device)) or {}
    return {"node": node, "device": device, "switch": p.get("switch"), "switch_port": p.get("switch_port")}


def leaves_of(cabling):
    """{(node, device): leaf switch} from ``cabling_index`` (endpoints without a switch left out)."""
    return {k: p["switch"] for k, p in (cabling or {}).items() if p.get("switch")}


def observed_map(hosts, uplinks, switch_reads, host_reads=None):
    """The cabling as the switches' LLDP tables show it, not as the inventory claims it (the scheduler's
    topology is rendered from this, module_utils/checks/sched_topology.py). Same inputs as
    ``check_cabling``. Returns ``{"hosts": {node: [{"device", "netdev", "switch", "switch_port"}]},
    "links": [{"switch", "port", "peer", "peer_port"}], "read": [switches read], "unread": [...]}``;
    a host port is identified as ``check_cabling`` identifies it (system name, MAC or port name)."""
    switches = set(uplinks or {}) | {p["switch"] for ps in (hosts or {}).values() for p in ps or [] if p.get("switch")}
    switches |= {u["peer"] for ups in (uplinks or {}).values() for u in ups or []}
    ident = _Identify(hosts, switches, host_reads or {})
    out = {"hosts": {}, "links": [], "read": [], "unread": []}
    for sw in sorted(switches):
        read = (switch_reads or {}).get(sw)
        if not read or read.get("unreadable") or read.get("failed") or read.get("skipped"):
            out["unread"].append(sw)
            continue
        out["read"].append(sw)
        for port, nbs in sorted((read.get("neighbors") or {}).items()):
            if MGMT_PORT.match(str(port)):
                continue
            for nb in nbs or []:
                end = ident(nb)
                if end[0] == "host":
                    out["hosts"].setdefault(end[1], []).append({"device": end[2], "netdev": end[3], "switch": sw, "switch_port": str(port)})
                elif end[0] == "switch":
                    out["links"].append({"switch": sw, "port": str(port), "peer": end[1], "peer_port": end[2]})
    return out


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report(ctx):
    """check ``cabling``: RoCE cabling by LLDP (switch tables + lldpd on the nodes)."""
    if not any(ctx.data[n].get("verify_fabric_cabling") for n in ctx.nodes):
        return [], {}
    host_reads = {n: ctx.data[n].get("verify_fabric_cabling") or {} for n in ctx.nodes}
    # the role reads with failed_when: false (which clears ``failed``): a read without a neighbour table failed
    reads = {s: ({"unreadable": True, "msg": why} if (why := lldp_failure(r)) else r) for s, r in ctx.switch_reads("switch_fabric_lldp").items()}
    f, cases = check_cabling(ctx.hosts, ctx.uplinks(), reads, host_reads)
    observed = observed_map(ctx.hosts, ctx.uplinks(), reads, host_reads)
    return f, {CHECK: summary(f, cases, observed)}
