"""Lossless RoCE, the rest of issue 23 item 3: the EOS PFC watchdog (template, simulator grammar,
read-back, post-check), the pfc-storm lab fault (host, switch and watchdog counters, back-pressure)
and the findings SWITCH_NO_HEADROOM / PFC_WATCHDOG_OFF / PFC_STORM naming switch and port."""

import json
import time

import pytest

from labsim import lab  # noqa: F401  (also puts lab/sim on sys.path)
from switch_testlib import render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast_switch
from ansible_collections.linerate.fabric.plugins.module_utils.checks import link_limits
from ansible_collections.linerate.fabric.plugins.module_utils.checks import links as linkcheck
from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers as switch_buffers
from ansible_collections.linerate.fabric.plugins.module_utils import findings as findings_mod
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import eos
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import oper_problems

PORTS = ["Ethernet1/1", "Ethernet2/1"]
WD_ON = "   priority-flow-control pause watchdog\n"
ACTION = "   priority-flow-control pause watchdog port action drop\n"
TIMER = "   priority-flow-control pause watchdog port timer timeout 0.2 polling-interval auto recovery-time 0.2\n"


# ------------------------------------------------------------------ EOS: template and intent


def test_eos_template_renders_the_watchdog_on_every_fabric_port():
    text = render("eos", PORTS)
    for port in PORTS:
        block = text.split(f"interface {port}\n")[1].split("!\n")[0]
        assert WD_ON + ACTION + TIMER in block
        assert block.index("priority-flow-control priority 3 no-drop") < block.index("pause watchdog")


def test_eos_watchdog_values_follow_the_intent():
    assert switch_buffers.eos_pfcwd("drop", 200, 200) == {"action": "drop", "timeout": "0.2", "recovery_time": "0.2"}
    assert switch_buffers.eos_pfcwd("alert", 1250, 60000) == {"action": "notify-only", "timeout": "1.25", "recovery_time": "60"}
    text = render("eos", PORTS[:1], switch_fabric_pfcwd_action="alert", switch_fabric_pfcwd_detection_ms=1000)
    assert "port action notify-only\n" in text and "timer timeout 1 polling-interval auto recovery-time 0.2\n" in text


def test_the_watchdog_defaults_are_the_roles():
    """buffers.py's defaults are the role's (YAML cannot import them): one value, checked here."""
    import yaml
    from switch_testlib import ROOT

    with open(f"{ROOT}/roles/switch_fabric/defaults/main.yml", encoding="utf-8") as f:
        role = yaml.safe_load(f)
    assert (role["switch_fabric_pfcwd_action"], role["switch_fabric_pfcwd_detection_ms"], role["switch_fabric_pfcwd_restoration_ms"]) == (
        switch_buffers.PFCWD_DEFAULT_ACTION,
        switch_buffers.PFCWD_DEFAULT_MS,
        switch_buffers.PFCWD_DEFAULT_MS,
    )
    assert switch_buffers.eos_pfcwd() == {"action": "drop", "timeout": "0.2", "recovery_time": "0.2"}


@pytest.mark.parametrize(
    "args, key, value",
    [
        (("forward", 200, 200), "switch_fabric_pfcwd_action", "'forward'"),
        (("drop", 205, 200), "switch_fabric_pfcwd_detection_ms", "205"),
        (("drop", 200, 0), "switch_fabric_pfcwd_restoration_ms", "0"),
        (("drop", 200, 70000), "switch_fabric_pfcwd_restoration_ms", "70000"),
        (("drop", True, 200), "switch_fabric_pfcwd_detection_ms", "True"),
    ],
)
def test_eos_watchdog_intent_refused_names_key_value_and_allowed(args, key, value):
    with pytest.raises(ValueError) as err:
        switch_buffers.eos_pfcwd(*args)
    assert f"{key}: {value} is not allowed on EOS (allowed: " in str(err.value)


