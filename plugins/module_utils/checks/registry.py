"""The verification's checks, one table: what each check is called, where it runs, how it is reported.

Two tables, read by their two users and by nothing else:

- ``CHECKS``, in the report's order: each check's name (as in the role's ``verify_fabric_checks``
  where ``selectable``), whether it loads the fabric (``benchmark``: ``verify_fabric_benchmark_checks``,
  left out of a read-only audit unless asked), whether it runs by default (``default``:
  ``verify_fabric_checks``), the node results it reads (``reads``: host variables its phase leaves,
  which the action reads for it), and its ``report`` function: ``report(ctx) -> (findings, {check: entry})``,
  the findings it adds and the report's ``checks`` entries (summary row, JUnit cases) it makes, or
  ``([], {})`` when it did not run. The verify_report action calls them in this order and knows no check.
- ``PHASES``, in the role's order: the task file each check runs on the nodes
  (roles/verify_fabric/tasks/<tasks>), the include's task name, the start mark that times it
  (report.json meta.phases, summary.md "Phases:"), and when it runs. The role includes them in one
  loop (filter ``linerate.fabric.verify_phases``, tasks/phase.yml) and knows no phase.

Adding a check: its module (findings from facts or measurements, and a ``report(ctx)``), one line in
``CHECKS`` and, when it runs something on the nodes, its task file and one line in ``PHASES``
(docs/verification.md "Adding a check"). tests/unit/checks/test_registry.py holds the tables to the
role's argument spec and defaults.

``ctx`` (``Inputs``) is what the action read: the nodes still in the play, each node's results
(``data``), the fabric, the cabling, the task's arguments (``args``, templated on use with
``ctx.template``), the host variables of the switches, and the findings of the checks before.
"""

from collections import namedtuple

from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.checks import accounting, audit, cabling, gpudirect, nccl_scale, thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.checks import bench as benchcheck
from ansible_collections.linerate.fabric.plugins.module_utils.checks import ib as checks_ib
from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast as incastcheck
from ansible_collections.linerate.fabric.plugins.module_utils.checks import links as linkcheck
from ansible_collections.linerate.fabric.plugins.module_utils.checks import nccl as checks_nccl
from ansible_collections.linerate.fabric.plugins.module_utils.checks import ports as checks_ports
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma as checks_rdma
from ansible_collections.linerate.fabric.plugins.module_utils.checks.errors import CheckError
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.host import readiness
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import parse_nccl_conf


class Unreadable(CheckError):
    """A check's inputs could not be read: the report fails with this message."""


class Inputs:
    """What a check's ``report`` reads (built by the verify_report action; tests build their own).

    ``template``: renders a task argument or host variable (the action's templar); ``template_error``:
    what it raises on a bad template. ``findings``: every finding of the checks before this one;
    ``hints``: (node, device) of the findings up to the port check's (where ib_write_bw looks first).
    """

    def __init__(self, nodes, data, fabric, args=None, hostvars=None, template=None, template_error=(), nccl_runs=()):
        self.nodes = list(nodes)
        self.data = data
        self.fabric = fabric
        self.args = args or {}
        self.hostvars = hostvars or {}
        self.template = template or (lambda value: value)
        self.template_error = template_error
        self.nccl_runs = list(nccl_runs or [])
        self.hosts = {n: data[n].get("rdma_ports") or [] for n in self.nodes}
        self.cabling = cabling.cabling_index(self.hosts)
        self.findings = []
        self.hints = []

    def switches(self):
        return [s for s in self.template(self.args.get("switches") or []) if s in self.hostvars]

    def switch_reads(self, name):
        """{switch: what the switch plays of playbooks/verify.yml registered as ``name``}."""
        return {s: self.template(self.hostvars[s][name]) for s in self.switches() if name in self.hostvars[s]}

    def uplinks(self):
        return {s: self.template(self.hostvars[s].get("switch_uplinks") or []) for s in self.switches()}

    def logs(self, key, tool=None):
        """{node: the node's ``key`` result (its ``tool`` entry, when given) or []}."""
        if tool is None:
            return {n: self.data[n].get(key) or [] for n in self.nodes}
        return {n: (self.data[n].get(key) or {}).get(tool) or [] for n in self.nodes}


