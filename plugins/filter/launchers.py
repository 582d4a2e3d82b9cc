"""Filter launcher_files: the training launchers of a play's nodes (module_utils/intent/launchers.py)."""

import json

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers


def launcher_files(nodes, params):
    """``nodes``: [{name, address, facts (host_readiness), devices (cabled rails), nccl (NCCL settings)}]
    in launch order; ``params``: test, min_bytes, max_bytes, step_factor, iterations, env, rail_pinning,
    master_port, and ``tuned_job``: the per-job environment of the NCCL tuning sweep's tuner rows
    (filter nccl_tuned_settings' ``job``: NCCL_TUNER_PLUGIN, NCCL_TUNER_CONFIG_FILE; docs/tuning.md),
    which every launcher's job carries. Returns {relative path: text}; AnsibleFilterError naming what
    cannot be bound."""
    if not nodes:
        raise AnsibleFilterError("launcher_files: no node")
    try:
        layouts = {n["name"]: launchers.rank_layout(n["facts"] or {}, n["devices"]) for n in nodes}
        layout = launchers.common_layout(layouts)
    except launchers.LayoutError as e:
        raise AnsibleFilterError(f"launcher_files: {e}") from None
    first = nodes[0]
    job = dict(params.get("tuned_job") or {})
    nccl = dict(first.get("nccl") or {}, **job)
    hca = nccl.get("NCCL_IB_HCA")
    p = dict(params, hosts=[n["address"] for n in nodes])
    # NCCL's settings ride the launcher (-x / --export) except NCCL_IB_HCA, which the wrapper sets per rank
    p["env"] = dict({k: v for k, v in nccl.items() if k != "NCCL_IB_HCA"}, **(params.get("env") or {}))
    head = "#!/bin/sh\n# Rendered by linerate (verify_fabric, docs/launchers.md) from the readiness facts.\n"
    try:
        mpirun = launchers.shell_line(launchers.mpirun_argv(p, layout, hca=hca))
        srun = launchers.shell_line(launchers.srun_argv(p, layout, hca=hca))
        files = {
            "nccl-tests-mpirun.sh": head + "exec " + mpirun + "\n",
            "nccl-tests-srun.sh": (
                head + f"#SBATCH --nodes={len(nodes)}\n#SBATCH --ntasks-per-node={len(layout)}\n#SBATCH --gpus-per-node={len(layout)}\nexec {srun}\n"
            ),
            "slurm-env.sh": launchers.slurm_env_script(nccl, params["master_port"], len(layout)),
            "layout.json": json.dumps({"ranks_per_node": len(layout), "layout": layout, "nodes": [n["name"] for n in nodes]}, indent=2, sort_keys=True) + "\n",
        }
        for rank, n in enumerate(nodes):
            files[f"torchrun/{n['name']}.env"] = launchers.torchrun_env(
                dict(n.get("nccl") or nccl, **job), first["address"], params["master_port"], len(nodes), len(layout), rank
            )
    except ValueError as e:
        raise AnsibleFilterError(f"launcher_files: {e}") from None
    return files


def launch_layout(nodes):
    """The rank layout every node of ``nodes`` ([{name, facts, devices}]) shares (one rank per GPU, its
    NUMA node and rail); AnsibleFilterError naming the node that differs or cannot be bound."""
    if not nodes:
        raise AnsibleFilterError("launch_layout: no node")
    try:
        return launchers.common_layout({n["name"]: launchers.rank_layout(n["facts"] or {}, n["devices"]) for n in nodes})
    except launchers.LayoutError as e:
        raise AnsibleFilterError(f"launch_layout: {e}") from None


def launch_plan(nodes, launcher="mpirun", tree_spawn="auto", radix=launchers.OMPI_ROUTED_RADIX):
    """How a launch reaches ``nodes`` nodes (a count): launchers.launch_plan. ``tree_spawn`` auto: on where
    the launch node would otherwise open more SSH sessions than the tree's radix."""
    n, r = int(nodes), int(radix)
    if str(tree_spawn).lower() == "auto":
        tree = n - 1 > r
    elif isinstance(tree_spawn, bool) or str(tree_spawn).lower() in ("true", "false"):
        tree = str(tree_spawn).lower() == "true"
    else:
        raise AnsibleFilterError(f"launch_plan: tree_spawn {tree_spawn!r}; allowed: auto, true, false")
    try:
        return launchers.launch_plan(n, launcher, tree, r)
    except ValueError as e:
        raise AnsibleFilterError(f"launch_plan: {e}") from None


class FilterModule:
    def filters(self):
        return {"launcher_files": launcher_files, "launch_layout": launch_layout, "launch_plan": launch_plan}
