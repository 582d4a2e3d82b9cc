"""The fabric tree's validation (plugins/module_utils/intent/schema.py): the tables it checks against,
asserted exactly (every allowed value passes, the message lists exactly the allowed values, the defaults
are the documented ones); and strict input, never a crash: about 150 malformed inventories, each with
the message fragment naming its key and value, and random shapes (hypothesis) answered with a list of
problems only (below)."""

import copy
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS, effective
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import has_format, is_num

HOSTS = {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "swp1"}]}}
SWITCHES = {"sw1": {"switch_platform": "nvue"}}


def problems(fabric, hosts=HOSTS, switches=SWITCHES):
    return schema.validate(fabric, hosts, switches)


@pytest.mark.parametrize(
    "key,values,allowed",
    [
        ("link_speed_gbps", (10, 20, 25, 40, 50, 56, 100, 200, 400, 800), "10 | 20 | 25 | 40 | 50 | 56 | 100 | 200 | 400 | 800"),
        ("link_width", (1, 2, 4, 8), "1 | 2 | 4 | 8"),
    ],
)
def test_every_allowed_number_passes_and_the_message_lists_them(key, values, allowed):
    for v in values:
        assert problems({"transport": "roce", key: v}) == [], v
    assert problems({"transport": "roce", key: 3}) == [f"fabric.{key}: 3 is not allowed (allowed: {allowed})"]


@pytest.mark.parametrize(
    "path,values,allowed",
    [
        (("nccl", "gdr_level"), ("auto", "LOC", "PIX", "PXB", "PHB", "SYS"), "auto | LOC | PIX | PXB | PHB | SYS"),
        (("roce", "trust"), ("dscp", "pcp"), "dscp | pcp"),
        (("roce", "gid_type"), ("v2",), "v2"),
    ],
)
def test_every_allowed_word_passes_and_the_message_lists_them(path, values, allowed):
    block, key = path
    for v in values:
        assert problems({"transport": "roce", block: {key: v}}) == [], v
    assert problems({"transport": "roce", block: {key: "x"}}) == [f"fabric.{block}.{key}: 'x' is not allowed (allowed: {allowed})"]


def test_transports():
    assert problems({"transport": "x"}) == ["fabric.transport: 'x' is not allowed (allowed: roce | infiniband)"]


def test_switch_platforms_and_roles():
    for platform in ("nvue", "sonic", "eos"):
        for role in ("leaf", "spine"):
            # SONiC at the default 400G with the platform's headroom row (sonic-swss's stops at 100G)
            headroom = {"switch_sonic_pg_lookup": {400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}}} if platform == "sonic" else {}
            assert problems({"transport": "roce"}, switches={"sw1": {"switch_platform": platform, "switch_role": role, **headroom}}) == []
    assert problems({"transport": "roce"}, switches={"sw1": {"switch_platform": "x", "switch_role": "x"}}) == [
        "sw1: switch_platform: 'x' is not allowed (allowed: nvue | sonic | eos)",
        "sw1: switch_role: 'x' is not allowed (allowed: leaf | spine)",
    ]


def test_host_mtu_bounds():
    assert problems({"transport": "roce", "mtu": {"host": 1280, "switch": 9216}}) == []
    assert problems({"transport": "roce", "mtu": {"host": 9216, "switch": 9216}}) == []
    assert problems({"transport": "roce", "mtu": {"host": 1279, "switch": 9217}}) == [
        "fabric.mtu.host: 1279 is not allowed (allowed: an integer 1280..9216)",
        "fabric.mtu.switch: 9217 is not allowed (allowed: an integer 1280..9216)",
    ]


def test_the_defaults_are_the_documented_ones():
    assert effective({}) == {
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
            "ecn": {"enabled": True, "min_threshold_kb": 150, "max_threshold_kb": 1500, "probability_percent": 100},
        },
        "nccl": {"socket_ifname": "eth0", "gdr_level": "auto", "overrides": {}},
        "verify": {
            "ib_write_bw_fraction": 0.90,
            "nccl_busbw_fraction": 0.80,
            "link_errors_max": 0,
            "link_flaps_max": 0,
            "effective_ber_max": 1e-12,
            "raw_ber_max": 2.4e-4,
            "optic_rx_power_margin_db": 0.0,
            "optic_temp_margin_c": 0.0,
            "ib_error_thresholds": {},
            "full_plan_max_nodes": 16,
            "latency_us_max": None,
        },
        "firmware": {"profile": "default"},
        "rollout": {
            "max_unavailable": "10%",
            "canary": 1,
            "max_fail_percentage": 0,
            "spread": ["leaf", "rack", "nvlink_domain"],
            "slow_start": True,
            "batch": None,
        },
        "remediation": {
            "drain": False,
            "scheduler": "none",
            "drain_codes": [],
            "drain_severities": ["error"],
            "exempt_codes": [],
            "return_to_service": True,
            "attribution": {"min_nodes": 2, "min_share_percent": 50},
            "budget": {"max_nodes_per_run": 10, "max_percent_per_run": 5, "window_hours": 24, "max_nodes_per_window": 20, "max_percent_per_window": 10},
        },
    }


