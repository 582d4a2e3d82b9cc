"""Simulated kernel modules: the ``.ko`` placeholders packages install.

A module is *available* on a node when ``<name>.ko`` exists under
``/lib/modules/<uname -r>/`` (dashes and underscores are the same to
modprobe, as in the kernel). The file is a small text file with the
``modinfo`` fields; ``loaded`` modules live in the fabric model
(``nodes.<n>.modules``) and are changed only by the simulated
modprobe/rmmod and the openibd init script. Which build of a module is
loaded is ``nodes.<n>.module_versions`` (its ``version=`` field; none for
the kernel's inbox build).

The kernel's view of the loaded modules, ``/sys/module/<name>/``, is kept
under the lab's sysfs tree (``sysfs_root()``; the containers' own /sys is
the host kernel's and read-only): ``initstate`` and ``refcnt`` for every
loaded module and ``version`` only for one that declares a MODULE_VERSION,
as Linux's kernel/module/main.c (``MODINFO_ATTR(version)`` with its
``modinfo_version_exists`` test) creates them. OFED's out-of-tree modules
declare one; the Debian kernel's inbox mlx5_core does not.
"""

import contextlib
import os
import shutil

from linerate_lab import placeholder

MAGIC = "# linerate-lab simulated kernel module"

# name -> (size in bytes as lsmod shows it, depends, description, author, license)
MODULES = {
    "mlx_compat": (20480, [], "mlx_compat", "Mellanox Technologies", "Dual BSD/GPL"),
    "mlxfw": (36864, [], "Mellanox firmware flash lib", "Yotam Gigi <yotamg@mellanox.com>", "Dual BSD/GPL"),
    "mlxdevm": (180224, ["mlx_compat"], "mlxdevm", "Mellanox Technologies", "Dual BSD/GPL"),
    "ib_core": (454656, ["mlx_compat"], "core kernel InfiniBand API", "Roland Dreier", "Dual BSD/GPL"),
    "mlx5_core": (
        2306048,
        ["mlxfw", "mlxdevm", "mlx_compat", "psample", "tls", "pci_hyperv_intf"],
        "Mellanox 5th generation network adapters (ConnectX series) core driver",
        "Eli Cohen <eli@mellanox.com>",
        "Dual BSD/GPL",
    ),
    "mlx5_ib": (
        499712,
        ["mlx5_core", "ib_uverbs", "ib_core", "mlx_compat"],
        "Mellanox 5th generation network adapters (ConnectX series) IB driver",
        "Eli Cohen <eli@mellanox.com>",
        "Dual BSD/GPL",
    ),
    "ib_uverbs": (188416, ["ib_core", "mlx_compat"], "InfiniBand userspace verbs access", "Roland Dreier", "Dual BSD/GPL"),
    "ib_umad": (40960, ["ib_core", "mlx_compat"], "InfiniBand userspace MAD packet access", "Roland Dreier", "Dual BSD/GPL"),
    "ib_cm": (147456, ["ib_core", "mlx_compat"], "InfiniBand CM", "Sean Hefty", "Dual BSD/GPL"),
    "iw_cm": (61440, ["ib_core", "mlx_compat"], "iWARP CM", "Tom Tucker", "Dual BSD/GPL"),
    "rdma_cm": (147456, ["ib_cm", "iw_cm", "ib_core", "mlx_compat"], "Generic RDMA CM Agent", "Sean Hefty", "Dual BSD/GPL"),
    "rdma_ucm": (45056, ["rdma_cm", "ib_uverbs", "ib_core", "mlx_compat"], "RDMA Userspace Connection Manager Access", "Sean Hefty", "Dual BSD/GPL"),
    "ib_ipoib": (163840, ["ib_cm", "ib_core", "mlx_compat"], "IP-over-InfiniBand net driver", "Roland Dreier", "Dual BSD/GPL"),
    "psample": (20480, [], "netlink channel for packet sampling", "Yotam Gigi <yotam.gi@gmail.com>", "GPL v2"),
    "tls": (135168, [], "Transport Layer Security Support", "Mellanox Technologies", "Dual BSD/GPL"),
    "pci_hyperv_intf": (16384, [], "", "", "GPL v2"),
    "configfs": (57344, [], "", "", "GPL"),
    "nvidia": (62676992, [], "NVIDIA kernel module", "", "Dual MIT/GPL"),
    "nvidia_uvm": (4931584, ["nvidia"], "", "", "Dual MIT/GPL"),
    "nvidia_modeset": (1363968, ["nvidia"], "", "", "Dual MIT/GPL"),
    "nvidia_drm": (122880, ["nvidia_modeset"], "", "", "Dual MIT/GPL"),
    "nvidia_peermem": (16384, ["ib_core", "nvidia"], "NVIDIA GPU memory plug-in", "Yishai Hadas", "Dual BSD/GPL"),
}

