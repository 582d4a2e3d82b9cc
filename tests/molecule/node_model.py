#!/usr/bin/env python3
"""Write the fabric model of one lab node for a role's molecule scenario.

    node_model.py OUT_DIR NODE_NAME [--transport roce] [--nics 2] [--down RAIL ...]

The node comes from the lab's own hardware model (lab/sim/linerate_lab/
hardware.py), so the sim tools inside the container answer as they do in the
lab. Every rail is cabled (cable "up"); --down pulls a rail's cable.
Writes (and prints) the node's NICs as nics.json (device, netdev, mac, address) for the
scenario's prepare playbook, which creates the netdevs.
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "lab", "sim"))

from linerate_lab import hardware  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("node")
    ap.add_argument("--transport", default="roce", choices=("roce", "infiniband"))
    ap.add_argument("--nics", type=int, default=2)
    ap.add_argument("--down", type=int, action="append", default=[])
    a = ap.parse_args()
    cabling = [{"switch": f"leaf{r + 1}", "switch_port": "swp1"} for r in range(a.nics)]
    node = hardware.new_node(a.node, 1, a.transport, a.nics, 400, cabling)
    nics = []
    for rail, nic in enumerate(node["nics"]):
        if rail in a.down:
            nic["cable"] = "down"
        nics.append({"device": nic["device"], "netdev": nic["netdev"], "mac": nic["mac"],
                     "pci": nic["pci"], "cable": nic["cable"],
                     "address": f"192.168.{100 + rail}.11/24" if a.transport == "roce" else None})
    model = {"version": 1, "transport": a.transport, "nodes": {a.node: node}, "switches": {}, "faults": []}
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "fabric.json"), "w", encoding="utf-8") as f:
        json.dump(model, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(a.out_dir, "nics.json"), "w", encoding="utf-8") as f:
        json.dump(nics, f, indent=1)
        f.write("\n")
    print(json.dumps(nics))


if __name__ == "__main__":
    main()
