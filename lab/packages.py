"""The lab's apt repository: simulator packages with the real package names.

``build_repo(out_dir)`` writes real ``.deb`` files (``dpkg-deb --build
--root-owner-group``) plus ``Packages``, ``Packages.gz`` and ``Release``
(lab/debrepo.py writes them, no dpkg-dev needed), so a node can use

    deb [trusted=yes] file:/srv/linerate-apt ./

Two OFED stacks are published, so that a version pin and an upgrade can be
tested: MLNX_OFED 23.10-2.1.3.1 (LTS, meta ``mlnx-ofed-all``) and DOCA-OFED
of DOCA 2.9.1, i.e. OFED 24.10-1.1.4.0 (meta ``doca-ofed``, and
``mlnx-ofed-all`` 24.10), each with its MFT, and two GPU driver releases of
NVIDIA's CUDA repository for Debian 12. Version strings follow the real
repositories, including the kernel marker of precompiled kernel modules
(``mlnx-ofed-kernel-modules`` ``<ver>.kver.<kernel release>``), and sort
above Debian bookworm's own rdma-core / ibverbs-utils / infiniband-diags
(44.0-2).

Every tool is a launcher into ``linerate_lab.tools`` (bind-mounted at
/usr/lib/linerate-lab in the node containers). ``linerate-lab-hw`` is not a
repository package of NVIDIA's: it is the simulated hardware of the image
(diverts Debian's ethtool and kmod programs to the simulators and drops the
inbox driver modules of the running kernel); the image installs it, the
roles never do.
"""

import os
import platform
import shutil
import sys

from debrepo import ARCH, Package, write_index  # (lab/: the .deb and index format)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sim"))
from linerate_lab import kmods  # noqa: E402  (stdlib-only, shared with the nodes)

NVIDIA_MAINTAINER = "NVIDIA Corporation <cudatools@nvidia.com>"
OTHER_KERNEL = "6.1.0-25-amd64"

OFED_STACKS = [
    {
        "ofed": "23.10-2.1.3.1",
        "kmod_version": "23.10-2.1.3",
        "ofed_info": "MLNX_OFED_LINUX-23.10-2.1.3.1",
        "kernel_pkg": "23.10.OFED.23.10.2.1.3.1",
        "scripts": "23.10.OFED.23.10.2.1.3-1",
        "rdma": "2307mlnx47-1.2310213",
        "tools": "23.10.0-1.2310213",
        "perftest": "23.10.0-0.29.g0705c22.2310213",
        "mft": "4.26.1-3",
        "fw": "28.39.2048",
        "doca": None,
    },
    {
        "ofed": "24.10-1.1.4.0",
        "kmod_version": "24.10-1.1.4",
        "ofed_info": "OFED-internal-24.10-1.1.4",
        "kernel_pkg": "24.10.OFED.24.10.1.1.4.1",
        "scripts": "24.10.OFED.24.10.1.1.4-1",
        "rdma": "2410mlnx54-1.2410114",
        "tools": "24.10.0-1.2410114",
        "perftest": "24.10.0-0.65.g9093bae.2410114",
        "mft": "4.30.0-139",
        "fw": "28.43.1014",
        "doca": "2.9.1-1",
    },
]
GPU_DRIVERS = ["550.54.15", "550.90.07"]

LAUNCHER = """#!/usr/bin/python3
# {tool}: linerate lab simulator ({package}); the hardware is the fabric model.
import sys; sys.path.insert(0, "/usr/lib/linerate-lab"); from linerate_lab.tools import {module}; sys.exit({module}.main(sys.argv[1:]{extra}))
"""


# the perftest programs the lab simulates (linerate_lab/tools/<name>.py), all shipped by the perftest package
PERFTEST_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat")


def launcher(tool, module, package, **kwargs):
    extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    return LAUNCHER.format(tool=tool, module=module, package=package, extra=extra)


