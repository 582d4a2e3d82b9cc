"""The lab's simulated nccl-tests respond to NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE, NCCL_NTHREADS, the example
tuner plugin's config and the fabric's protocol quirk as the model in docs/lab.md says
(lab/sim/linerate_lab/nccl_tuning.py), read by the real parsers: a healthy lab gives the tuning sweep no winner,
the quirk a scoped one."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import parse_nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests

import test_verify_sim as tvs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lab", "sim"))
from linerate_lab import nccl_tuning as m  # noqa: E402

from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune as nt  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tuned  # noqa: E402

MIB = 1 << 20
PEAK = 94.0  # two 400G rails, as the fabric model gives a ring


def bw(conf, size, nodes=4, version="2.21.5"):
    return m.busbw(size, nodes * 8, nodes, PEAK, m.read(conf, version))


def avg(conf, nodes=4):
    sizes = [MIB << k for k in range(11)]  # 1M .. 1G, the sweep's default range
    return sum(bw(conf, s, nodes)[0] for s in sizes) / len(sizes)


def test_ll_is_fastest_small_and_capped_large_ll128_near_simple_large():
    small, large = 64 << 10, 1 << 30
    ll, simple, ll128 = (bw({"NCCL_PROTO": p, "NCCL_ALGO": "Ring"}, small)[0] for p in ("LL", "Simple", "LL128"))
    assert ll > ll128 > simple
    ll, simple, ll128 = (bw({"NCCL_PROTO": p, "NCCL_ALGO": "Ring"}, large)[0] for p in ("LL", "Simple", "LL128"))
    assert ll < 0.55 * PEAK and 0.93 < ll128 / simple < 0.97 and simple > 0.97 * PEAK


def test_tree_wins_latency_bound_sizes_with_many_nodes_and_yields_bandwidth_bound_ones():
    tree, ring = (bw({"NCCL_ALGO": a}, 64 << 10, nodes=16)[0] for a in ("Tree", "Ring"))
    assert tree > 1.5 * ring
    tree, ring = (bw({"NCCL_ALGO": a}, 1 << 30, nodes=16)[0] for a in ("Tree", "Ring"))
    assert tree < 0.995 * ring  # the tree gives 0.98 of the ring's bandwidth


FORCED = [{"NCCL_ALGO": a, "NCCL_PROTO": p} for a in ("Ring", "Tree") for p in ("LL", "LL128", "Simple")]
SIZES = [MIB << k for k in range(11)]  # 1M .. 1G, the sweep's default range


@pytest.mark.parametrize("nodes", [2, 4, 8])
def test_on_a_healthy_fabric_ncclss_own_pick_is_the_best_at_every_size(nodes):
    """The healthy lab's time is NCCL's own cost model: no forced (algorithm, protocol) beats the default."""
    for size in SIZES:
        default = bw({}, size, nodes)[0]
        for conf in FORCED:
            assert bw(conf, size, nodes)[0] <= default * (1 + 1e-9), (size, conf)


def test_the_quirk_makes_ll128_beat_ncclss_pick_over_its_range_only():
    q = m.QUIRK
    assert (q["protocol"], q["min_bytes"], q["max_bytes"]) == ("Simple", 64 * MIB, 256 * MIB)
    for nodes in (2, 4):
        for size in SIZES:
            default = m.busbw(size, nodes * 8, nodes, PEAK, m.read({}, "2.21.5"), quirk=q)
            ll128 = m.busbw(size, nodes * 8, nodes, PEAK, m.read({"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128"}, "2.21.5"), quirk=q)
            if q["min_bytes"] <= size <= q["max_bytes"]:
                assert default[1:] == ("Ring", "Simple") and ll128[0] > 1.15 * default[0], (nodes, size)
            else:
                assert ll128[0] <= default[0] * (1 + 1e-9), (nodes, size)
            assert default[0] <= PEAK and ll128[0] <= PEAK  # never above what the links carry


def _model_run(quirk=None, seed=0, tuner_rows=None):
    """The sweep's run(nodes, test, env) on the lab's model, with the simulated binary's noise (up to 1 %)."""
    rng = __import__("random").Random(seed)

    def run(nodes, test, env):
        tuning = m.read(env, "2.21.5")
        tuning["tuner_rows"] = tuner_rows if env.get("NCCL_TUNER_PLUGIN") else None
        rows = [{"size": s, "out_of_place": {"busbw": m.busbw(s, nodes * 8, nodes, PEAK, tuning, test, quirk)[0] * (1 - rng.uniform(0, 0.01))}} for s in SIZES]
        return {"error": None, "passed": True, "parsed": {"nccl_version": "2.21.5", "nccl_warnings": [], "rows": rows}}

    return run


