"""ibv_devinfo (and ibv_devices), libibverbs/examples of rdma-core v44-v50,
for a ConnectX-7: the ``print_hca_cap`` layout, without the newer
``effective_speed`` line. ``-v`` prints the device limits of a CX7 and the
port's extended attributes and GID table.

    ibv_devinfo [-d <dev>] [-i <port>] [-l] [-v]
"""

import getopt

from . import common

SPEED_ENUM = {
    "NDR": (128, "100.0 Gbps"),
    "HDR": (64, "50.0 Gbps"),
    "EDR": (32, "25.0 Gbps"),
    "FDR": (16, "14.0 Gbps"),
    "QDR": (4, "10.0 Gbps"),
    "DDR": (2, "5.0 Gbps"),
    "SDR": (1, "2.5 Gbps"),
}
PORT_STATE = {1: "PORT_DOWN", 2: "PORT_INIT", 3: "PORT_ARMED", 4: "PORT_ACTIVE"}
PHYS_STATE = {2: "POLLING", 3: "DISABLED", 5: "LINK_UP"}
MTU = {1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}

# ConnectX-7 device attributes as ibv_query_device reports them.
CX7_LIMITS = [
    ("max_mr_size", "\t\t\t", "0xffffffffffffffff"),
    ("page_size_cap", "\t\t\t", "0xfffffffffffff000"),
    ("max_qp", "\t\t\t\t", "131072"),
    ("max_qp_wr", "\t\t\t", "32768"),
    ("device_cap_flags", "\t\t", "0x21361c36"),
]
CX7_FLAGS = [
    "BAD_PKEY_CNTR",
    "BAD_QKEY_CNTR",
    "AUTO_PATH_MIG",
    "CHANGE_PHY_PORT",
    "PORT_ACTIVE_EVENT",
    "SYS_IMAGE_GUID",
    "RC_RNR_NAK_GEN",
    "MEM_WINDOW",
    "XRC",
    "MEM_MGT_EXTENSIONS",
    "MEM_WINDOW_TYPE_2B",
    "MANAGED_FLOW_STEERING",
]
CX7_LIMITS_2 = [
    ("max_sge", "\t\t\t", "30"),
    ("max_sge_rd", "\t\t\t", "30"),
    ("max_cq", "\t\t\t\t", "16777216"),
    ("max_cqe", "\t\t\t", "4194303"),
    ("max_mr", "\t\t\t\t", "16777216"),
    ("max_pd", "\t\t\t\t", "8388608"),
    ("max_qp_rd_atom", "\t\t\t", "16"),
    ("max_ee_rd_atom", "\t\t\t", "0"),
    ("max_res_rd_atom", "\t\t", "2097152"),
    ("max_qp_init_rd_atom", "\t\t", "16"),
    ("max_ee_init_rd_atom", "\t\t", "0"),
    ("atomic_cap", "\t\t\t", "ATOMIC_HCA (1)"),
    ("max_ee", "\t\t\t\t", "0"),
    ("max_rdd", "\t\t\t", "0"),
    ("max_mw", "\t\t\t\t", "16777216"),
    ("max_raw_ipv6_qp", "\t\t", "0"),
    ("max_raw_ethy_qp", "\t\t", "0"),
    ("max_mcast_grp", "\t\t\t", "2097152"),
    ("max_mcast_qp_attach", "\t\t", "240"),
    ("max_total_mcast_qp_attach", "\t", "503316480"),
    ("max_ah", "\t\t\t\t", "2147483647"),
    ("max_fmr", "\t\t\t", "0"),
    ("max_srq", "\t\t\t", "8388608"),
    ("max_srq_wr", "\t\t\t", "32767"),
    ("max_srq_sge", "\t\t\t", "31"),
    ("max_pkeys", "\t\t\t", "128"),
    ("local_ca_ack_delay", "\t\t", "16"),
]


def usage(prog="ibv_devinfo"):
    return (
        f"Usage: {prog}             print the ca attributes\n\nOptions:\n"
        "  -d, --ib-dev=<dev>     use IB device <dev> (default all devices)\n"
        "  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n"
        "  -l, --list             print only the IB devices names\n"
        "  -v, --verbose          print all the attributes of the IB device(s)\n"
    )


def gid_lines(nic, nd):
    lines = []
    ll = not common.is_ib(nic)
    for idx, gid, ver, _ in common.gids(nic, nd):
        suffix = (", RoCE v1" if ver == "v1" else ", RoCE v2") if ll else ""
        shown = gid if ver == "v1" else common.compressed_gid(gid)
        lines.append(f"\t\t\tGID[{idx:3d}]:\t\t{shown}{suffix}")
    return lines


