"""The checks the variable rules are built of (plugins/module_utils/intent/varcheck.py): the problem's
words (key, value, a secret masked), what an integer, a boolean, a number or a text is, the lists and
maps that name every bad element, ``either``'s one problem, a URL's credentials never shown; and
infinite or NaN numbers refused by every kind of rule (number, integer, text, the NCCL, mlxconfig and
environment maps). The rules themselves: test_rules_hosts.py, test_rules_fabric.py."""

import math

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables
from ansible_collections.linerate.fabric.plugins.module_utils.intent import varcheck as vc

NAN, INF = float("nan"), float("inf")


def msg(key, shown, allowed):
    return f"{key}: {shown} is not allowed (allowed: {allowed})"


def problems(rule, value, key="k", who=None):
    c = vc.Checker(who)
    ok = rule(c, key, value)
    assert ok is (c.items == []), "a rule passes exactly when it adds no problem"
    return c.items


def test_a_problem_names_the_host_and_key_and_masks_a_secret():
    c = vc.Checker("n1")
    assert c.bad("roce_qos_mtu", 7, "an integer") is False
    c.bad("ansible_password", "hunter2", "a string")
    c.bad("switch_password[0].x", "hunter2", "a string")  # the variable's name decides, not the path in it
    assert c.items == [
        "n1: roce_qos_mtu: 7 is not allowed (allowed: an integer)",
        "n1: ansible_password: '********' is not allowed (allowed: a string)",
        "n1: switch_password[0].x: '********' is not allowed (allowed: a string)",
    ]
    assert problems(vc.boolean, "maybe") == [msg("k", "'maybe'", vc.BOOL_ALLOWED)]


@pytest.mark.parametrize(
    "value,n",
    [(12, 12), ("12", 12), ("-3", -3), (True, None), (12.0, None), ("1.5", None), ("1" * 18, int("1" * 18)), ("1" * 19, None), (" 1", None), (None, None)],
)
def test_an_integer_is_an_int_or_its_decimal_text_never_a_bool(value, n):
    assert vc.as_int(value) == n and type(vc.as_int(value)) is type(n)


@pytest.mark.parametrize(
    "value,b",
    [(True, True), ("Yes", True), ("ON", True), (1, True), ("1", True), ("off", False), (0, False), ("No", False), (2, None), ("y", None), (None, None)],
)
def test_a_boolean_is_one_of_the_allowed_spellings(value, b):
    assert vc.as_bool(value) is b


def test_integer_choice_and_number_bounds():
    assert problems(vc.integer(1, 3), "3") == [] and problems(vc.integer(1, 3), 4) == [msg("k", "4", "an integer 1..3")]
    assert problems(vc.choice(3, 4), "4") == [] and problems(vc.choice("a", "b"), "c") == [msg("k", "'c'", "a | b")]
    assert problems(vc.number(0.5, 100), "0.5") == [] and problems(vc.number(0.5, 100), True) == [msg("k", "True", "a number 0.5..100")]


def test_text_takes_a_finite_number_and_refuses_control_characters_and_length():
    allowed = "a string of at most 4 characters without control characters (newline, carriage return, tab, NUL)"
    assert problems(vc.text(4), 1.5) == [] and problems(vc.text(4), "") == []
    assert problems(vc.text(4), "a\tb") == [msg("k", "'a\\tb'", allowed)]
    assert problems(vc.text(4), "abcde") == [msg("k", "'abcde'", allowed)]
    assert problems(vc.text(4, empty=False), "") == [msg("k", "''", allowed + ", not empty")]


def test_a_list_and_a_map_name_every_bad_element_and_a_bad_key_is_not_shown():
    elements = vc.listing(vc.integer(0, 9))
    assert problems(elements, [1, 10, "x"]) == [msg("k[1]", "10", "an integer 0..9"), msg("k[2]", "'x'", "an integer 0..9")]
    assert problems(vc.listing(vc.integer(0, 9), 1, 2), []) == [msg("k", "[]", "a list of 1..2 entries")]
    env = vc.mapping(vc.key_is((r"[A-Z]+", "upper case")), vc.integer(0, 9))
    assert problems(env, {"A": 1, "b": 2, "C": 99}) == [msg("k.b", "'(key)'", "upper case"), msg("k.C", "99", "an integer 0..9")]


def test_either_gives_one_problem_with_its_own_words():
    rule = vc.either(vc.fmt((r"", "")), vc.integer(0, 255), allowed="empty or 0..255")
    assert problems(rule, "") == [] and problems(rule, 3) == []
    assert problems(rule, 256) == [msg("k", "256", "empty or 0..255")]


