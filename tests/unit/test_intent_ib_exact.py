"""fabric.infiniband.subnet_manager: defaults, bounds and messages exactly."""
import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband

KNOWN = {"node1": ["0xa088c20300000101"], "node2": ["0xA088C20300000201"], "spine1": ["0xe41d2d0300a00003"]}
BASE = "fabric.infiniband.subnet_manager"


def errors(**sm):
    return infiniband.validate_subnet_manager(dict({"routing_engine": "minhop"}, **sm), KNOWN, ["node1", "node2"])


def test_merged_defaults_exactly():
    assert infiniband.merged(None) == {
        "priority": 15, "standby_priority": 14, "master": None, "routing_engine": "ftree", "root_guids": [],
        "lmc": 0, "sweep_interval": 10,
        "log": {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 3, "verbose": False},
        "default_partition": {"ipoib": True, "membership": "full"}, "partitions": []}
    m = infiniband.merged({"log": {"verbose": True}, "default_partition": {"ipoib": False}, "lmc": 2})
    assert m["log"] == {"file": "/var/log/opensm.log", "max_size_mb": 100, "flags": 3, "verbose": True}
    assert m["default_partition"] == {"ipoib": False, "membership": "full"} and m["lmc"] == 2
    assert infiniband.DEFAULTS["log"]["verbose"] is False   # merged() copies


@pytest.mark.parametrize("value,result", [(5, 5), ("0x10", 16), ("0x7FFE", 0x7FFE), ("12", 12), ("0x", None),
                                          ("1e3", None), (" 1", None), ("0x123456789", None), ("12345678901", None),
                                          (True, None), (1.0, None), (None, None)])
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
    assert errors(priority=5, standby_priority=5) == [
        f"{BASE}.standby_priority: 5 is not allowed (allowed: 0..4, below priority 5)"]


def test_log_bounds_and_messages_exactly():
    log = {"file": "/var/log/opensm.log", "max_size_mb": 4096, "flags": 255, "verbose": True}
    assert errors(log=log) == []
    assert errors(log=dict(log, max_size_mb=4097, flags=256, verbose=1, file="/a/../b")) == [
        f"{BASE}.log.file: '/a/../b' is not allowed (allowed: an absolute path of at most 255 letters, digits and "
        "_ . + / - (no ..))",
        f"{BASE}.log.max_size_mb: 4097 is not allowed (allowed: integer 0..4096)",
        f"{BASE}.log.flags: 256 is not allowed (allowed: integer 0..255)",
        f"{BASE}.log.verbose: 1 is not allowed (allowed: true, false)"]
    assert errors(log="x") == [f"{BASE}.log: 'x' is not allowed (allowed: a mapping with file, max_size_mb, flags, verbose)"]
    assert errors(log=dict(log, size=1)) == [
        f"{BASE}.log.size: '(key)' is not allowed (allowed: known keys: file, max_size_mb, flags, verbose)"]
    for path in ("/var/log/opensm.log", "/x", "/var/log/..log", "/a/b-c_d+e.f"):
        assert errors(log=dict(log, file=path)) == [], path
    for path in ("var/log", "/", "/a/..", "/../a", "/a b"):
        assert errors(log=dict(log, file=path)) != [] or path == "/", path


def test_keys_masters_and_engines_exactly():
    assert errors(bogus=1) == [f"{BASE}.bogus: '(key)' is not allowed (allowed: known keys: " + ", ".join(infiniband.SM_KEYS) + ")"]
    assert errors(master="node3") == [f"{BASE}.master: 'node3' is not allowed (allowed: a host of group subnet_managers: node1, node2)"]
    assert errors(master="node2") == []
    assert infiniband.validate_subnet_manager({"routing_engine": "minhop", "master": "x"}, KNOWN, []) == []
    assert errors(routing_engine="ftree, updn", root_guids=["spine1"]) == []
    assert errors(routing_engine="updn,ftree") == []
    assert errors(root_guids="spine1") == [f"{BASE}.root_guids: 'spine1' is not allowed (allowed: a list of switch GUIDs or names)"]
    assert errors(root_guids=["node9"]) == [f"{BASE}.root_guids: 'node9' is not allowed (allowed: GUIDs or names of switches in the fabric)"]


def test_default_partition_exactly():
    assert errors(default_partition={"ipoib": False, "membership": "limited"}) == []
    msg = f"{BASE}.default_partition: {{'ipoib': True, 'membership': 'both'}} is not allowed " \
          "(allowed: {ipoib: true|false, membership: full|limited})"
    assert errors(default_partition={"membership": "both"}) == [msg]
    assert len(errors(default_partition={"ipoib": "yes"})) == 1
    assert len(errors(default_partition="x")) == 1


def test_partitions_exactly():
    p = {"name": "a", "pkey": 1, "members": ["node1"]}
    assert errors(partitions=[p, dict(p, pkey=2)]) == [
        f"{BASE}.partitions[1].name: 'a' is not allowed (allowed: a name not used by another partition)"]
    assert errors(partitions=[dict(p, pkey=0x7FFE, name="x" * 64)]) == []
    assert errors(partitions=[dict(p, name="x" * 65)])[0].startswith(f"{BASE}.partitions[0].name: 'xxx")
    assert errors(partitions=["p"]) == [
        f"{BASE}.partitions[0]: 'p' is not allowed (allowed: a mapping with name, pkey, members, membership, ipoib)"]
    assert errors(partitions=[dict(p, extra=1)]) == [
        f"{BASE}.partitions[0].extra: '(key)' is not allowed (allowed: known keys: name, pkey, members, membership, ipoib)"]
    assert errors(partitions=[dict(p, membership="limited", ipoib=True)]) == []
    assert errors(partitions=[dict(p, members=["node1", "0xdeadbeef00000001"])]) == [
        f"{BASE}.partitions[0].members: '0xdeadbeef00000001' is not allowed (allowed: port GUIDs in the fabric)"]


def test_resolution_exactly():
    sm = {"root_guids": ["spine1", "0xA088C20300000101"],
          "partitions": [{"name": "a", "pkey": "0x12", "members": ["node1", "0xa088c20300000101", "node2"]},
                         {"name": "b", "pkey": 3, "members": ["node2"], "membership": "limited", "ipoib": True}]}
    assert infiniband.resolve_partitions(sm, KNOWN) == [
        {"name": "a", "pkey": "0x0012", "membership": "full", "ipoib": False,
         "guids": ["0xa088c20300000101", "0xa088c20300000201"]},
        {"name": "b", "pkey": "0x0003", "membership": "limited", "ipoib": True, "guids": ["0xa088c20300000201"]}]
    assert infiniband.resolve_roots(sm, KNOWN) == ["0xe41d2d0300a00003", "0xa088c20300000101"]
    assert infiniband.norm_guid("0xAB") == "0x00000000000000ab"
    assert infiniband.resolve_member("node3", KNOWN) is None
    assert infiniband.resolve_member("node1", {"node1": []}) is None
    assert infiniband.is_guid("0x" + "f" * 16) and not infiniband.is_guid("0x" + "f" * 17) and not infiniband.is_guid("0x")


def test_long_values_are_cut():
    long = "n" * 100
    assert errors(master=long) == [f"{BASE}.master: {repr(long)[:77]}... (100 characters) is not allowed "
                                   "(allowed: a host of group subnet_managers: node1, node2)"]
    edge = "n" * 78   # repr is 80 characters: shown whole
    assert errors(master=edge)[0].startswith(f"{BASE}.master: {edge!r} is not allowed")
