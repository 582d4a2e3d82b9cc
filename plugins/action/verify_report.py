"""Action plugin: diagnose the verification results and write the reports (on the controller).

Reads what the verify_fabric role's checks left in each node's host variables
(``verify_fabric_port_result``, ``verify_fabric_rdma_log``, ``verify_fabric_bench_log``: ib_send_bw /
ib_write_lat records per tool), the nccl-tests
runs passed in ``nccl`` (and the NCCL tuning sweep in ``nccl_tuning``, its table in the report) and, on InfiniBand, the subnet check passed in
``ib_fabric`` (module ib_fabric_check's result; ``ib_switches`` names the
switches), turns them into findings with stable fault codes
(module_utils/findings.py and the checks/ modules; each check's report is its entry in module_utils/checks/registry.py's
CHECKS, called in that order: this action knows no check; the port findings are the ones rdma_port_check
computed on each node, taken as they are) and writes JSON, Markdown, JUnit XML and the SVG
heat map to ``<reports_dir>/<timestamp>/`` (``latest`` points at it).
Fails when a finding is an error, unless ``fail: false``.

The read-only audit (playbooks/audit.yml) passes ``mode`` (written into the
report) and ``drift``: ``{"hosts": {node: {"layers": {layer: [registered
results]}, "pci": {pci: device}}}, "switches": {switch: registered result}}``,
the check-mode results of every role, which module_utils/checks/audit.py turns into
``DRIFT_*`` findings (check ``drift``).
"""

import os
import time

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.checks import attribution, estimates, registry
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds as checks_thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.checks.context import Inputs
from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import Unreadable
from ansible_collections.linerate.fabric.plugins.module_utils.host import breaker, drain
from ansible_collections.linerate.fabric.plugins.module_utils.report import files as report_files
from ansible_collections.linerate.fabric.plugins.module_utils.report import history as report_history
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.report import report as rep


