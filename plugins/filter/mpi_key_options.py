"""Filter mpi_key_options: authorized_keys options for the launcher's MPI key."""

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.module_utils.intent import mpikey

DOCUMENTATION = r"""
name: mpi_key_options
author: linerate
version_added: "0.1.0"
short_description: The authorized_keys options that restrict the launcher's MPI key
description:
  - Returns C(from="<addresses>",expiry-time="<timespec>",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty)
    for the C(key_options) of M(ansible.posix.authorized_key).
  - "C(from=) lists addresses: host names are resolved on the controller, because sshd's default C(UseDNS no)
    never matches a name (sshd(8), AUTHORIZED_KEYS FILE FORMAT)."
  - C(expiry-time) (OpenSSH 8.2 and later) ends the key's use even when the run that lent it never takes it back.
  - mpirun's ssh launcher runs a command (C(orted)) without a terminal, agent, X11 or port forwarding, so the
    key still serves mpirun and nothing else from anywhere else.
options:
  _input:
    description: The management addresses the launcher connects from (IP addresses, CIDR networks, or host
      names, which are resolved to their addresses here).
    type: list
    elements: str
    required: true
  valid_hours:
    description: Hours from now until the key expires, rounded up to the next full hour (1..720).
    type: int
    default: 24
  utc:
    description: Write the expiry in UTC with sshd's C(Z) suffix (documented in sshd(8) of OpenSSH 9.2); false
      writes it without, read in the node's time zone (older sshd).
    type: bool
    default: true
  expiry:
    description: An explicit C(expiry-time) timespec (YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z]) instead of valid_hours;
      C(none) writes no expiry.
    type: str
"""

EXAMPLES = r"""
key_options: "{{ ['10.0.0.11', '10.0.0.12'] | linerate.fabric.mpi_key_options }}"
# from="10.0.0.11,10.0.0.12",expiry-time="202611231000Z",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty
"""

RETURN = r"""
_value:
  description: The options, comma-separated, as authorized_keys writes them before the key.
  type: str
"""


def mpi_key_options(addresses, valid_hours=24, utc=True, expiry=None):
    try:
        if expiry is None:
            expiry = mpikey.expiry_time(valid_hours, utc=utc)
        elif expiry == "none":
            expiry = None
        return mpikey.key_options(addresses, expiry)
    except ValueError as e:
        raise AnsibleFilterError(str(e)) from None


class FilterModule:
    def filters(self):
        return {"mpi_key_options": mpi_key_options}
