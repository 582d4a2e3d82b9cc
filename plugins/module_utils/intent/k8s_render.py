"""Kubernetes objects for the training side, derived from the fabric intent.

``render(eff, hosts, nccl_settings, options)`` turns the validated intent
(``fabric_effective`` with its ``derived`` values), every GPU node's cabled
``rdma_ports`` and the NCCL settings the host's ``/etc/nccl.conf`` gets (the
nccl_env role's derivation, ``nccl_env_settings``) into the objects a cluster
needs to run NCCL at line rate in pods:

- ``NicClusterPolicy`` (NVIDIA network-operator): the OFED driver (the host's,
  which linerate pins, or the operator's container of the same release), RDMA
  resources per rail (RDMA shared device plugin or SR-IOV device plugin),
  Multus, the CNI plugins and nv-ipam;
- one Multus ``NetworkAttachmentDefinition`` per rail: its CNI (macvlan,
  host-device, ipoib; sriov / ib-sriov with SR-IOV resources) and IPAM: nv-ipam's
  pool of the rail (``IPPool`` on an L2 rail, ``CIDRPool`` with per-node prefixes
  and gateways on an L3 rail) or whereabouts, the hosts' own rail addresses excluded;
- GPU Operator's ``ClusterPolicy`` with GPUDirect RDMA (``driver.rdma``);
- a pod template with the GPUs, one RDMA resource per rail, ``IPC_LOCK``,
  ``/dev/shm`` as a memory ``emptyDir`` and NCCL's variables;
- Kubeflow Trainer v2 ``ClusterTrainingRuntime`` + ``TrainJob`` and/or the
  legacy training-operator ``PyTorchJob`` (an all-reduce through torchrun), and
  an ``MPIJob`` (nccl-tests, one rank per GPU, bound by the bare-metal
  launchers' rule), gang-scheduled by Kueue (``ResourceFlavor``,
  ``ClusterQueue``, ``LocalQueue``, the manager's ``Configuration`` with
  ``waitForPodsReady``) or Volcano (``PodGroup``, ``schedulerName: volcano``).

Pure and stdlib only (parts in k8s_base, k8s_network, k8s_jobs): the filter
``linerate.fabric.k8s_render`` is its front end; tests validate every object
against the upstream schemas (tests/schemas/k8s/SOURCES.md).
"""

import ipaddress
import json
import re

from ansible_collections.linerate.fabric.plugins.module_utils.intent import k8s_base, k8s_jobs, k8s_network, k8s_preflight
from ansible_collections.linerate.fabric.plugins.module_utils.intent.launchers import BIND_POLICIES
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import IntentError

GANG_SCHEDULERS = ("kueue", "volcano")
RDMA_RESOURCES = ("rdma_shared", "sriov")
CNI_TYPES = ("auto", "macvlan", "host-device", "ipoib")
OFED_DRIVERS = ("host", "container")
# CNI per transport: macvlan needs an Ethernet parent, ipoib an IPoIB one.
CNI_FOR = {"roce": ("macvlan", "host-device"), "infiniband": ("ipoib", "host-device")}
IPAMS = ("nv-ipam", "whereabouts")
GPU_DRIVERS = ("container", "host")
# NCCL settings that name what the pod sees, not what the host sees (docs/kubernetes.md):
# the bootstrap interface is the pod's own; an SR-IOV VF has its own RDMA device name; a GID
# index discovered on the host is not the pod address's (NCCL >= 2.21 selects the RoCE v2
# GID of its address family itself when NCCL_IB_GID_INDEX is unset).
POD_LOCAL = ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_ROCE_VERSION_NUM")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", re.ASCII)
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", re.ASCII)
# An image reference: [registry[:port]/]path[:tag][@sha256:digest]
IMAGE = re.compile(
    r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?",
    re.ASCII,
)
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?", re.ASCII)
OFED_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)
NCCL_SIZE = re.compile(r"[0-9]{1,12}[KMG]?", re.ASCII)
# A Go duration as Kueue's Configuration reads it (metav1.Duration): 10m, 1h30m, 90s
DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+", re.ASCII)

