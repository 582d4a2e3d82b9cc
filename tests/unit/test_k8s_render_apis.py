"""Kubernetes on current APIs (issue 37 item 5), rendered and validated offline against the upstream schemas
(tests/schemas/k8s/SOURCES.md; the validator: tests/unit/k8s_schemas.py):

- Kubeflow Trainer v2: a ClusterTrainingRuntime carrying the fabric's pod, a TrainJob naming it; the legacy
  PyTorchJob only on request;
- nv-ipam: an IPPool per L2 rail, a CIDRPool per L3 rail (each node's own prefix and gateway), the refusals;
- GPU Operator's ClusterPolicy with GPUDirect RDMA (driver.rdma.enabled, useHostMofed);
- Kueue's manager Configuration with waitForPodsReady, checked against Kueue's Go types;
- the MPIJob's ranks bound by the bare-metal launchers' rule (launchers.rank_binding / bind_script)."""
import copy
import json

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.filter.k8s_render import k8s_render_filter
from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables as intent_vars

from k8s_schemas import kueue_config_problems, validate
from intent.test_k8s_render import IMAGE, example, objects, pod_env, render

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
    assert {e["name"]: e["value"] for e in c["env"]} == pod_env(out)      # the host's nccl.conf derivation
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].count("linerate-rail") == 8
    assert {"name": "script", "mountPath": "/opt/linerate"} in c["volumeMounts"]
    assert job["kind"] == "TrainJob" and job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "linerate"}
    assert job["spec"] == {
        "runtimeRef": {"name": "linerate-torch", "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        "trainer": {"image": "nvcr.io/nvidia/pytorch:24.10-py3", "command": ["torchrun", "/opt/linerate/allreduce.py"],
                    "numNodes": 3, "numProcPerNode": 8},
        "suspend": True}
    assert "jobs/pytorchjob.yaml" not in out["files"]          # the legacy API on request only
    for obj in (cm, runtime, job):
        assert validate(obj) == [], (obj["kind"], validate(obj))


def test_the_legacy_pytorchjob_beside_or_instead_of_the_trainjob():
    both = objects(render("example-roce", training_api="both"))
    assert both["jobs/pytorchjob.yaml"][1]["kind"] == "PyTorchJob" and both["jobs/trainjob.yaml"][2]["kind"] == "TrainJob"
    legacy = objects(render("example-roce", training_api="training-operator"))
    assert "jobs/trainjob.yaml" not in legacy and legacy["jobs/pytorchjob.yaml"][1]["apiVersion"] == "kubeflow.org/v1"


@pytest.mark.parametrize("path,value,expect", [
    (("spec", "trainer", "numProcsPerNode"), 8, "spec.trainer.numProcsPerNode: unknown"),
    (("spec", "trainer", "numNodes"), "3", "'3' is not of type 'integer'"),
    (("spec", "podTemplateOverrides"), [], "spec.podTemplateOverrides: unknown"),   # gone in v2.3 (runtimePatches)
])
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


# --- nv-ipam: L2 and L3 rails -----------------------------------------------------------------------

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
        {"nodeName": "gpu001", "prefix": "10.3.1.0/28"}, {"nodeName": "gpu002.cluster.local", "prefix": "10.3.2.0/28"},
        {"nodeName": "gpu003", "prefix": "10.3.3.0/28"}, {"nodeName": "gpu004", "prefix": "10.3.4.0/28"}]
    assert rail3["spec"]["exclusions"] == [{"startIP": f"10.3.{n}.2", "endIP": f"10.3.{n}.2"} for n in range(1, 5)]
    assert rail3["spec"]["routes"] == [{"dst": "10.3.0.0/21"}]     # the other nodes' prefixes, via the gateway
    conf = json.loads(objs["multus/network-attachment-definitions.yaml"][3]["spec"]["config"])
    assert conf["ipam"] == {"type": "nv-ipam", "poolName": "linerate-rail3", "poolType": "cidrpool"}
    ncp = objs["network-operator/nicclusterpolicy.yaml"][0]["spec"]["nvIpam"]
    assert ncp == {"image": "nvidia-k8s-ipam", "enableWebhook": False, "repository": "nvcr.io/nvidia/mellanox",
                   "version": "network-operator-v26.4.1"}
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


