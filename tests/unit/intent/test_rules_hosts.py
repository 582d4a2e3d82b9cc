"""The host roles' variable rules (plugins/module_utils/intent/rules_hosts.py), whole: what validate_host
says of a few wrong values for each variable of HOST_RULES (the generated table, rule_table.py). Each
problem names the key, the value (a secret masked) and what is allowed - the type, the range, the
choices, the format - so a renamed key, a changed limit or choice, a lost rule or a rule that stopped
refusing fails here by name; and every role default passes its own rule. The fabric-wide variables'
rules: test_rules_fabric.py."""

import pytest

from intent.rule_table import DEFAULTS, TABLE
from ansible_collections.linerate.fabric.plugins.module_utils.intent import rules_fabric, rules_hosts
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables


def test_the_table_covers_every_rule_and_nothing_else():
    assert sorted(TABLE) == sorted(variables.RULES)
    # one rule a variable: no name in both tables (RULES would keep the fabric one without a word)
    assert set(rules_hosts.HOST_RULES) & set(rules_fabric.FABRIC_RULES) == set()


@pytest.mark.parametrize("key", sorted(k for k in TABLE if k in rules_hosts.HOST_RULES))
def test_what_each_variable_refuses_and_why(key):
    for value, *problems in TABLE[key]:
        assert variables.validate_host({key: value}) == problems, (key, value)


# Defaults their own rule refuses (an operator writing the default value down would be refused):
# reported, not changed here; each xfail is strict, so the fix removes it from this list.
REFUSED_DEFAULTS = {
    "mofed_repo_url": "url() without empty=True refuses the default '' (no repository); test_intent_vars pins '' "
    "as refused: a decision to make, not changed here",
}


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(k, marks=pytest.mark.xfail(reason=REFUSED_DEFAULTS[k], strict=True)) if k in REFUSED_DEFAULTS else k
        for k in sorted(DEFAULTS)
        if k in rules_hosts.HOST_RULES
    ],
)
def test_every_role_default_passes_its_rule(key):
    assert variables.validate_host({key: DEFAULTS[key]}) == []
