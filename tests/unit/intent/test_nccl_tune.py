"""NCCL tuning NCCL's maintainers would accept (issue 35 item 4, docs/tuning.md): winners are
example-tuner-plugin rows scoped to what was measured, kept only when the tuner file reproduces them and
every collective is no worse with it at two or more scales; baseline and candidates interleaved and
repeated; the tuned file's history and rollback; a missing tuned file while tuning is in use is a
finding. That no Debugging-section variable is ever written, and the tuned file itself:
test_nccl_tuned.py."""

import json
import os
import random

import pytest

from ansible_collections.linerate.fabric.plugins.filter.nccl_env import nccl_tuned_settings
from ansible_collections.linerate.fabric.plugins.module_utils.checks import nccl as checks_nccl
from ansible_collections.linerate.fabric.plugins.module_utils.report import report as rep
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.findings import FAULT_CODES
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune as nt
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tuned
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables
from ansible_collections.linerate.fabric.plugins.modules import nccl_tune, nccl_tuned_file
from module_harness import Tools, run_module

MIB = 1 << 20
SIZES = [MIB << k for k in range(11)]  # 1M .. 1G, the sweep's default range
RING_LL128 = {"algorithm": "Ring", "protocol": "LL128"}
CANDIDATES = [dict(c) for c in nt.DEFAULT_CANDIDATES]


# ---------------------------------------------------------------- a fake fabric


def make_result(busbw, nodes, version="2.21.5"):
    rows = [{"size": s, "out_of_place": {"busbw": round(b, 3)}} for s, b in busbw.items()]
    return {"error": None, "passed": True, "parsed": {"nccl_version": version, "nccl_warnings": [], "rows": rows}, "nodes": nodes}


class Fabric:
    """run(nodes, test, env) -> a nccl_tests-like result: a healthy fabric where NCCL's pick is the best at
    every size (every forced candidate is no better), plus ``quirk``: {(algorithm, protocol): (lo, hi, gain)}
    makes that candidate (forced, or chosen by a tuner file that names it) faster over lo..hi; ``worse``:
    {(nodes, test): factor} makes a collective slower with the tuner plugin loaded. Noise: up to ``noise``
    (relative), seeded. Records every call."""

    def __init__(self, seed=0, noise=0.01, quirk=None, worse=None, tuner_works=True, tuner_rows=None):
        self.rng = random.Random(seed)
        self.noise, self.quirk, self.worse = noise, quirk or {}, worse or {}
        self.tuner_works, self.tuner_rows = tuner_works, tuner_rows
        self.calls = []

    def base(self, size):
        return 90.0 * size / (size + 8 * MIB)

    def __call__(self, nodes, test, env):
        self.calls.append((nodes, test, dict(env)))
        forced = (env.get("NCCL_ALGO"), env.get("NCCL_PROTO")) if "NCCL_ALGO" in env else None
        out = {}
        for size in SIZES:
            bw = self.base(size)
            pick = forced
            if forced and forced != ("Ring", "LL128"):  # the healthy pick is Ring/LL128 (here): others lose
                bw *= 0.9
            if "NCCL_TUNER_PLUGIN" in env and self.tuner_works and test == "all_reduce_perf":
                for r in self.tuner_rows or []:
                    if r["nodes"] == nodes and r["min_bytes"] <= size <= r["max_bytes"]:
                        pick = (
                            {v: k for k, v in nccl_tuned.TUNER_ALGO.items()}[r["algorithm"]],
                            {v: k for k, v in nccl_tuned.TUNER_PROTO.items()}[r["protocol"]],
                        )
            for (algo, proto), (lo, hi, gain) in self.quirk.items():
                if pick == (algo, proto) and lo <= size <= hi and test == "all_reduce_perf":
                    bw = self.base(size) * (1 + gain)
            if "NCCL_TUNER_PLUGIN" in env:
                bw *= self.worse.get((nodes, test), 1.0)
            out[size] = bw * (1 - self.rng.uniform(0, self.noise))
        return make_result(out, nodes)


def budget(runs=1000):
    return nt.Budget(runs, 10**9)


def sweep(fabric, scales=(2, 4), candidates=CANDIDATES, repeats=3, margin=5.0, min_points=2):
    return nt.sweep(fabric, "all_reduce_perf", list(scales), candidates, repeats, margin, budget(), 8, min_points)


