"""The fabric intent: defaults, and every rule that must fail before a change."""

import copy

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import derive, effective, pfc_vector, published
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema

GOOD = {
    "name": "t",
    "transport": "roce",
    "link_speed_gbps": 400,
    "mtu": {"host": 4200, "switch": 9216},
    "roce": {"no_drop_priority": 3, "data_dscp": 26, "cnp_dscp": 48, "cnp_priority": 6, "ecn": {"min_threshold_kb": 150, "max_threshold_kb": 1500}},
}
# leaf2 (SONiC) at 400G: sonic-swss's pg_profile_lookup.ini stops at 100G, so the site gives its
# platform's 400G row (the lab's, inventory/lab/group_vars/switches/main.yml); without it the
# intent is refused (tests/unit/intent/test_cabling.py)
SONIC_400G = {400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}}
SWITCHES = {"leaf1": {"switch_platform": "nvue"}, "leaf2": {"switch_platform": "sonic", "switch_sonic_pg_lookup": SONIC_400G}}
HOSTS = {
    "node1": {
        "rdma_ports": [
            {"device": "mlx5_0", "netdev": "enp65s0f0np0", "switch": "leaf1", "switch_port": "swp1"},
            {"device": "mlx5_1", "netdev": "enp81s0f0np0", "switch": "leaf2", "switch_port": "Ethernet0"},
        ]
    },
    "node2": {"rdma_ports": [{"device": "mlx5_0", "netdev": "enp65s0f0np0", "switch": "leaf1", "switch_port": "swp2"}]},
}


def with_(path, value, base=GOOD):
    f = copy.deepcopy(base)
    cur = f
    keys = path.split(".")
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    cur[keys[-1]] = value
    return f


def one_problem(fabric, hosts=HOSTS, switches=SWITCHES):
    problems = schema.validate(fabric, hosts, switches)
    assert len(problems) == 1, problems
    return problems[0]


def test_good_intent_has_no_problem():
    assert schema.validate(GOOD, HOSTS, SWITCHES) == []


def test_effective_fills_defaults_and_drops_other_transport():
    eff = effective({"transport": "roce"})
    assert eff["roce"]["no_drop_priority"] == 3
    assert eff["verify"]["ib_write_bw_fraction"] == 0.90
    assert "infiniband" not in eff
    assert "roce" not in effective({"transport": "infiniband"})


@pytest.mark.parametrize(
    "path,value,key,allowed",
    [
        ("roce.no_drop_priority", 8, "fabric.roce.no_drop_priority", "0..7"),
        ("roce.no_drop_priority", -1, "fabric.roce.no_drop_priority", "0..7"),
        ("roce.cnp_priority", "6", "fabric.roce.cnp_priority", "0..7"),
        ("roce.data_dscp", 64, "fabric.roce.data_dscp", "0..63"),
        ("roce.cnp_dscp", -3, "fabric.roce.cnp_dscp", "0..63"),
        ("roce.trust", "cos", "fabric.roce.trust", "dscp | pcp"),
        ("transport", "ethernet", "fabric.transport", "roce | infiniband"),
        ("link_speed_gbps", 300, "fabric.link_speed_gbps", "400"),
        ("roce.gid_type", "v1", "fabric.roce.gid_type", "v2"),
        ("nccl.gdr_level", "ANY", "fabric.nccl.gdr_level", "PHB"),
    ],
)
def test_out_of_range_values_name_key_value_and_allowed(path, value, key, allowed):
    msg = one_problem(with_(path, value))
    assert msg.startswith(key + ": "), msg
    assert repr(value) in msg
    assert allowed in msg


def test_nccl_override_not_named_nccl():
    msg = one_problem(with_("nccl.overrides", {"IB_HCA": "mlx5"}))
    assert msg == "fabric.nccl.overrides.IB_HCA: 'mlx5' is not allowed (allowed: keys named NCCL_*)"


def test_host_mtu_above_switch_mtu():
    msg = one_problem(with_("mtu", {"host": 9216, "switch": 4200}))
    assert msg.startswith("fabric.mtu.host: 9216")
    assert "fabric.mtu.switch (4200)" in msg


def test_ecn_min_not_below_max():
    msg = one_problem(with_("roce.ecn", {"min_threshold_kb": 1500, "max_threshold_kb": 1500}))
    assert msg.startswith("fabric.roce.ecn.min_threshold_kb: 1500")
    assert "below fabric.roce.ecn.max_threshold_kb (1500)" in msg


