"""Validation of fabric.infiniband.subnet_manager."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband

KNOWN = {
    "node1": ["0xa088c20300000101"],
    "node2": ["0xa088c20300000201"],
    "spine1": ["0xe41d2d0300a00003"],
    "leaf1": ["0xe41d2d0300a00001"],
}
SMS = ["node1", "node2"]


def good(**over):
    sm = {
        "priority": 15,
        "standby_priority": 14,
        "master": "node1",
        "routing_engine": "ftree",
        "root_guids": ["spine1"],
        "lmc": 0,
        "sweep_interval": 10,
        "log": {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 3, "verbose": False},
        "partitions": [{"name": "storage", "pkey": 0x10, "members": ["node1", "0xA088C20300000201"], "membership": "full", "ipoib": True}],
    }
    sm.update(over)
    return sm


def test_valid_intent_and_resolution():
    assert infiniband.validate_subnet_manager(good(), KNOWN, SMS) == []
    parts = infiniband.resolve_partitions(good(), KNOWN)
    assert parts == [{"name": "storage", "pkey": "0x0010", "membership": "full", "ipoib": True, "guids": ["0xa088c20300000101", "0xa088c20300000201"]}]
    assert infiniband.resolve_roots(good(), KNOWN) == ["0xe41d2d0300a00003"]


def test_defaults_need_root_guids_for_ftree():
    errs = infiniband.validate_subnet_manager({}, KNOWN, SMS)
    assert errs == ["fabric.infiniband.subnet_manager.root_guids: [] is not allowed (allowed: at least one root switch with routing_engine ftree)"]
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
        "fabric.infiniband.subnet_manager.partitions[0].members: '0xdeadbeef00000001' is not allowed (allowed: port GUIDs in the fabric)",
        "fabric.infiniband.subnet_manager.partitions[0].members: 'node9' is not allowed (allowed: inventory hosts with rdma_ports)",
    ]


def test_unknown_routing_engine():
    errs = infiniband.validate_subnet_manager(good(routing_engine="fattree"), KNOWN, SMS)
    assert errs == ["fabric.infiniband.subnet_manager.routing_engine: 'fattree' is not allowed (allowed: " + ", ".join(infiniband.ROUTING_ENGINES) + ")"]
    assert infiniband.validate_subnet_manager(good(routing_engine="ftree,updn"), KNOWN, SMS) == []


@pytest.mark.parametrize(
    "over,key",
    [
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
        ({"partitions": [{"name": "a", "pkey": 1, "members": ["node1"], "membership": "both"}]}, "partitions[0].membership"),
        ({"partitions": [{"name": "a", "pkey": 1, "members": []}]}, "partitions[0].members"),
        ({"partitions": [{"name": "a", "pkey": 1, "members": ["node1"]}, {"name": "b", "pkey": 1, "members": ["node1"]}]}, "partitions[1].pkey"),
        ({"partitions": [{"name": "a", "pkey": 1, "members": ["node1"], "ipoib": "yes"}]}, "partitions[0].ipoib"),
    ],
)
def test_rejections(over, key):
    errs = infiniband.validate_subnet_manager(good(**over), KNOWN, SMS)
    assert len(errs) == 1, errs
    assert errs[0].startswith(f"fabric.infiniband.subnet_manager.{key}: ")
    assert "is not allowed (allowed: " in errs[0]


# ---------------------------------------------------------------- defaults, bounds and messages exactly
# fabric.infiniband.subnet_manager: defaults, bounds and messages exactly.

KNOWN_MIXED_CASE = {"node1": ["0xa088c20300000101"], "node2": ["0xA088C20300000201"], "spine1": ["0xe41d2d0300a00003"]}
BASE = "fabric.infiniband.subnet_manager"


def errors(**sm):
    return infiniband.validate_subnet_manager(dict({"routing_engine": "minhop"}, **sm), KNOWN_MIXED_CASE, ["node1", "node2"])


def test_merged_defaults_exactly():
    assert infiniband.merged(None) == {
        "priority": 15,
        "standby_priority": 14,
        "master": None,
        "routing_engine": "ftree",
        "root_guids": [],
        "lmc": 0,
        "sweep_interval": 10,
        "log": {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 3, "verbose": False},
        "default_partition": {"ipoib": True, "membership": "full"},
        "partitions": [],
    }
    m = infiniband.merged({"log": {"verbose": True}, "default_partition": {"ipoib": False}, "lmc": 2})
    assert m["log"] == {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 3, "verbose": True}
    assert m["default_partition"] == {"ipoib": False, "membership": "full"} and m["lmc"] == 2
    assert infiniband.DEFAULTS["log"]["verbose"] is False  # merged() copies


@pytest.mark.parametrize(
    "value,result",
    [
        (5, 5),
        ("0x10", 16),
        ("0x7FFE", 0x7FFE),
        ("12", 12),
        ("0x", None),
        ("1e3", None),
        (" 1", None),
        ("0x123456789", None),
        ("12345678901", None),
        (True, None),
        (1.0, None),
        (None, None),
    ],
)
def test_to_int(value, result):
    assert infiniband.to_int(value) == result


@pytest.mark.parametrize("key,lo,hi", [("priority", 0, 15), ("lmc", 0, 7), ("sweep_interval", 0, 86400)])
def test_integer_bounds_exactly(key, lo, hi):
    extra = {"standby_priority": 0, "priority": 1} if key == "priority" else {}
    for ok in (lo if key != "priority" else 1, hi):
        assert errors(**dict(extra, **{key: ok})) == [], ok
    assert errors(**dict(extra, **{key: hi + 1})) == [f"{BASE}.{key}: {hi + 1} is not allowed (allowed: integer {lo}..{hi})"]
    assert errors(**{key: lo - 1}) != []


def test_standby_priority_below_priority_exactly():
    assert errors(priority=5, standby_priority=4) == []
    assert errors(priority=5, standby_priority=5) == [f"{BASE}.standby_priority: 5 is not allowed (allowed: 0..4, below priority 5)"]


def test_log_bounds_and_messages_exactly():
    log = {"file": "/var/log/opensm.log", "max_size_mb": 4096, "flags": 255, "verbose": True}
    assert errors(log=log) == []
    assert errors(log=dict(log, max_size_mb=4097, flags=256, verbose=1, file="/a/../b")) == [
        f"{BASE}.log.file: '/a/../b' is not allowed (allowed: an absolute path of at most 255 letters, digits and _ . + / - (no ..))",
        f"{BASE}.log.max_size_mb: 4097 is not allowed (allowed: integer 0..4096)",
        f"{BASE}.log.flags: 256 is not allowed (allowed: integer 0..255)",
        f"{BASE}.log.verbose: 1 is not allowed (allowed: true, false)",
    ]
    assert errors(log="x") == [f"{BASE}.log: 'x' is not allowed (allowed: a mapping with file, max_size_mb, flags, verbose)"]
    assert errors(log=dict(log, size=1)) == [f"{BASE}.log.size: '(key)' is not allowed (allowed: known keys: file, max_size_mb, flags, verbose)"]
    for path in ("/var/log/opensm.log", "/x", "/var/log/..log", "/a/b-c_d+e.f"):
        assert errors(log=dict(log, file=path)) == [], path
    for path in ("var/log", "/", "/a/..", "/../a", "/a b"):
        assert errors(log=dict(log, file=path)) != [] or path == "/", path


def test_keys_masters_and_engines_exactly():
    assert errors(bogus=1) == [f"{BASE}.bogus: '(key)' is not allowed (allowed: known keys: " + ", ".join(infiniband.SM_KEYS) + ")"]
    assert errors(master="node3") == [f"{BASE}.master: 'node3' is not allowed (allowed: a host of group subnet_managers: node1, node2)"]
    assert errors(master="node2") == []
    assert infiniband.validate_subnet_manager({"routing_engine": "minhop", "master": "x"}, KNOWN_MIXED_CASE, []) == []
    assert errors(routing_engine="ftree, updn", root_guids=["spine1"]) == []
    assert errors(routing_engine="updn,ftree") == []
    assert errors(root_guids="spine1") == [f"{BASE}.root_guids: 'spine1' is not allowed (allowed: a list of switch GUIDs or names)"]
    assert errors(root_guids=["node9"]) == [f"{BASE}.root_guids: 'node9' is not allowed (allowed: GUIDs or names of switches in the fabric)"]


def test_default_partition_exactly():
    assert errors(default_partition={"ipoib": False, "membership": "limited"}) == []
    msg = f"{BASE}.default_partition: {{'ipoib': True, 'membership': 'both'}} is not allowed (allowed: {{ipoib: true|false, membership: full|limited}})"
    assert errors(default_partition={"membership": "both"}) == [msg]
    assert len(errors(default_partition={"ipoib": "yes"})) == 1
    assert len(errors(default_partition="x")) == 1


def test_partitions_exactly():
    p = {"name": "a", "pkey": 1, "members": ["node1"]}
    assert errors(partitions=[p, dict(p, pkey=2)]) == [f"{BASE}.partitions[1].name: 'a' is not allowed (allowed: a name not used by another partition)"]
    assert errors(partitions=[dict(p, pkey=0x7FFE, name="x" * 64)]) == []
    assert errors(partitions=[dict(p, name="x" * 65)])[0].startswith(f"{BASE}.partitions[0].name: 'xxx")
    assert errors(partitions=["p"]) == [f"{BASE}.partitions[0]: 'p' is not allowed (allowed: a mapping with name, pkey, members, membership, ipoib)"]
    assert errors(partitions=[dict(p, extra=1)]) == [
        f"{BASE}.partitions[0].extra: '(key)' is not allowed (allowed: known keys: name, pkey, members, membership, ipoib)"
    ]
    assert errors(partitions=[dict(p, membership="limited", ipoib=True)]) == []
    assert errors(partitions=[dict(p, members=["node1", "0xdeadbeef00000001"])]) == [
        f"{BASE}.partitions[0].members: '0xdeadbeef00000001' is not allowed (allowed: port GUIDs in the fabric)"
    ]


def test_resolution_exactly():
    sm = {
        "root_guids": ["spine1", "0xA088C20300000101"],
        "partitions": [
            {"name": "a", "pkey": "0x12", "members": ["node1", "0xa088c20300000101", "node2"]},
            {"name": "b", "pkey": 3, "members": ["node2"], "membership": "limited", "ipoib": True},
        ],
    }
    assert infiniband.resolve_partitions(sm, KNOWN_MIXED_CASE) == [
        {"name": "a", "pkey": "0x0012", "membership": "full", "ipoib": False, "guids": ["0xa088c20300000101", "0xa088c20300000201"]},
        {"name": "b", "pkey": "0x0003", "membership": "limited", "ipoib": True, "guids": ["0xa088c20300000201"]},
    ]
    assert infiniband.resolve_roots(sm, KNOWN_MIXED_CASE) == ["0xe41d2d0300a00003", "0xa088c20300000101"]
    assert infiniband.norm_guid("0xAB") == "0x00000000000000ab"
    assert infiniband.resolve_member("node3", KNOWN_MIXED_CASE) is None
    assert infiniband.resolve_member("node1", {"node1": []}) is None
    assert infiniband.is_guid("0x" + "f" * 16) and not infiniband.is_guid("0x" + "f" * 17) and not infiniband.is_guid("0x")


def test_long_values_are_cut():
    long = "n" * 100
    assert errors(master=long) == [
        f"{BASE}.master: {repr(long)[:77]}... (100 characters) is not allowed (allowed: a host of group subnet_managers: node1, node2)"
    ]
    edge = "n" * 78  # repr is 80 characters: shown whole
    assert errors(master=edge)[0].startswith(f"{BASE}.master: {edge!r} is not allowed")