# ---------------------------------------------------------------- interleaving


def test_baseline_and_candidates_are_interleaved_every_round_rotated():
    assert nt.interleaved(3, 3) == [0, 1, 2, 1, 2, 0, 2, 0, 1]
    assert nt.interleaved(2, 4) == [0, 1, 1, 0, 0, 1, 1, 0]
    fab = Fabric()
    sweep(fab, scales=(2,), candidates=[RING_LL128, {"algorithm": "Tree", "protocol": "LL"}], repeats=3)
    labels = ["base" if "NCCL_ALGO" not in env else env["NCCL_ALGO"] + "/" + env["NCCL_PROTO"] for _n, _t, env in fab.calls]
    assert labels == ["base", "Ring/LL128", "Tree/LL", "Ring/LL128", "Tree/LL", "base", "Tree/LL", "base", "Ring/LL128"]
    # each round holds every configuration once: drift hits the baseline and the candidates alike
    for r in range(3):
        assert sorted(labels[3 * r : 3 * r + 3]) == ["Ring/LL128", "Tree/LL", "base"]


def test_the_budget_cuts_the_interleaved_runs_and_a_cut_scale_decides_nothing():
    fab = Fabric(quirk={("Ring", "LL128"): (64 * MIB, 256 * MIB, 0.2)})
    out = nt.sweep(fab, "all_reduce_perf", [2, 4], CANDIDATES, 3, 5.0, nt.Budget(25, 10**9), 8)
    # scale 2 takes 7 x 3 = 21 runs; scale 4 is cut after 4: only scale 2's rows are proposed
    assert out["runs"] == 25 and "run bound (25 runs)" in out["stopped"]
    assert out["scales"] == [2] and {r["nodes"] for r in out["proposed"]} == {2}


# ---------------------------------------------------------------- the decision per size


def test_a_size_is_won_only_at_the_margin_with_every_run_above_the_baselines_best():
    base = [{1: 100.0}, {1: 101.0}, {1: 99.0}]
    assert nt.per_size(base, [{1: 107.0}, {1: 106.0}, {1: 108.0}], 5)[1]["beats"]
    assert not nt.per_size(base, [{1: 104.0}, {1: 104.5}, {1: 103.9}], 5)[1]["beats"]  # below the margin
    assert not nt.per_size(base, [{1: 110.0}, {1: 100.5}, {1: 112.0}], 5)[1]["beats"]  # one run in the noise
    assert nt.per_size([{1: 100.0}] * 2, [{1: 105.0}] * 2, 5)[1]["beats"]  # exactly the margin
    assert not nt.per_size([{1: 100.0}, {1: 106.0}], [{1: 106.0}, {1: 107.0}], 5)[1]["beats"]  # equal to the best


def test_candidates_within_each_others_noise_are_equal_and_the_first_listed_wins():
    base = [{1: 100.0}] * 3
    a = nt.per_size(base, [{1: 120.0}, {1: 121.0}, {1: 119.5}], 5)  # listed first, lower median
    b = nt.per_size(base, [{1: 121.0}, {1: 121.5}, {1: 120.5}], 5)  # higher median, overlapping a
    c = nt.per_size(base, [{1: 130.0}, {1: 131.0}, {1: 130.5}], 5)  # clearly the best
    assert nt.pick_per_size([a, b]) == {1: 0}
    assert nt.pick_per_size([a, b, c]) == {1: 2}
    assert nt.ranges({1: 0, 2: 0, 4: 1, 8: 1, 16: 1, 32: 0}, [1, 2, 4, 8, 16, 32, 64], 2) == [(1, 2, 0, 2), (4, 16, 1, 3)]
    assert nt.ranges({1: 0}, [1, 2], 2) == []  # one size alone is not a range


@pytest.mark.parametrize("seed", range(8))
def test_a_healthy_fabric_gives_no_winner(seed):
    out = sweep(Fabric(seed=seed))
    assert out["proposed"] == [] and out["failed"] is None and out["scales"] == [2, 4]
    assert all(not r["kept"] for r in out["rows"] if r["kept"] is not None)
    assert out["runs"] == 2 * (1 + len(CANDIDATES)) * 3


