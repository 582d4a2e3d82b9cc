"""mst of MFT 4.26-4.30: ``start`` creates /dev/mst/mt4129_pciconf<N> (kept
in the model as the node's ``mst_started``), ``stop`` removes them,
``status [-v]`` lists them.
"""

from . import common
from .. import hardware, model


def status(node, verbose, mft):
    if not node.get("mst_started"):
        return "MST modules:\n------------\n    MST PCI module is not loaded\n    MST PCI configuration module is not loaded\n"
    nics = sorted(node["nics"], key=lambda n: n["pci"])
    text = "MST modules:\n------------\n    MST PCI module is not loaded\n    MST PCI configuration module loaded\n\nMST devices:\n------------\n"
    if verbose:
        text = (
            f"MST modules:\n------------\n"
            "    MST PCI module is not loaded\n"
            "    MST PCI configuration module loaded\n"
            "PCI devices:\n------------\n"
            f"{'DEVICE_TYPE':<20}{'MST':<34}{'PCI':<8}{'RDMA':<12}{'NET':<25}NUMA  \n"
        )
        for nic in nics:
            text += (
                f"{hardware.CX7['device_type'] + '(rev:0)':<20}{common.mst_name(node, nic):<34}"
                f"{nic['pci'][5:]:<8}{nic['device']:<12}{'net-' + nic['netdev']:<25}"
                f"{nic['numa_node']}     \n"
            )
        return text + "\n"
    for nic in nics:
        text += (
            f"{common.mst_name(node, nic):<33}- PCI configuration cycles access.\n"
            f"{'':<35}domain:bus:dev.fn={nic['pci']} addr.reg=88 data.reg=92 cr_bar.gw_offset=-1\n"
            f"{'':<35}Chip revision is: 00\n"
        )
    return text + "\n"


def main(argv, mft="4.30.0-139"):
    cmd = argv[0] if argv else "status"
    if cmd == "status":
        _, node = common.load_node()
        common.out(status(node, "-v" in argv[1:], mft))
        return 0
    if cmd in ("start", "restart", "stop"):
        with model.locked() as m:
            node = model.node(m)
            if cmd in ("stop", "restart"):
                common.out(
                    "Stopping MST (Mellanox Software Tools) driver set\n"
                    "Unloading MST PCI module (unused) - Success\n"
                    "Unloading MST PCI configuration module - Success\n"
                )
                node["mst_started"] = False
            if cmd in ("start", "restart"):
                common.out(
                    "Starting MST (Mellanox Software Tools) driver set\n"
                    "Loading MST PCI module - Success\n"
                    "Loading MST PCI configuration module - Success\n"
                    "Create devices\n"
                    "Unloading MST PCI module (unused) - Success\n"
                )
                node["mst_started"] = True
        return 0
    if cmd == "version":
        common.out(f"mst, mft {mft}, built on Oct 24 2024, 10:23:27. Git SHA Hash: N/A\n")
        return 0
    common.out(f"Unknown command: {cmd}\n")
    return 1
