"""What NCCL decides in the simulated nccl-tests (linerate_lab/tools/nccl_tests.py) and what the fabric gives
it: the settings (/etc/nccl.conf under the environment), each rank's network (NET/IB or NET/Socket), GPU
Direct RDMA and rails, and the bus bandwidth of the ring over the simulated links."""

import os

from linerate_lab import model, pcie, rdma

SOCKET_GBYTES = 2.9  # what NET/Socket reaches over a host TCP stack, GB/s per node
NO_GDR_FACTOR = 0.72  # host bounce buffers instead of GPU Direct RDMA
COLL_EFFICIENCY = 0.94


# ------------------------------------------------------------ NCCL settings


def nccl_settings():
    """/etc/nccl.conf (and ~/.nccl.conf), then the environment on top, as NCCL reads them."""
    conf = {}
    for path in ("/etc/nccl.conf", os.path.expanduser("~/.nccl.conf")):
        try:
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line and not line.startswith("#") and "=" in line:
                        key, value = line.split("=", 1)
                        conf[key.strip()] = value.strip()
        except OSError:
            pass
    for key, value in os.environ.items():
        if key.startswith("NCCL_"):
            conf[key] = value
    return conf


def read_text(path):
    """The text of ``path``, or None where it cannot be read (a tuner config NCCL_TUNER_CONFIG_FILE names)."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def match_list(spec, names):
    """NCCL's device/interface filter: ``a,b`` prefixes, ``=a,b`` exact, ``^a`` excludes."""
    if not spec:
        return list(names)
    exclude = spec.startswith("^")
    spec = spec.lstrip("^")
    exact = spec.startswith("=")
    spec = spec.lstrip("=")
    wanted = [w.split(":")[0] for w in spec.split(",") if w]

    def hit(name):
        return any(name == w if exact else name.startswith(w) for w in wanted)

    return [n for n in names if hit(n) != exclude]


def socket_interface(spec):
    names = rdma.list_netdevs()
    if not spec:
        names = [n for n in names if n != "lo" and not n.startswith("docker")]
    for name in match_list(spec, names):
        state = rdma.netdev_state(name)
        if state["ipv4"]:
            return name, state["ipv4"][0]
    return None, None


# NCCL's path types, nearest first (topoPathTypeStr of src/graph/topo.cc); NCCL_NET_GDR_LEVEL names one
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS")
DEFAULT_NET_GDR_LEVEL = "PXB"  # src/graph/paths.cc: netGdrLevel = PATH_PXB unless NCCL_NET_GDR_LEVEL is set


