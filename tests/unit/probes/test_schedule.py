"""The ib_write_bw schedule (mode=schedule): one node plays its part in every round in one call.

Pure parts: the TCP port of each round and rail (``schedule.schedule_port``), each node's
parts (``plans.schedule_parts``, filter ``verify_schedule``) and the summary line. Then the
schedule itself (``schedule.run_schedule``) on loopback: each simulated node is a thread with
its own 127.0.0.x address and a stand-in perftest that really listens and connects over TCP, so
the rounds synchronise through the servers as on a fabric.
"""

import pytest

from ansible_collections.linerate.fabric.plugins.filter import verify as verify_filters
from ansible_collections.linerate.fabric.plugins.module_utils.probes import perftest
from ansible_collections.linerate.fabric.plugins.module_utils.probes import schedule
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma
from ansible_collections.linerate.fabric.plugins.modules import ib_write_bw

import schedule_sim
from module_harness import Tools, run_module


# ---------------------------------------------------------------- ports


def test_round_ports_are_base_plus_round_times_stride_plus_rail():
    assert [schedule.schedule_port(18515, r, i) for r in (0, 1, 2) for i in (0, 1)] == [18515, 18516, 18531, 18532, 18547, 18548]
    # round 64 reuses round 0's ports (64 rounds apart), 65 round 1's
    assert schedule.schedule_port(18515, 64, 3) == 18518 and schedule.schedule_port(18515, 65, 0) == 18531
    assert schedule.schedule_port(20000, 5, 2, stride=8, port_rounds=4) == 20000 + 1 * 8 + 2


@pytest.mark.parametrize("rails,stride,k", [(1, 16, 64), (8, 16, 64), (16, 16, 64), (2, 2, 2), (4, 4, 3)])
def test_rounds_closer_than_k_never_share_a_port(rails, stride, k):
    ports = {r: {schedule.schedule_port(18515, r, i, stride, k) for i in range(rails)} for r in range(3 * k)}
    for r in range(3 * k):
        for d in range(1, k):
            assert not ports[r] & ports[r + d] if r + d in ports else True
        assert len(ports[r]) == rails


def test_port_range_is_validated():
    assert schedule.schedule_port(65536 - 64 * 16, 63, 15) == 65535
    with pytest.raises(ValueError, match=r"TCP ports 64513\.\.65536 .*1\.\.65535"):
        schedule.schedule_port(65536 - 64 * 16 + 1, 0, 0)
    with pytest.raises(ValueError, match="rail 16 does not fit 16"):
        schedule.schedule_port(18515, 0, 16)
    with pytest.raises(ValueError, match="at least 2"):
        schedule.schedule_port(18515, 0, 0, port_rounds=1)
    with pytest.raises(ValueError, match="negative"):
        schedule.schedule_port(18515, -1, 0)


def test_part_tests_derive_port_and_server():
    tests = [{"device": "mlx5_0", "ib_port": 1, "gpu": 0, "tcp_port": 1}, {"device": "mlx5_1", "ib_port": 1, "gpu": 1}]
    client = schedule.part_tests(tests, {"round": 2, "role": "client", "peer": "n2", "peer_address": "10.0.0.2"}, 18515)
    assert client == [
        {"device": "mlx5_0", "ib_port": 1, "gpu": 0, "tcp_port": 18547, "server": "10.0.0.2"},
        {"device": "mlx5_1", "ib_port": 1, "gpu": 1, "tcp_port": 18548, "server": "10.0.0.2"},
    ]
    server = schedule.part_tests(tests, {"round": 2, "role": "server", "peer": "n2"}, 18515)
    assert [t["tcp_port"] for t in server] == [18547, 18548] and all("server" not in t for t in server)
    assert schedule.part_tests(tests[:1], {"round": 0, "role": "client", "peer": "n3"}, 18515)[0]["server"] == "n3"


# ---------------------------------------------------------------- parts


def test_each_node_gets_its_part_in_every_round_in_order():
    nodes = ["a", "b", "c", "d", "e"]  # odd: one idle node a round
    rounds = plans.round_robin(nodes)
    addresses = {"a": "10.0.0.1", "b": "10.0.0.2", "c": "", "d": None}
    parts = {n: verify_filters.verify_schedule(rounds, n, 0, addresses) for n in nodes}
    for n in nodes:
        assert [p["round"] for p in parts[n]] == list(range(len(rounds)))
        assert sum(p["role"] == "idle" for p in parts[n]) == 1
        assert {p["peer"] for p in parts[n] if p["role"] != "idle"} == set(nodes) - {n}
    for r, rnd in enumerate(rounds):
        for server, client in rnd:
            assert parts[server][r] == {"round": r, "role": "server", "peer": client, "peer_address": addresses.get(client) or client}
            assert parts[client][r] == {"round": r, "role": "client", "peer": server, "peer_address": addresses.get(server) or server}
    idle = next(p for p in parts["a"] if p["role"] == "idle")
    assert idle["peer"] is None and idle["peer_address"] is None


