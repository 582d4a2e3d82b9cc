"""Compare a discovered InfiniBand subnet with the intended cabling (pure).

Findings are dicts with a stable ``code`` and the exact ``node`` / ``port``:

- IB_SM_NOT_MASTER        no SM answers, or it is not MASTER, or the master is not the intended SM
- IB_SM_PRIORITY_MISMATCH the master SM runs with another priority than intended
- IB_LINK_MISSING         an intended link is not there (node = switch, port = its port)
- IB_PORTS_SWAPPED        two intended links of one switch are on each other's port
- IB_LINK_MISWIRED        an intended peer is cabled to another port than intended
- IB_UNEXPECTED_LINK      a link between known devices that the intent does not have
- IB_UNEXPECTED_DEVICE    a device the inventory does not know
- IB_LINK_DEGRADED        width or speed below the intended link width / speed
- IB_PARTITION_NOT_IN_FORCE  a member port lacks the partition's pkey (or membership)
- IB_LINK_ERRORS          a port's error counters (ibqueryerrors) above the thresholds; both ends of the link named
"""

from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES, IB_CHECK_OF
from ansible_collections.linerate.fabric.plugins.module_utils.findings import finding as report_finding
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibdiag import lane_nominal
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import IB_ERROR_COUNTERS


def _norm(g):
    return None if g is None else "0x" + str(g).lower().replace("0x", "").rjust(16, "0")


def ca_desc(host, device):
    return f"{host} {device}"


def switch_name_from_desc(desc, names):
    """A switch NodeDescription -> inventory name: exact, 'MF0;<name>:...', or first word."""
    if desc in names:
        return desc
    if ";" in desc:
        cand = desc.split(";", 1)[1].split(":", 1)[0]
        if cand in names:
            return cand
    first = desc.split()[0] if desc.split() else desc
    return first if first in names else None


def finding(code, node, port, message, **extra):
    f = {"code": code, "node": node, "port": port, "message": message}
    f.update(extra)
    return f


def check_sm(sminfo, expected_guid=None, expected_priority=None, expected_node=None):
    """sminfo: parse_sminfo() result, or None when sminfo failed."""
    where = expected_node or expected_guid or "subnet"
    if sminfo is None:
        return [finding("IB_SM_NOT_MASTER", where, None, "no subnet manager answers sminfo")]
    out = []
    if sminfo["master"] is None:  # an older sminfo prints no state: the SM answered, its state is unknown
        out.append(
            finding(
                "IB_SM_NOT_MASTER",
                where,
                None,
                f"SM {sminfo['guid']} (lid {sminfo['lid']}) answered, but this sminfo prints no state: "
                "whether it is MASTER is unknown (run a current infiniband-diags)",
            )
        )
    elif not sminfo["master"]:
        out.append(finding("IB_SM_NOT_MASTER", where, None, f"SM {sminfo['guid']} (lid {sminfo['lid']}) is {sminfo['state_name']}, not MASTER"))
    elif expected_guid and _norm(expected_guid) != sminfo["guid"]:
        out.append(
            finding(
                "IB_SM_NOT_MASTER",
                where,
                None,
                f"master SM is {sminfo['guid']} (lid {sminfo['lid']}), expected {_norm(expected_guid)}",
                actual=sminfo["guid"],
                expected=_norm(expected_guid),
            )
        )
    if expected_priority is not None and sminfo["priority"] != int(expected_priority):
        out.append(
            finding(
                "IB_SM_PRIORITY_MISMATCH",
                where,
                None,
                f"master SM priority {sminfo['priority']}, expected {expected_priority}",
                actual=sminfo["priority"],
                expected=int(expected_priority),
            )
        )
    return out


