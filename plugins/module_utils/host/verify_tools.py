"""The install plan of the verification programs (nccl-tests) on a node: skip, install or reinstall.

Pure: what is wanted (method, pinned version, the operator's tarball URL) and what the node
records as installed in, one action out. ``package``: the site's package repository carries
nccl-tests (NVIDIA ships no .deb; the lab's repository carries one), the installed version is
dpkg's. ``source``: the NVIDIA/nccl-tests release tarball at the pinned tag, from a URL the operator
sets (an internal mirror), built with ``make MPI=1`` against the node's CUDA and NCCL; the
installed version is the stamp file the build writes last beside the binaries (a failed build
leaves none, so the next run builds again). The binaries are not run to read their version: only
nccl-tests >= 2.17.4 print ``# nccl-tests version X`` and only once a test starts (GPUs, MPI).
``none``: the site puts all_reduce_perf on PATH itself.
"""

import re

METHODS = ("package", "source", "none")
SOURCE_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
URL = re.compile(r"^(https?|file)://\S+$")


def _problem(key, value, allowed):
    return f"{key}: {value!r} is not allowed (allowed: {allowed})"


def tools_plan(method, version, url="", installed=None):
    """{"action": skip|install|reinstall|none, "method", "wanted", "installed"}; ValueError naming the key.

    ``installed``: the recorded version (dpkg's for package, the stamp's for source) or None/"" if absent."""
    if method not in METHODS:
        raise ValueError(_problem("verify_fabric_nccl_tests_method", method, " | ".join(METHODS)))
    installed = (installed or "").strip() or None
    if method == "none":
        return {"action": "none", "method": method, "wanted": None, "installed": installed}
    version = "" if version is None else str(version).strip()
    if method == "source":
        if not SOURCE_VERSION.match(version):
            raise ValueError(_problem("verify_fabric_nccl_tests_version", version, "a release of NVIDIA/nccl-tests as X.Y.Z, the tag vX.Y.Z"))
        if not URL.match(url or ""):
            raise ValueError(
                _problem(
                    "verify_fabric_nccl_tests_source_url",
                    url or "",
                    f"the URL of the nccl-tests v{version} release tarball on your mirror "
                    "(https://, http:// or file://); or verify_fabric_nccl_tests_method: "
                    "package | none",
                )
            )
    elif not version:
        raise ValueError(_problem("verify_fabric_nccl_tests_version", version, "the exact version of the site's nccl-tests package (dpkg's, e.g. 2.13.11-1)"))
    if installed == version:
        action = "skip"
    elif installed is None:
        action = "install"
    else:
        action = "reinstall"
    return {"action": action, "method": method, "wanted": version, "installed": installed}