DEFAULTS = {
    "name": "linerate",  # prefix of every object name
    "namespace": "linerate",
    "gang_scheduler": "kueue",
    "rdma_resources": "rdma_shared",
    "cni": "auto",
    "ofed_driver": "host",
    "ofed_version": "",  # the doca-driver container tag (ofed_driver: container)
    "mofed_version": "",  # the host's pinned MOFED (role mofed), which the tag must carry
    "image": "",
    "pytorch_image": "nvcr.io/nvidia/pytorch:24.10-py3",
    "gpus_per_node": 8,
    "nodes": 0,  # workers; 0: every GPU node
    "socket_ifname": "eth0",
    "gid_index": "",
    "shm_size": "64Gi",
    "rdma_hca_max": 63,
    "queue": "linerate",
    "nccl_test": "all_reduce_perf",
    "nccl_min_bytes": "8",
    "nccl_max_bytes": "8G",
    "training_api": "trainer",  # trainer (Trainer v2 TrainJob) | training-operator (PyTorchJob v1) | both
    "ipam": "nv-ipam",
    "ipam_namespace": "nvidia-network-operator",
    "ipam_block_size": 16,  # IPPool: pod addresses of each node on an L2 rail
    "ipam_gateway_index": 1,  # CIDRPool: the leaf's address in each node's prefix on an L3 rail
    "node_names": {},  # inventory name -> Kubernetes node name (default: the same)
    "gpu_driver": "container",
    "binding": "auto",  # launchers.rank_binding's policy for the MPIJob's ranks
    "layout": [],  # the launchers' layout (layout.json's "layout"); none: unbound
    "kueue_pods_ready_timeout": "10m",
    "kueue_block_admission": True,
    "kueue_requeue_limit": "",  # waitForPodsReady requeues before deactivating; empty: no limit
    "preflight_nccl_version": "",  # the job preflight's init container (intent/k8s_preflight.py); empty: none
}


class RenderError(IntentError):
    """The inputs cannot be rendered: ``problems`` names each key, value and what is allowed."""

    def __init__(self, problems):
        super().__init__("; ".join(problems))
        self.problems = problems


def _bad(problems, key, value, allowed):
    problems.append(f"{key}: {value!r} is not allowed (allowed: {allowed})")


def check_options(options, transport):
    """The options merged over DEFAULTS, and every problem at once."""
    o = dict(DEFAULTS)
    o.update({k: v for k, v in (options or {}).items() if v is not None})
    p = []
    for key in sorted(set(o) - set(DEFAULTS)):
        _bad(p, f"k8s_render_{key}", o[key], "unknown option; allowed: " + ", ".join(sorted(DEFAULTS)))
    for key, choices in (("gang_scheduler", GANG_SCHEDULERS), ("rdma_resources", RDMA_RESOURCES), ("cni", CNI_TYPES), ("ofed_driver", OFED_DRIVERS)):
        if o[key] not in choices:
            _bad(p, f"k8s_render_{key}", o[key], " | ".join(choices))
    if o["cni"] not in ("auto",) + CNI_FOR.get(transport, ()) and o["cni"] in CNI_TYPES:
        _bad(
            p,
            "k8s_render_cni",
            o["cni"],
            f"auto | {' | '.join(CNI_FOR[transport])} on a {transport} fabric (macvlan needs an Ethernet parent, ipoib an IPoIB one)",
        )
    for key in ("name", "namespace", "queue"):
        if not isinstance(o[key], str) or len(o[key]) > 40 or not DNS_LABEL.fullmatch(o[key]):
            _bad(p, f"k8s_render_{key}", o[key], "a DNS label of at most 40: a-z 0-9 -, starting and ending alphanumeric")
    for key in ("image", "pytorch_image"):
        if not isinstance(o[key], str) or not IMAGE.fullmatch(o[key]):
            _bad(
                p,
                f"k8s_render_{key}",
                o[key],
                "a container image reference "
                + (
                    "with nccl-tests, Open MPI and sshd, such as registry.example.org/nccl-tests:2.13.11 (linerate ships none)"
                    if key == "image"
                    else "with PyTorch (torchrun), such as nvcr.io/nvidia/pytorch:24.10-py3"
                ),
            )
    for key, lo, hi in (("gpus_per_node", 1, 64), ("nodes", 0, 100000), ("rdma_hca_max", 1, 1000)):
        if not isinstance(o[key], int) or isinstance(o[key], bool) or not lo <= o[key] <= hi:
            _bad(p, f"k8s_render_{key}", o[key], f"an integer {lo}..{hi}")
    if not isinstance(o["shm_size"], str) or not QUANTITY.fullmatch(o["shm_size"]):
        _bad(p, "k8s_render_shm_size", o["shm_size"], "a Kubernetes quantity such as 64Gi")
    gid = o["gid_index"]
    if gid != "" and (isinstance(gid, bool) or not isinstance(gid, int) or not 0 <= gid <= 255):
        _bad(p, "k8s_render_gid_index", gid, "empty (NCCL selects the pod address's RoCE v2 GID) or 0..255")
    if o["nccl_test"] not in ("all_reduce_perf", "all_gather_perf"):
        _bad(p, "k8s_render_nccl_test", o["nccl_test"], "all_reduce_perf | all_gather_perf")
    for key in ("nccl_min_bytes", "nccl_max_bytes"):
        if not isinstance(o[key], str) or not NCCL_SIZE.fullmatch(o[key]):
            _bad(p, f"k8s_render_{key}", o[key], "a size as nccl-tests -b/-e read it: digits with an optional K, M or G")
    if o["ofed_driver"] == "container":
        tag = o["ofed_version"]
        if not isinstance(tag, str) or not OFED_TAG.fullmatch(tag):
            _bad(
                p,
                "k8s_render_ofed_version",
                tag,
                "the network-operator doca-driver image tag of the host's "
                "MOFED release, such as doca3.4.1-26.04-1.1.0.0-1 (required with k8s_render_ofed_driver: container)",
            )
        elif o["mofed_version"] and str(o["mofed_version"]) not in tag:
            _bad(
                p,
                "k8s_render_ofed_version",
                tag,
                f"a doca-driver tag of the pinned MOFED release mofed_version "
                f"{o['mofed_version']!r} (the tag carries it, e.g. doca<DOCA>-{o['mofed_version']}.0-<build>): "
                "the container must load the driver linerate verified",
            )
    _check_apis(o, p)
    return o, p


