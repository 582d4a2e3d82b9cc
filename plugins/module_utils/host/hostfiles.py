"""A role's files and boot units on a host, in one call: read every file once,
compute the delta, write only what differs (validated, atomically), then bring
the systemd units to their state. The persistence half of the per-layer
modules (``host_files``); the layer modules (roce_qos, rdma_netdev, ...) do the
live half.

``ensure(module, runner, directories, files, units)`` returns the module
result. Files are compared by content, then mode, owner and group; a file
with ``validate`` (a command with ``%s``) is checked on its new content
before it replaces the old one, so a syntax error never lands.
"""

import os
import shlex
import tempfile

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure

UNIT_DIRS = ("/etc/systemd/", "/lib/systemd/", "/usr/lib/systemd/", "/run/systemd/")


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ToolFailure(f"{path}: is a directory, not a file") from None


def _attrs(module, spec):
    """The file-attribute dict AnsibleModule.set_fs_attributes_if_different takes (SELinux defaults
    where SELinux is on, as the file and template modules have)."""
    return module.load_file_common_arguments({"mode": spec.get("mode"), "owner": spec.get("owner"), "group": spec.get("group")}, path=spec["path"])


def _temp_file(directory, prefix, data):
    """A new temporary file holding ``data`` in ``directory``: its path."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return tmp


def _validate(runner, spec, data):
    """Run the file's validate command on its new content in a temporary file; fail naming it."""
    # Beside the file, where it will live; in check mode its directory may not exist yet.
    directory = os.path.dirname(spec["path"])
    tmp = _temp_file(directory if os.path.isdir(directory) else None, ".linerate-validate-", data)
    try:
        argv = [tmp if word == "%s" else word for word in shlex.split(spec["validate"])]
        if tmp not in argv:
            raise ToolFailure(f"files[{spec['path']}].validate: {spec['validate']!r} is not allowed (allowed: a command with %s where the file goes)")
        rc, out, err = runner(argv)
        if rc != 0:
            raise ToolFailure(
                f"{spec['path']}: the new content fails its check ({spec['validate']}); the file is left as it was", rc=rc, stdout=out, stderr=err
            )
    finally:
        os.unlink(tmp)


def _write(module, spec, data):
    module.atomic_move(_temp_file(os.path.dirname(spec["path"]), ".linerate-", data), spec["path"])


def ensure_directories(module, directories, check):
    done = []
    for spec in directories:
        path = spec["path"]
        if os.path.exists(path) and not os.path.isdir(path):
            raise ToolFailure(f"{path}: exists and is not a directory")
        created = not os.path.isdir(path)
        if created and not check:
            os.makedirs(path)
        if created and not check:
            module.set_fs_attributes_if_different(_attrs(module, spec), True)
        if created or module.set_fs_attributes_if_different(_attrs(module, spec), False):
            done.append({"path": path, "action": "created" if created else "attributes"})
    return done


def ensure_files(module, runner, files, check):
    """Each file's delta; returns ``(changes, diffs)``."""
    changes, diffs = [], []
    for spec in files:
        path = spec["path"]
        before = _read(path)
        if spec.get("state", "present") == "absent":
            if before is not None:
                changes.append({"path": path, "action": "removed"})
                diffs.append({"before_header": path, "after_header": path, "before": before.decode("utf-8", "replace"), "after": ""})
                if not check:
                    os.unlink(path)
            continue
        data = spec["content"].encode("utf-8")
        if before != data:
            if not os.path.isdir(os.path.dirname(path)) and not check:
                raise ToolFailure(f"{path}: its directory {os.path.dirname(path)} does not exist")
            if spec.get("validate"):
                _validate(runner, spec, data)
            action = "created" if before is None else "updated"
            changes.append({"path": path, "action": action})
            diffs.append(
                {
                    "before_header": path if before is not None else "/dev/null",
                    "after_header": path,
                    "before": "" if before is None else before.decode("utf-8", "replace"),
                    "after": spec["content"],
                }
            )
            if check:
                continue
            _write(module, spec, data)
            module.set_fs_attributes_if_different(_attrs(module, spec), True)
        elif module.set_fs_attributes_if_different(_attrs(module, spec), False):
            # Same content, other mode or owner: set (in check mode only reported) by the call itself.
            changes.append({"path": path, "action": "attributes"})
    return changes, diffs


def ensure_units(runner, units, reload_needed, check):
    """Enable and start each unit that is not; ``daemon-reload`` first when a unit file changed."""
    commands = []
    if reload_needed and units:
        commands.append(["systemctl", "daemon-reload"])
        if not check:
            rc, out, err = runner(["systemctl", "daemon-reload"])
            if rc != 0:
                raise ToolFailure.exited(["systemctl", "daemon-reload"], rc, out, err)
    states = {}
    for unit in units:
        name = unit["name"]
        rc, out, _err = runner(["systemctl", "is-enabled", name])
        enabled = rc == 0 and out.strip() in ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated")
        rc, out, _err = runner(["systemctl", "is-active", name])
        active = out.strip() == "active"
        want = []
        if unit.get("enabled", True) and not enabled:
            want.append(["enable", name])
        if unit.get("state") == "started" and not active:
            want.append(["start", name])
        for args in want:
            commands.append(["systemctl", *args])
            if check:
                continue
            rc, out, err = runner(["systemctl", *args])
            if rc != 0:
                raise ToolFailure.exited(["systemctl", *args], rc, out, err)
        states[name] = {
            "before": {"enabled": enabled, "active": active},
            "after": {"enabled": enabled or ["enable", name] in want, "active": active or ["start", name] in want},
        }
    return commands, states


def ensure(module, runner, directories, files, units):
    check = module.check_mode
    dirs = ensure_directories(module, directories or [], check)
    changes, diffs = ensure_files(module, runner, files or [], check)
    reload_needed = any(c["path"].startswith(UNIT_DIRS) and c["action"] != "attributes" for c in changes)
    commands, states = ensure_units(runner, units or [], reload_needed, check)
    changed = bool(dirs or changes or commands)
    return {
        "changed": changed,
        "directories": dirs,
        "files": changes,
        "changed_paths": [c["path"] for c in changes],
        # every path this call manages, changed or not (the converge stamp reads them back)
        "paths": [d["path"] for d in directories or []] + [f["path"] for f in files or []],
        "created": [c["path"] for c in changes if c["action"] == "created"],
        "units": states,
        "commands": commands,
        "diff": diffs,
    }