def test_retest_rounds_go_on_from_the_offset():
    parts = verify_filters.verify_schedule([[["x", "y"]], [["z", "x"]]], "x", "2")
    assert parts == [{"round": 2, "role": "server", "peer": "y", "peer_address": "y"}, {"round": 3, "role": "client", "peer": "z", "peer_address": "z"}]


def test_summary_line():
    rounds = plans.round_robin([f"n{i}" for i in range(32)])
    # the expectation is checks/estimates.py's model: 31 x (2 s + 1.2 s a round) + 4 tasks on 32 nodes
    assert verify_filters.verify_schedule_summary(rounds, 2, 8) == (
        "31 rounds, 496 pairs x 8 rails, one task per node; expected ~1 min 54 s (31 x 2 s tests, 1.2 s a round more, and the tasks around them)"
    )
    assert verify_filters.verify_schedule_summary([[["a", "b"]]], "10", 1, "re-test rounds") == (
        "1 re-test round, 1 pair x 1 rail, one task per node; expected ~14 s (1 x 10 s tests, 1.2 s a round more, and the tasks around them)"
    )
    # more nodes than forks: the tasks around the schedule run in batches
    assert "expected ~1 min 57 s" in verify_filters.verify_schedule_summary(rounds, 2, 8, "rounds", 32, 16)


# ---------------------------------------------------------------- the module: arguments, check mode

PARTS = [
    {"round": 0, "role": "server", "peer": "n2", "peer_address": "10.0.0.2"},
    {"round": 1, "role": "idle", "peer": None},
    {"round": 2, "role": "client", "peer": "n3", "peer_address": "10.0.0.3"},
]


def test_check_mode_returns_every_parts_argv_and_runs_nothing(capsys):
    tools = Tools({})
    res = run_module(
        ib_write_bw.main,
        {"mode": "schedule", "parts": PARTS, "gid_index": 3, "tclass": 104, "duration": 2, "tests": [{"device": "mlx5_0"}, {"device": "mlx5_1"}]},
        tools,
        capsys,
        check=True,
    )
    assert tools.calls == [] and res["skipped_run"] is True and res["changed"] is False and res["passed"] is True
    assert [(p["round"], p["role"], p["peer"]) for p in res["parts"]] == [(0, "server", "n2"), (2, "client", "n3")]
    common = ["-F", "--report_gbits", "-q", "4", "-s", "1048576", "-D", "2", "-x", "3", "--tclass=104"]
    assert [r["argv"] for r in res["parts"][0]["results"]] == [
        ["/usr/bin/ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18515", *common],
        ["/usr/bin/ib_write_bw", "-d", "mlx5_1", "-i", "1", "-p", "18516", *common],
    ]
    assert [r["argv"] for r in res["parts"][1]["results"]] == [
        ["/usr/bin/ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18547", *common, "10.0.0.3"],
        ["/usr/bin/ib_write_bw", "-d", "mlx5_1", "-i", "1", "-p", "18548", *common, "10.0.0.3"],
    ]


@pytest.mark.parametrize(
    "args,msg",
    [
        ({"parts": [{"round": 0, "role": "listener", "peer": "n2"}]}, "parts[0]: role 'listener' is not allowed"),
        ({"parts": [{"round": 0, "role": "client"}]}, "parts[0]: missing peer"),
        ({"parts": [{"round": "x", "role": "idle"}]}, "parts[0]: round must be an integer"),
        ({"parts": [], "base_port": 65000}, "TCP ports 65000..66023"),
        ({"parts": [], "tests": [{"device": f"mlx5_{i}"} for i in range(3)], "port_stride": 2}, "rail 2 does not fit 2"),
        ({}, "mode is schedule but all of the following are missing: parts"),
    ],
)
def test_schedule_arguments_are_checked(capsys, args, msg):
    res = run_module(ib_write_bw.main, dict({"mode": "schedule", "tests": [{"device": "mlx5_0"}]}, **args), Tools({}), capsys, check=True)
    assert res["failed"] and msg in res["msg"]


