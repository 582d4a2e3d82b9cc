"""The jobs' side of the Kubernetes rendering: the training APIs, nccl-tests, gang scheduling.

- ``trainer_objects``: Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``): a
  ``ClusterTrainingRuntime`` that carries the fabric (the pod template: GPUs, RDMA, NCCL) and a
  ``TrainJob`` that names it (an all-reduce through torchrun, one process per GPU);
- ``pytorch_job``: the legacy Kubeflow training-operator v1 ``PyTorchJob`` (``kubeflow.org/v1``);
- ``mpi_job``: mpi-operator's ``MPIJob`` (``kubeflow.org/v2beta1``) running nccl-tests one rank per
  GPU, its ranks placed and bound by the bare-metal launchers' own rule
  (``module_utils/intent/launchers.py`` ``rank_binding``, ``bind_script``);
- ``kueue_objects`` / ``kueue_configuration``: Kueue's queue objects and the manager's
  ``Configuration`` with ``waitForPodsReady``; ``volcano_groups``: Volcano PodGroups.

``pod(container, image, command, gpus=True)`` is the caller's pod-template builder
(``k8s_render.pod_template`` bound to the intent). Stdlib only.
"""

import copy

from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers
from ansible_collections.linerate.fabric.plugins.module_utils.intent.k8s_base import name, resource

TRAINING_APIS = ("trainer", "training-operator", "both")
SCRIPT_DIR = "/opt/linerate"
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
# Kueue v0.19.2's manager configuration as it ships (config/components/manager/
# controller_manager_config.yaml, the keys it leaves on), which the rendered one keeps.
KUEUE_MANAGER_DEFAULTS = {
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "Cohort.kueue.x-k8s.io": 1,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
}
KUEUE_FRAMEWORKS = [
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "ray.io/rayservice",
    "jobset.x-k8s.io/jobset",
    "workload.codeflare.dev/appwrapper",
    "trainer.kubeflow.org/trainjob",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
]
# The ConfigMap Kueue's manager reads (kustomize configMapGenerator manager-config, namePrefix kueue-).
KUEUE_CONFIGMAP = ("kueue-system", "kueue-manager-config", "controller_manager_config.yaml")


def job_labels(o: dict) -> dict:
    return {"kueue.x-k8s.io/queue-name": o["queue"]} if o["gang_scheduler"] == "kueue" else {}


def _join(template: dict, o: dict, job: str) -> None:
    """Volcano: pods join the job's PodGroup by annotation."""
    if o["gang_scheduler"] == "volcano":
        template["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = job


def _with_script(template: dict, o: dict) -> dict:
    template["spec"]["containers"][0]["volumeMounts"].append({"name": "script", "mountPath": SCRIPT_DIR})
    template["spec"]["volumes"].append({"name": "script", "configMap": {"name": name(o, "allreduce")}})
    return template


def script_configmap(o: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name(o, "allreduce"), "namespace": o["namespace"]},
        "data": {"allreduce.py": ALLREDUCE_PY},
    }


def pytorch_job(o: dict, pod, nodes: int) -> dict:
    """training-operator v1 (legacy): Master + Workers, nprocPerNode processes a node."""
    job = name(o, "allreduce")
    worker = _with_script(pod("pytorch", o["pytorch_image"], ["torchrun", f"{SCRIPT_DIR}/allreduce.py"]), o)
    _join(worker, o, job)
    specs = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": copy.deepcopy(worker)}}
    if nodes > 1:
        specs["Worker"] = {"replicas": nodes - 1, "restartPolicy": "OnFailure", "template": worker}
    spec = {"nprocPerNode": str(o["gpus_per_node"]), "pytorchReplicaSpecs": specs, "runPolicy": {"cleanPodPolicy": "Running"}}
    if o["gang_scheduler"] == "volcano":
        spec["runPolicy"]["schedulingPolicy"] = {"minAvailable": nodes, "queue": "default"}
    else:
        spec["runPolicy"]["suspend"] = True  # Kueue admits (unsuspends) the whole job at once
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": job, "namespace": o["namespace"], "labels": job_labels(o)},
        "spec": spec,
    }


