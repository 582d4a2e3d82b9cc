"""Launchers at production shape: one rank per GPU, each bound to its GPU's NUMA node and nearest rail.

Intent and facts in, argv and file text out; no I/O (docs/launchers.md). The node's
layout comes from the readiness facts (module host_readiness: ``gpus[]`` with ``numa``,
``cpus`` and ``nearest_nics`` from ``nvidia-smi topo -m``):

- ``rank_layout(facts, devices)``: local rank -> GPU, NUMA node, CPUs, rail;
- ``bind_script(layout, binder, rail_pinning, hca)``: the per-rank wrapper (POSIX sh, run
  as ``sh -c <script> linerate-bind <program> <args>``, so no file has to be on the nodes);
- ``rank_binding(layout, launcher, policy)``: the one rule of how ranks are placed and bound, for
  mpirun, srun and the Kubernetes MPIJob alike;
- ``mpirun_argv`` (Open MPI) and ``srun_argv`` (Slurm): nccl-tests with ``-g 1`` per rank;
- ``launch_plan(nodes, launcher, tree_spawn)``: how a launch reaches every node (Open MPI's tree
  spawn, Slurm's fan-out), never one SSH session per node from one node;
- ``torchrun_env`` / ``slurm_env_script``: the rendezvous variables and NCCL's settings for
  torchrun / DeepSpeed.

Why each rank's GPU is narrowed with ``NCCL_TESTS_DEVICE=0``: nccl-tests picks its GPU as
``cudaSetDevice(localRank * nThreads * nGpus + i)`` unless ``NCCL_TESTS_DEVICE`` is set
(NVIDIA/nccl-tests src/common.cu, v2.13.4 .. v2.19.6): with one visible GPU per rank,
local rank 3 would ask for device 3 of 1 and fail with ``invalid device ordinal``.

Why NCCL_IB_HCA stays the node's rail list by default (``rail_pinning: topology``): it is a
filter, not an order - NCCL ranks the NICs it admits by PCI distance to the rank's GPU
and picks the nearest itself, and keeps the other rails for PXN (a GPU sending through
another GPU's rail over NVLink). ``nearest`` narrows each rank's NCCL_IB_HCA to its own
rail (for hosts where NCCL cannot see the PCI tree, e.g. some VMs without a topology file).
Either way UCX_NET_DEVICES (Open MPI's own traffic through UCX) is the rank's rail.
"""

import re
import shlex

from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import IntentError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import LINK_RANK

BINDERS = ("numactl", "slurm", "env")
# how ranks are bound (rank_binding): auto, Open MPI itself, the wrapper's numactl, or not at all
BIND_POLICIES = ("auto", "numactl", "none")
RAIL_PINNING = ("topology", "nearest")
# the local rank as each launcher names it: Open MPI, Slurm, torchrun/DeepSpeed
LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK")
_CPUS_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


class LayoutError(IntentError):
    """The facts cannot give every rank a GPU, a NUMA node and a rail."""


