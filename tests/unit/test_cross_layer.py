"""One intent, every layer: the switches, the host QoS, its boot unit, NCCL and the benchmarks
carry the same DSCP, ToS and priority, and all follow when the intent changes.

Each layer is rendered the way a run renders it, from the real files: the role defaults
(resolved lazily, as Ansible does), the task arguments of the roles, the templates, and
the Python they feed (roce.desired, nccl_env_settings, perftest.perftest_argv, the ib_write_bw module's). The
only input is the validated intent as the validate action publishes it
(fabric.published: fabric_effective with its ``derived`` values).

The probe tests change what ``derive()`` publishes (and the one PFC vector function)
and assert every layer follows: a layer that computed a value on its own (``dscp * 4``,
a Jinja loop over priorities) would keep the textbook value and fail them.
"""

import json
import os
import re

import jinja2
import jinja2.nativetypes
import pytest
import yaml
from ansible.plugins.filter.core import FilterModule as CoreFilters

from ansible_collections.linerate.fabric.plugins.filter.fabric import FilterModule as FabricFilters
from ansible_collections.linerate.fabric.plugins.filter.nccl_env import FilterModule as NcclFilters
from ansible_collections.linerate.fabric.plugins.filter.switch_fabric import FilterModule as SwitchFilters
from ansible_collections.linerate.fabric.plugins.filter.switch_buffers import FilterModule as BufferFilters
from ansible_collections.linerate.fabric.plugins.module_utils.intent import fabric
from ansible_collections.linerate.fabric.plugins.module_utils.host import roce
from ansible_collections.linerate.fabric.plugins.module_utils.checks import nccl as checks_nccl
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import parse_nccl_conf
from ansible_collections.linerate.fabric.plugins.module_utils.probes.perftest import perftest_argv

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OMIT = "__omit_place_holder__"
PORTS = [
    {"device": "mlx5_0", "netdev": "enp65s0f0np0", "switch": "leaf1", "switch_port": "swp1"},
    {"device": "mlx5_1", "netdev": "enp65s0f1np1", "switch": "leaf1", "switch_port": "swp2"},
]
# What rdma_facts reports for those ports: up, RoCE v2 IPv4 GID at index 3.
RDMA = {"ports": [{"device": p["device"], "port": 1, "netdev": p["netdev"], "up": True, "roce_v2_ipv4_gid_index": 3} for p in PORTS]}
BASE = {"name": "xl", "transport": "roce"}
OTHER = {"name": "xl", "transport": "roce", "roce": {"data_dscp": 34, "no_drop_priority": 4, "cnp_dscp": 40, "cnp_priority": 7}}


def _filters():
    # Ansible's own default filter needs its templar; Jinja's does the same here.
    out = {k: v for k, v in CoreFilters().filters().items() if k not in ("default", "d")}
    for module in (FabricFilters(), NcclFilters(), SwitchFilters(), BufferFilters()):
        for name, fn in module.filters().items():
            out[f"linerate.fabric.{name}"] = fn
    return out


def _env(native):
    cls = jinja2.nativetypes.NativeEnvironment if native else jinja2.Environment
    env = cls(trim_blocks=True, undefined=jinja2.StrictUndefined, loader=jinja2.FileSystemLoader(ROOT))
    env.filters.update(_filters())
    env.tests["match"] = lambda value, pattern: re.match(pattern, str(value)) is not None
    return env


NATIVE = _env(True)
TEXT = _env(False)


class Vars(dict):
    """Variables resolved on use, as Ansible resolves role defaults: a value that is a
    template is rendered (natively: one expression keeps its type) when read."""

    def __getitem__(self, key):
        return self.resolve(dict.__getitem__(self, key))

    def get(self, key, default=None):
        return self[key] if key in self else default

    def resolve(self, value):
        if isinstance(value, str) and "{{" in value:
            tmpl = NATIVE.from_string(value)
            return tmpl.environment.concat(tmpl.root_render_func(tmpl.new_context(self, shared=True)))
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def render_file(self, path):
        tmpl = TEXT.get_template(path)
        return tmpl.environment.concat(tmpl.root_render_func(tmpl.new_context(self, shared=True)))


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


