"""The switch side's faults, one row each: a switch port's operational state (PFC, headroom, the PFC
watchdog, ECN, its optical module and bit error rate), a switch in a boot loop, the InfiniBand subnet
(ibsim), cables on each other's ports, a degraded leaf-spine uplink."""

import time

from linerate_lab import linkphys, model
from linerate_lab.faults.engine import HOST_PORTS, PORT, SWITCH, UPLINK, Fault, FaultError, Target, fold_switch_side, rail, switch, switch_port, tracked


# ---------------------------------------------------------------- a switch port's operational state


def _pfc_back(hit):
    for pfc in hit.saved:
        hit.it["pfc"] = pfc
    return f"{hit.switch} {hit.port}: PFC on priorities {hit.it.get('pfc')}"


def _no_headroom(hit):
    hit.it["headroom"] = []
    return f"{hit.switch} {hit.port}: no lossless headroom (PFC on {hit.it.get('pfc')}, but the port drops under incast)"


def _headroom_back(hit):
    p = hit.it
    for headroom in hit.saved:
        if headroom is None:
            p.pop("headroom", None)
        else:
            p["headroom"] = headroom
    return f"{hit.switch} {hit.port}: lossless headroom on priorities {p.get('headroom', p.get('pfc'))}"


def _watchdog_off(hit):
    for v in hit.it.get("ports", {}).values():
        v["pfcwd"] = []


def _watchdog_back(hit):
    ports = hit.it.get("ports", {})
    for saved in hit.saved:
        for p, old in saved.items():
            if p in ports:
                if old is None:
                    ports[p].pop("pfcwd", None)
                else:
                    ports[p]["pfcwd"] = old


def _ecn_back(hit):
    for ecn in hit.saved:
        hit.it["ecn"] = ecn


def _ber(hit):
    since = (hit.it.get("ber") or {}).get("since") or time.time()  # again: the count goes on, never back
    hit.it["ber"] = {"pre_fec_ber": 1e-5, "uncorrected_per_s": 50, "since": since}


def _reboot_loop(hit):
    for node, nic in hit.it:
        if not tracked(hit.m, "flap", [node, nic["device"]]):
            linkphys.start(nic, "flap", period=linkphys.FLAP_PERIOD_S)
        r = rail(hit.m, node, nic["device"])
        hit.lab.set_cable(node, r, False)
        hit.lab.set_cable(node, r, nic.get("cable", "up") == "up")
    return f"{hit.switch}: rebooting every {linkphys.FLAP_PERIOD_S:g} s; its host ports flap: " + ", ".join(f"{node} {nic['device']}" for node, nic in hit.it)


def _reboot_stop(hit):
    for node, nic in hit.it:
        if not tracked(hit.m, "flap", [node, nic["device"]]):
            fold_switch_side(hit.m, nic, "flap")
            linkphys.stop(nic, "flap")


