"""Filters the verify_fabric role plans and collects its rounds with."""

import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as f
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans as checks_plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import retests as checks_retests
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma

from checks.test_plans import FABRIC

PORTS = [{"device": "mlx5_0"}, {"device": "mlx5_1", "ib_port": 1}]


def test_rail_tests_use_one_tcp_port_per_rail():
    assert f.verify_rail_tests(PORTS, 18515) == [
        {"device": "mlx5_0", "tcp_port": 18515, "ib_port": 1, "gpu": 0},
        {"device": "mlx5_1", "tcp_port": 18516, "ib_port": 1, "gpu": 1},
    ]
    assert {t["server"] for t in f.verify_rail_tests(PORTS, 18515, "10.0.0.2")} == {"10.0.0.2"}


def test_rail_tests_take_the_gpu_nearest_to_each_nic():
    # readiness found GPU 5 behind mlx5_0's PCIe switch and nothing for mlx5_1:
    # mlx5_0 measures with --use_cuda=5, mlx5_1 falls back to its rail index
    rails = [{"device": "mlx5_0", "gpu": 5, "link": "PIX"}, {"device": "mlx5_1", "gpu": None}, "junk"]
    tests = f.verify_rail_tests(PORTS, 18515, None, rails)
    assert [(t["device"], t["gpu"]) for t in tests] == [("mlx5_0", 5), ("mlx5_1", 1)]
    assert "server" not in tests[0]
    assert [t["gpu"] for t in f.verify_rail_tests(PORTS, 18515, "10.0.0.2", rails)] == [5, 1]


def test_rounds_filter():
    nodes = ["a", "b", "c", "d"]
    assert len(f.verify_rounds(nodes)) == 3
    assert len(f.verify_rounds(nodes, "sampled", 1)) == 1
    with pytest.raises(ValueError, match="allowed: full | sampled"):
        f.verify_rounds(nodes, "everything")
    assert checks_plans.round_roles(f.verify_rounds(nodes), "a")[0]["role"] in ("server", "client")


def entry(rnd, role, peer, gbps=385.0, error=None, devices=("mlx5_0", "mlx5_1")):
    return {"round": rnd, "role": role, "peer": peer, "results": [{"device": d, "gbps": gbps, "error": error} for d in devices]}


def test_tests_pair_client_and_server_results_rail_by_rail():
    logs = {"a": [entry(0, "server", "b", error=None)], "b": [entry(0, "client", "a", gbps=150.0)]}
    tests = rdma.round_tests(logs)
    assert tests == [
        {"round": 0, "client": ["b", d], "server": ["a", d], "gbps": 150.0, "client_error": None, "server_error": None} for d in ("mlx5_0", "mlx5_1")
    ]
    logs["a"][0]["results"][0]["error"] = "Port number 1 state is Down"
    assert rdma.round_tests(logs)[0]["server_error"] == "Port number 1 state is Down"


def test_retest_rounds_pair_suspects_with_good_nodes():
    rounds = [[["a", "b"], ["c", "d"]]]
    logs = {"a": [entry(0, "server", "b")], "b": [entry(0, "client", "a", gbps=100.0)], "c": [entry(0, "server", "d")], "d": [entry(0, "client", "c")]}
    retest = f.verify_retest_rounds(logs, ["a", "b", "c", "d"], FABRIC, rounds)
    pairs = {frozenset(p) for rnd in retest for p in rnd}
    assert pairs == {frozenset(x) for x in (("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"))}
    for rnd in retest:
        used = [n for p in rnd for n in p]
        assert len(used) == len(set(used))


def two_round_logs(bad_rail_of=None, second_round=True):
    """A sampled first phase on six nodes: round 0 x-a, b-c, d-e; round 1 x-b, a-d, c-e (server
    first). ``bad_rail_of``: (node, gbps) whose mlx5_1 runs slow in every test it takes."""
    rounds = [[["x", "a"], ["b", "c"], ["d", "e"]]] + ([[["x", "b"], ["a", "d"], ["c", "e"]]] if second_round else [])
    logs = {n: [] for n in "xabcde"}
    for i, rnd in enumerate(rounds):
        for server, client in rnd:
            for node, role, peer in ((server, "server", client), (client, "client", server)):
                e = entry(i, role, peer)
                if bad_rail_of and bad_rail_of[0] in (server, client) and role == "client":
                    e["results"][1]["gbps"] = bad_rail_of[1]
                logs[node].append(e)
    return logs, rounds