def _task(role, tasks_file, name):
    return next(t for t in _yaml("roles", role, "tasks", tasks_file) if t.get("name") == name)


def host_vars(fabric_effective):
    """Every role's defaults over one host, as a play sees them."""
    v = Vars(
        inventory_hostname="node1",
        ansible_managed="Ansible managed",
        omit=OMIT,
        rdma_ports=PORTS,
        fabric_effective=fabric_effective,
        ansible_facts={"rdma": RDMA},
        ansible_check_mode=False,
        ansible_play_hosts=["node1", "node2"],
    )
    dict.update(v, TEXT.globals)  # range, dict, ...: the context is shared, not layered over the globals
    for role in ("roce_qos", "nccl_env", "verify_fabric", "connectx_firmware", "switch_fabric"):
        dict.update(v, _yaml("roles", role, "defaults", "main.yml"))
    return v


def module_args(v, task, module, item=None):
    """The arguments one task passes its module, rendered; omitted ones left out."""
    scope = Vars(v)
    scope.update(item=item) if item is not None else None
    scope.update({k: val for k, val in (task.get("vars") or {}).items()})
    args = {k: scope.resolve(val) for k, val in task[module].items()}
    return {k: val for k, val in args.items() if val != OMIT}


def layers(eff):
    """What each layer carries, from one published intent."""
    v = host_vars(eff)
    out = {}
    # Switches: the three platform templates with role switch_fabric's defaults.
    dict.update(
        v,
        switch_fabric_ports_effective=[{"name": "swp1", "speed_gbps": 400, "peer": ""}],
        # SONiC's lossless headroom for 400G: the lab switches' own row (inventory/lab/group_vars/switches)
        switch_sonic_pg_lookup={400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}},
    )
    # the derived values (interface MTU, ECN bytes, SONiC names) as the role's tasks/template.yml hands them over
    task = _task("switch_fabric", "template.yml", "Render the intent in the platform's configuration language")

    def derived(platform):
        dict.update(v, switch_fabric_template_platform=platform)
        dict.update(v, switch_fabric_derived=v.resolve(task["vars"]["switch_fabric_derived"].strip()))

    derived("nvue")
    nvue = v.render_file("switch_configs/nvue/fabric.j2")
    out["nvue"] = {
        "dscp": {int(d): int(p) for d, p in re.findall(r"mapping \S+ dscp (\d+) switch-priority (\d+)", nvue)},
        "pfc": [int(p) for p in re.findall(r"qos pfc \S+ switch-priority (\d+)", nvue)],
    }
    derived("sonic")
    sonic = json.loads(v.render_file("switch_configs/sonic/fabric.j2"))
    out["sonic"] = {
        "dscp": {int(d): int(p) for d, p in sonic["DSCP_TO_TC_MAP"]["LINERATE"].items()},
        "pfc": [int(p) for p in sonic["PORT_QOS_MAP"]["swp1"]["pfc_enable"].split(",")],
    }
    derived("eos")
    eos = v.render_file("switch_configs/eos/fabric.j2")
    out["eos"] = {
        "dscp": {int(d): int(p) for d, p in re.findall(r"qos map dscp (\d+) to traffic-class (\d+)", eos)},
        "pfc": [int(p) for p in re.findall(r"priority-flow-control priority (\d+) no-drop", eos)],
    }
    # Host QoS: the roce_qos task's arguments (every port in one call), per port through the module's own plan.
    task = _task("roce_qos", "configure.yml", "Configure RoCE QoS on each cabled port")
    args = module_args(v, task, "linerate.fabric.roce_qos")
    assert args["ports"] == [{"netdev": p["netdev"], "device": p["device"], "port": 1} for p in PORTS]
    out["roce_qos"] = [roce.desired(dict(args, **port)) for port in args["ports"]]
    # Its boot units: each rail's script, from the module's own boot plan for that port.
    unit = ""
    for port in args["ports"]:
        rail = dict(port, **roce.boot_result(dict(args, **port), port["netdev"], port["device"], port["port"]))
        dict.update(v, roce_qos_rail=rail)
        unit += v.render_file("roles/roce_qos/templates/etc/linerate/roce-qos/rail.sh.j2")
    out["unit"] = {
        "pfc": re.findall(r"mlnx_qos -i \S+ --trust \S+ --pfc ([\d,]+)", unit),
        "dscp": {int(d): int(p) for d, p in re.findall(r"--dscp2prio set,(\d+),(\d+)", unit)},
        "tos": [int(t) for t in re.findall(r"cma_roce_tos -d \S+ -p \d+ -t (\d+)", unit)],
    }
    # NCCL: the nccl_env settings from the facts and the intent, written by its template.
    task = _task("nccl_env", "configure.yml", "Derive the NCCL settings from the facts and the intent")
    dict.update(v, nccl_env_tuned={"settings": {}, "problems": []})  # no tuned-settings file (docs/tuning.md)
    dict.update(v, nccl_env_result=v.resolve(task["ansible.builtin.set_fact"]["nccl_env_result"].strip()))
    out["nccl"] = parse_nccl_conf(v.render_file("roles/nccl_env/templates/etc/nccl.conf.j2"))
    # Benchmarks: the ib_write_bw client task's arguments through the module's argv builder.
    task = _task("verify_fabric", "rdma_schedule.yml", "Play this node's rounds (one task; in check mode only the commands, nothing runs)")
    args = module_args(v, {"m": {k: task["linerate.fabric.ib_write_bw"][k] for k in ("tclass", "qps", "size")}}, "m")
    params = dict(
        qps=args["qps"],
        size=args["size"],
        duration=10,
        iterations=0,
        gid_index=3,
        tclass=args.get("tclass"),
        sl=None,
        use_cuda=False,
        extra_args=[],
        mode="server",
    )
    out["argv"] = perftest_argv("ib_write_bw", params, {"device": "mlx5_0", "tcp_port": 18515}, 0)
    # Firmware: the DCQCN parameters of role connectx_firmware.
    out["firmware"] = v["connectx_firmware_roce_params"]
    # Verification: what the report checks NCCL_IB_TC against.
    out["nccl_findings"] = checks_nccl.nccl_conf_findings("node1", {"path": "/etc/nccl.conf", "settings": out["nccl"]}, out["nccl"], {"mlx5_0": 3}, eff)
    return out