def _check_apis(o: dict, p: list) -> None:
    """The training API, IPAM, GPU Operator, binding and Kueue options: every problem into ``p``."""
    for key, choices in (("training_api", k8s_jobs.TRAINING_APIS), ("ipam", IPAMS), ("gpu_driver", GPU_DRIVERS), ("binding", BIND_POLICIES)):
        if o[key] not in choices:
            _bad(p, f"k8s_render_{key}", o[key], " | ".join(choices))
    if not isinstance(o["ipam_namespace"], str) or not DNS_LABEL.fullmatch(o["ipam_namespace"]):
        _bad(
            p,
            "k8s_render_ipam_namespace",
            o["ipam_namespace"],
            "the namespace nv-ipam watches for its pools (a DNS label), network-operator's own: nvidia-network-operator",
        )
    for key, lo, hi in (("ipam_block_size", 1, 65536), ("ipam_gateway_index", 1, 65536)):
        if not isinstance(o[key], int) or isinstance(o[key], bool) or not lo <= o[key] <= hi:
            _bad(p, f"k8s_render_{key}", o[key], f"an integer {lo}..{hi}")
    names = o["node_names"]
    if not isinstance(names, dict) or not all(isinstance(v, str) and DNS_SUBDOMAIN.fullmatch(v) for v in names.values()):
        _bad(p, "k8s_render_node_names", names, "{inventory name: Kubernetes node name (a DNS subdomain)}")
    layout = o["layout"]
    if not isinstance(layout, list) or not all(isinstance(e, dict) and {"local_rank", "gpu", "numa", "nic"} <= set(e) for e in layout):
        _bad(p, "k8s_render_layout_file", layout, 'the launchers\' layout.json (verify_fabric_launchers: its "layout": local_rank, gpu, numa, nic per rank)')
    if not isinstance(o["kueue_pods_ready_timeout"], str) or not DURATION.fullmatch(o["kueue_pods_ready_timeout"]):
        _bad(p, "k8s_render_kueue_pods_ready_timeout", o["kueue_pods_ready_timeout"], "a duration such as 10m or 1h30m")
    if not isinstance(o["kueue_block_admission"], bool):
        _bad(p, "k8s_render_kueue_block_admission", o["kueue_block_admission"], "true | false")
    limit = o["kueue_requeue_limit"]
    if limit != "" and (isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= 1000):
        _bad(p, "k8s_render_kueue_requeue_limit", limit, "empty (requeue without limit) or 0..1000")


