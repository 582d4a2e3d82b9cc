"""show_gids, the mlnx-tools script (23.10/24.10): TAB-separated GID table
of every RDMA port from sysfs, IPv4 column for IPv4-mapped GIDs, then
``n_gids_found=N``.

    show_gids [<ibdev>]
"""

from . import common

HEADER = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"


def main(argv):
    _, node = common.load_node()
    nics = {n["device"]: n for n in common.rdma_nics(node)}
    common.out(HEADER)
    if argv:
        devs = [argv[0]]
    elif nics:
        devs = sorted(nics)
    else:
        common.err("ls: cannot access '/sys/class/infiniband/': No such file or directory\n")
        devs = []
    count = 0
    for d in devs:
        nic = nics.get(d)
        if nic is None:
            common.err(f"ls: cannot access '/sys/class/infiniband/{d}/ports/': No such file or directory\n")
            continue
        table = common.gids(nic)
        ndev = "" if common.is_ib(nic) else nic["netdev"]
        for idx, gid, ver, ipv4 in sorted(table, key=lambda r: str(r[0])):
            if gid.startswith("0000:0000:0000:0000:0000:ffff") and ipv4:
                common.out(f"{d}\t{nic['port']}\t{idx}\t{gid}\t{ipv4}  \t{ver}\t{ndev}\n")
            else:
                common.out(f"{d}\t{nic['port']}\t{idx}\t{gid}\t\t\t{ver}\t{ndev}\n")
            count += 1
    common.out(f"n_gids_found={count}\n")
    return 0