def assert_one_class(out, dscp, tos, prio, cnp_dscp, cnp_prio, vector):
    for platform in ("nvue", "sonic", "eos"):
        assert out[platform]["dscp"] == {dscp: prio, cnp_dscp: cnp_prio}, platform
        assert out[platform]["pfc"] == [prio], platform
    for want in out["roce_qos"]:
        assert want["pfc"] == vector
        assert want["dscp2prio"] == {str(dscp): prio, str(cnp_dscp): cnp_prio}
        assert want["roce_tos"] == tos
        assert want["ecn"]["np"] == {prio: 1} and want["cnp_dscp"] == cnp_dscp and want["cnp_priority"] == cnp_prio
    assert out["unit"]["pfc"] == [",".join(map(str, vector))] * len(PORTS)
    assert out["unit"]["dscp"] == {dscp: prio, cnp_dscp: cnp_prio}
    assert out["unit"]["tos"] == [tos] * len(PORTS)
    assert out["nccl"]["NCCL_IB_TC"] == str(tos)
    assert f"--tclass={tos}" in out["argv"]
    assert out["firmware"]["CNP_DSCP_P1"] == cnp_dscp and out["firmware"]["CNP_802P_PRIO_P1"] == cnp_prio
    assert out["nccl_findings"] == []


def test_every_layer_carries_the_intents_class():
    eff = fabric.published(BASE)
    assert_one_class(layers(eff), dscp=26, tos=104, prio=3, cnp_dscp=48, cnp_prio=6, vector=[0, 0, 0, 1, 0, 0, 0, 0])


