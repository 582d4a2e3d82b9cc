"""The authorized_keys options of the launcher's MPI key (stdlib only).

mpirun (Open MPI's ssh launcher) runs ``ssh <node> orted ...``: a command,
no terminal, no agent, no X11 and no port forwarding, and the daemons talk
to mpirun over their own TCP connections. So the key is admitted only from
the cluster's management addresses, until an expiry time, and with every
forwarding and the pty switched off; mpirun still works.

sshd(8), AUTHORIZED_KEYS FILE FORMAT (OpenSSH 9.2p1, Debian 12 openssh-server
1:9.2p1-2+deb12u10; expiry-time exists since OpenSSH 8.2):
- ``expiry-time="timespec"``: a YYYYMMDD[Z] date or a YYYYMMDDHHMM[SS][Z]
  time, in the system time zone unless suffixed by Z (UTC).
- ``from="pattern-list"``: the canonical name of the remote host or its IP
  address must match; names are looked up only with ``UseDNS yes`` (the
  default is no), so host names are resolved here, on the controller, to
  the addresses sshd sees.
"""

import datetime
import ipaddress
import re
import socket

RESTRICTIONS = ("no-port-forwarding", "no-agent-forwarding", "no-X11-forwarding", "no-pty")
KEY = "verify_fabric_mpi_key_from"
# A host name as DNS writes it (no wildcards: sshd would match those against names only).
_HOST_NAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?",
    re.ASCII,
)
_TIMESPEC = re.compile(r"([0-9]{8})([0-9]{4}([0-9]{2})?)?(Z?)", re.ASCII)
VALID_HOURS = (1, 720)


def _bad(key, value, allowed):
    return ValueError(f"{key}: {value!r} is not allowed (allowed: {allowed})")


def _lookup(name):
    """The addresses a name resolves to on the controller (IPv4 and IPv6), in order."""
    infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    return [str(ipaddress.ip_address(info[4][0].split("%", 1)[0])) for info in infos]


def from_patterns(addresses, resolve=_lookup):
    """Addresses (IPs, CIDR networks, or host names resolved with ``resolve``)
    as sshd from= patterns, de-duplicated in order. Raises ValueError naming a
    bad one. ``resolve=None`` checks the form only (the intent validation)."""
    if isinstance(addresses, str) or not isinstance(addresses, (list, tuple)) or not addresses:
        raise _bad(KEY, addresses, "a non-empty list of management addresses")
    out = []
    for a in addresses:
        if not isinstance(a, str):
            raise _bad(KEY, a, "an IP address, a CIDR network or a host name")
        try:
            found = [str(ipaddress.ip_network(a, strict=False)) if "/" in a else str(ipaddress.ip_address(a))]
        except ValueError:
            if not _HOST_NAME.fullmatch(a) or a.replace(".", "").isdigit():
                raise _bad(
                    KEY, a, "an IP address, a CIDR network or a host name (letters, digits, . -); sshd matches name patterns only with UseDNS yes"
                ) from None
            if resolve is None:
                continue
            try:
                found = resolve(a)
            except OSError as e:
                raise _bad(
                    KEY, a, f"a host name that resolves to an address here ({e}); sshd's default UseDNS no never matches a name, so from= lists addresses"
                ) from None
            if not found:
                raise _bad(KEY, a, "a host name that resolves to an address") from None
        out += [f for f in found if f not in out]
    return out


def expiry_time(valid_hours=24, now=None, utc=True):
    """The expiry-time timespec ``valid_hours`` from ``now`` (UTC), rounded up
    to the next full hour so every host of a run writes the same line:
    YYYYMMDDHHMMZ (utc) or YYYYMMDDHHMM read in the node's time zone."""
    if isinstance(valid_hours, bool) or not isinstance(valid_hours, int) or not VALID_HOURS[0] <= valid_hours <= VALID_HOURS[1]:
        raise _bad("valid_hours", valid_hours, f"an integer {VALID_HOURS[0]}..{VALID_HOURS[1]}")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    end = now + datetime.timedelta(hours=valid_hours)
    if end.minute or end.second or end.microsecond:
        end = end.replace(minute=0, second=0, microsecond=0) + datetime.timedelta(hours=1)
    return end.strftime("%Y%m%d%H%M") + ("Z" if utc else "")


def check_timespec(value):
    """A timespec as sshd reads it: YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z], a real date and time."""
    m = _TIMESPEC.fullmatch(value) if isinstance(value, str) else None
    ok = m is not None
    if ok:
        digits = m.group(1) + (m.group(2) or "")
        try:
            datetime.datetime.strptime(digits, {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}[len(digits)])
        except ValueError:
            ok = False
    if not ok:
        raise _bad("expiry", value, "YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z] (sshd expiry-time), a real date")
    return value


def key_options(addresses, expiry=None, resolve=_lookup):
    """'from="10.0.0.1,10.0.0.2",expiry-time="202611230900Z",no-port-forwarding,...'
    ``expiry``: a timespec (check_timespec), or None for none."""
    opts = [f'from="{",".join(from_patterns(addresses, resolve))}"']
    if expiry is not None:
        opts.append(f'expiry-time="{check_timespec(expiry)}"')
    return ",".join(opts + list(RESTRICTIONS))
