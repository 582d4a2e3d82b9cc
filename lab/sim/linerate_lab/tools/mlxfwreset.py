"""mlxfwreset of MFT 4.26-4.30 (mstflint's mstfwreset.py of that era) on a
ConnectX-7: ``query`` prints the MFRL reset levels and types; ``reset``
runs level 3 ("Driver restart and PCI reset", the default) or 4 ("Warm
Reboot").

A level-3 reset reloads the firmware: ``next_boot`` values that a firmware
reload applies become ``current`` and a burned image starts running; the
driver restarts (QoS, ECN, rdma_cm back to defaults). Values that need the
host to re-enumerate PCIe or run POST (hardware.RESET_REQUIRED) stay
pending. Level 4 applies everything but a cold-reboot change, as a warm
reboot does; the lab does not reboot the container.

Errors are printed ``-E- <text>.`` on stdout with exit code 1.
"""

import argparse
import sys

from . import common
from .. import grammar, hardware, model

LEVELS = [
    (0, 'Driver, PCI link, network link will remain up ("live-Patch")', False),
    (1, 'Only ARM side will not remain up ("Immediate reset").', False),
    (3, "Driver restart and PCI reset", True),
    (4, "Warm Reboot", True),
]
TYPES = [
    (0, "Full chip reset", True),
    (1, "Phy-less reset (keep network port active during reset)", False),
    (2, "NIC only reset (for SoC devices)", False),
    (3, "ARM only reset", False),
    (4, "ARM OS shut down", False),
]
DEFAULT_LEVEL = 3


class ResetError(Exception):
    pass


def step(text, result="Done"):
    common.out("-I- %-40s-%s\n" % (text, result))


def query_text():
    out = "Reset-levels:\n"
    for level, desc, supported in LEVELS:
        out += "{0}: {1:<62}-{2:<14}{3}\n".format(level, desc, "Supported" if supported else "Not Supported", "(default)" if level == DEFAULT_LEVEL else "")
    out += "\nReset-types (relevant only for reset-levels 1,3,4):\n"
    for t, desc, supported in TYPES:
        out += "{0}: {1:<62}-{2:<14}{3}\n".format(t, desc, "Supported" if supported else "Not Supported", "(default)" if t == 0 else "")
    return out


def apply_reset(nic, level):
    """Firmware reload: pending values this level applies become current."""
    fw = nic["firmware"]
    for name, value in fw["next_boot"].items():
        if fw["current"].get(name) != value and hardware.applies_at_level(name, level):
            fw["current"][name] = value
    if nic.get("fw_pending"):
        nic["fw_version"] = nic["fw_pending"]
        nic["fw_pending"] = None
    nic["link_layer"] = "InfiniBand" if fw["current"].get("LINK_TYPE_P1") == "IB(1)" else "Ethernet"
    nic["qos"] = hardware.fresh_qos()
    nic["ecn"] = hardware.ecn_from_firmware(fw["current"])
    nic["cma"] = hardware.fresh_cma()
    if nic.get("reset_lost"):
        # lab fault reset-lost: the function does not come back from the reset
        # (no RDMA device, no netdev driver) until reset-lost-restore
        nic["lost"] = True


# the MFT release whose option table applies when the launcher names none (lab/packages.py passes it)
MFT_VERSION = "4.30.0-139"
ARG_TYPES = {"int": int, "check_positive_float": float}


def parser(version=MFT_VERSION):
    """The real tool's argparse parser, built from its add_argument() table for that release
    (linerate_lab/grammar/mlxfwreset.json: mstflint small_utils/mstfwreset.py, reset levels and types
    from cmd_reg_mfrl.py): argparse refuses what the release does not have, exit 2."""
    p = argparse.ArgumentParser(prog="mlxfwreset", add_help=False)
    for o in grammar.mlxfwreset_options(version)["options"]:
        kw = {k: o[k] for k in ("dest", "nargs", "required", "choices") if k in o}
        if o.get("type") in ARG_TYPES:
            kw["type"] = ARG_TYPES[o["type"]]
        if o.get("action") in ("store_true", "help"):
            kw["action"] = o["action"]
        elif o.get("action") == "version":
            kw["action"] = "store_true"
        p.add_argument(*o["flags"], **kw)
    return p


def main(argv, mft=MFT_VERSION):
    try:
        args = parser(mft).parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    args.level, args.type = args.reset_level, args.reset_type
    args.command = args.command[0]
    try:
        return run(args)
    except ResetError as e:
        common.out(f"-E- {e}.\n")
        return 1


def run(args):
    if not common.is_root():
        raise ResetError("Only root user can run this tool")
    command = {"q": "query", "r": "reset"}.get(args.command, args.command)
    with model.locked() as m:
        node = model.node(m)
        nic = common.resolve_mft_device(node, args.device)
        if nic is None:
            raise ResetError("Can not find path of the provided mst device: " + args.device)
        common.out("\n")
        if command == "query":
            common.out("The following query is relevant only for reset-type 0:\n\n")
            common.out(query_text() + "\n")
            return 0
        if command == "reset_fsm_register":
            common.out("-I- FSM register was reset successfully.\n")
            return 0
        level = DEFAULT_LEVEL if args.level is None else args.level
        supported = {lv for lv, _, ok in LEVELS if ok}
        if level not in supported:
            raise ResetError(f"Reset-level '{level}' is not supported in the current state of this device")
        if args.type not in (None, 0):
            raise ResetError(f"Reset-type '{args.type}' is not supported in the current state of this device")
        common.out(f"The reset level for device, {args.device} is:\n\n")
        common.out(f"{level}: {dict((lv, d) for lv, d, _ in LEVELS)[level]}\n")
        question = "Continue with reset?[y/N] "
        if args.yes:
            common.out(question + "y\n")
        else:
            common.out(question)
            sys.stdout.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                raise ResetError("Aborted by user")
        step("Sending Reset Command To Fw")
        if level == 4:
            apply_reset(nic, 4)
            step("Sending reboot command to machine")
            return 0
        step("Stopping Driver", "Skipped" if args.skip_driver else "Done")
        step("Resetting PCI")
        step("Starting Driver", "Skipped" if args.skip_driver else "Done")
        step("Restarting MST", "Done" if node.get("mst_started") else "Skipped")
        apply_reset(nic, 3)
        common.out("-I- FW was loaded successfully.\n")
    return 0