def test_effective_leaves_the_input_alone():
    given = {"transport": "roce", "roce": {"ecn": {"enabled": False}}}
    before = copy.deepcopy(given)
    eff = effective(given)
    eff["roce"]["ecn"]["enabled"] = True
    assert given == before and DEFAULTS["roce"]["ecn"]["enabled"] is True


# ---------------------------------------------------------------- strict input, never a crash
# Strict input, never a crash: about 140 malformed inventories, each with the
# message fragment that names its key and value, and random shapes fed to the
# validator (hypothesis), which must answer with a list of problems only.

# `make mutation` runs these once per mutant: fewer random examples there.
settings.register_profile("linerate", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("mutation", max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("LINERATE_HYPOTHESIS_PROFILE", "linerate"))


NAN, INF = float("nan"), float("inf")

ROCE = {
    "fabric": {
        "name": "t",
        "transport": "roce",
        "link_speed_gbps": 400,
        "link_width": 4,
        "mtu": {"host": 4200, "switch": 9216},
        "roce": {
            "no_drop_priority": 3,
            "data_dscp": 26,
            "cnp_dscp": 48,
            "cnp_priority": 6,
            "ecn": {"enabled": True, "min_threshold_kb": 150, "max_threshold_kb": 1500},
        },
        "nccl": {"socket_ifname": "eth0", "gdr_level": "PHB", "overrides": {"NCCL_IB_TIMEOUT": 22}},
        "verify": {"ib_write_bw_fraction": 0.9, "nccl_busbw_fraction": 0.8},
    },
    "hosts": {
        "node1": {
            "rdma_ports": [
                {"device": "mlx5_0", "netdev": "enp65s0f0np0", "address": "192.168.100.1/24", "switch": "leaf1", "switch_port": "swp1", "pci": "0000:41:00.0"},
                {"device": "mlx5_1", "netdev": "enp81s0f0np0", "address": "192.168.101.1/24", "switch": "leaf2", "switch_port": "Ethernet0"},
            ]
        },
        "node2": {"rdma_ports": [{"device": "mlx5_0", "netdev": "enp65s0f0np0", "address": "192.168.100.2/24", "switch": "leaf1", "switch_port": "swp2"}]},
    },
    "switches": {
        "leaf1": {"switch_platform": "nvue", "switch_role": "leaf", "switch_uplinks": [{"port": "swp31", "peer": "spine1", "peer_port": "Ethernet1/1"}]},
        # at 400G, with the platform's lossless headroom row (sonic-swss's table stops at 100G)
        "leaf2": {"switch_platform": "sonic", "switch_sonic_pg_lookup": {400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}}},
        "spine1": {"switch_platform": "eos", "switch_role": "spine", "switch_uplinks": [{"port": "Ethernet1/1", "peer": "leaf1", "peer_port": "swp31"}]},
    },
    "sm_hosts": [],
}

IB = {
    "fabric": {
        "transport": "infiniband",
        "mtu": {"host": 4092, "switch": 4096},
        "infiniband": {"subnet_manager": {"routing_engine": "minhop", "partitions": [{"name": "p", "pkey": 1, "members": ["n1"]}]}},
    },
    "hosts": {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "ibp65s0", "switch": "ibsw1", "switch_port": 1, "guid": "0xa088c20300000101"}]}},
    "switches": {"ibsw1": {"switch_platform": "infiniband", "ib_switch_guid": "0xe41d2d0300a00001"}},
    "sm_hosts": ["n1"],
}

DELETE = object()


def mutate(base, path, value):
    """A deep copy of ``base`` with ``value`` at ``path`` ("a.b.0.c" or a tuple)."""
    inv = copy.deepcopy(base)
    keys = path.split(".") if isinstance(path, str) else list(path)
    keys = [int(k) if isinstance(k, str) and k.isdigit() else k for k in keys]
    cur = inv
    for k in keys[:-1]:
        cur = cur[k] if isinstance(cur, list) else cur.setdefault(k, {})
    if value is DELETE:
        del cur[keys[-1]]
    else:
        cur[keys[-1]] = value
    return inv


def problems_of(inv):
    return schema.validate(inv["fabric"], inv["hosts"], inv["switches"], inv["sm_hosts"])