# What the Debian kernel itself carries (inbox drivers under kernel/).
INBOX = [
    "mlxfw",
    "ib_core",
    "mlx5_core",
    "mlx5_ib",
    "ib_uverbs",
    "ib_umad",
    "ib_cm",
    "iw_cm",
    "rdma_cm",
    "rdma_ucm",
    "ib_ipoib",
    "psample",
    "tls",
    "pci_hyperv_intf",
    "configfs",
]
INBOX_PATHS = {
    "mlx5_core": "kernel/drivers/net/ethernet/mellanox/mlx5/core",
    "mlxfw": "kernel/drivers/net/ethernet/mellanox/mlxfw",
    "mlx5_ib": "kernel/drivers/infiniband/hw/mlx5",
    "ib_ipoib": "kernel/drivers/infiniband/ulp/ipoib",
    "psample": "kernel/net/psample",
    "tls": "kernel/net/tls",
    "pci_hyperv_intf": "kernel/drivers/pci/controller",
    "configfs": "kernel/fs/configfs",
}


def inbox_path(name):
    """Where the Debian kernel keeps an inbox module (relative to /lib/modules/<kver>)."""
    return INBOX_PATHS.get(name, "kernel/drivers/infiniband/core")


# The stack the openibd init script loads, in load order.
OFED_STACK = [
    "mlx_compat",
    "mlxfw",
    "mlxdevm",
    "psample",
    "tls",
    "pci_hyperv_intf",
    "mlx5_core",
    "ib_core",
    "ib_uverbs",
    "mlx5_ib",
    "ib_umad",
    "ib_cm",
    "iw_cm",
    "rdma_cm",
    "rdma_ucm",
    "ib_ipoib",
]
OFED_MODULES = [
    "mlx_compat",
    "mlxfw",
    "mlxdevm",
    "ib_core",
    "mlx5_core",
    "mlx5_ib",
    "ib_uverbs",
    "ib_umad",
    "ib_cm",
    "iw_cm",
    "rdma_cm",
    "rdma_ucm",
    "ib_ipoib",
]
# What udev loads at boot for a ConnectX PCI function with the inbox driver.
BOOT_AUTOLOAD = ["mlxfw", "psample", "tls", "pci_hyperv_intf", "mlx5_core", "ib_core", "mlx5_ib"]
NVIDIA_MODULES = ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"]


def canonical(name):
    """Module names as the kernel keeps them (``nvidia-peermem`` -> ``nvidia_peermem``)."""
    name = os.path.basename(name)
    if name.endswith(".ko"):
        name = name[:-3]
    return name.replace("-", "_")


def file_name(name):
    """The file a module ships as (NVIDIA's peermem module is nvidia-peermem.ko)."""
    return {"nvidia_peermem": "nvidia-peermem.ko", "nvidia_uvm": "nvidia-uvm.ko", "nvidia_modeset": "nvidia-modeset.ko", "nvidia_drm": "nvidia-drm.ko"}.get(
        name, name + ".ko"
    )