# The real infiniband-diags programs that talk MADs to the subnet. The node
# image keeps Debian's builds of them in REAL_IB_DIAGS (lab/labctl.py): they
# reach the simulated subnet (ibsim) through libumad2sim, so nothing about
# their output is simulated. Only ibstat/ibstatus, which read the HCA through
# sysfs, come from the fabric model.
REAL_IB_DIAGS = "/opt/linerate-lab/infiniband-diags"
IB_DIAG_TOOLS = (
    "sminfo",
    "smpquery",
    "smpdump",
    "saquery",
    "ibnetdiscover",
    "iblinkinfo",
    "ibqueryerrors",
    "perfquery",
    "ibaddr",
    "ibroute",
    "ibportstate",
    "ibswitches",
    "ibhosts",
    "ibnodes",
    "ibrouters",
    "ibtracert",
    "ibping",
    "ibsysstat",
    "ibccquery",
    "ibccconfig",
    "ibcacheedit",
    "vendstat",
    "dump_fts",
)
REAL_LAUNCHER = """#!/bin/sh
# {tool}: the real infiniband-diags program (Debian's build in the node image),
# which reaches the lab's simulated subnet through libumad2sim (LD_PRELOAD).
real={real}/usr/sbin/{tool}
[ -x "$real" ] || {{ echo "{tool}: not in this node image ({real}); rebuild it: lab/labctl.py image --force" >&2; exit 127; }}
exec "$real" "$@"
"""


def real_launcher(tool):
    return REAL_LAUNCHER.format(tool=tool, real=REAL_IB_DIAGS)


# --- maintainer scripts ---------------------------------------------------------


def _ko_install_script(modules, version, dest, header, inbox=False):
    """Shell that writes the .ko placeholders of ``modules`` under ``dest``."""
    lines = [header]
    for name in modules:
        text = kmods.ko_text(name, version, "$KVER", inbox=inbox)
        fname = kmods.file_name(name)
        lines.append(f'cat > "{dest}/{fname}" <<EOF\n{text}EOF')
    return "\n".join(lines) + "\n"


def dkms_postinst(modules, version, module_dir, condition=None):
    """postinst of a -dkms package: 'build' the modules for the running kernel,
    as dkms autoinstall does (here: drop the placeholders)."""
    header = '#!/bin/sh\nset -e\nif [ "$1" != configure ]; then exit 0; fi\nKVER=$(uname -r)\nDEST="/lib/modules/$KVER/updates/dkms"\nmkdir -p "$DEST"'
    body = _ko_install_script(modules, version, "$DEST", header)
    if condition:
        test, extra = condition
        body += f"if {test}; then\n" + _ko_install_script(extra, version, "$DEST", "") + "fi\n"
    return body


def dkms_prerm(modules):
    files = " ".join(f'"/lib/modules/$KVER/updates/dkms/{kmods.file_name(m)}"' for m in modules)
    return f"#!/bin/sh\nset -e\nKVER=$(uname -r)\nrm -f {files}\n"


# --- the package set ------------------------------------------------------------


def ofed_packages(stack, kernels):
    """The packages of one OFED stack, in the order its repository lists them: the driver (kernel
    modules for ``kernels``, DKMS, openibd), the RDMA user space, the firmware tools, the meta packages."""
    return _driver_packages(stack, kernels) + _rdma_packages(stack) + _firmware_packages(stack) + _meta_packages(stack)