def test_a_link_that_failed_against_two_good_peers_needs_no_retest():
    # x's mlx5_1 fails against a and against b, whose mlx5_1 passed with d and with c:
    # the first phase already names x mlx5_1; re-tests would only confirm it
    logs, rounds = two_round_logs(("x", 96.0))
    # ... as receiver only (x served both rounds): its send side is unknown, x alone is re-tested,
    # once as client and once as server against good nodes (twice each with repeats=2)
    retest = f.verify_retest_rounds(logs, list("xabcde"), FABRIC, rounds, phase=checks_retests.PROBE_PHASES)
    pairs = [p for rnd in retest for p in rnd]
    assert sorted(p.index("x") for p in pairs) == [0, 1] and all("x" in p for p in pairs)
    assert {n for p in pairs for n in p} - {"x"} <= set("cde")
    pairs = [p for rnd in f.verify_retest_rounds(logs, list("xabcde"), FABRIC, rounds, 2, phase=checks_retests.PROBE_PHASES) for p in rnd]
    assert sorted(p.index("x") for p in pairs) == [0, 0, 1, 1] and all("x" in p for p in pairs)
    # settled: failed 3 times as server (hard) and passed twice as client: a receive-side fault
    for rnd, peer in ((2, "c"), (3, "d")):
        logs["x"].append(entry(rnd, "client", peer))
        logs[peer].append(entry(rnd, "server", "x"))
    logs["x"].append(entry(4, "server", "e"))
    logs["e"].append(entry(4, "client", "x"))
    logs["e"][-1]["results"][1]["gbps"] = 96.0
    assert f.settled(rdma.evaluate_tests(rdma.round_tests(logs), 180.0)) == {("x", "mlx5_1")}
    assert f.verify_retest_rounds(logs, list("xabcde"), FABRIC, rounds) == []
    # one round: x failed against a alone; x and a are each re-tested against good nodes
    logs, rounds = two_round_logs(("x", 96.0), second_round=False)
    retest = f.verify_retest_rounds(logs, list("xabcde"), FABRIC, rounds, phase=checks_retests.PROBE_PHASES)
    pairs = [set(p) for rnd in retest for p in rnd]
    assert sorted(n for p in pairs for n in p if n in "xa") == ["a", "a", "x", "x"]
    assert all(len(p & {"x", "a"}) == 1 and p - {"x", "a"} <= set("bcde") for p in pairs)
    assert len(retest) == 2  # the suspects take different good peers: two rounds, not four
    # both directions of each suspect: once as client (it sends), once as server (it receives)
    ordered = [p for rnd in retest for p in rnd]
    for s in "xa":
        assert sorted(p.index(s) for p in ordered if s in p) == [0, 1]


def test_convicted_needs_two_peers_that_passed_elsewhere_or_a_test_naming_the_end():
    def t(server, client, ok, blame=None):
        return {"server": list(server), "client": list(client), "ok": ok, "blame": blame}

    x, a, b = ("x", "mlx5_1"), ("a", "mlx5_1"), ("b", "mlx5_1")
    good_a, good_b = t(a, ("c", "mlx5_1"), True), t(("d", "mlx5_1"), b, True)
    assert checks_retests.convicted([t(x, a, False), t(b, x, False), good_a, good_b]) == {x}
    assert checks_retests.convicted([t(x, a, False), t(b, x, False), good_a]) == set()  # b never passed
    assert checks_retests.convicted([t(x, a, False), good_a]) == set()  # one peer only
    assert checks_retests.convicted([t(x, a, False, blame="client")]) == {a}  # a's port was down


@pytest.mark.parametrize(
    "other, first",
    [
        ({"send": 0, "receive": 1, "first": None}, "receive"),
        ({"send": 4, "receive": 4, "first": None}, None),
        ({"send": 4, "receive": 4, "first": "send"}, None),
    ],
)
def test_a_nodes_first_direction_is_the_one_its_both_ways_rails_agree_on(monkeypatch, other, first):
    # x's mlx5_0 never failed receiving (receive first); mlx5_1 needs one way only (no say), or both
    # ways with no preference (it failed both: both in turn), or the other way first (a conflict)
    logs = {n: [] for n in "xabcde"}
    for rnd, (server, client) in enumerate((("x", "a"), ("b", "c"), ("d", "e"))):
        logs[server].append(entry(rnd, "server", client))
        logs[client].append(entry(rnd, "client", server))
    demand = {("x", "mlx5_0"): {"send": 4, "receive": 4, "first": "receive"}, ("x", "mlx5_1"): other}
    monkeypatch.setattr(f.checks_retests, "retest_demand", lambda tests, leaf_of=None: demand)
    retest = f.verify_retest_rounds(logs, list("xabcde"), FABRIC, [], phase=checks_retests.PROBE_PHASES)
    ways = ["receive" if p[0] == "x" else "send" for rnd in retest for p in rnd if "x" in p]
    assert len(ways) == 8
    if first:
        assert ways == ["receive"] * 4 + ["send"] * 4
    else:
        assert ways == ["send", "receive"] * 4
