"""The fault table's engine: a row (``Fault``) names what a fault needs, what it applies and how it is
undone; ``actions`` turns the rows into the names ``labctl.py fault`` accepts, each applying or undoing
its row the same way:

- the thing the first arguments name is found in the model (``Target``), or the error names the
  argument, its value and what the model has;
- apply runs the row's ``apply``, then records the fault under ``faults`` in the model, one record per
  fault and thing (``[*key, *note]``). The state apply changes (the row's ``save``) is kept from the
  first injection, so applying twice and undoing once gives back the state from before the first;
- undo runs the row's ``revert`` with what was saved, then drops the record.
"""

import copy
import dataclasses
from typing import Any, Callable, Optional, Tuple

from linerate_lab import linkphys, model

# Steps a fault leaves for after the model's lock is released (apply()).
AFTER: list = []


class FaultError(SystemExit):
    pass


# ---------------------------------------------------------------- what a fault needs


@dataclasses.dataclass(frozen=True)
class Target:
    """The thing a fault's first arguments name: ``find(m, *args)`` gives it and its record key."""

    names: Tuple[str, ...]
    find: Callable
    of_node: bool  # its first argument is a lab node (checked before the thing is looked for)


def _nic(m, node, device):
    nic = model.nic(m, device, node)
    if nic is None:
        raise FaultError(f"fault: node {node} has no device {device!r} (has: {', '.join(n['device'] for n in m['nodes'][node]['nics'])})")
    return nic


def rail(m, node, device):
    return [n["device"] for n in m["nodes"][node]["nics"]].index(device)


def switch(m, name):
    sw = m.get("switches", {}).get(name)
    if sw is None:
        raise FaultError(f"fault: {name!r} is not a lab switch (allowed: {', '.join(sorted(m.get('switches', {})))})")
    return sw


def switch_port(m, name, port):
    sw = switch(m, name)
    p = sw["ports"].get(str(port))
    if p is None:
        raise FaultError(f"fault: {name} has no port {port!r} (allowed: {', '.join(sorted(sw['ports']))})")
    return p


def _gpu_index(m, node, gpu):
    """The index of ``GPU<i>`` (or ``<i>``) on ``node``, or a FaultError naming the GPUs it has."""
    n = m["nodes"][node]
    idx = str(gpu).upper().removeprefix("GPU")
    if not idx.isdigit() or int(idx) >= n.get("gpus", 0):
        raise FaultError(f"fault: node {node} has no GPU {gpu!r} (has: GPU0..GPU{n.get('gpus', 0) - 1})" if n.get("gpus") else f"fault: node {node} has no GPU")
    return str(int(idx))


def _gpu(m, node, gpu):
    """((node dict, index), record key) of ``GPU<i>`` on ``node``."""
    idx = _gpu_index(m, node, gpu)
    return (m["nodes"][node], idx), [node, f"GPU{idx}"]


def _slot(m, node, device):
    """(holder dict, key, label) of the slot spec of a NIC (``mlx5_N``) or a GPU (``GPU<i>``)."""
    if str(device).upper().startswith("GPU"):
        n = m["nodes"][node]
        idx = str(device)[3:]
        if not idx.isdigit() or int(idx) >= n.get("gpus", 0):
            raise FaultError(
                f"fault: node {node} has no GPU {device!r} (has: GPU0..GPU{n.get('gpus', 0) - 1})" if n.get("gpus") else f"fault: node {node} has no GPU"
            )
        return (n.setdefault("gpu_pcie_slot", {}), idx, f"GPU{idx}"), [node, device]
    nic = _nic(m, node, device)
    return (nic, "pcie_slot", f"{device} ({nic['pci']})"), [node, device]


def host_ports(m, name):
    """[(node, nic)] of every host port cabled to switch ``name``."""
    switch(m, name)
    out = [(node, nic) for node, n in sorted(m["nodes"].items()) for nic in n["nics"] if nic.get("switch") == name]
    if not out:
        raise FaultError(f"fault: no host port is cabled to {name} (a spine: its leaves' uplinks are not modelled as host links)")
    return out


