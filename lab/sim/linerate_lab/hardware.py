"""The simulated hardware: what one GPU node of the lab is made of.

``new_node()`` / ``new_nic()`` build the node and NIC dicts of the fabric
model (docs/architecture.md) with the values a real HGX H100 node with
ConnectX-7 (MCX75310AAS-NEAT, 400GbE / NDR, single-port OSFP, firmware
28.39.x) reports: PCI addresses and NUMA nodes of a two-socket board, GUIDs
and MACs from NVIDIA's OUI that are unique per node and rail, the firmware
parameters ``mlxconfig`` prints for such a card (``default`` / ``current`` /
``next_boot``) and the QoS state of a freshly loaded mlx5 driver.

It also holds the facts the node tools share: the order ``mlxconfig`` lists
parameters in, each parameter's value spellings, which reset makes a pending
parameter take effect (``RESET_REQUIRED``), and ``boot()`` — what a power
cycle of the node does to the model.
"""

import copy
import os

from . import kmods

OUI = (0xA0, 0x88, 0xC2)  # Mellanox Technologies / NVIDIA

CX7 = {
    "ca_type": "MT4129",
    "device_id": 4129,  # PCI device 0x1021; ibv_devinfo vendor_part_id
    "device_type": "ConnectX7",  # mlxconfig / mlxfwmanager "Device type"
    "mst_name": "mt4129",  # /dev/mst/mt4129_pciconf<N>
    "part_number": "MCX75310AAS-NEAT",
    "psid": "MT_0000000838",
    "board_id": "MT_0000000838",
    "name": "MCX75310AAS-NEAT_Ax",
    "description": (
        "NVIDIA ConnectX-7 HHHL Adapter Card; 400GbE / NDR IB (default mode); Single-port OSFP; PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled"
    ),
    "vpd_description": "NVIDIA ConnectX-7 HHHL adapter card, 400GbE / NDR IB (default mode), single-port OSFP, PCIe 5.0 x16",
    "fw_version": "28.39.2048",
    "fw_release_date": "29.11.2023",
    "pxe_version": "3.7.300",
    "uefi_version": "14.32.17",
    "hw_ver": 0,
}

# Where the NICs of an 8-GPU two-socket node sit: (PCI bus, NUMA node), in
# rail order. A dual-rail node uses the first two, one per socket.
PCI_SLOTS = {
    1: [(0x41, 0)],
    2: [(0x41, 0), (0xC1, 1)],
    4: [(0x1A, 0), (0x41, 0), (0x9A, 1), (0xC1, 1)],
    8: [(0x0C, 0), (0x2A, 0), (0x41, 0), (0x58, 0), (0x86, 1), (0xA5, 1), (0xBD, 1), (0xD5, 1)],
}

GPU_MODEL = "NVIDIA H100 80GB HBM3"
GPU_DRIVER = "550.54.15"
# The node containers share the host kernel, so uname -r (and Ansible) see this.
KERNEL = os.uname().release

