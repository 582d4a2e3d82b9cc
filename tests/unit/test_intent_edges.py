"""The intent's limits at their edges: a value at each end of a range passes and one past it fails,
with the exact problem (the fabric tree's limits in schema.py, a variable's in its rule). The rule
table (intent/test_rules_hosts.py, test_rules_fabric.py) pins what each variable refuses; these pin what it still accepts."""
import copy

import pytest

from intent.test_fabric import GOOD

from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables


def fabric_with(**paths):
    """GOOD with each dotted path (``verify.latency_us_max``) set to its value."""
    f = copy.deepcopy(GOOD)
    for path, value in paths.items():
        node, *keys = [f] + path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return schema.validate_fabric(f)


@pytest.mark.parametrize("paths,problems", [
    ({"verify.latency_us_max": 1000}, []),
    ({"verify.latency_us_max": 0}, [
        "fabric.verify.latency_us_max: 0 is not allowed (allowed: a number of microseconds, 0 < x <= 1000 "
        "(ib_write_lat's average one-way latency a pair may show), or null for the transport's default (RoCE 5.0, "
        "InfiniBand 3.0))"]),
    ({"roce.ecn.min_threshold_kb": 1499, "roce.ecn.max_threshold_kb": 1500}, []),
    ({"roce.ecn.min_threshold_kb": 1500, "roce.ecn.max_threshold_kb": 1500}, [
        "fabric.roce.ecn.min_threshold_kb: 1500 is not allowed (allowed: below fabric.roce.ecn.max_threshold_kb "
        "(1500))"]),
    ({"verify.ib_error_thresholds": {"Bogus": 1}}, [
        "fabric.verify.ib_error_thresholds.Bogus: 1 is not allowed (unknown counter; allowed: SymbolErrorCounter, "
        "LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors, PortRcvRemotePhysicalErrors, "
        "PortRcvSwitchRelayErrors, PortXmitDiscards, PortXmitConstraintErrors, PortRcvConstraintErrors, "
        "LocalLinkIntegrityErrors, ExcessiveBufferOverrunErrors, VL15Dropped)"]),
    ({"remediation.drain_severities": ["error", "warning"]}, []),
    ({"remediation.drain_severities": ["fatal"]}, [
        "fabric.remediation.drain_severities: ['fatal'] is not allowed (allowed: a list of error | warning)"]),
])
def test_fabric_limits_at_their_edges(paths, problems):
    assert fabric_with(**paths) == problems


@pytest.mark.parametrize("key,value", [
    ("verify_fabric_nccl_tune_margin_percent", 0.5), ("verify_fabric_nccl_tune_margin_percent", 100),
    ("verify_fabric_nccl_tune_margin_percent", "2.5"),
    ("roce_qos_pfc_priorities", list(range(8))),
    ("verify_fabric_nccl_tune_candidates", [{"algorithm": a, "protocol": p} for a in ("Ring", "Tree", "PAT", "NVLS")
                                            for p in ("LL", "LL128", "Simple")] * 2 + [{"algorithm": "Ring",
                                                                                        "protocol": "LL"}] * 8),
    ("verify_fabric_nccl_tune_scales", [2, 3]), ("verify_fabric_nccl_tune_scales", []),
    ("mofed_repo_url", "file:///srv/mofed/ubuntu22.04"), ("mofed_repo_url", "copy:///srv/mofed"),
])
def test_a_value_at_the_end_of_its_range_passes(key, value):
    assert variables.validate_host({key: value}) == []


