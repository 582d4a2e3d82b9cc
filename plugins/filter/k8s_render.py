"""Filter: the Kubernetes objects of the training side, from the validated intent.

``fabric_effective | linerate.fabric.k8s_render(hosts, options)`` returns
``{"files": {relative path: YAML text}, "nccl_env": {NCCL_*: str}, "binding": {policy, why, layout},
"problems": [msg]}`` (``binding``: how the MPIJob's ranks are bound, launchers.rank_binding's rule).

The NCCL variables are the host's: the same ``nccl_env_settings`` call the
nccl_env role makes for ``/etc/nccl.conf``, with the intent's derived ToS and
overrides, every cabled port taken as up (the render reads no host),
then the pod-local ones as the pod sees them (module_utils/intent/k8s_render.py
``POD_LOCAL``), then the per-job environment nccl_env writes to /etc/nccl/tuned-job.env: the
intent's explicit GDR level (NCCL_NET_GDR_LEVEL; none with ``auto``) and the tuning sweep's tuner
plugin. The logic is in module_utils/intent/k8s_render.py.
"""

import yaml
from ansible_collections.linerate.fabric.plugins.module_utils.intent import k8s_render
from ansible_collections.linerate.fabric.plugins.module_utils.intent.k8s_base import SUPPORTED
from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_env import nccl_env_settings

# A placeholder GID index for the host derivation when none is forced: the pod
# does not use it (pod_nccl_env drops NCCL_IB_GID_INDEX unless one is forced).
_PLACEHOLDER_GID = 3
HEADER = (
    "# Rendered by linerate (role k8s_render, linerate.fabric.k8s) from the fabric intent; do not edit:\n"
    "# change the intent or the k8s_render_* variables and render again. Validated against: {versions}.\n"
)


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def host_nccl_settings(eff, ports, gid_index="", net="IB", overrides=None, tuned=None):
    """What nccl_env writes into /etc/nccl.conf (``settings``) and the per-job file (``job``) for a host
    with these cabled ports, all up."""
    gid = _PLACEHOLDER_GID if gid_index in ("", None) else int(gid_index)
    rdma = {"ports": [], "devices": {}}
    for p in ports:
        port = int(p.get("port", 1))
        rdma["ports"].append({"device": p["device"], "port": port, "netdev": p.get("netdev"), "up": True, "roce_v2_ipv4_gid_index": gid})
        rdma["devices"][p["device"]] = {"ports": {port: {"gids": [{"index": gid, "version": "v2"}]}}}
    derived = eff.get("derived") or {}
    result = nccl_env_settings(
        rdma,
        ports,
        {
            "transport": eff["transport"],
            "down_ports": "fail",
            "gid_index": gid_index,
            "ib_tc": derived.get("tos"),
            "socket_ifname": eff["nccl"]["socket_ifname"],
            "gdr_level": eff["nccl"]["gdr_level"],
            "net": net,
            "intent_overrides": eff["nccl"].get("overrides") or {},
            "overrides": overrides or {},
            "tuned": tuned or {},
        },
    )
    return result


def plain(value):
    """Ansible's tagged str/int/dict subclasses as the plain types (YAML's safe dumper knows those only)."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def to_yaml(objects):
    versions = ", ".join(f"{k} {v}" for k, v in SUPPORTED.items())
    return HEADER.format(versions=versions) + yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True, width=120)


def k8s_render_filter(fabric_effective, hosts, options=None):
    fabric_effective, hosts, options = plain(fabric_effective), plain(hosts), dict(plain(options or {}))
    net = options.pop("nccl_net", "IB")
    overrides = options.pop("nccl_overrides", {})
    tuned = options.pop("nccl_tuned", {})
    hosts = hosts or {}
    first = sorted(hosts)[0] if hosts else None
    ports = hosts.get(first) if first is not None else []
    if not isinstance(ports, list):
        return {"files": {}, "nccl_env": {}, "problems": [f"{first}: rdma_ports: {ports!r} is not allowed (allowed: a list of the host's cabled RDMA ports)"]}
    # the tuning sweep's result (filter nccl_tuned_settings): its per-job environment and tuner config, never
    # a variable of /etc/nccl.conf (docs/tuning.md)
    host = host_nccl_settings(
        fabric_effective, ports, options.get("gid_index", ""), net, overrides, (tuned or {}).get("settings") if "job" in (tuned or {}) else tuned
    )
    if host["problems"]:
        return {"files": {}, "nccl_env": {}, "problems": host["problems"]}
    try:
        out = k8s_render.render(fabric_effective, hosts, host["settings"], options, tuner=tuned if "job" in (tuned or {}) else None, job_env=host["job"])
    except k8s_render.RenderError as e:
        return {"files": {}, "nccl_env": {}, "problems": e.problems}
    return {
        "files": {path: to_yaml(objs) for path, objs in out["files"].items()},
        "nccl_env": out["nccl_env"],
        "host_nccl": host["settings"],
        "binding": out["binding"],
        "problems": [],
    }


class FilterModule:
    def filters(self):
        return {"k8s_render": k8s_render_filter}
