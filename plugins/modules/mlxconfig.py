#!/usr/bin/python
"""Set ConnectX firmware configuration parameters with mlxconfig."""

DOCUMENTATION = r"""
---
module: mlxconfig
short_description: Set NVIDIA ConnectX firmware parameters (mlxconfig) and apply them with mlxfwreset
description:
  - Reads C(mlxconfig -d <pci> -e q) (Default, Current and Next Boot of every parameter) and runs
    C(mlxconfig -d <pci> -y set NAME=VALUE ...) only for the desired parameters whose Next Boot
    value differs. Parameters already at the desired value are never written.
  - Reports whether the running firmware (Current) still differs from the desired values
    (C(pending_reset)) and which reset applies them (C(reset_kind)) - C(cold_reboot) for parameters in
    O(cold_reboot_params), C(reboot) for parameters in O(reboot_params), otherwise C(mlxfwreset_level_3) when
    C(mlxfwreset -d <pci> q) lists that level as supported, C(reboot) when it does not (or
    mlxfwreset is absent or does not support the device).
  - With O(state=reset) it also applies pending changes with C(mlxfwreset -d <pci> -l <level> -y reset),
    reads the device again and fails when a parameter is still different, instead of retrying.
    This resets the NIC (its links drop); run it only behind an explicit opt-in, one host at a time.
  - With O(state=verified) it changes nothing and fails unless every desired parameter is at the
    desired value in both Next Boot and Current (use it after a reboot).
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - mlxconfig and mlxfwreset (NVIDIA MFT or mstflint's mstconfig/mstfwreset packaging) on the target
options:
  device:
    description: PCI address of the device (C(0000:41:00.0) or C(41:00.0)).
    type: str
    required: true
  params:
    description:
      - Desired parameters, named as mlxconfig names them (C(LINK_TYPE_P1), C(SRIOV_EN),
        C(NUM_OF_VFS), C(ATS_ENABLED), C(ADVANCED_PCI_SETTINGS), C(PCI_WR_ORDERING), ...).
      - A value is an enum name (C(ETH)), a number (C(2)), the C(NAME(n)) form mlxconfig prints
        (C(ETH(2))) or a boolean (C(true) is 1). Enum names are compared with the label mlxconfig
        prints, numbers with its code.
    type: dict
    required: true
  profile:
    description:
      - A firmware profile whose parameters are desired too, per the NIC generation C(mlxconfig q)
        reports (C(Device type)); O(params) win over them. The table is module_utils/host/fwprofile.py.
      - C(gpudirect) - NVIDIA nic-configuration-operator's PCI performance and GPUDirect settings,
        C(ADVANCED_PCI_SETTINGS=1), C(MAX_ACC_OUT_READ) (44 on PCIe Gen4 cards such as ConnectX-6 Dx and
        BlueField-2, 0 = auto on ConnectX-7, BlueField-3 and later), C(ATS_ENABLED=0).
        C(MAX_ACC_OUT_READ) is hidden until C(ADVANCED_PCI_SETTINGS=1) runs in the firmware; until then it
        is skipped and named in C(profile_skipped) and C(warnings); the run after the reset sets it.
      - C(default) - C(ADVANCED_PCI_SETTINGS=0), C(ATS_ENABLED=0) (the factory defaults).
      - C(none) or omitted - no parameter of its own.
    type: str
    choices: [gpudirect, default, none]
  state:
    description:
      - C(present) sets Next Boot; C(reset) sets and then applies pending changes with mlxfwreset;
        C(verified) only checks that Next Boot and Current hold the desired values.
    type: str
    choices: [present, reset, verified]
    default: present
  force:
    description: With O(state=reset), reset even when no parameter is pending (to run a newly burned firmware image).
    type: bool
    default: false
  reset_level:
    description: The mlxfwreset level used to apply changes (3 driver restart and PCI reset; 4 warm reboot).
    type: int
    choices: [3, 4]
    default: 3
  cold_reboot_params:
    description: Parameters that take effect only after a power cycle; a pending one makes C(reset_kind) C(cold_reboot).
    type: list
    elements: str
    default: []
  reboot_params:
    description: Parameters read only at host boot (option ROM, UEFI); a pending one makes C(reset_kind) C(reboot).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Runs only the read-only queries (C(-e q), C(mlxfwreset q)); reports the set and reset it would run in C(commands).
  diff_mode:
    support: full
    description: Next Boot and Current of every desired parameter, before and after.
notes:
  - Needs MFT (C(mlxconfig), C(mlxfwreset)) or mstflint; run as root.
"""

