"""/etc/nccl.conf carries System-configuration variables of NCCL's env.rst only (issue 35): the GDR
level goes to the per-job environment, an override naming a Debugging-section variable is refused by the
validation (intent and role variables) and never written by the derivation, whatever the intent says."""

import os

import jinja2
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.linerate.fabric.plugins.filter.k8s_render import k8s_render_filter
from ansible_collections.linerate.fabric.plugins.filter.nccl_env import nccl_env_settings, shell_quote
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS, NCCL_GDR_LEVELS, effective, published
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema, variables
from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_tuned import DEBUGGING_VARIABLES

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CABLED = [{"device": "mlx5_0", "netdev": "eth1", "port": 1}, {"device": "mlx5_1", "netdev": "eth2", "port": 1}]
RDMA = {
    "ports": [{"device": d["device"], "port": 1, "netdev": d["netdev"], "up": True, "state": "ACTIVE", "roce_v2_ipv4_gid_index": 3} for d in CABLED],
    "devices": {d["device"]: {"ports": {1: {"gids": [{"index": 3, "version": "v2"}]}}} for d in CABLED},
}
HOSTS = {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "swp1"}]}}
SWITCHES = {"sw1": {"switch_platform": "nvue"}}
IMAGE = "registry.example.org/nccl-tests:2.13.11"
SYSTEM = ("NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_IB_SL", "NCCL_SOCKET_NTHREADS", "NCCL_DEBUG")
ALLOWED = (
    "a System-configuration NCCL_* variable of NCCL's env.rst; {key} is in its Debugging section, never "
    "written to /etc/nccl.conf: set it per job, in the job's own environment (the launcher's -x / env:), "
    "and the GDR level with fabric.nccl.gdr_level, which goes to the per-job file /etc/nccl/tuned-job.env"
)


def derive(gdr_level, intent_overrides=None, overrides=None):
    return nccl_env_settings(
        RDMA,
        CABLED,
        {
            "transport": "roce",
            "down_ports": "fail",
            "gid_index": "",
            "ib_tc": 104,
            "socket_ifname": "eth0",
            "gdr_level": gdr_level,
            "net": "IB",
            "intent_overrides": intent_overrides or {},
            "overrides": overrides or {},
        },
    )


names = st.sampled_from(sorted(DEBUGGING_VARIABLES) + list(SYSTEM))
override_maps = st.dictionaries(names, st.one_of(st.integers(0, 99), st.sampled_from(["Ring", "1", "PHB"])), max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(NCCL_GDR_LEVELS) + ["", None]), override_maps, override_maps)
def test_no_debugging_variable_is_ever_in_the_nccl_conf_settings(gdr_level, intent_overrides, overrides):
    out = derive(gdr_level, intent_overrides, overrides)
    assert not set(out["settings"]) & DEBUGGING_VARIABLES, out["settings"]
    # every Debugging name given is refused, by name, and every System-configuration one is written
    refused = sorted({k for k in list(intent_overrides) + list(overrides) if k in DEBUGGING_VARIABLES})
    assert sorted({p.split(":")[0].rsplit(".", 1)[1] for p in out["problems"]}) == refused
    for key in set(intent_overrides) | set(overrides):
        if key not in DEBUGGING_VARIABLES:
            assert out["settings"][key] == str(dict(intent_overrides, **overrides)[key])
    # an explicit level is the per-job environment's; auto (or none) leaves NCCL's own rule in charge
    assert out["job"] == ({} if gdr_level in ("auto", "", None) else {"NCCL_NET_GDR_LEVEL": gdr_level})


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(NCCL_GDR_LEVELS), override_maps)
def test_a_valid_intent_derives_an_nccl_conf_without_debugging_variables(gdr_level, overrides):
    fabric = {"transport": "roce", "nccl": {"gdr_level": gdr_level, "overrides": overrides}}
    problems = schema.validate(fabric, HOSTS, SWITCHES)
    debugging = [k for k in overrides if k in DEBUGGING_VARIABLES]
    assert problems == [f"fabric.nccl.overrides.{k}: {overrides[k]!r} is not allowed (allowed: " + ALLOWED.format(key=k) + ")" for k in debugging]
    if not problems:
        eff = effective(fabric)
        out = derive(eff["nccl"]["gdr_level"], eff["nccl"]["overrides"])
        assert out["problems"] == [] and not set(out["settings"]) & DEBUGGING_VARIABLES


