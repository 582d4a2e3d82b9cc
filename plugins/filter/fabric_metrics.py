"""Filter: the node-exporter textfile of each node from a linerate report (module_utils/checks/metrics.py)."""
from ansible.errors import AnsibleFilterError

from ansible_collections.linerate.fabric.plugins.module_utils.checks import metrics


def node_metrics(report, nodes=None):
    if not isinstance(report, dict) or "generated_at" not in report:
        raise AnsibleFilterError("node_metrics: the input must be a linerate report (report.json, with generated_at)")
    try:
        return metrics.node_metrics(report, nodes)
    except (KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError(f"node_metrics: the report could not be read: {e!r}") from None


def fleet_metrics(report, scope=None):
    if not isinstance(report, dict) or "generated_at" not in report:
        raise AnsibleFilterError("fleet_metrics: the input must be a linerate report (report.json, with generated_at)")
    try:
        return metrics.fleet_metrics(report, scope)
    except (KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError(f"fleet_metrics: the report could not be read: {e!r}") from None


class FilterModule:
    def filters(self):
        return {"node_metrics": node_metrics, "fleet_metrics": fleet_metrics}
