#!/usr/bin/python
"""Module: read what decides GPUDirect RDMA below the fabric (PCIe, ACS, IOMMU, affinity, versions, limits)."""

DOCUMENTATION = r"""
---
module: host_readiness
short_description: Read a GPU node's PCIe links, ACS, IOMMU mode, GPU<->NIC affinity, versions and limits
description:
  - For each RDMA device in I(devices) finds its PCI address (C(ibdev2netdev -v)), its ConnectX firmware
    and PSID (C(ibv_devinfo)), its negotiated and capable PCIe link, MaxReadReq and NUMA node
    (C(lspci -D -vvv) LnkCap/LnkSta/DevCtl), the nearest GPU (C(nvidia-smi topo -m)) and the ACS
    control of every bridge between the two.
  - For each NIC and each GPU (C(nvidia-smi --query-gpu), or lspci's NVIDIA 3D/VGA controllers when
    nvidia-smi cannot run) also the other end of its PCIe link, C(upstream) - the port above it (its
    slot, a switch downstream port or a root port) with its own LnkCap - so the controller judges the link
    against the lower of both ends (PCIE_SLOT_LIMITED, PCIE_DEGRADED).
  - Also reads the IOMMU mode (C(/sys/class/iommu), the kernel command line), RLIMIT_MEMLOCK of the
    session, the size of C(/dev/shm) and the versions fleet parity compares (kernel, C(ofed_info -s),
    GPU driver, C(modinfo -F version nvidia_peermem), the NCCL package).
  - Returns facts only; the findings (PCIE_DEGRADED, PCIE_SLOT_LIMITED, ACS_ENABLED, GPU_NIC_AFFINITY, VERSION_SKEW ...)
    are made on the controller by the verify_report action. A tool that is missing or fails is
    listed in C(facts.unread) with what stays unproven; it never fails the module.
  - The GPUs' link speed is judged only on a reading under load (I(load_command), or a process already on
    the GPU); at rest only their width is (NVIDIA GPUs train their link down at rest).
  - Read-only; never reports C(changed). In check mode the I(load_command) does not run.
requirements:
  - lspci (pciutils), ibv_devinfo and ibdev2netdev (rdma-core / DOCA-OFED), modinfo, dpkg-query on the target
  - nvidia-smi and ofed_info where installed (their absence is reported, not fatal)
options:
  devices:
    description: The RDMA devices (rails) to check, e.g. C([mlx5_0, mlx5_1]).
    type: list
    elements: str
    required: true
  nccl_packages:
    description: Packages whose version is NCCL's (the first one installed counts).
    type: list
    elements: str
    default: [libnccl2]
  sys_root:
    description: Where sysfs is (C(<sys_root>/class/iommu)).
    type: path
    default: /sys
  proc_root:
    description: Where procfs is (C(<proc_root>/cmdline)).
    type: path
    default: /proc
  shm_path:
    description: The shared-memory filesystem NCCL uses.
    type: path
    default: /dev/shm
  load_command:
    description:
      - A GPU workload (argv, run without a shell; C({ngpus}) in an element is replaced by the number of GPUs
        C(nvidia-smi) lists) to run while the links of the idle GPUs whose speed reads below their maximum
        are read again. NVIDIA GPUs train their PCIe link down at rest (Gen1) and up under load, so a
        reading at rest proves only the width.
      - The workload starts only when such a GPU exists; the links are read once C(nvidia-smi
        --query-compute-apps) lists a process on each of them (at most I(load_timeout) seconds), then the
        workload is stopped (SIGTERM). Each GPU gets C(under_load) or C(load_unjudged) (why not).
      - Empty (the default) reads at rest only; the GPUs' speed then stays unjudged (not a finding).
      - A GPU that already runs a process at the first reading is under load there; it is not loaded again.
    type: list
    elements: str
    default: []
  load_timeout:
    description: Seconds the workload may take to show on the GPUs.
    type: float
    default: 60
extends_documentation_fragment:
  - linerate.fabric.read_only
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Read the host's readiness facts
  linerate.fabric.host_readiness:
    devices: "{{ rdma_ports | map(attribute='device') | list }}"
  register: readiness
"""

