"""The fabric intent: its defaults, the values it allows, the effective intent and what is derived from it.

The intent (inventory variable ``fabric``) is the only place a fabric value
is written; every role derives its settings from the merged result
(``fabric_effective``: ``published()``, the ``effective()`` intent with
``derive()``'s values beside it). ``schema.validate()`` checks it on the
controller before any host or switch is touched (cabling.py: the hosts'
rdma_ports and the switches).

Stdlib only: used by the validate action plugin, by filters and by tests.
"""

import copy

from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband

TRANSPORTS = ("roce", "infiniband")
# Ethernet rates and InfiniBand 4X rates (SDR 10, DDR 20, QDR 40, FDR 56,
# EDR 100, HDR 200, NDR 400, XDR 800).
LINK_SPEEDS_GBPS = (10, 20, 25, 40, 50, 56, 100, 200, 400, 800)
LINK_WIDTHS = (1, 2, 4, 8)
TRUST_MODES = ("dscp", "pcp")
GID_TYPES = ("v2",)
# fabric.nccl.gdr_level: "auto" writes nothing (NCCL decides GDR from the topology: PXB or closer); a level
# goes to the per-job environment as NCCL_NET_GDR_LEVEL, a Debugging variable (never /etc/nccl.conf)
NCCL_GDR_LEVELS = ("auto", "LOC", "PIX", "PXB", "PHB", "SYS")
# NIC firmware profiles (module_utils/host/fwprofile.py holds their parameters).
FIRMWARE_PROFILES = ("gpudirect", "default", "none")

DEFAULTS = {
    "name": "fabric",
    "transport": "roce",
    "link_speed_gbps": 400,
    "link_width": 4,
    "mtu": {"host": 4200, "switch": 9216},
    "roce": {
        "trust": "dscp",
        "no_drop_priority": 3,
        "data_dscp": 26,
        "cnp_dscp": 48,
        "cnp_priority": 6,
        "gid_type": "v2",
        "ecn": {
            "enabled": True,
            "min_threshold_kb": 150,
            "max_threshold_kb": 1500,
            "probability_percent": 100,
        },
    },
    "infiniband": {},
    "nccl": {
        "socket_ifname": "eth0",
        "gdr_level": "auto",
        "overrides": {},
    },
    "verify": {
        "ib_write_bw_fraction": 0.90,
        "nccl_busbw_fraction": 0.80,
        # link health over the verification window (module_utils/checks/links.py)
        "link_errors_max": 0,
        "link_flaps_max": 0,
        "effective_ber_max": 1e-12,
        "raw_ber_max": 2.4e-4,
        # optics (mlxlink -m): Rx power below the module's own low threshold + this margin (dB) and
        # temperature above its high threshold - this margin (deg C) are findings
        "optic_rx_power_margin_db": 0.0,
        "optic_temp_margin_c": 0.0,
        # InfiniBand: PortCounters error counter -> the count a port may show (ibqueryerrors over
        # the whole subnet, module_utils/checks/ib.py); a counter not named here: 0
        "ib_error_thresholds": {},
        # ib_write_bw plan "auto": every pair up to this many nodes, the sampled plan above
        "full_plan_max_nodes": 16,
        # ib_write_lat: the one-way latency (t_avg, usec) a pair may show; null: LATENCY_US_MAX[transport]
        "latency_us_max": None,
    },
    "firmware": {
        "profile": "default",
    },
    # The host stack rolls through gpu_nodes in waves (playbooks/stages/hosts.yml,
    # module_utils/host/rollout.py): a canary wave, then waves doubling up to
    # max_unavailable nodes (a count or 'N%'), never two nodes of one leaf, rack
    # or NVLink domain in a wave (spread); a wave whose failures exceed
    # max_fail_percentage of it halts the later waves. slow_start false: the
    # wave after the canary is max_unavailable at once. batch: the old name of
    # max_unavailable (None: not given).
    "rollout": {
        "max_unavailable": "10%",
        "canary": 1,
        "max_fail_percentage": 0,
        "spread": ["leaf", "rack", "nvlink_domain"],
        "slow_start": True,
        "batch": None,
    },
    # What verify.yml / audit.yml do with their findings (roles/remediate, docs/audit.md):
    # opt-in; errors drain, warnings do not.
    "remediation": {
        "drain": False,
        "scheduler": "none",
        "drain_codes": [],
        "drain_severities": ["error"],
        "exempt_codes": [],
        "return_to_service": True,
        # attribution before action (checks/attribution.py): a shared element explains the failing ports
        # under it when they are on min_nodes nodes or more and min_share_percent of its ports or more
        "attribution": {"min_nodes": 2, "min_share_percent": 50},
        # the drain budget and its breaker (host/breaker.py): the lower of the count and the share of
        # gpu_nodes, at least 1, per run and per sliding window
        "budget": {"max_nodes_per_run": 10, "max_percent_per_run": 5, "window_hours": 24, "max_nodes_per_window": 20, "max_percent_per_window": 10},
    },
}
SCHEDULERS = ("none", "slurm", "kubernetes")
SEVERITIES = ("error", "warning")