# ---------------------------------------------------------------- the schedule on loopback


def params(parts, **kw):
    p = {
        "tool": "ib_write_bw",
        "size": 1048576,
        "qps": 4,
        "duration": 1,
        "iterations": 5000,
        "gid_index": 3,
        "tclass": None,
        "sl": None,
        "use_cuda": False,
        "out_json": False,
        "extra_args": [],
        "timeout": 20,
        "connect_timeout": 15,
        "start_timeout": None,
        "base_port": 0,
        "port_stride": 16,
        "port_rounds": 64,
        "parts": parts,
        "tests": [{"device": "mlx5_0"}, {"device": "mlx5_1"}],
    }
    p.update(kw)
    return p


def play(tmp_path, nodes, monkeypatch, absent=(), down=None, start_delay=None, scale=0.2, **kw):
    """Run every node's schedule at once (threads); returns ({node: records}, log lines, seconds, base, rounds)."""
    import random

    base = random.Random().randrange(20000, 40000)
    addresses = {n: f"127.0.0.{i + 2}" for i, n in enumerate(nodes)}
    out, log, seconds, rounds = schedule_sim.play(
        tmp_path,
        nodes,
        addresses,
        lambda parts: params(parts, base_port=base, **kw),
        monkeypatch.setattr,
        absent=absent,
        down=down,
        start_delay=start_delay,
        scale=scale,
        join_timeout=120,
    )
    return out, log, seconds, base, rounds


def test_four_nodes_play_every_round_and_each_client_reaches_its_rounds_server(tmp_path, monkeypatch):
    nodes = ["n1", "n2", "n3", "n4"]
    # n4 starts late: the others' rounds wait for it through their servers, nobody fails
    out, log, seconds, base, rounds = play(tmp_path, nodes, monkeypatch, start_delay={"n4": 1.5})
    for n in nodes:
        assert [(r["round"], r["role"]) for r in out[n]] == [(p["round"], p["role"]) for p in plans.schedule_parts(rounds, n)]
        for rec in out[n]:
            assert set(rec) == {"round", "role", "peer", "results", "seconds", "peer_wait"}
            assert [r["tcp_port"] for r in rec["results"]] == [base + 16 * rec["round"], base + 16 * rec["round"] + 1]
            assert all(r["error"] is None and r["gbps"] > 0 for r in rec["results"])
    # every connection was the one its round planned: server node, rail and port agree with the plan
    want = {("server", s, f"mlx5_{i}", str(base + 16 * r + i), c) for r, rnd in enumerate(rounds) for s, c in rnd for i in range(2)}
    want |= {("client", c, d, port, s) for _, s, d, port, c in want}
    assert set(map(tuple, log)) == want and len(log) == len(want)
    tests = rdma.evaluate_tests(rdma.round_tests(out), 100)
    assert len(tests) == 6 * 2 and all(t["ok"] for t in tests)
    # the report's schedule timing: every round's rails; the clients waited at their round's
    # meeting for n4's servers to listen, so none had to start again
    timing = rdma.schedule_timing(out)
    assert [(r["round"], r["rails"]) for r in timing["rounds"]] == [(0, 4), (1, 4), (2, 4)]
    assert all(r["client_starts"] == r["rails"] and r["seconds"] > 0 for r in timing["rounds"])
    assert timing["client_retries"] == 0


def _slow_pair_play(tmp_path, monkeypatch):
    # n1's clients hold their connection 3 s (the others 0.2 s): whoever meets n1 or its partner in
    # the next round arrives ~3 s early, beyond connect_timeout (1 s); a server whose client comes
    # 3 s late and holds 3 s outlasts its own timeout (5 s) counted from its own start
    nodes = ["n1", "n2", "n3", "n4"]
    return play(tmp_path, nodes, monkeypatch, scale={"n1": 3.0, "n2": 0.2, "n3": 0.2, "n4": 0.2}, timeout=5, connect_timeout=1)


def test_a_peer_still_measuring_its_last_round_is_waited_for_not_failed(tmp_path, monkeypatch):
    out, log, seconds, base, rounds = _slow_pair_play(tmp_path, monkeypatch)
    tests = rdma.evaluate_tests(rdma.round_tests(out), 100)
    assert len(tests) == 12 and [t for t in tests if not t["ok"]] == []
    # the rounds were not in lock-step: some part waited for its peer longer than connect_timeout
    waits = [rec["peer_wait"] for recs in out.values() for rec in recs]
    assert max(waits) > 2, waits
    assert all(r["attempts"] == 1 for recs in out.values() for rec in recs if rec["role"] == "client" for r in rec["results"])


