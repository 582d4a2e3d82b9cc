#!/usr/bin/env python3
"""linerate lab: a simulated GPU cluster on one machine.

    labctl.py image                 build the node image (debootstrap; no registry)
    labctl.py up [--nodes N]        bring the lab up (idempotent)
    labctl.py status                what is running
    labctl.py fault KIND ARGS...    break one thing on purpose (see `fault --help`)
    labctl.py down                  remove everything the lab made

Nodes are rootful podman containers (systemd as PID 1, sshd) on the lab's own
bridge network. Each simulated NIC's netdev is one end of a veth pair whose
other end lives in the lab's fabric namespace, so carrier, MTU and addresses
are real kernel state; everything the NIC firmware and driver tools report
comes from the fabric model (lab/state/fabric/fabric.json).
"""

import argparse
import os
import shutil
import socket
import sys
import time

from labbase import (
    FABRIC_DIR,
    FABRIC_NETNS,
    HERE,
    IMAGE,
    LAB_ID,
    LOOPBACK_BASE,
    NETWORK,
    PREFIX,
    REPO,  # noqa: F401
    STATE,
    SUBNET,
    log,
    node_ip,
    node_names,
    podman,
    run,
)
from labib import IBSIM_DIR, ib_model_from_inventory, ibsim_address, ibsimlab, start_ibsim  # noqa: F401
from labimage import NODE_PACKAGES, build_image, build_repo, release_mounts  # noqa: F401
from labinventory import GENERATED, IB_CONNECTION_FILE, write_ib_connection, write_inventory, write_known_hosts
from linerate_lab import model, waits

import slurmlab

# ---------------------------------------------------------------- model


def generate_model(nodes, transport, nics, speed):
    """The lab's physical fabric: nodes, their NICs and the switches they plug into."""
    from linerate_lab import hardware, topology

    topo = topology.build(nodes, nics, transport, speed, loopback_base=LOOPBACK_BASE)
    m = {"version": 1, "transport": transport, "nodes": {}, "switches": topo["switches"], "faults": []}
    for i, name in enumerate(node_names(nodes), start=1):
        cabling = topo["cabling"][name]
        node = hardware.new_node(name, i, transport, nics, speed, cabling)
        node["mgmt_ip"] = node_ip(i)
        for nic, cab in zip(node["nics"], cabling):
            # The rail address is the site's plan, not hardware: the inventory
            # is generated with it and the rdma_netdev role configures it.
            nic["address"] = cab.get("address")
        m["nodes"][name] = node
    return m


# ---------------------------------------------------------------- up


def ensure_ssh_material():
    d = os.path.join(STATE, "ssh")
    os.makedirs(d, mode=0o700, exist_ok=True)
    key = os.path.join(d, "id_ed25519")
    if not os.path.exists(key):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "linerate-lab", "-f", key])
    auth = os.path.join(d, "authorized_keys")
    shutil.copyfile(key + ".pub", auth)
    os.chmod(auth, 0o644)
    return key


def ensure_network():
    if podman("network", "exists", NETWORK, check=False).returncode != 0:
        podman("network", "create", "--subnet", SUBNET, "--label", "linerate-lab=1", NETWORK, capture=True)
    if run(["ip", "netns", "list"], capture=True).stdout.split().count(FABRIC_NETNS) == 0:
        run(["ip", "netns", "add", FABRIC_NETNS])
        run(["ip", "-n", FABRIC_NETNS, "link", "set", "lo", "up"])


def ensure_host_limits(nodes):
    """systemd in every node needs inotify instances; the kernel's per-user
    default (128) runs out at about 30 nodes, and a node then hangs at boot.
    Raise the runtime limit (only ever upwards; nothing is written to /etc)."""
    path = "/proc/sys/fs/inotify/max_user_instances"
    want = 512 + 16 * nodes
    try:
        have = int(open(path).read())
        if have < want:
            with open(path, "w") as f:
                f.write(str(want))
            log(f"raised fs.inotify.max_user_instances {have} -> {want} for {nodes} systemd nodes")
    except OSError as e:
        log(f"could not raise fs.inotify.max_user_instances ({e}); large labs may hang at boot")


def container_running(name):
    res = podman("inspect", "-f", "{{.State.Running}}", PREFIX + name, check=False, capture=True)
    return res.returncode == 0 and res.stdout.strip() == "true"


