#!/usr/bin/python
"""Documentation for the verify_report action plugin (plugins/action/verify_report.py)."""

DOCUMENTATION = r"""
---
module: verify_report
short_description: Diagnose fabric verification results and write the reports
description:
  - Runs on the controller (action plugin). Reads what the verify_fabric role left in each
    node's host variables (C(rdma_ports), C(verify_fabric_port_result), C(verify_fabric_rdma_log),
    C(verify_fabric_incast_log), C(verify_fabric_link_health)) and the nccl_tests runs passed in I(nccl).
  - Turns them into findings with stable fault codes, each naming node, device, switch and
    switch port and the suspect layer (see docs/verification.md), localising a failing
    ib_write_bw pair to the endpoint the failures have in common.
  - Writes C(report.json), C(summary.md), C(report.html) (summary.md and the heat map as one
    self-contained page, inline CSS and SVG, nothing fetched), C(junit.xml) and C(heatmap.svg) to
    C(<reports_dir>/<UTC timestamp>/) and points C(<reports_dir>/latest) at it, also when no node was
    verified (every node in O(scope) is then C(NODE_NOT_VERIFIED) with its reason). In check
    mode nothing is written.
options:
  nodes:
    description: The inventory names of the nodes verified (the play's hosts).
    type: list
    elements: str
    required: true
  fabric:
    description: The effective fabric intent (thresholds, speed, width, MTU).
    type: dict
    required: true
  nccl:
    description: The registered results of the nccl_tests task (one per test).
    type: list
    elements: dict
    default: []
  nccl_tuning:
    description:
      - The NCCL tuning sweep of this run (playbooks/nccl_tune.yml; settings, rows, runs, margin_percent,
        repeats, file), shown as the report's C(nccl_tuning) section and a table in summary.md.
    type: dict
    default: {}
  rollout:
    description:
      - The host stack's rollout summary of this run (playbooks/stages/hosts.yml, play "Report the rollout"; waves,
        every node's state, its disruptive steps' start and end), shown as the report's C(rollout) section and a
        table in summary.md.
    type: dict
    default: {}
  remediation:
    description:
      - The drain decision's inputs. The report attributes the error findings to the shared elements that
        explain several nodes' failures (C(LEAF_SUSPECT), C(RAIL_SUSPECT), C(SPINE_SUSPECT), C(SM_SUSPECT),
        C(CONTROLLER_PATH); the findings they explain get C(explained_by)) and decides, from the drain budget
        and the state file, which nodes a drain may take (C(DRAIN_BREAKER_TRIPPED) when the breaker is open).
      - "C(enabled): draining is on in this run; C(state_file): the breaker's durable state (read, never written
        here); C(fleet): the number of gpu_nodes the budget's percentages are of."
    type: dict
    default: {}
  reports_dir:
    description: Where reports go; relative paths are relative to the playbook directory.
    type: str
    default: reports
  expect_gdr:
    description: Report NCCL_NO_GDR when NCCL does not use GPUDirect RDMA.
    type: bool
    default: true
  fail:
    description: Fail when a finding is an error.
    type: bool
    default: true
  write:
    description: Write the report files.
    type: bool
    default: true
  meta:
    description:
      - Free-form data stored in the report (plan, rounds, ...).
      - "C(phase_marks): C({phase: start time}) in epoch seconds, the verify_fabric role's marks; they become
        C(meta.phases), C([{phase, seconds}]) in the order the phases ran, each lasting until the next mark,
        the last until this action started, then C(report): this action's time before writing the files."
    type: dict
  ib_fabric:
    description:
      - "InfiniBand only. The registered result of M(linerate.fabric.ib_fabric_check) (sminfo, summary,
        findings, pkey_tables), or a dict with C(failed=true) and C(msg) when the check could not run."
      - Adds the checks C(subnet_manager), C(ib_topology) and C(ib_partitions) and their findings
        (codes C(IB_*)) to the report.
    type: dict
  ib_switches:
    description: Names of the InfiniBand switches, to tell switch-side findings from host-side ones.
    type: list
    elements: str
  sl:
    description:
      - InfiniBand service level the benchmarks ran on; each node's NCCL_IB_SL (unset = NCCL's 0) must
        match (NCCL_SL_MISMATCH). On RoCE NCCL_IB_TC is checked against the intent (data DSCP << 2).
    type: raw
  mode:
    description:
      - "How the run went, written into the report as C(mode) (JSON), a C(Mode:) line under a C(Fabric audit)
        title (Markdown) and a C(mode) property of every JUnit test suite. playbooks/audit.yml passes
        C(audit: read-only, nothing was changed)."
    type: str
  drift:
    description:
      - "The audit's check-mode results of every role: C({hosts: {node: {layers: {layer: [registered results]},
        devices: RDMA facts' devices}}, switches: {switch: switch_config result}}). Layers are C(firmware),
        C(roce_qos), C(nccl_conf), C(rdma_netdev), C(peermem), C(mofed), C(host), C(subnet_manager)."
      - They become the check C(drift) and its C(DRIFT_*) / C(FIRMWARE_PENDING) findings, each naming the node or
        switch, the device, the key, the current and the intended value (module_utils/checks/audit.py).
    type: dict
  scope:
    description:
      - Every node the verification is meant for (C(ansible_play_hosts_all)); each one not in O(nodes) is
        C(NODE_NOT_VERIFIED) (an error) with its reason - the task and message the verification's rescue kept
        in C(verify_fabric_not_verified) (reason C(unreachable) where its C(unreachable) is true, the reachability
        check failed), else the O(probes) result - and the check C(nodes) has a case per node.
      - Omitted, nodes are not accounted for (the report covers O(nodes) only).
    type: list
    elements: str
  probes:
    description:
      - The registered loop of the controller's C(ansible.builtin.ping) of the nodes that left the play without
        a record (C(item) = node; C(unreachable) and C(msg) say why).
    type: dict
  switch_scope:
    description:
      - Every switch the verification is meant for (the switch plays' C(ansible_play_hosts_all)); each one whose
        LLDP or counter read failed, or that is in O(switches_left), is C(SWITCH_UNREACHABLE) (an error), and the
        check C(switches) has a case per switch. Omitted, switches are not accounted for.
    type: list
    elements: str
  switches_left:
    description: The switches of O(switch_scope) no longer in the switch plays (they failed earlier in the run).
    type: list
    elements: str
attributes:
  check_mode:
    support: full
    description: Diagnoses the results; writes no report file.
author: linerate developers (@linerate)
"""

EXAMPLES = r"""
- name: Diagnose and write the reports
  linerate.fabric.verify_report:
    nodes: "{{ ansible_play_hosts }}"
    fabric: "{{ fabric_effective }}"
    nccl: "{{ verify_fabric_nccl.results | default([]) }}"
    reports_dir: "{{ linerate_output_dir }}/reports"
    fail: false
  run_once: true
  register: verify_fabric_report
"""

RETURN = r"""
findings:
  description: Every finding (code, severity, layer, check, node, device, switch, switch_port, message).
  returned: always
  type: list
  elements: dict
remediation:
  description: The drain decision (enabled, breaker, budget, allowed, candidates, unseen, drain, held, state_file).
  returned: always
  type: dict
summary:
  description: passed, errors, warnings and the count per code.
  returned: always
  type: dict
passed:
  description: True when no finding is an error.
  returned: always
  type: bool
report_files:
  description: Paths of the files written (dir, json, markdown, html, junit, heatmap); empty in check mode.
  returned: when write is true
  type: dict
summary_markdown:
  description: The Markdown summary.
  returned: always
  type: str
"""
