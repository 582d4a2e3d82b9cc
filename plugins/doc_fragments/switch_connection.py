"""Documentation shared by the switch modules: how they reach a switch."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  platform:
    description: Switch operating system.
    type: str
    required: true
    choices: [eos, nvue, sonic]
  host:
    description: Address of the switch's SSH service.
    type: str
    required: true
  port:
    description: SSH port.
    type: int
    default: 22
  username:
    description: Login name.
    type: str
    required: true
  private_key_file:
    description: Private key for public-key authentication.
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