P0 = "hosts.node1.rdma_ports.0."
UP = "switches.leaf1.switch_uplinks.0."
SM = "fabric.infiniband.subnet_manager."
IP0 = "hosts.n1.rdma_ports.0."

ROCE_CASES = [
    # shapes: a block that is not a mapping
    ("fabric", [], "fabric: [] is not allowed (allowed: a mapping)"),
    ("fabric", "roce", "fabric: 'roce' is not allowed (allowed: a mapping)"),
    ("fabric.roce", [1], "fabric.roce: [1] is not allowed (allowed: a mapping)"),
    ("fabric.roce", "lossless", "fabric.roce: 'lossless' is not allowed (allowed: a mapping)"),
    ("fabric.roce", None, "fabric.roce: None is not allowed (allowed: a mapping)"),
    ("fabric.nccl", [], "fabric.nccl: [] is not allowed (allowed: a mapping)"),
    ("fabric.verify", 3, "fabric.verify: 3 is not allowed (allowed: a mapping)"),
    ("fabric.mtu", 4200, "fabric.mtu: 4200 is not allowed (allowed: a mapping)"),
    ("fabric.roce.ecn", True, "fabric.roce.ecn: True is not allowed (allowed: a mapping)"),
    ("fabric.nccl.overrides", ["NCCL_X"], "fabric.nccl.overrides: ['NCCL_X'] is not allowed (allowed: a mapping)"),
    # unknown keys at every level
    ("fabric.bogus", 1, "fabric.bogus: 1 is not allowed (unknown key; allowed keys: firmware, infiniband, link_speed_gbps"),
    (("fabric", 7), 2, "fabric.7: 2 is not allowed (unknown key"),
    ("fabric.mtu.jumbo", 1, "fabric.mtu.jumbo: 1 is not allowed (unknown key; allowed keys: host, switch)"),
    ("fabric.roce.ecn.mode", "red", "fabric.roce.ecn.mode: 'red' is not allowed (unknown key"),
    ("fabric.nccl.ib_hca", "mlx5", "fabric.nccl.ib_hca: 'mlx5' is not allowed (unknown key"),
    ("fabric.verify.min_gbps", 1, "fabric.verify.min_gbps: 1 is not allowed (unknown key"),
    ("fabric.infiniband", {}, "fabric.infiniband: '...' is not allowed (only with fabric.transport: infiniband"),
    # names
    ("fabric.name", "a b", "fabric.name: 'a b' is not allowed (allowed: 1-64 of letters"),
    ("fabric.name", "x;reboot", "fabric.name: 'x;reboot' is not allowed"),
    ("fabric.name", "x" * 2000, "(2000 characters) is not allowed"),
    ("fabric.name", 5, "fabric.name: 5 is not allowed"),
    ("fabric.name", "fabric\u2028x", "fabric.name: 'fabric\\u2028x' is not allowed"),
    # finite numbers only; a bool is never a number
    ("fabric.verify.ib_write_bw_fraction", NAN, "fabric.verify.ib_write_bw_fraction: nan is not allowed"),
    ("fabric.verify.ib_write_bw_fraction", INF, "fabric.verify.ib_write_bw_fraction: inf is not allowed"),
    ("fabric.verify.nccl_busbw_fraction", -INF, "fabric.verify.nccl_busbw_fraction: -inf is not allowed"),
    ("fabric.verify.nccl_busbw_fraction", True, "fabric.verify.nccl_busbw_fraction: True is not allowed"),
    ("fabric.verify.nccl_busbw_fraction", "0.8", "fabric.verify.nccl_busbw_fraction: '0.8' is not allowed"),
    ("fabric.verify.nccl_busbw_fraction", 0, "fabric.verify.nccl_busbw_fraction: 0 is not allowed"),
    ("fabric.link_width", True, "fabric.link_width: True is not allowed (allowed: 1 | 2 | 4 | 8)"),
    ("fabric.link_width", 4.0, "fabric.link_width: 4.0 is not allowed"),
    ("fabric.link_width", "4", "fabric.link_width: '4' is not allowed"),
    ("fabric.link_speed_gbps", 400.0, "fabric.link_speed_gbps: 400.0 is not allowed"),
    ("fabric.link_speed_gbps", True, "fabric.link_speed_gbps: True is not allowed"),
    ("fabric.link_speed_gbps", NAN, "fabric.link_speed_gbps: nan is not allowed"),
    ("fabric.mtu.host", True, "fabric.mtu.host: True is not allowed (allowed: an integer 1280..9216)"),
    ("fabric.mtu.host", 4200.0, "fabric.mtu.host: 4200.0 is not allowed"),
    ("fabric.mtu.switch", "9216", "fabric.mtu.switch: '9216' is not allowed"),
    ("fabric.roce.no_drop_priority", True, "fabric.roce.no_drop_priority: True is not allowed"),
    ("fabric.roce.data_dscp", 26.0, "fabric.roce.data_dscp: 26.0 is not allowed"),
    ("fabric.roce.ecn.min_threshold_kb", INF, "fabric.roce.ecn.min_threshold_kb: inf is not allowed"),
    ("fabric.roce.ecn.probability_percent", False, "fabric.roce.ecn.probability_percent: False is not allowed"),
    ("fabric.roce.ecn.enabled", 1, "fabric.roce.ecn.enabled: 1 is not allowed (allowed: true | false)"),
    ("fabric.roce.ecn.enabled", "yes", "fabric.roce.ecn.enabled: 'yes' is not allowed"),
    ("fabric.transport", ["roce"], "fabric.transport: ['roce'] is not allowed (allowed: roce | infiniband)"),
    ("fabric.transport", "RoCE", "fabric.transport: 'RoCE' is not allowed"),
    ("fabric.roce.trust", {"a": 1}, "fabric.roce.trust: {'a': 1} is not allowed (allowed: dscp | pcp)"),
    ("fabric.nccl.gdr_level", ["PHB"], "fabric.nccl.gdr_level: ['PHB'] is not allowed"),
    # NCCL values reach the environment of every job
    ("fabric.nccl.socket_ifname", "eth0\n", "fabric.nccl.socket_ifname: 'eth0\\n' is not allowed"),
    ("fabric.nccl.socket_ifname", "eth0;reboot", "fabric.nccl.socket_ifname: 'eth0;reboot' is not allowed"),
    ("fabric.nccl.socket_ifname", "", "fabric.nccl.socket_ifname: '' is not allowed"),
    ("fabric.nccl.socket_ifname", ["eth0"], "fabric.nccl.socket_ifname: ['eth0'] is not allowed"),
    (
        "fabric.nccl.overrides",
        {"NCCL_IB_HCA": "mlx5_0\nrm -rf /"},
        "fabric.nccl.overrides.NCCL_IB_HCA: 'mlx5_0\\nrm -rf /' is not allowed (allowed: a string of at most 256",
    ),
    ("fabric.nccl.overrides", {"NCCL_DEBUG": "INFO; reboot"}, "fabric.nccl.overrides.NCCL_DEBUG: 'INFO; reboot'"),
    ("fabric.nccl.overrides", {"NCCL_X": "$(reboot)"}, "fabric.nccl.overrides.NCCL_X: '$(reboot)' is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": "`id`"}, "fabric.nccl.overrides.NCCL_X: '`id`' is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": "a b"}, "fabric.nccl.overrides.NCCL_X: 'a b' is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": "'q'"}, "fabric.nccl.overrides.NCCL_X: \"'q'\" is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": NAN}, "fabric.nccl.overrides.NCCL_X: nan is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": True}, "fabric.nccl.overrides.NCCL_X: True is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": None}, "fabric.nccl.overrides.NCCL_X: None is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": [1]}, "fabric.nccl.overrides.NCCL_X: [1] is not allowed"),
    ("fabric.nccl.overrides", {"NCCL_X": "x" * 300}, "(300 characters) is not allowed"),
    ("fabric.nccl.overrides", {"nccl_x": 1}, "fabric.nccl.overrides.nccl_x: 1 is not allowed (allowed: keys named NCCL_*)"),
    ("fabric.nccl.overrides", {"NCCL_X\n": 1}, "fabric.nccl.overrides.NCCL_X\n: 1 is not allowed (allowed: keys named NCCL_*)"),
    ("fabric.nccl.overrides", {3: 1}, "fabric.nccl.overrides.3: 1 is not allowed (allowed: keys named NCCL_*)"),
    # switch ports never carry a line break, a ; or a quote to a switch or a boot script
    (P0 + "switch_port", "swp1\nreboot", "node1: rdma_ports[0].switch_port: 'swp1\\nreboot' is not allowed (allowed: a port name of leaf1"),
    (P0 + "switch_port", "swp1;reboot", "node1: rdma_ports[0].switch_port: 'swp1;reboot' is not allowed"),
    (P0 + "switch_port", "swp 1", "node1: rdma_ports[0].switch_port: 'swp 1' is not allowed"),
    (P0 + "switch_port", {"name": "swp1"}, "node1: rdma_ports[0].switch_port: {'name': 'swp1'} is not allowed"),
    (P0 + "switch_port", ["swp1"], "node1: rdma_ports[0].switch_port: ['swp1'] is not allowed"),
    (P0 + "switch_port", 1, "node1: rdma_ports[0].switch_port: 1 is not allowed"),
    (P0 + "switch_port", True, "node1: rdma_ports[0].switch_port: True is not allowed"),
    (P0 + "switch_port", "", "node1: rdma_ports[0].switch_port: '' is not allowed"),
    (P0 + "switch_port", DELETE, "node1: rdma_ports[0].switch_port: None is not allowed"),
    (P0 + "switch_port", "swp" + "1" * 2000, "(2003 characters) is not allowed"),
    (P0 + "switch_port", "swp1\u00e9", "node1: rdma_ports[0].switch_port: 'swp1\u00e9' is not allowed"),
    (P0 + "switch_port", "Ethernet1/1'", 'node1: rdma_ports[0].switch_port: "Ethernet1/1\'" is not allowed'),
    (P0 + "switch_port", "swp1$(id)", "node1: rdma_ports[0].switch_port: 'swp1$(id)' is not allowed"),
    (P0 + "switch", ["leaf1"], "node1: rdma_ports[0].switch: ['leaf1'] is not allowed (allowed: a host of group switches: leaf1, leaf2, spine1)"),
    (P0 + "switch", {"leaf1": 1}, "node1: rdma_ports[0].switch: {'leaf1': 1} is not allowed"),
    (P0 + "switch", None, "node1: rdma_ports[0].switch: None is not allowed"),
    (P0 + "switch", "leaf9", "node1: rdma_ports[0].switch: 'leaf9' is not allowed"),
    # devices, netdevs, PCI, GUID
    (P0 + "device", "mlx5_\u0663", "node1: rdma_ports[0].device: 'mlx5_\u0663' is not allowed (allowed: an RDMA device name"),
    (P0 + "device", "mlx" + "5" * 2000, "(2003 characters) is not allowed"),
    (P0 + "device", "mlx5 0", "node1: rdma_ports[0].device: 'mlx5 0' is not allowed"),
    (P0 + "device", "MLX5_0", "node1: rdma_ports[0].device: 'MLX5_0' is not allowed"),
    (P0 + "device", 5, "node1: rdma_ports[0].device: 5 is not allowed"),
    (P0 + "device", "mlx5_0\n", "node1: rdma_ports[0].device: 'mlx5_0\\n' is not allowed"),
    (P0 + "device", "mlx5_1", "node1: rdma_ports[1].device: 'mlx5_1' is not allowed (allowed: each device once per host)"),
    (P0 + "netdev", "eth0;", "node1: rdma_ports[0].netdev: 'eth0;' is not allowed (allowed: a Linux interface name"),
    (P0 + "netdev", "a" * 16, "node1: rdma_ports[0].netdev: 'aaaaaaaaaaaaaaaa' is not allowed"),
    (P0 + "netdev", ".", "node1: rdma_ports[0].netdev: '.' is not allowed"),
    (P0 + "netdev", "..", "node1: rdma_ports[0].netdev: '..' is not allowed"),
    (P0 + "netdev", "enp\n65", "node1: rdma_ports[0].netdev: 'enp\\n65' is not allowed"),
    (P0 + "netdev", ["eth0"], "node1: rdma_ports[0].netdev: ['eth0'] is not allowed"),
    (P0 + "netdev", "enp81s0f0np0", "node1: rdma_ports[1].netdev: 'enp81s0f0np0' is not allowed (allowed: each netdev once per host)"),
    (P0 + "pci", "41:00.0;x", "node1: rdma_ports[0].pci: '41:00.0;x' is not allowed (allowed: a PCI address"),
    (P0 + "pci", 4100, "node1: rdma_ports[0].pci: 4100 is not allowed"),
    (P0 + "guid", "0xzz", "node1: rdma_ports[0].guid: '0xzz' is not allowed (allowed: a port GUID"),
    (P0 + "vlan", 10, "node1: rdma_ports[0].vlan: 10 is not allowed (unknown key; allowed keys: address, device"),
    # rail addresses: IPv4 host addresses in CIDR, used once
    (
        P0 + "address",
        "192.168.100.0/24",
        "node1: rdma_ports[0].address: '192.168.100.0/24' is not allowed "
        "(allowed: an IPv4 host address with prefix length, such as 192.168.100.11/24; 192.168.100.0 is the network "
        "or broadcast address of 192.168.100.0/24)",
    ),
    (P0 + "address", "192.168.100.255/24", "192.168.100.255 is the network or broadcast address of 192.168.100.0/24"),
    (
        P0 + "address",
        "fd00::1/64",
        "node1: rdma_ports[0].address: 'fd00::1/64' is not allowed (allowed: an IPv4 "
        "host address with prefix length, such as 192.168.100.11/24; rail addresses are IPv4",
    ),
    (
        "hosts.node2.rdma_ports.0.address",
        "192.168.100.1/24",
        "node2: rdma_ports[0].address: '192.168.100.1/24' is not allowed (allowed: an address used once; 192.168.100.1 is already node1 mlx5_0's)",
    ),
    ("hosts.node2.rdma_ports.0.address", "192.168.100.1/16", "192.168.100.1 is already node1 mlx5_0's"),
    (P0 + "address", "192.168.100.1/32", "node1: rdma_ports[0].address: '192.168.100.1/32' is not allowed"),
    (P0 + "address", "192.168.100.300/24", "node1: rdma_ports[0].address: '192.168.100.300/24' is not allowed"),
    (P0 + "address", 3232261121, "node1: rdma_ports[0].address: 3232261121 is not allowed"),
    (P0 + "address", "192.168.100.1/24\nip r", "node1: rdma_ports[0].address: '192.168.100.1/24\\nip r' is not allowed"),
    (P0 + "address", "192.168.100.1", "node1: rdma_ports[0].address: '192.168.100.1' is not allowed"),
    (P0 + "address", ["192.168.100.1/24"], "node1: rdma_ports[0].address: ['192.168.100.1/24'] is not allowed"),
    # rdma_ports shapes and the host stack
    ("hosts.node1.rdma_ports", {}, "node1: rdma_ports: {} is not allowed (allowed: a non-empty list)"),
    ("hosts.node1.rdma_ports", "mlx5_0", "node1: rdma_ports: 'mlx5_0' is not allowed (allowed: a non-empty list)"),
    ("hosts.node1.rdma_ports", [], "node1: rdma_ports: [] is not allowed (allowed: a non-empty list)"),
    ("hosts.node1.rdma_ports.0", "mlx5_0", "node1: rdma_ports[0]: 'mlx5_0' is not allowed (allowed: a mapping"),
    ("hosts.node1.rdma_ports", DELETE, "node1: rdma_ports: None is not allowed"),
    (
        "hosts.node1.mofed_source",
        "inbox",
        "node1: mofed_source: 'inbox' is rejected: the distribution's rdma-core (inbox) has no ibdev2netdev, show_gids or mlnx_qos",
    ),
    ("hosts.node1.mofed_source", "ofed", "node1: mofed_source: 'ofed' is not allowed (allowed: doca | mlnx_ofed)"),
    # switches: uplinks, peers, platforms
    (UP + "peer", ["spine1"], "leaf1: switch_uplinks[0].peer: ['spine1'] is not allowed (allowed: another host of group switches"),
    (UP + "peer", {"spine1": 1}, "leaf1: switch_uplinks[0].peer: {'spine1': 1} is not allowed"),
    (UP + "peer", "leaf1", "leaf1: switch_uplinks[0].peer: 'leaf1' is not allowed"),
    (UP + "peer", "spine9", "leaf1: switch_uplinks[0].peer: 'spine9' is not allowed"),
    (UP + "port", "swp31\nnv set system", "leaf1: switch_uplinks[0].port: 'swp31\\nnv set system' is not allowed"),
    (UP + "port", {"swp31": 1}, "leaf1: switch_uplinks[0].port: {'swp31': 1} is not allowed"),
    (UP + "peer_port", "Ethernet1/1;", "leaf1: switch_uplinks[0].peer_port: 'Ethernet1/1;' is not allowed (allowed: a port name of spine1"),
    (UP + "peer_port", DELETE, "leaf1: switch_uplinks[0].peer_port: None is not allowed (required"),
    (UP + "speed", 400, "leaf1: switch_uplinks[0].speed: 400 is not allowed (unknown key"),
    ("switches.leaf1.switch_uplinks", "swp31", "leaf1: switch_uplinks: 'swp31' is not allowed (allowed: a list"),
    ("switches.leaf1.switch_uplinks", {"port": "swp31"}, "leaf1: switch_uplinks: {'port': 'swp31'} is not allowed"),
    ("switches.leaf1.switch_uplinks.0", ["swp31"], "leaf1: switch_uplinks[0]: ['swp31'] is not allowed (allowed: a mapping"),
    (
        UP + "port",
        "swp1",
        "node1 mlx5_0: switch_port: 'leaf1 swp1' is not allowed (allowed: a switch port cabled once; leaf1 swp1 is already cabled to leaf1 uplink to spine1)",
    ),
    ("switches.leaf1.switch_platform", ["nvue"], "leaf1: switch_platform: ['nvue'] is not allowed (allowed: nvue | sonic | eos)"),
    ("switches.leaf1.switch_platform", None, "leaf1: switch_platform: None is not allowed"),
    ("switches.leaf1.switch_role", "core", "leaf1: switch_role: 'core' is not allowed (allowed: leaf | spine)"),
]