@pytest.mark.parametrize("change,options,expect", [
    ("l3", {"ipam": "whereabouts"}, "k8s_render_ipam: 'whereabouts' is not allowed (allowed: nv-ipam: rail 0 is an L3"),
    ("mixed", {}, "gpu003: rdma_ports[0].address: '10.0.3.2/28' is not allowed (allowed: an address in 10.0.1.0/28, "
                  "rail 0's subnet on gpu001, gpu002 (an L2 rail), or every node in its own prefix"),
    ("p2p", {}, "gpu001: rdma_ports[0].address: '10.0.1.0/31' is not allowed (allowed: a prefix of /30 or shorter"),
    ("l3", {"ipam_gateway_index": 2}, "k8s_render_ipam_gateway_index: 2 is not allowed (allowed: the index of the "
                                      "leaf's address in each node's prefix: 10.0.1.2 is gpu001's own"),
    ("l3", {"ipam_gateway_index": 15}, "k8s_render_ipam_gateway_index: 15 is not allowed (allowed: 1..14"),
    ("lengths", {}, "rdma_ports[0].address: prefix lengths [27, 28] are not allowed (allowed: one prefix length"),
    ("l2", {"ipam_block_size": 64}, "k8s_render_ipam_block_size: 64 is not allowed (allowed: 1..62: rail 0's subnet "
                                    "192.168.0.0/24 gives each of 4 nodes a block"),
])
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


# --- GPU Operator ----------------------------------------------------------------------------------

def test_the_cluster_policy_turns_gpudirect_rdma_on_over_the_mofed_linerate_pins():
    policy = objects(render())["gpu-operator/clusterpolicy.yaml"][0]
    assert (policy["apiVersion"], policy["kind"], policy["metadata"]) == ("nvidia.com/v1", "ClusterPolicy",
                                                                          {"name": "cluster-policy"})
    assert policy["spec"]["driver"] == {"enabled": True, "rdma": {"enabled": True, "useHostMofed": True}}
    assert validate(policy) == []
    container = objects(render(ofed_driver="container", ofed_version="doca3.4.1-26.04-1.1.0.0-1"))
    assert container["gpu-operator/clusterpolicy.yaml"][0]["spec"]["driver"]["rdma"] == {"enabled": True,
                                                                                        "useHostMofed": False}
    host = objects(render(gpu_driver="host"))["gpu-operator/clusterpolicy.yaml"][0]
    assert host["spec"]["driver"] == {"enabled": False}        # the host's driver and nvidia_peermem role
    policy["spec"]["driver"]["rdma"]["useHostMOFED"] = policy["spec"]["driver"]["rdma"].pop("useHostMofed")
    assert any("driver.rdma.useHostMOFED: unknown" in e for e in validate(policy)), validate(policy)
    del policy["spec"]["toolkit"]
    assert any("'toolkit' is a required property" in e for e in validate(policy)), validate(policy)


# --- Kueue's waitForPodsReady -----------------------------------------------------------------------

def _kueue_config(out):
    (cm,) = objects(out)["scheduling/kueue-manager-config.yaml"]
    assert (cm["metadata"]["namespace"], cm["metadata"]["name"]) == ("kueue-system", "kueue-manager-config")
    assert validate(cm) == [], validate(cm)
    return yaml.safe_load(cm["data"]["controller_manager_config.yaml"])


