"""The InfiniBand lab: its model built from the inventory, and the subnet (ibsim) the nodes' HCAs sit on."""

import os
import sys

from labbase import HERE, LAB_ID, NETWORK, PREFIX, STATE, node_ip

IBSIM_DIR = os.path.join(STATE, "ibsim")


def ibsimlab():
    sys.path.insert(0, os.path.join(HERE, "ibsim"))
    import ibsimlab as mod

    return mod


def ib_model_from_inventory(inventory_dir):
    """An InfiniBand lab is built to its inventory: the hosts, their HCAs with
    the GUIDs the inventory names, the cabling and the switches. ibsim's
    subnet is generated from the same inventory, so the node's ibstat and the
    subnet manager's view agree unless a fault is injected."""
    from linerate_lab import hardware

    isl = ibsimlab()
    inv = isl.load_inventory(os.path.join(inventory_dir, "hosts.yml"))
    ib = isl.model_from_inventory(inv)
    if not ib["nodes"]:
        raise SystemExit(f"lab: {inventory_dir}/hosts.yml has no host with rdma_ports")
    hostvars = inv.get("_meta", {}).get("hostvars", {})
    # The subnet (ibsim) the node tools read LIDs and port states from (subnet.py).
    m = {
        "version": 1,
        "transport": "infiniband",
        "nodes": {},
        "switches": {},
        "faults": [],
        "inventory": os.path.basename(inventory_dir),
        "subnet": {"address": ibsim_address(), "port": isl.DEFAULT_PORT},
    }
    names = sorted(ib["nodes"], key=lambda n: (len(n), n))
    for i, name in enumerate(names, start=1):
        want = ib["nodes"][name]["nics"]
        node = hardware.new_node(name, i, "infiniband", len(want), want[0]["speed_gbps"], [(n["switch"], n["switch_port"]) for n in want])
        for nic, w in zip(node["nics"], want):
            nic.update(
                device=w["device"],
                netdev=w.get("netdev") or nic["netdev"],
                node_guid=w["node_guid"],
                port_guid=w["port_guid"],
                sys_image_guid=w["node_guid"],
                width=w["width"],
            )
        node["mgmt_ip"] = node_ip(i)
        m["nodes"][name] = node
    for name, sw in ib["switches"].items():
        m["switches"][name] = dict(
            sw,
            platform="infiniband",
            address=None,
            port=None,
            role=hostvars.get(name, {}).get("switch_role", "leaf"),
            uplinks=hostvars.get(name, {}).get("switch_uplinks") or [],
        )
    return m, ib


def ibsim_address():
    return node_ip(240)


def start_ibsim(ib_fabric, tag):
    """The subnet: ibsim in a container on the lab network (remote mode), so
    only the lab's nodes reach it. Idempotent."""
    isl = ibsimlab()
    if isl.read_pid(IBSIM_DIR):
        return False
    isl.start(
        IBSIM_DIR,
        ib_fabric,
        port=isl.DEFAULT_PORT,
        container={
            "name": PREFIX + "ibsim",
            "network": NETWORK,
            "ip": ibsim_address(),
            "image": tag,
            "labels": {"linerate-lab-id": LAB_ID or "default"},
            "containers_conf": os.path.join(HERE, "containers.conf"),
        },
    )  # ready or exited: waits.py
    return True
