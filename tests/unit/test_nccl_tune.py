"""NCCL tuning (issue 28 item 4): the sweep's decision rule, its bounds, the tuned-settings file,
its way into the one derivation of NCCL's environment, the report section and the role variables."""
import json

import pytest

from ansible_collections.linerate.fabric.plugins.filter.nccl_env import nccl_env_settings, nccl_tuned_settings
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables as iv
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune as nt
from ansible_collections.linerate.fabric.plugins.module_utils.checks import report as rep
from ansible_collections.linerate.fabric.plugins.modules.nccl_tune import sweep_values


# ---------------------------------------------------------------- the decision rule

def test_a_value_is_kept_only_at_the_margin_and_above_every_baseline_run():
    base = [100.0, 101.0, 99.0]
    kept = nt.judge(base, [107.0, 106.0, 108.0], 5)
    assert kept["kept"] and kept["gain_percent"] == 7.0 and kept["median"] == 107.0
    below = nt.judge(base, [104.0, 104.5, 103.9], 5)
    assert not below["kept"] and "below the margin 5 %" in below["why"]
    # the median beats the margin, but one run is no better than the baseline's best: noise, not kept
    noisy = nt.judge(base, [110.0, 100.5, 112.0], 5)
    assert not noisy["kept"] and "within noise" in noisy["why"]
    # exactly at the margin counts; equal to the baseline's best run does not
    assert nt.judge([100.0, 100.0], [105.0, 105.0], 5)["kept"]
    assert not nt.judge([100.0, 106.0], [106.0, 107.0], 5)["kept"]


def test_a_failed_candidate_and_a_tie_keep_the_default():
    assert nt.judge([100.0] * 3, [200.0] * 3, 5, failed=True) == {
        "median": 200.0, "min": 200.0, "max": 200.0, "gain_percent": None, "spread_percent": None,
        "kept": False, "why": "failed"}
    tie = nt.judge([100.0] * 3, [100.0] * 3, 5)
    assert not tie["kept"] and tie["gain_percent"] == 0.0
    assert nt.choose([("Ring", tie), ("Tree", {"kept": False})]) is None


def test_of_several_kept_values_the_highest_median_wins_and_equal_medians_keep_the_first():
    a = nt.judge([100.0] * 3, [110.0] * 3, 5)
    b = nt.judge([100.0] * 3, [120.0] * 3, 5)
    c = nt.judge([100.0] * 3, [120.0] * 3, 5)
    assert nt.choose([("2097152", a), ("8388608", b), ("16777216", c)]) == "8388608"


def fake_nccl(table, version="2.21.5", gdr=True, warn=None):
    """run(env) -> a result like the nccl_tests module's, avg bus bandwidth from table[(key, value)] (a list: one
    per run, in turn), the baseline under ('baseline',); records every env it was given."""
    calls, seen = [], {}

    def run(env):
        calls.append(dict(env))
        swept = [(k, v) for k, v in env.items() if k in nt.KEYS and (k, v) in table]
        key = swept[-1] if swept else ("baseline",)
        n = seen.get(key, 0)
        seen[key] = n + 1
        value = table[key][n % len(table[key])]
        warnings = [warn] if warn and key != ("baseline",) else []
        return {"avg_busbw": value, "busbw": value, "error": None if value else "mpirun exit status 3",
                "passed": bool(value), "parsed": {"nccl_version": version, "nccl_warnings": warnings},
                "logs": {"10.0.0.1": {"gdr": gdr}, "10.0.0.2": {"gdr": gdr}}}
    return run, calls


def budget(max_runs=100, seconds=1000):
    return nt.Budget(max_runs, seconds, clock=lambda: 0.0)


VALUES = [{"key": "NCCL_ALGO", "values": ["Ring", "Tree"]}, {"key": "NCCL_PROTO", "values": ["Simple", "LL"]}]


