"""The inventory's cabling (plugins/module_utils/intent/cabling.py), its messages exactly: every port and
uplink rule's wording, the address edges, the InfiniBand port range, a GUID used twice and the fall-backs
for shapes that are not mappings; and the ports' speeds against what their platform renders (below)."""

import os
from unittest import mock

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent.cabling import validate_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import FORMATS
from ansible_collections.linerate.fabric.plugins.action.validate_intent import ActionModule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers
from ansible_collections.linerate.fabric.plugins.module_utils.switch import profiles


PORT = {"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "swp1"}


SW = {"sw1": {"switch_platform": "nvue"}, "sw2": {"switch_platform": "eos"}}


def cabling_problems(hosts, switches=SW, transport="roce"):
    return validate_cabling({"transport": transport}, hosts, switches)


def one_port(**over):
    return {"n1": {"rdma_ports": [dict(PORT, **over)]}}


@pytest.mark.parametrize(
    "over,message",
    [
        ({"device": "x"}, "n1: rdma_ports[0].device: 'x' is not allowed (allowed: " + FORMATS["device"][1] + ")"),
        ({"netdev": ""}, "n1: rdma_ports[0].netdev: '' is not allowed (allowed: " + FORMATS["netdev"][1] + ")"),
        ({"pci": "x"}, "n1: rdma_ports[0].pci: 'x' is not allowed (allowed: " + FORMATS["pci"][1] + ")"),
        ({"guid": "x"}, "n1: rdma_ports[0].guid: 'x' is not allowed (allowed: " + FORMATS["guid"][1] + ")"),
        ({"switch_port": "1x"}, "n1: rdma_ports[0].switch_port: '1x' is not allowed (allowed: a port name of sw1: " + FORMATS["port"][1] + ")"),
        ({"switch": "sw9"}, "n1: rdma_ports[0].switch: 'sw9' is not allowed (allowed: a host of group switches: sw1, sw2)"),
        (
            {"address": "10.0.0.1"},
            "n1: rdma_ports[0].address: '10.0.0.1' is not allowed (allowed: an IPv4 host address with prefix length, such as 192.168.100.11/24)",
        ),
        (
            {"address": "10.0.0.1/33"},
            "n1: rdma_ports[0].address: '10.0.0.1/33' is not allowed (allowed: an IPv4 host address with prefix length, such as 192.168.100.11/24)",
        ),
        (
            {"address": "10.0.0.1/32"},
            "n1: rdma_ports[0].address: '10.0.0.1/32' is not allowed (allowed: an IPv4 host "
            "address with prefix length, such as 192.168.100.11/24; a /32 has no neighbours on the rail)",
        ),
        (
            {"address": "10.0.0.3/30"},
            "n1: rdma_ports[0].address: '10.0.0.3/30' is not allowed (allowed: an IPv4 host "
            "address with prefix length, such as 192.168.100.11/24; 10.0.0.3 is the network or broadcast address of "
            "10.0.0.0/30)",
        ),
        ({"x": 1}, "n1: rdma_ports[0].x: 1 is not allowed (unknown key; allowed keys: address, device, guid, netdev, pci, switch, switch_port)"),
    ],
)
def test_port_messages_exactly(over, message):
    assert cabling_problems(one_port(**over)) == [message]


@pytest.mark.parametrize("address", ["10.0.0.1/30", "10.0.0.2/30", "10.0.0.0/31", "10.0.0.1/31", "10.0.0.254/24"])
def test_host_addresses_at_the_edges_pass(address):
    assert cabling_problems(one_port(address=address)) == []


def test_a_port_that_is_not_a_mapping_and_an_empty_inventory():
    assert cabling_problems({"n1": {"rdma_ports": [3]}}) == [
        "n1: rdma_ports[0]: 3 is not allowed (allowed: a mapping with device, netdev, switch, switch_port)"
    ]
    assert cabling_problems(one_port(), switches={}) == [
        "n1: rdma_ports[0].switch: 'sw1' is not allowed (allowed: a host of group switches: (the inventory has none))"
    ]


def test_uplink_messages_exactly():
    sw = {
        "sw1": {"switch_platform": "nvue", "switch_uplinks": [{"port": "swp31", "peer": "sw2"}]},
        "sw2": {"switch_platform": "eos", "switch_uplinks": [{"port": "Ethernet1", "peer": "sw2", "peer_port": "x y"}]},
    }
    assert cabling_problems({}, sw) == [
        "sw1: switch_uplinks[0].peer_port: None is not allowed (required; allowed keys: peer, peer_port, port)",
        "sw2: switch_uplinks[0].peer: 'sw2' is not allowed (allowed: another host of group switches: sw1, sw2)",
        "sw2: switch_uplinks[0].peer_port: 'x y' is not allowed (allowed: a port name of sw2: " + FORMATS["port"][1] + ")",
    ]
    sw = {
        "sw1": {"switch_platform": "nvue", "switch_uplinks": [{"port": "swp1", "peer": "sw2", "peer_port": "E1"}]},
        "sw2": {"switch_platform": "eos", "switch_uplinks": None},
    }
    assert cabling_problems(one_port(), sw) == [
        "n1 mlx5_0: switch_port: 'sw1 swp1' is not allowed (allowed: a switch port cabled once; sw1 swp1 is already cabled to sw1 uplink to sw2)"
    ]
    sw["sw1"]["switch_uplinks"][0].update(peer=["sw2"], peer_port="E 1")
    assert cabling_problems({}, sw) == [
        "sw1: switch_uplinks[0].peer: ['sw2'] is not allowed (allowed: another host of group switches: sw1, sw2)",
        "sw1: switch_uplinks[0].peer_port: 'E 1' is not allowed (allowed: a port name of the peer: " + FORMATS["port"][1] + ")",
    ]


def test_infiniband_port_range_exactly():
    sw = {"ib1": {"switch_platform": "infiniband"}}
    assert cabling_problems(one_port(switch="ib1", switch_port=0), sw, "infiniband") == [
        "n1: rdma_ports[0].switch_port: 0 is not allowed (allowed: an InfiniBand switch port number 1..255)"
    ]
    assert cabling_problems(one_port(switch="ib1", switch_port=255), sw, "infiniband") == []
    assert cabling_problems(one_port(switch="ib1", switch_port=1), sw, "infiniband") == []


def test_guid_used_twice():
    hosts = {"n1": {"rdma_ports": [dict(PORT, guid="0x0a")]}, "n2": {"rdma_ports": [dict(PORT, guid="0xA", switch_port="swp2")]}}
    assert cabling_problems(hosts) == ["n2: rdma_ports[0].guid: '0xA' is not allowed (allowed: a GUID used once; n1 mlx5_0 has it)"]


def test_shapes_that_are_not_mappings_fall_back():
    assert schema.validate({"transport": "roce"}, hosts=[1], switches="x") == []
    assert cabling_problems({"n1": "x"}) == ["n1: rdma_ports: None is not allowed (allowed: a list of the host's cabled RDMA ports)"]
    assert cabling_problems({}, {"sw1": "x"}) == ["sw1: switch_platform: None is not allowed (allowed: nvue | sonic | eos)"]
    # an unknown transport is reported by validate_fabric; the cabling is then read as RoCE
    assert validate_cabling({"transport": "x"}, one_port(), SW) == []
    assert validate_cabling("x", one_port(), SW) == []


# ---------------------------------------------------------------- the ports' speeds against their platform (cabling.port_speed_problems)
# Every fabric port's speed is checked against what its platform renders it with, at validation,
# before any switch is contacted (issue 40, point 6): a SONiC port whose speed has no lossless
# headroom row for its cable length (module_utils/switch/buffers.py: sonic-swss's table and the
# operator's rows) and an EOS port whose speed the family has no speed form for are refused naming
# the switch, the ports, the speed and the speeds there are. A SONiC 400G port used to validate as
# "intent valid" and fail in the switch stage. The speeds come from the tables, never restated.

ROW = {"size": 55296, "xon": 18432, "xoff": 36864}
PORTS = [{"device": f"mlx5_{i}", "netdev": f"eth{i}", "switch": "sw1", "switch_port": f"Ethernet{8 * i}"} for i in range(6)]
HOSTS = {"n1": {"rdma_ports": PORTS}}


def check(fabric=None, hosts=None, **sw1):
    return schema.validate(dict({"transport": "roce"}, **(fabric or {})), HOSTS if hosts is None else hosts, {"sw1": sw1})


def supported(cable):
    """What the message names: the table's speeds (Gb/s) for the cable, read from the table."""
    return ", ".join(str(s // 1000) for s in sorted(buffers.SONIC_PG_LOOKUP) if cable in buffers.SONIC_PG_LOOKUP[s])


def sonic_problem(ports, gbps, cable="5m", key="switch_sonic_pg_lookup", names=None):
    return (
        f"sw1: fabric port(s) {ports}: speed_gbps: {gbps} is not allowed (allowed: a speed with a lossless "
        f"headroom row for cable {cable} on SONiC: {names if names is not None else supported(cable)} Gb/s "
        f"(the rows of sonic-swss's test pg_profile_lookup.ini - no platform's, set switch_sonic_hwsku, and {key}); "
        f"buffermgrd has no profile for {gbps * 1000} Mb/s and "
        f"{cable}, so the port would have no headroom: add the platform's row for {gbps * 1000} in {key} "
        "(docs/switches.md))"
    )


def test_a_sonic_400g_port_without_its_headroom_row_is_refused_naming_switch_ports_speed_and_speeds():
    assert check(switch_platform="sonic") == [sonic_problem("Ethernet0, Ethernet8, Ethernet16, Ethernet24 and 2 more", 400)]
    # the same platform named by ansible_network_os
    assert check(ansible_network_os="dellemc.enterprise_sonic.sonic") == [sonic_problem("Ethernet0, Ethernet8, Ethernet16, Ethernet24 and 2 more", 400)]
    assert supported("5m") == "10, 25, 40, 50, 100"


@pytest.mark.parametrize(
    "extra",
    [
        {"switch_sonic_pg_lookup": {400000: {"5m": ROW}}},
        {"switch_fabric_sonic_pg_lookup": {"400000": {"5m": ROW}}},
        {"switch_fabric_link_speed_gbps": 100},
        {"switch_cable_length": "300m", "switch_sonic_pg_lookup": {400000: {"300m": ROW}}},
    ],
)
def test_the_platforms_row_or_a_speed_the_table_has_validates(extra):
    assert check(switch_platform="sonic", **extra) == []


def test_the_cable_length_picks_the_row():
    # 100G at 40m is in sonic-swss's table; a 400G row for 5m does not serve 40m
    assert check({"link_speed_gbps": 100}, switch_platform="sonic", switch_cable_length="40m") == []
    got = check(switch_platform="sonic", switch_cable_length="40m", switch_sonic_pg_lookup={400000: {"5m": ROW}})
    assert got == [sonic_problem("Ethernet0, Ethernet8, Ethernet16, Ethernet24 and 2 more", 400, "40m")]
    # a cable the table has no row for at all: no speed is supported
    got = check({"link_speed_gbps": 100}, switch_platform="sonic", switch_fabric_cable_length="7m")
    assert got == [sonic_problem("Ethernet0, Ethernet8, Ethernet16, Ethernet24 and 2 more", 100, "7m", names="none")]
    assert check(switch_platform="sonic", switch_cable_length="5 m") == [
        "sw1: switch_cable_length: '5 m' is not allowed (allowed: a cable length: digits and 'm', e.g. 5m, 40m, 300m (sonic-cable-length.yang))"
    ]


def test_the_speeds_come_from_the_table(monkeypatch):
    # when sonic-swss's rows (or this table) gain 400G, the same intent validates with no other change
    monkeypatch.setitem(buffers.SONIC_PG_LOOKUP, 400000, {"5m": (1, 2, 3, 0)})
    assert check(switch_platform="sonic") == []
    monkeypatch.delitem(buffers.SONIC_PG_LOOKUP, 100000)
    assert check({"link_speed_gbps": 100}, switch_platform="sonic") == [sonic_problem("Ethernet0, Ethernet8, Ethernet16, Ethernet24 and 2 more", 100)]
    assert "400" in supported("5m") and "100" not in supported("5m")


def test_each_speed_is_named_with_its_own_ports():
    hosts = {"n1": {"rdma_ports": PORTS[:1]}}
    got = check(
        {"link_speed_gbps": 100},
        hosts,
        switch_platform="sonic",
        switch_fabric_extra_ports=[{"name": "Ethernet64", "speed_gbps": 400}, {"name": "Ethernet72", "speed_gbps": 25}],
    )
    assert got == [sonic_problem("Ethernet64", 400)]


def test_an_uplink_landing_on_the_switch_is_one_of_its_ports():
    switches = {
        "sw1": {"switch_platform": "sonic", "switch_sonic_pg_lookup": {400000: {"5m": ROW}}},
        "sw2": {"switch_platform": "sonic", "switch_role": "spine", "switch_uplinks": [{"port": "Ethernet0", "peer": "sw1", "peer_port": "Ethernet256"}]},
    }
    got = schema.validate({"transport": "roce"}, HOSTS, switches)
    # sw2's own uplink port is its only fabric port; sw1 has the row for its hosts' ports and the uplink's
    assert got == [sonic_problem("Ethernet0", 400).replace("sw1:", "sw2:", 1)]


def test_eos_ports_at_a_speed_the_family_has_no_form_for():
    assert check({"link_speed_gbps": 100}, switch_platform="eos", switch_eos_family="7050x3") == []
    got = check(
        {"link_speed_gbps": 100}, switch_platform="eos", switch_eos_family="7050x3", switch_fabric_extra_ports=[{"name": "Ethernet9/1", "speed_gbps": 800}]
    )
    forms = profiles.eos_profile("7050x3")["speeds"]
    assert 800 not in forms
    assert got == [
        "sw1: fabric port(s) Ethernet9/1: speed_gbps: 800 is not allowed (allowed: a speed EOS 7050x3 has "
        "a speed form for: " + ", ".join(f"{g} ({f})" for g, f in sorted(forms.items())) + "; or the switch_eos_family of a family that has one)"
    ]
    # the speed is not set on the port: no form needed
    assert (
        check(
            {"link_speed_gbps": 100},
            switch_platform="eos",
            switch_eos_family="7050x3",
            switch_fabric_set_speed=False,
            switch_fabric_extra_ports=[{"name": "Ethernet9/1", "speed_gbps": 800}],
        )
        == []
    )
    # the fabric's own speed is reported once, by the family check
    got = check({"link_speed_gbps": 800}, switch_platform="eos", switch_eos_family="7050x4")
    assert len(got) == 1 and got[0].startswith("sw1: switch_eos_family: '7050x4' is not allowed")


def test_nvue_carves_its_lossless_buffers_itself():
    assert check({"link_speed_gbps": 800}, switch_platform="nvue") == []


def test_shapes_that_are_not_ports_raise_nothing():
    assert (
        cabling.port_speed_problems(
            "x",
            {"n1": {"rdma_ports": "x"}, "n2": "y"},
            {
                "sw1": {"switch_platform": "sonic", "switch_uplinks": ["a", 1]},
                "sw2": "z",
                "sw3": {"switch_platform": "sonic", "switch_fabric_extra_ports": [{"name": "E1", "speed_gbps": "x"}]},
            },
        )
        == []
    )


def _action(hostvars, groups):
    task = mock.MagicMock()
    task.args = {}
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars={"groups": groups, "hostvars": hostvars, "fabric": {"name": "t"}})


def test_the_action_reads_each_switchs_platform_settings_from_the_inventory():
    groups = {"all": ["n1", "sw1"], "gpu_nodes": ["n1"], "switches": ["sw1"]}
    port = dict(PORTS[0], address="192.168.1.1/24")
    res = _action({"n1": {"rdma_ports": [port]}, "sw1": {"switch_platform": "sonic"}}, groups)
    assert res["problems"] == [sonic_problem("Ethernet0", 400)]
    res = _action({"n1": {"rdma_ports": [port]}, "sw1": {"switch_platform": "sonic", "switch_sonic_pg_lookup": {400000: {"5m": ROW}}}}, groups)
    assert res["problems"] == [] and "intent valid" in res["msg"]
    # the role's own name wins over the inventory's (as in the role's defaults)
    res = _action(
        {
            "n1": {"rdma_ports": [port]},
            "sw1": {
                "switch_platform": "sonic",
                "switch_cable_length": "5m",
                "switch_sonic_pg_lookup": {400000: {"5m": ROW}},
                "switch_fabric_cable_length": "40m",
            },
        },
        groups,
    )
    assert res["problems"] == [sonic_problem("Ethernet0", 400, "40m")]
    # the EOS family is read too (it was not: an unknown family validated)
    res = _action({"n1": {"rdma_ports": [port]}, "sw1": {"switch_platform": "eos", "switch_eos_family": "7050"}}, groups)
    assert res["problems"] == ["sw1: switch_eos_family: '7050' is not allowed (allowed: " + " | ".join(profiles.EOS_FAMILIES) + ")"]


def test_the_default_cable_is_the_roles():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with open(os.path.join(root, "roles", "switch_fabric", "defaults", "main.yml"), encoding="utf-8") as f:
        defaults = yaml.safe_load(f)
    assert defaults["switch_fabric_cable_length"] == "{{ switch_cable_length | default('%s') }}" % buffers.DEFAULT_CABLE
