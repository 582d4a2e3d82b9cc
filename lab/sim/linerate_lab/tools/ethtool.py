"""ethtool 6.1 (Debian bookworm) for the simulated ConnectX-7 netdevs:
``ethtool <dev>`` (link settings: speed, duplex, link from the fabric
model), ``ethtool -i <dev>`` (driver info) and ``ethtool -S <dev>`` (mlx5
statistics: the per-priority and PHY counters, accumulated by the lab's
physics in the model's ``counters``; names and layout of mlx5_core's
``NIC statistics:`` listing, Documentation/networking/device_drivers/
ethernet/mellanox/mlx5/counters.rst). Every other netdev and
option runs Debian's ethtool, diverted to /sbin/ethtool.distrib.
"""
import os

from . import common
from .. import kmods, linkphys

REAL = "/sbin/ethtool.distrib"

MODES_400G = ["400000baseCR4/Full", "400000baseKR4/Full", "400000baseSR4/Full",
              "400000baseDR4/Full", "400000baseLR4_ER4_FR4/Full"]


def delegate(argv):
    return common.delegate(REAL, "ethtool", argv)


def settings(nic, nd):
    up = bool(nd["up"]) and nic.get("cable") == "up"
    modes = "\n\t                        ".join(MODES_400G)
    lines = [f"Settings for {nic['netdev']}:",
             "\tSupported ports: [ Backplane ]",
             f"\tSupported link modes:   {modes}",
             "\tSupported pause frame use: Symmetric",
             "\tSupports auto-negotiation: Yes",
             "\tSupported FEC modes: None\t RS\t BASER",
             f"\tAdvertised link modes:  {modes}",
             "\tAdvertised pause frame use: Symmetric",
             "\tAdvertised auto-negotiation: Yes",
             "\tAdvertised FEC modes: None\t RS\t BASER"]
    if up:
        lines += [f"\tSpeed: {nic['speed_gbps'] * 1000}Mb/s",
                  f"\tLane count: {nic.get('width', 4)}",
                  "\tDuplex: Full"]
    else:
        lines += ["\tSpeed: Unknown!", "\tDuplex: Unknown! (255)"]
    lines += ["\tAuto-negotiation: on",
              "\tPort: Direct Attach Copper",
              "\tPHYAD: 0",
              "\tTransceiver: internal",
              "\tSupports Wake-on: d",
              "\tWake-on: d",
              "        Current message level: 0x00000004 (4)",
              "                               link",
              f"\tLink detected: {'yes' if up else 'no'}"]
    return "\n".join(lines) + "\n"


def driver_info(node, nic):
    path = kmods.find("mlx5_core")
    info = kmods.read_ko(path) if path else None
    version = (info or {}).get("version") or os.uname().release
    return ("driver: mlx5_core\n"
            f"version: {version}\n"
            f"firmware-version: {nic['fw_version']} ({nic['psid']})\n"
            "expansion-rom-version: \n"
            f"bus-info: {nic['pci']}\n"
            "supports-statistics: yes\n"
            "supports-test: yes\n"
            "supports-eeprom-access: no\n"
            "supports-register-dump: no\n"
            "supports-priv-flags: yes\n")


PHY = ("rx_crc_errors_phy", "rx_symbol_err_phy", "link_down_events_phy", "rx_corrected_bits_phy",
       "rx_pcs_symbol_err_phy", "rx_fec_uncorrectable_phy", "rx_discards_phy", "tx_discards_phy")
PRIO = ("bytes", "packets", "pause", "pause_duration", "pause_transition")


def statistics(nic, nd):
    c = linkphys.counters(nic)
    names = ["rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_out_of_buffer", *PHY]
    for prio in range(8):
        names += [f"rx_prio{prio}_{w}" for w in PRIO] + [f"rx_prio{prio}_discards"]
        names += [f"tx_prio{prio}_{w}" for w in PRIO]
    totals = {"rx_packets": sum(int(c.get(f"rx_prio{p}_packets", 0)) for p in range(8)),
              "tx_packets": sum(int(c.get(f"tx_prio{p}_packets", 0)) for p in range(8)),
              "rx_bytes": sum(int(c.get(f"rx_prio{p}_bytes", 0)) for p in range(8)),
              "tx_bytes": sum(int(c.get(f"tx_prio{p}_bytes", 0)) for p in range(8))}
    return "NIC statistics:\n" + "".join(f"     {n}: {int(totals.get(n, c.get(n, 0)))}\n" for n in names)


def main(argv):
    if len(argv) == 1 and not argv[0].startswith("-"):
        opt, dev = None, argv[0]
    elif len(argv) == 2 and argv[0] in ("-i", "--driver", "-S", "--statistics"):
        opt, dev = ("-S" if argv[0] in ("-S", "--statistics") else "-i"), argv[1]
    else:
        return delegate(argv)
    _, node = common.load_node()
    nic = next((n for n in node["nics"] if n["netdev"] == dev), None)
    nd = common.read_netdev(dev) if nic else None
    if nic is None or nd is None or not common.loaded(node, "mlx5_core"):
        return delegate(argv)
    common.out(statistics(nic, nd) if opt == "-S" else driver_info(node, nic) if opt else settings(nic, nd))
    return 0
