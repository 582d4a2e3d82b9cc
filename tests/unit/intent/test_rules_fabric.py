"""The fabric-wide variables' rules (plugins/module_utils/intent/rules_fabric.py: switch_fabric,
verify_fabric, k8s_render, Ansible's connection variables, the playbooks' switches), whole: what validate_host says of a few wrong values for
each variable of FABRIC_RULES (the generated table, rule_table.py), with key, value and what is
allowed; and every role default passes its own rule. The host roles' rules: test_rules_hosts.py."""

import pytest

from intent.rule_table import DEFAULTS, TABLE
from ansible_collections.linerate.fabric.plugins.module_utils.intent import rules_fabric
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables


def test_every_fabric_rule_has_its_rows_in_the_table():
    assert sorted(k for k in TABLE if k in rules_fabric.FABRIC_RULES) == sorted(rules_fabric.FABRIC_RULES)


@pytest.mark.parametrize("key", sorted(k for k in TABLE if k in rules_fabric.FABRIC_RULES))
def test_what_each_variable_refuses_and_why(key):
    for value, *problems in TABLE[key]:
        assert variables.validate_host({key: value}) == problems, (key, value)


@pytest.mark.parametrize("key", [k for k in sorted(DEFAULTS) if k in rules_fabric.FABRIC_RULES])
def test_every_role_default_passes_its_rule(key):
    assert variables.validate_host({key: DEFAULTS[key]}) == []
