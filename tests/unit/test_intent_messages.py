"""Exact messages: every format's description, every cabling rule's wording,
the cut of long values, and the fall-backs for shapes that are not mappings."""
import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import fabric as intent
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent.cabling import validate_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import FORMATS, has_format, Problems, show
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband as intent_ib

PORT = {"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "swp1"}
SW = {"sw1": {"switch_platform": "nvue"}, "sw2": {"switch_platform": "eos"}}


def cabling(hosts, switches=SW, transport="roce"):
    return validate_cabling({"transport": transport}, hosts, switches)


def one_port(**over):
    return {"n1": {"rdma_ports": [dict(PORT, **over)]}}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_rejects_a_newline_and_accepts_its_example(fmt):
    good = {"name": "fabric", "device": "mlx5_0", "netdev": "eth1", "port": "Ethernet1/1", "ifname_list": "^lo,docker",
            "nccl_value": "mlx5_0:1,mlx5_3:1", "pci": "0000:41:00.0", "guid": "0xa088c20300000101"}[fmt]
    assert has_format(good, fmt)
    assert not has_format(good + "\n", fmt)
    assert not has_format(good + ";x", fmt)
    assert not has_format(None, fmt)


@pytest.mark.parametrize("over,message", [
    ({"device": "x"}, "n1: rdma_ports[0].device: 'x' is not allowed (allowed: " + FORMATS["device"][1] + ")"),
    ({"netdev": ""}, "n1: rdma_ports[0].netdev: '' is not allowed (allowed: " + FORMATS["netdev"][1] + ")"),
    ({"pci": "x"}, "n1: rdma_ports[0].pci: 'x' is not allowed (allowed: " + FORMATS["pci"][1] + ")"),
    ({"guid": "x"}, "n1: rdma_ports[0].guid: 'x' is not allowed (allowed: " + FORMATS["guid"][1] + ")"),
    ({"switch_port": "1x"}, "n1: rdma_ports[0].switch_port: '1x' is not allowed (allowed: a port name of sw1: "
     + FORMATS["port"][1] + ")"),
    ({"switch": "sw9"}, "n1: rdma_ports[0].switch: 'sw9' is not allowed (allowed: a host of group switches: sw1, sw2)"),
    ({"address": "10.0.0.1"}, "n1: rdma_ports[0].address: '10.0.0.1' is not allowed (allowed: an IPv4 host address "
     "with prefix length, such as 192.168.100.11/24)"),
    ({"address": "10.0.0.1/33"}, "n1: rdma_ports[0].address: '10.0.0.1/33' is not allowed (allowed: an IPv4 host "
     "address with prefix length, such as 192.168.100.11/24)"),
    ({"address": "10.0.0.1/32"}, "n1: rdma_ports[0].address: '10.0.0.1/32' is not allowed (allowed: an IPv4 host "
     "address with prefix length, such as 192.168.100.11/24; a /32 has no neighbours on the rail)"),
    ({"address": "10.0.0.3/30"}, "n1: rdma_ports[0].address: '10.0.0.3/30' is not allowed (allowed: an IPv4 host "
     "address with prefix length, such as 192.168.100.11/24; 10.0.0.3 is the network or broadcast address of "
     "10.0.0.0/30)"),
    ({"x": 1}, "n1: rdma_ports[0].x: 1 is not allowed (unknown key; allowed keys: address, device, guid, netdev, pci, "
     "switch, switch_port)"),
])
def test_port_messages_exactly(over, message):
    assert cabling(one_port(**over)) == [message]


@pytest.mark.parametrize("address", ["10.0.0.1/30", "10.0.0.2/30", "10.0.0.0/31", "10.0.0.1/31", "10.0.0.254/24"])
def test_host_addresses_at_the_edges_pass(address):
    assert cabling(one_port(address=address)) == []


def test_a_port_that_is_not_a_mapping_and_an_empty_inventory():
    assert cabling({"n1": {"rdma_ports": [3]}}) == [
        "n1: rdma_ports[0]: 3 is not allowed (allowed: a mapping with device, netdev, switch, switch_port)"]
    assert cabling(one_port(), switches={}) == [
        "n1: rdma_ports[0].switch: 'sw1' is not allowed (allowed: a host of group switches: (the inventory has none))"]


def test_uplink_messages_exactly():
    sw = {"sw1": {"switch_platform": "nvue", "switch_uplinks": [{"port": "swp31", "peer": "sw2"}]},
          "sw2": {"switch_platform": "eos", "switch_uplinks": [{"port": "Ethernet1", "peer": "sw2", "peer_port": "x y"}]}}
    assert cabling({}, sw) == [
        "sw1: switch_uplinks[0].peer_port: None is not allowed (required; allowed keys: peer, peer_port, port)",
        "sw2: switch_uplinks[0].peer: 'sw2' is not allowed (allowed: another host of group switches: sw1, sw2)",
        "sw2: switch_uplinks[0].peer_port: 'x y' is not allowed (allowed: a port name of sw2: "
        + FORMATS["port"][1] + ")",
    ]
    sw = {"sw1": {"switch_platform": "nvue", "switch_uplinks": [{"port": "swp1", "peer": "sw2", "peer_port": "E1"}]},
          "sw2": {"switch_platform": "eos", "switch_uplinks": None}}
    assert cabling(one_port(), sw) == [
        "n1 mlx5_0: switch_port: 'sw1 swp1' is not allowed (allowed: a switch port cabled once; sw1 swp1 is already "
        "cabled to sw1 uplink to sw2)"]
    sw["sw1"]["switch_uplinks"][0].update(peer=["sw2"], peer_port="E 1")
    assert cabling({}, sw) == [
        "sw1: switch_uplinks[0].peer: ['sw2'] is not allowed (allowed: another host of group switches: sw1, sw2)",
        "sw1: switch_uplinks[0].peer_port: 'E 1' is not allowed (allowed: a port name of the peer: "
        + FORMATS["port"][1] + ")"]


def test_infiniband_port_range_exactly():
    sw = {"ib1": {"switch_platform": "infiniband"}}
    assert cabling(one_port(switch="ib1", switch_port=0), sw, "infiniband") == [
        "n1: rdma_ports[0].switch_port: 0 is not allowed (allowed: an InfiniBand switch port number 1..255)"]
    assert cabling(one_port(switch="ib1", switch_port=255), sw, "infiniband") == []
    assert cabling(one_port(switch="ib1", switch_port=1), sw, "infiniband") == []


def test_guid_used_twice():
    hosts = {"n1": {"rdma_ports": [dict(PORT, guid="0x0a")]},
             "n2": {"rdma_ports": [dict(PORT, guid="0xA", switch_port="swp2")]}}
    assert cabling(hosts) == [
        "n2: rdma_ports[0].guid: '0xA' is not allowed (allowed: a GUID used once; n1 mlx5_0 has it)"]


def test_shapes_that_are_not_mappings_fall_back():
    assert schema.validate({"transport": "roce"}, hosts=[1], switches="x") == []
    assert cabling({"n1": "x"}) == ["n1: rdma_ports: None is not allowed (allowed: a list of the host's cabled RDMA ports)"]
    assert cabling({}, {"sw1": "x"}) == ["sw1: switch_platform: None is not allowed (allowed: nvue | sonic | eos)"]
    # an unknown transport is reported by validate_fabric; the cabling is then read as RoCE
    assert validate_cabling({"transport": "x"}, one_port(), SW) == []
    assert validate_cabling("x", one_port(), SW) == []


@pytest.mark.parametrize("length,cut", [(78, False), (79, True)])
def test_values_are_cut_after_80_characters(length, cut):
    value = "a" * length          # repr adds two quotes: 80 or 81 characters
    shown = show(value)
    assert shown == (repr(value)[:77] + f"... ({length} characters)" if cut else repr(value))


def test_problems_and_merge():
    p = Problems()
    p.add("k", 1, "allowed: x")
    p.note("free text")
    assert p.items == ["k: 1 is not allowed (allowed: x)", "free text"]
    assert intent.merge({"a": {"b": 1, "c": 2}}, None) == {"a": {"b": 1, "c": 2}}
    assert intent.merge({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}, "d": [1]}) == {"a": {"b": 3, "c": 2}, "d": [1]}
    assert intent.merge({"a": {"b": 1}}, {"a": 5}) == {"a": 5}


