"""The job preflight as a Kubernetes init container (intent/k8s_preflight.py): every GPU worker pod of the
rendered jobs gets it, in the job's own image with the pod's RDMA resources, IPC_LOCK and /dev/shm; its
script is the TaskProlog's text with the pod's rails (Multus' net1, net2, ...); every object validates
against the vendored schemas; sriov and a bad version are refused naming the option."""

import subprocess

import yaml

from intent.test_k8s_render import IMAGE, _all, render
from k8s_schemas import validate

from ansible_collections.linerate.fabric.plugins.filter.k8s_render import k8s_render_filter
from ansible_collections.linerate.fabric.plugins.module_utils.intent import k8s_preflight
from intent.test_k8s_render import example


def pod_specs(obj):
    """Every pod spec under an object (templates of jobs, replicated jobs, PodTemplates)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            yield obj
        for value in obj.values():
            yield from pod_specs(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from pod_specs(item)


def test_every_gpu_pod_runs_the_preflight_first_in_its_own_image():
    out = render(preflight_nccl_version="2.21.5")
    objs = _all(out)
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("job-preflight")]
    gpu_pods = [s for o in objs for s in pod_specs(o) if any(v.get("name") == "dshm" for v in s.get("volumes") or [])]
    assert gpu_pods
    for spec in gpu_pods:
        (init,) = spec["initContainers"]
        main = spec["containers"][0]
        assert init["name"] == "linerate-preflight" and init["image"] == main["image"]
        assert init["resources"] == main["resources"] and init["securityContext"] == main["securityContext"]
        assert init["env"] == main["env"]
        assert {"name": "dshm", "mountPath": "/dev/shm"} in init["volumeMounts"]
        key = init["command"][1].rsplit("/", 1)[1]
        # the handshake needs nccl-tests and mpirun: the nccl-tests image's pods only
        assert key == ("job-preflight" if main["image"] == IMAGE else "job-preflight-no-handshake")
        assert {"name": "linerate-preflight", "configMap": {"name": cm["metadata"]["name"], "defaultMode": 0o555}} in spec["volumes"]
    # pods without GPUs (the MPIJob's launcher) run none
    assert all("initContainers" not in s for o in objs for s in pod_specs(o) if s not in gpu_pods)
    text = cm["data"]["job-preflight"]
    assert "RAILS='mlx5_0:1:net1 mlx5_3:1:net2 " in text and "NCCL_WANT=2.21.5" in text and "HANDSHAKE=1" in text
    assert "HANDSHAKE=0" in cm["data"]["job-preflight-no-handshake"]
    assert subprocess.run(["sh", "-n", "/dev/stdin"], input=text, text=True).returncode == 0
    for obj in objs:
        validate(obj)


def test_no_init_container_unless_asked():
    out = render()
    assert not any("initContainers" in s for o in _all(out) for s in pod_specs(o))
    assert "pods/job-preflight.yaml" not in out["files"]


def test_bad_version_and_sriov_are_refused_naming_the_option():
    e, h = example("example-roce")
    out = k8s_render_filter(e, h, {"image": IMAGE, "preflight_nccl_version": "2.21"})
    assert any(p.startswith("k8s_render_preflight_nccl_version: '2.21' is not allowed") for p in out["problems"]), out["problems"]
    out = k8s_render_filter(e, h, {"image": IMAGE, "preflight_nccl_version": "2.21.5", "rdma_resources": "sriov"})
    assert any("not allowed with k8s_render_rdma_resources sriov" in p for p in out["problems"]), out["problems"]
    assert k8s_preflight.check({"preflight_nccl_version": ""}, [], {}) == []
    assert yaml.safe_load("a: 1") == {"a": 1}
