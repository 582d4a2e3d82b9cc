"""Action plugin: validate the fabric intent on the controller.

Runs before any host or switch is touched: it reads the inventory (the
``fabric`` tree, every RDMA host's ``rdma_ports`` and every switch's
variables), reports every problem at once and fails if there is one. It
never opens a connection.

It also checks every role and connection variable the operator set on any
host (module_utils/intent/variables.py: a rule per variable that reaches a file, a
command or a connection) and the play's switches (-e audit_benchmarks=...).
The intent is read as written (the task gets no templated ``fabric``
argument) and templated value by value, so a template or YAML alias that
refers to itself is reported under its own key instead of failing the task.

``digest`` is a SHA-256 of everything it read; given back as
``validated_digest`` (playbooks/validate.yml keeps it on localhost), the
same inputs are not validated again in the same run: site.yml imports
validate.yml through every playbook it imports.
"""

import hashlib
import json
import re

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema, variables
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published

# A value that names one of these is complete only at run time (the validated
# intent, facts, a role's own defaults): it is checked by the role then.
_RUNTIME = re.compile(
    r"'(fabric_effective|ansible_\w+|groups|hostvars|inventory_dir|role_path|rdma_ports"
    r"|(?:mofed|nccl_env|ib_subnet_manager|connectx_firmware|nvidia_peermem|rdma_netdev|roce_qos"
    r"|switch_fabric|verify_fabric)_\w+)' is undefined"
)


