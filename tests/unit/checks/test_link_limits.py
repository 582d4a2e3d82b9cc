"""What both ends of a link are judged by (module_utils/checks/link_limits.py): fabric.verify's link health
thresholds and their defaults, a counter's growth over the window. module_problems, the optical module's
judge, is held whole through each end: test_verify_link_health_optics.py and test_verify_link_health_exact.py
(a NIC's module, mlxlink -m), test_verify_link_health_ethtool_m.py (ethtool -m), checks/test_links_switch.py
and test_verify_optics_switch.py (a switch port's)."""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import link_limits
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import DEFAULTS


def test_intent_threshold_defaults():
    assert {k: DEFAULTS["verify"][k] for k in link_limits.DEFAULTS} == link_limits.DEFAULTS


def test_thresholds_take_the_intents_values_and_default_the_rest():
    assert link_limits.thresholds({"verify": {"link_errors_max": 5, "raw_ber_max": 1e-5, "full_plan_max_nodes": 8}}) == {
        "link_errors_max": 5,
        "link_flaps_max": 0,
        "effective_ber_max": 1e-12,
        "raw_ber_max": 1e-5,
        "optic_rx_power_margin_db": 0.0,
        "optic_temp_margin_c": 0.0,
    }
    assert link_limits.thresholds(None) == link_limits.thresholds({"verify": None}) == link_limits.DEFAULTS


def test_a_counter_grows_by_its_difference_and_a_cleared_one_counts_what_it_shows():
    assert link_limits.counter_delta(5, 9) == 4
    assert link_limits.counter_delta(7, 7) == 0
    assert link_limits.counter_delta(9, 3) == 3  # cleared (or, on IB, wrapped at its width) in between
