#!/usr/bin/python
"""Resolve a pinned OFED stack against its repository without changing the host."""

DOCUMENTATION = r"""
---
module: ofed_preflight
short_description: Check that a repository holds the pinned OFED stack for the running kernel
description:
  - Reads the package repository into a private, temporary apt state directory (the host's
    sources, lists and installed packages are not touched) and resolves, for each requested
    package, the newest version that starts with the pinned version.
  - Finds the prebuilt driver package built for the running kernel (its version carries
    C(.kver.<kernel release>), as NVIDIA's prebuilt C(mlnx-ofed-kernel-modules) packages do).
    When there is none, it fails naming the kernel and the kernels the repository has builds
    for, before anything on the host is changed.
  - First of all, an interrupted dpkg (a journal entry left in C(<dpkg_admindir>/updates/), or packages
    C(dpkg --audit) lists as half-installed or unconfigured) fails the task with the repair,
    C(dpkg --configure -a), before the repository is read or any package task runs.
  - Read-only; runs the same in check mode.
version_added: 0.1.0
author: linerate developers (@linerate)
requirements:
  - dpkg-query (Debian/Ubuntu) on the target
options:
  repo_line:
    description: One-line apt source of the OFED repository, for example
      C(deb [trusted=yes] file:/srv/linerate-apt ./) or
      C(deb [signed-by=/usr/share/keyrings/doca.gpg] https://.../ubuntu22.04/x86_64 ./).
    type: str
    required: true
  version:
    description: The pinned OFED release (for example C(24.10-1.1.4)); the kernel package matches
      when its version carries it in its C(OFED.) form (C(24.10.OFED.24.10.1.1.4.1.kver.<kernel>)).
    type: str
    required: true
  packages:
    description: Packages to resolve, each to the newest version that starts with its pin
      (C(doca-ofed) to C(2.9.1), C(mlnx-ofed-all) to C(24.10-1.1.4)); an empty pin takes the newest.
    type: dict
    required: true
  kernel_package:
    description: The prebuilt driver package whose build must match O(kernel). Empty to skip.
    type: str
    default: mlnx-ofed-kernel-modules
  kernel:
    description: The running kernel release (C(ansible_kernel)).
    type: str
    required: true
  dpkg_admindir:
    description: dpkg's database directory (C(dpkg --admindir)).
    type: path
    default: /var/lib/dpkg
extends_documentation_fragment:
  - linerate.fabric.read_only
"""

EXAMPLES = r"""
- name: Resolve the pinned DOCA-OFED for this kernel
  linerate.fabric.ofed_preflight:
    repo_line: "deb [signed-by=/usr/share/keyrings/doca.gpg] {{ mofed_repo_url }} ./"
    version: 24.10-1.1.4.0
    packages: {mlnx-ofed-all: 24.10-1.1.4}
    kernel: "{{ ansible_kernel }}"
  register: ofed
"""

RETURN = r"""
versions:
  description: The exact version to install, per package (the kernel package included).
  returned: success
  type: dict
  sample: {mlnx-ofed-all: 24.10-1.1.4.0, mlnx-ofed-kernel-modules: 24.10.OFED.24.10.1.1.4.1.kver.6.1.0-18-amd64}
pending:
  description: The packages whose installed version differs from the resolved one (what an
    install would change), with the version it would install.
  returned: success
  type: dict
  sample: {mlnx-ofed-all: 24.10-1.1.4.0}
installed:
  description: The version dpkg has installed now of each resolved package (null when not installed).
  returned: success
  type: dict
  sample: {mlnx-ofed-all: null}
kernels:
  description: Kernel releases the repository has driver builds of the pinned version for.
  returned: always
  type: list
  elements: str
"""

from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from ansible_collections.linerate.fabric.plugins.module_utils.host.ofed import preflight


def main():
    host_module(
        {
            "repo_line": {"type": "str", "required": True},
            "version": {"type": "str", "required": True},
            "packages": {"type": "dict", "required": True},
            "kernel_package": {"type": "str", "default": "mlnx-ofed-kernel-modules"},
            "kernel": {"type": "str", "required": True},
            "dpkg_admindir": {"type": "path", "default": "/var/lib/dpkg"},
        },
        lambda module, run: preflight(run, module.params),
    )


if __name__ == "__main__":
    main()