def test_eos_template_refuses_a_watchdog_action_eos_has_not():
    with pytest.raises(Exception, match="switch_fabric_pfcwd_action: 'forward' is not allowed on EOS"):
        render("eos", PORTS, switch_fabric_pfcwd_action="forward")


# ------------------------------------------------------------------ EOS: simulator grammar


def _eos_if(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "eos", PORTS)
    for c in ("configure session s", "interface Ethernet1/1"):
        assert sim(c) == ""
    return d, sim


@pytest.mark.parametrize(
    "line, token",
    [
        ("priority-flow-control pause watchdog port action errdisable", 5),  # the default, not a keyword
        ("priority-flow-control pause watchdog port action forward", 5),
        ("priority-flow-control pause watchdog port timer timeout 0.005 polling-interval auto recovery-time 1", 6),
        ("priority-flow-control pause watchdog port timer timeout 0.2 polling-interval 0.0005 recovery-time 1", 8),
        ("priority-flow-control pause watchdog port timer timeout 61 polling-interval auto recovery-time 1", 6),
        ("priority-flow-control pause watchdog port timer timeout 0.2 polling-interval auto recovery-time 0.125", 10),
        ("priority-flow-control pause watchdog port timer timeout 0.2 polling-interval auto recovery-time 1 now", 11),
        ("priority-flow-control pause watchdog port timer timeout 200ms polling-interval auto recovery-time 1", 6),
        ("priority-flow-control pause watchdog interval 0.2", 3),
    ],
)
def test_eos_simulator_refuses_invented_watchdog_forms(tmp_path, monkeypatch, line, token):
    _d, sim = _eos_if(tmp_path, monkeypatch)
    assert sim(line) == f"% Invalid input (at token {token}: '{line.split()[token]}')"


def test_eos_simulator_refuses_an_incomplete_timer(tmp_path, monkeypatch):
    _d, sim = _eos_if(tmp_path, monkeypatch)
    assert sim("priority-flow-control pause watchdog port timer timeout 0.2 polling-interval auto") == "% Incomplete command"


def test_eos_simulator_accepts_real_but_rare_watchdog_forms(tmp_path, monkeypatch):
    _d, sim = _eos_if(tmp_path, monkeypatch)
    assert sim("priority-flow-control pause watchdog") == ""
    assert sim("priority-flow-control pause watchdog port action notify-only") == ""
    # AVD qos.cfg's own line: 2-decimal timeout, auto polling, forced recovery
    assert sim("priority-flow-control pause watchdog port timer timeout 0.05 polling-interval auto recovery-time 1.11 forced") == ""
    assert sim("priority-flow-control pause watchdog port timer timeout 60 polling-interval 0.005 recovery-time 0.01") == ""
    assert sim("commit") == ""
    run = sim("show running-config")
    assert (
        WD_ON + "   priority-flow-control pause watchdog port action notify-only\n"
        "   priority-flow-control pause watchdog port timer timeout 60 polling-interval 0.005 recovery-time 0.01\n"
    ) in run + "\n"


def test_eos_simulator_no_forms_take_trailing_arguments(tmp_path, monkeypatch):
    _d, sim = _eos_if(tmp_path, monkeypatch)
    for c in (
        "priority-flow-control pause watchdog",
        "priority-flow-control pause watchdog port action drop",
        "no priority-flow-control pause watchdog port action drop",
        "no priority-flow-control pause watchdog",
    ):
        assert sim(c) == ""
    assert sim("commit") == ""
    assert "pause watchdog" not in sim("show running-config")


# ------------------------------------------------------------------ EOS: apply, read back, post-check