@pytest.mark.parametrize("seed", range(4))
def test_a_quirk_gives_a_winner_scoped_to_the_collective_size_range_and_scale(seed):
    fab = Fabric(seed=seed, quirk={("Ring", "LL128"): (64 * MIB, 256 * MIB, 0.2)})
    out = sweep(fab)
    assert [{k: r[k] for k in nccl_tuned.TUNER_FIELDS} for r in out["proposed"]] == [
        {
            "collective": "allreduce",
            "min_bytes": 64 * MIB,
            "max_bytes": 256 * MIB,
            "algorithm": "ring",
            "protocol": "ll128",
            "channels": -1,
            "nodes": n,
            "ranks": n * 8,
            "pipe_ops": -1,
            "reg_buff": -1,
        }
        for n in (2, 4)
    ]
    winner = [r for r in out["rows"] if r.get("winner")]
    assert [(r["key"], r["value"]) for r in winner] == [("all_reduce_perf x2", "Ring/LL128"), ("all_reduce_perf x4", "Ring/LL128")]
    assert "64M..256M" in winner[0]["why"]
    # a quirk over one measured size only is not enough (min_points 2)
    one = sweep(Fabric(seed=seed, quirk={("Ring", "LL128"): (64 * MIB, 64 * MIB, 0.2)}))
    assert one["proposed"] == []


def test_a_failed_baseline_fails_the_sweep_and_a_failed_candidate_is_out():
    def run(nodes, test, env):
        if "NCCL_ALGO" not in env:
            return {"error": "mpirun exit status 3", "passed": False, "parsed": None}
        return make_result({s: 90.0 for s in SIZES}, nodes)

    out = nt.sweep(run, "all_reduce_perf", [2, 4], [RING_LL128], 2, 5.0, budget(), 8)
    assert out["failed"] == "all_reduce_perf on 2 nodes: the baseline failed: mpirun exit status 3"
    fab = Fabric(quirk={("Ring", "LL128"): (64 * MIB, 256 * MIB, 0.2)})

    def warned(nodes, test, env):
        result = fab(nodes, test, env)
        if env.get("NCCL_PROTO") == "LL128":  # NCCL >= 2.24 refuses a name it does not know: a warning
            result["parsed"]["nccl_warnings"] = ['Unrecognized element token "LL128" when parsing "LL128"']
        return result

    out = nt.sweep(warned, "all_reduce_perf", [2, 4], CANDIDATES, 3, 5.0, budget(), 8)
    assert out["proposed"] == []
    assert [r["why"][:7] for r in out["rows"] if r["value"] == "Ring/LL128"] == ["failed:"] * 2


# ---------------------------------------------------------------- the proof with the tuner plugin

QUIRK = {("Ring", "LL128"): (64 * MIB, 256 * MIB, 0.2)}
ENV = {"NCCL_TUNER_PLUGIN": nccl_tuned.TUNER_PLUGIN, "NCCL_TUNER_CONFIG_FILE": "/var/lib/linerate/stage.conf"}
TESTS = ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf"]


def proposed(seed=0):
    return sweep(Fabric(seed=seed, quirk=QUIRK))["proposed"]


def confirm(fab, rows, scales=(2, 4)):
    return nt.confirm(fab, TESTS, list(scales), ENV, rows, 3, 5.0, 3.0, budget())


def test_a_row_is_written_only_when_the_tuner_file_reproduces_it_and_nothing_is_worse_at_two_scales():
    rows = proposed()
    fab = Fabric(quirk=QUIRK, tuner_rows=rows)
    out = confirm(fab, rows)
    assert out["why"] is None and [(r["nodes"], r["min_bytes"], r["max_bytes"]) for r in out["rows"]] == [(2, 64 * MIB, 256 * MIB), (4, 64 * MIB, 256 * MIB)]
    # every collective at every scale, baseline and tuner file interleaved
    assert sorted({(n, t) for n, t, _e in fab.calls}) == sorted((n, t) for n in (2, 4) for t in TESTS)
    assert [("NCCL_TUNER_PLUGIN" in e) for _n, _t, e in fab.calls[:6]] == [False, True, True, False, False, True]
    assert all(not nccl_tuned.debugging_keys(e) for _n, _t, e in fab.calls)  # the proof forces nothing


