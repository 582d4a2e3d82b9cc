"""ethtool 6.1 (Debian bookworm) for the simulated ConnectX-7 netdevs:
``ethtool <dev>`` (link settings: speed, duplex, link from the fabric
model), ``ethtool -i <dev>`` (driver info), ``ethtool -S <dev>`` (mlx5
statistics: the per-priority and PHY counters, accumulated by the lab's
physics in the model's ``counters``; names and layout of mlx5_core's
``NIC statistics:`` listing, Documentation/networking/device_drivers/
ethernet/mellanox/mlx5/counters.rst) and ``ethtool -m <dev>`` (the module
in the cage, linerate_lab/optics.py, as ethtool 6.1 decodes it). Every
other netdev and option runs Debian's ethtool, diverted to
/sbin/ethtool.distrib: ``--json -m`` too, which 6.1 refuses (no JSON for
-m before the 2025 module-info JSON series).
"""

import math
import os

from . import common
from .. import kmods, linkphys, optics

REAL = "/sbin/ethtool.distrib"

MODES_400G = ["400000baseCR4/Full", "400000baseKR4/Full", "400000baseSR4/Full", "400000baseDR4/Full", "400000baseLR4_ER4_FR4/Full"]


def delegate(argv):
    return common.delegate(REAL, "ethtool", argv)


def settings(nic, nd):
    up = bool(nd["up"]) and nic.get("cable") == "up"
    modes = "\n\t                        ".join(MODES_400G)
    lines = [
        f"Settings for {nic['netdev']}:",
        "\tSupported ports: [ Backplane ]",
        f"\tSupported link modes:   {modes}",
        "\tSupported pause frame use: Symmetric",
        "\tSupports auto-negotiation: Yes",
        "\tSupported FEC modes: None\t RS\t BASER",
        f"\tAdvertised link modes:  {modes}",
        "\tAdvertised pause frame use: Symmetric",
        "\tAdvertised auto-negotiation: Yes",
        "\tAdvertised FEC modes: None\t RS\t BASER",
    ]
    if up:
        lines += [f"\tSpeed: {nic['speed_gbps'] * 1000}Mb/s", f"\tLane count: {nic.get('width', 4)}", "\tDuplex: Full"]
    else:
        lines += ["\tSpeed: Unknown!", "\tDuplex: Unknown! (255)"]
    lines += [
        "\tAuto-negotiation: on",
        "\tPort: Direct Attach Copper",
        "\tPHYAD: 0",
        "\tTransceiver: internal",
        "\tSupports Wake-on: d",
        "\tWake-on: d",
        "        Current message level: 0x00000004 (4)",
        "                               link",
        f"\tLink detected: {'yes' if up else 'no'}",
    ]
    return "\n".join(lines) + "\n"


def driver_info(node, nic):
    path = kmods.find("mlx5_core")
    info = kmods.read_ko(path) if path else None
    version = (info or {}).get("version") or os.uname().release
    return (
        "driver: mlx5_core\n"
        f"version: {version}\n"
        f"firmware-version: {nic['fw_version']} ({nic['psid']})\n"
        "expansion-rom-version: \n"
        f"bus-info: {nic['pci']}\n"
        "supports-statistics: yes\n"
        "supports-test: yes\n"
        "supports-eeprom-access: no\n"
        "supports-register-dump: no\n"
        "supports-priv-flags: yes\n"
    )


PHY = (
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "link_down_events_phy",
    "rx_corrected_bits_phy",
    "rx_pcs_symbol_err_phy",
    "rx_fec_uncorrectable_phy",
    "rx_discards_phy",
    "tx_discards_phy",
)
PRIO = ("bytes", "packets", "pause", "pause_duration", "pause_transition")


def statistics(nic, nd):
    c = linkphys.counters(nic)
    names = ["rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_out_of_buffer", *PHY]
    for prio in range(8):
        names += [f"rx_prio{prio}_{w}" for w in PRIO] + [f"rx_prio{prio}_discards"]
        names += [f"tx_prio{prio}_{w}" for w in PRIO]
    totals = {
        "rx_packets": sum(int(c.get(f"rx_prio{p}_packets", 0)) for p in range(8)),
        "tx_packets": sum(int(c.get(f"tx_prio{p}_packets", 0)) for p in range(8)),
        "rx_bytes": sum(int(c.get(f"rx_prio{p}_bytes", 0)) for p in range(8)),
        "tx_bytes": sum(int(c.get(f"tx_prio{p}_bytes", 0)) for p in range(8)),
    }
    return "NIC statistics:\n" + "".join(f"     {n}: {int(totals.get(n, c.get(n, 0)))}\n" for n in names)