def test_the_sweep_keeps_the_winner_and_it_becomes_the_baseline_of_the_next_key():
    run, calls = fake_nccl({("baseline",): [70.0, 71.0, 69.0], ("NCCL_ALGO", "Ring"): [78.0, 79.0, 78.5],
                            ("NCCL_ALGO", "Tree"): [60.0], ("NCCL_PROTO", "Simple"): [80.0, 79.0, 81.0],
                            ("NCCL_PROTO", "LL"): [40.0]})
    out = nt.sweep(run, VALUES, 3, 5, {}, budget())
    # Simple beats Ring's runs (the new baseline) by less than 5 %: only NCCL_ALGO is kept
    assert out["settings"] == {"NCCL_ALGO": "Ring"}
    assert out["runs"] == 15 and len(calls) == 15 and out["stopped"] is None
    # every PROTO run carries the accepted NCCL_ALGO
    assert all(c.get("NCCL_ALGO") == "Ring" for c in calls[9:])
    rows = {(r["key"], r["value"]): r for r in out["rows"]}
    assert rows[("baseline", "NCCL default")]["median"] == 70.0
    assert rows[("NCCL_ALGO", "Ring")]["winner"] is True and rows[("NCCL_ALGO", "Tree")]["winner"] is False
    assert rows[("NCCL_PROTO", "Simple")]["gain_percent"] == pytest.approx((80 / 78.5 - 1) * 100, abs=0.01)
    assert not rows[("NCCL_PROTO", "Simple")]["kept"]


def test_the_bounds_stop_the_sweep_and_what_was_not_run_decides_nothing():
    run, calls = fake_nccl({("baseline",): [70.0], ("NCCL_ALGO", "Ring"): [90.0], ("NCCL_ALGO", "Tree"): [99.0],
                            ("NCCL_PROTO", "Simple"): [99.0], ("NCCL_PROTO", "LL"): [99.0]})
    out = nt.sweep(run, VALUES, 2, 5, {}, budget(max_runs=4))
    assert len(calls) == 4 and out["runs"] == 4
    assert out["settings"] == {"NCCL_ALGO": "Ring"}
    assert "run bound (4 runs)" in out["stopped"]
    rows = {(r["key"], r["value"]): r for r in out["rows"]}
    assert rows[("NCCL_ALGO", "Tree")]["why"].startswith("not run") and not rows[("NCCL_ALGO", "Tree")]["kept"]
    assert rows[("NCCL_PROTO", "LL")]["why"].startswith("not run")


def test_the_time_budget_holds_no_run_longer_than_the_longest_so_far():
    now = [0.0]

    def clock():
        return now[0]
    b = nt.Budget(100, 25, clock=clock)

    def run(env):
        now[0] += 10.0
        return {"avg_busbw": 50.0, "passed": True, "parsed": {}, "logs": {}}
    out = nt.sweep(run, VALUES, 2, 5, {}, b)
    assert out["runs"] == 2 and "time budget (25 s)" in out["stopped"]


def test_values_the_release_refuses_are_skipped_and_a_warned_value_fails():
    run, calls = fake_nccl({("baseline",): [70.0], ("NCCL_ALGO", "PAT"): [99.0], ("NCCL_ALGO", "Ring"): [99.0]},
                           version="2.21.5", warn='NCCL WARN Unrecognized element token "x" when parsing "x"')
    out = nt.sweep(run, [{"key": "NCCL_ALGO", "values": ["PAT", "Ring"]}], 2, 5, {}, budget())
    rows = {r["value"]: r for r in out["rows"]}
    assert rows["PAT"]["why"].startswith("skipped: PAT: not an algorithm of NCCL 2.21.5")
    assert not any(c.get("NCCL_ALGO") == "PAT" for c in calls)
    assert rows["Ring"]["why"].startswith("failed: NCCL WARN Unrecognized") and out["settings"] == {}


def test_gdr_level_is_swept_only_where_gpudirect_is_used_and_not_at_the_intents_level():
    table = {("baseline",): [70.0], ("NCCL_NET_GDR_LEVEL", "SYS"): [90.0]}
    values = [{"key": "NCCL_NET_GDR_LEVEL", "values": ["PHB", "SYS"]}]
    run, calls = fake_nccl(table, gdr=False)
    out = nt.sweep(run, values, 2, 5, {}, budget(), gdr_baseline="PHB")
    assert out["settings"] == {} and len(calls) == 2
    assert all("GPUDirect RDMA is not in use" in r["why"] for r in out["rows"][1:])
    run, calls = fake_nccl(table, gdr=True)
    out = nt.sweep(run, values, 2, 5, {}, budget(), gdr_baseline="PHB")
    assert out["settings"] == {"NCCL_NET_GDR_LEVEL": "SYS"}
    assert out["rows"][1]["why"] == "skipped: the level NCCL uses without tuning"


def test_a_failed_baseline_fails_the_sweep_and_keeps_nothing():
    run, calls = fake_nccl({("baseline",): [70.0, 0.0], ("NCCL_ALGO", "Ring"): [99.0]})
    out = nt.sweep(run, VALUES, 2, 5, {}, budget())
    assert out["settings"] == {} and out["failed"].startswith("the baseline failed: mpirun exit status 3")
    assert len(calls) == 2