def _uplink(m, leaf, port):
    ups = (m.get("switches", {}).get(leaf) or {}).get("uplinks") or []
    if not ups:
        raise FaultError(
            f"fault: {leaf!r} is not a lab switch with uplinks (allowed: {', '.join(sorted(n for n, x in m.get('switches', {}).items() if x.get('uplinks')))})"
        )
    for u in ups:
        if str(u["port"]) == str(port):
            return u
    raise FaultError(f"fault: {leaf} has no uplink {port!r} (allowed: {', '.join(str(u['port']) for u in ups)})")


NIC = Target(("node", "device"), lambda m, node, device: (_nic(m, node, device), [node, device]), True)
NODE = Target(("node",), lambda m, node: (m["nodes"][node], [node]), True)
GPU = Target(("node", "gpu"), _gpu, True)
SLOT = Target(("node", "device"), _slot, True)
FABRIC = Target((), lambda m: (m, []), False)
PORT = Target(("switch", "port"), lambda m, sw, port: (switch_port(m, sw, port), [sw, str(port)]), False)
SWITCH = Target(("switch",), lambda m, sw: (switch(m, sw), [sw]), False)
HOST_PORTS = Target(("switch",), lambda m, sw: (host_ports(m, sw), [sw]), False)
UPLINK = Target(("leaf", "port"), lambda m, leaf, port: (_uplink(m, leaf, port), [leaf, str(port)]), False)