# mlxconfig's parameters for a ConnectX-7 port, in the order `mlxconfig q`
# lists them, with the factory default as mlxconfig spells it.
CX7_PARAMS = [
    ("MEMIC_BAR_SIZE", "0"),
    ("MEMIC_SIZE_LIMIT", "_256KB(1)"),
    ("HOST_CHAINING_MODE", "DISABLED(0)"),
    ("HOST_CHAINING_CACHE_DISABLE", "False(0)"),
    ("HOST_CHAINING_DESCRIPTORS", "Array[0..7]"),
    ("HOST_CHAINING_TOTAL_BUFFER_SIZE", "Array[0..7]"),
    ("FLEX_PARSER_PROFILE_ENABLE", "0"),
    ("PROG_PARSE_GRAPH", "False(0)"),
    ("FLEX_IPV4_OVER_VXLAN_PORT", "0"),
    ("ROCE_NEXT_PROTOCOL", "254"),
    ("ESWITCH_HAIRPIN_DESCRIPTORS", "Array[0..7]"),
    ("ESWITCH_HAIRPIN_TOT_BUFFER_SIZE", "Array[0..7]"),
    ("PF_BAR2_SIZE", "0"),
    ("PF_NUM_OF_VF_VALID", "False(0)"),
    ("NON_PREFETCHABLE_PF_BAR", "False(0)"),
    ("VF_VPD_ENABLE", "False(0)"),
    ("PF_NUM_PF_MSIX_VALID", "False(0)"),
    ("PER_PF_NUM_SF", "False(0)"),
    ("STRICT_VF_MSIX_NUM", "False(0)"),
    ("VF_NODNIC_ENABLE", "False(0)"),
    ("NUM_PF_MSIX_VALID", "True(1)"),
    ("NUM_OF_VFS", "0"),
    ("NUM_OF_PF", "1"),
    ("PF_BAR2_ENABLE", "False(0)"),
    ("SRIOV_EN", "False(0)"),
    ("PF_LOG_BAR_SIZE", "5"),
    ("VF_LOG_BAR_SIZE", "1"),
    ("NUM_PF_MSIX", "63"),
    ("NUM_VF_MSIX", "11"),
    ("INT_LOG_MAX_PAYLOAD_SIZE", "AUTOMATIC(0)"),
    ("PCIE_CREDIT_TOKEN_TIMEOUT", "0"),
    ("ACCURATE_TX_SCHEDULER", "False(0)"),
    ("PARTIAL_RESET_EN", "False(0)"),
    ("SW_RECOVERY_ON_ERRORS", "False(0)"),
    ("RESET_WITH_HOST_ON_ERRORS", "False(0)"),
    ("PCI_BUS0_RESTRICT_SPEED", "PCI_GEN_1(0)"),
    ("PCI_BUS0_RESTRICT_ASPM", "False(0)"),
    ("PCI_BUS0_RESTRICT_WIDTH", "PCI_X1(0)"),
    ("PCI_BUS0_RESTRICT", "False(0)"),
    ("PCI_DOWNSTREAM_PORT_OWNER", "Array[0..15]"),
    ("CQE_COMPRESSION", "BALANCED(0)"),
    ("IP_OVER_VXLAN_EN", "False(0)"),
    ("MKEY_BY_NAME", "False(0)"),
    ("PCI_ATOMIC_MODE", "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"),
    ("TUNNEL_ECN_COPY_DISABLE", "False(0)"),
    ("LRO_LOG_TIMEOUT0", "6"),
    ("LRO_LOG_TIMEOUT1", "7"),
    ("LRO_LOG_TIMEOUT2", "8"),
    ("LRO_LOG_TIMEOUT3", "13"),
    ("LOG_TX_PSN_WINDOW", "7"),
    ("LOG_MAX_OUTSTANDING_WQE", "7"),
    ("TUNNEL_IP_PROTO_ENTROPY_DISABLE", "False(0)"),
    ("ICM_CACHE_MODE", "DEVICE_DEFAULT(0)"),
    ("TX_SCHEDULER_BURST", "0"),
    ("ZERO_TOUCH_TUNING_ENABLE", "False(0)"),
    ("LOG_MAX_QUEUE", "17"),
    ("LOG_DCR_HASH_TABLE_SIZE", "11"),
    ("MAX_PACKET_LIFETIME", "0"),
    ("DCR_LIFO_SIZE", "16384"),
    ("LINK_TYPE_P1", "ETH(2)"),
    ("ROCE_CC_PRIO_MASK_P1", "255"),
    ("ROCE_CC_CNP_MODERATION_P1", "DEVICE_DEFAULT(0)"),
    ("ROCE_RTT_RESP_DSCP_P1", "0"),
    ("ROCE_RTT_RESP_DSCP_MODE_P1", "DEVICE_DEFAULT(0)"),
    ("CLAMP_TGT_RATE_AFTER_TIME_INC_P1", "True(1)"),
    ("CLAMP_TGT_RATE_P1", "False(0)"),
    ("RPG_TIME_RESET_P1", "300"),
    ("RPG_BYTE_RESET_P1", "32767"),
    ("RPG_THRESHOLD_P1", "1"),
    ("RPG_MAX_RATE_P1", "0"),
    ("RPG_AI_RATE_P1", "5"),
    ("RPG_HAI_RATE_P1", "50"),
    ("RPG_GD_P1", "11"),
    ("RPG_MIN_DEC_FAC_P1", "50"),
    ("RPG_MIN_RATE_P1", "1"),
    ("RATE_TO_SET_ON_FIRST_CNP_P1", "0"),
    ("DCE_TCP_G_P1", "1019"),
    ("DCE_TCP_RTT_P1", "1"),
    ("RATE_REDUCE_MONITOR_PERIOD_P1", "4"),
    ("INITIAL_ALPHA_VALUE_P1", "1023"),
    ("MIN_TIME_BETWEEN_CNPS_P1", "4"),
    ("CNP_802P_PRIO_P1", "6"),
    ("CNP_DSCP_P1", "48"),
    ("LLDP_NB_DCBX_P1", "False(0)"),
    ("LLDP_NB_RX_MODE_P1", "OFF(0)"),
    ("LLDP_NB_TX_MODE_P1", "OFF(0)"),
    ("DCBX_IEEE_P1", "True(1)"),
    ("DCBX_CEE_P1", "True(1)"),
    ("DCBX_WILLING_P1", "True(1)"),
    ("KEEP_ETH_LINK_UP_P1", "True(1)"),
    ("KEEP_IB_LINK_UP_P1", "False(0)"),
    ("KEEP_LINK_UP_ON_BOOT_P1", "False(0)"),
    ("KEEP_LINK_UP_ON_STANDBY_P1", "False(0)"),
    ("DO_NOT_CLEAR_PORT_STATS_P1", "False(0)"),
    ("AUTO_POWER_SAVE_LINK_DOWN_P1", "False(0)"),
    ("NUM_OF_VL_P1", "_4_VLs(3)"),
    ("NUM_OF_TC_P1", "_8_TCs(0)"),
    ("NUM_OF_PFC_P1", "8"),
    ("VL15_BUFFER_SIZE_P1", "0"),
    ("DUP_MAC_ACTION_P1", "LAST_CFG(0)"),
    ("SRIOV_IB_ROUTING_MODE_P1", "LID(1)"),
    ("IB_ROUTING_MODE_P1", "LID(1)"),
    ("PHY_AUTO_NEG_P1", "DEVICE_DEFAULT(0)"),
    ("PHY_RATE_MASK_OVERRIDE_P1", "False(0)"),
    ("PHY_FEC_OVERRIDE_P1", "DEVICE_DEFAULT(0)"),
    ("PF_TOTAL_SF", "0"),
    ("PF_SF_BAR_SIZE", "0"),
    ("PF_NUM_PF_MSIX", "63"),
    ("ROCE_CONTROL", "ROCE_ENABLE(2)"),
    ("PCI_WR_ORDERING", "per_mkey(0)"),
    ("ATS_ENABLED", "False(0)"),
    ("MULTI_PORT_VHCA_EN", "False(0)"),
    ("PORT_OWNER", "True(1)"),
    ("ALLOW_RD_COUNTERS", "True(1)"),
    ("RENEG_ON_CHANGE", "True(1)"),
    ("TRACER_ENABLE", "True(1)"),
    ("IP_VER", "IPv4(0)"),
    ("BOOT_UNDI_NETWORK_WAIT", "0"),
    ("UEFI_HII_EN", "True(1)"),
    ("BOOT_DBG_LOG", "False(0)"),
    ("UEFI_LOGS", "DISABLED(0)"),
    ("BOOT_VLAN", "1"),
    ("LEGACY_BOOT_PROTOCOL", "NONE(0)"),
    ("BOOT_INTERRUPT_DIS", "False(0)"),
    ("BOOT_LACP_DIS", "True(1)"),
    ("BOOT_VLAN_EN", "False(0)"),
    ("BOOT_PKEY", "0"),
    ("DYNAMIC_VF_MSIX_TABLE", "False(0)"),
    ("EXP_ROM_UEFI_ARM_ENABLE", "True(1)"),
    ("EXP_ROM_UEFI_x86_ENABLE", "True(1)"),
    ("EXP_ROM_PXE_ENABLE", "True(1)"),
    # Listed only while ADVANCED_PCI_SETTINGS runs (HIDDEN_UNLESS); its place
    # in the listing is not attested by a published dump. 0 = auto (PRM).
    ("MAX_ACC_OUT_READ", "0"),
    ("ADVANCED_PCI_SETTINGS", "False(0)"),
    ("SAFE_MODE_THRESHOLD", "10"),
    ("SAFE_MODE_ENABLE", "True(1)"),
]
PARAM_ORDER = [name for name, _ in CX7_PARAMS]

