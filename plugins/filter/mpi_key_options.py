"""Filter mpi_key_options: authorized_keys options for the launcher's MPI key."""
from ansible.errors import AnsibleFilterError

from ansible_collections.linerate.fabric.plugins.module_utils import mpikey

DOCUMENTATION = r"""
name: mpi_key_options
author: linerate
version_added: "0.1.0"
short_description: The authorized_keys options that restrict the launcher's MPI key
description:
  - Returns C(from="<addresses>",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty) for the
    C(key_options) of M(ansible.posix.authorized_key).
  - mpirun's ssh launcher runs a command (C(orted)) without a terminal, agent, X11 or port forwarding, so the
    key still serves mpirun and nothing else from anywhere else.
options:
  _input:
    description: The management addresses the launcher connects from (IP addresses, CIDR networks or host
      names; sshd matches host names only with C(UseDNS yes), so prefer addresses).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
key_options: "{{ ['10.0.0.11', '10.0.0.12'] | linerate.fabric.mpi_key_options }}"
# from="10.0.0.11,10.0.0.12",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty
"""

RETURN = r"""
_value:
  description: The options, comma-separated, as authorized_keys writes them before the key.
  type: str
"""


def mpi_key_options(addresses):
    try:
        return mpikey.key_options(addresses)
    except ValueError as e:
        raise AnsibleFilterError(str(e)) from None


class FilterModule:
    def filters(self):
        return {"mpi_key_options": mpi_key_options}