def ko_text(name, version, kver, inbox=False):
    """The placeholder contents of ``<name>.ko``: the fields modinfo prints.

    ``inbox``: the Debian kernel's own build (no version field, and no
    dependency on the OFED-only mlx_compat / mlxdevm).
    """
    size, depends, description, author, license_ = MODULES[name]
    if inbox:
        depends = [d for d in depends if d in INBOX]
    lines = [MAGIC, f"name={name}", f"size={size}"]
    if version:
        lines.append(f"version={version}")
    lines += [
        f"license={license_}",
        f"description={description}",
        f"author={author}",
        f"depends={','.join(depends)}",
        f"vermagic={kver} SMP preempt mod_unload modversions ",
    ]
    return "\n".join(lines) + "\n"


def read_ko(path):
    """The fields of a placeholder ``.ko`` (None when it is not one of ours)."""
    body = placeholder.lines(path, MAGIC)
    if body is None:
        return None
    fields = {}
    for line in body:
        key, _, value = line.partition("=")
        fields[key] = value
    fields["filename"] = path
    return fields


def modules_dir(kver=None):
    root = os.environ.get("LINERATE_LAB_MODULES_ROOT", "/lib/modules")
    return os.path.join(root, kver or os.uname().release)


def find(name, kver=None):
    """The .ko modprobe would load for ``name``: updates/ before kernel/."""
    want = canonical(name)
    base = modules_dir(kver)
    found = {}
    for dirpath, _dirs, files in os.walk(base):
        for f in files:
            if f.endswith(".ko") and canonical(f) == want:
                found[os.path.join(dirpath, f)] = None
    if not found:
        return None
    updates = [p for p in found if os.path.relpath(p, base).startswith("updates")]
    return sorted(updates or found)[0]


# The lab's sysfs tree in a node (inventory: mofed_sysfs, host_disruption_sysfs).
LAB_SYSFS = "/run/linerate-lab/sys"


def sysfs_root():
    return os.environ.get("LINERATE_LAB_SYSFS", LAB_SYSFS)


def loaded_version(node, name):
    """The ``version=`` of the loaded build of ``name`` (None: inbox, or unknown)."""
    return (node.get("module_versions") or {}).get(name) or None


def sysfs_module_files(node):
    """{relative path: content} of /sys/module/<name>/ for the node's loaded modules."""
    files = {}
    for name in node.get("modules", []):
        users = [m for m in node["modules"] if name in MODULES.get(m, (0, []))[1]]
        files[f"module/{name}/initstate"] = "live\n"
        files[f"module/{name}/refcnt"] = f"{len(users)}\n"
        version = loaded_version(node, name)
        if version:
            files[f"module/{name}/version"] = version + "\n"
    return files


def write_sysfs(node, root=None):
    """Make ``<root>/module`` what the kernel would show for the node's loaded modules."""
    base = os.path.join(root or sysfs_root(), "module")
    files = sysfs_module_files(node)
    loaded = {rel.split("/")[1] for rel in files}
    if os.path.isdir(base):
        for name in os.listdir(base):
            if name not in loaded:  # unloaded: its directory goes with it
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
            elif f"module/{name}/version" not in files:  # reloaded as a build without a version
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(base, name, "version"))
    for rel, content in files.items():
        path = os.path.join(root or sysfs_root(), rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)


def sysfs_script(node, root=None):
    """The same tree as shell (for lab/fault, which runs it in the node with the model locked)."""
    base = os.path.join(root or sysfs_root(), "module")
    lines = ["set -e", f"rm -rf {base}", f"mkdir -p {base}"]
    for rel, content in sorted(sysfs_module_files(node).items()):
        path = os.path.join(root or sysfs_root(), rel)
        lines += [f"mkdir -p {os.path.dirname(path)}", f"printf '%s\\n' '{content.strip()}' > {path}"]
    return "\n".join(lines) + "\n"