# ---------------------------------------------------------------- ethtool -m

# ethtool 6.1 prints every field "\t%-41s : %s" (sff-common.c and its callers); the values are the
# module's registers: power in 0.1 uW (PRINT_xX_PWR "%.4f mW / %.2f dBm", 0 mW is "-inf dBm"),
# temperature in 1/256 C (PRINT_TEMP), voltage in 100 uV (PRINT_VCC), bias in 2 uA (PRINT_BIAS).
MODULE_LINE = "\t{:<41} : {}"
CMIS_LANES = 8  # cmis.c CMIS_CHANNELS_PER_BANK: a bank's lanes are all printed, used or not
SFF8636_LANES = 4  # qsfp.c SFF8636_MAX_CHANNEL_NUM
# mlx5e_get_module_eeprom_by_page on a failed MCIA read, with d1c94bc5b90c ("net/mlx5e: Fix return value
# in case of module EEPROM read error"): the extack, then ethtool's perror (netlink/nlsock.c
# nlsock_process_ack); nl_getmodule fails, ethtool exits 1
MODULE_EEPROM_ERROR = "netlink error: mlx5_core: Query module eeprom by page failed, read 0 bytes, err -5\nnetlink error: Input/output error\n"


def _power(dbm):
    raw = 0 if dbm is None else min(65535, max(0, round(10 ** (dbm / 10) * 10000)))
    return f"{raw / 10000:.4f} mW / " + (f"{10 * math.log10(raw / 10000):.2f} dBm" if raw else "-inf dBm")


def _temp(c):
    raw = round(c * 256) / 256
    return f"{raw:.2f} degrees C / {raw * 1.8 + 32:.2f} degrees F"


def _volt(mv):
    return f"{round(mv * 10) / 10000:.4f} V"


def _bias(ma):
    return f"{round(ma * 500) / 500:.3f} mA"


def _thresholds():
    """sff-common.c sff_show_thresholds: bias, output power, temperature, voltage, rx power."""
    fmt = {"bias_ma": _bias, "tx_power_dbm": _power, "temperature_c": _temp, "voltage_mv": _volt, "rx_power_dbm": _power}
    names = {
        "bias_ma": "Laser bias current",
        "tx_power_dbm": "Laser output power",
        "temperature_c": "Module temperature",
        "voltage_mv": "Module voltage",
        "rx_power_dbm": "Laser rx power",
    }
    rows = []
    for key in ("bias_ma", "tx_power_dbm", "temperature_c", "voltage_mv", "rx_power_dbm"):
        (alow, ahigh), (wlow, whigh) = optics.ALARMS[key], optics.WARNINGS[key]
        for side, value in (("high alarm", ahigh), ("low alarm", alow), ("high warning", whigh), ("low warning", wlow)):
            rows.append((f"{names[key]} {side} threshold", fmt[key](value)))
    return rows


def _lane_values(mod, count):
    """Per printed lane: (bias mA, tx dBm, rx dBm); a lane the link does not use is dark (all zero)."""
    o = mod["values"]
    return [(o["bias_ma"], o["tx_power_dbm"], o["rx_power_dbm"]) if i < mod["lanes"] else (0.0, None, None) for i in range(count)]


def _flag_bits(lanes, test):
    return sum(1 << i for i, lane in enumerate(lanes) if lane[2] is not None and test(lane))


def _module_flags(o):
    """The module-level flags (temperature, voltage), as the module sets them from its thresholds."""
    rows = []
    for name, key in (("Module temperature", "temperature_c"), ("Module voltage", "voltage_mv")):
        v, (alow, ahigh), (wlow, whigh) = o[key], optics.ALARMS[key], optics.WARNINGS[key]
        for side, on in (("high alarm", v > ahigh), ("low alarm", v < alow), ("high warning", v > whigh), ("low warning", v < wlow)):
            rows.append((f"{name} {side}", "On" if on else "Off"))
    return rows