IB_CASES = [
    ("fabric.infiniband.bogus", 1, "fabric.infiniband.bogus: 1 is not allowed (unknown key; allowed keys: subnet_manager)"),
    ("fabric.infiniband", [], "fabric.infiniband: [] is not allowed (allowed: a mapping)"),
    ("fabric.infiniband.subnet_manager", [], "fabric.infiniband.subnet_manager: [] is not allowed (allowed: a mapping)"),
    ("fabric.roce", {}, "fabric.roce: '...' is not allowed (only with fabric.transport: roce"),
    (SM + "log", {"file": "/var/log/opensm.log\nx"}, "subnet_manager.log.file: '/var/log/opensm.log\\nx' is not allowed (allowed: an absolute path"),
    (SM + "log", {"file": "/var/log/../../etc/shadow"}, "subnet_manager.log.file: '/var/log/../../etc/shadow' is not allowed"),
    (SM + "log", {"file": "/../etc/shadow"}, "subnet_manager.log.file: '/../etc/shadow' is not allowed"),
    (SM + "log", {"file": "/var/log/opensm log"}, "subnet_manager.log.file: '/var/log/opensm log' is not allowed"),
    (SM + "log", {"file": "/var/log/" + "o" * 300}, "(309 characters) is not allowed"),
    (SM + "log", [], "subnet_manager.log: [] is not allowed (allowed: a mapping"),
    (SM + "log", {"size": 1}, "subnet_manager.log.size: '(key)' is not allowed (allowed: known keys: file"),
    (SM + "master", ["n1"], "subnet_manager.master: ['n1'] is not allowed (allowed: a host of group subnet_managers"),
    (SM + "partitions.0.name", ["a"], "subnet_manager.partitions[0].name: ['a'] is not allowed"),
    (SM + "partitions.0.name", "a\nb", "subnet_manager.partitions[0].name: 'a\\nb' is not allowed"),
    (SM + "partitions.0.pkey", "0x10\n", "subnet_manager.partitions[0].pkey: '0x10\\n' is not allowed"),
    (SM + "priority", "15\n", "subnet_manager.priority: '15\\n' is not allowed (allowed: integer 0..15)"),
    (SM + "priority", True, "subnet_manager.priority: True is not allowed"),
    (SM + "partitions", "x", "subnet_manager.partitions: 'x' is not allowed (allowed: a list of partitions)"),
    (SM + "routing_engine", ["ftree"], "subnet_manager.routing_engine: ['ftree'] is not allowed"),
    (SM + "root_guids", [["x"]], "subnet_manager.root_guids: ['x'] is not allowed"),
    (SM + "partitions.0.members", [{"a": 1}], "subnet_manager.partitions[0].members: {'a': 1} is not allowed"),
    (SM + "default_partition", {"ipoib": True, "membership": "full", "x": 1}, "subnet_manager.default_partition: "),
    (IP0 + "switch_port", "1", "n1: rdma_ports[0].switch_port: '1' is not allowed (allowed: an InfiniBand switch port number 1..255)"),
    (IP0 + "switch_port", 0, "n1: rdma_ports[0].switch_port: 0 is not allowed"),
    (IP0 + "switch_port", 256, "n1: rdma_ports[0].switch_port: 256 is not allowed"),
    (IP0 + "switch_port", True, "n1: rdma_ports[0].switch_port: True is not allowed"),
    (IP0 + "guid", "0xa088c20300000101\n", "n1: rdma_ports[0].guid: '0xa088c20300000101\\n' is not allowed"),
    ("switches.ibsw1.ib_switch_guid", "0xzz", "ibsw1: ib_switch_guid: '0xzz' is not allowed (allowed: a port GUID"),
    ("switches.ibsw1.switch_platform", "nvue", "ibsw1: switch_platform: 'nvue' is not allowed (allowed: infiniband)"),
]


