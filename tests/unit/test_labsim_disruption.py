"""Lab faults for the disruptive host actions (issue 25): reset-lost (a NIC that does not come back
from mlxfwreset) and rdma-busy / rdma-idle (a process holding /dev/infiniband/uverbsN, read by the
in-use check of plugins/module_utils/host/mgmtpath.py exactly as on a real host)."""

import os
import subprocess
import time

import pytest

from linerate_lab import faults
from linerate_lab.tools import common, ibdev2netdev, mlxfwreset

from ansible_collections.linerate.fabric.plugins.module_utils.host import mgmtpath


def test_reset_lost_takes_the_device_away_at_the_next_reset_only(lab):
    msg = faults.apply("reset-lost", ["node1", "mlx5_0"], lab=None)
    assert msg == "node1 mlx5_0: the next mlxfwreset of 0000:41:00.0 loses the device"
    assert [n["device"] for n in common.rdma_nics(lab.node())] == ["mlx5_0", "mlx5_1"]  # not before a reset
    rc, out, _ = lab.run(mlxfwreset, ["-d", "0000:41:00.0", "-l", "3", "-y", "reset"])
    assert rc == 0
    assert [n["device"] for n in common.rdma_nics(lab.node())] == ["mlx5_1"]
    rc, out, _ = lab.run(ibdev2netdev, [])
    assert "mlx5_0" not in out and "mlx5_1" in out
    assert {"kind": "reset-lost", "args": ["node1", "mlx5_0"]} in lab.model()["faults"]
    faults.apply("reset-lost-restore", ["node1", "mlx5_0"], lab=None)
    assert [n["device"] for n in common.rdma_nics(lab.node())] == ["mlx5_0", "mlx5_1"]
    assert not [f for f in lab.model()["faults"] if f["kind"] == "reset-lost"]
    # a reset without the fault keeps the device
    lab.run(mlxfwreset, ["-d", "0000:41:00.0", "-l", "3", "-y", "reset"])
    assert [n["device"] for n in common.rdma_nics(lab.node())] == ["mlx5_0", "mlx5_1"]


def test_reset_lost_refuses_an_unknown_device(lab):
    with pytest.raises(faults.FaultError, match="has no device 'mlx5_9'"):
        faults.apply("reset-lost", ["node1", "mlx5_9"], lab=None)


class Node:
    """The node's shell as podman exec runs it, with the lab's absolute paths moved under a temp root."""

    def __init__(self, root):
        self.root = str(root)
        self.scripts = []

    def podman(self, *argv, check=False, capture=True):
        # what a fault runs in a node runs without CAP_SYS_ADMIN, as the node's own processes do
        assert argv[:2] == ("exec", "linerate-node1") and argv[2:5] == faults.NODE_CAPS, argv
        argv = argv[:2] + argv[5:]
        assert argv[2:4] == ("sh", "-c")
        script = argv[4].replace("/run/linerate-lab", self.root + "/run/linerate-lab").replace("/dev/infiniband", self.root + "/dev/infiniband")
        self.scripts.append(argv[4])
        os.makedirs(self.root + "/run/linerate-lab", exist_ok=True)
        return subprocess.run(["sh", "-c", script], capture_output=True, text=True)

    PREFIX = "linerate-"


def test_rdma_busy_presents_what_the_in_use_check_reads_and_idle_ends_it(lab, tmp_path):
    node = Node(tmp_path)
    msg = faults.apply("rdma-busy", ["node1", "mlx5_1"], lab=node)
    assert msg == "node1 mlx5_1: ib_write_bw holds /dev/infiniband/uverbs1 open until rdma-idle"
    sysfs = str(tmp_path / "run" / "linerate-lab" / "sys")
    # the sysfs view of mgmtpath: uverbsN -> device, device -> its PCI function
    verbs = mgmtpath.uverbs_devices(sysfs)
    assert {os.path.basename(k): v for k, v in verbs.items()} == {"uverbs0": "mlx5_0", "uverbs1": "mlx5_1"}
    assert mgmtpath.devices_of(sysfs, "firmware_reset", ["0000:c1:00.0"]) == {"mlx5_1"}
    assert mgmtpath.devices_of(sysfs, "firmware_reset", ["0000:41:00.0"]) == {"mlx5_0"}
    pidfile = tmp_path / "run" / "linerate-lab" / "rdma-busy-mlx5_1.pid"
    for _ in range(50):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.1)
    pid = int(pidfile.read_text())
    try:
        for _ in range(50):
            fds = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            if str(tmp_path / "dev" / "infiniband" / "uverbs1") in fds:
                break
            time.sleep(0.1)
        assert str(tmp_path / "dev" / "infiniband" / "uverbs1") in fds
        with open(f"/proc/{pid}/comm") as f:
            assert f.read().strip() == "ib_write_bw"
        assert {"kind": "rdma-busy", "args": ["node1", "mlx5_1"]} in lab.model()["faults"]
        # a second rdma-busy keeps the one holder
        faults.apply("rdma-busy", ["node1", "mlx5_1"], lab=node)
        assert int(pidfile.read_text()) == pid
    finally:
        faults.apply("rdma-idle", ["node1", "mlx5_1"], lab=node)
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except OSError:
            break
        if open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the holder is still running")
    assert not pidfile.exists()
    assert not [f for f in lab.model()["faults"] if f["kind"] == "rdma-busy"]
