"""Resolve a pinned OFED stack against its repository without changing the host (module ofed_preflight).

The repository is read into a private, temporary apt state (``Sandbox``);
each requested package resolves to the newest version that starts with its
pin, and the prebuilt driver package must have a build for the running
kernel. Tools run through a ``Runner``; what stops the check raises
``ToolFailure`` with the message the module fails with.

``driver_info`` (module ofed_driver_info) compares the driver the packages
installed with the one the kernel has loaded, after the packages are in place.
"""

import os
import re
import shutil
import tempfile

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host.dpkg import REPAIR, interrupted
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.apt import parse_madison
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.dpkg import installed_versions as dpkg_installed


def version_matches(version, pin):
    """``24.10-1.1.4`` matches ``24.10-1.1.4.0``, ``24.10-1.1.4-1`` and
    ``24.10.OFED.24.10.1.1.4.1.kver...``, but not ``24.10-1.1.40``."""
    if not pin or version == pin or version.startswith(pin + "-") or version.startswith(pin + "."):
        return True
    dotted = pin.replace("-", ".")
    major = pin.split("-")[0]
    ofed = f"{major}.OFED.{dotted}"
    return version == ofed or version.startswith(ofed + ".") or version.startswith(ofed + "-")


def kernel_of(version):
    m = re.search(r"\.kver\.(.+)$", version)
    return m.group(1) if m else None


class Sandbox:
    """A private apt state: the host's own sources and lists stay as they are."""

    def __init__(self, run, repo_line):
        self.runner = run
        self.dir = tempfile.mkdtemp(prefix="linerate-ofed-")
        for d in ("lists/partial", "cache/archives/partial", "etc/sources.list.d", "etc/preferences.d"):
            os.makedirs(os.path.join(self.dir, d))
        with open(os.path.join(self.dir, "etc", "sources.list"), "w") as f:
            f.write(repo_line.strip() + "\n")
        self.opts = [
            "-o",
            f"Dir::Etc::SourceList={self.dir}/etc/sources.list",
            "-o",
            f"Dir::Etc::SourceParts={self.dir}/etc/sources.list.d",
            "-o",
            f"Dir::Etc::PreferencesParts={self.dir}/etc/preferences.d",
            "-o",
            f"Dir::State::Lists={self.dir}/lists",
            "-o",
            f"Dir::Cache={self.dir}/cache",
            "-o",
            "Debug::NoLocking=1",
        ]

    def run(self, tool, *args):
        return self.runner([tool, *self.opts, *args])

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def available_versions(run, repo_line, names):
    """{package: [versions]} the repository offers for ``names`` (apt-get update + apt-cache madison in a Sandbox)."""
    box = Sandbox(run, repo_line)
    try:
        rc, out, err = box.run("apt-get", "update", "-q")
        if rc != 0 or re.search(r"^(E:|Err:)", out + err, re.M):
            raise ToolFailure.exited(
                ["apt-get", "update", "-q"], rc, out, err, tail=True, limit=600, what=f"the OFED repository could not be read ({repo_line})"
            )
        rc, out, err = box.run("apt-cache", "madison", *names)
        return parse_madison(out)
    finally:
        box.close()


def resolve(available, packages, version, kernel_package, kernel):
    """``(versions, kernels, problems)``: the version per package, the kernels with driver builds, what is missing."""
    versions, problems = {}, []
    for name, pin in packages.items():
        pin = str(pin or "")
        found = [v for v in available.get(name, []) if version_matches(v, pin)]
        if found:
            versions[name] = found[0]
        else:
            have = ", ".join(available.get(name, [])) or "none"
            problems.append(f"{name}: no version {pin or '(any)'} in the repository (it has: {have})")
    kernels = []
    if kernel_package:
        builds = [v for v in available.get(kernel_package, []) if version_matches(v, version)]
        kernels = sorted({kernel_of(v) for v in builds if kernel_of(v)})
        match = [v for v in builds if kernel_of(v) == kernel]
        if match:
            versions[kernel_package] = match[0]
        else:
            problems.append(
                f"{kernel_package}: no driver build of OFED {version} for the running kernel "
                f"{kernel} (builds exist for: {', '.join(kernels) or 'no kernel'}); install a "
                "matching kernel or pin an OFED release built for this one. Nothing was changed."
            )
    return versions, kernels, problems


def installed_versions(run, names):
    """{package: version} of what dpkg has installed now (read-only); held packages
    (status `hi`, the mofed role's own hold) are installed."""
    rc, out, err = run(["dpkg-query", "-W", "-f=${Package} ${Version} ${db:Status-Abbrev}\n", *names])
    try:
        return dpkg_installed(out)
    except ParseError as exc:
        raise ToolFailure(f"dpkg-query printed what dpkg does not: {exc}", rc=rc, stdout=out, stderr=err) from exc


def preflight(run, p):
    """ofed_preflight's result from its parameters ``p``; ToolFailure when something pinned is missing."""
    # An interrupted dpkg stops every apt run after this one: say so first, with the repair.
    broken = interrupted(run, p.get("dpkg_admindir") or "/var/lib/dpkg")
    if broken:
        raise ToolFailure(
            "the node's package system is in an interrupted state: "
            + "; ".join(broken)
            + f". Repair it on the node with `{REPAIR}` (then `apt-get -f install` if apt still "
            "reports broken packages) and run again; no package task ran.",
            dpkg_problems=broken,
        )
    names = list(dict.fromkeys(list(p["packages"]) + ([p["kernel_package"]] if p["kernel_package"] else [])))
    available = available_versions(run, p["repo_line"], names)
    versions, kernels, problems = resolve(available, p["packages"], p["version"], p["kernel_package"], p["kernel"])
    if problems:
        raise ToolFailure("; ".join(problems), kernels=kernels, available=available)
    installed = installed_versions(run, list(versions))
    pending = {name: v for name, v in versions.items() if installed.get(name) != v}
    return {"changed": False, "versions": versions, "kernels": kernels, "pending": pending, "installed": {n: installed.get(n) for n in versions}}


