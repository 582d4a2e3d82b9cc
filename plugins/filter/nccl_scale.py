"""Filter nccl_series_steps: the runs of the scaling series (module_utils/checks/nccl_scale.py)."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.checks import nccl_scale


def nccl_series_steps(nodes, min_efficiency=nccl_scale.DEFAULT_MIN_EFFICIENCY):
    """``nodes``: [{name, address, group}] in play order (``group``: the node's leaf group, e.g. its rails'
    leaves). Returns the series' steps [{name, group, nodes, added, hosts (addresses), min_efficiency}]."""
    try:
        address = {n["name"]: n.get("address") or n["name"] for n in nodes}
        group_of = {n["name"]: str(n.get("group") or "") for n in nodes}
        e = float(min_efficiency)
    except (KeyError, TypeError, ValueError) as err:
        raise AnsibleFilterError(f"nccl_series_steps: nodes are [{{name, address, group}}] and min_efficiency a number ({err})") from None
    if not 0 < e <= 1:
        raise AnsibleFilterError(f"nccl_series_steps: min_efficiency {min_efficiency}: above 0 and at most 1")
    steps = nccl_scale.series_steps(list(address), group_of if len(set(group_of.values())) > 1 else None)
    return [dict(s, hosts=[address[n] for n in s["nodes"]], min_efficiency=e) for s in steps]


class FilterModule:
    def filters(self):
        return {"nccl_series_steps": nccl_series_steps}