def compile_sim(tag):
    """Byte-compile the simulator with the image's own Python. The nodes mount lab/sim read-only,
    so a module without a current .pyc is compiled again at every start of every simulated tool
    (measured in a node: 0.27 s of CPU a perftest start instead of 0.08 s); compileall skips the
    modules that are current."""
    podman(
        "run",
        "--rm",
        "--network",
        "none",
        "-v",
        f"{os.path.join(HERE, 'sim')}:/usr/lib/linerate-lab",
        tag,
        "python3",
        "-m",
        "compileall",
        "-q",
        "/usr/lib/linerate-lab",
        capture=True,
    )


def start_node(name, node, tag):
    cname = PREFIX + name
    if container_running(name):
        return False
    podman("rm", "-f", cname, check=False, capture=True)
    podman(
        "run",
        "-d",
        "--name",
        cname,
        "--hostname",
        name,
        "--label",
        "linerate-lab=1",
        "--label",
        f"linerate-lab-id={LAB_ID or 'default'}",
        "--network",
        NETWORK,
        "--ip",
        node["mgmt_ip"],
        # SYS_ADMIN for node-init.sh only (it drops it before systemd starts): /sys writable for
        # systemd's device units, every directory in it read-only
        "--systemd=always",
        "--cap-add",
        "NET_ADMIN",
        "--cap-add",
        "SYS_ADMIN",
        # /dev/shm as a host has it (tmpfs, half the memory), not podman's 64 MiB
        "--shm-size",
        "8g",
        "-v",
        f"{os.path.join(HERE, 'sim')}:/usr/lib/linerate-lab:ro",
        "-v",
        f"{FABRIC_DIR}:/var/lib/linerate-lab",
        "-v",
        f"{os.path.join(STATE, 'apt')}:/srv/linerate-apt:ro",
        "-v",
        f"{os.path.join(STATE, 'ssh', 'authorized_keys')}:/root/.ssh/authorized_keys:ro",
        "-v",
        f"{os.path.join(STATE, 'slurm')}:{slurmlab.CONF_DIR}:ro",
        tag,
        "/bin/sh",
        "/usr/lib/linerate-lab/node-init.sh",
        capture=True,
    )
    # A node recreated at its address has a new MAC: the controller's neighbour entry for the
    # old one stays valid for minutes and every connection times out (an integration test met it
    # after a stopped node came back). Forget it; the next packet resolves the new one.
    run(["ip", "neigh", "flush", "to", node["mgmt_ip"]], check=False, capture=True)
    return True


def pid_of(container):
    return podman("inspect", "-f", "{{.State.Pid}}", container, capture=True).stdout.strip()


def peer_name(node, rail):
    return f"{node}-r{rail}"[:15]


def ensure_nics(name, node, container=None, netns=FABRIC_NETNS, peer_prefix=None):
    """Cable each NIC: a veth from the node's namespace into the fabric namespace."""
    container = container or PREFIX + name
    pid = pid_of(container)
    have = podman("exec", container, "ip", "-o", "link", "show", capture=True).stdout
    for rail, nic in enumerate(node["nics"]):
        peer = peer_name(peer_prefix or name, rail)
        if nic.get("netdev_missing"):
            continue  # faults/disruption.py netdev-missing: its driver never announces it
        if f" {nic['netdev']}@" not in have:
            run(["ip", "-n", netns, "link", "del", peer], check=False, capture=True)
            # A NIC port appears with the driver's default MTU, as on real hardware: set at creation,
            # before the lab's udev (linerate_lab/udev.py) starts the units bound to the netdev.
            run(["ip", "link", "add", nic["netdev"], "netns", pid, "address", nic["mac"], "mtu", "1500", "type", "veth", "peer", "name", peer, "netns", netns])
        set_cable(peer_prefix or name, rail, nic.get("cable", "up") == "up", netns)


def reboot_node(name, node):
    """A reboot: the container restarts (systemd boots it: the power-on of linerate-lab-boot, the
    lab's udev coldplugs), then the NIC ports appear as their driver probes them (a netdev marked
    missing stays absent), and sshd answers again."""
    podman("restart", "-t", "10", PREFIX + name, capture=True)
    run(["ip", "neigh", "flush", "to", node["mgmt_ip"]], check=False, capture=True)
    ensure_nics(name, node)
    wait_ssh([name], ensure_ssh_material(), addresses={name: node["mgmt_ip"]})


