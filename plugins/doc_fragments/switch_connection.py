"""Documentation shared by the switch modules: how they reach a switch (DOCUMENTATION, every switch module) and
what the read-only ones promise and the fabric ports they read (SWITCH_READ_ONLY: switch_info, switch_counters,
switch_lldp, run by module_utils/switch/module_common.py read_only_module). Not READ_ONLY: the slug
linerate.fabric.switch_connection.read_only resolves to doc_fragments/read_only.py (the host modules')."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
requirements:
  - netmiko >= 4.3 and paramiko on the controller (the modules run there, connection local, and reach the switch over SSH)
options:
  name:
    description: Switch name used in messages (and backup paths) - the inventory name.
    type: str
    required: true
  password:
    description: Login password (keep it in vault). Either this or O(private_key_file).
    type: str
  enable_secret:
    description:
      - Arista EOS only - the enable secret (netmiko's C(secret)) sent when the login lands in unprivileged
        exec (a C(>) prompt); the role passes C(ansible_become_password). Keep it in vault; never logged.
      - Without it, a login that is not privileged is still asked to C(enable) (no secret), and one the switch
        refuses fails naming this option.
    type: str
  host_key_checking:
    description: Reject a switch whose host key is not in O(known_hosts). Turn off only for a first contact you verify otherwise.
    type: bool
    default: true
  profile:
    description:
      - Name of the QoS objects the intent owns (NVUE profiles; SONiC map C(<PROFILE>) and WRED profile
        C(<PROFILE>_LOSSLESS)); only the C(switch_config) module writes them, the read-only modules accept it so
        one connection block (module_defaults group C(linerate.fabric.switch)) serves all.
    type: str
    default: linerate
  platform:
    description:
      - Switch operating system, V(nvue), V(sonic) or V(eos); an C(ansible_network_os) value is accepted too,
        short or collection-qualified (V(arista.eos.eos), V(nvidia.nvue.nvue), V(dellemc.enterprise_sonic.sonic),
        V(cumulus)).
    type: str
    required: true
    aliases: [network_os]
  host:
    description: Address of the switch's SSH service.
    type: str
    required: true
  port:
    description: SSH port.
    type: int
    default: 22
  username:
    description: Login name (the role passes C(switch_username), else C(ansible_user)). Required.
    type: str
  private_key_file:
    description: Private key for public-key authentication.
    type: path
  ssh_config_file:
    description:
      - OpenSSH client config file for the connection (netmiko's C(ssh_config_file)), for jump hosts
        (C(ProxyJump) / C(ProxyCommand)) to switches behind a bastion. Host keys are still checked against
        O(known_hosts).
    type: path
  known_hosts:
    description: known_hosts file the switch's SSH host key is checked against.
    type: path
    default: ~/.ssh/known_hosts
  connect_timeout:
    description: Seconds to wait for the TCP connection, banner and authentication.
    type: int
    default: 15
  command_timeout:
    description: Seconds to wait for one command's output.
    type: int
    default: 60
"""

    SWITCH_READ_ONLY = r"""
notes:
  - Read-only; check mode is supported and changes nothing either way.
  - "Connects from the controller; run it with C(connection: local)."
options:
  fabric_ports:
    description:
      - The switch's fabric ports (from the cabling) whose state or counters the module reads.
      - M(linerate.fabric.switch_lldp) returns the neighbours of every port and only accepts it, for symmetry.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Read-only; runs the same in check mode.
    support: full
  diff_mode:
    description: Nothing to diff.
    support: none
"""