# ---------------------------------------------------------------- the loaded driver (module ofed_driver_info)
#
# The installed build of a module is what ``modinfo -F version <module>`` prints for the file modprobe
# would load for the running kernel (OFED's out-of-tree modules carry a version= field; the Debian
# kernel's inbox mlx5_core declares none).
# The loaded build is ``<sysfs>/module/<module>/version``: Linux creates it only for a loaded module that
# declares a version (kernel/module/main.c, MODINFO_ATTR(version) and its modinfo_version_exists test),
# and ``<sysfs>/module/<name>`` exists only while a module is loaded (or is built in).

MODULE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def check_module_names(key, names):
    """A module name is a file name under <sysfs>/module: letters, digits, '_' and '-' only."""
    bad = [n for n in names if not isinstance(n, str) or not MODULE_NAME.match(n)]
    if bad:
        raise ToolFailure(f"{key}: {bad[0]!r} is not allowed (allowed: kernel module names, letters, digits, '_' and '-', for example mlx5_core)")


def _sysfs_name(name):
    return name.replace("-", "_")  # the kernel keeps module names with '_' (nvidia-peermem -> nvidia_peermem)


def read_loaded(sysfs, names):
    """{name: version or None} of the loaded ones among ``names`` (absent when not loaded)."""
    out = {}
    for name in names:
        base = os.path.join(sysfs, "module", _sysfs_name(name))
        if not os.path.isdir(base):
            continue
        try:
            with open(os.path.join(base, "version"), encoding="utf-8") as f:
                out[name] = f.read().strip() or None
        except FileNotFoundError:
            out[name] = None
        except OSError as e:
            raise ToolFailure(f"{base}/version could not be read: {e.strerror}") from e
    return out


def installed_driver(run, module):
    """The ``version=`` of the ``module`` file modprobe would load for the running kernel.

    ToolFailure when there is none, or when it is a build without a version (the kernel's inbox
    driver): a driver restart would not load OFED then, and nothing is changed."""
    rc, out, err = run(["modinfo", "-F", "version", module])
    if rc != 0:
        raise ToolFailure(
            f"modinfo finds no {module} for the running kernel ({(err or out).strip()}): the OFED "
            "kernel modules are not installed for it (mlnx-ofed-kernel-modules of this kernel, or "
            "a DKMS build that failed); nothing was changed.",
            rc=rc,
            stdout=out,
            stderr=err,
        )
    version = out.strip()
    if version:
        return version
    _rc, path, _err = run(["modinfo", "-F", "filename", module])
    raise ToolFailure(
        f"the {module} that modprobe loads for the running kernel ({path.strip() or 'unknown file'}) "
        "declares no version: it is the kernel's inbox build, not OFED's, so the OFED kernel modules "
        "are not installed for this kernel (mlnx-ofed-kernel-modules of this kernel, or a DKMS build "
        "that failed) and a driver restart would load the inbox driver again; nothing was changed.",
        stdout=out,
    )


def driver_verdict(installed, loaded, modules, module, sysfs):
    """The reasons a driver restart is needed (empty: the installed driver is the one running)."""
    reasons = []
    if module not in loaded:
        reasons.append(f"{module} is not loaded (no {sysfs}/module/{_sysfs_name(module)})")
    elif loaded[module] is None:
        reasons.append(
            f"the loaded {module} is the kernel's inbox build (no {sysfs}/module/{_sysfs_name(module)}/version), the installed one is OFED {installed}"
        )
    elif loaded[module] != installed:
        reasons.append(f"the loaded {module} is {loaded[module]}, the installed one is {installed}")
    missing = [n for n in modules if n != module and n not in loaded]
    if missing:
        reasons.append(f"not loaded: {', '.join(missing)}")
    return reasons


def driver_info(run, p):
    """ofed_driver_info's result from its parameters ``p`` (reads only)."""
    check_module_names("module", [p["module"]])
    check_module_names("modules", p["modules"])
    check_module_names("dependents", p["dependents"])
    modules = list(dict.fromkeys([p["module"], *p["modules"]]))
    installed = installed_driver(run, p["module"])
    loaded = read_loaded(p["sysfs"], modules)
    reasons = driver_verdict(installed, loaded, modules, p["module"], p["sysfs"])
    dependents = read_loaded(p["sysfs"], p["dependents"])
    return {
        "changed": False,
        "installed_version": installed,
        "loaded_version": loaded.get(p["module"]),
        "loaded": [n for n in modules if n in loaded],
        "missing": [n for n in modules if n not in loaded],
        "dependents_loaded": [n for n in p["dependents"] if n in dependents],
        "restart_needed": bool(reasons),
        "reasons": reasons,
        "msg": ("the installed driver waits for a restart: " + "; ".join(reasons))
        if reasons
        else f"the loaded {p['module']} is the installed OFED {installed}",
    }