def test_the_bases_are_valid():
    assert problems_of(ROCE) == []
    assert problems_of(IB) == []


@pytest.mark.parametrize(
    "base,path,value,fragment",
    [(ROCE, *c) for c in ROCE_CASES] + [(IB, *c) for c in IB_CASES],
    ids=[f"roce-{i}" for i in range(len(ROCE_CASES))] + [f"ib-{i}" for i in range(len(IB_CASES))],
)
def test_malformed_inventory_is_named(base, path, value, fragment):
    problems = problems_of(mutate(base, path, value))
    assert problems and all(isinstance(p, str) for p in problems)
    assert any(fragment in p for p in problems), problems


def test_there_are_about_a_hundred_cases():
    assert len(ROCE_CASES) + len(IB_CASES) >= 100


def test_every_problem_at_once_the_subnet_managers_included():
    inv = mutate(IB, "fabric.mtu.host", 9999)
    inv = mutate(inv, SM + "priority", 16)
    inv = mutate(inv, IP0 + "switch_port", "1")
    keys = sorted(p.split(" is not allowed")[0] for p in problems_of(inv))
    assert keys == ["fabric.infiniband.subnet_manager.priority: 16", "fabric.mtu.host: 9999", "n1: rdma_ports[0].switch_port: '1'"]


