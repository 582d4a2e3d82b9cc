"""Documentation shared by the modules that run nccl-tests across hosts through mpirun (nccl_tests, nccl_tune):
the options they read the same way (their argument spec: module_utils/probes/nccl_tests.py NCCL_MPIRUN_ARGS)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  hosts:
    description: Addresses mpirun starts the ranks on (one process per host); the first is this host.
    type: list
    elements: str
    required: true
  test:
    description: The nccl-tests binary.
    type: str
    choices: [all_reduce_perf, all_gather_perf]
    default: all_reduce_perf
  gpus:
    description: GPUs per process (C(-g)).
    type: int
    default: 8
  step_factor:
    description: C(-f).
    type: int
    default: 2
  iterations:
    description: C(-n).
    type: int
    default: 20
  mpirun:
    description: The mpirun binary.
    type: str
    default: mpirun
  ssh_args:
    description: SSH options mpirun uses to reach the other hosts (key, known hosts).
    type: str
"""