def rank_layout(facts, devices, gpus=None):
    """One entry per local rank, in GPU order: ``{"local_rank", "gpu", "gpu_pci", "numa", "cpus",
    "nic", "link"}``.

    ``devices``: the cabled rails (inventory rdma_ports' devices); other NICs (storage, a
    management port) are never a rank's rail. Each GPU takes its nearest rail (PIX < PXB <
    PHB < NODE < SYS); between rails equally near, the one fewer GPUs took so far, then the
    matrix's order - so 8 GPUs over 8 rails get 8 distinct rails, 8 GPUs over 4 rails two
    each. A GPU whose NUMA node the matrix does not give (``N/A``) takes its rail's NUMA
    node (lspci), else it is left unbound (``numa`` None) rather than bound wrong.
    ``gpus``: how many ranks (the first N GPUs); None: every GPU.
    """
    devices = list(devices)
    found = sorted(facts.get("gpus") or [], key=lambda g: g["index"])
    if gpus is not None:
        if gpus > len(found):
            raise LayoutError(f"{gpus} ranks per node asked for, the node has {len(found)} GPU(s)")
        found = found[:gpus]
    if not found:
        raise LayoutError("no GPU in the readiness facts (nvidia-smi): nothing to put a rank on")
    nic_numa = {n["device"]: n.get("numa_node") for n in facts.get("nics") or []}
    used = {d: 0 for d in devices}
    layout = []
    for rank, g in enumerate(found):
        near = [(n["device"], n["link"]) for n in g.get("nearest_nics") or [] if n["device"] in used]
        if not near:
            raise LayoutError(f"GPU{g['index']}: no cabled rail ({', '.join(devices) or 'none'}) in its row of nvidia-smi topo -m: its rank has no nearest NIC")
        best = min(LINK_RANK.get(lk, 9) for _d, lk in near)
        tied = [(d, lk) for d, lk in near if LINK_RANK.get(lk, 9) == best]
        nic, link = min(tied, key=lambda p: (used[p[0]], tied.index(p)))
        used[nic] += 1
        numa = g.get("numa")
        if numa is None:
            numa = nic_numa.get(nic)
        cpus = g.get("cpus")
        layout.append(
            {
                "local_rank": rank,
                "gpu": g["index"],
                "gpu_pci": g.get("pci"),
                "numa": numa,
                "cpus": cpus if cpus and _CPUS_RE.match(cpus) else None,
                "nic": nic,
                "link": link,
            }
        )
    return layout


def layout_key(layout):
    """What must match across nodes for one launcher line to fit them all."""
    return [(e["gpu"], e["numa"], e["nic"]) for e in layout]


def common_layout(layouts):
    """The layout every node shares ({node: layout}); LayoutError naming the nodes that differ."""
    if not layouts:
        raise LayoutError("no node's layout")
    nodes = sorted(layouts)
    ref = layouts[nodes[0]]
    differ = [n for n in nodes[1:] if layout_key(layouts[n]) != layout_key(ref)]
    if differ:
        raise LayoutError(
            f"the GPU/NUMA/rail layout of {', '.join(differ)} differs from {nodes[0]}'s "
            f"({_describe(ref)}): one launcher line cannot bind both; fix the cabling or "
            "launch those nodes separately"
        )
    return ref


def _describe(layout):
    return " ".join(f"{e['local_rank']}:GPU{e['gpu']}/numa{e['numa']}/{e['nic']}" for e in layout)


def rank_env(entry, binder="numactl", rail_pinning="topology", hca=None):
    """The environment one rank's wrapper exports (an ordered list of (name, value))."""
    if binder not in BINDERS:
        raise ValueError(f"binder {binder!r}; allowed: {', '.join(BINDERS)}")
    if rail_pinning not in RAIL_PINNING:
        raise ValueError(f"rail_pinning {rail_pinning!r}; allowed: {', '.join(RAIL_PINNING)}")
    env = []
    if binder != "slurm":  # srun --gpu-bind sets CUDA_VISIBLE_DEVICES itself
        env.append(("CUDA_VISIBLE_DEVICES", str(entry["gpu"])))
    env.append(("NCCL_TESTS_DEVICE", "0"))
    env.append(("UCX_NET_DEVICES", f"{entry['nic']}:1"))
    if rail_pinning == "nearest":
        env.append(("NCCL_IB_HCA", f"={entry['nic']}"))
    elif hca:
        env.append(("NCCL_IB_HCA", hca))
    return env