@pytest.mark.parametrize("key,value,allowed", [
    ("verify_fabric_nccl_tune_margin_percent", 0.4, "a number 0.5..100 percent a candidate must beat NCCL's pick by"),
    ("verify_fabric_nccl_tune_scales", [1, 4], "empty (2 and all nodes) or a list of two or more distinct node counts, "
                                               "each >= 2 (a winner must hold at two scales)"),
    ("verify_fabric_nccl_tune_scales", [4], "empty (2 and all nodes) or a list of two or more distinct node counts, "
                                            "each >= 2 (a winner must hold at two scales)"),
    ("roce_qos_pfc_priorities", [0, 1, 2, 3, 4, 5, 6, 7, 3], "a list of priorities 0..7"),
])
def test_a_value_past_the_end_of_its_range_fails(key, value, allowed):
    assert variables.validate_host({key: value}) == [f"{key}: {value!r} is not allowed (allowed: {allowed})"]


def test_more_senders_or_tuning_values_than_allowed_fail():
    assert len(variables.validate_host({"verify_fabric_incast_senders": [f"n{i}" for i in range(1024)]})) == 1
    ring = {"algorithm": "Ring", "protocol": "LL"}
    (problem,) = variables.validate_host({"verify_fabric_nccl_tune_candidates": [ring] * 33})
    assert problem.startswith("verify_fabric_nccl_tune_candidates: [{'algorithm': 'Ring', 'protocol': 'LL'}, ")
    assert problem.endswith("is not allowed (allowed: a list of {algorithm, protocol} of 1..32 entries)")
    assert variables.validate_host({"verify_fabric_nccl_tune_candidates": [{"algorithm": "Ring", "protocol": "LL256"}]}) == [
        "verify_fabric_nccl_tune_candidates[0]: {'algorithm': 'Ring', 'protocol': 'LL256'} is not allowed (allowed: "
        "protocol 'LL256' is not one of LL, LL128, Simple; allowed: {algorithm: Tree | Ring | CollNetDirect | "
        "CollNetChain | NVLS | NVLSTree | PAT, protocol: LL | LL128 | Simple})"]


# ---------------------------------------------------------------- seed-47 survivors

@pytest.mark.parametrize("paths,problems", [
    ({"rollout.batch": 1}, []),
    ({"verify.full_plan_max_nodes": 2}, []),
    ({"remediation.drain": True, "remediation.scheduler": "none"}, [
        "fabric.remediation.scheduler: 'none' is not allowed (allowed: slurm | kubernetes when "
        "fabric.remediation.drain is true (a drain needs a scheduler to take the node out of))"]),
    ({"roce.ecn.max_threshold_kb": 0}, [
        "fabric.roce.ecn.max_threshold_kb: 0 is not allowed (allowed: an integer 1..100000)"]),
    ({"nccl.overrides": {"NCCL_IB_TIMEOUT": [22]}}, [
        "fabric.nccl.overrides.NCCL_IB_TIMEOUT: [22] is not allowed (allowed: a string of at most 256 letters, "
        "digits and _ . , : = ^ + / @ -, or a finite number)"]),
])
def test_more_fabric_edges(paths, problems):
    assert fabric_with(**paths) == problems


def test_the_latency_bound_of_each_transport():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
    assert [published({"transport": t, "link_speed_gbps": 400})["derived"]["latency_max_usec"]
            for t in ("roce", "infiniband")] == [5.0, 3.0]


@pytest.mark.parametrize("values,problems", [
    ({"verify_fabric_nccl_max_bytes": "512M"},      # the default minimum (1G) is above it
     ["verify_fabric_nccl_min_bytes: '1G' is not allowed (allowed: at most verify_fabric_nccl_max_bytes (512M))"]),
    ({"mofed_meta_package_by_source": {"doca": 5}},
     ["mofed_meta_package_by_source.doca: 5 is not allowed (allowed: a mapping with name and version)"]),
    ({"switch_fabric_extra_ports": [{"name": "swp9", "color": "red"}]},
     ["switch_fabric_extra_ports[0].color: 'red' is not allowed (allowed: unknown key; allowed keys: name, peer, "
      "speed_gbps)"]),
])
def test_more_variable_problems_exact(values, problems):
    assert variables.validate_host(values) == problems