def merge(defaults, given):
    """Deep-merge ``given`` over ``defaults`` (dicts merge, the rest replaces)."""
    out = copy.deepcopy(defaults)
    for key, value in (given or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def effective(fabric, sm_hosts=()):
    """The intent with defaults filled in, keeping only the chosen transport's block.

    On InfiniBand, ``infiniband.subnet_manager`` is merged with the subnet
    manager's defaults (``intent_ib.DEFAULTS``: priorities, routing engine,
    LMC, sweep, log, default partition), so role ib_subnet_manager reads every
    value from here and restates none; its ``master`` defaults to the first
    host of ``sm_hosts`` (group subnet_managers): every play names it from here.
    A block that is not a mapping is left as given (``validate`` reports it).
    """
    fabric = fabric or {}
    transport = fabric.get("transport", DEFAULTS["transport"])
    merged = merge(DEFAULTS, fabric)
    other = "infiniband" if transport == "roce" else "roce"
    if other not in fabric:
        merged.pop(other, None)
    ib = merged.get("infiniband")
    if transport == "infiniband" and isinstance(ib, dict) and isinstance(ib.get("subnet_manager") or {}, dict):
        sm = copy.deepcopy(infiniband.merged(ib.get("subnet_manager")))
        if not sm.get("master") and sm_hosts:
            sm["master"] = list(sm_hosts)[0]
        ib["subnet_manager"] = sm
    return merged


# ib_write_lat's default bound (usec, perftest's t_avg of 2-byte messages) per transport: a healthy
# ConnectX pair through one to three switches is ~1-3 us on RoCE, ~1-1.5 us on InfiniBand; a path
# that retransmits or queues shows several microseconds more (docs/verification.md)
LATENCY_US_MAX = {"roce": 5.0, "infiniband": 3.0}


def pfc_vector(priorities):
    """The PFC enable vector (eight ints, priority 0 first, as ``mlnx_qos --pfc``
    takes it) with the given priorities on and every other one off."""
    on = {int(p) for p in priorities or []}
    return [1 if p in on else 0 for p in range(8)]


def derive(eff):
    """Every value computed from the intent, in one place.

    ``eff``: the output of ``effective()`` (a validated intent). Pure; the
    validate action plugin publishes the result as ``fabric_effective.derived``
    and every role default, template and module reads it from there, so no
    layer computes a value of its own. The keys are the same on both
    transports; the RoCE-only ones are None (lists and maps empty) on
    InfiniBand.

    - ``tos``: the IP ToS byte of RDMA data, ``data_dscp << 2`` (the ECN bits
      are the NIC's): RDMA-CM's default ToS, NCCL_IB_TC, perftest --tclass.
    - ``pfc_priorities``: the one lossless priority (the roce_qos module
      turns it into the eight-entry ``mlnx_qos --pfc`` vector with
      ``pfc_vector()``, its only caller).
    - ``dscp2prio``: {DSCP (str): priority} - data to the no-drop priority,
      CNPs to the CNP priority (dscp trust).
    - ``cc_prio_mask``: the firmware's DCQCN priority mask (ROCE_CC_PRIO_MASK):
      all eight priorities, or without the no-drop priority's bit when ECN is
      off; ``cnp_dscp`` / ``cnp_priority``: the CNPs the NIC sends.
    - ``line_rate_gbps``, ``ib_write_bw_min_gbps`` (Gb/s one port must reach,
      with ib_write_bw and ib_send_bw), ``nccl_busbw_min_gbytes_per_nic`` (GB/s
      of nccl-tests bus bandwidth per NIC of a node) and ``latency_max_usec``
      (ib_write_lat's bound: ``verify.latency_us_max``, else LATENCY_US_MAX of
      the transport).
    """
    speed = eff["link_speed_gbps"]
    v = eff["verify"]
    out = {
        "line_rate_gbps": speed,
        "ib_write_bw_min_gbps": round(float(v["ib_write_bw_fraction"]) * speed, 3),
        "nccl_busbw_min_gbytes_per_nic": round(float(v["nccl_busbw_fraction"]) * speed / 8, 3),
        "latency_max_usec": float(v["latency_us_max"] if v.get("latency_us_max") is not None else LATENCY_US_MAX[eff["transport"]]),
        "tos": None,
        "pfc_priorities": [],
        "dscp2prio": {},
        "cc_prio_mask": None,
        "cnp_dscp": None,
        "cnp_priority": None,
    }
    if eff["transport"] != "roce":
        return out
    r = eff["roce"]
    prio = r["no_drop_priority"]
    out.update(
        tos=r["data_dscp"] << 2,
        pfc_priorities=[prio],
        dscp2prio={str(r["data_dscp"]): prio, str(r["cnp_dscp"]): r["cnp_priority"]},
        cc_prio_mask=255 if r["ecn"]["enabled"] else 255 - (1 << prio),
        cnp_dscp=r["cnp_dscp"],
        cnp_priority=r["cnp_priority"],
    )
    return out


def published(fabric, sm_hosts=()):
    """What the validate action plugin hands every host as ``fabric_effective``:
    the effective intent with ``derived`` (``derive()``) beside its keys."""
    eff = effective(fabric, sm_hosts)
    eff["derived"] = derive(eff)
    return eff
