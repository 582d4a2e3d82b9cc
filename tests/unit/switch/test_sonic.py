"""SONiC: CONFIG_DB facts, exact delta commands, idempotence, checkpoint/rollback."""

import pytest

from switch_testlib import fixture, make, render, sim_driver, unlocked

from ansible_collections.linerate.fabric.plugins.module_utils.switch import sonic
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

PORTS = ["Ethernet0", "Ethernet8"]

EXPECTED = [
    "sudo sonic-db-cli CONFIG_DB hdel 'DSCP_TO_TC_MAP|LINERATE' 46",
    "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PROFILE|pg_lossless_400000_5m_profile' dynamic_th 0",
    "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PROFILE|pg_lossless_400000_5m_profile' pool ingress_lossless_pool",
    "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PROFILE|pg_lossless_400000_5m_profile' size 250880",
    "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PROFILE|pg_lossless_400000_5m_profile' xoff 231424",
    "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PROFILE|pg_lossless_400000_5m_profile' xon 19456",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 0 0",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 1 1",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 2 2",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 3 3",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 4 4",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 5 5",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 6 6",
    "sudo sonic-db-cli CONFIG_DB hset 'TC_TO_PRIORITY_GROUP_MAP|LINERATE' 7 7",
    "sudo sonic-db-cli CONFIG_DB hset 'DSCP_TO_TC_MAP|LINERATE' 48 6",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' ecn ecn_all",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' wred_green_enable true",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' green_min_threshold 153600",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' green_max_threshold 1536000",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' green_drop_probability 100",
    "sudo sonic-db-cli CONFIG_DB hset 'CABLE_LENGTH|AZURE' Ethernet0 5m",
    "sudo sonic-db-cli CONFIG_DB hset 'CABLE_LENGTH|AZURE' Ethernet8 5m",
    "sudo config interface mtu Ethernet0 9216",
    "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PG|Ethernet0|3' profile pg_lossless_400000_5m_profile",
    "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PG|Ethernet8|3' profile pg_lossless_400000_5m_profile",
    "sudo sonic-db-cli CONFIG_DB hset 'QUEUE|Ethernet0|3' wred_profile LINERATE_LOSSLESS",
    "sudo sonic-db-cli CONFIG_DB hset 'QUEUE|Ethernet8|3' wred_profile LINERATE_LOSSLESS",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet0' dscp_to_tc_map LINERATE",
    "sudo config interface pfc priority Ethernet0 4 off",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet0' pfcwd_sw_enable 3",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet0' tc_to_pg_map LINERATE",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet8' dscp_to_tc_map LINERATE",
    "sudo config interface pfc priority Ethernet8 3 on",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet8' pfcwd_sw_enable 3",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet8' tc_to_pg_map LINERATE",
    "sudo config pfcwd start --action drop ports Ethernet0 detection-time 200 --restoration-time 200",
    "sudo config pfcwd start --action drop ports Ethernet8 detection-time 200 --restoration-time 200",
]


def test_exact_delta_commands():
    d, _ = make("sonic")
    want = d.parse(render("sonic", PORTS))
    have = d.parse(fixture("sonic_running.json"))
    assert d.commands(want, have, d.managed_scope(want, PORTS)) == EXPECTED


def test_template_is_config_db_json():
    facts = sonic.parse_config_db(render("sonic", PORTS))
    assert facts["PORT_QOS_MAP"]["Ethernet8"] == {"dscp_to_tc_map": "LINERATE", "pfc_enable": "3", "pfcwd_sw_enable": "3", "tc_to_pg_map": "LINERATE"}
    assert facts["DSCP_TO_TC_MAP"]["LINERATE"] == {"26": "3", "48": "6"}
    assert facts["PORT"]["Ethernet0"] == {"speed": "400000", "mtu": "9216"}


def test_idempotent():
    d, _ = make("sonic")
    want = d.parse(render("sonic", PORTS))
    assert d.commands(want, want, d.managed_scope(want, PORTS)) == []