# Enumerated parameters beyond True/False: every spelling mlxconfig accepts.
ENUMS = {
    "LINK_TYPE_P1": {"IB": 1, "ETH": 2},
    "MEMIC_SIZE_LIMIT": {"DISABLED": 0, "_256KB": 1, "_512KB": 2, "_1MB": 3},
    "HOST_CHAINING_MODE": {"DISABLED": 0, "STORE_AND_FORWARD": 1, "CUT_THROUGH": 2},
    "INT_LOG_MAX_PAYLOAD_SIZE": {"AUTOMATIC": 0, "_4KB": 12},
    "PCI_BUS0_RESTRICT_SPEED": {"PCI_GEN_1": 0, "PCI_GEN_2": 1, "PCI_GEN_3": 2, "PCI_GEN_4": 3, "PCI_GEN_5": 4},
    "PCI_BUS0_RESTRICT_WIDTH": {"PCI_X1": 0, "PCI_X2": 1, "PCI_X4": 2, "PCI_X8": 3, "PCI_X16": 4},
    "CQE_COMPRESSION": {"BALANCED": 0, "AGGRESSIVE": 1},
    "PCI_ATOMIC_MODE": {"PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED": 0, "PCI_ATOMIC_ENABLED_EXT_ATOMIC_DISABLED": 1, "PCI_ATOMIC_ENABLED_EXT_ATOMIC_ENABLED": 2},
    "ICM_CACHE_MODE": {"DEVICE_DEFAULT": 0, "AGGRESSIVE": 1, "SMALL_CACHE": 2},
    "ROCE_CC_CNP_MODERATION_P1": {"DEVICE_DEFAULT": 0, "DISABLED": 1, "ENABLED": 2},
    "ROCE_RTT_RESP_DSCP_MODE_P1": {"DEVICE_DEFAULT": 0, "FIXED_VALUE": 1, "CNP_DSCP": 2},
    "LLDP_NB_RX_MODE_P1": {"OFF": 0, "DEFAULT": 1, "ALL": 2},
    "LLDP_NB_TX_MODE_P1": {"OFF": 0, "DEFAULT": 1, "ALL": 2},
    "NUM_OF_VL_P1": {"_1_VLs": 1, "_2_VLs": 2, "_4_VLs": 3, "_8_VLs": 4},
    "NUM_OF_TC_P1": {"_8_TCs": 0, "_1_TCs": 1, "_2_TCs": 2, "_3_TCs": 3, "_4_TCs": 4},
    "DUP_MAC_ACTION_P1": {"LAST_CFG": 0, "FIRST_CFG": 1},
    "SRIOV_IB_ROUTING_MODE_P1": {"GID": 0, "LID": 1},
    "IB_ROUTING_MODE_P1": {"GID": 0, "LID": 1},
    "PHY_AUTO_NEG_P1": {"DEVICE_DEFAULT": 0, "AUTO_NEG_ON": 1, "AUTO_NEG_OFF": 2},
    "PHY_FEC_OVERRIDE_P1": {"DEVICE_DEFAULT": 0, "NO_FEC": 1, "FIRECODE": 2, "RS": 3},
    "ROCE_CONTROL": {"DEVICE_DEFAULT": 0, "ROCE_DISABLE": 1, "ROCE_ENABLE": 2},
    "PCI_WR_ORDERING": {"per_mkey": 0, "force_relax": 1},
    "IP_VER": {"IPv4": 0, "IPv6": 1, "IPv4_IPv6": 2},
    "UEFI_LOGS": {"DISABLED": 0, "BASIC": 1, "VERBOSE": 2},
    "LEGACY_BOOT_PROTOCOL": {"NONE": 0, "PXE": 1, "iSCSI": 2, "BOTH": 3},
}
BOOLEAN = {"False": 0, "True": 1}

