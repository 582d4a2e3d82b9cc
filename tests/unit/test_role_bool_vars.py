"""Every boolean role variable is read through `| bool` wherever it decides something.

Role argument specs validate a variable but do not convert it: `-e mofed_allow_driver_restart=false`
arrives as the string "false", and ansible-core 2.19 refuses a conditional that is not a boolean
("Conditional result (True) was derived from value of type 'str'"), so the operator's documented
switch broke the run. A boolean's value handed to a module as it is (`force: "{{ x }}"`) is converted
by the module's own argument spec and is fine; a `when:` or a Jinja `if`/`and`/`or`/`not` is not.
"""

import glob
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def bool_vars():
    out = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path, encoding="utf-8") as f:
            spec = yaml.safe_load(f)
        for entry in spec["argument_specs"].values():
            out.update(k for k, v in (entry.get("options") or {}).items() if v.get("type") == "bool")
    return out


def conditions(node):
    """(kind, text) of every `when`/`that`/`changed_when`/`failed_when` condition and Jinja span in a YAML tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("when", "that", "changed_when", "failed_when", "until") and not isinstance(v, bool):
                for c in v if isinstance(v, list) else [v]:
                    if isinstance(c, str):
                        yield "condition", c
            else:
                yield from conditions(v)
    elif isinstance(node, list):
        for v in node:
            yield from conditions(v)
    elif isinstance(node, str):
        for span in JINJA.findall(node):
            yield "jinja", span


def bare_uses(text, kind, names):
    """The names used in a decision without `| bool` (a value passed as it is, `{{ x }}`, is not one)."""
    if kind == "jinja" and re.fullmatch(r"\{\{\s*[\w.]+\s*\}\}", text):
        return []
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "''", text)  # words inside string literals are text, not variables
    bad = []
    for name in names:
        for m in re.finditer(rf"(?<![\w.'\"]){name}\b", text):
            rest = text[m.end() :]
            if re.match(r"\s*(\|\s*default\([^()]*\)\s*)?\|\s*bool\b", rest):
                continue
            if re.match(r"\s*(is\s+(not\s+)?(boolean|string|defined|undefined)\b|\|\s*(to_json|string|lower|type_debug))", rest):
                continue
            if kind == "jinja" and not re.search(rf"(\bif|\band|\bor|\bnot|\(|==|!=)\s*{name}\b|{name}\s*(\band\b|\bor\b|\belse\b|==|!=)", text):
                continue
            bad.append(name)
    return bad


def files():
    pats = ["roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "playbooks/*.yml", "playbooks/*/*.yml"]
    for pat in pats:
        yield from sorted(glob.glob(os.path.join(ROOT, pat)))


def test_no_boolean_role_variable_decides_without_the_bool_filter():
    names = bool_vars()
    assert "mofed_allow_driver_restart" in names and len(names) > 20
    found = []
    for path in files():
        with open(path, encoding="utf-8") as f:
            tree = yaml.safe_load(f)
        for kind, text in conditions(tree):
            for name in bare_uses(text, kind, names):
                found.append(f"{os.path.relpath(path, ROOT)}: {name} in {text.strip()[:100]!r}")
    assert not found, "read these through `| bool` (-e name=false is a string):\n" + "\n".join(found)


def test_the_rule_sees_what_broke_and_passes_what_is_right():
    names = {"mofed_allow_driver_restart"}
    assert bare_uses("inventory_hostname == mofed_turn and not mofed_allow_driver_restart", "condition", names)
    assert bare_uses("mofed_allow_driver_restart", "condition", names)
    assert bare_uses("{{ 'a' if mofed_allow_driver_restart else 'b' }}", "jinja", names)
    assert not bare_uses("not (mofed_allow_driver_restart | bool)", "condition", names)
    assert not bare_uses("mofed_allow_driver_restart | default(false) | bool", "condition", names)
    assert not bare_uses("{{ mofed_allow_driver_restart }}", "jinja", names)
    assert not bare_uses("mofed_allow_driver_restart is boolean", "condition", names)
