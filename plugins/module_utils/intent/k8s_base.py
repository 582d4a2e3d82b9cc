"""What every part of the Kubernetes rendering shares: the supported releases, object names, resources.

The parts: ``k8s_render`` (options, rails, the pod template, ``render``), ``k8s_network``
(network-operator, Multus, nv-ipam, GPU Operator) and ``k8s_jobs`` (Trainer v2, the legacy
PyTorchJob, the MPIJob, Kueue and Volcano). Stdlib only.
"""

# What the rendering is written and validated for (tests/schemas/k8s/SOURCES.md).
SUPPORTED = {
    "kubernetes": "1.32",
    "network-operator": "v26.4.1",
    "network-attachment-definition": "v1.7.7",
    "gpu-operator": "v26.7.0",
    "trainer": "v2.3.0",
    "training-operator": "v1.9.0",
    "mpi-operator": "v0.8.0",
    "kueue": "v0.19.2",
    "volcano": "v1.15.1",
}
OPERATOR_REPOSITORY = "nvcr.io/nvidia/mellanox"
# The label GPU Operator's feature discovery puts on every node with an NVIDIA GPU: the nodes the
# rails' address pools serve (nv-ipam gives every node it selects a block of each pool).
GPU_NODE_LABEL = "nvidia.com/gpu.present"


def name(o: dict, *parts: str) -> str:
    """An object's name: the k8s_render_name prefix and ``parts``."""
    return "-".join((o["name"],) + parts)


def resource(o: dict, rail: dict) -> str:
    """The extended resource of a rail: the RDMA shared device plugin's or the SR-IOV device plugin's."""
    prefix = "rdma" if o["rdma_resources"] == "rdma_shared" else "nvidia.com"
    return f"{prefix}/{o['name']}_rail{rail['index']}"


def gpu_node_selector() -> dict:
    """A NodeSelector (nodeSelectorTerms) for the GPU nodes, by GPU Operator's label."""
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_NODE_LABEL, "operator": "In", "values": ["true"]}]}]}
