"""The switch simulators for tests/integration/switches/: one simulator process (lab/switchsim/run.py) serving
leaf1 (NVUE), leaf2 (SONiC) and spine1 (EOS) on 127.0.1.1-3 at a free port, from a fabric model in a temp
state dir, with a temp inventory for the playbooks and a driver to read each switch back."""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "lab", "switchsim"))

import topology as gen  # noqa: E402  (puts lab/sim on sys.path)
from linerate_lab import waits  # noqa: E402  (waits bounded by the state they wait for)

from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for  # noqa: E402

SWITCHES = {"leaf1": "nvue", "leaf2": "sonic", "spine1": "eos"}
ADDR = {"leaf1": "127.0.1.1", "leaf2": "127.0.1.2", "spine1": "127.0.1.3"}
PLAYBOOK = os.path.join(REPO, ".venv", "bin", "ansible-playbook")
FAST = ("-e", "switch_fabric_serial=3")  # one batch of all three switches where batching is not under test


def free_port():
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.1.1", 0))
        port = s.getsockname()[1]
        s.close()
        try:
            for a in ("127.0.1.2", "127.0.1.3"):
                t = socket.socket()
                t.bind((a, port))
                t.close()
            return port
        except OSError:
            continue
    raise RuntimeError("no free port on 127.0.1.1-3")


class Lab:
    def __init__(self, tmp):
        self.tmp = tmp
        self.state = os.path.join(tmp, "state")
        self.port = free_port()
        self.model, self.uplinks = gen.write(self.state, nodes=2, port=self.port)
        self.key = os.path.join(tmp, "id_ed25519")
        self.write_client_key()
        self.log = open(os.path.join(tmp, "switchsim.log"), "w")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "lab", "switchsim", "run.py"), "--state", self.state], stdout=self.log, stderr=subprocess.STDOUT
        )
        self.known_hosts = os.path.join(self.state, "switchsim", "known_hosts")
        pidfile = os.path.join(self.state, "switchsim", "switchsim.pid")
        # bounded by the simulator's state: listening (its pid file), or exited; not a fixed time
        waits.wait_for(
            f"switch simulator (pid {self.proc.pid}; log {self.log.name})",
            lambda: True if os.path.exists(pidfile) else None,
            lambda: None if self.proc.poll() is None else f"exited with {self.proc.returncode}",
        )
        with open(os.path.join(self.state, "switchsim", "credentials.json")) as f:
            self.creds = json.load(f)
        self.backups = os.path.join(tmp, "backups")
        self.inventory = self.write_inventory("inv")

    def write_client_key(self):
        import asyncssh

        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(self.key)
        os.chmod(self.key, 0o600)
        os.makedirs(os.path.join(self.state, "switchsim"), exist_ok=True)
        key.write_public_key(os.path.join(self.state, "switchsim", "authorized_keys"))

    def write_inventory(self, name, host_vars=None):
        import yaml

        d = os.path.join(self.tmp, name)
        os.makedirs(os.path.join(d, "group_vars", "switches"), exist_ok=True)
        # The lab's fabric intent: every playbook validates it first.
        os.makedirs(os.path.join(d, "group_vars", "all"), exist_ok=True)
        shutil.copy(os.path.join(REPO, "inventory", "lab", "group_vars", "all", "fabric.yml"), os.path.join(d, "group_vars", "all", "fabric.yml"))
        # ... and the lab switches' own values (the SONiC leaf's SKU, switch_sonic_hwsku: its headroom rows)
        shutil.copy(os.path.join(REPO, "inventory", "lab", "group_vars", "switches", "main.yml"), os.path.join(d, "group_vars", "switches", "main.yml"))
        inv = gen.inventory(self.model, self.uplinks, self.known_hosts)
        for h, hv in (host_vars or {}).items():
            inv["all"]["children"]["switches"]["hosts"][h].update(hv)
        with open(os.path.join(d, "hosts.yml"), "w") as f:
            yaml.safe_dump(inv, f)
        with open(os.path.join(d, "group_vars", "switches", "credentials.yml"), "w") as f:
            yaml.safe_dump({"ansible_password": self.creds["password"]}, f)
        return d

    def play(self, playbook, *args, inventory=None):
        cmd = [PLAYBOOK, "-i", inventory or self.inventory, os.path.join(REPO, "playbooks", playbook), "-e", f"switch_fabric_backup_dir={self.backups}", *args]
        env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="0")
        p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
        return p.returncode, p.stdout + p.stderr

    def running(self, name, **auth):
        auth = auth or {"password": self.creds["password"]}
        d = driver_for(SWITCHES[name], name, host=ADDR[name], port=self.port, username=self.creds["username"], known_hosts=self.known_hosts, **auth)
        try:
            return d.get_running()
        finally:
            d.close()

    def pending(self, name):
        d = driver_for(
            SWITCHES[name],
            name,
            host=ADDR[name],
            port=self.port,
            username=self.creds["username"],
            known_hosts=self.known_hosts,
            password=self.creds["password"],
        )
        try:
            return d.pending()
        finally:
            d.close()

    def backups_of(self, name):
        return sorted(glob.glob(os.path.join(self.backups, name, "*.cfg")))

    def model_port(self, switch, port):
        with open(os.path.join(self.state, "fabric.json")) as f:
            return json.load(f)["switches"][switch]["ports"][port]

    def fault(self, *args):
        p = subprocess.run([sys.executable, os.path.join(REPO, "lab", "switchsim", "fault.py"), "--state", self.state, *args], capture_output=True, text=True)
        # fault.py names the simulator and why (not running, exited, refused, no answer at all)
        assert p.returncode == 0, f"fault.py {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}"
        return p.stdout

    def armed(self, name):
        """The session faults of switch ``name`` still waiting for their command."""
        return json.loads(self.fault(name, "armed"))

    def wait_reached(self, names, proc):
        """Until every armed fault of ``names`` has met its command (the window is in it), or ``proc`` ended."""
        waits.wait_for(
            f"the faults of {', '.join(names)} being reached by the window",
            lambda: True if not any(self.armed(n) for n in names) else None,
            lambda: None if proc.poll() is None else "ansible-playbook ended first",
            interval=0.5,
        )

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)
        self.log.close()
