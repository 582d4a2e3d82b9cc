#!/usr/bin/python
"""Module: run nccl-tests across nodes through mpirun and parse results and NCCL's log."""

DOCUMENTATION = r"""
---
module: nccl_tests
short_description: Run nccl-tests (all_reduce_perf, all_gather_perf) across nodes with mpirun
description:
  - Launches one process per node with Open MPI's C(mpirun) (ranks started over SSH),
    each driving I(gpus) GPUs (C(-g)), with C(NCCL_DEBUG=INFO) so the log shows the
    network NCCL chose, GPUDirect RDMA and the NICs it uses.
  - Forces the ring algorithm (C(NCCL_ALGO=Ring)) by default - on two nodes NCCL's tree
    would keep part of the traffic off the network and hide a slow NIC.
  - Parses the result table (or the C(-J) JSON file where the build writes one) and
    the NCCL log of every host. Changes nothing on the hosts (C(changed) is always
    false); in check mode only returns the command line.
extends_documentation_fragment:
  - linerate.fabric.nccl_mpirun
requirements:
  - nccl-tests binaries (all_reduce_perf, all_gather_perf) built with MPI, and mpirun, on every rank's host
options:
  min_bytes:
    description: C(-b).
    type: str
    default: 1G
  max_bytes:
    description: C(-e).
    type: str
    default: 4G
  env:
    description: Environment passed to every rank (C(-x NAME=value)); NCCL also reads /etc/nccl.conf.
    type: dict
    default: {NCCL_DEBUG: INFO, NCCL_ALGO: Ring}
  launch:
    description:
      - C(rank_per_gpu) (the production shape) starts one rank per GPU of I(layout) (C(-g 1)), placed and
        bound by I(binding), each through a per-rank wrapper that sets C(CUDA_VISIBLE_DEVICES),
        C(NCCL_TESTS_DEVICE=0) and C(UCX_NET_DEVICES) (docs/launchers.md); C(node) one process per host
        driving I(gpus) GPUs (C(-g)).
    type: str
    choices: [node, rank_per_gpu]
    default: node
  binding:
    description:
      - With C(rank_per_gpu), how ranks are bound (module_utils/intent/launchers.py rank_binding). C(auto)
        Open MPI binds (C(--map-by ppr:K:numa --bind-to numa)) where the GPUs fill the NUMA nodes in order,
        else the wrapper runs each rank under C(numactl --cpunodebind --membind) of its GPU's NUMA node;
        C(numactl) always the wrapper; C(none) nothing binds (C(--bind-to none)).
    type: str
    choices: [auto, numactl, none]
    default: auto
  layout:
    description: With C(rank_per_gpu), the node's ranks [{local_rank, gpu, numa, nic}] (filter launcher_files' layout.json).
    type: list
    elements: dict
  rail_pinning:
    description: With C(rank_per_gpu), C(topology) (NCCL_IB_HCA from nccl.conf, or I(hca)) or C(nearest) (each rank's own rail).
    type: str
    choices: [topology, nearest]
    default: topology
  hca:
    description:
      - With C(rank_per_gpu) and C(topology), an NCCL_IB_HCA the wrapper exports to every rank. NCCL reads
        C(/etc/nccl.conf) without overwriting the environment (src/misc/param.cc setEnvFile, C(setenv(..., 0))),
        so an exported value wins over the node's file; unset (role verify_fabric leaves it unset), each rank
        reads the file as a job does.
    type: str
  json:
    description: Ask nccl-tests for its JSON result file (C(-J)) and parse that.
    type: bool
    default: false
  mpirun_args:
    description: More mpirun arguments (e.g. C(--mca btl_tcp_if_include eth0)).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds before the whole run is killed.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    description: Runs no benchmark; returns the mpirun argv it would run (C(skipped_run)).
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Run all_reduce_perf across the nodes
  linerate.fabric.nccl_tests:
    hosts: "{{ groups['gpu_nodes'] | map('extract', hostvars, 'ansible_host') | list }}"
    gpus: 8
    mpirun_args: [--mca, btl_tcp_if_include, eth0, --mca, oob_tcp_if_include, eth0]
  run_once: true
"""

RETURN = r"""
test:
  description: The nccl-tests binary that ran.
  returned: always
  type: str
argv:
  description: The mpirun command line.
  returned: always
  type: list
exit_status:
  description: mpirun's exit status (null when killed at the timeout).
  returned: when it ran
  type: int
busbw:
  description: Bus bandwidth (GB/s, out-of-place) at the largest size; null on failure.
  returned: when it ran
  type: float
avg_busbw:
  description: nccl-tests' "Avg bus bandwidth" (GB/s).
  returned: when it ran
  type: float
parsed:
  description: The nccl-tests parser's result (table, devices, summary).
  returned: when the run produced a table
  type: dict
logs:
  description: The NCCL log parser's result per host (transport, gdr, ib_devices, error, ...).
  returned: when it ran
  type: dict
error:
  description: Why the run failed (nccl-tests failure lines, NCCL WARNs), else null.
  returned: when it ran
  type: str
stdout:
  description: Raw output.
  returned: when it ran
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import preview_in_check_mode
from ansible_collections.linerate.fabric.plugins.module_utils.probes.nccl_tests import NCCL_MPIRUN_ARGS, nccl_argv, run_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def main():
    module = AnsibleModule(
        argument_spec=dict(
            NCCL_MPIRUN_ARGS,
            min_bytes=dict(type="str", default="1G"),
            max_bytes=dict(type="str", default="4G"),
            env=dict(type="dict", default={"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring"}),
            launch=dict(type="str", choices=["node", "rank_per_gpu"], default="node"),
            binding=dict(type="str", choices=["auto", "numactl", "none"], default="auto"),
            layout=dict(type="list", elements="dict"),
            rail_pinning=dict(type="str", choices=["topology", "nearest"], default="topology"),
            hca=dict(type="str"),
            json=dict(type="bool", default=False),
        ),
        required_if=[("launch", "rank_per_gpu", ("layout",))],
        supports_check_mode=True,
    )
    p = module.params
    preview_in_check_mode(module, lambda: {"test": p["test"], "argv": nccl_argv(p, p["mpirun"])})
    module.exit_json(**run_nccl_tests(Runner(module), p))


if __name__ == "__main__":
    main()
