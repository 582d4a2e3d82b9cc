"""What a check's ``report(ctx)`` reads: ``Inputs``, built by the verify_report action (tests build their
own) and passed to each check of checks/registry.py's CHECKS in turn. A check that cannot read its inputs
raises ``errors.Unreadable``."""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling


class Inputs:
    """What a check's ``report`` reads (built by the verify_report action; tests build their own).

    ``template``: renders a task argument or host variable (the action's templar); ``template_error``:
    what it raises on a bad template. ``findings``: every finding of the checks before this one;
    ``hints``: (node, device) of the findings up to the port check's (where ib_write_bw looks first).
    """

    def __init__(self, nodes, data, fabric, args=None, hostvars=None, template=None, template_error=(), nccl_runs=()):
        self.nodes = list(nodes)
        self.data = data
        self.fabric = fabric
        self.args = args or {}
        self.hostvars = hostvars or {}
        self.template = template or (lambda value: value)
        self.template_error = template_error
        self.nccl_runs = list(nccl_runs or [])
        self.hosts = {n: data[n].get("rdma_ports") or [] for n in self.nodes}
        self.cabling = cabling.cabling_index(self.hosts)
        self.findings = []
        self.hints = []

    def switches(self):
        return [s for s in self.template(self.args.get("switches") or []) if s in self.hostvars]

    def switch_reads(self, name):
        """{switch: what the switch plays of playbooks/verify.yml registered as ``name``}."""
        return {s: self.template(self.hostvars[s][name]) for s in self.switches() if name in self.hostvars[s]}

    def uplinks(self):
        return {s: self.template(self.hostvars[s].get("switch_uplinks") or []) for s in self.switches()}

    def logs(self, key, tool=None):
        """{node: the node's ``key`` result (its ``tool`` entry, when given) or []}."""
        if tool is None:
            return {n: self.data[n].get(key) or [] for n in self.nodes}
        return {n: (self.data[n].get(key) or {}).get(tool) or [] for n in self.nodes}