def test_cnp_priority_equal_to_data_priority():
    msg = one_problem(with_("roce.cnp_priority", 3))
    assert msg.startswith("fabric.roce.cnp_priority: 3")
    assert "except fabric.roce.no_drop_priority (3)" in msg


def test_threshold_above_line_rate():
    msg = one_problem(with_("verify", {"ib_write_bw_fraction": 1.2}))
    assert msg.startswith("fabric.verify.ib_write_bw_fraction: 1.2")
    assert "above the line rate of 400 Gb/s" in msg


@pytest.mark.parametrize("speed", ["400", None, [400]])
def test_threshold_above_one_with_a_wrong_link_speed_is_two_problems_not_a_crash(speed):
    """A link speed that is not a number is its own problem; the fraction above 1 still is one (no product)."""
    f = with_("verify", {"ib_write_bw_fraction": 1.2}, with_("link_speed_gbps", speed))
    problems = schema.validate(f, HOSTS, SWITCHES)
    assert any(m.startswith("fabric.link_speed_gbps: ") for m in problems), problems
    (frac,) = [m for m in problems if m.startswith("fabric.verify.ib_write_bw_fraction")]
    assert frac == ("fabric.verify.ib_write_bw_fraction: 1.2 is not allowed (allowed: at most 1.0 (a fraction of the line rate))"), frac


def test_roce_keys_under_infiniband_and_the_reverse():
    ib = {"transport": "infiniband", "roce": {"no_drop_priority": 3}}
    msg = one_problem(ib, hosts={}, switches={})
    assert msg.startswith("fabric.roce: ") and "only with fabric.transport: roce" in msg
    msg = one_problem(with_("infiniband", {"subnet_manager": {"priority": 15}}), hosts={}, switches={})
    assert msg.startswith("fabric.infiniband: ") and "only with fabric.transport: infiniband" in msg


def test_unknown_key_is_named():
    msg = one_problem(with_("roce.no_drop_prio", 3))
    assert msg.startswith("fabric.roce.no_drop_prio: 3 is not allowed (unknown key")
    assert "no_drop_priority" in msg


def test_two_hosts_on_one_switch_port():
    hosts = copy.deepcopy(HOSTS)
    hosts["node2"]["rdma_ports"][0]["switch_port"] = "swp1"
    msg = one_problem(GOOD, hosts=hosts)
    assert "node2 mlx5_0: switch_port: 'leaf1 swp1'" in msg
    assert "already cabled to node1 mlx5_0" in msg


def test_unknown_switch_platform():
    msg = one_problem(GOOD, switches={**SWITCHES, "leaf1": {"switch_platform": "junos"}})
    assert msg.startswith("leaf1: switch_platform: 'junos'")
    assert "nvue | sonic | eos" in msg


def test_port_cabled_to_a_switch_not_in_inventory():
    hosts = copy.deepcopy(HOSTS)
    hosts["node2"]["rdma_ports"][0]["switch"] = "leaf9"
    msg = one_problem(GOOD, hosts=hosts)
    assert msg.startswith("node2: rdma_ports[0].switch: 'leaf9'")
    assert "leaf1, leaf2" in msg


def test_host_without_cabling():
    msg = one_problem(GOOD, hosts={"node3": {}})
    assert msg.startswith("node3: rdma_ports: None")


def test_bad_rail_address():
    hosts = copy.deepcopy(HOSTS)
    hosts["node1"]["rdma_ports"][0]["address"] = "192.168.100.11"
    msg = one_problem(GOOD, hosts=hosts)
    assert msg.startswith("node1: rdma_ports[0].address: '192.168.100.11'")


def test_every_problem_reported_at_once():
    bad = with_("roce.no_drop_priority", 9, with_("mtu.host", 9999))
    problems = schema.validate(bad, HOSTS, SWITCHES)
    keys = sorted(p.split(":")[0] for p in problems)
    assert keys == ["fabric.mtu.host", "fabric.roce.no_drop_priority"]


def test_undefined_fabric():
    assert schema.validate(None)[0].startswith("fabric: the variable is not defined")


def test_derived_values():
    d = derive(effective({}))
    assert d["tos"] == 104 and d["pfc_priorities"] == [3]
    assert d["dscp2prio"] == {"26": 3, "48": 6}
    assert d["cc_prio_mask"] == 255 and d["cnp_dscp"] == 48 and d["cnp_priority"] == 6
    # published only where a layer reads it (issue 29 item 3): the vector is the module's, the GID is discovered
    assert "pfc_vector" not in d and "gid_policy" not in d
    assert d["line_rate_gbps"] == 400 and d["ib_write_bw_min_gbps"] == 360 and d["nccl_busbw_min_gbytes_per_nic"] == 40


