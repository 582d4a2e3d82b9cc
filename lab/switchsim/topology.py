#!/usr/bin/env python3
"""Write a fabric.json with the lab's default switch topology (for tests and demos).

    lab/switchsim/topology.py --state DIR [--nodes 2] [--port auto|N] [--base 127.0.1.]
                         [--inventory hosts.yml]

leaf1 (nvue), leaf2 (sonic), spine1 (eos); node<i> mlx5_0 -> leaf1 swp<i>,
mlx5_1 -> leaf2 Ethernet<8(i-1)>; each leaf has two uplinks to spine1
(leaf1 -> Ethernet1/1, Ethernet2/1; leaf2 -> Ethernet3/1, Ethernet4/1).
The lead's lab/up writes the full model; this only holds what the switch
simulators and the switch playbooks need.
"""

import argparse
import json
import os
import sys

PLATFORMS = {"leaf1": "nvue", "leaf2": "sonic", "spine1": "eos"}


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sim"))
from linerate_lab.topology import port_name as leaf_port  # noqa: E402  (one port naming for the lab)


def port_free(addresses, port):
    """Whether every address can listen on port (sshd on 0.0.0.0:22 makes 22 busy everywhere)."""
    import socket

    for a in addresses:
        s = socket.socket()
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((a, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def pick_port(addresses, preferred=22, fallback=2222):
    """22 when free on all addresses, else the first free port from fallback up."""
    if port_free(addresses, preferred):
        return preferred
    for port in range(fallback, fallback + 100):
        if port_free(addresses, port):
            return port
    raise RuntimeError(f"no free port for {addresses}")


def topology(nodes=2, base="127.0.1.", port=22, speed=400):
    sw = {name: {"platform": plat, "address": f"{base}{n + 1}", "port": port, "ports": {}} for n, (name, plat) in enumerate(PLATFORMS.items())}
    model = {"version": 1, "transport": "roce", "nodes": {}, "switches": sw, "faults": []}
    uplinks = {}
    for i in range(1, nodes + 1):
        nics = []
        for rail, leaf in enumerate(("leaf1", "leaf2")):
            p = leaf_port(sw[leaf]["platform"], i)
            dev = f"mlx5_{rail}"
            sw[leaf]["ports"][p] = {"peer": f"node{i}:{dev}", "speed_gbps": speed}
            nics.append(
                {
                    "device": dev,
                    "netdev": f"enp{65 + rail}s0f0np0",
                    "port": 1,
                    "speed_gbps": speed,
                    "width": 4,
                    "cable": "up",
                    "switch": leaf,
                    "switch_port": p,
                    "link_layer": "Ethernet",
                }
            )
        model["nodes"][f"node{i}"] = {"nics": nics}
    spine_i = 0
    for leaf in ("leaf1", "leaf2"):
        uplinks[leaf] = []
        for u in range(2):
            spine_i += 1
            lp = leaf_port(sw[leaf]["platform"], nodes + 1 + u)
            sp = leaf_port("eos", spine_i)
            sw[leaf]["ports"][lp] = {"peer": f"spine1:{sp}", "speed_gbps": speed}
            sw["spine1"]["ports"][sp] = {"peer": f"{leaf}:{lp}", "speed_gbps": speed}
            uplinks[leaf].append({"port": lp, "peer": "spine1", "peer_port": sp})
    return model, uplinks


def inventory(model, uplinks, known_hosts, username="admin", password_var="ansible_password"):
    """An Ansible YAML inventory (dict) for the topology: switches + nodes' cabling."""
    switches = {}
    for name, s in model["switches"].items():
        h = {
            "ansible_host": s["address"],
            "ansible_port": s["port"],
            "switch_platform": s["platform"],
            "switch_role": "spine" if name.startswith("spine") else "leaf",
        }
        if uplinks.get(name):
            h["switch_uplinks"] = uplinks[name]
        switches[name] = h
    nodes = {}
    for n, spec in model["nodes"].items():
        nodes[n] = {
            "rdma_ports": [
                {"device": nic["device"], "netdev": nic["netdev"], "switch": nic["switch"], "switch_port": nic["switch_port"]} for nic in spec["nics"]
            ]
        }
    return {
        "all": {
            "children": {"switches": {"hosts": switches, "vars": {"switch_known_hosts": known_hosts, "ansible_user": username}}, "gpu_nodes": {"hosts": nodes}}
        }
    }


def write(state, nodes=2, port=22, base="127.0.1."):
    os.makedirs(state, exist_ok=True)
    model, uplinks = topology(nodes=nodes, base=base, port=port)
    with open(os.path.join(state, "fabric.json"), "w", encoding="utf-8") as f:
        json.dump(model, f, indent=1, sort_keys=True)
    return model, uplinks


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state", required=True)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--port", default="auto", help="SSH port of every switch, or 'auto': 22 if free, else 2222+")
    ap.add_argument("--base", default="127.0.1.")
    ap.add_argument("--inventory", help="also write a YAML inventory here")
    a = ap.parse_args(argv)
    port = pick_port([f"{a.base}{i}" for i in range(1, len(PLATFORMS) + 1)]) if a.port == "auto" else int(a.port)
    model, uplinks = write(a.state, a.nodes, port, a.base)
    print(f"switches on {a.base}1-{len(PLATFORMS)} port {port}")
    if a.inventory:
        import yaml  # ansible's dependency, present in the venv

        inv = inventory(model, uplinks, os.path.join(os.path.abspath(a.state), "switchsim", "known_hosts"))
        with open(a.inventory, "w", encoding="utf-8") as f:
            yaml.safe_dump(inv, f, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
