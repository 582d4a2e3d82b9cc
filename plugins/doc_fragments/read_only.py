"""Documentation shared by the host modules that only read (rdma_facts, host_readiness, rdma_port_check,
ofed_driver_info, ofed_preflight): what they promise in check and diff mode. The switch's read-only modules
have theirs in switch_connection.py (READ_ONLY)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
    description: Reads only; the same result in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
"""
