"""The fabric intent: its defaults, its schema and the cross-layer checks.

The intent (inventory variable ``fabric``) is the only place a fabric value
is written; every role derives its settings from the merged result
(``fabric_effective``). ``validate()`` runs on the controller before any host
or switch is touched and returns every problem at once, each naming the key,
the value and what is allowed.

Stdlib only: used by the validate action plugin, by filters and by tests.
"""
import copy
import ipaddress
import math
import re

from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband as intent_ib
from ansible_collections.linerate.fabric.plugins.module_utils.switch import network_os
from ansible_collections.linerate.fabric.plugins.module_utils.switch import profiles as switch_profiles
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import IB_ERROR_COUNTERS

TRANSPORTS = ("roce", "infiniband")
SWITCH_PLATFORMS = ("nvue", "sonic", "eos")
# InfiniBand switches are managed by the subnet manager, not over SSH.
IB_SWITCH_PLATFORMS = ("infiniband",)
SWITCH_ROLES = ("leaf", "spine")
# ansible_network_os, bare or collection-qualified (arista.eos.eos,
# nvidia.nvue.nvue, dellemc.enterprise_sonic.sonic): the last part names the
# platform (module_utils/switch/network_os.py, the one table the drivers and the role read too).
NETWORK_OS_ALIASES = network_os.ALIASES
NETWORK_OS_ALLOWED = (" | ".join(NETWORK_OS_ALIASES) + ", bare or collection-qualified such as arista.eos.eos; "
                      "or set switch_platform: nvue | sonic | eos")
# Ethernet rates and InfiniBand 4X rates (SDR 10, DDR 20, QDR 40, FDR 56,
# EDR 100, HDR 200, NDR 400, XDR 800).
LINK_SPEEDS_GBPS = (10, 20, 25, 40, 50, 56, 100, 200, 400, 800)
LINK_WIDTHS = (1, 2, 4, 8)
TRUST_MODES = ("dscp", "pcp")
GID_TYPES = ("v2",)
NCCL_GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
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
        "gdr_level": "PHB",
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
    # The host stack rolls through gpu_nodes (playbooks/stages/hosts.yml):
    # `serial` and `max_fail_percentage` of the play. Every node in one batch
    # (the non-disruptive work in parallel), each disruptive action one node at
    # a time within it (the roles' turns), and the first failure stops the run.
    "rollout": {
        "batch": "100%",
        "max_fail_percentage": 0,
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
    },
}
SCHEDULERS = ("none", "slurm", "kubernetes")
SEVERITIES = ("error", "warning")

# Keys of one entry of a host's rdma_ports (guid: the InfiniBand port GUID).
PORT_KEYS = {"device", "netdev", "address", "switch", "switch_port", "pci", "guid"}
UPLINK_KEYS = {"port", "peer", "peer_port"}
# Keys that belong to one transport only.
TRANSPORT_ONLY = {"roce": "roce", "infiniband": "infiniband"}
INFINIBAND_KEYS = {"subnet_manager"}
# Host stacks linerate can build on. The distribution's rdma-core ("inbox")
# lacks ibdev2netdev, show_gids and mlnx_qos, which rdma_facts, roce_qos and
# verification read, so it is rejected with that reason.
MOFED_SOURCES = ("doca", "mlnx_ofed")
INBOX_REASON = ("the distribution's rdma-core (inbox) has no ibdev2netdev, show_gids or mlnx_qos, "
                "which rdma_facts, roce_qos and verification need; use doca or mlnx_ofed")
# InfiniBand switch port numbers: 8-bit, port 0 is the switch's management port.
IB_PORT_RANGE = (1, 255)
REPR_MAX = 80

