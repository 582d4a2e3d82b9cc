"""Run the benchmarks of verification: perftest (ib_write_bw / ib_read_bw / ib_send_bw, ib_write_lat /
ib_send_lat) and nccl-tests.

The logic of the ib_write_bw and nccl_tests modules, over a ``Runner``
(module_utils/runner.py): the exact argv, parallel processes and retries,
deadlines, and the parsed result. ``p`` is the module's parameters.
"""
import json
import os
import re
import select
import shutil
import socket
import tempfile
import time

from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import parse_nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest import parse_ib_send_bw, parse_ib_write_bw
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest_lat import parse_perftest_lat
from ansible_collections.linerate.fabric.plugins.module_utils.runner import finish
from ansible_collections.linerate.fabric.plugins.module_utils.checks.nccl import split_log_by_host

# a client whose server does not listen yet prints one of these; it is started again
CONNECT_RETRY = ("Couldn't connect to", "Unable to init the socket connection")


# ---------------------------------------------------------------- perftest

# perftest's latency tests (src/write_lat.c, send_lat.c): one QP, no bandwidth options. Their parser
# refuses -q, -b, -N (perftest_parameters.c, "Multiple QPs only available on bw tests"), and ib_write_lat
# refuses device memory (--use_cuda) from 26.04 on; --report_gbits and --out_json mean nothing there.
LAT_TOOLS = ("ib_write_lat", "ib_send_lat")
BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")


def perftest_argv(binary, p, test, index, json_path=None):
    """The perftest argv of one rail (``test``: device, tcp_port, ib_port, gpu, server).

    A latency test (``p["tool"]`` in LAT_TOOLS) takes ``-s`` (its message size), ``-n`` or ``-D``
    and the class flags, never ``-q``, ``--report_gbits``, ``--use_cuda`` or ``--out_json``."""
    if p.get("tool") in LAT_TOOLS:
        argv = [binary, "-d", test["device"], "-i", str(test.get("ib_port", 1)), "-p", str(test["tcp_port"]),
                "-F", "-s", str(p["size"])]
        argv += ["-D", str(p["duration"])] if p["duration"] else ["-n", str(p["iterations"])]
        argv += _class_flags(p) + list(p["extra_args"])
        return argv + ([test["server"]] if p["mode"] == "client" else [])
    argv = [binary, "-d", test["device"], "-i", str(test.get("ib_port", 1)), "-p", str(test["tcp_port"]),
            "-F", "--report_gbits", "-q", str(p["qps"]), "-s", str(p["size"])]
    if p["duration"]:
        argv += ["-D", str(p["duration"])]
    else:
        argv += ["-n", str(p["iterations"])]
    argv += _class_flags(p)
    if p["use_cuda"]:
        argv += [f"--use_cuda={test.get('gpu', index)}"]
    if json_path:
        argv += ["--out_json", f"--out_json_file={json_path}"]
    argv += list(p["extra_args"])
    if p["mode"] == "client":
        argv.append(test["server"])
    return argv


def _class_flags(p):
    """The GID index, traffic class and service level NCCL uses (``-x``, ``--tclass``, ``-S``)."""
    argv = []
    if p["gid_index"] is not None:
        argv += ["-x", str(p["gid_index"])]
    if p["tclass"] is not None:
        argv += [f"--tclass={p['tclass']}"]
    if p["sl"] is not None:
        argv += ["-S", str(p["sl"])]
    return argv


def latency_figures(parsed):
    """The figures of a latency test's last row: ``latency_usec`` (t_avg; t_typical where an old
    perftest prints no average) and the distribution it printed."""
    figures = {k: parsed.get(k) for k in ("t_min_usec", "t_typical_usec", "t_avg_usec", "p99_usec",
                                          "p99_9_usec", "t_max_usec")}
    average = figures["t_avg_usec"] if figures["t_avg_usec"] is not None else figures["t_typical_usec"]
    return average, {k: v for k, v in figures.items() if v is not None}


