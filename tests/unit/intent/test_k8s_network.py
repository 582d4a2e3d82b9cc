"""Kubernetes' network objects (plugins/module_utils/intent/k8s_network.py), rendered and validated offline
against the upstream schemas (tests/schemas/k8s/SOURCES.md; the validator: tests/unit/k8s_schemas.py):
- nv-ipam: an IPPool per L2 rail, a CIDRPool per L3 rail (each node's own prefix and gateway), the refusals;
- GPU Operator's ClusterPolicy with GPUDirect RDMA (driver.rdma.enabled, useHostMofed).
The jobs (Trainer v2, Kueue, the MPIJob): test_k8s_jobs.py; the pod and Multus: test_k8s_render.py."""

import copy
import json

import pytest

from ansible_collections.linerate.fabric.plugins.filter.k8s_render import k8s_render_filter
from k8s_schemas import validate
from intent.test_k8s_render import IMAGE, example, objects, render

L3_GPUS = 4


def l3_hosts(prefix=28, host_octet=2):
    """The example RoCE cabling on L3 rails: node n's rail r in 10.r.n.0/<prefix>, the node at .<host_octet>."""
    _eff, hosts = example("example-roce")
    out = {}
    for n, (host, ports) in enumerate(sorted(hosts.items()), start=1):
        out[host] = [dict(p, address=f"10.{r}.{n}.{host_octet}/{prefix}") for r, p in enumerate(ports)]
    return out


def problems(hosts=None, **options):
    eff, ex_hosts = example("example-roce")
    out = k8s_render_filter(eff, hosts or ex_hosts, {"image": IMAGE, **options})
    assert out["files"] == {}
    return out["problems"]


def test_l3_rails_get_a_cidrpool_each_with_every_nodes_own_prefix_and_gateway():
    eff, _hosts = example("example-roce")
    out = render(eff=eff, hosts=l3_hosts(), node_names={"gpu002": "gpu002.cluster.local"})
    objs = objects(out)
    pools = objs["network-operator/nv-ipam-pools.yaml"]
    assert [p["kind"] for p in pools] == ["CIDRPool"] * 8
    rail3 = pools[3]
    assert rail3["metadata"] == {"name": "linerate-rail3", "namespace": "nvidia-network-operator"}
    assert rail3["spec"]["cidr"] == "10.3.0.0/21" and rail3["spec"]["perNodeNetworkPrefix"] == 28
    assert rail3["spec"]["gatewayIndex"] == 1
    assert rail3["spec"]["staticAllocations"] == [
        {"nodeName": "gpu001", "prefix": "10.3.1.0/28"},
        {"nodeName": "gpu002.cluster.local", "prefix": "10.3.2.0/28"},
        {"nodeName": "gpu003", "prefix": "10.3.3.0/28"},
        {"nodeName": "gpu004", "prefix": "10.3.4.0/28"},
    ]
    assert rail3["spec"]["exclusions"] == [{"startIP": f"10.3.{n}.2", "endIP": f"10.3.{n}.2"} for n in range(1, 5)]
    assert rail3["spec"]["routes"] == [{"dst": "10.3.0.0/21"}]  # the other nodes' prefixes, via the gateway
    conf = json.loads(objs["multus/network-attachment-definitions.yaml"][3]["spec"]["config"])
    assert conf["ipam"] == {"type": "nv-ipam", "poolName": "linerate-rail3", "poolType": "cidrpool"}
    ncp = objs["network-operator/nicclusterpolicy.yaml"][0]["spec"]["nvIpam"]
    assert ncp == {"image": "nvidia-k8s-ipam", "enableWebhook": False, "repository": "nvcr.io/nvidia/mellanox", "version": "network-operator-v26.4.1"}
    for obj in pools + objs["multus/network-attachment-definitions.yaml"] + objs["network-operator/nicclusterpolicy.yaml"]:
        assert validate(obj) == [], (obj["kind"], validate(obj))