def test_one_collective_worse_at_one_scale_means_no_winner():
    rows = proposed()
    out = confirm(Fabric(quirk=QUIRK, tuner_rows=rows, worse={(2, "all_gather_perf"): 0.9}), rows)
    assert out["rows"] == [] and out["why"] == "no winner: all_gather_perf on 2 nodes is worse with the tuner file"
    # a loss inside the tolerance (and the noise) is not worse
    assert confirm(Fabric(quirk=QUIRK, tuner_rows=rows, worse={(2, "all_gather_perf"): 0.99}), rows)["rows"]


def test_fewer_than_two_scales_or_a_file_the_plugin_does_not_apply_means_no_winner():
    rows = proposed()
    one = confirm(Fabric(quirk=QUIRK, tuner_rows=rows), [r for r in rows if r["nodes"] == 4], scales=(4,))
    assert one["rows"] == [] and "a winner needs two or more" in one["why"]
    lost = confirm(Fabric(quirk=QUIRK, tuner_rows=rows, tuner_works=False), rows)
    assert lost["rows"] == [] and "the tuner file did not reproduce the gain" in lost["why"]


def test_a_failed_proof_run_means_no_winner():
    rows = proposed()
    fab = Fabric(quirk=QUIRK, tuner_rows=rows)

    def run(nodes, test, env):
        if test == "alltoall_perf" and "NCCL_TUNER_PLUGIN" in env:
            return {"error": "mpirun exit status 3", "passed": False, "parsed": None}
        return fab(nodes, test, env)

    out = nt.confirm(run, TESTS, [2, 4], ENV, rows, 3, 5.0, 3.0, budget())
    assert out["rows"] == [] and "alltoall_perf on 2 nodes could not be measured" in out["why"]


# ---------------------------------------------------------------- module nccl_tuned_file: the tuned file's history and rollback


def test_module_nccl_tuned_file_writes_keeps_history_is_idempotent_and_rolls_back(tmp_path, capsys):
    path = str(tmp_path / "nccl" / "tuned.json")
    first, second = nccl_tuned.tuned_document([], {"n": 1}), nccl_tuned.tuned_document(proposed(), {"n": 2})
    res = run_module(nccl_tuned_file.main, {"path": path, "document": first}, Tools({}), capsys)
    assert res["changed"] and open(path).read() == first
    assert [h["absent"] for h in res["history"]] == [True, False]
    res = run_module(nccl_tuned_file.main, {"path": path, "document": first}, Tools({}), capsys)
    assert res["changed"] is False
    res = run_module(nccl_tuned_file.main, {"path": path, "document": second}, Tools({}), capsys, diff=True)
    assert res["changed"] and open(path).read() == second and res["diff"]["before"] == first
    hist = json.loads(open(str(tmp_path / "nccl" / "tuned.history.json")).read())
    assert [e["document"] for e in hist["entries"]] == [None, first, second]
    res = run_module(nccl_tuned_file.main, {"path": path, "rollback": True}, Tools({}), capsys)
    assert res["changed"] and res["restored"] == "history entry 2" and open(path).read() == first
    res = run_module(nccl_tuned_file.main, {"path": path, "rollback": True}, Tools({}), capsys)
    assert res["changed"] is False and open(path).read() == first
    res = run_module(nccl_tuned_file.main, {"path": path, "rollback": True, "rollback_to": 1}, Tools({}), capsys, check=True)
    assert res["changed"] and os.path.exists(path)  # check mode removes nothing
    run_module(nccl_tuned_file.main, {"path": path, "rollback": True, "rollback_to": 1}, Tools({}), capsys)
    assert not os.path.exists(path)


def test_module_nccl_tuned_file_refuses_a_debugging_variable_before_writing(tmp_path, capsys):
    path = str(tmp_path / "tuned.json")
    v1 = json.dumps({"version": 1, "settings": {"NCCL_PROTO": "LL128"}})
    res = run_module(nccl_tuned_file.main, {"path": path, "document": v1}, Tools({}), capsys)
    assert res["failed"] and res["msg"].startswith("document: the tuned NCCL file sets NCCL_PROTO")
    assert not os.path.exists(path)
    res = run_module(nccl_tuned_file.main, {"path": path, "rollback": True}, Tools({}), capsys)
    assert res["failed"] and res["msg"] == "rollback: nothing to roll back to: the history holds 0 entries (a sweep writes two)"


