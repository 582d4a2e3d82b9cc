"""/etc/init.d/openibd of mlnx-ofed-kernel-utils (23.10/24.10): ``start``
loads the OFED driver stack, ``stop`` unloads it (refusing while another
module, e.g. nvidia_peermem, still uses ib_core), ``restart``, ``status``.
A driver (re)load resets the NICs' runtime QoS / rdma_cm state.
"""

from . import common
from .. import hardware, kmods
from .kmod import changing_node, holders, insert

OK = "[  OK  ]"
FAILED = "[FAILED]"


def line(label, ok):
    return f"{label:<59}{OK if ok else FAILED}\n"


def stop(node):
    stack = [m for m in reversed(kmods.OFED_STACK) if m in node["modules"] and m in kmods.OFED_MODULES]
    outside = [(m, h) for m in stack for h in holders(node, m) if h not in kmods.OFED_MODULES]
    if outside:
        mod, user = outside[0]
        common.out(line("Unloading HCA driver:", False))
        common.out(f"rmmod: ERROR: Module {mod} is in use by: {user}\n")
        return False
    for m in stack:
        node["modules"].remove(m)
        (node.get("module_versions") or {}).pop(m, None)
    common.out(line("Unloading HCA driver:", True))
    return True


def start(node):
    for name in kmods.OFED_STACK:
        path = kmods.find(name)
        if path is None or kmods.read_ko(path) is None:
            if name in ("mlx5_core", "ib_core", "mlx5_ib"):
                common.out(line("Loading HCA driver and Access Layer:", False))
                return False
            continue
        if insert(node, name, path):
            common.out(line("Loading HCA driver and Access Layer:", False))
            return False
    for nic in node["nics"]:
        nic["qos"] = hardware.fresh_qos()
        nic["ecn"] = hardware.ecn_from_firmware(nic["firmware"]["current"])
        nic["cma"] = hardware.fresh_cma()
    common.out(line("Loading HCA driver and Access Layer:", True))
    return True


def main(argv):
    cmd = argv[0] if argv else ""
    if cmd not in ("start", "stop", "restart", "force-restart", "status"):
        common.out("Usage: openibd {start|force-start|stop|force-stop|restart|force-restart|status}\n")
        return 1
    with changing_node() as node:
        if cmd == "status":
            loaded = [x for x in kmods.OFED_STACK if x in node["modules"]]
            common.out("\n  HCA driver loaded\n\nConfigured Mellanox EN devices:\n" if loaded else "\n  HCA driver is not loaded\n")
            return 0 if loaded else 3
        if cmd in ("stop", "restart", "force-restart") and not stop(node):
            return 1
        if cmd in ("start", "restart", "force-restart") and not start(node):
            return 1
    return 0
