"""Action plugin: diagnose the verification results and write the reports (on the controller).

Reads what the verify_fabric role's checks left in each node's host variables
(``verify_fabric_port_result``, ``verify_fabric_rdma_log``, ``verify_fabric_bench_log``: ib_send_bw /
ib_write_lat records per tool), the nccl-tests
runs passed in ``nccl`` (and the NCCL tuning sweep in ``nccl_tuning``, its table in the report) and, on InfiniBand, the subnet check passed in
``ib_fabric`` (module ib_fabric_check's result; ``ib_switches`` names the
switches), turns them into findings with stable fault codes
(module_utils/verify.py; the port findings are the ones rdma_port_check
computed on each node, taken as they are) and writes JSON, Markdown, JUnit XML and the SVG
heat map to ``<reports_dir>/<timestamp>/`` (``latest`` points at it).
Fails when a finding is an error, unless ``fail: false``.

The read-only audit (playbooks/audit.yml) passes ``mode`` (written into the
report) and ``drift``: ``{"hosts": {node: {"layers": {layer: [registered
results]}, "pci": {pci: device}}}, "switches": {switch: registered result}}``,
the check-mode results of every role, which module_utils/audit.py turns into
``DRIFT_*`` findings (check ``drift``).
"""
import os
import time

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.linerate.fabric.plugins.module_utils import cabling as cabling_check
from ansible_collections.linerate.fabric.plugins.module_utils import incastcheck, linkcheck
from ansible_collections.linerate.fabric.plugins.module_utils import accounting, audit, benchcheck, gpudirect
from ansible_collections.linerate.fabric.plugins.module_utils import report as rep
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.ncclconf import parse_nccl_conf
from ansible_collections.linerate.fabric.plugins.module_utils import readiness, verify


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("nodes", "fabric", "nccl", "reports_dir", "expect_gdr", "fail", "meta", "write",
                             "ib_fabric", "ib_switches", "sl", "readiness", "switches", "mode", "drift",
                             "scope", "probes", "switch_scope", "switches_left", "history_keep",
                             "trend_bandwidth_drop", "nccl_tuning"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        started = time.time()
        task_vars = task_vars or {}
        args = self._task.args
        hostvars = task_vars.get("hostvars", {})
        try:
            nodes = list(self._templar.template(args["nodes"]))
            fabric = self._templar.template(args["fabric"])
            nccl_runs = self._templar.template(args.get("nccl") or [])
            data = {n: {k: self._templar.template(hostvars[n][k]) for k in
                        ("rdma_ports", "verify_fabric_port_result", "verify_fabric_rdma_log",
                         "verify_fabric_nccl_expected", "verify_fabric_nccl_conf", "verify_fabric_incast_log",
                         "verify_fabric_readiness", "verify_fabric_cabling", "verify_fabric_link_health",
                         "verify_fabric_bench_log", "verify_fabric_gdrcopy")
                        if k in hostvars[n]}
                    for n in nodes}
        except (AnsibleError, KeyError) as e:
            result.update(failed=True, msg=f"verify_report: the results could not be read: {e}")
            return result
        try:
            verify.derived(fabric)  # the thresholds are the validation's, never re-derived here
        except verify.NotPublished as e:
            result.update(failed=True, msg=f"verify_report: {e}")
            return result
        hosts = {n: d.get("rdma_ports") or [] for n, d in data.items()}
        cabling = verify.cabling_index(hosts)
        findings, checks = [], {}

        # every node and switch in scope accounted for: what did not finish is not verified
        try:
            accounted = self._accounting(nodes, hostvars)
        except (AnsibleError, TypeError, ValueError, AttributeError) as e:
            result.update(failed=True, msg=f"verify_report: the scope could not be read: {e}")
            return result
        for name, (found, c) in accounted.items():
            if c:
                findings += found
                checks[name] = c

        # ports: the findings rdma_port_check computed on each node
        try:
            port_found, port_check = verify.port_check({n: data[n].get("verify_fabric_port_result") for n in nodes}, hosts)
        except KeyError as e:
            result.update(failed=True, msg=f"verify_report: the results could not be read: {e}")
            return result
        findings += port_found
        if port_check:
            checks["ports"] = port_check
        hints = [(x["node"], x["device"]) for x in findings if x.get("device")]

        # host readiness below the fabric: per node, then parity across nodes
        limits = {k: int(v) for k, v in (self._templar.template(args.get("readiness") or {})).items()}
        f, check = self._readiness(nodes, data, limits)
        if check:
            findings += f
            checks["readiness"] = check
        # RoCE cabling by LLDP (switch tables + lldpd on the nodes)
        if any(data[n].get("verify_fabric_cabling") for n in nodes):
            f, cases = self._cabling(nodes, data, hosts, hostvars)
            findings += f
            checks["cabling"] = cabling_check.summary(f, cases)

        # NCCL's configuration read back from each node
        sl = self._templar.template(args.get("sl"))
        f, cases = self._nccl_conf(nodes, data, fabric, cabling, None if sl in (None, "") else int(sl))
        if cases:
            findings += f
            checks["nccl_conf"] = {"passed": not f, "cases": cases,
                                   "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} nodes' NCCL_IB_TC / "
                                             "NCCL_IB_GID_INDEX / NCCL_IB_HCA agree with the intent and facts"}

        # ib_write_bw
        logs = {n: data[n].get("verify_fabric_rdma_log") or [] for n in nodes}
        tests = verify.round_tests(logs)
        if tests:
            f, evaluated = verify.rdma_findings(tests, fabric, cabling, hints, self._uplinks(hostvars))
            findings += f
            checks["ib_write_bw"] = rep.rdma_check(evaluated, verify.rdma_threshold_gbps(fabric), f)
            checks["ib_write_bw"]["schedule"] = verify.schedule_timing(logs)

        # ib_send_bw / ib_write_lat on the first rounds' pairs (module_utils/benchcheck.py)
        for tool in benchcheck.BENCHES:
            logs = {n: (data[n].get("verify_fabric_bench_log") or {}).get(tool) or [] for n in nodes}
            tests = benchcheck.bench_tests(logs)
            if tests:
                limit = benchcheck.threshold(tool, fabric)
                evaluated = benchcheck.evaluate(tool, tests, limit)
                f = benchcheck.findings(tool, evaluated, fabric, cabling, limit,
                                        [(x["code"], x.get("node"), x.get("device")) for x in findings])
                findings += f
                checks[tool] = benchcheck.check(tool, evaluated, limit, f)

        # GPUDirect RDMA: ib_write_bw from GPU memory on the first rounds' pairs, gdrcopy's sanity test
        f, check = self._gpudirect(nodes, data, fabric)
        if check:
            findings += f
            checks[gpudirect.CHECK] = check

        # incast: lossless proof by counters, every node a receiver once (the rotation)
        log = {n: data[n]["verify_fabric_incast_log"] for n in nodes if data[n].get("verify_fabric_incast_log")}
        if log:
            f, rails, coverage = verify.incast_rotation(log, fabric, cabling, nodes, self._uplinks(hostvars))
            sw, unproven = incastcheck.switch_findings(self._switch_reads(hostvars, "switch_fabric_counters"), fabric,
                                                       hosts, self._uplinks(hostvars), rails, verify.finding, f)
            f += sw
            findings += f
            checks["incast"] = rep.incast_check(f, rails, coverage, unproven)

        # link health: error counters and flaps over the window, BER
        snaps = {n: data[n]["verify_fabric_link_health"] for n in nodes if data[n].get("verify_fabric_link_health")}
        if snaps:
            f, rows = linkcheck.link_health_findings(snaps, fabric, cabling, verify.finding, verify._where)
            sw, unproven, shown = linkcheck.switch_link_findings(self._switch_reads(hostvars, "switch_fabric_counters"),
                                                                 fabric, hosts, self._uplinks(hostvars), verify.finding, f)
            f += sw
            for row in rows:
                row.update(shown.get((row["node"], row["device"])) or {"switch_errors": None, "switch_flaps": None})
            findings += f
            checks["link_health"] = dict(linkcheck.check(f, rows), switch_unproven=unproven)

        # nccl-tests
        for run in nccl_runs:
            if run.get("skipped_run") or run.get("skipped"):
                continue
            f = verify.nccl_findings(run, fabric, hosts, bool(args.get("expect_gdr", True)))
            findings += f
            nics = min((len(p) for p in hosts.values()), default=0)
            threshold = verify.nccl_threshold_gbytes(fabric, nics)
            name = f"nccl:{run.get('test', 'all_reduce_perf')}"
            busbw = run.get("busbw")
            checks[name] = {"passed": not f, "busbw_gbytes": busbw, "threshold_gbytes": threshold,
                            "transports": {h: (lg or {}).get("transport") for h, lg in (run.get("logs") or {}).items()},
                            "gdr": {h: (lg or {}).get("gdr") for h, lg in (run.get("logs") or {}).items()},
                            "detail": (f"busbw {busbw:.2f} GB/s" if busbw is not None else "no result")
                            + f" (threshold {threshold:g} GB/s)" + (f"; {run['error'][:160]}" if run.get("error") else ""),
                            "cases": [{"name": name, "ok": not f, "code": f[0]["code"] if f else None,
                                       "message": "; ".join(x["message"] for x in f) or None, "findings": f}]}

        # InfiniBand: the subnet manager / topology / partition check
        ib = self._templar.template(args.get("ib_fabric") or {})
        if ib:
            f = verify.ib_findings(ib, set(self._templar.template(args.get("ib_switches") or [])))
            findings += f
            checks.update(verify.ib_checks(ib, f))

        # The audit: what every role would change in check mode
        drift = self._templar.template(args.get("drift")) if args.get("drift") is not None else None
        if drift is not None:
            try:
                f = audit.drift_findings((drift or {}).get("hosts") or {}, (drift or {}).get("switches") or {})
            except (ValueError, TypeError, AttributeError) as e:
                result.update(failed=True, msg=f"verify_report: the audit's drift results could not be read: {e}")
                return result
            findings += f
            checks["drift"] = audit.drift_check(f, sorted(((drift or {}).get("hosts") or {}), key=str),
                                                sorted(((drift or {}).get("switches") or {}), key=str))

        findings = verify.correlate(findings)
        summary = verify.summarize(findings)
        meta = dict(self._templar.template(args.get("meta") or {}))
        if "phase_marks" in meta:
            # the role's start marks -> per-phase wall times; "report" is this action's own time before writing
            meta["phases"] = verify.phase_timings(meta.pop("phase_marks"), started, time.time() - started)
        doc = rep.build_report(findings, summary, checks, fabric, meta,
                               mode=self._templar.template(args.get("mode")) or None)
        # the NCCL tuning sweep of this run (playbooks/nccl_tune.yml): its table, beside the checks
        tuning = self._templar.template(args.get("nccl_tuning") or {})
        if tuning:
            doc["nccl_tuning"] = rep.tuning_section(tuning)
        result.update(changed=False, findings=findings, summary=summary, passed=summary["passed"])
        rendered = None  # the four report files' text, when written
        if args.get("write", True):
            reports_dir = self._templar.template(args.get("reports_dir") or "reports")
            if not os.path.isabs(reports_dir):
                reports_dir = os.path.join(self._loader.get_basedir(), reports_dir)
            # history and trends: the previous run of the same scope (issue 27); -e / inventory
            # linerate_report_keep and linerate_trend_bandwidth_drop when the task does not say
            try:
                keep = int(self._templar.template(args.get("history_keep", task_vars.get(
                    "linerate_report_keep", rep.HISTORY_KEEP))))
                drop = float(self._templar.template(args.get("trend_bandwidth_drop", task_vars.get(
                    "linerate_trend_bandwidth_drop", rep.TREND_BANDWIDTH_DROP))))
                if keep < 1 or not 0 < drop < 1:
                    raise ValueError(f"linerate_report_keep {keep!r} (allowed: an integer >= 1), "
                                     f"linerate_trend_bandwidth_drop {drop!r} (allowed: a share 0 < x < 1)")
            except (TypeError, ValueError) as e:
                result.update(failed=True, msg=f"verify_report: history settings not allowed: {e}")
                return result
            rep.attach_history(doc, reports_dir, bandwidth_drop=drop)
            result["trends"] = doc.get("trends")
            if self._task.check_mode:
                result["report_files"] = {}
                result["msg"] = "check mode: reports not written"
            else:
                os.makedirs(reports_dir, exist_ok=True)
                rendered = rep.render_reports(doc)
                result["report_files"] = rep.write_reports(doc, reports_dir, rendered=rendered)
                result["history_pruned"] = rep.prune_history(reports_dir, keep)
        result["summary_markdown"] = rendered["summary.md"] if rendered else rep.to_markdown(doc)
        if not summary["passed"] and args.get("fail", True):
            result["failed"] = True
            result["msg"] = (f"fabric verification failed: {summary['errors']} error(s): "
                             + "; ".join(f"{x['code']} {x.get('node') or ''} {x.get('device') or ''}".strip()
                                         for x in findings if x["severity"] == "error"))
        else:
            result.setdefault("msg", f"fabric verification {'passed' if summary['passed'] else 'found problems'}")
        return result

    def _accounting(self, nodes, hostvars):
        """{"nodes": (findings, check), "switches": (findings, check)}: NODE_NOT_VERIFIED for each node in
        ``scope`` (ansible_play_hosts_all) that is not in ``nodes`` (the hosts still in the play), with the
        reason the verification's rescue recorded (``verify_fabric_not_verified``) or the controller's
        probe (``probes``: the registered loop of report.yml's ping); SWITCH_UNREACHABLE for each switch in
        ``switch_scope`` that left the switch plays (``switches_left``) or whose reads failed."""
        args, out = self._task.args, {}
        scope = args.get("scope")
        if scope is not None:
            scope = [str(n) for n in self._list("scope", self._templar.template(scope))]
            missing = [n for n in scope if n not in nodes]
            records = {n: self._templar.template(hostvars[n]["verify_fabric_not_verified"]) for n in missing
                       if n in hostvars and "verify_fabric_not_verified" in hostvars[n]}
            probes = {}
            for r in (self._templar.template(args.get("probes") or {}) or {}).get("results") or []:
                if isinstance(r, dict) and r.get("item") is not None:
                    probes[str(r["item"])] = r
            out["nodes"] = accounting.node_findings(scope, nodes, records, probes)
        sw_scope = args.get("switch_scope")
        if sw_scope is not None:
            sw_scope = [str(s) for s in self._list("switch_scope", self._templar.template(sw_scope))]
            present = [s for s in sw_scope if s in hostvars]
            lldp = {s: self._templar.template(hostvars[s]["switch_fabric_lldp"]) for s in present
                    if "switch_fabric_lldp" in hostvars[s]}
            counters = {s: self._templar.template(hostvars[s]["switch_fabric_counters"]) for s in present
                        if "switch_fabric_counters" in hostvars[s]}
            left = [str(s) for s in self._list("switches_left", self._templar.template(args.get("switches_left") or []))]
            out["switches"] = accounting.switch_findings(sw_scope, lldp, counters, left)
        return out

    @staticmethod
    def _list(key, value):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{key} must be a list of inventory host names (ansible_play_hosts_all), "
                             f"got {type(value).__name__} {str(value)[:80]!r}")
        return value

    def _switches(self, hostvars):
        return [s for s in self._templar.template(self._task.args.get("switches") or []) if s in hostvars]

    def _switch_reads(self, hostvars, name):
        """{switch: what the switch plays of playbooks/verify.yml registered as ``name``}."""
        return {s: self._templar.template(hostvars[s][name]) for s in self._switches(hostvars) if name in hostvars[s]}

    def _uplinks(self, hostvars):
        return {s: self._templar.template(hostvars[s].get("switch_uplinks") or []) for s in self._switches(hostvars)}

    def _cabling(self, nodes, data, hosts, hostvars):
        """Findings and cases of the cabling check (module_utils/cabling.py)."""
        host_reads = {n: data[n].get("verify_fabric_cabling") or {} for n in nodes}
        # the role reads with failed_when: false (which clears ``failed``): a read without a neighbour table failed
        reads = {s: ({"unreadable": True, "msg": why} if (why := accounting.lldp_failure(r)) else r)
                 for s, r in self._switch_reads(hostvars, "switch_fabric_lldp").items()}
        return cabling_check.check_cabling(hosts, self._uplinks(hostvars), reads, host_reads)

    @staticmethod
    def _nccl_conf(nodes, data, fabric, cabling, sl=None):
        """Findings and report cases of the NCCL configuration read back (role task ports.yml)."""
        findings, cases = [], []
        for n in nodes:
            raw = data[n].get("verify_fabric_nccl_conf")
            if not raw:
                continue
            conf = {"path": raw.get("path")}
            if raw.get("error"):
                conf["error"] = raw["error"]
            else:
                try:
                    conf["settings"] = parse_nccl_conf(raw.get("text") or "")
                except ParseError as e:
                    conf["invalid"] = str(e)
            expected = data[n].get("verify_fabric_nccl_expected") or {}
            f = verify.nccl_conf_findings(n, conf, expected.get("settings") or {}, expected.get("gids") or {}, fabric, sl)
            for x in f:
                if x.get("device"):
                    where = verify._where(cabling, n, x["device"])
                    x["switch"] = where["switch"]
                    x["switch_port"] = None if where["switch_port"] is None else str(where["switch_port"])
            findings += f
            cases.append({"name": f"{n} nccl.conf", "ok": not f, "code": f[0]["code"] if f else None,
                          "message": "; ".join(x["message"] for x in f) or None, "findings": f})
        return findings, cases

    @staticmethod
    def _gpudirect(nodes, data, fabric):
        """(findings, checks.gpudirect) from verify_fabric_bench_log.gpudirect and verify_fabric_gdrcopy;
        (_, None) when neither ran. Nodes without a GPU are cases marked not applicable."""
        logs = {n: (data[n].get("verify_fabric_bench_log") or {}).get(gpudirect.CHECK) or [] for n in nodes}
        gdr = {n: data[n]["verify_fabric_gdrcopy"] for n in nodes if data[n].get("verify_fabric_gdrcopy")}
        ready = {n: (data[n].get("verify_fabric_readiness") or {}).get("facts") for n in nodes}
        none = gpudirect.gpu_nodes(ready)[1]
        tests = gpudirect.tests(logs)
        if not tests and not gdr:
            return [], None
        limit = verify.rdma_threshold_gbps(fabric)
        evaluated = gpudirect.evaluate(tests, limit)
        host = {tuple(t["client"]): t["gbps"] for t in verify.round_tests(
            {n: data[n].get("verify_fabric_rdma_log") or [] for n in nodes}) if t.get("gbps") is not None}
        found = gpudirect.findings(evaluated, limit, ready, host)
        check = gpudirect.check(evaluated, limit, found, {n: "no GPU on the node (nvidia-smi lists none)" for n in none})
        gfound, gcases = gpudirect.gdrcopy_findings(gdr)
        check["cases"] += gcases
        check["passed"] = check["passed"] and not gfound
        return found + gfound, check

    @staticmethod
    def _readiness(nodes, data, limits):
        """Findings and the report check of the host readiness facts (role task readiness.yml)."""
        ready = {n: data[n]["verify_fabric_readiness"]["facts"] for n in nodes
                 if (data[n].get("verify_fabric_readiness") or {}).get("facts")}
        if not ready:
            return [], None
        f = [x for n, fx in ready.items() for x in readiness.host_findings(n, fx, **limits)]
        f += readiness.parity_findings(ready)
        bad = {x["node"] for x in f if x["severity"] == "error"}
        cases = [{"name": f"{n} readiness", "ok": n not in bad,
                  "code": next((x["code"] for x in f if x["node"] == n and x["severity"] == "error"), None),
                  "message": "; ".join(x["message"] for x in f if x["node"] == n) or None,
                  "findings": [x for x in f if x["node"] == n]} for n in ready]
        return f, {"passed": not bad, "rails": readiness.rail_summary(ready),
                   "versions": {n: fx.get("versions") for n, fx in ready.items()},
                   "detail": f"{len(ready) - len(bad)}/{len(ready)} nodes ready (PCIe, ACS, affinity, parity); "
                             f"{len(f)} finding(s)", "cases": cases}
