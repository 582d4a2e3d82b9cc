"""The perftest probe (ib_write_bw / ib_read_bw / ib_send_bw, ib_write_lat / ib_send_lat): the logic of
the ib_write_bw module over a ``Runner`` (module_utils/runner.py): the exact argv, every rail's process at
once with its retries and deadlines, and the parsed result. ``p`` is the module's parameters.

A schedule of rounds (probes/schedule.py) plays one part at a time through ``run_rails``; the two sides
of a pair meet through probes/meeting.py; nccl-tests is probes/nccl_tests.py.
"""

import json
import os
import re
import shutil
import tempfile
import time

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest import parse_ib_send_bw, parse_ib_write_bw
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest_lat import parse_perftest_lat
from ansible_collections.linerate.fabric.plugins.module_utils.probes import meeting

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
        argv = [binary, "-d", test["device"], "-i", str(test.get("ib_port", 1)), "-p", str(test["tcp_port"]), "-F", "-s", str(p["size"])]
        argv += ["-D", str(p["duration"])] if p["duration"] else ["-n", str(p["iterations"])]
        argv += _class_flags(p) + list(p["extra_args"])
        return argv + ([test["server"]] if p["mode"] == "client" else [])
    argv = [
        binary,
        "-d",
        test["device"],
        "-i",
        str(test.get("ib_port", 1)),
        "-p",
        str(test["tcp_port"]),
        "-F",
        "--report_gbits",
        "-q",
        str(p["qps"]),
        "-s",
        str(p["size"]),
    ]
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
    figures = {k: parsed.get(k) for k in ("t_min_usec", "t_typical_usec", "t_avg_usec", "p99_usec", "p99_9_usec", "t_max_usec")}
    average = figures["t_avg_usec"] if figures["t_avg_usec"] is not None else figures["t_typical_usec"]
    return average, {k: v for k, v in figures.items() if v is not None}


def _perftest_result(job, rc, out, err, killed, p, timeout):
    res = {
        "device": job["test"]["device"],
        "tcp_port": job["test"]["tcp_port"],
        "server": job["test"].get("server"),
        "argv": job["argv"],
        "exit_status": rc,
        "stdout": out,
        "stderr": err,
        "attempts": job["attempts"],
        "gbps": None,
        "error": None,
        "parsed": None,
    }
    if job["test"].get("peer_device"):
        res["peer_device"] = job["test"]["peer_device"]  # a cross-rail round: the server's rail
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
    results = run_rails(run, p, p["tests"])
    order = {t["device"]: i for i, t in enumerate(p["tests"])}
    return sorted(results, key=lambda r: order[r["device"]])


# a perftest that printed one of these failed on its own host before any TCP connection:
# its peer would wait for it until a timeout (see run_rails' ``release``)
PRE_CONNECT = re.compile(
    r"Port number \d+ state is|Couldn't set the link layer|IB device \S+ not found|"
    r"No IB devices found|Did not detect devices|Unable to create the needed resources|"
    r"Couldn't allocate MR"
)
RETRY_DELAY = 0.2
POLL = 0.05


def run_rails(run, p, tests, release=False, meet=None, beacon=None, watch=None, stats=None):
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
    rails = _Rails(run, p, tests, release, meet, watch, stats)
    try:
        while True:
            now = time.monotonic()
            if beacon is not None:
                beacon.serve()
            if rails.gate:
                waiting, now = rails.wait_for_peer(now)
                if waiting:
                    time.sleep(POLL)
                    continue
            rails.follow_peer(now)
            rails.meet(now)
            busy = False
            for job in rails.jobs:
                busy = rails.step(job, now) or busy
            if not busy:
                break
            time.sleep(POLL)
    finally:
        rails.close()
    return [job["result"] for job in rails.jobs]