def hca(nic, port, verbose):
    nd = common.read_netdev(nic["netdev"])
    state, phys = common.port_state(nic, nd)
    ib = common.is_ib(nic)
    mtu_enum = 5 if ib else common.active_mtu(nd["mtu"] if nd else 1500)[0]
    lines = [
        f"hca_id:\t{nic['device']}",
        "\ttransport:\t\t\tInfiniBand (0)",
        f"\tfw_ver:\t\t\t\t{nic['fw_version']}",
        f"\tnode_guid:\t\t\t{common.guid_colons(nic['node_guid'])}",
        f"\tsys_image_guid:\t\t\t{common.guid_colons(nic['sys_image_guid'])}",
        "\tvendor_id:\t\t\t0x02c9",
        f"\tvendor_part_id:\t\t\t{int(nic['ca_type'][2:])}",
        "\thw_ver:\t\t\t\t0x0",
        f"\tboard_id:\t\t\t{nic['board_id']}",
        "\tphys_port_cnt:\t\t\t1",
    ]
    if verbose:
        lines += [f"\t{k}:{tabs}{v}" for k, tabs, v in CX7_LIMITS]
        lines += ["\t\t\t\t\t" + f for f in CX7_FLAGS]
        lines += [f"\t{k}:{tabs}{v}" for k, tabs, v in CX7_LIMITS_2]
        lines += ["\thca_core_clock:\t\t\t1000000kHZ", "\tdevice_cap_flags_ex:\t\t0x3021361C36", "\tmax_wq_type_rq:\t\t\t8388608", "\tnum_comp_vectors:\t\t63"]
    if port in (0, nic["port"]):
        lines += [
            f"\t\tport:\t{nic['port']}",
            f"\t\t\tstate:\t\t\t{PORT_STATE[state]} ({state})",
            "\t\t\tmax_mtu:\t\t4096 (5)",
            f"\t\t\tactive_mtu:\t\t{MTU[mtu_enum]} ({mtu_enum})",
            f"\t\t\tsm_lid:\t\t\t{nic.get('sm_lid', 0) if ib else 0}",
            f"\t\t\tport_lid:\t\t{nic.get('lid', 0) if ib else 0}",
            "\t\t\tport_lmc:\t\t0x00",
            f"\t\t\tlink_layer:\t\t{nic['link_layer']}",
        ]
        if verbose:
            speed, speed_str = SPEED_ENUM[common.ib_speed_name(nic)]
            lines += [
                "\t\t\tmax_msg_sz:\t\t0x40000000",
                f"\t\t\tport_cap_flags:\t\t0x{0xA751E848 if ib else 0x04010000:08x}",
                "\t\t\tport_cap_flags2:\t0x0000",
                "\t\t\tmax_vl_num:\t\t" + ("4 (3)" if ib else "invalid value (0)"),
                "\t\t\tbad_pkey_cntr:\t\t0x0",
                "\t\t\tqkey_viol_cntr:\t\t0x0",
                "\t\t\tsm_sl:\t\t\t0",
                f"\t\t\tpkey_tbl_len:\t\t{128 if ib else 1}",
                f"\t\t\tgid_tbl_len:\t\t{8 if ib else 255}",
                "\t\t\tsubnet_timeout:\t\t" + ("18" if ib else "0"),
                "\t\t\tinit_type_reply:\t0",
                "\t\t\tactive_width:\t\t4X (2)",
                f"\t\t\tactive_speed:\t\t{speed_str} ({speed})",
                f"\t\t\tphys_state:\t\t{PHYS_STATE[phys]} ({phys})",
            ]
            lines += gid_lines(nic, nd)
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv, what="devinfo"):
    _, node = common.load_node(ports=True)
    nics = common.verbs_nics(node)
    if what == "devices":
        common.out("    device          \t   node GUID\n    ------          \t----------------\n")
        for nic in nics:
            common.out(f"    {nic['device']:<16}\t{nic['node_guid'][2:]}\n")
        return 0
    try:
        opts, _ = getopt.gnu_getopt(argv, "d:i:lv", ["ib-dev=", "ib-port=", "list", "verbose"])
    except getopt.GetoptError:
        common.out(usage())
        return 255
    dev, port, verbose = None, 0, False
    for o, a in opts:
        if o in ("-d", "--ib-dev"):
            dev = a
        elif o in ("-i", "--ib-port"):
            try:
                port = int(a, 0)
            except ValueError:
                port = 0
            if port <= 0:
                common.out(usage())
                return 1
        elif o in ("-v", "--verbose"):
            verbose = True
        elif o in ("-l", "--list"):
            common.out(f"{len(nics)} HCA{'s' if len(nics) != 1 else ''} found:\n")
            for nic in nics:
                common.out(f"\t{nic['device']}\n")
            common.out("\n")
            return 0
    if dev is not None:
        chosen = [n for n in nics if n["device"] == dev]
        if not chosen:
            common.err(f"IB device '{dev}' wasn't found\n")
            return 255
        nics = chosen
    elif not nics:
        common.err("No IB devices found\n")
        return 255
    rc = 0
    for nic in nics:
        if port and port > 1:
            common.err("Invalid port requested for device\n")
            rc |= 4
            continue
        common.out(hca(nic, port, verbose))
    return rc