def set_cable(node, rail, up, netns=FABRIC_NETNS):
    run(["ip", "-n", netns, "link", "set", peer_name(node, rail), "up" if up else "down"])


def ssh_banner(address, port=22, timeout=2.0):
    """Whether sshd answers at address:port from here (the controller's path, not podman exec's)."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            return conn.recv(8).startswith(b"SSH-")
    except OSError:
        return False


def wait_ssh(names, key, deadline=None, addresses=None):
    """Wait for sshd on every node; return known_hosts lines from each node's own key.

    Bounded by the nodes' state (lab/sim/linerate_lab/waits.py), not a fixed time that a
    loaded machine misses: it ends at once when a pending node's container stopped or its
    ssh unit failed, and otherwise waits while the nodes boot (up to LINERATE_LAB_WAIT_S)."""
    pending = set(names)
    lines = {}
    why = {}
    unanswered = set()

    def ready():
        for name in sorted(pending):
            res = podman("exec", PREFIX + name, "cat", "/etc/ssh/ssh_host_ed25519_key.pub", check=False, capture=True)
            if res.returncode == 0 and res.stdout.startswith("ssh-ed25519"):
                active = podman("exec", PREFIX + name, "systemctl", "is-active", "ssh", check=False, capture=True).stdout.strip()
                if active == "active" and addresses and not ssh_banner(addresses[name]):
                    unanswered.add(name)  # not a failure (yet): the path may still be settling
                elif active == "active":
                    unanswered.discard(name)
                    lines[name] = res.stdout.split()[:2]
                    pending.discard(name)
                    why.pop(name, None)
                elif active == "failed":
                    why[name] = "its ssh unit failed (podman exec <node> journalctl -u ssh)"
        return lines if not pending else None

    def gone():
        for name in sorted(pending):
            if not container_running(name):
                why.setdefault(name, f"its container {PREFIX + name} is not running (podman logs {PREFIX + name})")
        return "; ".join(f"{n}: {why[n]}" for n in sorted(why)) or None

    try:
        return waits.wait_for("lab: sshd on the nodes", ready, gone, deadline=deadline, interval=0.5)
    except waits.WaitError as exc:
        silent = f"; sshd active but not answering on port 22 from here: {', '.join(sorted(unanswered & pending))}" if unanswered & pending else ""
        raise SystemExit(f"{exc} (still waiting on: {', '.join(sorted(pending))}{silent})") from None


def cmd_up(args):
    t0 = time.monotonic()
    build_repo()
    tag = build_image()
    os.makedirs(FABRIC_DIR, exist_ok=True)
    key = ensure_ssh_material()
    path = os.path.join(FABRIC_DIR, "fabric.json")
    os.environ["LINERATE_LAB_STATE"] = FABRIC_DIR
    inventory = args.inventory or ("lab-ib" if args.transport == "infiniband" else "lab")
    # a name under inventory/, or a directory path (a copy elsewhere: tests)
    inventory_dir = os.path.abspath(inventory) if os.sep in inventory else os.path.join(REPO, "inventory", inventory)
    ib_fabric = None
    if args.transport == "infiniband":
        m_new, ib_fabric = ib_model_from_inventory(inventory_dir)
        if args.nodes is not None and args.nodes != len(m_new["nodes"]):
            raise SystemExit(f"lab: --nodes {args.nodes}: an InfiniBand lab has the nodes of {inventory_dir}/hosts.yml ({len(m_new['nodes'])})")
    nodes = args.nodes if args.nodes is not None else 4
    if os.path.exists(path):
        m = model.load()
        want = len(m_new["nodes"]) if ib_fabric else nodes
        if len(m["nodes"]) != want or m["transport"] != args.transport:
            raise SystemExit(f"lab: the lab is up with {len(m['nodes'])} {m['transport']} nodes; `make lab-down` first to change it to {want} {args.transport}")
    else:
        m = m_new if ib_fabric else generate_model(nodes, args.transport, args.nics, args.speed)
        model.save_unlocked(m, path)
    ensure_network()
    ensure_host_limits(len(m["nodes"]))
    compile_sim(tag)
    slurmlab.write_config(STATE, m, node_ip(slurmlab.CONTROLLER_INDEX))
    started = [n for n, node in sorted(m["nodes"].items()) if start_node(n, node, tag)]
    start_slurm_controller(tag)
    for name, node in sorted(m["nodes"].items()):
        ensure_nics(name, node)
    addresses = {n: node["mgmt_ip"] for n, node in m["nodes"].items()}
    addresses[slurmlab.CONTROLLER] = node_ip(slurmlab.CONTROLLER_INDEX)
    hostkeys = wait_ssh(sorted(addresses), key, addresses=addresses)
    wait_slurm(m)
    start_services(m)
    if ib_fabric:
        if start_ibsim(ib_fabric, tag):
            log(f"subnet simulator (ibsim) up at {ibsim_address()}:{ibsimlab().DEFAULT_PORT}")
    write_known_hosts(m, hostkeys)
    if ib_fabric:
        inv = write_ib_connection(m, inventory_dir)
    else:
        inv = write_inventory(m, inventory_dir)
    log(f"{len(m['nodes'])} nodes up ({len(started)} started) in {time.monotonic() - t0:.1f} s; inventory {os.path.relpath(inv, REPO)}")


def start_slurm_controller(tag):
    """The lab's Slurm controller in its own container (lab/slurmlab.py). Idempotent."""
    if container_running(slurmlab.CONTROLLER):
        return False
    podman("rm", "-f", PREFIX + slurmlab.CONTROLLER, check=False, capture=True)
    addr = node_ip(slurmlab.CONTROLLER_INDEX)
    podman(*slurmlab.controller_run_args(PREFIX + slurmlab.CONTROLLER, NETWORK, addr, STATE, LAB_ID, tag), capture=True)
    run(["ip", "neigh", "flush", "to", addr], check=False, capture=True)
    return True