def check_topology(nd, li, expected_links, switch_links, switches, link_width=None, link_speed_gbps=None):
    """nd: parse_ibnetdiscover(); li: parse_iblinkinfo() or None.

    expected_links: [{host, device, switch, switch_port, guid (port GUID, optional)}]
    switch_links:   [{switch, port, peer, peer_port}] (each cable once or twice)
    switches:       {name: guid or None}
    """
    known_cas = {ca_desc(e["host"], e["device"]) for e in expected_links}
    guid_name, findings = _identify_nodes(nd["nodes"], expected_links, switches, known_cas)
    expected = _expected_peers(expected_links, switch_links)
    found, found_rate = _discovered_peers(nd["nodes"], li, guid_name)
    explained = set()
    findings += _expected_link_findings(expected, found, found_rate, explained, link_width, link_speed_gbps)
    findings += _unexpected_link_findings(expected, found, explained, known_cas)
    _place_unexpected_devices(findings, found)
    return findings


def _identify_nodes(nodes, expected_links, switches, known_cas):
    """``(guid_name, findings)``: each discovered node's identity by node GUID (``("switch", name)`` or
    ``("ca", "host dev")``), and IB_UNEXPECTED_DEVICE for a switch or CA the inventory does not have."""
    findings = []
    names = set(switches)
    guid_name = {}  # node guid -> ("switch", name) | ("ca", "host dev")
    port_guid_ca = {}  # port guid -> "host dev"
    for e in expected_links:
        if e.get("guid"):
            port_guid_ca[_norm(e["guid"])] = ca_desc(e["host"], e["device"])
    want_switch_guid = {_norm(g): n for n, g in switches.items() if g}
    for guid, n in nodes.items():
        if n["type"] == "switch":
            name = want_switch_guid.get(guid) or switch_name_from_desc(n["desc"], names)
            if name is None:
                findings.append(finding("IB_UNEXPECTED_DEVICE", n["desc"] or guid, None, f"switch {guid} ({n['desc']!r}) is not in the inventory", guid=guid))
                continue
            guid_name[guid] = ("switch", name)
        else:
            ident = None
            for p in n["ports"].values():
                if p.get("port_guid") in port_guid_ca:
                    ident = port_guid_ca[p["port_guid"]]
            ident = ident or n["desc"]
            guid_name[guid] = ("ca", ident)
            if ident not in known_cas:
                findings.append(
                    finding("IB_UNEXPECTED_DEVICE", ident or guid, None, f"{n['type'].upper()} {guid} ({n['desc']!r}) is not in the inventory", guid=guid)
                )
    return guid_name, findings


def _expected_peers(expected_links, switch_links):
    """Intended: (switch, port) -> peer identity ``(kind, name, port)``."""
    expected = {}
    for e in expected_links:
        expected[(e["switch"], int(e["switch_port"]))] = ("ca", ca_desc(e["host"], e["device"]), 1)
    for s in switch_links:
        expected[(s["switch"], int(s["port"]))] = ("switch", s["peer"], int(s["peer_port"]))
        expected[(s["peer"], int(s["peer_port"]))] = ("switch", s["switch"], int(s["port"]))
    return expected


def _discovered_peers(nodes, li, guid_name):
    """Discovered: ``(found, found_rate)``, (switch, port) -> peer identity and -> (width, Gb/s)."""
    rate = {}
    if li:
        for entry in li:
            if entry["node_type"] == "switch" and entry["node_guid"] and entry["width"]:
                rate[(entry["node_guid"], entry["port"])] = (entry["width"], entry["speed_gbps"])
    found, found_rate = {}, {}
    for guid, n in nodes.items():
        kind = guid_name.get(guid)
        if not kind or kind[0] != "switch":
            continue
        for pnum, p in n["ports"].items():
            peer = guid_name.get(p["peer_guid"])
            if peer is None:
                peer = ("unknown", p.get("peer_desc") or p["peer_guid"], p["peer_port"])
            else:
                peer = (peer[0], peer[1], p["peer_port"] if peer[0] == "switch" else 1)
            found[(kind[1], pnum)] = peer
            w, sp = rate.get((guid, pnum), (p.get("width"), None))
            if sp is None and p.get("width") and p.get("speed"):
                lane = lane_nominal(p["speed"])
                sp = p["width"] * lane if lane else None
            found_rate[(kind[1], pnum)] = (w, sp)
    return found, found_rate


