"""nvidia_peermem module: prerequisites, load, idempotence, check mode, DMA-BUF fact."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.host import peermem
from ansible_collections.linerate.fabric.plugins.modules import nvidia_peermem

from module_harness import Tools, fixture, run_module

SMI = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
READS = [SMI, ["ofed_info", "-s"], ["uname", "-r"], ["lsmod"]]


class Node:
    def __init__(self, loaded=False, driver=True, ofed=True, kernel="6.1.0-18-amd64", proc="open", modprobe_works=True):
        self.loaded = loaded
        self.modprobe_works = modprobe_works
        self.proc = None if proc is None else fixture("peermem", f"proc_driver_version_{proc}.txt")
        handlers = {
            "lsmod": self.lsmod,
            "uname": lambda a: (0, kernel + "\n", ""),
            "modprobe": self.modprobe,
            "modinfo": lambda a: (1, "", "modinfo: ERROR: Module nvidia not found.\n"),
        }
        if driver:
            handlers["nvidia-smi"] = lambda a: (0, fixture("peermem", "nvidia_smi_driver_version.txt"), "")
        if ofed:
            handlers["ofed_info"] = lambda a: (0, fixture("peermem", "ofed_info_s.txt"), "")
        self.tools = Tools(handlers, missing=[t for t, ok in (("nvidia-smi", driver), ("ofed_info", ofed)) if not ok])

    def lsmod(self, args):
        return 0, fixture("peermem", "lsmod_peermem.txt" if self.loaded else "lsmod_no_peermem.txt"), ""

    def modprobe(self, args):
        if not self.modprobe_works:
            return 1, "", fixture("peermem", "modprobe_not_found.txt")
        self.loaded = args != ["-r", "nvidia_peermem"]
        return 0, "", ""


def run(node, capsys, monkeypatch, args=None, **kw):
    monkeypatch.setattr(nvidia_peermem, "read_file", lambda path: node.proc if path == "/proc/driver/nvidia/version" else None)
    return run_module(nvidia_peermem.main, args or {}, node.tools, capsys, **kw)


def test_loads_when_missing(capsys, monkeypatch):
    node = Node()
    out = run(node, capsys, monkeypatch)
    assert node.tools.calls == READS + [["modprobe", "nvidia_peermem"], ["lsmod"]]
    assert out["changed"] is True and out["after"] == {"loaded": True}
    facts = out["ansible_facts"]["nvidia_peermem"]
    assert facts["driver_version"] == "550.54.15"
    assert facts["ofed_version"] == "MLNX_OFED_LINUX-23.10-1.1.9.0"
    assert facts["kernel_module_flavor"] == "open" and facts["dmabuf_supported"] is True


def test_idempotent_when_loaded(capsys, monkeypatch):
    node = Node(loaded=True)
    out = run(node, capsys, monkeypatch)
    assert node.tools.calls == READS
    assert out["changed"] is False and out["commands"] == []


def test_check_mode_does_not_modprobe(capsys, monkeypatch):
    node = Node()
    out = run(node, capsys, monkeypatch, check=True, diff=True)
    assert node.tools.calls == READS
    assert out["changed"] is True and out["commands"] == [["modprobe", "nvidia_peermem"]]
    assert out["diff"] == {"before": "nvidia_peermem loaded: False\n", "after": "nvidia_peermem loaded: True\n"}
    assert node.loaded is False


def test_absent_unloads(capsys, monkeypatch):
    node = Node(loaded=True)
    out = run(node, capsys, monkeypatch, args={"state": "absent"})
    assert ["modprobe", "-r", "nvidia_peermem"] in node.tools.calls
    assert out["changed"] is True and node.loaded is False


def test_missing_gpu_driver_fails_clearly(capsys, monkeypatch):
    node = Node(driver=False)
    out = run(node, capsys, monkeypatch)
    assert out["failed"] is True and out["msg"].startswith("NVIDIA GPU driver missing: nvidia-smi not found")
    assert not any(c[0] == "modprobe" for c in node.tools.calls)


def test_gpu_driver_not_talking_fails_with_nvidia_smi_message(capsys, monkeypatch):
    node = Node()
    node.tools.handlers["nvidia-smi"] = lambda a: (9, fixture("peermem", "nvidia_smi_no_driver.txt"), "")
    out = run(node, capsys, monkeypatch)
    assert out["failed"] is True and out["rc"] == 9
    assert "couldn't communicate with the NVIDIA driver" in out["msg"]


def test_missing_mofed_fails_clearly(capsys, monkeypatch):
    node = Node(ofed=False)
    out = run(node, capsys, monkeypatch)
    assert out["failed"] is True and out["msg"].startswith("MLNX_OFED / DOCA-OFED missing")


def test_driver_without_peermem_fails_with_hint(capsys, monkeypatch):
    node = Node(modprobe_works=False)
    out = run(node, capsys, monkeypatch)
    assert out["failed"] is True and "no nvidia-peermem for the running kernel" in out["msg"]


@pytest.mark.parametrize(
    "kernel,driver,flavor,ok,needle",
    [
        ("6.1.0-18-amd64", "550.54.15", "open", True, "without nvidia_peermem"),
        ("5.15.0-91-generic", "535.104.05", "proprietary", False, "proprietary"),
        ("5.4.0-150-generic", "550.54.15", "open", False, "older than 5.12"),
        ("6.1.0-18-amd64", "470.223.02", "open", False, "older than R515"),
        ("6.1.0-18-amd64", "550.54.15", None, False, "could not tell"),
    ],
)
def test_dmabuf_rule(kernel, driver, flavor, ok, needle):
    supported, reason = peermem.dmabuf(kernel, driver, flavor)
    assert supported is ok and needle in reason


def test_flavor_from_proc_and_modinfo():
    assert peermem.module_flavor(fixture("peermem", "proc_driver_version_open.txt"), None) == "open"
    assert peermem.module_flavor(fixture("peermem", "proc_driver_version_proprietary.txt"), None) == "proprietary"
    assert peermem.module_flavor(None, "Dual MIT/GPL") == "open"
    assert peermem.module_flavor(None, "NVIDIA") == "proprietary"


def test_readers():
    assert "nvidia_peermem" in peermem.read_lsmod(fixture("peermem", "lsmod_peermem.txt"))
    assert "nvidia_peermem" not in peermem.read_lsmod(fixture("peermem", "lsmod_no_peermem.txt"))
    assert peermem.read_ofed_version("OFED-internal-5.0-1.0.0.0:\n") == "OFED-internal-5.0-1.0.0.0"
    with pytest.raises(ValueError):
        peermem.read_ofed_version("bash: ofed_info: command not found\n")


DKMS = "nvidia-kernel-open-dkms"


def dkms_node(built, status, reconfigure_rc=0):
    """A node whose nvidia_peermem is (not) built; the DKMS package in ``status`` (dpkg ${Status})."""
    node = Node()
    node.reconfigured = False

    def modinfo(args):
        if args == ["nvidia_peermem"]:
            return (
                (0, "filename: /lib/modules/6.1.0-18-amd64/updates/dkms/nvidia-peermem.ko\n", "")
                if built or node.reconfigured
                else (1, "", "modinfo: ERROR: Module nvidia_peermem not found.\n")
            )
        return 1, "", "modinfo: ERROR: Module nvidia not found.\n"

    def reconfigure(args):
        assert args == ["-fnoninteractive", DKMS]
        node.reconfigured = reconfigure_rc == 0
        return reconfigure_rc, "", "" if reconfigure_rc == 0 else "Error! Bad return status for module build on kernel\n"

    node.tools.handlers.update(
        {
            "modinfo": modinfo,
            "dpkg-reconfigure": reconfigure,
            "dpkg-query": lambda a: (0, status, "") if status else (1, "", f"dpkg-query: no packages found matching {DKMS}\n"),
        }
    )
    return node


def test_rebuilds_peermem_when_not_built_and_the_dkms_package_is_installed(capsys, monkeypatch):
    node = dkms_node(built=False, status="install ok installed")
    out = run(node, capsys, monkeypatch, args={"rebuild_dkms_package": DKMS})
    assert node.tools.calls[:3] == [["modinfo", "nvidia_peermem"], ["dpkg-query", "-W", "-f=${Status}", DKMS], ["dpkg-reconfigure", "-fnoninteractive", DKMS]]
    assert out["rebuilt"] is True and out["changed"] is True
    assert out["commands"][0] == ["dpkg-reconfigure", "-fnoninteractive", DKMS]
    assert ["modprobe", "nvidia_peermem"] in node.tools.calls


def test_built_peermem_is_not_rebuilt(capsys, monkeypatch):
    node = dkms_node(built=True, status="install ok installed")
    node.loaded = True
    out = run(node, capsys, monkeypatch, args={"rebuild_dkms_package": DKMS})
    assert node.tools.calls == [["modinfo", "nvidia_peermem"]] + READS
    assert out["rebuilt"] is False and out["changed"] is False


@pytest.mark.parametrize("status", ["", "deinstall ok config-files", "install ok half-configured"])
def test_no_rebuild_without_the_installed_dkms_package(capsys, monkeypatch, status):
    node = dkms_node(built=False, status=status)
    node.loaded = True
    out = run(node, capsys, monkeypatch, args={"rebuild_dkms_package": DKMS})
    assert not [c for c in node.tools.calls if c[0] == "dpkg-reconfigure"]
    assert out["rebuilt"] is False and out["changed"] is False


def test_rebuild_in_check_mode_is_reported_not_run(capsys, monkeypatch):
    node = dkms_node(built=False, status="hold ok installed")
    node.loaded = True
    out = run(node, capsys, monkeypatch, args={"rebuild_dkms_package": DKMS}, check=True)
    assert not [c for c in node.tools.calls if c[0] == "dpkg-reconfigure"]
    assert out["rebuilt"] is True and out["changed"] is True
    assert out["commands"] == [["dpkg-reconfigure", "-fnoninteractive", DKMS]]


def test_failed_rebuild_fails_naming_it(capsys, monkeypatch):
    node = dkms_node(built=False, status="install ok installed", reconfigure_rc=10)
    out = run(node, capsys, monkeypatch, args={"rebuild_dkms_package": DKMS})
    assert out["failed"] is True
    assert out["msg"] == (f"rebuilding nvidia_peermem: dpkg-reconfigure -fnoninteractive {DKMS} exited 10: Error! Bad return status for module build on kernel")
    assert ["modprobe", "nvidia_peermem"] not in node.tools.calls


def test_absent_never_rebuilds(capsys, monkeypatch):
    node = dkms_node(built=False, status="install ok installed")
    run(node, capsys, monkeypatch, args={"state": "absent", "rebuild_dkms_package": DKMS})
    assert ["modinfo", "nvidia_peermem"] not in node.tools.calls
