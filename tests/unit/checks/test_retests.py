"""Re-test plans (module_utils/checks/retests.py): each suspect against good peers, both ways, round by
round."""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import retests as checks_retests


def test_retest_pairs_suspects_with_good_peers_not_yet_met():
    done = [["a", "b"], ["c", "d"]]
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], done, repeats=2)
    pairs = [p for rnd in rounds for p in rnd]
    # twice as client (a's send side), twice as server (its receive side), fresh peers first
    assert pairs == [["c", "a"], ["a", "d"], ["e", "a"], ["a", "c"]]
    assert len(rounds) == 4  # a cannot be in two pairs of one round
    assert checks_retests.retest_plan(["a"], ["c", "d", "e"], done) == [[["c", "a"]], [["a", "d"]]]
    # peers under the suspect's own leaves first: no uplink on the path of its re-tests; the one
    # same-leaf peer is met again the other way rather than a peer across an uplink
    assert checks_retests.retest_plan(["a"], ["c", "d", "e"], done, group_of={"a": 1, "e": 1, "c": 0, "d": 0}) == [[["e", "a"]], [["a", "e"]]]
    # no good peer under its leaf: another suspect there (both rails proven without an uplink)
    assert checks_retests.retest_plan(["a", "b"], ["c"], [], group_of={"a": 1, "b": 1, "c": 0}) == [[["b", "a"]], [["a", "b"]]]
    # per-suspect repeats; a spare node (failed on other rails only) serves a suspect of another rail
    rounds = checks_retests.retest_plan(["a"], [], [], {"a": 2}, None, {"f": {"mlx5_0"}, "g": {"mlx5_1"}}, {"a": {"mlx5_1"}})
    assert [p for rnd in rounds for p in rnd] == [["f", "a"], ["a", "f"], ["f", "a"], ["a", "f"]]
    # two suspects share rounds when their peers differ
    rounds = checks_retests.retest_plan(["a", "b"], ["c", "d"], [], repeats=2)
    for rnd in rounds:
        used = [x for p in rnd for x in p]
        assert len(used) == len(set(used))
    assert {frozenset(p) for rnd in rounds for p in rnd} == {frozenset(x) for x in (("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"))}


def test_retest_of_an_uplinks_victims_takes_two_rounds_whatever_their_number():
    # 12 suspects under one leaf group, no good node there (a bad uplink failed every one of them): they
    # pair among themselves, each tested once each way, in 2 rounds, not queued for the good nodes
    victims = [f"v{i}" for i in range(12)]
    group = {n: 0 for n in victims} | {f"g{i}": 1 for i in range(20)}
    rounds = checks_retests.retest_plan(victims, [f"g{i}" for i in range(20)], [], 1, group)
    assert len(rounds) == 2
    for rnd in rounds:
        used = [x for p in rnd for x in p]
        assert len(used) == len(set(used))
    pairs = [p for rnd in rounds for p in rnd]
    assert all(set(p) <= set(victims) for p in pairs)  # same leaf: no uplink on the path
    for v in victims:
        assert sum(p[1] == v for p in pairs) >= 1 and sum(p[0] == v for p in pairs) >= 1
    # 30 of them under a leaf with 2 good nodes, each needing only its send side once: 2 rounds
    victims = [f"v{i}" for i in range(30)]
    group = {n: 0 for n in victims + ["g0", "g1"]}
    rounds = checks_retests.retest_plan(victims, ["g0", "g1"], [], {v: {"send": 1, "receive": 0} for v in victims}, group)
    assert len(rounds) == 2  # 30 tests, at most 16 pairs a round: the done ones serve the rest
    sent = {p[1] for rnd in rounds for p in rnd}
    assert sent == set(victims)


def test_retest_plan_per_direction_and_the_open_direction_first():
    # receive only, twice: always the server; a settled send side gets no test
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], [], {"a": {"send": 0, "receive": 2}})
    assert [p for rnd in rounds for p in rnd] == [["a", "c"], ["a", "d"]]
    # both ways, 3 each, receive first: every receive test before any send test
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], [], {"a": {"send": 3, "receive": 3}}, first={"a": "receive"})
    assert [p.index("a") for rnd in rounds for p in rnd] == [0, 0, 0, 1, 1, 1]
    # without a first direction they alternate, send first
    rounds = checks_retests.retest_plan(["a"], ["c", "d", "e"], [], {"a": {"send": 2, "receive": 2}})
    assert [p.index("a") for rnd in rounds for p in rnd] == [1, 0, 1, 0]
    # a suspect that needs the other direction is the peer: one test serves both
    rounds = checks_retests.retest_plan(["a", "b"], [], [], {"a": {"send": 1, "receive": 0}, "b": {"send": 0, "receive": 1}}, {"a": 0, "b": 0})
    assert rounds == [[["b", "a"]]]
    # a known-good peer before a suspect of the same rail; a suspect of another rail before one of the same
    group = {n: 0 for n in "abcg"}
    rounds = checks_retests.retest_plan(
        ["a", "b", "c"],
        ["g"],
        [],
        {"a": {"send": 1, "receive": 0}, "b": {"send": 0, "receive": 1}, "c": {"send": 0, "receive": 1}},
        group,
        rails_of={"a": {"mlx5_0"}, "b": {"mlx5_0"}, "c": {"mlx5_1"}},
    )
    assert rounds[0][0] == ["g", "a"]
    rounds = checks_retests.retest_plan(
        ["a", "b", "c"],
        [],
        [],
        {"a": {"send": 1, "receive": 0}, "b": {"send": 0, "receive": 1}, "c": {"send": 0, "receive": 1}},
        group,
        rails_of={"a": {"mlx5_0"}, "b": {"mlx5_0"}, "c": {"mlx5_1"}},
    )
    assert rounds[0][0] == ["c", "a"]
