"""A rail missing at boot leaves the others configured (issue 25 item 6), against the lab.

A converged node reboots (lab fault `reboot`: the container restarts, the drivers start from scratch, so
QoS, ECN and RDMA-CM settings are gone and the netdevs come up bare) with one rail's netdev missing (lab
fault `netdev-missing`). The boot units are one per rail, bound to the netdev's device unit
(linerate-rail@<netdev>, linerate-roce-qos@<netdev>). It is the node's own systemd that starts them: the
lab's udev (lab/sim/linerate_lab/udev.py) announces each netdev to systemd as udevd does, so
sys-subsystem-net-devices-<netdev>.device becomes active when the netdev appears and systemd starts what
is enabled into it.
Then: every other rail is back as site.yml left it (address, MTU, the NIC's QoS) and the missing rail's
units never started; when the netdev appears late (`netdev-appear`: hotplug, a late rename) its units start
and it is configured too; the node is then as converged as before (site.yml on it changes nothing)."""

import json
import time

from conftest import lab_fault, podman_exec, run_playbook

NODE = "node1"
MISSING = "mlx5_1"


def sh(*argv):
    return podman_exec(NODE, *argv)


def nics():
    from linerate_lab import model

    return {n["device"]: n for n in model.load()["nodes"][NODE]["nics"]}


def rail_state(netdev):
    """What the boot units set on one rail: (addresses, MTU, operstate) from the kernel, QoS from the NIC."""
    res = sh("ip", "-json", "addr", "show", "dev", netdev)
    if res.returncode != 0:
        return None
    (link,) = json.loads(res.stdout)
    addrs = sorted(f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a["family"] == "inet")
    return {"addrs": addrs, "mtu": link["mtu"], "up": "UP" in link["flags"]}


def qos(device):
    nic = nics()[device]
    return {k: nic.get(k) for k in ("qos", "ecn", "cma")}


def active(unit):
    return sh("systemctl", "is-active", unit).stdout.strip()


def wait(what, probe, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(1)


def test_a_rail_missing_at_boot_leaves_the_others_configured_and_comes_up_when_it_appears(converged):
    devices = nics()
    before = {d: (rail_state(n["netdev"]), qos(d)) for d, n in devices.items()}
    assert all(s[0]["addrs"] and s[0]["up"] for s in before.values()), before
    gone = devices[MISSING]["netdev"]
    others = [d for d in devices if d != MISSING]
    units = lambda netdev: (f"linerate-rail@{netdev}.service", f"linerate-roce-qos@{netdev}.service")  # noqa: E731
    lab_fault("netdev-missing", NODE, MISSING)
    try:
        lab_fault("reboot", NODE)
        # the drivers started from scratch (the lab's power-on), the netdevs came up bare: all that is
        # back below is the boot units' doing
        for d in others:
            netdev = devices[d]["netdev"]
            wait(f"{NODE} {netdev} configured at boot", lambda netdev=netdev, d=d: (rail_state(netdev), qos(d)) == before[d])
            assert [active(u) for u in units(netdev)] == ["active", "active"]
        assert rail_state(gone) is None
        assert [active(u) for u in units(gone)] == ["inactive", "inactive"]
        assert qos(MISSING) != before[MISSING][1]  # nothing configured the missing rail's NIC

        # the netdev appears late: its units start, the rail is configured like the others
        lab_fault("netdev-appear", NODE, MISSING)
        wait(f"{NODE} {gone} configured when it appeared", lambda: (rail_state(gone), qos(MISSING)) == before[MISSING])
        assert [active(u) for u in units(gone)] == ["active", "active"]
    finally:
        lab_fault("netdev-appear", NODE, MISSING)
    # the node is as converged as before the reboot: a run on it changes nothing
    res = run_playbook("playbooks/site.yml", "--skip-tags", "verify", "--limit", NODE, check=True, timeout=1200)
    recap = res.stdout[res.stdout.index("PLAY RECAP") :]
    assert f"{NODE}" in recap and "changed=0" in recap.split(NODE, 1)[1].split("\n", 1)[0], recap
