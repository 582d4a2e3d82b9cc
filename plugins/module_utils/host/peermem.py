"""nvidia-peermem: prerequisites, load state and whether DMA-BUF makes it unnecessary.

GPUDirect RDMA registers GPU memory with the NIC through one of two kernel
paths: the legacy ``nvidia_peermem`` module (NVIDIA driver >= R470, needs the
peer-memory API of MLNX_OFED / DOCA-OFED's ib_core) or the Linux DMA-BUF
interface. The DMA-BUF rule used here (NVIDIA GPU Operator documentation,
"GPUDirect RDMA and GPUDirect Storage", docs.nvidia.com/datacenter/cloud-native/
gpu-operator/latest/gpu-operator-rdma.html, which recommends DMA-BUF over
nvidia-peermem where supported): the NVIDIA **open** GPU kernel modules,
driver R515 or newer, and a Linux kernel 5.12 or newer (where dma-buf
importing in RDMA - ib_umem_dmabuf - landed). NCCL (>= 2.13,
NCCL_DMABUF_ENABLE, on by default) then uses it without nvidia_peermem; CUDA
11.7+ in the application is also required, which a host cannot check.

Tools through ``run(argv) -> (rc, out, err)``; files through ``read_file``.
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure

MODULE = "nvidia_peermem"
DMABUF_MIN_KERNEL = (5, 12)
DMABUF_MIN_DRIVER = 515


def read_lsmod(text):
    """Module names from ``lsmod`` (header ``Module  Size  Used by``)."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines or not lines[0].startswith("Module"):
        raise ValueError(f"lsmod: unexpected output: {lines[0] if lines else 'empty'!r}")
    return [line.split()[0] for line in lines[1:]]


def read_ofed_version(text):
    """``ofed_info -s``: ``MLNX_OFED_LINUX-23.07-0.5.1.2:`` / ``OFED-internal-5.0-1.0.0.0:`` / ``DOCA...``."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    if not line.endswith(":") or " " in line:
        raise ValueError(f"ofed_info -s: unexpected output {line!r}")
    return line[:-1]


def read_driver_versions(text):
    """``nvidia-smi --query-gpu=driver_version --format=csv,noheader``: one version per GPU."""
    versions = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not versions or not all(re.fullmatch(r"\d+\.\d+(\.\d+)?", v) for v in versions):
        raise ValueError(f"nvidia-smi: unexpected driver version output {text.strip()[:200]!r}")
    return versions


def kernel_tuple(release):
    m = re.match(r"(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def module_flavor(proc_version, modinfo_license):
    """``open`` / ``proprietary`` / None from /proc/driver/nvidia/version or modinfo's license."""
    if proc_version:
        return "open" if "Open Kernel Module" in proc_version else "proprietary"
    if modinfo_license:
        return "open" if "MIT" in modinfo_license else "proprietary"
    return None


def dmabuf(kernel, driver, flavor):
    """(supported: bool, reason: str) by the rule in the module docstring."""
    kt = kernel_tuple(kernel)
    major = int(driver.split(".")[0]) if driver else None
    if kt is None:
        return False, f"kernel release {kernel!r} not understood"
    if kt < DMABUF_MIN_KERNEL:
        return False, f"kernel {kernel} is older than 5.12 (no RDMA dma-buf import)"
    if major is None or major < DMABUF_MIN_DRIVER:
        return False, f"NVIDIA driver {driver} is older than R515"
    if flavor is None:
        return False, ("could not tell whether the NVIDIA open kernel modules are in use (no /proc/driver/nvidia/version, no modinfo nvidia)")
    if flavor != "open":
        return False, "the proprietary NVIDIA kernel modules do not export GPU memory as dma-buf"
    return True, f"open kernel modules {driver}, kernel {kernel}: NCCL can use DMA-BUF without nvidia_peermem"


