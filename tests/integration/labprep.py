"""Bring the lab to the converged state verification expects, without the host/switch roles.

Verification runs after the host, switch and subnet-manager roles. Where this
branch is tested on its own, this module stands in for them and does
exactly what they leave behind, through the same interfaces:

- netdevs up at ``fabric.mtu.host`` with their rail addresses (kernel state);
- per NIC QoS in the model as the host tools write it (trust dscp, DSCP map,
  PFC on the no-drop priority, RDMA-CM ToS), ``nvidia_peermem`` loaded;
- switch ports' operational state as the switch simulators publish it (MTU,
  PFC priorities, trust);
- ``/etc/nccl.conf`` as the NCCL role writes it;
- the tool commands the lab's perftest / nccl-tests / openmpi packages
  install (wrappers around ``linerate_lab.tools``) where no package put them.

``converge(lab_env)`` is idempotent. ``LINERATE_VERIFY_PREP=site`` makes the
tests run ``playbooks/site.yml`` instead (once the roles are merged).
"""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "lab", "sim"))

TOOLS = {"ib_write_bw": "ib_write_bw", "ib_read_bw": "ib_read_bw",
         "all_reduce_perf": "all_reduce_perf", "all_gather_perf": "all_gather_perf",
         "ibv_devinfo": "ibv_devinfo"}
NO_DROP, DATA_DSCP, CNP_DSCP, CNP_PRIO = 3, 26, 48, 6
HOST_MTU, SWITCH_MTU = 4200, 9216


def prefix():
    lab_id = os.environ.get("LINERATE_LAB_ID", "")
    return f"linerate-{lab_id + '-' if lab_id else ''}"


def podman(*args, check=True, input=None):
    env = dict(os.environ, CONTAINERS_CONF=os.path.join(REPO, "lab", "containers.conf"))
    res = subprocess.run(["podman", *args], text=True, capture_output=True, env=env, input=input, timeout=60)
    if check and res.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)}: {res.stderr.strip()}")
    return res


def node_exec(node, script, check=True):
    return podman("exec", "-i", prefix() + node, "sh", "-ec", script, check=check)


def wrapper(tool, module):
    return ("#!/bin/sh\n# lab stand-in for the packaged tool\n"
            "PYTHONPATH=/usr/lib/linerate-lab${PYTHONPATH:+:$PYTHONPATH} exec python3 -c "
            f"'import sys; from linerate_lab.tools import {module} as t; sys.exit(t.main(sys.argv[1:]))' \"$@\"\n")


def nccl_conf(m, name):
    hcas = ",".join(n["device"] for n in m["nodes"][name]["nics"])
    return ("# linerate: NCCL settings derived from the fabric intent\n"
            f"NCCL_IB_HCA={hcas}\nNCCL_IB_GID_INDEX=3\nNCCL_IB_TC={DATA_DSCP << 2}\n"
            "NCCL_SOCKET_IFNAME=eth0\nNCCL_NET_GDR_LEVEL=PHB\n")


def converge():
    from linerate_lab import model
    os.environ.setdefault("LINERATE_LAB_STATE", os.path.join(REPO, "lab", "state", "fabric"))
    with model.locked() as m:
        for name, node in m["nodes"].items():
            mods = node.setdefault("modules", [])
            if node.get("peermem_available", True) and "nvidia_peermem" not in mods:
                mods.append("nvidia_peermem")
            for nic in node["nics"]:
                nic["qos"] = {"trust": "dscp", "pfc": [1 if i == NO_DROP else 0 for i in range(8)],
                              "dscp2prio": {**{str(d): 0 for d in range(64)}, str(DATA_DSCP): NO_DROP,
                                            str(CNP_DSCP): CNP_PRIO}}
                nic["cma"] = {"roce_mode": "RoCE v2", "tos": DATA_DSCP << 2}
        for sw in m["switches"].values():
            for port in sw["ports"].values():
                port.update(mtu=SWITCH_MTU, pfc=[NO_DROP], trust="dscp")
        snapshot = json.loads(json.dumps(m))
    for name, node in snapshot["nodes"].items():
        lines = []
        for nic in node["nics"]:
            dev = nic["netdev"]
            lines.append(f"ip link set {dev} mtu {HOST_MTU} up")
            if nic.get("address"):
                lines.append(f"ip -4 addr show dev {dev} | grep -q ' {nic['address'].split('/')[0]}/' "
                             f"|| ip addr add {nic['address']} dev {dev}")
        for tool, module in TOOLS.items():
            path = f"/usr/local/bin/{tool}"
            lines.append(f"[ -e /usr/bin/{tool} ] || cat > {path} <<'EOF'\n{wrapper(tool, module)}EOF")
            lines.append(f"[ -e /usr/bin/{tool} ] || chmod 755 {path}")
        lines.append(f"cat > /etc/nccl.conf <<'EOF'\n{nccl_conf(snapshot, name)}EOF")
        node_exec(name, "\n".join(lines))
    return snapshot
