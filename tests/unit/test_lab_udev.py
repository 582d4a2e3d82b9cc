"""The lab's udev stand-in (lab/sim/linerate_lab/udev.py): the units enabled into a netdev's device
unit start when the netdev appears and stop when it goes, as systemd does on udev's events; the
device unit's name is systemd's escaping of the sysfs path (systemd.unit(5), checked against
systemd-escape(1)'s output for the same paths)."""
import os
import sys

from labsim import ROOT

sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))
from linerate_lab import udev  # noqa: E402


def test_device_unit_names_are_systemd_escaped():
    # systemd-escape --path --suffix=device /sys/subsystem/net/devices/<name> (systemd 252)
    assert udev.device_unit("enp65s0f0np0") == "sys-subsystem-net-devices-enp65s0f0np0.device"
    assert udev.device_unit("bond-rdma") == "sys-subsystem-net-devices-bond\\x2drdma.device"
    assert udev.device_unit(".hidden") == "sys-subsystem-net-devices-.hidden.device"
    assert udev.escape_path("/.x/y") == "\\x2ex-y"
    assert udev.device_unit("eth0.100") == "sys-subsystem-net-devices-eth0.100.device"
    assert udev.device_unit("a@b") == "sys-subsystem-net-devices-a\\x40b.device"


def enable(unit_dir, netdev, *units):
    wants = os.path.join(unit_dir, udev.device_unit(netdev) + ".wants")
    os.makedirs(wants, exist_ok=True)
    for u in units:
        os.symlink(f"/etc/systemd/system/{u.split('@')[0]}@.service", os.path.join(wants, u))


def test_units_start_when_their_netdev_appears_and_stop_when_it_goes(tmp_path):
    net, etc, lib = tmp_path / "net", tmp_path / "etc", tmp_path / "lib"
    net.mkdir()
    for name in ("lo", "eth0", "enp65s0f0np0"):
        (net / name).mkdir()
    enable(str(etc), "enp65s0f0np0", "linerate-rail@enp65s0f0np0.service", "linerate-roce-qos@enp65s0f0np0.service")
    enable(str(lib), "enp65s0f0np0", "linerate-rail@enp65s0f0np0.service")  # the same name twice: one start
    enable(str(etc), "enp193s0f0np0", "linerate-rail@enp193s0f0np0.service")
    calls = []
    act = lambda verb, units: calls.append((verb, units))  # noqa: E731
    dirs = (str(etc), str(lib))

    # coldplug: every interface present now; lo is not a device of interest, eth0 wants nothing
    known = udev.settle(set(), str(net), dirs, act)
    assert known == {"eth0", "enp65s0f0np0"}
    assert calls == [("start", ["linerate-rail@enp65s0f0np0.service", "linerate-roce-qos@enp65s0f0np0.service"]),
                     ("start", [])]

    # nothing changed: nothing done (an event for another interface attribute)
    calls.clear()
    assert udev.settle(known, str(net), dirs, act) == known and calls == []

    # the missing rail appears later (hotplug): only its units start
    (net / "enp193s0f0np0").mkdir()
    known = udev.settle(known, str(net), dirs, act)
    assert calls == [("start", ["linerate-rail@enp193s0f0np0.service"])]

    # a rename: the old name's units stop, the new name's (none enabled) would start
    calls.clear()
    (net / "enp65s0f0np0").rename(net / "rename5")
    known = udev.settle(known, str(net), dirs, act)
    assert calls == [("stop", ["linerate-rail@enp65s0f0np0.service", "linerate-roce-qos@enp65s0f0np0.service"]),
                     ("start", [])]
    assert known == {"eth0", "enp193s0f0np0", "rename5"}


def test_systemctl_queues_without_waiting_and_skips_an_empty_list(monkeypatch):
    ran = []
    monkeypatch.setattr(udev.subprocess, "run", lambda argv, check: ran.append(argv))
    udev.systemctl("start", [])
    udev.systemctl("stop", ["a.service", "b.service"])
    assert ran == [["systemctl", "stop", "--no-block", "a.service", "b.service"]]