def _expected_link_findings(expected, found, found_rate, explained, link_width, link_speed_gbps):
    """Each intended link as found: IB_LINK_DEGRADED, IB_LINK_MISSING, IB_PORTS_SWAPPED, IB_LINK_MISWIRED
    (a cable seen from both ends once: ``explained`` collects the ports already reported)."""
    findings = []
    where_found = {}
    for k, v in found.items():
        where_found.setdefault(v, []).append(k)
    for key in sorted(expected):
        exp = expected[key]
        act = found.get(key)
        sw, port = key
        label = f"{exp[1]}" + (f" port {exp[2]}" if exp[0] == "switch" else "")
        if act == exp:
            w, sp = found_rate.get(key, (None, None))
            low_w = link_width and w and w < int(link_width)
            low_s = link_speed_gbps and sp and sp + 1e-6 < float(link_speed_gbps)
            if (low_w or low_s) and not (exp[0] == "switch" and (exp[1], exp[2]) in explained):
                explained.add(key)
                findings.append(
                    finding(
                        "IB_LINK_DEGRADED",
                        sw,
                        port,
                        f"{sw} port {port} -> {label}: {w}X {sp:g} Gb/s, expected {link_width}X {float(link_speed_gbps):g} Gb/s",
                        peer=exp[1],
                        peer_port=exp[2],
                        width=w,
                        speed_gbps=sp,
                        expected_width=link_width,
                        expected_speed_gbps=link_speed_gbps,
                    )
                )
            continue
        if key in explained:
            continue
        elsewhere = [k for k in where_found.get(exp, []) if k != key]
        if not elsewhere:
            if exp[0] == "switch" and (exp[1], exp[2]) in explained:
                continue
            explained.add(key)
            findings.append(
                finding(
                    "IB_LINK_MISSING",
                    sw,
                    port,
                    f"{sw} port {port}: link to {label} is missing" + (f" (port has {act[1]})" if act else ""),
                    peer=exp[1],
                    peer_port=exp[2],
                )
            )
            continue
        findings.append(_misplaced(key, exp, act, elsewhere[0], expected, explained, label))
    return findings


def _misplaced(key, exp, act, other, expected, explained, label):
    """The intended link ``key`` -> ``exp`` found at ``other``: two ports of one switch swapped
    (IB_PORTS_SWAPPED), else the cable on another port (IB_LINK_MISWIRED)."""
    sw, port = key
    if other[0] == sw and expected.get(other) == act and act is not None:
        explained.update({key, other})
        a, b = sorted([port, other[1]])
        return finding(
            "IB_PORTS_SWAPPED",
            sw,
            a,
            f"{sw} ports {a} and {b} are swapped: {expected[(sw, a)][1]} is on port {b}, {expected[(sw, b)][1]} is on port {a}",
            ports=[a, b],
            peers=[expected[(sw, a)][1], expected[(sw, b)][1]],
        )
    explained.add(key)
    explained.add(other)
    return finding(
        "IB_LINK_MISWIRED",
        sw,
        port,
        f"{label} should be on {sw} port {port} but is on {other[0]} port {other[1]}",
        peer=exp[1],
        peer_port=exp[2],
        found_node=other[0],
        found_port=other[1],
    )


def _unexpected_link_findings(expected, found, explained, known_cas):
    """IB_UNEXPECTED_LINK for each link found that the intent does not have (and no other finding explains)."""
    findings = []
    for key in sorted(found):
        if key in expected or key in explained:
            continue
        act = found[key]
        if act[0] == "switch" and (act[1], act[2]) in explained:
            continue
        if act[0] == "unknown":
            continue  # already an IB_UNEXPECTED_DEVICE
        if act[0] == "ca" and act[1] not in known_cas:
            continue  # already an IB_UNEXPECTED_DEVICE
        if act[0] == "switch" and (act[1], act[2]) in expected and (act[1], act[2]) not in found:
            continue
        explained.add(key)
        findings.append(
            finding(
                "IB_UNEXPECTED_LINK",
                key[0],
                key[1],
                f"{key[0]} port {key[1]} has a link to {act[1]} that the intent does not have",
                peer=act[1],
                peer_port=act[2],
            )
        )
    return findings


