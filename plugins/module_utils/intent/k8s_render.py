"""Kubernetes objects for the training side, derived from the fabric intent.

``render(eff, hosts, nccl_settings, options)`` turns the validated intent
(``fabric_effective`` with its ``derived`` values), every GPU node's cabled
``rdma_ports`` and the NCCL settings the host's ``/etc/nccl.conf`` gets (the
nccl_env role's derivation, ``nccl_env_settings``) into the objects a cluster
needs to run NCCL at line rate in pods:

- ``NicClusterPolicy`` (NVIDIA network-operator): the OFED driver (the host's,
  which linerate pins, or the operator's container of the same release), RDMA
  resources per rail (RDMA shared device plugin or SR-IOV device plugin),
  Multus and the CNI plugins;
- one Multus ``NetworkAttachmentDefinition`` per rail: its CNI (macvlan,
  host-device, ipoib; sriov / ib-sriov with SR-IOV resources) and whereabouts
  IPAM on the rail's subnet, the hosts' own rail addresses excluded;
- a pod template with the GPUs, one RDMA resource per rail, ``IPC_LOCK``,
  ``/dev/shm`` as a memory ``emptyDir`` and NCCL's variables;
- a Kubeflow ``PyTorchJob`` (an all-reduce through torchrun) and an ``MPIJob``
  (nccl-tests, one rank per GPU), gang-scheduled by Kueue (``ResourceFlavor``,
  ``ClusterQueue``, ``LocalQueue``, the queue-name label) or Volcano
  (``PodGroup``, ``schedulerName: volcano``).

Pure and stdlib only: the filter ``linerate.fabric.k8s_render`` is its front
end; tests validate every object against the upstream schemas
(tests/schemas/k8s/SOURCES.md).
"""
import copy
import ipaddress
import json
import re

# What the rendering is written and validated for (tests/schemas/k8s/SOURCES.md).
SUPPORTED = {
    "kubernetes": "1.32",
    "network-operator": "v26.4.1",
    "network-attachment-definition": "v1.7.7",
    "training-operator": "v1.9.0",
    "mpi-operator": "v0.8.0",
    "kueue": "v0.19.2",
    "volcano": "v1.15.1",
}
GANG_SCHEDULERS = ("kueue", "volcano")
RDMA_RESOURCES = ("rdma_shared", "sriov")
CNI_TYPES = ("auto", "macvlan", "host-device", "ipoib")
OFED_DRIVERS = ("host", "container")
# CNI per transport: macvlan needs an Ethernet parent, ipoib an IPoIB one.
CNI_FOR = {"roce": ("macvlan", "host-device"), "infiniband": ("ipoib", "host-device")}
CNI_AUTO = {"roce": "macvlan", "infiniband": "ipoib"}
SRIOV_CNI = {"roce": "sriov", "infiniband": "ib-sriov"}
CNI_VERSION = "0.3.1"
OPERATOR_REPOSITORY = "nvcr.io/nvidia/mellanox"
# NCCL settings that name what the pod sees, not what the host sees (docs/kubernetes.md):
# the bootstrap interface is the pod's own; an SR-IOV VF has its own RDMA device name; a GID
# index discovered on the host is not the pod address's (NCCL >= 2.21 selects the RoCE v2
# GID of its address family itself when NCCL_IB_GID_INDEX is unset).
POD_LOCAL = ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_ROCE_VERSION_NUM")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", re.ASCII)
# An image reference: [registry[:port]/]path[:tag][@sha256:digest]
IMAGE = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
                   r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?", re.ASCII)
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?", re.ASCII)
OFED_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)
NCCL_SIZE = re.compile(r"[0-9]{1,12}[KMG]?", re.ASCII)

DEFAULTS = {
    "name": "linerate",             # prefix of every object name
    "namespace": "linerate",
    "gang_scheduler": "kueue",
    "rdma_resources": "rdma_shared",
    "cni": "auto",
    "ofed_driver": "host",
    "ofed_version": "",             # the doca-driver container tag (ofed_driver: container)
    "mofed_version": "",            # the host's pinned MOFED (role mofed), which the tag must carry
    "image": "",
    "pytorch_image": "nvcr.io/nvidia/pytorch:24.10-py3",
    "gpus_per_node": 8,
    "nodes": 0,                     # workers; 0: every GPU node
    "socket_ifname": "eth0",
    "gid_index": "",
    "shm_size": "64Gi",
    "rdma_hca_max": 63,
    "queue": "linerate",
    "nccl_test": "all_reduce_perf",
    "nccl_min_bytes": "8",
    "nccl_max_bytes": "8G",
}