def slurm_exec(argv):
    """A command in the Slurm controller's container: (rc, stdout)."""
    res = podman("exec", PREFIX + slurmlab.CONTROLLER, *argv, check=False, capture=True)
    return res.returncode, res.stdout


def wait_slurm(m):
    """Every node's slurmd registered with slurmctld; nodes a previous lab left DOWN are resumed
    (ReturnToService=2 returns only those that were down for not responding)."""
    nodes = sorted(m["nodes"])
    slurmlab.wait_registered(slurm_exec, nodes, lambda: container_running(slurmlab.CONTROLLER))
    log(f"Slurm: slurmctld on {slurmlab.CONTROLLER} ({node_ip(slurmlab.CONTROLLER_INDEX)}), slurmd on {slurmlab.node_range(nodes)}")


def start_services(m):
    """Simulators that run beside the nodes (switches); each part registers here."""
    from linerate_lab import services

    services.start_all(m, STATE)


def cmd_repo(args):
    build_repo()


def cmd_molecule_prepare(args):
    """Give a molecule container what a lab node has: a fabric model of its own
    (one node, named after the container's hostname) and cabled NICs."""
    state = os.path.abspath(args.state)
    os.makedirs(state, exist_ok=True)
    os.environ["LINERATE_LAB_STATE"] = state
    hostname = podman("inspect", "-f", "{{.Config.Hostname}}", args.container, capture=True).stdout.strip()
    path = os.path.join(state, "fabric.json")
    if not os.path.exists(path):
        m = generate_model(1, args.transport, 2, 400)
        m["nodes"] = {hostname: m["nodes"].pop("node1")}
        model.save_unlocked(m, path)
    m = model.load()
    netns = "linerate-molecule"
    if netns not in run(["ip", "netns", "list"], capture=True).stdout.split():
        # scenarios run side by side (make molecule): another may add it between the look and the add
        res = run(["ip", "netns", "add", netns], check=False, capture=True)
        if res.returncode != 0 and netns not in run(["ip", "netns", "list"], capture=True).stdout.split():
            raise SystemExit(f"lab: cannot add network namespace {netns}: {res.stderr.strip()}")
    ensure_nics(hostname, m["nodes"][hostname], container=args.container, netns=netns, peer_prefix=f"m{pid_of(args.container)}")
    log(f"molecule instance {args.container} ({hostname}) cabled; model in {state}")


# ---------------------------------------------------------------- status / down


def lab_containers():
    res = podman("ps", "-a", "--filter", f"label=linerate-lab-id={LAB_ID or 'default'}", "--format", "{{.Names}} {{.Status}}", capture=True, check=False)
    return [line.split(" ", 1) for line in res.stdout.splitlines() if line.strip()]


