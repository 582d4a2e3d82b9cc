"""Run a lab simulator tool outside the lab: netdev kernel state and hostname come from the environment.

SIM_NETDEVS='{"enp65s0f0np0": {...}}' LINERATE_LAB_NODE=node1 python sim_runner.py ib_write_bw ARGS...
"""

import json
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lab", "sim"))

from linerate_lab import rdma  # noqa: E402

STATES = json.loads(os.environ.get("SIM_NETDEVS", "{}"))
rdma.netdev_state = lambda name: STATES.get(name, {"exists": False, "carrier": False, "mtu": 0, "ipv4": [], "mac": None})
rdma.list_netdevs = lambda: sorted(STATES)
socket.gethostname = lambda: os.environ["LINERATE_LAB_NODE"]

if __name__ == "__main__":
    tool = sys.argv[1]
    from importlib import import_module

    module = import_module(f"linerate_lab.tools.{tool}")
    sys.exit(module.main(sys.argv[2:]))