def test_a_long_value_is_shown_cut():
    msg = problems_of(mutate(ROCE, "fabric.name", "n" * 2000))[0]
    assert len(msg) < 300
    assert msg.startswith("fabric.name: 'nnnn") and "(2000 characters)" in msg


def test_rail_addresses_on_a_31_are_hosts():
    inv = mutate(ROCE, P0 + "address", "10.0.0.0/31")
    inv = mutate(inv, "hosts.node2.rdma_ports.0.address", "10.0.0.1/31")
    assert problems_of(inv) == []


@pytest.mark.parametrize("value", ["mlx5_0", "ibp65s0", "mlx5_bond_0"])
def test_device_names_of_real_hardware_pass(value):
    assert has_format(value, "device")


@pytest.mark.parametrize("value", ["swp1", "swp1s0", "Ethernet0", "Ethernet1/1", "Ethernet1/1/1", "Eth1/1"])
def test_port_names_of_the_three_platforms_pass(value):
    assert has_format(value, "port")


# --- random shapes: only a list of problems, never another exception --------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["roce", "infiniband", "leaf1", "swp1", "mlx5_0", "192.168.100.1/24", "fd00::1/64", "0x1", "inbox"]),
)
keys = st.one_of(
    st.sampled_from(
        [
            "transport",
            "roce",
            "infiniband",
            "subnet_manager",
            "nccl",
            "overrides",
            "verify",
            "mtu",
            "ecn",
            "rdma_ports",
            "switch",
            "switch_port",
            "peer",
            "switch_uplinks",
            "partitions",
            "members",
            "log",
            "file",
            "name",
            "pkey",
            "root_guids",
            "master",
            "device",
            "netdev",
            "address",
            "guid",
        ]
    ),
    st.text(max_size=8),
    st.integers(-3, 3),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)), max_leaves=25)