def _place_unexpected_devices(findings, found):
    """An IB_UNEXPECTED_DEVICE names the switch port it is cabled to (in place)."""
    for f in findings:
        if f["code"] == "IB_UNEXPECTED_DEVICE":
            for key, act in found.items():
                if act[1] == f["node"] or (act[0] == "unknown" and act[1] == f.get("guid")):
                    f["port"] = key[1]
                    f["message"] += f", cabled to {key[0]} port {key[1]}"
                    f["switch"] = key[0]


def check_partitions(partitions, tables, names=None):
    """partitions: [{name, pkey '0x..', membership, guids}];
    tables: {port_guid: [pkey ints] or None (port not reachable)}."""
    names = names or {}
    out = []
    for p in partitions:
        pk = int(p["pkey"], 16)
        full = p.get("membership", "full") == "full"
        want = pk | 0x8000 if full else pk
        for g in p["guids"]:
            g = _norm(g)
            node = names.get(g, g)
            table = tables.get(g)
            if g not in tables:
                out.append(
                    finding(
                        "IB_PARTITION_NOT_IN_FORCE",
                        node,
                        1,
                        f"partition {p['name']} ({p['pkey']}): member port {g} is not in the subnet",
                        partition=p["name"],
                        guid=g,
                    )
                )
            elif table is None:
                out.append(
                    finding(
                        "IB_PARTITION_NOT_IN_FORCE",
                        node,
                        1,
                        f"partition {p['name']} ({p['pkey']}): the pkey table of port {g} cannot be read",
                        partition=p["name"],
                        guid=g,
                    )
                )
            elif want not in table:
                have = [t for t in table if t & 0x7FFF == pk]
                why = f"has {'full' if have[0] & 0x8000 else 'limited'} membership" if have else "lacks the pkey"
                out.append(
                    finding(
                        "IB_PARTITION_NOT_IN_FORCE",
                        node,
                        1,
                        f"partition {p['name']} ({p['pkey']}, {p.get('membership', 'full')}): port {g} {why}",
                        partition=p["name"],
                        guid=g,
                    )
                )
    return out


# ---------------------------------------------------------------- port error counters (ibqueryerrors)

# The IBA PortCounters error counters (IBA 1.3 vol. 1, 16.1.3.5) ibqueryerrors judges, with the
# default thresholds of fabric.verify.ib_error_thresholds: any count is a finding unless the intent
# raises its threshold. Names as infiniband-diags prints them (ibqueryerrors.c, the PortCounters
# field names of libibmad fields.c; the same names ibsim's PerformanceSet accepts).
IB_PORT_ERROR_DEFAULTS = dict.fromkeys(IB_ERROR_COUNTERS, 0)


def _node_names(nd, switches, expected_links):
    """node GUID -> inventory name (switch name, or "host device" for a CA), and port GUID -> node GUID."""
    names = set(switches)
    want_switch_guid = {_norm(g): n for n, g in switches.items() if g}
    port_guid_ca = {_norm(e["guid"]): ca_desc(e["host"], e["device"]) for e in expected_links if e.get("guid")}
    node_name, port_owner = {}, {}
    for guid, n in nd["nodes"].items():
        if n["type"] == "switch":
            node_name[guid] = want_switch_guid.get(guid) or switch_name_from_desc(n["desc"], names) or n["desc"] or guid
        else:
            ident = None
            for p in n["ports"].values():
                if p.get("port_guid"):
                    port_owner[p["port_guid"]] = guid
                    ident = ident or port_guid_ca.get(p["port_guid"])
            node_name[guid] = ident or n["desc"] or guid
    return node_name, port_owner


def port_error_counters(iqe):
    """parse_ibqueryerrors() -> {"<GUID>/<port>": {counter: int}} (the per-port lines; a switch's ``ALL``
    aggregate is left out: its ports are listed one by one beside it)."""
    out = {}
    for node in iqe["nodes"]:
        for port, counters in node["ports"].items():
            if port == "ALL":
                continue
            # the GUID printed on the port line (a switch's node GUID, a CA's port GUID)
            guid = (node.get("port_guids") or {}).get(port) or node["guid"]
            out[f"{_norm(guid)}/{port}"] = dict(counters)
    return out