def build(nodes, data, fabric, **kw):
    """(findings, checks) of every check of ``CHECKS`` on these inputs, in order (``Inputs``' arguments)."""
    return run(Inputs(nodes, data, fabric, **kw))


def run(ctx, checks=None):
    """(findings, checks): each check's report in turn; raises ``Unreadable``."""
    out = {}
    for check in CHECKS if checks is None else checks:
        found, entries = check.report(ctx)
        ctx.findings += found
        out.update(entries)
    return ctx.findings, out


# ---------------------------------------------------------------- each check's report


def _list(key, value):
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{key} must be a list of inventory host names (ansible_play_hosts_all), got {type(value).__name__} {str(value)[:80]!r}")
    return value


def accounted(ctx):
    """checks ``nodes`` and ``switches``: NODE_NOT_VERIFIED for each node in ``scope``
    (ansible_play_hosts_all) that is not in ``nodes`` (the hosts still in the play), with the
    reason the verification's rescue recorded (``verify_fabric_not_verified``) or the controller's
    probe (``probes``: the registered loop of report.yml's ping); SWITCH_UNREACHABLE for each switch in
    ``switch_scope`` that left the switch plays (``switches_left``) or whose reads failed."""
    errors = ctx.template_error if isinstance(ctx.template_error, tuple) else (ctx.template_error,)
    errors += (TypeError, ValueError, AttributeError)
    try:
        out = _accounting(ctx)
    except errors as e:
        raise Unreadable(f"the scope could not be read: {e}") from e
    findings, checks = [], {}
    for name, (found, c) in out.items():
        if c:
            findings += found
            checks[name] = c
    return findings, checks


def _accounting(ctx):
    args, hostvars, out = ctx.args, ctx.hostvars, {}
    scope = args.get("scope")
    if scope is not None:
        scope = [str(n) for n in _list("scope", ctx.template(scope))]
        missing = [n for n in scope if n not in ctx.nodes]
        records = {n: ctx.template(hostvars[n]["verify_fabric_not_verified"]) for n in missing if n in hostvars and "verify_fabric_not_verified" in hostvars[n]}
        probes = {}
        for r in (ctx.template(args.get("probes") or {}) or {}).get("results") or []:
            if isinstance(r, dict) and r.get("item") is not None:
                probes[str(r["item"])] = r
        out["nodes"] = accounting.node_findings(scope, ctx.nodes, records, probes)
    sw_scope = args.get("switch_scope")
    if sw_scope is not None:
        sw_scope = [str(s) for s in _list("switch_scope", ctx.template(sw_scope))]
        present = [s for s in sw_scope if s in hostvars]
        lldp = {s: ctx.template(hostvars[s]["switch_fabric_lldp"]) for s in present if "switch_fabric_lldp" in hostvars[s]}
        counters = {s: ctx.template(hostvars[s]["switch_fabric_counters"]) for s in present if "switch_fabric_counters" in hostvars[s]}
        left = [str(s) for s in _list("switches_left", ctx.template(args.get("switches_left") or []))]
        out["switches"] = accounting.switch_findings(sw_scope, lldp, counters, left)
    return out


def ports(ctx):
    """check ``ports``: the findings rdma_port_check computed on each node, taken as they are."""
    try:
        found, check = checks_ports.port_check({n: ctx.data[n].get("verify_fabric_port_result") for n in ctx.nodes}, ctx.hosts)
    except KeyError as e:
        raise Unreadable(f"the results could not be read: {e}") from e
    ctx.hints = [(x["node"], x["device"]) for x in ctx.findings + found if x.get("device")]
    return found, ({"ports": check} if check else {})


