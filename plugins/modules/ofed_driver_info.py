#!/usr/bin/python
"""Compare the installed OFED driver with the one the kernel has loaded (read-only)."""

DOCUMENTATION = r"""
---
module: ofed_driver_info
short_description: Tell whether the installed OFED driver is the one running, or waits for a restart
description:
  - Reads the version of the driver module file that modprobe would load for the running kernel
    (C(modinfo -F version mlx5_core); OFED's out-of-tree modules carry a C(version) field, the kernel's
    inbox build has none) and the version of the loaded module (C(<sysfs>/module/mlx5_core/version), which
    the kernel creates only for a loaded module that declares a version), and whether each module of the
    stack is loaded (C(<sysfs>/module/<name>) exists).
  - A loaded O(module) of another version, the inbox build while OFED is installed, or a module of
    O(modules) that is not loaded means the installed driver waits for a restart (RV(restart_needed)), for
    example after a run that installed OFED was interrupted before its driver restart.
  - Fails, naming the file, when the O(module) modprobe would load declares no version or does not exist
    (the OFED kernel modules are missing for the running kernel), since a restart would not load OFED.
  - Read-only; runs the same in check mode.
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - modinfo (kmod) on the target
options:
  module:
    description: The module whose installed and loaded versions are compared.
    type: str
    default: mlx5_core
  modules:
    description: The modules of the stack that must be loaded (O(module) is always one of them).
    type: list
    elements: str
    default: [mlx5_core, mlx5_ib, ib_core, ib_uverbs, rdma_cm]
  dependents:
    description: Modules outside the stack that hold it when loaded (C(nvidia_peermem) holds C(ib_core)), reported
      in RV(dependents_loaded) so a restart can unload them first and load them again after.
    type: list
    elements: str
    default: [nvidia_peermem]
  sysfs:
    description: Where sysfs is mounted.
    type: path
    default: /sys
extends_documentation_fragment:
  - linerate.fabric.read_only
"""

EXAMPLES = r"""
- name: Read which driver is loaded and which is installed
  linerate.fabric.ofed_driver_info:
  register: driver

- name: Restart the driver when the installed one is not running
  ansible.builtin.command: /etc/init.d/openibd restart
  when: driver.restart_needed
"""

RETURN = r"""
installed_version:
  description: The C(version) of the O(module) file modprobe would load.
  returned: success
  type: str
  sample: 24.10-1.1.4
loaded_version:
  description: The version of the loaded O(module); null when it is not loaded or declares none (the inbox build).
  returned: success
  type: str
  sample: null
loaded:
  description: The modules of O(modules) that are loaded.
  returned: success
  type: list
  elements: str
missing:
  description: The modules of O(modules) that are not loaded.
  returned: success
  type: list
  elements: str
  sample: [ib_uverbs, rdma_cm]
dependents_loaded:
  description: The O(dependents) that are loaded.
  returned: success
  type: list
  elements: str
restart_needed:
  description: Whether the installed driver waits for a restart.
  returned: success
  type: bool
reasons:
  description: What was seen, one entry per finding (empty when no restart is needed).
  returned: success
  type: list
  elements: str
  sample: ["the loaded mlx5_core is the kernel's inbox build (no /sys/module/mlx5_core/version), the installed one is OFED 24.10-1.1.4"]
"""

from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from ansible_collections.linerate.fabric.plugins.module_utils.host.ofed import driver_info


def main():
    host_module(
        {
            "module": {"type": "str", "default": "mlx5_core"},
            "modules": {"type": "list", "elements": "str", "default": ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm"]},
            "dependents": {"type": "list", "elements": "str", "default": ["nvidia_peermem"]},
            "sysfs": {"type": "path", "default": "/sys"},
        },
        lambda module, run: driver_info(run, module.params),
    )


if __name__ == "__main__":
    main()
