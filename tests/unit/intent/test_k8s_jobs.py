"""Kubernetes' job objects on current APIs (plugins/module_utils/intent/k8s_jobs.py; issue 37 item 5),
rendered and validated offline against the upstream schemas (tests/schemas/k8s/SOURCES.md; the
validator: tests/unit/k8s_schemas.py):

- Kubeflow Trainer v2: a ClusterTrainingRuntime carrying the fabric's pod, a TrainJob naming it; the legacy
  PyTorchJob only on request;
- Kueue's manager Configuration with waitForPodsReady, checked against Kueue's Go types;
- the MPIJob's ranks bound by the bare-metal launchers' rule (launchers.rank_binding / bind_script);
- the API options refused with key, value and what is allowed.
nv-ipam and GPU Operator: test_k8s_network.py; the pod, Multus and Volcano: test_k8s_render.py."""

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables

from k8s_schemas import kueue_config_problems, validate
from intent.test_k8s_network import problems
from intent.test_k8s_render import objects, pod_env, render

# --- Kubeflow Trainer v2 ----------------------------------------------------------------------------


def test_the_trainjob_names_a_runtime_that_carries_the_fabric():
    out = render("example-roce", nodes=3)
    cm, runtime, job = objects(out)["jobs/trainjob.yaml"]
    assert cm["kind"] == "ConfigMap" and "allreduce.py" in cm["data"]
    assert (runtime["apiVersion"], runtime["kind"]) == ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime")
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 3, "torch": {}}
    (replicated,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert replicated["name"] == "node"
    assert replicated["template"]["metadata"]["labels"] == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    pod = replicated["template"]["spec"]["template"]
    (c,) = pod["spec"]["containers"]
    # the torch plugin gives the container named node torchrun's PET_* variables
    assert c["name"] == "node" and "command" not in c
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 8 and c["resources"]["limits"]["rdma/linerate_rail7"] == 1
    assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert {e["name"]: e["value"] for e in c["env"]} == pod_env(out)  # the host's nccl.conf derivation
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].count("linerate-rail") == 8
    assert {"name": "script", "mountPath": "/opt/linerate"} in c["volumeMounts"]
    assert job["kind"] == "TrainJob" and job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "linerate"}
    assert job["spec"] == {
        "runtimeRef": {"name": "linerate-torch", "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        "trainer": {"image": "nvcr.io/nvidia/pytorch:24.10-py3", "command": ["torchrun", "/opt/linerate/allreduce.py"], "numNodes": 3, "numProcPerNode": 8},
        "suspend": True,
    }
    assert "jobs/pytorchjob.yaml" not in out["files"]  # the legacy API on request only
    for obj in (cm, runtime, job):
        assert validate(obj) == [], (obj["kind"], validate(obj))


def test_the_legacy_pytorchjob_beside_or_instead_of_the_trainjob():
    both = objects(render("example-roce", training_api="both"))
    assert both["jobs/pytorchjob.yaml"][1]["kind"] == "PyTorchJob" and both["jobs/trainjob.yaml"][2]["kind"] == "TrainJob"
    legacy = objects(render("example-roce", training_api="training-operator"))
    assert "jobs/trainjob.yaml" not in legacy and legacy["jobs/pytorchjob.yaml"][1]["apiVersion"] == "kubeflow.org/v1"


@pytest.mark.parametrize(
    "path,value,expect",
    [
        (("spec", "trainer", "numProcsPerNode"), 8, "spec.trainer.numProcsPerNode: unknown"),
        (("spec", "trainer", "numNodes"), "3", "'3' is not of type 'integer'"),
        (("spec", "podTemplateOverrides"), [], "spec.podTemplateOverrides: unknown"),  # gone in v2.3 (runtimePatches)
    ],
)
def test_a_wrong_trainjob_field_is_refused(path, value, expect):
    job = objects(render())["jobs/trainjob.yaml"][2]
    node = job
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert any(expect in e for e in validate(job)), validate(job)


def test_a_wrong_field_in_the_runtimes_pod_is_refused():
    runtime = objects(render())["jobs/trainjob.yaml"][1]
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["containers"][0]["volumeMount"] = pod["spec"]["containers"][0].pop("volumeMounts")
    assert any("volumeMount" in e for e in validate(runtime)), validate(runtime)


# --- Kueue's waitForPodsReady -----------------------------------------------------------------------


def _kueue_config(out):
    (cm,) = objects(out)["scheduling/kueue-manager-config.yaml"]
    assert (cm["metadata"]["namespace"], cm["metadata"]["name"]) == ("kueue-system", "kueue-manager-config")
    assert validate(cm) == [], validate(cm)
    return yaml.safe_load(cm["data"]["controller_manager_config.yaml"])


def test_kueue_waits_for_every_pod_ready_and_manages_the_rendered_jobs():
    config = _kueue_config(render())
    assert config["waitForPodsReady"] == {
        "timeout": "10m",
        "blockAdmission": True,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
    }
    frameworks = config["integrations"]["frameworks"]
    assert {"kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob"} <= set(frameworks)
    assert "kubeflow.org/pytorchjob" not in frameworks  # off in Kueue's own list, and not rendered
    assert config["leaderElection"]["leaderElect"] is True  # the shipped settings stay
    legacy = _kueue_config(render(training_api="both", kueue_pods_ready_timeout="15m", kueue_block_admission=False, kueue_requeue_limit=3))
    assert "kubeflow.org/pytorchjob" in legacy["integrations"]["frameworks"]
    assert legacy["waitForPodsReady"]["timeout"] == "15m" and legacy["waitForPodsReady"]["blockAdmission"] is False
    assert legacy["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] == 3
    assert "scheduling/kueue-manager-config.yaml" not in render(gang_scheduler="volcano")["files"]


@pytest.mark.parametrize(
    "path,value,expect",
    [
        (("waitForPodsReady", "timeout"), "ten minutes", "waitForPodsReady.timeout: 'ten minutes' is not a duration"),
        (("waitForPodReady",), {"timeout": "5m"}, "waitForPodReady: unknown field"),
        (("waitForPodsReady", "requeuingStrategy", "timestamp"), "Never", "'Never' is not one of ['Creation', 'Eviction']"),
        (("waitForPodsReady", "blockAdmission"), "yes", "waitForPodsReady.blockAdmission: 'yes' is not a bool"),
        (("integrations", "framework"), [], "integrations.framework: unknown field"),
    ],
)
def test_a_wrong_kueue_setting_is_refused(path, value, expect):
    config = _kueue_config(render())
    assert kueue_config_problems(config) == []
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert any(expect in e for e in kueue_config_problems(config)), kueue_config_problems(config)
    del config["waitForPodsReady"]["timeout"]
    assert "waitForPodsReady.timeout: required" in kueue_config_problems(config)


# --- the MPIJob's binding: the bare-metal launchers' rule -----------------------------------------


def layout(numa=(0, 0, 0, 0, 1, 1, 1, 1)):
    """A DGX H100-like node: GPU i near rail i, NUMA nodes as given."""
    devices = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    return [{"local_rank": i, "gpu": i, "gpu_pci": None, "numa": n, "cpus": None, "nic": devices[i], "link": "PIX"} for i, n in enumerate(numa)]


def _mpirun(out):
    mpi = objects(out)["jobs/mpijob.yaml"][0]
    assert validate(mpi) == [], validate(mpi)
    return mpi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]


def test_the_mpijob_binds_ranks_as_the_bare_metal_mpirun_does():
    lay = layout()
    argv = _mpirun(render(layout=lay))
    rule = launchers.rank_binding(lay, "mpirun", "auto")
    assert rule["args"] == ["--map-by", "ppr:4:numa", "--bind-to", "numa"]
    assert argv[4:8] == rule["args"]
    # the bare-metal mpirun line has the same placement and the same per-rank wrapper
    bare = launchers.mpirun_argv({"hosts": ["gpu001"], "test": "all_reduce_perf", "min_bytes": "8", "max_bytes": "8G", "step_factor": 2, "iterations": 20}, lay)
    assert rule["args"] == bare[bare.index("--map-by") : bare.index("--map-by") + 4]
    i = argv.index("sh")
    assert argv[i : i + 4] == ["sh", "-c", launchers.bind_script(lay, rule["wrapper_binder"], "topology"), "linerate-bind"]
    assert "0) export CUDA_VISIBLE_DEVICES=0 NCCL_TESTS_DEVICE=0 UCX_NET_DEVICES=mlx5_0:1" in argv[i + 2]
    assert argv[i + 4 :] == ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"]
    assert "--bind-to numa" not in " ".join(argv[:4]) and argv.count("--bind-to") == 1


@pytest.mark.parametrize(
    "options,args,wrapper",
    [
        ({}, ["--map-by", "ppr:8:node", "--bind-to", "none"], False),  # no layout: unbound
        ({"layout": layout(), "gpus_per_node": 4}, ["--map-by", "ppr:4:node", "--bind-to", "none"], False),
        ({"layout": layout((0, 1, 0, 1, 0, 1, 0, 1))}, ["--map-by", "ppr:8:node", "--bind-to", "none"], True),  # numactl
        ({"layout": layout(), "binding": "none"}, ["--map-by", "ppr:8:node", "--bind-to", "none"], True),
        ({"layout": layout(), "rdma_resources": "sriov"}, ["--map-by", "ppr:4:numa", "--bind-to", "numa"], False),
        ({"layout": layout((0, 1, 0, 1, 0, 1, 0, 1)), "rdma_resources": "sriov"}, ["--map-by", "ppr:8:node", "--bind-to", "none"], False),
    ],
)
def test_the_mpijob_binding_follows_the_layout_and_the_rdma_resources(options, args, wrapper):
    out = render(**options)
    argv = _mpirun(out)
    assert argv[4:8] == args
    assert ("sh" in argv) is wrapper
    if wrapper and "binding" not in options:
        assert "numactl --cpunodebind=1 --membind=1" in argv[argv.index("sh") + 2]
    assert out["binding"]["policy"] in ("mpirun", "numactl", "none") and out["binding"]["why"]


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options,expect",
    [
        ({"training_api": "v1"}, "k8s_render_training_api: 'v1' is not allowed (allowed: trainer | training-operator | both)"),
        ({"ipam": "dhcp"}, "k8s_render_ipam: 'dhcp' is not allowed (allowed: nv-ipam | whereabouts)"),
        ({"gpu_driver": "none"}, "k8s_render_gpu_driver: 'none' is not allowed (allowed: container | host)"),
        ({"binding": "core"}, "k8s_render_binding: 'core' is not allowed (allowed: auto | numactl | none)"),
        ({"kueue_pods_ready_timeout": "5 min"}, "k8s_render_kueue_pods_ready_timeout: '5 min' is not allowed"),
        ({"layout": [{"gpu": 0}]}, "k8s_render_layout_file: [{'gpu': 0}] is not allowed (allowed: the launchers'"),
        ({"node_names": {"gpu001": "GPU_1"}}, "k8s_render_node_names: {'gpu001': 'GPU_1'} is not allowed"),
        (
            {"layout": [dict(layout()[0], nic="mlx5_1")]},
            "k8s_render_layout_file: local rank 0's nic 'mlx5_1' is not allowed (allowed: a rail's device, mlx5_0, mlx5_10",
        ),
    ],
)
def test_bad_api_options_are_refused_with_key_value_and_allowed(options, expect):
    found = problems(**options)
    assert any(p.startswith(expect) for p in found), found


def test_the_new_role_variables_are_validated_with_the_intent():
    found = variables.validate_host(
        {
            "k8s_render_training_api": "v1",
            "k8s_render_ipam": "dhcp",
            "k8s_render_ipam_block_size": 0,
            "k8s_render_kueue_block_admission": "maybe",
            "k8s_render_kueue_pods_ready_timeout": "5 min",
        }
    )
    assert [p.split(":")[0] for p in found] == [
        "k8s_render_ipam",
        "k8s_render_ipam_block_size",
        "k8s_render_kueue_block_admission",
        "k8s_render_kueue_pods_ready_timeout",
        "k8s_render_training_api",
    ]