class RenderError(ValueError):
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
    for key, choices in (("gang_scheduler", GANG_SCHEDULERS), ("rdma_resources", RDMA_RESOURCES),
                         ("cni", CNI_TYPES), ("ofed_driver", OFED_DRIVERS)):
        if o[key] not in choices:
            _bad(p, f"k8s_render_{key}", o[key], " | ".join(choices))
    if o["cni"] not in ("auto",) + CNI_FOR.get(transport, ()) and o["cni"] in CNI_TYPES:
        _bad(p, "k8s_render_cni", o["cni"], f"auto | {' | '.join(CNI_FOR[transport])} on a {transport} fabric "
             "(macvlan needs an Ethernet parent, ipoib an IPoIB one)")
    for key in ("name", "namespace", "queue"):
        if not isinstance(o[key], str) or len(o[key]) > 40 or not DNS_LABEL.fullmatch(o[key]):
            _bad(p, f"k8s_render_{key}", o[key], "a DNS label of at most 40: a-z 0-9 -, starting and ending "
                 "alphanumeric")
    for key in ("image", "pytorch_image"):
        if not isinstance(o[key], str) or not IMAGE.fullmatch(o[key]):
            _bad(p, f"k8s_render_{key}", o[key], "a container image reference " + (
                "with nccl-tests, Open MPI and sshd, such as registry.example.org/nccl-tests:2.13.11 (linerate ships "
                "none)" if key == "image" else "with PyTorch (torchrun), such as nvcr.io/nvidia/pytorch:24.10-py3"))
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
            _bad(p, "k8s_render_ofed_version", tag, "the network-operator doca-driver image tag of the host's "
                 "MOFED release, such as doca3.4.1-26.04-1.1.0.0-1 (required with k8s_render_ofed_driver: container)")
        elif o["mofed_version"] and str(o["mofed_version"]) not in tag:
            _bad(p, "k8s_render_ofed_version", tag, f"a doca-driver tag of the pinned MOFED release mofed_version "
                 f"{o['mofed_version']!r} (the tag carries it, e.g. doca<DOCA>-{o['mofed_version']}.0-<build>): "
                 "the container must load the driver linerate verified")
    return o, p


def rails(hosts, transport):
    """Per rail (the i-th entry of every node's rdma_ports): device, netdev, subnet, the hosts' addresses.

    ``hosts``: {inventory name: rdma_ports}. A Kubernetes object names one
    netdev per rail for every node, so the nodes must be cabled alike.
    """
    p = []
    names = sorted(hosts or {})
    if not names:
        return [], ["k8s_render_hosts: {} is not allowed (allowed: the GPU nodes and their rdma_ports; "
                    "the group is empty)"]
    first = names[0]
    ref = hosts[first] if isinstance(hosts[first], list) else []
    out = []
    for i, port in enumerate(ref):
        out.append({"index": i, "device": port.get("device"), "netdev": port.get("netdev"),
                    "port": int(port.get("port", 1)), "subnet": None, "addresses": []})
    for host in names:
        ports = hosts[host]
        if not isinstance(ports, list) or len(ports) != len(ref):
            p.append(f"{host}: rdma_ports: {len(ports) if isinstance(ports, list) else ports!r} port(s) is not allowed "
                     f"(allowed: {len(ref)} ports, as {first} has: one NetworkAttachmentDefinition and one RDMA "
                     "resource per rail need the nodes cabled alike)")
            continue
        for rail, port in zip(out, ports):
            for key in ("device", "netdev"):
                if port.get(key) != rail[key]:
                    p.append(f"{host}: rdma_ports[{rail['index']}].{key}: {port.get(key)!r} is not allowed (allowed: "
                             f"{rail[key]!r}, as on {first}: a rail's {key} is one name on every node in Kubernetes)")
            address = port.get("address")
            if not address:
                p.append(f"{host}: rdma_ports[{rail['index']}].address: None is not allowed (allowed: the rail "
                         "address with its prefix: the pods' addresses come from the rail's subnet)")
                continue
            try:
                iface = ipaddress.ip_interface(address)
            except ValueError:
                p.append(f"{host}: rdma_ports[{rail['index']}].address: {address!r} is not allowed (allowed: an IPv4 "
                         "host address with prefix length, such as 192.168.100.11/24)")
                continue
            if rail["subnet"] is None:
                rail["subnet"] = str(iface.network)
            elif str(iface.network) != rail["subnet"]:
                p.append(f"{host}: rdma_ports[{rail['index']}].address: {address!r} is not allowed (allowed: an "
                         f"address in {rail['subnet']}, rail {rail['index']}'s subnet on {first})")
            rail["addresses"].append(str(iface.ip))
    return out, p