PORT_STATE = (
    # The switch simulators publish ports.*.pfc from their running config; this
    # sets the operational state directly, as a port whose PFC config was lost.
    Fault(
        "switch-pfc-off SWITCH PORT  PFC off on one switch port (operational state)",
        PORT,
        {"pfc": []},
        "{switch} {port}: PFC off",
        "switch-pfc-restore SWITCH PORT  undo switch-pfc-off",
        _pfc_back,
        save=lambda p: list(p.get("pfc") or []),
    ),
    Fault(
        "switch-headroom-zero SWITCH PORT  no lossless headroom on one switch port "
        "(operational state: PFC stays on, the port drops under incast; the switch's own config: "
        "lab/switchsim/fault.py SWITCH headroom_zero PORT)",
        PORT,
        _no_headroom,
        "",
        "switch-headroom-restore SWITCH PORT  undo switch-headroom-zero",
        _headroom_back,
        save=lambda p: p.get("headroom"),
    ),
    Fault(
        "pfc-watchdog-off SWITCH  the switch's PFC watchdog stops on every port (operational state)",
        SWITCH,
        _watchdog_off,
        "{switch}: PFC watchdog off",
        "pfc-watchdog-restore SWITCH  undo pfc-watchdog-off",
        _watchdog_back,
        "{switch}: PFC watchdog as configured",
        save=lambda sw: {p: v.get("pfcwd") for p, v in sw.get("ports", {}).items()},
    ),
    Fault(
        "switch-ecn-off SWITCH PORT  ECN marking off on one switch port (operational state; PFC stays)",
        PORT,
        {"ecn": False},
        "{switch} {port}: ECN marking off (no CE marks, so no CNPs under congestion)",
        "switch-ecn-restore SWITCH PORT  undo switch-ecn-off",
        _ecn_back,
        "{switch} {port}: ECN marking as configured",
        save=lambda p: p.get("ecn", True),
    ),
    # a switch port's optical module (issue 24)
    Fault(
        "switch-optic-degrade SWITCH PORT  the switch port's optical module receives -14 dBm "
        "on every lane (below its low alarm) and runs at 78 C (above its high alarm): the switch's transceiver "
        "read shows both",
        PORT,
        {"optics": {"rx_power_dbm": -14.0, "temperature_c": 78}},
        "{switch} {port}: optical module Rx power -14 dBm per lane, 78 C",
        "switch-optic-restore SWITCH PORT  undo switch-optic-degrade (a healthy module)",
        ("optics",),
        "{switch} {port}: optical module healthy",
    ),
    # a switch port's bit error rate (FEC)
    Fault(
        "switch-ber-degrade SWITCH PORT  what the switch port receives has a pre-FEC BER of "
        "1e-5 and FEC fails on 50 codewords a second from now (post-FEC BER above 0): the switch's FEC read shows "
        "both, its uncorrected codewords grow",
        PORT,
        _ber,
        "{switch} {port}: pre-FEC BER 1e-5, 50 uncorrected codewords a second",
        "switch-ber-restore SWITCH PORT  undo switch-ber-degrade (a healthy signal)",
        ("ber",),
        "{switch} {port}: healthy signal",
    ),
    Fault(
        "switch-reboot SWITCH     the switch reboots, over and over until switch-reboot-stop (a boot "
        "loop): every host port cabled to it goes down and retrains every few seconds, so each node under it flaps",
        HOST_PORTS,
        _reboot_loop,
        "",
        "switch-reboot-stop SWITCH  undo switch-reboot (the switch stays up, its ports stable; a port with its own flap fault keeps flapping)",
        _reboot_stop,
        "{switch}: up and stable",
    ),
)


# ---------------------------------------------------------------- the InfiniBand subnet (ibsim)


def _ib_ports(m, name, *ports):
    """(switch, record key) of ports of an InfiniBand switch, the ports as numbers."""
    sw = switch(m, name)
    try:
        numbers = [int(p) for p in ports]
    except ValueError:
        raise FaultError(f"fault: ports must be numbers, not {list(ports)}") from None
    return sw, [name, *map(str, numbers)]


IB_PORT = Target(("switch", "port"), _ib_ports, False)
IB_PORTS = Target(("switch", "a", "b"), _ib_ports, False)


def _ib(hit, kind, **kw):
    """InfiniBand faults happen in the subnet (ibsim), under the running SM."""
    if hit.m.get("transport") != "infiniband":
        raise FaultError(f"fault: ib-{kind} needs the InfiniBand lab (this one is {hit.m.get('transport')})")
    hit.lab.ibsimlab().fault(hit.lab.IBSIM_DIR, kind, hit.switch, [int(p) for p in hit.key[1:]], **kw)


def _ib_counters(hit):
    counters = hit.lab.ibsimlab().parse_counter_settings(hit.settings.split(","))
    _ib(hit, "counters", counters=counters)
    return f"{hit.switch} port {hit.port}: " + ", ".join(f"{k}={v}" for k, v in counters.items()) + " (ibqueryerrors and perfquery read them)"


def _ib_counters_clear(hit):
    _ib(hit, "counters", counters=dict.fromkeys(hit.lab.ibsimlab().PERF_ERROR_COUNTERS, 0))