def bind_script(layout, binder="numactl", rail_pinning="topology", hca=None):
    """The per-rank wrapper: picks the rank's entry by its local rank (Open MPI, Slurm or torchrun's
    variable), exports its environment and, with ``numactl``, execs the program under
    ``numactl --cpunodebind=N --membind=N`` (Slurm binds CPUs and memory itself: --cpu-bind/--mem-bind).
    A local rank the layout lacks stops the rank with a message (exit 1) instead of running unbound."""
    lines = ["r=" + "".join("${%s:-" % v for v in LOCAL_RANK_VARS) + "}" * len(LOCAL_RANK_VARS), 'case "$r" in']
    for e in layout:
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in rank_env(e, binder, rail_pinning, hca))
        bind = ""
        if binder == "numactl" and e["numa"] is not None:
            bind = f"numactl --cpunodebind={e['numa']} --membind={e['numa']} -- "
        lines.append(f'{e["local_rank"]}) export {exports}; set -- {bind}"$@";;')
    lines.append(f"*) echo \"linerate-bind: local rank '$r' is not one of the {len(layout)} ranks of this node's layout\" >&2; exit 1;;")
    lines += ["esac", 'exec "$@"']
    return "\n".join(lines) + "\n"


def _test_args(p):
    return [p["test"], "-b", str(p["min_bytes"]), "-e", str(p["max_bytes"]), "-f", str(p["step_factor"]), "-g", "1", "-n", str(p["iterations"])]