class _Rails:
    """One ``run_rails`` call: its rails' processes (``jobs``), their clocks, the meeting and the peer's watch."""

    def __init__(self, run, p, tests, release, meet, watch, stats):
        self.run, self.p, self.tests, self.release, self.meet_port = run, p, tests, release, meet
        self.watch, self.stats = watch, stats
        binary = run.path(p["tool"])
        self.timeout = p["timeout"] or (p["duration"] or 10) + 60
        now = self.began = time.monotonic()
        self.deadline, self.connect_deadline = now + self.timeout, now + p["connect_timeout"]
        self.tmp = tempfile.mkdtemp(prefix="linerate-perftest-")
        self.serving = p["mode"] == "server"
        # a client behind a meeting starts nothing until its server's node opens it
        self.gate = meet is not None and not self.serving and bool(tests)
        self.opened, self.meet_at = None, now + meeting.MEET_GRACE  # meet_at: the server's meeting not opened yet
        self.jobs = []
        for i, test in enumerate(tests):
            jpath = os.path.join(self.tmp, f"{i}-{test['device']}.json") if p["out_json"] else None
            argv = perftest_argv(binary, p, test, i, jpath)
            self.jobs.append(
                {
                    "test": test,
                    "argv": argv,
                    "json_path": jpath,
                    "attempts": 0,
                    "proc": None if self.gate else run.start(argv),
                    "restart_at": now,
                    "result": None,
                    "stand_in": None,
                    "poke": False,
                }
            )

    def wait_for_peer(self, now):
        """A client behind the meeting: ``(True, now)`` while its server's node has not opened it and
        there is time (the peer's beacon moves the time), else ``(False, now)``: the rails start, their
        clocks from now (the peer's arrival)."""
        p, watch = self.p, self.watch
        met = meeting.poke(self.tests[0]["server"], self.meet_port, meeting.MEET_CONNECT)
        if not met and now < self.connect_deadline:
            state = watch.state(now) if watch else None
            if state in ("behind", "here"):  # alive, not past the round: it is coming
                self.connect_deadline = max(self.connect_deadline, watch.ask_at + p["connect_timeout"])
            elif state == "starting":
                self.connect_deadline = max(self.connect_deadline, watch.start_deadline)
            elif state == "past":  # it gave this round up
                self.connect_deadline = now
            return True, now
        # met, or out of time: the rails start below, their clocks from now (the peer's arrival)
        self.gate, now = False, time.monotonic()
        self.deadline = now + self.timeout
        self.connect_deadline = now + p["connect_timeout"] if met else now
        if self.stats is not None:
            self.stats["peer_wait"] = now - self.began
        for job in self.jobs:
            job["restart_at"] = now
        return False, now

    def follow_peer(self, now):
        """A server whose client's beacon says it is still coming keeps its processes (their deadline moves)."""
        if self.serving and self.watch and any(j["result"] is None for j in self.jobs):
            state = self.watch.state(now)
            if state in ("behind", "starting"):  # its client is still coming
                self.deadline = max(self.deadline, time.monotonic() + self.timeout)
                if self.stats is not None:
                    self.stats["peer_wait"] = time.monotonic() - self.began
            elif state in ("here", "past"):
                self.watch = None  # its client reached the round: no more questions

    def meet(self, now):
        """A server opens the round's meeting once every rail listens (or failed), and closes it at the
        client's connection."""
        if self.serving and self.meet_port is not None and self.meet_at is not None:
            listening = meeting.listening_ports() if now < self.meet_at else None
            if listening is None or all(job["result"] is not None or job["stand_in"] is not None or job["test"]["tcp_port"] in listening for job in self.jobs):
                self.opened, self.meet_at = meeting.listen(self.meet_port), None
        if self.opened is not None and meeting.accept_one(self.opened):
            self.opened.close()
            self.opened = None

    def step(self, job, now):
        """One rail's turn of the poll: its stand-in, its poke, its process (started, restarted, killed
        at the deadline, its result); True while it is busy."""
        if job["stand_in"] is not None:  # a server's stand-in waits for its client
            if meeting.accept_one(job["stand_in"]) or now >= self.deadline:
                job["stand_in"].close()
                job["stand_in"] = None
                return False
            return True
        if job["poke"]:  # a client tells its server not to wait
            if now >= job["restart_at"]:
                done = meeting.poke(job["test"]["server"], job["test"]["tcp_port"])
                job["poke"], job["restart_at"] = not done and now < self.connect_deadline, now + RETRY_DELAY
            return job["poke"]
        if job["result"] is not None:
            return False
        if job["proc"] is None:
            if now >= job["restart_at"]:
                job["proc"] = self.run.start(job["argv"])
            return True
        if job["proc"].poll() is None:
            if now < self.deadline:
                return True
            job["proc"].kill()  # each rail at the deadline, none waited for
        self._finished(job, now)
        return True

    def _finished(self, job, now):
        """A rail's process ended: a client whose server did not listen yet starts again, else its result
        (with ``release``, a rail that failed before any connection does not leave its peer waiting)."""
        p = self.p
        out, err = job["proc"].communicate()
        rc, killed = job["proc"].returncode, job["proc"].returncode < 0 and now >= self.deadline
        rc = None if killed else rc
        job["attempts"] += 1
        text = out + err
        if p["mode"] == "client" and rc not in (0, None) and any(s in text for s in CONNECT_RETRY) and now < self.connect_deadline:
            job["proc"], job["restart_at"] = None, now + RETRY_DELAY
            return
        job["result"] = _perftest_result(job, rc, out, err, killed, p, self.timeout)
        if self.release and rc not in (0, None) and PRE_CONNECT.search(text):
            if p["mode"] == "client":
                job["poke"], job["restart_at"] = True, now
            else:
                job["stand_in"] = meeting.listen(job["test"]["tcp_port"])

    def close(self):
        """Whatever is still open or running: closed, killed; the temporary directory removed."""
        if self.opened is not None:
            self.opened.close()
        for job in self.jobs:
            if job["stand_in"] is not None:
                job["stand_in"].close()
            if job["proc"] is not None and job["proc"].poll() is None:
                job["proc"].kill()
                job["proc"].communicate()
        shutil.rmtree(self.tmp, ignore_errors=True)
