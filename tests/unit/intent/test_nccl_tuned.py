"""The tuned NCCL file (intent/nccl_tuned.py, issue 35 item 4, docs/tuning.md): NCCL's Debugging section
is never written (not in the tuned file, not in nccl.conf, not in the per-job environment); the tuned
file holds the sweep's scoped tuner-plugin rows, the same result gives the same bytes, and a file with a
Debugging variable or a bad row is a problem. The sweep and its proof: test_nccl_tune.py."""

import json
import os

import jinja2

from intent.test_nccl_tune import proposed

from ansible_collections.linerate.fabric.plugins.filter.nccl_env import nccl_env_settings, nccl_tuned_settings, shell_quote
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tuned


# ---------------------------------------------------------------- NCCL's Debugging section


def test_the_debugging_section_holds_what_the_old_sweep_wrote_and_not_the_system_configuration():
    # NCCL env.rst, "Debugging": every key the issue-28 sweep wrote into /etc/nccl.conf is one of them
    for key in (
        "NCCL_ALGO",
        "NCCL_PROTO",
        "NCCL_BUFFSIZE",
        "NCCL_NTHREADS",
        "NCCL_NET_GDR_LEVEL",
        "NCCL_MAX_NCHANNELS",
        "NCCL_MIN_NCHANNELS",
        "NCCL_CHECKS_DISABLE",
        "NCCL_CHECK_POINTERS",
        "NCCL_LAUNCH_MODE",
        "NCCL_IB_CUDA_SUPPORT",
        "NCCL_P2P_DISABLE",
        "NCCL_IB_DISABLE",
        "NCCL_MIN_CTAS",
    ):
        assert key in nccl_tuned.DEBUGGING_VARIABLES, key
    # "System configuration": what a site keeps, and what loads the tuner plugin
    for key in (
        "NCCL_TUNER_PLUGIN",
        "NCCL_IB_HCA",
        "NCCL_SOCKET_IFNAME",
        "NCCL_IB_TC",
        "NCCL_IB_GID_INDEX",
        "NCCL_IB_SL",
        "NCCL_DEBUG",
        "NCCL_NET",
        "NCCL_NET_PLUGIN",
        "NCCL_CROSS_NIC",
        "NCCL_IB_TIMEOUT",
    ):
        assert key not in nccl_tuned.DEBUGGING_VARIABLES, key
    assert nccl_tuned.debugging_keys({"NCCL_IB_HCA": "x", "NCCL_PROTO": "LL", "NCCL_ALGO": "Ring"}) == ["NCCL_ALGO", "NCCL_PROTO"]


# ---------------------------------------------------------------- the tuned file and the tuner config


def test_the_tuned_file_holds_scoped_rows_and_no_debugging_variable_and_the_same_result_gives_the_same_bytes():
    rows = proposed()
    doc = nccl_tuned.tuned_document(rows, {"test": "all_reduce_perf", "scales": [2, 4]})
    assert doc == nccl_tuned.tuned_document(list(reversed(proposed(seed=3))), {"scales": [2, 4], "test": "all_reduce_perf"})
    parsed = json.loads(doc)
    assert set(parsed) == {"version", "tuner", "measured_on"} and parsed["version"] == 2
    assert not any(name in doc for name in nccl_tuned.DEBUGGING_VARIABLES)
    tuned = nccl_tuned_settings(doc, "/etc/nccl/tuner.conf")
    assert tuned["settings"] == {} and tuned["problems"] == [] and tuned["missing"] is None
    assert tuned["job"] == {"NCCL_TUNER_PLUGIN": "libnccl-tuner-example.so", "NCCL_TUNER_CONFIG_FILE": "/etc/nccl/tuner.conf"}
    csv = [line for line in tuned["tuner_config"].splitlines() if not line.startswith("#")]
    assert csv == ["allreduce,67108864,268435456,ring,ll128,-1,2,16,-1,-1", "allreduce,67108864,268435456,ring,ll128,-1,4,32,-1,-1"]
    # no rows: NCCL's defaults, nothing to load
    empty = nccl_tuned_settings(nccl_tuned.tuned_document([], {}))
    assert (empty["rows"], empty["job"], empty["tuner_config"]) == ([], {}, "")


def test_a_tuned_file_with_a_debugging_variable_or_a_bad_row_is_a_problem():
    v1 = json.dumps({"version": 1, "settings": {"NCCL_ALGO": "Ring"}, "measured_on": {}})
    assert "sets NCCL_ALGO: variables of NCCL's Debugging section" in nccl_tuned_settings(v1)["problems"][0]
    assert nccl_tuned_settings(json.dumps({"version": 1, "settings": {}}))["problems"] == []
    row = dict(proposed()[0], protocol="ll256")
    row.pop("gain_percent")
    bad = nccl_tuned_settings(json.dumps({"version": 2, "tuner": {"plugin": nccl_tuned.TUNER_PLUGIN, "rows": [row]}}))
    assert bad["rows"] == [] and bad["problems"] == ["tuner row 1: protocol 'll256' (allowed: ll, ll128, simple)"]
    anywhere = dict(proposed()[0], nodes=-1)
    assert "scoped to the node and rank counts" in nccl_tuned.row_problem(anywhere)
    assert "not JSON" in nccl_tuned_settings("{")["problems"][0]


def test_tuning_never_enters_nccl_conf():
    rdma = {"ports": [{"device": "mlx5_0", "port": 1, "netdev": "eth1", "up": True, "roce_v2_ipv4_gid_index": 3}]}
    cabled = [{"device": "mlx5_0", "netdev": "eth1"}]
    opts = {"transport": "roce", "ib_tc": 104, "net": "IB"}
    out = nccl_env_settings(rdma, cabled, dict(opts, tuned={"NCCL_ALGO": "Ring", "NCCL_BUFFSIZE": "8388608"}))
    assert "NCCL_ALGO" not in out["settings"] and "NCCL_BUFFSIZE" not in out["settings"]
    assert [p.split(":")[0] for p in out["problems"]] == ["tuned NCCL_ALGO", "tuned NCCL_BUFFSIZE"]
    assert nccl_env_settings(rdma, cabled, dict(opts, tuned={}))["problems"] == []


def test_the_job_environment_file_loads_the_rows_and_sets_no_debugging_variable():
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    tuned = nccl_tuned_settings(nccl_tuned.tuned_document(proposed(), {}), "/etc/nccl/tuner.conf")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    env.filters["linerate.fabric.nccl_shell_quote"] = shell_quote
    with open(os.path.join(root, "roles", "nccl_env", "templates", "etc", "nccl", "tuned-job.env.j2")) as f:
        text = env.from_string(f.read()).render(
            ansible_managed="m",
            nccl_env_tuned=tuned,
            nccl_env_result={"job": {}},
            nccl_env_tuner_config_file="/etc/nccl/tuner.conf",
            nccl_env_job_env_file="/etc/nccl/tuned-job.env",
        )
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines == ["NCCL_TUNER_PLUGIN='libnccl-tuner-example.so'", "NCCL_TUNER_CONFIG_FILE='/etc/nccl/tuner.conf'"]