def test_kueue_waits_for_every_pod_ready_and_manages_the_rendered_jobs():
    config = _kueue_config(render())
    assert config["waitForPodsReady"] == {"timeout": "10m", "blockAdmission": True, "requeuingStrategy": {
        "timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600}}
    frameworks = config["integrations"]["frameworks"]
    assert {"kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob"} <= set(frameworks)
    assert "kubeflow.org/pytorchjob" not in frameworks        # off in Kueue's own list, and not rendered
    assert config["leaderElection"]["leaderElect"] is True    # the shipped settings stay
    legacy = _kueue_config(render(training_api="both", kueue_pods_ready_timeout="15m", kueue_block_admission=False,
                                  kueue_requeue_limit=3))
    assert "kubeflow.org/pytorchjob" in legacy["integrations"]["frameworks"]
    assert legacy["waitForPodsReady"]["timeout"] == "15m" and legacy["waitForPodsReady"]["blockAdmission"] is False
    assert legacy["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] == 3
    assert "scheduling/kueue-manager-config.yaml" not in render(gang_scheduler="volcano")["files"]


@pytest.mark.parametrize("path,value,expect", [
    (("waitForPodsReady", "timeout"), "ten minutes", "waitForPodsReady.timeout: 'ten minutes' is not a duration"),
    (("waitForPodReady",), {"timeout": "5m"}, "waitForPodReady: unknown field"),
    (("waitForPodsReady", "requeuingStrategy", "timestamp"), "Never", "'Never' is not one of ['Creation', 'Eviction']"),
    (("waitForPodsReady", "blockAdmission"), "yes", "waitForPodsReady.blockAdmission: 'yes' is not a bool"),
    (("integrations", "framework"), [], "integrations.framework: unknown field"),
])
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
    return [{"local_rank": i, "gpu": i, "gpu_pci": None, "numa": n, "cpus": None, "nic": devices[i], "link": "PIX"}
            for i, n in enumerate(numa)]


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
    bare = launchers.mpirun_argv({"hosts": ["gpu001"], "test": "all_reduce_perf", "min_bytes": "8", "max_bytes": "8G",
                                  "step_factor": 2, "iterations": 20}, lay)
    assert rule["args"] == bare[bare.index("--map-by"):bare.index("--map-by") + 4]
    i = argv.index("sh")
    assert argv[i:i + 4] == ["sh", "-c", launchers.bind_script(lay, rule["wrapper_binder"], "topology"), "linerate-bind"]
    assert "0) export CUDA_VISIBLE_DEVICES=0 NCCL_TESTS_DEVICE=0 UCX_NET_DEVICES=mlx5_0:1" in argv[i + 2]
    assert argv[i + 4:] == ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"]
    assert "--bind-to numa" not in " ".join(argv[:4]) and argv.count("--bind-to") == 1


@pytest.mark.parametrize("options,args,wrapper", [
    ({}, ["--map-by", "ppr:8:node", "--bind-to", "none"], False),                      # no layout: unbound
    ({"layout": layout(), "gpus_per_node": 4}, ["--map-by", "ppr:4:node", "--bind-to", "none"], False),
    ({"layout": layout((0, 1, 0, 1, 0, 1, 0, 1))}, ["--map-by", "ppr:8:node", "--bind-to", "none"], True),  # numactl
    ({"layout": layout(), "binding": "none"}, ["--map-by", "ppr:8:node", "--bind-to", "none"], True),
    ({"layout": layout(), "rdma_resources": "sriov"}, ["--map-by", "ppr:4:numa", "--bind-to", "numa"], False),
    ({"layout": layout((0, 1, 0, 1, 0, 1, 0, 1)), "rdma_resources": "sriov"},
     ["--map-by", "ppr:8:node", "--bind-to", "none"], False),
])
def test_the_mpijob_binding_follows_the_layout_and_the_rdma_resources(options, args, wrapper):
    out = render(**options)
    argv = _mpirun(out)
    assert argv[4:8] == args
    assert ("sh" in argv) is wrapper
    if wrapper and "binding" not in options:
        assert "numactl --cpunodebind=1 --membind=1" in argv[argv.index("sh") + 2]
    assert out["binding"]["policy"] in ("mpirun", "numactl", "none") and out["binding"]["why"]


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("options,expect", [
    ({"training_api": "v1"}, "k8s_render_training_api: 'v1' is not allowed (allowed: trainer | training-operator | both)"),
    ({"ipam": "dhcp"}, "k8s_render_ipam: 'dhcp' is not allowed (allowed: nv-ipam | whereabouts)"),
    ({"gpu_driver": "none"}, "k8s_render_gpu_driver: 'none' is not allowed (allowed: container | host)"),
    ({"binding": "core"}, "k8s_render_binding: 'core' is not allowed (allowed: auto | numactl | none)"),
    ({"kueue_pods_ready_timeout": "5 min"}, "k8s_render_kueue_pods_ready_timeout: '5 min' is not allowed"),
    ({"layout": [{"gpu": 0}]}, "k8s_render_layout_file: [{'gpu': 0}] is not allowed (allowed: the launchers'"),
    ({"node_names": {"gpu001": "GPU_1"}}, "k8s_render_node_names: {'gpu001': 'GPU_1'} is not allowed"),
    ({"layout": [dict(layout()[0], nic="mlx5_1")]}, "k8s_render_layout_file: local rank 0's nic 'mlx5_1' is not "
                                                    "allowed (allowed: a rail's device, mlx5_0, mlx5_10"),
])
def test_bad_api_options_are_refused_with_key_value_and_allowed(options, expect):
    found = problems(**options)
    assert any(p.startswith(expect) for p in found), found


def test_the_new_role_variables_are_validated_with_the_intent():
    found = intent_vars.validate_host({"k8s_render_training_api": "v1", "k8s_render_ipam": "dhcp",
                                       "k8s_render_ipam_block_size": 0, "k8s_render_kueue_block_admission": "maybe",
                                       "k8s_render_kueue_pods_ready_timeout": "5 min"})
    assert [p.split(":")[0] for p in found] == ["k8s_render_ipam", "k8s_render_ipam_block_size",
                                                "k8s_render_kueue_block_admission",
                                                "k8s_render_kueue_pods_ready_timeout", "k8s_render_training_api"]