@pytest.mark.parametrize("start_timeout,timeout,fails", [(60, 60, False), (None, 5, True)])
def test_a_node_whose_schedule_starts_late_is_waited_for_up_to_start_timeout(tmp_path, monkeypatch, start_timeout, timeout, fails):
    # n4's schedule starts 2.5 s after the others' (an async start in batches): within start_timeout
    # its peers wait for it; without one (connect_timeout, 1 s) its first peers give up. The waits are
    # ended by n4 arriving, not by the clock: start_timeout and timeout far above the lag, so a loaded
    # machine (n4 later still) passes the same way and the run takes no longer (the failing case's timeout
    # is 5 only to end it sooner: with 60 the same two tests fail, after a minute)
    out, log, seconds, base, rounds = play(
        tmp_path, ["n1", "n2", "n3", "n4"], monkeypatch, start_delay={"n4": 2.5}, timeout=timeout, connect_timeout=1, start_timeout=start_timeout
    )
    bad = [t for t in rdma.evaluate_tests(rdma.round_tests(out), 100) if not t["ok"]]
    assert bool(bad) == fails
    assert all("n4" in (t["client"][0], t["server"][0]) for t in bad)


def test_without_the_beacon_the_same_lag_fails_tests(tmp_path, monkeypatch):
    # the scenario above is a real one: each side counting its own clock fails healthy rails
    monkeypatch.setattr(schedule, "beacon_port", lambda p: None)
    out, log, seconds, base, rounds = _slow_pair_play(tmp_path, monkeypatch)
    tests = rdma.evaluate_tests(rdma.round_tests(out), 100)
    assert [t for t in tests if not t["ok"]]


def test_the_beacon_port_is_the_last_of_round_zeros_stride_when_the_rails_leave_room():
    assert schedule.beacon_port(params(PARTS, base_port=18515)) == 18515 + 15
    assert schedule.beacon_port(params(PARTS, base_port=18515, tests=[{"device": "d"}] * 14)) == 18530
    # 15 rails: the meeting port takes the last one, no room for the beacon
    assert schedule.beacon_port(params(PARTS, base_port=18515, tests=[{"device": "d"}] * 15)) is None
    # no round's rails or meeting port ever take it
    p = params(PARTS, base_port=18515, tests=[{"device": "d"}] * 14)
    used = {schedule.schedule_port(18515, r, i) for r in range(200) for i in range(14)}
    used |= {schedule.meet_port(p, {"round": r}) for r in range(200)}
    assert schedule.beacon_port(p) not in used


def test_the_meeting_port_follows_the_rails_and_is_none_when_they_fill_the_stride():
    two = params(PARTS, base_port=18515)
    assert [schedule.meet_port(two, part) for part in PARTS] == [18517, 18533, 18549]
    full = params(PARTS, base_port=18515, tests=[{"device": f"mlx5_{i}"} for i in range(16)])
    assert schedule.meet_port(full, PARTS[0]) is None


def test_schedule_timing_takes_each_rounds_slowest_part_and_counts_client_restarts():
    ok = {"error": None, "gbps": 390.0}
    logs = {
        "a": [
            {"round": 0, "role": "server", "peer": "b", "seconds": 2.4, "peer_wait": 0.5, "results": [dict(ok, attempts=1)] * 2},
            {"round": 1, "role": "client", "peer": "c", "seconds": 3.1, "results": [dict(ok, attempts=4), dict(ok, attempts=1)]},
        ],
        "b": [{"round": 0, "role": "client", "peer": "a", "seconds": 2.6, "results": [dict(ok, attempts=1), dict(ok, attempts=2)]}],
        "c": [{"round": 1, "role": "server", "peer": "a", "seconds": 2.2, "peer_wait": 1.25, "results": [dict(ok, attempts=1)] * 2}],
        "d": [],
    }
    assert rdma.schedule_timing(logs) == {
        "rounds": [
            {"round": 0, "seconds": 2.6, "client_starts": 3, "rails": 2, "peer_wait": 0.5},
            {"round": 1, "seconds": 3.1, "client_starts": 5, "rails": 2, "peer_wait": 1.25},
        ],
        "client_retries": 4,
        "peer_wait": 1.8,
    }
    assert rdma.schedule_timing({}) == {"rounds": [], "client_retries": 0, "peer_wait": 0}