def test_eos_apply_then_idempotent_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "eos", PORTS)
    first = run_apply(d, want_text=render("eos", PORTS), ports=PORTS, stamp="20260101T000001Z")
    assert first["changed"] and WD_ON.strip() in first["commands"] and ACTION.strip() in first["commands"]
    assert TIMER.strip() in first["commands"]
    assert WD_ON + ACTION + TIMER in sim("show running-config") + "\n"
    again = run_apply(d, want_text=render("eos", PORTS), ports=PORTS, stamp="20260101T000002Z")
    assert again["changed"] is False and again["commands"] == []
    oper = d.oper(PORTS)
    assert oper["Ethernet1/1"]["headroom"] == [3] and oper["Ethernet1/1"]["pfcwd"] == [3]
    assert oper_problems(oper, PORTS, [3], True, require_up=False) == []
    # a changed timer is one command, not a removal plus a line
    changed = run_apply(d, want_text=render("eos", PORTS, switch_fabric_pfcwd_restoration_ms=1000), ports=PORTS, stamp="20260101T000003Z")
    assert [c for c in changed["commands"] if "watchdog" in c] == [
        "priority-flow-control pause watchdog port timer timeout 0.2 polling-interval auto recovery-time 1"
    ] * 2


def test_eos_watchdog_off_is_drift_the_post_check_and_read_back_see(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "eos", PORTS)
    run_apply(d, want_text=render("eos", PORTS), ports=PORTS, stamp="20260101T000001Z")
    sim.sw.fault_pfcwd_off()
    oper = d.oper(PORTS)
    assert oper["Ethernet2/1"]["pfcwd"] == [] and oper["Ethernet2/1"]["headroom"] == [3]
    assert "Ethernet2/1: PFC watchdog off on the no-drop priority 3 (on: []): a pause storm would stall the fabric" in oper_problems(
        oper, PORTS, [3], True, require_up=False
    )
    lossless = d.lossless(PORTS)
    assert lossless["Ethernet1/1"] == {"pfc": [3], "headroom": [3], "pfcwd": [], "storms": {}, "missing": []}
    repaired = run_apply(d, want_text=render("eos", PORTS), ports=PORTS, stamp="20260101T000002Z")
    assert repaired["commands"].count("priority-flow-control pause watchdog") == 2
    sim.sw.fault_pfcwd_restore()
    assert d.oper(PORTS)["Ethernet1/1"]["pfcwd"] == [3]


def test_eos_watchdog_counters_parser():
    text = json.dumps({"interfaces": {"Ethernet1/1": {"txQueues": {"3": {"stuckCount": 2, "recoveryCount": 1}}}}})
    assert eos.parse_pfcwd_counters(text) == {"Ethernet1/1": {"3": {"stuck": 2, "recovered": 1}}}
    assert eos.parse_pfcwd_counters('{"interfaces": {}}') == {}
    for bad in ("% Invalid input (at token 3: 'watchdog')", "{not json", '{"interfaceCounters": {}}', '{"interfaces": {"Ethernet1/1": {}}}'):
        with pytest.raises(ParseError):
            eos.parse_pfcwd_counters(bad)


# ------------------------------------------------------------------ pfc-storm in the lab


def _storm_model(d, platform, ports, pfcwd):
    """The lab's fabric config applied through the driver (PFC and the watchdog on priority 3; with
    ``pfcwd`` False, the watchdog then stopped), and node1 mlx5_0 on ports[0] storming for 10 s."""
    from linerate_lab import linkphys
    from simcore import model

    run_apply(d, want_text=render(platform, ports), ports=ports, stamp="20260101T000001Z")
    if not pfcwd:
        d.send.sw.fault_pfcwd_off()
    with model.locked() as m:
        m["nodes"] = {
            "node1": {"nics": [{"device": "mlx5_0", "netdev": "enp1", "switch": "sw", "switch_port": ports[0], "qos": {"pfc": [0, 0, 0, 1, 0, 0, 0, 0]}}]}
        }
        # ten seconds of storm so far (time.time is not patched: the model's lock waits on it)
        linkphys.start(m["nodes"]["node1"]["nics"][0], "pfc_storm", now=time.time() - 10.0, prio=3, rate=1000)


