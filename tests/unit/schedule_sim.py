"""The ib_write_bw schedule on loopback, for the unit tests (probes/test_schedule.py) and the bench
(bench/schedule_loopback.py): each simulated node is a thread running ``schedule.run_schedule``
with its own 127.0.0.x address and a stand-in perftest that really listens and connects over TCP,
so the rounds synchronise through the servers as on a fabric.
"""

import os
import stat
import sys
import threading
import time

from ansible_collections.linerate.fabric.plugins.module_utils.probes import meeting
from ansible_collections.linerate.fabric.plugins.module_utils.probes import schedule
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans
from ansible_collections.linerate.fabric.plugins.module_utils import runner as runner_mod

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "perftest")

# A stand-in perftest that really talks TCP: the server binds its node's 127.0.0.x address and
# waits for one client, the client connects (refused: perftest's "Couldn't connect" text) and
# both exchange their node names; a device listed in $DOWN fails before any connection, as a
# port that is not ACTIVE does. Each side appends "role node device port peer" to $LOG. The
# client holds the connection for the test's duration times $SCALE.
FAKE = r"""#!{python} -S
import os, socket, sys, time
a = sys.argv[1:]
dev, port, dur = a[a.index("-d") + 1], int(a[a.index("-p") + 1]), int(a[a.index("-D") + 1])
server = a[-1] if a[-1].count(".") == 3 else None  # a client's last argument: its server's address
me, addr, log = os.environ["NODE"], os.environ["ADDR"], os.environ["LOG"]
if dev in os.environ.get("DOWN", "").split():
    print(" Port number 1 state is Down\n Couldn't set the link layer", file=sys.stderr)
    sys.exit(1)
def note(role, peer):
    with open(log, "a") as f:
        f.write(f"{{role}} {{me}} {{dev}} {{port}} {{peer}}\n")
if server is None:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(1)
    print("* Waiting for client to connect... *", flush=True)
    c, _ = s.accept(); s.close()
    peer = c.recv(100).decode()
    if not peer:
        print(" Failed to exchange data between server and clients", file=sys.stderr); sys.exit(1)
    c.sendall(me.encode()); c.recv(10)
    note("server", peer)
    print(open(os.path.join("{fix}", "server_duration_no_banner.txt")).read())
    sys.exit(0)
try:
    c = socket.create_connection((server, port), timeout=2)
except OSError:
    print(f"Couldn't connect to {{server}}:{{port}}\n Unable to init the socket connection", file=sys.stderr)
    sys.exit(1)
c.sendall(me.encode())
peer = c.recv(100).decode()
if not peer:
    print(" Failed to exchange data between server and clients", file=sys.stderr); sys.exit(1)
time.sleep(dur * float(os.environ.get("SCALE", "1")))
c.sendall(b"done")
note("client", peer)
print(open(os.path.join("{fix}", "client_ib_sweep_gbits_25x.txt")).read())
"""


class NodeModule:
    """What Runner needs of AnsibleModule, for one simulated node: its own perftest and environment."""

    def __init__(self, binary):
        self.binary = binary

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return self.binary

    def fail_json(self, **kw):
        raise AssertionError(kw)


def fake_perftest(directory):
    """The stand-in written as ``<directory>/ib_write_bw``, executable; returns its path."""
    path = os.path.join(str(directory), "ib_write_bw")
    with open(path, "w") as f:
        f.write(FAKE.format(python=sys.executable, fix=FIX))
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def play(directory, nodes, addresses, params, patch, absent=(), down=None, start_delay=None, scale=1.0, join_timeout=None):
    """Run every node's schedule at once, one thread a node; returns ({node: records}, log lines
    split into fields, seconds, rounds).

    ``addresses``: {node: 127.0.0.x}; ``params(parts)``: the module's parameters for a node's parts;
    ``patch(obj, name, value)``: how Popen and the listen-table readers are replaced (pytest's
    ``monkeypatch.setattr``, or ``setattr`` in a process of its own); ``absent``: nodes that never
    start; ``down``: {node: devices whose port is down}; ``start_delay``: {node: seconds};
    ``scale``: the share of the test's duration a client holds its connection ({node: share}: each
    node's own, 1 for a node not named).
    """
    binary = fake_perftest(directory)
    log = os.path.join(str(directory), "log")
    open(log, "w").close()
    rounds = plans.round_robin(nodes)
    out, errors = {}, []
    scales = scale if isinstance(scale, dict) else {}
    envs = {
        n: dict(os.environ, NODE=n, ADDR=addresses[n], LOG=log, SCALE=str(scales.get(n, 1.0) if scales else scale), DOWN=" ".join((down or {}).get(n, ())))
        for n in nodes
    }
    local = threading.local()
    popen = runner_mod.subprocess.Popen

    def node_popen(argv, **pkw):
        return popen(argv, **dict(pkw, env=envs[local.node]))

    patch(runner_mod.subprocess, "Popen", node_popen)
    # a server's stand-in (a rail down) listens on its node's address only, as the fake perftest
    # does: on the wildcard it would take the port from another pair's server of the same round
    listen = meeting.listen
    patch(meeting, "listen", lambda port: listen(port, addresses[local.node]))
    # and a server's node sees its own servers listen, not another node's of the same round and port
    ports = meeting.listening_ports
    patch(meeting, "listening_ports", lambda: ports(addresses[local.node]))

    def one(n):
        local.node = n
        time.sleep((start_delay or {}).get(n, 0))
        try:
            parts = plans.schedule_parts(rounds, n, 0, addresses)
            out[n] = schedule.run_schedule(runner_mod.Runner(NodeModule(binary)), params(parts))
        except Exception as e:  # pragma: no cover - shown by the error below
            errors.append((n, e))

    threads = [threading.Thread(target=one, args=(n,)) for n in nodes if n not in absent]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(join_timeout)
    seconds = time.monotonic() - t0
    if errors:
        raise AssertionError(f"nodes failed: {errors}")
    with open(log) as f:
        lines = [line.split() for line in f.read().splitlines()]
    return out, lines, seconds, rounds