def readiness_check(nodes, data, limits):
    """Findings and the report check of the host readiness facts (role task readiness.yml)."""
    ready = {n: data[n]["verify_fabric_readiness"]["facts"] for n in nodes if (data[n].get("verify_fabric_readiness") or {}).get("facts")}
    if not ready:
        return [], None
    f = [x for n, fx in ready.items() for x in readiness.host_findings(n, fx, **limits)]
    f += readiness.parity_findings(ready)
    bad = {x["node"] for x in f if x["severity"] == "error"}
    cases = [
        {
            "name": f"{n} readiness",
            "ok": n not in bad,
            "code": next((x["code"] for x in f if x["node"] == n and x["severity"] == "error"), None),
            "message": "; ".join(x["message"] for x in f if x["node"] == n) or None,
            "findings": [x for x in f if x["node"] == n],
        }
        for n in ready
    ]
    return f, {
        "passed": not bad,
        "rails": readiness.rail_summary(ready),
        "versions": {n: fx.get("versions") for n, fx in ready.items()},
        # how each GPU's PCIe link was judged (at rest: width only; under load: speed too) and why
        "gpu_links": {n: readiness.gpu_link_notes(fx) for n, fx in ready.items()},
        "detail": f"{len(ready) - len(bad)}/{len(ready)} nodes ready (PCIe, ACS, affinity, parity); {len(f)} finding(s)",
        "cases": cases,
    }


def ready(ctx):
    """check ``readiness``: the host below the fabric, per node, then parity across nodes."""
    limits = {k: int(v) for k, v in (ctx.template(ctx.args.get("readiness") or {})).items()}
    f, check = readiness_check(ctx.nodes, ctx.data, limits)
    return (f, {"readiness": check}) if check else ([], {})


def cabled(ctx):
    """check ``cabling``: RoCE cabling by LLDP (switch tables + lldpd on the nodes)."""
    if not any(ctx.data[n].get("verify_fabric_cabling") for n in ctx.nodes):
        return [], {}
    host_reads = {n: ctx.data[n].get("verify_fabric_cabling") or {} for n in ctx.nodes}
    # the role reads with failed_when: false (which clears ``failed``): a read without a neighbour table failed
    reads = {s: ({"unreadable": True, "msg": why} if (why := accounting.lldp_failure(r)) else r) for s, r in ctx.switch_reads("switch_fabric_lldp").items()}
    f, cases = cabling.check_cabling(ctx.hosts, ctx.uplinks(), reads, host_reads)
    observed = cabling.observed_map(ctx.hosts, ctx.uplinks(), reads, host_reads)
    return f, {cabling.CHECK: cabling.summary(f, cases, observed)}


def nccl_conf_check(nodes, data, fabric, cabling_index, sl=None):
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
        f = checks_nccl.nccl_conf_findings(n, conf, expected.get("settings") or {}, expected.get("gids") or {}, fabric, sl)
        f += checks_nccl.tuned_file_findings(n, data[n].get("verify_fabric_nccl_tuned"))
        for x in f:
            if x.get("device"):
                where = cabling._where(cabling_index, n, x["device"])
                x["switch"] = where["switch"]
                x["switch_port"] = None if where["switch_port"] is None else str(where["switch_port"])
        findings += f
        cases.append(
            {"name": f"{n} nccl.conf", "ok": not f, "code": f[0]["code"] if f else None, "message": "; ".join(x["message"] for x in f) or None, "findings": f}
        )
    return findings, cases


def nccl_conf(ctx):
    """check ``nccl_conf``: NCCL's configuration read back from each node."""
    sl = ctx.template(ctx.args.get("sl"))
    f, cases = nccl_conf_check(ctx.nodes, ctx.data, ctx.fabric, ctx.cabling, None if sl in (None, "") else int(sl))
    if not cases:
        return [], {}
    return f, {
        "nccl_conf": {
            "passed": not f,
            "cases": cases,
            "detail": f"{sum(c['ok'] for c in cases)}/{len(cases)} nodes' NCCL_IB_TC / NCCL_IB_GID_INDEX / NCCL_IB_HCA agree with the intent and facts",
        }
    }


def ib_write_bw(ctx):
    """check ``ib_write_bw``: every pair's rounds."""
    logs = ctx.logs("verify_fabric_rdma_log")
    tests = checks_rdma.round_tests(logs)
    if not tests:
        return [], {}
    f, evaluated = checks_rdma.rdma_findings(tests, ctx.fabric, ctx.cabling, ctx.hints, ctx.uplinks())
    check = checks_rdma.rdma_check(evaluated, thresholds.rdma_threshold_gbps(ctx.fabric), f)
    check["schedule"] = checks_rdma.schedule_timing(logs)
    return f, {"ib_write_bw": check}


