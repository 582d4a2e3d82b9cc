"""The authorized_keys options of the launcher's MPI key (stdlib only).

mpirun (Open MPI's ssh launcher) runs ``ssh <node> orted ...``: a command,
no terminal, no agent, no X11 and no port forwarding, and the daemons talk
to mpirun over their own TCP connections. So the key is admitted only from
the cluster's management addresses and with every forwarding and the pty
switched off; mpirun still works.
"""
import ipaddress
import re

RESTRICTIONS = ("no-port-forwarding", "no-agent-forwarding", "no-X11-forwarding", "no-pty")
# A from= pattern that is not an address: a host name, with sshd's * and ? wildcards.
_HOST_PATTERN = re.compile(r"[A-Za-z0-9*?]([A-Za-z0-9*?.-]{0,252}[A-Za-z0-9*?])?", re.ASCII)


def _bad(key, value, allowed):
    return ValueError(f"{key}: {value!r} is not allowed (allowed: {allowed})")


def from_patterns(addresses):
    """Addresses (IPs, CIDR networks or host names) as sshd from= patterns,
    de-duplicated in order. Raises ValueError naming a bad one."""
    if isinstance(addresses, str) or not isinstance(addresses, (list, tuple)) or not addresses:
        raise _bad("verify_fabric_mpi_key_from", addresses, "a non-empty list of management addresses")
    out = []
    for a in addresses:
        if not isinstance(a, str):
            raise _bad("verify_fabric_mpi_key_from", a, "an IP address, a CIDR network or a host name")
        try:
            pattern = str(ipaddress.ip_network(a, strict=False)) if "/" in a else str(ipaddress.ip_address(a))
        except ValueError:
            if not _HOST_PATTERN.fullmatch(a) or a.replace(".", "").isdigit():
                raise _bad("verify_fabric_mpi_key_from", a,
                           "an IP address, a CIDR network or a host name (letters, digits, . - * ?)") from None
            pattern = a
        if pattern not in out:
            out.append(pattern)
    return out


def key_options(addresses):
    """'from="10.0.0.1,10.0.0.2",no-port-forwarding,no-agent-forwarding,no-X11-forwarding,no-pty'"""
    return ",".join([f'from="{",".join(from_patterns(addresses))}"', *RESTRICTIONS])