@pytest.mark.parametrize("seed", range(6))
def test_the_sweep_on_the_healthy_lab_model_finds_no_winner(seed):
    out = nt.sweep(_model_run(seed=seed), "all_reduce_perf", [2, 4], [dict(c) for c in nt.DEFAULT_CANDIDATES], 3, 5.0, nt.Budget(1000, 10**9), 8)
    assert out["proposed"] == [] and out["failed"] is None


@pytest.mark.parametrize("seed", range(3))
def test_the_sweep_on_the_quirky_lab_model_finds_the_scoped_winner_and_the_tuner_file_proves_it(seed):
    out = nt.sweep(_model_run(m.QUIRK, seed), "all_reduce_perf", [2, 4], [dict(c) for c in nt.DEFAULT_CANDIDATES], 3, 5.0, nt.Budget(1000, 10**9), 8)
    assert [(r["collective"], r["min_bytes"], r["max_bytes"], r["algorithm"], r["protocol"], r["nodes"], r["ranks"]) for r in out["proposed"]] == [
        ("allreduce", 64 * MIB, 256 * MIB, "ring", "ll128", n, 8 * n) for n in (2, 4)
    ]
    rows, _ = m.parse_tuner_config(nccl_tuned.tuner_config(out["proposed"]))
    proof = nt.confirm(
        _model_run(m.QUIRK, seed, rows),
        ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf"],
        [2, 4],
        {"NCCL_TUNER_PLUGIN": "libnccl-tuner-example.so", "NCCL_TUNER_CONFIG_FILE": "/x"},
        out["proposed"],
        3,
        5.0,
        3.0,
        nt.Budget(1000, 10**9),
    )
    assert proof["why"] is None and len(proof["rows"]) == 2


def test_the_example_tuner_plugin_as_the_lab_loads_it():
    text = "# comment\nallreduce,67108864,268435456,ring,ll128,-1,4,32,-1,-1\nallgather,0,4294967295,ring,simple,-1,-1,-1\nbad,line\n"
    t = m.load_tuner({"NCCL_TUNER_PLUGIN": "example", "NCCL_TUNER_CONFIG_FILE": "/etc/nccl/tuner.conf"}, {"/etc/nccl/tuner.conf": text}.get)
    assert [(r["collective"], r["algorithm"], r["protocol"], r["nodes"], r["ranks"]) for r in t["rows"]] == [
        ("allreduce", "Ring", "LL128", 4, 32),
        ("allgather", "Ring", "Simple", -1, -1),
    ]
    assert t["infos"][:2] == ["NCCL_TUNER_PLUGIN set by environment to example", "Successfully loaded external tuner plugin libnccl-tuner-example.so"]
    assert t["infos"][-1] == "TUNER/ExamplePlugin: Loaded 2 tuning configurations from /etc/nccl/tuner.conf"
    # a row matches its collective, sizes (inclusive), nodes and ranks only
    tuning = dict(m.read({}, "2.21.5"), tuner_rows=t["rows"])
    assert m.choose(64 * MIB, 32, 4, PEAK, tuning) == ("Ring", "LL128")
    assert m.choose(64 * MIB, 16, 2, PEAK, tuning) == ("Ring", "Simple")  # another scale: NCCL's pick
    assert m.choose(512 * MIB, 32, 4, PEAK, tuning) == ("Ring", "Simple")  # outside the range
    # NCCL_PROTO excluding the row's protocol leaves NCCL's own pick (the plugin's cost is IGNOREd)
    assert m.choose(64 * MIB, 32, 4, PEAK, dict(m.read({"NCCL_PROTO": "Simple"}, "2.21.5"), tuner_rows=t["rows"])) == ("Ring", "Simple")
    missing = m.load_tuner({"NCCL_TUNER_PLUGIN": "libnccl-tuner-example.so"}, {}.get)
    assert missing["rows"] == [] and missing["infos"][-1] == "TUNER/ExamplePlugin: Config file nccl_tuner.conf not found, using defaults"
    other = m.load_tuner({"NCCL_TUNER_PLUGIN": "acme"}, {}.get)
    assert other["rows"] is None and "Could not find: acme" in other["infos"][-1]


