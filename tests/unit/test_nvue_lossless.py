"""NVUE lossless read-back (issue 23 item 3): the NVUE driver reads each fabric port's lossless headroom
(``nv show interface <swp> qos buffer ingress-priority-group -o json``) and PFC watchdog
(``nv show interface <swp> qos pfc-watchdog -o json``) into the oper structure the SONiC and EOS drivers
fill, the NVUE simulator answers both from its running config and the fault state and refuses forms the
reference does not list, and verification names the NVUE switch and port."""

import json

import pytest

from switch_testlib import render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import nvue_show
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import oper_problems
from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast_switch
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults

PORTS = ["swp1", "swp2"]


def _applied(tmp_path, monkeypatch):
    """The lab's NVUE switch with linerate's fabric config applied (PFC and the watchdog on priority 3)."""
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", PORTS)
    res = run_apply(d, want_text=render("nvue", PORTS), ports=PORTS, stamp="20260101T000001Z")
    assert res["changed"] and not res.get("failed"), res
    return d, sim


# ------------------------------------------------------------------ the driver on the simulator's output


def test_healthy_read_back_has_headroom_and_the_watchdog_on_the_no_drop_priority(tmp_path, monkeypatch):
    d, sim = _applied(tmp_path, monkeypatch)
    oper = d.oper(PORTS)
    for p in PORTS:
        assert oper[p]["pfc"] == [3] and oper[p]["headroom"] == [3] and oper[p]["pfcwd"] == [3]
    assert oper_problems(oper, PORTS, [3], True, require_up=False) == []
    lossless = d.lossless(PORTS)
    assert lossless["swp1"]["headroom"] == [3] and lossless["swp1"]["pfcwd"] == [3]
    assert lossless["swp1"]["missing"] == []  # nothing left unproven on NVUE any more
    assert lossless["swp1"]["storms"]["3"] == {"detected": 0, "stormed": False}
    sent = [c for c in sim.sent if "qos buffer" in c or "pfc-watchdog" in c and c.startswith("nv show")]
    assert "nv show interface swp1 qos buffer ingress-priority-group -o json" in sent
    assert "nv show interface swp2 qos pfc-watchdog -o json" in sent


def test_headroom_zero_is_read_back_and_fails_the_post_check(tmp_path, monkeypatch):
    d, sim = _applied(tmp_path, monkeypatch)
    sim.sw.fault_headroom_zero("swp2")
    oper = d.oper(PORTS)
    assert oper["swp1"]["headroom"] == [3] and oper["swp2"]["headroom"] == []
    assert oper["swp2"]["pfc"] == [3]  # PFC stays on: only the headroom is gone
    doc = json.loads(sim("nv show interface swp2 qos buffer ingress-priority-group -o json"))
    assert doc["3"]["lossy-lossless"] == "Lossless" and doc["3"]["hr"] == 0
    assert oper_problems(oper, PORTS, [3], True, require_up=False) == [
        "swp2: no lossless headroom for the no-drop priority 3 (lossless priorities with headroom: []): it drops under incast"
    ]
    sim.sw.fault_headroom_restore("swp2")
    assert d.oper(PORTS)["swp2"]["headroom"] == [3]


def test_watchdog_off_is_drift_the_read_back_sees_and_a_rerun_repairs(tmp_path, monkeypatch):
    d, sim = _applied(tmp_path, monkeypatch)
    sim.sw.fault_pfcwd_off()
    assert "nv set interface swp1 qos pfc-watchdog state disable" in sim("nv config show -o commands")
    oper = d.oper(PORTS)
    assert oper["swp1"]["pfcwd"] == [] and oper["swp2"]["pfcwd"] == [] and oper["swp1"]["headroom"] == [3]
    assert "swp1: PFC watchdog off on the no-drop priority 3 (on: []): a pause storm would stall the fabric" in oper_problems(
        oper, PORTS, [3], True, require_up=False
    )
    assert json.loads(sim("nv show interface swp1 qos pfc-watchdog -o json")) == {"state": "disabled", "status": {}}
    repaired = run_apply(d, want_text=render("nvue", PORTS), ports=PORTS, stamp="20260101T000002Z")
    assert [c for c in repaired["commands"] if "pfc-watchdog" in c] == [
        "nv set interface swp1 qos pfc-watchdog state enable",
        "nv set interface swp2 qos pfc-watchdog state enable",
    ]
    assert d.oper(PORTS)["swp1"]["pfcwd"] == [3]
    sim.sw.fault_pfcwd_restore()  # the undo leaves the (repaired) config as it is
    assert d.oper(PORTS)["swp2"]["pfcwd"] == [3]


def test_the_text_forms_follow_the_published_tables(tmp_path, monkeypatch):
    _d, sim = _applied(tmp_path, monkeypatch)
    pg = sim("nv show interface swp1 qos buffer ingress-priority-group").splitlines()
    assert pg[0].split()[:3] == ["priority-group", "Pool", "ID"] and "Lossy/Lossless" in pg[0] and "HR" in pg[0].split()
    assert [ln.split()[0] for ln in pg[2:]] == ["0", "3", "9"] and "Lossless" in pg[3] and "54.00 KB" in pg[3]
    wd = sim("nv show interface swp1 qos pfc-watchdog")
    assert wd.splitlines()[2].split() == ["state", "enabled", "enabled"] and "PFC WD Status" in wd
    assert "traffic-class  status" in wd