# Per key, the format of a value that reaches a command line, a script, a
# file name or a switch: a safe ASCII character set (no whitespace, newline,
# quotes, `;` or other shell / CLI metacharacters) and a bounded length.
# name: (regex, what is allowed); matched with re.fullmatch and re.ASCII.
FORMATS = {
    "name": (r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}",
             "1-64 of letters, digits, _ . -, starting with a letter or digit"),
    "device": (r"[a-z][a-z0-9_]{0,30}[0-9]",
               "an RDMA device name such as mlx5_0 (a-z 0-9 _, ending in a digit, at most 32)"),
    "netdev": (r"(?!\.{1,2}$)[A-Za-z0-9_.-]{1,15}",
               "a Linux interface name: 1-15 of letters, digits, _ . -"),
    "port": (r"[A-Za-z][A-Za-z0-9_./:-]{0,63}",
             "a port name such as swp1, Ethernet0 or Ethernet1/1 "
             "(1-64 of letters, digits, _ . / : -, starting with a letter)"),
    "ifname_list": (r"\^?=?[A-Za-z0-9_.:-]{1,64}(,[A-Za-z0-9_.:-]{1,64}){0,15}",
                    "an interface name or NCCL prefix list such as eth0 or ^lo,docker"),
    "nccl_value": (r"[A-Za-z0-9_.,:=^+/@-]{0,256}",
                   "a string of at most 256 letters, digits and _ . , : = ^ + / @ -, or a finite number"),
    "pci": (r"([0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]",
            "a PCI address such as 0000:41:00.0 (lower-case hex)"),
    "guid": (r"0x[0-9a-fA-F]{1,16}", "a port GUID such as 0xa088c20300000101"),
}


class Problems:
    """Collects problems as ``key: value is not allowed (allowed: ...)``."""

    def __init__(self):
        self.items = []

    def add(self, key, value, allowed):
        self.items.append(f"{key}: {show(value)} is not allowed ({allowed})")

    def note(self, message):
        self.items.append(message)


def show(value):
    """repr() of a value, cut to REPR_MAX characters (a 2,000-character name
    stays readable in the message)."""
    text = repr(value)
    if len(text) > REPR_MAX:
        text = text[:REPR_MAX - 3] + "..." + f" ({len(str(value))} characters)"
    return text


def has_format(value, fmt):
    """True when ``value`` is a string of format ``fmt`` (a key of FORMATS)."""
    return isinstance(value, str) and re.fullmatch(FORMATS[fmt][0], value, re.ASCII) is not None