def bench(tool):
    """check ``tool`` (ib_send_bw / ib_write_lat / ib_send_lat) on the first rounds' pairs (module benchcheck)."""

    def bench_report(ctx):
        tests = benchcheck.bench_tests(ctx.logs("verify_fabric_bench_log", tool))
        if not tests:
            return [], {}
        limit = benchcheck.threshold(tool, ctx.fabric)
        evaluated = benchcheck.evaluate(tool, tests, limit)
        f = benchcheck.findings(tool, evaluated, ctx.fabric, ctx.cabling, limit, [(x["code"], x.get("node"), x.get("device")) for x in ctx.findings])
        return f, {tool: benchcheck.check(tool, evaluated, limit, f)}

    bench_report.__name__ = f"bench_{tool}"
    return bench_report


def gpudirect_check(ctx):
    """check ``gpudirect``: ib_write_bw from GPU memory on the first rounds' pairs, gdrcopy's sanity test.
    Nodes without a GPU are cases marked not applicable."""
    nodes, data = ctx.nodes, ctx.data
    logs = ctx.logs("verify_fabric_bench_log", gpudirect.CHECK)
    gdr = {n: data[n]["verify_fabric_gdrcopy"] for n in nodes if data[n].get("verify_fabric_gdrcopy")}
    facts = {n: (data[n].get("verify_fabric_readiness") or {}).get("facts") for n in nodes}
    none = gpudirect.gpu_nodes(facts)[1]
    tests = gpudirect.tests(logs)
    if not tests and not gdr:
        return [], {}
    limit = thresholds.rdma_threshold_gbps(ctx.fabric)
    evaluated = gpudirect.evaluate(tests, limit)
    host = {tuple(t["client"]): t["gbps"] for t in checks_rdma.round_tests(ctx.logs("verify_fabric_rdma_log")) if t.get("gbps") is not None}
    found = gpudirect.findings(evaluated, limit, facts, host)
    check = gpudirect.check(evaluated, limit, found, {n: "no GPU on the node (nvidia-smi lists none)" for n in none})
    gfound, gcases = gpudirect.gdrcopy_findings(gdr)
    check["cases"] += gcases
    check["passed"] = check["passed"] and not gfound
    return found + gfound, {gpudirect.CHECK: check}


def incast(ctx):
    """check ``incast``: lossless proof by counters, every node a receiver once (the rotation)."""
    log = {n: ctx.data[n]["verify_fabric_incast_log"] for n in ctx.nodes if ctx.data[n].get("verify_fabric_incast_log")}
    if not log:
        return [], {}
    f, rails, coverage = incastcheck.incast_rotation(log, ctx.fabric, ctx.cabling, ctx.nodes, ctx.uplinks())
    sw, unproven = incastcheck.switch_findings(ctx.switch_reads("switch_fabric_counters"), ctx.fabric, ctx.hosts, ctx.uplinks(), rails, faults.finding, f)
    f += sw
    return f, {"incast": incastcheck.incast_check(f, rails, coverage, unproven)}


def link_health(ctx):
    """check ``link_health``: error counters and flaps over the window, BER."""
    snaps = {n: ctx.data[n]["verify_fabric_link_health"] for n in ctx.nodes if ctx.data[n].get("verify_fabric_link_health")}
    if not snaps:
        return [], {}
    f, rows = linkcheck.link_health_findings(snaps, ctx.fabric, ctx.cabling, faults.finding, cabling._where)
    reads = ctx.switch_reads("switch_fabric_counters")
    sw, unproven, shown = linkcheck.switch_link_findings(reads, ctx.fabric, ctx.hosts, ctx.uplinks(), faults.finding, f)
    f += sw
    for row in rows:
        row.update(shown.get((row["node"], row["device"])) or {"switch_errors": None, "switch_flaps": None})
        if row.get("switch") in reads:
            # the state of the switch end's read, so the report names a failed read as failed, not as a blank
            row["switch_read"] = linkcheck._switch_unreadable(reads[row["switch"]]) or "read"
    return f, {"link_health": dict(linkcheck.check(f, rows), switch_unproven=unproven)}


