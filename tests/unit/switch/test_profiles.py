"""The switch platforms' own limits, checked by the intent before any switch is contacted:
SONiC object names (YANG name pattern), the EOS family (MTU limit, speed forms)."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.switch import profiles as sp

HOSTS = {"n1": {"rdma_ports": [{"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "Ethernet0"}]}}


def problems(fabric, **sw1):
    if sw1.get("switch_platform") == "sonic":
        # the port runs at 400G: the platform's lossless headroom row (sonic-swss's table stops at 100G)
        sw1.setdefault("switch_sonic_pg_lookup", {400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}})
    return schema.validate(dict({"transport": "roce"}, **fabric), HOSTS, {"sw1": sw1})


ALLOWED = sp.SONIC_OBJECT_NAME_ALLOWED


@pytest.mark.parametrize("profile", ["linerate", "rdma-v2", "A", "x" * 23, "9lossless"])
def test_sonic_profile_names_the_yang_models_allow(profile):
    assert problems({}, switch_platform="sonic", switch_fabric_profile=profile) == []


@pytest.mark.parametrize(
    "profile, bad",
    [
        ("my prof", {"DSCP_TO_TC_MAP": "MY PROF", "WRED_PROFILE": "MY PROF_LOSSLESS"}),
        ("rdma.v2", {"DSCP_TO_TC_MAP": "RDMA.V2", "WRED_PROFILE": "RDMA.V2_LOSSLESS"}),
        ("_x", {"DSCP_TO_TC_MAP": "_X", "WRED_PROFILE": "_X_LOSSLESS"}),
        # 24 characters: the map name fits 32, the WRED profile name (+ _LOSSLESS) does not
        ("x" * 24, {"WRED_PROFILE": "X" * 24 + "_LOSSLESS"}),
        ("", {"DSCP_TO_TC_MAP": "", "WRED_PROFILE": "_LOSSLESS"}),
    ],
)
def test_sonic_profile_names_the_yang_models_refuse(profile, bad):
    got = problems({}, switch_platform="sonic", switch_fabric_profile=profile)
    assert got == [
        f"sw1: switch_fabric_profile: {profile!r} is not allowed (allowed: a name whose SONiC objects "
        f"pass the YANG models: {table} name {name!r} does not match {sp.SONIC_OBJECT_NAME} "
        f"(allowed: {ALLOWED}); SONiC's config checkpoint/rollback refuse such a CONFIG_DB)"
        for table, name in bad.items()
    ]


def test_sonic_profile_not_a_string_and_other_platforms_untouched():
    assert problems({}, switch_platform="sonic", switch_fabric_profile=7) == [
        "sw1: switch_fabric_profile: 7 is not allowed (allowed: a name whose SONiC objects pass the YANG models: "
        "7 is not a string; SONiC's config checkpoint/rollback refuse such a CONFIG_DB)"
    ]
    # the SONiC pattern is SONiC's: NVUE and EOS are not held to it here
    assert problems({}, switch_platform="nvue", switch_fabric_profile="my.prof") == []
    assert problems({}, switch_platform="eos", switch_fabric_profile="my.prof") == []


def test_eos_family_defaults_and_unknown_family():
    assert problems({}, switch_platform="eos") == []  # 7050x4: 9214 >= host 4200, 400g-8
    assert problems({}, switch_platform="eos", switch_eos_family="7388x5") == []
    assert problems({}, switch_platform="eos", switch_eos_family="7050") == [
        "sw1: switch_eos_family: '7050' is not allowed (allowed: " + " | ".join(sp.EOS_FAMILIES) + ")"
    ]


def test_host_mtu_is_held_to_the_eos_platform_limit_not_fabric_mtu_switch():
    fabric = {"mtu": {"host": 9216, "switch": 9216}}
    assert problems(fabric, switch_platform="sonic") == []  # SONiC takes 9216 (sonic-port.yang:164-167)
    assert problems(fabric, switch_platform="eos") == [
        "fabric.mtu.host: 9216 is not allowed (allowed: at most 9214, the MTU sw1 (7050x4) takes: EOS 7050x4 "
        "interfaces accept mtu up to 9214; a host MTU above the switch MTU drops every full-size frame)"
    ]
    assert problems({"mtu": {"host": 9214, "switch": 9216}}, switch_platform="eos") == []
    # below the platform limit fabric.mtu.switch is the limit (the plain intent check names it)
    assert problems({"mtu": {"host": 9100, "switch": 9000}}, switch_platform="eos") == [
        "fabric.mtu.host: 9100 is not allowed (allowed: at most fabric.mtu.switch (9000); a host MTU above the switch MTU drops every full-size frame)",
        "fabric.mtu.host: 9100 is not allowed (allowed: at most 9000, the MTU sw1 (7050x4) takes: EOS 7050x4 "
        "interfaces accept mtu up to 9214; a host MTU above the switch MTU drops every full-size frame)",
    ]


def test_link_speed_needs_a_speed_form_of_the_family():
    assert problems({"link_speed_gbps": 800}, switch_platform="eos", switch_eos_family="7060x6") == []
    assert problems({"link_speed_gbps": 800}, switch_platform="eos", switch_eos_family="7050x4") == [
        "sw1: switch_eos_family: '7050x4' is not allowed (allowed: a family with a speed form for "
        "fabric.link_speed_gbps 800 (7050x4 has 10g, 25g, 40g, 50g-1, 100g-2, 200g-4, 400g-8), "
        "or another link speed)"
    ]


@pytest.mark.parametrize(
    "family, speeds",
    [
        ("7050x3", {10: "10g", 25: "25g", 40: "40g", 50: "50g-2", 100: "100g-4", 200: "200g-8"}),
        ("7050x4", {10: "10g", 25: "25g", 40: "40g", 50: "50g-1", 100: "100g-2", 200: "200g-4", 400: "400g-8"}),
        ("7060x6", {10: "10g", 25: "25g", 40: "40g", 50: "50g-1", 100: "100g-1", 200: "200g-2", 400: "400g-4", 800: "800g-8"}),
        ("7060x5", {10: "10g", 25: "25g", 40: "40g", 50: "50g-1", 100: "100g-2", 200: "200g-4", 400: "400g-8"}),
    ],
)
def test_eos_speed_forms_are_lane_qualified_with_the_fewest_lanes(family, speeds):
    assert sp.eos_profile(family)["speeds"] == speeds


def test_eos_profiles_queue_keyword_and_mtu():
    assert {f: (sp.eos_profile(f)["queue"], sp.eos_profile(f)["mtu_max"]) for f in sp.EOS_FAMILIES} == {
        "7050x3": ("tx-queue", 9214),
        "7050x4": ("tx-queue", 9214),
        "7060x4": ("tx-queue", 9214),
        "7060x5": ("tx-queue", 9214),
        "7060x6": ("tx-queue", 9214),
        "7280r3": ("uc-tx-queue", 9214),
        "7388x5": ("uc-tx-queue", 9214),
        "7800r3": ("uc-tx-queue", 9214),
    }
    assert sp.eos_profile(None)["family"] == sp.eos_profile("")["family"] == "7050x4"
    with pytest.raises(ValueError, match=r"switch_eos_family: 'x' is not allowed \(allowed: 7050x3 \| "):
        sp.eos_profile("x")
    assert sp.switch_mtu("eos", 9216) == 9214 and sp.switch_mtu("eos", 9000) == 9000
    assert sp.switch_mtu("sonic", 9216) == 9216 and sp.switch_mtu("nvue", "9216") == 9216


def test_fabric_derived_is_what_the_templates_render():
    """The templates take the MTU, the ECN bytes and the SONiC names from fabric_derived, never compute them."""
    eos = sp.fabric_derived("eos", 9216, sp.eos_profile("7280r3"), "rdma", 150, 1500)
    assert eos == {
        "mtu": 9214,
        "ecn_min_threshold_bytes": 153600,
        "ecn_max_threshold_bytes": 1536000,
        "sonic_names": {"DSCP_TO_TC_MAP": "RDMA", "WRED_PROFILE": "RDMA_LOSSLESS"},
        "nvue_ecn_on": "enabled",
        "nvue_ets": {"strict": 6, "dwrr": [(0, 50), (3, 50)]},
    }
    assert sp.fabric_derived("eos", 9000, sp.eos_profile(None))["mtu"] == 9000
    assert sp.fabric_derived("nvue", "9216", None)["mtu"] == sp.fabric_derived("sonic", 9216)["mtu"] == 9216
    with pytest.raises(ValueError, match="switch_eos_family: 'x' is not allowed"):
        sp.fabric_derived("eos", 9216, {"family": "x"})


@pytest.mark.parametrize("release, word", [("5.9", "enable"), ("5.14", "enable"), ("5.15", "enabled"), ("5.17", "enabled"), ("6.0", "enabled")])
def test_nvue_ecn_word_follows_the_release(release, word):
    assert sp.fabric_derived("nvue", 9216, nvue_release=release)["nvue_ecn_on"] == word


@pytest.mark.parametrize(
    "prio, cnp, ets",
    [
        (3, 6, {"strict": 6, "dwrr": [(0, 50), (3, 50)]}),
        (0, 6, {"strict": 6, "dwrr": [(0, 100)]}),  # class 0 is the no-drop class: it alone at 100
        (3, 0, {"strict": 0, "dwrr": [(3, 100)]}),  # class 0 is the CNP class (strict)
        (5, "7", {"strict": 7, "dwrr": [(0, 50), (5, 50)]}),
    ],
)
def test_nvue_ets_is_the_roce_presets(prio, cnp, ets):
    assert sp.fabric_derived("nvue", 9216, no_drop_priority=prio, cnp_priority=cnp)["nvue_ets"] == ets


def test_the_templates_compute_nothing_fabric_derived_has():
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[3] / "switch_configs"
    for template in sorted(root.glob("*/fabric.j2")):
        text = template.read_text(encoding="utf-8")
        assert "switch_fabric_derived.mtu" in text, template
        for computed in ("* 1024", "mtu_max", "switch_fabric_mtu", "| upper", "_LOSSLESS", "release >=", "100 /", "switch_fabric_nvue_release"):
            assert computed not in text, (template, computed)


def test_validation_holds_the_host_to_switch_mtu(monkeypatch):
    """switch_problems' limit is switch_mtu's: a different cap there moves the message with it."""
    monkeypatch.setattr(sp, "switch_mtu", lambda platform, mtu, family=None: 9000)
    assert problems({"mtu": {"host": 9100, "switch": 9216}}, switch_platform="eos") == [
        "fabric.mtu.host: 9100 is not allowed (allowed: at most 9000, the MTU sw1 (7050x4) takes: EOS 7050x4 "
        "interfaces accept mtu up to 9214; a host MTU above the switch MTU drops every full-size frame)"
    ]


def test_switch_problems_reads_the_intent_defaults_it_is_given():
    defaults = {"mtu": {"host": 9216, "switch": 9216}, "link_speed_gbps": 800}
    assert [k for k, _v, _a in sp.switch_problems("sw1", {}, "eos", {}, defaults)] == ["fabric.mtu.host", "sw1: switch_eos_family"]