def arm(unit, seconds, checkpoint):
    """The dead-man timer's systemd-run line: back to the checkpoint, saved, the checkpoint removed."""
    return (
        f"sudo systemd-run --unit={unit} --on-active={seconds}s /bin/sh -c '/usr/local/bin/config rollback "
        f"{checkpoint} && /usr/local/bin/config save -y && /usr/local/bin/config delete-checkpoint {checkpoint}'"
    )


def test_rejected_command_rolls_back_to_checkpoint(tmp_path):
    running = fixture("sonic_running.json")
    d, fake = make(
        "sonic",
        answers={
            "show runningconfiguration all": running,
            "cat /etc/sonic/config_db.json": running,
            "sudo config list-checkpoints": ["[]", '["linerate-T1"]', "[]"],
            "sudo config interface mtu Ethernet0 9216": "Usage: config interface mtu [OPTIONS] <interface_name> <interface_mtu>\n"
            'Try "config interface mtu -h" for help.\n\n'
            'Error: Invalid value for "<interface_mtu>": 9216 is not in the valid range of 68 to 9100.',
        },
    )
    with pytest.raises(SwitchError) as err:
        run_apply(d, render("sonic", PORTS), ports=PORTS, backup_dir=str(tmp_path), stamp="T1")
    assert "rejected command 'sudo config interface mtu Ethernet0 9216'" in str(err.value)
    i = fake.sent.index("sudo config checkpoint linerate-T1")
    # begin: the checkpoint, the push's dead-man timer (every command's timeout plus the margin); the re-read;
    # then the push
    budget = len(EXPECTED) * d.command_timeout + sonic.PUSH_MARGIN_S
    assert d.window_commands == len(EXPECTED) and d.push_budget() == budget
    assert fake.sent[i + 1 : i + 3] == [arm("linerate-deadman-T1-push", budget, "linerate-T1"), "show runningconfiguration all"]
    assert fake.sent[i + 3 : i + 3 + 9] == EXPECTED[:9]
    i = fake.sent.index("sudo config interface mtu Ethernet0 9216")
    assert fake.sent[i + 1 : i + 8] == [
        "sudo systemctl stop linerate-deadman-T1-push.timer",
        "sudo config list-checkpoints",
        "sudo config rollback linerate-T1",
        "show runningconfiguration all",
        "cat /etc/sonic/config_db.json",
        "sudo config delete-checkpoint linerate-T1",
        "show runningconfiguration all",
    ]
    assert "sudo config save -y" not in fake.sent
    assert err.value.rolled_back is True


def test_pending_reports_unsaved_config_and_leftover_checkpoint():
    d, _ = make(
        "sonic",
        answers={
            "show runningconfiguration all": fixture("sonic_running.json"),
            "cat /etc/sonic/config_db.json": "{}",
            "sudo config list-checkpoints": '[\n    "linerate-20261122T040000Z"\n]',
        },
    )
    pend = d.pending()
    assert len(pend) == 2 and "linerate-20261122T040000Z" in pend[0] and "not saved" in pend[1]


