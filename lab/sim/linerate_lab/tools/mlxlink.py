"""mlxlink of MFT 4.26-4.30 (text output): ``mlxlink -d DEV [-p PORT] [-m] [-c]``.

Layout as MFT 4.30.1 prints it, colour codes included, (BlueField-3 capture in
tests/unit/fixtures/counters/mlxlink_bf3_mft4.30.txt): sections titled and
underlined with dashes, ``Key<pad to 35>: value`` lines. The link state comes
from the NIC as the other tools see it; the physical counters from the NIC's
counters in the model (the mlx5 ethtool names: ``link_down_events_phy``,
``rx_symbol_err_phy`` = errors left after FEC, ``rx_corrected_bits_phy``,
``rx_err_lane_N_phy``), counted since the node started (the driver clears
them at load), so the BER is errors over the bits the link carried since.
The recommendation text for a link with errors is this simulator's wording,
not taken from a capture.
"""

import argparse
import math

from . import common
from .. import grammar, linkphys, model, optics

TITLE_W = 35


def ber_text(errors, bits):
    """mlxlink prints BER as <2-digit coefficient>E-<magnitude>; no error at all is 15E-255."""
    if errors <= 0 or bits <= 0:
        return "15E-255"
    ber = errors / bits
    exp = math.floor(math.log10(ber)) - 1
    coef = int(round(ber / 10**exp))
    if coef >= 100:
        coef, exp = coef // 10, exp + 1
    return f"{coef}E{exp}"


def uptime_s():
    try:
        with open("/proc/uptime") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return 0.0


# mlxlink writes ANSI colours on Linux whether or not stdout is a terminal
# (mstflint mlxlink_record.cpp: changeColorOS): a coloured record's value is
# preceded by its colour and followed, after the newline, by the reset, so a
# captured record ends at the start of the next line.
GREEN, RED, RESET = "\x1b[32m", "\x1b[31m", "\x1b[0m"


def section(title, rows):
    """``rows``: (key, value) or (key, value, colour) as mlxlink prints its records."""
    out = f"{title}\n{'-' * len(title)}\n"
    for key, value, *colour in rows:
        if colour:
            out += f"{key:<{TITLE_W}}: {colour[0]}{value}\n{RESET}"
        else:
            out += f"{key:<{TITLE_W}}: {value}\n"
    return out


def health_colour(good):
    return GREEN if good else RED


def fec_name(speed_gbps):
    if speed_gbps >= 200:
        return "Standard_RS-FEC (544,514)"
    if speed_gbps >= 100:
        return "Standard RS-FEC - RS(528,514)"
    return "No FEC"


# The optical module's digital diagnostics (DDM) and the module's own thresholds. Format: mstflint
# mlxlink/modules/mlxlink_commander.cpp getValueAndThresholdsStr, "<value or lane values, comma
# separated> [<low>..<high>]" (prepareDDMSection: Temperature [C], Voltage [mV], Bias Current [mA],
# Rx Power Current [dBm], Tx Power Current [dBm], then Identifier, ... Cable Technology ...). The
# module, its values and thresholds are the lab's one state (linerate_lab/optics.py), which
# ethtool -m prints too; the lab fault optic-degrade NODE DEVICE sets nic["optics"].
DDM_THRESHOLDS = optics.ALARMS
HEALTHY_DDM = optics.HEALTHY


def _ddm(value, key):
    low, high = DDM_THRESHOLDS[key]
    return f"{value} [{low:g}..{high:g}]"


def module_rows(nic, lanes):
    mod = optics.module(nic)
    o = mod["values"]
    per_lane = ",".join("{:.3f}".format(o["rx_power_dbm"]) for _ in range(lanes))
    return [
        ("Temperature [C]", _ddm(int(o["temperature_c"]), "temperature_c")),
        ("Voltage [mV]", _ddm(o["voltage_mv"], "voltage_mv")),
        ("Bias Current [mA]", _ddm(",".join(f"{o['bias_ma']:.3f}" for _ in range(lanes)), "bias_ma")),
        ("Rx Power Current [dBm]", _ddm(per_lane, "rx_power_dbm")),
        ("Tx Power Current [dBm]", _ddm(",".join(f"{o['tx_power_dbm']:.3f}" for _ in range(lanes)), "tx_power_dbm")),
        ("Identifier", mod["form"]),
        ("Cable Technology", "Optical Module (separated)"),
        ("Vendor Name", mod["vendor"]),
        ("Vendor Part Number", mod["part_number"]),
    ]