def pod_nccl_env(host_settings, options, eff):
    """The pod's NCCL variables: the host's nccl.conf settings, with the pod-local ones (POD_LOCAL) as the pod sees them."""
    env = dict(host_settings)
    env["NCCL_SOCKET_IFNAME"] = options["socket_ifname"]
    if options["rdma_resources"] == "sriov":
        env.pop("NCCL_IB_HCA", None)          # the pod's VFs are the only RDMA devices it sees
    if eff["transport"] == "roce" and options["gid_index"] == "":
        env.pop("NCCL_IB_GID_INDEX", None)
        env["NCCL_IB_ROCE_VERSION_NUM"] = "2"  # gid_type v2: NCCL picks the pod address's RoCE v2 GID
    return env


def _name(o, *parts):
    return "-".join((o["name"],) + parts)


def _resource(o, rail):
    prefix = "rdma" if o["rdma_resources"] == "rdma_shared" else "nvidia.com"
    return f"{prefix}/{o['name']}_rail{rail['index']}"


def _cni(eff, o, rail, mtu):
    transport = eff["transport"]
    ipam = {"type": "whereabouts", "range": rail["subnet"],
            "exclude": [f"{a}/32" for a in sorted(rail["addresses"], key=ipaddress.ip_address)]}
    conf = {"cniVersion": CNI_VERSION, "name": _name(o, f"rail{rail['index']}")}
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
    conf["ipam"] = ipam
    return conf


def _device_plugin_config(o, rail_list):
    if o["rdma_resources"] == "rdma_shared":
        return {"configList": [{"resourceName": f"{o['name']}_rail{r['index']}", "rdmaHcaMax": o["rdma_hca_max"],
                                "selectors": {"vendors": ["15b3"], "ifNames": [r["netdev"]]}} for r in rail_list]}
    return {"resourceList": [{"resourcePrefix": "nvidia.com", "resourceName": f"{o['name']}_rail{r['index']}",
                              "selectors": {"vendors": ["15b3"], "pfNames": [r["netdev"]], "isRdma": True}}
                             for r in rail_list]}


def nic_cluster_policy(eff, o, rail_list):
    version = "network-operator-" + SUPPORTED["network-operator"]
    component = {"repository": OPERATOR_REPOSITORY, "version": version}
    spec = {}
    if o["ofed_driver"] == "container":
        spec["ofedDriver"] = {"image": "doca-driver", "repository": OPERATOR_REPOSITORY, "version": o["ofed_version"],
                              "upgradePolicy": {"autoUpgrade": False}}
    config = json.dumps(_device_plugin_config(o, rail_list), indent=2, sort_keys=False)
    if o["rdma_resources"] == "rdma_shared":
        spec["rdmaSharedDevicePlugin"] = dict(image="k8s-rdma-shared-dev-plugin", config=config, **component)
    else:
        spec["sriovDevicePlugin"] = dict(image="sriov-network-device-plugin", config=config, **component)
    secondary = {"cniPlugins": dict(image="plugins", **component), "multus": dict(image="multus-cni", **component)}
    if eff["transport"] == "infiniband" and o["rdma_resources"] == "rdma_shared" and o["cni"] in ("auto", "ipoib"):
        secondary["ipoib"] = dict(image="ipoib-cni", **component)
    spec["secondaryNetwork"] = secondary
    # the operator acts on the one NicClusterPolicy named nic-cluster-policy
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy"}, "spec": spec}


def network_attachments(eff, o, rail_list):
    out = []
    for rail in rail_list:
        meta = {"name": _name(o, f"rail{rail['index']}"), "namespace": o["namespace"]}
        if o["rdma_resources"] == "sriov":
            meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": _resource(o, rail)}
        conf = _cni(eff, o, rail, eff["mtu"]["host"])
        out.append({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition", "metadata": meta,
                    "spec": {"config": json.dumps(conf, indent=2, sort_keys=False) + "\n"}})
    return out


