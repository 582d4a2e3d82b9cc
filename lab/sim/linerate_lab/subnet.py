"""The InfiniBand lab's subnet: what the subnet manager programs into a port.

On InfiniBand a port's LID, its SM's LID and its logical state (INIT until an
SM configures it, then ACTIVE) are not properties of the cable: the SM sets
them over the subnet. In the lab the subnet is ibsim (lab/ibsim), driven by
the real OpenSM, so the node tools read these from there, with the real
``smpquery`` on the port's own simulated HCA (``SIM_HOST``), as the driver
reads them from the HCA. The trained width and speed come from there too, so
a degraded link in the subnet shows in ibstat. Without ``subnet`` in the
model (unit tests, RoCE) nothing is queried.

One query at a time per node (``QUERY_LOCK``): ibsim serves at most ``IBSIM_MAX_CLIENTS`` (10,
ibsim/ibsim.h) attached clients at once and refuses the next, and every simulated tool that reads a
port attaches one - nccl-tests one rank per GPU is eight processes a node reading their ports
together. A real rank reads its port from its own HCA's driver (ibv_query_port), which has no such
limit: without the lock the lab would fail ranks a real node never fails (a rank that sees no ACTIVE
port falls back to NET/Socket). With the lock a node holds one client at a time, so the lab's nodes
and its two SMs stay under ibsim's ten.

Stdlib only (runs inside the node containers).
"""

import fcntl
import os
import re
import subprocess

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
SMPQUERY = "/opt/linerate-lab/infiniband-diags/usr/sbin/smpquery"
LINK_STATES = {"Down": 1, "Initialize": 2, "Armed": 3, "Active": 4}
PHYS_STATES = {"Sleep": 1, "Polling": 2, "Disabled": 3, "LinkUp": 5, "LinkErrorRecovery": 6}
_FIELD = re.compile(r"^(\w+):\.+(.*)$")
# one subnet query at a time on a node (the module's docstring); the node's own /run
QUERY_LOCK = os.environ.get("LINERATE_LAB_SUBNET_LOCK", "/run/linerate-lab-subnet.lock")


def parse_portinfo(text):
    """smpquery portinfo -> {lid, sm_lid, state, phys_state, width, speed_gbps}."""
    f = {}
    for line in text.splitlines():
        m = _FIELD.match(line.strip())
        if m:
            f[m.group(1)] = m.group(2).strip()
    width = re.match(r"(\d+)X", f.get("LinkWidthActive", ""))
    lane = re.match(r"([\d.]+) Gbps", f.get("LinkSpeedActive", ""))
    return {
        "lid": int(f.get("Lid", "0")),
        "sm_lid": int(f.get("SMLid", "0")),
        "state": LINK_STATES.get(f.get("LinkState"), 1),
        "phys_state": PHYS_STATES.get(f.get("PhysLinkState"), 2),
        "width": int(width.group(1)) if width else None,
        "speed_gbps": round(int(width.group(1)) * float(lane.group(1)), 1) if width and lane else None,
    }


class _one_query_at_a_time:
    """flock on QUERY_LOCK around one smpquery (released when the process ends, whatever happens)."""

    def __enter__(self):
        self.fd = os.open(QUERY_LOCK, os.O_CREAT | os.O_RDWR, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # closing the descriptor drops the lock
        return False


def port_info(m, node_name, nic, timeout=5.0):
    """The port as the subnet has it, or None when the lab has no subnet."""
    sub = m.get("subnet")
    if not sub or nic.get("link_layer") != "InfiniBand":
        return None
    env = dict(
        os.environ, LD_PRELOAD=UMAD2SIM, SIM_HOST=f"{node_name} {nic['device']}", IBSIM_SERVER_NAME=str(sub["address"]), IBSIM_SERVER_PORT=str(sub["port"])
    )
    argv = [SMPQUERY, "-D", "portinfo", "0", str(nic.get("port", 1))]
    try:
        with _one_query_at_a_time():
            res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"subnet not reachable: {e}"}
    if res.returncode != 0:
        return {"error": (res.stderr.strip() or f"smpquery exit {res.returncode}")[-300:]}
    return parse_portinfo(res.stdout)


def refresh_nic(m, node_name, nic):
    """Put the subnet's view of one IB port into the (in-memory) model."""
    if nic.get("cable", "up") != "up":
        return
    info = port_info(m, node_name, nic)
    if info is None:
        return
    if "error" in info:
        nic["subnet_state"] = (1, 2)  # an HCA the subnet cannot see: down, polling
        nic["subnet_error"] = info["error"]
        return
    nic["lid"], nic["sm_lid"] = info["lid"], info["sm_lid"]
    nic["subnet_state"] = (info["state"], info["phys_state"])
    if info["width"]:
        nic["width"] = info["width"]
    if info["speed_gbps"]:
        nic["speed_gbps"] = info["speed_gbps"]


def refresh(m, node_name, node):
    """The same for every port of ``node``."""
    if m.get("subnet"):
        for nic in node.get("nics", []):
            refresh_nic(m, node_name, nic)