def render(nic, module, counters, uptime):
    state, phys = common.port_state(nic)
    up = state == 4 or (common.is_ib(nic) and phys == 5)
    lanes = max(1, int(nic.get("width", 4)))
    speed = int(nic.get("speed_gbps", 0))
    c = linkphys.counters(nic)
    eff = int(c.get("rx_symbol_err_phy", 0))
    per_lane = [int(c.get(f"rx_err_lane_{i}_phy", 0)) for i in range(lanes)]
    raw = sum(per_lane) + int(c.get("rx_corrected_bits_phy", 0))
    link_down = int(c.get("link_down_events_phy", 0))
    bits = speed * 1e9 * uptime
    # PDDR's troubleshooting page reports the link's status now, not its history: a link that went
    # down and trained again is Active with "No issue was observed" while its Link Down Counter
    # keeps the count (mlxlink prints both; linerate's link_health judges the counter's delta).
    healthy = eff == 0 and up
    out = "\n" + section(
        "Operational Info",
        [
            ("State", "Active" if up else "Polling", health_colour(up)),
            ("Physical state", "LinkUp" if up else "Polling", health_colour(up)),
            ("Speed", f"{speed}G" if up else "N/A", health_colour(up)),
            ("Width", f"{lanes}x" if up else "N/A"),
            ("FEC", fec_name(speed) if up else "N/A"),
            ("Loopback Mode", "No Loopback"),
            ("Auto Negotiation", "ON"),
        ],
    )
    out += "\n" + section(
        "Supported Info",
        [
            ("Enabled Link Speed (Ext.)", f"0x00000{'800' if speed >= 400 else '200'} ({speed}G_{lanes}X)"),
            ("Supported Cable Speed (Ext.)", f"0x00000{'800' if speed >= 400 else '200'} ({speed}G_{lanes}X)"),
        ],
    )
    out += "\n" + section(
        "Troubleshooting Info",
        [
            ("Status Opcode", "0" if healthy else "1"),
            ("Group Opcode", "N/A"),
            (
                "Recommendation",
                "No issue was observed" if healthy else "Physical layer errors on the link: check the cable, clean or replace the module",
                health_colour(healthy),
            ),
        ],
    )
    out += "\n" + section(
        "Tool Information", [("Firmware Version", nic.get("fw_version", "28.39.1002")), ("amBER Version", "3.6"), ("MFT Version", "mft 4.30.0-139")]
    )
    if module:
        out += "\n" + section("Module Info", module_rows(nic, lanes))
    if counters:
        out += "\n" + section(
            "Physical Counters and BER Info",
            [
                ("Time Since Last Clear [Min]", f"{uptime / 60:.1f}"),
                ("Effective Physical Errors", str(eff), health_colour(eff == 0)),
                ("Effective Physical BER", ber_text(eff, bits), health_colour(eff == 0)),
                ("Raw Physical Errors Per Lane", ",".join(map(str, per_lane))),
                ("Link Down Counter", str(link_down), health_colour(link_down == 0)),
                ("Link Error Recovery Counter", str(int(c.get("link_error_recovery_phy", 0)))),
                ("Raw Physical BER", ber_text(raw, bits), GREEN),
            ],
        )
    return out


# the MFT release whose option table applies when the launcher names none (lab/packages.py passes it)
MFT_VERSION = "4.30.0-139"


def main(argv, mft=MFT_VERSION):
    # the release's own option table first (linerate_lab/grammar/mlxlink.json): an option mlxlink lacks
    # is refused as cmdparser does; the ones it has and this simulator does not model are accepted, no effect
    try:
        opts, operands = grammar.mlxlink_parse(argv, mft)
    except grammar.MlxlinkRefused as e:
        common.err(e.lines[0] + "\n")
        common.out(e.lines[1] + "\n")
        return 1
    p = argparse.ArgumentParser(prog="mlxlink", add_help=True, allow_abbrev=False)
    p.add_argument("-d", "--device", required=True)
    p.add_argument("-p", "--port", type=int, default=1)
    p.add_argument("-m", "--show_module", action="store_true")
    p.add_argument("-c", "--show_counters", action="store_true")
    longs = grammar.table("mlxlink")["versions"][grammar.pick(grammar.table("mlxlink")["versions"], mft)]["options"]
    modelled = [f"{k}={v}" if v is not None else k for k, v in grammar.canonical(opts, longs)]
    try:
        args, _unmodelled = p.parse_known_args(modelled + operands)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    if not common.is_root():
        common.out("-E- Permission denied: need root privileges\n")
        return 1
    node = model.node(model.load())
    nic = common.resolve_mft_device(node, args.device)
    if nic is None:
        common.out(f"-E- Failed to open device: {args.device}\n")
        return 1
    if args.port != 1:
        common.out(f"-E- Invalid port number: {args.port}\n")
        return 1
    common.out(render(nic, args.show_module, args.show_counters, linkphys.seconds_since_clear(nic, uptime_s())))
    return 0