def _driver_packages(s, kernels):
    """mlnx-tools, mlnx-ofed-kernel-utils (openibd, ibdev2netdev), -dkms and -modules for each kernel."""
    kp = s["kernel_pkg"]
    pkgs = []
    tools = "mlnx-tools"
    pkgs.append(
        Package(
            "mlnx-tools",
            s["tools"],
            "Userspace tools to restart and tune MLNX_OFED kernel modules\n"
            "Userspace tools and scripts to help manage MLNX_OFED: mlnx_qos,\n"
            "cma_roce_mode, cma_roce_tos, show_gids.",
            depends=["python3"],
            files={
                "/usr/bin/mlnx_qos": (0o755, launcher("mlnx_qos", "mlnx_qos", tools, tools=s["tools"])),
                "/usr/sbin/cma_roce_mode": (0o755, launcher("cma_roce_mode", "cma_roce", tools, what="mode")),
                "/usr/sbin/cma_roce_tos": (0o755, launcher("cma_roce_tos", "cma_roce", tools, what="tos")),
                "/usr/sbin/show_gids": (0o755, launcher("show_gids", "show_gids", tools)),
            },
        )
    )
    utils_files = {
        "/usr/sbin/ibdev2netdev": (0o755, launcher("ibdev2netdev", "ibdev2netdev", "mlnx-ofed-kernel-utils")),
        "/etc/init.d/openibd": (0o755, launcher("openibd", "openibd", "mlnx-ofed-kernel-utils")),
        "/lib/systemd/system/openibd.service": (
            0o644,
            (
                "[Unit]\nDescription=openibd - configure Mellanox devices\n"
                "Documentation=file:/etc/infiniband/openib.conf\n"
                "After=wickedd.service wickedd-nanny.service local-fs.target\n"
                "Before=network.target network-pre.target\nDefaultDependencies=false\n\n"
                "[Service]\nType=oneshot\nTimeoutSec=180\nRemainAfterExit=yes\n"
                "ExecStart=/etc/init.d/openibd start bootid=%b\n"
                "ExecStop=/etc/init.d/openibd stop\n\n"
                "[Install]\nWantedBy=sysinit.target\n"
            ),
        ),
        "/etc/infiniband/openib.conf": (0o644, "# Start HCA driver upon boot\nONBOOT=yes\n# Load IPoIB\nIPOIB_LOAD=yes\n"),
    }
    pkgs.append(
        Package(
            "mlnx-ofed-kernel-utils",
            f"{kp}-1",
            "Userspace tools to restart and tune mlnx-ofed kernel modules\nopenibd init script and ibdev2netdev.",
            depends=[f"{tools} (>= {s['tools']})"],
            files=utils_files,
        )
    )
    pkgs.append(
        Package(
            "mlnx-ofed-kernel-dkms",
            f"{kp}-1",
            "DKMS support for mlnx-ofed kernel modules\n"
            "This package provides integration with the DKMS infrastructure for\n"
            "automatically building out of tree kernel modules.",
            depends=[f"mlnx-ofed-kernel-utils (= {kp}-1)"],
            files={"/usr/src/ofa_kernel/default/Module.symvers": (0o644, f"# mlnx-ofed {s['ofed']}\n")},
            scripts={"postinst": dkms_postinst(kmods.OFED_MODULES, s["kmod_version"], None), "prerm": dkms_prerm(kmods.OFED_MODULES)},
            section="kernel",
            extra={"Conflicts": "mlnx-ofed-kernel-modules", "Replaces": "mlnx-ofed-kernel-modules"},
        )
    )
    for kver in kernels:
        files = {f"/lib/modules/{kver}/updates/{kmods.file_name(m)}": (0o644, kmods.ko_text(m, s["kmod_version"], kver)) for m in kmods.OFED_MODULES}
        files[f"/usr/src/ofa_kernel/{ARCH}/{kver}/Module.symvers"] = (0o644, f"# mlnx-ofed {s['ofed']} {kver}\n")
        files["/usr/src/ofa_kernel/default/Module.symvers"] = (0o644, f"# mlnx-ofed {s['ofed']} {kver}\n")
        pkgs.append(
            Package(
                "mlnx-ofed-kernel-modules",
                f"{kp}.kver.{kver}",
                f"mlnx-ofed kernel modules\nPrecompiled mlnx-ofed kernel modules for kernel {kver}.",
                depends=[f"mlnx-ofed-kernel-utils (= {kp}-1)"],
                files=files,
                section="kernel",
                extra={"Conflicts": "mlnx-ofed-kernel-dkms", "Replaces": "mlnx-ofed-kernel-dkms"},
            )
        )
    return pkgs