def test_every_layer_follows_a_changed_intent():
    out = layers(fabric.published(OTHER))
    assert_one_class(out, dscp=34, tos=136, prio=4, cnp_dscp=40, cnp_prio=7, vector=[0, 0, 0, 0, 1, 0, 0, 0])
    assert out["firmware"]["ROCE_CC_PRIO_MASK_P1"] == 255
    no_ecn = dict(OTHER, roce=dict(OTHER["roce"], ecn={"enabled": False}))
    assert layers(fabric.published(no_ecn))["firmware"]["ROCE_CC_PRIO_MASK_P1"] == 255 - 16


def test_a_layer_deriving_the_tos_on_its_own_is_caught():
    """Every ToS reader takes derive()'s value, whatever it is: publish another one
    (ECT(0) set, 4 * DSCP + 2) and every layer must carry it, not 4 * DSCP."""
    eff = fabric.published(BASE)
    eff["derived"]["tos"] = 106
    out = layers(eff)
    assert [w["roce_tos"] for w in out["roce_qos"]] == [106, 106]
    assert out["unit"]["tos"] == [106, 106]
    assert out["nccl"]["NCCL_IB_TC"] == "106"
    assert "--tclass=106" in out["argv"]
    assert out["nccl_findings"] == []  # verification checks against the same published value


def test_a_layer_deriving_the_pfc_vector_on_its_own_is_caught(monkeypatch):
    """The module's plan and the boot unit build the vector with fabric.pfc_vector only."""
    monkeypatch.setattr(fabric, "pfc_vector", lambda prios: [1] + [0] * 7)
    out = layers(fabric.published(BASE))
    assert [w["pfc"] for w in out["roce_qos"]] == [[1, 0, 0, 0, 0, 0, 0, 0]] * 2
    assert out["unit"]["pfc"] == ["1,0,0,0,0,0,0,0"] * 2


def test_a_layer_deriving_the_dscp_map_or_the_pfc_priorities_on_its_own_is_caught():
    """The host's DSCP map and PFC priorities are derive()'s (roce_qos_dscp2prio, roce_qos_pfc_priorities):
    publish others and the module's plan and the boot script carry them, not a map rebuilt from the DSCPs."""
    eff = fabric.published(BASE)
    eff["derived"].update(dscp2prio={"10": 2, "48": 6}, pfc_priorities=[2])
    out = layers(eff)
    for want in out["roce_qos"]:
        assert want["dscp2prio"] == {"10": 2, "48": 6}
        assert want["pfc"] == [0, 0, 1, 0, 0, 0, 0, 0]
    assert out["unit"]["dscp"] == {10: 2, 48: 6}
    assert out["unit"]["pfc"] == ["0,0,1,0,0,0,0,0"] * 2


def test_every_published_derived_value_has_a_reader():
    """A value derive() publishes is read by a role, a template or the Python behind them; one nobody
    reads is not published (issue 29 item 3: pfc_vector and gid_policy were, and went)."""
    text = ""
    for top in ("roles", "playbooks", "plugins", "switch_configs"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".py", ".yml", ".j2")) and f != "intent.py":
                    with open(os.path.join(d, f), encoding="utf-8") as fh:
                        text += fh.read()
    for key in fabric.derive(fabric.effective(BASE)):
        assert re.search(r"derived(\.|\(fabric\)\[\")" + key + r"\b", text), key


def test_a_layer_deriving_the_firmware_values_on_its_own_is_caught():
    eff = fabric.published(BASE)
    eff["derived"].update(cc_prio_mask=7, cnp_dscp=40, cnp_priority=5)
    assert layers(eff)["firmware"] == {"ROCE_CC_PRIO_MASK_P1": 7, "CNP_DSCP_P1": 40, "CNP_802P_PRIO_P1": 5}


@pytest.mark.parametrize("given", [BASE, OTHER])
def test_verification_thresholds_are_the_published_ones(given):
    eff = fabric.published(given)
    eff["derived"].update(ib_write_bw_min_gbps=123.0, nccl_busbw_min_gbytes_per_nic=7.0)
    assert thresholds.rdma_threshold_gbps(eff) == 123.0
    assert thresholds.nccl_threshold_gbytes(eff, 4) == 28.0
