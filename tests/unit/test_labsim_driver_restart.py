"""The lab's /sys/module view (kmods.write_sysfs): a directory per loaded module, ``version`` only for a build
that declares one (OFED's, not the inbox one), kept by modprobe/rmmod/openibd/boot; and the faults
driver-restart-pending / driver-restart-done, read by ofed_driver_info's logic as a real host's sysfs is."""

import subprocess
import types

import pytest
from labsim import KVER, kmods  # noqa: F401
from linerate_lab import faults
from linerate_lab.tools import boot, kmod, openibd

from ansible_collections.linerate.fabric.plugins.module_utils.host import ofed

OFED = "24.10-1.1.4"
PARAMS = {"module": "mlx5_core", "modules": ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm"], "dependents": ["nvidia_peermem"]}


def modules_dir(lab):
    return sorted(p.name for p in (lab.sysfs / "module").iterdir())


def version_of(lab, name):
    p = lab.sysfs / "module" / name / "version"
    return p.read_text() if p.exists() else None


class Node:
    """podman exec into node1: the lab's tools run in this process, shell steps under the test's sysfs."""

    PREFIX = "linerate-"

    def __init__(self, lab):
        self.lab = lab
        self.commands = []

    def tool(self, argv):
        if argv[0] == "modinfo":
            return self.lab.run(kmod, argv[1:], prog="modinfo")
        if argv[0] == "modprobe":
            return self.lab.run(kmod, argv[1:], prog="modprobe")
        if argv[0] == "/etc/init.d/openibd":
            return self.lab.run(openibd, argv[1:])
        raise AssertionError(f"unexpected command in the node: {argv}")

    def podman(self, *argv, check=False, capture=True):
        assert argv[:2] == ("exec", "linerate-node1") and argv[2:5] == faults.NODE_CAPS, argv
        argv = list(argv[5:])
        self.commands.append(argv)
        if argv[:2] == ["sh", "-c"] and kmods.LAB_SYSFS in argv[2]:
            res = subprocess.run(["sh", "-c", argv[2].replace(kmods.LAB_SYSFS, str(self.lab.sysfs))], capture_output=True, text=True)
            return res
        if argv[:2] == ["sh", "-c"]:
            out = ""
            for line in argv[2].splitlines():
                if line == "set -e":
                    continue
                rc, o, e = self.tool(line.split())
                out += o
                if rc:
                    return types.SimpleNamespace(returncode=rc, stdout=out, stderr=e)
            return types.SimpleNamespace(returncode=0, stdout=out, stderr="")
        rc, out, err = self.tool(argv)
        return types.SimpleNamespace(returncode=rc, stdout=out, stderr=err)


def driver(lab):
    return ofed.driver_info(lambda argv: lab.run(kmod, argv[1:], prog="modinfo"), dict(PARAMS, sysfs=str(lab.sysfs)))


def test_a_loaded_ofed_module_shows_its_version_and_an_unloaded_one_has_no_directory(lab):
    assert lab.run(openibd, ["restart"])[0] == 0
    assert modules_dir(lab) == sorted(kmods.OFED_STACK)
    assert version_of(lab, "mlx5_core") == OFED + "\n"
    assert (lab.sysfs / "module" / "mlx5_core" / "initstate").read_text() == "live\n"
    # mlx5_ib and mlx5_core's other users hold it: refcnt counts them, as lsmod's "Used by" does
    assert (lab.sysfs / "module" / "ib_uverbs" / "refcnt").read_text() == "2\n"
    assert lab.node()["module_versions"]["mlx5_core"] == OFED
    assert lab.run(kmod, ["ib_ipoib"], prog="rmmod")[0] == 0
    assert "ib_ipoib" not in modules_dir(lab) and "ib_ipoib" not in lab.node()["module_versions"]
    assert lab.run(openibd, ["stop"])[0] == 0
    assert not [m for m in modules_dir(lab) if m in kmods.OFED_MODULES]


def test_an_inbox_module_has_no_version_file(lab):
    for f in (lab.modroot / KVER / "updates").iterdir():
        f.unlink()
    lab.update(lambda n: n.update(modules=[], module_versions={}))
    assert lab.run(kmod, ["mlx5_ib"], prog="modprobe") == (0, "", "")
    assert {"mlx5_core", "mlx5_ib", "ib_core"} <= set(modules_dir(lab))
    assert version_of(lab, "mlx5_core") is None and (lab.sysfs / "module" / "mlx5_core" / "initstate").exists()
    assert lab.node()["module_versions"]["mlx5_core"] is None


def test_a_module_reloaded_as_the_inbox_build_loses_its_version_file(lab):
    assert lab.run(openibd, ["restart"])[0] == 0
    assert version_of(lab, "mlx5_core") == OFED + "\n"
    assert lab.run(openibd, ["stop"])[0] == 0
    (lab.modroot / KVER / "updates" / "mlx5_core.ko").unlink()
    lab.update(lambda n: n.update(modules=[]))
    assert lab.run(kmod, ["mlx5_core"], prog="modprobe")[0] == 0
    assert version_of(lab, "mlx5_core") is None


def test_boot_writes_the_tree_of_what_it_loaded(lab):
    lab.mp.setattr(boot, "configured_modules", lambda root="/": [])
    lab.mp.setattr(boot, "onboot", lambda root="/": False)
    (lab.sysfs / "module" / "stale").mkdir(parents=True)
    assert lab.run(boot, [])[0] == 0
    assert modules_dir(lab) == sorted(lab.node()["modules"]) and "stale" not in modules_dir(lab)
    assert set(kmods.BOOT_AUTOLOAD) <= set(modules_dir(lab))
    assert version_of(lab, "mlx5_core") == OFED + "\n"  # updates/ wins over kernel/, as depmod orders them


def test_driver_restart_pending_is_seen_and_driver_restart_done_repairs_it(lab):
    node = Node(lab)
    assert lab.run(openibd, ["restart"])[0] == 0
    assert driver(lab)["restart_needed"] is False
    msg = faults.apply("driver-restart-pending", ["node1"], lab=node)
    assert msg == (
        f"node1: OFED {OFED} is installed, the running mlx5 driver is the kernel's inbox build "
        "(no /sys/module/mlx5_core/version; rdma_cm, ib_uverbs not loaded) until driver-restart-done"
    )
    assert node.commands[0] == ["modinfo", "-F", "version", "mlx5_core"]
    n = lab.node()
    assert n["modules"] == [m for m in kmods.BOOT_AUTOLOAD if m in kmods.INBOX]
    assert {"kind": "driver-restart-pending", "args": ["node1"]} in lab.model()["faults"]
    assert modules_dir(lab) == sorted(n["modules"]) and version_of(lab, "mlx5_core") is None
    # what roce_qos met in the lab: no rdma_cm, so no configfs for cma_roce_mode
    seen = driver(lab)
    assert seen["restart_needed"] is True and seen["missing"] == ["ib_uverbs", "rdma_cm"]
    assert seen["reasons"][0] == (
        f"the loaded mlx5_core is the kernel's inbox build (no {lab.sysfs}/module/mlx5_core/version), the installed one is OFED {OFED}"
    )
    msg = faults.apply("driver-restart-done", ["node1"], lab=node)
    assert node.commands[-1] == ["sh", "-c", "set -e\n/etc/init.d/openibd restart"]
    assert msg == "node1: driver restarted (/etc/init.d/openibd restart): the installed OFED driver is loaded"
    assert driver(lab)["restart_needed"] is False and version_of(lab, "mlx5_core") == OFED + "\n"
    assert not [f for f in lab.model()["faults"] if f["kind"] == "driver-restart-pending"]


def test_driver_restart_done_takes_nvidia_peermem_out_and_back(lab):
    lab.install_modules(kmods.NVIDIA_MODULES + ["nvidia_peermem"], "550.54.15", "updates/dkms")
    node = Node(lab)
    assert lab.run(openibd, ["restart"])[0] == 0
    assert lab.run(kmod, ["nvidia_peermem"], prog="modprobe")[0] == 0
    faults.apply("driver-restart-pending", ["node1"], lab=node)
    assert "nvidia_peermem" in lab.node()["modules"]
    assert driver(lab)["dependents_loaded"] == ["nvidia_peermem"]
    faults.apply("driver-restart-done", ["node1"], lab=node)
    assert node.commands[-1] == ["sh", "-c", "set -e\nmodprobe -r nvidia_peermem\n/etc/init.d/openibd restart\nmodprobe nvidia_peermem"]
    assert "nvidia_peermem" in lab.node()["modules"] and driver(lab)["restart_needed"] is False


def test_driver_restart_pending_needs_ofed_installed(lab):
    for f in (lab.modroot / KVER / "updates").iterdir():
        f.unlink()
    with pytest.raises(faults.FaultError, match="node1 has no OFED driver installed"):
        faults.apply("driver-restart-pending", ["node1"], lab=Node(lab))
    assert not lab.model()["faults"]