def test_a_small_buffer_costs_bandwidth_and_threads_matter_for_simple_only():
    big = 1 << 30
    default = bw({"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, big)[0]
    assert bw({"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_BUFFSIZE": str(256 << 10)}, big)[0] < 0.72 * default
    assert bw({"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_BUFFSIZE": "-2"}, big)[0] == default
    assert bw({"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_NTHREADS": "128"}, big)[0] < 0.7 * default
    ll = bw({"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"}, big)[0]
    assert bw({"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL", "NCCL_NTHREADS": "128"}, big)[0] == ll


def test_unknown_names_as_each_nccl_release_reads_them():
    # 2.21: ignored without a word; a list of nothing known falls back to Ring and Tree (no CollNet)
    t = m.read({"NCCL_ALGO": "Warp"}, "2.21.5")
    assert t["algos"] == {"Ring", "Tree"} and t["warnings"] == [] and t["error"] is None
    assert m.read({"NCCL_ALGO": "Ring,Warp"}, "2.21.5")["algos"] == {"Ring"}
    t = m.read({"NCCL_PROTO": "Fast"}, "2.21.5")
    assert t["algos"] == {"Ring"} and t["protos"] == {"LL", "LL128", "Simple"} and t["error"] is None
    assert m.read({"NCCL_ALGO": "^tree"}, "2.21.5")["algos"] == {"Ring"}
    assert m.read({"NCCL_ALGO": "PAT"}, "2.21.5")["algos"] == {"Ring", "Tree"}  # PAT is not a 2.21 name
    # 2.24: refused
    t = m.read({"NCCL_ALGO": "Ring,Warp"}, "2.24.3")
    assert t["error"] == "invalid usage"
    assert t["warnings"] == [("graph/tuning.cc:95", 'Unrecognized element token "Warp" when parsing "Ring,Warp"')]


@pytest.mark.parametrize(
    "value,warning,used",
    [
        ("100", "Invalid NCCL_NTHREADS 100 (must be a multiple of 32)", 512),
        ("1024", "Invalid NCCL_NTHREADS 1024 (maximum 512).", 512),
        ("32", "Invalid NCCL_NTHREADS 32 (minimum 64).", 64),
        ("256", None, 256),
        ("-2", None, 512),
    ],
)
def test_nthreads_warns_and_clamps_as_getnthreads(value, warning, used):
    t = m.read({"NCCL_NTHREADS": value}, "2.21.5")
    assert t["nthreads"] == used
    assert [w for _, w in t["warnings"]] == ([warning] if warning else [])


# ---------------------------------------------------------------- the simulated binary, 4 nodes


@pytest.fixture
def lab4(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    nodes = range(1, 5)
    model = tvs.lab_model()
    model["nodes"] = {f"node{i}": {"gpus": 8, "modules": ["nvidia_peermem"], "nics": [tvs.nic(i, 0), tvs.nic(i, 1)]} for i in nodes}
    model["switches"] = {f"leaf{r + 1}": {"ports": {f"swp{i}": {"up": True, "mtu": 9216, "pfc": [3], "speed_gbps": 400} for i in nodes}} for r in (0, 1)}
    (state / "fabric.json").write_text(json.dumps(model))

    def job(conf, sizes=("1M", "1G")):
        jobid = f"t{tvs.free_port()}"
        procs = []
        for rank, i in enumerate(nodes):
            env = dict(
                os.environ,
                LINERATE_LAB_STATE=str(state),
                LINERATE_LAB_NODE=f"node{i}",
                SIM_NETDEVS=json.dumps(tvs.netdevs(i)),
                PYTHONPATH="",
                OMPI_COMM_WORLD_RANK=str(rank),
                OMPI_COMM_WORLD_SIZE="4",
                OMPI_MCA_ess_base_jobid=jobid,
                NCCL_DEBUG="INFO",
                NCCL_SOCKET_IFNAME="lo",
                NCCL_IB_GID_INDEX="3",
                NCCL_IB_HCA="mlx5_0,mlx5_1",
                **conf,
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, tvs.RUNNER, "nccl_tests", "-b", sizes[0], "-e", sizes[1], "-f", "2", "-g", "8"],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        outs = [p.communicate(timeout=90) for p in procs]
        return [p.returncode for p in procs], "\n".join(o + e for o, e in outs)

    return job


def test_the_simulated_binary_answers_the_knobs(lab4):
    rcs, default = lab4({})
    assert rcs == [0, 0, 0, 0]
    rcs, ring = lab4({"NCCL_ALGO": "Ring"})
    base, forced = parse_nccl_tests(default), parse_nccl_tests(ring)
    assert forced["avg_bus_bandwidth"] < 1.01 * base["avg_bus_bandwidth"]  # healthy: no better than the default
    assert "NCCL_ALGO set by environment to Ring" in ring
    rcs, warned = lab4({"NCCL_NTHREADS": "100"})
    assert rcs == [0, 0, 0, 0]
    assert "NCCL WARN Invalid NCCL_NTHREADS 100 (must be a multiple of 32)" in parse_nccl_tests(warned)["nccl_warnings"]
    rcs, small = lab4({"NCCL_BUFFSIZE": str(256 << 10), "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, sizes=("1G", "1G"))
    rcs, simple = lab4({"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, sizes=("1G", "1G"))
    assert parse_nccl_tests(small)["max_busbw"] < 0.75 * parse_nccl_tests(simple)["max_busbw"]
    assert parse_nccl_log(ring)["transport"] == "IB"


def _busbw(text):
    return {r["size"]: r["out_of_place"]["busbw"] for r in parse_nccl_tests(text)["rows"]}


def test_the_simulated_binary_runs_the_quirk_and_the_tuner_file(lab4, tmp_path):
    state = tmp_path / "state" / "fabric.json"
    model = json.loads(state.read_text())
    model["nccl_quirk"] = dict(m.QUIRK)
    state.write_text(json.dumps(model))
    conf = tmp_path / "tuner.conf"
    conf.write_text("allreduce,67108864,268435456,ring,ll128,-1,4,32,-1,-1\n")
    rcs, default = lab4({}, sizes=("32M", "512M"))
    assert rcs == [0, 0, 0, 0]
    rcs, tuned = lab4({"NCCL_TUNER_PLUGIN": "libnccl-tuner-example.so", "NCCL_TUNER_CONFIG_FILE": str(conf)}, sizes=("32M", "512M"))
    assert rcs == [0, 0, 0, 0]
    base, with_file = _busbw(default), _busbw(tuned)
    for size in (64 * MIB, 128 * MIB, 256 * MIB):
        assert with_file[size] > 1.15 * base[size], size
    for size in (32 * MIB, 512 * MIB):
        assert abs(with_file[size] / base[size] - 1) < 0.02, size
    assert "Successfully loaded external tuner plugin libnccl-tuner-example.so" in tuned
    assert f"TUNER/ExamplePlugin: Loaded 1 tuning configurations from {conf}" in tuned
    assert parse_nccl_tests(tuned)["nccl_warnings"] == []
