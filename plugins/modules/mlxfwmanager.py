#!/usr/bin/python
"""Update ConnectX firmware from a supplied image with mlxfwmanager, guarded by PSID."""

DOCUMENTATION = r"""
---
module: mlxfwmanager
short_description: Update ConnectX firmware from a supplied image (mlxfwmanager), guarded by PSID
description:
  - Reads C(mlxfwmanager --query -d <pci> -i <image>) - the device's PSID, burned (Current) and running
    firmware, and the image's version (Available) when the image is for the device's PSID; fails when it
    is not (or when the device is not O(psid)).
  - Burns with C(mlxfwmanager -d <pci> -i <image> -u -y) only when the versions differ, reads the device
    again and fails unless it reports the image's version.
  - A downgrade fails unless O(allow_downgrade) (then C(-f) is added).
  - The new firmware runs after a firmware reset (mlxfwreset level 3) or reboot -
    C(pending_reset) says whether one is still needed. Burning is disruptive to plan for;
    the C(connectx_firmware) role runs this only with C(connectx_firmware_allow_update).
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - mlxfwmanager, mlxconfig and mlxfwreset (NVIDIA MFT) on the target
options:
  device:
    description: PCI address of the device.
    type: str
    required: true
  image:
    description: Path of the firmware image on the managed host.
    type: path
    required: true
  psid:
    description: The PSID the device must have; by default the device's own (the image must match it).
    type: str
  allow_downgrade:
    description: Burn an image older than the device's firmware.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Runs only the query; reports the update it would run.
  diff_mode:
    support: full
    description: Firmware version before and after.
"""

EXAMPLES = r"""
- name: Firmware 28.43.1014 on the first NIC
  linerate.fabric.mlxfwmanager:
    device: "0000:41:00.0"
    image: /var/lib/linerate/fw/fw-ConnectX7-rel-28_43_1014-MCX75310AAS-NEA_Ax.bin
    psid: MT_0000000838
"""

RETURN = r"""
before:
  description: C(fw_version) (burned), C(fw_version_running), C(psid) before the run.
  returned: success
  type: dict
after:
  description: The same after the run (in check mode, as it would be).
  returned: success
  type: dict
image_version:
  description: FW Version of the image.
  returned: success
  type: str
pending_reset:
  description: True when the running firmware is not the image's version yet.
  returned: success
  type: bool
reset_kind:
  description: C(mlxfwreset_level_3) when a reset is pending, else null.
  returned: success
  type: str
commands:
  description: The update run (or that would run), as argv lists.
  returned: always
  type: list
  elements: list
"""

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host.connectx import PCI_RE
from ansible_collections.linerate.fabric.plugins.module_utils.host.fwupdate import FwManager, ensure_image
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module


def main():
    def compute(module, run):
        p = module.params
        if not PCI_RE.match(p["device"]):
            raise ToolFailure(f"device: {p['device']!r} is not allowed (allowed: a PCI address such as 0000:41:00.0)")
        return ensure_image(FwManager(run, p["device"]), p["image"], p["psid"], p["allow_downgrade"], module.check_mode)

    host_module(
        {
            "device": {"type": "str", "required": True},
            "image": {"type": "path", "required": True},
            "psid": {"type": "str"},
            "allow_downgrade": {"type": "bool", "default": False},
        },
        compute,
    )


if __name__ == "__main__":
    main()
