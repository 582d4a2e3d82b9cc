"""Kubernetes rendering (role k8s_render, module_utils/intent/k8s_render.py): every object of both example
inventories validated offline against the upstream CRD schemas (tests/schemas/k8s, SOURCES.md) and the
core API schemas (kubernetes-validate, strict; the validator is tests/unit/k8s_schemas.py); a wrong field
is refused; the pod's NCCL environment is the host's /etc/nccl.conf for the same intent (cross-layer).
The current APIs: test_k8s_network.py (nv-ipam, GPU Operator) and test_k8s_jobs.py (Trainer v2, Kueue's
waitForPodsReady, the MPIJob's binding); the playbook's idempotent run: tests/integration/k8s/test_k8s_render_playbook.py."""

import gzip
import hashlib
import json
import os
import re

import jinja2
import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.filter.k8s_render import k8s_render_filter
from ansible_collections.linerate.fabric.plugins.filter.nccl_env import nccl_env_settings, nccl_tuned_settings
from ansible_collections.linerate.fabric.plugins.filter.rail_ports import rail_ports
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tuned
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import parse_nccl_conf

from k8s_schemas import ROOT, SCHEMAS, validate

IMAGE = "registry.example.org/nccl-tests:2.13.11"


# --- rendering the example inventories ------------------------------------------------------------


def example(name):
    with open(os.path.join(ROOT, "inventory", name, "group_vars", "all", "fabric.yml"), encoding="utf-8") as f:
        fabric = yaml.safe_load(f)["fabric"]
    with open(os.path.join(ROOT, "inventory", name, "group_vars", "gpu_nodes", "rails.yml"), encoding="utf-8") as f:
        plan = yaml.safe_load(f)["rail_plan"]
    hosts = {f"gpu{i:03d}": rail_ports(f"gpu{i:03d}", plan) for i in range(1, 5)}
    return published(fabric), hosts


def render(inventory="example-roce", eff=None, hosts=None, **options):
    e, h = example(inventory)
    options.setdefault("image", IMAGE)
    out = k8s_render_filter(eff or e, hosts or h, options)
    assert out["problems"] == [], out["problems"]
    return out


def objects(out):
    return {path: list(yaml.safe_load_all(text)) for path, text in out["files"].items()}


def _all(out):
    return [obj for objs in objects(out).values() for obj in objs]


VARIANTS = [
    ("example-roce", {}),
    ("example-roce", {"gang_scheduler": "volcano", "cni": "host-device", "gid_index": 3, "training_api": "both"}),
    (
        "example-roce",
        {
            "rdma_resources": "sriov",
            "ofed_driver": "container",
            "ipam": "whereabouts",
            "ofed_version": "doca2.9.1-24.10-1.1.4.0-0",
            "mofed_version": "24.10-1.1.4",
        },
    ),
    ("example-ib", {"training_api": "training-operator", "gpu_driver": "host"}),
    ("example-ib", {"gang_scheduler": "volcano", "rdma_resources": "sriov", "nodes": 2, "gpus_per_node": 4}),
    ("example-ib", {"cni": "host-device", "ipam": "whereabouts", "training_api": "both"}),
]


def expected_kinds(options):
    """The kinds a render with ``options`` writes."""
    api = options.get("training_api", "trainer")
    kinds = {"Namespace", "NicClusterPolicy", "NetworkAttachmentDefinition", "ClusterPolicy", "PodTemplate", "MPIJob"}
    kinds |= {"ConfigMap"} if api != "trainer" or options.get("gang_scheduler", "kueue") == "kueue" else set()
    kinds |= {"ClusterTrainingRuntime", "TrainJob", "ConfigMap"} if api != "training-operator" else set()
    kinds |= {"PyTorchJob"} if api != "trainer" else set()
    kinds |= {"IPPool"} if options.get("ipam", "nv-ipam") == "nv-ipam" else set()
    if options.get("gang_scheduler", "kueue") == "kueue":
        return kinds | {"ResourceFlavor", "ClusterQueue", "LocalQueue", "ConfigMap"}
    return kinds | {"PodGroup"}


def test_vendored_schemas_are_the_upstream_files():
    with open(os.path.join(SCHEMAS, "SOURCES.md"), encoding="utf-8") as f:
        rows = re.findall(r"^\| (\S+\.(?:yaml|go)\.gz) \| .* \| ([0-9a-f]{40}) \| Apache-2\.0 \|$", f.read(), re.M)
    assert sorted(r[0] for r in rows) == sorted(n for n in os.listdir(SCHEMAS) if n.endswith(".gz"))
    for name, blob in rows:
        with gzip.open(os.path.join(SCHEMAS, name), "rb") as f:
            data = f.read()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, name