def nccl(ctx):
    """checks ``nccl:<test>``: each nccl-tests run (the task's ``nccl`` argument)."""
    findings, checks = [], {}
    for run_ in ctx.nccl_runs:
        if run_.get("skipped_run") or run_.get("skipped"):
            continue
        f = checks_nccl.nccl_findings(run_, ctx.fabric, ctx.hosts, bool(ctx.args.get("expect_gdr", True)))
        findings += f
        nics = min((len(p) for p in ctx.hosts.values()), default=0)
        threshold = thresholds.nccl_threshold_gbytes(ctx.fabric, nics)
        name = f"nccl:{run_.get('test', 'all_reduce_perf')}"
        busbw = run_.get("busbw")
        logs = run_.get("logs") or {}
        checks[name] = {
            "passed": not f,
            "busbw_gbytes": busbw,
            "threshold_gbytes": threshold,
            "transports": {h: (lg or {}).get("transport") for h, lg in logs.items()},
            "gdr": {h: (lg or {}).get("gdr") for h, lg in logs.items()},
            "detail": (f"busbw {busbw:.2f} GB/s" if busbw is not None else "no result")
            + f" (threshold {threshold:g} GB/s)"
            + (f"; {run_['error'][:160]}" if run_.get("error") else ""),
            "cases": [{"name": name, "ok": not f, "code": f[0]["code"] if f else None, "message": "; ".join(x["message"] for x in f) or None, "findings": f}],
        }
    return findings, checks


def infiniband(ctx):
    """checks ``subnet_manager`` / ``ib_topology`` / ``ib_partitions`` / ...: the subnet check (``ib_fabric``)."""
    ib = ctx.template(ctx.args.get("ib_fabric") or {})
    if not ib:
        return [], {}
    f = checks_ib.ib_findings(ib, set(ctx.template(ctx.args.get("ib_switches") or [])))
    return f, checks_ib.ib_checks(ib, f)


def drift(ctx):
    """check ``drift``: the audit's check-mode results of every role (``drift``)."""
    if ctx.args.get("drift") is None:
        return [], {}
    d = ctx.template(ctx.args["drift"])
    if d is None:
        return [], {}
    try:
        f = audit.drift_findings((d or {}).get("hosts") or {}, (d or {}).get("switches") or {})
    except (ValueError, TypeError, AttributeError) as e:
        raise Unreadable(f"the audit's drift results could not be read: {e}") from e
    return f, {"drift": audit.drift_check(f, sorted(((d or {}).get("hosts") or {}), key=str), sorted(((d or {}).get("switches") or {}), key=str))}


# ---------------------------------------------------------------- the tables

# name: the report's check (and verify_fabric_checks' where selectable); report(ctx) -> (findings, checks);
# reads: the node results (host variables its phase leaves) it reads from ctx.data;
# selectable: in verify_fabric_checks' choices; default: in its default; benchmark: loads the fabric.
Check = namedtuple("Check", "name report reads selectable default benchmark", defaults=((), True, True, False))

_BENCH = ("verify_fabric_bench_log",)
CHECKS = (
    Check("accounting", accounted, selectable=False),  # nodes, switches: every one in scope accounted for
    Check("ports", ports, ("verify_fabric_port_result",)),
    Check("readiness", ready, ("verify_fabric_readiness",)),
    Check("cabling", cabled, ("verify_fabric_cabling",)),
    Check(
        "nccl_conf", nccl_conf, ("verify_fabric_nccl_expected", "verify_fabric_nccl_conf", "verify_fabric_nccl_tuned"), selectable=False
    ),  # read back by the ports phase
    Check("ib_write_bw", ib_write_bw, ("verify_fabric_rdma_log",), benchmark=True),
    Check("ib_send_bw", bench("ib_send_bw"), _BENCH, benchmark=True),
    Check("ib_write_lat", bench("ib_write_lat"), _BENCH, benchmark=True),
    Check("ib_send_lat", bench("ib_send_lat"), _BENCH, selectable=False),  # reported where a run recorded it
    Check("gpudirect", gpudirect_check, _BENCH + ("verify_fabric_gdrcopy", "verify_fabric_readiness", "verify_fabric_rdma_log"), default=False, benchmark=True),
    Check("incast", incast, ("verify_fabric_incast_log",), benchmark=True),
    Check("link_health", link_health, ("verify_fabric_link_health",)),
    Check("nccl", nccl, benchmark=True),  # the task's nccl argument (verify_fabric_nccl)
    Check("nccl_loopback", nccl_scale.loopback_report, ("verify_fabric_nccl_loopback",), default=False, benchmark=True),
    Check("nccl_scaling", nccl_scale.series_report, ("verify_fabric_nccl_series",), default=False, benchmark=True),
    Check("infiniband", infiniband, selectable=False),  # subnet_manager, ib_topology, ib_partitions, ...
    Check("drift", drift, selectable=False),  # the audit
)


