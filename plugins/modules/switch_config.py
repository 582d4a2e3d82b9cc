#!/usr/bin/python
"""Push the fabric intent to a switch as a minimal delta, with backup and rollback."""

DOCUMENTATION = r"""
---
module: switch_config
short_description: Bring a switch's RoCE fabric config to the intent, or restore a backup
description:
  - Reads the switch's running configuration over SSH (netmiko) into facts
    (C(have)), parses the rendered intent (O(config), in the platform's own
    configuration language) with the same parser (C(want)), and computes the
    commands that take C(have) to C(want) (want/have/commands).
  - By default only the managed scope is compared - the QoS objects named
    after O(profile) and, on the O(fabric_ports), MTU, speed, PFC, trust and
    ECN bindings. With O(backup_file) the whole running configuration is
    compared with the backup and made identical to it.
  - Outside check mode it refuses to run while uncommitted configuration is
    pending, writes the running configuration to a timestamped backup (mode
    0600) in O(backup_dir), and pushes only the delta with the platform's
    safe mechanism - NVUE pending revision then C(nv config apply --confirm),
    an EOS C(configure session) with C(commit timer), a SONiC
    C(config checkpoint). It then re-reads the config and the ports'
    operational PFC/ECN/link state; only when these post-checks pass is the
    change confirmed (C(nv config apply --confirm-yes), C(configure session <name> commit),
    C(config save)). A rejected command or a failed post-check rolls back
    (C(nv config detach) or re-apply of the previous revision, session abort,
    C(config rollback)) and the module fails naming the switch.
  - "Connects from the controller; run it with C(connection: local)."
version_added: "0.1.0"
author: linerate developers (@linerate)
extends_documentation_fragment:
  - linerate.fabric.switch_connection
options:
  host:
    description:
      - Address of the switch's SSH service. Required with O(state=replaced); V(rendered) and V(parsed)
        contact no switch and need none.
    type: str
    required: false
  state:
    description:
      - V(replaced) - push the delta that makes the managed scope (the QoS objects the intent owns, the fabric
        ports' QoS, PFC, ECN, MTU and speed) what O(config) says, or restore a backup; the switch is contacted.
      - V(rendered) - the commands O(config) is made of, as the platform takes them, for a switch that has none
        of it (netcommon's C(rendered)); nothing is contacted, no login is needed.
      - V(parsed) - the delta O(config) would push onto the saved running configuration O(running_config)
        (as C(show running-config), C(nv config show -o commands) or C(config_db.json) print it), and the
        managed scope of that configuration as C(parsed); nothing is contacted.
    type: str
    choices: [replaced, rendered, parsed]
    default: replaced
  running_config:
    description: For O(state=parsed) - the path of a saved running configuration of the switch's platform.
    type: path
  fabric_ports:
    description: The switch's fabric ports (from the cabling); the managed scope and the ports post-checked.
    type: list
    elements: str
    default: []
  config:
    description: The rendered intent (C(switch_configs/<platform>/fabric.j2)). Mutually exclusive with O(backup_file).
    type: str
  backup_file:
    description:
      - A backup written by this module; the switch's whole running configuration is made identical to it.
      - Checked before the switch is contacted, see O(restore_backup).
    type: path
  restore_backup:
    description:
      - The backup to restore, chosen in O(backup_dir)/O(name) - a UTC timestamp (V(20261122T040000Z),
        V(20261122T040000Z-1)), V(latest) (the newest pre-window backup; a restore's own
        C(.before-restore.) backups never count), or the path of a backup file.
      - Refused, naming the file and the reason, with nothing sent to the switch - an empty file, a file
        whose C(<name>.sha256) digest does not match (truncated or modified), a malformed digest, a file the
        platform's parser cannot read or that holds no configuration, and, unless O(accept_no_digest), a file
        without a digest. An invalid V(latest) is refused; an older backup is never taken instead.
      - Also refused unless O(allow_deletions) - a restore that would delete settings outside the managed scope
        (hostname, management address, device metadata, users, SNMP/AAA); values it changes are restored.
      - The result (C(commands), C(before), C(after), C(diff), C(command_log), messages) has the
        configuration's secrets masked as C(<redacted-N>); the backups on disk keep them (mode 0600).
    type: str
  accept_no_digest:
    description:
      - Restore a backup that has no C(.sha256) digest file (written before backups had digests). Never allows an
        empty, unparseable or digest-mismatching backup. The role's C(switch_fabric_restore_accept_no_digest).
    type: bool
    default: false
  allow_deletions:
    description:
      - Allow a restore to delete settings outside the managed scope (hostname, management address, users...).
        The role's C(switch_fabric_restore_allow_deletions).
    type: bool
    default: false
  force:
    description:
      - Removed - it both accepted a backup without a digest and allowed deletions outside the scope. Given, the
        module fails naming O(accept_no_digest) and O(allow_deletions), which say each on its own.
    type: raw
  backup_keep:
    description:
      - After a window or restore that wrote a backup, keep the switch's newest O(backup_keep) backups in
        O(backup_dir)/O(name) (pre-window and a restore's own together) and remove the older ones with their
        digests. Never removed - the backup just taken, the newest pre-window backup, and every backup written
        since the switch's controller lock file was made (a window under way or killed before it ended).
      - Unset, every backup is kept. The role's C(switch_fabric_backup_keep).
    type: int
  backup:
    description: Write the running configuration to O(backup_dir) before changing anything.
    type: bool
    default: true
  backup_dir:
    description: Directory of the backups (C(<backup_dir>/<name>/<UTC timestamp>.<platform>.cfg), mode 0600).
    type: path
    default: backups/switches
  backup_label:
    description:
      - V(window) names the backup C(<UTC timestamp>.<platform>.cfg), a pre-window backup.
      - V(restore) (used by the rollback playbook) names it C(<UTC timestamp>.before-restore.<platform>.cfg), so
        that a restore's own backup is never picked as the latest pre-window backup.
    type: str
    choices: [window, restore]
    default: window
  confirm_timeout:
    description: Seconds the switch waits for the confirmation before rolling back by itself (NVUE and EOS).
    type: int
    default: 300
  post_checks:
    description: Check after the push that every fabric port is up, has PFC on exactly O(no_drop_priority), and ECN as O(ecn).
    type: bool
    default: true
  require_ports_up:
    description: Whether a fabric port that is down fails the post-check.
    type: bool
    default: true
  no_drop_priority:
    description: The PFC priority the post-check expects on every fabric port (omit to skip that check).
    type: int
  ecn:
    description: Whether the post-check expects ECN marking on the fabric ports (omit to skip that check).
    type: bool
notes:
  - Check mode is supported - it connects, reads and returns the exact commands
    and a diff, and sends nothing that changes the switch. In check mode
    C(changed) tells whether commands would be applied.
  - Diff mode is supported - the diff is the managed part of the running
    configuration against the intent, in the platform's own form.
  - C(changed) is true only when commands were applied (or, in check mode, would be).
  - SIGINT (Ctrl-C) and SIGTERM (a cancelled AWX job) during the change run the same recovery as any failure
    (back to the backup byte for byte, nothing pending); a second signal waits until the recovery has ended;
    the module then fails saying it was interrupted and where the switch is.
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying the switch.
    support: full
  diff_mode:
    description: Returns the managed configuration before and after (the intent) in the platform's own form.
    support: full
"""

