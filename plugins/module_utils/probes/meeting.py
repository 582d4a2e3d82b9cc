"""How the two sides of a perftest pair meet (probes/schedule.py): the round's meeting port, the
beacon that answers the round a node's schedule plays, and what a part learns of its peer from it.

Stdlib only: TCP connections on the rails' own network, /proc/net/tcp for what listens.
"""

import select
import socket
import time


def poke(address, port, timeout=1.0):
    """One TCP connection, closed at once: to a perftest server (its handshake fails, it exits),
    or to a round's meeting port (the peer's servers listen)."""
    try:
        socket.create_connection((address, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def listen(port, address="0.0.0.0"):
    """A listening socket on ``port`` standing in for a server that could not start, or None.

    Every address, as perftest's server listens (``address``: the loopback tests' simulated
    nodes share one host, each its own 127.0.0.x, where a wildcard bind would take the port
    from the other nodes' servers of the same round)."""
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(1)
        sock.setblocking(False)
        return sock
    except OSError:
        return None


def accept_one(sock, answer=None):
    """True once a client connected to a listening socket (a stand-in, a meeting, the beacon): the
    connection is sent ``answer`` when there is one, then closed at once."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        conn = sock.accept()[0]
    except OSError:
        return False
    try:
        if answer is not None:
            conn.sendall(answer)
    except OSError:
        pass
    finally:
        conn.close()
    return True


WILDCARD = ("00000000", "00000000000000000000000000000000")


def listening_ports(address=None):
    """The TCP ports something listens on in this network namespace (/proc/net/tcp, tcp6), or
    None when the kernel's tables cannot be read. ``address`` (an IPv4 address): only the
    sockets bound to it or to every address (the loopback tests' nodes share one host)."""
    mine = set(WILDCARD)
    if address:
        mine.add("%08X" % int.from_bytes(socket.inet_aton(address), "little"))
    ports, read = set(), False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        read = True
        for row in rows:
            cols = row.split()
            if len(cols) > 3 and cols[3] == "0A":  # TCP_LISTEN
                local, port = cols[1].rsplit(":", 1)
                if address is None or local in mine:
                    ports.add(int(port, 16))
    return ports if read else None


# the meeting point: a server opens it when its rails listen, a client waits for it before
# starting its rails (instead of starting them again every RETRY_DELAY while the server is
# not there yet: a perftest start opens the device, registers its memory and, with
# --use_cuda, makes a CUDA context)
MEET_CONNECT = 0.5
MEET_GRACE = 5.0  # a server whose ports never show in /proc/net/tcp opens the meeting anyway

# The beacon: each node's schedule answers, on one TCP port for the whole schedule, the round it
# plays. A part's clock (connect_timeout, timeout) counts from when its peer reached the round,
# not from when this node did: a node whose previous part ended early (an idle round, a pair
# that measured at once) enters the next round while its peer still measures the last one, and
# the rounds are not in lock-step, so the lag can add up over rounds. While the peer's beacon
# answers an earlier round (or answers at all without a round: alive, busy), this side waits
# for it; a peer whose beacon does not answer (not started, or gone) gets connect_timeout, as
# before, and a peer past the round (it gave this round up) none.
BEACON_ASK = 0.5  # how often a waiting side asks its peer's beacon
ALIVE = "alive"  # the peer's beacon took the connection and said nothing in time (busy, not gone)


class Beacon:
    """This node's answer to its peers: the round its schedule plays (``round``)."""

    def __init__(self, port):
        self.round = -1
        self.sock = listen(port) if port else None

    def serve(self):
        """Answer every peer waiting on the beacon (non-blocking)."""
        while self.sock is not None and accept_one(self.sock, b"%d\n" % self.round):
            pass

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def ask_round(address, port, timeout=MEET_CONNECT):
    """The round the peer's schedule plays (its beacon's answer), ALIVE when its beacon took the
    connection but answered nothing in time, None when nothing listens there."""
    try:
        sock = socket.create_connection((address, port), timeout=timeout)
    except OSError:
        return None
    try:
        data = sock.recv(32)
        return int(data.decode().strip())
    except (OSError, ValueError):
        return ALIVE
    finally:
        sock.close()


class Watch:
    """What one part learns of its peer's schedule from the peer's beacon.

    ``seen``: the peers whose beacon answered once in this schedule (shared by its parts);
    ``start_deadline``: until then a peer that never answered counts as still starting (the
    start skew between the nodes' schedules), after it as absent."""

    def __init__(self, address, port, round_id, seen, start_deadline):
        self.address, self.port, self.round = address, port, round_id
        self.seen, self.start_deadline = seen, start_deadline
        self.ask_at = 0.0

    def state(self, now):
        """None when no question is due yet (one every BEACON_ASK s), else the peer's state:
        ``behind`` (alive, in an earlier round or busy), ``here`` (in this round), ``past`` (it
        gave this round up), ``starting`` (never answered, within the start window) or ``absent``."""
        if now < self.ask_at:
            return None
        answer = ask_round(self.address, self.port)
        self.ask_at = time.monotonic() + BEACON_ASK
        if answer is None:
            return "starting" if self.address not in self.seen and now < self.start_deadline else "absent"
        self.seen.add(self.address)
        if answer is ALIVE or answer < self.round:
            return "behind"
        return "here" if answer == self.round else "past"
