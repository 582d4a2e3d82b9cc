#!/bin/sh
# PID 1 of a lab node, before systemd (labctl's `podman run ... /bin/sh /usr/lib/linerate-lab/node-init.sh`).
#
# systemd supports device units only where /sys is writable (its udev_available(): podman mounts /sys
# read-only), and without device units nothing starts a unit bound to a netdev (linerate-rail@<netdev>,
# linerate-roce-qos@<netdev>). So: /sys itself becomes writable, every directory in it is bound back
# read-only (no node process can write the host's sysfs), and CAP_SYS_ADMIN, needed for that only, is
# dropped from the bounding set before systemd starts. The lab's udev (linerate_lab/udev.py) then
# announces the netdevs to systemd as udevd does. A container started without CAP_SYS_ADMIN (molecule)
# keeps /sys read-only and boots as before.
if mount -o remount,rw /sys 2>/dev/null; then
    for d in /sys/* /sys/fs/*; do
        case "$d" in /sys/fs|/sys/fs/cgroup) continue ;; esac
        [ -d "$d" ] || continue
        mount --bind "$d" "$d" && mount -o remount,bind,ro "$d" || { mount -o remount,ro /sys; break; }
    done
fi
# systemd subscribes to udev's monitor only where udevd runs (sd-device: /run/udev/control exists)
mkdir -p /run/udev && : > /run/udev/control
exec /usr/bin/python3 -c 'import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(24, 21, 0, 0, 0)  # PR_CAPBSET_DROP CAP_SYS_ADMIN
os.execv("/sbin/init", ["/sbin/init"])'