def test_the_baseline_neutralises_what_the_tuned_file_sets_now():
    assert nt.baseline_env({}, "PHB") == {}
    env = nt.baseline_env({"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128", "NCCL_BUFFSIZE": "8388608",
                           "NCCL_NTHREADS": "256", "NCCL_NET_GDR_LEVEL": "SYS"}, "PHB")
    assert env == {"NCCL_ALGO": "Tree,Ring,CollNetDirect,CollNetChain,NVLS,NVLSTree,PAT",
                   "NCCL_PROTO": "LL,LL128,Simple", "NCCL_BUFFSIZE": "-2", "NCCL_NTHREADS": "-2",
                   "NCCL_NET_GDR_LEVEL": "PHB"}
    run, calls = fake_nccl({("baseline",): [70.0], ("NCCL_ALGO", "Ring"): [90.0]})
    nt.sweep(run, [{"key": "NCCL_ALGO", "values": ["Ring"]}], 2, 5, {"NCCL_ALGO": "x,y"}, budget())
    assert calls[0]["NCCL_ALGO"] == "x,y" and calls[2]["NCCL_ALGO"] == "Ring"


@pytest.mark.parametrize("key,value,ok", [
    ("NCCL_ALGO", "ring", True), ("NCCL_ALGO", "PAT", True), ("NCCL_ALGO", "Foo", False), ("NCCL_ALGO", "", False),
    ("NCCL_PROTO", "LL128", True), ("NCCL_PROTO", "LL256", False),
    ("NCCL_BUFFSIZE", 65536, True), ("NCCL_BUFFSIZE", 65535, False), ("NCCL_BUFFSIZE", "4M", False),
    ("NCCL_NTHREADS", 64, True), ("NCCL_NTHREADS", 512, True), ("NCCL_NTHREADS", 544, False),
    ("NCCL_NTHREADS", 100, False), ("NCCL_NTHREADS", 32, False), ("NCCL_NTHREADS", True, False),
    ("NCCL_NET_GDR_LEVEL", "SYS", True), ("NCCL_NET_GDR_LEVEL", "sys", False), ("NCCL_IB_TC", "1", False)])
def test_values_as_nccl_reads_them(key, value, ok):
    assert (nt.value_problem(key, value) is None) is ok
    assert nt.value_problem("NCCL_ALGO", "PAT", "2.22.3") is not None
    assert nt.value_problem("NCCL_ALGO", "PAT", "2.23.4") is None


def test_module_values_option_is_checked():
    assert sweep_values([{"key": "NCCL_ALGO", "values": ["Ring", "Tree"]}]) == (
        [{"key": "NCCL_ALGO", "values": ["Ring", "Tree"]}], None)
    assert "key 'NCCL_IB_HCA' is not allowed" in sweep_values([{"key": "NCCL_IB_HCA", "values": ["x"]}])[1]
    assert "'Bogus' is not allowed" in sweep_values([{"key": "NCCL_PROTO", "values": ["Bogus"]}])[1]
    assert "non-empty list" in sweep_values([{"key": "NCCL_PROTO", "values": []}])[1]


# ---------------------------------------------------------------- the file and the derivation

CONTEXT = {"test": "all_reduce_perf", "nodes": 4, "nccl_version": "2.21.5"}