def test_a_port_down_fails_its_tests_fast_and_is_named(tmp_path, monkeypatch):
    nodes = ["n1", "n2", "n3", "n4"]
    # timeouts far above the run: a peer left waiting for them would end by them. Fast by cause, not by
    # the clock (a loaded machine is slower, never differently ordered): no part ended by its timeout and
    # every client started once, the down rail's failures came from the rail, not from waiting
    out, log, seconds, base, rounds = play(tmp_path, nodes, monkeypatch, down={"n2": ["mlx5_1"]}, timeout=40, connect_timeout=30)
    results = [r for recs in out.values() for rec in recs for r in rec["results"]]
    assert not [r["error"] for r in results if (r["error"] or "").startswith("killed after")]
    assert all(r["attempts"] == 1 for recs in out.values() for rec in recs if rec["role"] == "client" for r in rec["results"])
    tests = rdma.evaluate_tests(rdma.round_tests(out), 100)
    bad = [t for t in tests if not t["ok"]]
    assert len(bad) == 3 and all(["n2", "mlx5_1"] in (t["server"], t["client"]) for t in bad)
    assert {t["code"] for t in bad} == {"PORT_DOWN"}
    assert all(t["ok"] for t in tests if ["n2", "mlx5_1"] not in (t["server"], t["client"]))
    suspects, inconclusive = rdma.localise(tests)
    assert [s["endpoint"] for s in suspects] == [["n2", "mlx5_1"]] and inconclusive == []


def test_a_dead_peer_costs_its_rounds_and_the_schedule_goes_on(tmp_path, monkeypatch):
    nodes = ["n1", "n2", "n3", "n4"]
    # n2 waits out its dead client of round 0 (timeout), then has n4's round-1 servers, which started
    # at about 1 s, left timeout - 4 s to reach: 2 s, not a loaded machine's perftest start
    out, log, seconds, base, rounds = play(tmp_path, nodes, monkeypatch, absent={"n3"}, timeout=6, connect_timeout=3)
    assert "n3" not in out
    for n in ("n1", "n2", "n4"):
        assert len(out[n]) == 3  # every part recorded, the dead one's too
        for rec in out[n]:
            errors = [r["error"] for r in rec["results"]]
            if rec["peer"] == "n3":
                if rec["role"] == "server":
                    assert errors == ["killed after 6 s (no client connected)"] * 2
                else:  # no meeting until connect_timeout, then one start
                    assert all(e.startswith(f"Couldn't connect to 127.0.0.4:{base + 16 * rec['round'] + i};") for i, e in enumerate(errors)), errors
                    assert all(r["attempts"] == 1 for r in rec["results"])
            else:
                assert errors == [None, None], rec
    # the dead peer cost its own parts only: exactly one timeout per rail of the one server part that
    # waited for it (by cause, not by the clock: a loaded machine takes longer, the same parts fail)
    killed = [(n, rec["round"]) for n, recs in out.items() for rec in recs if any((r["error"] or "").startswith("killed after") for r in rec["results"])]
    assert len(killed) == sum(1 for n in ("n1", "n2", "n4") for rec in out[n] if rec["peer"] == "n3" and rec["role"] == "server")


def test_a_failing_part_is_recorded_and_the_next_part_runs(monkeypatch):
    calls = []

    def rails(run, p, tests, release=False, meet=None, beacon=None, watch=None, stats=None):
        calls.append((p["mode"], meet, (watch.address, watch.port, watch.round)))
        if len(calls) == 1:
            raise OSError("Too many open files")
        return [{"device": t["device"], "tcp_port": t["tcp_port"], "error": None, "gbps": 390.0} for t in tests]

    monkeypatch.setattr(perftest, "run_rails", rails)

    class Run:
        def path(self, tool):
            return "/usr/bin/" + tool

    recs = schedule.run_schedule(Run(), params(PARTS, base_port=18515))
    # each part's meeting port: the first of its round's stride after the two rails
    # and what it watches: the peer's beacon (the last port of round 0's stride) in its own round
    assert calls == [("server", 18517, ("10.0.0.2", 18530, 0)), ("client", 18549, ("10.0.0.3", 18530, 2))]
    assert recs[0]["error"] == "OSError: Too many open files"
    assert [(r["device"], r["tcp_port"], r["error"]) for r in recs[0]["results"]] == [
        ("mlx5_0", 18515, "part failed: OSError: Too many open files"),
        ("mlx5_1", 18516, "part failed: OSError: Too many open files"),
    ]
    assert "error" not in recs[1] and [r["tcp_port"] for r in recs[1]["results"]] == [18547, 18548]
