"""Validation of the InfiniBand part of the fabric intent (stdlib only).

``fabric.infiniband.subnet_manager``::

    priority: 15              # master SM priority, 0..15
    standby_priority: 14      # every other host in subnet_managers, < priority
    master: node1             # inventory host of the master SM (default: first of the group)
    routing_engine: ftree     # one of ROUTING_ENGINES
    root_guids: []            # switch GUIDs (or inventory switch names); required by ftree
    lmc: 0                    # 0..7
    sweep_interval: 10        # seconds, 0 = no periodic sweep
    log: {file: /var/log/opensm.log, max_size_mb: 100, flags: 0x03, verbose: false}
    partitions:
      - name: storage         # [A-Za-z0-9_.-], not "Default"
        pkey: 0x0010          # 0x0001..0x7ffe (0x7fff is the default partition)
        members: [node1, 0xa088c20300000101]   # inventory hosts or port GUIDs
        membership: full      # full | limited
        ipoib: true

``validate_subnet_manager(sm, known)`` returns a list of error strings,
``"key: value is not allowed (allowed: ...)"``; empty means valid.
``known`` maps inventory host name -> list of its port GUIDs (hosts) and
switch name -> [its GUID] (switches); it is what "in the fabric" means.
"""

import re

ROUTING_ENGINES = ("minhop", "updn", "dnup", "ftree", "dor", "lash", "torus-2QoS", "nue", "dfsssp", "sssp", "file")
NEEDS_ROOTS = ("ftree",)  # OpenSM's ftree needs the spine GUIDs to be robust
MEMBERSHIPS = ("full", "limited")
LOG_KEYS = ("file", "max_size_mb", "flags", "verbose")
SM_KEYS = ("priority", "standby_priority", "master", "routing_engine", "root_guids", "lmc", "sweep_interval", "log", "partitions", "default_partition")
PARTITION_KEYS = ("name", "pkey", "members", "membership", "ipoib")

DEFAULTS = {
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

_GUID_RE = re.compile(r"0x[0-9a-fA-F]{1,16}", re.ASCII)
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}", re.ASCII)
# An integer written as a string: decimal or 0x hex, nothing around it.
_INT_RE = re.compile(r"0x[0-9a-fA-F]{1,8}|[0-9]{1,10}", re.ASCII)
# OpenSM paths (log file): an absolute path from a safe character set, no "..".
PATH_RE = r"(?!.*(?:^|/)\.\.(?:/|$))/[A-Za-z0-9_.+/-]{0,254}"


def norm_guid(value):
    return "0x" + str(value)[2:].lower().rjust(16, "0")


def is_guid(value):
    return isinstance(value, str) and bool(_GUID_RE.fullmatch(value))


