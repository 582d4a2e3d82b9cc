"""The rest of the knobs' validation (issue 36 items 5 and 6): the durable state's variables (backup
retention, the restore's two flags and the one they replace, the trend's share), the master subnet
manager named once and in the inventory, the benchmarks' class flags, each before any contact (infinite
or NaN numbers refused by every kind of rule: intent/test_varcheck.py)."""
import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import knobs
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables
from ansible_collections.linerate.fabric.plugins.module_utils.intent.varcheck import Checker

from test_validate_action import PORT, run_action

NAN, INF = float("nan"), float("inf")


def msg(key, shown, allowed):
    return f"{key}: {shown} is not allowed (allowed: {allowed})"


# ---------------------------------------------------------------- backup retention and the restore's flags

KEEP = "an integer 1..100000 backups kept per switch"


@pytest.mark.parametrize("value,shown", [(0, "0"), (-1, "-1"), (100001, "100001"), ("all", "'all'"), (True, "True"),
                                         (2.5, "2.5"), (INF, "inf"), (NAN, "nan"), ("", "''")])
def test_a_backup_count_that_is_no_count_is_refused(value, shown):
    assert variables.validate_host({"switch_fabric_backup_keep": value}) == [msg("switch_fabric_backup_keep", shown, KEEP)]


@pytest.mark.parametrize("value", [1, 30, "30", 100000])
def test_a_backup_count_passes(value):
    assert variables.validate_host({"switch_fabric_backup_keep": value}) == []


@pytest.mark.parametrize("key", ["switch_fabric_restore_accept_no_digest", "switch_fabric_restore_allow_deletions"])
def test_each_restore_flag_is_a_strict_boolean(key):
    assert variables.validate_host({key: "true"}) == [] and variables.validate_host({key: False}) == []
    assert variables.validate_host({key: "maybe"}) == [msg(key, "'maybe'", variables.BOOL_ALLOWED)]


SPLIT = ("unset: switch_fabric_restore_force was split in two (it both accepted a backup without a .sha256 digest "
         "and allowed a restore to delete settings outside the managed scope); set instead "
         "switch_fabric_restore_accept_no_digest: true and/or switch_fabric_restore_allow_deletions: true")


@pytest.mark.parametrize("value,shown", [(True, "True"), (False, "False"), ("true", "'true'"), (None, "None")])
def test_the_flag_that_did_both_is_refused_naming_the_two(value, shown):
    assert variables.validate_host({"switch_fabric_restore_force": value}) == [msg("switch_fabric_restore_force", shown, SPLIT)]


def test_split_into_names_every_replacement():
    c = Checker("sw1")
    assert knobs.split_into("why", "a", "b", "c")(c, "old", 1) is False
    assert c.items == ["sw1: old: 1 is not allowed (allowed: unset: old was split in two (why); set instead "
                       "a: true and/or b: true and/or c: true)"]


def test_the_action_refuses_the_old_flag_before_any_contact():
    groups = {"all": ["node1", "leaf1"], "gpu_nodes": ["node1"], "switches": ["leaf1"]}
    hostvars = {"node1": {"rdma_ports": [PORT]},
                "leaf1": {"switch_platform": "nvue", "switch_fabric_restore_force": True, "switch_fabric_backup_keep": 0}}
    res = run_action(groups, hostvars)
    assert res["failed"] and "ansible_facts" not in res
    assert res["problems"] == ["leaf1: " + msg("switch_fabric_backup_keep", "0", KEEP),
                               "leaf1: " + msg("switch_fabric_restore_force", "True", SPLIT)]


# ---------------------------------------------------------------- the trend's share

SHARE = "a share 0 < x < 1, such as 0.05 for 5 % (a finite number: not nan or inf)"


@pytest.mark.parametrize("value", [0.05, "0.05", ".5", 0.999999])
def test_a_trend_share_passes(value):
    assert variables.validate_host({"linerate_trend_bandwidth_drop": value}) == []


@pytest.mark.parametrize("value,shown", [(0, "0"), (1, "1"), (0.0, "0.0"), (1.0, "1.0"), (-0.05, "-0.05"), (5, "5"),
                                         ("5%", "'5%'"), ("1.5", "'1.5'"), ("nan", "'nan'"), (NAN, "nan"),
                                         (INF, "inf"), (True, "True"), (None, "None")])
def test_a_trend_share_outside_0_and_1_is_refused(value, shown):
    assert variables.validate_host({"linerate_trend_bandwidth_drop": value}) == [
        msg("linerate_trend_bandwidth_drop", shown, SHARE)]