def test_infiniband_switches_are_unmanaged():
    ib = {"transport": "infiniband", "infiniband": {"subnet_manager": {"routing_engine": "minhop"}}}
    hosts = {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "ibp65s0", "switch": "ibsw1", "switch_port": 1}]}}
    assert schema.validate(ib, hosts, {"ibsw1": {"switch_platform": "infiniband"}}) == []
    msg = one_problem(ib, hosts=hosts, switches={"ibsw1": {"switch_platform": "nvue"}})
    assert msg.startswith("ibsw1: switch_platform: 'nvue'") and "infiniband" in msg
    bad = {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "ibp65s0", "switch": "ibsw1", "switch_port": "swp1"}]}}
    msg = one_problem(ib, hosts=bad, switches={"ibsw1": {"switch_platform": "infiniband"}})
    assert "InfiniBand switch port number" in msg


def test_infiniband_subnet_manager_checked_with_the_cabling():
    ib = {
        "transport": "infiniband",
        "infiniband": {
            "subnet_manager": {"routing_engine": "minhop", "partitions": [{"name": "p", "pkey": "0x8001", "members": ["n1"], "membership": "full"}]}
        },
    }
    hosts = {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "ibp65s0", "switch": "ibsw1", "switch_port": 1, "guid": "0xa088c20300000101"}]}}
    problems = schema.validate(ib, hosts, {"ibsw1": {"switch_platform": "infiniband"}}, ["n1"])
    assert len(problems) == 1 and "partitions[0].pkey: '0x8001' is not allowed" in problems[0], problems


def test_effective_names_the_master_sm():
    ib = {"transport": "infiniband"}
    assert effective(ib, ["sm1", "sm2"])["infiniband"]["subnet_manager"]["master"] == "sm1"
    chosen = dict(ib, infiniband={"subnet_manager": {"master": "sm2"}})
    assert effective(chosen, ["sm1", "sm2"])["infiniband"]["subnet_manager"]["master"] == "sm2"
    assert "infiniband" not in effective({"transport": "roce"}, ["sm1"])


def test_effective_on_infiniband_keeps_a_chosen_master_and_the_roce_block_only_when_given():
    sm = effective({"transport": "infiniband"}, ("sm1",))["infiniband"]["subnet_manager"]
    assert sm == dict(infiniband.DEFAULTS, master="sm1")
    assert effective({"transport": "infiniband"}, ())["infiniband"] == {"subnet_manager": infiniband.DEFAULTS}
    # a chosen master is kept
    assert (
        effective({"transport": "infiniband", "infiniband": {"subnet_manager": {"master": "sm2"}}}, ("sm1",))["infiniband"]["subnet_manager"]["master"] == "sm2"
    )
    assert "roce" in effective({"transport": "infiniband", "roce": {}})
    assert effective(None)["transport"] == "roce"


def test_effective_merges_the_subnet_manager_defaults_once():
    """Role ib_subnet_manager restates none of them (issue 29 item 3): every one comes from here."""
    given = {
        "transport": "infiniband",
        "infiniband": {"subnet_manager": {"priority": 12, "log": {"flags": 7}, "default_partition": {"ipoib": False}, "partitions": [{"name": "p"}]}},
    }
    sm = effective(given, ("a", "b"))["infiniband"]["subnet_manager"]
    assert sm == {
        "priority": 12,
        "standby_priority": 14,
        "master": "a",
        "routing_engine": "ftree",
        "root_guids": [],
        "lmc": 0,
        "sweep_interval": 10,
        "partitions": [{"name": "p"}],
        "log": {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 7, "verbose": False},
        "default_partition": {"ipoib": False, "membership": "full"},
    }
    # nothing shared with the defaults or the input
    sm["root_guids"].append("0x1")
    sm["log"]["flags"] = 1
    assert infiniband.DEFAULTS["root_guids"] == [] and infiniband.DEFAULTS["log"]["flags"] == 3
    assert given["infiniband"]["subnet_manager"]["log"] == {"flags": 7}
    # a subnet_manager that is not a mapping is left for validate to report
    assert effective({"transport": "infiniband", "infiniband": {"subnet_manager": "x"}})["infiniband"]["subnet_manager"] == "x"
    assert schema.validate_fabric({"transport": "infiniband", "infiniband": {"subnet_manager": "x"}}) is not None