def check_port_errors(port_counters, nd, switches, expected_links, thresholds, baseline=None):
    """Findings IB_LINK_ERRORS from the subnet's port error counters, each naming both ends of the link.

    port_counters: {"<GUID>/<port>": {counter: value}} as ``port_error_counters`` returns it (GUID as
    ibqueryerrors prints it on the port line: a switch's node GUID, a CA's port GUID);
    nd: parse_ibnetdiscover() (who is cabled to which port); thresholds: {counter: max} (a counter
    absent from it is not judged, e.g. PortXmitWait, a congestion count); baseline: an earlier
    ``port_counters`` - the counts are then judged over the window since it (a counter that went
    down was cleared: what it shows now is counted).

    One finding per link: where both ends count errors, both ends' counts are in it. The finding's
    node is the switch end (a CA end goes to peer), port its port number.
    """
    node_name, port_owner = _node_names(nd, switches or {}, expected_links or [])
    nodes = nd["nodes"]
    baseline = baseline or {}
    over = {}  # link key -> {end: {counter: delta}}
    for key in sorted(port_counters):
        guid, _sep, port = key.rpartition("/")
        guid = _norm(guid)
        owner = guid if guid in nodes else port_owner.get(guid)
        port = int(port)
        before = baseline.get(key) or {}
        bad = {}
        for counter, value in sorted(port_counters[key].items()):
            if counter not in thresholds:
                continue
            prior = int(before.get(counter, 0))
            delta = value - prior if value >= prior else value
            if delta > int(thresholds[counter]):
                bad[counter] = delta
        if not bad:
            continue
        me = (owner or guid, port)
        peer = None
        if owner in nodes and port in nodes[owner]["ports"]:
            p = nodes[owner]["ports"][port]
            peer = (p["peer_guid"], p["peer_port"])
        link = tuple(sorted([me, peer])) if peer else (me,)
        over.setdefault(link, {})[me] = bad
    findings = []
    for link, ends in over.items():
        all_ends = list(link)
        # the switch end first: it is where the cable is plugged in a way an operator can find
        all_ends.sort(key=lambda e: (nodes.get(e[0], {}).get("type") != "switch", node_name.get(e[0], e[0]), e[1]))
        a = all_ends[0]
        b = all_ends[1] if len(all_ends) > 1 else None
        a_name = node_name.get(a[0], a[0])
        b_name = node_name.get(b[0], b[0]) if b else None
        b_type = nodes.get(b[0], {}).get("type") if b else None
        parts = []
        for end in all_ends:
            if end in ends:
                name = node_name.get(end[0], end[0])
                parts.append(f"{name} port {end[1]} counted " + ", ".join(f"{c} {v}" for c, v in ends[end].items()))
        towards = f"{b_name} port {b[1]}" if b else "a port ibnetdiscover shows no peer on"
        counts = {f"{node_name.get(e[0], e[0])} port {e[1]}": dict(ends[e]) for e in all_ends if e in ends}
        limits = {c: int(thresholds[c]) for e in ends.values() for c in e}
        kind = "inter-switch link" if b_type == "switch" and nodes.get(a[0], {}).get("type") == "switch" else "link"
        findings.append(
            finding(
                "IB_LINK_ERRORS",
                a_name,
                a[1],
                f"{kind} {a_name} port {a[1]} <-> {towards}: "
                + "; ".join(parts)
                + " (thresholds "
                + ", ".join(f"{c} {v}" for c, v in sorted(limits.items()))
                + (", over the window since the baseline" if baseline else ", since the counters were last cleared")
                + ")",
                peer=b_name,
                peer_port=b[1] if b else None,
                peer_type=b_type,
                counters=counts,
                thresholds=limits,
                link_kind="isl" if kind == "inter-switch link" else "host",
            )
        )
    findings.sort(key=lambda f: (str(f["node"]), f["port"]))
    return findings


def _ib_endpoint(name):
    """'node1 mlx5_0' (a CA's NodeDescription as Linux sets it) -> (node1, mlx5_0)."""
    name = str(name or "")
    return tuple(name.split(" ", 1)) if " " in name else (name or None, None)