def _rdma_packages(s):
    """ofed-scripts, rdma-core, ibverbs-utils, infiniband-diags and perftest."""
    pkgs = []
    pkgs.append(
        Package(
            "ofed-scripts",
            s["scripts"],
            "MLNX_OFED utilities\nofed_info and OFED helper scripts.",
            files={"/usr/bin/ofed_info": (0o755, launcher("ofed_info", "ofed_info", "ofed-scripts", release=s["ofed_info"], ofed=s["ofed"]))},
            section="utils",
        )
    )
    rdma = s["rdma"]
    pkgs.append(
        Package(
            "rdma-core",
            rdma,
            "RDMA core userspace infrastructure and documentation\nBasic configuration and daemons of the RDMA stack (simulated).",
            files={"/etc/rdma/modules/rdma.conf": (0o644, "# RDMA modules to load at boot\nib_umad\nib_uverbs\nrdma_ucm\n")},
        )
    )
    pkgs.append(
        Package(
            "ibverbs-utils",
            rdma,
            "Examples for the libibverbs library\nibv_devinfo and ibv_devices.",
            depends=[f"rdma-core (>= {rdma})"],
            files={
                "/usr/bin/ibv_devinfo": (0o755, launcher("ibv_devinfo", "ibv_devinfo", "ibverbs-utils")),
                "/usr/bin/ibv_devices": (0o755, launcher("ibv_devices", "ibv_devinfo", "ibverbs-utils", what="devices")),
            },
        )
    )
    pkgs.append(
        Package(
            "infiniband-diags",
            rdma,
            "InfiniBand diagnostic programs\nibstat, ibstatus, sminfo, ibnetdiscover, iblinkinfo, smpquery and the other diags.",
            depends=[f"rdma-core (>= {rdma})"],
            files={
                "/usr/sbin/ibstat": (0o755, launcher("ibstat", "ibstat", "infiniband-diags")),
                "/usr/sbin/ibstatus": (0o755, launcher("ibstatus", "ibstatus", "infiniband-diags")),
                **{f"/usr/sbin/{t}": (0o755, real_launcher(t)) for t in IB_DIAG_TOOLS},
            },
        )
    )
    pkgs.append(
        Package(
            "perftest",
            s["perftest"],
            "Infiniband verbs performance tests\nib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat and the other perftest programs.",
            depends=[f"ibverbs-utils (>= {rdma})"],
            # the version picks the grammar the simulator parses argv with (linerate_lab/grammar)
            files={f"/usr/bin/{t}": (0o755, launcher(t, t, "perftest", perftest=s["perftest"])) for t in PERFTEST_TOOLS},
        )
    )
    return pkgs


def _firmware_packages(s):
    """mft (mst, mlxconfig, mlxfwreset, mlxfwmanager, flint, mlxlink) and the firmware images."""
    pkgs = []
    mft = "mft"
    mft_tools = {
        "/usr/bin/mlxconfig": ("mlxconfig", "mlxconfig", {"mft": s["mft"]}),
        "/usr/bin/mlxfwreset": ("mlxfwreset", "mlxfwreset", {"mft": s["mft"]}),
        "/usr/bin/mlxfwmanager": ("mlxfwmanager", "mlxfwmanager", {}),
        "/usr/bin/flint": ("flint", "flint", {}),
        "/usr/bin/mlxlink": ("mlxlink", "mlxlink", {"mft": s["mft"]}),
        "/usr/bin/mst": ("mst", "mst", {"mft": s["mft"]}),
    }
    pkgs.append(
        Package(
            mft,
            s["mft"],
            "NVIDIA Firmware Tools (MFT)\nmst, mlxconfig, mlxfwreset, mlxfwmanager, flint and mlxlink.",
            files={p: (0o755, launcher(t, m, mft, **kw)) for p, (t, m, kw) in mft_tools.items()},
            maintainer="NVIDIA Networking <support@nvidia.com>",
            section="utils",
        )
    )
    fw_dir = "/opt/mellanox/mlnx-fw-updater/firmware"
    pkgs.append(
        Package(
            "mlnx-fw-updater",
            s["kernel_pkg"] + "-1",
            f"Firmware images for NVIDIA ConnectX adapters\nConnectX-7 firmware {s['fw']} images for mlxfwmanager.",
            files={
                f"{fw_dir}/fw-ConnectX7-rel-{s['fw'].replace('.', '_')}-MCX75310AAS-NEA_Ax.bin": (
                    0o644,
                    firmware_image("MT_0000000838", s["fw"], "MCX75310AAS-NEAT_Ax"),
                ),
                f"{fw_dir}/fw-ConnectX7-rel-{s['fw'].replace('.', '_')}-MCX715105AS-WEA_Ax.bin": (
                    0o644,
                    firmware_image("MT_0000001244", s["fw"], "MCX715105AS-WEAT_Ax"),
                ),
            },
            section="kernel",
        )
    )
    return pkgs


