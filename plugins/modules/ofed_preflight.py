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
  - Read-only; runs the same in check mode.
version_added: 0.1.0
author: linerate developers (@linerate)
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
attributes:
  check_mode:
    support: full
    description: Reads only; the same result in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
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
kernels:
  description: Kernel releases the repository has driver builds of the pinned version for.
  returned: always
  type: list
  elements: str
"""

import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.dpkg import ParseError, installed_versions as dpkg_installed


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


def parse_madison(text):
    """``apt-cache madison`` rows -> {package: [versions]} (newest first, as apt prints)."""
    out = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.split("|")]
        if len(cols) >= 3 and cols[0]:
            out.setdefault(cols[0], []).append(cols[1])
    return out


class Sandbox:
    """A private apt state: the host's own sources and lists stay as they are."""

    def __init__(self, module, repo_line):
        self.module = module
        self.dir = tempfile.mkdtemp(prefix="linerate-ofed-")
        for d in ("lists/partial", "cache/archives/partial", "etc/sources.list.d", "etc/preferences.d"):
            os.makedirs(os.path.join(self.dir, d))
        with open(os.path.join(self.dir, "etc", "sources.list"), "w") as f:
            f.write(repo_line.strip() + "\n")
        self.opts = [
            "-o", f"Dir::Etc::SourceList={self.dir}/etc/sources.list",
            "-o", f"Dir::Etc::SourceParts={self.dir}/etc/sources.list.d",
            "-o", f"Dir::Etc::PreferencesParts={self.dir}/etc/preferences.d",
            "-o", f"Dir::State::Lists={self.dir}/lists",
            "-o", f"Dir::Cache={self.dir}/cache",
            "-o", "Debug::NoLocking=1",
        ]

    def run(self, tool, *args):
        exe = self.module.get_bin_path(tool, required=True)
        return self.module.run_command([exe, *self.opts, *args],
                                       environ_update={"LANG": "C", "LC_ALL": "C"})

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    module = AnsibleModule(
        argument_spec={
            "repo_line": {"type": "str", "required": True},
            "version": {"type": "str", "required": True},
            "packages": {"type": "dict", "required": True},
            "kernel_package": {"type": "str", "default": "mlnx-ofed-kernel-modules"},
            "kernel": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    box = Sandbox(module, p["repo_line"])
    try:
        rc, out, err = box.run("apt-get", "update", "-q")
        if rc != 0 or re.search(r"^(E:|Err:)", out + err, re.M):
            module.fail_json(msg=f"the OFED repository could not be read ({p['repo_line']}): "
                                 f"{(err or out).strip()[-600:]}", rc=rc, stdout=out, stderr=err)
        names = list(dict.fromkeys(list(p["packages"])
                                   + ([p["kernel_package"]] if p["kernel_package"] else [])))
        rc, out, err = box.run("apt-cache", "madison", *names)
        available = parse_madison(out)
    finally:
        box.close()

    versions, problems = {}, []
    for name, pin in p["packages"].items():
        pin = str(pin or "")
        found = [v for v in available.get(name, []) if version_matches(v, pin)]
        if found:
            versions[name] = found[0]
        else:
            have = ", ".join(available.get(name, [])) or "none"
            problems.append(f"{name}: no version {pin or '(any)'} in the repository (it has: {have})")
    kernels = []
    if p["kernel_package"]:
        builds = [v for v in available.get(p["kernel_package"], []) if version_matches(v, p["version"])]
        kernels = sorted({kernel_of(v) for v in builds if kernel_of(v)})
        match = [v for v in builds if kernel_of(v) == p["kernel"]]
        if match:
            versions[p["kernel_package"]] = match[0]
        else:
            problems.append(
                f"{p['kernel_package']}: no driver build of OFED {p['version']} for the running kernel "
                f"{p['kernel']} (builds exist for: {', '.join(kernels) or 'no kernel'}); install a "
                "matching kernel or pin an OFED release built for this one. Nothing was changed.")
    if problems:
        module.fail_json(msg="; ".join(problems), kernels=kernels, available=available)
    installed = installed_versions(module, list(versions))
    pending = {name: v for name, v in versions.items() if installed.get(name) != v}
    module.exit_json(changed=False, versions=versions, kernels=kernels, pending=pending,
                     installed={n: installed.get(n) for n in versions})


def installed_versions(module, names):
    """{package: version} of what dpkg has installed now (read-only); held packages
    (status `hi`, the mofed role's own hold) are installed."""
    rc, out, err = module.run_command([module.get_bin_path("dpkg-query", required=True), "-W",
                                       "-f=${Package} ${Version} ${db:Status-Abbrev}\n", *names],
                                      environ_update={"LANG": "C", "LC_ALL": "C"})
    try:
        return dpkg_installed(out)
    except ParseError as exc:
        module.fail_json(msg=f"dpkg-query printed what dpkg does not: {exc}", rc=rc, stdout=out, stderr=err)


if __name__ == "__main__":
    main()
