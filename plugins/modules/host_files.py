#!/usr/bin/python
"""A role's files, directories and boot units on a host in one call, changed only where they differ."""

DOCUMENTATION = r"""
---
module: host_files
short_description: Write a role's files and enable its boot units in one call, only where they differ
description:
  - The persistence half of a linerate role (boot scripts, systemd units, C(/etc/nccl.conf), modules-load.d
    entries) as one module call instead of a task per file. It reads every file once, writes only those whose
    content, mode, owner or group differ (atomically, through a temporary file in the same directory), then
    runs C(systemctl daemon-reload) when a unit file changed and enables or starts each unit that is not.
  - A file with O(files[].validate) is checked on its new content before it replaces the old one; a failing
    check fails the module and leaves the file as it was.
  - C(changed) comes from the computed delta. Nothing is restarted; a role's handler does that when it is notified.
version_added: 0.2.0
author: linerate developers (@linerate)
options:
  directories:
    description: Directories that must exist, created before the files.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      mode:
        description: Mode (octal string).
        type: raw
        default: "0755"
      owner:
        description: Owner.
        type: str
        default: root
      group:
        description: Group.
        type: str
        default: root
  files:
    description: Files with their whole content (render templates on the controller with C(lookup('template', ...))).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path; its directory must exist (or be in O(directories)).
        type: path
        required: true
      content:
        description: The content; required unless O(files[].state=absent).
        type: str
      state:
        description: Whether the file should exist.
        type: str
        choices: [present, absent]
        default: present
      mode:
        description: Mode (octal string).
        type: raw
        default: "0644"
      owner:
        description: Owner.
        type: str
        default: root
      group:
        description: Group.
        type: str
        default: root
      validate:
        description: A command run on the new content before it is installed, C(%s) standing for the file (for example C(sh -n %s)).
        type: str
  units:
    description: systemd units to enable (and start) once the files are in place.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The unit's name.
        type: str
        required: true
      enabled:
        description: Enable the unit at boot.
        type: bool
        default: true
      state:
        description: C(started) starts the unit when it is not active; omit to leave it as it is.
        type: str
        choices: [started]
attributes:
  check_mode:
    support: full
    description: Reads every file and unit; reports what would be written, removed, enabled or started.
  diff_mode:
    support: full
    description: One diff per file written or removed.
"""

EXAMPLES = r"""
- name: Persist the RoCE QoS boot configuration
  linerate.fabric.host_files:
    directories:
      - path: /etc/linerate
    files:
      - path: /etc/systemd/system/linerate-roce-qos.service
        content: "{{ lookup('ansible.builtin.template', 'etc/systemd/system/linerate-roce-qos.service.j2') }}"
      - path: /etc/profile.d/nccl.sh
        content: "{{ lookup('ansible.builtin.template', 'etc/profile.d/nccl.sh.j2') }}"
        validate: sh -n %s
    units:
      - name: linerate-roce-qos.service
        state: started
  register: persisted
  notify: Re-apply RoCE QoS with the boot unit
"""

RETURN = r"""
files:
  description: Each file written, removed or re-moded, with C(action) created, updated, removed or attributes.
  returned: always
  type: list
  elements: dict
changed_paths:
  description: The paths of O(files) that changed (or would in check mode).
  returned: always
  type: list
  elements: str
paths:
  description: Every path of O(directories) and O(files), changed or not (what the call manages).
  returned: always
  type: list
  elements: str
created:
  description: The paths of O(files) that did not exist before.
  returned: always
  type: list
  elements: str
directories:
  description: Each directory created or re-moded.
  returned: always
  type: list
  elements: dict
units:
  description: Per unit, C(before) and C(after) as C({enabled, active}).
  returned: always
  type: dict
commands:
  description: The systemctl commands run (or that would run in check mode), as argv lists.
  returned: always
  type: list
  elements: list
"""

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host.hostfiles import ensure
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module

_OWNER = {"owner": {"type": "str", "default": "root"}, "group": {"type": "str", "default": "root"}}


def main():
    def compute(module, run):
        p = module.params
        for kind in ("directories", "files"):
            for spec in p[kind]:
                if not spec["path"].startswith("/"):
                    raise ToolFailure(f"{kind}[].path: {spec['path']!r} is not allowed (allowed: an absolute path)")
        return ensure(module, run, p["directories"], p["files"], p["units"])

    host_module(
        {
            "directories": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": dict({"path": {"type": "path", "required": True}, "mode": {"type": "raw", "default": "0755"}}, **_OWNER),
            },
            "files": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": dict(
                    {
                        "path": {"type": "path", "required": True},
                        "content": {"type": "str"},
                        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
                        "mode": {"type": "raw", "default": "0644"},
                        "validate": {"type": "str"},
                    },
                    **_OWNER,
                ),
                "required_if": [("state", "present", ["content"])],
            },
            "units": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "name": {"type": "str", "required": True},
                    "enabled": {"type": "bool", "default": True},
                    "state": {"type": "str", "choices": ["started"]},
                },
            },
        },
        compute,
    )


if __name__ == "__main__":
    main()
