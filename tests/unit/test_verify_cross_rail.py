"""Cross-rail rounds (issue 24): a rail-optimised unit's leaf uplinks carry ib_write_bw tests; the
schedule, the pairing of results and the localisation follow the client's rail into another rail of
the server; fresh sample pairs fill a re-test round's idle nodes (module_utils/checks/plans.py)."""

from ansible_collections.linerate.fabric.plugins.filter import verify as verify_filters
from ansible_collections.linerate.fabric.plugins.module_utils.probes import schedule
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling as checks_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import retests
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma

FABRIC = published({"transport": "roce", "link_speed_gbps": 400})
UPLINKS = {f"leaf{r}": [{"port": f"swp{r}1", "peer": "spine1", "peer_port": f"Ethernet{r}/1"}] for r in (1, 2)}


def unit(n=4, rails=2, leaf=lambda r: f"leaf{r + 1}"):
    """{node: rdma_ports} of one rail-optimised unit: rail r of every node on leaf(r)."""
    return {f"node{i}": [{"device": f"mlx5_{r}", "switch": leaf(r), "switch_port": f"swp{i}"} for r in range(rails)] for i in range(1, n + 1)}


def leaf_of(ports):
    return checks_cabling.leaves_of(checks_cabling.cabling_index(ports))


def test_rail_shift_picks_the_shift_that_crosses_most_leaves_and_none_on_one_leaf():
    assert plans.rail_shift(leaf_of(unit(rails=2))) == 1
    # rails 0-3 on leafA, 4-7 on leafB: a shift of 4 puts every rail across (1 only two of eight)
    assert plans.rail_shift(leaf_of(unit(rails=8, leaf=lambda r: "leafA" if r < 4 else "leafB"))) == 4
    assert plans.rail_shift(leaf_of(unit(rails=4, leaf=lambda r: "leaf1"))) == 0
    assert plans.rail_shift(leaf_of(unit(rails=1))) == 0


def test_full_plan_adds_one_cross_rail_round_only_for_a_unit_with_uplinks_to_cross():
    ports = unit()
    nodes = list(ports)
    rounds = verify_filters.verify_rounds(nodes, "full", 2, ports)
    assert rounds[:-1] == plans.round_robin(nodes)
    assert rounds[-1] == [p + [1] for p in plans.round_robin(nodes)[0]]
    # no cabling, or every rail on one leaf: the plain circle
    assert verify_filters.verify_rounds(nodes, "full", 2, None) == plans.round_robin(nodes)
    one_leaf = unit(leaf=lambda r: "leaf1")
    assert verify_filters.verify_rounds(nodes, "full", 2, one_leaf) == plans.round_robin(nodes)
    # two racks (two leaf groups): same-rail pairs across racks cross the uplinks already
    racks = {n: [dict(p, switch=f"r{i % 2}-{p['switch']}") for p in ps] for i, (n, ps) in enumerate(unit(6).items())}
    assert verify_filters.verify_rounds(list(racks), "full", 2, racks) == plans.round_robin(list(racks))


def test_sampled_plan_on_one_unit_crosses_every_leaf_uplink_both_ways_on_new_pairs():
    ports = unit(8, rails=4)
    nodes = list(ports)
    rounds = plans.sampled_plan(nodes, 2, leaf_of(ports))
    assert len(rounds) == 3 and all(len(p) == 2 for r in rounds[:2] for p in r)
    cross = rounds[-1]
    assert {p[2] for p in cross} == {1} and len(cross) == 4
    assert not {frozenset(p[:2]) for p in cross} & {frozenset(p) for r in rounds[:2] for p in r}
    assert sorted(n for p in cross for n in p[:2]) == sorted(nodes)
    before = plans.uplink_test_coverage(rounds[:2], leaf_of(ports))
    assert before["uplinks"] == [0, 4] and before["missing"] == ["leaf1", "leaf2", "leaf3", "leaf4"]
    cov = plans.uplink_test_coverage(rounds, leaf_of(ports))
    assert cov["uplinks"] == [4, 4] and cov["flows"] == {f"leaf{r}": [4, 4] for r in range(1, 5)}
    # in scope: the leaves given with uplinks
    assert plans.uplink_test_coverage(rounds, leaf_of(ports), {"leaf1": []})["uplinks"] == [1, 1]


def test_plan_tests_follow_the_shift_into_the_servers_other_rail():
    lo = leaf_of(unit(2, rails=3))
    assert list(plans.plan_tests([[["node1", "node2", 1]]], lo)) == [
        (("node2", "mlx5_0"), ("node1", "mlx5_1")),
        (("node2", "mlx5_1"), ("node1", "mlx5_2")),
        (("node2", "mlx5_2"), ("node1", "mlx5_0")),
    ]
    assert list(plans.plan_tests([[["node1", "node2"]]], lo))[0] == (("node2", "mlx5_0"), ("node1", "mlx5_0"))


