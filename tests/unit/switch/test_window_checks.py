"""switch/window_checks.py: the port names and managed scope refused before anything is sent, the delta,
what a restore would delete outside the scope (per platform), and the post-check of the ports' oper state."""

import json

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.switch import drivers
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import PORT_NAME, delta, managed_scope, oper_problems, restore_deletions

WANT = "nv set interface swp1 link mtu 9216\n"


def nvue():
    return drivers.driver_for("nvue", "leaf7")


# ---------------------------------------------------------------- port names and managed scope


@pytest.mark.parametrize("name", ["swp1", "Ethernet0", "Ethernet1/1", "swp1s0", "Port-Channel10", "Ethernet1/1.100", "Eth_1:2", "x" * 64])
def test_the_three_platforms_port_names_are_allowed(name):
    assert PORT_NAME.fullmatch(name)


@pytest.mark.parametrize("name", ["swp 1", "-swp1", "1swp", "x" * 65, "swp1;reboot", ""])
def test_a_port_name_that_could_carry_another_command_is_not(name):
    assert not PORT_NAME.fullmatch(name)


def test_bad_port_names_are_refused_naming_only_the_bad_ones():
    with pytest.raises(SwitchError) as err:
        managed_scope(nvue(), nvue().parse(WANT), ["swp1", "swp 2", 7])
    assert str(err.value) == "switch leaf7: fabric port name(s) ['swp 2', 7] refused: allowed are letters, digits and _ . / : - (at most 64), nothing is sent"
    assert (err.value.rolled_back, err.value.changed) == (False, False)


def test_the_scope_of_an_intent_inside_it_is_the_drivers_own():
    d = nvue()
    scope = managed_scope(d, d.parse(WANT), ["swp1"])
    assert scope("interface swp1 link mtu") and not scope("system hostname")


def test_an_intent_outside_the_scope_lists_ten_lines_then_counts():
    d = nvue()
    lines = [f"nv set system h{n:02d} x" for n in range(12)]
    with pytest.raises(SwitchError) as err:
        managed_scope(d, d.parse("\n".join(lines)), ["swp1", "swp2"])
    assert str(err.value) == (
        "switch leaf7: refusing config outside the managed scope (QoS, PFC, ECN, MTU and speed of the fabric ports swp1, swp2 and uplinks), "
        "nothing is sent: " + "; ".join(lines[:10]) + " (and 2 more)"
    )
    assert err.value.rolled_back is False
    with pytest.raises(SwitchError) as err:
        managed_scope(d, d.parse("\n".join(lines[:10])), [])
    assert err.value.reason.endswith("fabric ports (none) and uplinks), nothing is sent: " + "; ".join(lines[:10]))


# ---------------------------------------------------------------- delta


def test_the_delta_is_what_takes_the_running_config_to_the_intent_and_nothing_at_the_intent():
    d = nvue()
    assert delta(d, WANT, ["swp1"], "") == ["nv set interface swp1 link mtu 9216"]
    assert delta(d, WANT, ["swp1"], "nv set interface swp1 link mtu 1500\n") == ["nv set interface swp1 link mtu 9216"]
    assert delta(d, WANT, ["swp1"], WANT) == []


def test_the_delta_refuses_an_intent_outside_the_scope_like_the_push():
    with pytest.raises(SwitchError, match="outside the managed scope"):
        delta(nvue(), "nv set system hostname x\n", ["swp1"], "")


# ---------------------------------------------------------------- what a restore would delete


def test_an_nvue_restore_deletes_only_what_is_outside_the_scope():
    d = nvue()
    backup = d.parse("nv set system hostname leaf1\nnv set interface swp1 link mtu 9216\n")
    running = d.parse(
        "nv set system hostname leaf1\nnv set interface swp1 link mtu 1500\nnv set interface swp1 qos pfc profile x\n"
        "nv set system aaa user bob full-name B\nnv set system syslog server 10.0.0.9\n"
    )
    # a changed value (mtu) is restored, not deleted; the PFC profile on a data port is in scope
    assert restore_deletions(d, backup, running) == ["nv set system aaa user bob full-name B", "nv set system syslog server 10.0.0.9"]
    assert restore_deletions(d, running, running) == []


