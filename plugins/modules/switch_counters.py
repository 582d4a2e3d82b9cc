#!/usr/bin/python
"""Read a switch's congestion counters (PFC pause frames, ECN marks, queue drops), interface
error counters, optical modules and bit error rates per fabric port."""

DOCUMENTATION = r"""
---
module: switch_counters
short_description: Read PFC pause, ECN-marking, drop and interface error counters of a switch's fabric ports
description:
  - Connects over SSH (netmiko) and reads, without changing anything, the congestion
    counters of each of O(fabric_ports) in the platform's own CLI format - SONiC
    C(show pfc counters), NVUE C(nv show interface <swp> qos roce counters), EOS
    C(show priority-flow-control counters | json) - parsed by module_utils/switch/counters.py.
  - In the same read, the interface error counters of each port (link health) - SONiC
    C(show interfaces counters) (RX_ERR, TX_ERR), NVUE C(nv show interface <swp> counters) (Cumulus
    Linux 5.5 and later; Total Errors received and transmitted, carrier-transitions) or, where a switch
    refuses it, C(nv show interface <swp> link stats) (in-errors, out-errors, carrier-transitions),
    EOS C(show interfaces counters errors | json)
    (fcsErrors, symbolErrors, inErrors ...). When they cannot be read, the congestion
    counters are still returned and C(errors_msg) says why.
  - In the same read, the lossless state of each port (lossless headroom, the PFC watchdog and its
    storm counters - SONiC C(show pfcwd config|stats), EOS the running config and
    C(show priority-flow-control counters watchdog | json), NVUE
    C(nv show interface <swp> qos buffer ingress-priority-group -o json) and
    C(nv show interface <swp> qos pfc-watchdog -o json)), judged by verification
    (SWITCH_NO_HEADROOM, PFC_WATCHDOG_OFF, PFC_STORM).
  - In the same read, the optical module of each port (transceiver DOM - Rx power per lane, temperature and
    the module's own alarm thresholds; module_utils/switch/optics.py per platform), judged by verification
    like the NICs' modules (OPTIC_RX_POWER_LOW, OPTIC_TEMP_HIGH). When they cannot be read, C(optics_msg)
    says why.
  - In the same read, the bit error rate and FEC counters of what each port receives (SONiC
    C(show interfaces counters fec-stats), NVUE C(nv show interface <swp> link phy health) (5.15 and later;
    C(link phy-detail) in 5.10 - 5.14), EOS C(show interfaces phy detail | json); module_utils/switch/ber.py),
    judged by verification like the NICs' (LINK_BER_HIGH against fabric.verify.raw_ber_max and
    effective_ber_max; uncorrected FEC errors that grew between the two snapshots, LINK_ERRORS). When they
    cannot be read, C(ber_msg) says why.
  - Verification takes a snapshot before and after each benchmark phase and judges the
    deltas. What a platform does not expose (NVUE has no per-priority split, SONiC ECN
    marks and queue drops, EOS per-priority PFC) is listed per port in C(missing), so the
    caller can say what it cannot prove; it is never reported as zero.
version_added: "0.1.0"
author: linerate developers (@linerate)
extends_documentation_fragment:
  - linerate.fabric.switch_connection
  - linerate.fabric.switch_connection.switch_read_only
"""
EXAMPLES = r"""
- name: Snapshot the switch's congestion counters before the incast phase
  linerate.fabric.switch_counters:
    name: "{{ inventory_hostname }}"
    platform: "{{ switch_platform }}"
    host: "{{ ansible_host }}"
    username: "{{ switch_username }}"
    password: "{{ switch_password }}"
    known_hosts: "{{ switch_known_hosts }}"
    fabric_ports: [swp1, swp2]
  register: before
"""
RETURN = r"""
ports:
  description:
    - Per fabric port - C(rx_pause) / C(tx_pause) ({priority - frames}, or null where the
      platform has no per-priority split), C(rx_pause_total), C(tx_pause_total),
      C(ecn_marked), C(drops) ({priority - packets}), C(cnp_tx) (null where not exposed),
      C(per_priority), C(missing) (what this platform does not report).
  returned: always
  type: dict
  sample: {"Ethernet0": {"rx_pause": {"3": 12}, "tx_pause": {"3": 4012}, "rx_pause_total": 12,
           "tx_pause_total": 4012, "ecn_marked": null, "drops": null, "cnp_tx": null,
           "per_priority": true, "missing": ["ECN-marked packets", "queue drops"]}}
ports_missing:
  description: Fabric ports the switch does not report.
  returned: always
  type: list
  elements: str
errors:
  description:
    - Per fabric port - C(errors) ({counter - count} as the platform names them), C(link_down)
      (the port's link-down counter, null where the platform's command has none),
      C(link_down_unit) (C(transitions) where it counts down and up, as NVUE
      carrier-transitions does; C(events) where it counts downs), C(missing) (the error
      counters the platform does not report for the port). Empty when C(errors_msg) is set.
  returned: always
  type: dict
  sample: {"swp1": {"errors": {"in-errors": 0, "out-errors": 0}, "link_down": 6,
           "link_down_unit": "transitions", "missing": []}}
errors_msg:
  description: Why the interface error counters could not be read (empty when they were).
  returned: always
  type: str
lossless:
  description:
    - Per fabric port, the lossless state read back - C(pfc) (PFC priorities), C(headroom) (priorities
      with lossless headroom), C(pfcwd) (priorities the PFC watchdog guards), C(storms) ({priority -
      {detected, stormed}} from the watchdog's counters), each null where the platform's driver does
      not read it, and C(missing) naming those. Null when it could not be read (C(lossless_msg)).
  returned: always
  type: dict
  sample: {"Ethernet1/1": {"pfc": [3], "headroom": [3], "pfcwd": [3], "storms": {"3": {"detected": 1,
           "stormed": null}}, "missing": []}}
lossless_msg:
  description: Why the lossless state could not be read (empty when it was).
  returned: always
  type: str
optics:
  description:
    - Per fabric port, its module - C(present), C(optical), C(vendor), C(part_number), C(cable_technology) and
      C(ddm) with C(rx_power_dbm) ({values per lane, low, high}) and C(temperature_c) ({values, low, high}),
      each null where the module reports N/A; low and high are the module's alarm thresholds. Null when the
      modules could not be read (C(optics_msg)).
  returned: always
  type: dict
  sample: {"swp1": {"present": true, "optical": true, "vendor": "NVIDIA", "part_number": "MMA4Z00-NS",
           "cable_technology": null, "ddm": {"rx_power_dbm": {"values": [1.9, 1.9, 1.8, 1.9], "low": -10.4,
           "high": 5.0}, "temperature_c": {"values": [48.0], "low": -5.0, "high": 75.0}}}}
optics_msg:
  description: Why the optical modules could not be read (empty when they were).
  returned: always
  type: str
ber:
  description:
    - Per fabric port, what it receives - C(pre_fec_ber) and C(post_fec_ber) (bit error rates before and after
      FEC), C(fec_corrected) and C(fec_uncorrected) (codewords on SONiC and EOS; on NVUE C(fec_uncorrected) is
      the bits FEC did not correct, effective-errors, and C(fec_corrected) is not printed), C(fec_mode); each
      null where the platform does not print it. Null when it could not be read (C(ber_msg)).
  returned: always
  type: dict
  sample: {"Ethernet0": {"pre_fec_ber": 1.48e-20, "post_fec_ber": 0.0, "fec_corrected": 0, "fec_uncorrected": 0,
           "fec_mode": null}}
ber_msg:
  description: Why the bit error rates and FEC counters could not be read (empty when they were).
  returned: always
  type: str
"""
from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import read_only_module, read_ports_or_why


def read(p, driver):
    # the congestion counters must be read (a failure fails the module); the error counters and the lossless
    # configuration after them only say what their failure leaves unproven
    ports = driver.qos_counters(p["fabric_ports"]) if p["fabric_ports"] else {}
    errors, errors_msg = read_ports_or_why(p, driver.error_counters, {})
    lossless, lossless_msg = read_ports_or_why(p, driver.lossless, None)
    optics, optics_msg = read_ports_or_why(p, driver.transceivers, None)
    ber, ber_msg = read_ports_or_why(p, driver.phy_errors, None)
    return dict(
        ports=ports,
        ports_missing=[x for x in p["fabric_ports"] if x not in ports],
        errors=errors,
        errors_msg=errors_msg,
        lossless=lossless,
        lossless_msg=lossless_msg,
        optics=optics,
        optics_msg=optics_msg,
        ber=ber,
        ber_msg=ber_msg,
    )


def main():
    read_only_module(read)


if __name__ == "__main__":
    main()
