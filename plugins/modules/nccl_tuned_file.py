#!/usr/bin/python
"""Module: write the tuned NCCL file with its history, or roll it back (docs/tuning.md)."""

DOCUMENTATION = r"""
---
module: nccl_tuned_file
short_description: Write the NCCL tuning sweep's tuned file keeping its history, or roll it back
description:
  - With I(document), writes it to I(path) when it differs from the file there; the first time the history
    I(history_path) records the file it replaces (or that there was none), then every written text. The same
    text again changes nothing (C(changed) false), the history included.
  - With I(rollback), puts back the file from before the newest sweep's (the history's second newest entry),
    or the entry I(rollback_to); a file that was absent is removed. A second rollback finds the same entry
    and changes nothing. The history itself is not changed by a rollback.
  - Refuses a I(document) that sets a variable of NCCL's Debugging section or is not a tuned file this
    collection reads (the same reader role nccl_env uses), before anything is written.
  - Runs on the controller (delegated to localhost).
options:
  path:
    description: The tuned file.
    type: path
    required: true
  history_path:
    description: The history document; default I(path) with C(.history.json) for C(.json).
    type: path
  document:
    description: The tuned file's text (M(linerate.fabric.nccl_tune)'s C(document)). Required unless I(rollback).
    type: str
  rollback:
    description: Roll back instead of writing.
    type: bool
    default: false
  rollback_to:
    description: With I(rollback), the history entry (its C(n)) to put back.
    type: int
  keep:
    description: History entries kept (the oldest go).
    type: int
    default: 20
attributes:
  check_mode:
    support: full
    description: Reads the file and its history; reports what would be written, restored or removed.
  diff_mode:
    support: full
    description: The tuned file's text before and after.
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Write the sweep's tuned file (history kept)
  linerate.fabric.nccl_tuned_file:
    path: site-output/nccl/tuned.json
    document: "{{ sweep.document }}"
  delegate_to: localhost

- name: Put back the tuned file from before the newest sweep
  linerate.fabric.nccl_tuned_file:
    path: site-output/nccl/tuned.json
    rollback: true
  delegate_to: localhost
"""

RETURN = r"""
before:
  description: The file's text before (null when absent).
  returned: always
  type: str
after:
  description: The file's text after (null when absent).
  returned: always
  type: str
history:
  description: The history's entries after, without their text (n, at, by, absent).
  returned: always
  type: list
restored:
  description: With I(rollback), which history entry was put back.
  returned: when rollback
  type: str
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune_history, nccl_tuned


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def _private_dirs(directory: str) -> None:
    """``directory`` made with every missing parent 0700 (os.makedirs gives its mode to the last one only)."""
    parent = os.path.dirname(os.path.abspath(directory))
    if not os.path.isdir(parent):
        _private_dirs(parent)
    if not os.path.isdir(directory):
        os.mkdir(directory, 0o700)


def _write(module, path, text):
    directory = os.path.dirname(path) or "."
    _private_dirs(directory)  # under linerate_output_dir: 0700 directories, 0600 files
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    module.atomic_move(tmp, path)
    os.chmod(path, 0o600)  # atomic_move gives a new file the umask's mode


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            history_path=dict(type="path"),
            document=dict(type="str"),
            rollback=dict(type="bool", default=False),
            rollback_to=dict(type="int"),
            keep=dict(type="int", default=20),
        ),
        required_if=[("rollback", False, ["document"])],
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    history_path = p["history_path"] or (path[:-5] if path.endswith(".json") else path) + ".history.json"
    if p["keep"] < 2:
        module.fail_json(msg=f"keep: {p['keep']} is not allowed (allowed: 2 or more; a rollback needs two entries)")
    if p["rollback_to"] is not None and not p["rollback"]:
        module.fail_json(msg="rollback_to: only with rollback: true")
    try:
        current = _read(path)
    except OSError as e:
        module.fail_json(msg=f"{path}: cannot be read ({e})")
    try:
        entries = nccl_tune_history.read_history(_read(history_path))
    except (OSError, ValueError) as e:
        module.fail_json(msg=f"{history_path}: {e}; move it aside to start a new history")
    restored = None
    if p["rollback"]:
        try:
            after, changed, restored = nccl_tune_history.plan_rollback(current, entries, p["rollback_to"])
        except ValueError as e:
            module.fail_json(msg=f"rollback: {e}")
        new_entries = entries
    else:
        problems = nccl_tuned.read_tuned(p["document"])["problems"]
        if problems or not p["document"].strip():
            module.fail_json(
                msg=f"document: {'; '.join(problems) or 'empty'} (allowed: a tuned file of version {nccl_tuned.TUNED_VERSION} as nccl_tune returns it)"
            )
        at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        after, new_entries, changed = nccl_tune_history.plan_write(current, p["document"], entries, p["keep"], at)
    if changed and not module.check_mode:
        if new_entries is not entries:
            _write(module, history_path, nccl_tune_history.history_text(new_entries))
        if after is None:
            os.remove(path)
        else:
            _write(module, path, after)
    out = dict(
        changed=changed,
        before=current,
        after=after,
        history=[{"n": e["n"], "at": e.get("at"), "by": e.get("by"), "absent": e["document"] is None} for e in new_entries],
    )
    if restored:
        out["restored"] = restored
    if module._diff:
        out["diff"] = {"before": current or "", "after": after or "", "before_header": path, "after_header": path}
    module.exit_json(**out)


if __name__ == "__main__":
    main()
