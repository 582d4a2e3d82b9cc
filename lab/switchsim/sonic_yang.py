"""CONFIG_DB validation against constraints extracted from SONiC's YANG models.

Real SONiC validates a whole CONFIG_DB with libyang and the sonic-yang-models
(sonic-utilities generic_config_updater: ``config checkpoint`` refuses an
invalid running config, ``config rollback`` an invalid checkpoint). The lab
does the same with the constraints of the tables linerate writes, kept as
data with the source line of each in sonic_yang_constraints.json. A table
that file does not list is not checked (docs/conformance.md, SONiC).

``validate(db)`` returns every problem as ``TABLE|key: field: value: why
(file:line)``; an empty list means valid.
"""

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "sonic_yang_constraints.json")


def load(path=DATA):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


CONSTRAINTS = load()


def _where(table, spec):
    return f"{CONSTRAINTS['tables'][table]['file']}:{spec['line']}" if "line" in spec else table


def check_value(db, value, spec, types=None):
    """None when ``value`` satisfies ``spec``, else why not (without the source)."""
    types = types or CONSTRAINTS["types"]
    if "union" in spec:
        whys = [check_value(db, value, alt, types) for alt in spec["union"]]
        return None if any(w is None for w in whys) else " and ".join(whys)
    if "type" in spec:
        why = check_value(db, value, types[spec["type"]], types)
        if why:
            return why
    if "leafref" in spec:
        if value not in db.get(spec["leafref"], {}):
            return f"no {spec['leafref']} entry named {value!r} (leafref)"
    if "enum" in spec and value not in spec["enum"]:
        return "not one of " + " | ".join(spec["enum"])
    if "uint" in spec or "int" in spec:
        lo, hi = spec.get("uint") or spec["int"]
        if not re.fullmatch(r"-?\d+" if "int" in spec else r"\d+", value or ""):
            return "not an integer" if "int" in spec else "not an unsigned integer"
        if not lo <= int(value) <= hi:
            return f"out of range {lo}..{hi}"
    if "length" in spec:
        lo, hi = spec["length"]
        if not lo <= len(value) <= hi:
            return f"length {len(value)} outside {lo}..{hi}"
    if "pattern" in spec and not re.fullmatch(spec["pattern"], value):
        # YANG patterns are anchored at both ends (RFC 7950 9.4.5)
        return f"does not match the pattern {spec['pattern']}"
    return None


def validate(db, constraints=None):
    c = constraints or CONSTRAINTS
    types = c["types"]
    problems = []
    for table in sorted(db):
        model = c["tables"].get(table)
        if model is None or not isinstance(db[table], dict):
            continue
        for key in sorted(db[table]):
            fields = db[table][key] or {}
            parts = key.split("|")
            kspecs = model["keys"]
            if len(parts) != len(kspecs):
                problems.append(
                    f"{table}|{key}: key has {len(parts)} part(s), the model {len(kspecs)} "
                    f"({'|'.join(k['name'] for k in kspecs)}) ({model['file']}:{kspecs[0]['line']})"
                )
                continue
            for part, kspec in zip(parts, kspecs):
                why = check_value(db, part, kspec, types)
                if why:
                    problems.append(f"{table}|{key}: key {kspec['name']} {part!r}: {why} ({model['file']}:{kspec['line']})")
            if "map" in model:
                fspec, vspec = model["map"]["field"], model["map"]["value"]
                for field in sorted(fields):
                    why = check_value(db, field, fspec, types)
                    if why:
                        problems.append(f"{table}|{key}: {fspec['name']} {field!r}: {why} ({model['file']}:{fspec['line']})")
                    why = check_value(db, str(fields[field]), vspec, types)
                    if why:
                        problems.append(f"{table}|{key}: {vspec['name']} of {field}: {str(fields[field])!r}: {why} ({model['file']}:{vspec['line']})")
                continue
            specs = model["fields"]
            for field, line in sorted(model.get("mandatory", {}).items()):
                if field not in fields:
                    problems.append(f"{table}|{key}: {field}: missing; the model makes it mandatory ({model['file']}:{line})")
            is_global = parts[0] == "GLOBAL"
            for field in sorted(fields):
                value = str(fields[field])
                spec = specs.get(field)
                if spec is None:
                    problems.append(f"{table}|{key}: {field}: not a leaf of the model ({model['file']})")
                    continue
                if spec.get("not_global") and is_global or spec.get("global_only") and not is_global:
                    problems.append(f"{table}|{key}: {field}: not allowed on this key (must) ({model['file']}:{spec['line']})")
                    continue
                why = check_value(db, value, spec, types)
                if why is None and "at_least" in spec and spec["at_least"] in fields:
                    low = str(fields[spec["at_least"]])
                    if low.isdigit() and value.isdigit() and int(value) < int(low):
                        why = f"below {spec['at_least']} {low} (must)"
                if why:
                    problems.append(f"{table}|{key}: {field}: {value!r}: {why} ({model['file']}:{spec['line']})")
    return problems


def object_name_ok(name):
    """True when ``name`` is a valid SONiC QoS object name (map, WRED profile, cable-length list)."""
    spec = CONSTRAINTS["types"]["object_name"]
    return check_value({}, name, spec) is None
