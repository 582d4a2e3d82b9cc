#!/usr/bin/env python3
"""The lab's simulated InfiniBand fabric: ibsim net file, start/stop, faults.

    ibsimlab.py netfile  (--model FILE | --inventory DIR) [-o OUT]
    ibsimlab.py start    --run-dir DIR (--model FILE | --inventory DIR) [--port N] [--local]
    ibsimlab.py stop     --run-dir DIR
    ibsimlab.py status   --run-dir DIR
    ibsimlab.py env      --run-dir DIR --node HOST [--device mlx5_0]
    ibsimlab.py fault    --run-dir DIR unlink  SWITCH PORT
    ibsimlab.py fault    --run-dir DIR relink  SWITCH PORT
    ibsimlab.py fault    --run-dir DIR swap    SWITCH PORT_A PORT_B
    ibsimlab.py fault    --run-dir DIR degrade SWITCH PORT [--width W] [--speed SDR|DDR|QDR]
    ibsimlab.py fault    --run-dir DIR counters SWITCH PORT --set COUNTER=VALUE [--set ...]

ibsim (Debian ibsim-utils) simulates the subnet: node records in the
ibnetdiscover-compatible net format; real OpenSM and infiniband-diags reach it
through LD_PRELOAD=libumad2sim.so. Without --local, ibsim runs in remote mode
(-r): UDP, control on PORT, one data socket per client on PORT+1+i, so OpenSM
in a podman container on the lab bridge reaches it at the bridge gateway
address. Clients must all use a non-loopback address (ibsim 0.10 cannot
re-connect a client slot that once served 127.0.0.1 to another address: it
panics). With --local it uses its default abstract unix sockets, which only
clients in the same network namespace can reach.

Faults: unlink/relink/swap go through ibsim's console (a FIFO on its stdin)
at run time — the links change under a running OpenSM, which sees them on its
next sweep, and are recorded in DIR/faults.json so that a regenerated net file
keeps them. ibsim has no console command for width or speed, so degrade
rewrites the net file (per-port w=/s= enable masks on both ends) and restarts
ibsim; attached clients (OpenSM) must then be restarted too.

counters sets a switch port's PortCounters error counters with ibsim's console
command ``PerformanceSet "nodeid"[port] PortCounters.<field>=<value>`` (ibsim
0.10 sim_cmd.c; its console help and replies, e.g. ``leaf1[7]
PortCounters.SymbolErrorCounter has been set to 250``, ``# Can't set
performance counters of base switch port 0``), so the real ibqueryerrors and
perfquery read them; value 0 undoes it. The counters live in ibsim's memory:
a restart (degrade) sets them again from DIR/faults.json.
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sim"))
from linerate_lab import waits  # noqa: E402  (lab/sim: waits bounded by state, not a fixed time)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ibsimnet import (  # noqa: E402,F401
    DEFAULT_SWITCH_PORTS,
    SPEED_MASK,
    WIDTH_MASK,
    apply_faults,
    ca_nodeid,
    find_cable,
    load_inventory,
    model_from_inventory,
    netfile_from_model,
    speed_name,
)

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
DEFAULT_PORT = 7070
# The PortCounters error fields ibsim's PerformanceSet sets (ibsim 0.10 ibsim/sim_cmd.c, the
# field names it matches; the data counters PortXmitData ... are left out: not errors)
PERF_ERROR_COUNTERS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
)


# ------------------------------------------------------------- the simulator
def _paths(run_dir):
    return {
        k: os.path.join(run_dir, v)
        for k, v in {
            "net": "fabric.net",
            "pid": "ibsim.pid",
            "log": "ibsim.log",
            "console": "console.fifo",
            "model": "fabric.json",
            "conf": "ibsim.json",
        }.items()
    }


def read_pid(run_dir):
    try:
        with open(_paths(run_dir)["pid"]) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return pid if waits.pid_alive(pid) else None


def gateway_address():
    """This host's address that lab containers reach (never loopback)."""
    env = os.environ.get("LINERATE_IBSIM_ADDRESS")
    if env:
        return env
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))
        return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()


def _container_argv(c, port, p):
    """ibsim in a container of the lab network: the subnet is reachable from
    the lab's nodes only (remote mode binds every address of its namespace)."""
    labels = [a for k, v in sorted((c.get("labels") or {}).items()) for a in ("--label", f"{k}={v}")]
    return [
        "podman",
        "run",
        "--rm",
        "-i",
        "--init",
        "--name",
        c["name"],
        "--label",
        "linerate-lab=1",
        *labels,
        "--network",
        c["network"],
        "--ip",
        c["ip"],
        "-v",
        f"{os.path.dirname(p['net'])}:/run/ibsim",
        "--workdir",
        "/run/ibsim",
        c["image"],
        "ibsim",
        "-s",
        "-r",
        "-l",
        str(port),
        "/run/ibsim/" + os.path.basename(p["net"]),
    ]