# A switch's settings the cabling checks read with its platform (module_utils/intent/cabling.py):
# the inventory's own names, and the role variables that override them (the fabric ports' speeds).
SWITCH_SETTINGS = ("switch_eos_family", "switch_cable_length", "switch_sonic_pg_lookup", "switch_sonic_hwsku")
SWITCH_ROLE_SETTINGS = (
    "switch_fabric_cable_length",
    "switch_fabric_sonic_pg_lookup",
    "switch_fabric_sonic_hwsku",
    "switch_fabric_extra_ports",
    "switch_fabric_link_speed_gbps",
    "switch_fabric_set_speed",
    "switch_fabric_profile",
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("fabric", "host_group", "check_cabling", "switch_group", "ib_switch_group", "sm_group", "validated_digest", "nccl_tests"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        options, refused = _options(args)
        if refused:
            result.update(failed=True, msg=refused)
            return result
        inventory = _Inventory(self._templar, task_vars, options)
        try:
            seen = inventory.collect(args.get("fabric", task_vars.get("fabric")))
        except AnsibleError as e:
            result.update(failed=True, msg=f"the inventory could not be read: {e}")
            return result

        # Everything the validation reads, as read: a different intent, cabling, switch or SM group
        # (an -e override, an import's vars) is a different digest and is validated in full.
        sm_hosts = list(inventory.groups.get(options["sm_group"], []))
        digest = hashlib.sha256(
            json.dumps(
                [seen["fabric"], seen["hosts"], seen["switches"], sm_hosts, inventory.unreadable, seen["variables"], seen["play"], options["nccl_tests"]],
                sort_keys=True,
                default=str,
            ).encode()
        ).hexdigest()
        result["digest"] = digest
        result["reused"] = bool(args.get("validated_digest")) and args.get("validated_digest") == digest
        if result["reused"]:
            result.update(changed=False, problems=[], msg="the same intent and cabling were validated earlier in this run: not checked again")
            return result
        return _judge(result, inventory, seen, options["sm_group"])


def _options(args):
    """(the task's options with their defaults, None) or (None, the message refusing one)."""
    check_cabling = args.get("check_cabling", True)
    if not isinstance(check_cabling, bool):
        return None, f"check_cabling: {check_cabling!r} is not allowed (allowed: true, false)"
    # The run installs nccl-tests on the host group (verify.yml, site.yml, nccl_tune.yml say so):
    # its source is checked here, before any node is touched.
    nccl_tests = variables.as_bool(args.get("nccl_tests", False))
    if nccl_tests is None:
        return None, f"nccl_tests: {args.get('nccl_tests')!r} is not allowed (allowed: true, false)"
    return {
        "host_group": args.get("host_group", "gpu_nodes"),
        "switch_group": args.get("switch_group", "switches"),
        "ib_switch_group": args.get("ib_switch_group", "ib_switches"),
        "sm_group": args.get("sm_group", "subnet_managers"),
        "check_cabling": check_cabling,
        "nccl_tests": nccl_tests,
    }, None


def _judge(result, inventory, seen, sm_group):
    """The problems of what was read (a fabric not read in full is not checked half-read), or the
    effective intent as ``fabric_effective``."""
    fabric, hosts, switches = seen["fabric"], seen["hosts"], seen["switches"]
    sm_hosts = inventory.groups.get(sm_group, [])
    checked = [] if seen["fabric_unreadable"] else schema.validate(fabric, hosts, switches, sm_hosts)
    problems = inventory.unreadable + checked + seen["per_host_problems"]
    result["problems"] = problems
    result["changed"] = False
    if problems:
        result["failed"] = True
        result["msg"] = f"the fabric intent has {len(problems)} problem(s); nothing was changed:\n- " + "\n- ".join(problems)
        return result
    eff = published(fabric, sm_hosts)
    result["ansible_facts"] = {"fabric_effective": eff}
    result["msg"] = (
        f"fabric {eff['name']!r} ({eff['transport']}, {eff['link_speed_gbps']} Gb/s): {len(hosts)} RDMA host(s), {len(switches)} switch(es), intent valid"
    )
    return result


class _Inventory:
    """The inventory as the validation reads it, templated value by value: what could not be read is
    one problem of its host and key in ``unreadable``, the rest is still checked."""

    def __init__(self, templar, task_vars, options):
        self.templar = templar
        self.task_vars = task_vars
        self.options = options
        self.groups = task_vars.get("groups", {})
        self.hostvars = task_vars.get("hostvars", {})
        self.unreadable = []

    def collect(self, fabric):
        """{fabric, fabric_unreadable, hosts, switches, variables, play, per_host_problems}."""
        groups, hostvars, o = self.groups, self.hostvars, self.options
        # Every RDMA host, and every other host that feeds a switch port
        # (rdma_ports set outside the host group) is validated too.
        feeding = [h for h in groups.get("all", []) if "rdma_ports" in hostvars[h]]
        names = list(dict.fromkeys(list(groups.get(o["host_group"], [])) + feeding)) if o["check_cabling"] else []
        hosts = self.pick_hosts(names, ("rdma_ports", "mofed_source"))
        keys = ("switch_platform", "switch_role", "switch_uplinks", "ib_switch_guid")
        # ansible_network_os names the platform when switch_platform is not set
        # (arista.eos.eos -> eos); a wrong one is reported under its own name.
        # With each switch's platform settings: the EOS family, the SONiC cable length and
        # headroom rows (inventory names; the role's switch_fabric_* names are added below).
        switches = self.pick(o["switch_group"], keys + ("ansible_network_os",) + SWITCH_SETTINGS) if o["check_cabling"] else {}
        # InfiniBand switches are managed in-band by the SM, never over SSH.
        for name, sv in (self.pick(o["ib_switch_group"], keys) if o["check_cabling"] else {}).items():
            switches[name] = {"switch_platform": "infiniband", **sv}
        before = len(self.unreadable)
        fabric = self.read(fabric, "fabric") if fabric is not None else None
        fabric_unreadable = len(self.unreadable) - before
        role_values, per_host = self.role_vars(list(groups.get("all", [])), hosts)
        for name, sv in switches.items():
            sv.update({k: role_values[name][k] for k in SWITCH_ROLE_SETTINGS if k in role_values.get(name, {})})
        if o["nccl_tests"]:
            per_host += [(name, m) for name in groups.get(o["host_group"], []) for m in variables.nccl_tests_problems(role_values.get(name, {}))]
        play = {k: self.read(self.task_vars[k], k) for k in variables.PLAY_VARS if k in self.task_vars}
        return {
            "fabric": fabric,
            "fabric_unreadable": fabric_unreadable,
            "hosts": hosts,
            "switches": switches,
            "variables": role_values,
            "play": play,
            "per_host_problems": variables.merge_hosts(per_host) + variables.validate_host(play),
        }

    def read(self, value, key, stack=()):
        # Leaf by leaf, so a problem names its key; a mapping or list that
        # contains itself (a YAML alias inside its own anchor) is one problem.
        if isinstance(value, (dict, list)):
            if id(value) in stack:
                self.unreadable.append(
                    f"{key}: could not be read: it contains itself (a YAML alias inside its own anchor); allowed: a value that does not refer to itself"
                )
                return None
            stack += (id(value),)
            if isinstance(value, dict):
                return {k: self.read(v, f"{key}.{k}", stack) for k, v in value.items()}
            return [self.read(v, f"{key}[{i}]", stack) for i, v in enumerate(value)]
        if isinstance(value, str):
            try:
                return self.templar.template(value)
            except AnsibleError as e:
                self.unreadable.append(f"{key}: could not be read: {e.message}")
                return None
        return value

    def pick_hosts(self, names, keys):
        # A value that cannot be templated (a rail_ports plan that does not
        # expand, an undefined variable, a template that refers to itself) is
        # one problem of that host and key; the rest is still checked.
        out = {}
        for name in names:
            hv = self.hostvars[name]
            out[name] = {}
            for k in keys:
                if k not in hv:
                    continue
                try:
                    out[name][k] = self.templar.template(hv[k])
                except AnsibleError as e:
                    self.unreadable.append(f"{name}: {k}: could not be read: {e.message}")
        return out

    def pick(self, group, keys):
        return self.pick_hosts(self.groups.get(group, []), keys)

    def role_vars(self, names, hosts):
        # Only what the operator set (inventory, -e): role defaults are not hostvars.
        # The hosts the values name are checked against the inventory and the host group,
        # the TCP ports against the host's rails (intent/knobs.py).
        out, per_host = {}, []
        host_group = self.options["host_group"]
        inventory = {"hosts": list(self.groups.get("all", [])), "group": host_group, "group_hosts": list(self.groups.get(host_group, []))}
        for name in names:
            hv = self.hostvars.get(name, {})
            present = set(hv.keys()) & set(variables.RULES) - set(variables.PLAY_VARS)
            values = {}
            for k in sorted(present):
                try:
                    values[k] = self.templar.template(hv[k])
                except AnsibleError as e:
                    if not _RUNTIME.search(str(e.message)):
                        per_host.append((name, f"{k}: could not be read: {e.message}"))
            out[name] = values
            ports = hosts.get(name, {}).get("rdma_ports")
            rails = len(ports) if isinstance(ports, list) else None
            per_host += [(name, m) for m in variables.validate_host(values, dict(inventory, rails=rails))]
        return out, per_host