# What makes a pending (next_boot) value take effect. A reset of level 3
# ("Driver restart and PCI reset", mlxfwreset's default on ConnectX-7) reloads
# the firmware and its NV configuration. Parameters that change how the card
# presents itself on PCIe (BAR sizes, number of functions and MSI-X vectors,
# ATS, link restrictions) are sized by the BIOS during enumeration, and option
# ROM settings are read at POST: those need a reboot of the host (a cold one
# for the PCIe ones), which the lab models as a node power cycle (``boot()``).
RESET_LEVEL_3 = "mlxfwreset level 3"
REBOOT = "reboot"
COLD_REBOOT = "cold reboot"
RESET_REQUIRED = {
    "SRIOV_EN": COLD_REBOOT,
    "NUM_OF_VFS": COLD_REBOOT,
    "NUM_OF_PF": COLD_REBOOT,
    "PF_LOG_BAR_SIZE": COLD_REBOOT,
    "VF_LOG_BAR_SIZE": COLD_REBOOT,
    "PF_BAR2_ENABLE": COLD_REBOOT,
    "PF_BAR2_SIZE": COLD_REBOOT,
    "NON_PREFETCHABLE_PF_BAR": COLD_REBOOT,
    "MEMIC_BAR_SIZE": COLD_REBOOT,
    "NUM_PF_MSIX": COLD_REBOOT,
    "NUM_VF_MSIX": COLD_REBOOT,
    "NUM_PF_MSIX_VALID": COLD_REBOOT,
    "PF_NUM_PF_MSIX": COLD_REBOOT,
    "PF_NUM_PF_MSIX_VALID": COLD_REBOOT,
    "DYNAMIC_VF_MSIX_TABLE": COLD_REBOOT,
    "ATS_ENABLED": COLD_REBOOT,
    "ADVANCED_PCI_SETTINGS": COLD_REBOOT,
    "PCI_BUS0_RESTRICT": COLD_REBOOT,
    "PCI_BUS0_RESTRICT_SPEED": COLD_REBOOT,
    "PCI_BUS0_RESTRICT_WIDTH": COLD_REBOOT,
    "PCI_BUS0_RESTRICT_ASPM": COLD_REBOOT,
    "EXP_ROM_UEFI_ARM_ENABLE": REBOOT,
    "EXP_ROM_UEFI_x86_ENABLE": REBOOT,
    "EXP_ROM_PXE_ENABLE": REBOOT,
    "UEFI_HII_EN": REBOOT,
    "LEGACY_BOOT_PROTOCOL": REBOOT,
}