EXAMPLES = r"""
# The whole fabric's commands and host files for an intent, offline: playbooks/render.yml
# (the role's switch_configs/<platform>/fabric.j2 templates need its variables).
- name: Show the commands of an intent for leaf1, without a switch
  linerate.fabric.switch_config:
    state: rendered
    name: leaf1
    platform: nvidia.nvue.nvue
    fabric_ports: [swp1, swp2]
    config: |
      nv set qos pfc linerate switch-priority 3
      nv set qos pfc linerate tx enable
      nv set qos pfc linerate rx enable
      nv set interface swp1 link mtu 9216
      nv set interface swp1 qos pfc profile linerate
      nv set interface swp2 link mtu 9216
      nv set interface swp2 qos pfc profile linerate
  register: leaf1_rendered

- name: The delta against a saved running configuration, without a switch
  linerate.fabric.switch_config:
    state: parsed
    name: leaf1
    platform: nvue
    fabric_ports: [swp1, swp2]
    config: "{{ lookup('ansible.builtin.template', 'switch_configs/nvue/fabric.j2') }}"
    running_config: saved/leaf1.nv-config-commands.txt
  register: leaf1_delta

- name: Push the RoCE fabric intent to the switch
  linerate.fabric.switch_config:
    name: "{{ inventory_hostname }}"
    platform: "{{ ansible_network_os }}"   # nvue, sonic, eos or e.g. arista.eos.eos
    host: "{{ ansible_host }}"
    port: "{{ ansible_port | default(22) }}"
    username: "{{ ansible_user }}"
    password: "{{ ansible_password }}"
    known_hosts: "{{ switch_known_hosts }}"
    fabric_ports: [swp1, swp2]
    config: "{{ lookup('ansible.builtin.template', 'switch_configs/nvue/fabric.j2') }}"
    no_drop_priority: 3
    ecn: true
    backup_dir: /srv/backups/switches

- name: Restore a backup byte for byte
  linerate.fabric.switch_config:
    name: leaf1
    platform: nvue
    host: 127.0.1.1
    username: "{{ ansible_user }}"
    password: "{{ ansible_password }}"
    known_hosts: "{{ switch_known_hosts }}"
    backup_file: /srv/backups/switches/leaf1/20261122T040000Z.nvue.cfg
"""

