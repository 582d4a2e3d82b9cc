"""Validation of fabric.infiniband.subnet_manager."""
import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband

KNOWN = {
    "node1": ["0xa088c20300000101"], "node2": ["0xa088c20300000201"],
    "spine1": ["0xe41d2d0300a00003"], "leaf1": ["0xe41d2d0300a00001"],
}
SMS = ["node1", "node2"]


def good(**over):
    sm = {"priority": 15, "standby_priority": 14, "master": "node1", "routing_engine": "ftree",
          "root_guids": ["spine1"], "lmc": 0, "sweep_interval": 10,
          "log": {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 3, "verbose": False},
          "partitions": [{"name": "storage", "pkey": 0x10, "members": ["node1", "0xA088C20300000201"],
                          "membership": "full", "ipoib": True}]}
    sm.update(over)
    return sm


def test_valid_intent_and_resolution():
    assert infiniband.validate_subnet_manager(good(), KNOWN, SMS) == []
    parts = infiniband.resolve_partitions(good(), KNOWN)
    assert parts == [{"name": "storage", "pkey": "0x0010", "membership": "full", "ipoib": True,
                      "guids": ["0xa088c20300000101", "0xa088c20300000201"]}]
    assert infiniband.resolve_roots(good(), KNOWN) == ["0xe41d2d0300a00003"]


def test_defaults_need_root_guids_for_ftree():
    errs = infiniband.validate_subnet_manager({}, KNOWN, SMS)
    assert errs == ["fabric.infiniband.subnet_manager.root_guids: [] is not allowed "
                    "(allowed: at least one root switch with routing_engine ftree)"]
    assert infiniband.validate_subnet_manager({"routing_engine": "minhop"}, KNOWN, SMS) == []


@pytest.mark.parametrize("pkey", [0, 0x7FFF, 0x8000, 0xFFFF, -1, "0xzz", None, True])
def test_pkey_out_of_range(pkey):
    sm = good(partitions=[{"name": "p", "pkey": pkey, "members": ["node1"]}])
    errs = infiniband.validate_subnet_manager(sm, KNOWN, SMS)
    assert len(errs) == 1
    assert errs[0].startswith("fabric.infiniband.subnet_manager.partitions[0].pkey: ")
    assert "(allowed: 0x0001..0x7ffe" in errs[0]


def test_pkey_as_hex_string_ok():
    sm = good(partitions=[{"name": "p", "pkey": "0x7ffe", "members": ["node1"]}])
    assert infiniband.validate_subnet_manager(sm, KNOWN, SMS) == []


def test_member_guid_not_in_fabric():
    sm = good(partitions=[{"name": "p", "pkey": 1, "members": ["0xdeadbeef00000001", "node9"]}])
    errs = infiniband.validate_subnet_manager(sm, KNOWN, SMS)
    assert errs == [
        "fabric.infiniband.subnet_manager.partitions[0].members: '0xdeadbeef00000001' is not allowed "
        "(allowed: port GUIDs in the fabric)",
        "fabric.infiniband.subnet_manager.partitions[0].members: 'node9' is not allowed "
        "(allowed: inventory hosts with rdma_ports)",
    ]


def test_unknown_routing_engine():
    errs = infiniband.validate_subnet_manager(good(routing_engine="fattree"), KNOWN, SMS)
    assert errs == ["fabric.infiniband.subnet_manager.routing_engine: 'fattree' is not allowed "
                    "(allowed: " + ", ".join(infiniband.ROUTING_ENGINES) + ")"]
    assert infiniband.validate_subnet_manager(good(routing_engine="ftree,updn"), KNOWN, SMS) == []


@pytest.mark.parametrize("over,key", [
    ({"priority": 16}, "priority"),
    ({"standby_priority": 15}, "standby_priority"),
    ({"lmc": 8}, "lmc"),
    ({"sweep_interval": -1}, "sweep_interval"),
    ({"master": "node3"}, "master"),
    ({"root_guids": ["0x1"]}, "root_guids"),
    ({"log": {"file": "relative.log", "max_size_mb": 1, "flags": 3, "verbose": False}}, "log.file"),
    ({"log": {"file": "/x", "max_size_mb": 1, "flags": 300, "verbose": False}}, "log.flags"),
    ({"bogus": 1}, "bogus"),
    ({"partitions": [{"name": "Default", "pkey": 1, "members": ["node1"]}]}, "partitions[0].name"),
    ({"partitions": [{"name": "a", "pkey": 1, "members": ["node1"], "membership": "both"}]},
     "partitions[0].membership"),
    ({"partitions": [{"name": "a", "pkey": 1, "members": []}]}, "partitions[0].members"),
    ({"partitions": [{"name": "a", "pkey": 1, "members": ["node1"]},
                     {"name": "b", "pkey": 1, "members": ["node1"]}]}, "partitions[1].pkey"),
    ({"partitions": [{"name": "a", "pkey": 1, "members": ["node1"], "ipoib": "yes"}]}, "partitions[0].ipoib"),
])
def test_rejections(over, key):
    errs = infiniband.validate_subnet_manager(good(**over), KNOWN, SMS)
    assert len(errs) == 1, errs
    assert errs[0].startswith(f"fabric.infiniband.subnet_manager.{key}: ")
    assert "is not allowed (allowed: " in errs[0]