def _lane_flag_bytes(lanes):
    """{(kind, side): flag byte of the lanes} for bias, tx power and rx power."""
    out = {}
    for kind, idx, key in (("bias", 0, "bias_ma"), ("tx", 1, "tx_power_dbm"), ("rx", 2, "rx_power_dbm")):
        (alow, ahigh), (wlow, whigh) = optics.ALARMS[key], optics.WARNINGS[key]
        for side, test in (
            ("high alarm", lambda v: v > ahigh),
            ("low alarm", lambda v: v < alow),
            ("high warning", lambda v: v > whigh),
            ("low warning", lambda v: v < wlow),
        ):
            out[(kind, side)] = _flag_bits(lanes, lambda lane, t=test, i=idx: t(lane[i]))
    return out


def _cmis(mod):
    """cmis.c cmis_show_all_common of ethtool 6.1, netlink path (pages 00h, 01h, 02h, 11h bank 0)."""
    o, lanes = mod["values"], _lane_values(mod, CMIS_LANES)
    rows = [
        ("Identifier", "0x19 (OSFP 8X Pluggable Transceiver)"),
        ("Power class", "5"),
        ("Max power", "9.00W"),
        ("Connector", "0x0c (MPO Parallel Optic)"),
        ("Cable assembly length", "0.00m"),
        ("Tx CDR bypass control", "No"),
        ("Rx CDR bypass control", "No"),
        ("Tx CDR", "Yes"),
        ("Rx CDR", "Yes"),
        ("Transmitter technology", "0x00 (850 nm VCSEL)"),
        ("Laser wavelength", "850.000nm"),
        ("Laser wavelength tolerance", "10.000nm"),
        ("Length (SMF)", "0.00km"),
        ("Length (OM5)", "0m"),
        ("Length (OM4)", "50m"),
        ("Length (OM3 50/125um)", "30m"),
        ("Length (OM2 50/125um)", "0m"),
        ("Vendor name", mod["vendor"]),
        ("Vendor OUI", "00:02:c9"),
        ("Vendor PN", mod["part_number"]),
        ("Vendor rev", "A6"),
        ("Vendor SN", mod["serial"]),
        ("Date code", "240115"),
        ("Revision compliance", "Rev. 5.0"),
        ("Module State", "0x03 (ModuleReady)"),
        ("LowPwrAllowRequestHW", "Off"),
        ("LowPwrRequestSW", "Off"),
        ("Module temperature", _temp(o["temperature_c"])),
        ("Module voltage", _volt(o["voltage_mv"])),
    ]
    rows += [(f"Laser tx bias current (Channel {i + 1})", _bias(b)) for i, (b, _, _) in enumerate(lanes)]
    rows += [(f"Transmit avg optical power (Channel {i + 1})", _power(t)) for i, (_, t, _) in enumerate(lanes)]
    rows += [(f"Rcvr signal avg optical power (Channel {i + 1})", _power(r)) for i, (_, _, r) in enumerate(lanes)]
    rows += _module_flags(o)
    flags = _lane_flag_bytes(lanes)
    for chan in range(CMIS_LANES):
        for kind, label in (
            ("bias", "Laser bias current {:<12} (Chan {})"),
            ("tx", "Laser tx power {:<12} (Channel {})"),
            ("rx", "Laser rx power {:<12} (Channel {})"),
        ):
            for side in ("high alarm", "low alarm", "high warning", "low warning"):
                # ethtool 6.1 (cmis.c cmis_show_dom_chan_lvl_flags_chan) tests the lane flag byte against the
                # channel's index, not its bit: printed as it does
                rows.append((label.format(side, chan + 1), "On" if flags[(kind, side)] & chan else "Off"))
    return rows + _thresholds()