def node_results(checks=None):
    """The host variables the action reads from each node: rdma_ports and every check's ``reads``."""
    out = ["rdma_ports"]
    for check in CHECKS if checks is None else checks:
        out += [k for k in check.reads if k not in out]
    return tuple(out)


# tasks: roles/verify_fabric/tasks/<tasks>; title: the include's task name; checks: it runs when one of
# them is active; mark: the phase its start times (while that check is active); min_hosts: fewest nodes
# still in the play; transport: only on this transport; flag: a role variable that must be true;
# window: verify_fabric_link_health_phase for the included tasks.
Phase = namedtuple("Phase", "tasks title checks mark min_hosts transport flag window", defaults=(None, 1, None, None, ""))

PHASES = (
    Phase("ports.yml", "Check the RDMA ports", ("ports",), mark="ports"),
    Phase("link_health.yml", "Snapshot the link health counters at the start of the window", ("link_health",), window="start"),
    Phase("readiness.yml", "Check the host below the fabric (PCIe, ACS, IOMMU, GPU-NIC affinity, version parity)", ("readiness",), mark="readiness"),
    Phase("gpudirect.yml", "Decide where GPUDirect applies and run gdrcopy's sanity test", ("gpudirect",)),
    Phase(
        "launchers.yml",
        "Render the training launchers (rank per GPU) and environment files from the same facts",
        ("readiness",),
        flag="verify_fabric_launchers",
    ),
    Phase("cabling.yml", "Read the host side of the RoCE cabling (LLDP)", ("cabling",), mark="cabling", transport="roce"),
    # ib_send_bw and ib_write_lat run on the first rounds of the same plan (tasks/rdma_bench.yml)
    Phase(
        "rdma.yml",
        "Measure RDMA write bandwidth between every pair of nodes (and send bandwidth, write latency)",
        ("ib_write_bw", "ib_send_bw", "ib_write_lat", "gpudirect"),
        mark="ib_write_bw",
        min_hosts=2,
    ),
    Phase("incast.yml", "Prove the no-drop class under incast (every node a receiver of k senders once, every rail)", ("incast",), mark="incast", min_hosts=3),
    Phase(
        "nccl_loopback.yml", "Run the NET loopback on every node at once (nccl-tests on one node, P2P and SHM off)", ("nccl_loopback",), mark="nccl_loopback"
    ),
    Phase("nccl.yml", "Run nccl-tests across the nodes", ("nccl",), mark="nccl"),
    Phase(
        "nccl_scaling.yml",
        "Run the scaling series over 2, 4, 8 and more nodes, and within each leaf group",
        ("nccl_scaling",),
        mark="nccl_scaling",
        min_hosts=2,
    ),
    Phase("link_health.yml", "Snapshot the link health counters at the end of the window", ("link_health",), window="end"),
)


def selectable():
    """verify_fabric_checks' choices, in the report's order."""
    return [c.name for c in CHECKS if c.selectable]


def phases(active):
    """The phases that run for the ``active`` checks, in order, as dicts for the role (its ``mark``:
    null when the check it times is not active)."""
    active = set(active or [])
    return [dict(p._asdict(), checks=list(p.checks), mark=p.mark if p.mark in active else None) for p in PHASES if active & set(p.checks)]
