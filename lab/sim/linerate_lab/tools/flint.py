"""flint of MFT 4.26-4.30 (mstflint prints the same): ``-d <dev> q``.

The flash holds the burned image; while it waits for a reset the running
version shows as ``FW Version(Running)``.
"""

from . import common
from .. import hardware

LABEL = 23


def field(name, value):
    return f"{name + ':':<{LABEL}}{value}\n"


def query(nic):
    hw = hardware.CX7
    burned = nic.get("fw_pending") or nic["fw_version"]
    text = field("Image type", "FS4") + field("FW Version", burned)
    if nic.get("fw_pending"):
        text += field("FW Version(Running)", nic["fw_version"])
    text += (
        field("FW Release Date", hw["fw_release_date"] if burned == hw["fw_version"] else "N/A")
        + field("Product Version", burned)
        + field("Rom Info", f"type=UEFI version={hw['uefi_version']} cpu=AMD64,AARCH64")
        + " " * LABEL
        + f"type=PXE version={hw['pxe_version']} cpu=AMD64\n"
        + field("Description", f"{'UID':<19}GuidsNumber")
        + field("Base GUID", f"{nic['node_guid'][2:]:<24}16")
        + field("Base MAC", f"{nic['mac'].replace(':', ''):<24}16")
        + field("Image VSD", "N/A")
        + field("Device VSD", "N/A")
        + field("PSID", nic["psid"])
        + field("Security Attributes", "secure-fw")
    )
    return text


def main(argv):
    dev = None
    cmd = []
    i = 0
    while i < len(argv):
        if argv[i] in ("-d", "--device") and i + 1 < len(argv):
            dev = argv[i + 1]
            i += 2
            continue
        cmd.append(argv[i])
        i += 1
    if not cmd or cmd[0] not in ("q", "query"):
        common.out("-E- flint: the simulator supports only: flint -d <device> q|query\n")
        return 1
    if dev is None:
        common.out("-E- Missing device or image file (use -d or -i flag).\n")
        return 1
    _, node = common.load_node()
    nic = common.resolve_mft_device(node, dev)
    if nic is None:
        common.out(f"-E- Cannot open Device: {dev}. No such file or directory\n")
        return 1
    common.out(query(nic))
    return 0
