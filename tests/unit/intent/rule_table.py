"""The generated rule table (fixtures/intent/rule_problems.json) and the roles' defaults, shared by
test_rules_hosts.py and test_rules_fabric.py (each checks the rows of its module's rules).

The table holds, per variable, the answer to 1.5 (or [None] where 1.5 passes) and to each of [None],
[], {"\\x00": None}, "" and "\\x00" whose answer differs from it (a list's element rule, an empty value
that is allowed, ...). Regenerate it with tests/unit/fixtures/intent/regen.py after a deliberate rule
change; a deliberate change of a rule changes its line: review that diff like code."""

import glob
import json
import os

import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables

UNIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(UNIT))
TABLE_PATH = os.path.join(UNIT, "fixtures", "intent", "rule_problems.json")
with open(TABLE_PATH, encoding="utf-8") as fh:
    TABLE = json.load(fh)


def _defaults():
    out = {}
    for f in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml"))):
        with open(f, encoding="utf-8") as fh:
            out.update(yaml.safe_load(fh) or {})
    # a Jinja2 expression is filled in when the play runs: its value is not the operator's to write
    return {k: v for k, v in out.items() if k in variables.RULES and "{{" not in json.dumps(v)}


DEFAULTS = _defaults()