# Parameters mlxconfig hides (absent from `q`, refused by `set`) until another
# one is on in the running firmware: MAX_ACC_OUT_READ behind
# ADVANCED_PCI_SETTINGS (NVIDIA nic-configuration-operator,
# pkg/configuration/configvalidation.go: "MAX_ACC_OUT_READ is hidden when
# ADVANCED_PCI_SETTINGS is off"; it re-queried after mlxfwreset to see it).
HIDDEN_UNLESS = {"MAX_ACC_OUT_READ": "ADVANCED_PCI_SETTINGS"}


def visible(fw, param):
    """Whether mlxconfig shows ``param`` of firmware state ``fw`` now."""
    gate = HIDDEN_UNLESS.get(param)
    return gate is None or str(fw["current"].get(gate, "")).startswith("True(")


def reset_required(param):
    """The reset a pending value of ``param`` needs (RESET_LEVEL_3 for most)."""
    return RESET_REQUIRED.get(param, RESET_LEVEL_3)


def applies_at_level(param, level):
    """Whether an mlxfwreset of ``level`` (3, or 4 = warm reboot) applies ``param``."""
    need = reset_required(param)
    if level >= 4:
        return need in (RESET_LEVEL_3, REBOOT)
    return need == RESET_LEVEL_3


def numeric(value):
    """The number behind a value as mlxconfig prints it: 'ETH(2)' -> 2, '48' -> 48."""
    if value.endswith(")") and "(" in value:
        return int(value[value.rindex("(") + 1 : -1])
    return int(value)