def rails(hosts, transport):
    """Per rail (the i-th entry of every node's rdma_ports): device, netdev, subnet, the hosts' addresses.

    ``hosts``: {inventory name: rdma_ports}. A Kubernetes object names one
    netdev per rail for every node, so the nodes must be cabled alike.
    """
    p = []
    names = sorted(hosts or {})
    if not names:
        return [], ["k8s_render_hosts: {} is not allowed (allowed: the GPU nodes and their rdma_ports; the group is empty)"]
    first = names[0]
    ref = hosts[first] if isinstance(hosts[first], list) else []
    out = []
    for i, port in enumerate(ref):
        out.append(
            {
                "index": i,
                "device": port.get("device"),
                "netdev": port.get("netdev"),
                "port": int(port.get("port", 1)),
                "subnet": None,
                "addresses": [],
                "hosts": {},
                "networks": {},
                "layer": "l2",
            }
        )
    for host in names:
        ports = hosts[host]
        if not isinstance(ports, list) or len(ports) != len(ref):
            p.append(
                f"{host}: rdma_ports: {len(ports) if isinstance(ports, list) else ports!r} port(s) is not allowed "
                f"(allowed: {len(ref)} ports, as {first} has: one NetworkAttachmentDefinition and one RDMA "
                "resource per rail need the nodes cabled alike)"
            )
            continue
        for rail, port in zip(out, ports):
            for key in ("device", "netdev"):
                if port.get(key) != rail[key]:
                    p.append(
                        f"{host}: rdma_ports[{rail['index']}].{key}: {port.get(key)!r} is not allowed (allowed: "
                        f"{rail[key]!r}, as on {first}: a rail's {key} is one name on every node in Kubernetes)"
                    )
            address = port.get("address")
            if not address:
                p.append(
                    f"{host}: rdma_ports[{rail['index']}].address: None is not allowed (allowed: the rail "
                    "address with its prefix: the pods' addresses come from the rail's subnet)"
                )
                continue
            try:
                iface = ipaddress.ip_interface(address)
            except ValueError:
                p.append(
                    f"{host}: rdma_ports[{rail['index']}].address: {address!r} is not allowed (allowed: an IPv4 "
                    "host address with prefix length, such as 192.168.100.11/24)"
                )
                continue
            rail["hosts"][host] = str(address)
            rail["networks"][host] = str(iface.network)
            rail["addresses"].append(str(iface.ip))
    for rail in out:
        p += _rail_layer(rail, first)
    return out, p


def _rail_layer(rail: dict, first: str) -> list:
    """An L2 rail (every node's address in one subnet: ``subnet``) or an L3 rail (each node's in its own
    prefix: ``networks``); a rail with some nodes sharing a subnet and some not is neither."""
    nets = rail["networks"]
    if not nets:
        return []
    if len(set(nets.values())) == 1:
        rail["subnet"] = next(iter(nets.values()))
        return []
    if len(set(nets.values())) == len(nets):
        rail["layer"] = "l3"
        return []
    ref = nets.get(first, next(iter(nets.values())))
    shared = ", ".join(sorted(h for h, n in nets.items() if n == ref))
    other = sorted(h for h, n in nets.items() if n != ref)[0]
    address = rail["hosts"][other]
    return [
        f"{other}: rdma_ports[{rail['index']}].address: {address!r} is not allowed (allowed: an "
        f"address in {ref}, rail {rail['index']}'s subnet on {shared} (an L2 rail), or every node in "
        "its own prefix (an L3 rail, nv-ipam's CIDRPool): one address pool per rail serves one or the other)"
    ]


def pod_nccl_env(host_settings, options, eff):
    """The pod's NCCL variables: the host's nccl.conf settings, with the pod-local ones (POD_LOCAL) as the pod sees them."""
    env = dict(host_settings)
    env["NCCL_SOCKET_IFNAME"] = options["socket_ifname"]
    if options["rdma_resources"] == "sriov":
        env.pop("NCCL_IB_HCA", None)  # the pod's VFs are the only RDMA devices it sees
    if eff["transport"] == "roce" and options["gid_index"] == "":
        env.pop("NCCL_IB_GID_INDEX", None)
        env["NCCL_IB_ROCE_VERSION_NUM"] = "2"  # gid_type v2: NCCL picks the pod address's RoCE v2 GID
    return env


