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
# The GPU driver's device files (nvidia.ko makes /dev/nvidia<N>, char 195:N, and /dev/nvidiactl, 195:255),
# one per simulated GPU of this node in the fabric model: Slurm's gres/gpu knows a GPU by its file
# (lab/slurmlab.py gres.conf). Nothing can open them: there is no driver behind them.
# Likewise the RDMA devices' verbs files (ib_uverbs makes /dev/infiniband/uverbs<N>, char 231:192+N), one
# per NIC of the node whose driver announces it: what a job (a pod with its RDMA resource) opens; the
# job preflight counts them (roles/job_preflight).
set -- $(python3 -c 'import json, socket
node = json.load(open("/var/lib/linerate-lab/fabric.json"))["nodes"].get(socket.gethostname(), {})
print(node.get("gpus", 0), sum(1 for nic in node.get("nics", []) if not nic.get("netdev_missing")))' \
    2>/dev/null || echo 0 0)
n=${1:-0}; nics=${2:-0}
i=0
while [ "$i" -lt "$n" ]; do
    [ -e "/dev/nvidia$i" ] || mknod -m 0666 "/dev/nvidia$i" c 195 "$i"
    i=$((i + 1))
done
[ "$n" -eq 0 ] || [ -e /dev/nvidiactl ] || mknod -m 0666 /dev/nvidiactl c 195 255
i=0
[ "$nics" -eq 0 ] || mkdir -p /dev/infiniband
while [ "$i" -lt "$nics" ]; do
    [ -e "/dev/infiniband/uverbs$i" ] || mknod -m 0666 "/dev/infiniband/uverbs$i" c 231 $((192 + i))
    i=$((i + 1))
done
# systemd subscribes to udev's monitor only where udevd runs (sd-device: /run/udev/control exists)
mkdir -p /run/udev && : > /run/udev/control
exec /usr/bin/python3 -c 'import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(24, 21, 0, 0, 0)  # PR_CAPBSET_DROP CAP_SYS_ADMIN
os.execv("/sbin/init", ["/sbin/init"])'