def _numa_blocks(layout):
    """K when the layout's local ranks fill NUMA nodes 0, 1, ... m-1 in order, K ranks each (the
    placement Open MPI's ``--map-by ppr:K:numa`` makes); None otherwise (a GPU without a NUMA node,
    uneven counts, ranks of one NUMA node apart, or a NUMA node skipped)."""
    numas = [e["numa"] for e in layout]
    if not numas or any(n is None for n in numas):
        return None
    per = len([n for n in numas if n == numas[0]])
    want = [k // per for k in range(len(numas))]
    return per if len(numas) % per == 0 and numas == want else None


def rank_binding(layout, launcher="mpirun", policy="auto"):
    """The one rule of how each rank is bound, for every launcher (mpirun here, srun here, and the
    Kubernetes MPIJob's mpirun, intent/k8s_render.py): ``{"launcher", "policy", "ranks_per_node",
    "ranks_per_numa", "args", "wrapper_binder", "why"}``.

    mpirun, ``policy`` auto: where the layout's ranks fill the NUMA nodes in order, K each (GPU0-3 on
    NUMA 0, GPU4-7 on NUMA 1), Open MPI binds them itself: ``--map-by ppr:K:numa --bind-to numa``
    places K ranks on each NUMA node, in order, so local rank i sits on its GPU's NUMA node (the
    form NVIDIA's and Open MPI's docs give; ``--map-by ppr:N:node --bind-to numa`` would put the
    first N cores' ranks, all on NUMA 0, together). Any other layout: ``--map-by ppr:N:node
    --bind-to none`` and the wrapper binds each rank with ``numactl`` (``numactl``: that always).
    ``none``: nothing binds (``--bind-to none``, the wrapper sets the rank's GPU and rails only;
    for hosts whose real NUMA nodes are not the GPUs', such as the lab's containers).
    srun: ``--ntasks-per-node=N --gpus-per-task=1`` and each local rank's GPU, cores and memory
    from the layout (``--gpu-bind=map_gpu:``, ``--cpu-bind=map_ldom:``, ``--mem-bind=map_mem:``;
    without a NUMA node for every GPU, ``--cpu-bind=none``: unbound rather than bound wrong);
    ``policy`` is Slurm's own and only ``none`` changes it (``--cpu-bind=none``)."""
    if policy not in BIND_POLICIES:
        raise ValueError(f"binding {policy!r}; allowed: {', '.join(BIND_POLICIES)}")
    if launcher not in ("mpirun", "srun"):
        raise ValueError(f"launcher {launcher!r}; allowed: mpirun, srun")
    ppn = len(layout)
    per = _numa_blocks(layout)
    out = {"launcher": launcher, "ranks_per_node": ppn, "ranks_per_numa": per}
    if launcher == "srun":
        numas = [e["numa"] for e in layout]
        args = [f"--ntasks-per-node={ppn}", "--gpus-per-task=1", "--gpu-bind=map_gpu:" + ",".join(str(e["gpu"]) for e in layout)]
        if policy != "none" and all(n is not None for n in numas):
            args += ["--cpu-bind=map_ldom:" + ",".join(map(str, numas)), "--mem-bind=map_mem:" + ",".join(map(str, numas))]
            why = "Slurm binds each local rank to its GPU, and its GPU's NUMA node (cores and memory)"
        else:
            args += ["--cpu-bind=none"]
            why = (
                "binding off (policy none)" if policy == "none" else "a GPU without a NUMA node in the facts: its rank is left unbound rather than bound wrong"
            )
        return dict(out, policy="slurm" if policy != "none" else "none", args=args, wrapper_binder="slurm", why=why)
    if policy == "none":
        return dict(
            out,
            policy="none",
            args=["--map-by", f"ppr:{ppn}:node", "--bind-to", "none"],
            wrapper_binder="env",
            why="binding off (policy none): the wrapper sets each rank's GPU and rails",
        )
    if policy == "auto" and per is not None:
        return dict(
            out,
            policy="mpirun",
            args=["--map-by", f"ppr:{per}:numa", "--bind-to", "numa"],
            wrapper_binder="env",
            why=f"{per} rank(s) on each NUMA node in GPU order: Open MPI binds each to its GPU's NUMA node",
        )
    return dict(
        out,
        policy="numactl",
        args=["--map-by", f"ppr:{ppn}:node", "--bind-to", "none"],
        wrapper_binder="numactl",
        why=(
            "the wrapper binds each rank with numactl"
            if policy == "numactl"
            else "the GPUs' NUMA nodes are not K per node in order: the wrapper binds each rank with numactl"
        ),
    )


def mpirun_argv(p, layout, mpirun="mpirun", json_path=None, hca=None):
    """Open MPI: ``len(layout)`` ranks on each of ``p["hosts"]`` (``-H host:slots``), placed and bound by
    ``rank_binding`` (``p["binding"]``, default auto), NCCL's settings with ``-x``, and every rank started
    through the wrapper with ``-g 1``. Ranks of a node are consecutive, so OMPI_COMM_WORLD_LOCAL_RANK is
    the layout's index."""
    ppn = len(layout)
    bind = rank_binding(layout, "mpirun", p.get("binding") or "auto")
    argv = (
        [mpirun, "--allow-run-as-root", "-np", str(ppn * len(p["hosts"])), "-H", ",".join(f"{h}:{ppn}" for h in p["hosts"])] + bind["args"] + ["--tag-output"]
    )
    if p.get("ssh_args"):
        argv += ["--mca", "plm_rsh_args", p["ssh_args"]]
    argv += list(p.get("mpirun_args") or [])
    for key, value in sorted((p.get("env") or {}).items()):
        argv += ["-x", f"{key}={value}"]
    argv += ["sh", "-c", bind_script(layout, bind["wrapper_binder"], p.get("rail_pinning") or "topology", hca), "linerate-bind"]
    argv += _test_args(p)
    if json_path:
        argv += ["-J", json_path]
    return argv


def srun_argv(p, layout, srun="srun", hca=None):
    """Slurm: ``--nodes``, then ``rank_binding``'s srun form (a task per GPU, each task's GPU, cores
    and memory by its local id), PMIx for nccl-tests' MPI, NCCL's settings through ``--export=ALL,...``
    and the same wrapper (the NIC variables)."""
    bind = rank_binding(layout, "srun", p.get("binding") or "auto")
    argv = [srun, f"--nodes={len(p['hosts'])}"] + bind["args"] + [f"--mpi={p.get('srun_mpi') or 'pmix'}"]
    env = sorted((p.get("env") or {}).items())
    bad = [k for k, v in env if "," in str(v)]
    if bad:
        # srun --export splits on commas: a value with one cannot ride it (Slurm's own limitation)
        raise ValueError(f"env {', '.join(bad)}: a value with a comma cannot go through srun --export; put it in nccl.conf or the environment of the job")
    argv += ["--export=" + ",".join(["ALL"] + [f"{k}={v}" for k, v in env])]
    argv += list(p.get("srun_args") or [])
    argv += ["sh", "-c", bind_script(layout, "slurm", p.get("rail_pinning") or "topology", hca), "linerate-bind"]
    return argv + _test_args(p)


# Open MPI's launch tree: plm/rsh starts the daemons through a radix tree when tree spawn is on
# (plm_rsh_no_tree_spawn, default false), each daemon starting its own children; the tree's radix is
# routed_radix, 64 by default (orte/mca/routed/radix/routed_radix_component.c, Open MPI 4.1).
OMPI_ROUTED_RADIX = 64
# Slurm fans its launch out through the slurmd's own tree (slurm.conf TreeWidth), no SSH at all.
SLURM_TREE_WIDTH = 16


def launch_plan(nodes: int, launcher: str = "mpirun", tree_spawn: bool = True, radix: int = OMPI_ROUTED_RADIX) -> dict:
    """How one launch reaches ``nodes`` nodes: ``{"launcher", "nodes", "tree_spawn", "fanout", "depth",
    "ssh_from_launch_node", "max_ssh_per_node", "levels", "mpirun_args"}``.

    mpirun with tree spawn: the launch node (daemon 0) starts ``fanout`` daemons over SSH, each of them
    its own ``fanout`` children (daemon v's children are v*r+1 .. v*r+r), so no node opens more than
    ``radix`` SSH sessions and ``depth`` hops reach every node; without it the launch node opens one
    per other node (``nodes - 1``). srun: slurmctld/slurmd RPCs fan out ``radix`` wide (TreeWidth), no
    SSH. ``levels``: how many daemons each hop starts (the plan at 2,000 nodes is a unit test)."""
    if nodes < 1:
        raise ValueError(f"nodes {nodes}: a launch needs one node or more")
    if radix < 1:
        raise ValueError(f"radix {radix}: the launch tree's fan-out is 1 or more")
    if launcher not in ("mpirun", "srun"):
        raise ValueError(f"launcher {launcher!r}; allowed: mpirun, srun")
    tree = launcher == "srun" or tree_spawn
    fanout = radix if tree else max(1, nodes - 1)
    levels, reached, width = [], 1, 1
    while reached < nodes:
        step = min(width * fanout, nodes - reached)
        levels.append(step)
        reached += step
        width = step
    ssh = launcher == "mpirun"
    first = min(fanout, nodes - 1)
    return {
        "launcher": launcher,
        "nodes": nodes,
        "tree_spawn": tree,
        "fanout": fanout,
        "depth": len(levels),
        "levels": levels,
        "ssh_from_launch_node": first if ssh else 0,
        "max_ssh_per_node": first if ssh else 0,
        "mpirun_args": (
            (["--mca", "plm_rsh_no_tree_spawn", "0", "--mca", "routed_radix", str(radix)] if tree else ["--mca", "plm_rsh_no_tree_spawn", "1"]) if ssh else []
        ),
    }


def shell_line(argv):
    """An argv as one shell-quoted line (a rendered launcher script)."""
    return " ".join(shlex.quote(str(a)) for a in argv)


# ---------------------------------------------------------------- torchrun / DeepSpeed


def torchrun_env(nccl, master_addr, master_port, nnodes, nproc_per_node, node_rank=None):
    """KEY=value lines for one node's bare-metal launch (``--env-file``, ``set -a; . file``).

    torchrun reads each of its options from ``PET_<OPTION>`` when not given on its command line
    (torch.distributed.argparse_util.env), so a plain ``torchrun train.py`` picks up NNODES,
    NPROC_PER_NODE, NODE_RANK and the rendezvous; it then sets RANK, LOCAL_RANK, WORLD_SIZE,
    MASTER_ADDR and MASTER_PORT in each worker itself - the file never sets RANK or LOCAL_RANK,
    which differ per process. MASTER_ADDR, MASTER_PORT and WORLD_SIZE are also set for
    launchers that start one process per GPU themselves (DeepSpeed's init_distributed reads
    them). ``nccl``: NCCL's settings from the derivation /etc/nccl.conf is written from."""
    if not 1 <= int(master_port) <= 65535:
        raise ValueError(f"master_port {master_port}: a TCP port is 1..65535")
    rows = [
        ("MASTER_ADDR", master_addr),
        ("MASTER_PORT", int(master_port)),
        ("WORLD_SIZE", int(nnodes) * int(nproc_per_node)),
        ("NNODES", int(nnodes)),
        ("NPROC_PER_NODE", int(nproc_per_node)),
    ]
    if node_rank is not None:
        rows.append(("NODE_RANK", int(node_rank)))
    rows += [("PET_NNODES", int(nnodes)), ("PET_NPROC_PER_NODE", int(nproc_per_node)), ("PET_MASTER_ADDR", master_addr), ("PET_MASTER_PORT", int(master_port))]
    if node_rank is not None:
        rows.append(("PET_NODE_RANK", int(node_rank)))
    rows += sorted((k, v) for k, v in (nccl or {}).items())
    for k, v in rows:
        if re.search(r"[\s'\"\\$`]", str(v)):
            raise ValueError(f"{k}={v!r}: an env file value cannot hold spaces, quotes, $ or backslashes")
    return "".join(f"{k}={v}\n" for k, v in rows)


def slurm_env_script(nccl, master_port, nproc_per_node):
    """A POSIX sh file to source in an sbatch script (the batch step) or in each task: the same
    variables as ``torchrun_env``, NNODES/NODE_RANK/MASTER_ADDR from the allocation
    (SLURM_JOB_NUM_NODES, SLURM_NODEID, the first host of SLURM_JOB_NODELIST), and where it is
    sourced inside a task started one per GPU (srun --ntasks-per-node=N), RANK and LOCAL_RANK
    from SLURM_PROCID and SLURM_LOCALID (DeepSpeed / torch.distributed without torchrun)."""
    if not 1 <= int(master_port) <= 65535:
        raise ValueError(f"master_port {master_port}: a TCP port is 1..65535")
    n = int(nproc_per_node)
    lines = [
        ': "${SLURM_JOB_NODELIST:?source this inside a Slurm allocation}"',
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"MASTER_PORT={int(master_port)}",
        "NNODES=$SLURM_JOB_NUM_NODES",
        "NODE_RANK=$SLURM_NODEID",
        f"NPROC_PER_NODE={n}",
        "WORLD_SIZE=$((NNODES * NPROC_PER_NODE))",
        "PET_NNODES=$NNODES PET_NPROC_PER_NODE=$NPROC_PER_NODE PET_NODE_RANK=$NODE_RANK",
        "PET_MASTER_ADDR=$MASTER_ADDR PET_MASTER_PORT=$MASTER_PORT",
        "export MASTER_ADDR MASTER_PORT NNODES NODE_RANK NPROC_PER_NODE WORLD_SIZE",
        "export PET_NNODES PET_NPROC_PER_NODE PET_NODE_RANK PET_MASTER_ADDR PET_MASTER_PORT",
        "# one task per GPU (srun --ntasks-per-node): each task its own rank",
        'if [ -n "${SLURM_PROCID:-}" ] && [ "${SLURM_NTASKS_PER_NODE:-1}" = "$NPROC_PER_NODE" ]; then',
        "  RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID; export RANK LOCAL_RANK",
        "fi",
    ]
    for k, v in sorted((nccl or {}).items()):
        lines.append(f"export {k}={shlex.quote(str(v))}")
    return "\n".join(lines) + "\n"