class _Refused(Exception):
    """What stops the report (unreadable results, unpublished thresholds, a remediation or history setting
    not allowed, files that cannot be written): the task fails with ``verify_report: <why>`` and ``extra``
    beside it in the result."""

    def __init__(self, why, **extra):
        super().__init__(str(why))
        self.extra = extra


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(
        (
            "nodes",
            "fabric",
            "nccl",
            "reports_dir",
            "expect_gdr",
            "fail",
            "meta",
            "write",
            "ib_fabric",
            "ib_switches",
            "sl",
            "readiness",
            "switches",
            "mode",
            "drift",
            "scope",
            "probes",
            "switch_scope",
            "switches_left",
            "history_keep",
            "trend_bandwidth_drop",
            "nccl_tuning",
            "remediation",
            "rollout",
        )
    )

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        try:
            self._verify(result, task_vars or {}, time.time())
        except _Refused as e:
            result.update(failed=True, msg=f"verify_report: {e}", **e.extra)
        return result

    def _verify(self, result, task_vars, started):
        """The report of this run into ``result``: the checks, remediation, the document and its files,
        the verdict. Raises _Refused (what stops the report) with what ``result`` says beside it."""
        args = self._task.args
        hostvars = task_vars.get("hostvars", {})
        inputs = self._inputs(args, hostvars)
        try:
            findings, checks = registry.run(inputs)
        except Unreadable as e:
            raise _Refused(e) from e
        findings = faults.correlate(findings)
        # attribution before action, then the run's drain decision (budget, breaker): both in the report
        try:
            decision, attributed = self._remediation(findings, inputs, inputs.fabric, args, hostvars)
        except (AnsibleError, ValueError, TypeError, breaker.StateError) as e:
            raise _Refused(f"remediation: {e}") from e
        checks.update(attributed)
        summary = faults.summarize(findings)
        doc = self._document(args, findings, summary, checks, inputs.fabric, decision, started)
        result.update(changed=False, findings=findings, summary=summary, passed=summary["passed"], remediation=decision)
        rendered = self._write(doc, args, task_vars, result) if args.get("write", True) else None
        result["summary_markdown"] = rendered["summary.md"] if rendered else report_markdown.to_markdown(doc)
        if not summary["passed"] and args.get("fail", True):
            result["failed"] = True
            result["msg"] = f"fabric verification failed: {summary['errors']} error(s): " + "; ".join(
                f"{x['code']} {x.get('node') or ''} {x.get('device') or ''}".strip() for x in findings if x["severity"] == "error"
            )
        else:
            result.setdefault("msg", f"fabric verification {'passed' if summary['passed'] else 'found problems'}")

    def _inputs(self, args, hostvars):
        """The checks' ``Inputs``: the nodes, their results, the fabric (its thresholds the
        validation's, never re-derived here)."""
        try:
            nodes = list(self._templar.template(args["nodes"]))
            fabric = self._templar.template(args["fabric"])
            nccl_runs = self._templar.template(args.get("nccl") or [])
            data = {n: {k: self._templar.template(hostvars[n][k]) for k in registry.node_results() if k in hostvars[n]} for n in nodes}
        except (AnsibleError, KeyError) as e:
            raise _Refused(f"the results could not be read: {e}") from e
        try:
            checks_thresholds.derived(fabric)  # the thresholds are the validation's, never re-derived here
        except checks_thresholds.NotPublished as e:
            raise _Refused(e) from e
        # every check of the registry in the report's order: its findings and its report entries
        return Inputs(nodes, data, fabric, args=args, hostvars=hostvars, template=self._templar.template, template_error=AnsibleError, nccl_runs=nccl_runs)

    def _document(self, args, findings, summary, checks, fabric, decision, started):
        """report.json's document: the checks, the phases' times, the remediation, the NCCL tuning sweep
        and the host rollout of this run."""
        meta = dict(self._templar.template(args.get("meta") or {}))
        if "phase_marks" in meta:
            # the role's start marks -> per-phase wall times; "report" is this action's own time before writing
            meta["phases"] = estimates.phase_timings(meta.pop("phase_marks"), started, time.time() - started)
        doc = rep.build_report(findings, summary, checks, fabric, meta, mode=self._templar.template(args.get("mode")) or None)
        doc["remediation"] = decision
        # the NCCL tuning sweep of this run (playbooks/nccl_tune.yml): its table, beside the checks
        tuning = self._templar.template(args.get("nccl_tuning") or {})
        if tuning:
            doc["nccl_tuning"] = rep.tuning_section(tuning)
        # the host stack's rollout of this run (playbooks/stages/hosts.yml, "Report the rollout")
        rollout = self._templar.template(args.get("rollout") or {})
        if rollout:
            doc["rollout"] = dict(rollout)
        return doc

    def _write(self, doc, args, task_vars, result):
        """The history and trends, then the report files (not in check mode); their texts, None when
        none were written."""
        reports_dir = self._templar.template(args.get("reports_dir") or "reports")
        if not os.path.isabs(reports_dir):
            reports_dir = os.path.join(self._loader.get_basedir(), reports_dir)
        # history and trends: the previous run of the same scope (issue 27); -e / inventory
        # linerate_report_keep and linerate_trend_bandwidth_drop when the task does not say
        try:
            keep = int(self._templar.template(args.get("history_keep", task_vars.get("linerate_report_keep", report_history.HISTORY_KEEP))))
            drop = float(
                self._templar.template(args.get("trend_bandwidth_drop", task_vars.get("linerate_trend_bandwidth_drop", report_history.TREND_BANDWIDTH_DROP)))
            )
            if keep < 1 or not 0 < drop < 1:
                raise ValueError(
                    f"linerate_report_keep {keep!r} (allowed: an integer >= 1), linerate_trend_bandwidth_drop {drop!r} (allowed: a share 0 < x < 1)"
                )
        except (TypeError, ValueError) as e:
            raise _Refused(f"history settings not allowed: {e}") from e
        report_history.attach_history(doc, reports_dir, bandwidth_drop=drop)
        result["trends"] = doc.get("trends")
        if self._task.check_mode:
            result["report_files"] = {}
            result["msg"] = "check mode: reports not written"
            return None
        rendered = rep.render_reports(doc)
        try:
            result["report_files"] = rep.write_reports(doc, reports_dir, rendered=rendered)
        except report_files.ReportWriteError as e:
            # nothing of this run was kept; the run fails, whatever the fabric's verdict
            raise _Refused(f"the report could not be written: {e}", report_files={}) from e
        result["history_pruned"] = report_history.prune_history(reports_dir, keep)
        return rendered

    def _remediation(self, findings, inputs, fabric, args, hostvars):
        """(decision, report checks): the element findings (checks/attribution.py) added to ``findings``,
        then the drain decision (host/breaker.py plan) from the durable state, with DRAIN_BREAKER_TRIPPED
        when the breaker is open. Reads the state; never writes it (roles/remediate records what was done)."""
        policy = (fabric or {}).get("remediation") or {}
        rem = dict(self._templar.template(args.get("remediation") or {}))
        unseen = {f["node"] for f in findings if f.get("code") == "NODE_NOT_VERIFIED" and f.get("node")}
        ssh = {
            n: {
                k: self._templar.template(hostvars[n][k]) for k in ("ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_ssh_args") if k in hostvars[n]
            }
            for n in unseen
            if n in hostvars
        }
        _found, attributed = attribution.attribute(findings, inputs.cabling, inputs.uplinks(), ssh, policy, transport=(fabric or {}).get("transport", "roce"))
        enabled = bool(rem.get("enabled", False))
        state_file = rem.get("state_file")
        try:
            state = breaker.load(state_file) if state_file else breaker.empty_state()
            state_error = None
        except breaker.StateError as e:
            if enabled:
                raise  # never act on a forgotten breaker: the report (and the drain) stop, naming the file
            state, state_error = breaker.empty_state(), str(e)

        def select(fs):
            return drain.selected(fs, policy.get("drain_codes") or (), policy.get("drain_severities") or ("error",), policy.get("exempt_codes") or ())

        fleet = int(rem.get("fleet") or len(inputs.nodes) + len(unseen))
        decision = breaker.plan(findings, state, policy, fleet, select, enabled=enabled)
        decision["state_file"] = state_file
        if state_error:
            decision["state_error"] = state_error
        findings += breaker.breaker_finding(decision, faults.finding)
        return decision, attributed
