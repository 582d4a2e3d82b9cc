"""Filter: the node-exporter textfile of each node from a linerate report (module_utils/report/metrics.py)."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.report import metrics


def _render(name, fn, report, arg):
    """One textfile renderer of a report, its errors as the filter's."""
    if not isinstance(report, dict) or "generated_at" not in report:
        raise AnsibleFilterError(f"{name}: the input must be a linerate report (report.json, with generated_at)")
    try:
        return fn(report, arg)
    except (KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError(f"{name}: the report could not be read: {e!r}") from None


def node_metrics(report, nodes=None):
    return _render("node_metrics", metrics.node_metrics, report, nodes)


def fleet_metrics(report, scope=None):
    return _render("fleet_metrics", metrics.fleet_metrics, report, scope)


class FilterModule:
    def filters(self):
        return {"node_metrics": node_metrics, "fleet_metrics": fleet_metrics}
