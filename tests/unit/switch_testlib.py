"""Helpers for the switch unit tests: imports, template rendering, fakes."""

import os
import sys
import time

import jinja2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "switch")
sys.path.insert(0, os.path.join(ROOT, ".collections"))
sys.path.insert(0, os.path.join(ROOT, "lab", "switchsim"))

from ansible.plugins.filter.core import FilterModule  # noqa: E402
from ansible_collections.linerate.fabric.plugins.filter.switch_fabric import FilterModule as SwitchFilters  # noqa: E402
from ansible_collections.linerate.fabric.plugins.filter.switch_buffers import FilterModule as BufferFilters  # noqa: E402

from ansible_collections.linerate.fabric.plugins.module_utils.switch.drivers import driver_for  # noqa: E402,F401
from ansible_collections.linerate.fabric.plugins.module_utils.switch.profiles import eos_profile, fabric_derived  # noqa: E402

INTENT = {
    "switch_fabric_profile": "linerate",
    "switch_fabric_mtu": 9216,
    "switch_fabric_set_speed": True,
    "switch_fabric_trust": "dscp",
    "switch_fabric_no_drop_priority": 3,
    "switch_fabric_data_dscp": 26,
    "switch_fabric_cnp_dscp": 48,
    "switch_fabric_cnp_priority": 6,
    "switch_fabric_ecn_enabled": True,
    "switch_fabric_ecn_min_threshold_kb": 150,
    "switch_fabric_ecn_max_threshold_kb": 1500,
    "switch_fabric_ecn_probability_percent": 100,
    "inventory_hostname": "sw",
    # the role default: the profile of switch_eos_family (unset: 7050x4)
    "switch_fabric_eos_profile": eos_profile(None),
    "ansible_managed": "Ansible managed",
    "switch_fabric_cable_length": "5m",
    # the lab's SONiC leaf: a Spectrum-4 SN5600 in its default SKU, its own 400G/800G rows
    # (inventory/lab/group_vars/switches; module_utils/switch/sonic_buffer_data.py)
    "switch_fabric_sonic_hwsku": "ACS-SN5600",
    "switch_fabric_sonic_pg_lookup": {},
    "switch_fabric_pfcwd_action": "drop",
    "switch_fabric_pfcwd_detection_ms": 200,
    "switch_fabric_pfcwd_restoration_ms": 200,
    # the role default: the newest Cumulus Linux release of the NVUE reference
    "switch_fabric_nvue_release": "5.17",
}


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


def render(platform, ports, **overrides):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROOT, "switch_configs")), trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters.update(FilterModule().filters())
    env.filters.update({f"linerate.fabric.{k}": v for k, v in SwitchFilters().filters().items()})
    env.filters.update({f"linerate.fabric.{k}": v for k, v in BufferFilters().filters().items()})
    v = dict(INTENT, **overrides)
    v.setdefault("switch_fabric_ports_effective", [{"name": p, "speed_gbps": 400, "peer": ""} for p in ports])
    # as the role's tasks/template.yml hands them over: computed in Python, not in the template
    v.setdefault(
        "switch_fabric_derived",
        fabric_derived(
            platform,
            mtu=v["switch_fabric_mtu"],
            eos=v["switch_fabric_eos_profile"],
            profile=v["switch_fabric_profile"],
            ecn_min_threshold_kb=v["switch_fabric_ecn_min_threshold_kb"],
            ecn_max_threshold_kb=v["switch_fabric_ecn_max_threshold_kb"],
            no_drop_priority=v["switch_fabric_no_drop_priority"],
            cnp_priority=v["switch_fabric_cnp_priority"],
            nvue_release=v["switch_fabric_nvue_release"],
        ),
    )
    return env.get_template(f"{platform}/fabric.j2").render(**v)


class Scripted:
    """Replaces Driver.send: answers from a table, records every command."""

    def __init__(self, answers):
        self.answers = answers  # command -> str | list[str] (consumed in order)
        self.sent = []

    def __call__(self, command, timeout=None):
        self.sent.append(command)
        if command not in self.answers and command.endswith("date +switch-now=%s"):
            # the window lock's read (Driver.lock_read): no lock, and the switch's clock, as a switch prints them
            return f"switch-now={int(time.time())}"
        a = self.answers.get(command, "")
        if isinstance(a, list):
            return a.pop(0) if len(a) > 1 else a[0]
        return a