def test_derived_helpers():
    assert pfc_vector([0, 7]) == [1, 0, 0, 0, 0, 0, 0, 1]
    assert pfc_vector([]) == [0] * 8
    eff = effective(
        {
            "link_speed_gbps": 200,
            "verify": {"ib_write_bw_fraction": 0.95},
            "roce": {"data_dscp": 48, "cnp_dscp": 46, "no_drop_priority": 5, "ecn": {"enabled": False}},
        }
    )
    d = derive(eff)
    assert d["tos"] == 192 and d["pfc_priorities"] == [5]
    assert d["dscp2prio"] == {"48": 5, "46": 6}
    assert d["cc_prio_mask"] == 255 - 32  # ECN off: the no-drop priority's bit cleared
    assert d["ib_write_bw_min_gbps"] == 190 and d["nccl_busbw_min_gbytes_per_nic"] == 20
    assert published({"link_speed_gbps": 200})["derived"]["line_rate_gbps"] == 200


def test_derived_infiniband_has_the_same_keys_without_roce_values():
    ib = derive(effective({"transport": "infiniband"}))
    assert set(ib) == set(derive(effective({})))
    assert ib["tos"] is None and ib["cc_prio_mask"] is None
    assert ib["dscp2prio"] == {} and ib["pfc_priorities"] == []


# ---------------------------------------------------------------- the fabric tree's limits at their edges
# A value at each end of a range passes and one past it fails, with the exact problem (the limits in
# schema.py); the variables' edges: test_variables.py.


def fabric_with(**paths):
    """GOOD with each dotted path (``verify.latency_us_max``) set to its value."""
    f = copy.deepcopy(GOOD)
    for path, value in paths.items():
        node, *keys = [f] + path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return schema.validate_fabric(f)


@pytest.mark.parametrize(
    "paths,problems",
    [
        ({"verify.latency_us_max": 1000}, []),
        (
            {"verify.latency_us_max": 0},
            [
                "fabric.verify.latency_us_max: 0 is not allowed (allowed: a number of microseconds, 0 < x <= 1000 "
                "(ib_write_lat's average one-way latency a pair may show), or null for the transport's default (RoCE 5.0, "
                "InfiniBand 3.0))"
            ],
        ),
        ({"roce.ecn.min_threshold_kb": 1499, "roce.ecn.max_threshold_kb": 1500}, []),
        (
            {"roce.ecn.min_threshold_kb": 1500, "roce.ecn.max_threshold_kb": 1500},
            ["fabric.roce.ecn.min_threshold_kb: 1500 is not allowed (allowed: below fabric.roce.ecn.max_threshold_kb (1500))"],
        ),
        (
            {"verify.ib_error_thresholds": {"Bogus": 1}},
            [
                "fabric.verify.ib_error_thresholds.Bogus: 1 is not allowed (unknown counter; allowed: SymbolErrorCounter, "
                "LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors, PortRcvRemotePhysicalErrors, "
                "PortRcvSwitchRelayErrors, PortXmitDiscards, PortXmitConstraintErrors, PortRcvConstraintErrors, "
                "LocalLinkIntegrityErrors, ExcessiveBufferOverrunErrors, VL15Dropped)"
            ],
        ),
        ({"remediation.drain_severities": ["error", "warning"]}, []),
        ({"remediation.drain_severities": ["fatal"]}, ["fabric.remediation.drain_severities: ['fatal'] is not allowed (allowed: a list of error | warning)"]),
    ],
)
def test_fabric_limits_at_their_edges(paths, problems):
    assert fabric_with(**paths) == problems


@pytest.mark.parametrize(
    "paths,problems",
    [
        ({"rollout.batch": 1}, []),
        ({"verify.full_plan_max_nodes": 2}, []),
        (
            {"remediation.drain": True, "remediation.scheduler": "none"},
            [
                "fabric.remediation.scheduler: 'none' is not allowed (allowed: slurm | kubernetes when "
                "fabric.remediation.drain is true (a drain needs a scheduler to take the node out of))"
            ],
        ),
        ({"roce.ecn.max_threshold_kb": 0}, ["fabric.roce.ecn.max_threshold_kb: 0 is not allowed (allowed: an integer 1..100000)"]),
        (
            {"nccl.overrides": {"NCCL_IB_TIMEOUT": [22]}},
            [
                "fabric.nccl.overrides.NCCL_IB_TIMEOUT: [22] is not allowed (allowed: a string of at most 256 letters, "
                "digits and _ . , : = ^ + / @ -, or a finite number)"
            ],
        ),
    ],
)
def test_more_fabric_edges(paths, problems):
    assert fabric_with(**paths) == problems


def test_the_latency_bound_of_each_transport():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published

    assert [published({"transport": t, "link_speed_gbps": 400})["derived"]["latency_max_usec"] for t in ("roce", "infiniband")] == [5.0, 3.0]
