"""The operators' side of the Kubernetes rendering: network-operator, Multus, nv-ipam, GPU Operator.

- ``nic_cluster_policy``: network-operator's ``NicClusterPolicy`` (OFED driver, RDMA resources per
  rail, Multus, the CNI plugins, nv-ipam);
- ``network_attachments``: one Multus ``NetworkAttachmentDefinition`` per rail, its CNI and IPAM
  (nv-ipam's pool of the rail, or whereabouts);
- ``ip_pools``: nv-ipam's pools, one per rail: an ``IPPool`` for an L2 rail (every node's rail
  address in one subnet: each node gets a block of it), a ``CIDRPool`` for an L3 rail (each node's
  rail address in its own prefix: that prefix is the node's, with its own gateway, and the pods
  route to the other nodes' prefixes through it), as nv-ipam's README describes them;
- ``ipam_problems``: what the rails' addressing cannot give the chosen IPAM, every problem at once;
- ``cluster_policy``: GPU Operator's ``ClusterPolicy`` with GPUDirect RDMA (``driver.rdma``).

Inputs are ``k8s_render``'s checked options and rails. Stdlib only.
"""

import ipaddress
import json

from ansible_collections.linerate.fabric.plugins.module_utils.intent.k8s_base import OPERATOR_REPOSITORY, SUPPORTED, gpu_node_selector, name, resource

CNI_VERSION = "0.3.1"
# CNI per transport: macvlan needs an Ethernet parent, ipoib an IPoIB one.
CNI_AUTO = {"roce": "macvlan", "infiniband": "ipoib"}
SRIOV_CNI = {"roce": "sriov", "infiniband": "ib-sriov"}
# nv-ipam's image in network-operator's registry (its NicClusterPolicy component nvIpam).
NV_IPAM_IMAGE = "nvidia-k8s-ipam"


def _ranges(addresses: list) -> list:
    """Consecutive addresses as nv-ipam exclusion ranges ({startIP, endIP}, both inclusive)."""
    out = []
    for ip in sorted({ipaddress.ip_address(a) for a in addresses}):
        if out and int(ip) == int(ipaddress.ip_address(out[-1]["endIP"])) + 1:
            out[-1]["endIP"] = str(ip)
        else:
            out.append({"startIP": str(ip), "endIP": str(ip)})
    return out


def _supernet(networks: list):
    """The smallest network holding every one of ``networks``."""
    nets = [ipaddress.ip_network(n) for n in networks]
    net = nets[0]
    while not all(n.subnet_of(net) for n in nets):
        net = net.supernet()
    return net


def _usable(net) -> int:
    """Addresses a pod can have in ``net`` (IPv4: not the network or broadcast address, from /30 up)."""
    return net.num_addresses - 2 if net.version == 4 and net.prefixlen < 31 else net.num_addresses


