"""ethtool 6.1 (Debian bookworm) for the simulated ConnectX-7 netdevs:
``ethtool <dev>`` (link settings: speed, duplex, link from the fabric
model) and ``ethtool -i <dev>`` (driver info). Every other netdev and
option runs Debian's ethtool, diverted to /sbin/ethtool.distrib.
"""
import os

from . import common
from .. import kmods

REAL = "/sbin/ethtool.distrib"

MODES_400G = ["400000baseCR4/Full", "400000baseKR4/Full", "400000baseSR4/Full",
              "400000baseDR4/Full", "400000baseLR4_ER4_FR4/Full"]


def delegate(argv):
    try:
        os.execv(REAL, ["ethtool"] + list(argv))
    except OSError as e:
        common.err(f"ethtool: {e.strerror}: {REAL}\n")
        return 1


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


def main(argv):
    if len(argv) == 1 and not argv[0].startswith("-"):
        opt, dev = None, argv[0]
    elif len(argv) == 2 and argv[0] in ("-i", "--driver"):
        opt, dev = "-i", argv[1]
    else:
        return delegate(argv)
    _, node = common.load_node()
    nic = next((n for n in node["nics"] if n["netdev"] == dev), None)
    nd = common.read_netdev(dev) if nic else None
    if nic is None or nd is None or not common.loaded(node, "mlx5_core"):
        return delegate(argv)
    common.out(driver_info(node, nic) if opt else settings(nic, nd))
    return 0