def _perftest_result(job, rc, out, err, killed, p, timeout):
    res = {"device": job["test"]["device"], "tcp_port": job["test"]["tcp_port"],
           "server": job["test"].get("server"), "argv": job["argv"], "exit_status": rc, "stdout": out, "stderr": err,
           "attempts": job["attempts"], "gbps": None, "error": None, "parsed": None}
    if job["test"].get("peer_device"):
        res["peer_device"] = job["test"]["peer_device"]   # a cross-rail round: the server's rail
    latency = p.get("tool") in LAT_TOOLS
    if latency:
        res.update(latency_usec=None, latency=None)
    if killed:
        res["error"] = f"killed after {timeout} s" + (" (no client connected)" if p["mode"] == "server" else "")
    try:
        if latency:
            parsed = parse_perftest_lat(out + "\n" + err)
            res["latency_usec"], res["latency"] = latency_figures(parsed)
        else:
            parsed = (parse_ib_send_bw if p.get("tool") == "ib_send_bw" else parse_ib_write_bw)(out + "\n" + err)
            res["gbps"] = parsed["bw_average_gbps"]
        res["parsed"] = parsed
        if rc not in (0, None):
            res["error"] = f"exit status {rc}"
    except ParseError as e:
        res["error"] = res["error"] or str(e).split(": ", 1)[-1]
    if job["json_path"] and os.path.exists(job["json_path"]):
        try:
            with open(job["json_path"]) as f:
                res["json"] = json.load(f)
        except ValueError as e:
            res["json_error"] = str(e)
        os.remove(job["json_path"])
    return res


def run_perftest(run, p):
    """Start every rail's process at once; clients retry until their server listens.

    ``run``: a Runner. Every process is killed at ``p["timeout"]`` (default duration + 60 s);
    returns one result per test, in the order of ``p["tests"]``.
    """
    results = _run_rails(run, p, p["tests"])
    order = {t["device"]: i for i, t in enumerate(p["tests"])}
    return sorted(results, key=lambda r: order[r["device"]])


# a perftest that printed one of these failed on its own host before any TCP connection:
# its peer would wait for it until a timeout (see _run_rails' ``release``)
PRE_CONNECT = re.compile(r"Port number \d+ state is|Couldn't set the link layer|IB device \S+ not found|"
                         r"No IB devices found|Did not detect devices|Unable to create the needed resources|"
                         r"Couldn't allocate MR")
RETRY_DELAY = 0.2
POLL = 0.05


