"""Incast phase: lossless proof by counters (incast.incast_findings) and its test plan filter."""

from ansible_collections.linerate.fabric.plugins.filter.verify import verify_incast_tests
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast

INTENT = {"transport": "roce", "link_speed_gbps": 400, "roce": {"no_drop_priority": 3}, "verify": {"ib_write_bw_fraction": 0.9}}
FABRIC = published(INTENT)
PORTS = [{"device": "mlx5_0", "netdev": "eth1"}, {"device": "mlx5_1", "netdev": "eth2"}]
NODES = ["node1", "node2", "node3", "node4"]
CABLING = cabling.cabling_index(
    {
        n: [{"device": "mlx5_0", "switch": "leaf1", "switch_port": f"swp{i + 1}"}, {"device": "mlx5_1", "switch": "leaf2", "switch_port": f"swp{i + 1}"}]
        for i, n in enumerate(NODES)
    }
)


def ethtool(**c):
    """mlx5 'ethtool -S' listing (layout of mlx5_core: 'NIC statistics:' then '     name: value')."""
    names = [f"{d}_prio{p}_{w}" for p in range(8) for d in ("rx", "tx") for w in ("pause", "packets")]
    names += [f"rx_prio{p}_discards" for p in range(8)]
    return "NIC statistics:\n" + "".join(f"     {n}: {c.get(n, 0)}\n" for n in names)


def phase(gbps=None, pauses=None, extra=None, drop=()):
    """node1 receives from node2..4 on both rails; gbps/pauses per (node, device)."""
    gbps, pauses, extra = gbps or {}, pauses or {}, extra or {}
    out = {}
    for n in NODES:
        counters = {}
        for p in PORTS:
            after = {"rx_prio3_pause": pauses.get((n, p["device"]), 100 if n != "node1" else 0)}
            after.update(extra.get((n, p["device"]), {}))
            text = ethtool(**after)
            if (n, p["device"]) in drop:
                text = "\n".join(ln for ln in text.splitlines() if "prio3_pause" not in ln)
            counters[p["device"]] = [ethtool(), text]
        results = [] if n == "node1" else [{"device": p["device"], "gbps": gbps.get((n, p["device"]), 128.0), "error": None} for p in PORTS]
        out[n] = {"receiver": "node1", "senders": NODES[1:], "results": results, "counters": counters}
    return out


def test_healthy_incast_has_no_finding_and_evidence_per_rail():
    f, rails = incast.incast_findings(phase(), FABRIC, CABLING)
    assert f == []
    assert [(r["device"], r["k"], r["pause"]["node2"]) for r in rails] == [("mlx5_0", 3, 100), ("mlx5_1", 3, 100)]
    assert rails[0]["threshold_gbps"] == 120.0


def test_one_sender_without_pfc_is_named_with_its_switch_port():
    f, _ = incast.incast_findings(phase(gbps={("node4", "mlx5_0"): 45.0}, pauses={("node4", "mlx5_0"): 0}), FABRIC, CABLING)
    assert [(x["code"], x["node"], x["device"], x["switch"], x["switch_port"]) for x in f] == [("INCAST_GOODPUT_LOW", "node4", "mlx5_0", "leaf1", "swp4")]


def test_no_pause_at_full_goodput_is_still_an_error_on_a_lossless_intent():
    f, _ = incast.incast_findings(phase(pauses={("node3", "mlx5_1"): 0}), FABRIC, CABLING)
    assert [(x["code"], x["node"], x["device"]) for x in f] == [("INCAST_NO_PAUSE", "node3", "mlx5_1")]
    ib = published(dict(INTENT, transport="infiniband"))
    assert incast.incast_findings(phase(pauses={("node3", "mlx5_1"): 0}), ib, CABLING)[0] == []


def test_every_flow_failing_blames_the_receiver():
    bad = {(n, "mlx5_1"): 40.0 for n in NODES[1:]}
    f, _ = incast.incast_findings(phase(gbps=bad, pauses={k: 0 for k in bad}), FABRIC, CABLING)
    assert [(x["code"], x["node"], x["device"], x["switch_port"]) for x in f] == [("INCAST_NO_PAUSE", "node1", "mlx5_1", "swp1")]