def to_int(value):
    """An int, or a '0x..'/decimal string; bool and others -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INT_RE.fullmatch(value):
        return int(value, 16) if value.startswith("0x") else int(value, 10)
    return None


def _err(key, value, allowed):
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..." + f" ({len(str(value))} characters)"
    return f"{key}: {text} is not allowed (allowed: {allowed})"


def merged(sm):
    out = dict(DEFAULTS)
    out["log"] = dict(DEFAULTS["log"])
    out["default_partition"] = dict(DEFAULTS["default_partition"])
    for k, v in (sm or {}).items():
        if k in ("log", "default_partition") and isinstance(v, dict):
            out[k].update(v)
        else:
            out[k] = v
    return out


def _int_range(errors, key, value, lo, hi):
    i = to_int(value)
    if i is None or not lo <= i <= hi:
        errors.append(_err(key, value, f"integer {lo}..{hi}"))
        return None
    return i


def resolve_member(member, known):
    """A member (host name or GUID) -> list of port GUIDs, or None if unknown."""
    if is_guid(member):
        g = norm_guid(member)
        for guids in known.values():
            if g in {norm_guid(x) for x in guids}:
                return [g]
        return None
    if isinstance(member, str) and member in known and known[member]:
        return [norm_guid(x) for x in known[member]]
    return None


def validate_subnet_manager(sm, known, sm_hosts=()):
    """Errors of the subnet_manager intent (merged with DEFAULTS)."""
    errors = []
    if sm is not None and not isinstance(sm, dict):
        return [_err("fabric.infiniband.subnet_manager", sm, "a mapping")]
    sm = merged(sm)
    base = "fabric.infiniband.subnet_manager"
    for k in sm:
        if k not in SM_KEYS:
            errors.append(_err(f"{base}.{k}", "(key)", "known keys: " + ", ".join(SM_KEYS)))
    prio = _int_range(errors, f"{base}.priority", sm["priority"], 0, 15)
    sprio = _int_range(errors, f"{base}.standby_priority", sm["standby_priority"], 0, 15)
    if prio is not None and sprio is not None and sprio >= prio:
        errors.append(_err(f"{base}.standby_priority", sm["standby_priority"], f"0..{prio - 1}, below priority {prio}"))
    if sm["master"] is not None and (not isinstance(sm["master"], str) or (sm_hosts and sm["master"] not in sm_hosts)):
        errors.append(_err(f"{base}.master", sm["master"], "a host of group subnet_managers: " + ", ".join(sm_hosts)))
    _routing_errors(errors, base, sm, known)
    _int_range(errors, f"{base}.lmc", sm["lmc"], 0, 7)
    _int_range(errors, f"{base}.sweep_interval", sm["sweep_interval"], 0, 86400)
    _log_errors(errors, f"{base}.log", sm["log"])
    dp = sm["default_partition"]
    if not isinstance(dp, dict) or dp.get("membership") not in MEMBERSHIPS or not isinstance(dp.get("ipoib"), bool) or set(dp) - {"ipoib", "membership"}:
        errors.append(_err(f"{base}.default_partition", dp, "{ipoib: true|false, membership: full|limited}"))
    parts = sm["partitions"]
    if not isinstance(parts, list):
        return errors + [_err(f"{base}.partitions", parts, "a list of partitions")]
    names, pkeys = set(), set()
    for i, p in enumerate(parts):
        _partition_errors(errors, f"{base}.partitions[{i}]", p, names, pkeys, known)
    return errors


def _routing_errors(errors, base, sm, known):
    """The routing engine(s) and the root switches the engine needs."""
    eng = sm["routing_engine"]
    engines = [e.strip() for e in eng.split(",")] if isinstance(eng, str) else [eng]
    for e in engines:
        if e not in ROUTING_ENGINES:
            errors.append(_err(f"{base}.routing_engine", e, ", ".join(ROUTING_ENGINES)))
    roots = sm["root_guids"]
    if not isinstance(roots, list):
        errors.append(_err(f"{base}.root_guids", roots, "a list of switch GUIDs or names"))
        roots = []
    for r in roots:
        if resolve_member(r, known) is None:
            errors.append(_err(f"{base}.root_guids", r, "GUIDs or names of switches in the fabric"))
    if engines and engines[0] in NEEDS_ROOTS and not roots:
        errors.append(_err(f"{base}.root_guids", roots, f"at least one root switch with routing_engine {engines[0]}"))


def _mapping_of(errors, key, value, known):
    """Whether ``value`` is a mapping (else its error); a key of it not ``known`` is named."""
    if not isinstance(value, dict):
        errors.append(_err(key, value, "a mapping with " + ", ".join(known)))
        return False
    for k in value:
        if k not in known:
            errors.append(_err(f"{key}.{k}", "(key)", "known keys: " + ", ".join(known)))
    return True


def _log_errors(errors, key, log):
    """OpenSM's log settings: the file, its size, the flags, verbose."""
    if not _mapping_of(errors, key, log, LOG_KEYS):
        return
    f = log.get("file")
    if not (isinstance(f, str) and re.fullmatch(PATH_RE, f, re.ASCII)):
        errors.append(_err(f"{key}.file", f, "an absolute path of at most 255 letters, digits and _ . + / - (no ..)"))
    _int_range(errors, f"{key}.max_size_mb", log.get("max_size_mb"), 0, 4096)
    _int_range(errors, f"{key}.flags", log.get("flags"), 0, 255)
    if not isinstance(log.get("verbose"), bool):
        errors.append(_err(f"{key}.verbose", log.get("verbose"), "true, false"))


def _partition_errors(errors, key, p, names, pkeys, known):
    """One partition: its keys, a name and a pkey used once (``names``, ``pkeys``: the ones seen), its
    membership, IPoIB flag and members (inventory hosts or port GUIDs of the fabric)."""
    if not _mapping_of(errors, key, p, PARTITION_KEYS):
        return
    name = p.get("name")
    if not (isinstance(name, str) and _NAME_RE.fullmatch(name)) or name == "Default":
        errors.append(_err(f"{key}.name", name, "letters, digits, _ . -; not Default"))
    elif name in names:
        errors.append(_err(f"{key}.name", name, "a name not used by another partition"))
    else:
        names.add(name)
    pk = to_int(p.get("pkey"))
    if pk is None or not 0x0001 <= pk <= 0x7FFE:
        errors.append(_err(f"{key}.pkey", p.get("pkey"), "0x0001..0x7ffe (0x7fff is the default partition)"))
    elif pk in pkeys:
        errors.append(_err(f"{key}.pkey", p.get("pkey"), "a pkey not used by another partition"))
    else:
        pkeys.add(pk)
    if p.get("membership", "full") not in MEMBERSHIPS:
        errors.append(_err(f"{key}.membership", p.get("membership"), ", ".join(MEMBERSHIPS)))
    if not isinstance(p.get("ipoib", False), bool):
        errors.append(_err(f"{key}.ipoib", p.get("ipoib"), "true, false"))
    members = p.get("members")
    if not isinstance(members, list) or not members:
        errors.append(_err(f"{key}.members", members, "a non-empty list of inventory hosts or port GUIDs"))
        return
    for m in members:
        if resolve_member(m, known) is None:
            what = "port GUIDs in the fabric" if is_guid(m) else "inventory hosts with rdma_ports"
            errors.append(_err(f"{key}.members", m, what))


def resolve_partitions(sm, known):
    """The partitions with members expanded to port GUIDs, pkey as '0x%04x'
    (call only on a valid intent)."""
    sm = merged(sm)
    out = []
    for p in sm["partitions"]:
        guids = []
        for m in p["members"]:
            for g in resolve_member(m, known):
                if g not in guids:
                    guids.append(g)
        out.append(
            {
                "name": p["name"],
                "pkey": "0x%04x" % to_int(p["pkey"]),
                "membership": p.get("membership", "full"),
                "ipoib": bool(p.get("ipoib", False)),
                "guids": guids,
            }
        )
    return out


def resolve_roots(sm, known):
    return [resolve_member(r, known)[0] for r in merged(sm)["root_guids"]]
