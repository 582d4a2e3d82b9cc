"""ibstat, as infiniband-diags of rdma-core v44-v50 prints it (MLNX_OFED
23.10 / DOCA-OFED 24.10 ship the same printer, without the newer
"Effective speed" line).

    ibstat [-l] [-s] [-p] [<ca_name> [portnum]]

Errors go through libibmad's IBPANIC/IBWARN: ``ibpanic: [pid] main: ...``
on stderr and exit 255, or ``ibwarn: [pid] func: ...`` and exit 0.
"""

import os

from . import common

CAP_ETH = 0x00010000
CAP_IB = 0xA751E848
STATE = {1: "Down", 2: "Initializing", 3: "Armed", 4: "Active"}
PHYS = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery", 7: "PhyTest"}


def _panic(msg):
    common.err(f"ibpanic: [{os.getpid()}] main: {msg}\n")
    return 255


def _warn(func, msg):
    common.err(f"ibwarn: [{os.getpid()}] {func}: {msg}\n")


def rate(nic, phys):
    """The port rate ibstat shows; a port without link reports 40 (4X QDR)."""
    if phys != 5 and not common.is_ib(nic):
        return 40
    return nic["speed_gbps"]


def ca_header(nic):
    return (
        f"CA '{nic['device']}'\n"
        f"\tCA type: {nic['ca_type']}\n"
        f"\tNumber of ports: 1\n"
        f"\tFirmware version: {nic['fw_version']}\n"
        f"\tHardware version: 0\n"
        f"\tNode GUID: {nic['node_guid']}\n"
        f"\tSystem image GUID: {nic['sys_image_guid']}\n"
    )


def port_block(nic, alone=False):
    pre, hdr = ("", "") if alone else ("\t\t", "\t")
    state, phys = common.port_state(nic)
    ib = common.is_ib(nic)
    lines = [
        f"{hdr}Port {nic['port']}:",
        f"{pre}State: {STATE[state]}",
        f"{pre}Physical state: {PHYS[phys]}",
        f"{pre}Rate: {rate(nic, phys)}",
        f"{pre}Base lid: {nic.get('lid', 0) if ib else 0}",
        f"{pre}LMC: 0",
        f"{pre}SM lid: {nic.get('sm_lid', 0) if ib else 0}",
        f"{pre}Capability mask: 0x{CAP_IB if ib else CAP_ETH:08x}",
        f"{pre}Port GUID: {nic['port_guid']}",
        f"{pre}Link layer: {nic['link_layer']}",
    ]
    return "\n".join(lines) + "\n"


def main(argv):
    list_only = short = ports = False
    args = []
    for a in argv:
        if a in ("-l", "--list_of_cas"):
            list_only = True
        elif a in ("-s", "--short"):
            short = True
        elif a in ("-p", "--port_list"):
            ports = True
        elif a.startswith("-"):
            common.err(f"ibstat: invalid option -- '{a.lstrip('-')}'\n")
            return 255
        else:
            args.append(a)
    _, node = common.load_node(ports=True)
    nics = sorted(common.rdma_nics(node), key=lambda n: n["device"])
    if not nics:
        return _panic("can't list IB device names: No such file or directory")
    if args:
        chosen = [n for n in nics if n["device"] == args[0]]
        if not chosen:
            return _panic(f"'{args[0]}' IB device can't be found: No such file or directory")
        nics = chosen
    portnum = int(args[1], 0) if len(args) > 1 else -1
    if ports:
        for nic in nics:
            common.out(nic["port_guid"] + "\n")
        return 0
    for nic in nics:
        if list_only:
            common.out(nic["device"] + "\n")
        elif not short and portnum >= 0:
            if portnum != nic["port"]:
                _warn("ca_stat", f"CA: '{nic['device']}' has no port number {portnum} - max (1)")
                _warn("main", f"stat of IB device '{nic['device']}' failed")
                continue
            common.out(f"CA: '{nic['device']}'\n" + port_block(nic, alone=True))
        else:
            common.out(ca_header(nic) + ("" if short else port_block(nic)))
    return 0
