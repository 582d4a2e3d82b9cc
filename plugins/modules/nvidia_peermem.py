#!/usr/bin/python
"""Load nvidia_peermem after checking the GPU driver and MOFED; report DMA-BUF support."""

DOCUMENTATION = r"""
---
module: nvidia_peermem
short_description: Load the nvidia_peermem kernel module (GPUDirect RDMA) and report DMA-BUF support
description:
  - Checks the prerequisites first and fails with a message naming what is missing - the NVIDIA GPU
    driver (C(nvidia-smi --query-gpu=driver_version --format=csv,noheader)) and MLNX_OFED / DOCA-OFED
    (C(ofed_info -s)), whose ib_core provides the peer-memory API nvidia_peermem plugs into.
  - Reads C(lsmod); runs C(modprobe nvidia_peermem) (or C(modprobe -r) with O(state=absent)) only when
    the module is not in the desired state, then reads C(lsmod) again and fails if it did not change.
  - Sets the fact C(nvidia_peermem) with the driver, OFED and kernel versions and whether the host
    supports DMA-BUF GPUDirect RDMA (NVIDIA open kernel modules, driver R515 or newer, Linux 5.12 or
    newer), in which case NCCL can register GPU memory without nvidia_peermem.
  - Loading at boot is not this module's job; the C(nvidia_peermem) role writes
    C(/etc/modules-load.d/nvidia-peermem.conf).
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - modprobe, lsmod and modinfo (kmod), dpkg-query on the target; nvidia-smi and ofed_info where installed
options:
  state:
    description: Whether nvidia_peermem should be loaded.
    type: str
    choices: [present, absent]
    default: present
  rebuild_dkms_package:
    description:
      - With O(state=present), the GPU driver's DKMS package (for example C(nvidia-kernel-open-dkms)) to rebuild
        when C(modinfo nvidia_peermem) finds no module for the running kernel and the package is installed - a
        driver installed before OFED built none (C(dpkg-reconfigure -fnoninteractive PACKAGE), what its postinst
        does). Omit to never rebuild.
    type: str
attributes:
  check_mode:
    support: full
    description: Runs only the read-only checks; reports the modprobe it would run.
  diff_mode:
    support: full
    description: Loaded before and after.
  facts:
    support: full
    description: Sets C(ansible_facts.nvidia_peermem).
"""

EXAMPLES = r"""
- name: Load nvidia_peermem
  linerate.fabric.nvidia_peermem:
  register: peermem

- name: Say whether DMA-BUF would do
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_peermem.dmabuf_reason }}"
"""

RETURN = r"""
rebuilt:
  description: Whether the GPU driver's DKMS modules were rebuilt (O(rebuild_dkms_package)); in check mode, would be.
  returned: success
  type: bool
before:
  description: "C({loaded: bool}) before the run."
  returned: success
  type: dict
after:
  description: "C({loaded: bool}) after the run (in check mode, as it would be)."
  returned: success
  type: dict
commands:
  description: The modprobe run (in check mode, that would run), as argv lists.
  returned: always
  type: list
  elements: list
ansible_facts:
  description: C(nvidia_peermem) - loaded, driver_version, ofed_version, kernel, kernel_module_flavor
    (open, proprietary or null when unknown), dmabuf_supported, dmabuf_reason.
  returned: success
  type: dict
  sample:
    nvidia_peermem:
      loaded: true
      driver_version: "550.54.15"
      ofed_version: MLNX_OFED_LINUX-24.01-0.3.3.1
      kernel: 6.1.0-18-amd64
      kernel_module_flavor: open
      dmabuf_supported: true
      dmabuf_reason: "open kernel modules 550.54.15, kernel 6.1.0-18-amd64: NCCL can use DMA-BUF without nvidia_peermem"
"""

from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from ansible_collections.linerate.fabric.plugins.module_utils.host.peermem import Host, ensure


def read_file(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


# host/peermem.py answers a missing one itself: a failure naming its package, or what it reads instead.
TOOLS = ("nvidia-smi", "ofed_info", "modinfo", "lsmod", "modprobe", "uname", "dpkg-query", "dpkg-reconfigure")


def main():
    host_module(
        {
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "rebuild_dkms_package": {"type": "str"},
        },
        lambda module, run: ensure(Host(run, read_file), module.params["state"], module.check_mode, module.params["rebuild_dkms_package"]),
        optional=TOOLS,
    )


if __name__ == "__main__":
    main()