def test_the_default_gdr_level_is_auto_and_writes_nothing():
    assert DEFAULTS["nccl"]["gdr_level"] == "auto"
    eff = effective({"transport": "roce"})
    out = derive(eff["nccl"]["gdr_level"])
    assert out["job"] == {} and "NCCL_NET_GDR_LEVEL" not in out["settings"] and out["problems"] == []


def test_intent_overrides_refuse_a_debugging_variable_naming_key_value_and_where_it_goes():
    problems = schema.validate({"transport": "roce", "nccl": {"overrides": {"NCCL_ALGO": "Ring", "NCCL_IB_TIMEOUT": 22}}}, HOSTS, SWITCHES)
    assert problems == ["fabric.nccl.overrides.NCCL_ALGO: 'Ring' is not allowed (allowed: " + ALLOWED.format(key="NCCL_ALGO") + ")"]


def test_role_overrides_refuse_a_debugging_variable_before_any_contact():
    assert variables.validate_host({"nccl_env_overrides": {"NCCL_NET_GDR_LEVEL": "SYS", "NCCL_IB_SL": 3}}) == [
        "nccl_env_overrides.NCCL_NET_GDR_LEVEL: 'SYS' is not allowed (allowed: " + ALLOWED.format(key="NCCL_NET_GDR_LEVEL") + ")"
    ]
    assert variables.validate_host({"nccl_env_overrides": {"NCCL_IB_SL": 3, "NCCL_IB_TIMEOUT": 22}}) == []
    for level in NCCL_GDR_LEVELS:
        assert variables.validate_host({"nccl_env_gdr_level": level}) == [], level


def render_job_file(job, tuned_job=None):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    env.filters["linerate.fabric.nccl_shell_quote"] = shell_quote
    with open(os.path.join(ROOT, "roles", "nccl_env", "templates", "etc", "nccl", "tuned-job.env.j2")) as f:
        text = env.from_string(f.read()).render(
            ansible_managed="m",
            nccl_env_tuned={"job": tuned_job or {}},
            nccl_env_result={"job": job},
            nccl_env_tuner_config_file="/etc/nccl/tuner.conf",
            nccl_env_job_env_file="/etc/nccl/tuned-job.env",
        )
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_the_per_job_file_carries_an_explicit_level_and_nccl_conf_does_not():
    out = derive("SYS")
    assert render_job_file(out["job"]) == ["NCCL_NET_GDR_LEVEL='SYS'"]
    assert render_job_file(out["job"], {"NCCL_TUNER_PLUGIN": "libnccl-tuner-example.so"}) == [
        "NCCL_TUNER_PLUGIN='libnccl-tuner-example.so'",
        "NCCL_NET_GDR_LEVEL='SYS'",
    ]
    assert render_job_file(derive("auto")["job"]) == []
    with open(os.path.join(ROOT, "roles", "nccl_env", "templates", "etc", "nccl.conf.j2")) as f:
        conf = jinja2.Environment(trim_blocks=True).from_string(f.read()).render(ansible_managed="m", nccl_env_result=out)
    assert "NCCL_NET_GDR_LEVEL" not in conf and "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1" in conf


def test_the_pods_carry_the_per_job_level_and_the_host_settings_do_not():
    eff = published(effective({"transport": "roce", "nccl": {"gdr_level": "PXB"}}))
    ports = [{"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "swp1", "address": "10.0.0.1/24"}]
    out = k8s_render_filter(eff, {"n1": ports}, {"image": IMAGE})
    assert out["problems"] == [], out["problems"]
    assert out["nccl_env"]["NCCL_NET_GDR_LEVEL"] == "PXB" and "NCCL_NET_GDR_LEVEL" not in out["host_nccl"]
    auto = k8s_render_filter(published(effective({"transport": "roce"})), {"n1": ports}, {"image": IMAGE})
    assert "NCCL_NET_GDR_LEVEL" not in auto["nccl_env"]
