"""The lab's cabling: which NIC plugs into which switch port.

RoCE: a rail-optimised leaf/spine. Rail r of every node goes to leaf r+1;
leaves alternate platforms (NVUE, SONiC, ...) and each has two uplinks to a
spine running EOS. InfiniBand: the same rails on unmanaged IB switches
(managed by the subnet manager, not over SSH).
"""

LEAF_PLATFORMS = ("nvue", "sonic")
SPINE_PLATFORM = "eos"
UPLINKS_PER_LEAF = 2


def port_name(platform, index):
    """The name of front-panel port ``index`` (1-based) on a platform."""
    if platform == "nvue":
        return f"swp{index}"
    if platform == "sonic":
        return f"Ethernet{(index - 1) * 8}"
    if platform == "eos":
        return f"Ethernet{index}/1"
    if platform == "infiniband":
        return index
    raise ValueError(f"unknown switch platform {platform!r}")


def rail_address(rail, node_index):
    return f"192.168.{100 + rail}.{10 + node_index}/24"


def build(nodes, nics, transport, speed, loopback_base="127.0.1"):
    switches = {}
    cabling = {f"node{i}": [] for i in range(1, nodes + 1)}
    leaves = []
    for rail in range(nics):
        name = f"leaf{rail + 1}"
        platform = "infiniband" if transport == "infiniband" else LEAF_PLATFORMS[rail % len(LEAF_PLATFORMS)]
        leaves.append(name)
        switches[name] = {"platform": platform, "role": "leaf", "address": f"{loopback_base}.{rail + 1}", "port": 22, "ports": {}, "uplinks": []}
        for i in range(1, nodes + 1):
            port = port_name(platform, i)
            cabling[f"node{i}"].append({"switch": name, "switch_port": port, "address": rail_address(rail, i) if transport == "roce" else None})
            switches[name]["ports"][str(port)] = {"peer": f"node{i}:mlx5_{rail}", "speed_gbps": speed, "up": True}
    spine_platform = "infiniband" if transport == "infiniband" else SPINE_PLATFORM
    spine = {"platform": spine_platform, "role": "spine", "address": f"{loopback_base}.{nics + 1}", "port": 22, "ports": {}, "uplinks": []}
    switches["spine1"] = spine
    s_index = 0
    for li, leaf in enumerate(leaves):
        lp = switches[leaf]["platform"]
        for u in range(UPLINKS_PER_LEAF):
            s_index += 1
            leaf_port = port_name(lp, nodes + 1 + u)
            spine_port = port_name(spine_platform, s_index)
            switches[leaf]["uplinks"].append({"port": leaf_port, "peer": "spine1", "peer_port": spine_port})
            spine["uplinks"].append({"port": spine_port, "peer": leaf, "peer_port": leaf_port})
            switches[leaf]["ports"][str(leaf_port)] = {"peer": f"spine1:{spine_port}", "speed_gbps": speed, "up": True}
            spine["ports"][str(spine_port)] = {"peer": f"{leaf}:{leaf_port}", "speed_gbps": speed, "up": True}
    return {"switches": switches, "cabling": cabling}
