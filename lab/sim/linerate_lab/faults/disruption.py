"""The faults of the disruptive host actions (issue 25), one row each: a NIC lost at a firmware reset, a
device held open, an interrupted driver restart, a netdev missing at boot, a reboot."""

import copy

from linerate_lab import kmods
from linerate_lab.faults.engine import NIC, NODE, Fault, FaultError, node_exec

# The uverbs view the in-use check reads (plugins/module_utils/host/mgmtpath.py:
# /proc/<pid>/fd links to /dev/infiniband/uverbsN; <sysfs>/class/infiniband_verbs/uverbsN/ibdev;
# <sysfs>/class/infiniband/<dev>/device -> its PCI function). The container's
# /sys is read-only and the kernel has no RDMA, so the lab keeps that tree
# under LAB_SYSFS (inventory: host_disruption_sysfs). node-init.sh makes
# /dev/infiniband/uverbsN the driver's character devices (231:192+N), which
# nothing can open in a container with no driver behind them: while a holder
# runs, its device's file is a plain file it holds open (what /proc/<pid>/fd
# shows is the path), and rdma-idle puts the character device back. The holder
# is a process named as a benchmark (a copy of sleep, so its comm is ib_write_bw).
LAB_SYSFS = "/run/linerate-lab/sys"
BUSY_COMM = "ib_write_bw"


def _uverbs(m, node, device):
    """uverbsN of a device: its rank among the node's devices (the driver numbers them in probe order)."""
    return sorted(int(n["device"].rsplit("_", 1)[1]) for n in m["nodes"][node]["nics"]).index(int(device.rsplit("_", 1)[1]))


def _pidfile(device):
    return f"/run/linerate-lab/rdma-busy-{device}.pid"


def _busy(hit):
    m, node, device = hit.m, hit.node, hit.device
    script = ["set -e", f"mkdir -p {LAB_SYSFS}/class/infiniband_verbs {LAB_SYSFS}/class/infiniband {LAB_SYSFS}/devices /dev/infiniband"]
    for nic in m["nodes"][node]["nics"]:
        n = _uverbs(m, node, nic["device"])
        script += [
            f"mkdir -p {LAB_SYSFS}/class/infiniband_verbs/uverbs{n} {LAB_SYSFS}/devices/{nic['pci']} {LAB_SYSFS}/class/infiniband/{nic['device']}",
            f"echo {nic['device']} > {LAB_SYSFS}/class/infiniband_verbs/uverbs{n}/ibdev",
            f"ln -sfn ../../../devices/{nic['pci']} {LAB_SYSFS}/class/infiniband/{nic['device']}/device",
            f"touch /dev/infiniband/uverbs{n}",
        ]
    n = _uverbs(m, node, device)
    holder = f"/run/linerate-lab/{BUSY_COMM}"
    script += [
        f'if test -s {_pidfile(device)} && kill -0 "$(cat {_pidfile(device)})" 2>/dev/null; then exit 0; fi',
        # the driver's character device cannot be opened here: a plain file in its place while held
        f"if test -c /dev/infiniband/uverbs{n}; then rm -f /dev/infiniband/uverbs{n}; : > /dev/infiniband/uverbs{n}; fi",
        f"test -x {holder} || cp /bin/sleep {holder}",
        f"setsid sh -c 'exec {holder} infinity 3</dev/infiniband/uverbs{n}' </dev/null >/dev/null 2>&1 &",
        f"echo $! > {_pidfile(device)}",
    ]
    node_exec(hit.lab, node, "sh", "-c", "\n".join(script))
    return f"{node} {device}: {BUSY_COMM} holds /dev/infiniband/uverbs{n} open until rdma-idle"


def _idle(hit):
    device = hit.device
    n = _uverbs(hit.m, hit.node, device)
    uverbs = f"/dev/infiniband/uverbs{n}"
    node_exec(
        hit.lab,
        hit.node,
        "sh",
        "-c",
        f'if test -s {_pidfile(device)}; then kill "$(cat {_pidfile(device)})" '
        f"2>/dev/null || true; rm -f {_pidfile(device)}; fi; "
        # the driver's character device back where rdma-busy left a plain file (node-init.sh makes it)
        f"if test -f {uverbs}; then rm -f {uverbs} && mknod -m 0666 {uverbs} c 231 {192 + n}; fi",
    )