EXAMPLES = r"""
- name: RoCE link type and SR-IOV on the first ConnectX-7
  linerate.fabric.mlxconfig:
    device: "0000:41:00.0"
    params:
      LINK_TYPE_P1: ETH
      SRIOV_EN: false
      ATS_ENABLED: false
  register: fw

- name: Apply the pending change now (NIC reset; opt-in)
  linerate.fabric.mlxconfig:
    device: "0000:41:00.0"
    params: {LINK_TYPE_P1: ETH}
    state: reset
  when: fw.pending_reset and fw.reset_kind == 'mlxfwreset_level_3'
"""

RETURN = r"""
device:
  description: The PCI address.
  returned: always
  type: str
before:
  description: Per desired parameter, C(default), C(current) and C(next_boot) as mlxconfig printed them, before the run.
  returned: always
  type: dict
  sample: {LINK_TYPE_P1: {default: IB(1), current: IB(1), next_boot: IB(1)}}
after:
  description: The same after the run (in check mode, what it would be; values not yet written keep the spelling given).
  returned: always
  type: dict
pending_reset:
  description: True when the running firmware (Current) differs from a desired value; a reset must apply it.
  returned: always
  type: bool
reset_kind:
  description: C(mlxfwreset_level_3), C(mlxfwreset_level_4), C(reboot) or C(cold_reboot); null when nothing is pending.
  returned: always
  type: str
reset_reason:
  description: Why that kind of reset.
  returned: always
  type: str
pending_params:
  description: Desired parameters not yet running.
  returned: always
  type: list
  elements: str
reset_applied:
  description: With state=reset, the reset that was run (or would run in check mode); null otherwise.
  returned: always
  type: str
profile:
  description: The firmware profile applied (only with O(profile)).
  returned: when profile is given
  type: str
profile_params:
  description: The parameters the profile desired on this device (only with O(profile)).
  returned: when profile is given
  type: dict
  sample: {ADVANCED_PCI_SETTINGS: true, ATS_ENABLED: false, MAX_ACC_OUT_READ: 0}
profile_skipped:
  description: Profile parameters the device does not report (yet) and that were left out.
  returned: when profile is given
  type: list
  elements: str
commands:
  description: The changing commands run (in check mode, that would run), as argv lists.
  returned: always
  type: list
  elements: list
"""

from ansible_collections.linerate.fabric.plugins.module_utils.host.connectx import ConnectX, configure
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module


def main():
    def compute(module, run):
        p = module.params
        cx = ConnectX(run, p["device"], p["reset_level"], p["cold_reboot_params"], p["reboot_params"])
        return configure(cx, p["params"], module.check_mode, p["state"], p["force"], p["profile"])

    host_module(
        {
            "device": {"type": "str", "required": True},
            "params": {"type": "dict", "required": True},
            "state": {"type": "str", "choices": ["present", "reset", "verified"], "default": "present"},
            "reset_level": {"type": "int", "choices": [3, 4], "default": 3},
            "force": {"type": "bool", "default": False},
            "cold_reboot_params": {"type": "list", "elements": "str", "default": []},
            "reboot_params": {"type": "list", "elements": "str", "default": []},
            "profile": {"type": "str", "choices": ["gpudirect", "default", "none"]},
        },
        compute,
        optional=("mlxfwreset",),
    )


if __name__ == "__main__":
    main()
