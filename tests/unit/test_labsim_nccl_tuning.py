"""The lab's simulated nccl-tests respond to NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE and NCCL_NTHREADS
as the model in docs/lab.md says (lab/sim/linerate_lab/nccl_tuning.py), read by the real parsers."""
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

MIB = 1 << 20
PEAK = 94.0  # two 400G rails, as the fabric model gives a ring


def bw(conf, size, nodes=4, version="2.21.5"):
    return m.busbw(size, nodes * 8, nodes, PEAK, m.read(conf, version))


def avg(conf, nodes=4):
    sizes = [MIB << k for k in range(11)]     # 1M .. 1G, the sweep's default range
    return sum(bw(conf, s, nodes)[0] for s in sizes) / len(sizes)


def test_ll_is_fastest_small_and_capped_large_ll128_near_simple_large():
    small, large = 64 << 10, 1 << 30
    ll, simple, ll128 = (bw({"NCCL_PROTO": p, "NCCL_ALGO": "Ring"}, small)[0] for p in ("LL", "Simple", "LL128"))
    assert ll > ll128 > simple
    ll, simple, ll128 = (bw({"NCCL_PROTO": p, "NCCL_ALGO": "Ring"}, large)[0] for p in ("LL", "Simple", "LL128"))
    assert ll < 0.55 * PEAK and 0.93 < ll128 / simple < 0.97 and simple > 0.97 * PEAK


def test_tree_wins_latency_bound_sizes_with_many_nodes_and_loses_bandwidth_bound_ones():
    tree, ring = (bw({"NCCL_ALGO": a}, 64 << 10, nodes=16)[0] for a in ("Tree", "Ring"))
    assert tree > 1.5 * ring
    tree, ring = (bw({"NCCL_ALGO": a}, 1 << 30, nodes=16)[0] for a in ("Tree", "Ring"))
    assert tree < 0.65 * ring


def test_ncclss_own_pick_is_tree_at_medium_sizes_and_ring_is_better_there_in_the_lab():
    assert bw({}, 8 * MIB)[1] == "Tree" and bw({}, 256 * MIB)[1:] == ("Ring", "Simple")
    assert bw({"NCCL_ALGO": "Ring"}, 8 * MIB)[0] > 1.3 * bw({}, 8 * MIB)[0]
    # the one designed winner: NCCL_ALGO=Ring beats the default by more than a 5 % margin over 1M..1G ...
    assert avg({"NCCL_ALGO": "Ring"}) > 1.10 * avg({})
    # ... and nothing else the sweep tries by default does
    for conf in ({"NCCL_ALGO": "Tree"}, {"NCCL_PROTO": "Simple"}, {"NCCL_PROTO": "LL128"}, {"NCCL_PROTO": "LL"},
                 {"NCCL_BUFFSIZE": "2097152"}, {"NCCL_BUFFSIZE": "8388608"}, {"NCCL_BUFFSIZE": "16777216"},
                 {"NCCL_NTHREADS": "256"}, {"NCCL_NTHREADS": "128"}):
        assert avg(conf) < 1.03 * avg({}), conf
    # with NCCL_ALGO=Ring kept, no protocol beats it either
    for proto in ("Simple", "LL128", "LL"):
        assert avg({"NCCL_ALGO": "Ring", "NCCL_PROTO": proto}) < 1.03 * avg({"NCCL_ALGO": "Ring"})
    # on 2 nodes a tree is a ring: no winner to find
    assert avg({"NCCL_ALGO": "Ring"}, nodes=2) == pytest.approx(avg({}, nodes=2))


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
    assert m.read({"NCCL_ALGO": "PAT"}, "2.21.5")["algos"] == {"Ring", "Tree"}   # PAT is not a 2.21 name
    # 2.24: refused
    t = m.read({"NCCL_ALGO": "Ring,Warp"}, "2.24.3")
    assert t["error"] == "invalid usage"
    assert t["warnings"] == [("graph/tuning.cc:95", 'Unrecognized element token "Warp" when parsing "Ring,Warp"')]


@pytest.mark.parametrize("value,warning,used", [
    ("100", "Invalid NCCL_NTHREADS 100 (must be a multiple of 32)", 512),
    ("1024", "Invalid NCCL_NTHREADS 1024 (maximum 512).", 512),
    ("32", "Invalid NCCL_NTHREADS 32 (minimum 64).", 64),
    ("256", None, 256), ("-2", None, 512)])
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
    model["nodes"] = {f"node{i}": {"gpus": 8, "modules": ["nvidia_peermem"], "nics": [tvs.nic(i, 0), tvs.nic(i, 1)]}
                      for i in nodes}
    model["switches"] = {f"leaf{r + 1}": {"ports": {f"swp{i}": {"up": True, "mtu": 9216, "pfc": [3], "speed_gbps": 400}
                                                    for i in nodes}} for r in (0, 1)}
    (state / "fabric.json").write_text(json.dumps(model))

    def job(conf, sizes=("1M", "1G")):
        jobid = f"t{tvs.free_port()}"
        procs = []
        for rank, i in enumerate(nodes):
            env = dict(os.environ, LINERATE_LAB_STATE=str(state), LINERATE_LAB_NODE=f"node{i}",
                       SIM_NETDEVS=json.dumps(tvs.netdevs(i)), PYTHONPATH="",
                       OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="4", OMPI_MCA_ess_base_jobid=jobid,
                       NCCL_DEBUG="INFO", NCCL_SOCKET_IFNAME="lo", NCCL_IB_GID_INDEX="3",
                       NCCL_IB_HCA="mlx5_0,mlx5_1", **conf)
            procs.append(subprocess.Popen([sys.executable, tvs.RUNNER, "nccl_tests", "-b", sizes[0], "-e", sizes[1],
                                           "-f", "2", "-g", "8"], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=90) for p in procs]
        return [p.returncode for p in procs], "\n".join(o + e for o, e in outs)
    return job


def test_the_simulated_binary_answers_the_knobs(lab4):
    rcs, default = lab4({})
    assert rcs == [0, 0, 0, 0]
    rcs, ring = lab4({"NCCL_ALGO": "Ring"})
    base, tuned = parse_nccl_tests(default), parse_nccl_tests(ring)
    assert tuned["avg_bus_bandwidth"] > 1.08 * base["avg_bus_bandwidth"]
    assert "NCCL_ALGO set by environment to Ring" in ring
    rcs, warned = lab4({"NCCL_NTHREADS": "100"})
    assert rcs == [0, 0, 0, 0]
    assert "NCCL WARN Invalid NCCL_NTHREADS 100 (must be a multiple of 32)" in parse_nccl_tests(warned)["nccl_warnings"]
    rcs, small = lab4({"NCCL_BUFFSIZE": str(256 << 10), "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, sizes=("1G", "1G"))
    rcs, simple = lab4({"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, sizes=("1G", "1G"))
    assert parse_nccl_tests(small)["max_busbw"] < 0.75 * parse_nccl_tests(simple)["max_busbw"]
    assert parse_nccl_log(ring)["transport"] == "IB"