# ---------------------------------------------------------------- a missing tuned file is a finding


def test_a_missing_or_unreadable_tuned_file_while_tuning_is_in_use_is_a_finding():
    assert "NCCL_TUNED_MISSING" in FAULT_CODES
    state = {"path": "/o/nccl/tuned.json", "exists": False, "readable": False, "required": True}
    (f,) = checks_nccl.tuned_file_findings("node1", state)
    assert f["code"] == "NCCL_TUNED_MISSING" and f["node"] == "node1" and "/o/nccl/tuned.json: absent" in f["message"]
    (f,) = checks_nccl.tuned_file_findings("node1", dict(state, exists=True))
    assert "not readable" in f["message"]
    (f,) = checks_nccl.tuned_file_findings("node1", dict(state, exists="True", readable="True", problems=["bad"]))
    assert ": bad while NCCL tuning is in use" in f["message"]
    assert checks_nccl.tuned_file_findings("node1", dict(state, required=False)) == []
    assert checks_nccl.tuned_file_findings("node1", dict(state, exists=True, readable=True)) == []
    # the role's reader says the same (nccl_env stops on it)
    assert "absent while NCCL tuning is in use" in nccl_tuned_settings("", state=state)["missing"]
    assert nccl_tuned_settings("", state=dict(state, required=False))["missing"] is None


# ---------------------------------------------------------------- the module's checks and plan


def test_nccl_tune_check_mode_returns_the_plan_and_runs_nothing(capsys):
    tools = Tools({})
    res = run_module(nccl_tune.main, {"hosts": ["10.0.0.1", "10.0.0.2", "10.0.0.3"], "candidates": [RING_LL128]}, tools, capsys, check=True)
    assert tools.calls == [] and res["skipped_run"] is True
    assert res["plan"] == [
        {"nodes": 2, "test": "all_reduce_perf", "configs": ["baseline", "Ring/LL128"]},
        {"nodes": 3, "test": "all_reduce_perf", "configs": ["baseline", "Ring/LL128"]},
    ]
    assert res["max_runs_planned"] == 12


@pytest.mark.parametrize(
    "args,msg",
    [
        ({"scales": [1, 2]}, "scales: 1 is not allowed (allowed: node counts 2..2, the number of hosts"),
        ({"scales": [2, 2]}, "scales: [2, 2] repeats a node count"),
        ({"candidates": [{"algorithm": "Warp", "protocol": "LL"}]}, "candidates[0]: {'algorithm': 'Warp', 'protocol': 'LL'} is not allowed (algorithm 'Warp'"),
        ({"check_tests": ["bcast_perf"]}, "check_tests: ['bcast_perf'] is not allowed"),
        ({"env": {"NCCL_DEBUG": "INFO", "NCCL_PROTO": "LL"}}, "env: NCCL_PROTO is not allowed (NCCL Debugging-section"),
        ({"phase": "confirm"}, "tuner_config_file: needed for phase confirm"),
        ({"repeats": 1}, "repeats: 1 is not allowed (allowed: 2 or more"),
    ],
)
def test_nccl_tune_refuses_bad_options_before_running(capsys, args, msg):
    tools = Tools({})
    res = run_module(nccl_tune.main, dict({"hosts": ["10.0.0.1", "10.0.0.2"]}, **args), tools, capsys)
    assert res["failed"] and res["msg"].startswith(msg) and tools.calls == []


# ---------------------------------------------------------------- the report and the role variables


def test_the_report_carries_the_sweep_table():
    out = sweep(Fabric(quirk=QUIRK))
    section = rep.tuning_section(dict(out, settings={"NCCL_TUNER_PLUGIN": nccl_tuned.TUNER_PLUGIN}, margin_percent=5.0, repeats=3, file="/o/nccl/tuned.json"))
    assert json.loads(json.dumps(section)) == section
    text = "\n".join(report_markdown.tuning_lines({"nccl_tuning": section}))
    assert "Winner: tuner rows in the tuned file (job environment `NCCL_TUNER_PLUGIN=libnccl-tuner-example.so`)" in text
    assert "| all_reduce_perf x4 | Ring/LL128 |" in text and "**winner**" in text
    none = "\n".join(nt.table_markdown({"rows": sweep(Fabric())["rows"], "why": "no winner: x"}, 5.0, 3))
    assert "Winner: none (NCCL's defaults stay): no winner: x" in none


