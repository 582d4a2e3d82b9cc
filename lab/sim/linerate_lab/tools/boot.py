"""The node's power-on, run by the container's entrypoint (and on every
simulated reboot): the firmware loads its next_boot configuration
(hardware.boot), then the modules a Debian host loads at boot — udev's
autoload of mlx5 and (when installed) nvidia, openibd when
/etc/infiniband/openib.conf says ONBOOT=yes, rdma-core's
/etc/rdma/modules/*.conf and /etc/modules-load.d/*.conf + /etc/modules.
"""

import glob
import os

from . import common, openibd
from .. import hardware, kmods, model
from .kmod import insert


def configured_modules(root="/"):
    names = []
    files = sorted(glob.glob(os.path.join(root, "etc/modules-load.d/*.conf")))
    files += sorted(glob.glob(os.path.join(root, "etc/rdma/modules/*.conf")))
    files.append(os.path.join(root, "etc/modules"))
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    line = line.split("#", 1)[0].strip()
                    if line:
                        names.append(line.split()[0])
        except OSError:
            continue
    return names


def onboot(root="/"):
    try:
        with open(os.path.join(root, "etc/infiniband/openib.conf"), encoding="utf-8") as f:
            return any(line.strip() == "ONBOOT=yes" for line in f)
    except OSError:
        return False


def load_quietly(node, name):
    path = kmods.find(name)
    if path and kmods.read_ko(path):
        insert(node, kmods.canonical(name), path)


def main(argv):
    with model.locked() as m:
        node = model.node(m)
        hardware.boot(node)
        if onboot() and os.path.exists("/etc/init.d/openibd"):
            openibd.start(node)
        for name in kmods.BOOT_AUTOLOAD:
            load_quietly(node, name)
        if kmods.find("nvidia"):
            for name in kmods.NVIDIA_MODULES:
                load_quietly(node, name)
        for name in configured_modules():
            load_quietly(node, name)
        kmods.write_sysfs(node)
    common.out(f"linerate-lab: {model.node_name()} booted\n")
    return 0