def ib_findings(result, switches):
    """The ib_fabric_check result (module ib_fabric_check) -> report findings.

    A switch-side finding names the switch and port and, where the peer is a
    CA, the node and device cabled there; a CA-side finding (partitions)
    names the node and device.
    """
    if result.get("failed"):
        return [
            report_finding("IB_CHECK_FAILED", f"InfiniBand check failed: {result.get('msg') or 'no result'}", node=result.get("host"), check="subnet_manager")
        ]
    out = []
    for f in result.get("findings") or []:
        code = f["code"] if f["code"] in FAULT_CODES else "IB_CHECK_FAILED"
        node = device = switch = port = None
        if f.get("node") in switches:
            switch, port = f["node"], f.get("port")
            peer = f.get("peer") or (f.get("peers") or [None])[0]
            if peer and peer not in switches:
                node, device = _ib_endpoint(peer)
        else:
            node, device = _ib_endpoint(f.get("node"))
            if f.get("switch"):
                switch, port = f["switch"], f.get("port")
        evidence = {k: v for k, v in f.items() if k not in ("code", "node", "port", "message")}
        # an inter-switch link's far end (IB_LINK_ERRORS names both ends)
        extra = (
            {"peer_switch": f["peer"], "peer_port": None if f.get("peer_port") is None else str(f["peer_port"])}
            if f.get("peer_type") == "switch" and f.get("peer")
            else {}
        )
        out.append(
            report_finding(
                code,
                f["message"],
                node=node,
                device=device,
                switch=switch,
                switch_port=port,
                check=IB_CHECK_OF.get(code, "ib_topology"),
                evidence=evidence or None,
                **extra,
            )
        )
    return out


def ib_checks(result, findings):
    """Report checks subnet_manager / ib_topology / ib_partitions from the IB check."""
    sm = result.get("sminfo") or {}
    summ = result.get("summary") or {}
    by = {}
    for f in findings:
        by.setdefault(f["check"], []).append(f)
    details = {
        "subnet_manager": (
            "not checked"
            if result.get("failed")
            else f"MASTER {sm.get('guid')} (lid {sm.get('lid')}) priority {sm.get('priority')}"
            if sm.get("master")
            else "no MASTER SM"
        ),
        "ib_topology": (
            f"{summ.get('switches', 0)} switches, {summ.get('cas', 0)} CAs, {summ.get('links', 0)} links" + (" as cabled" if not by.get("ib_topology") else "")
            if summ
            else "not discovered"
        ),
        "ib_partitions": f"{len(result.get('pkey_tables') or {})} ports' pkey tables read",
    }
    pe = result.get("port_errors_summary")
    if pe or result.get("port_errors_error"):
        details["ib_port_errors"] = (
            f"{pe.get('ports_checked')} ports of {pe.get('nodes_checked')} nodes read by ibqueryerrors ({pe.get('window')})" if pe else "not read"
        )
    checks = {}
    for name, detail in details.items():
        mine = by.get(name, [])
        errors = [x for x in mine if x["severity"] == "error"]
        if result.get("failed") and name != "subnet_manager":
            checks[name] = {
                "passed": False,
                "skipped": True,
                "detail": "not checked",
                "cases": [{"name": name, "skipped": True, "message": "the subnet could not be checked"}],
            }
            continue
        checks[name] = {
            "passed": not errors,
            "detail": detail + ("; " + "; ".join(x["message"] for x in mine[:3]) if mine else ""),
            "cases": [
                {
                    "name": name,
                    "ok": not errors,
                    "code": errors[0]["code"] if errors else None,
                    "message": "; ".join(x["message"] for x in mine) or None,
                    "findings": mine,
                }
            ],
        }
    return checks


# ---------------------------------------------------------------- the report (checks/registry.py CHECKS)


def report(ctx):
    """checks ``subnet_manager`` / ``ib_topology`` / ``ib_partitions`` / ...: the subnet check (``ib_fabric``)."""
    ib = ctx.template(ctx.args.get("ib_fabric") or {})
    if not ib:
        return [], {}
    f = ib_findings(ib, set(ctx.template(ctx.args.get("ib_switches") or [])))
    return f, ib_checks(ib, f)
