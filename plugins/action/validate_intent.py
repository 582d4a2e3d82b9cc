"""Action plugin: validate the fabric intent on the controller.

Runs before any host or switch is touched: it reads the inventory (the
``fabric`` tree, every RDMA host's ``rdma_ports`` and every switch's
variables), reports every problem at once and fails if there is one. It
never opens a connection.

``digest`` is a SHA-256 of everything it read; given back as
``validated_digest`` (playbooks/validate.yml keeps it on localhost), the
same inputs are not validated again in the same run: site.yml imports
validate.yml through every playbook it imports.
"""
import hashlib
import json

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.linerate.fabric.plugins.module_utils import intent
from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import ALIASES as PLATFORM_ALIASES


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("fabric", "host_group", "check_cabling", "switch_group", "ib_switch_group", "sm_group",
                             "validated_digest"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        fabric = args.get("fabric", task_vars.get("fabric"))
        host_group = args.get("host_group", "gpu_nodes")
        switch_group = args.get("switch_group", "switches")
        ib_switch_group = args.get("ib_switch_group", "ib_switches")
        sm_group = args.get("sm_group", "subnet_managers")
        check_cabling = args.get("check_cabling", True)
        if not isinstance(check_cabling, bool):
            result.update(failed=True, msg=f"check_cabling: {check_cabling!r} is not allowed (allowed: true, false)")
            return result
        groups = task_vars.get("groups", {})
        hostvars = task_vars.get("hostvars", {})

        unreadable = []

        def pick_hosts(names, keys):
            # A value that cannot be templated (a rail_ports plan that does not
            # expand, an undefined variable) is one problem of that host; the
            # rest is still checked.
            out = {}
            for name in names:
                hv = hostvars[name]
                out[name] = {}
                for k in keys:
                    if k not in hv:
                        continue
                    try:
                        out[name][k] = self._templar.template(hv[k])
                    except AnsibleError as e:
                        unreadable.append(f"{name}: {k}: could not be read: {e.message}")
            return out

        def pick(group, keys):
            return pick_hosts(groups.get(group, []), keys)

        try:
            # Every RDMA host, and every other host that feeds a switch port
            # (rdma_ports set outside the host group) is validated too.
            feeding = [h for h in groups.get("all", []) if "rdma_ports" in hostvars[h]]
            names = list(dict.fromkeys(list(groups.get(host_group, [])) + feeding)) if check_cabling else []
            hosts = pick_hosts(names, ("rdma_ports", "mofed_source"))
            keys = ("switch_platform", "switch_role", "switch_uplinks", "ib_switch_guid")
            # the platform's own limits (module_utils/switch_profiles.py): SONiC object names, EOS family
            switches = pick(switch_group, keys + ("ansible_network_os", "switch_fabric_profile", "switch_eos_family")) \
                if check_cabling else {}
            for name, sv in switches.items():
                # Ansible's convention names the platform as the switch role does:
                # switch_platform wins, else ansible_network_os (arista.eos.eos -> eos).
                network_os = sv.pop("ansible_network_os", None)
                if "switch_platform" not in sv and network_os is not None:
                    short = str(network_os).rsplit(".", 1)[-1].strip().lower()
                    sv["switch_platform"] = PLATFORM_ALIASES.get(short, network_os)
            # InfiniBand switches are managed in-band by the SM, never over SSH.
            for name, sv in (pick(ib_switch_group, keys) if check_cabling else {}).items():
                switches[name] = {"switch_platform": "infiniband", **sv}
            fabric = self._templar.template(fabric) if fabric is not None else None
        except AnsibleError as e:
            result.update(failed=True, msg=f"the inventory could not be read: {e}")
            return result

        # Everything the validation reads, as read: a different intent, cabling, switch or SM group
        # (an -e override, an import's vars) is a different digest and is validated in full.
        digest = hashlib.sha256(json.dumps([fabric, hosts, switches, list(groups.get(sm_group, [])), unreadable],
                                           sort_keys=True, default=str).encode()).hexdigest()
        result["digest"] = digest
        result["reused"] = bool(args.get("validated_digest")) and args.get("validated_digest") == digest
        if result["reused"]:
            result.update(changed=False, problems=[],
                          msg="the same intent and cabling were validated earlier in this run: not checked again")
            return result
        problems = unreadable + intent.validate(fabric, hosts, switches, groups.get(sm_group, []))
        result["problems"] = problems
        result["changed"] = False
        if problems:
            result["failed"] = True
            result["msg"] = (f"the fabric intent has {len(problems)} problem(s); nothing was changed:\n- "
                             + "\n- ".join(problems))
            return result
        eff = intent.published(fabric, groups.get(sm_group, []))
        result["ansible_facts"] = {"fabric_effective": eff}
        result["msg"] = (f"fabric {eff['name']!r} ({eff['transport']}, {eff['link_speed_gbps']} Gb/s): "
                         f"{len(hosts)} RDMA host(s), {len(switches)} switch(es), intent valid")
        return result