def test_pause_on_another_priority_and_drops_on_the_no_drop_one():
    f, _ = incast.incast_findings(phase(extra={("node2", "mlx5_0"): {"rx_prio0_pause": 7}, ("node1", "mlx5_1"): {"rx_prio3_discards": 5}}), FABRIC, CABLING)
    got = sorted((x["code"], x["node"], x["device"]) for x in f)
    assert got == [("INCAST_DROPS", "node1", "mlx5_1"), ("INCAST_PAUSE_WRONG_PRIORITY", "node2", "mlx5_0")]
    assert "rx_prio0_pause +7" in next(x for x in f if x["code"] == "INCAST_PAUSE_WRONG_PRIORITY")["message"]


def test_a_counter_the_driver_lacks_is_a_warning_naming_it_never_a_pass_or_crash():
    f, _ = incast.incast_findings(phase(drop={("node2", "mlx5_0")}), FABRIC, CABLING)
    missing = [x for x in f if x["code"] == "COUNTER_MISSING"]
    assert {x["counter"] for x in missing} == {"rx_prio3_pause", "tx_prio3_pause"}
    assert all(x["severity"] == "warning" and x["node"] == "node2" for x in missing)
    # without the pause counter the sender's pauses read 0: the lossless proof fails loudly too
    assert ("INCAST_NO_PAUSE", "node2") in {(x["code"], x["node"]) for x in f}
    garbage = phase()
    garbage["node3"]["counters"]["mlx5_0"][1] = "ethtool: bad command line"
    f, _ = incast.incast_findings(garbage, FABRIC, CABLING)
    assert ("COUNTER_MISSING", "node3", "mlx5_0") in {(x["code"], x["node"], x["device"]) for x in f}


def test_incast_test_plan_ports_never_collide():
    senders = ["node2", "node3", "node4"]
    rx = verify_incast_tests(PORTS, 18615, senders, "node1")
    assert [(t["device"], t["tcp_port"]) for t in rx] == [
        ("mlx5_0", 18615),
        ("mlx5_1", 18616),
        ("mlx5_0", 18631),
        ("mlx5_1", 18632),
        ("mlx5_0", 18647),
        ("mlx5_1", 18648),
    ]
    tx = verify_incast_tests(PORTS, 18615, senders, "node3", "10.0.0.1")
    assert [(t["device"], t["tcp_port"], t["server"]) for t in tx] == [("mlx5_0", 18631, "10.0.0.1"), ("mlx5_1", 18632, "10.0.0.1")]
    assert verify_incast_tests(PORTS, 18615, senders, "node9", "10.0.0.1") == []


def test_infiniband_incast_checks_goodput_without_pfc_counters():
    ib = published(dict(INTENT, transport="infiniband"))
    ph = phase(gbps={("node2", "mlx5_1"): 40.0})
    for n in ph.values():
        n["counters"], n["devices"] = {}, ["mlx5_0", "mlx5_1"]
    f, rails = incast.incast_findings(ph, ib, CABLING)
    assert [(x["code"], x["node"], x["device"]) for x in f] == [("INCAST_GOODPUT_LOW", "node2", "mlx5_1")]
    assert len(rails) == 2


def test_a_flow_that_ran_alone_is_inconclusive_not_a_fault():
    """Seen on the lab under load: one client started after the others had finished (385 Gb/s, no pauses)."""
    ph = phase(gbps={("node4", "mlx5_1"): 385.7, ("node2", "mlx5_1"): 192.8, ("node3", "mlx5_1"): 192.5}, pauses={("node4", "mlx5_1"): 0})
    f, rails = incast.incast_findings(ph, FABRIC, CABLING)
    assert [(x["code"], x["severity"], x["node"], x["device"]) for x in f] == [("INCAST_INCONCLUSIVE", "warning", "node4", "mlx5_1")]
    assert rails[1]["inconclusive"] == ["node4"]
    # the two flows that did share the port and lost the class still blame the receiver
    ph = phase(gbps={("node4", "mlx5_1"): 385.7, ("node2", "mlx5_1"): 60.0, ("node3", "mlx5_1"): 60.0}, pauses={(n, "mlx5_1"): 0 for n in NODES})
    f, _ = incast.incast_findings(ph, FABRIC, CABLING)
    assert sorted((x["code"], x["node"]) for x in f) == [("INCAST_INCONCLUSIVE", "node4"), ("INCAST_NO_PAUSE", "node1")]
