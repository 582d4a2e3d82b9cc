"""mlxfwmanager of MFT 4.26-4.30 (the layout mlxup shares): per device
Type / Part Number / Description / PSID / PCI Device Name / Base GUID /
Base MAC, a Current/Available version table (with an ``FW (Running)`` row
while a burned image waits for a reset) and a Status line.

    mlxfwmanager [--query] [-d <dev>] [-i <image|dir>] [-u] [-y] [-f]

An update only burns an image whose PSID matches the device's; it runs
after mlxfwreset or a reboot.
"""

import argparse
import sys

from . import common, fwimage
from .. import hardware, model


def _ver4(v):
    """PXE/UEFI as mlxfwmanager prints them: 3.7.300 -> 3.7.0300."""
    a, b, c = v.split(".")
    return f"{a}.{b}.{int(c):04d}"


def device_block(index, nic, shown_name, image):
    hw = hardware.CX7
    burned = nic.get("fw_pending") or nic["fw_version"]
    avail = image["FW"] if image else "N/A"
    lines = [
        f"Device #{index}:",
        "----------",
        "",
        f"  Device Type:      {hw['device_type']}",
        f"  Part Number:      {hw['name']}",
        f"  Description:      {hw['description']}",
        f"  PSID:             {nic['psid']}",
        f"  PCI Device Name:  {shown_name}",
        f"  Base GUID:        {nic['node_guid'][2:]}",
        f"  Base MAC:         {nic['mac'].replace(':', '')}",
        f"  Versions:         {'Current':<15}{'Available':<14}",
        f"     {'FW':<15}{burned:<15}{avail:<14}",
    ]
    if nic.get("fw_pending"):
        lines.append(f"     {'FW (Running)':<15}{nic['fw_version']:<15}{'N/A':<14}")
    lines += [f"     {'PXE':<15}{_ver4(hw['pxe_version']):<15}{'N/A':<14}", f"     {'UEFI':<15}{_ver4(hw['uefi_version']):<15}{'N/A':<14}", ""]
    return "\n".join(lines) + "\n", burned


def status(burned, image, force):
    if image is None:
        return "No matching image found"
    if fwimage.version_tuple(image["FW"]) > fwimage.version_tuple(burned):
        return "Update required"
    if force and image["FW"] != burned:
        return "Forced update required"
    return "Up to date"


def main(argv):
    p = argparse.ArgumentParser(prog="mlxfwmanager")
    p.add_argument("--query", action="store_true")
    p.add_argument("-d", "--dev")
    p.add_argument("-i", "--image-file", dest="image")
    p.add_argument("-u", "--update", action="store_true")
    p.add_argument("-y", "--yes", action="store_true")
    p.add_argument("-f", "--force", action="store_true")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    with model.locked() as m:
        node = model.node(m)
        if args.dev:
            nic = common.resolve_mft_device(node, args.dev)
            if nic is None:
                common.out(f"-E- Failed to open device: {args.dev}\n")
                return 1
            shown = args.dev[5:] if args.dev.startswith("0000:") else args.dev
            targets = [(nic, shown)]
        else:
            targets = [(n, common.mst_name(node, n) if node.get("mst_started") else n["pci"][5:]) for n in sorted(node["nics"], key=lambda n: n["pci"])]
        images = fwimage.candidates(args.image) if args.image else []
        if args.image and not images:
            common.out(f"-E- Failed to open image file: {args.image}\n")
            return 1
        common.out("Querying Mellanox devices firmware ...\n\n")
        todo = []
        for index, (nic, shown) in enumerate(targets, 1):
            image = next((i for i in images if i.get("PSID") == nic["psid"]), None)
            text, burned = device_block(index, nic, shown, image)
            st = status(burned, image, args.force)
            common.out(text + f"  Status:           {st}\n\n")
            if st in ("Update required", "Forced update required"):
                todo.append((index, nic, image))
        if not args.update:
            return 0
        if not todo:
            if args.image and not any(i.get("PSID") == n["psid"] for n, _ in targets for i in images):
                common.out("-E- No matching image found for the device(s)\n")
                return 1
            common.out("---------\nFound 0 device(s) requiring firmware update...\n")
            return 0
        common.out(f"---------\nFound {len(todo)} device(s) requiring firmware update...\n\n")
        common.out("Perform FW update? [y/N]: ")
        if args.yes:
            common.out("y\n")
        else:
            sys.stdout.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                common.out("Aborted by user\n")
                return 1
        for index, nic, image in todo:
            common.out(f"Device #{index}: Updating FW ...     \nFSMST_INITIALIZE -   OK          \nWriting Boot image component -   OK          \nDone\n")
            nic["fw_pending"] = image["FW"] if image["FW"] != nic["fw_version"] else None
        common.out("\nRestart needed for updates to take effect.\n")
    return 0
