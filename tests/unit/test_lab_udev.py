"""The lab's udev (lab/sim/linerate_lab/udev.py) tells systemd of the node's netdevs as udevd does: a
database entry and tag index per netdev (read at boot and at every daemon-reload), and a message on the
udev monitor group in libudev's wire format (what systemd's device monitor parses). Against the lab,
tests/integration/site/test_boot.py proves systemd acts on them."""

import os
import socket
import struct
import sys

from labsim import ROOT

sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))
from linerate_lab import udev  # noqa: E402


def parse(msg):
    """A udev monitor message as systemd's device-monitor.c reads it."""
    prefix, magic, size, off, length, _sub, _devtype, hi, lo = udev.HEADER.unpack_from(msg)
    assert prefix == b"libudev\0" and magic == socket.htonl(0xFEEDCAFE) and size == off == 40
    assert len(msg) == off + length and (hi, lo) == (0xFFFFFFFF, 0xFFFFFFFF)  # passes any tag filter
    assert msg.endswith(b"\0")
    return dict(p.split("=", 1) for p in msg[off:-1].decode().split("\0"))


def sysfs(tmp_path, netdevs):
    net = tmp_path / "sys" / "class" / "net"
    net.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(net):
        if name not in netdevs:
            (net / name / "ifindex").unlink()
            (net / name).rmdir()
    for name, ifindex in netdevs.items():
        (net / name).mkdir(exist_ok=True)
        (net / name / "ifindex").write_text(f"{ifindex}\n")
    return str(net)


def test_announces_each_netdev_that_appears_or_goes_as_udevd_does(tmp_path):
    sent = []
    run = tmp_path / "run"
    net = sysfs(tmp_path, {"lo": 1, "eth0": 2, "enp65s0f0np0": 3})
    clock = iter(range(10, 100)).__next__
    u = udev.Udev(run=str(run), net=net, send=sent.append, clock=lambda: clock())

    known = u.settle({})  # coldplug: every netdev but lo
    assert known == {"eth0": 2, "enp65s0f0np0": 3}
    props = [parse(m) for m in sent]
    assert [(p["ACTION"], p["INTERFACE"], p["IFINDEX"], p["SEQNUM"]) for p in props] == [("add", "enp65s0f0np0", "3", "1"), ("add", "eth0", "2", "2")]
    assert props[0] == {
        "ACTION": "add",
        "DEVPATH": "/devices/virtual/net/enp65s0f0np0",
        "SUBSYSTEM": "net",
        "INTERFACE": "enp65s0f0np0",
        "IFINDEX": "3",
        "SEQNUM": "1",
        "USEC_INITIALIZED": "10000000",
        "SYSTEMD_ALIAS": "/sys/subsystem/net/devices/enp65s0f0np0",
        "TAGS": ":systemd:",
        "CURRENT_TAGS": ":systemd:",
    }
    assert (run / "data" / "n3").read_text() == ("I:10000000\nE:SYSTEMD_ALIAS=/sys/subsystem/net/devices/enp65s0f0np0\nG:systemd\nQ:systemd\nV:1\n")
    assert sorted(os.listdir(run / "tags" / "systemd")) == ["n2", "n3"]

    sent.clear()
    assert u.settle(known) == known and sent == []  # an event that changed no netdev: nothing

    # the missing rail appears later (hotplug), then one goes (its db entry and tag go with it)
    net = sysfs(tmp_path, {"lo": 1, "eth0": 2, "enp65s0f0np0": 3, "enp193s0f0np0": 4})
    known = u.settle(known)
    assert [(parse(m)["ACTION"], parse(m)["INTERFACE"]) for m in sent] == [("add", "enp193s0f0np0")]
    sent.clear()
    net = sysfs(tmp_path, {"lo": 1, "eth0": 2, "enp193s0f0np0": 4})
    known = u.settle(known)
    assert [(parse(m)["ACTION"], parse(m)["INTERFACE"], parse(m)["IFINDEX"]) for m in sent] == [("remove", "enp65s0f0np0", "3")]
    assert not (run / "data" / "n3").exists() and sorted(os.listdir(run / "tags" / "systemd")) == ["n2", "n4"]

    # a rename (same ifindex, new name): the old name removed, then the new one added
    sent.clear()
    net = sysfs(tmp_path, {"lo": 1, "eth0": 2, "rename4": 4})
    known = u.settle(known)
    assert [(parse(m)["ACTION"], parse(m)["INTERFACE"]) for m in sent] == [("remove", "enp193s0f0np0"), ("add", "rename4")]
    assert "/rename4" in (run / "data" / "n4").read_text()
    assert [parse(m)["SEQNUM"] for m in sent] == ["5", "6"]  # one sequence over the daemon's life


def test_the_header_layout_is_libudevs():
    # struct monitor_netlink_header: char prefix[8]; then 8 unsigned ints
    assert udev.HEADER.size == 8 + 8 * 4
    msg = udev.message(["ACTION=add"])
    assert struct.unpack_from("=I", msg, 8)[0] == socket.htonl(0xFEEDCAFE)
    assert msg[40:] == b"ACTION=add\0"
