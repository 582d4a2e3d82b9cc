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

from ansible_collections.linerate.fabric.plugins.module_utils.checks import (
    accounting,
    audit,
    bench,
    cabling,
    gpudirect,
    ib,
    incast,
    links,
    nccl,
    nccl_scale,
    ports,
    rdma,
    readiness,
)
from ansible_collections.linerate.fabric.plugins.module_utils.checks.context import Inputs


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


# ---------------------------------------------------------------- the tables

# name: the report's check (and verify_fabric_checks' where selectable); report(ctx) -> (findings, checks);
# reads: the node results (host variables its phase leaves) it reads from ctx.data;
# selectable: in verify_fabric_checks' choices; default: in its default; benchmark: loads the fabric.
Check = namedtuple("Check", "name report reads selectable default benchmark", defaults=((), True, True, False))

_BENCH = ("verify_fabric_bench_log",)
CHECKS = (
    Check("accounting", accounting.report, selectable=False),  # nodes, switches: every one in scope accounted for
    Check("ports", ports.report, ("verify_fabric_port_result",)),
    Check("readiness", readiness.report, ("verify_fabric_readiness",)),
    Check("cabling", cabling.report, ("verify_fabric_cabling",)),
    Check(
        "nccl_conf", nccl.conf_report, ("verify_fabric_nccl_expected", "verify_fabric_nccl_conf", "verify_fabric_nccl_tuned"), selectable=False
    ),  # read back by the ports phase
    Check("ib_write_bw", rdma.report, ("verify_fabric_rdma_log",), benchmark=True),
    Check("ib_send_bw", bench.report_for("ib_send_bw"), _BENCH, benchmark=True),
    Check("ib_write_lat", bench.report_for("ib_write_lat"), _BENCH, benchmark=True),
    Check("ib_send_lat", bench.report_for("ib_send_lat"), _BENCH, selectable=False),  # reported where a run recorded it
    Check(
        "gpudirect", gpudirect.report, _BENCH + ("verify_fabric_gdrcopy", "verify_fabric_readiness", "verify_fabric_rdma_log"), default=False, benchmark=True
    ),
    Check("incast", incast.report, ("verify_fabric_incast_log",), benchmark=True),
    Check("link_health", links.report, ("verify_fabric_link_health",)),
    Check("nccl", nccl.report, benchmark=True),  # the task's nccl argument (verify_fabric_nccl)
    Check("nccl_loopback", nccl_scale.loopback_report, ("verify_fabric_nccl_loopback",), default=False, benchmark=True),
    Check("nccl_scaling", nccl_scale.series_report, ("verify_fabric_nccl_series",), default=False, benchmark=True),
    Check("infiniband", ib.report, selectable=False),  # subnet_manager, ib_topology, ib_partitions, ...
    Check("drift", audit.report, selectable=False),  # the audit
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
