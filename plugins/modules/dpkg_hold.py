#!/usr/bin/python
"""Hold packages at their installed versions, in one read and at most one write."""

DOCUMENTATION = r"""
---
module: dpkg_hold
short_description: Put Debian packages on hold with one dpkg-query and at most one dpkg --set-selections
description:
  - Reads the selection of every package in O(names) with one C(dpkg-query -W) and sets C(hold) with one
    C(dpkg --set-selections) for those not held yet (the C(mofed) role's pinned OFED packages), instead of a
    C(dpkg_selections) call per package. C(changed) comes from the packages that were not on hold.
  - A package dpkg does not know is held too (as C(ansible.builtin.dpkg_selections) does), so apt will not
    bring it in at another version later.
version_added: 0.2.0
author: linerate developers (@linerate)
requirements:
  - dpkg-query and dpkg (Debian/Ubuntu) on the target
options:
  names:
    description: The packages to hold.
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reads the selections; reports the packages it would hold.
  diff_mode:
    support: full
    description: The selections before and after.
"""

EXAMPLES = r"""
- name: Hold the OFED packages
  linerate.fabric.dpkg_hold:
    names: [mlnx-ofed-kernel-modules, rdma-core, perftest]
"""

RETURN = r"""
held:
  description: The packages this run put on hold (or would, in check mode).
  returned: always
  type: list
  elements: str
before:
  description: Each package's selection before (C(install), C(hold), ..., C(not present)).
  returned: always
  type: dict
commands:
  description: The dpkg command run (or that would run), as argv lists.
  returned: always
  type: list
  elements: list
"""

from ansible_collections.linerate.fabric.plugins.module_utils.host.dpkg import hold
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module


def main():
    def compute(module, run):
        result = hold(run, module.params["names"], module.check_mode)
        after = dict(result["before"], **{name: "hold" for name in result["held"]})
        result["diff"] = {
            "before": "".join(f"{n} {s}\n" for n, s in sorted(result["before"].items())),
            "after": "".join(f"{n} {s}\n" for n, s in sorted(after.items())),
        }
        return result

    host_module({"names": {"type": "list", "elements": "str", "required": True}}, compute)


if __name__ == "__main__":
    main()