def gdr_path(node, devices):
    """NCCL's path type from the nearest GPU to the NICs it uses: PIX for a NIC behind a GPU's PCIe switch
    (linerate_lab.pcie), PHB through a host bridge of the GPU's NUMA node, else SYS."""
    gpus = node.get("gpus", 0)
    if any((pcie.paired_nic(node, g) or {}).get("device") in devices for g in range(gpus)):
        return "PIX"
    gpu_numa = {0 if g < max(1, gpus // 2) else 1 for g in range(gpus)}
    return "PHB" if any(n.get("numa_node") in gpu_numa for n in node["nics"] if n["device"] in devices) else "SYS"


# ncclGetLevel's levelsOldToNew: the legacy integer levels
OLD_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")


def gdr_enabled(conf, path):
    """NCCL's rule: GDR when the GPU-NIC path is no farther than the level. ncclGetLevel matches the names
    exactly (strcmp), maps a legacy integer (levelsOldToNew), and leaves the default for anything else."""
    level = str(conf.get("NCCL_NET_GDR_LEVEL") or "")
    if level not in PATH_TYPES:
        digits = level[: len(level) - len(level.lstrip("0123456789"))]
        level = OLD_LEVELS[min(int(digits), len(OLD_LEVELS) - 1)] if digits else DEFAULT_NET_GDR_LEVEL
    return PATH_TYPES.index(path) <= PATH_TYPES.index(level)


def local_info(conf, rank, nodename):
    m = model.load()
    node = model.node(m)
    cabled = [n["device"] for n in node["nics"]]
    if_name, if_ip = socket_interface(conf.get("NCCL_SOCKET_IFNAME"))
    info = {
        "rank": rank,
        "host": nodename,
        "pid": os.getpid(),
        "if": if_name,
        "ip": if_ip,
        "cabled": cabled,
        "gpus": node.get("gpus", 8),
        "hca_spec": conf.get("NCCL_IB_HCA"),
        "ib": [],
        "net": "Socket",
        "gdr": False,
        "modules": list(node.get("modules") or []),
        "peermem": "nvidia_peermem" in (node.get("modules") or []),
    }
    gid_index = conf.get("NCCL_IB_GID_INDEX")
    tc = conf.get("NCCL_IB_TC")
    if conf.get("NCCL_IB_DISABLE", "0") != "1":
        for dev in match_list(conf.get("NCCL_IB_HCA"), cabled):
            port = rdma.local_port(dev, 1, None, int(tc) if tc else None)
            if port.get("error"):
                continue  # NCCL only uses ports in state ACTIVE
            if gid_index not in (None, "", "-1"):
                idx = int(gid_index)
            else:  # NCCL >= 2.21 picks the RoCE v2 IPv4 GID itself
                idx = next((g[0] for g in port["gids"] if g[2] == "v2" and g[3]), 0)
            port = rdma.local_port(dev, 1, idx, int(tc) if tc else None)
            info["ib"].append(port)
    if info["ib"]:
        info["net"] = "IB"
        info["gdr"] = info["peermem"] and gdr_enabled(conf, gdr_path(node, {p["device"] for p in info["ib"]}))
    info["p2p_off"] = conf.get("NCCL_P2P_DISABLE") == "1" and conf.get("NCCL_SHM_DISABLE") == "1"
    return info


def rank_rails(node, info, gpu_ids):
    """The rail each of a rank's GPUs sends through, as NCCL picks it: the admitted NIC nearest the GPU -
    the one behind its PCIe switch (linerate_lab.pcie), else one on its NUMA node (gdr_path's halves),
    else any - and between equally near NICs the one fewer of the node's GPUs took so far, in GPU order
    (so every rank of the node, deciding alone, makes the same assignment)."""
    admitted = [p["device"] for p in info["ib"]]
    if not admitted:
        return []
    gpus = max(node.get("gpus", 0), max(gpu_ids, default=0) + 1)
    half = max(1, gpus // 2)
    numa_of = {n["device"]: n.get("numa_node") for n in node["nics"]}
    taken, rail = {d: 0 for d in admitted}, {}
    for g in range(gpus):
        near = (pcie.paired_nic(node, g) or {}).get("device")
        same = [d for d in admitted if numa_of.get(d) == (0 if g < half else 1)]
        pool = [near] if near in admitted else same or admitted
        rail[g] = min(pool, key=lambda d: (taken[d], admitted.index(d)))
        taken[rail[g]] += 1
    return [rail[g] for g in gpu_ids]


# ------------------------------------------------------------ the physics


def by_node(infos):
    """The ranks' infos merged per host, in the order the hosts' first ranks come: each node's NICs
    (the union of what its ranks admit), its GPUs (the sum) and its ranks' own rails."""
    nodes = {}
    for i in infos:
        n = nodes.get(i["host"])
        if n is None:
            n = nodes[i["host"]] = dict(i, ib=list(i["ib"]), gpus=0, ranks=[])
        for p in i["ib"]:
            if p["device"] not in {q["device"] for q in n["ib"]}:
                n["ib"].append(p)
        n["gpus"] += i["gpus"]
        n["net"] = "IB" if n["net"] == "IB" and i["net"] == "IB" else "Socket"
        n["gdr"] = n["gdr"] and i["gdr"]
        n["ranks"].append(i)
    return list(nodes.values())


def loopback_busbw(node):
    """One node, P2P and SHM off: every rank sends through its own rail (``rail``, else the node's first)
    to the switch and back in; the rail that most ranks share at the lowest rate bounds the ring."""
    share = {}
    for r in node["ranks"]:
        for dev in r.get("rails") or [node["ib"][0]["device"]]:
            share[dev] = share.get(dev, 0) + r["gpus"] / max(1, len(r.get("rails") or [1]))
    per_rank = []
    for p in node["ib"]:
        if p["device"] in share:
            link = rdma.path(p, p, p["active_mtu"])
            per_rank.append(0.0 if link["error"] else link["gbps"] / share[p["device"]])
    return min(per_rank) / 8 * COLL_EFFICIENCY if per_rank else 0.0


def decide(infos):
    """Rank 0's view of the job: network, GDR, per-rank errors, bus bandwidth (GB/s)."""
    ranks = infos
    infos = by_node(ranks)
    nodes = len(infos)
    verdict = {
        "net": "IB" if all(i["net"] == "IB" for i in infos) else "Socket",
        "errors": {},
        "gdr": all(i["gdr"] for i in infos),
        "busbw": 0.0,
        "hosts": [i["host"] for i in ranks],
        "pids": [i["pid"] for i in ranks],
        "buses": [b for i in ranks for b in i.get("buses") or []],
        "nodes": [i["host"] for i in infos],
        "nranks_gpu": sum(i["gpus"] for i in infos),
        "rails": {},
    }
    if nodes == 1:
        if verdict["net"] == "IB" and all(r.get("p2p_off") for r in ranks) and infos[0]["gpus"] > 1:
            verdict["busbw"] = loopback_busbw(infos[0])  # the NET loopback test
            verdict["loopback"] = True
            if not verdict["gdr"]:
                verdict["busbw"] *= NO_GDR_FACTOR
        else:
            verdict["busbw"] = 370.0  # NVLink inside one node
        return verdict
    if verdict["net"] == "Socket":
        verdict["busbw"] = SOCKET_GBYTES
        return verdict
    capacity = []
    for k, a in enumerate(infos):
        b = infos[(k + 1) % nodes]
        node_rate = 0.0
        for pa in a["ib"]:
            pb = next((p for p in b["ib"] if p["device"] == pa["device"]), None) or (b["ib"][0] if b["ib"] else None)
            if pb is None:
                continue
            # both directions of the ring link; NCCL uses min(local, remote) MTU
            mtu = min(pa["active_mtu"], pb["active_mtu"])
            for x, y in ((pa, pb), (pb, pa)):
                link = rdma.path(x, y, mtu)
                if link["error"]:
                    who = link["side"]["node"] if link["error"] == "gid" else x["node"]
                    verdict["errors"].setdefault(
                        who,
                        {
                            "kind": link["error"],
                            "device": link["side"]["device"],
                            "peer_ip": next((i["ip"] for i in infos if i["host"] == y["node"]), None),
                            "where": link.get("where"),
                        },
                    )
                    continue
                key = f"{x['node']}:{x['device']}"
                verdict["rails"][key] = min(verdict["rails"].get(key, link["gbps"]), link["gbps"])
        for pa in a["ib"]:
            node_rate += verdict["rails"].get(f"{pa['node']}:{pa['device']}", 0.0)
        # the node's receive side is bounded by its own ports too
        capacity.append(node_rate)
    if verdict["errors"]:
        return verdict
    # Every channel crosses every node: the slowest rail bounds the ring.
    rails_min = min(verdict["rails"].values()) if verdict["rails"] else 0.0
    nics = min(len(i["ib"]) for i in infos)
    busbw = min(min(capacity), nics * rails_min) / 8 * COLL_EFFICIENCY
    if not verdict["gdr"]:
        busbw *= NO_GDR_FACTOR
    verdict["busbw"] = busbw
    verdict["nics"] = nics
    return verdict