paths = st.sampled_from(
    [
        "fabric",
        "fabric.transport",
        "fabric.roce",
        "fabric.roce.ecn",
        "fabric.nccl",
        "fabric.nccl.overrides",
        "fabric.verify",
        "fabric.mtu",
        "fabric.name",
        "fabric.link_width",
        "hosts.node1",
        "hosts.node1.rdma_ports",
        "hosts.node1.rdma_ports.0",
        P0 + "switch",
        P0 + "switch_port",
        P0 + "address",
        "switches.leaf1",
        "switches.leaf1.switch_uplinks",
        UP + "peer",
        UP + "port",
        "switches",
        "hosts",
        "sm_hosts",
    ]
)
ib_paths = st.sampled_from(
    [
        "fabric.infiniband",
        "fabric.infiniband.subnet_manager",
        SM + "log",
        SM + "partitions",
        SM + "partitions.0",
        SM + "partitions.0.members",
        SM + "root_guids",
        SM + "master",
        SM + "default_partition",
        "hosts.n1.rdma_ports",
        IP0 + "guid",
        "switches.ibsw1",
        "sm_hosts",
    ]
)


def _answers_with_problems_only(inv):
    problems = problems_of(inv)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)
    return problems


@given(paths, values)
def test_random_shape_in_a_roce_inventory(path, value):
    _answers_with_problems_only(mutate(ROCE, path, value))


