"""What every part of the Kubernetes rendering shares (plugins/module_utils/intent/k8s_base.py): the
releases it is written for are the ones whose schemas are vendored (tests/schemas/k8s/SOURCES.md), the
objects' names, a rail's extended resource per device plugin and the GPU nodes' selector. The rendered
objects themselves: test_k8s_render.py, test_k8s_network.py, test_k8s_jobs.py."""

import os
import re

from ansible_collections.linerate.fabric.plugins.module_utils.intent import k8s_base

SOURCES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "schemas", "k8s", "SOURCES.md")
# SUPPORTED's names -> the repository SOURCES.md vendors that project's schemas from
REPOSITORIES = {
    "network-operator": "github.com/Mellanox/network-operator",
    "network-attachment-definition": "github.com/k8snetworkplumbingwg/network-attachment-definition-client",
    "gpu-operator": "github.com/NVIDIA/gpu-operator",
    "trainer": "github.com/kubeflow/trainer",
    "training-operator": "github.com/kubeflow/training-operator",
    "mpi-operator": "github.com/kubeflow/mpi-operator",
    "kueue": "github.com/kubernetes-sigs/kueue",
    "volcano": "github.com/volcano-sh/volcano",
}


def _vendored():
    """{repository: {tags}} of the table in SOURCES.md, and its text."""
    with open(SOURCES, encoding="utf-8") as fh:
        text = fh.read()
    tags = {}
    for repo, tag in re.findall(r"^\| [^|]+ \| (github\.com/\S+) \| (v[0-9.]+) \(", text, re.M):
        tags.setdefault(repo, set()).add(tag)
    return tags, text


def test_the_supported_releases_are_the_vendored_schemas_releases():
    tags, text = _vendored()
    assert set(k8s_base.SUPPORTED) == set(REPOSITORIES) | {"kubernetes"}
    assert {name: tags.get(repo) for name, repo in REPOSITORIES.items()} == {name: {k8s_base.SUPPORTED[name]} for name in REPOSITORIES}
    assert f"against Kubernetes {k8s_base.SUPPORTED['kubernetes']}." in " ".join(text.split())


def test_names_and_a_rails_resource_per_device_plugin():
    o = {"name": "linerate", "rdma_resources": "rdma_shared"}
    assert k8s_base.name(o) == "linerate" and k8s_base.name(o, "rail3", "pool") == "linerate-rail3-pool"
    assert k8s_base.resource(o, {"index": 3}) == "rdma/linerate_rail3"
    assert k8s_base.resource(dict(o, rdma_resources="sriov"), {"index": 0}) == "nvidia.com/linerate_rail0"


def test_the_gpu_nodes_are_selected_by_gpu_operators_label():
    assert k8s_base.GPU_NODE_LABEL == "nvidia.com/gpu.present"
    assert k8s_base.gpu_node_selector() == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]
    }
    assert k8s_base.gpu_node_selector() is not k8s_base.gpu_node_selector()  # each object its own copy
