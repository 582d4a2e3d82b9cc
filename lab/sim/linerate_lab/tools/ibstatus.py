"""ibstatus, the infiniband-diags shell script (rdma-core v44-v50): one block
per port from /sys/class/infiniband, each field line ``\\t<name>:\\t <value>``.

    ibstatus [-h] [devname[:portnum]] ...
"""

from . import common

WIDTH_X = 4


def sysfs_rate(nic, phys):
    if phys != 5 and not common.is_ib(nic):
        return "40 Gb/sec (4X QDR)"
    return f"{nic['speed_gbps']} Gb/sec ({nic.get('width', WIDTH_X)}X {common.ib_speed_name(nic)})"


def port_status(nic):
    state, phys = common.port_state(nic)
    gid = common.gids(nic)[0][1]
    ib = common.is_ib(nic)
    lid = nic.get("lid", 0) if ib else 0
    sm = nic.get("sm_lid", 0) if ib else 0
    return (
        f"Infiniband device '{nic['device']}' port {nic['port']} status:\n"
        f"\tdefault gid:\t {gid}\n"
        f"\tbase lid:\t 0x{lid:x}\n"
        f"\tsm lid:\t\t 0x{sm:x}\n"
        f"\tstate:\t\t {state}: {common.STATE_NAMES[state]}\n"
        f"\tphys state:\t {phys}: {common.PHYS_NAMES[phys]}\n"
        f"\trate:\t\t {sysfs_rate(nic, phys)}\n"
        f"\tlink_layer:\t {nic['link_layer']}\n"
        "\n"
    )


def main(argv):
    if argv and argv[0] == "-h":
        common.out(
            "Usage:  ibstatus  [-h] [devname[:portnum]]\n"
            "\t-h:\tthis help screen\n\tExamples:\n"
            "\t\tibstatus mthca1\t\t# shows status of all ports of 'mthca1'\n"
            "\t\tibstatus mthca0:2\t# shows status port number 2 of 'mthca0'\n"
            "\t\tibstatus\t\t# default: shows status of all 'mthca0' ports\n"
        )
        return 255
    _, node = common.load_node(ports=True)
    nics = {n["device"]: n for n in common.rdma_nics(node)}
    if not argv:
        if not nics:
            common.out("Fatal error:  No devices\n")
            return 255
        for name in sorted(nics):
            common.out(port_status(nics[name]))
        return 0
    for arg in argv:
        dev, _, port = arg.partition(":")
        nic = nics.get(dev)
        if nic is None:
            common.out(f"Fatal error:  device '{dev}': sys files not found (/sys/class/infiniband/{dev}/ports)\n")
            return 255
        if port and port != str(nic["port"]):
            common.out(
                f"Infiniband device '{dev}' port {port} status:\n"
                "\tdefault gid:\t unknown\n\tbase lid:\t unknown\n\tsm lid:\t\t unknown\n"
                "\tstate:\t\t unknown\n\tphys state:\t unknown\n\trate:\t\t unknown\n"
                "\tlink_layer:\t IB\n\n"
            )
            continue
        common.out(port_status(nic))
    return 0
