"""The lab's real Slurm (issue 37; lab/slurmlab.py): srun launches of nccl-tests one rank per GPU end to end,
and the job's own preflight (roles/job_preflight, Slurm's TaskProlog) refusing a job whose environment lacks an
RDMA device or whose NCCL differs from the fleet's, with the code, while the node stays in service.

Jobs are submitted on the controller (srun in the slurmctld container), as from a login node. Every change
a test makes on a node (a hidden verbs device file, another NCCL in a job's library path) is undone in a
finally. Matrix cases (make test-integration); the core drain/resume test against the same Slurm is
tests/integration/audit/test_remediate.py::test_drain_and_resume_in_the_real_slurm."""

import re

import pytest

from conftest import on, podman_exec, run_playbook

CTL = "slurmctld"
NODE = "node2"


@pytest.fixture(scope="module")
def slurm_jobs(converged):
    """The converged lab with the job preflight installed (the nccl_env tag runs nccl_env and job_preflight
    on every node, whatever the converge stamp says) and nccl-tests, which the handshake and the jobs run
    (verification installs it from the lab's repository, as here: package nccl-tests)."""
    run_playbook("playbooks/hosts.yml", "--tags", "nccl_env", check=True, timeout=900)
    for node in sorted(converged["nodes"]):
        on(node, "sh", "-c", "command -v all_reduce_perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q nccl-tests >/dev/null")
        assert on(node, "test", "-x", "/etc/slurm/linerate-task-prolog") == ""
    return converged


def srun(*argv, timeout=300):
    """srun on the controller; CompletedProcess (stdout and stderr apart)."""
    return podman_exec(CTL, "srun", *argv, workdir="/tmp", timeout=timeout)


def in_service(node):
    out = on(CTL, "sinfo", "-h", "-N", "-n", node, "-o", "%T").strip()
    return out in ("idle", "mixed", "allocated"), out


@pytest.mark.matrix
def test_srun_launches_nccl_tests_one_rank_per_gpu(slurm_jobs):
    """Two nodes, eight tasks a node, each its GPU by Slurm's --gpu-bind (CUDA_VISIBLE_DEVICES), PMIx for the
    ranks, NCCL over NET/IB with GPUDirect RDMA: the launcher form of docs/launchers.md, from the controller."""
    res = srun(
        "--nodes=2",
        "--ntasks-per-node=8",
        "--gpus-per-node=8",
        "--gpu-bind=map_gpu:0,1,2,3,4,5,6,7",
        "--mpi=pmix",
        "--export=ALL,NCCL_DEBUG=INFO",
        "all_reduce_perf",
        "-b",
        "8",
        "-e",
        "8M",
        "-f",
        "4",
        "-g",
        "1",
        "-n",
        "5",
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
    out = res.stdout
    assert re.search(r"#\s+nThread 1 nGpus 1 .*", out), out[:2000]
    # "#  Rank  9 Group  0 Pid   2664 on      node2 device  0 [0000:2a:00] NVIDIA H100 80GB HBM3": each rank
    # sees one GPU (its device 0), its own bus
    ranks = re.findall(r"#\s+Rank\s+(\d+) Group\s+\d+ Pid\s+\d+ on\s+(\S+) device\s+0 \[([0-9a-f:]+)\]", out)
    assert len(ranks) == 16 and {h for _r, h, _b in ranks} == {"node1", "node2"}, out[:3000]
    # each task drives its own GPU: eight GPU buses a node
    assert all(len({b for _r, h, b in ranks if h == n}) == 8 for n in ("node1", "node2")), ranks
    assert "via NET/IB" in out and "GDRDMA" in out and "NET/Socket" not in out
    assert "Avg bus bandwidth" in out


def _task_prolog_refuses(argv, code, node=NODE):
    res = srun("-w", node, "-N1", "-n1", *argv, "sh", "-c", "echo job-ran", timeout=300)
    assert res.returncode != 0, res.stdout + res.stderr
    assert f"print linerate: {code}" not in res.stdout  # the 'print' prefix is Slurm's, stripped
    assert f"linerate: {code}" in res.stdout, res.stdout + res.stderr
    assert "job-ran" not in res.stdout and "TaskProlog failed status=1" in res.stderr
    assert in_service(node)[0], in_service(node)  # a job's problem, not the node's: no drain
    return res


@pytest.mark.matrix
def test_task_prolog_refuses_a_job_without_an_rdma_device_or_with_another_nccl(slurm_jobs):
    # the fleet's job passes the preflight, the 2-rank NET/IB handshake per rail included, and runs
    res = srun("-w", NODE, "-N1", "-n1", "sh", "-c", "echo job-ran")
    assert res.returncode == 0 and "job-ran" in res.stdout, res.stdout + res.stderr
    assert "linerate: PREFLIGHT_" not in res.stdout + res.stderr
    # a job that sees one verbs device file fewer than the node has rails (a pod without one of its RDMA
    # resources): refused before NCCL starts
    on(NODE, "mv", "/dev/infiniband/uverbs1", "/dev/infiniband.uverbs1.hidden")
    try:
        res = _task_prolog_refuses([], "PREFLIGHT_RDMA_DEVICE")
        assert "the job sees 1 verbs device file(s) in /dev/infiniband, the node has 2 rail(s)" in res.stdout
    finally:
        on(NODE, "mv", "/dev/infiniband.uverbs1.hidden", "/dev/infiniband/uverbs1")
    # an image whose NCCL is another release: its libnccl.so.2 first in the job's library path
    lib = "/tmp/linerate-test-image/lib"
    on(NODE, "sh", "-c", f"mkdir -p {lib} && printf 'NCCL version 2.18.3+cuda12.2\\n' > {lib}/libnccl.so.2")
    try:
        res = _task_prolog_refuses([f"--export=ALL,LD_LIBRARY_PATH={lib}"], "PREFLIGHT_NCCL_VERSION")
        assert f"the job's NCCL is 2.18.3 ({lib}/libnccl.so.2), the fleet's is 2.21.5" in res.stdout
    finally:
        on(NODE, "rm", "-rf", "/tmp/linerate-test-image")