# ---------------------------------------------------------------- the master subnet manager: one host of the inventory

INV = {"hosts": ["n0", "n1", "sm1", "sm2"], "group": "gpu_nodes", "group_hosts": ["n0", "n1"]}


@pytest.mark.parametrize("value,problems", [
    ("sm1", []),
    ("sm9", [msg("ib_subnet_manager_master", "'sm9'", "a host of the inventory (n0, n1, sm1, sm2)")]),
    ("sm[1-2]", [msg("ib_subnet_manager_master", "'sm[1-2]'", "one name, not a Slurm hostlist: node[1-4], node[1,3] "
                     "or a,b (or names separated by a space) name several nodes; the inventory host of the master "
                     "subnet manager")]),
    ("sm1,sm2", [msg("ib_subnet_manager_master", "'sm1,sm2'", "one name, not a Slurm hostlist: node[1-4], node[1,3] "
                     "or a,b (or names separated by a space) name several nodes; the inventory host of the master "
                     "subnet manager")]),
])
def test_the_master_subnet_manager_is_one_host_of_the_inventory(value, problems):
    assert variables.validate_host({"ib_subnet_manager_master": value}, INV) == problems


def test_without_an_inventory_the_master_is_checked_for_its_form_only():
    assert variables.validate_host({"ib_subnet_manager_master": "sm9"}) == []
    assert len(variables.validate_host({"ib_subnet_manager_master": "sm[1-2]"})) == 1


def test_a_host_list_of_the_inventory_is_shown_whole_up_to_five():
    many = {"hosts": [f"h{i}" for i in range(7)]}
    assert variables.validate_host({"ib_subnet_manager_master": "x"}, many) == [
        msg("ib_subnet_manager_master", "'x'", "a host of the inventory (h0, h1, h2, h3, h4 and 2 more)")]


# ---------------------------------------------------------------- the benchmarks' class flags: null or a range

@pytest.mark.parametrize("key,top,allowed", [
    ("verify_fabric_gid_index", 255, "null or a GID index 0..255"),
    ("verify_fabric_tclass", 255, "null or a traffic class 0..255"),
    ("verify_fabric_sl", 15, "null or a service level 0..15")])
def test_a_class_flag_is_null_or_within_its_range(key, top, allowed):
    for good in (None, 0, top, str(top)):
        assert variables.validate_host({key: good}) == [], good
    for bad, shown in ((-1, "-1"), (top + 1, str(top + 1)), ("", "''"), (1.5, "1.5"), (True, "True"), (NAN, "nan")):
        assert variables.validate_host({key: bad}) == [msg(key, shown, allowed)], bad


@pytest.mark.parametrize("key,allowed", [
    ("nccl_env_gid_index", "empty (discovered) or a GID index 0..255"),
    ("verify_fabric_nccl_gid_index", "empty (discovered) or a GID index 0..255"),
    ("nccl_env_ib_tc", "empty or a traffic class 0..255")])
def test_an_nccl_class_flag_is_empty_or_within_its_range(key, allowed):
    for good in ("", 0, 255, "7"):
        assert variables.validate_host({key: good}) == [], good
    for bad, shown in ((-1, "-1"), (256, "256"), ("x", "'x'"), (INF, "inf")):
        assert variables.validate_host({key: bad}) == [msg(key, shown, allowed)], bad


# ---------------------------------------------------------------- the intent's messages, exactly (seed 307's survivors)

@pytest.mark.parametrize("fabric,problems", [
    ({"mtu": {"host": 9216, "switch": 9000}},
     ["fabric.mtu.host: 9216 is not allowed (allowed: at most fabric.mtu.switch (9000); a host MTU above the switch "
      "MTU drops every full-size frame)"]),
    ({"firmware": {"profile": "Fast"}},
     ["fabric.firmware.profile: 'Fast' is not allowed (allowed: gpudirect | default | none)"]),
    ({"verify": {"link_errors_max": -1}},
     ["fabric.verify.link_errors_max: -1 is not allowed (allowed: an integer >= 0 (counts over the verification "
      "window))"]),
    ({"verify": {"link_flaps_max": 1.5}},
     ["fabric.verify.link_flaps_max: 1.5 is not allowed (allowed: an integer >= 0 (counts over the verification "
      "window))"]),
])
def test_the_intents_mtu_firmware_and_count_messages_exactly(fabric, problems):
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
    assert schema.validate_fabric(dict({"transport": "roce"}, **fabric)) == problems