def make(platform, name="sw", answers=None):
    d = driver_for(platform, name, host="127.0.1.9", username="u", password="p")
    fake = Scripted(answers or {})
    d.send = fake
    return d, fake


class SimSwitch:
    """Drives a lab simulator platform object in-process as the switch behind Driver.send."""

    def __init__(self, tmp_path, platform, ports):
        import json
        from simcore import Store
        from sim_eos import Eos
        from sim_nvue import Nvue
        from sim_sonic import Sonic

        spec = {
            "platform": platform,
            "address": "127.0.1.9",
            "port": 22,
            "ports": {p: {"peer": f"node{i + 1}:mlx5_0", "speed_gbps": 400} for i, p in enumerate(ports)},
        }
        (tmp_path / "fabric.json").write_text(json.dumps({"version": 1, "nodes": {}, "switches": {"sw": spec}}))
        store = Store(str(tmp_path))
        self.sw = {"nvue": Nvue, "sonic": Sonic, "eos": Eos}[platform]("sw", spec, store)
        store.load(self.sw)
        self.ctx = self.sw.new_context("admin")
        self.ctx["term_length"] = 0
        self.sent = []

    def __call__(self, command, timeout=None):
        self.sent.append(command)
        out = self.sw.execute(self.ctx, command)
        return out[0] if isinstance(out, tuple) else out


def sim_driver(tmp_path, platform, ports):
    d = driver_for(platform, "sw", host="127.0.1.9", username="u", password="p")
    sim = SimSwitch(tmp_path, platform, ports)
    d.send = sim
    return d, sim


class SimConn:
    """A stand-in for a netmiko connection over an in-process simulator, with the session faults.

    A drop fault closes the session: this and every later command raise
    OSError("Socket is closed") as paramiko does on a closed channel; a hang
    raises netmiko's ReadTimeout (what send_command raises when no prompt
    comes back within read_timeout). The driver's own send() runs on top.
    """

    base_prompt = "sw"

    def __init__(self, sim):
        self.sim = sim
        self.ctx = sim.sw.new_context("admin")
        self.ctx["term_length"] = 0
        self.dead = False

    def send_command(self, command, read_timeout=None, expect_string=None, strip_prompt=True, strip_command=True):
        from netmiko.exceptions import ReadTimeout
        from simcore import Drop, Hang

        if self.dead:
            raise OSError("Socket is closed")
        self.sim.sent.append(command)
        try:
            out = self.sim.sw.run_line(self.ctx, command)
        except Drop:
            self.dead = True
            raise OSError("Socket is closed") from None
        except Hang:
            self.dead = True
            raise ReadTimeout(f"Pattern not detected: {expect_string!r} in output.") from None
        return out[0] if isinstance(out, tuple) else out

    def check_enable_mode(self):  # netmiko: privileged exec when the prompt ends in #
        return self.sim.sw.prompt(self.ctx).rstrip().endswith("#")

    def enable(self):
        raise AssertionError("the simulators log in to privileged exec: enable() is not expected")

    def disconnect(self):
        self.dead = True


def sim_conn_driver(tmp_path, platform, ports):
    """A driver whose connections (one per connect, new after a drop) reach an in-process simulator."""
    d = driver_for(platform, "sw", host="127.0.1.9", username="u", password="p", host_key_checking=False)
    sim = SimSwitch(tmp_path, platform, ports)
    sim.connections = 0

    def open_connection(params):
        sim.connections += 1
        return SimConn(sim)

    d.open_connection = open_connection
    return d, sim


def unlocked(sent):
    """The commands sent, less the window lock's (taken, read, released: switch/test_window_lock.py asserts those)."""
    return [c for c in sent if "/linerate.lock" not in c]


def arm(sim, kind, match, count=1, skip=0):
    sim.sw.rejects.append({"kind": kind, "match": match, "count": count, "skip": skip})