@pytest.mark.parametrize("inventory,options", VARIANTS)
def test_every_object_validates_against_the_real_schemas(inventory, options):
    out = render(inventory, **options)
    objs = _all(out)
    kinds = [o["kind"] for o in objs]
    assert set(kinds) == expected_kinds(options)
    assert kinds.count("NetworkAttachmentDefinition") == 8  # one per rail
    assert kinds.count("IPPool") in (0, 8)  # nv-ipam: one pool per rail
    for obj in objs:
        assert validate(obj) == [], (obj["kind"], validate(obj))


def test_the_pod_has_rdma_ipc_lock_shm_and_one_rank_per_gpu():
    objs = objects(render("example-roce", nodes=3))
    pod = objs["pods/nccl-pod-template.yaml"][0]["template"]
    c = pod["spec"]["containers"][0]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert [k for k in c["resources"]["limits"] if k.startswith("rdma/")] == [f"rdma/linerate_rail{i}" for i in range(8)]
    assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert pod["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ",".join(f"linerate-rail{i}" for i in range(8))
    mpi = objs["jobs/mpijob.yaml"][0]
    assert mpi["spec"]["slotsPerWorker"] == 8 and mpi["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    argv = mpi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert argv[:6] == ["mpirun", "--allow-run-as-root", "-np", "24", "--map-by", "ppr:8:node"]
    assert argv[-9:] == ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"]
    # the ranks are spawned over ssh, not from the pod's environment: every NCCL variable is forwarded
    env = {e["name"] for e in c["env"]}
    assert {argv[i + 1] for i, a in enumerate(argv) if a == "-x"} == env
    assert mpi["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "linerate"}
    cq = objs["scheduling/kueue.yaml"][1]
    quota = {r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quota["nvidia.com/gpu"] == 24 and quota["rdma/linerate_rail7"] == 3


def test_rails_get_their_subnet_and_keep_the_hosts_addresses_out():
    objs = objects(render("example-roce"))
    conf = json.loads(objs["multus/network-attachment-definitions.yaml"][2]["spec"]["config"])
    assert conf["type"] == "macvlan" and conf["master"] == "enp75s0np0" and conf["mtu"] == 4200
    # nv-ipam (the default): the rail's IPPool, a block of its subnet per node, the hosts' addresses excluded
    assert conf["ipam"] == {"type": "nv-ipam", "poolName": "linerate-rail2"}
    pool = objs["network-operator/nv-ipam-pools.yaml"][2]
    assert (pool["kind"], pool["metadata"]) == ("IPPool", {"name": "linerate-rail2", "namespace": "nvidia-network-operator"})
    assert pool["spec"]["subnet"] == "192.168.2.0/24" and pool["spec"]["perNodeBlockSize"] == 16
    assert pool["spec"]["exclusions"] == [{"startIP": "192.168.2.1", "endIP": "192.168.2.4"}]
    where = objects(render("example-roce", ipam="whereabouts"))
    conf = json.loads(where["multus/network-attachment-definitions.yaml"][2]["spec"]["config"])
    assert conf["ipam"] == {"type": "whereabouts", "range": "192.168.2.0/24", "exclude": [f"192.168.2.{i}/32" for i in range(1, 5)]}
    assert "network-operator/nv-ipam-pools.yaml" not in where
    assert "nvIpam" not in where["network-operator/nicclusterpolicy.yaml"][0]["spec"]
    ib = json.loads(objects(render("example-ib", ipam="whereabouts"))["multus/network-attachment-definitions.yaml"][0]["spec"]["config"])
    assert (ib["type"], ib["master"], ib["ipam"]["range"]) == ("ipoib", "ibp0s0", "10.0.0.0/16")


def test_volcano_gang_is_the_whole_job():
    objs = objects(render("example-roce", gang_scheduler="volcano", training_api="both"))
    groups = {g["metadata"]["name"]: g["spec"]["minMember"] for g in objs["scheduling/volcano-podgroups.yaml"]}
    assert groups == {"linerate-allreduce": 4, "linerate-nccl-tests": 5}  # 4 workers (+ the launcher)
    # Trainer v2 makes the TrainJob's PodGroup itself (the runtime's podGroupPolicy): none rendered for it
    runtime = objs["jobs/trainjob.yaml"][1]
    assert runtime["kind"] == "ClusterTrainingRuntime" and runtime["spec"]["podGroupPolicy"] == {"volcano": {}}
    trainer_only = objects(render("example-roce", gang_scheduler="volcano"))["scheduling/volcano-podgroups.yaml"]
    assert [g["metadata"]["name"] for g in trainer_only] == ["linerate-nccl-tests"]
    mpi = objs["jobs/mpijob.yaml"][0]
    assert mpi["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 5, "queue": "default"}
    for spec in mpi["spec"]["mpiReplicaSpecs"].values():
        assert spec["template"]["spec"]["schedulerName"] == "volcano"
        assert spec["template"]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "linerate-nccl-tests"


@pytest.mark.parametrize(
    "mutate,expect",
    [
        (lambda o: o["spec"].__setitem__("slotPerWorker", o["spec"].pop("slotsPerWorker")), "spec.slotPerWorker: unknown"),
        (lambda o: o["spec"]["mpiReplicaSpecs"]["Worker"].__setitem__("replicas", "4"), "'4' is not of type 'integer'"),
        (lambda o: o["spec"].__setitem__("mpiImplementation", "OpenMPl"), "is not one of"),
        (lambda o: o["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].__setitem__("volumeMount", []), "volumeMount"),
        (
            lambda o: o["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"].__setitem__(
                "add", "IPC_LOCK"
            ),
            "is not of type 'array'",
        ),
    ],
)
def test_a_wrong_field_is_refused(mutate, expect):
    mpi = objects(render())["jobs/mpijob.yaml"][0]
    assert validate(mpi) == []
    mutate(mpi)
    assert any(expect in e for e in validate(mpi)), validate(mpi)


def test_a_wrong_field_in_the_operator_and_queue_objects_is_refused():
    objs = objects(render())
    ncp = objs["network-operator/nicclusterpolicy.yaml"][0]
    ncp["spec"]["rdmaSharedDevicePlugin"]["imag"] = ncp["spec"]["rdmaSharedDevicePlugin"].pop("image")
    assert any("rdmaSharedDevicePlugin" in e for e in validate(ncp)), validate(ncp)
    cq = objs["scheduling/kueue.yaml"][1]
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = [1]
    assert validate(cq)
    nad = objs["multus/network-attachment-definitions.yaml"][0]
    nad["spec"]["config"] = nad["spec"]["config"].replace('"master"', '"mastr"')
    assert "config.master: missing" in validate(nad)


# --- cross-layer: the pod's NCCL environment is the host's nccl.conf ------------------------------


def host_nccl_conf(eff, ports, role_vars=None, tuned=None):
    """/etc/nccl.conf as role nccl_env writes it: its defaults, its task's options, its template."""
    with open(os.path.join(ROOT, "roles", "nccl_env", "defaults", "main.yml"), encoding="utf-8") as f:
        defaults = yaml.safe_load(f)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    ctx = {"fabric_effective": eff, "rdma_ports": ports}
    values = {}
    for key in ("transport", "down_ports", "gid_index", "ib_tc", "socket_ifname", "gdr_level", "net", "overrides"):
        key = f"nccl_env_{key}"
        raw = (role_vars or {}).get(key, defaults[key])
        values[key] = env.from_string(raw).render(ctx) if isinstance(raw, str) and "{{" in raw else raw
    values["nccl_env_ports"] = ports
    # what rdma_facts reports for the cabled ports: up, RoCE v2 IPv4 GID at index 3
    rdma = {"ports": [{"device": p["device"], "port": 1, "netdev": p["netdev"], "up": True, "roce_v2_ipv4_gid_index": 3} for p in ports]}
    ib_tc = values["nccl_env_ib_tc"]
    result = nccl_env_settings(
        rdma,
        ports,
        {
            "transport": values["nccl_env_transport"],
            "down_ports": values["nccl_env_down_ports"],
            "gid_index": values["nccl_env_gid_index"],
            "ib_tc": None if ib_tc in ("None", "") else ib_tc,
            "socket_ifname": values["nccl_env_socket_ifname"],
            "gdr_level": values["nccl_env_gdr_level"],
            "net": values["nccl_env_net"],
            "intent_overrides": eff["nccl"]["overrides"],
            "overrides": values["nccl_env_overrides"],
            "tuned": tuned or {},
        },
    )
    assert result["problems"] == []
    with open(os.path.join(ROOT, "roles", "nccl_env", "templates", "etc", "nccl.conf.j2"), encoding="utf-8") as f:
        text = env.from_string(f.read()).render(ansible_managed="managed", nccl_env_result=result)
    return parse_nccl_conf(text)


def pod_env(out):
    pod = objects(out)["pods/nccl-pod-template.yaml"][0]["template"]
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}


@pytest.mark.parametrize("inventory", ["example-roce", "example-ib"])
def test_the_pod_nccl_environment_is_the_hosts_nccl_conf(inventory):
    eff, hosts = example(inventory)
    conf = host_nccl_conf(eff, hosts["gpu001"])
    # with the GID index the host uses forced on both layers, every variable is the same
    assert pod_env(render(inventory, gid_index=3)) == conf
    # left to NCCL in the pod (the default), only the GID selection differs, and says so
    pod = pod_env(render(inventory))
    assert {k: v for k, v in conf.items() if k != "NCCL_IB_GID_INDEX"} == {k: v for k, v in pod.items() if k != "NCCL_IB_ROCE_VERSION_NUM"}
    if inventory == "example-roce":
        assert conf["NCCL_IB_TC"] == "104" and pod.get("NCCL_IB_ROCE_VERSION_NUM") == "2"
    else:  # InfiniBand: no RoCE GID, no traffic class
        assert not {"NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_ROCE_VERSION_NUM"} & set(pod)


def test_the_pod_follows_the_intent_like_the_host():
    eff, hosts = example("example-roce")
    fabric = {
        "name": "x",
        "transport": "roce",
        "roce": {"data_dscp": 34, "no_drop_priority": 4},
        "nccl": {"socket_ifname": "eth0", "gdr_level": "SYS", "overrides": {"NCCL_IB_SL": 4, "NCCL_IB_RETRY_CNT": 7}},
    }
    other = published(fabric)
    conf = host_nccl_conf(other, hosts["gpu001"], {"nccl_env_overrides": {"NCCL_IB_TIMEOUT": "22"}})
    pod = pod_env(render(eff=other, hosts=hosts, gid_index=3, nccl_overrides={"NCCL_IB_TIMEOUT": "22"}))
    # the explicit GDR level is the per-job file's (/etc/nccl/tuned-job.env), which the pods carry too
    assert "NCCL_NET_GDR_LEVEL" not in conf and pod == dict(conf, NCCL_NET_GDR_LEVEL="SYS")
    assert (pod["NCCL_IB_TC"], pod["NCCL_IB_SL"], pod["NCCL_NET_GDR_LEVEL"], pod["NCCL_IB_TIMEOUT"]) == (str(other["derived"]["tos"]), "4", "SYS", "22")


def test_the_tuning_sweeps_rows_reach_the_pods_as_the_per_job_environment_and_a_mounted_config():
    """The tuned file's rows (docs/tuning.md): the GPU pods carry NCCL_TUNER_PLUGIN / NCCL_TUNER_CONFIG_FILE and
    mount the tuner config from a ConfigMap there; no Debugging-section variable; the launcher pod mounts nothing."""
    row = {
        "collective": "allreduce",
        "min_bytes": 64 << 20,
        "max_bytes": 256 << 20,
        "algorithm": "ring",
        "protocol": "ll128",
        "channels": -1,
        "nodes": 4,
        "ranks": 32,
        "pipe_ops": -1,
        "reg_buff": -1,
    }
    doc = nccl_tuned.tuned_document([row], {"test": "all_reduce_perf"})
    tuned = nccl_tuned_settings(doc, "/etc/nccl/tuner.conf")
    out = render(gid_index=3, nccl_tuned=tuned)
    env = pod_env(out)
    assert (env["NCCL_TUNER_PLUGIN"], env["NCCL_TUNER_CONFIG_FILE"]) == ("libnccl-tuner-example.so", "/etc/nccl/tuner.conf")
    # tuning adds no Debugging-section variable (an explicit NCCL_NET_GDR_LEVEL is the intent's, not tuning's)
    assert nccl_tuned.debugging_keys(env) == nccl_tuned.debugging_keys(pod_env(render(gid_index=3)))
    (cm,) = objects(out)["nccl/tuner-config.yaml"]
    assert cm["kind"] == "ConfigMap" and cm["data"]["tuner.conf"].splitlines()[-1] == "allreduce,67108864,268435456,ring,ll128,-1,4,32,-1,-1"
    pod = objects(out)["pods/nccl-pod-template.yaml"][0]["template"]["spec"]
    assert {"name": "nccl-tuner", "configMap": {"name": cm["metadata"]["name"]}} in pod["volumes"]
    assert {"name": "nccl-tuner", "mountPath": "/etc/nccl", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    mpi = objects(out)["jobs/mpijob.yaml"][0]["spec"]["mpiReplicaSpecs"]
    assert not any(v["name"] == "nccl-tuner" for v in mpi["Launcher"]["template"]["spec"].get("volumes") or [])
    assert any(v["name"] == "nccl-tuner" for v in mpi["Worker"]["template"]["spec"]["volumes"])
    for obj in _all(out):  # the ConfigMap and every pod with its mount, against the real schemas
        assert validate(obj) == [], (obj["kind"], validate(obj))
    # NCCL's defaults (no rows): nothing of the tuner
    plain = render(gid_index=3, nccl_tuned=nccl_tuned_settings(nccl_tuned.tuned_document([], {}), "/etc/nccl/tuner.conf"))
    assert "nccl/tuner-config.yaml" not in plain["files"] and "NCCL_TUNER_PLUGIN" not in pod_env(plain)


def test_pod_local_settings_are_the_pods():
    eff, hosts = example("example-roce")
    eff = published({**eff, "nccl": {"socket_ifname": "=bond0", "gdr_level": "PHB", "overrides": {}}})
    pod = pod_env(render(eff=eff, hosts=hosts, rdma_resources="sriov"))
    assert pod["NCCL_SOCKET_IFNAME"] == "eth0"  # the pod network's interface, not the host's bond
    assert "NCCL_IB_HCA" not in pod  # a VF's RDMA device is not the PF's name


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options,expect",
    [
        ({"cni": "ipoib"}, "k8s_render_cni: 'ipoib' is not allowed (allowed: auto | macvlan | host-device on a roce"),
        ({"gang_scheduler": "slurm"}, "k8s_render_gang_scheduler: 'slurm' is not allowed (allowed: kueue | volcano)"),
        ({"image": ""}, "k8s_render_image: '' is not allowed (allowed: a container image reference"),
        (
            {"ofed_driver": "container", "ofed_version": "doca3.4.1-26.04-1.1.0.0-1", "mofed_version": "24.10-1.1.4"},
            "k8s_render_ofed_version: 'doca3.4.1-26.04-1.1.0.0-1' is not allowed (allowed: a doca-driver tag of the "
            "pinned MOFED release mofed_version '24.10-1.1.4'",
        ),
        ({"nodes": 9}, "k8s_render_nodes: 9 is not allowed (allowed: 0 (every GPU node) or 1..4"),
    ],
)
def test_bad_options_are_refused_with_key_value_and_allowed(options, expect):
    eff, hosts = example("example-roce")
    out = k8s_render_filter(eff, hosts, {"image": IMAGE, **options})
    assert out["files"] == {}
    assert any(p.startswith(expect) for p in out["problems"]), out["problems"]


def test_nodes_cabled_differently_are_refused():
    eff, hosts = example("example-roce")
    hosts["gpu003"][5] = dict(hosts["gpu003"][5], netdev="enp1s0np0")
    del hosts["gpu004"][7]
    problems = k8s_render_filter(eff, hosts, {"image": IMAGE})["problems"]
    assert "gpu003: rdma_ports[5].netdev: 'enp1s0np0' is not allowed (allowed: 'enp170s0np0', as on gpu001" in "\n".join(problems)
    assert any(p.startswith("gpu004: rdma_ports: 7 port(s) is not allowed (allowed: 8 ports") for p in problems)


def test_role_variables_are_validated_with_the_intent():
    problems = variables.validate_host(
        {"k8s_render_gang_scheduler": "slurm", "k8s_render_apply": "maybe", "k8s_render_shm_size": "lots", "k8s_render_gid_index": 3}
    )
    assert problems == [
        "k8s_render_apply: 'maybe' is not allowed (allowed: " + variables.BOOL_ALLOWED + ")",
        "k8s_render_gang_scheduler: 'slurm' is not allowed (allowed: kueue | volcano)",
        "k8s_render_shm_size: 'lots' is not allowed (allowed: a Kubernetes quantity such as 64Gi)",
    ]
