"""The role variables' rules of form and of agreement (issue 36, "validation of the knobs"): checks
that a value's own rule cannot make, because the mistake is in how YAML or Slurm reads it or in
the values it must agree with.

Of form, wrapped around a variable's own rule in the tables (intent/rules_hosts.py,
intent/rules_fabric.py):

- ``release(rule, example)``: a release or version written without quotes is a YAML number
  (``5.10`` is read as the float 5.1, ``24`` as an int): refused, telling to quote it.
- ``one_node(rule, where)``: one node or host name, never a Slurm hostlist (``node[1-4]``,
  ``a,b``) or two names with a space.
- ``split_into(what, *names)``: a variable that was split in two (switch_fabric_restore_force):
  any value refused, naming the variables that replace it.
- ``share``: a share strictly between 0 and 1 (linerate_trend_bandwidth_drop), never nan or inf.
- ``batch``: a play's ``serial`` (switch_fabric_serial): Ansible runs every host at once for
  ``serial: 0`` (or any count <= 0), so 0 is refused, as is a percentage outside 1%..100%.

Of agreement, ``together(c, values, inventory)`` (intent/variables.validate_host runs it after
every value passed its own rule, so a value its rule refused is not reported twice):

- a minimum above its maximum (PAIRS: the operator's values over the roles' literal defaults);
- TCP port ranges that leave 1..65535 once the rails, rounds and senders are added
  (the RDMA schedule: module_utils/probes/schedule.py; incast: plugins/filter/verify.py);
- host lists: a host twice, the incast receiver among its senders, senders without a receiver,
  and, with ``inventory``, a host the inventory (or the play's host group) does not have.

``inventory``: {"hosts": every inventory host, "group": the host group's name, "group_hosts":
its hosts, "rails": the number of this host's rdma_ports}; any of them absent (None) skips the
checks that need it. Stdlib only (plus the sibling intent modules).
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import is_num
from ansible_collections.linerate.fabric.plugins.module_utils.intent.varcheck import as_int

# Slurm hostlist expressions (node[1-4], node[1,3], a,b) and two names with a space: never one name.
_HOSTLIST = re.compile(r"[\[\], ]")
# A play's serial as a percentage of its hosts.
_PERCENT = re.compile(r"([1-9][0-9]?|100)%", re.ASCII)
# The RDMA schedule's TCP ports: round r's rail i listens on base + (r mod ROUNDS) x STRIDE + i
# (module_utils/probes/schedule.py PORT_ROUNDS, PORT_STRIDE; tests/unit/intent/test_knobs.py keeps them equal).
RDMA_PORT_STRIDE = 16
RDMA_PORT_ROUNDS = 64
# Incast: sender i writes rail r on base + INCAST_SENDER_STRIDE x i + r (plugins/filter/verify.py).
INCAST_SENDER_STRIDE = 16
TCP_PORT_MAX = 65535
# The roles' literal defaults the agreement rules read where the operator set nothing
# (roles/*/defaults/main.yml; tests/unit/intent/test_knobs.py keeps them equal).
DEFAULTS = {
    "verify_fabric_ib_write_bw_base_port": 18515,
    "verify_fabric_incast_base_port": 18615,
    "verify_fabric_incast_max_senders": 7,
    "verify_fabric_nccl_tune_min_bytes": "1M",
    "verify_fabric_nccl_tune_max_bytes": "1G",
    "k8s_render_nccl_min_bytes": "8",
    "k8s_render_nccl_max_bytes": "8G",
}
_SIZE_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}


def _bytes(value):
    """A size as nccl-tests -b/-e read it (digits, optional K, M or G) in bytes; else None."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,12}[KMG]?", value, re.ASCII):
        return int(value.rstrip("KMG")) * _SIZE_UNITS.get(value[-1], 1)
    return None


def _kb(value):
    n = as_int(value)
    return n if n is not None and n >= 1 else None


