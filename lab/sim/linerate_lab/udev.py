"""The lab's udev, for network interfaces: what systemd does when udev announces
a netdev, in a container that runs no udev.

On a host, udev tags every network interface for systemd, and systemd keeps a
device unit per interface, ``sys-subsystem-net-devices-<netdev>.device``
(systemd.device(5); the name is the sysfs path systemd-escaped,
systemd.unit(5) "String Escaping"). When the device unit becomes active, at
boot (coldplug) or later (hotplug, a driver restart, a late rename), systemd
starts the units it wants (its ``.wants/`` directories: what ``systemctl
enable`` of a unit with ``WantedBy=<device unit>`` creates); when the
interface goes away, the units bound to it (``BindsTo=``) are stopped.

A container has no udev (systemd's ``udev_available()`` is false there), so
device units never activate and nothing starts a netdev-bound unit. This
daemon stands in: it follows the kernel's link table of the node's network
namespace (``ip -o monitor link``, with a rescan of ``/sys/class/net`` on
each event) and, for each interface that appears, starts the units in the
wants directories of its device unit; for each that disappears, stops them.
A rename reads as the old name leaving and the new one arriving, as udev's
``move`` event does for systemd. Started at boot (linerate-lab-udev.service),
it first coldplugs every interface present.
"""
import os
import subprocess
import sys

NET = "/sys/class/net"
# systemd's unit search path for a system manager, most specific first (systemd.unit(5))
UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
             "/lib/systemd/system", "/usr/lib/systemd/system")
VALID = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.")


def escape_path(path):
    """systemd-escape --path: the path without its outer slashes, '/' -> '-', a '.' that begins the
    result and every byte outside [A-Za-z0-9:_.] -> \\xNN (systemd.unit(5), unit_name_path_escape)."""
    text = "/".join(p for p in path.split("/") if p)
    out = ""
    for i, ch in enumerate(text):
        if ch == "/":
            out += "-"
        elif ch in VALID and not (i == 0 and ch == "."):
            out += ch
        else:
            out += "".join(f"\\x{b:02x}" for b in ch.encode())
    return out


def device_unit(netdev):
    return escape_path(f"/sys/subsystem/net/devices/{netdev}") + ".device"


def wanted_by(netdev, unit_dirs=UNIT_DIRS):
    """The units enabled into the netdev's device unit, in name order (one per name)."""
    units = set()
    for d in unit_dirs:
        wants = os.path.join(d, device_unit(netdev) + ".wants")
        try:
            units.update(os.listdir(wants))
        except OSError:
            continue
    return sorted(units)


def present(net=NET):
    try:
        return {n for n in os.listdir(net) if n != "lo"}
    except OSError:
        return set()


def changes(before, after):
    """(appeared, gone), each sorted."""
    return sorted(after - before), sorted(before - after)


def systemctl(verb, units):
    if units:
        # --no-block: queue the jobs as systemd does on a device event, never wait on them here
        subprocess.run(["systemctl", verb, "--no-block", *units], check=False)


def settle(known, net=NET, unit_dirs=UNIT_DIRS, act=systemctl):
    """Act on the difference between the interfaces known and those present now; returns the new set."""
    now = present(net)
    appeared, gone = changes(known, now)
    for name in gone:
        act("stop", wanted_by(name, unit_dirs))
    for name in appeared:
        act("start", wanted_by(name, unit_dirs))
    return now


def main(argv=None):
    # the monitor first, then the coldplug scan: an interface that appears in between is seen by both,
    # and the set difference acts on it once
    mon = subprocess.Popen(["ip", "-o", "monitor", "link"], stdout=subprocess.PIPE, text=True)
    known = settle(set())
    for _ in mon.stdout:
        known = settle(known)
    return mon.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