# ------------------------------------------------------------------ parsers


def test_parsers_read_json_numbers_and_table_sizes():
    doc = {
        "0": {"lossy-lossless": "Lossy", "hr": "18.98 KB", "xoff-th": "0 Bytes"},
        "3": {"lossy-lossless": "Lossless", "hr": 55296, "xoff-th": 36864},
        "4": {"lossy-lossless": "Lossless", "hr": "0 Bytes", "xoff-th": "0 Bytes"},
        "9": {"lossy-lossless": "Lossy", "hr": "9.98 KB"},
    }
    pgs = nvue_show.parse_ingress_priority_groups(json.dumps(doc))
    assert pgs[0] == {"lossless": False, "headroom": 19436, "xoff": 0} and pgs[3]["headroom"] == 55296
    assert nvue_show.lossless_headroom(pgs) == [3]  # lossless without headroom (4) and lossy PGs are not
    wd = nvue_show.parse_pfc_watchdog(
        json.dumps({"state": "enabled", "status": {"3": {"status": "DEADLOCK", "deadlock-count": 2}, "0": {"status": "OK", "deadlock-count": 0}}})
    )
    assert wd == {"enabled": True, "status": {3: {"status": "DEADLOCK", "deadlock": 2}, 0: {"status": "OK", "deadlock": 0}}}
    assert nvue_show.parse_pfc_watchdog('{"state": "disabled"}') == {"enabled": False, "status": {}}


@pytest.mark.parametrize(
    "parse, text, words",
    [
        # issue 38: text is read as the reference's table; NVUE's error is neither JSON nor that table
        (nvue_show.parse_ingress_priority_groups, "Error: The requested item does not exist.", "neither JSON nor the reference's table: Error"),
        (nvue_show.parse_ingress_priority_groups, "", "no output"),
        (nvue_show.parse_ingress_priority_groups, '{"3": {"lossy-lossless": "Lossless"}}', "priority group 3"),
        (nvue_show.parse_ingress_priority_groups, '{"3": {"lossy-lossless": "sometimes", "hr": 1}}', "priority group 3"),
        (nvue_show.parse_pfc_watchdog, '{"state": "maybe"}', "no state"),
        (nvue_show.parse_pfc_watchdog, '{"state": "enabled", "status": {"3": {"status": "OK"}}}', "deadlock-count"),
        (nvue_show.parse_pfc_watchdog, "{not json", "invalid JSON"),
    ],
)
def test_parsers_refuse_what_they_cannot_read(parse, text, words):
    with pytest.raises(ParseError, match=words):
        parse(text)


# ------------------------------------------------------------------ the simulator's gate


@pytest.mark.parametrize(
    "line",
    [
        "nv show interface swp1 qos headroom",  # invented
        "nv show interface swp1 qos buffer ingress-priority-group detail",  # invented tail
        "nv show qos lossless",  # invented
        "nv show interface swp1 qos pfc-watchdog -o yaml",  # no YAML rendering in the simulator
    ],
)
def test_the_simulator_refuses_forms_the_reference_does_not_list(tmp_path, monkeypatch, line):
    _d, sim = _applied(tmp_path, monkeypatch)
    assert sim(line).startswith("Error:")


def test_show_forms_follow_the_release(tmp_path):
    import sim_nvue

    ref = sim_nvue.load_reference()
    lines = [pat for pat, _kinds in sim_nvue.show_forms("5.9", ref)]
    assert any("pfc\\-watchdog" in p for p in lines) and any("ingress\\-priority\\-group" in p for p in lines)
    # a form introduced after the configured release is refused (the 'since' gate), as an nv set path is
    late = dict(ref, shows=[dict(e, since="5.16") if "pfc-watchdog" in e["command"] else e for e in ref["shows"]])
    assert not any("pfc\\-watchdog" in p for p, _k in sim_nvue.show_forms("5.15", late))
    assert any("pfc\\-watchdog" in p for p, _k in sim_nvue.show_forms("5.16", late))


# ------------------------------------------------------------------ findings name the NVUE switch and port

FABRIC = {"transport": "roce", "roce": {"no_drop_priority": 3}}
HOSTS = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}], "node2": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2"}]}


def _judge(d):
    snap = {"failed": False, "platform": "nvue", "ports": {}, "lossless": d.lossless(PORTS)}
    return incast_switch.lossless_findings({"leaf1": {"before": snap, "after": snap}}, FABRIC, HOSTS, {}, faults.finding)


def test_findings_name_the_nvue_switch_and_port(tmp_path, monkeypatch):
    d, sim = _applied(tmp_path, monkeypatch)
    assert _judge(d) == ([], {})  # healthy: zero findings, nothing unproven
    sim.sw.fault_headroom_zero("swp2")
    out, unproven = _judge(d)
    assert unproven == {}
    assert [(x["code"], x["severity"], x["switch"], x["switch_port"], x["node"], x["device"]) for x in out] == [
        ("SWITCH_NO_HEADROOM", "error", "leaf1", "swp2", "node2", "mlx5_0")
    ]
    sim.sw.fault_headroom_restore("swp2")
    sim.sw.fault_pfcwd_off()
    out, _ = _judge(d)
    assert [(x["code"], x["switch"], x["switch_port"], x["node"]) for x in out] == [
        ("PFC_WATCHDOG_OFF", "leaf1", "swp1", "node1"),
        ("PFC_WATCHDOG_OFF", "leaf1", "swp2", "node2"),
    ]