def test_effective_on_infiniband_keeps_a_chosen_master_and_the_roce_block_only_when_given():
    sm = intent.effective({"transport": "infiniband"}, ("sm1",))["infiniband"]["subnet_manager"]
    assert sm == dict(intent_ib.DEFAULTS, master="sm1")
    assert intent.effective({"transport": "infiniband"}, ())["infiniband"] == {"subnet_manager": intent_ib.DEFAULTS}
    # a chosen master is kept
    assert intent.effective({"transport": "infiniband", "infiniband": {"subnet_manager": {"master": "sm2"}}},
                            ("sm1",))["infiniband"]["subnet_manager"]["master"] == "sm2"
    assert "roce" in intent.effective({"transport": "infiniband", "roce": {}})
    assert intent.effective(None)["transport"] == "roce"


def test_effective_merges_the_subnet_manager_defaults_once():
    """Role ib_subnet_manager restates none of them (issue 29 item 3): every one comes from here."""
    given = {"transport": "infiniband", "infiniband": {"subnet_manager": {
        "priority": 12, "log": {"flags": 7}, "default_partition": {"ipoib": False}, "partitions": [{"name": "p"}]}}}
    sm = intent.effective(given, ("a", "b"))["infiniband"]["subnet_manager"]
    assert sm == {"priority": 12, "standby_priority": 14, "master": "a", "routing_engine": "ftree", "root_guids": [],
                  "lmc": 0, "sweep_interval": 10, "partitions": [{"name": "p"}],
                  "log": {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 7, "verbose": False},
                  "default_partition": {"ipoib": False, "membership": "full"}}
    # nothing shared with the defaults or the input
    sm["root_guids"].append("0x1")
    sm["log"]["flags"] = 1
    assert intent_ib.DEFAULTS["root_guids"] == [] and intent_ib.DEFAULTS["log"]["flags"] == 3
    assert given["infiniband"]["subnet_manager"]["log"] == {"flags": 7}
    # a subnet_manager that is not a mapping is left for validate to report
    assert intent.effective({"transport": "infiniband", "infiniband": {"subnet_manager": "x"}}
                            )["infiniband"]["subnet_manager"] == "x"
    assert schema.validate_fabric({"transport": "infiniband", "infiniband": {"subnet_manager": "x"}}) is not None