def _format(p, key, value, fmt):
    if not has_format(value, fmt):
        p.add(key, value, "allowed: " + FORMATS[fmt][1])
        return False
    return True


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
        sm = copy.deepcopy(intent_ib.merged(ib.get("subnet_manager")))
        if not sm.get("master") and sm_hosts:
            sm["master"] = list(sm_hosts)[0]
        ib["subnet_manager"] = sm
    return merged


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    """A finite int or float; a bool is never a number."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v))


def _int_in(p, key, value, lo, hi):
    if not _is_int(value) or not lo <= value <= hi:
        p.add(key, value, f"allowed: an integer {lo}..{hi}")
        return False
    return True


def _same_kind(value, choice):
    """True is not 1, 400.0 is not 400; subclasses (Ansible's tagged str and
    int) are what they subclass."""
    if isinstance(choice, int):
        return _is_int(value)
    return isinstance(value, type(choice))


def _one_of(p, key, value, choices):
    if not any(_same_kind(value, c) and value == c for c in choices):
        p.add(key, value, "allowed: " + " | ".join(str(c) for c in choices))
        return False
    return True


def _unknown_keys(p, prefix, given, known):
    for key in sorted(set(given) - set(known), key=str):
        p.add(f"{prefix}.{key}" if prefix else key, given[key],
              "unknown key; allowed keys: " + ", ".join(sorted(known)))


def _mapping(p, key, value, what="a mapping"):
    """``value`` if it is a mapping, else a problem and None."""
    if isinstance(value, dict):
        return value
    p.add(key, value, f"allowed: {what}")
    return None


def validate_fabric(fabric):
    """Check the ``fabric`` tree on its own. Returns a list of messages."""
    p = Problems()
    if fabric is None:
        p.note("fabric: the variable is not defined (set it in group_vars/all; "
               "see inventory/example-roce)")
        return p.items
    if not isinstance(fabric, dict):
        p.add("fabric", fabric, "allowed: a mapping")
        return p.items
    _unknown_keys(p, "fabric", fabric, DEFAULTS)
    transport = fabric.get("transport", DEFAULTS["transport"])
    if not _one_of(p, "fabric.transport", transport, TRANSPORTS):
        return p.items
    # Keys of the other transport are a sign of a copied or mixed-up inventory.
    for block, owner in TRANSPORT_ONLY.items():
        if owner != transport and block in fabric:
            p.add(f"fabric.{block}", "...", f"only with fabric.transport: {owner}; "
                  f"this fabric is {transport}, remove the {block} block")
    # Every block is a mapping; one that is not is reported and left at its
    # defaults so the rest is still checked (every problem at once).
    clean = {k: v for k, v in fabric.items() if k in DEFAULTS}
    for block in ("mtu", "roce", "infiniband", "nccl", "verify", "firmware", "rollout", "remediation"):
        if block in clean and _mapping(p, f"fabric.{block}", clean[block]) is None:
            del clean[block]
    for block, inner in (("roce", "ecn"), ("nccl", "overrides")):
        if inner in clean.get(block, {}):
            if _mapping(p, f"fabric.{block}.{inner}", clean[block][inner]) is None:
                clean[block] = {k: v for k, v in clean[block].items() if k != inner}
    f = effective(clean)

    _format(p, "fabric.name", f["name"], "name")
    _one_of(p, "fabric.link_speed_gbps", f["link_speed_gbps"], LINK_SPEEDS_GBPS)
    _one_of(p, "fabric.link_width", f["link_width"], LINK_WIDTHS)

    mtu = f["mtu"]
    _unknown_keys(p, "fabric.mtu", clean.get("mtu", {}), DEFAULTS["mtu"])
    host_ok = _int_in(p, "fabric.mtu.host", mtu.get("host"), 1280, 9216)
    sw_ok = _int_in(p, "fabric.mtu.switch", mtu.get("switch"), 1280, 9216)
    if host_ok and sw_ok and mtu["host"] > mtu["switch"]:
        p.add("fabric.mtu.host", mtu["host"],
              f"allowed: at most fabric.mtu.switch ({mtu['switch']}); a host MTU above "
              "the switch MTU drops every full-size frame")

    if transport == "roce":
        _validate_roce(p, clean.get("roce", {}), f["roce"])
    else:
        _unknown_keys(p, "fabric.infiniband", clean.get("infiniband", {}), INFINIBAND_KEYS)
    _validate_nccl(p, clean.get("nccl", {}), f["nccl"])
    _validate_verify(p, clean.get("verify", {}), f["verify"], f["link_speed_gbps"])
    _unknown_keys(p, "fabric.firmware", clean.get("firmware", {}), DEFAULTS["firmware"])
    _one_of(p, "fabric.firmware.profile", f["firmware"].get("profile"), FIRMWARE_PROFILES)
    _validate_rollout(p, clean.get("rollout", {}), f["rollout"])
    _validate_remediation(p, clean.get("remediation", {}), f["remediation"])
    return p.items


def _validate_remediation(p, given, r):
    _unknown_keys(p, "fabric.remediation", given, DEFAULTS["remediation"])
    for key in ("drain", "return_to_service"):
        if not isinstance(r.get(key), bool):
            p.add(f"fabric.remediation.{key}", r.get(key), "allowed: true | false")
    sched_ok = _one_of(p, "fabric.remediation.scheduler", r.get("scheduler"), SCHEDULERS)
    if sched_ok and r.get("drain") is True and r["scheduler"] == "none":
        p.add("fabric.remediation.scheduler", "none", "allowed: slurm | kubernetes when fabric.remediation.drain "
              "is true (a drain needs a scheduler to take the node out of)")
    for key in ("drain_codes", "exempt_codes"):
        codes = r.get(key)
        if not isinstance(codes, list):
            p.add(f"fabric.remediation.{key}", codes, "allowed: a list of linerate fault codes")
            continue
        for i, code in enumerate(codes):
            if code not in FAULT_CODES:
                p.add(f"fabric.remediation.{key}[{i}]", code, "allowed: a linerate fault code such as LINK_FLAP, "
                      "PORT_DOWN, PCIE_DEGRADED (docs/verification.md#fault-codes)")
    sev = r.get("drain_severities")
    if not isinstance(sev, list) or any(not any(_same_kind(x, c) and x == c for c in SEVERITIES) for x in sev):
        p.add("fabric.remediation.drain_severities", sev, "allowed: a list of error | warning")


# fabric.rollout.batch as Ansible's `serial` takes it: a count of hosts, or a
# percentage of the play's hosts written "N%".
ROLLOUT_PERCENT = re.compile(r"([1-9][0-9]?|100)%", re.ASCII)


def _validate_rollout(p, given, r):
    _unknown_keys(p, "fabric.rollout", given, DEFAULTS["rollout"])
    batch = r.get("batch")
    if not ((_is_int(batch) and 1 <= batch <= 100000)
            or (isinstance(batch, str) and ROLLOUT_PERCENT.fullmatch(batch))):
        p.add("fabric.rollout.batch", batch,
              "allowed: a number of nodes >= 1 or a percentage '1%'..'100%' of gpu_nodes "
              "(the host stack's serial: nodes changed at a time)")
    _int_in(p, "fabric.rollout.max_fail_percentage", r.get("max_fail_percentage"), 0, 100)


def _validate_roce(p, given, r):
    _unknown_keys(p, "fabric.roce", given, DEFAULTS["roce"])
    _one_of(p, "fabric.roce.trust", r["trust"], TRUST_MODES)
    _one_of(p, "fabric.roce.gid_type", r["gid_type"], GID_TYPES)
    prio_ok = _int_in(p, "fabric.roce.no_drop_priority", r["no_drop_priority"], 0, 7)
    cnp_ok = _int_in(p, "fabric.roce.cnp_priority", r["cnp_priority"], 0, 7)
    dscp_ok = _int_in(p, "fabric.roce.data_dscp", r["data_dscp"], 0, 63)
    cnp_dscp_ok = _int_in(p, "fabric.roce.cnp_dscp", r["cnp_dscp"], 0, 63)
    if prio_ok and cnp_ok and r["cnp_priority"] == r["no_drop_priority"]:
        p.add("fabric.roce.cnp_priority", r["cnp_priority"],
              f"allowed: any priority 0..7 except fabric.roce.no_drop_priority "
              f"({r['no_drop_priority']}); CNPs must not queue behind the data they throttle")
    if dscp_ok and cnp_dscp_ok and r["cnp_dscp"] == r["data_dscp"]:
        p.add("fabric.roce.cnp_dscp", r["cnp_dscp"],
              f"allowed: any DSCP 0..63 except fabric.roce.data_dscp ({r['data_dscp']})")
    ecn = r["ecn"]
    _unknown_keys(p, "fabric.roce.ecn", given.get("ecn", {}), DEFAULTS["roce"]["ecn"])
    if not isinstance(ecn.get("enabled"), bool):
        p.add("fabric.roce.ecn.enabled", ecn.get("enabled"), "allowed: true | false")
    lo_ok = _int_in(p, "fabric.roce.ecn.min_threshold_kb", ecn.get("min_threshold_kb"), 1, 100000)
    hi_ok = _int_in(p, "fabric.roce.ecn.max_threshold_kb", ecn.get("max_threshold_kb"), 1, 100000)
    if lo_ok and hi_ok and ecn["min_threshold_kb"] >= ecn["max_threshold_kb"]:
        p.add("fabric.roce.ecn.min_threshold_kb", ecn["min_threshold_kb"],
              f"allowed: below fabric.roce.ecn.max_threshold_kb ({ecn['max_threshold_kb']})")
    _int_in(p, "fabric.roce.ecn.probability_percent", ecn.get("probability_percent"), 1, 100)


def _validate_nccl(p, given, n):
    _unknown_keys(p, "fabric.nccl", given, DEFAULTS["nccl"])
    _format(p, "fabric.nccl.socket_ifname", n.get("socket_ifname"), "ifname_list")
    _one_of(p, "fabric.nccl.gdr_level", n.get("gdr_level"), NCCL_GDR_LEVELS)
    for key, value in n["overrides"].items():
        name = f"fabric.nccl.overrides.{key}"
        if not isinstance(key, str) or not re.fullmatch(r"NCCL_[A-Z0-9_]{1,60}", key, re.ASCII):
            p.add(f"fabric.nccl.overrides.{str(key)[:64]}", value, "allowed: keys named NCCL_*")
        elif isinstance(value, str):
            _format(p, name, value, "nccl_value")
        elif not _is_num(value):
            p.add(name, value, "allowed: " + FORMATS["nccl_value"][1])


# ib_write_lat's default bound (usec, perftest's t_avg of 2-byte messages) per transport: a healthy
# ConnectX pair through one to three switches is ~1-3 us on RoCE, ~1-1.5 us on InfiniBand; a path
# that retransmits or queues shows several microseconds more (docs/verification.md)
LATENCY_US_MAX = {"roce": 5.0, "infiniband": 3.0}


def _validate_verify(p, given, v, speed):
    _unknown_keys(p, "fabric.verify", given, DEFAULTS["verify"])
    lat = v.get("latency_us_max")
    if lat is not None and (not _is_num(lat) or not 0 < lat <= 1000):
        p.add("fabric.verify.latency_us_max", lat,
              "allowed: a number of microseconds, 0 < x <= 1000 (ib_write_lat's average one-way latency a pair "
              "may show), or null for the transport's default (RoCE 5.0, InfiniBand 3.0)")
    for key in ("ib_write_bw_fraction", "nccl_busbw_fraction"):
        value = v.get(key)
        if not _is_num(value) or value <= 0:
            p.add(f"fabric.verify.{key}", value, "allowed: a finite fraction of line rate, 0 < x <= 1")
        elif value > 1:
            p.add(f"fabric.verify.{key}", value,
                  f"allowed: at most 1.0; {value} x {speed} Gb/s = {value * speed:g} Gb/s "
                  f"is above the line rate of {speed} Gb/s, so the check could never pass")
    for key in ("link_errors_max", "link_flaps_max"):
        if not _is_int(v.get(key)) or v[key] < 0:
            p.add(f"fabric.verify.{key}", v.get(key), "allowed: an integer >= 0 (counts over the verification window)")
    if not _is_int(v.get("full_plan_max_nodes")) or v["full_plan_max_nodes"] < 2:
        p.add("fabric.verify.full_plan_max_nodes", v.get("full_plan_max_nodes"),
              "allowed: an integer >= 2 (nodes up to which ib_write_bw tests every pair; the sampled plan above)")
    for key in ("effective_ber_max", "raw_ber_max"):
        value = v.get(key)
        if not _is_num(value) or not 0 <= value < 1:
            p.add(f"fabric.verify.{key}", value, "allowed: a finite bit error rate, 0 <= x < 1, written 1.0e-12 (YAML reads 1e-12 as a string)")
    for key, hi in (("optic_rx_power_margin_db", 20), ("optic_temp_margin_c", 50)):
        value = v.get(key)
        if not _is_num(value) or not 0 <= value <= hi:
            p.add(f"fabric.verify.{key}", value, f"allowed: a number 0..{hi} (a margin inside the module's own "
                  "thresholds, which mlxlink prints beside each value)")
    thresholds = _mapping(p, "fabric.verify.ib_error_thresholds", v.get("ib_error_thresholds"),
                          "a mapping of PortCounters error counter -> the count a port may show")
    for key, value in sorted((thresholds or {}).items(), key=lambda kv: str(kv[0])):
        if key not in IB_ERROR_COUNTERS:
            p.add(f"fabric.verify.ib_error_thresholds.{key}", value,
                  "unknown counter; allowed: " + ", ".join(IB_ERROR_COUNTERS))
        elif not _is_int(value) or value < 0:
            p.add(f"fabric.verify.ib_error_thresholds.{key}", value,
                  "allowed: an integer >= 0 (the count of this error a port may show)")


def _switch_port(p, key, value, transport, switch):
    """A switch port: a port name on Ethernet, a port number on InfiniBand."""
    if transport == "infiniband":
        if not _is_int(value) or not IB_PORT_RANGE[0] <= value <= IB_PORT_RANGE[1]:
            p.add(key, value, "allowed: an InfiniBand switch port number "
                  f"{IB_PORT_RANGE[0]}..{IB_PORT_RANGE[1]}")
            return False
        return True
    if not has_format(value, "port"):
        p.add(key, value, f"allowed: a port name of {switch}: " + FORMATS["port"][1])
        return False
    return True


def _switch_names(switches):
    return ", ".join(sorted(map(str, switches))) or "(the inventory has none)"


def validate_cabling(fabric, hosts, switches):
    """Cross-checks of the per-host cabling against the switches and the intent.

    ``hosts``: {inventory_name: {"rdma_ports": [...], "mofed_source": ...}} for
    every host that feeds a switch port (and every RDMA host).
    ``switches``: {inventory_name: {"switch_platform": ..., ...}}.
    """
    p = Problems()
    transport = fabric.get("transport", DEFAULTS["transport"]) if isinstance(fabric, dict) else None
    if transport not in TRANSPORTS:
        transport = DEFAULTS["transport"]
    seen_switch_ports = {}
    for sw, sv in sorted(switches.items(), key=lambda kv: str(kv[0])):
        sv = sv if isinstance(sv, dict) else {}
        allowed_platforms = IB_SWITCH_PLATFORMS if transport == "infiniband" else SWITCH_PLATFORMS
        if "switch_platform" not in sv and "ansible_network_os" in sv:
            # Reported under the key the operator wrote, not under switch_platform.
            os_value = sv["ansible_network_os"]
            platform = network_os.normalize(os_value)
            if platform not in allowed_platforms:
                p.add(f"{sw}: ansible_network_os", os_value, "allowed: " + NETWORK_OS_ALLOWED
                      if transport != "infiniband" else "allowed: none on InfiniBand (the subnet manager "
                      "manages its switches, not SSH); remove it or the switch from the group")
        else:
            platform = sv.get("switch_platform")
            _one_of(p, f"{sw}: switch_platform", platform, allowed_platforms)
        # the platform's own limits: SONiC object names, EOS family (MTU, speed forms)
        for key, value, allowed in switch_profiles.switch_problems(sw, sv, platform, fabric):
            p.add(key, value, allowed)
        _one_of(p, f"{sw}: switch_role", sv.get("switch_role", "leaf"), SWITCH_ROLES)
        if "ib_switch_guid" in sv:
            _format(p, f"{sw}: ib_switch_guid", sv["ib_switch_guid"], "guid")
        uplinks = sv.get("switch_uplinks")
        if uplinks is None:
            uplinks = []
        if not isinstance(uplinks, list):
            p.add(f"{sw}: switch_uplinks", uplinks, "allowed: a list of {port, peer, peer_port}")
            uplinks = []
        for i, up in enumerate(uplinks):
            key = f"{sw}: switch_uplinks[{i}]"
            if not isinstance(up, dict):
                p.add(key, up, "allowed: a mapping with port, peer, peer_port")
                continue
            _unknown_keys(p, key, up, UPLINK_KEYS)
            for k in sorted(UPLINK_KEYS - set(up)):
                p.add(f"{key}.{k}", None, "required; allowed keys: " + ", ".join(sorted(UPLINK_KEYS)))
            peer = up.get("peer")
            if "peer" in up and (not isinstance(peer, str) or peer not in switches or peer == sw):
                p.add(f"{key}.peer", peer, "allowed: another host of group switches: "
                      + _switch_names(switches))
            port_ok = "port" in up and _switch_port(p, f"{key}.port", up["port"], transport, sw)
            if "peer_port" in up:
                _switch_port(p, f"{key}.peer_port", up["peer_port"], transport,
                             peer if isinstance(peer, str) else "the peer")
            if port_ok:
                _claim(p, seen_switch_ports, sw, up["port"], f"{sw} uplink to {show(peer)[1:-1]}")
    addresses, guids = {}, {}
    for host, hv in sorted(hosts.items(), key=lambda kv: str(kv[0])):
        hv = hv if isinstance(hv, dict) else {}
        if hv.get("mofed_source") == "inbox":
            p.note(f"{host}: mofed_source: 'inbox' is rejected: {INBOX_REASON}")
        elif "mofed_source" in hv:
            _one_of(p, f"{host}: mofed_source", hv["mofed_source"], MOFED_SOURCES)
        ports = hv.get("rdma_ports")
        if ports is None:
            p.add(f"{host}: rdma_ports", None, "allowed: a list of the host's cabled RDMA ports")
            continue
        if not isinstance(ports, list) or not ports:
            p.add(f"{host}: rdma_ports", ports, "allowed: a non-empty list")
            continue
        devices, netdevs = set(), set()
        for i, port in enumerate(ports):
            key = f"{host}: rdma_ports[{i}]"
            if not isinstance(port, dict):
                p.add(key, port, "allowed: a mapping with device, netdev, switch, switch_port")
                continue
            _unknown_keys(p, key, port, PORT_KEYS)
            dev = port.get("device")
            if _format(p, f"{key}.device", dev, "device"):
                if dev in devices:
                    p.add(f"{key}.device", dev, "allowed: each device once per host")
                devices.add(dev)
            netdev = port.get("netdev")
            if _format(p, f"{key}.netdev", netdev, "netdev"):
                if netdev in netdevs:
                    p.add(f"{key}.netdev", netdev, "allowed: each netdev once per host")
                netdevs.add(netdev)
            if "pci" in port:
                _format(p, f"{key}.pci", port["pci"], "pci")
            if "guid" in port and _format(p, f"{key}.guid", port["guid"], "guid"):
                g = int(port["guid"], 16)
                if g in guids:
                    p.add(f"{key}.guid", port["guid"], f"allowed: a GUID used once; {guids[g]} has it")
                guids[g] = f"{host} {dev}"
            if port.get("address") is not None:
                _rail_address(p, f"{key}.address", port["address"], addresses, f"{host} {dev}")
            sw = port.get("switch")
            if not isinstance(sw, str) or sw not in switches:
                p.add(f"{key}.switch", sw, "allowed: a host of group switches: " + _switch_names(switches))
                continue
            sp = port.get("switch_port")
            if _switch_port(p, f"{key}.switch_port", sp, transport, sw):
                _claim(p, seen_switch_ports, sw, sp, f"{host} {dev}")
    return p.items


def _rail_address(p, key, value, seen, who):
    """An IPv4 host address with its prefix length, not the network or
    broadcast address of its subnet, used once in the fabric."""
    allowed = "allowed: an IPv4 host address with prefix length, such as 192.168.100.11/24"
    if not isinstance(value, str) or "/" not in value:
        p.add(key, value, allowed)
        return
    try:
        iface = ipaddress.ip_interface(value)
    except ValueError:
        p.add(key, value, allowed)
        return
    if iface.version != 4:
        p.add(key, value, allowed + "; rail addresses are IPv4: the RoCEv2 GID NCCL and "
              "ib_write_bw use is the IPv4-mapped one")
        return
    net = iface.network
    edges = (net.network_address, net.broadcast_address)
    if net.prefixlen == 32 or (net.prefixlen <= 30 and iface.ip in edges):
        p.add(key, value, allowed + f"; {iface.ip} is the network or broadcast address of {net}"
              if net.prefixlen != 32 else allowed + "; a /32 has no neighbours on the rail")
        return
    if iface.ip in seen:
        p.add(key, value, f"allowed: an address used once; {iface.ip} is already {seen[iface.ip]}'s")
        return
    seen[iface.ip] = who


def _claim(p, seen, switch, port, who):
    key = (switch, str(port))
    if key in seen:
        p.add(f"{who}: switch_port", f"{switch} {port}",
              f"allowed: a switch port cabled once; {switch} {port} is already cabled to {seen[key]}")
    else:
        seen[key] = who


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
        known[h] = [p["guid"] for p in ports if isinstance(p, dict) and intent_ib.is_guid(p.get("guid"))] \
            if isinstance(ports, list) else []
    for s, sv in switches.items():
        if isinstance(sv, dict) and intent_ib.is_guid(sv.get("ib_switch_guid")):
            known[s] = [sv["ib_switch_guid"]]
    sm_hosts = [h for h in (sm_hosts if isinstance(sm_hosts, (list, tuple)) else []) if isinstance(h, str)]
    return intent_ib.validate_subnet_manager(ib.get("subnet_manager"), known, sm_hosts)


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
        "latency_max_usec": float(v["latency_us_max"] if v.get("latency_us_max") is not None
                                  else LATENCY_US_MAX[eff["transport"]]),
        "tos": None, "pfc_priorities": [], "dscp2prio": {},
        "cc_prio_mask": None, "cnp_dscp": None, "cnp_priority": None,
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
