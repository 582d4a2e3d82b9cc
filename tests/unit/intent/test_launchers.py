"""Launchers at production shape (module_utils/intent/launchers.py): one rank per GPU, each bound to its
GPU's NUMA node and nearest rail, from the readiness facts of an 8-GPU, 8-rail node (a DGX
H100-like ``nvidia-smi topo -m``: 8 H100, 8 compute ConnectX-7 and 2 dual-port storage
ConnectX-7, 2 NUMA nodes; fixtures/launchers/SOURCES.md), collected through
readiness.collect as the host_readiness module does."""

import shlex
import stat
import subprocess

import pytest

from parser_fixtures import fixture

from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers
from ansible_collections.linerate.fabric.plugins.module_utils.host import readiness
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import nearest_nics, parse_nvidia_smi_topo

TOPO = fixture("launchers", "nvidia-smi-topo-m-dgx-h100.txt")
# the DGX H100's compute rails, GPU0..GPU7 in order (its storage NICs are mlx5_1, 2, 7, 8)
RAILS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]


def node_facts(topo=TOPO, gpus=8, devices=None):
    """readiness.collect over scripted tools: nvidia-smi answers, everything else is missing."""
    csv = "".join(f"{i}, 00000000:{BUSES[i].upper()}:00.0, 550.54.15\n" for i in range(gpus))

    def run(argv):
        if argv[:2] == ["nvidia-smi", "topo"]:
            return 0, topo, ""
        if argv[0] == "nvidia-smi":
            return 0, csv, ""
        raise OSError(f"{argv[0]}: not found")

    # the rails in inventory order, not GPU order: the layout must follow the topology
    return readiness.collect(run, sorted(devices or RAILS), sys_root="/nonexistent", proc_root="/nonexistent")


@pytest.fixture(scope="module")
def facts():
    return node_facts()


@pytest.fixture(scope="module")
def layout(facts):
    return launchers.rank_layout(facts, sorted(RAILS))


