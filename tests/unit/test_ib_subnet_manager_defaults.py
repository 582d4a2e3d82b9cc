"""Role ib_subnet_manager reads every subnet-manager value from the published intent (issue 29 item 3):
``intent.effective()`` merges the subnet manager's defaults once, the role's defaults restate none.

The role's defaults are resolved the way a play resolves them (test_cross_layer's Vars) over
``intent.published`` - the fabric_effective the validation hands every host."""

import os
import re

import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband

from test_cross_layer import ROOT, Vars

DEFAULTS = os.path.join(ROOT, "roles", "ib_subnet_manager", "defaults", "main.yml")
FROM_INTENT = {
    "ib_subnet_manager_routing_engine": ("routing_engine",),
    "ib_subnet_manager_lmc": ("lmc",),
    "ib_subnet_manager_sweep_interval": ("sweep_interval",),
    "ib_subnet_manager_log_file": ("log", "file"),
    "ib_subnet_manager_log_max_size_mb": ("log", "max_size_mb"),
    "ib_subnet_manager_log_flags": ("log", "flags"),
    "ib_subnet_manager_log_verbose": ("log", "verbose"),
    "ib_subnet_manager_default_partition_ipoib": ("default_partition", "ipoib"),
    "ib_subnet_manager_default_partition_membership": ("default_partition", "membership"),
}


def role(eff, host="sm1"):
    v = Vars(inventory_hostname=host, groups={"subnet_managers": ["sm1", "sm2"]}, fabric_effective=eff)
    with open(DEFAULTS, encoding="utf-8") as f:
        dict.update(v, yaml.safe_load(f))
    return v


def sm_value(sm, path):
    for key in path:
        sm = sm[key]
    return sm


def test_every_subnet_manager_value_is_the_published_one():
    eff = published({"transport": "infiniband"}, ("sm1", "sm2"))
    sm = eff["infiniband"]["subnet_manager"]
    v = role(eff)
    for var, path in FROM_INTENT.items():
        assert v[var] == sm_value(sm, path) == sm_value(infiniband.DEFAULTS, path), var
    assert v["ib_subnet_manager_master"] == "sm1"
    assert int(v["ib_subnet_manager_priority"]) == 15 and int(role(eff, "sm2")["ib_subnet_manager_priority"]) == 14
    assert v["ib_subnet_manager_link_width"] == 4 and v["ib_subnet_manager_link_speed_gbps"] == 400
    assert v["ib_subnet_manager_error_thresholds"] == {}


def test_the_role_follows_whatever_the_validation_published():
    """A probe: publish values that are nobody's default; a role default that restated one would keep it."""
    eff = published({"transport": "infiniband", "link_speed_gbps": 200, "link_width": 2}, ("sm1", "sm2"))
    sm = eff["infiniband"]["subnet_manager"]
    sm.update(
        priority=9,
        standby_priority=8,
        routing_engine="updn",
        lmc=2,
        sweep_interval=33,
        master="sm2",
        log={"file": "/x.log", "max_size_mb": 7, "flags": 1, "verbose": True},
        default_partition={"ipoib": False, "membership": "limited"},
    )
    v = role(eff)
    for var, path in FROM_INTENT.items():
        assert v[var] == sm_value(sm, path), var
    assert v["ib_subnet_manager_master"] == "sm2" and int(v["ib_subnet_manager_priority"]) == 8
    assert int(role(eff, "sm2")["ib_subnet_manager_priority"]) == 9
    assert v["ib_subnet_manager_link_width"] == 2 and v["ib_subnet_manager_link_speed_gbps"] == 200


def test_no_subnet_manager_default_is_restated_in_the_role():
    with open(DEFAULTS, encoding="utf-8") as f:
        text = f.read()
    assert "default(fabric)" not in text
    for line in text.splitlines():
        if "ib_subnet_manager_intent" in line or "fabric_effective" in line:
            # only the master falls back (to the group's first host, not to a value of the intent's)
            assert not re.search(r"default\((?!groups\[)", line), line
    with open(os.path.join(ROOT, "roles", "ib_subnet_manager", "tasks", "check.yml"), encoding="utf-8") as f:
        assert "ib_subnet_manager_intent.priority | default(" not in f.read()
