"""modprobe, rmmod, lsmod and modinfo of kmod 30 (Debian bookworm) for the
simulated modules; anything else goes to kmod itself (the diverted binary).

Available: a placeholder ``.ko`` under /lib/modules/<uname -r>/ (updates/
wins over kernel/, as depmod orders them). Loaded: the node's ``modules``
in the fabric model. Loading ``nvidia`` makes the driver version the
model's ``gpu_driver``.
"""

import contextlib
import hashlib
import os

from . import common
from .. import kmods, model

REAL = "/bin/kmod"


def delegate(prog, argv):
    """Run kmod's own program (the binary the simulators were diverted from)."""
    try:
        os.execv(REAL, [prog] + list(argv))
    except OSError as e:
        common.err(f"{prog}: {e.strerror}\n")
        return 1


def kernel():
    return os.uname().release


@contextlib.contextmanager
def changing_node():
    """This node of the model, locked for a change; the lab's /sys/module follows what it leaves."""
    with model.locked() as m:
        node = model.node(m)
        try:
            yield node
        finally:
            kmods.write_sysfs(node)


def holders(node, name):
    """Loaded modules that depend on ``name``."""
    return [m for m in node["modules"] if name in kmods.MODULES.get(m, (0, []))[1]]


def insert(node, name, path, verbose=False, seen=None):
    """Load ``name`` and what its .ko depends on; returns an error text or None."""
    seen = seen or set()
    if name in node["modules"] or name in seen:
        return None
    seen.add(name)
    info = kmods.read_ko(path)
    if info.get("vermagic", "").split(" ")[0] != kernel():
        return f"modprobe: ERROR: could not insert '{name}': Exec format error\n"
    for dep in filter(None, info.get("depends", "").split(",")):
        dep_path = kmods.find(dep)
        if dep_path is None or kmods.read_ko(dep_path) is None:
            return f"modprobe: ERROR: could not insert '{name}': Unknown symbol in module, or unknown parameter (see dmesg)\n"
        problem = insert(node, dep, dep_path, verbose, seen)
        if problem:
            return problem
    if verbose:
        common.out(f"insmod {path} \n")
    node["modules"].append(name)
    node.setdefault("module_versions", {})[name] = info.get("version") or None
    if name == "nvidia":
        node["gpu_driver"] = info.get("version")
    return None


def remove(node, name):
    users = holders(node, name)
    if users:
        return f"is in use by: {' '.join(users)}"
    node["modules"].remove(name)
    (node.get("module_versions") or {}).pop(name, None)
    if name == "nvidia":
        node["gpu_driver"] = None
    return None


def modprobe(argv):
    flags = [a for a in argv if a.startswith("-")]
    args = [a for a in argv if not a.startswith("-")]
    removing = any(f in ("-r", "--remove") for f in flags)
    quiet = any(f in ("-q", "--quiet") for f in flags)
    verbose = any(f in ("-v", "--verbose") for f in flags)
    if not args or any(f not in ("-r", "--remove", "-q", "--quiet", "-v", "--verbose") for f in flags):
        return delegate("modprobe", argv)
    names = args if removing else args[:1]
    with changing_node() as node:
        for raw in names:
            name = kmods.canonical(raw)
            path = kmods.find(name)
            if path is None or kmods.read_ko(path) is None:
                if name not in kmods.MODULES and name not in node["modules"]:
                    return delegate("modprobe", argv)
                if removing and name not in node["modules"]:
                    continue
                if not removing:
                    if not quiet:
                        common.err(f"modprobe: FATAL: Module {raw} not found in directory /lib/modules/{kernel()}\n")
                    return 1
            if removing:
                if name in node["modules"]:
                    problem = remove(node, name)
                    if problem:
                        common.err(f"modprobe: FATAL: Module {name} is in use.\n")
                        return 1
                continue
            problem = insert(node, name, path, verbose)
            if problem:
                if not quiet:
                    common.err(problem)
                return 1
    return 0


def rmmod(argv):
    args = [a for a in argv if not a.startswith("-")]
    if not args:
        return delegate("rmmod", argv)
    with changing_node() as node:
        for raw in args:
            name = kmods.canonical(raw)
            if name not in node["modules"]:
                if name not in kmods.MODULES:
                    return delegate("rmmod", argv)
                common.err(f"rmmod: ERROR: Module {name} is not currently loaded\n")
                return 1
            problem = remove(node, name)
            if problem:
                common.err(f"rmmod: ERROR: Module {name} {problem}\n")
                return 1
    return 0


def lsmod(argv):
    _, node = common.load_node()
    common.out("Module                  Size  Used by\n")
    for name in reversed(node["modules"]):
        users = holders(node, name)
        size = kmods.MODULES.get(name, (16384,))[0]
        line = "%-19s %8d  %d" % (name, size, len(users))
        if users:
            line += " " + ",".join(users)
        common.out(line + "\n")
    return 0


def modinfo(argv):
    field = None
    names = []
    it = iter(argv)
    for a in it:
        if a in ("-F", "--field"):
            field = next(it, None)
        elif a.startswith("--field="):
            field = a.split("=", 1)[1]
        elif a.startswith("-"):
            return delegate("modinfo", argv)
        else:
            names.append(a)
    if not names:
        return delegate("modinfo", argv)
    rc = 0
    for raw in names:
        name = kmods.canonical(raw)
        path = kmods.find(name)
        info = kmods.read_ko(path) if path else None
        if info is None:
            if name not in kmods.MODULES:
                return delegate("modinfo", argv)
            common.err(f"modinfo: ERROR: Module {raw} not found.\n")
            rc = 1
            continue
        rows = [("filename", info["filename"])]
        if info.get("version"):
            rows.append(("version", info["version"]))
        rows.append(("license", info["license"]))
        if info.get("description"):
            rows.append(("description", info["description"]))
        if info.get("author"):
            rows.append(("author", info["author"]))
        srcversion = hashlib.md5(open(path, "rb").read()).hexdigest()[:23].upper()
        rows += [("srcversion", srcversion), ("depends", info.get("depends", "")), ("retpoline", "Y")]
        if "/kernel/" in path:
            rows.append(("intree", "Y"))
        rows += [("name", info["name"]), ("vermagic", info["vermagic"])]
        for key, value in rows:
            if field:
                if key == field:
                    common.out(value + "\n")
            else:
                common.out("%-16s%s\n" % (key + ":", value))
    return rc


def main(argv, prog="modprobe"):
    return {"modprobe": modprobe, "rmmod": rmmod, "lsmod": lsmod, "modinfo": modinfo}[prog](argv)