SUBNET = (
    Fault(
        "ib-unlink SWITCH PORT   InfiniBand: remove the cable on a switch port",
        IB_PORT,
        lambda hit: _ib(hit, "unlink"),
        "{switch} port {port}: link removed (the SM sees it on its next sweep)",
        "ib-relink SWITCH PORT   InfiniBand: put it back",
        lambda hit: _ib(hit, "relink"),
        "{switch} port {port}: link restored",
    ),
    Fault(
        "ib-errors SWITCH PORT COUNTER=N[,COUNTER=N]  InfiniBand: the switch port's PortCounters "
        "error counters (ibsim PerformanceSet), e.g. SymbolErrorCounter=250,LinkDownedCounter=3",
        IB_PORT,
        _ib_counters,
        "",
        "ib-errors-clear SWITCH PORT  undo ib-errors (every error counter of the port back to 0)",
        _ib_counters_clear,
        "{switch} port {port}: error counters cleared",
        params=("settings",),
        record="ib-counters",
    ),
    Fault(
        "ib-swap SWITCH PORT_A PORT_B  InfiniBand: two host cables on each other's ports",
        IB_PORTS,
        lambda hit: _ib(hit, "swap"),
        "{switch} ports {a} and {b}: cables swapped",
    ),
)


# ---------------------------------------------------------------- cables on each other's ports (RoCE)


def _swap_cables(m, name, a, b):
    """Exchange the cables of two ports of one switch: both ends of each cable move."""
    pa, pb = switch_port(m, name, a), switch_port(m, name, b)
    pa["peer"], pb["peer"] = pb.get("peer"), pa.get("peer")
    for port, p in ((str(a), pa), (str(b), pb)):
        peer, _, rport = (p.get("peer") or "").partition(":")
        if peer in m.get("nodes", {}):
            nic = model.nic(m, rport, peer)
            if nic is not None:
                nic["switch_port"] = port  # the data path follows the cable (rdma.py)
        elif peer in m.get("switches", {}) and rport in m["switches"][peer].get("ports", {}):
            m["switches"][peer]["ports"][rport]["peer"] = f"{name}:{port}"
    return pa, pb


def _cable_ports(m, a, b):
    if m.get("transport") != "roce":
        raise FaultError(f"fault: cable-swap needs the RoCE lab (this one is {m.get('transport')}; InfiniBand: ib-swap)")
    if str(a) == str(b):
        raise FaultError(f"fault: cable-swap needs two different ports (got {a} twice)")


def _cable_swap(hit):
    m, sw, a, b = hit.m, hit.switch, hit.a, hit.b
    _cable_ports(m, a, b)
    if any(f["kind"] == "cable-swap" and f["args"][0] == sw and {str(a), str(b)} & set(f["args"][1:]) for f in m.get("faults", [])):
        raise FaultError(f"fault: {sw} {a}/{b}: a cable-swap there is in force (undo: cable-swap-restore)")
    pa, pb = _swap_cables(m, sw, a, b)
    return f"{sw} ports {a} and {b}: cables swapped ({a} -> {pa.get('peer')}, {b} -> {pb.get('peer')})"


def _cable_swap_restore(hit):
    m, sw, a, b = hit.m, hit.switch, hit.a, hit.b
    _cable_ports(m, a, b)
    recorded = [f for f in m.get("faults", []) if f["kind"] == "cable-swap" and f["args"][0] == sw and set(f["args"][1:]) == {str(a), str(b)}]
    if not recorded:
        raise FaultError(f"fault: no cable-swap of {sw} {a} {b} is in force")
    pa, pb = _swap_cables(m, sw, a, b)
    m["faults"] = [f for f in m["faults"] if f not in recorded]
    return f"{sw} ports {a} and {b}: cables back ({a} -> {pa.get('peer')}, {b} -> {pb.get('peer')})"


CABLES = Target(("switch", "a", "b"), lambda m, sw, a, b: (None, [sw, str(a), str(b)]), False)

CABLING = (
    Fault(
        "cable-swap SWITCH PORT_A PORT_B  RoCE: two cables of a switch on each other's ports",
        CABLES,
        _cable_swap,
        "",
        "cable-swap-restore SWITCH PORT_A PORT_B  undo cable-swap",
        _cable_swap_restore,
    ),
    Fault(
        "uplink-degrade LEAF PORT  one leaf-spine uplink degraded: flows ECMP hashes onto it (cross-leaf only) keep a fraction of line rate",
        UPLINK,
        {"degraded": True},
        "{leaf} {port}: degraded (cross-leaf flows hashed onto it lose bandwidth)",
        "uplink-restore LEAF PORT  undo uplink-degrade",
        ("degraded",),
        "{leaf} {port}: uplink healthy",
    ),
)

ROWS = PORT_STATE + SUBNET + CABLING