def test_apply_round_trip_on_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "sonic", PORTS)
    before = d.get_running()
    res = run_apply(d, render("sonic", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"), want_pfc=[3], want_ecn=True)
    sent = unlocked(sim.sent)
    cp = sent[-1].split()[-1]
    unit = "linerate-deadman-" + cp[len("linerate-") :]
    # saved while the dead-man timer still runs; stopped only once it is read to be still waiting
    assert res["changed"] and sent[-5:] == [
        f"systemctl show -p SubState --value {unit}.timer",
        "sudo config save -y",
        f"systemctl show -p SubState --value {unit}.timer",
        f"sudo systemctl stop {unit}.timer",
        f"sudo config delete-checkpoint {cp}",
    ]
    assert sim.sw.timers == {}  # both dead-man timers were stopped (a stopped transient unit is unloaded)
    assert run_apply(d, render("sonic", PORTS), ports=PORTS)["commands"] == []
    restore = run_apply(d, open(res["backup_path"]).read(), full=True, backup_dir=str(tmp_path / "b"))
    assert restore["changed"] and d.get_running() == before


def test_view_and_out_of_scope():
    d, _ = make("sonic")
    facts = {"PORT": {"Ethernet0": {"mtu": "9216", "admin_status": "up"}}, "DEVICE_METADATA": {"localhost": {}}}
    scope = d.managed_scope(facts, ["Ethernet0"])
    assert d.view(facts, scope) == '{\n    "PORT": {\n        "Ethernet0": {\n            "mtu": "9216"\n        }\n    }\n}\n'
    assert d.out_of_scope(facts, scope, ["Ethernet0"]) == ["PORT|Ethernet0 admin_status=up"]


@pytest.mark.parametrize(
    "text,message",
    [
        ("not json\nsecond", "sonic: running configuration is not JSON: 'not json'"),
        ("[1]", "sonic: running configuration is not a JSON object"),
        ('{"PORT": {"Ethernet0": 3}}', "sonic: running configuration: PORT|Ethernet0 is not an object of fields: 3"),
    ],
)
def test_config_db_errors(text, message):
    with pytest.raises(sonic.ParseError) as err:
        sonic.parse_config_db(text)
    assert str(err.value) == message and err.value.tool == "sonic"
    d, _ = make("sonic", "leaf5")
    with pytest.raises(SwitchError) as err:
        d.parse(text)
    assert str(err.value) == f"switch leaf5: {message}"


def test_config_db_values_as_strings():
    assert sonic.parse_config_db('{"A": {"k": {"n": 3, "l": [1, 2]}, "e": null}, "B": "x"}') == {"A": {"k": {"n": "3", "l": "1,2"}, "e": {}}}
    assert sonic.parse_config_db("  ") == {}


# ---------------------------------------------------------------- pending state and the checkpoint steps


def test_pending_exact_messages():
    saved = '{"PORT": {"Ethernet0": {"mtu": "9100"}}, "QUEUE": {}, "VLAN": {"Vlan1": {}}}'
    running = '{"PORT": {"Ethernet0": {"mtu": "9216"}}, "QUEUE": {"Ethernet0|3": {}}, "VLAN": {"Vlan1": {}}}'
    d, fake = make(
        "sonic",
        answers={
            "sudo config list-checkpoints": '["linerate-T1", "manual", "linerate-T2"]',
            "show runningconfiguration all": running,
            "cat /etc/sonic/config_db.json": saved,
        },
    )
    assert d.pending() == [
        "checkpoints of an unfinished change window: linerate-T1, linerate-T2",
        "running configuration is not saved (differs from /etc/sonic/config_db.json in PORT, QUEUE)",
    ]
    assert fake.sent == ["sudo config list-checkpoints", "show runningconfiguration all", "cat /etc/sonic/config_db.json"]
    d, _ = make("sonic", answers={"sudo config list-checkpoints": '["manual"]', "show runningconfiguration all": saved, "cat /etc/sonic/config_db.json": saved})
    assert d.pending() == []


@pytest.mark.parametrize(
    "listing,names", [("", []), ("[]", []), ('[\n  "a",\n  "linerate-T1"\n]', ["a", "linerate-T1"]), ('checkpoints: "a" "linerate-T1"', ["a", "linerate-T1"])]
)
def test_checkpoints_listing(listing, names):
    d, _ = make("sonic", answers={"sudo config list-checkpoints": listing})
    assert d.checkpoints() == names


class Timed:
    """Records (command, timeout) of each send."""

    def __init__(self, answers):
        self.answers, self.sent = answers, []

    def __call__(self, command, timeout=None):
        self.sent.append((command, timeout))
        return self.answers.get(command, "")


def test_checkpoint_window_commands():
    d, _ = make("sonic")
    d.command_timeout = 90
    d.window_commands = 4
    waiting = {f"systemctl show -p SubState --value linerate-deadman-{u}.timer": "waiting" for u in ("T1-push", "T3-push", "T3")}
    d.send = fake = Timed(dict(waiting, **{"sudo config delete-checkpoint linerate-T1": "Error: no such checkpoint"}))
    d.begin("T1")
    d.commit(300)
    d.rollback()  # the checkpoint may already be gone: its deletion is not checked
    d.rollback()  # nothing left to roll back
    d.begin("T2")
    d.abort()
    d.begin("T3")
    d.commit(240)
    d.confirm()
    push = 4 * 90 + sonic.PUSH_MARGIN_S
    assert fake.sent == [
        ("sudo config checkpoint linerate-T1", None),
        (arm("linerate-deadman-T1-push", push, "linerate-T1"), None),
        # commit: the confirm timer first, then the push timer stops (never none)
        (arm("linerate-deadman-T1", 300, "linerate-T1"), None),
        ("systemctl show -p SubState --value linerate-deadman-T1-push.timer", None),
        ("sudo systemctl stop linerate-deadman-T1-push.timer", None),
        ("sudo systemctl stop linerate-deadman-T1.timer", None),
        ("sudo config rollback linerate-T1", 90),
        ("sudo config delete-checkpoint linerate-T1", None),
        ("sudo config checkpoint linerate-T2", None),
        (arm("linerate-deadman-T2-push", push, "linerate-T2"), None),
        ("sudo systemctl stop linerate-deadman-T2-push.timer", None),
        ("sudo config rollback linerate-T2", 90),
        ("sudo config delete-checkpoint linerate-T2", None),
        ("sudo config checkpoint linerate-T3", None),
        (arm("linerate-deadman-T3-push", push, "linerate-T3"), None),
        (arm("linerate-deadman-T3", 240, "linerate-T3"), None),
        ("systemctl show -p SubState --value linerate-deadman-T3-push.timer", None),
        ("sudo systemctl stop linerate-deadman-T3-push.timer", None),
        # confirm: saved while the timer still runs, read again, only then stopped
        ("systemctl show -p SubState --value linerate-deadman-T3.timer", None),
        ("sudo config save -y", None),
        ("systemctl show -p SubState --value linerate-deadman-T3.timer", None),
        ("sudo systemctl stop linerate-deadman-T3.timer", None),
        ("sudo config delete-checkpoint linerate-T3", None),
    ]
    assert d._cp is None and d._deadmen == []
    d.command_timeout = 20
    d.begin("T4")
    d.rollback()
    assert fake.sent[-2] == ("sudo config rollback linerate-T4", 60)


def test_a_push_timer_that_fired_during_the_push_is_not_committed():
    d, _ = make("sonic")
    d.send = fake = Timed({"systemctl show -p SubState --value linerate-deadman-T1-push.timer": "elapsed"})
    d.begin("T1")
    with pytest.raises(
        SwitchError,
        match=r"the push's dead-man timer linerate-deadman-T1-push.timer is elapsed, not "
        r"waiting: it fired during the push",
    ):
        d.commit(300)
    # both timers are the recovery's to stop: the confirm timer was armed before the push timer was read
    assert d._deadmen == ["linerate-deadman-T1-push", "linerate-deadman-T1"]
    d.undo()
    assert [c for c, _ in fake.sent[-3:]][:2] == ["sudo systemctl stop linerate-deadman-T1.timer", "sudo systemctl stop linerate-deadman-T1-push.timer"]


def test_undo_rolls_back_resaves_and_deletes_only_its_own_checkpoint():
    d, _ = make("sonic")
    d.send = fake = Timed(
        {"sudo config list-checkpoints": '["linerate-T1"]', "show runningconfiguration all": '{"A": {}}', "cat /etc/sonic/config_db.json": "{}"}
    )
    d.undo()  # never began: nothing
    assert fake.sent == []
    d.begin("T1")
    d.undo()
    assert [c for c, _ in fake.sent] == [
        "sudo config checkpoint linerate-T1",
        arm("linerate-deadman-T1-push", 60, "linerate-T1"),
        "sudo systemctl stop linerate-deadman-T1-push.timer",
        "sudo config list-checkpoints",
        "sudo config rollback linerate-T1",
        "show runningconfiguration all",
        "cat /etc/sonic/config_db.json",
        "sudo config save -y",
        "sudo config delete-checkpoint linerate-T1",
    ]
    assert d._cp is None
    fake.sent.clear()
    fake.answers["cat /etc/sonic/config_db.json"] = '{"A": {}}'
    d.begin("T1")
    d.undo()
    assert "sudo config save -y" not in [c for c, _ in fake.sent]
    fake.sent.clear()
    d.begin("T2")  # its checkpoint is gone already
    d.undo()
    assert [c for c, _ in fake.sent] == [
        "sudo config checkpoint linerate-T2",
        arm("linerate-deadman-T2-push", 60, "linerate-T2"),
        "sudo systemctl stop linerate-deadman-T2-push.timer",
        "sudo config list-checkpoints",
    ]
    assert d._cp is None


def test_clear_pending_deletes_window_checkpoints_and_saves_a_running_backup():
    d, fake = make(
        "sonic",
        answers={
            "sudo config list-checkpoints": '["linerate-T1", "manual", "linerate-T2"]',
            "show runningconfiguration all": '{"A": {"k": {"f": "1"}}}',
            "cat /etc/sonic/config_db.json": "{}",
        },
    )
    # linerate's own checkpoints (and their dead-man timers) only: "manual" stays
    t1 = "systemctl stop linerate-deadman-T1-push.timer linerate-deadman-T1.timer; config delete-checkpoint linerate-T1"
    t2 = "systemctl stop linerate-deadman-T2-push.timer linerate-deadman-T2.timer; config delete-checkpoint linerate-T2"
    assert d.clear_pending('{"A": {"k": {"f": 1}}}') == [t1, t2, "config save -y (the running config is the backup)"]
    assert fake.sent == [
        "sudo config list-checkpoints",
        "sudo systemctl stop linerate-deadman-T1-push.timer",
        "sudo systemctl stop linerate-deadman-T1.timer",
        "sudo config delete-checkpoint linerate-T1",
        "sudo systemctl stop linerate-deadman-T2-push.timer",
        "sudo systemctl stop linerate-deadman-T2.timer",
        "sudo config delete-checkpoint linerate-T2",
        "show runningconfiguration all",
        "cat /etc/sonic/config_db.json",
        "sudo config save -y",
    ]
    assert d.clear_pending("{}") == [t1, t2]


# ---------------------------------------------------------------- read-only reads, ports the switch lacks


def test_oper_skips_ports_the_switch_does_not_have():
    running = (
        '{"QUEUE": {"Ethernet0|3": {"wred_profile": "LINERATE_LOSSLESS"}, '
        '"Ethernet8|3": {"wred_profile": "AZURE_LOSSLESS"}, "Ethernet8|4": {"wred_profile": "NONE"}}}'
    )
    ecn = "Profile: LINERATE_LOSSLESS\n-----  ---\necn    ecn_none\n\nProfile: AZURE_LOSSLESS\n-----  ---\necn  ecn_all\n"
    d, fake = make(
        "sonic",
        answers={
            "show interfaces status": fixture("sonic_interfaces_status.txt"),
            "show pfc priority": fixture("sonic_pfc_priority.txt"),
            "show ecn": ecn,
            "show runningconfiguration all": running,
        },
    )
    assert d.oper(["Ethernet4", "Ethernet0", "Ethernet8"]) == {
        "Ethernet0": {"up": True, "pfc": [3], "ecn": False, "headroom": [], "pfcwd": []},
        "Ethernet8": {"up": False, "pfc": [3, 4], "ecn": True, "headroom": [], "pfcwd": []},
    }


def counters(name):
    from parser_fixtures import fixture as source_fixture

    return source_fixture("counters", name)


def test_qos_counters_unicast_queues_0_to_7_and_what_is_missing():
    d, _ = make(
        "sonic",
        answers={"show pfc counters": counters("sonic_pfc_counters_unittest.txt"), "show queue counters": counters("sonic_queue_counters_port_alltypes.txt")},
    )
    res = d.qos_counters(["Ethernet12", "Ethernet8", "Ethernet0"])
    assert list(res) == ["Ethernet8", "Ethernet0"]
    e8 = res["Ethernet8"]
    assert e8["drops"] == {0: 0, 1: 68, 2: 79, 3: 63, 4: 62, 5: 30, 6: 99, 7: 38}
    assert e8["rx_pause"] == {0: 1800, 1: 801, 2: 802, 3: 803, 4: 804, 5: 805, 6: 806, 7: 807}
    assert e8["rx_pause_total"] == 1800 + sum(range(801, 808))
    assert e8["tx_pause_total"] == 1810 + sum(range(811, 818))
    assert (e8["ecn_marked"], e8["cnp_tx"], e8["per_priority"]) == (None, None, True)
    assert e8["missing"] == ["ECN-marked packets", "CNPs sent"]
    assert res["Ethernet0"]["drops"] is None
    assert res["Ethernet0"]["missing"] == ["queue drops", "ECN-marked packets", "CNPs sent"]


def test_error_counters_skip_ports_the_switch_does_not_have():
    d, _ = make("sonic", answers={"show interfaces counters": counters("sonic_intf_counters_unittest.txt")})
    c = sonic.switch_counters.parse_sonic_intf_counters(counters("sonic_intf_counters_unittest.txt"))
    ports = list(c["ports"])
    res = d.error_counters(["Ethernet999"] + ports[:2])
    assert list(res) == ports[:2]
    row = c["ports"][ports[0]]
    assert res[ports[0]] == {
        "errors": {k: row[k] for k in ("RX_ERR", "TX_ERR") if row.get(k) is not None},
        "link_down": None,
        "link_down_unit": None,
        "missing": [k for k in ("RX_ERR", "TX_ERR") if row.get(k) is None] + ["link down events"],
    }


# ---------------------------------------------------------------- lossless headroom and PFC watchdog


def test_template_renders_lossless_buffers_and_watchdog():
    facts = sonic.parse_config_db(render("sonic", PORTS))
    assert facts["CABLE_LENGTH"] == {"AZURE": {"Ethernet0": "5m", "Ethernet8": "5m"}}
    # ACS-SN5600's own 400G 5m row (sonic-buildimage device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600/
    # pg_profile_lookup.ini line 25), the SKU the switch asserts
    assert facts["BUFFER_PROFILE"] == {
        "pg_lossless_400000_5m_profile": {"dynamic_th": "0", "pool": "ingress_lossless_pool", "size": "250880", "xoff": "231424", "xon": "19456"}
    }
    assert facts["DEVICE_METADATA"] == {"localhost": {"hwsku": "ACS-SN5600"}}
    assert facts["BUFFER_PG"] == {"Ethernet0|3": {"profile": "pg_lossless_400000_5m_profile"}, "Ethernet8|3": {"profile": "pg_lossless_400000_5m_profile"}}
    assert facts["TC_TO_PRIORITY_GROUP_MAP"] == {"LINERATE": {str(i): str(i) for i in range(8)}}
    assert facts["PFC_WD"]["Ethernet8"] == {"action": "drop", "detection_time": "200", "restoration_time": "200"}


def test_template_uses_sonic_swss_lookup_rows():
    facts = sonic.parse_config_db(
        render(
            "sonic",
            PORTS,
            switch_fabric_cable_length="40m",
            switch_fabric_sonic_hwsku="",
            switch_fabric_ports_effective=[{"name": "Ethernet0", "speed_gbps": 100}],
        )
    )
    assert "DEVICE_METADATA" not in facts  # no SKU asserted
    assert facts["BUFFER_PROFILE"]["pg_lossless_100000_40m_profile"]["xoff"] == "35840"


@pytest.mark.parametrize(
    "over, words",
    [
        ({"switch_fabric_cable_length": "5 meters"}, ["switch_fabric_cable_length", "'5 meters'", "5m, 40m, 300m"]),
        ({"switch_fabric_cable_length": "250m"}, ["speed 400000", "cable 250m", "ACS-SN5600 (Spectrum-4)", "switch_fabric_sonic_pg_lookup"]),
        ({"switch_fabric_pfcwd_detection_ms": 50}, ["switch_fabric_pfcwd_detection_ms", "50", "100..5000"]),
        ({"switch_fabric_pfcwd_action": "shout"}, ["switch_fabric_pfcwd_action", "'shout'", "drop, forward, alert"]),
    ],
)
def test_bad_lossless_intent_fails_naming_key_value_allowed(over, words):
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError) as exc:
        render("sonic", PORTS, **over)
    for w in words:
        assert w in str(exc.value)


def test_scope_owns_lossless_pgs_not_the_lossy_pg0_nor_other_ports():
    d, _ = make("sonic")
    want = d.parse(render("sonic", PORTS))
    scope = d.managed_scope(want, PORTS)
    assert scope("BUFFER_PG", "Ethernet0|3-4", "profile") and not scope("BUFFER_PG", "Ethernet0|0", "profile")
    assert not scope("BUFFER_PG", "Ethernet4|3", "profile")
    assert scope("BUFFER_PROFILE", "pg_lossless_400000_5m_profile", "xoff")
    assert not scope("BUFFER_PROFILE", "ingress_lossy_profile", "size")
    assert scope("PFC_WD", "Ethernet0", "action") and not scope("PFC_WD", "GLOBAL", "POLL_INTERVAL")
    assert scope("CABLE_LENGTH", "AZURE", "Ethernet8") and not scope("CABLE_LENGTH", "AZURE", "Ethernet4")


def test_pfcwd_delta_uses_the_pfcwd_cli():
    d, _ = make("sonic")
    want = d.parse(render("sonic", PORTS))
    have = d.parse(render("sonic", PORTS))
    have["PFC_WD"]["Ethernet0"]["detection_time"] = "400"
    del have["PFC_WD"]["Ethernet8"]
    have["PFC_WD"]["Ethernet8x"] = {"action": "drop"}
    assert d.commands(want, have, d.managed_scope(want, PORTS)) == [
        "sudo config pfcwd start --action drop ports Ethernet0 detection-time 200 --restoration-time 200",
        "sudo config pfcwd start --action drop ports Ethernet8 detection-time 200 --restoration-time 200",
    ]


def test_sim_push_passes_yang_and_postcheck_names_missing_headroom_and_watchdog(tmp_path):
    d, sim = sim_driver(tmp_path, "sonic", PORTS)
    res = run_apply(d, render("sonic", PORTS), ports=PORTS, want_pfc=[3], want_ecn=True, require_up=False)
    assert res["changed"]
    import sonic_yang

    assert sonic_yang.validate(sim.sw.db) == []
    oper = d.oper(PORTS)
    assert oper["Ethernet0"]["headroom"] == [3] and oper["Ethernet0"]["pfcwd"] == [3]
    assert run_apply(d, render("sonic", PORTS), ports=PORTS, want_pfc=[3], want_ecn=True, require_up=False)["commands"] == []
    sim.sw.fault_headroom_zero("Ethernet8")
    sim.sw.fault_pfcwd_off()
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import oper_problems

    probs = oper_problems(d.oper(PORTS), PORTS, [3], True, require_up=False)
    assert any(p.startswith("Ethernet8: no lossless headroom for the no-drop priority 3") for p in probs)
    assert not any(p.startswith("Ethernet0: no lossless headroom") for p in probs)
    assert any(p.startswith("Ethernet0: PFC watchdog off on the no-drop priority 3") for p in probs)
    # the buffer model publishes what congestion.py reads
    assert sim.sw.buffer_state("Ethernet8", {})["headroom"] == []
    assert sim.sw.buffer_state("Ethernet0", {})["headroom"] == [3]
    sim.sw.fault_headroom_restore("Ethernet8")
    sim.sw.fault_pfcwd_restore()
    assert oper_problems(d.oper(PORTS), PORTS, [3], True, require_up=False) == []
