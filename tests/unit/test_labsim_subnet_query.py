"""The InfiniBand lab's port reads hold one ibsim client at a time per node (lab/sim/linerate_lab/subnet.py):
ibsim serves at most ten attached clients (IBSIM_MAX_CLIENTS, ibsim/ibsim.h), and nccl-tests one rank per
GPU is eight processes a node reading their ports together. A stand-in smpquery asks ``flock -n`` for the
node's lock while it runs: it gets it only if port_info did not hold it, and then fails the read."""

import os
import stat
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))

from linerate_lab import subnet  # noqa: E402

PORTINFO = """# Port info: DR path slid 65535; dlid 65535; 0 port 1
Lid:.............................1
SMLid:...........................1
LinkState:.......................Active
PhysLinkState:...................LinkUp
LinkWidthActive:.................4X
LinkSpeedActive:.................25.78125 Gbps
"""


def fake_smpquery(tmp_path, lock):
    tool = tmp_path / "smpquery"
    tool.write_text(
        f"#!/bin/sh\nif flock -n {lock} true; then echo 'ibwarn: lock not held: another client could attach' >&2; exit 1; fi\ncat <<'EOF'\n{PORTINFO}EOF\n"
    )
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return str(tool)


def test_port_info_reads_the_subnet_under_the_nodes_lock(tmp_path, monkeypatch):
    lock = str(tmp_path / "subnet.lock")
    monkeypatch.setattr(subnet, "QUERY_LOCK", lock)
    monkeypatch.setattr(subnet, "SMPQUERY", fake_smpquery(tmp_path, lock))
    m = {"subnet": {"address": "127.0.0.1", "port": 7070}}
    nic = {"device": "mlx5_0", "link_layer": "InfiniBand", "port": 1}
    # eight ranks of one node at once, as rank-per-GPU nccl-tests reads its ports
    results = [None] * 8

    def read(k):
        results[k] = subnet.port_info(m, "node1", dict(nic))

    threads = [threading.Thread(target=read, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [{"lid": 1, "sm_lid": 1, "state": 4, "phys_state": 5, "width": 4, "speed_gbps": 103.1}] * 8
    # and the lock is free again afterwards: the next read gets it
    assert subnet.port_info(m, "node1", dict(nic))["state"] == 4


def test_without_the_lock_the_stand_in_refuses(tmp_path, monkeypatch):
    """The stand-in itself is no pass-through: a read outside the lock fails, as ibsim's eleventh client would."""
    lock = str(tmp_path / "subnet.lock")
    monkeypatch.setattr(subnet, "QUERY_LOCK", lock)
    tool = fake_smpquery(tmp_path, lock)
    import subprocess

    res = subprocess.run([tool], capture_output=True, text=True)
    assert res.returncode == 1 and "lock not held" in res.stderr
    monkeypatch.setattr(subnet, "SMPQUERY", tool)

    class Unlocked:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(subnet, "_one_query_at_a_time", Unlocked)
    out = subnet.port_info({"subnet": {"address": "127.0.0.1", "port": 7070}}, "node1", {"device": "mlx5_0", "link_layer": "InfiniBand", "port": 1})
    assert out == {"error": "ibwarn: lock not held: another client could attach"}
