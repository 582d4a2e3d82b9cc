"""An RDMA port's netdev: administratively up with its rail address (module rdma_netdev).

Read the current state with ``ip -json addr show dev NAME``, plan the ``ip``
commands of the delta, run them only outside check mode and read again.
Tools run through a ``Runner``; a failing ``ip`` raises ``ToolFailure``.
"""

import json

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure


def read(run, name):
    """{up, addresses}: admin state and the global IPv4 addresses (``a.b.c.d/len``, sorted)."""
    argv = ["ip", "-json", "addr", "show", "dev", name]
    rc, out, err = run(argv)
    if rc != 0:
        raise ToolFailure.exited(argv, rc, out, err)
    data = json.loads(out)[0]
    addrs = [f"{a['local']}/{a['prefixlen']}" for a in data.get("addr_info", []) if a.get("family") == "inet" and a.get("scope") == "global"]
    return {"up": "UP" in data.get("flags", []), "addresses": sorted(addrs)}


def plan(name, have, address, exclusive):
    """The ``ip`` arguments of the delta and the state they leave."""
    cmds = []
    want_addrs = list(have["addresses"])
    if exclusive:
        for a in have["addresses"]:
            if a != address:
                cmds.append(["addr", "del", a, "dev", name])
                want_addrs.remove(a)
    if address and address not in have["addresses"]:
        cmds.append(["addr", "add", address, "dev", name])
        want_addrs.append(address)
    if not have["up"]:
        cmds.append(["link", "set", "dev", name, "up"])
    return cmds, {"up": True, "addresses": sorted(want_addrs)}


def ensure(run, name, address, exclusive, check_mode, diff=False):
    """rdma_netdev's result: {changed, before, after, commands[, diff]}; applies the delta outside check mode."""
    before = read(run, name)
    cmds, after = plan(name, before, address, exclusive)
    result = {"changed": bool(cmds), "before": before, "after": after, "commands": [["ip", *c] for c in cmds]}
    if diff:
        result["diff"] = {
            "before": json.dumps(before, indent=1) + "\n",
            "after": json.dumps(after, indent=1) + "\n",
            "before_header": name,
            "after_header": name,
        }
    if cmds and not check_mode:
        for c in cmds:
            rc, out, err = run(["ip", *c])
            if rc != 0:
                raise ToolFailure.exited(["ip", *c], rc, out, err, **result)
        result["after"] = read(run, name)
    return result