def cmd_status(args):
    rows = lab_containers()
    if not rows:
        print("lab: down")
        return 1
    for name, status in rows:
        print(f"{name:24} {status}")
    return 0


def cmd_down(args):
    from linerate_lab import services

    services.stop_all(STATE)
    if os.path.isdir(IBSIM_DIR):
        ibsimlab().stop(IBSIM_DIR)
    names = [n for n, _ in lab_containers()]
    if names:
        podman("rm", "-f", "-t", "2", *names, capture=True, check=False)
    if podman("network", "exists", NETWORK, check=False).returncode == 0:
        podman("network", "rm", "-f", NETWORK, capture=True, check=False)
    run(["ip", "netns", "del", FABRIC_NETNS], check=False, capture=True)
    if not LAB_ID:
        run(["ip", "netns", "del", "linerate-molecule"], check=False, capture=True)
    if args.image:
        res = podman("images", "--format", "{{.Repository}}:{{.Tag}}", capture=True, check=False)
        for ref in res.stdout.split():
            if ref.startswith(IMAGE + ":"):
                podman("rmi", "-f", ref, capture=True, check=False)
    release_mounts(STATE)
    shutil.rmtree(STATE, ignore_errors=True)
    for inv in ("lab", "lab-ib"):
        for name in ("hosts.yml", IB_CONNECTION_FILE):
            p = os.path.join(REPO, "inventory", inv, name)
            # Only what `up` generated (its first comment lines say so) for
            # this lab (it names this lab's SSH key): another lab's stays.
            if os.path.exists(p):
                text = open(p).read()
                if GENERATED in text[:200] and os.path.join(STATE, "ssh") in text:
                    os.remove(p)
    log("down: containers, network, fabric namespace and lab state removed" + (", image too" if args.image else ""))


# ---------------------------------------------------------------- faults


def cmd_fault(args):
    from linerate_lab import faults

    os.environ["LINERATE_LAB_STATE"] = FABRIC_DIR
    msg = faults.apply(args.kind, args.args, lab=sys.modules[__name__])
    log(msg)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="labctl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("image", help="build the node image")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=lambda a: (build_repo(), build_image(a.force)) and None)
    s = sub.add_parser("up", help="bring the lab up (idempotent)")
    s.add_argument(
        "--nodes",
        type=int,
        default=int(os.environ["LAB_NODES"]) if os.environ.get("LAB_NODES") else None,
        help="RoCE: how many nodes (default 4); InfiniBand: the inventory's",
    )
    s.add_argument("--nics", type=int, default=2, help="NICs (rails) per node")
    s.add_argument("--speed", type=int, default=400, help="port speed in Gb/s")
    s.add_argument("--transport", choices=("roce", "infiniband"), default="roce")
    s.add_argument(
        "--inventory",
        help="inventory/<name> or a directory: RoCE writes its hosts.yml (default lab); InfiniBand builds the lab from its hosts.yml (default lab-ib)",
    )
    s.set_defaults(func=cmd_up)
    s = sub.add_parser("repo", help="build the local DOCA-OFED repository of simulator packages")
    s.set_defaults(func=cmd_repo)
    s = sub.add_parser("molecule-prepare", help="cable a molecule container like a lab node")
    s.add_argument("container")
    s.add_argument("--state", required=True, help="directory for the instance's fabric model")
    s.add_argument("--transport", choices=("roce", "infiniband"), default="roce")
    s.set_defaults(func=cmd_molecule_prepare)
    s = sub.add_parser("status")
    s.set_defaults(func=cmd_status)
    s = sub.add_parser("down", help="remove the lab")
    s.add_argument("--image", action="store_true", help="remove the node image too")
    s.set_defaults(func=cmd_down)
    s = sub.add_parser("fault", help="inject a fault: port-down NODE DEV | port-up NODE DEV | ...")
    s.add_argument("kind")
    s.add_argument("args", nargs="*")
    s.set_defaults(func=cmd_fault)
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("lab: needs root (rootful podman, network namespaces)")
    if args.cmd == "up" and args.nodes is not None and not 1 <= args.nodes <= 64:
        raise SystemExit(f"lab: --nodes {args.nodes} is not allowed (allowed: 1..64)")
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