def _remove_container(conf):
    c = (conf or {}).get("container")
    if c:
        subprocess.run(
            ["podman", "rm", "-f", "-t", "2", c["name"]],
            capture_output=True,
            env=dict(os.environ, **({"CONTAINERS_CONF": c["containers_conf"]} if c.get("containers_conf") else {})),
        )


def start(run_dir, model, port=DEFAULT_PORT, local=False, timeout=None, sockname=None, container=None):
    """Start ibsim on the model's net file: here (remote mode on this host's
    address, or --local), or in a container on the lab network (container:
    {name, network, ip, image[, containers_conf]}; remote mode on its ip)."""
    p = _paths(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    if read_pid(run_dir):
        raise SystemExit(f"ibsim already running (pid {read_pid(run_dir)}); stop it first")
    with open(p["model"], "w") as f:
        json.dump(model, f, indent=1, sort_keys=True)
    with open(p["net"], "w") as f:
        f.write(netfile_from_model(apply_faults(model, load_faults(run_dir))))
    if not os.path.exists(p["console"]):
        os.mkfifo(p["console"], 0o600)
    conf = {
        "port": port,
        "local": local,
        "sockname": sockname,
        "address": None if local else (container["ip"] if container else gateway_address()),
        "container": container,
    }
    with open(p["conf"], "w") as f:
        json.dump(conf, f)
    if container:
        _remove_container(conf)  # a leftover of a lab that was not taken down
        cmd = _container_argv(container, port, p)
    else:
        cmd = ["ibsim", "-s"]
        if not local:
            cmd += ["-r", "-l", str(port)]
        cmd.append(p["net"])
    # O_RDWR keeps the FIFO open for reading and writing, so ibsim never
    # reads EOF on its console when a fault writer closes its end.
    fifo = os.open(p["console"], os.O_RDWR | os.O_NONBLOCK)
    os.set_blocking(fifo, True)
    log = open(p["log"], "w")
    env = dict(os.environ)
    if container and container.get("containers_conf"):
        env["CONTAINERS_CONF"] = container["containers_conf"]
    if sockname:  # its own abstract socket names: several local ibsims side by side
        env["IBSIM_SOCKNAME"] = sockname
    proc = subprocess.Popen(cmd, stdin=fifo, stdout=log, stderr=subprocess.STDOUT, cwd=run_dir, start_new_session=True, env=env)
    os.close(fifo)
    log.close()
    with open(p["pid"], "w") as f:
        f.write(f"{proc.pid}\n")
    # bounded by ibsim's state (ready, or exited), not a fixed time a loaded machine misses
    try:
        waits.wait_for(
            f"ibsim (pid {proc.pid}, {run_dir})",
            lambda: True if "Network simulator ready" in open(p["log"]).read() else None,
            lambda: None if proc.poll() is None else f"exited ({proc.returncode}):\n" + open(p["log"]).read()[-2000:],
            deadline=timeout,
        )
    except waits.WaitError as exc:
        if proc.poll() is None:
            stop(run_dir)
        raise SystemExit(str(exc)) from None
    return proc.pid


def stop(run_dir, timeout=5.0):
    p = _paths(run_dir)
    pid = read_pid(run_dir)
    if pid:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and waits.pid_alive(pid):
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                time.sleep(0.05)
            if not waits.pid_alive(pid):
                break
    try:
        with open(p["conf"]) as f:
            _remove_container(json.load(f))
    except (OSError, ValueError):
        pass
    if os.path.exists(p["pid"]):
        os.unlink(p["pid"])
    return pid


def client_env(run_dir, node, device="mlx5_0"):
    """Environment for a libibumad client (opensm, sminfo, ...) attached at node/device."""
    with open(_paths(run_dir)["conf"]) as f:
        conf = json.load(f)
    env = {"LD_PRELOAD": UMAD2SIM, "SIM_HOST": ca_nodeid(node, device)}
    if conf.get("sockname"):
        env["IBSIM_SOCKNAME"] = conf["sockname"]
    if not conf["local"]:
        env["IBSIM_SERVER_NAME"] = conf["address"]
        env["IBSIM_SERVER_PORT"] = str(conf["port"])
    return env


# ----------------------------------------------------------------- faults
def load_faults(run_dir):
    try:
        with open(os.path.join(run_dir, "faults.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return []


def _save_faults(run_dir, faults):
    with open(os.path.join(run_dir, "faults.json"), "w") as f:
        json.dump(faults, f, indent=1)


def console(run_dir, *commands):
    """Send console commands to the running ibsim."""
    if not read_pid(run_dir):
        raise SystemExit("ibsim is not running")
    fd = os.open(_paths(run_dir)["console"], os.O_WRONLY | os.O_NONBLOCK)
    try:
        for c in commands:
            os.write(fd, (c + "\n").encode())
    finally:
        os.close(fd)
    time.sleep(0.3)  # ibsim handles console input between MADs


def parse_counter_settings(settings):
    """["SymbolErrorCounter=250", ...] -> {name: value}; a name ibsim does not set or a bad value exits naming it."""
    out = {}
    for item in settings or []:
        name, sep, value = str(item).partition("=")
        if not sep or name not in PERF_ERROR_COUNTERS:
            raise SystemExit(f"counters: {item!r}: allowed: COUNTER=VALUE with COUNTER one of " + ", ".join(PERF_ERROR_COUNTERS))
        if not value.isdigit() or int(value) > 0xFFFFFFFF:
            raise SystemExit(f"counters: {item!r}: the value must be an integer 0..4294967295")
        out[name] = int(value)
    if not out:
        raise SystemExit("counters: give at least one --set COUNTER=VALUE")
    return out


def perf_set(run_dir, switch, port, counters, timeout=None):
    """Set a switch port's PortCounters on the running ibsim and wait for its answer (an ibsim refusal exits with it)."""
    log = _paths(run_dir)["log"]
    start_at = os.path.getsize(log) if os.path.exists(log) else 0
    console(run_dir, *(f'PerformanceSet "{switch}"[{port}] PortCounters.{name}={value}' for name, value in counters.items()))
    want = [f"{switch}[{port}] PortCounters.{name} has been set to {value}" for name, value in counters.items()]

    def confirmed():
        with open(log, errors="replace") as f:
            f.seek(start_at)
            said = f.read()
        refused = [line.strip() for line in said.splitlines() if re.match(r"^(?:sim> )*#", line.strip())]
        if refused:
            raise SystemExit(f"ibsim refused PerformanceSet on {switch}[{port}]: " + "; ".join(refused))
        return True if all(w in said for w in want) else None

    # bounded by ibsim's state (its answer, or its exit), not a fixed time a loaded machine misses
    try:
        waits.wait_for(
            f"ibsim did not confirm PerformanceSet on {switch}[{port}]",
            confirmed,
            lambda: None if read_pid(run_dir) else f"ibsim is not running ({run_dir})",
            deadline=timeout,
        )
    except waits.WaitError as exc:
        raise SystemExit(str(exc)) from None


def fault(run_dir, kind, switch, ports, width=None, speed=None, timeout=None, counters=None):
    p = _paths(run_dir)
    with open(p["model"]) as f:
        model = json.load(f)
    faults = load_faults(run_dir)
    current = apply_faults(model, faults)
    if kind == "unlink":
        console(run_dir, f'Unlink "{switch}"[{ports[0]}]')
        rec = {"kind": "unlink", "switch": switch, "port": ports[0]}
    elif kind == "relink":
        console(run_dir, f'ReLink "{switch}"[{ports[0]}]')
        rec = {"kind": "relink", "switch": switch, "port": ports[0]}
    elif kind == "swap":
        a, b = ports
        na, nb = find_cable(current, switch, a), find_cable(current, switch, b)
        if not na or not nb:
            raise SystemExit(f"swap needs host cables on {switch} ports {a} and {b}")
        hosts = {ca_nodeid(h, n["device"]): n for h, node in current["nodes"].items() for n in node.get("nics", [])}
        ida = next(k for k, v in hosts.items() if v is na)
        idb = next(k for k, v in hosts.items() if v is nb)
        console(run_dir, f'Unlink "{switch}"[{a}]', f'Unlink "{switch}"[{b}]', f'Link "{switch}"[{a}] "{idb}"[1]', f'Link "{switch}"[{b}] "{ida}"[1]')
        rec = {"kind": "swap", "switch": switch, "ports": [a, b]}
    elif kind == "degrade":
        rec = {"kind": "degrade", "switch": switch, "port": ports[0], "width": width, "speed": speed}
    elif kind == "counters":
        nports = int((model["switches"].get(switch) or {}).get("nports", DEFAULT_SWITCH_PORTS)) if switch in model.get("switches", {}) else None
        if nports is None:
            raise SystemExit(f"counters: {switch!r} is not a switch of the subnet (allowed: {', '.join(sorted(model.get('switches', {})))})")
        if not 1 <= ports[0] <= nports:
            raise SystemExit(f"counters: port {ports[0]} of {switch}: allowed 1..{nports} (ibsim cannot set the base switch port 0's counters)")
        perf_set(run_dir, switch, ports[0], counters)
        faults = [f for f in faults if not (f["kind"] == "counters" and f["switch"] == switch and f["port"] == ports[0])]
        kept = {k: v for k, v in counters.items() if v}
        if kept:
            faults.append({"kind": "counters", "switch": switch, "port": ports[0], "counters": kept})
        _save_faults(run_dir, faults)
        return {"kind": "counters", "switch": switch, "port": ports[0], "counters": counters}
    else:
        raise SystemExit(f"unknown fault {kind}")
    faults.append(rec)
    _save_faults(run_dir, faults)
    if kind == "degrade":  # no console command for width/speed: regenerate + restart
        with open(p["conf"]) as f:
            conf = json.load(f)
        stop(run_dir)
        start(run_dir, model, port=conf["port"], local=conf["local"], timeout=timeout, sockname=conf.get("sockname"), container=conf.get("container"))
        for f in faults:  # the restarted ibsim's counters start at 0: set the recorded ones again
            if f["kind"] == "counters":
                perf_set(run_dir, f["switch"], f["port"], f["counters"])
    return rec


# ---------------------------------------------------------------------- CLI
def _model_arg(args):
    if getattr(args, "model", None):
        with open(args.model) as f:
            return json.load(f)
    if getattr(args, "inventory", None):
        return model_from_inventory(load_inventory(args.inventory))
    raise SystemExit("give --model or --inventory")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("netfile")
    n.add_argument("--model")
    n.add_argument("--inventory")
    n.add_argument("-o", "--output")
    s = sub.add_parser("start")
    s.add_argument("--run-dir", required=True)
    s.add_argument("--model")
    s.add_argument("--inventory")
    s.add_argument("--port", type=int, default=DEFAULT_PORT)
    s.add_argument("--local", action="store_true")
    s.add_argument("--sockname", help="abstract socket base name (local mode; default ibsim)")
    s.add_argument(
        "--timeout", type=float, default=None, help="overall deadline in s of a live ibsim that never gets ready (default: LINERATE_LAB_WAIT_S or 600)"
    )
    for name in ("stop", "status"):
        sub.add_parser(name).add_argument("--run-dir", required=True)
    e = sub.add_parser("env")
    e.add_argument("--run-dir", required=True)
    e.add_argument("--node", required=True)
    e.add_argument("--device", default="mlx5_0")
    f = sub.add_parser("fault")
    f.add_argument("--run-dir", required=True)
    f.add_argument("kind", choices=["unlink", "relink", "swap", "degrade", "counters"])
    f.add_argument("switch")
    f.add_argument("ports", nargs="+", type=int)
    f.add_argument("--width", type=int, choices=sorted(WIDTH_MASK))
    f.add_argument("--speed", choices=sorted(SPEED_MASK))
    f.add_argument("--set", action="append", dest="counters", metavar="COUNTER=VALUE", help="counters: a PortCounters error field and its value (0 undoes)")
    args = ap.parse_args(argv)

    if args.cmd == "netfile":
        text = netfile_from_model(_model_arg(args))
        if args.output:
            with open(args.output, "w") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    elif args.cmd == "start":
        pid = start(args.run_dir, _model_arg(args), args.port, args.local, args.timeout, args.sockname)
        print(f"ibsim running, pid {pid}")
    elif args.cmd == "stop":
        pid = stop(args.run_dir)
        print(f"ibsim stopped (pid {pid})" if pid else "ibsim was not running")
    elif args.cmd == "status":
        pid = read_pid(args.run_dir)
        print(f"running, pid {pid}" if pid else "stopped")
        return 0 if pid else 3
    elif args.cmd == "env":
        for k, v in client_env(args.run_dir, args.node, args.device).items():
            print(f"{k}={v}")
    elif args.cmd == "fault":
        counters = parse_counter_settings(args.counters) if args.kind == "counters" else None
        print(json.dumps(fault(args.run_dir, args.kind, args.switch, args.ports, args.width, args.speed, counters=counters)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
