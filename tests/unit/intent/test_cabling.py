"""The inventory's cabling (plugins/module_utils/intent/cabling.py), its messages exactly: every port and
uplink rule's wording, the address edges, the InfiniBand port range, a GUID used twice and the fall-backs
for shapes that are not mappings. The port speeds against the platforms: tests/unit/test_intent_port_speeds.py."""
import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent.cabling import validate_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import FORMATS


PORT = {"device": "mlx5_0", "netdev": "eth1", "switch": "sw1", "switch_port": "swp1"}


SW = {"sw1": {"switch_platform": "nvue"}, "sw2": {"switch_platform": "eos"}}


def cabling(hosts, switches=SW, transport="roce"):
    return validate_cabling({"transport": transport}, hosts, switches)


def one_port(**over):
    return {"n1": {"rdma_ports": [dict(PORT, **over)]}}


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
