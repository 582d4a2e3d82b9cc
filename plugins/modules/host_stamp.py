#!/usr/bin/python
"""Record, or compare with, what a host looked like at the end of its last converge."""

DOCUMENTATION = r"""
---
module: host_stamp
short_description: The converge stamp - skip the host stack of a host its last converge left as it is
description:
  - With O(state=write) (the end of a converge that ran every host role and left nothing pending), reads
    every probe once and writes the inputs' digest, the probes and the digest of each answer to O(path)
    (mode C(0600)). The file is rewritten only when one of them differs, and C(changed) says so.
  - With O(state=check) (the first task of the next run), reads the probes the stamp lists, once, and
    returns C(converged=true) only when O(inputs) and every answer are as recorded; C(reason) names what
    differs. Nothing is written.
  - With O(state=refresh), re-reads the probes of the stamp and records the answers of those named by O(keys)
    anew, only when the stamp has these O(inputs) and no other probe changed (the verification installs its
    benchmark packages after the host stack wrote the stamp, and O(keys) naming the C(dpkg-query) probe takes them in).
  - Probes are reads only; see the action plugin of the same name for the probes of the host stack and
    how the inputs' digest is made (docs/host-stack.md, "The converge stamp").
version_added: 0.3.0
author: linerate developers (@linerate)
options:
  state:
    description: C(check) compares, C(write) records, C(refresh) records some probes anew.
    type: str
    choices: [check, write, refresh]
    default: check
  inputs:
    description: The digest of the host's inputs (intent, role variables, linerate's code).
    type: str
    required: true
  probes:
    description: With O(state=write), what to read.
    type: dict
    suboptions:
      commands:
        description: Commands, as argv lists (no shell); their exit status and standard output are recorded.
        type: list
        elements: list
      files:
        description: Paths or glob patterns; content, mode, owner and group are recorded.
        type: list
        elements: str
  keys:
    description: "With O(state=refresh), the probe keys (prefixes, for example C(cmd: dpkg-query)) whose answers may be
      recorded anew."
    type: list
    elements: str
    default: []
  path:
    description: The stamp file.
    type: path
    default: /var/lib/linerate/converged.json
attributes:
  check_mode:
    support: full
    description: O(state=check) is a read anyway; O(state=write) reports whether it would write.
  diff_mode:
    support: none
    description: The stamp is linerate's record of the node, not configuration; nothing to diff.
"""

EXAMPLES = r"""
- name: Compare the host with its last converge
  linerate.fabric.host_stamp:
    state: check
  register: linerate_host_stamp
"""

RETURN = r"""
converged:
  description: Whether the inputs and every probe answer are as the stamp records (O(state=check)).
  returned: always
  type: bool
reason:
  description: What differs, or that nothing does.
  returned: always
  type: str
differ:
  description: "The keys of the probes whose answer differs (for example C(cmd: mlnx_qos -i enp65s0f0np0))."
  returned: always
  type: list
  elements: str
probes:
  description: How many probes were read.
  returned: always
  type: int
inputs:
  description: The inputs' digest this run compared with or wrote.
  returned: always
  type: str
"""

import json
import os
import tempfile
import time

from ansible_collections.linerate.fabric.plugins.module_utils.host import stamp
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module


def _observe(run, probes):
    """What the probes see now, every probed tool optional: a probe of a tool that is missing records that answer."""
    run.optional.update(argv[0] for argv in probes.get("commands") or [])
    return stamp.observe(run, probes)


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write(path, content):
    """Write the stamp atomically, mode 0600 in a 0700 directory."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    data = json.dumps(dict(content, written_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())), sort_keys=True, indent=1).encode()
    fd, tmp = tempfile.mkstemp(prefix=".linerate-", dir=directory)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)  # same directory: atomic, and the mode stays 0600


def compute(module, run):
    p = module.params
    recorded = _load(p["path"])
    previous = {k: v for k, v in recorded.items() if k != "written_at"} if isinstance(recorded, dict) else None
    if p["state"] == "check":
        if recorded is None:
            return {
                "changed": False,
                "converged": False,
                "reason": f"no converge stamp on the host ({p['path']})",
                "differ": [],
                "probes": 0,
                "inputs": p["inputs"],
            }
        probes = recorded.get("probes") or {} if isinstance(recorded, dict) else {}
        observed = _observe(run, probes)
        converged, reason, differ = stamp.compare(recorded, p["inputs"], observed)
        return {"changed": False, "converged": converged, "reason": reason, "differ": differ, "probes": len(observed), "inputs": p["inputs"]}

    if p["state"] == "refresh":
        probes = (recorded.get("probes") or {}) if isinstance(recorded, dict) else {}
        observed = _observe(run, probes)
        new, reason = stamp.refresh(recorded, p["inputs"], observed, p["keys"])
        changed = new is not None and new != previous
        if changed and not module.check_mode:
            _write(p["path"], new)
        return {"changed": changed, "converged": new is not None, "reason": reason, "differ": [], "probes": len(observed), "inputs": p["inputs"]}

    probes = {k: [list(map(str, v)) if isinstance(v, list) else v for v in (p["probes"][k] or [])] for k in ("commands", "files")}
    new = stamp.stamp(p["inputs"], probes, _observe(run, probes))
    changed = previous != new
    if changed and not module.check_mode:
        _write(p["path"], new)
    return {
        "changed": changed,
        "converged": True,
        "reason": "recorded" if changed else "unchanged",
        "differ": [],
        "probes": len(new["observed"]),
        "inputs": p["inputs"],
    }


def main():
    host_module(
        {
            "state": {"type": "str", "choices": ["check", "write", "refresh"], "default": "check"},
            "keys": {"type": "list", "elements": "str", "default": [], "no_log": False},
            "inputs": {"type": "str", "required": True},
            "probes": {"type": "dict", "options": {"commands": {"type": "list", "elements": "list"}, "files": {"type": "list", "elements": "str"}}},
            "path": {"type": "path", "default": "/var/lib/linerate/converged.json"},
        },
        compute,
        required_if=[("state", "write", ["probes"])],
    )


if __name__ == "__main__":
    main()