def trainer_objects(o: dict, pod, nodes: int) -> list:
    """Trainer v2: the runtime holds the fabric's pod (container ``node``, which the torch plugin gives
    torchrun's PET_* variables), the TrainJob names it and sets the nodes and processes per node."""
    runtime = name(o, "torch")
    node = _with_script(pod("node", o["pytorch_image"], None), o)
    node["spec"]["containers"][0].pop("command", None)
    job_template = {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}, "spec": {"template": node}}
    spec = {"mlPolicy": {"numNodes": nodes, "torch": {}}, "template": {"spec": {"replicatedJobs": [{"name": "node", "template": job_template}]}}}
    if o["gang_scheduler"] == "volcano":
        spec["podGroupPolicy"] = {"volcano": {}}  # Trainer creates the job's PodGroup itself
    ctr = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": runtime, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": spec,
    }
    job_spec = {
        "runtimeRef": {"name": runtime, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        "trainer": {
            "image": o["pytorch_image"],
            "command": ["torchrun", f"{SCRIPT_DIR}/allreduce.py"],
            "numNodes": nodes,
            "numProcPerNode": o["gpus_per_node"],
        },
    }
    if o["gang_scheduler"] == "kueue":
        job_spec["suspend"] = True
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name(o, "allreduce"), "namespace": o["namespace"], "labels": job_labels(o)},
        "spec": job_spec,
    }
    return [ctr, job]


def pod_layout(o: dict, layout) -> tuple:
    """The launchers' layout the MPIJob's ranks are bound by, and why: the layout only where the pod
    holds every GPU of the node it describes (gpus_per_node of them, so pod GPU i is the node's GPU i)."""
    if not layout:
        return None, (
            "no layout (the launchers' layout.json from the readiness facts): nothing is bound; nccl-tests puts local rank i on the pod's GPU i itself"
        )
    if len(layout) != o["gpus_per_node"]:
        return None, (
            f"the layout has {len(layout)} ranks a node, the pods {o['gpus_per_node']} GPUs: a pod with "
            "part of a node's GPUs gets them in the device plugin's choice, so nothing is bound"
        )
    return layout, "the launchers' layout.json"


def mpirun_argv(o: dict, env: dict, nodes: int, layout=None) -> tuple:
    """mpirun for nccl-tests: one rank per GPU (-g 1), G ranks per worker, NCCL's variables forwarded
    (-x), placed and bound by launchers.rank_binding, the bare-metal rule; ``(argv, binding)``."""
    ppn = o["gpus_per_node"]
    usable, why = pod_layout(o, layout)
    entries = usable or [{"local_rank": i, "gpu": i, "numa": None, "nic": None} for i in range(ppn)]
    bind = launchers.rank_binding(entries, "mpirun", o["binding"] if usable else "none")
    # the wrapper names the layout's NICs (UCX_NET_DEVICES): the pod's own with the RDMA shared device
    # plugin; an SR-IOV pod's are VFs, so there only Open MPI's own binding applies, else none
    wrapper = bool(usable) and o["rdma_resources"] == "rdma_shared"
    if usable and not wrapper and bind["policy"] != "mpirun":
        bind = launchers.rank_binding(entries, "mpirun", "none")
        why += "; SR-IOV: the pod's RDMA devices are VFs, not the layout's NICs, so no per-rank wrapper"
    argv = ["mpirun", "--allow-run-as-root", "-np", str(nodes * ppn)] + bind["args"]
    for key in env:
        argv += ["-x", key]
    if wrapper:
        argv += ["sh", "-c", launchers.bind_script(usable, bind["wrapper_binder"], "topology"), "linerate-bind"]
    argv += [o["nccl_test"], "-b", o["nccl_min_bytes"], "-e", o["nccl_max_bytes"], "-f", "2", "-g", "1"]
    return argv, {"policy": bind["policy"], "why": bind["why"], "layout": why}