# ---------------------------------------------------------------- a row, and what apply and undo see


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault: what it needs (``on``), what it applies, how it is undone.

    ``apply`` and ``revert`` are a function of the ``Hit`` (returning its message, or None for ``says``
    / ``unsays``), or a dict of values put on the thing; ``revert`` may also be a tuple of keys taken
    off it. ``save(thing)`` is the state apply changes, kept for ``revert`` as ``hit.saved``."""

    usage: str  # "NAME ARGS  what it does", as `fault list` prints it
    on: Target
    apply: Any
    says: str = ""  # the message, formatted with the arguments and the thing's keys
    undo: str = ""  # the usage line of the fault that undoes it ("": none)
    revert: Any = None
    unsays: str = ""
    params: Tuple[str, ...] = ()  # the arguments after the thing's
    save: Optional[Callable] = None
    record: str = ""  # the record's kind where it is not the fault's name
    recorded: bool = True  # False: nothing in force after it (a reboot)

    @property
    def name(self):
        return self.usage.split()[0]

    @property
    def kind(self):
        return self.record or self.name


@dataclasses.dataclass
class Hit:
    """A fault at work: the lab, the model, the thing found, its record key, the arguments by name (also
    as attributes: ``hit.node``, ``hit.device``), what
    the record keeps after the key (``note``) and, when undoing, what apply saved (``saved``: [] or [it])."""

    lab: Any
    m: dict
    it: Any
    key: list
    args: dict
    note: list = dataclasses.field(default_factory=list)
    saved: list = dataclasses.field(default_factory=list)

    def __getattr__(self, name):
        try:
            return self.__dict__["args"][name]
        except KeyError:
            raise AttributeError(name) from None

    def after(self, step):
        """``step()`` once the model is saved and unlocked (what runs the node's own simulated tools)."""
        AFTER.append(step)

    def say(self, text):
        fields = dict(self.it) if isinstance(self.it, dict) else {}
        return text.format_map({**fields, **self.args})


def _run(what, hit, template):
    """Run a row's ``apply`` or ``revert`` on ``hit``: its message."""
    msg = None
    if isinstance(what, dict):
        hit.it.update(copy.deepcopy(what))
    elif isinstance(what, tuple):
        for key in what:
            hit.it.pop(key, None)
    else:
        msg = what(hit)
    return hit.say(template) if msg is None else msg


# ---------------------------------------------------------------- records


def is_record(f, kind, args):
    """True when the recorded fault ``f`` is a ``kind`` whose first arguments are ``args``."""
    return f["kind"] == kind and f["args"][: len(args)] == list(args)


def records(m, kind, args):
    return [f for f in m.get("faults", []) if is_record(f, kind, args)]


def untrack(m, kind, args):
    m["faults"] = [f for f in m.get("faults", []) if not is_record(f, kind, args)]


def tracked(m, kind, args):
    return bool(records(m, kind, args))


def _applied(row, lab, m, args):
    names = row.on.names + row.params
    it, key = row.on.find(m, *args[: len(row.on.names)])
    hit = Hit(lab, m, it, key, dict(zip(names, args)))
    before = records(m, row.kind, key)
    if row.save is not None:
        hit.note = [before[0]["args"][len(key)] if before else row.save(it)]
    msg = _run(row.apply, hit, row.says)
    if row.recorded:
        untrack(m, row.kind, key)
        m.setdefault("faults", []).append({"kind": row.kind, "args": [*key, *hit.note]})
    return msg


def _undone(row, lab, m, args):
    it, key = row.on.find(m, *args)
    hit = Hit(lab, m, it, key, dict(zip(row.on.names, args)))
    hit.saved = [f["args"][len(key)] for f in records(m, row.kind, key)] if row.save is not None else []
    msg = _run(row.revert, hit, row.unsays)
    untrack(m, row.kind, key)
    return msg


class Action:
    """One name ``fault`` accepts: a row's apply, or its undo. Called as ``action(lab, m, *args)``."""

    def __init__(self, row, undo=False):
        self.row, self.undo = row, undo
        self.usage = row.undo if undo else row.usage
        self.nargs = len(row.on.names) + (0 if undo else len(row.params))

    def __call__(self, lab, m, *args):
        return (_undone if self.undo else _applied)(self.row, lab, m, list(args))

    def __repr__(self):
        return f"<fault {self.usage.split()[0]}>"


def actions(rows):
    """{name: Action} of every row's apply and undo, in the order of the rows."""
    out = {}
    for row in rows:
        for action in [Action(row)] + ([Action(row, undo=True)] if row.undo else []):
            name = action.usage.split()[0]
            if name in out:
                raise ValueError(f"fault {name!r} is in the table twice")
            out[name] = action
    return out


def apply(table, kind, args, lab):
    if kind in ("list", "help"):
        return "faults:\n  " + "\n  ".join(a.usage for a in table.values())
    action = table.get(kind)
    if action is None:
        raise FaultError(f"fault: {kind!r} is not allowed (allowed: {', '.join(sorted(table))})")
    if len(args) != action.nargs:
        raise FaultError(f"fault: usage: {action.usage}")
    AFTER.clear()
    with model.locked() as m:
        if action.row.on.of_node and args[0] not in m["nodes"]:
            raise FaultError(f"fault: {args[0]!r} is not a lab node (allowed: {', '.join(sorted(m['nodes']))})")
        msg = action(lab, m, *args)
    # what runs the node's own (simulated) tools, which lock the model themselves
    for step in list(AFTER):
        msg = step() or msg
    AFTER.clear()
    return msg


# ---------------------------------------------------------------- both ends of a cable


def cabled_port(m, nic):
    """The switch port at the other end of a NIC's cable, or None."""
    return ((m.get("switches", {}).get(nic.get("switch")) or {}).get("ports") or {}).get(str(nic.get("switch_port")))


def fold_switch_side(m, nic, kind):
    """A physical fault counts at both ends of the cable: the switch simulators add what it
    accrues live to the switch port's error counters (switchsim/sim_counters.py); when it
    ends, that count stays in the port's ``counters`` (hardware counters never go back)."""
    port = cabled_port(m, nic)
    if port is None:
        return
    live = linkphys.accrued(nic, kinds=(kind,))
    c = port.setdefault("counters", {})
    if kind == "crc":
        c["rx_errors"] = int(c.get("rx_errors") or 0) + live.get("rx_crc_errors_phy", 0)
    elif kind == "flap":
        c["link_down"] = int(c.get("link_down") or 0) + live.get("link_down_events_phy", 0)


# ---------------------------------------------------------------- in the node

# What a fault runs in a node runs with the capabilities of the node's own processes: labctl starts a node
# with CAP_SYS_ADMIN for lab/sim/node-init.sh, which drops it before systemd, so everything sshd and systemd
# start lacks it while `podman exec` keeps it. A process a fault leaves running (rdma-busy's holder) with a
# capability Ansible's session lacks hides its /proc/<pid>/fd from it (ptrace access needs the caller's
# permitted set to contain the target's), and the in-use check would see nothing.
NODE_CAPS = ("setpriv", "--bounding-set=-sys_admin", "--")


def node_exec(lab, node, *argv):
    res = lab.podman("exec", lab.PREFIX + node, *NODE_CAPS, *argv, check=False, capture=True)
    if res.returncode != 0:
        raise FaultError(f"fault: {' '.join(argv)} on {node} failed: {(res.stderr or '').strip()}")
    return res.stdout
