"""Filters the verify_fabric role plans and collects its rounds with."""
import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as f

from test_verify_plans import FABRIC

PORTS = [{"device": "mlx5_0"}, {"device": "mlx5_1", "ib_port": 1}]


def test_rail_tests_use_one_tcp_port_per_rail():
    assert f.verify_rail_tests(PORTS, 18515) == [
        {"device": "mlx5_0", "tcp_port": 18515, "ib_port": 1, "gpu": 0},
        {"device": "mlx5_1", "tcp_port": 18516, "ib_port": 1, "gpu": 1}]
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
    assert f.verify_round_role(f.verify_rounds(nodes), "a", 0)["role"] in ("server", "client")


def entry(rnd, role, peer, gbps=385.0, error=None, devices=("mlx5_0", "mlx5_1")):
    return {"round": rnd, "role": role, "peer": peer,
            "results": [{"device": d, "gbps": gbps, "error": error} for d in devices]}


def test_tests_pair_client_and_server_results_rail_by_rail():
    logs = {"a": [entry(0, "server", "b", error=None)],
            "b": [entry(0, "client", "a", gbps=150.0)]}
    tests = f.verify_tests(logs)
    assert tests == [{"round": 0, "client": ["b", d], "server": ["a", d], "gbps": 150.0, "client_error": None,
                      "server_error": None} for d in ("mlx5_0", "mlx5_1")]
    logs["a"][0]["results"][0]["error"] = "Port number 1 state is Down"
    assert f.verify_tests(logs)[0]["server_error"] == "Port number 1 state is Down"


def test_retest_rounds_pair_suspects_with_good_nodes():
    rounds = [[["a", "b"], ["c", "d"]]]
    logs = {"a": [entry(0, "server", "b")], "b": [entry(0, "client", "a", gbps=100.0)],
            "c": [entry(0, "server", "d")], "d": [entry(0, "client", "c")]}
    retest = f.verify_retest_rounds(logs, ["a", "b", "c", "d"], FABRIC, rounds)
    pairs = {frozenset(p) for rnd in retest for p in rnd}
    assert pairs == {frozenset(x) for x in (("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"))}
    for rnd in retest:
        used = [n for p in rnd for n in p]
        assert len(used) == len(set(used))