def test_a_sonic_restore_names_table_key_and_field():
    d = drivers.driver_for("sonic", "leaf7")
    backup = d.parse(json.dumps({"DEVICE_METADATA": {"localhost": {"hostname": "a"}}, "PORT": {"Ethernet0": {"mtu": "9100"}}}))
    running = d.parse(
        json.dumps(
            {
                "DEVICE_METADATA": {"localhost": {"hostname": "b", "bgp_asn": "65000"}},
                "PORT": {"Ethernet0": {"mtu": "1500", "fec": "rs"}},
                "SNMP_COMMUNITY": {"x": {"TYPE": "RO"}},
            }
        )
    )
    assert restore_deletions(d, backup, running) == ["DEVICE_METADATA|localhost bgp_asn=65000", "PORT|Ethernet0 fec=rs", "SNMP_COMMUNITY|x TYPE=RO"]


def test_an_eos_restore_never_removes_a_physical_interface_but_names_what_is_under_one():
    d = drivers.driver_for("eos", "leaf7")
    backup = d.parse("hostname leaf1\n!\ninterface Ethernet1/1\n   mtu 9214\n!\nend\n")
    running = d.parse(
        "hostname leaf1\n!\ninterface Ethernet1/1\n   mtu 9214\n   description x\n!\ninterface Ethernet5/1\n   description spare\n"
        "!\nusername bob privilege 15 nopassword\n!\nend\n"
    )
    assert restore_deletions(d, backup, running) == ["interface Ethernet1/1 / description x", "username bob privilege 15 nopassword"]


def test_a_platform_it_does_not_know_deletes_nothing_it_could_name():
    class Other:
        platform = "other"

    assert restore_deletions(Other(), {}, {"a": 1}) == []


# ---------------------------------------------------------------- post-check problems


def test_oper_problems_every_kind_in_port_order():
    oper = {"p2": {"up": False, "pfc": [4, 3], "ecn": False}, "p4": {"up": True, "pfc": [3], "ecn": True}, "p5": {"up": True, "pfc": [4, 3], "ecn": True}}
    assert oper_problems(oper, ["p1", "p2", "p3", "p4", "p5"], [3], True) == [
        "p1: not reported by the switch",
        "p2: link is down",
        "p2: PFC on priorities [4, 3] (want [3])",
        "p2: ECN off (want on)",
        "p3: not reported by the switch",
        "p5: PFC on priorities [4, 3] (want [3])",
    ]
    assert oper_problems(oper, ["p5"], [3, 4], False) == ["p5: ECN on (want off)"]
    assert oper_problems(oper, ["p2", "p4"], None, None) == ["p2: link is down"]
    assert oper_problems(oper, ["p2", "p4"], None, None, require_up=False) == []
    assert oper_problems({"p": {"up": True, "pfc": None}}, ["p"], [], False) == []
    assert oper_problems({"p": {"up": True}}, ["p"], [3], None) == ["p: PFC on priorities None (want [3])"]


def test_headroom_and_the_pfc_watchdog_are_judged_only_where_the_driver_reads_them():
    oper = {
        "p1": {"up": True, "pfc": [3], "headroom": [4], "pfcwd": []},
        "p2": {"up": True, "pfc": [3], "headroom": [3], "pfcwd": [3]},
        "p3": {"up": True, "pfc": [3]},
    }
    assert oper_problems(oper, ["p1", "p2", "p3"], [3], None) == [
        "p1: no lossless headroom for the no-drop priority 3 (lossless priorities with headroom: [4]): it drops under incast",
        "p1: PFC watchdog off on the no-drop priority 3 (on: []): a pause storm would stall the fabric",
    ]
