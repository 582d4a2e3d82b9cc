"""The schema of the fabric intent: every key of the ``fabric`` tree checked
against what it allows, then (``validate``) the cabling and, on InfiniBand, the
subnet manager, every problem at once, each naming the key, the value and what
is allowed.

Runs on the controller before any host or switch is touched (the validate
action plugin). Never raises on any shape of input.
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES, NEVER_DRAIN
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband
from ansible_collections.linerate.fabric.plugins.module_utils.intent.cabling import validate_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import (
    DEFAULTS,
    FIRMWARE_PROFILES,
    GID_TYPES,
    LINK_SPEEDS_GBPS,
    LINK_WIDTHS,
    NCCL_GDR_LEVELS,
    SCHEDULERS,
    SEVERITIES,
    TRANSPORTS,
    TRUST_MODES,
    effective,
)
from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_env import debugging_allowed
from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_tuned import DEBUGGING_VARIABLES
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import (
    FORMATS,
    Problems,
    as_mapping,
    check_format,
    int_in,
    is_int,
    is_num,
    one_of,
    same_kind,
    unknown_keys,
)
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import IB_ERROR_COUNTERS

# Keys that belong to one transport only.
TRANSPORT_ONLY = {"roce": "roce", "infiniband": "infiniband"}
INFINIBAND_KEYS = {"subnet_manager"}


def validate_fabric(fabric):
    """Check the ``fabric`` tree on its own. Returns a list of messages."""
    p = Problems()
    if fabric is None:
        p.note("fabric: the variable is not defined (set it in group_vars/all; see inventory/example-roce)")
        return p.items
    if not isinstance(fabric, dict):
        p.add("fabric", fabric, "allowed: a mapping")
        return p.items
    unknown_keys(p, "fabric", fabric, DEFAULTS)
    transport = fabric.get("transport", DEFAULTS["transport"])
    if not one_of(p, "fabric.transport", transport, TRANSPORTS):
        return p.items
    # Keys of the other transport are a sign of a copied or mixed-up inventory.
    for block, owner in TRANSPORT_ONLY.items():
        if owner != transport and block in fabric:
            p.add(f"fabric.{block}", "...", f"only with fabric.transport: {owner}; this fabric is {transport}, remove the {block} block")
    # Every block is a mapping; one that is not is reported and left at its
    # defaults so the rest is still checked (every problem at once).
    clean = {k: v for k, v in fabric.items() if k in DEFAULTS}
    for block in ("mtu", "roce", "infiniband", "nccl", "verify", "firmware", "rollout", "remediation"):
        if block in clean and as_mapping(p, f"fabric.{block}", clean[block]) is None:
            del clean[block]
    for block, inner in (("roce", "ecn"), ("nccl", "overrides")):
        if inner in clean.get(block, {}):
            if as_mapping(p, f"fabric.{block}.{inner}", clean[block][inner]) is None:
                clean[block] = {k: v for k, v in clean[block].items() if k != inner}
    f = effective(clean)

    check_format(p, "fabric.name", f["name"], "name")
    one_of(p, "fabric.link_speed_gbps", f["link_speed_gbps"], LINK_SPEEDS_GBPS)
    one_of(p, "fabric.link_width", f["link_width"], LINK_WIDTHS)

    mtu = f["mtu"]
    unknown_keys(p, "fabric.mtu", clean.get("mtu", {}), DEFAULTS["mtu"])
    host_ok = int_in(p, "fabric.mtu.host", mtu.get("host"), 1280, 9216)
    sw_ok = int_in(p, "fabric.mtu.switch", mtu.get("switch"), 1280, 9216)
    if host_ok and sw_ok and mtu["host"] > mtu["switch"]:
        p.add(
            "fabric.mtu.host", mtu["host"], f"allowed: at most fabric.mtu.switch ({mtu['switch']}); a host MTU above the switch MTU drops every full-size frame"
        )

    if transport == "roce":
        _validate_roce(p, clean.get("roce", {}), f["roce"])
    else:
        unknown_keys(p, "fabric.infiniband", clean.get("infiniband", {}), INFINIBAND_KEYS)
    _validate_nccl(p, clean.get("nccl", {}), f["nccl"])
    _validate_verify(p, clean.get("verify", {}), f["verify"], f["link_speed_gbps"])
    unknown_keys(p, "fabric.firmware", clean.get("firmware", {}), DEFAULTS["firmware"])
    one_of(p, "fabric.firmware.profile", f["firmware"].get("profile"), FIRMWARE_PROFILES)
    _validate_rollout(p, clean.get("rollout", {}), f["rollout"])
    _validate_remediation(p, clean.get("remediation", {}), f["remediation"])
    return p.items


def _validate_remediation(p, given, r):
    unknown_keys(p, "fabric.remediation", given, DEFAULTS["remediation"])
    for key in ("drain", "return_to_service"):
        if not isinstance(r.get(key), bool):
            p.add(f"fabric.remediation.{key}", r.get(key), "allowed: true | false")
    sched_ok = one_of(p, "fabric.remediation.scheduler", r.get("scheduler"), SCHEDULERS)
    if sched_ok and r.get("drain") is True and r["scheduler"] == "none":
        p.add(
            "fabric.remediation.scheduler",
            "none",
            "allowed: slurm | kubernetes when fabric.remediation.drain is true (a drain needs a scheduler to take the node out of)",
        )
    for key in ("drain_codes", "exempt_codes"):
        codes = r.get(key)
        if not isinstance(codes, list):
            p.add(f"fabric.remediation.{key}", codes, "allowed: a list of linerate fault codes")
            continue
        for i, code in enumerate(codes):
            if code not in FAULT_CODES:
                p.add(
                    f"fabric.remediation.{key}[{i}]",
                    code,
                    "allowed: a linerate fault code such as LINK_FLAP, PORT_DOWN, PCIE_DEGRADED (docs/verification.md#fault-codes)",
                )
            elif key == "drain_codes" and code in NEVER_DRAIN:
                p.add(
                    f"fabric.remediation.{key}[{i}]",
                    code,
                    f"allowed: a code of a node's own fault; {code} never drains (what the run could not see, or a shared element's finding)",
                )
    sev = r.get("drain_severities")
    if not isinstance(sev, list) or any(not any(same_kind(x, c) and x == c for c in SEVERITIES) for x in sev):
        p.add("fabric.remediation.drain_severities", sev, "allowed: a list of error | warning")
    for block, limits in (
        ("attribution", {"min_nodes": (2, 100000), "min_share_percent": (1, 100)}),
        (
            "budget",
            {
                "max_nodes_per_run": (1, 100000),
                "max_percent_per_run": (1, 100),
                "window_hours": (1, 720),
                "max_nodes_per_window": (1, 100000),
                "max_percent_per_window": (1, 100),
            },
        ),
    ):
        key = f"fabric.remediation.{block}"
        if block in given and as_mapping(p, key, given[block]) is None:
            continue
        unknown_keys(p, key, given.get(block) or {}, DEFAULTS["remediation"][block])
        for name, (lo, hi) in limits.items():
            int_in(p, f"{key}.{name}", (r.get(block) or {}).get(name), lo, hi)
    b = r.get("budget") or {}
    if is_int(b.get("max_nodes_per_run")) and is_int(b.get("max_nodes_per_window")) and b["max_nodes_per_run"] > b["max_nodes_per_window"]:
        p.add(
            "fabric.remediation.budget.max_nodes_per_run",
            b["max_nodes_per_run"],
            f"allowed: at most fabric.remediation.budget.max_nodes_per_window ({b['max_nodes_per_window']}); one run cannot drain more than its window allows",
        )


# fabric.rollout.batch as Ansible's `serial` takes it: a count of hosts, or a
# percentage of the play's hosts written "N%".
ROLLOUT_PERCENT = re.compile(r"([1-9][0-9]?|100)%", re.ASCII)


def _count_or_percent(value):
    return (is_int(value) and 1 <= value <= 100000) or (isinstance(value, str) and ROLLOUT_PERCENT.fullmatch(value))


ROLLOUT_SPREAD = ("leaf", "rack", "nvlink_domain")


def _validate_rollout(p, given, r):
    unknown_keys(p, "fabric.rollout", given, DEFAULTS["rollout"])
    given = given if isinstance(given, dict) else {}
    batch = r.get("batch")
    # batch: the old name of max_unavailable (the host stack's serial before the waves); still taken
    if batch is not None and not _count_or_percent(batch):
        p.add(
            "fabric.rollout.batch",
            batch,
            "allowed: a number of nodes >= 1 or a percentage '1%'..'100%' of gpu_nodes (the host stack's serial: nodes changed at a time)",
        )
    elif batch is not None and "max_unavailable" in given:
        p.add(
            "fabric.rollout.batch",
            batch,
            "allowed: only one of batch and max_unavailable (batch is the old name of max_unavailable: the most nodes disrupted at once)",
        )
    limit_ok = _count_or_percent(r.get("max_unavailable"))
    if not limit_ok:
        p.add(
            "fabric.rollout.max_unavailable",
            r.get("max_unavailable"),
            "allowed: a number of nodes 1..100000 or a percentage '1%'..'100%' of the nodes rolled "
            "(the most nodes disrupted at once; a percentage is rounded down, at least 1)",
        )
    canary_ok = int_in(p, "fabric.rollout.canary", r.get("canary"), 1, 100000)
    if canary_ok and limit_ok and is_int(r["max_unavailable"]) and r["canary"] > r["max_unavailable"]:
        p.add(
            "fabric.rollout.canary",
            r["canary"],
            f"allowed: at most fabric.rollout.max_unavailable ({r['max_unavailable']}); the canary wave is the first, smallest wave",
        )
    int_in(p, "fabric.rollout.max_fail_percentage", r.get("max_fail_percentage"), 0, 100)
    if not isinstance(r.get("slow_start"), bool):
        p.add(
            "fabric.rollout.slow_start",
            r.get("slow_start"),
            "allowed: true (after the canary, waves double up to max_unavailable) or false (the wave after the canary is max_unavailable nodes)",
        )
    spread = r.get("spread")
    if not (isinstance(spread, list) and all(isinstance(s, str) and s in ROLLOUT_SPREAD for s in spread) and len(set(spread)) == len(spread)):
        p.add(
            "fabric.rollout.spread",
            spread,
            "allowed: a list of leaf, rack, nvlink_domain, each at most once (never two nodes of one such "
            "group disrupted in the same wave); [] spreads on nothing",
        )


def _validate_roce(p, given, r):
    unknown_keys(p, "fabric.roce", given, DEFAULTS["roce"])
    one_of(p, "fabric.roce.trust", r["trust"], TRUST_MODES)
    one_of(p, "fabric.roce.gid_type", r["gid_type"], GID_TYPES)
    prio_ok = int_in(p, "fabric.roce.no_drop_priority", r["no_drop_priority"], 0, 7)
    cnp_ok = int_in(p, "fabric.roce.cnp_priority", r["cnp_priority"], 0, 7)
    dscp_ok = int_in(p, "fabric.roce.data_dscp", r["data_dscp"], 0, 63)
    cnp_dscp_ok = int_in(p, "fabric.roce.cnp_dscp", r["cnp_dscp"], 0, 63)
    if prio_ok and cnp_ok and r["cnp_priority"] == r["no_drop_priority"]:
        p.add(
            "fabric.roce.cnp_priority",
            r["cnp_priority"],
            f"allowed: any priority 0..7 except fabric.roce.no_drop_priority ({r['no_drop_priority']}); CNPs must not queue behind the data they throttle",
        )
    if dscp_ok and cnp_dscp_ok and r["cnp_dscp"] == r["data_dscp"]:
        p.add("fabric.roce.cnp_dscp", r["cnp_dscp"], f"allowed: any DSCP 0..63 except fabric.roce.data_dscp ({r['data_dscp']})")
    ecn = r["ecn"]
    unknown_keys(p, "fabric.roce.ecn", given.get("ecn", {}), DEFAULTS["roce"]["ecn"])
    if not isinstance(ecn.get("enabled"), bool):
        p.add("fabric.roce.ecn.enabled", ecn.get("enabled"), "allowed: true | false")
    lo_ok = int_in(p, "fabric.roce.ecn.min_threshold_kb", ecn.get("min_threshold_kb"), 1, 100000)
    hi_ok = int_in(p, "fabric.roce.ecn.max_threshold_kb", ecn.get("max_threshold_kb"), 1, 100000)
    if lo_ok and hi_ok and ecn["min_threshold_kb"] >= ecn["max_threshold_kb"]:
        p.add("fabric.roce.ecn.min_threshold_kb", ecn["min_threshold_kb"], f"allowed: below fabric.roce.ecn.max_threshold_kb ({ecn['max_threshold_kb']})")
    int_in(p, "fabric.roce.ecn.probability_percent", ecn.get("probability_percent"), 1, 100)


def _validate_nccl(p, given, n):
    unknown_keys(p, "fabric.nccl", given, DEFAULTS["nccl"])
    check_format(p, "fabric.nccl.socket_ifname", n.get("socket_ifname"), "ifname_list")
    one_of(p, "fabric.nccl.gdr_level", n.get("gdr_level"), NCCL_GDR_LEVELS)
    for key, value in n["overrides"].items():
        name = f"fabric.nccl.overrides.{key}"
        if not isinstance(key, str) or not re.fullmatch(r"NCCL_[A-Z0-9_]{1,60}", key, re.ASCII):
            p.add(f"fabric.nccl.overrides.{str(key)[:64]}", value, "allowed: keys named NCCL_*")
        elif key in DEBUGGING_VARIABLES:
            p.add(name, value, "allowed: " + debugging_allowed(key))
        elif isinstance(value, str):
            check_format(p, name, value, "nccl_value")
        elif not is_num(value):
            p.add(name, value, "allowed: " + FORMATS["nccl_value"][1])


def _validate_verify(p, given, v, speed):
    unknown_keys(p, "fabric.verify", given, DEFAULTS["verify"])
    lat = v.get("latency_us_max")
    if lat is not None and (not is_num(lat) or not 0 < lat <= 1000):
        p.add(
            "fabric.verify.latency_us_max",
            lat,
            "allowed: a number of microseconds, 0 < x <= 1000 (ib_write_lat's average one-way latency a pair "
            "may show), or null for the transport's default (RoCE 5.0, InfiniBand 3.0)",
        )
    for key in ("ib_write_bw_fraction", "nccl_busbw_fraction"):
        value = v.get(key)
        if not is_num(value) or value <= 0:
            p.add(f"fabric.verify.{key}", value, "allowed: a finite fraction of line rate, 0 < x <= 1")
        elif value > 1 and not is_num(speed):
            # link_speed_gbps is itself wrong (reported on its own): no product to show
            p.add(f"fabric.verify.{key}", value, "allowed: at most 1.0 (a fraction of the line rate)")
        elif value > 1:
            p.add(
                f"fabric.verify.{key}",
                value,
                f"allowed: at most 1.0; {value} x {speed} Gb/s = {value * speed:g} Gb/s is above the line rate of {speed} Gb/s, so the check could never pass",
            )
    for key in ("link_errors_max", "link_flaps_max"):
        if not is_int(v.get(key)) or v[key] < 0:
            p.add(f"fabric.verify.{key}", v.get(key), "allowed: an integer >= 0 (counts over the verification window)")
    if not is_int(v.get("full_plan_max_nodes")) or v["full_plan_max_nodes"] < 2:
        p.add(
            "fabric.verify.full_plan_max_nodes",
            v.get("full_plan_max_nodes"),
            "allowed: an integer >= 2 (nodes up to which ib_write_bw tests every pair; the sampled plan above)",
        )
    for key in ("effective_ber_max", "raw_ber_max"):
        value = v.get(key)
        if not is_num(value) or not 0 <= value < 1:
            p.add(f"fabric.verify.{key}", value, "allowed: a finite bit error rate, 0 <= x < 1, written 1.0e-12 (YAML reads 1e-12 as a string)")
    for key, hi in (("optic_rx_power_margin_db", 20), ("optic_temp_margin_c", 50)):
        value = v.get(key)
        if not is_num(value) or not 0 <= value <= hi:
            p.add(
                f"fabric.verify.{key}",
                value,
                f"allowed: a number 0..{hi} (a margin inside the module's own thresholds, which mlxlink prints beside each value)",
            )
    thresholds = as_mapping(
        p, "fabric.verify.ib_error_thresholds", v.get("ib_error_thresholds"), "a mapping of PortCounters error counter -> the count a port may show"
    )
    for key, value in sorted((thresholds or {}).items(), key=lambda kv: str(kv[0])):
        if key not in IB_ERROR_COUNTERS:
            p.add(f"fabric.verify.ib_error_thresholds.{key}", value, "unknown counter; allowed: " + ", ".join(IB_ERROR_COUNTERS))
        elif not is_int(value) or value < 0:
            p.add(f"fabric.verify.ib_error_thresholds.{key}", value, "allowed: an integer >= 0 (the count of this error a port may show)")


def validate(fabric, hosts=None, switches=None, sm_hosts=()):
    """Everything at once: the tree, the cabling, and on InfiniBand the subnet
    manager (partitions, routing engine, member GUIDs). Returns a list of
    messages; never raises on any shape of input."""
    problems = validate_fabric(fabric)
    hosts = hosts if isinstance(hosts, dict) else {}
    switches = switches if isinstance(switches, dict) else {}
    problems += validate_cabling(fabric if isinstance(fabric, dict) else {}, hosts, switches)
    if isinstance(fabric, dict) and fabric.get("transport") == "infiniband":
        problems += validate_infiniband(fabric, hosts, switches, sm_hosts)
    return problems


def validate_infiniband(fabric, hosts, switches, sm_hosts=()):
    ib = fabric.get("infiniband")
    if not isinstance(ib, dict):
        return []  # reported by validate_fabric
    known = {}
    for h, hv in hosts.items():
        ports = hv.get("rdma_ports") if isinstance(hv, dict) else None
        known[h] = [p["guid"] for p in ports if isinstance(p, dict) and infiniband.is_guid(p.get("guid"))] if isinstance(ports, list) else []
    for s, sv in switches.items():
        if isinstance(sv, dict) and infiniband.is_guid(sv.get("ib_switch_guid")):
            known[s] = [sv["ib_switch_guid"]]
    sm_hosts = [h for h in (sm_hosts if isinstance(sm_hosts, (list, tuple)) else []) if isinstance(h, str)]
    return infiniband.validate_subnet_manager(ib.get("subnet_manager"), known, sm_hosts)