def test_derived_helpers():
    assert intent.pfc_vector([0, 7]) == [1, 0, 0, 0, 0, 0, 0, 1]
    assert intent.pfc_vector([]) == [0] * 8
    eff = intent.effective({"link_speed_gbps": 200, "verify": {"ib_write_bw_fraction": 0.95},
                            "roce": {"data_dscp": 48, "cnp_dscp": 46, "no_drop_priority": 5,
                                     "ecn": {"enabled": False}}})
    d = intent.derive(eff)
    assert d["tos"] == 192 and d["pfc_priorities"] == [5]
    assert d["dscp2prio"] == {"48": 5, "46": 6}
    assert d["cc_prio_mask"] == 255 - 32  # ECN off: the no-drop priority's bit cleared
    assert d["ib_write_bw_min_gbps"] == 190 and d["nccl_busbw_min_gbytes_per_nic"] == 20
    assert intent.published({"link_speed_gbps": 200})["derived"]["line_rate_gbps"] == 200


def test_derived_infiniband_has_the_same_keys_without_roce_values():
    ib = intent.derive(intent.effective({"transport": "infiniband"}))
    assert set(ib) == set(intent.derive(intent.effective({})))
    assert ib["tos"] is None and ib["cc_prio_mask"] is None
    assert ib["dscp2prio"] == {} and ib["pfc_priorities"] == []