def test_schedule_parts_carry_the_shift_and_the_client_meets_the_servers_other_rail():
    rounds = [[["node1", "node2"]], [["node1", "node2", 1]]]
    server = plans.schedule_parts(rounds, "node1")
    client = plans.schedule_parts(rounds, "node2")
    assert "shift" not in server[0] and server[1]["shift"] == 1 and client[1]["shift"] == 1
    tests = [{"device": "mlx5_0"}, {"device": "mlx5_1"}]
    got = schedule.part_tests(tests, client[1], 18515)
    # the server listens on its own rails' ports (round 1: 18531, 18532); the client's rail i connects to i + 1
    assert [(t["device"], t["tcp_port"], t["peer_device"]) for t in got] == [("mlx5_0", 18532, "mlx5_1"), ("mlx5_1", 18531, "mlx5_0")]
    srv = schedule.part_tests(tests, server[1], 18515)
    assert [(t["device"], t["tcp_port"]) for t in srv] == [("mlx5_0", 18531), ("mlx5_1", 18532)]
    assert all("peer_device" not in t for t in srv + schedule.part_tests(tests, client[0], 18515))


def cross_logs(gbps):
    """node2 (client) wrote mlx5_0 -> node1 mlx5_1 and mlx5_1 -> node1 mlx5_0; node1 recorded its rails."""
    return {
        "node2": [
            {
                "round": 3,
                "role": "client",
                "peer": "node1",
                "results": [
                    {"device": "mlx5_0", "peer_device": "mlx5_1", "gbps": gbps[0], "error": None},
                    {"device": "mlx5_1", "peer_device": "mlx5_0", "gbps": gbps[1], "error": None},
                ],
            }
        ],
        "node1": [
            {
                "round": 3,
                "role": "server",
                "peer": "node2",
                "results": [{"device": "mlx5_0", "gbps": None, "error": None}, {"device": "mlx5_1", "gbps": None, "error": "server side failed"}],
            }
        ],
    }


def test_round_tests_pair_a_cross_rail_client_with_the_server_rail_it_wrote_into():
    tests = rdma.round_tests(cross_logs((380.0, 381.0)))
    assert [(t["client"], t["server"], t["server_error"]) for t in tests] == [
        (["node2", "mlx5_0"], ["node1", "mlx5_1"], "server side failed"),
        (["node2", "mlx5_1"], ["node1", "mlx5_0"], None),
    ]


def test_fill_idle_pairs_the_idle_nodes_on_fresh_pairs_without_adding_a_round():
    nodes = [f"n{i}" for i in range(10)]
    rounds = [[["n0", "n1"]], [["n1", "n0"]]]
    out = retests.fill_idle(rounds, nodes, tested=[["n2", "n3"]])
    assert len(out) == 2 and [r[0] for r in out] == [["n0", "n1"], ["n1", "n0"]]
    for rnd in out:
        used = [n for p in rnd for n in p]
        assert len(used) == len(set(used)) == 10
    extra = [frozenset(p) for r in out for p in r[1:]]
    assert len(extra) == len(set(extra)) == 8 and frozenset(("n2", "n3")) not in extra
    assert retests.fill_idle([], nodes) == []


def test_retest_rounds_fill_idle_nodes_in_the_first_phase_only():
    ports = {f"n{i}": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": f"swp{i}"}] for i in range(8)}
    nodes = list(ports)
    rounds = [[["n0", "n1"], ["n2", "n3"], ["n4", "n5"], ["n6", "n7"]]]
    logs = {n: [] for n in nodes}
    for s, c in rounds[0]:
        logs[c].append({"round": 0, "role": "client", "peer": s, "results": [{"device": "mlx5_0", "gbps": 100.0 if c == "n1" else 380.0, "error": None}]})
        logs[s].append({"round": 0, "role": "server", "peer": c, "results": [{"device": "mlx5_0", "error": None}]})
    first = verify_filters.verify_retest_rounds(logs, nodes, FABRIC, rounds, 1, ports, 0)
    later = verify_filters.verify_retest_rounds(logs, nodes, FABRIC, rounds, 1, ports, retests.PROBE_PHASES)
    assert len(first) == len(later)
    busy = lambda rs: sorted(len({n for p in r for n in p}) for r in rs)  # noqa: E731
    assert sum(busy(first)) > sum(busy(later)) and max(busy(first)) == 8
    done = {frozenset(p) for p in rounds[0]}
    assert not {frozenset(p) for r in first for p in r if not {"n0", "n1"} & set(p)} & done
    assert all(any(x in p for x in ("n0", "n1")) for r in later for p in r)


def test_a_flaky_rails_cross_leaf_failures_are_its_own_not_its_leafs_uplinks():
    # x mlx5_0 (leafA) fails same-leaf as client and cross-leaf as server (twice, two peers under leafB):
    # the uplinks carry only x's failures, the rail explains them both ways; a good rail passes both ways
    lo = {("x", "d"): "leafA", ("a", "d"): "leafA", ("b", "d"): "leafA", ("p", "d"): "leafB", ("q", "d"): "leafB"}
    t = lambda s, c, ok: {  # noqa: E731
        "server": [s, "d"],
        "client": [c, "d"],
        "ok": ok,
        "code": None if ok else "RDMA_BW_LOW",
        "gbps": 380.0 if ok else 100.0,
    }
    tests = [
        t("a", "x", False),
        t("b", "x", False),
        t("x", "a", True),
        t("x", "b", True),
        t("x", "p", False),
        t("x", "q", False),
        t("x", "p", True),
        t("a", "p", True),
        t("q", "b", True),
        t("p", "b", True),
        t("b", "q", True),
    ]
    suspects, inconclusive = rdma.localise(tests, leaf_of=lo)
    assert [(s["endpoint"], s["uplink"], s["direction"]) for s in suspects] == [(["x", "d"], None, "both")]
    assert inconclusive == []