def test_the_sweeps_variables_are_validated_with_key_value_and_allowed():
    good = {
        "verify_fabric_nccl_tune": True,
        "verify_fabric_nccl_tune_repeats": 3,
        "verify_fabric_nccl_tune_candidates": [RING_LL128],
        "verify_fabric_nccl_tune_scales": [2, 4],
        "verify_fabric_nccl_tune_check_tests": ["all_reduce_perf", "alltoall_perf"],
        "verify_fabric_nccl_tune_tolerance_percent": 3,
        "verify_fabric_nccl_tune_min_points": 2,
        "verify_fabric_nccl_tune_max_runs": 400,
        "verify_fabric_nccl_tune_rollback": False,
        "verify_fabric_nccl_tune_rollback_to": None,
        "verify_fabric_nccl_tuned_required": True,
        "verify_fabric_nccl_tune_plugin": "libnccl-tuner-example.so",
        "nccl_env_tuned_file": "/tmp/x/tuned.json",
    }
    assert variables.validate_host(good) == []
    bad = variables.validate_host(
        {
            "verify_fabric_nccl_tune_scales": [4],
            "verify_fabric_nccl_tune_check_tests": ["x"],
            "verify_fabric_nccl_tune_rollback_to": "last",
            "verify_fabric_nccl_tune_min_points": 0,
        }
    )
    text = "\n".join(bad)
    assert "verify_fabric_nccl_tune_scales: [4] is not allowed (allowed: empty (2 and all nodes)" in text
    assert "verify_fabric_nccl_tune_check_tests[0]: 'x' is not allowed (allowed: all_reduce_perf | " in text
    assert "verify_fabric_nccl_tune_rollback_to: 'last' is not allowed (allowed: null" in text
    assert "verify_fabric_nccl_tune_min_points: 0 is not allowed (allowed: an integer 1..64" in text
    assert len(bad) == 4


def test_tuning_is_off_by_default_and_the_sweep_runs_only_when_asked():
    """What tests/integration/nccl_tune/test_nccl_tune.py::test_tuning_is_off_by_default proves on the lab (matrix):
    the role defaults keep the sweep and the tuned file's requirement off, and nccl_tune.yml sweeps,
    rolls back or says it is off by those variables alone."""
    import yaml

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with open(os.path.join(root, "roles", "verify_fabric", "defaults", "main.yml"), encoding="utf-8") as fh:
        verify_defaults = yaml.safe_load(fh)
    with open(os.path.join(root, "roles", "nccl_env", "defaults", "main.yml"), encoding="utf-8") as fh:
        env_defaults = yaml.safe_load(fh)
    assert verify_defaults["verify_fabric_nccl_tune"] is False
    assert "default(false)" in env_defaults["nccl_env_tuned_required"]
    with open(os.path.join(root, "playbooks", "nccl_tune.yml"), encoding="utf-8") as fh:
        plays = yaml.safe_load(fh)
    sweep = next(p for p in plays if p.get("name") == "Sweep NCCL's settings with nccl-tests")
    tasks = {t["name"]: t for t in sweep["tasks"]}
    off = tasks["Say that the sweep is off"]
    assert "NCCL tuning is off" in off["ansible.builtin.debug"]["msg"]
    assert off["when"] == ["not (verify_fabric_nccl_tune | default(false) | bool)", "not (verify_fabric_nccl_tune_rollback | default(false) | bool)"]
    run = tasks["Run the sweep and write its result to the tuned file"]
    assert run["when"] == ["verify_fabric_nccl_tune | default(false) | bool", "not (verify_fabric_nccl_tune_rollback | default(false) | bool)"]
    rollback = tasks["Put back the previous tuned file (controller)"]
    assert rollback["when"] == "verify_fabric_nccl_tune_rollback | default(false) | bool"
