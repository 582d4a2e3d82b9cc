"""ConnectX firmware update from a supplied image with mlxfwmanager, guarded by PSID.

``mlxfwmanager --query -d <pci> -i <image>`` prints, per device, its PSID,
the burned firmware (``Current``), the image's version in ``Available``
only when the image is for the device's PSID (else ``N/A`` and ``Status:
No matching image found``), an ``FW (Running)`` row while a burned image
waits for a reset, and a Status. The update is ``mlxfwmanager -d <pci> -i
<image> -u -y`` (``-f`` to go to an older or equal version), which itself
burns only an image whose PSID matches: the guard is checked here first so
that a mismatch fails with a message instead of a silent "nothing to do".

``read_mlxfwmanager_query`` reads that text here (not a ``parse_*`` parser
of the parsers' contract).
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.runner import read_tool


def read_mlxfwmanager_query(text):
    """``mlxfwmanager --query`` -> [{psid, part_number, pci, fw_current, fw_available, fw_running, status}].

    ValueError on ``-E-`` lines or output without a device block.
    """
    errors = [ln.strip() for ln in (text or "").splitlines() if ln.strip().startswith("-E-")]
    if errors:
        raise ValueError("; ".join(errors))
    devices, dev = [], None
    for line in (text or "").splitlines():
        s = line.strip()
        if re.match(r"^Device #\d+:", s):
            dev = {"psid": None, "part_number": None, "pci": None, "fw_current": None, "fw_available": None, "fw_running": None, "status": None}
            devices.append(dev)
            continue
        if dev is None:
            continue
        m = re.match(r"^(PSID|Part Number|PCI Device Name|Status):\s*(.*?)\s*$", s)
        if m:
            key = {"PSID": "psid", "Part Number": "part_number", "PCI Device Name": "pci", "Status": "status"}[m.group(1)]
            dev[key] = m.group(2)
            continue
        m = re.match(r"^FW \(Running\)\s+(\S+)", s)
        if m:
            dev["fw_running"] = m.group(1)
            continue
        m = re.match(r"^FW\s+(\S+)\s+(\S+)", s)
        if m:
            dev["fw_current"] = m.group(1)
            dev["fw_available"] = None if m.group(2) == "N/A" else m.group(2)
    if not devices or not all(d["psid"] and d["fw_current"] for d in devices):
        first = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "empty output")
        raise ValueError(f"no device with PSID and FW version in mlxfwmanager output (first line: {first!r})")
    return devices


def _one(devices):
    """The one device a query of one device (``-d``) answers; ValueError for any other count."""
    if len(devices) != 1:
        raise ValueError(f"expected one device, got {len(devices)}")
    return devices[0]


def version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", v or ""))


class FwManager:
    def __init__(self, run, device):
        self.run = run
        self.device = device
        self.commands = []

    def query(self, image):
        argv = ["mlxfwmanager", "--query", "-d", self.device, "-i", image]
        return read_tool(self.run, argv, lambda text: _one(read_mlxfwmanager_query(text)))

    def update(self, image, force):
        argv = ["mlxfwmanager", "-d", self.device, "-i", image, "-u", "-y"] + (["-f"] if force else [])
        self.commands.append(argv)
        rc, out, err = self.run(argv)
        if rc != 0 or re.search(r"^\s*-E-", out + "\n" + err, re.MULTILINE):
            raise ToolFailure.exited(argv, rc, out, err, tail=True)


def ensure_image(fm, image, psid=None, allow_downgrade=False, check_mode=False):
    dev = fm.query(image)
    if psid and dev["psid"] != psid:
        raise ToolFailure(f"{fm.device}: device PSID {dev['psid']} is not the expected {psid}")
    if dev["fw_available"] is None:
        raise ToolFailure(
            f"{fm.device}: image {image} is not for this device's PSID {dev['psid']} "
            f"(mlxfwmanager: {dev['status'] or 'no matching image'}); refusing to burn "
            "another board's firmware"
        )
    burned, want = dev["fw_current"], dev["fw_available"]
    running = dev["fw_running"] or burned
    before = {"fw_version": burned, "fw_version_running": running, "psid": dev["psid"]}
    changed = version_tuple(burned) != version_tuple(want)
    if changed:
        downgrade = version_tuple(want) < version_tuple(burned)
        if downgrade and not allow_downgrade:
            raise ToolFailure(f"{fm.device}: image {want} is older than the device's {burned}; set allow_downgrade to burn it")
        if check_mode:
            fm.commands.append(["mlxfwmanager", "-d", fm.device, "-i", image, "-u", "-y"] + (["-f"] if downgrade else []))
        else:
            fm.update(image, force=downgrade)
            dev = fm.query(image)
            if version_tuple(dev["fw_current"]) != version_tuple(want):
                raise ToolFailure(f"{fm.device}: burned {image} but mlxfwmanager reports {dev['fw_current']}", commands=fm.commands)
            running = dev["fw_running"] or dev["fw_current"]
    after = {"fw_version": want, "fw_version_running": running, "psid": dev["psid"]}
    pending = version_tuple(running) != version_tuple(want)
    return {
        "changed": changed,
        "device": fm.device,
        "before": before,
        "after": after,
        "image_version": want,
        "pending_reset": pending,
        "reset_kind": "mlxfwreset_level_3" if pending else None,
        "commands": fm.commands,
        "diff": {
            "before": f"{fm.device} firmware {burned} (running {before['fw_version_running']})\n",
            "after": f"{fm.device} firmware {want} (running {running})\n",
        },
    }
