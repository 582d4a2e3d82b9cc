"""The tables the validator checks against, asserted exactly: every allowed
value passes, the message lists exactly the allowed values, and the defaults
are the documented ones."""
import copy

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS, effective
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema

HOSTS = {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "swp1"}]}}
SWITCHES = {"sw1": {"switch_platform": "nvue"}}


def problems(fabric, hosts=HOSTS, switches=SWITCHES):
    return schema.validate(fabric, hosts, switches)


@pytest.mark.parametrize("key,values,allowed", [
    ("link_speed_gbps", (10, 20, 25, 40, 50, 56, 100, 200, 400, 800),
     "10 | 20 | 25 | 40 | 50 | 56 | 100 | 200 | 400 | 800"),
    ("link_width", (1, 2, 4, 8), "1 | 2 | 4 | 8"),
])
def test_every_allowed_number_passes_and_the_message_lists_them(key, values, allowed):
    for v in values:
        assert problems({"transport": "roce", key: v}) == [], v
    assert problems({"transport": "roce", key: 3}) == [f"fabric.{key}: 3 is not allowed (allowed: {allowed})"]


@pytest.mark.parametrize("path,values,allowed", [
    (("nccl", "gdr_level"), ("auto", "LOC", "PIX", "PXB", "PHB", "SYS"), "auto | LOC | PIX | PXB | PHB | SYS"),
    (("roce", "trust"), ("dscp", "pcp"), "dscp | pcp"),
    (("roce", "gid_type"), ("v2",), "v2"),
])
def test_every_allowed_word_passes_and_the_message_lists_them(path, values, allowed):
    block, key = path
    for v in values:
        assert problems({"transport": "roce", block: {key: v}}) == [], v
    assert problems({"transport": "roce", block: {key: "x"}}) == [
        f"fabric.{block}.{key}: 'x' is not allowed (allowed: {allowed})"]


def test_transports():
    assert problems({"transport": "x"}) == ["fabric.transport: 'x' is not allowed (allowed: roce | infiniband)"]


def test_switch_platforms_and_roles():
    for platform in ("nvue", "sonic", "eos"):
        for role in ("leaf", "spine"):
            # SONiC at the default 400G with the platform's headroom row (sonic-swss's stops at 100G)
            headroom = {"switch_sonic_pg_lookup": {400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}}} if platform == "sonic" else {}
            assert problems({"transport": "roce"}, switches={"sw1": {"switch_platform": platform,
                                                                     "switch_role": role, **headroom}}) == []
    assert problems({"transport": "roce"}, switches={"sw1": {"switch_platform": "x", "switch_role": "x"}}) == [
        "sw1: switch_platform: 'x' is not allowed (allowed: nvue | sonic | eos)",
        "sw1: switch_role: 'x' is not allowed (allowed: leaf | spine)"]


def test_host_mtu_bounds():
    assert problems({"transport": "roce", "mtu": {"host": 1280, "switch": 9216}}) == []
    assert problems({"transport": "roce", "mtu": {"host": 9216, "switch": 9216}}) == []
    assert problems({"transport": "roce", "mtu": {"host": 1279, "switch": 9217}}) == [
        "fabric.mtu.host: 1279 is not allowed (allowed: an integer 1280..9216)",
        "fabric.mtu.switch: 9217 is not allowed (allowed: an integer 1280..9216)"]


def test_the_defaults_are_the_documented_ones():
    assert effective({}) == {
        "name": "fabric", "transport": "roce", "link_speed_gbps": 400, "link_width": 4,
        "mtu": {"host": 4200, "switch": 9216},
        "roce": {"trust": "dscp", "no_drop_priority": 3, "data_dscp": 26, "cnp_dscp": 48, "cnp_priority": 6,
                 "gid_type": "v2",
                 "ecn": {"enabled": True, "min_threshold_kb": 150, "max_threshold_kb": 1500,
                         "probability_percent": 100}},
        "nccl": {"socket_ifname": "eth0", "gdr_level": "auto", "overrides": {}},
        "verify": {"ib_write_bw_fraction": 0.90, "nccl_busbw_fraction": 0.80, "link_errors_max": 0,
                   "link_flaps_max": 0, "effective_ber_max": 1e-12, "raw_ber_max": 2.4e-4,
                   "optic_rx_power_margin_db": 0.0, "optic_temp_margin_c": 0.0, "ib_error_thresholds": {},
                   "full_plan_max_nodes": 16, "latency_us_max": None},
        "firmware": {"profile": "default"},
        "rollout": {"max_unavailable": "10%", "canary": 1, "max_fail_percentage": 0,
                    "spread": ["leaf", "rack", "nvlink_domain"], "slow_start": True, "batch": None},
        "remediation": {"drain": False, "scheduler": "none", "drain_codes": [], "drain_severities": ["error"],
                        "exempt_codes": [], "return_to_service": True,
                        "attribution": {"min_nodes": 2, "min_share_percent": 50},
                        "budget": {"max_nodes_per_run": 10, "max_percent_per_run": 5, "window_hours": 24,
                                   "max_nodes_per_window": 20, "max_percent_per_window": 10}},
    }


def test_effective_leaves_the_input_alone():
    given = {"transport": "roce", "roce": {"ecn": {"enabled": False}}}
    before = copy.deepcopy(given)
    eff = effective(given)
    eff["roce"]["ecn"]["enabled"] = True
    assert given == before and DEFAULTS["roce"]["ecn"]["enabled"] is True
