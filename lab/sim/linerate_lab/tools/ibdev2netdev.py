"""ibdev2netdev, the MLNX_OFED script (mlnx-ofed-kernel-utils 23.10/24.10,
"new style" branch): ``<ibdev> port <n> ==> <netdev> (<Up|Down>)``; ``-v``
adds PCI address, device id, VPD part/serial, description, firmware and
the RDMA port state padded to 6.

    ibdev2netdev [-v]
"""

from . import common
from .. import hardware


def usage():
    return "ibdev2netdev <options>\n-h, --help                print help message\n-v, --verbose             print more info\n"


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        common.out(usage())
        return 0
    if len(argv) > 1 or (argv and argv[0] != "-v"):
        common.out(usage())
        return 255
    verbose = bool(argv)
    _, node = common.load_node(ports=True)
    nics = common.rdma_nics(node)
    if not nics:
        return 255
    for nic in nics:
        nd = common.read_netdev(nic["netdev"])
        if nd is None:
            continue
        state, phys = common.port_state(nic, nd)
        link = "Up" if (nd["up"] and nic.get("cable") == "up") else "Down"
        if verbose:
            ibstate = f"{common.STATE_NAMES[state]:<6}"
            desc = f"{hardware.CX7['vpd_description']:<15}"
            serial = f"{nic.get('serial_number', 'NA'):<11}"
            common.out(
                f"{nic['pci']} {nic['device']} ({nic['ca_type']} - {serial}) {desc} "
                f"fw {nic['fw_version']} port {nic['port']} ({ibstate}) ==> "
                f"{nic['netdev']} ({link})\n"
            )
        else:
            common.out(f"{nic['device']} port {nic['port']} ==> {nic['netdev']} ({link})\n")
    return 0
