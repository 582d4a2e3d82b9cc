"""Role and connection variables: a rule for every variable that reaches a
file, a command or a connection, checked with the intent before any contact.

``RULES`` maps each variable name (every option of every role's
``meta/argument_specs.yml``, Ansible's connection variables the switch role
reads, and the playbook switch ``audit_benchmarks``) to a check.
``validate_host(name, values)`` returns the problems of one host's variables
as ``<host>: <key>: <value> is not allowed (allowed: ...)``; secrets are
never shown. Only values the operator wrote are checked (inventory, -e):
a role's own defaults are known good.

The checks are in intent/varcheck.py (re-exported here: callers import them from this module),
the tables in intent/rules_hosts.py (host roles) and intent/rules_fabric.py (switch, verification,
connection and playbook variables). Stdlib only (plus the sibling intent modules).
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.intent import knobs, rules_fabric, rules_hosts

# Re-exported: callers import the checks and formats from this module.
from ansible_collections.linerate.fabric.plugins.module_utils.intent.varcheck import (  # noqa: F401  # pylint: disable=unused-import
    _CONTROL,
    _ENV_NAME,
    _HOSTNAME,
    _KMOD,
    _MLX_NAME,
    _MLX_VALUE,
    _NCCL_NAME,
    _NCCL_SIZE,
    _PACKAGE,
    _PROFILE,
    _PSID,
    _SUITE,
    _UNIT,
    _URL_CHARS,
    _USER,
    _VERSION,
    ANY_DICT,
    ANY_LIST,
    APT_SCHEMES,
    ARGV,
    BOOL_ALLOWED,
    BOOL_FALSE,
    BOOL_TRUE,
    BY_INTENT,
    CONFIRM_RANGE,
    ENV_MAP,
    GID_INDEX,
    KEY_SCHEMES,
    MAX_READ_REQ,
    MLX_PARAMS,
    NCCL_OVERRIDES,
    NCCL_TESTS,
    PACKAGES,
    PLAY_VARS,
    RESET_LEVELS,
    SECRET,
    SECRETS,
    VERIFY_CHECKS,
    WINDOW_COMMANDS_AFTER_COMMIT,
    Checker,
    _redacted,
    _shown,
    as_bool,
    as_int,
    boolean,
    choice,
    devices,
    either,
    extra_ports,
    fmt,
    host_address,
    integer,
    intent_format,
    key_is,
    listing,
    local_path,
    mapping,
    meta_packages,
    mpi_from,
    nccl_tune_candidate,
    nccl_tune_scales,
    nccl_value,
    number,
    path,
    restart_command,
    shape,
    text,
    url,
)

# Every variable with its rule. Derived values (set from others by the
# roles' defaults) keep a shape rule: overriding them is allowed but unusual.
RULES = {**rules_hosts.HOST_RULES, **rules_fabric.FABRIC_RULES}
# validate_host reads the two tables through their modules (the same rules: no variable is in
# both), so that a mutant of a table (tests/mutation.py) is the one that runs.

_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def _nccl_bytes(value):
    m = re.fullmatch(_NCCL_SIZE[0], value, re.ASCII) if isinstance(value, str) else None
    return int(value[:-1] if value[-1:] in "KMG" else value) * _SIZE_UNITS[value[-1] if value[-1:] in "KMG" else ""] if m else None


def cross_checks(c, values):
    """Rules between variables of one host (each value already passed its own rule)."""
    confirm = as_int(values.get("switch_fabric_confirm_timeout", 300))
    command = as_int(values.get("switch_fabric_command_timeout", 60))
    post = as_bool(values.get("switch_fabric_post_checks", True))
    if confirm is not None and command is not None and post is not None and CONFIRM_RANGE[0] <= confirm <= CONFIRM_RANGE[1]:
        steps = WINDOW_COMMANDS_AFTER_COMMIT if post else WINDOW_COMMANDS_AFTER_COMMIT - 1
        if confirm < steps * command:
            c.bad(
                "switch_fabric_confirm_timeout",
                confirm,
                f"at least {steps} x switch_fabric_command_timeout ({command}) = {steps * command} seconds: "
                "after the commit the window reads the config back" + (", runs the post-checks" if post else "") + " and confirms, each allowed "
                "switch_fabric_command_timeout, before the switch's timer reverts the change",
            )
    lo, hi = (_nccl_bytes(values.get(k)) for k in ("verify_fabric_nccl_min_bytes", "verify_fabric_nccl_max_bytes"))
    if "verify_fabric_nccl_min_bytes" in values or "verify_fabric_nccl_max_bytes" in values:
        lo = lo if "verify_fabric_nccl_min_bytes" in values else _nccl_bytes("1G")
        hi = hi if "verify_fabric_nccl_max_bytes" in values else _nccl_bytes("4G")
        if lo is not None and hi is not None and lo > hi:
            c.bad(
                "verify_fabric_nccl_min_bytes",
                values.get("verify_fabric_nccl_min_bytes", "1G"),
                f"at most verify_fabric_nccl_max_bytes ({values.get('verify_fabric_nccl_max_bytes', '4G')})",
            )


# Role verify_fabric's defaults that the nccl-tests checks read where the operator set nothing
# (roles/verify_fabric/defaults/main.yml; tests/unit/intent/test_variables.py keeps them equal).
VERIFY_DEFAULTS = {
    "verify_fabric_nccl_tests_method": "source",
    "verify_fabric_nccl_tests_version": "2.19.6",
    "verify_fabric_checks": ["ports", "link_health", "readiness", "cabling", "ib_write_bw", "ib_send_bw", "ib_write_lat", "incast", "nccl"],
}
# A release of NVIDIA/nccl-tests as its tag names it (vX.Y.Z): what method source builds.
NCCL_TESTS_RELEASE = r"[0-9]+\.[0-9]+\.[0-9]+"


def nccl_tests_problems(values):
    """Problems of a node's nccl-tests install for a run that installs it (verify.yml, site.yml,
    nccl_tune.yml), from the operator's values over the role's defaults: with method source (the
    default) and nccl-tests run (``nccl`` among verify_fabric_checks, or the tuning sweep), the
    release tarball's URL on the site's mirror and its sha256 are required and the version is a
    release. Each value's own form is its rule's (validate_host); this checks what is missing."""
    c = Checker("")
    v = {**VERIFY_DEFAULTS, **values}
    method, checks = v["verify_fabric_nccl_tests_method"], v["verify_fabric_checks"]
    runs = (isinstance(checks, list) and "nccl" in checks) or as_bool(values.get("verify_fabric_nccl_tune")) is True
    if method != "source" or not runs:
        return []
    alternatives = (
        "; or verify_fabric_nccl_tests_method: package (the site's own nccl-tests package at "
        "verify_fabric_nccl_tests_version) | none (all_reduce_perf on PATH already)"
    )
    version = v["verify_fabric_nccl_tests_version"]
    if not isinstance(version, str) or not re.fullmatch(NCCL_TESTS_RELEASE, version, re.ASCII):
        c.bad(
            "verify_fabric_nccl_tests_version",
            version,
            "a release of NVIDIA/nccl-tests as X.Y.Z (the tag vX.Y.Z) with verify_fabric_nccl_tests_method: source, the role's default" + alternatives,
        )
    if values.get("verify_fabric_nccl_tests_source_url", "") == "":
        c.bad(
            "verify_fabric_nccl_tests_source_url",
            values.get("verify_fabric_nccl_tests_source_url", ""),
            f"the URL of the nccl-tests v{version} release tarball on the site's mirror (https://, http:// or "
            "file://) with verify_fabric_nccl_tests_method: source, the role's default; nothing is fetched "
            "from the internet unless it is set" + alternatives,
        )
    if values.get("verify_fabric_nccl_tests_source_checksum", "") == "":
        c.bad(
            "verify_fabric_nccl_tests_source_checksum",
            values.get("verify_fabric_nccl_tests_source_checksum", ""),
            "sha256:<64 hex digits> of that tarball (sha256sum <file>), required with method source: get_url "
            "checks it before the tarball is built and its programs run on the node" + alternatives,
        )
    return c.items


def validate_host(values, inventory=None):
    """Problems of one host's variables ({name: value}, the ones the operator
    set), each ``<key>: <value> is not allowed (allowed: ...)``; then the values
    that passed their own rule together (intent/knobs.py: a minimum above its
    maximum, TCP ports past 65535, host lists), with ``inventory`` ({"hosts",
    "group", "group_hosts", "rails"}) the hosts they name."""
    c = Checker("")
    passed = {}
    for name in sorted(values):
        rule = rules_hosts.HOST_RULES.get(name)
        if rule is None:
            rule = rules_fabric.FABRIC_RULES.get(name)
        if rule is not None and rule(c, name, values[name]):
            passed[name] = values[name]
    cross_checks(c, values)
    knobs.together(c, passed, inventory)
    return c.items


def merge_hosts(per_host):
    """[(host, message-without-host)] -> messages, one per distinct message,
    naming every host it applies to (a group_vars mistake is one line)."""
    hosts_of = {}
    for host, msg in per_host:
        hosts_of.setdefault(msg, []).append(host)
    out = []
    for msg, hosts in hosts_of.items():
        names = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more host(s)" if len(hosts) > 3 else "")
        out.append(f"{names}: {msg}")
    return out