def _env_list(env):
    return [{"name": k, "value": str(v)} for k, v in env.items()]


def pod_template(eff, o, rail_list, env, container, image, command, gpus=True, job_labels=None):
    """A PodTemplateSpec: GPUs and one RDMA resource per rail, IPC_LOCK, /dev/shm in memory, NCCL's variables."""
    limits = {}
    if gpus:
        limits["nvidia.com/gpu"] = o["gpus_per_node"]
        for rail in rail_list:
            limits[k8s_base.resource(o, rail)] = 1
    labels = {"app.kubernetes.io/name": o["name"], "app.kubernetes.io/managed-by": "linerate"}
    labels.update(job_labels or {})
    meta = {"labels": labels}
    if gpus:
        meta["annotations"] = {"k8s.v1.cni.cncf.io/networks": ",".join(k8s_base.name(o, f"rail{r['index']}") for r in rail_list)}
    c = {"name": container, "image": image, "imagePullPolicy": "IfNotPresent", "env": _env_list(env)}
    if command:
        c["command"] = command
    if gpus:
        c["resources"] = {"limits": limits, "requests": dict(limits)}
        # registering memory for RDMA (ibv_reg_mr) needs IPC_LOCK, or memlock limits stop NCCL
        c["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
        c["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    spec = {"containers": [c]}
    if gpus:
        # the container runtime's 64 MB /dev/shm is too small for NCCL's shared-memory transport
        spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": o["shm_size"]}}]
    if o["gang_scheduler"] == "volcano":
        spec["schedulerName"] = "volcano"
    return {"metadata": meta, "spec": spec}


def _mount_tuner(node, volume, directory):
    """Mount the tuner-config ConfigMap ``volume`` at ``directory`` in every pod spec under ``node``
    whose containers carry NCCL_TUNER_CONFIG_FILE (the GPU pods; the launcher runs no NCCL)."""
    if isinstance(node, list):
        for item in node:
            _mount_tuner(item, volume, directory)
        return
    if not isinstance(node, dict):
        return
    containers = node.get("containers")
    if isinstance(containers, list) and "volumes" in node:
        mounted = False
        for c in containers:
            if any(e.get("name") == "NCCL_TUNER_CONFIG_FILE" for e in c.get("env") or []):
                c.setdefault("volumeMounts", []).append({"name": "nccl-tuner", "mountPath": directory, "readOnly": True})
                mounted = True
        if mounted:
            node["volumes"].append({"name": "nccl-tuner", "configMap": {"name": volume}})
    for value in node.values():
        _mount_tuner(value, volume, directory)


def render(eff, hosts, host_settings, options, tuner=None, job_env=None):
    """{file name under <output>/k8s/: [objects]}, plus the pod's NCCL environment.

    ``tuner``: the NCCL tuning sweep's result as filter nccl_tuned_settings reads it (docs/tuning.md):
    with rows, the pods carry its per-job environment (NCCL_TUNER_PLUGIN, NCCL_TUNER_CONFIG_FILE) and
    mount its tuner config from a ConfigMap at that path (``nccl/tuner-config.yaml``).
    ``job_env``: the rest of the per-job environment (nccl_env_settings' ``job``: an explicit
    NCCL_NET_GDR_LEVEL, never in /etc/nccl.conf), which the pods carry too.
    Raises RenderError with every problem at once.
    """
    transport = eff["transport"]
    o, problems = check_options(options, transport)
    rail_list, rail_problems = rails(hosts, transport)
    problems += rail_problems
    if not problems and not rail_list:
        problems.append("rdma_ports: [] is not allowed (allowed: at least one cabled rail)")
    if not problems:
        problems += k8s_network.ipam_problems(o, rail_list, hosts)
        devices = {r["device"] for r in rail_list}
        problems += [
            f"k8s_render_layout_file: local rank {e['local_rank']}'s nic {e['nic']!r} is not allowed (allowed: "
            f"a rail's device, {', '.join(sorted(devices))}: the layout is of another cabling; render the "
            "launchers again)"
            for e in o["layout"]
            if e["nic"] not in devices
        ]
    if problems:
        raise RenderError(problems)
    nodes = o["nodes"] or len(hosts)
    if nodes > len(hosts):
        raise RenderError([f"k8s_render_nodes: {nodes} is not allowed (allowed: 0 (every GPU node) or 1..{len(hosts)}, the GPU nodes the inventory has)"])
    env = pod_nccl_env(host_settings, o, eff)
    env.update({str(k): str(v) for k, v in (job_env or {}).items()})
    job = dict((tuner or {}).get("job") or {})
    env.update(job)
    problems = k8s_preflight.check(o, rail_list, env)
    if problems:
        raise RenderError(problems)
    files, binding = _files(eff, o, rail_list, env, nodes)
    if o["preflight_nccl_version"]:
        # the job's own preflight, an init container of every GPU pod (docs/launchers.md)
        cm = k8s_base.name(o, "job-preflight")
        for key in sorted(files):
            if key.startswith(("pods/", "jobs/")):
                k8s_preflight.add(files[key], cm, o["image"])
        files["pods/job-preflight.yaml"] = [k8s_preflight.configmap(o, cm, rail_list, env)]
    if job.get("NCCL_TUNER_CONFIG_FILE"):
        path = job["NCCL_TUNER_CONFIG_FILE"]
        directory, base = path.rsplit("/", 1) if "/" in path.strip("/") else ("/", path.strip("/"))
        files["nccl/tuner-config.yaml"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": k8s_base.name(o, "nccl-tuner"), "namespace": o["namespace"]},
                "data": {base: tuner["tuner_config"]},
            }
        ]
        for key in sorted(files):
            if key.startswith(("pods/", "jobs/")):
                _mount_tuner(files[key], k8s_base.name(o, "nccl-tuner"), directory or "/")
    return {"files": files, "nccl_env": env, "rails": rail_list, "options": o, "binding": binding}


def _files(eff: dict, o: dict, rail_list: list, env: dict, nodes: int) -> tuple:
    """{file: [objects]} for the checked options, and how the MPIJob's ranks are bound."""

    def pod(container, image, command, gpus=True):
        return pod_template(eff, o, rail_list, env, container, image, command, gpus=gpus)

    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": k8s_base.name(o, "nccl-pod"), "namespace": o["namespace"]},
        "template": pod("nccl", o["image"], None),
    }
    mpi, binding = k8s_jobs.mpi_job(o, pod, env, nodes, o["layout"])
    files = {
        "namespace.yaml": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": o["namespace"]}}],
        "network-operator/nicclusterpolicy.yaml": [k8s_network.nic_cluster_policy(eff, o, rail_list)],
        "multus/network-attachment-definitions.yaml": k8s_network.network_attachments(eff, o, rail_list),
        "gpu-operator/clusterpolicy.yaml": [k8s_network.cluster_policy(o)],
        "pods/nccl-pod-template.yaml": [template],
        "jobs/mpijob.yaml": [mpi],
    }
    if o["ipam"] == "nv-ipam":
        files["network-operator/nv-ipam-pools.yaml"] = k8s_network.ip_pools(o, rail_list)
    if o["training_api"] != "training-operator":
        files["jobs/trainjob.yaml"] = [k8s_jobs.script_configmap(o)] + k8s_jobs.trainer_objects(o, pod, nodes)
    if o["training_api"] != "trainer":
        files["jobs/pytorchjob.yaml"] = [k8s_jobs.script_configmap(o), k8s_jobs.pytorch_job(o, pod, nodes)]
    if o["gang_scheduler"] == "kueue":
        files["scheduling/kueue.yaml"] = k8s_jobs.kueue_objects(o, rail_list, nodes)
        namespace, cm_name, key = k8s_jobs.KUEUE_CONFIGMAP
        config = k8s_jobs.kueue_configuration(o)
        files["scheduling/kueue-manager-config.yaml"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm_name, "namespace": namespace}, "data": {key: json.dumps(config, indent=2) + "\n"}}
        ]  # JSON is YAML
    else:
        files["scheduling/volcano-podgroups.yaml"] = k8s_jobs.volcano_groups(o, nodes)
    return files, binding
