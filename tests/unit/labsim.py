"""Shared setup for the lab simulator tests: a fabric model in a temp dir,
the netdevs' kernel state as a dict, module placeholders in a temp tree.

The ``lab`` fixture reaches every unit test through tests/unit/conftest.py: name it as a parameter.
"""

import io
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))

from linerate_lab import hardware, kmods, model  # noqa: E402
from linerate_lab.tools import common  # noqa: E402

KVER = os.uname().release


class Lab:
    def __init__(self, tmp_path, monkeypatch, capsys):
        self.tmp = tmp_path
        self.mp = monkeypatch
        self.capsys = capsys
        self.state = tmp_path / "state"
        self.state.mkdir()
        self.modroot = tmp_path / "modules"
        monkeypatch.setenv("LINERATE_LAB_STATE", str(self.state))
        monkeypatch.setenv("LINERATE_LAB_NODE", "node1")
        monkeypatch.setenv("LINERATE_LAB_MODULES_ROOT", str(self.modroot))
        # the node's /sys/module view (kmods.write_sysfs), never this machine's /run
        self.sysfs = tmp_path / "sys"
        monkeypatch.setenv("LINERATE_LAB_SYSFS", str(self.sysfs))
        monkeypatch.setattr(os, "geteuid", lambda: 0)
        node = hardware.new_node("node1", 1, "roce", 2, 400, [("leaf1", "swp1"), ("leaf2", "swp1")])
        node["modules"] = list(kmods.OFED_STACK)
        self.write({"version": 1, "transport": "roce", "nodes": {"node1": node}, "switches": {}, "faults": []})
        self.netdevs = {n["netdev"]: {"name": n["netdev"], "up": True, "operstate": "UNKNOWN", "mtu": 4200, "ipv4": [], "ipv6": []} for n in node["nics"]}
        self.netdevs["enp65s0f0np0"]["ipv4"] = ["192.168.100.11"]
        monkeypatch.setattr(common, "read_netdev", lambda name: self.netdevs.get(name))
        for name in kmods.INBOX:
            self.install_modules([name], "", kmods.inbox_path(name))
        self.install_modules(kmods.OFED_MODULES, "24.10-1.1.4", "updates")

    def write(self, m):
        (self.state / "fabric.json").write_text(json.dumps(m))

    def model(self):
        return model.load()

    def node(self):
        return self.model()["nodes"]["node1"]

    def nic(self, device="mlx5_0"):
        return next(n for n in self.node()["nics"] if n["device"] == device)

    def update(self, fn):
        with model.locked() as m:
            fn(m["nodes"]["node1"])

    def install_modules(self, names, version, subdir, kver=KVER):
        d = self.modroot / kver / subdir
        d.mkdir(parents=True, exist_ok=True)
        for name in names:
            (d / kmods.file_name(name)).write_text(kmods.ko_text(name, version, kver, inbox=subdir.startswith("kernel")))

    def run(self, tool, argv, stdin="", **kwargs):
        """(rc, stdout, stderr) of ``tool.main(argv)``."""
        self.capsys.readouterr()
        self.mp.setattr(sys, "stdin", io.StringIO(stdin))
        rc = tool.main(list(argv), **kwargs)
        out = self.capsys.readouterr()
        return rc, out.out, out.err


@pytest.fixture
def lab(tmp_path, monkeypatch, capsys):
    return Lab(tmp_path, monkeypatch, capsys)
