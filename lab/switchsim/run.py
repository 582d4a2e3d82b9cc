#!/usr/bin/env python3
"""Start the switch simulators of the lab's fabric model (one process).

    lab/switchsim/run.py --state lab/state [--only leaf1,spine1] [--port 2222]
                         [--credentials FILE] [--pidfile FILE] [--log FILE]

Every switch in fabric.json's ``switches`` listens on its own loopback
``address``:``port`` (``--port`` overrides the port of all of them). The
login is read from ``--credentials`` (JSON {"username", "password"}; default
<state>/switchsim/credentials.json, created with a random password, mode
0600, when missing). Optional public keys: <state>/switchsim/authorized_keys.
Writes <state>/switchsim/known_hosts (the persisted host key for every
address) and the pid file; SIGTERM/SIGINT stop it cleanly.
"""
import argparse
import asyncio
import json
import logging
import os
import secrets
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from server import Simulator  # noqa: E402


def load_credentials(path):
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        creds = {"username": "admin", "password": secrets.token_urlsafe(18)}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(creds, f)
        return creds
    with open(path, encoding="utf-8") as f:
        creds = json.load(f)
    if not creds.get("username") or not creds.get("password"):
        raise SystemExit(f"{path}: needs username and password")
    return creds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state", default=os.environ.get("LINERATE_LAB_STATE"),
                    help="directory holding fabric.json (default: $LINERATE_LAB_STATE)")
    ap.add_argument("--only", default="", help="comma-separated switch names to serve (default: all)")
    ap.add_argument("--port", type=int, default=None, help="listen on this port on every address")
    ap.add_argument("--credentials", default=None)
    ap.add_argument("--pidfile", default=None, help="default: <state>/switchsim/switchsim.pid")
    ap.add_argument("--log", default=None, help="log file (default: stderr)")
    args = ap.parse_args(argv)
    if not args.state:
        ap.error("--state is required (or set LINERATE_LAB_STATE)")
    state = os.path.abspath(args.state)
    logging.basicConfig(filename=args.log, level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    creds = load_credentials(args.credentials or os.path.join(state, "switchsim", "credentials.json"))
    names = {n for n in args.only.split(",") if n} or None
    sim = Simulator(state, names=names, port_override=args.port, credentials=creds)
    pidfile = args.pidfile or os.path.join(state, "switchsim", "switchsim.pid")

    async def serve():
        await sim.start()
        with open(pidfile, "w", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        sim.close()

    try:
        asyncio.run(serve())
    finally:
        if os.path.exists(pidfile):
            os.remove(pidfile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