def _meta_packages(s):
    """mlnx-ofed-all (precompiled modules) and doca-ofed (DKMS) over the stack's packages."""
    kp, rdma = s["kernel_pkg"], s["rdma"]
    pkgs = []
    members = [
        f"mlnx-ofed-kernel-utils (= {kp}-1)",
        f"mlnx-tools (= {s['tools']})",
        f"ofed-scripts (= {s['scripts']})",
        f"rdma-core (= {rdma})",
        f"ibverbs-utils (= {rdma})",
        f"infiniband-diags (= {rdma})",
        f"perftest (= {s['perftest']})",
        f"mft (= {s['mft']})",
    ]
    pkgs.append(
        Package(
            "mlnx-ofed-all",
            s["ofed"],
            f"MLNX_OFED {s['ofed']} (all user-space and kernel packages)\nMeta package of the MLNX_OFED stack with precompiled kernel modules.",
            depends=members + [f"mlnx-ofed-kernel-modules (>= {kp}.kver)", f"mlnx-ofed-kernel-modules (<< {kp}.kvez)"],
            section="metapackages",
        )
    )
    if s["doca"]:
        pkgs.append(
            Package(
                "doca-ofed",
                s["doca"],
                f"DOCA-OFED {s['doca']} (OFED {s['ofed']})\nMeta package of the DOCA-OFED host stack, kernel modules built by DKMS.",
                depends=members + [f"mlnx-ofed-kernel-dkms (= {kp}-1)"],
                section="metapackages",
            )
        )
    return pkgs


NCCL_TESTS_VERSION = "2.13.11-1"
# NCCL as NVIDIA's CUDA repository packages it (the version the lab's
# nccl-tests print: linerate_lab.tools.nccl_tests.NCCL_VERSION).
NCCL_VERSION = "2.21.5-1+cuda12.4"


def nccl_package():
    """libnccl2's layout: libnccl.so.<version> and its soname libnccl.so.2 (a copy here: the package
    format has no links), each carrying NCCL's version string as the real library does (src/init.cc
    VERSION_STRING "NCCL version <major>.<minor>.<patch><suffix>+cuda<cuda>", what NCCL_DEBUG=INFO
    prints and what the job preflight reads from the library a job loads)."""
    upstream = NCCL_VERSION.split("-")[0]
    cuda = NCCL_VERSION.rsplit("+cuda", 1)[-1]
    lib = "/usr/lib/x86_64-linux-gnu"
    text = f"linerate lab: simulated NCCL runtime\nNCCL version {upstream}+cuda{cuda}\n"
    return Package(
        "libnccl2",
        NCCL_VERSION,
        "NVIDIA Collective Communication Library (NCCL) Runtime\n"
        'NCCL (pronounced "Nickel") is a stand-alone library of standard collective communication\n'
        "routines for GPUs.",
        files={
            "/usr/share/doc/libnccl2/README": (0o644, "NCCL runtime (linerate lab)\n"),
            f"{lib}/libnccl.so.{upstream}": (0o644, text),
            f"{lib}/libnccl.so.2": (0o644, text),
        },
        maintainer="cudatools <cudatools@nvidia.com>",
        section="libs",
    )


