"""The InfiniBand lab's subnet: what the subnet manager programs into a port.

On InfiniBand a port's LID, its SM's LID and its logical state (INIT until an
SM configures it, then ACTIVE) are not properties of the cable: the SM sets
them over the subnet. In the lab the subnet is ibsim (lab/ibsim), driven by
the real OpenSM, so the node tools read these from there, with the real
``smpquery`` on the port's own simulated HCA (``SIM_HOST``), as the driver
reads them from the HCA. The trained width and speed come from there too, so
a degraded link in the subnet shows in ibstat. Without ``subnet`` in the
model (unit tests, RoCE) nothing is queried.

Stdlib only (runs inside the node containers).
"""
import os
import re
import subprocess

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
SMPQUERY = "/opt/linerate-lab/infiniband-diags/usr/sbin/smpquery"
LINK_STATES = {"Down": 1, "Initialize": 2, "Armed": 3, "Active": 4}
PHYS_STATES = {"Sleep": 1, "Polling": 2, "Disabled": 3, "LinkUp": 5, "LinkErrorRecovery": 6}
_FIELD = re.compile(r"^(\w+):\.+(.*)$")


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


def port_info(m, node_name, nic, timeout=5.0):
    """The port as the subnet has it, or None when the lab has no subnet."""
    sub = m.get("subnet")
    if not sub or nic.get("link_layer") != "InfiniBand":
        return None
    env = dict(os.environ, LD_PRELOAD=UMAD2SIM, SIM_HOST=f"{node_name} {nic['device']}",
               IBSIM_SERVER_NAME=str(sub["address"]), IBSIM_SERVER_PORT=str(sub["port"]))
    try:
        res = subprocess.run([SMPQUERY, "-D", "portinfo", "0", str(nic.get("port", 1))], env=env,
                             capture_output=True, text=True, timeout=timeout)
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
        nic["subnet_state"] = (1, 2)   # an HCA the subnet cannot see: down, polling
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
