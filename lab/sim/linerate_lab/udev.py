"""The lab's udev, for network interfaces: in a container that runs no udevd,
it tells systemd about the node's netdevs the way udevd does, so that
systemd's own device units work: ``sys-subsystem-net-devices-<netdev>.device``
becomes active when the netdev appears and inactive when it goes, systemd
starts the units enabled into it (``WantedBy=`` that device unit) and stops
the units bound to it (``BindsTo=``).

What udevd does for systemd, and so what this does for each netdev that
appears (``add``) or goes (``remove``), in the container's own network
namespace:

- its database entry ``/run/udev/data/n<ifindex>`` (``I:`` initialised at,
  ``G:``/``Q:`` the ``systemd`` tag, ``V:1``) and the tag index
  ``/run/udev/tags/systemd/n<ifindex>``, with the ``SYSTEMD_ALIAS`` property
  systemd's 99-systemd.rules gives a netdev: what systemd's device enumeration
  reads at boot and at every ``daemon-reload`` (sd-device's database format);
- a message to the udev monitor group (netlink ``NETLINK_KOBJECT_UEVENT``,
  group 2) in libudev's format: the ``libudev`` header (magic 0xfeedcafe,
  the header size, the properties' offset and length, the filter hashes; the
  tag bloom set to all ones, which every subscriber's filter passes) and the
  device's properties (``ACTION``, ``DEVPATH``, ``SUBSYSTEM=net``,
  ``INTERFACE``, ``IFINDEX``, ``SEQNUM``, ``USEC_INITIALIZED``,
  ``SYSTEMD_ALIAS``, ``TAGS``/``CURRENT_TAGS`` ``:systemd:``): what systemd's
  device monitor receives (sd-device's device-monitor.c), which it listens to
  only where ``/run/udev/control`` exists (node-init.sh creates it).

It follows the link table (``ip -o monitor link``, rescanning
``/sys/class/net`` on each event); a rename reads as the old name removed and
the new one added, as systemd sees udev's ``move``. At start it announces
every netdev present (udev's coldplug at boot). systemd supports device units
only where /sys is writable: labctl starts the nodes with
lab/sim/node-init.sh, and the service's ``ConditionPathIsReadWrite=/sys`` (as
systemd-udevd.service has) keeps it off elsewhere.
"""

import os
import socket
import struct
import subprocess
import sys
import time

NET = "/sys/class/net"
RUN = "/run/udev"
NETLINK_KOBJECT_UEVENT = 15
MONITOR_GROUP_UDEV = 2
UDEV_MONITOR_MAGIC = 0xFEEDCAFE
HEADER = struct.Struct("=8sIIIIIIII")  # monitor_netlink_header: prefix[8], magic (network order), 7 x unsigned


def present(net=NET):
    """{netdev: ifindex} of the interfaces in this network namespace (lo left out)."""
    out = {}
    try:
        names = os.listdir(net)
    except OSError:
        return out
    for name in names:
        if name == "lo":
            continue
        try:
            with open(os.path.join(net, name, "ifindex"), encoding="ascii") as f:
                out[name] = int(f.read().strip())
        except (OSError, ValueError):
            continue  # gone while we looked: the next event settles it
    return out


def changes(before, after):
    """(appeared, gone) as sorted lists of (netdev, ifindex); a name whose ifindex changed is both."""
    gone = sorted((n, i) for n, i in before.items() if after.get(n) != i)
    appeared = sorted((n, i) for n, i in after.items() if before.get(n) != i)
    return appeared, gone


def alias(netdev):
    """systemd's 99-systemd.rules for every netdev but lo: TAG+="systemd",
    ENV{SYSTEMD_ALIAS}+="/sys/subsystem/net/devices/$name" (the sys-subsystem-net-devices-<netdev>.device
    units are these aliases)."""
    return f"SYSTEMD_ALIAS=/sys/subsystem/net/devices/{netdev}"


def properties(action, netdev, ifindex, seqnum, usec, devpath=None):
    devpath = devpath or f"/devices/virtual/net/{netdev}"
    return [
        f"ACTION={action}",
        f"DEVPATH={devpath}",
        "SUBSYSTEM=net",
        f"INTERFACE={netdev}",
        f"IFINDEX={ifindex}",
        f"SEQNUM={seqnum}",
        f"USEC_INITIALIZED={usec}",
        alias(netdev),
        "TAGS=:systemd:",
        "CURRENT_TAGS=:systemd:",
    ]


def message(props):
    """A udev monitor message (libudev's wire format): header, then the properties NUL-separated."""
    body = b"".join(p.encode() + b"\0" for p in props)
    head = HEADER.pack(b"libudev\0", socket.htonl(UDEV_MONITOR_MAGIC), HEADER.size, HEADER.size, len(body), 0, 0, 0xFFFFFFFF, 0xFFFFFFFF)
    return head + body


def db_entry(usec, netdev):
    return f"I:{usec}\nE:{alias(netdev)}\nG:systemd\nQ:systemd\nV:1\n"


class Udev:
    def __init__(self, run=RUN, net=NET, send=None, clock=time.monotonic):
        self.run, self.net, self.clock = run, net, clock
        self.seqnum = 0
        self.send = send or self._send
        self.sock = None

    def _send(self, data):
        if self.sock is None:
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_KOBJECT_UEVENT)
            self.sock.bind((0, 0))
        self.sock.sendto(data, (0, MONITOR_GROUP_UDEV))

    def _paths(self, ifindex):
        return os.path.join(self.run, "data", f"n{ifindex}"), os.path.join(self.run, "tags", "systemd", f"n{ifindex}")

    def devpath(self, netdev):
        real = os.path.realpath(os.path.join(self.net, netdev))
        return real[len("/sys") :] if real.startswith("/sys/devices/") else None

    def add(self, netdev, ifindex):
        usec = int(self.clock() * 1e6)
        data, tag = self._paths(ifindex)
        for path, text in ((data, db_entry(usec, netdev)), (tag, "")):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + ".tmp", "w", encoding="ascii") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        self.seqnum += 1
        self.send(message(properties("add", netdev, ifindex, self.seqnum, usec, self.devpath(netdev))))

    def remove(self, netdev, ifindex):
        for path in self._paths(ifindex):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
        self.seqnum += 1
        self.send(message(properties("remove", netdev, ifindex, self.seqnum, int(self.clock() * 1e6))))

    def settle(self, known):
        """Announce the difference between the netdevs known and those present now; returns the new map."""
        now = present(self.net)
        appeared, gone = changes(known, now)
        for name, ifindex in gone:
            self.remove(name, ifindex)
        for name, ifindex in appeared:
            self.add(name, ifindex)
        return now


def main(argv=None):
    udev = Udev()
    # the monitor first, then the coldplug scan: an interface that appears in between is seen by both,
    # and the difference announces it once
    mon = subprocess.Popen(["ip", "-o", "monitor", "link"], stdout=subprocess.PIPE, text=True)
    known = udev.settle({})
    for _ in mon.stdout:
        known = udev.settle(known)
    return mon.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