def nccl_tests_package():
    """nccl-tests as a site would package its own build (NVIDIA ships no .deb)."""
    files = {f"/usr/bin/{t}": (0o755, launcher(t, t, "nccl-tests", version=NCCL_TESTS_VERSION)) for t in ("all_reduce_perf", "all_gather_perf")}
    return Package(
        "nccl-tests",
        NCCL_TESTS_VERSION,
        "NCCL performance tests (MPI build)\nall_reduce_perf and all_gather_perf, built with MPI=1.",
        depends=["openmpi-bin", "libnccl2"],
        files=files,
        maintainer="linerate <linerate@localhost>",
        section="utils",
    )


def firmware_image(psid, fw, name):
    """A simulated firmware image (linerate_lab.tools.fwimage reads it for mlxfwmanager -i)."""
    return f"LINERATE-LAB-FW-IMAGE\nPSID={psid}\nFW={fw}\nNAME={name}\nDEVICE_TYPE=ConnectX7\nPXE=3.7.500\nUEFI=14.35.15\n"


def gpu_packages(version):
    deb = f"{version}-1"
    mods = kmods.NVIDIA_MODULES
    postinst = dkms_postinst(mods, version, None, condition=("[ -e /usr/src/ofa_kernel/default/Module.symvers ]", ["nvidia_peermem"]))
    return [
        Package(
            "nvidia-kernel-open-dkms",
            deb,
            "NVIDIA binary kernel module DKMS source (open GPU kernel modules)\n"
            "nvidia, nvidia-uvm, nvidia-modeset, nvidia-drm and, when the MLNX_OFED\n"
            "kernel sources are installed, nvidia-peermem.",
            depends=[f"nvidia-kernel-common (= {deb})"],
            scripts={"postinst": postinst, "prerm": dkms_prerm(mods + ["nvidia_peermem"])},
            maintainer=NVIDIA_MAINTAINER,
            section="kernel",
        ),
        Package(
            "nvidia-kernel-common",
            deb,
            "NVIDIA binary kernel module support files\nudev rules and modprobe configuration for the NVIDIA kernel modules.",
            files={"/lib/udev/rules.d/60-nvidia.rules": (0o644, 'ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", RUN+="/usr/bin/nvidia-modprobe -c0 -u"\n')},
            maintainer=NVIDIA_MAINTAINER,
            section="kernel",
        ),
        Package(
            "nvidia-smi",
            deb,
            "NVIDIA System Management Interface\nThe NVIDIA Management Library command line client.",
            files={"/usr/bin/nvidia-smi": (0o755, launcher("nvidia-smi", "nvidia_smi", "nvidia-smi"))},
            maintainer=NVIDIA_MAINTAINER,
            section="utils",
        ),
        Package(
            "nvidia-driver",
            deb,
            "NVIDIA metapackage\nThe NVIDIA datacenter driver.",
            depends=[f"nvidia-kernel-open-dkms (= {deb})", f"nvidia-smi (= {deb})"],
            maintainer=NVIDIA_MAINTAINER,
            section="metapackages",
        ),
        Package(
            "nvidia-open",
            deb,
            "NVIDIA open kernel module driver metapackage\nThe NVIDIA driver with the open GPU kernel modules.",
            depends=[f"nvidia-driver (= {deb})", f"nvidia-kernel-open-dkms (= {deb})"],
            maintainer=NVIDIA_MAINTAINER,
            section="metapackages",
        ),
        Package(
            "cuda-drivers",
            deb,
            "CUDA Driver meta-package\nThe CUDA driver for this release.",
            depends=[f"nvidia-open (= {deb})"],
            maintainer=NVIDIA_MAINTAINER,
            section="metapackages",
        ),
    ]