def _sff8636(mod):
    """qsfp.c sff8636_show_all_common of ethtool 6.1 (pages 00h and 03h)."""
    o, lanes = mod["values"], _lane_values(mod, SFF8636_LANES)
    pfx = "Extended identifier description"
    rows = [
        ("Identifier", "0x11 (QSFP28)"),
        ("Extended identifier", "0x8c"),
        (pfx, "2.5W max. Power consumption"),
        (pfx, "CDR present in TX, CDR present in RX"),
        (pfx, "High Power Class (> 3.5 W) not enabled"),
        ("Power set", "Off"),
        ("Power override", "On"),
        ("Connector", "0x0c (MPO Parallel Optic)"),
        ("Transceiver codes", "0x80 0x00 0x00 0x00 0x00 0x00 0x00 0x00"),
        ("Transceiver type", "100G Ethernet: 100G Base-SR4 or 25GBase-SR"),
        ("Encoding", "0x05 (64B/66B)"),
        ("BR, Nominal", "25500Mbps"),
        ("Rate identifier", "0x00"),
        ("Length (SMF,km)", "0km"),
        ("Length (OM3 50um)", "70m"),
        ("Length (OM2 50um)", "0m"),
        ("Length (OM1 62.5um)", "0m"),
        ("Length (Copper or Active cable)", "50m"),
        ("Transmitter technology", "0x00 (850 nm VCSEL)"),
        ("Laser wavelength", "850.000nm"),
        ("Laser wavelength tolerance", "15.000nm"),
        ("Vendor name", mod["vendor"]),
        ("Vendor OUI", "00:02:c9"),
        ("Vendor PN", mod["part_number"]),
        ("Vendor rev", "A4"),
        ("Vendor SN", mod["serial"]),
        ("Date code", "240115"),
        ("Revision Compliance", "SFF-8636 Rev 2.5/2.6/2.7"),
        ("Module temperature", _temp(o["temperature_c"])),
        ("Module voltage", _volt(o["voltage_mv"])),
        ("Alarm/warning flags implemented", "Yes"),
    ]
    rows += [(f"Laser tx bias current (Channel {i + 1})", _bias(b)) for i, (b, _, _) in enumerate(lanes)]
    rows += [(f"Transmit avg optical power (Channel {i + 1})", _power(t)) for i, (_, t, _) in enumerate(lanes)]
    rows += [(f"Rcvr signal avg optical power(Channel {i + 1})", _power(r)) for i, (_, _, r) in enumerate(lanes)]
    flags = _lane_flag_bytes(lanes)
    sides = ("high alarm", "low alarm", "high warning", "low warning")
    # qsfp.c sff8636_aw_flags: bias per lane, the module's temperature and voltage, tx and rx power per lane
    rows += [
        (f"Laser bias current {side:<12} (Chan {c + 1})", "On" if flags[("bias", side)] >> c & 1 else "Off") for c in range(SFF8636_LANES) for side in sides
    ]
    rows += _module_flags(o)
    rows += [
        (f"Laser {kind} power {side:<12} (Channel {c + 1})", "On" if flags[(kind, side)] >> c & 1 else "Off")
        for kind in ("tx", "rx")
        for c in range(SFF8636_LANES)
        for side in sides
    ]
    return rows + _thresholds()


def module_info(nic):
    """(rc, stdout, stderr) of ``ethtool -m <netdev>``: ethtool 6.1 decoding the module in ``nic``'s cage."""
    mod = optics.module(nic)
    if mod["eeprom_error"]:
        return 1, "", MODULE_EEPROM_ERROR
    rows = _cmis(mod) if mod["cmis"] else _sff8636(mod)
    return 0, "".join(MODULE_LINE.format(k, v) + "\n" for k, v in rows), ""


MODULE_OPTS = ("-m", "--dump-module-eeprom", "--module-info")


def main(argv):
    if len(argv) == 1 and not argv[0].startswith("-"):
        opt, dev = None, argv[0]
    elif len(argv) == 2 and argv[0] in ("-i", "--driver", "-S", "--statistics") + MODULE_OPTS:
        opt = "-S" if argv[0] in ("-S", "--statistics") else "-m" if argv[0] in MODULE_OPTS else "-i"
        dev = argv[1]
    else:
        return delegate(argv)
    _, node = common.load_node()
    nic = next((n for n in node["nics"] if n["netdev"] == dev), None)
    nd = common.read_netdev(dev) if nic else None
    if nic is None or nd is None or not common.loaded(node, "mlx5_core"):
        return delegate(argv)
    if opt == "-m":
        rc, out, err = module_info(nic)
        common.out(out)
        if err:
            common.err(err)
        return rc
    common.out(statistics(nic, nd) if opt == "-S" else driver_info(node, nic) if opt else settings(nic, nd))
    return 0
