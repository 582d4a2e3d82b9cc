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
    results = run_rails(run, p, p["tests"])
    order = {t["device"]: i for i, t in enumerate(p["tests"])}
    return sorted(results, key=lambda r: order[r["device"]])


# a perftest that printed one of these failed on its own host before any TCP connection:
# its peer would wait for it until a timeout (see run_rails' ``release``)
PRE_CONNECT = re.compile(r"Port number \d+ state is|Couldn't set the link layer|IB device \S+ not found|"
                         r"No IB devices found|Did not detect devices|Unable to create the needed resources|"
                         r"Couldn't allocate MR")
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
    binary = run.path(p["tool"])
    timeout = p["timeout"] or (p["duration"] or 10) + 60
    now = began = time.monotonic()
    met = False
    deadline, connect_deadline = now + timeout, now + p["connect_timeout"]
    tmp = tempfile.mkdtemp(prefix="linerate-perftest-")
    serving = p["mode"] == "server"
    # a client behind a meeting starts nothing until its server's node opens it
    gate = meet is not None and not serving and bool(tests)
    opened, meet_at = None, now + meeting.MEET_GRACE   # meet_at: the server's meeting not opened yet
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
                met = meeting.poke(tests[0]["server"], meet, meeting.MEET_CONNECT)
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
                listening = meeting.listening_ports() if now < meet_at else None
                if listening is None or all(job["result"] is not None or job["stand_in"] is not None
                                            or job["test"]["tcp_port"] in listening for job in jobs):
                    opened, meet_at = meeting.listen(meet), None
            if opened is not None and meeting.accept_one(opened):
                opened.close()
                opened = None
            busy = False
            for job in jobs:
                if job["stand_in"] is not None:          # a server's stand-in waits for its client
                    if meeting.accept_one(job["stand_in"]) or now >= deadline:
                        job["stand_in"].close()
                        job["stand_in"] = None
                    else:
                        busy = True
                    continue
                if job["poke"]:                          # a client tells its server not to wait
                    if now >= job["restart_at"]:
                        done = meeting.poke(job["test"]["server"], job["test"]["tcp_port"])
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
                        job["stand_in"] = meeting.listen(job["test"]["tcp_port"])
            if not busy:
                break
            time.sleep(POLL)
    finally:
        if opened is not None:
            opened.close()
        for job in jobs:
            if job["stand_in"] is not None:
                job["stand_in"].close()
            if job["proc"] is not None and job["proc"].poll() is None:
                job["proc"].kill()
                job["proc"].communicate()
        shutil.rmtree(tmp, ignore_errors=True)
    return [job["result"] for job in jobs]