HW_DIVERTS = ["/sbin/ethtool", "/bin/rdma", "/sbin/modprobe", "/sbin/lsmod", "/bin/lsmod", "/sbin/modinfo", "/sbin/rmmod", "/usr/bin/lspci"]


def hw_package():
    """The image's simulated hardware (never installed by roles)."""
    name = "linerate-lab-hw"
    preinst = '#!/bin/sh\nset -e\nif [ "$1" = install ] || [ "$1" = upgrade ]; then\n'
    postrm = '#!/bin/sh\nset -e\nif [ "$1" = remove ] || [ "$1" = purge ]; then\n'
    for path in HW_DIVERTS:
        preinst += f"  dpkg-divert --package {name} --rename --divert {path}.distrib --add {path}\n"
        postrm += f"  dpkg-divert --package {name} --rename --divert {path}.distrib --remove {path}\n"
    preinst += "fi\n"
    postrm += "fi\n"
    inbox = "#!/bin/sh\nset -e\nKVER=$(uname -r)\n"
    for module in kmods.INBOX:
        d = f"/lib/modules/$KVER/{kmods.inbox_path(module)}"
        inbox += _ko_install_script([module], "", d, f'mkdir -p "{d}"', inbox=True)
    files = {
        "/sbin/ethtool": (0o755, launcher("ethtool", "ethtool", name)),
        "/bin/rdma": (0o755, launcher("rdma", "rdma", name)),
        "/sbin/modprobe": (0o755, launcher("modprobe", "kmod", name, prog="modprobe")),
        "/sbin/lsmod": (0o755, launcher("lsmod", "kmod", name, prog="lsmod")),
        "/bin/lsmod": (0o755, launcher("lsmod", "kmod", name, prog="lsmod")),
        "/sbin/modinfo": (0o755, launcher("modinfo", "kmod", name, prog="modinfo")),
        "/sbin/rmmod": (0o755, launcher("rmmod", "kmod", name, prog="rmmod")),
        # pciutils' lspci over the node's PCIe tree (GPUs, NICs, switch and root ports)
        "/usr/bin/lspci": (0o755, launcher("lspci", "lspci", name)),
        "/usr/lib/linerate-lab-hw/boot": (0o755, launcher("boot", "boot", name)),
    }
    return Package(
        name,
        "1.0",
        "linerate lab: simulated node hardware\n"
        "Diverts ethtool, lspci, iproute2's rdma and kmod's modprobe/lsmod/modinfo/rmmod to the\n"
        "simulators, installs the inbox driver modules of the running kernel\n"
        "and the boot hook that power-cycles the node in the fabric model.",
        depends=["python3", "kmod", "ethtool", "iproute2"],
        files=files,
        scripts={"preinst": preinst, "postrm": postrm, "postinst": inbox},
        maintainer="linerate <linerate@localhost>",
        section="admin",
    )


def package_set(kernels=None):
    """Every package of the repository, newest last per name."""
    kernels = list(dict.fromkeys(kernels or [platform.release(), OTHER_KERNEL]))
    pkgs = []
    for stack in OFED_STACKS:
        pkgs += ofed_packages(stack, kernels)
    for version in GPU_DRIVERS:
        pkgs += gpu_packages(version)
    pkgs.append(nccl_package())
    pkgs.append(nccl_tests_package())
    pkgs.append(hw_package())
    return pkgs


def build_repo(out_dir, kernels=None):
    """Build every package into ``out_dir`` (emptied first) and index it.

    ``kernels``: the kernel releases precompiled ``mlnx-ofed-kernel-modules``
    are built for; default: this machine's (the containers share its kernel)
    and OTHER_KERNEL, the one a mismatch test installs. Returns the paths.
    """
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    paths = [p.build(out_dir) for p in package_set(kernels)]
    write_index(out_dir)
    return paths


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "lab/state/apt"
    for path in build_repo(target):
        print(path)