def _env_list(env):
    return [{"name": k, "value": str(v)} for k, v in env.items()]


def pod_template(eff, o, rail_list, env, container, image, command, gpus=True, job_labels=None):
    """A PodTemplateSpec: GPUs and one RDMA resource per rail, IPC_LOCK, /dev/shm in memory, NCCL's variables."""
    limits = {}
    if gpus:
        limits["nvidia.com/gpu"] = o["gpus_per_node"]
        for rail in rail_list:
            limits[_resource(o, rail)] = 1
    labels = {"app.kubernetes.io/name": o["name"], "app.kubernetes.io/managed-by": "linerate"}
    labels.update(job_labels or {})
    meta = {"labels": labels}
    if gpus:
        meta["annotations"] = {"k8s.v1.cni.cncf.io/networks": ",".join(
            _name(o, f"rail{r['index']}") for r in rail_list)}
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


ALLREDUCE_PY = """\
# All-reduce bus bandwidth through torch.distributed (NCCL), one process per GPU (torchrun).
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
x = torch.ones(1 << 28, device="cuda")  # 1 GiB of float32
for _ in range(5):
    dist.all_reduce(x)
torch.cuda.synchronize()
start, iters = time.time(), 20
for _ in range(iters):
    dist.all_reduce(x)
torch.cuda.synchronize()
n = dist.get_world_size()
seconds = (time.time() - start) / iters
busbw = x.numel() * x.element_size() * 2 * (n - 1) / n / seconds / 1e9
if dist.get_rank() == 0:
    print(f"all_reduce 1 GiB, {n} ranks: busbw {busbw:.2f} GB/s")
dist.destroy_process_group()
"""


def _job_labels(o):
    return {"kueue.x-k8s.io/queue-name": o["queue"]} if o["gang_scheduler"] == "kueue" else {}


def _volcano(o, job, members, gpus):
    """Pods join the PodGroup by annotation; the job's runPolicy carries the same minimum."""
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": job, "namespace": o["namespace"]},
            "spec": {"minMember": members, "queue": "default",
                     "minResources": {"nvidia.com/gpu": str(gpus)}}}


def _join(template, o, job):
    if o["gang_scheduler"] == "volcano":
        template["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = job


def pytorch_job(eff, o, rail_list, env, nodes):
    name = _name(o, "allreduce")
    worker = pod_template(eff, o, rail_list, env, "pytorch", o["pytorch_image"],
                          ["torchrun", "/opt/linerate/allreduce.py"])
    worker["spec"]["containers"][0]["volumeMounts"].append({"name": "script", "mountPath": "/opt/linerate"})
    worker["spec"]["volumes"].append({"name": "script", "configMap": {"name": _name(o, "allreduce")}})
    _join(worker, o, name)
    specs = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": copy.deepcopy(worker)}}
    if nodes > 1:
        specs["Worker"] = {"replicas": nodes - 1, "restartPolicy": "OnFailure", "template": worker}
    meta = {"name": name, "namespace": o["namespace"], "labels": _job_labels(o)}
    spec = {"nprocPerNode": str(o["gpus_per_node"]), "pytorchReplicaSpecs": specs,
            "runPolicy": {"cleanPodPolicy": "Running"}}
    if o["gang_scheduler"] == "volcano":
        spec["runPolicy"]["schedulingPolicy"] = {"minAvailable": nodes, "queue": "default"}
    else:
        spec["runPolicy"]["suspend"] = True       # Kueue admits (unsuspends) the whole job at once
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": spec}


def mpirun_argv(o, env, nodes):
    """mpirun for nccl-tests: one rank per GPU (-g 1), G ranks per worker, NCCL's variables forwarded (-x)."""
    ranks = nodes * o["gpus_per_node"]
    argv = ["mpirun", "--allow-run-as-root", "-np", str(ranks), "--map-by", f"ppr:{o['gpus_per_node']}:node",
            "--bind-to", "numa"]
    for key in env:
        argv += ["-x", key]
    argv += [o["nccl_test"], "-b", o["nccl_min_bytes"], "-e", o["nccl_max_bytes"], "-f", "2", "-g", "1"]
    return argv


def mpi_job(eff, o, rail_list, env, nodes):
    name = _name(o, "nccl-tests")
    launcher = pod_template(eff, o, rail_list, env, "launcher", o["image"], mpirun_argv(o, env, nodes), gpus=False)
    worker = pod_template(eff, o, rail_list, env, "worker", o["image"], ["/usr/sbin/sshd", "-De"])
    _join(launcher, o, name)
    _join(worker, o, name)
    spec = {"slotsPerWorker": o["gpus_per_node"], "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "restartPolicy": "OnFailure", "template": launcher},
                                "Worker": {"replicas": nodes, "restartPolicy": "OnFailure", "template": worker}}}
    if o["gang_scheduler"] == "volcano":
        spec["runPolicy"]["schedulingPolicy"] = {"minAvailable": nodes + 1, "queue": "default"}
    else:
        spec["runPolicy"]["suspend"] = True
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": o["namespace"], "labels": _job_labels(o)}, "spec": spec}