P = {
    "hosts": ["10.0.0.1", "10.0.0.2"],
    "test": "all_reduce_perf",
    "min_bytes": "1G",
    "max_bytes": "4G",
    "step_factor": 2,
    "iterations": 20,
    "env": {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring"},
    "mpirun_args": ["--mca", "btl_tcp_if_include", "eth0"],
    "ssh_args": None,
}


def test_nearest_nics_follow_the_matrix_not_the_names():
    near = nearest_nics(parse_nvidia_smi_topo(TOPO))
    assert near[1][0] == ("mlx5_3", "PIX")
    # then the NICs of its own NUMA node (storage ones included: the layout filters them), then the other socket
    assert [lk for _d, lk in near[1]] == ["PIX"] + ["NODE"] * 5 + ["SYS"] * 6
    assert near[7][0] == ("mlx5_11", "PIX") and near[7][-1][1] == "SYS"


def test_readiness_facts_carry_each_gpus_numa_cpus_and_rails(facts):
    g5 = next(g for g in facts["gpus"] if g["index"] == 5)
    assert (g5["numa"], g5["cpus"]) == (1, "56-111,168-223")
    # only the cabled rails asked for: no storage NIC in a GPU's list
    assert g5["nearest_nics"][0] == {"device": "mlx5_9", "link": "PIX"}
    assert {n["device"] for n in g5["nearest_nics"]} == set(RAILS)


def test_rank_layout_one_rank_per_gpu_on_its_pix_rail_and_numa_node(layout):
    assert [(e["local_rank"], e["gpu"], e["numa"], e["nic"], e["link"]) for e in layout] == [(i, i, 0 if i < 4 else 1, RAILS[i], "PIX") for i in range(8)]
    assert layout[0]["cpus"] == "0-55,112-167" and layout[6]["cpus"] == "56-111,168-223"
    assert layout[2]["gpu_pci"] == "0000:3a:00.0"


def test_rank_layout_spreads_gpus_over_fewer_rails_by_numa():
    # 4 rails cabled (one per GPU pair's PCIe switch is gone): each GPU takes a NODE rail of its socket,
    # two GPUs a rail, never one across the socket
    facts = node_facts(devices=["mlx5_0", "mlx5_4", "mlx5_6", "mlx5_10"])
    lay = launchers.rank_layout(facts, ["mlx5_0", "mlx5_4", "mlx5_6", "mlx5_10"])
    nics = [e["nic"] for e in lay]
    assert nics[0] == "mlx5_0" and nics[2] == "mlx5_4" and nics[4] == "mlx5_6" and nics[6] == "mlx5_10"
    assert sorted(nics[:4]) == ["mlx5_0", "mlx5_0", "mlx5_4", "mlx5_4"]
    assert sorted(nics[4:]) == ["mlx5_10", "mlx5_10", "mlx5_6", "mlx5_6"]
    assert all(e["link"] in ("PIX", "NODE") for e in lay)


def test_rank_layout_refuses_what_it_cannot_bind(facts):
    with pytest.raises(launchers.LayoutError, match="9 ranks per node asked for, the node has 8"):
        launchers.rank_layout(facts, RAILS, gpus=9)
    with pytest.raises(launchers.LayoutError, match="GPU0: no cabled rail"):
        launchers.rank_layout(facts, ["mlx5_99"])
    with pytest.raises(launchers.LayoutError, match="no GPU"):
        launchers.rank_layout({"gpus": []}, RAILS)
    assert len(launchers.rank_layout(facts, RAILS, gpus=2)) == 2


def test_rank_layout_numa_na_takes_the_rails_numa_node():
    topo = TOPO.replace("\t0\t\tN/A", "\tN/A\t\tN/A")
    facts = node_facts(topo=topo)
    facts["nics"] = [{"device": d, "numa_node": 0 if i < 4 else 1} for i, d in enumerate(RAILS)]
    lay = launchers.rank_layout(facts, RAILS)
    assert [e["numa"] for e in lay] == [0, 0, 0, 0, 1, 1, 1, 1]
    facts["nics"] = []
    assert launchers.rank_layout(facts, RAILS)[0]["numa"] is None


def test_common_layout_names_the_node_that_differs(layout):
    other = [dict(e) for e in layout]
    other[3]["nic"] = "mlx5_6"
    assert launchers.common_layout({"n1": layout, "n2": layout}) is layout
    with pytest.raises(launchers.LayoutError, match="layout of n3 differs from n1's"):
        launchers.common_layout({"n1": layout, "n2": layout, "n3": other})


def test_mpirun_argv_rank_per_gpu(layout):
    argv = launchers.mpirun_argv(P, layout, "/usr/bin/mpirun", hca="=" + ",".join(RAILS))
    script_at = argv.index("-c") + 1
    assert argv[:script_at] == [
        "/usr/bin/mpirun",
        "--allow-run-as-root",
        "-np",
        "16",
        "-H",
        "10.0.0.1:8,10.0.0.2:8",
        "--map-by",
        "ppr:4:numa",
        "--bind-to",
        "numa",
        "--tag-output",
        "--mca",
        "btl_tcp_if_include",
        "eth0",
        "-x",
        "NCCL_ALGO=Ring",
        "-x",
        "NCCL_DEBUG=INFO",
        "sh",
        "-c",
    ]
    assert argv[script_at + 1 :] == ["linerate-bind", "all_reduce_perf", "-b", "1G", "-e", "4G", "-f", "2", "-g", "1", "-n", "20"]
    # Open MPI binds: the wrapper sets the rank's GPU and rails and runs no numactl
    assert "numactl" not in argv[script_at] and "CUDA_VISIBLE_DEVICES=0" in argv[script_at]
    wrapped = launchers.mpirun_argv(dict(P, binding="numactl"), layout)
    assert wrapped[7:11] == ["ppr:8:node", "--bind-to", "none", "--tag-output"]
    assert "numactl --cpunodebind=1 --membind=1" in wrapped[wrapped.index("-c") + 1]
    assert launchers.mpirun_argv(P, layout, json_path="/tmp/r.json")[-2:] == ["-J", "/tmp/r.json"]


def test_srun_argv_rank_per_gpu(layout):
    argv = launchers.srun_argv(dict(P, srun_args=["--partition=gpu"]), layout)
    script_at = argv.index("-c") + 1
    assert argv[:script_at] == [
        "srun",
        "--nodes=2",
        "--ntasks-per-node=8",
        "--gpus-per-task=1",
        "--gpu-bind=map_gpu:0,1,2,3,4,5,6,7",
        "--cpu-bind=map_ldom:0,0,0,0,1,1,1,1",
        "--mem-bind=map_mem:0,0,0,0,1,1,1,1",
        "--mpi=pmix",
        "--export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO",
        "--partition=gpu",
        "sh",
        "-c",
    ]
    assert argv[-8:] == ["-e", "4G", "-f", "2", "-g", "1", "-n", "20"]
    # Slurm's wrapper binds nothing itself and leaves CUDA_VISIBLE_DEVICES to --gpu-bind
    assert "numactl" not in argv[script_at] and "CUDA_VISIBLE_DEVICES" not in argv[script_at]
    with pytest.raises(ValueError, match="NCCL_IB_HCA: a value with a comma cannot go through srun --export"):
        launchers.srun_argv(dict(P, env={"NCCL_IB_HCA": "mlx5_0,mlx5_3"}), layout)


def _run_wrapper(tmp_path, script, env):
    """Run the wrapper as mpirun/srun would, with a numactl that records its argv and env."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    numactl = bin_dir / "numactl"
    numactl.write_text('#!/bin/sh\necho "numactl $*"\nshift 3\nexec "$@"\n')
    numactl.chmod(numactl.stat().st_mode | stat.S_IEXEC)
    clean = {"PATH": f"{bin_dir}:/usr/bin:/bin", **env}
    return subprocess.run(
        [
            "sh",
            "-c",
            script,
            "linerate-bind",
            "sh",
            "-c",
            'echo "ran CVD=$CUDA_VISIBLE_DEVICES DEV=$NCCL_TESTS_DEVICE UCX=$UCX_NET_DEVICES HCA=${NCCL_IB_HCA-unset} args=$*"',
            "prog",
            "-g",
            "1",
        ],
        env=clean,
        capture_output=True,
        text=True,
        timeout=10,
    )


def test_wrapper_binds_each_local_rank_to_its_gpu_numa_node_and_rail(tmp_path, layout):
    script = launchers.bind_script(layout, "numactl", "topology", hca="=" + ",".join(RAILS))
    out = _run_wrapper(tmp_path, script, {"OMPI_COMM_WORLD_LOCAL_RANK": "5"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        'numactl --cpunodebind=1 --membind=1 -- sh -c echo "ran CVD=$CUDA_VISIBLE_DEVICES DEV=$NCCL_TESTS_DEVICE '
        'UCX=$UCX_NET_DEVICES HCA=${NCCL_IB_HCA-unset} args=$*" prog -g 1',
        "ran CVD=5 DEV=0 UCX=mlx5_9:1 HCA==" + ",".join(RAILS) + " args=-g 1",
    ]
    # Slurm's and torchrun's names for the local rank, in that order after Open MPI's
    assert "CVD=2 DEV=0 UCX=mlx5_4:1" in _run_wrapper(tmp_path, script, {"SLURM_LOCALID": "2"}).stdout
    assert "CVD=3 DEV=0 UCX=mlx5_5:1" in _run_wrapper(tmp_path, script, {"LOCAL_RANK": "3"}).stdout
    assert "CVD=7 " in _run_wrapper(tmp_path, script, {"LOCAL_RANK": "3", "SLURM_LOCALID": "7"}).stdout
    both = _run_wrapper(tmp_path, script, {"OMPI_COMM_WORLD_LOCAL_RANK": "1", "SLURM_LOCALID": "7"})
    assert "UCX=mlx5_3:1" in both.stdout


def test_wrapper_nearest_pinning_and_slurm_binder(tmp_path, layout):
    script = launchers.bind_script(layout, "slurm", "nearest")
    out = _run_wrapper(tmp_path, script, {"SLURM_LOCALID": "7", "CUDA_VISIBLE_DEVICES": "7"})
    assert out.returncode == 0, out.stderr
    # no numactl (srun binds), CUDA_VISIBLE_DEVICES as srun --gpu-bind left it, NCCL on the rank's rail only
    assert out.stdout.splitlines() == ["ran CVD=7 DEV=0 UCX=mlx5_11:1 HCA==mlx5_11 args=-g 1"]
    # topology pinning without an HCA list leaves NCCL_IB_HCA to nccl.conf
    out = _run_wrapper(tmp_path, launchers.bind_script(layout, "slurm", "topology"), {"SLURM_LOCALID": "0"})
    assert "HCA=unset" in out.stdout


def test_wrapper_refuses_a_local_rank_outside_the_layout(tmp_path, layout):
    out = _run_wrapper(tmp_path, launchers.bind_script(layout), {"OMPI_COMM_WORLD_LOCAL_RANK": "8"})
    assert out.returncode == 1 and "ran" not in out.stdout
    assert "linerate-bind: local rank '8' is not one of the 8 ranks of this node's layout" in out.stderr
    out = _run_wrapper(tmp_path, launchers.bind_script(layout), {})
    assert out.returncode == 1 and "local rank ''" in out.stderr


def test_wrapper_leaves_a_rank_without_numa_node_unbound(tmp_path, layout):
    lay = [dict(e, numa=None) if e["local_rank"] == 0 else e for e in layout]
    out = _run_wrapper(tmp_path, launchers.bind_script(lay), {"OMPI_COMM_WORLD_LOCAL_RANK": "0"})
    assert out.stdout.splitlines() == ["ran CVD=0 DEV=0 UCX=mlx5_0:1 HCA=unset args=-g 1"]
    srun = " ".join(launchers.srun_argv(P, lay))
    assert "--cpu-bind=none" in srun and "map_ldom" not in srun and "--mem-bind" not in srun


def test_rank_env_refuses_unknown_policies(layout):
    with pytest.raises(ValueError, match="binder 'taskset'; allowed: numactl, slurm, env"):
        launchers.rank_env(layout[0], "taskset")
    with pytest.raises(ValueError, match="rail_pinning 'first'; allowed: topology, nearest"):
        launchers.rank_env(layout[0], "numactl", "first")


NCCL = {"NCCL_IB_HCA": "=mlx5_0,mlx5_3", "NCCL_IB_GID_INDEX": "3", "NCCL_SOCKET_IFNAME": "eth0"}


def test_torchrun_env_bare_metal(tmp_path):
    text = launchers.torchrun_env(NCCL, "10.0.0.1", 29500, 2, 8, node_rank=1)
    assert text.splitlines() == [
        "MASTER_ADDR=10.0.0.1",
        "MASTER_PORT=29500",
        "WORLD_SIZE=16",
        "NNODES=2",
        "NPROC_PER_NODE=8",
        "NODE_RANK=1",
        "PET_NNODES=2",
        "PET_NPROC_PER_NODE=8",
        "PET_MASTER_ADDR=10.0.0.1",
        "PET_MASTER_PORT=29500",
        "PET_NODE_RANK=1",
        "NCCL_IB_GID_INDEX=3",
        "NCCL_IB_HCA==mlx5_0,mlx5_3",
        "NCCL_SOCKET_IFNAME=eth0",
    ]
    # RANK and LOCAL_RANK differ per process: torchrun sets them, the file never does
    assert not any(line.startswith(("RANK=", "LOCAL_RANK=")) for line in text.splitlines())
    f = tmp_path / "node.env"
    f.write_text(text)
    out = subprocess.run(["sh", "-c", f'set -a; . "{f}"; echo "$WORLD_SIZE $NCCL_IB_HCA $PET_NODE_RANK"'], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "16 =mlx5_0,mlx5_3 1"
    with pytest.raises(ValueError, match="master_port 70000"):
        launchers.torchrun_env(NCCL, "10.0.0.1", 70000, 2, 8)
    with pytest.raises(ValueError, match="NCCL_X='a b'"):
        launchers.torchrun_env({"NCCL_X": "a b"}, "10.0.0.1", 29500, 2, 8)


def test_slurm_env_script_derives_from_the_allocation(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    # scontrol show hostnames expands the node list, one name a line (Slurm's own output form)
    scontrol.write_text('#!/bin/sh\n[ "$1 $2 $3" = "show hostnames gpu[07-08]" ] || exit 2\nprintf "gpu07\\ngpu08\\n"\n')
    scontrol.chmod(0o755)
    f = tmp_path / "slurm.env.sh"
    f.write_text(launchers.slurm_env_script(NCCL, 29500, 8))
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SLURM_JOB_NODELIST": "gpu[07-08]",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NODEID": "1",
        "SLURM_PROCID": "13",
        "SLURM_LOCALID": "5",
        "SLURM_NTASKS_PER_NODE": "8",
    }
    show = '. "%s"; echo "$MASTER_ADDR $MASTER_PORT $WORLD_SIZE $NODE_RANK $PET_NODE_RANK ${RANK-unset} ${LOCAL_RANK-unset} $NCCL_IB_HCA"' % f
    out = subprocess.run(["sh", "-c", show], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["gpu07", "29500", "16", "1", "1", "13", "5", "=mlx5_0,mlx5_3"]
    # the batch step (one task a node, torchrun starts the workers): no RANK/LOCAL_RANK
    env.pop("SLURM_NTASKS_PER_NODE")
    out = subprocess.run(["sh", "-c", show], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[5:7] == ["unset", "unset"]
    out = subprocess.run(["sh", "-c", show], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert out.returncode != 0 and "source this inside a Slurm allocation" in out.stderr


def test_shell_line_round_trips(layout):
    argv = launchers.mpirun_argv(P, layout)
    assert shlex.split(launchers.shell_line(argv)) == argv


def test_nccl_tests_module_argv_rank_per_gpu(layout):
    from ansible_collections.linerate.fabric.plugins.module_utils.probes import nccl_tests

    p = dict(P, gpus=8, launch="rank_per_gpu", layout=layout, rail_pinning="topology", hca="=mlx5_0,mlx5_3")
    argv = nccl_tests.nccl_argv(p, "/usr/bin/mpirun", "/tmp/r.json")
    assert argv[:10] == ["/usr/bin/mpirun", "--allow-run-as-root", "-np", "16", "-H", "10.0.0.1:8,10.0.0.2:8", "--map-by", "ppr:4:numa", "--bind-to", "numa"]
    assert "NCCL_IB_HCA==mlx5_0,mlx5_3" in argv[argv.index("-c") + 1]
    assert argv[-4:] == ["-n", "20", "-J", "/tmp/r.json"] and argv[argv.index("-g") + 1] == "1"
    # the default path is untouched: one process per node driving every GPU
    node = nccl_tests.nccl_argv(dict(P, gpus=8), "/usr/bin/mpirun")
    assert node[node.index("-g") + 1] == "8" and "-H" in node and node[node.index("-H") + 1] == "10.0.0.1:1,10.0.0.2:1"
    with pytest.raises(ValueError, match="needs the node's layout"):
        nccl_tests.nccl_argv(dict(P, launch="rank_per_gpu", layout=[]), "mpirun")


def test_launcher_files_filter(facts, tmp_path):
    from ansible.errors import AnsibleFilterError
    from ansible_collections.linerate.fabric.plugins.filter.launchers import launcher_files

    nccl = {"NCCL_IB_HCA": "=" + ",".join(RAILS), "NCCL_IB_GID_INDEX": "3"}
    nodes = [{"name": f"n{i}", "address": f"10.0.0.{i}", "facts": facts, "devices": RAILS, "nccl": nccl} for i in (1, 2)]
    params = {
        "test": "all_reduce_perf",
        "min_bytes": "1G",
        "max_bytes": "4G",
        "step_factor": 2,
        "iterations": 20,
        "env": {"NCCL_DEBUG": "INFO"},
        "rail_pinning": "topology",
        "master_port": 29500,
    }
    files = launcher_files(nodes, params)
    assert sorted(files) == ["layout.json", "nccl-tests-mpirun.sh", "nccl-tests-srun.sh", "slurm-env.sh", "torchrun/n1.env", "torchrun/n2.env"]
    assert files == launcher_files(nodes, params)  # same facts, same text: the copy stays unchanged
    mp = shlex.split(files["nccl-tests-mpirun.sh"], comments=True)
    assert mp[:4] == ["exec", "mpirun", "--allow-run-as-root", "-np"] and "NCCL_IB_GID_INDEX=3" in mp
    # NCCL_IB_HCA rides the wrapper (per rank), never -x / --export (srun would split its commas)
    assert not any(a.startswith("NCCL_IB_HCA") for a in mp) and "--export=ALL,NCCL_DEBUG=INFO,NCCL_IB_GID_INDEX=3" in files["nccl-tests-srun.sh"]
    assert "NODE_RANK=1\n" in files["torchrun/n2.env"] and "MASTER_ADDR=10.0.0.1\n" in files["torchrun/n2.env"]
    other = node_facts(devices=RAILS)
    other["gpus"][3]["numa"] = 1  # a node whose GPU3 sits on the other socket
    with pytest.raises(AnsibleFilterError, match="layout of n2 differs from n1's"):
        launcher_files([nodes[0], dict(nodes[1], facts=other)], params)
    with pytest.raises(AnsibleFilterError, match="no GPU"):
        launcher_files([dict(nodes[0], facts={"gpus": []})], params)


def test_the_launchers_carry_the_tuning_sweeps_per_job_environment(facts):
    """docs/tuning.md: the tuned rows' job environment (NCCL_TUNER_PLUGIN, NCCL_TUNER_CONFIG_FILE) rides every
    launcher; without rows (an empty tuned_job) nothing of the tuner does."""
    from ansible_collections.linerate.fabric.plugins.filter.launchers import launcher_files

    nodes = [{"name": f"n{i}", "address": f"10.0.0.{i}", "facts": facts, "devices": RAILS, "nccl": {"NCCL_IB_HCA": "=" + ",".join(RAILS)}} for i in (1, 2)]
    params = {
        "test": "all_reduce_perf",
        "min_bytes": "1G",
        "max_bytes": "4G",
        "step_factor": 2,
        "iterations": 20,
        "env": {"NCCL_DEBUG": "INFO"},
        "rail_pinning": "topology",
        "master_port": 29500,
        "tuned_job": {"NCCL_TUNER_PLUGIN": "libnccl-tuner-example.so", "NCCL_TUNER_CONFIG_FILE": "/etc/nccl/tuner.conf"},
    }
    files = launcher_files(nodes, params)
    mp = shlex.split(files["nccl-tests-mpirun.sh"], comments=True)
    assert "NCCL_TUNER_PLUGIN=libnccl-tuner-example.so" in mp and "NCCL_TUNER_CONFIG_FILE=/etc/nccl/tuner.conf" in mp
    assert "NCCL_TUNER_PLUGIN=libnccl-tuner-example.so" in files["nccl-tests-srun.sh"]
    assert "export NCCL_TUNER_CONFIG_FILE=/etc/nccl/tuner.conf" in files["slurm-env.sh"]
    for n in ("n1", "n2"):
        assert "NCCL_TUNER_PLUGIN=libnccl-tuner-example.so\n" in files[f"torchrun/{n}.env"]
    plain = launcher_files(nodes, dict(params, tuned_job={}))
    assert not any("NCCL_TUNER" in text for text in plain.values())


# ---------------------------------------------------------------- the one binding rule, the launch plan


def _with_numa(layout, numas):
    return [dict(e, numa=n) for e, n in zip(layout, numas)]


def test_rank_binding_open_mpi_binds_where_the_gpus_fill_numa_nodes_in_order(layout):
    b = launchers.rank_binding(layout, "mpirun")
    assert (b["policy"], b["ranks_per_numa"], b["wrapper_binder"]) == ("mpirun", 4, "env")
    assert b["args"] == ["--map-by", "ppr:4:numa", "--bind-to", "numa"]
    # 8 GPUs on 4 NUMA nodes, two each, in order: ppr:2:numa
    assert launchers.rank_binding(_with_numa(layout, [0, 0, 1, 1, 2, 2, 3, 3]))["args"][1] == "ppr:2:numa"
    # one NUMA node for all: ppr:8:numa
    assert launchers.rank_binding(_with_numa(layout, [0] * 8))["args"][1] == "ppr:8:numa"


@pytest.mark.parametrize(
    "numas, why",
    [
        ([0, 1, 0, 1, 0, 1, 0, 1], "interleaved: ppr:K:numa would put GPU1's rank on NUMA 0"),
        ([0, 0, 0, 0, 0, 0, 1, 1], "uneven: 6 and 2"),
        ([1, 1, 1, 1, 0, 0, 0, 0], "NUMA 1 first"),
        ([0, 0, 0, 0, 2, 2, 2, 2], "NUMA 1 skipped: Open MPI would fill it"),
        ([0, 0, 0, 0, 1, 1, 1, None], "a GPU without NUMA node"),
    ],
)
def test_rank_binding_falls_back_to_the_wrappers_numactl(layout, numas, why):
    b = launchers.rank_binding(_with_numa(layout, numas), "mpirun")
    assert (b["policy"], b["wrapper_binder"], b["ranks_per_numa"]) == ("numactl", "numactl", None), why
    assert b["args"] == ["--map-by", "ppr:8:node", "--bind-to", "none"]


def test_rank_binding_srun_and_the_policies(layout):
    s = launchers.rank_binding(layout, "srun")
    assert s["args"] == [
        "--ntasks-per-node=8",
        "--gpus-per-task=1",
        "--gpu-bind=map_gpu:0,1,2,3,4,5,6,7",
        "--cpu-bind=map_ldom:0,0,0,0,1,1,1,1",
        "--mem-bind=map_mem:0,0,0,0,1,1,1,1",
    ]
    unbound = launchers.rank_binding(_with_numa(layout, [0, 0, 0, 0, 1, 1, 1, None]), "srun")
    assert unbound["args"][-1] == "--cpu-bind=none" and "map_ldom" not in " ".join(unbound["args"])
    off = launchers.rank_binding(layout, "mpirun", "none")
    assert (off["args"], off["wrapper_binder"]) == (["--map-by", "ppr:8:node", "--bind-to", "none"], "env")
    assert launchers.rank_binding(layout, "srun", "none")["args"][-1] == "--cpu-bind=none"
    assert launchers.rank_binding(layout, "mpirun", "numactl")["wrapper_binder"] == "numactl"
    with pytest.raises(ValueError, match="binding 'cores'; allowed: auto, numactl, none"):
        launchers.rank_binding(layout, "mpirun", "cores")
    with pytest.raises(ValueError, match="launcher 'torchrun'; allowed: mpirun, srun"):
        launchers.rank_binding(layout, "torchrun")


def test_wrapper_env_binder_sets_the_gpu_and_runs_no_numactl(tmp_path, layout):
    out = _run_wrapper(tmp_path, launchers.bind_script(layout, "env"), {"OMPI_COMM_WORLD_LOCAL_RANK": "5"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["ran CVD=5 DEV=0 UCX=mlx5_9:1 HCA=unset args=-g 1"]


def test_launch_plan_at_2000_nodes_opens_at_most_the_radix_from_any_node():
    plan = launchers.launch_plan(2000)
    assert plan["tree_spawn"] and plan["levels"] == [64, 1935] and plan["depth"] == 2
    assert plan["ssh_from_launch_node"] == 64 and plan["max_ssh_per_node"] == 64
    assert sum(plan["levels"]) == 1999  # every other node reached once
    assert plan["mpirun_args"] == ["--mca", "plm_rsh_no_tree_spawn", "0", "--mca", "routed_radix", "64"]
    flat = launchers.launch_plan(2000, tree_spawn=False)
    assert flat["ssh_from_launch_node"] == 1999 and flat["levels"] == [1999]
    assert flat["mpirun_args"] == ["--mca", "plm_rsh_no_tree_spawn", "1"]
    narrow = launchers.launch_plan(2000, radix=8)
    assert narrow["levels"] == [8, 64, 512, 1415] and narrow["max_ssh_per_node"] == 8
    srun = launchers.launch_plan(2000, "srun", radix=launchers.SLURM_TREE_WIDTH)
    assert srun["ssh_from_launch_node"] == 0 and srun["levels"] == [16, 256, 1727] and srun["mpirun_args"] == []
    assert launchers.launch_plan(1)["levels"] == [] and launchers.launch_plan(2)["ssh_from_launch_node"] == 1
    with pytest.raises(ValueError, match="nodes 0: a launch needs one node or more"):
        launchers.launch_plan(0)


def test_launch_plan_filter_turns_tree_spawn_on_above_the_radix_only():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.linerate.fabric.plugins.filter.launchers import launch_plan

    assert launch_plan(65)["tree_spawn"] is False and launch_plan(65)["ssh_from_launch_node"] == 64
    assert launch_plan(66)["tree_spawn"] is True and launch_plan(66)["levels"] == [64, 1]
    assert launch_plan(4, "mpirun", "auto", 2)["tree_spawn"] is True
    assert launch_plan(4, "mpirun", True)["tree_spawn"] and not launch_plan(2000, "mpirun", "false")["tree_spawn"]
    with pytest.raises(AnsibleFilterError, match="tree_spawn 'sometimes'; allowed: auto, true, false"):
        launch_plan(4, "mpirun", "sometimes")
    with pytest.raises(AnsibleFilterError, match="launch_plan: nodes 0"):
        launch_plan(0)


def test_launch_layout_filter_names_the_node_that_differs(facts):
    from ansible.errors import AnsibleFilterError
    from ansible_collections.linerate.fabric.plugins.filter.launchers import launch_layout

    nodes = [{"name": f"n{i}", "facts": facts, "devices": RAILS} for i in (1, 2)]
    assert launch_layout(nodes) == launchers.rank_layout(facts, RAILS)
    other = node_facts(devices=RAILS)
    other["gpus"][3]["numa"] = 1
    with pytest.raises(AnsibleFilterError, match="launch_layout: the GPU/NUMA/rail layout of n2 differs"):
        launch_layout([nodes[0], dict(nodes[1], facts=other)])
    with pytest.raises(AnsibleFilterError, match="launch_layout: no node"):
        launch_layout([])