def mpi_job(o: dict, pod, env: dict, nodes: int, layout=None) -> tuple:
    job = name(o, "nccl-tests")
    argv, binding = mpirun_argv(o, env, nodes, layout)
    launcher = pod("launcher", o["image"], argv, gpus=False)
    worker = pod("worker", o["image"], ["/usr/sbin/sshd", "-De"])
    _join(launcher, o, job)
    _join(worker, o, job)
    spec = {
        "slotsPerWorker": o["gpus_per_node"],
        "mpiImplementation": "OpenMPI",
        "launcherCreationPolicy": "WaitForWorkersReady",
        "runPolicy": {"cleanPodPolicy": "Running"},
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "restartPolicy": "OnFailure", "template": launcher},
            "Worker": {"replicas": nodes, "restartPolicy": "OnFailure", "template": worker},
        },
    }
    if o["gang_scheduler"] == "volcano":
        spec["runPolicy"]["schedulingPolicy"] = {"minAvailable": nodes + 1, "queue": "default"}
    else:
        spec["runPolicy"]["suspend"] = True
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": job, "namespace": o["namespace"], "labels": job_labels(o)},
        "spec": spec,
    }, binding


def kueue_objects(o: dict, rail_list: list, nodes: int) -> list:
    flavor = name(o, "gpu")
    resources = [{"name": "nvidia.com/gpu", "nominalQuota": nodes * o["gpus_per_node"]}]
    resources += [{"name": resource(o, r), "nominalQuota": nodes} for r in rail_list]
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}, "spec": {}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name(o, "cluster")},
            "spec": {
                "namespaceSelector": {},
                "queueingStrategy": "StrictFIFO",
                "resourceGroups": [{"coveredResources": [r["name"] for r in resources], "flavors": [{"name": flavor, "resources": resources}]}],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": o["queue"], "namespace": o["namespace"]},
            "spec": {"clusterQueue": name(o, "cluster")},
        },
    ]


def kueue_configuration(o: dict) -> dict:
    """Kueue's manager Configuration (config.kueue.x-k8s.io/v1beta2): as it ships, plus waitForPodsReady
    (an admitted job whose pods are not all Ready in time is evicted and requeued, so a half-started
    NCCL job never holds GPUs another gang waits for; blockAdmission: one job starts at a time) and
    the rendered jobs' integrations (PyTorchJob is off in Kueue's default list)."""
    frameworks = list(KUEUE_FRAMEWORKS)
    if o["training_api"] != "trainer":
        frameworks.insert(2, "kubeflow.org/pytorchjob")
    ready = {
        "timeout": o["kueue_pods_ready_timeout"],
        "blockAdmission": o["kueue_block_admission"],
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
    }
    if o["kueue_requeue_limit"] != "":
        ready["requeuingStrategy"]["backoffLimitCount"] = o["kueue_requeue_limit"]
    return dict(
        {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"},
        **copy.deepcopy(KUEUE_MANAGER_DEFAULTS),
        waitForPodsReady=ready,
        integrations={"frameworks": frameworks},
    )


def volcano_groups(o: dict, nodes: int) -> list:
    """Volcano PodGroups of the jobs that do not make their own: the PyTorchJob and the MPIJob."""
    gpus = str(nodes * o["gpus_per_node"])
    groups = []
    if o["training_api"] != "trainer":
        groups.append((name(o, "allreduce"), nodes))
    groups.append((name(o, "nccl-tests"), nodes + 1))
    return [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": job, "namespace": o["namespace"]},
            "spec": {"minMember": members, "queue": "default", "minResources": {"nvidia.com/gpu": gpus}},
        }
        for job, members in groups
    ]
