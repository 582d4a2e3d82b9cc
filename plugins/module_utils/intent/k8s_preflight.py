# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""The job's preflight as a Kubernetes init container (docs/kubernetes.md, docs/launchers.md).

The same script as Slurm's TaskProlog (intent/preflight.py), rendered from the same derivation,
in a ConfigMap, run by an init container of every GPU worker pod: in the job's own image, with
the pod's GPUs and RDMA resources, ``IPC_LOCK``, ``/dev/shm`` and NCCL's variables, so it sees what
the job will. A failing check fails the pod's init (the kubelet restarts it per the pod's policy;
the job does not start). The rails as the pod sees them: the hosts' RDMA devices (the RDMA shared
device plugin exposes them by name) and Multus' interfaces ``net1``, ``net2``, ... in the order of
the pod's networks annotation. The 2-rank handshake needs nccl-tests and mpirun in the image: on
for pods of the nccl-tests image (``image``), off for the training image's pods.
"""

from __future__ import absolute_import, division, print_function

from ansible_collections.linerate.fabric.plugins.module_utils.intent import preflight

__metaclass__ = type

MOUNT = "/etc/linerate"
KEY = "job-preflight"
CONTAINER = "linerate-preflight"


def script(o: dict, rail_list: list, env: dict, handshake: bool) -> str:
    """The preflight text for a pod: rails as Multus names them, NCCL's pod variables."""
    rails = [{"device": r["device"], "port": int(r.get("port", 1)), "netdev": f"net{i + 1}"} for i, r in enumerate(rail_list)]
    return preflight.preflight_script({"rails": rails, "settings": env, "nccl_version": o["preflight_nccl_version"], "output": "plain", "handshake": handshake})


def check(o: dict, rail_list: list, env: dict) -> list:
    """Problems of the options for the init container, with the option's own name."""
    if not o.get("preflight_nccl_version"):
        return []
    if o.get("rdma_resources") == "sriov":
        return [
            f"k8s_render_preflight_nccl_version: {o['preflight_nccl_version']!r} is not allowed with "
            "k8s_render_rdma_resources sriov (allowed: '' there: a pod's VFs have names no inventory knows, "
            "so the preflight cannot name its rails)"
        ]
    try:
        script(o, rail_list, env, True)
    except ValueError as e:
        return [str(e).replace("job preflight: nccl_version", "k8s_render_preflight_nccl_version")]
    return []


def configmap(o: dict, name: str, rail_list: list, env: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": o["namespace"]},
        "data": {KEY: script(o, rail_list, env, True), KEY + "-no-handshake": script(o, rail_list, env, False)},
    }


def _init_container(main: dict, handshake: bool) -> dict:
    c = {
        "name": CONTAINER,
        "image": main["image"],
        "imagePullPolicy": main.get("imagePullPolicy", "IfNotPresent"),
        "command": ["sh", f"{MOUNT}/{KEY if handshake else KEY + '-no-handshake'}"],
        "env": list(main.get("env") or []),
    }
    for key in ("resources", "securityContext"):
        if key in main:
            c[key] = main[key]
    mount = {"name": CONTAINER, "mountPath": MOUNT, "readOnly": True}
    c["volumeMounts"] = list(main.get("volumeMounts") or []) + [mount]
    return c


def add(node, cm_name: str, nccl_image: str) -> int:
    """Give every pod spec under ``node`` whose container requests RDMA resources (a GPU pod: it has the
    dshm volume) the preflight init container; returns how many pod specs got one."""
    if isinstance(node, list):
        return sum(add(item, cm_name, nccl_image) for item in node)
    if not isinstance(node, dict):
        return 0
    count = 0
    containers = node.get("containers")
    if isinstance(containers, list) and containers and any(v.get("name") == "dshm" for v in node.get("volumes") or []):
        main = containers[0]
        node.setdefault("initContainers", []).append(_init_container(main, main.get("image") == nccl_image))
        node["volumes"].append({"name": CONTAINER, "configMap": {"name": cm_name, "defaultMode": 0o555}})
        count += 1
    for value in node.values():
        if isinstance(value, (dict, list)):
            count += add(value, cm_name, nccl_image)
    return count