def test_storm_counters_climb_with_time_and_stay_after_the_stop():
    from linerate_lab import linkphys

    nic = {}
    linkphys.start(nic, "pfc_storm", now=100.0, prio=3, rate=50000)
    c = linkphys.counters(nic, now=102.0)
    assert c["tx_prio3_pause"] == 100000 and c["tx_prio3_pause_duration"] == 2000000
    assert "tx_prio4_pause" not in c
    linkphys.stop(nic, "pfc_storm", now=102.0)
    assert linkphys.counters(nic, now=500.0)["tx_prio3_pause"] == 100000


def test_pfc_storm_fault_and_its_undo(lab):  # noqa: F811
    from linerate_lab import faults, linkphys
    from linerate_lab.tools import ethtool
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import parse_ethtool_stats

    with __import__("linerate_lab").model.locked() as m:
        m["nodes"]["node1"]["nics"][0]["qos"] = {"pfc": [0, 0, 0, 1, 0, 0, 0, 0]}
        m["switches"] = {"leaf1": {"ports": {"swp1": {"pfcwd": [3]}}}}
        msg = faults.FAULTS["pfc-storm"](None, m, "node1", "mlx5_0")
    assert "priority 3" in msg and "leaf1 swp1" in msg
    assert lab.model()["faults"][-1] == {"kind": "pfc-storm", "args": ["node1", "mlx5_0"]}
    lab.update(lambda n: n["nics"][0]["phy_faults"]["pfc_storm"].update(since=time.time() - 4.0))
    stats = parse_ethtool_stats(ethtool.statistics(lab.nic(), {"up": True}))["stats"]
    rate = linkphys.PFC_STORM_FRAMES_PER_S
    assert 4 * rate <= stats["tx_prio3_pause"] < 5 * rate and stats["tx_prio4_pause"] == 0
    other = parse_ethtool_stats(ethtool.statistics(lab.nic("mlx5_1"), {"up": True}))["stats"]
    assert other["tx_prio3_pause"] == 0
    with __import__("linerate_lab").model.locked() as m:
        faults.FAULTS["pfc-storm-stop"](None, m, "node1", "mlx5_0")
    after = lab.model()
    port = after["switches"]["leaf1"]["ports"]["swp1"]
    assert 4 * rate <= port["counters"]["pfc_rx"]["3"] < 5 * rate  # kept at the switch end
    assert port["counters"]["pfcwd"]["3"]["detected"] == 1 and port["counters"]["pfcwd"]["3"]["restored"] == 1
    assert "pfc_storm" not in lab.nic().get("phy_faults", {})
    assert not [f for f in after["faults"] if f["kind"] == "pfc-storm"]


def test_pfc_storm_fault_refuses_an_unknown_device(lab):  # noqa: F811
    from linerate_lab import faults

    with __import__("linerate_lab").model.locked() as m:
        with pytest.raises(faults.FaultError, match="node node1 has no device 'mlx5_9'"):
            faults.FAULTS["pfc-storm"](None, m, "node1", "mlx5_9")


@pytest.mark.parametrize("platform, ports", [("eos", PORTS), ("sonic", ["Ethernet0", "Ethernet8"])])
def test_storm_reaches_the_switch_port_and_a_guarding_watchdog_detects_it(tmp_path, monkeypatch, platform, ports):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, platform, ports)
    _storm_model(d, platform, ports, pfcwd=True)
    c = d.qos_counters(ports)
    assert 10000 <= (c[ports[0]]["rx_pause"] or {}).get(3, c[ports[0]]["rx_pause_total"]) < 11000
    assert c[ports[1]]["rx_pause_total"] == 0
    storms = d.pfcwd_storms(ports)
    assert storms[ports[0]]["3"]["detected"] == 1
    assert storms[ports[1]].get("3", {"detected": 0})["detected"] == 0  # SONiC lists a guarded queue, EOS does not
    assert storms[ports[0]]["3"]["stormed"] is True  # EOS: stuck more often than recovered


