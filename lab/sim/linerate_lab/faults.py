"""Fault injection: break one thing in the lab on purpose.

Each fault changes the physics (the fabric model, a veth's carrier) the way
the real failure would, and is recorded under ``faults`` in the model so a
report can say what was injected. ``clear`` undoes every recorded fault.
"""
from linerate_lab import model

FAULTS = {}


def fault(name, usage):
    def deco(fn):
        fn.usage = usage
        FAULTS[name] = fn
        return fn
    return deco


class FaultError(SystemExit):
    pass


def _nic(m, node, device):
    nic = model.nic(m, device, node)
    if nic is None:
        raise FaultError(f"fault: node {node} has no device {device!r} "
                         f"(has: {', '.join(n['device'] for n in m['nodes'][node]['nics'])})")
    return nic


def _rail(m, node, device):
    return [n["device"] for n in m["nodes"][node]["nics"]].index(device)


def _record(m, kind, args):
    m.setdefault("faults", []).append({"kind": kind, "args": list(args)})


@fault("port-down", "port-down NODE DEVICE   pull the cable of one NIC port")
def port_down(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["cable"] = "down"
    lab.set_cable(node, _rail(m, node, device), False)
    _record(m, "port-down", [node, device])
    return f"{node} {device}: cable pulled (no carrier on {nic['netdev']})"


@fault("port-up", "port-up NODE DEVICE     plug it back in")
def port_up(lab, m, node, device):
    nic = _nic(m, node, device)
    nic["cable"] = "up"
    lab.set_cable(node, _rail(m, node, device), True)
    m["faults"] = [f for f in m.get("faults", []) if f != {"kind": "port-down", "args": [node, device]}]
    return f"{node} {device}: cable plugged in"


@fault("speed", "speed NODE DEVICE GBPS  the link trains at a lower speed (bad cable/optic)")
def speed(lab, m, node, device, gbps):
    nic = _nic(m, node, device)
    try:
        gbps = int(gbps)
    except ValueError:
        raise FaultError(f"fault: speed {gbps!r} is not allowed (allowed: Gb/s as an integer)") from None
    nic["speed_gbps"] = gbps
    _record(m, "speed", [node, device, gbps])
    return f"{node} {device}: link trained at {gbps} Gb/s"


@fault("no-peermem", "no-peermem NODE         the GPU driver build lacks nvidia-peermem")
def no_peermem(lab, m, node):
    n = m["nodes"][node]
    n["peermem_available"] = False
    n["modules"] = [x for x in n.get("modules", []) if x != "nvidia_peermem"]
    _record(m, "no-peermem", [node])
    return f"{node}: nvidia-peermem unavailable and unloaded"


def apply(kind, args, lab):
    if kind in ("list", "help"):
        return "faults:\n  " + "\n  ".join(fn.usage for fn in FAULTS.values())
    fn = FAULTS.get(kind)
    if fn is None:
        raise FaultError(f"fault: {kind!r} is not allowed (allowed: {', '.join(sorted(FAULTS))})")
    nargs = fn.__code__.co_argcount - 2
    if len(args) != nargs:
        raise FaultError(f"fault: usage: {fn.usage}")
    with model.locked() as m:
        if args and args[0] not in m["nodes"] and kind not in ("switch-pfc-off",):
            raise FaultError(f"fault: {args[0]!r} is not a lab node (allowed: {', '.join(sorted(m['nodes']))})")
        return fn(lab, m, *args)
