#!/usr/bin/python
"""Documentation for the validate_intent action plugin (plugins/action/validate_intent.py).

The defaults and choices below are the validator's own (module_utils/intent/fabric.py
DEFAULTS and its constants); tests/unit/test_plugin_docs.py fails when they
drift apart.
"""

DOCUMENTATION = r"""
---
module: validate_intent
short_description: Validate the fabric intent, the cabling and every cross-layer constraint
description:
  - Runs on the controller (action plugin) before any host or switch is touched; never opens a
    connection. The first play of every playbook (C(playbooks/validate.yml)) calls it on C(localhost).
  - Reads the C(fabric) intent, every RDMA host's C(rdma_ports), every switch's C(switch_platform),
    C(switch_role), C(switch_uplinks) (and C(ib_switch_guid) of InfiniBand switches) and the subnet
    manager hosts from the inventory.
  - Reports every problem at once, each naming the key, the value, what is allowed and the physical
    reason, and fails if there is one; nothing is changed.
  - On success sets the fact C(fabric_effective) (the intent with its defaults filled in, only the
    chosen transport's block kept); C(playbooks/validate.yml) also keeps it as a variable and gives
    it to every host, so it works with C(inject_facts_as_vars = false).
version_added: 0.1.0
author: linerate developers (@linerate)
options:
  fabric:
    description:
      - The fabric intent, normally the inventory variable C(fabric) (C(group_vars/all)). Every
        key is optional; a key not listed here is an error.
    type: dict
    suboptions:
      name:
        description: A name for reports.
        type: str
        default: fabric
      transport:
        description: The RDMA transport of the fabric.
        type: str
        choices: [roce, infiniband]
        default: roce
      link_speed_gbps:
        description: Data rate of one port (Ethernet rates, InfiniBand 4X rates); line rate is derived from it.
        type: int
        choices: [10, 20, 25, 40, 50, 56, 100, 200, 400, 800]
        default: 400
      link_width:
        description: Lanes per port.
        type: int
        choices: [1, 2, 4, 8]
        default: 4
      mtu:
        description: MTUs; the host MTU must not exceed the switch MTU.
        type: dict
        suboptions:
          host:
            description: Host netdev MTU, 1280..9216; on RoCE at least 1128 (RDMA MTU 1024 + 104 bytes of headers).
            type: int
            default: 4200
          switch:
            description: Switch port MTU, 1280..9216.
            type: int
            default: 9216
      roce:
        description: Lossless RoCE (only with I(transport=roce)).
        type: dict
        suboptions:
          trust:
            description: What the NIC and switch classify traffic by.
            type: str
            choices: [dscp, pcp]
            default: dscp
          no_drop_priority:
            description: The PFC (no-drop) priority of RDMA data, 0..7.
            type: int
            default: 3
          data_dscp:
            description: DSCP of RDMA data, 0..63.
            type: int
            default: 26
          cnp_dscp:
            description: DSCP of congestion notification packets, 0..63, not I(data_dscp).
            type: int
            default: 48
          cnp_priority:
            description: Priority of CNPs, 0..7, not I(no_drop_priority) (CNPs must not queue behind the data they throttle).
            type: int
            default: 6
          gid_type:
            description: RoCE GID type.
            type: str
            choices: [v2]
            default: v2
          ecn:
            description: ECN marking on the switches (DCQCN).
            type: dict
            suboptions:
              enabled:
                description: Mark with ECN.
                type: bool
                default: true
              min_threshold_kb:
                description: Queue depth where marking starts, 1..100000, below I(max_threshold_kb).
                type: int
                default: 150
              max_threshold_kb:
                description: Queue depth where every packet is marked, 1..100000.
                type: int
                default: 1500
              probability_percent:
                description: Marking probability at I(max_threshold_kb), 1..100.
                type: int
                default: 100
      infiniband:
        description:
          - InfiniBand (only with I(transport=infiniband)); its C(subnet_manager) block (priority,
            standby_priority, routing_engine, root_guids, lmc, sweep_interval, log, default_partition,
            partitions) is checked by the ib_subnet_manager role's intent (module C(ib_intent)).
        type: dict
        default: {}
      nccl:
        description: NCCL's environment on the nodes.
        type: dict
        suboptions:
          socket_ifname:
            description: NCCL_SOCKET_IFNAME, an interface name or NCCL prefix list such as C(eth0) or C(^lo,docker).
            type: str
            default: eth0
          gdr_level:
            description:
              - GPUDirect RDMA. C(auto) writes nothing (NCCL's own rule, GDR up to a PXB path); a level is
                NCCL_NET_GDR_LEVEL in the per-job file /etc/nccl/tuned-job.env, never /etc/nccl.conf.
            type: str
            choices: [auto, LOC, PIX, PXB, PHB, SYS]
            default: auto
          overrides:
            description:
              - More C(NCCL_*) settings for /etc/nccl.conf, names to strings or numbers; System-configuration
                variables only (one of NCCL's Debugging section, such as C(NCCL_ALGO), is refused).
            type: dict
            default: {}
      verify:
        description: Pass thresholds of the verification - bandwidth as fractions of line rate (0 < x <= 1), link health as counts and bit error rates.
        type: dict
        suboptions:
          ib_write_bw_fraction:
            description: Least ib_write_bw bandwidth of a port pair.
            type: float
            default: 0.9
          nccl_busbw_fraction:
            description: Least nccl-tests bus bandwidth.
            type: float
            default: 0.8
          link_errors_max:
            description: Physical errors (CRC, symbol, uncorrectable FEC) a port may count during verification (check link_health).
            type: int
            default: 0
          link_flaps_max:
            description: Link-down events a port may count during verification.
            type: int
            default: 0
          effective_ber_max:
            description: Highest effective (post-FEC) bit error rate mlxlink may report; write 1.0e-12 (YAML reads 1e-12 as a string).
            type: float
            default: 1.0e-12
          raw_ber_max:
            description: Highest raw (pre-FEC) bit error rate mlxlink may report.
            type: float
            default: 2.4e-4
          optic_rx_power_margin_db:
            description:
              - An optical module's received power on any lane below its own low threshold plus this margin (dB) is
                OPTIC_RX_POWER_LOW (mlxlink -m prints the threshold beside the value). Copper cables are not judged.
            type: float
            default: 0.0
          optic_temp_margin_c:
            description: An optical module's temperature above its own high threshold minus this margin (degrees C) is OPTIC_TEMP_HIGH.
            type: float
            default: 0.0
          ib_error_thresholds:
            description:
              - InfiniBand. PortCounters error counter (SymbolErrorCounter, LinkErrorRecoveryCounter, LinkDownedCounter,
                PortRcvErrors, PortRcvRemotePhysicalErrors, PortRcvSwitchRelayErrors, PortXmitDiscards,
                PortXmitConstraintErrors, PortRcvConstraintErrors, LocalLinkIntegrityErrors,
                ExcessiveBufferOverrunErrors, VL15Dropped) -> the count any port of the subnet may show
                (ibqueryerrors); above it is IB_LINK_ERRORS naming both ends of the link. A counter not named is 0.
            type: dict
            default: {}
          full_plan_max_nodes:
            description:
              - With the ib_write_bw plan C(auto) (verify_fabric_ib_write_bw_plan, the default), every pair is tested
                up to this many nodes (N-1 rounds) and the sampled plan runs above it.
            type: int
            default: 16
          latency_us_max:
            description:
              - The average one-way latency (perftest's t_avg, microseconds, 0 < x <= 1000) an ib_write_lat pair may
                show; above it is RDMA_LATENCY_HIGH. Null takes the transport's default (RoCE 5.0, InfiniBand 3.0).
            type: float
      firmware:
        description: The NIC firmware (role connectx_firmware).
        type: dict
        suboptions:
          profile:
            description:
              - The PCI performance / GPUDirect profile, per NIC generation (module_utils/host/fwprofile.py).
              - V(gpudirect) sets ADVANCED_PCI_SETTINGS, MAX_ACC_OUT_READ and ATS_ENABLED as NVIDIA's
                nic-configuration-operator does; V(default) keeps them at the factory values; V(none) leaves them alone.
            type: str
            choices: [gpudirect, default, none]
            default: default
      rollout:
        description:
          - How the host stack rolls through C(gpu_nodes) in waves (playbooks/stages/hosts.yml,
            module_utils/host/rollout.py; docs/host-stack.md, "Rolling host changes").
        type: dict
        suboptions:
          max_unavailable:
            description:
              - The most nodes disrupted at once (a NIC reset, a driver restart, a reboot) - the widest wave. A number
                1..100000 or a percentage V('1%')..V('100%') of the nodes rolled, rounded down and at least 1.
            type: raw
            default: "10%"
          canary:
            description: The first wave's nodes (alone); the waves after it double up to O(fabric.rollout.max_unavailable).
            type: int
            default: 1
          spread:
            description:
              - Never two nodes of one such group in a wave - V(leaf) (the switches of the node's C(rdma_ports)),
                V(rack) (host variable C(linerate_rack)), V(nvlink_domain) (C(linerate_nvlink_domain)); V([]) none.
            type: list
            elements: str
            choices: [leaf, rack, nvlink_domain]
            default: [leaf, rack, nvlink_domain]
          slow_start:
            description:
              - V(true) - after the canary, waves double up to O(fabric.rollout.max_unavailable); V(false) - the wave
                after the canary is O(fabric.rollout.max_unavailable) nodes at once.
            type: bool
            default: true
          max_fail_percentage:
            description:
              - A wave with more than this percentage of its nodes failed or unreachable halts the later waves (their
                nodes are left as they are); 0 - the first failed node.
            type: int
            default: 0
          batch:
            description:
              - The old name of O(fabric.rollout.max_unavailable) (a number or V('N%')); not together with it.
            type: raw
      remediation:
        description:
          - What C(verify.yml) and C(audit.yml) do with their findings (role C(remediate), docs/audit.md) - opt-in.
        type: dict
        suboptions:
          drain:
            description: Drain the nodes the findings name, return them when they pass again (needs O(fabric.remediation.scheduler)).
            type: bool
            default: false
          scheduler:
            description: Where nodes are drained - Slurm (C(scontrol)) or Kubernetes (C(kubectl) cordon + taint).
            type: str
            choices: [none, slurm, kubernetes]
            default: none
          drain_codes:
            description: Fault codes that drain whatever their severity.
            type: list
            elements: str
            default: []
          drain_severities:
            description: Severities that drain (errors drain, warnings do not).
            type: list
            elements: str
            default: [error]
          exempt_codes:
            description: Fault codes that never drain.
            type: list
            elements: str
            default: []
          return_to_service:
            description: Return a node linerate drained once a re-check of it passes.
            type: bool
            default: true
          attribution:
            description:
              - Attribution before action (docs/audit.md). A shared element (leaf, rail, spine, subnet manager)
                explains the failing ports under it when they are on O(fabric.remediation.attribution.min_nodes)
                nodes or more and O(fabric.remediation.attribution.min_share_percent) of its ports or more; the
                element gets one finding and the nodes it explains are not drained for it. As many nodes
                unreachable from the controller at once (directly or through one jump host) are C(CONTROLLER_PATH).
            type: dict
            suboptions:
              min_nodes:
                description: Nodes an element's failing ports must be on (2..100000).
                type: int
                default: 2
              min_share_percent:
                description: Share of the element's ports that must fail (1..100).
                type: int
                default: 50
          budget:
            description:
              - The drain budget and its circuit breaker (docs/audit.md). Each allowance is the lower of the count
                and the percentage of gpu_nodes, at least 1. A run whose nodes to drain plus nodes not verified
                exceed the per-run allowance, or whose drains with the window's exceed the window's, trips the
                breaker - nothing is drained or returned until C(playbooks/drain_breaker_reset.yml) resets it.
            type: dict
            suboptions:
              max_nodes_per_run:
                description: Nodes one run may drain (1..100000; at most O(fabric.remediation.budget.max_nodes_per_window)).
                type: int
                default: 10
              max_percent_per_run:
                description: Percent of gpu_nodes one run may drain (1..100).
                type: int
                default: 5
              window_hours:
                description: The sliding window's length in hours (1..720).
                type: int
                default: 24
              max_nodes_per_window:
                description: Nodes drained in one window (1..100000).
                type: int
                default: 20
              max_percent_per_window:
                description: Percent of gpu_nodes drained in one window (1..100).
                type: int
                default: 10
  host_group:
    description: The group of RDMA hosts (their C(rdma_ports) are read).
    type: str
    default: gpu_nodes
  check_cabling:
    description:
      - Whether the cabling (every host's C(rdma_ports), the switches and their uplinks) is
        checked against the inventory. V(false) validates the O(fabric) tree alone, for a
        run whose inventory describes no fabric (a role scenario in one container).
    type: bool
    default: true
  switch_group:
    description: The group of Ethernet switches.
    type: str
    default: switches
  ib_switch_group:
    description: The group of InfiniBand switches (managed in-band by the subnet manager).
    type: str
    default: ib_switches
  sm_group:
    description: The group of subnet manager hosts.
    type: str
    default: subnet_managers
  nccl_tests:
    description:
      - Whether this run installs nccl-tests on the O(host_group) (C(verify.yml), C(site.yml) and
        C(nccl_tune.yml) import C(validate.yml) with C(linerate_validate_nccl_tests=true)). Then, for
        C(verify_fabric_nccl_tests_method=source) (the role's default) on a node that runs nccl-tests,
        C(verify_fabric_nccl_tests_source_url) (the release tarball on the site's mirror) and
        C(verify_fabric_nccl_tests_source_checksum) (C(sha256:<64 hex digits>)) are required and
        C(verify_fabric_nccl_tests_version) is a release (X.Y.Z), each refused by its key before any node
        is touched.
    type: bool
    default: false
  validated_digest:
    description:
      - The RV(digest) of an earlier successful validation in the same run. When everything read now
        (the O(fabric) tree, every host's C(rdma_ports) and C(mofed_source), the switches' variables,
        the SM group) has the same digest, nothing is validated again and RV(reused) is true (no
        RV(ansible_facts)). Any difference (an C(-e) override, an import's vars) validates in full.
      - playbooks/validate.yml passes the digest it kept on localhost, so site.yml, which imports
        validate.yml through each playbook, validates once.
    type: str
extends_documentation_fragment:
  - linerate.fabric.read_only
attributes:
  platform:
    support: full
    description: Runs on the controller.
    platforms: all
notes:
  - Action plugin only; it runs on the controller.
seealso:
  - module: linerate.fabric.ib_intent
"""