@given(ib_paths, values)
def test_random_shape_in_an_infiniband_inventory(path, value):
    _answers_with_problems_only(mutate(IB, path, value))


@given(values, values, values, values)
def test_random_everything(fabric, hosts, switches, sm_hosts):
    problems = schema.validate(fabric, hosts, switches, sm_hosts)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)


def test_nan_is_not_a_number_anywhere():
    assert not is_num(float("nan")) and not is_num(True) and is_num(0.5)
    assert math.isnan(NAN)


class TaggedStr(str):
    """Stands for Ansible's _AnsibleTaggedStr (templated inventory values)."""


class TaggedInt(int):
    pass


class TaggedFloat(float):
    pass


def _tagged(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return TaggedStr(value)
    if isinstance(value, int):
        return TaggedInt(value)
    if isinstance(value, float):
        return TaggedFloat(value)
    if isinstance(value, dict):
        return {_tagged(k): _tagged(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tagged(v) for v in value]
    return value


@pytest.mark.parametrize("base", [ROCE, IB], ids=["roce", "ib"])
def test_subclassed_values_as_ansible_templates_them_are_valid(base):
    assert problems_of(_tagged(base)) == []
    assert problems_of(mutate(_tagged(base), "fabric.link_width", True))[0].startswith("fabric.link_width: True")