def test_an_unguarded_storm_is_not_detected(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, _sim = sim_driver(tmp_path, "eos", PORTS)
    _storm_model(d, "eos", PORTS, pfcwd=False)
    assert d.pfcwd_storms(PORTS) == {"Ethernet1/1": {}, "Ethernet2/1": {}}
    assert 10000 <= d.qos_counters(PORTS)["Ethernet1/1"]["rx_pause_total"] < 11000


def test_an_unguarded_storm_back_pressures_the_switch_and_a_guarded_one_does_not():
    from linerate_lab import congestion, rdma

    m = {
        "nodes": {"n1": {"nics": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1", "phy_faults": {"pfc_storm": {"since": 0, "prio": 3}}}]}},
        "switches": {"leaf1": {"ports": {"swp1": {"pfcwd": []}}}},
    }
    assert congestion.unguarded_storm(m, "leaf1", 3) == "n1 mlx5_0"
    assert congestion.unguarded_storm(m, "leaf1", 4) is None and congestion.unguarded_storm(m, "leaf2", 3) is None
    m["switches"]["leaf1"]["ports"]["swp1"]["pfcwd"] = [3]
    assert congestion.unguarded_storm(m, "leaf1", 3) is None
    base = {
        "link_layer": "Ethernet",
        "gid": {"type": "v2", "ipv4": "10.0.0.1"},
        "active_mtu": 4096,
        "netdev_mtu": 9000,
        "speed_gbps": 400,
        "host_pfc": True,
        "priority": 3,
        "switch_pfc": [3],
        "switch": "leaf1",
        "switch_port": "swp2",
        "node": "n2",
        "device": "mlx5_0",
    }
    calm = rdma.path(dict(base), dict(base, node="n3"))
    stormy = rdma.path(dict(base, switch_storm="n1 mlx5_0"), dict(base, node="n3"))
    assert stormy["gbps"] == pytest.approx(calm["gbps"] * congestion.STORM_BACKPRESSURE_FRACTION)
    assert "pause storm from n1 mlx5_0 on leaf1" in stormy["notes"]


# ------------------------------------------------------------------ findings

FABRIC = {"transport": "roce", "roce": {"no_drop_priority": 3}}
HOSTS = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}], "node2": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2"}]}


def _snap(lossless):
    return {"failed": False, "platform": "eos", "ports": {}, "lossless": lossless}


def _healthy(**over):
    st = {"pfc": [3], "headroom": [3], "pfcwd": [3], "storms": {}, "missing": []}
    st.update(over)
    return st


def _judge(before, after):
    reads = {"leaf1": {"before": _snap(before), "after": _snap(after)}}
    return incast_switch.lossless_findings(reads, FABRIC, HOSTS, {}, findings_mod.finding)


def test_healthy_lossless_state_has_zero_findings():
    healthy = {"swp1": _healthy(), "swp2": _healthy(storms={"3": {"detected": 4, "stormed": False}})}
    assert _judge(healthy, healthy) == ([], {})


def test_switch_no_headroom_names_switch_port_node_device():
    out, _ = _judge({"swp1": _healthy(), "swp2": _healthy()}, {"swp1": _healthy(), "swp2": _healthy(headroom=[])})
    assert [(x["code"], x["severity"], x["switch"], x["switch_port"], x["node"], x["device"]) for x in out] == [
        ("SWITCH_NO_HEADROOM", "error", "leaf1", "swp2", "node2", "mlx5_0")
    ]
    assert "no lossless headroom for the no-drop priority 3" in out[0]["message"]


def test_pfc_watchdog_off_names_switch_and_port():
    out, _ = _judge({}, {"swp1": _healthy(pfcwd=[]), "swp2": _healthy(pfcwd=[4])})
    assert [(x["code"], x["severity"], x["switch_port"], x["node"]) for x in out] == [
        ("PFC_WATCHDOG_OFF", "error", "swp1", "node1"),
        ("PFC_WATCHDOG_OFF", "error", "swp2", "node2"),
    ]


def test_pfc_storm_from_the_watchdog_counters():
    before = {"swp1": _healthy(storms={"3": {"detected": 1, "stormed": False}}), "swp2": _healthy()}
    after = {"swp1": _healthy(storms={"3": {"detected": 2, "stormed": None}}), "swp2": _healthy()}
    out, _ = _judge(before, after)
    assert [(x["code"], x["switch"], x["switch_port"], x["node"], x["device"]) for x in out] == [("PFC_STORM", "leaf1", "swp1", "node1", "mlx5_0")]
    assert out[0]["evidence"] == {"detected": 1, "stormed": None}
    # a queue stormed now counts too, even without a new detection (SONiC STATUS stormed)
    now = {"swp1": _healthy(storms={"3": {"detected": 1, "stormed": True}}), "swp2": _healthy()}
    assert [x["code"] for x in _judge(now, now)[0]] == ["PFC_STORM"]
    # a storm on another priority is not the fabric's
    other = {"swp1": _healthy(storms={"4": {"detected": 9, "stormed": True}}), "swp2": _healthy()}
    assert _judge({}, other)[0] == []


def test_what_a_driver_does_not_read_is_unproven_not_a_finding():
    out, unproven = _judge(
        {},
        {
            "swp1": _healthy(headroom=None, pfcwd=None, storms=None, missing=["lossless headroom", "PFC watchdog state", "PFC watchdog storm counters"]),
            "swp2": _healthy(),
        },
    )
    assert out == [] and unproven == {"leaf1": ["lossless headroom", "PFC watchdog state", "PFC watchdog storm counters"]}
    reads = {"leaf1": {"before": _snap({}), "after": dict(_snap(None), lossless_msg="leaf1: timed out")}}
    assert incast_switch.lossless_findings(reads, FABRIC, HOSTS, {}, findings_mod.finding) == (
        [],
        {"leaf1": ["lossless headroom and PFC watchdog (leaf1: timed out)"]},
    )


def test_infiniband_has_no_lossless_findings():
    bad = {"swp1": _healthy(headroom=[], pfcwd=[]), "swp2": _healthy()}
    reads = {"leaf1": {"before": _snap(bad), "after": _snap(bad)}}
    assert incast_switch.lossless_findings(reads, {"transport": "infiniband"}, HOSTS, {}, findings_mod.finding) == ([], {})


def _ethtool(tx3):
    return (
        "NIC statistics:\n     rx_crc_errors_phy: 0\n     rx_symbol_err_phy: 0\n     link_down_events_phy: 0\n"
        f"     tx_prio3_pause: {tx3}\n     tx_prio3_pause_duration: {tx3 * 20}\n"
    )


def test_host_pfc_storm_over_the_window_names_node_and_device():
    limits = link_limits.thresholds(FABRIC)
    start = {"devices": ["mlx5_0"], "phy": [_ethtool(10)]}
    end = {"devices": ["mlx5_0"], "phy": [_ethtool(10 + linkcheck.PFC_STORM_TX_PAUSE_MAX + 1)]}
    _row, problems = linkcheck.port_health("node1", "mlx5_0", "roce", start, end, 0, limits)
    storm = [p for p in problems if p[0] == "PFC_STORM"]
    assert len(storm) == 1 and storm[0][2]["deltas"] == {"tx_prio3_pause": linkcheck.PFC_STORM_TX_PAUSE_MAX + 1}
    assert storm[0][1].startswith("node1 mlx5_0: tx_prio3_pause +100001")
    calm = {"devices": ["mlx5_0"], "phy": [_ethtool(10 + linkcheck.PFC_STORM_TX_PAUSE_MAX)]}
    assert not [p for p in linkcheck.port_health("node1", "mlx5_0", "roce", start, calm, 0, limits)[1] if p[0] == "PFC_STORM"]


def test_the_codes_are_registered():
    assert findings_mod.FAULT_CODES["SWITCH_NO_HEADROOM"][:2] == ("error", "pfc")
    assert findings_mod.FAULT_CODES["PFC_WATCHDOG_OFF"][:2] == ("error", "pfc")
    assert findings_mod.FAULT_CODES["PFC_STORM"][:2] == ("error", "pfc")