# (minimum, maximum, how a value is read, why the minimum may not exceed the maximum)
PAIRS = (
    (
        "verify_fabric_nccl_tune_min_bytes",
        "verify_fabric_nccl_tune_max_bytes",
        _bytes,
        "the sweep's sizes run from the minimum up to the maximum (nccl-tests -b .. -e)",
    ),
    ("k8s_render_nccl_min_bytes", "k8s_render_nccl_max_bytes", _bytes, "the rendered job runs nccl-tests -b minimum -e maximum"),
    (
        "switch_fabric_ecn_min_threshold_kb",
        "switch_fabric_ecn_max_threshold_kb",
        _kb,
        "ECN marks from the minimum queue depth up to the maximum (WRED min-threshold <= max-threshold)",
    ),
)


# --- of form: wrapped around a variable's own rule ----------------------------------------------


def release(rule, example):
    """``rule`` for a release or version string; a YAML number (an unquoted 5.10 is 5.1) refused first."""

    def check(c, key, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return c.bad(
                key,
                value,
                f'a string: write the release in quotes, such as {key}: "{example}"; '
                "YAML reads it unquoted as a number and a number loses its trailing zeros "
                "(5.10 is read as 5.1)",
            )
        return rule(c, key, value)

    return check


def one_node(rule, where):
    """``rule`` for one node or host name; a Slurm hostlist (node[1-4], a,b) or a space refused first."""

    def check(c, key, value):
        if isinstance(value, str) and _HOSTLIST.search(value):
            return c.bad(key, value, f"one name, not a Slurm hostlist: node[1-4], node[1,3] or a,b (or names separated by a space) name several nodes; {where}")
        return rule(c, key, value)

    return check


def split_into(what: str, *names: str):
    """A variable that is no more: one name did what ``names`` now say each on its own; any value refused."""

    def check(c, key, value):
        return c.bad(key, value, f"unset: {key} was split in two ({what}); set instead " + " and/or ".join(f"{n}: true" for n in names))

    return check


def share(c, key: str, value) -> bool:
    """A share strictly between 0 and 1 (a finite number, or its decimal text from -e): 0.05 is 5 %."""
    n = float(value) if isinstance(value, str) and re.fullmatch(r"0?\.[0-9]{1,9}", value, re.ASCII) else value
    if is_num(n) and 0 < n < 1:
        return True
    return c.bad(key, value, "a share 0 < x < 1, such as 0.05 for 5 % (a finite number: not nan or inf)")


def batch(c, key, value):
    """A play's serial: a count >= 1 or a percentage 1%..100% of its hosts."""
    n = as_int(value)
    if (n is not None and 1 <= n <= 100000) or (isinstance(value, str) and _PERCENT.fullmatch(value)):
        return True
    return c.bad(
        key,
        value,
        "a number of switches 1..100000 or a percentage '1%'..'100%' of the play's switches "
        "(the batch changed at a time; Ansible runs every switch at once for serial 0)",
    )


# --- of agreement: a host's values together -----------------------------------------------------


def _set(values, key):
    """The operator's value of ``key``, else the role's literal default, else None."""
    return values.get(key, DEFAULTS.get(key))


def _min_max(c, values):
    for lo_key, hi_key, read, why in PAIRS:
        if lo_key not in values and hi_key not in values:
            continue
        lo_value, hi_value = _set(values, lo_key), _set(values, hi_key)
        lo, hi = read(lo_value), read(hi_value)
        if lo is not None and hi is not None and lo > hi:
            c.bad(lo_key, lo_value, f"at most {hi_key} ({hi_value!r}): {why}")


def _port(values, key, lo=1, hi=TCP_PORT_MAX):
    n = as_int(_set(values, key))
    return n if n is not None and lo <= n <= hi else None


def _ports(c, values, rails):
    key = "verify_fabric_ib_write_bw_base_port"
    base = _port(values, key)
    span = RDMA_PORT_ROUNDS * RDMA_PORT_STRIDE
    if key in values and base is not None and base + span - 1 > TCP_PORT_MAX:
        c.bad(
            key,
            values[key],
            f"at most {TCP_PORT_MAX + 1 - span}: round r's rail i listens on TCP port "
            f"base_port + (r mod {RDMA_PORT_ROUNDS}) x {RDMA_PORT_STRIDE} + i, "
            f"{base}..{base + span - 1} here, past {TCP_PORT_MAX}",
        )
    keys = ("verify_fabric_incast_base_port", "verify_fabric_incast_max_senders", "verify_fabric_incast_senders")
    if not any(k in values for k in keys):
        return
    base = _port(values, keys[0])
    senders = values.get(keys[2])
    if isinstance(senders, list) and "verify_fabric_incast_receiver" in values:
        count, by = len(senders), f"{len(senders)} sender(s) (verify_fabric_incast_senders)"
    else:
        count = _port(values, keys[1], 2, 1023)
        by = f"{count} sender(s) (verify_fabric_incast_max_senders)"
    lanes = rails if isinstance(rails, int) and rails >= 1 else 1
    if base is None or not count:
        return
    top = base + INCAST_SENDER_STRIDE * (count - 1) + lanes - 1
    if top > TCP_PORT_MAX:
        c.bad(
            keys[0],
            _set(values, keys[0]),
            f"at most {base - (top - TCP_PORT_MAX)} with {by} and {lanes} rail(s) (rdma_ports): sender i writes "
            f"rail r on TCP port base_port + {INCAST_SENDER_STRIDE} x i + r, up to {top} here, past {TCP_PORT_MAX}",
        )


def _names(hosts, most=5):
    shown = ", ".join(hosts[:most])
    return shown + (f" and {len(hosts) - most} more" if len(hosts) > most else "") if hosts else "none"


def _hosts(c, values, inventory):
    receiver = values.get("verify_fabric_incast_receiver")
    senders = values.get("verify_fabric_incast_senders")
    senders = senders if isinstance(senders, list) else None
    if senders is not None and receiver is None:
        c.bad(
            "verify_fabric_incast_senders",
            senders,
            "only with verify_fabric_incast_receiver: the senders of that one group; without a receiver the "
            "rotation picks every group's senders and these are not used",
        )
    first = {}
    for i, s in enumerate(senders or []):
        if not isinstance(s, str):
            continue
        if s == receiver:
            c.bad(
                f"verify_fabric_incast_senders[{i}]",
                s,
                f"a host other than verify_fabric_incast_receiver ({receiver!r}): the receiver does not write into itself",
            )
        elif s in first:
            c.bad(f"verify_fabric_incast_senders[{i}]", s, f"each host once: it is verify_fabric_incast_senders[{first[s]}] already")
        first.setdefault(s, i)
    group, members = inventory.get("group") or "gpu_nodes", inventory.get("group_hosts")
    if members is not None:
        named = ([("verify_fabric_incast_receiver", receiver)] if receiver is not None else []) + [
            (f"verify_fabric_incast_senders[{i}]", s) for i, s in enumerate(senders or [])
        ]
        for key, name in named:
            if isinstance(name, str) and name not in members:
                c.bad(key, name, f"a host of {group}, the hosts incast runs on: {_names(list(members))}")
    known = inventory.get("hosts")
    if known is not None:
        for key, also in (("verify_fabric_ib_sm_host", ("",)), ("remediate_control_host", ("localhost",)), ("ib_subnet_manager_master", ())):
            name = values.get(key)
            if isinstance(name, str) and name not in known and name not in also:
                c.bad(
                    key, name, f"a host of the inventory ({_names(list(known))})" + (" or localhost" if "localhost" in also else ", or empty" if also else "")
                )


def together(c, values, inventory=None):
    """The problems of one host's values together (each value already passed its own rule)."""
    inventory = inventory or {}
    _min_max(c, values)
    _ports(c, values, inventory.get("rails"))
    _hosts(c, values, inventory)
