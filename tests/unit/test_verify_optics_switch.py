"""The switches' own optical modules (issue 24 item 3): links_switch.switch_optics_findings judges the module
on each cabled switch port (switch_counters ``optics``, the drivers' transceiver read) against the module's
own thresholds, with the same margins and codes as the NICs' modules (module_problems), named by switch and
port with what is cabled there."""

import copy

from ansible_collections.linerate.fabric.plugins.module_utils.checks import links_switch
from ansible_collections.linerate.fabric.plugins.module_utils import findings

FABRIC = {"transport": "roce", "verify": {"link_errors_max": 0, "link_flaps_max": 0, "optic_rx_power_margin_db": 1.0, "optic_temp_margin_c": 5}}
HOSTS = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}], "node2": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2"}]}
UPLINKS = {"leaf1": [{"port": "swp5", "peer": "spine1", "peer_port": "Ethernet1/1"}]}
GOOD = {
    "present": True,
    "optical": True,
    "vendor": "NVIDIA",
    "part_number": "MMA4Z00-NS",
    "cable_technology": None,
    "ddm": {"rx_power_dbm": {"values": [1.9, 1.8, 1.9, 2.0], "low": -10.4, "high": 5.0}, "temperature_c": {"values": [48.0], "low": -5.0, "high": 75.0}},
}
ERRORS = {
    "swp1": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []},
    "swp2": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []},
    "swp5": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []},
}


def module(rx=None, temp=None, **kw):
    m = copy.deepcopy(GOOD)
    if rx is not None:
        m["ddm"]["rx_power_dbm"]["values"] = rx
    if temp is not None:
        m["ddm"]["temperature_c"]["values"] = [temp]
    m.update(kw)
    return m


SPINE = {
    "failed": False,
    "errors": {"Ethernet1/1": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []}},
    "errors_msg": "",
    "optics": {"Ethernet1/1": GOOD},
    "optics_msg": "",
}


def judge(optics, optics_msg=""):
    snap = {"failed": False, "errors": ERRORS, "errors_msg": ""}
    after = dict(snap, optics=optics, optics_msg=optics_msg)
    return links_switch.switch_link_findings(
        {"leaf1": {"before": snap, "after": after}, "spine1": {"before": SPINE, "after": SPINE}}, FABRIC, HOSTS, UPLINKS, findings.finding
    )


def test_healthy_modules_give_no_finding():
    out, unproven, _ = judge({"swp1": module(), "swp2": module(), "swp5": module()})
    assert out == [] and unproven == {}


def test_low_rx_power_on_a_host_port_names_switch_port_node_and_lanes():
    out, _, _ = judge({"swp1": module(), "swp2": module(rx=[-14.0, 1.9, -9.5, 1.9]), "swp5": module()})
    (f,) = out
    assert (f["code"], f["severity"], f["check"]) == ("OPTIC_RX_POWER_LOW", "error", "link_health")
    assert (f["switch"], f["switch_port"], f["node"], f["device"]) == ("leaf1", "swp2", "node2", "mlx5_0")
    # the floor is the module's low alarm + the margin: -9.4 dBm; -9.5 is below it, 1.9 is not
    assert f["evidence"]["lanes"] == {0: -14.0, 2: -9.5} and f["evidence"]["low_threshold_dbm"] == -10.4
    assert f["evidence"]["module"] == "switch" and f["evidence"]["margin_db"] == 1.0
    assert f["message"].startswith(
        "leaf1 swp2 (towards node2 mlx5_0): optical module NVIDIA MMA4Z00-NS receives lane 0 -14 dBm, lane 2 -9.5 dBm, below -9.4 dBm"
    )


def test_a_hot_module_on_an_uplink_names_the_peer_switch():
    out, _, _ = judge({"swp1": module(), "swp2": module(), "swp5": module(temp=71.0)})
    (f,) = out
    assert (f["code"], f["switch"], f["switch_port"], f["peer_switch"], f["peer_port"]) == ("OPTIC_TEMP_HIGH", "leaf1", "swp5", "spine1", "Ethernet1/1")
    assert f["node"] is None and f["evidence"]["high_threshold_c"] == 75.0 and f["evidence"]["temperature_c"] == 71.0
    # at the ceiling (75 - 5) it passes
    assert judge({"swp1": module(), "swp2": module(), "swp5": module(temp=70.0)})[0] == []


def test_copper_and_empty_cages_are_not_judged():
    dac = module(rx=[-30.0] * 4, temp=90.0, optical=False, cable_technology="Copper cable")
    empty = {
        "present": False,
        "optical": False,
        "vendor": None,
        "part_number": None,
        "cable_technology": None,
        "ddm": {"rx_power_dbm": None, "temperature_c": None},
    }
    assert judge({"swp1": dac, "swp2": empty, "swp5": module()})[0] == []


def test_what_cannot_be_read_is_named_never_passed_silently():
    out, unproven, _ = judge(None, "leaf1: show interfaces transceiver: timed out")
    assert out == [] and unproven == {"leaf1": ["optical modules (leaf1: show interfaces transceiver: timed out)"]}
    na = module()
    na["ddm"]["rx_power_dbm"] = None
    out, unproven, _ = judge({"swp1": module(), "swp5": module(), "swp2": na})
    assert [(f["code"], f["severity"], f["switch_port"], f.get("counter")) for f in out] == [("COUNTER_MISSING", "warning", "swp2", "Module Info Rx power")]
    out, _, _ = judge({"swp1": module(), "swp2": module()})  # the uplink's module not reported
    assert [(f["code"], f["switch_port"], f["peer_switch"]) for f in out] == [("COUNTER_MISSING", "swp5", "spine1")]


def test_a_snapshot_without_optics_judges_nothing_about_them():
    snap = {"failed": False, "errors": ERRORS, "errors_msg": ""}
    out, unproven, _ = links_switch.switch_link_findings(
        {"leaf1": {"before": snap, "after": snap}, "spine1": {"before": SPINE, "after": SPINE}}, FABRIC, HOSTS, UPLINKS, findings.finding
    )
    assert out == [] and unproven == {}
