#!/usr/bin/python
"""Read a switch's state for change-window pre- and post-checks."""

DOCUMENTATION = r"""
---
module: switch_info
short_description: Read a switch's running config, pending changes and fabric-port PFC/ECN/link state
description:
  - Connects over SSH (netmiko) and reads, without changing anything, the
    running configuration, whether uncommitted configuration is pending
    (NVUE pending revision, EOS configure sessions not completed, SONiC
    running config not saved or leftover change-window checkpoints), and for
    each of O(fabric_ports) the operational link state with the PFC
    priorities and ECN state read back from the switch.
version_added: "0.1.0"
author: linerate developers (@linerate)
extends_documentation_fragment:
  - linerate.fabric.switch_connection
  - linerate.fabric.switch_connection.switch_read_only
options:
  return_running_config:
    description: Also return the whole running configuration (it may hold hashed secrets; off by default).
    type: bool
    default: false
  require_ports_up:
    description: Whether a fabric port that is down is one of RV(problems).
    type: bool
    default: true
  no_drop_priority:
    description:
      - The PFC priority every fabric port must have, alone (omit to leave PFC out of RV(problems)).
      - The same post-check M(linerate.fabric.switch_config) runs inside its change window.
    type: int
  ecn:
    description: Whether every fabric port must have ECN marking on (omit to leave ECN out of RV(problems)).
    type: bool
  backup_dir:
    description:
      - The change window's backup folder (the role's C(switch_fabric_backup_dir)). When given, the journal of a
        window an earlier run left cut off (C(<backup_dir>/<name>/window.json), by SIGINT, SIGTERM, or its
        controller killed) is read with the switch and reported as RV(earlier_window) and a warning.
    type: path
  config:
    description:
      - The intent in the platform's configuration language, as M(linerate.fabric.switch_config) takes it;
        when given, RV(commands) is the delta that module would push, computed from the same read (the
        change window's pre-check leaves a switch with no delta out of the rollout).
      - An intent outside the managed scope fails, as it does in M(linerate.fabric.switch_config).
    type: str
"""

EXAMPLES = r"""
- name: Read the switch before the change window
  linerate.fabric.switch_info:
    name: "{{ inventory_hostname }}"
    platform: "{{ ansible_network_os }}"
    host: "{{ ansible_host }}"
    username: "{{ ansible_user }}"
    password: "{{ ansible_password }}"
    known_hosts: "{{ switch_known_hosts }}"
    fabric_ports: [swp1, swp2]
  register: pre

# The connection options once, for every switch module (action group linerate.fabric.switch),
# here a dict with name, platform, host, username, password, known_hosts.
- name: Post-check - PFC only on priority 3, ECN on, every fabric port up
  module_defaults:
    group/linerate.fabric.switch: "{{ my_switch_connection }}"
  linerate.fabric.switch_info:
    fabric_ports: [swp1, swp2]
    no_drop_priority: 3
    ecn: true
  register: post
  failed_when: post.problems | length > 0
"""

RETURN = r"""
commands:
  description: The commands M(linerate.fabric.switch_config) would push for O(config) (empty when none).
  returned: when O(config) is given
  type: list
  elements: str
running_config:
  description: The running configuration as the switch prints it.
  returned: when O(return_running_config=true)
  type: str
pending:
  description: Descriptions of uncommitted or unconfirmed configuration; empty when none.
  returned: always
  type: list
  elements: str
ports:
  description: Per fabric port, C(up), C(pfc) (priorities with PFC on) and C(ecn), read from the switch.
  returned: always
  type: dict
  sample: {"swp1": {"up": true, "pfc": [3], "ecn": true}}
ports_missing:
  description: Fabric ports the switch does not report.
  returned: always
  type: list
  elements: str
ports_down:
  description: Fabric ports whose link is down.
  returned: always
  type: list
  elements: str
window_lock:
  description:
    - Who holds the switch's change-window lock (user@host, machine id, pid, run, since), read from the switch;
      null when no window holds it. Pending config while it is held is that window's own.
  returned: always
  type: str
earlier_window:
  description:
    - The window an earlier run left in the journal, read with the switch now (null when there is none or
      O(backup_dir) is not given) - C(path) of the journal, its C(entry), C(clean) (the switch is at that
      window's backup, or its confirmed change, with nothing pending, so the journal may be removed) and
      the C(report) sentence.
  returned: always
  type: dict
problems:
  description:
    - The post-check of the fabric ports, one message per fault - missing, down (with O(require_ports_up)),
      PFC not exactly on O(no_drop_priority), ECN not as O(ecn); the check switch_config runs before it
      confirms a push. Empty when every port passes.
  returned: always
  type: list
  elements: str
  sample: ["swp2: link is down", "swp1: PFC on priorities [3, 4] (want [3])"]
"""

from ansible.module_utils.common.warnings import warn
from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import read_only_module
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import delta, oper_problems
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_lock import earlier_window, lock_description


def read(p, driver):
    extra = {}
    # before anything else: a window an earlier run left cut off, and the switch as it is now
    earlier = earlier_window(driver, p["backup_dir"]) if p["backup_dir"] else None
    extra["earlier_window"] = earlier
    if earlier is not None:
        warn(f"switch {p['name']}: {earlier['report']}")
    running = driver.get_running()
    driver.parse(running)  # fails on output that is not a config
    pending = driver.pending()
    # pending state may be a live window's own: the pre-check then names its holder, not only the state
    window_lock = lock_description(driver.lock_read())
    ports = driver.oper(p["fabric_ports"]) if p["fabric_ports"] else {}
    if p["config"] is not None:
        extra["commands"] = delta(driver, p["config"], p["fabric_ports"], running)
    if p["return_running_config"]:
        extra["running_config"] = running
    return dict(
        pending=pending,
        window_lock=window_lock,
        **extra,
        ports={k: {"up": v["up"], "pfc": v["pfc"], "ecn": v["ecn"]} for k, v in ports.items()},
        ports_missing=[x for x in p["fabric_ports"] if x not in ports],
        ports_down=[x for x in p["fabric_ports"] if x in ports and not ports[x]["up"]],
        problems=oper_problems(ports, p["fabric_ports"], None if p["no_drop_priority"] is None else [p["no_drop_priority"]], p["ecn"], p["require_ports_up"]),
    )


def main():
    # an unreachable switch is shown as UNREACHABLE in the recap, not FAILED
    read_only_module(
        read,
        dict(
            return_running_config=dict(type="bool", default=False),
            require_ports_up=dict(type="bool", default=True),
            no_drop_priority=dict(type="int"),
            ecn=dict(type="bool"),
            config=dict(type="str"),
            backup_dir=dict(type="path"),
        ),
        unreachable=True,
    )


if __name__ == "__main__":
    main()
