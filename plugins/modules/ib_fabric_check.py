#!/usr/bin/python
"""Check a live InfiniBand subnet against the intended cabling."""

DOCUMENTATION = r"""
module: ib_fabric_check
short_description: Check the InfiniBand subnet manager, topology and partitions
description:
  - Runs C(sminfo), C(ibnetdiscover), C(iblinkinfo) and C(smpquery pkeys) on the target
    and compares what they report with the intended SM, cabling and partitions.
  - Each problem is a finding with a stable code and the exact node and port
    (IB_SM_NOT_MASTER, IB_SM_PRIORITY_MISMATCH, IB_LINK_MISSING, IB_PORTS_SWAPPED,
    IB_LINK_MISWIRED, IB_UNEXPECTED_LINK, IB_UNEXPECTED_DEVICE, IB_LINK_DEGRADED,
    IB_PARTITION_NOT_IN_FORCE).
  - Read-only; never changes the fabric.
version_added: 0.1.0
author: linerate developers (@linerate)
options:
  checks:
    description: Which checks to run.
    type: list
    elements: str
    choices: [sm, topology, partitions]
    default: [sm, topology, partitions]
  environment:
    description: Extra environment for the diag tools (the lab sets LD_PRELOAD, SIM_HOST, IBSIM_*).
    type: dict
    default: {}
  expected_sm_guid:
    description: Port GUID the master SM must run on; empty for any.
    type: str
  expected_sm_priority:
    description: Priority the master SM must have.
    type: int
  expected_sm_node:
    description: Name reported as the node of SM findings.
    type: str
  expected_links:
    description: Intended host cabling, from each host's C(rdma_ports).
    type: list
    elements: dict
    default: []
  switch_links:
    description: Intended switch-to-switch cables (C(switch), C(port), C(peer), C(peer_port)).
    type: list
    elements: dict
    default: []
  switches:
    description: Inventory switch name -> its node GUID (or null to match by NodeDescription).
    type: dict
    default: {}
  link_width:
    description: Intended link width (lanes).
    type: int
  link_speed_gbps:
    description: Intended nominal link speed (width x lane rate), Gb/s.
    type: float
  partitions:
    description: Partitions with members resolved to port GUIDs (as C(ib_intent) returns them).
    type: list
    elements: dict
    default: []
  timeout:
    description: Seconds each diag tool may run.
    type: int
    default: 30
  fail_on_findings:
    description: Fail the task when there are findings.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check the subnet
  linerate.fabric.ib_fabric_check:
    expected_sm_priority: 15
    expected_links: [{host: node1, device: mlx5_0, switch: leaf1, switch_port: 1}]
    switches: {leaf1: null}
    link_width: 4
    link_speed_gbps: 400
"""

RETURN = r"""
findings:
  description: Problems found, each with code, node, port, message.
  type: list
  elements: dict
  returned: always
sminfo:
  description: The parsed sminfo answer.
  type: dict
  returned: when the sm check ran and an SM answered
summary:
  description: Counts of discovered switches, CAs and links.
  type: dict
  returned: when the topology check ran
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils import ibcheck, ibdiag
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError


def run(module, args, env):
    rc, out, err = module.run_command(["timeout", str(module.params["timeout"])] + args,
                                      environ_update=env)
    text = out + (("\n" + err) if err.strip() else "")
    if rc != 0:
        raise ParseError(args[0], f"exit {rc}: {err.strip() or out.strip()}", text)
    return text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type="list", elements="str", choices=["sm", "topology", "partitions"],
                        default=["sm", "topology", "partitions"]),
            environment=dict(type="dict", default={}),
            expected_sm_guid=dict(type="str"),
            expected_sm_priority=dict(type="int"),
            expected_sm_node=dict(type="str"),
            expected_links=dict(type="list", elements="dict", default=[]),
            switch_links=dict(type="list", elements="dict", default=[]),
            switches=dict(type="dict", default={}),
            link_width=dict(type="int"),
            link_speed_gbps=dict(type="float"),
            partitions=dict(type="list", elements="dict", default=[]),
            timeout=dict(type="int", default=30),
            fail_on_findings=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    env = {k: str(v) for k, v in p["environment"].items()}
    findings, result = [], {"changed": False}
    if "sm" in p["checks"]:
        try:
            sm = ibdiag.parse_sminfo(run(module, ["sminfo"], env))
            result["sminfo"] = sm
        except ParseError as e:
            sm = None
            result["sminfo_error"] = str(e)
        findings += ibcheck.check_sm(sm, p["expected_sm_guid"] or None,
                                     p["expected_sm_priority"], p["expected_sm_node"])
    nd = None
    if "topology" in p["checks"] or "partitions" in p["checks"]:
        try:
            nd = ibdiag.parse_ibnetdiscover(run(module, ["ibnetdiscover"], env))
        except ParseError as e:
            module.fail_json(msg=f"cannot discover the subnet: {e}", findings=findings, **result)
    if "topology" in p["checks"]:
        try:
            li = ibdiag.parse_iblinkinfo(run(module, ["iblinkinfo"], env))
        except ParseError as e:
            module.fail_json(msg=f"iblinkinfo failed: {e}", findings=findings, **result)
        findings += ibcheck.check_topology(nd, li, p["expected_links"], p["switch_links"],
                                           p["switches"], p["link_width"], p["link_speed_gbps"])
        result["summary"] = {
            "switches": sum(1 for n in nd["nodes"].values() if n["type"] == "switch"),
            "cas": sum(1 for n in nd["nodes"].values() if n["type"] == "ca"),
            "links": len(nd["links"]),
        }
    if "partitions" in p["checks"] and p["partitions"]:
        lids = {}
        names = {ibdiag.norm_guid(e["guid"]): f"{e['host']} {e['device']}"
                 for e in p["expected_links"] if e.get("guid")}
        for n in nd["nodes"].values():
            if n["type"] != "ca":
                continue
            for pnum, port in n["ports"].items():
                if port.get("port_guid") and port.get("lid"):
                    lids[port["port_guid"]] = (port["lid"], pnum)
                    names.setdefault(port["port_guid"], n["desc"])
        tables = {}
        for part in p["partitions"]:
            for g in part["guids"]:
                g = ibdiag.norm_guid(g)
                if g in tables or g not in lids:
                    continue
                try:
                    tables[g] = ibdiag.parse_smpquery_pkeys(
                        run(module, ["smpquery", "pkeys", str(lids[g][0])], env))["pkeys"]
                except ParseError:
                    tables[g] = None
        findings += ibcheck.check_partitions(p["partitions"], tables, names)
        result["pkey_tables"] = {g: ["0x%04x" % k for k in v] for g, v in tables.items() if v}
    result["findings"] = findings
    if findings and p["fail_on_findings"]:
        module.fail_json(msg="InfiniBand fabric check: " + "; ".join(
            f"{f['code']} {f['node']}" + (f" port {f['port']}" if f["port"] is not None else "")
            for f in findings), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
