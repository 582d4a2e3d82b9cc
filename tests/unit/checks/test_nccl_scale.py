"""The per-node NET loopback and the scaling series (module_utils/checks/nccl_scale.py): thresholds from
the link speed, the steps, the efficiency arithmetic and the straggler named from the nodes' own loopback."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import nccl_scale
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published

FABRIC = published(
    {"link_speed_gbps": 400, "link_width": 4, "transport": "roce", "mtu": {"host": 4200, "switch": 9216}, "verify": {"nccl_busbw_fraction": 0.8}}
)
RAILS = [{"device": f"mlx5_{k}"} for k in range(8)]
NODES = [f"node{i}" for i in range(1, 9)]


def test_loopback_threshold_is_a_nics_worth_per_rank():
    # 400 Gb/s x 0.8 = 40 GB/s a NIC; 8 ranks on 8 NICs: one NIC each
    assert thresholds.nccl_loopback_threshold_gbytes(FABRIC, 8, 8) == 40.0
    assert thresholds.nccl_loopback_threshold_gbytes(FABRIC, 2, 8) == 10.0  # four ranks share a NIC
    assert thresholds.nccl_loopback_threshold_gbytes(FABRIC, 8, 2) == 40.0  # a rank uses its own NIC
    slow = published({"link_speed_gbps": 200, "link_width": 4, "transport": "roce", "mtu": {"host": 4200, "switch": 9216}})
    assert thresholds.nccl_loopback_threshold_gbytes(slow, 8, 8) == 20.0
    with pytest.raises(ValueError, match="nics 0, ranks 8"):
        thresholds.nccl_loopback_threshold_gbytes(FABRIC, 0, 8)


def test_loopback_names_each_node_below_its_threshold():
    hosts = {n: RAILS for n in ("node1", "node2", "node3")}
    results = {"node1": {"busbw": 46.9}, "node2": {"busbw": 39.9}, "node3": {"busbw": None, "error": "exit 3"}}
    found, cases = nccl_scale.loopback_findings(results, FABRIC, hosts, 8)
    assert [(f["code"], f["node"]) for f in found] == [("NCCL_LOOPBACK_LOW", "node2"), ("NCCL_LOOPBACK_FAILED", "node3")]
    assert found[0]["expected"] == 40.0 and found[0]["actual"] == 39.9 and "39.90 GB/s < 40 GB/s" in found[0]["message"]
    assert [c["ok"] for c in cases] == [True, False, False]


def test_series_steps_fill_a_leaf_group_first_and_repeat_within_each():
    group_of = {n: "su1" if int(n[4:]) % 2 else "su2" for n in NODES}  # odd nodes in su1
    steps = nccl_scale.series_steps(NODES, group_of)
    fleet = [s for s in steps if s["group"] == "fleet"]
    assert [s["name"] for s in fleet] == ["fleet:2", "fleet:4", "fleet:8"]
    assert fleet[1]["nodes"] == ["node1", "node3", "node5", "node7"] and fleet[1]["added"] == ["node5", "node7"]
    assert [s["name"] for s in steps if s["group"] == "su2"] == ["su2:2", "su2:4"]
    assert [s["name"] for s in nccl_scale.series_steps(NODES[:6])] == ["fleet:2", "fleet:4", "fleet:6"]
    assert nccl_scale.series_steps(["node1"]) == []
    assert [s["group"] for s in nccl_scale.series_steps(NODES[:4], {n: "su1" for n in NODES})] == ["fleet", "fleet"]


def _ran(steps, busbw):
    return [dict(s, busbw=busbw.get(s["name"])) for s in steps]


def test_efficiency_is_each_steps_bus_bandwidth_over_the_first_steps():
    steps = _ran(nccl_scale.series_steps(NODES), {"fleet:2": 90.0, "fleet:4": 88.2, "fleet:8": 45.0})
    e = nccl_scale.efficiency(steps)
    assert [round(s["efficiency"], 3) for s in e] == [1.0, 0.98, 0.5]
    assert [s["step_efficiency"] and round(s["step_efficiency"], 3) for s in e] == [None, 0.98, 0.51]


def test_the_first_step_that_does_not_scale_names_the_straggler_by_its_loopback():
    steps = _ran(nccl_scale.series_steps(NODES), {"fleet:2": 90.0, "fleet:4": 44.0, "fleet:8": 44.0})
    loopback = {n: {"busbw": 11.7} for n in NODES}
    loopback["node3"] = {"busbw": 5.8}
    found, cases, who = nccl_scale.series_findings(steps, loopback)
    assert who == "node3"
    assert [f["code"] for f in found] == ["NCCL_SCALING_LOW", "NCCL_SCALING_LOW", "NCCL_STRAGGLER"]
    assert "fleet:4: 44.00 GB/s, 49% of the first step's (at least 90% asked for); it added node3, node4" in found[0]["message"]
    assert found[-1]["node"] == "node3" and "from fleet:4 on: its own NET loopback 5.80 GB/s; the others added 11.70 GB/s or more" in found[-1]["message"]
    assert [c["ok"] for c in cases] == [True, False, False]
    # every step scaled: nothing named
    ok = _ran(nccl_scale.series_steps(NODES), {"fleet:2": 90.0, "fleet:4": 89.0, "fleet:8": 85.0})
    assert nccl_scale.series_findings(ok, loopback) == ([], nccl_scale.series_findings(ok, loopback)[1], None)
    # a stricter target: 85/90 = 94 % fails 95 %
    assert nccl_scale.series_findings(ok, loopback, 0.95)[2] in ("node5", "node6", "node7", "node8")


def test_without_loopback_results_the_steps_nodes_are_the_suspects():
    steps = _ran(nccl_scale.series_steps(NODES[:4]), {"fleet:2": 90.0, "fleet:4": None})
    found, _cases, who = nccl_scale.series_findings(steps, {})
    assert who is None and found[-1]["code"] == "NCCL_STRAGGLER" and found[-1]["node"] is None
    assert found[-1]["evidence"]["suspects"] == ["node3", "node4"] and "no result (not run)" in found[0]["message"]
    with pytest.raises(ValueError, match="min_efficiency 1.5"):
        nccl_scale.series_findings(steps, {}, 1.5)


# ---------------------------------------------------------------- the report's checks (registry)


def _run(busbw, hosts, np_=8, env=nccl_scale.LOOPBACK_ENV, error=None):
    argv = ["mpirun", "-np", str(np_), "-H", hosts] + [a for k, v in env.items() for a in ("-x", f"{k}={v}")] + ["all_reduce_perf", "-g", "1"]
    return {"busbw": busbw, "error": error, "argv": argv}


def _ctx(data):
    from ansible_collections.linerate.fabric.plugins.module_utils.checks.context import Inputs

    nodes = sorted(data)
    return Inputs(nodes, {n: dict(data[n], rdma_ports=RAILS[:2]) for n in nodes}, FABRIC)


def test_loopback_report_names_the_slow_node_and_refuses_a_run_that_was_no_loopback():
    data = {
        "node1": {"verify_fabric_nccl_loopback": _run(11.3, "localhost:8")},
        "node2": {"verify_fabric_nccl_loopback": _run(5.6, "localhost:8")},
        "node3": {"verify_fabric_nccl_loopback": _run(370.0, "localhost:8", env={})},
        "node4": {"verify_fabric_nccl_loopback": {"skipped": True}},
    }
    found, checks = nccl_scale.loopback_report(_ctx(data))
    # 2 NICs, 8 ranks: 40 GB/s x 2 / 8 = 10 GB/s
    assert [(f["code"], f["node"]) for f in found] == [("NCCL_LOOPBACK_LOW", "node2"), ("NCCL_LOOPBACK_FAILED", "node3")]
    assert "not a NET loopback" in found[1]["message"] and checks["nccl_loopback"]["passed"] is False
    assert checks["nccl_loopback"]["detail"] == "1/3 node(s) at their NET loopback threshold (8 ranks a node, P2P and SHM off)"
    assert nccl_scale.loopback_report(_ctx({"node1": {}})) == ([], {})


def test_series_report_pairs_each_step_with_its_run_and_names_the_straggler():
    steps = nccl_scale.series_steps(["node1", "node2", "node3", "node4"])
    reg = {"results": [dict(_run(b, "x"), item=dict(s, min_efficiency=0.9)) for s, b in zip(steps, (94.0, 47.0))]}
    data = {n: {"verify_fabric_nccl_series": reg, "verify_fabric_nccl_loopback": _run(11.3, "localhost:8")} for n in ("node1", "node2", "node3", "node4")}
    data["node3"]["verify_fabric_nccl_loopback"] = _run(5.6, "localhost:8")
    found, checks = nccl_scale.series_report(_ctx(data))
    assert checks["nccl_scaling"]["straggler"] == "node3"
    assert checks["nccl_scaling"]["detail"] == "fleet:2 94.0 GB/s (100%); fleet:4 47.0 GB/s (50%); straggler node3"
    assert [f["code"] for f in found] == ["NCCL_SCALING_LOW", "NCCL_STRAGGLER"]


def test_series_steps_filter_carries_addresses_and_the_target():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.linerate.fabric.plugins.filter.nccl_scale import nccl_series_steps

    nodes = [{"name": f"node{i}", "address": f"10.0.0.{i}", "group": "leaf1_leaf2"} for i in range(1, 5)]
    steps = nccl_series_steps(nodes, 0.85)
    assert [(s["name"], s["hosts"], s["min_efficiency"]) for s in steps] == [
        ("fleet:2", ["10.0.0.1", "10.0.0.2"], 0.85),
        ("fleet:4", ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"], 0.85),
    ]
    # two leaf groups: the fleet's steps fill tor1 first, then each group has its own series
    racks = [dict(n, group="tor1" if i < 2 else "tor2") for i, n in enumerate(nodes)]
    assert [s["name"] for s in nccl_series_steps(racks)] == ["fleet:2", "fleet:4", "tor1:2", "tor2:2"]
    with pytest.raises(AnsibleFilterError, match="min_efficiency 0: above 0 and at most 1"):
        nccl_series_steps(nodes, 0)
    with pytest.raises(AnsibleFilterError, match="nodes are"):
        nccl_series_steps([{"address": "x"}])