EXAMPLES = r"""
- name: Check the intent, the cabling and every cross-layer constraint
  linerate.fabric.validate_intent:
    fabric: "{{ fabric | default(omit) }}"
  register: linerate_validation

- name: Validate again only if the intent or the cabling changed since the last validation of this run
  linerate.fabric.validate_intent:
    fabric: "{{ fabric | default(omit) }}"
    validated_digest: "{{ linerate_validated_digest | default(omit) }}"
  register: linerate_validation
"""

RETURN = r"""
problems:
  description: Every problem found; empty when the intent is valid.
  returned: always
  type: list
  elements: str
  sample: ["fabric.roce.no_drop_priority: 9 is not allowed (allowed: an integer 0..7)"]
msg:
  description: A one-line summary, or every problem.
  returned: always
  type: str
digest:
  description: SHA-256 of everything the validation read (see O(validated_digest)).
  returned: unless the inventory could not be read
  type: str
reused:
  description: True when O(validated_digest) matched and nothing was validated again.
  returned: unless the inventory could not be read
  type: bool
ansible_facts:
  description: The validated intent.
  returned: success, when not RV(reused)
  type: dict
  contains:
    fabric_effective:
      description:
        - The intent with its defaults filled in; only the chosen transport's block is kept.
        - Its key C(derived) holds every value computed from the intent (module_utils/intent/fabric.py C(derive()));
          roles read those instead of computing their own (docs/intent.md lists them).
      type: dict
"""
