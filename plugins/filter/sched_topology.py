"""Filter sched_topology: the scheduler's topology from the cabling LLDP or ibnetdiscover observed
(module_utils/checks/sched_topology.py)."""

import json

import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.checks import accounting, cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import sched_topology as topo


def _ib_inputs(check):
    """(findings, observed) of the InfiniBand subnet check's result (ib_fabric_check, as role
    ib_subnet_manager registers it); AnsibleFilterError where it did not discover the subnet."""
    if not isinstance(check, dict) or check.get("failed") or "observed" not in check:
        why = (check or {}).get("msg") if isinstance(check, dict) else None
        raise AnsibleFilterError(
            "sched_topology: the InfiniBand subnet was not discovered (ibnetdiscover, the "
            f"subnet check on the master SM host): {why or 'no topology check result'}; the "
            "topology is rendered from observed cabling only"
        )
    return list(check.get("findings") or []), check["observed"]


def sched_topology(inputs, options=None):
    """``inputs``: {hosts: {node: rdma_ports}, host_reads: {node: verify_fabric_cabling},
    switch_reads: {switch: switch_fabric_lldp}, uplinks: {switch: switch_uplinks}} (RoCE, LLDP), or
    {hosts, ib_fabric: the subnet check's result} (InfiniBand, ibnetdiscover); ``options``: name,
    label_prefix, accept_observed, source. Returns {relative path: text} (Slurm topology.conf tree and
    block, topology.yaml, Kueue's Topology and ResourceFlavor, the node labels); AnsibleFilterError
    naming the open cabling findings or the unobserved nodes."""
    try:
        # plain data: Ansible's templated strings are str subclasses the YAML dumper refuses
        inputs, options = json.loads(json.dumps(inputs)), json.loads(json.dumps(options or {}))
        hosts = dict(inputs["hosts"])
        if inputs.get("ib_fabric") is not None:
            findings, observed = _ib_inputs(inputs["ib_fabric"])
            return _render(observed, findings, hosts, dict(options, method="ibnetdiscover"))
        # as the report reads them (checks/cabling.py report): a read without a neighbour table failed
        reads = {s: ({"unreadable": True, "msg": why} if (why := accounting.lldp_failure(r)) else r) for s, r in (inputs.get("switch_reads") or {}).items()}
        args = (hosts, inputs.get("uplinks") or {}, reads, inputs.get("host_reads") or {})
    except (KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError(f"sched_topology: inputs need hosts, host_reads, switch_reads, uplinks ({e})") from None
    findings, _cases = cabling.check_cabling(*args)
    observed = cabling.observed_map(*args)
    return _render(observed, findings, hosts, options)


def _render(observed, findings, hosts, options):
    try:
        out = topo.render(observed, findings, sorted(hosts), options or {})
    except ValueError as e:
        raise AnsibleFilterError(f"sched_topology: {e}") from None
    files = dict(out["files"])
    files["kueue/topology.yaml"] = yaml.safe_dump_all(out["kueue"], default_flow_style=False, sort_keys=False, explicit_start=True)
    return files


class FilterModule:
    def filters(self):
        return {"sched_topology": sched_topology}