def spell(param, number, like):
    """The printed form of ``number`` for ``param`` ('like' is its current spelling)."""
    names = ENUMS.get(param)
    if names is None and like.startswith(("True(", "False(")):
        names = BOOLEAN
    if names:
        for name, n in names.items():
            if n == number:
                return f"{name}({n})"
        return str(number)
    return str(number)


# --- addresses --------------------------------------------------------------


def _serial(node_index, rail):
    """A 24-bit number unique per (node, rail): the NIC part of MAC and GUIDs."""
    return 0x100000 | ((node_index & 0xFFF) << 8) | ((rail & 0xF) << 4)


def mac_for(node_index, rail):
    s = _serial(node_index, rail)
    octets = OUI + ((s >> 16) & 0xFF, (s >> 8) & 0xFF, s & 0xFF)
    return ":".join(f"{o:02x}" for o in octets)


def node_guid_for(node_index, rail):
    """ConnectX GUIDs: OUI, 0x0300, then the NIC's 24 bits."""
    s = _serial(node_index, rail)
    return "0x%02x%02x%02x0300%06x" % (OUI + (s,))


def eui64_from_mac(mac):
    """The modified EUI-64 of a MAC (what RoCE uses as port GUID and in fe80 GIDs)."""
    o = [int(x, 16) for x in mac.split(":")]
    o[0] ^= 0x02
    return "%02x%02x%02xfffe%02x%02x%02x" % tuple(o)


def pci_slots(nics_per_node):
    """(bus, numa_node) for each rail of a node with ``nics_per_node`` NICs."""
    if nics_per_node in PCI_SLOTS:
        return PCI_SLOTS[nics_per_node]
    if not 1 <= nics_per_node <= 8:
        raise ValueError(f"nics_per_node must be 1..8, not {nics_per_node}")
    return PCI_SLOTS[8][:nics_per_node]


def netdev_for(bus, transport):
    """The predictable interface name udev gives the port (or its IPoIB child)."""
    if transport == "infiniband":
        return f"ibp{bus}s0"
    return f"enp{bus}s0f0np0"


# --- driver state ------------------------------------------------------------


def fresh_qos():
    """mlnx_qos state right after mlx5_core loads (DCBX in OS mode, PCP trust)."""
    return {
        "dcbx": "os",
        "trust": "pcp",
        "dscp2prio": {},
        "pfc": [0] * 8,
        "cable_len": 7,
        # priority -> traffic class; mlx5 swaps priorities 0 and 1 by default
        "tc": [1, 0, 2, 3, 4, 5, 6, 7],
        "tsa": ["vendor"] * 8,
        "tc_bw": [0] * 8,
        "ratelimit": [0] * 8,
        "prio2buffer": [0] * 8,
        "buffer_size": [262016, 0, 0, 0, 0, 0, 0, 0],
        "max_buffer_size": 2097152,
    }


def ecn_from_firmware(params):
    """Per-priority RoCE congestion control as firmware enables it at load.

    ConnectX enables DCQCN (ECN reaction point and notification point) for
    the priorities in ROCE_CC_PRIO_MASK_P1; the driver mirrors that in
    /sys/class/net/<if>/ecn/roce_{np,rp}/enable/<prio>.
    """
    mask = numeric(params.get("ROCE_CC_PRIO_MASK_P1", "255"))
    bits = [(mask >> p) & 1 for p in range(8)]
    return {"np": list(bits), "rp": list(bits)}


def fresh_cma():
    """rdma_cm configfs defaults: RoCE v2 for new connections, ToS 0."""
    return {"roce_mode": "RoCE v2", "tos": 0}


def link_type_for(transport):
    return "IB(1)" if transport == "infiniband" else "ETH(2)"


def factory_params(transport):
    params = dict(CX7_PARAMS)
    params["LINK_TYPE_P1"] = link_type_for(transport)
    return params