def _poke(address, port, timeout=1.0):
    """One TCP connection, closed at once: to a perftest server (its handshake fails, it exits),
    or to a round's meeting port (the peer's servers listen)."""
    try:
        socket.create_connection((address, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _listen(port, address="0.0.0.0"):
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


def _accept_one(sock, answer=None):
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
            if len(cols) > 3 and cols[3] == "0A":              # TCP_LISTEN
                local, port = cols[1].rsplit(":", 1)
                if address is None or local in mine:
                    ports.add(int(port, 16))
    return ports if read else None


# the meeting point: a server opens it when its rails listen, a client waits for it before
# starting its rails (instead of starting them again every RETRY_DELAY while the server is
# not there yet: a perftest start opens the device, registers its memory and, with
# --use_cuda, makes a CUDA context)
MEET_CONNECT = 0.5
MEET_GRACE = 5.0    # a server whose ports never show in /proc/net/tcp opens the meeting anyway

# The beacon: each node's schedule answers, on one TCP port for the whole schedule, the round it
# plays. A part's clock (connect_timeout, timeout) counts from when its peer reached the round,
# not from when this node did: a node whose previous part ended early (an idle round, a pair
# that measured at once) enters the next round while its peer still measures the last one, and
# the rounds are not in lock-step, so the lag can add up over rounds. While the peer's beacon
# answers an earlier round (or answers at all without a round: alive, busy), this side waits
# for it; a peer whose beacon does not answer (not started, or gone) gets connect_timeout, as
# before, and a peer past the round (it gave this round up) none.
BEACON_ASK = 0.5    # how often a waiting side asks its peer's beacon
ALIVE = "alive"     # the peer's beacon took the connection and said nothing in time (busy, not gone)


def beacon_port(p):
    """This schedule's beacon port: the last port of round 0's stride, None when the rails and the
    meeting port leave it no room (then each side counts its own clock, as without one)."""
    stride = int(p["port_stride"])
    if len(p["tests"]) + 2 > stride:
        return None
    return schedule_port(p["base_port"], 0, stride - 1, stride, p["port_rounds"])


class Beacon:
    """This node's answer to its peers: the round its schedule plays (``round``)."""

    def __init__(self, port):
        self.round = -1
        self.sock = _listen(port) if port else None

    def serve(self):
        """Answer every peer waiting on the beacon (non-blocking)."""
        while self.sock is not None and _accept_one(self.sock, b"%d\n" % self.round):
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


def _run_rails(run, p, tests, release=False, meet=None, beacon=None, watch=None, stats=None):
    """Every rail's process at once, polled: ``p["mode"]`` server or client; one result per test.

    ``meet`` (the schedule): the round's meeting port. A server opens it once every rail's
    server listens (or failed); a client connects to it on its server's address and starts
    its rails only then, or at ``connect_timeout`` (then once: a dead peer costs what it cost
    without the meeting).

    ``beacon`` (the schedule): this node's Beacon, answered while the rails run. ``watch``
    (a Watch on the peer's beacon): while the peer has not reached the round but is alive (or
    still starting), a client waits on at the meeting and a server's processes are not killed
    (their ``timeout`` counts from the peer's arrival); ``stats["peer_wait"]``: the seconds this
    part waited for its peer.

    A client whose server does not listen yet is started again every RETRY_DELAY s until
    ``connect_timeout``; every process is killed at ``timeout``. With ``release`` (the
    schedule: the peer goes on to its next round), a rail that failed on this host before
    any connection (PRE_CONNECT) does not leave its peer waiting for a timeout: a client
    connects once to its server and closes (the server's handshake fails, it exits); a
    server listens in its place and closes the client's connection (the client's handshake
    fails instead of retrying). Both sides then record an error, the failing side's names it.
    """
    binary = run.path(p["tool"])
    timeout = p["timeout"] or (p["duration"] or 10) + 60
    now = began = time.monotonic()
    met = False
    deadline, connect_deadline = now + timeout, now + p["connect_timeout"]
    tmp = tempfile.mkdtemp(prefix="linerate-perftest-")
    serving = p["mode"] == "server"
    # a client behind a meeting starts nothing until its server's node opens it
    gate = meet is not None and not serving and bool(tests)
    meeting, meet_at = None, now + MEET_GRACE   # meet_at: the server's meeting not opened yet
    jobs = []
    for i, test in enumerate(tests):
        jpath = os.path.join(tmp, f"{i}-{test['device']}.json") if p["out_json"] else None
        argv = perftest_argv(binary, p, test, i, jpath)
        jobs.append({"test": test, "argv": argv, "json_path": jpath, "attempts": 0,
                     "proc": None if gate else run.start(argv),
                     "restart_at": now, "result": None, "stand_in": None, "poke": False})
    try:
        while True:
            now = time.monotonic()
            if beacon is not None:
                beacon.serve()
            if gate:
                met = _poke(tests[0]["server"], meet, MEET_CONNECT)
                if not met and now < connect_deadline:
                    state = watch.state(now) if watch else None
                    if state in ("behind", "here"):       # alive, not past the round: it is coming
                        connect_deadline = max(connect_deadline, watch.ask_at + p["connect_timeout"])
                    elif state == "starting":
                        connect_deadline = max(connect_deadline, watch.start_deadline)
                    elif state == "past":                 # it gave this round up
                        connect_deadline = now
                    time.sleep(POLL)
                    continue
                # met, or out of time: the rails start below, their clocks from now (the peer's arrival)
                gate, now = False, time.monotonic()
                deadline = now + timeout
                connect_deadline = now + p["connect_timeout"] if met else now
                if stats is not None:
                    stats["peer_wait"] = now - began
                for job in jobs:
                    job["restart_at"] = now
            if serving and watch and any(j["result"] is None for j in jobs):
                state = watch.state(now)
                if state in ("behind", "starting"):       # its client is still coming
                    deadline = max(deadline, time.monotonic() + timeout)
                    if stats is not None:
                        stats["peer_wait"] = time.monotonic() - began
                elif state in ("here", "past"):
                    watch = None                          # its client reached the round: no more questions
            if serving and meet is not None and meet_at is not None:
                listening = listening_ports() if now < meet_at else None
                if listening is None or all(job["result"] is not None or job["stand_in"] is not None
                                            or job["test"]["tcp_port"] in listening for job in jobs):
                    meeting, meet_at = _listen(meet), None
            if meeting is not None and _accept_one(meeting):
                meeting.close()
                meeting = None
            busy = False
            for job in jobs:
                if job["stand_in"] is not None:          # a server's stand-in waits for its client
                    if _accept_one(job["stand_in"]) or now >= deadline:
                        job["stand_in"].close()
                        job["stand_in"] = None
                    else:
                        busy = True
                    continue
                if job["poke"]:                          # a client tells its server not to wait
                    if now >= job["restart_at"]:
                        done = _poke(job["test"]["server"], job["test"]["tcp_port"])
                        job["poke"], job["restart_at"] = not done and now < connect_deadline, now + RETRY_DELAY
                    busy = busy or job["poke"]
                    continue
                if job["result"] is not None:
                    continue
                busy = True
                if job["proc"] is None:
                    if now >= job["restart_at"]:
                        job["proc"] = run.start(job["argv"])
                    continue
                if job["proc"].poll() is None:
                    if now < deadline:
                        continue
                    job["proc"].kill()                   # each rail at the deadline, none waited for
                out, err = job["proc"].communicate()
                rc, killed = job["proc"].returncode, job["proc"].returncode < 0 and now >= deadline
                rc = None if killed else rc
                job["attempts"] += 1
                text = out + err
                if (p["mode"] == "client" and rc not in (0, None) and any(s in text for s in CONNECT_RETRY)
                        and now < connect_deadline):
                    job["proc"], job["restart_at"] = None, now + RETRY_DELAY
                    continue
                job["result"] = _perftest_result(job, rc, out, err, killed, p, timeout)
                if release and rc not in (0, None) and PRE_CONNECT.search(text):
                    if p["mode"] == "client":
                        job["poke"], job["restart_at"] = True, now
                    else:
                        job["stand_in"] = _listen(job["test"]["tcp_port"])
            if not busy:
                break
            time.sleep(POLL)
    finally:
        if meeting is not None:
            meeting.close()
        for job in jobs:
            if job["stand_in"] is not None:
                job["stand_in"].close()
            if job["proc"] is not None and job["proc"].poll() is None:
                job["proc"].kill()
                job["proc"].communicate()
        shutil.rmtree(tmp, ignore_errors=True)
    return [job["result"] for job in jobs]


# ---------------------------------------------------------------- the schedule

# TCP ports of a schedule: round r's rail i listens on base + (r mod PORT_ROUNDS) x PORT_STRIDE + i,
# so a client of round r can only reach its peer's server of round r, never one still
# listening for an earlier round (the rounds are not in lock-step).
PORT_STRIDE = 16
PORT_ROUNDS = 64


def schedule_port(base_port, round_id, rail, stride=PORT_STRIDE, port_rounds=PORT_ROUNDS):
    """TCP port of ``rail`` in round ``round_id``: ``base + (round mod port_rounds) x stride + rail``.

    Raises ValueError when the rail does not fit the stride, when fewer than two rounds
    have their own ports, or when the range base .. base + port_rounds x stride - 1 leaves 1..65535.
    """
    base_port, round_id, rail, stride, port_rounds = map(int, (base_port, round_id, rail, stride, port_rounds))
    if stride < 1 or not 0 <= rail < stride:
        raise ValueError(f"rail {rail} does not fit {stride} TCP ports a round (port_stride)")
    if port_rounds < 2:
        raise ValueError(f"port_rounds {port_rounds}: consecutive rounds need their own ports (at least 2)")
    top = base_port + port_rounds * stride - 1
    if base_port < 1 or top > 65535:
        raise ValueError(f"TCP ports {base_port}..{top} (base_port + port_rounds x port_stride) "
                         f"must stay within 1..65535")
    if round_id < 0:
        raise ValueError(f"round {round_id} is negative")
    return base_port + (round_id % port_rounds) * stride + rail


def part_tests(tests, part, base_port, stride=PORT_STRIDE, port_rounds=PORT_ROUNDS):
    """The rails' tests of one part: the round's TCP port and, on a client, the peer's address.

    A server listens on each rail's own port. In a cross-rail round (the part's ``shift`` k,
    ``plans.cross_rail_round``) the client's rail i connects to the port of the server's rail
    i + k (perftest's ``-d`` is each side's own: ib_write_bw -d mlx5_0 against a server run with
    -d mlx5_1) and names it ``peer_device``; without a shift, rail i meets rail i."""
    out = []
    shift = int(part.get("shift") or 0) if part["role"] == "client" else 0
    for rail, t in enumerate(tests):
        peer = (rail + shift) % len(tests)
        t = dict(t, tcp_port=schedule_port(base_port, part["round"], peer, stride, port_rounds))
        t.pop("server", None)
        if part["role"] == "client":
            t["server"] = part.get("peer_address") or part["peer"]
        if shift:
            t["peer_device"] = tests[peer]["device"]
        out.append(t)
    return out


def meet_port(p, part):
    """The round's meeting port: the first port of its stride after the rails, None when the
    rails fill the stride (the clients then start again until their servers listen)."""
    rails = len(p["tests"])
    if rails >= int(p["port_stride"]):
        return None
    return schedule_port(p["base_port"], part["round"], rails, p["port_stride"], p["port_rounds"])


def _part_failed(tests, msg):
    return [dict({"device": t["device"], "tcp_port": t["tcp_port"], "server": t.get("server"), "argv": None,
                  "exit_status": None, "attempts": 0, "gbps": None, "error": msg, "parsed": None},
                 **({"peer_device": t["peer_device"]} if t.get("peer_device") else {})) for t in tests]


def run_schedule(run, p, check=False):
    """Play this node's parts in order (``p["parts"]``, see ``plans.schedule_parts``).

    server: one server per rail, each waited for until ``timeout`` (killed when its client
    never comes); client: the clients, each retrying until ``connect_timeout`` while its
    server does not listen yet; idle: nothing. The rounds synchronise through the servers:
    a client's retries wait for its peer to reach the round. A part that fails or times
    out is that part's errors and the next part starts (a dead peer costs its rounds, no
    more). A part's clocks count from its peer's arrival in the round (the Beacon: while the
    peer's schedule answers that it is still in an earlier round, this side waits for it).
    Returns ``[{"round", "role", "peer", "results", "seconds", "peer_wait"}]`` for the server
    and client parts (the records of ``verify_fabric_rdma_log``; ``peer_wait``: seconds spent
    waiting for the peer); with ``check``, each rail's argv and nothing run.
    """
    binary = (run.which(p["tool"]) or p["tool"]) if check else run.path(p["tool"])
    records = []
    port = None if check else beacon_port(p)
    beacon = Beacon(port)
    # a peer whose schedule never answered is still starting until start_timeout (the nodes'
    # schedules start with some skew: forks, SSH, an async start in batches)
    seen, start_deadline = set(), time.monotonic() + (p.get("start_timeout") or p["connect_timeout"])
    try:
        for part in p["parts"]:
            if part["role"] in ("server", "client"):
                watch = Watch(part.get("peer_address") or part["peer"], port, int(part["round"]), seen,
                              start_deadline) if port else None
                records.append(_play_part(run, p, part, binary, check, beacon, watch))
    finally:
        beacon.close()
    return records


def _play_part(run, p, part, binary, check, beacon, watch):
    """One server or client part of the schedule: its record."""
    tests = part_tests(p["tests"], part, p["base_port"], p["port_stride"], p["port_rounds"])
    pp = dict(p, mode=part["role"], tests=tests)
    started = time.monotonic()
    record = {"round": int(part["round"]), "role": part["role"], "peer": part["peer"]}
    beacon.round = record["round"]
    if check:
        record["results"] = [dict({"device": t["device"], "tcp_port": t["tcp_port"], "server": t.get("server"),
                                   "argv": perftest_argv(binary, pp, t, i), "exit_status": None, "gbps": None,
                                   "error": None}, **({"peer_device": t["peer_device"]} if t.get("peer_device")
                                                      else {})) for i, t in enumerate(tests)]
    else:
        stats = {}
        try:
            record["results"] = _run_rails(run, pp, tests, release=True, meet=meet_port(p, part),
                                           beacon=beacon, watch=watch, stats=stats)
        except Exception as e:  # noqa: BLE001 - one part's failure must not end the schedule
            record["error"] = f"{type(e).__name__}: {e}"
            record["results"] = _part_failed(tests, f"part failed: {record['error']}")
        record["peer_wait"] = round(stats.get("peer_wait", 0.0), 1)
    record["seconds"] = round(time.monotonic() - started, 1)
    return record


# ---------------------------------------------------------------- nccl-tests

# The options every module that runs nccl-tests through mpirun (nccl_tests, nccl_tune) takes and
# nccl_argv / run_nccl_tests read the same way; documented once (doc_fragments/nccl_mpirun.py).
NCCL_MPIRUN_ARGS = dict(
    hosts=dict(type="list", elements="str", required=True),
    test=dict(type="str", choices=["all_reduce_perf", "all_gather_perf"], default="all_reduce_perf"),
    gpus=dict(type="int", default=8),
    step_factor=dict(type="int", default=2),
    iterations=dict(type="int", default=20),
    mpirun=dict(type="str", default="mpirun"),
    mpirun_args=dict(type="list", elements="str", default=[]),
    ssh_args=dict(type="str"),
    timeout=dict(type="int", default=600),
)


def nccl_argv(p, mpirun, json_path=None):
    """The mpirun argv: one process per host, each driving ``gpus`` GPUs, ``env`` passed with -x; with
    ``launch: rank_per_gpu``, one rank per GPU of ``layout``, each bound by the per-rank wrapper
    (module_utils/intent/launchers.py)."""
    if p.get("launch") == "rank_per_gpu":
        if not p.get("layout"):
            raise ValueError("launch rank_per_gpu needs the node's layout (the readiness check's GPUs and rails)")
        return launchers.mpirun_argv(p, p["layout"], mpirun, json_path, hca=p.get("hca"))
    # --tag-output: each rank's chunks are tagged, so the parsers join a log line another rank's
    # output cut in two (nccl_log.untangle_tagged) instead of losing it
    argv = [mpirun, "--allow-run-as-root", "-np", str(len(p["hosts"])),
            "-H", ",".join(f"{h}:1" for h in p["hosts"]), "--bind-to", "none", "--map-by", "slot", "--tag-output"]
    if p["ssh_args"]:
        argv += ["--mca", "plm_rsh_args", p["ssh_args"]]
    argv += list(p["mpirun_args"])
    for key, value in sorted((p["env"] or {}).items()):
        argv += ["-x", f"{key}={value}"]
    argv += [p["test"], "-b", p["min_bytes"], "-e", p["max_bytes"], "-f", str(p["step_factor"]),
             "-g", str(p["gpus"]), "-n", str(p["iterations"])]
    if json_path:
        argv += ["-J", json_path]
    return argv


# nccl-tests has -J/--output_file (a JSON result file) only from release 2.17.3 on (NVIDIA/nccl-tests
# src/common.cu longopts, tag v2.17.3); an older binary given -J prints its usage, exits 0 and runs nothing.
# Its own usage (-h, printed before MPI_Init or any GPU work) says which it is.
NCCL_JSON_OPTION = "--output_file"
NCCL_TESTS_HEADER = re.compile(r"^(?:\[[^\]]*\]<std\w+>:)?#\s*nccl-tests version (\S+)", re.M)


def nccl_json_supported(run, test):
    """(True, None) when the installed nccl-tests takes -J; else (False, why): the text table is read instead."""
    try:
        rc, out, err = run([test, "-h"])
    except OSError as e:
        return False, f"{test} -h could not run ({e}); reading the text table"
    text = (out or "") + (err or "")
    if NCCL_JSON_OPTION in text:
        return True, None
    if "USAGE:" in text:
        return False, (f"{test} lists no -J,{NCCL_JSON_OPTION} in its usage (nccl-tests before 2.17.3); "
                       "reading the text table")
    return False, f"{test} -h printed no usage (exit status {rc}); reading the text table"


def largest_busbw(results):
    """Bus bandwidth at the largest size (the better of out-of-place and in-place), None without rows."""
    rows = [r for r in results.get("rows") or [] if (r.get("out_of_place") or {}).get("busbw") is not None]
    if not rows:
        return None
    last = max(rows, key=lambda r: r["size"])
    return max(last["out_of_place"]["busbw"], (last.get("in_place") or {}).get("busbw") or 0)


def run_nccl_tests(run, p):
    """Run nccl-tests through mpirun (killed at ``p["timeout"]``) and parse its table and NCCL's logs."""
    mpirun = run.path(p["mpirun"])
    run.path(p["test"])
    json_path, json_note = None, None
    if p["json"]:
        supported, json_note = nccl_json_supported(run, p["test"])
        if supported:
            fd, json_path = tempfile.mkstemp(prefix="linerate-nccl-", suffix=".json")
            os.close(fd)
    argv = nccl_argv(p, mpirun, json_path)
    rc, out, _err, _killed = finish(run.start(argv, merge_stderr=True), time.monotonic() + p["timeout"])
    out = out or ""
    version = NCCL_TESTS_HEADER.search(out)
    result = dict(changed=False, test=p["test"], argv=argv, exit_status=rc, stdout=out, busbw=None, avg_busbw=None,
                  error=None, parsed=None, logs={}, json_used=json_path is not None, json_note=json_note,
                  nccl_tests_version=version.group(1) if version else None)
    try:
        if json_path and os.path.getsize(json_path) > 0:
            with open(json_path) as f:
                parsed = parse_nccl_tests(f.read())
        else:
            parsed = parse_nccl_tests(out)
        result.update(parsed=parsed, busbw=largest_busbw(parsed), avg_busbw=parsed.get("avg_bus_bandwidth"))
        if parsed.get("failures"):
            result["error"] = "; ".join(parsed["failures"])
    except ParseError as e:
        result["error"] = str(e).split(": ", 1)[-1]
    finally:
        if json_path and os.path.exists(json_path):
            os.remove(json_path)
    if rc is None:
        result["error"] = f"killed after {p['timeout']} s" + (f"; {result['error']}" if result["error"] else "")
    elif rc != 0 and not result["error"]:
        result["error"] = f"mpirun exit status {rc}"
    for host, text in split_log_by_host(out).items():
        try:
            result["logs"][host] = parse_nccl_log(text)
        except ParseError as e:
            result["logs"][host] = {"transport": None, "error": str(e)}
    result["passed"] = result["error"] is None
    return result