def test_the_same_winner_writes_the_same_bytes_and_reads_back():
    one = nt.tuned_document({"NCCL_PROTO": "Simple", "NCCL_ALGO": "Ring"}, CONTEXT)
    assert one == nt.tuned_document({"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, dict(reversed(CONTEXT.items())))
    assert one != nt.tuned_document({"NCCL_ALGO": "Tree"}, CONTEXT)
    assert json.loads(one) == {"version": 1, "settings": {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"},
                               "measured_on": CONTEXT}
    assert nccl_tuned_settings(one) == {"settings": {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, "problems": []}
    assert nccl_tuned_settings("") == {"settings": {}, "problems": []}


@pytest.mark.parametrize("text,problem", [
    ("{not json", "not JSON"), ('{"version": 2, "settings": {}}', "not a version 1 document"),
    ('{"version": 1, "settings": {"NCCL_ALGO": "Warp"}}', "tuned NCCL_ALGO=Warp"),
    ('{"version": 1, "settings": {"NCCL_IB_HCA": "mlx5_0"}}', "not a key the sweep tunes")])
def test_a_broken_tuned_file_is_a_problem(text, problem):
    out = nccl_tuned_settings(text)
    assert out["settings"] == {} and problem in out["problems"][0]


RDMA = {"ports": [{"device": "mlx5_0", "port": 1, "netdev": "eth1", "up": True, "roce_v2_ipv4_gid_index": 3}]}
CABLED = [{"device": "mlx5_0", "netdev": "eth1"}]


def test_the_winner_enters_the_one_derivation_under_the_overrides():
    opts = {"transport": "roce", "ib_tc": 104, "gdr_level": "PHB", "net": "IB",
            "tuned": {"NCCL_ALGO": "Ring", "NCCL_NET_GDR_LEVEL": "SYS"}}
    out = nccl_env_settings(RDMA, CABLED, opts)
    assert out["problems"] == []
    assert out["settings"] == {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "104",
                               "NCCL_NET_GDR_LEVEL": "SYS", "NCCL_NET": "IB", "NCCL_ALGO": "Ring"}
    over = nccl_env_settings(RDMA, CABLED, dict(opts, intent_overrides={"NCCL_ALGO": "Tree"}))
    assert over["settings"]["NCCL_ALGO"] == "Tree"
    bad = nccl_env_settings(RDMA, CABLED, dict(opts, tuned={"NCCL_PROTO": "Fast"}))
    assert "NCCL_PROTO" not in bad["settings"] and "tuned NCCL_PROTO=Fast" in bad["problems"][0]
    assert "NCCL_ALGO" not in nccl_env_settings(RDMA, CABLED, dict(opts, tuned={}))["settings"]


# ---------------------------------------------------------------- the report

def test_the_report_carries_the_sweep_table():
    run, _ = fake_nccl({("baseline",): [70.0, 71.0], ("NCCL_ALGO", "Ring"): [80.0, 81.0], ("NCCL_ALGO", "Tree"): [60.0]})
    out = nt.sweep(run, VALUES[:1], 2, 5, {}, budget())
    section = rep.tuning_section(dict(out, margin_percent=5.0, repeats=2, file="/o/nccl/tuned.json"))
    assert section["settings"] == {"NCCL_ALGO": "Ring"} and section["metric"] == "avg_busbw_gbytes"
    assert [(r["key"], r["value"], r["kept"]) for r in section["rows"]] == [
        ("baseline", "NCCL default", None), ("NCCL_ALGO", "Ring", True), ("NCCL_ALGO", "Tree", False)]
    assert json.loads(json.dumps(section)) == section
    text = "\n".join(rep.tuning_lines({"nccl_tuning": section}))
    assert "Winner: `NCCL_ALGO=Ring`" in text and "by 5 %" in text
    assert "| NCCL_ALGO | Ring | 80.00, 81.00 | 80.50 | +14.2 % | **winner** |" in text
    assert rep.tuning_lines({}) == []


# ---------------------------------------------------------------- the role variables

def test_the_sweeps_variables_are_validated_with_key_value_and_allowed():
    good = {"verify_fabric_nccl_tune": True, "verify_fabric_nccl_tune_repeats": 3,
            "verify_fabric_nccl_tune_margin_percent": 5, "verify_fabric_nccl_tune_values": {"NCCL_ALGO": ["Ring"]},
            "verify_fabric_nccl_tune_max_runs": 40, "verify_fabric_nccl_tune_time_budget": 900,
            "verify_fabric_nccl_tune_min_bytes": "1M", "nccl_env_tuned_file": "/tmp/x/tuned.json"}
    assert iv.validate_host(good) == []
    bad = iv.validate_host({"verify_fabric_nccl_tune": "maybe", "verify_fabric_nccl_tune_repeats": 1,
                                     "verify_fabric_nccl_tune_margin_percent": 0.1,
                                     "verify_fabric_nccl_tune_values": {"NCCL_ALGO": ["Warp"], "NCCL_IB_HCA": ["x"]},
                                     "verify_fabric_nccl_tune_max_runs": 1})
    text = "\n".join(bad)
    assert "verify_fabric_nccl_tune: 'maybe' is not allowed (allowed: a boolean" in text
    assert "verify_fabric_nccl_tune_repeats: 1 is not allowed (allowed: an integer 2..10" in text
    assert "verify_fabric_nccl_tune_margin_percent: 0.1 is not allowed (allowed: a number 0.5..100" in text
    assert "verify_fabric_nccl_tune_values.NCCL_ALGO[0]: 'Warp' is not allowed (allowed: Warp: not an algorithm" in text
    assert "verify_fabric_nccl_tune_values.NCCL_IB_HCA: '(key)' is not allowed" in text
    assert "verify_fabric_nccl_tune_max_runs: 1 is not allowed (allowed: an integer 2..500" in text
    assert len(bad) == 6