def test_a_url_never_shows_its_credentials():
    rule = vc.url(vc.APT_SCHEMES)
    assert problems(rule, "https://repo.example.org/doca") == [] and problems(rule, "file:/srv/apt") == []
    (p,) = problems(rule, "https://user:secret@repo.example.org/doca")
    assert "secret" not in p and p.startswith("k: 'https://***@repo.example.org/doca' is not allowed (allowed: a URL without credentials")
    (p,) = problems(rule, "gopher://user:secret@x/")
    assert "secret" not in p and "a URL of scheme http | https" in p
    assert problems(rule, "file:relative") != []


# ---------------------------------------------------------------- infinite and NaN numbers, everywhere


@pytest.mark.parametrize(
    "key,allowed",
    [
        ("switch_fabric_max_fail_percentage", "a number 0..100 percent of a batch's switches that may fail"),
        ("verify_fabric_nccl_tune_margin_percent", "a number 0.5..100 percent a candidate must beat NCCL's pick by"),
        ("verify_fabric_readiness_load_timeout", "a number 1..3600 seconds"),
    ],
)
@pytest.mark.parametrize("value", [NAN, INF, -INF, "nan", "inf", "Infinity", "1e400"])
def test_a_number_rule_refuses_infinite_and_nan(key, allowed, value):
    shown = repr(value) if isinstance(value, str) else str(value)
    assert variables.validate_host({key: value}) == [msg(key, shown, allowed)]


@pytest.mark.parametrize("key", ["switch_fabric_confirm_timeout", "verify_fabric_ib_write_bw_base_port", "roce_qos_mtu", "verify_fabric_incast_max_senders"])
@pytest.mark.parametrize("value", [NAN, INF, -INF, "inf", 1e400])
def test_an_integer_rule_refuses_infinite_and_nan(key, value):
    problems = variables.validate_host({key: value})
    assert len(problems) == 1 and problems[0].startswith(f"{key}: ") and "is not allowed (allowed: an integer" in problems[0]


@pytest.mark.parametrize("key", ["verify_fabric_mode", "k8s_render_context"])
@pytest.mark.parametrize("value", [NAN, INF, -INF])
def test_a_text_rule_refuses_an_infinite_number_it_would_write_as_inf(key, value):
    assert len(variables.validate_host({key: value})) == 1
    assert variables.validate_host({key: 1.5}) == [] and variables.validate_host({key: 7}) == []


@pytest.mark.parametrize(
    "key,value,bad",
    [
        ("nccl_env_overrides", {"NCCL_IB_TIMEOUT": INF}, "nccl_env_overrides.NCCL_IB_TIMEOUT: inf"),
        ("nccl_env_overrides", {"NCCL_IB_TIMEOUT": NAN}, "nccl_env_overrides.NCCL_IB_TIMEOUT: nan"),
        ("connectx_firmware_params", {"ROCE_CC_PRIO_MASK_P1": INF}, "connectx_firmware_params.ROCE_CC_PRIO_MASK_P1: inf"),
        ("connectx_firmware_extra_params", {"X": -INF}, "connectx_firmware_extra_params.X: -inf"),
        ("verify_fabric_nccl_env", {"NCCL_DEBUG_X": NAN}, "verify_fabric_nccl_env.NCCL_DEBUG_X: nan"),
        ("ib_subnet_manager_environment", {"OSM_X": INF}, "ib_subnet_manager_environment.OSM_X: inf"),
    ],
)
def test_a_map_value_that_is_infinite_or_nan_is_refused_by_its_key(key, value, bad):
    problems = variables.validate_host({key: value})
    assert len(problems) == 1 and problems[0].startswith(bad + " is not allowed (allowed: "), problems
    finite = {k: 3 for k in value}
    assert variables.validate_host({key: finite}) == []


def test_the_fabric_wide_percentage_and_share_rules_keep_their_edges():
    assert (
        variables.validate_host({"switch_fabric_max_fail_percentage": 100, "verify_fabric_nccl_tune_margin_percent": 0.5, "linerate_trend_bandwidth_drop": 0.5})
        == []
    )
    assert not math.isfinite(INF) and variables.validate_host({"switch_fabric_max_fail_percentage": 100.0001}) == [
        msg("switch_fabric_max_fail_percentage", "100.0001", "a number 0..100 percent of a batch's switches that may fail")
    ]