class Host:
    def __init__(self, run, read_file):
        self.run = run
        self.read_file = read_file
        self.commands = []

    def _call(self, argv, what, missing_msg):
        try:
            rc, out, err = self.run(argv)
        except OSError:
            raise ToolFailure(missing_msg, cmd=argv) from None
        if rc != 0:
            raise ToolFailure.exited(argv, rc, out, err, what=what)
        return out

    def gpu_driver(self):
        out = self._call(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            "NVIDIA GPU driver not working",
            "NVIDIA GPU driver missing: nvidia-smi not found; install the GPU driver before nvidia_peermem (it ships with the driver, R470 or newer)",
        )
        try:
            versions = read_driver_versions(out)
        except ValueError as e:
            raise ToolFailure(f"NVIDIA GPU driver not working: {e}", stdout=out) from None
        return versions[0]

    def ofed(self):
        out = self._call(
            ["ofed_info", "-s"],
            "MLNX_OFED / DOCA-OFED not working",
            "MLNX_OFED / DOCA-OFED missing: ofed_info not found; nvidia_peermem needs the peer-memory API of its ib_core (run the mofed role first)",
        )
        try:
            return read_ofed_version(out)
        except ValueError as e:
            raise ToolFailure(f"MLNX_OFED / DOCA-OFED not recognised: {e}", stdout=out) from None

    def loaded(self):
        out = self._call(["lsmod"], "lsmod failed", "lsmod not found (package kmod)")
        try:
            return MODULE in read_lsmod(out)
        except ValueError as e:
            raise ToolFailure(str(e), stdout=out) from None

    def kernel(self):
        return self._call(["uname", "-r"], "uname failed", "uname not found").strip()

    def flavor(self):
        proc = self.read_file("/proc/driver/nvidia/version")
        lic = None
        if proc is None:
            try:
                rc, out, _err = self.run(["modinfo", "-F", "license", "nvidia"])
                lic = out.strip() if rc == 0 and out.strip() else None
            except OSError:
                lic = None
        return module_flavor(proc, lic)

    def modprobe(self, remove=False):
        argv = ["modprobe", *(["-r"] if remove else []), MODULE]
        self.commands.append(argv)
        try:
            rc, out, err = self.run(argv)
        except OSError:
            raise ToolFailure("modprobe not found (package kmod)", cmd=argv) from None
        if rc != 0:
            hint = ""
            if "not found" in (err + out):
                hint = " - this GPU driver build has no nvidia-peermem for the running kernel (install the driver's peermem / DKMS package, or use DMA-BUF)"
            raise ToolFailure.exited(argv, rc, out, err, hint=hint)


DKMS_INSTALLED = re.compile(r"^(install|hold) ok (installed|triggers-pending|triggers-awaited)", re.M)


def rebuild_if_missing(host, package, check_mode):
    """nvidia-peermem is built by the GPU driver's DKMS package, and only when the OFED kernel
    sources are there: a driver installed before OFED has none. When ``modinfo nvidia_peermem``
    finds no module for the running kernel and ``package`` is installed, rebuild its DKMS modules
    (``dpkg-reconfigure``, what its postinst does). True when it ran (or would, in check mode)."""
    try:
        rc, _out, _err = host.run(["modinfo", MODULE])
    except OSError:
        raise ToolFailure("modinfo not found (package kmod)", cmd=["modinfo", MODULE]) from None
    if rc == 0:
        return False
    try:
        rc, out, _err = host.run(["dpkg-query", "-W", "-f=${Status}", package])
    except OSError:
        return False
    if rc != 0 or not DKMS_INSTALLED.search(out):
        return False
    argv = ["dpkg-reconfigure", "-fnoninteractive", package]
    host.commands.append(argv)
    if not check_mode:
        rc, out, err = host.run(argv)
        if rc != 0:
            raise ToolFailure.exited(argv, rc, out, err, what=f"rebuilding {MODULE}")
    return True


def ensure(host, state, check_mode, rebuild_package=None):
    rebuilt = bool(rebuild_package) and state == "present" and rebuild_if_missing(host, rebuild_package, check_mode)
    driver = host.gpu_driver()
    ofed = host.ofed()
    kernel = host.kernel()
    flavor = host.flavor()
    supported, reason = dmabuf(kernel, driver, flavor)
    before = host.loaded()
    want = state == "present"
    changed = before != want
    after = before
    if changed and not check_mode:
        host.modprobe(remove=not want)
        after = host.loaded()
        if after != want:
            raise ToolFailure(
                f"modprobe {'-r ' if not want else ''}{MODULE} succeeded but lsmod {'does not list' if want else 'still lists'} {MODULE}",
                commands=host.commands,
            )
    elif changed:
        host.commands.append(["modprobe", *([] if want else ["-r"]), MODULE])
        after = want
    facts = {
        "loaded": after,
        "driver_version": driver,
        "ofed_version": ofed,
        "kernel": kernel,
        "kernel_module_flavor": flavor,
        "dmabuf_supported": supported,
        "dmabuf_reason": reason,
    }
    return {
        "changed": changed or rebuilt,
        "rebuilt": rebuilt,
        "before": {"loaded": before},
        "after": {"loaded": after},
        "commands": host.commands,
        "ansible_facts": {"nvidia_peermem": facts},
        "diff": {"before": f"{MODULE} loaded: {before}\n", "after": f"{MODULE} loaded: {after}\n"},
    }