RETURN = r"""
rendered:
  description: With O(state=rendered), the commands of O(config) for a switch that has none of it.
  returned: state is rendered
  type: list
  elements: str
parsed:
  description: With O(state=parsed), the managed scope of O(running_config) in the platform's own form.
  returned: state is parsed
  type: str
commands:
  description: The exact commands computed (and, outside check mode, sent), in order.
  returned: always
  type: list
  elements: str
  sample: ["nv set qos pfc linerate switch-priority 3", "nv set interface swp1 qos pfc profile linerate"]
before:
  description: The managed part of the running configuration before the change, in the platform's form.
  returned: always
  type: str
after:
  description: The managed part after the change (re-read from the switch; in check mode, the intent).
  returned: always
  type: str
restore_warnings:
  description: What a restore was allowed (no digest, settings deleted outside the managed scope); also shown as warnings.
  returned: when restoring
  type: list
  elements: str
restored_from:
  description: The backup file a restore used (after O(restore_backup) was resolved and checked).
  returned: when restoring
  type: str
backup_path:
  description:
    - Path of the backup written before the push; null when nothing was pushed. Its digest is
      C(<backup_path>.sha256) (C(sha256sum -c) format), both mode 0600, written through a temporary file,
      fsync and an atomic rename; a backup that cannot be written completely stops the window before any change.
  returned: always
  type: str
backups_removed:
  description: The backups (file names in O(backup_dir)/O(name)) removed by O(backup_keep), oldest first.
  returned: when O(backup_keep) is set and a backup was written
  type: list
  elements: str
rolled_back:
  description:
    - On failure, whether the switch was rolled back and now matches its pre-window backup byte for byte with
      nothing pending (no NVUE pending or confirm-pending revision, no EOS config session, no SONiC checkpoint,
      nothing saved). Never null.
    - V(false) also when the failure came before the first change (the switch was not touched; C(changed) is
      V(false) then). When V(false) after a change, C(changed) is V(true) and the message says what is left.
  returned: failure
  type: bool
cleared:
  description: When restoring a backup, the pending state a failed window had left and that was cleared first.
  returned: when something was cleared
  type: list
  elements: str
switch:
  description: The switch's inventory name (on failure and when unreachable).
  returned: failure
  type: str
command_log:
  description: Every command sent to the switch with its output (credentials never appear in it).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.switch.backups import BackupError, load_restore, prune_backups
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError, Unreachable
from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for, platform_of
from ansible_collections.linerate.fabric.plugins.module_utils.switch.journal import watch_controller
from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import CONNECTION_ARGS, command_log, make_driver
from ansible_collections.linerate.fabric.plugins.module_utils.switch.redact import Redactor
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import managed_scope


def offline(module, p):
    """state rendered / parsed: the commands for an intent, or its delta against a saved running config,
    computed by the same driver code a push uses (parse, managed scope, commands); no connection."""
    state = p["state"]
    if not p["config"] or p["backup_file"] or p["restore_backup"]:
        module.fail_json(msg=f"switch {p['name']}: state={state} needs config (the rendered intent) and takes no backup_file or restore_backup")
    if state == "parsed" and not p["running_config"]:
        module.fail_json(msg=f"switch {p['name']}: state=parsed needs running_config (the path of a saved running configuration)")
    if state == "rendered" and p["running_config"]:
        module.fail_json(msg=f"switch {p['name']}: running_config is for state=parsed, not state=rendered")
    try:
        driver = driver_for(platform_of(p["name"], p["platform"]), p["name"], profile=p["profile"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    driver.connect = lambda: module.fail_json(msg=f"switch {p['name']}: state={state} contacts no switch")
    if state == "rendered":
        running = "{}" if driver.platform == "sonic" else ""
    else:
        try:
            with open(p["running_config"], encoding="utf-8") as f:
                running = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            module.fail_json(msg=f"switch {p['name']}: running_config {p['running_config']} cannot be read: {exc}")
        if not running.strip():
            module.fail_json(msg=f"switch {p['name']}: running_config {p['running_config']} is empty")
    try:
        want = driver.parse(p["config"])
        scope = managed_scope(driver, want, p["fabric_ports"])
    except SwitchError as exc:
        module.fail_json(msg=f"{exc} (in config)", switch=p["name"])
    try:
        have = driver.parse(running)
    except SwitchError as exc:
        module.fail_json(msg=f"{exc} (in running_config {p['running_config']})", switch=p["name"])
    commands = driver.commands(want, have, scope)
    if state == "rendered":
        module.exit_json(changed=False, rendered=commands, commands=commands)
    module.exit_json(changed=False, commands=commands, parsed=driver.view(have, scope))


def argument_spec():
    spec = dict(CONNECTION_ARGS)
    spec["host"] = dict(CONNECTION_ARGS["host"], required=False)  # required to reach the switch (replaced)
    spec.update(
        state=dict(type="str", default="replaced", choices=["replaced", "rendered", "parsed"]),
        running_config=dict(type="path"),
        config=dict(type="str"),
        backup_file=dict(type="path"),
        restore_backup=dict(type="str"),
        accept_no_digest=dict(type="bool", default=False),
        allow_deletions=dict(type="bool", default=False),
        force=dict(type="raw"),
        backup_keep=dict(type="int"),
        backup=dict(type="bool", default=True),
        backup_dir=dict(type="path", default="backups/switches"),
        backup_label=dict(type="str", default="window", choices=["window", "restore"]),
        confirm_timeout=dict(type="int", default=300),
        post_checks=dict(type="bool", default=True),
        require_ports_up=dict(type="bool", default=True),
        no_drop_priority=dict(type="int"),
        ecn=dict(type="bool"),
    )
    return spec


def refuse_bad_options(module, p):
    """The options refused before anything else (the retired force, a backup_keep below 1)."""
    if p["force"] is not None:
        module.fail_json(
            msg=f"switch {p['name']}: force is not allowed any more: it was split in two, "
            "accept_no_digest (restore a backup without a .sha256 digest; the role's "
            "switch_fabric_restore_accept_no_digest) and allow_deletions (a restore may delete "
            "settings outside the managed scope; switch_fabric_restore_allow_deletions); nothing "
            "was sent to the switch",
            switch=p["name"],
            changed=False,
        )
    if p["backup_keep"] is not None and p["backup_keep"] < 1:
        module.fail_json(
            msg=f"switch {p['name']}: backup_keep {p['backup_keep']!r} is not allowed (allowed: an "
            "integer >= 1, the backups kept per switch); nothing was sent to the switch",
            switch=p["name"],
            changed=False,
        )


def want_of(module, p, driver, full):
    """(restored_from, the config to apply, warnings): the rendered intent, or for a restore the backup
    file, chosen and checked (not empty, digest, parser) before the switch is contacted."""
    if not full:
        return None, p["config"], []
    try:
        return load_restore(
            p["backup_dir"], p["name"], driver.platform, p["backup_file"] or p["restore_backup"], driver.parse, accept_no_digest=p["accept_no_digest"]
        )
    except BackupError as exc:
        module.fail_json(msg=f"switch {p['name']}: {exc}; nothing was sent to the switch", switch=p["name"], backup=exc.path, rolled_back=False, changed=False)


def apply(module, p, driver, want_text, full, redactor, restored_from):
    """The change window (run_apply); an unreachable switch exits as UNREACHABLE, a failed window fails
    saying whether it rolled back."""
    if not module.check_mode:
        # SIGKILL of ansible-playbook's process group does not reach this process (Ansible's worker called
        # setsid): when the controller ends, the window is cut off and recovers as for SIGTERM
        watch_controller()
    try:
        return run_apply(
            driver,
            want_text,
            ports=p["fabric_ports"],
            check_mode=module.check_mode,
            backup_dir=p["backup_dir"] if p["backup"] else None,
            confirm_timeout=p["confirm_timeout"],
            post_check=p["post_checks"],
            require_up=p["require_ports_up"],
            full=full,
            want_pfc=[p["no_drop_priority"]] if p["no_drop_priority"] is not None else None,
            want_ecn=p["ecn"],
            backup_label=p["backup_label"],
            force=p["allow_deletions"],
            redactor=redactor,
        )
    except Unreachable as exc:  # nothing was touched; shown as UNREACHABLE in the recap, not FAILED
        module.exit_json(unreachable=True, changed=False, msg=str(exc), switch=p["name"], rolled_back=False)
    except SwitchError as exc:
        # rolled_back is never null: a failure before the first change leaves the switch as it was (false,
        # unchanged); after it, true only when read back byte-identical to the backup with nothing pending
        module.fail_json(
            msg=str(exc),
            switch=p["name"],
            command=exc.command,
            output=exc.output,
            rolled_back=bool(exc.rolled_back),
            changed=bool(exc.changed),
            command_log=command_log(driver, redactor),
            restored_from=restored_from,
        )
    finally:
        driver.close()


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        supports_check_mode=True,
        mutually_exclusive=[("config", "backup_file", "restore_backup")],
        required_one_of=[("config", "backup_file", "restore_backup")],
    )
    p = module.params
    refuse_bad_options(module, p)
    if p["state"] != "replaced":
        offline(module, p)
    if not p["host"]:
        module.fail_json(msg=f"switch {p['name']}: host is required to reach the switch (state=replaced); state=rendered or parsed needs none")
    full = bool(p["backup_file"] or p["restore_backup"])
    try:
        driver = make_driver(p)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    restored_from, want_text, warnings = want_of(module, p, driver, full)
    redactor = Redactor(driver.platform) if full else None
    result = apply(module, p, driver, want_text, full, redactor, restored_from)
    warnings += result.pop("warnings", [])
    if p["backup_keep"] is not None and result.get("backup_path"):
        try:
            result["backups_removed"] = prune_backups(p["backup_dir"], p["name"], driver.platform, p["backup_keep"], taken=result["backup_path"])
        except BackupError as exc:  # the change is done and confirmed: a warning, not a failure
            warnings.append(f"old backups not removed: {exc}")
    for w in warnings:
        module.warn(f"switch {p['name']}: {w}")
    if full:
        result["restore_warnings"] = warnings
        result["restored_from"] = restored_from
    diff = result.pop("diff")
    if module._diff:
        result["diff"] = diff
    module.exit_json(command_log=command_log(driver, redactor), **result)


if __name__ == "__main__":
    main()