def new_nic(node_index, rail, transport="roce", speed_gbps=400, switch=None, switch_port=None, nics_per_node=2):
    """One ConnectX-7 port of node number ``node_index`` (1-based) on ``rail``."""
    bus, numa = pci_slots(nics_per_node)[rail]
    mac = mac_for(node_index, rail)
    guid = node_guid_for(node_index, rail)
    ib = transport == "infiniband"
    port_guid = guid if ib else "0x" + eui64_from_mac(mac)
    fw = factory_params(transport)
    return {
        "device": f"mlx5_{rail}",
        "netdev": netdev_for(bus, transport),
        "port": 1,
        "pci": f"0000:{bus:02x}:00.0",
        "numa_node": numa,
        "ca_type": CX7["ca_type"],
        "board_id": CX7["board_id"],
        "psid": CX7["psid"],
        "part_number": CX7["part_number"],
        "fw_version": CX7["fw_version"],
        "fw_pending": None,  # a burned image that runs after the next reset
        "serial_number": "MT2349X%05d" % (node_index * 16 + rail),
        "node_guid": guid,
        "port_guid": port_guid,
        "sys_image_guid": guid,
        "mac": mac,
        "link_layer": "InfiniBand" if ib else "Ethernet",
        "speed_gbps": speed_gbps,
        "width": 4,
        "cable": "up" if switch else "down",
        "switch": switch,
        "switch_port": switch_port,
        "lid": 0,
        "sm_lid": 0,
        "firmware": {
            "default": dict(fw),
            "current": dict(fw),
            "next_boot": dict(fw),
        },
        "qos": fresh_qos(),
        "ecn": ecn_from_firmware(fw),
        "cma": fresh_cma(),
    }


def _cable(entry):
    if entry is None:
        return None, None
    if isinstance(entry, dict):
        return entry.get("switch"), entry.get("switch_port")
    switch, port = entry
    return switch, port


def new_node(name, index, transport="roce", nics_per_node=2, speed_gbps=400, cabling=None, gpus=8, kernel=KERNEL, mgmt_ip=None):
    """A GPU node: ``index`` (1-based) makes its addresses unique in the lab.

    ``cabling`` has one entry per rail: ``{"switch": ..., "switch_port": ...}``,
    a ``(switch, switch_port)`` pair, or None for an uncabled port (its link
    is down). The node starts as a freshly imaged host: the inbox mlx5 driver
    udev loaded at boot, no OFED stack, no GPU driver (``gpu_driver`` None);
    the packages, ``modprobe`` and openibd change that.
    """
    if transport not in ("roce", "infiniband"):
        raise ValueError(f"transport must be roce or infiniband, not {transport!r}")
    cabling = list(cabling or [])
    cabling += [None] * (nics_per_node - len(cabling))
    nics = []
    for rail in range(nics_per_node):
        switch, port = _cable(cabling[rail])
        nics.append(new_nic(index, rail, transport, speed_gbps, switch, port, nics_per_node))
    return {
        "name": name,
        "index": index,
        "mgmt_ip": mgmt_ip or f"10.89.0.{10 + index}",
        "gpus": gpus,
        "gpu_model": GPU_MODEL,
        "gpu_driver": None,
        "kernel": kernel,
        "modules": list(kmods.BOOT_AUTOLOAD),
        "nics": nics,
    }


def boot(node):
    """What a power cycle does to a node: firmware loads its next_boot
    configuration and any burned image, and the drivers start from scratch
    (QoS, ECN and rdma_cm settings are not persistent). Which modules load
    depends on the node's files; ``linerate_lab.tools.boot`` decides that
    inside the container, so here none is loaded."""
    for nic in node["nics"]:
        fw = nic["firmware"]
        fw["current"] = copy.deepcopy(fw["next_boot"])
        if nic.get("fw_pending"):
            nic["fw_version"] = nic["fw_pending"]
            nic["fw_pending"] = None
        nic["link_layer"] = "InfiniBand" if fw["current"].get("LINK_TYPE_P1") == "IB(1)" else "Ethernet"
        nic["qos"] = fresh_qos()
        nic["ecn"] = ecn_from_firmware(fw["current"])
        nic["cma"] = fresh_cma()
    node["modules"] = []
    node["module_versions"] = {}
    node["gpu_driver"] = None
    return node