def ipam_problems(o: dict, rail_list: list, hosts: dict) -> list:
    """Every problem of the rails' addressing for ``o["ipam"]``: key, value, what is allowed."""
    p = []
    for rail in rail_list:
        where = f"rdma_ports[{rail['index']}].address"
        if rail["layer"] == "l3" and o["ipam"] == "whereabouts":
            p.append(
                f"k8s_render_ipam: 'whereabouts' is not allowed (allowed: nv-ipam: rail {rail['index']} is "
                "an L3 rail, each node's address in its own prefix, and whereabouts gives a "
                "NetworkAttachmentDefinition one range for every node; nv-ipam's CIDRPool gives each node "
                "its own prefix and gateway)"
            )
        if rail["layer"] == "l2":
            if o["ipam"] != "nv-ipam":
                continue
            net = ipaddress.ip_network(rail["subnet"])
            most = (_usable(net) - len(rail["addresses"])) // max(1, len(hosts))
            if most < 1:
                first = sorted(rail["hosts"])[0]
                p.append(
                    f"{first}: {where}: {rail['hosts'][first]!r} is not allowed (allowed: the address with the "
                    f"rail subnet's prefix length: {net} has no address for a pod beside the nodes' own)"
                )
            elif o["ipam_block_size"] > most:
                p.append(
                    f"k8s_render_ipam_block_size: {o['ipam_block_size']} is not allowed (allowed: 1..{most}: rail "
                    f"{rail['index']}'s subnet {net} gives each of {len(hosts)} nodes a block of its "
                    f"{_usable(net)} addresses, less the nodes' own)"
                )
            continue
        lengths = sorted({ipaddress.ip_network(n).prefixlen for n in rail["networks"].values()})
        if len(lengths) > 1:
            p.append(
                f"{where}: prefix lengths {lengths} are not allowed (allowed: one prefix length on every "
                f"node of L3 rail {rail['index']}: nv-ipam's CIDRPool gives every node a prefix of one size, "
                "perNodeNetworkPrefix)"
            )
            continue
        for host, network in sorted(rail["networks"].items()):
            net = ipaddress.ip_network(network)
            address = rail["hosts"][host]
            if _usable(net) < 3:
                p.append(
                    f"{host}: {where}: {address!r} is not allowed (allowed: a prefix of /30 or shorter on an L3 "
                    "rail: the node's prefix holds the gateway, the node's own address and its pods')"
                )
                continue
            index = o["ipam_gateway_index"]
            if index >= net.num_addresses - 1:
                p.append(
                    f"k8s_render_ipam_gateway_index: {index} is not allowed (allowed: 1..{net.num_addresses - 2}, "
                    f"an address of {host}'s rail {rail['index']} prefix {net})"
                )
            elif str(net[index]) == address.split("/")[0]:
                p.append(
                    f"k8s_render_ipam_gateway_index: {index} is not allowed (allowed: the index of the leaf's "
                    f"address in each node's prefix: {net[index]} is {host}'s own rail {rail['index']} address)"
                )
    return p


def _ipam(o: dict, rail: dict) -> dict:
    if o["ipam"] == "whereabouts":
        return {"type": "whereabouts", "range": rail["subnet"], "exclude": [f"{a}/32" for a in sorted(rail["addresses"], key=ipaddress.ip_address)]}
    ipam = {"type": "nv-ipam", "poolName": name(o, f"rail{rail['index']}")}
    if rail["layer"] == "l3":
        ipam["poolType"] = "cidrpool"
    return ipam


def _cni(eff: dict, o: dict, rail: dict, mtu: int) -> dict:
    transport = eff["transport"]
    conf = {"cniVersion": CNI_VERSION, "name": name(o, f"rail{rail['index']}")}
    if o["rdma_resources"] == "sriov":
        conf["type"] = SRIOV_CNI[transport]
    else:
        kind = CNI_AUTO[transport] if o["cni"] == "auto" else o["cni"]
        conf["type"] = kind
        if kind == "host-device":
            conf["device"] = rail["netdev"]
        else:
            conf["master"] = rail["netdev"]
        if kind == "macvlan":
            conf["mode"] = "bridge"
            conf["mtu"] = mtu
    conf["ipam"] = _ipam(o, rail)
    return conf


def _device_plugin_config(o: dict, rail_list: list) -> dict:
    if o["rdma_resources"] == "rdma_shared":
        return {
            "configList": [
                {"resourceName": f"{o['name']}_rail{r['index']}", "rdmaHcaMax": o["rdma_hca_max"], "selectors": {"vendors": ["15b3"], "ifNames": [r["netdev"]]}}
                for r in rail_list
            ]
        }
    return {
        "resourceList": [
            {
                "resourcePrefix": "nvidia.com",
                "resourceName": f"{o['name']}_rail{r['index']}",
                "selectors": {"vendors": ["15b3"], "pfNames": [r["netdev"]], "isRdma": True},
            }
            for r in rail_list
        ]
    }


