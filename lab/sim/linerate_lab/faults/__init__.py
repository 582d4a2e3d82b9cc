"""Fault injection: break one thing in the lab on purpose (``labctl.py fault KIND ARGS...``).

Each fault changes the physics (the fabric model, a veth's carrier, a node's kernel state) the way the
real failure would, and is recorded under ``faults`` in the model so a report can say what was injected;
its undo puts back what it changed and drops the record. The faults are a table, one row each
(``engine.Fault``: what it needs, what it applies, how it is undone): host.py (a port, the node's kernel
and NCCL state, PCIe and firmware, the physical layer), disruption.py (the disruptive host actions),
switch.py (a switch port's state, the InfiniBand subnet, cabling, uplinks). ``faults.<name>`` (dashes as
underscores) is the fault ``<name>``, callable as ``faults.port_down(lab, m, "node1", "mlx5_0")``.
"""

from linerate_lab.faults import disruption, engine, host, switch
from linerate_lab.faults.disruption import BUSY_COMM, LAB_SYSFS  # noqa: F401
from linerate_lab.faults.engine import NODE_CAPS, FaultError  # noqa: F401
from linerate_lab.faults.engine import fold_switch_side as _fold_switch_side  # noqa: F401
from linerate_lab.faults.host import FLAKY_SHARE, RX_DEGRADE_GBPS, SKEW_FW  # noqa: F401

ROWS = host.ROWS + disruption.ROWS + switch.ROWS
FAULTS = engine.actions(ROWS)


def apply(kind, args, lab):
    """Apply (or undo) fault ``kind`` with ``args``; its message. ``list`` / ``help``: every fault's usage."""
    return engine.apply(FAULTS, kind, args, lab)


def __getattr__(name):
    action = FAULTS.get(name.replace("_", "-"))
    if action is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return action