RETURN = r"""
facts:
  description: The node's readiness facts.
  returned: always
  type: dict
  contains:
    nics:
      description: Per RDMA device its C(pci), C(lnkcap)/C(lnksta) (speed_gts, gen, width), C(max_read_req), C(numa_node),
        C(fw_ver), C(psid), the nearest C(gpu) (index, link, pci) and the bridges on the C(path) to it (address, acs_ctl).
      type: list
      elements: dict
    rails:
      description: The rail-aligned pairing, NIC i with its nearest GPU (device, pci, gpu, gpu_pci, link).
      type: list
      elements: dict
      sample: [{device: mlx5_0, pci: "0000:41:00.0", gpu: 0, gpu_pci: "0000:42:00.0", link: PIX}]
    gpus:
      description: The GPUs (index, pci, driver), their C(lnkcap)/C(lnksta) and C(upstream) port at rest, the
        C(smi_link) nvidia-smi reports (gen_current, gen_max, gen_gpumax, gen_hostmax, width_current,
        width_max), C(busy) (the processes nvidia-smi lists on it at the reading) and, with I(load_command),
        C(under_load) (lnksta, smi_link, workload) or C(load_unjudged).
      type: list
      elements: dict
    versions:
      description: kernel, ofed, gpu_driver, nvidia_peermem, nccl (absent when unread).
      type: dict
      sample: {kernel: 6.1.0-25-amd64, ofed: MLNX_OFED_LINUX-24.10-1.1.4.0, gpu_driver: 550.54.15, nccl: 2.21.5-1+cuda12.4}
    iommu:
      description: C(mode) (off, passthrough, translated), the IOMMU C(units) and the kernel C(cmdline).
      type: dict
    memlock_kb:
      description: RLIMIT_MEMLOCK (soft) of the session in KiB, -1 for unlimited.
      type: int
    shm_bytes:
      description: Size of the shared-memory filesystem.
      type: int
    unread:
      description: What could not be read (what, error, unproven).
      type: list
      elements: dict
    warnings:
      description: Partial reads of the parsers.
      type: list
      elements: str
"""

import resource

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from ansible_collections.linerate.fabric.plugins.module_utils.host.readiness import collect

TOOLS = ("ibdev2netdev", "ibv_devinfo", "lspci", "nvidia-smi", "ofed_info", "modinfo", "dpkg-query")


def memlock_kb():
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return -1 if soft == resource.RLIM_INFINITY else soft // 1024


def compute(module, run):
    p = module.params
    if p["load_timeout"] <= 0:
        raise ToolFailure(f"load_timeout: {p['load_timeout']} is not allowed (allowed: a positive number of seconds)")
    load = [] if module.check_mode else p["load_command"]
    facts = collect(
        run,
        p["devices"],
        sys_root=p["sys_root"],
        proc_root=p["proc_root"],
        shm_path=p["shm_path"],
        nccl_packages=tuple(p["nccl_packages"]),
        memlock=memlock_kb(),
        load_command=load,
        load_timeout=p["load_timeout"],
        start=run.start,
    )
    return {"changed": False, "facts": facts}


def main():
    host_module(
        {
            "devices": {"type": "list", "elements": "str", "required": True},
            "nccl_packages": {"type": "list", "elements": "str", "default": ["libnccl2"]},
            "sys_root": {"type": "path", "default": "/sys"},
            "proc_root": {"type": "path", "default": "/proc"},
            "shm_path": {"type": "path", "default": "/dev/shm"},
            "load_command": {"type": "list", "elements": "str", "default": []},
            "load_timeout": {"type": "float", "default": 60.0},
        },
        compute,
        optional=lambda p: TOOLS + tuple(p["load_command"][:1]),
    )


if __name__ == "__main__":
    main()