def kueue_objects(o, rail_list, nodes):
    flavor = _name(o, "gpu")
    resources = [{"name": "nvidia.com/gpu", "nominalQuota": nodes * o["gpus_per_node"]}]
    resources += [{"name": _resource(o, r), "nominalQuota": nodes} for r in rail_list]
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}, "spec": {}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": _name(o, "cluster")},
         "spec": {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO",
                  "resourceGroups": [{"coveredResources": [r["name"] for r in resources],
                                      "flavors": [{"name": flavor, "resources": resources}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": o["queue"], "namespace": o["namespace"]}, "spec": {"clusterQueue": _name(o, "cluster")}},
    ]


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
                c.setdefault("volumeMounts", []).append({"name": "nccl-tuner", "mountPath": directory,
                                                         "readOnly": True})
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
    if problems:
        raise RenderError(problems)
    nodes = o["nodes"] or len(hosts)
    if nodes > len(hosts):
        raise RenderError([f"k8s_render_nodes: {nodes} is not allowed (allowed: 0 (every GPU node) or 1..{len(hosts)}, "
                           "the GPU nodes the inventory has)"])
    env = pod_nccl_env(host_settings, o, eff)
    env.update({str(k): str(v) for k, v in (job_env or {}).items()})
    job = dict((tuner or {}).get("job") or {})
    env.update(job)
    pod = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": _name(o, "nccl-pod"),
                                                                   "namespace": o["namespace"]},
           "template": pod_template(eff, o, rail_list, env, "nccl", o["image"], None)}
    script = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": _name(o, "allreduce"), "namespace": o["namespace"]},
              "data": {"allreduce.py": ALLREDUCE_PY}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": o["namespace"]}}
    files = {
        "namespace.yaml": [namespace],
        "network-operator/nicclusterpolicy.yaml": [nic_cluster_policy(eff, o, rail_list)],
        "multus/network-attachment-definitions.yaml": network_attachments(eff, o, rail_list),
        "pods/nccl-pod-template.yaml": [pod],
        "jobs/pytorchjob.yaml": [script, pytorch_job(eff, o, rail_list, env, nodes)],
        "jobs/mpijob.yaml": [mpi_job(eff, o, rail_list, env, nodes)],
    }
    if o["gang_scheduler"] == "kueue":
        files["scheduling/kueue.yaml"] = kueue_objects(o, rail_list, nodes)
    else:
        files["scheduling/volcano-podgroups.yaml"] = [
            _volcano(o, _name(o, "allreduce"), nodes, nodes * o["gpus_per_node"]),
            _volcano(o, _name(o, "nccl-tests"), nodes + 1, nodes * o["gpus_per_node"])]
    if job.get("NCCL_TUNER_CONFIG_FILE"):
        path = job["NCCL_TUNER_CONFIG_FILE"]
        directory, base = path.rsplit("/", 1) if "/" in path.strip("/") else ("/", path.strip("/"))
        files["nccl/tuner-config.yaml"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": _name(o, "nccl-tuner"), "namespace": o["namespace"]},
                                            "data": {base: tuner["tuner_config"]}}]
        for key in ("pods/nccl-pod-template.yaml", "jobs/pytorchjob.yaml", "jobs/mpijob.yaml"):
            _mount_tuner(files[key], _name(o, "nccl-tuner"), directory or "/")
    return {"files": files, "nccl_env": env, "rails": rail_list, "options": o}