def test_a_wrong_pool_field_is_refused():
    eff, _hosts = example("example-roce")
    cidr = objects(render(eff=eff, hosts=l3_hosts()))["network-operator/nv-ipam-pools.yaml"][0]
    bad = copy.deepcopy(cidr)
    bad["spec"]["perNodeNetworkPrefix"] = "28"
    assert any("is not of type 'integer'" in e for e in validate(bad)), validate(bad)
    bad = copy.deepcopy(cidr)
    bad["spec"]["staticAllocations"][0]["gw"] = "10.0.1.1"
    assert any("staticAllocations[0].gw: unknown" in e for e in validate(bad)), validate(bad)
    pool = objects(render())["network-operator/nv-ipam-pools.yaml"][0]
    del pool["spec"]["perNodeBlockSize"]
    assert any("'perNodeBlockSize' is a required property" in e for e in validate(pool)), validate(pool)


@pytest.mark.parametrize(
    "change,options,expect",
    [
        ("l3", {"ipam": "whereabouts"}, "k8s_render_ipam: 'whereabouts' is not allowed (allowed: nv-ipam: rail 0 is an L3"),
        (
            "mixed",
            {},
            "gpu003: rdma_ports[0].address: '10.0.3.2/28' is not allowed (allowed: an address in 10.0.1.0/28, "
            "rail 0's subnet on gpu001, gpu002 (an L2 rail), or every node in its own prefix",
        ),
        ("p2p", {}, "gpu001: rdma_ports[0].address: '10.0.1.0/31' is not allowed (allowed: a prefix of /30 or shorter"),
        (
            "l3",
            {"ipam_gateway_index": 2},
            "k8s_render_ipam_gateway_index: 2 is not allowed (allowed: the index of the leaf's address in each node's prefix: 10.0.1.2 is gpu001's own",
        ),
        ("l3", {"ipam_gateway_index": 15}, "k8s_render_ipam_gateway_index: 15 is not allowed (allowed: 1..14"),
        ("lengths", {}, "rdma_ports[0].address: prefix lengths [27, 28] are not allowed (allowed: one prefix length"),
        (
            "l2",
            {"ipam_block_size": 64},
            "k8s_render_ipam_block_size: 64 is not allowed (allowed: 1..62: rail 0's subnet 192.168.0.0/24 gives each of 4 nodes a block",
        ),
    ],
)
def test_addressing_nv_ipam_cannot_serve_is_refused(change, options, expect):
    hosts = {"l3": l3_hosts(), "p2p": l3_hosts(prefix=31, host_octet=0), "l2": None}.get(change)
    if change == "mixed":
        hosts = l3_hosts()
        hosts["gpu002"][0]["address"] = "10.0.1.3/28"
    if change == "lengths":
        hosts = l3_hosts()
        hosts["gpu004"][0]["address"] = "10.0.4.2/27"
    found = problems(hosts, **options)
    assert any(p.startswith(expect) for p in found), found


def test_the_cluster_policy_turns_gpudirect_rdma_on_over_the_mofed_linerate_pins():
    policy = objects(render())["gpu-operator/clusterpolicy.yaml"][0]
    assert (policy["apiVersion"], policy["kind"], policy["metadata"]) == ("nvidia.com/v1", "ClusterPolicy", {"name": "cluster-policy"})
    assert policy["spec"]["driver"] == {"enabled": True, "rdma": {"enabled": True, "useHostMofed": True}}
    assert validate(policy) == []
    container = objects(render(ofed_driver="container", ofed_version="doca3.4.1-26.04-1.1.0.0-1"))
    assert container["gpu-operator/clusterpolicy.yaml"][0]["spec"]["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}
    host = objects(render(gpu_driver="host"))["gpu-operator/clusterpolicy.yaml"][0]
    assert host["spec"]["driver"] == {"enabled": False}  # the host's driver and nvidia_peermem role
    policy["spec"]["driver"]["rdma"]["useHostMOFED"] = policy["spec"]["driver"]["rdma"].pop("useHostMofed")
    assert any("driver.rdma.useHostMOFED: unknown" in e for e in validate(policy)), validate(policy)
    del policy["spec"]["toolkit"]
    assert any("'toolkit' is a required property" in e for e in validate(policy)), validate(policy)