def nic_cluster_policy(eff: dict, o: dict, rail_list: list) -> dict:
    version = "network-operator-" + SUPPORTED["network-operator"]
    component = {"repository": OPERATOR_REPOSITORY, "version": version}
    spec = {}
    if o["ofed_driver"] == "container":
        spec["ofedDriver"] = {"image": "doca-driver", "repository": OPERATOR_REPOSITORY, "version": o["ofed_version"], "upgradePolicy": {"autoUpgrade": False}}
    config = json.dumps(_device_plugin_config(o, rail_list), indent=2, sort_keys=False)
    if o["rdma_resources"] == "rdma_shared":
        spec["rdmaSharedDevicePlugin"] = dict(image="k8s-rdma-shared-dev-plugin", config=config, **component)
    else:
        spec["sriovDevicePlugin"] = dict(image="sriov-network-device-plugin", config=config, **component)
    secondary = {"cniPlugins": dict(image="plugins", **component), "multus": dict(image="multus-cni", **component)}
    if eff["transport"] == "infiniband" and o["rdma_resources"] == "rdma_shared" and o["cni"] in ("auto", "ipoib"):
        secondary["ipoib"] = dict(image="ipoib-cni", **component)
    spec["secondaryNetwork"] = secondary
    if o["ipam"] == "nv-ipam":
        # the validation webhook needs cert-manager; the pools are checked here before they are written
        spec["nvIpam"] = dict(image=NV_IPAM_IMAGE, enableWebhook=False, **component)
    # the operator acts on the one NicClusterPolicy named nic-cluster-policy
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"}, "spec": spec}


def network_attachments(eff: dict, o: dict, rail_list: list) -> list:
    out = []
    for rail in rail_list:
        meta = {"name": name(o, f"rail{rail['index']}"), "namespace": o["namespace"]}
        if o["rdma_resources"] == "sriov":
            meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": resource(o, rail)}
        conf = _cni(eff, o, rail, eff["mtu"]["host"])
        out.append(
            {
                "apiVersion": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "metadata": meta,
                "spec": {"config": json.dumps(conf, indent=2, sort_keys=False) + "\n"},
            }
        )
    return out


def ip_pools(o: dict, rail_list: list) -> list:
    """nv-ipam's pool of each rail: IPPool (L2 rail) or CIDRPool (L3 rail), the nodes' own addresses excluded."""
    out = []
    for rail in rail_list:
        meta = {"name": name(o, f"rail{rail['index']}"), "namespace": o["ipam_namespace"]}
        exclusions = _ranges(rail["addresses"])
        if rail["layer"] == "l2":
            spec = {"subnet": rail["subnet"], "perNodeBlockSize": o["ipam_block_size"], "exclusions": exclusions, "nodeSelector": gpu_node_selector()}
            out.append({"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool", "metadata": meta, "spec": spec})
            continue
        networks = rail["networks"]
        cidr = _supernet(list(networks.values()))
        prefix = ipaddress.ip_network(next(iter(networks.values()))).prefixlen
        names = o.get("node_names") or {}
        spec = {
            "cidr": str(cidr),
            "perNodeNetworkPrefix": prefix,
            "gatewayIndex": o["ipam_gateway_index"],
            "staticAllocations": [{"nodeName": str(names.get(h, h)), "prefix": networks[h]} for h in sorted(networks)],
            "exclusions": exclusions,
            "routes": [{"dst": str(cidr)}],
            "nodeSelector": gpu_node_selector(),
        }
        out.append({"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "CIDRPool", "metadata": meta, "spec": spec})
    return out


def cluster_policy(o: dict) -> dict:
    """GPU Operator's ClusterPolicy: its driver container with GPUDirect RDMA (nvidia-peermem), on the
    host's MOFED (``useHostMofed``) where linerate pins it, or on network-operator's driver container;
    ``gpu_driver: host``: the GPU driver and nvidia-peermem are the host's (role nvidia_peermem)."""
    driver = {"enabled": o["gpu_driver"] == "container"}
    if driver["enabled"]:
        driver["rdma"] = {"enabled": True, "useHostMofed": o["ofed_driver"] == "host"}
    on = {"enabled": True}
    spec = {
        "operator": {},
        "daemonsets": {},
        "driver": driver,
        "toolkit": dict(on),
        "devicePlugin": dict(on),
        "dcgm": dict(on),
        "dcgmExporter": dict(on),
        "gfd": dict(on),
        "nodeStatusExporter": {"enabled": False},
    }
    # the operator acts on one ClusterPolicy; the Helm chart names it cluster-policy
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}, "spec": spec}