def _restart_pending(hit):
    node, n = hit.node, hit.it
    # modinfo reads the node's module files, not the model: it may run while the model is locked
    installed = node_exec(hit.lab, node, "modinfo", "-F", "version", "mlx5_core").strip()
    if not installed:
        raise FaultError(f"fault: {node} has no OFED driver installed (modinfo -F version mlx5_core prints no version); converge it first (site.yml)")
    # As booted before the install: udev's autoload of the inbox mlx5 stack (no rdma.conf yet,
    # so no ib_uverbs / rdma_cm), OFED's own modules (mlx_compat, mlxdevm) absent.
    inbox = [x for x in kmods.BOOT_AUTOLOAD if x in kmods.INBOX]
    n["modules"] = inbox + [x for x in n.get("modules", []) if x not in kmods.OFED_MODULES and x not in inbox]
    versions = n.setdefault("module_versions", {})
    for name in kmods.OFED_MODULES + inbox:
        versions.pop(name, None)
    node_exec(hit.lab, node, "sh", "-c", kmods.sysfs_script(n, kmods.LAB_SYSFS))
    return (
        f"{node}: OFED {installed} is installed, the running mlx5 driver is the kernel's inbox build "
        f"(no /sys/module/mlx5_core/version; rdma_cm, ib_uverbs not loaded) until driver-restart-done"
    )


def _restart_done(hit):
    peermem = "nvidia_peermem" in hit.it.get("modules", [])
    script = ["set -e"]
    if peermem:
        script.append("modprobe -r nvidia_peermem")
    script.append("/etc/init.d/openibd restart")
    if peermem:
        script.append("modprobe nvidia_peermem")
    lab, node = hit.lab, hit.node
    hit.after(lambda: node_exec(lab, node, "sh", "-c", "\n".join(script)) and None)


def _netdev_missing(hit):
    hit.it["netdev_missing"] = True
    lab, node, netdev = hit.lab, hit.node, hit.it["netdev"]
    # deleting the node's end of the veth deletes the pair; labctl's ensure_nics leaves it out from now
    hit.after(lambda: node_exec(lab, node, "sh", "-c", f"if ip link show dev {netdev} >/dev/null 2>&1; then ip link del dev {netdev}; fi") and None)


def _netdev_appear(hit):
    hit.it.pop("netdev_missing", None)
    lab, node, spec = hit.lab, hit.node, copy.deepcopy(hit.m["nodes"][hit.node])
    hit.after(lambda: lab.ensure_nics(node, spec) and None)


def _reboot(hit):
    lab, node, spec = hit.lab, hit.node, copy.deepcopy(hit.it)
    hit.after(lambda: lab.reboot_node(node, spec) and None)
    missing = [n["netdev"] for n in spec["nics"] if n.get("netdev_missing")]
    return f"{node}: rebooted" + (f" without {', '.join(missing)}" if missing else "")


ROWS = (
    Fault(
        "reset-lost NODE DEVICE   the NIC does not come back from its next firmware reset (mlxfwreset): no RDMA device until reset-lost-restore",
        NIC,
        {"reset_lost": True},
        "{node} {device}: the next mlxfwreset of {pci} loses the device",
        "reset-lost-restore NODE DEVICE  undo reset-lost (the device is back, as after a power cycle)",
        ("reset_lost", "lost"),
        "{node} {device}: the device is back",
    ),
    Fault(
        "rdma-busy NODE DEVICE    a process (ib_write_bw) holds the device's /dev/infiniband/uverbsN open "
        "(the in-use check before a firmware reset or driver restart refuses)",
        NIC,
        _busy,
        "",
        "rdma-idle NODE DEVICE    undo rdma-busy (the holder exits)",
        _idle,
        "{node} {device}: no process holds it",
    ),
    Fault(
        "driver-restart-pending NODE  the OFED packages are installed but the driver loaded is "
        "the kernel's inbox build the node booted with (an install whose driver restart never ran)",
        NODE,
        _restart_pending,
        "",
        "driver-restart-done NODE  undo driver-restart-pending: /etc/init.d/openibd restart "
        "on the node (nvidia_peermem, which holds ib_core, unloaded before and loaded again after)",
        _restart_done,
        "{node}: driver restarted (/etc/init.d/openibd restart): the installed OFED driver is loaded",
    ),
    Fault(
        "netdev-missing NODE DEVICE  DEVICE's netdev goes away and does not come back, at boot "
        "either (a driver probe that failed, a rename udev never finished): the units bound to it stop",
        NIC,
        _netdev_missing,
        "{node} {device}: netdev {netdev} gone until netdev-appear",
        "netdev-appear NODE DEVICE  undo netdev-missing: the netdev appears (hotplug), and the units enabled into its device unit start",
        _netdev_appear,
        "{node} {device}: netdev {netdev} appeared",
    ),
    Fault(
        "reboot NODE  the node reboots: firmware loads its next-boot settings, the drivers start "
        "from scratch (QoS, ECN, RDMA-CM not persistent), the boot units run; a netdev-missing one stays absent",
        NODE,
        _reboot,
        recorded=False,
    ),
)
