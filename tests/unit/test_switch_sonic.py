"""SONiC: CONFIG_DB facts, exact delta commands, idempotence, checkpoint/rollback."""
import pytest

from switch_testlib import fixture, make, render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch import sonic
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError, run_apply

PORTS = ["Ethernet0", "Ethernet8"]

EXPECTED = [
    "sudo sonic-db-cli CONFIG_DB hdel 'DSCP_TO_TC_MAP|LINERATE' 46",
    "sudo sonic-db-cli CONFIG_DB hset 'DSCP_TO_TC_MAP|LINERATE' 48 6",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' ecn ecn_all",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' wred_green_enable true",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' green_min_threshold 153600",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' green_max_threshold 1536000",
    "sudo sonic-db-cli CONFIG_DB hset 'WRED_PROFILE|LINERATE_LOSSLESS' green_drop_probability 100",
    "sudo sonic-db-cli CONFIG_DB hset 'QUEUE|Ethernet0|3' wred_profile LINERATE_LOSSLESS",
    "sudo sonic-db-cli CONFIG_DB hset 'QUEUE|Ethernet8|3' wred_profile LINERATE_LOSSLESS",
    "sudo config interface mtu Ethernet0 9216",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet0' dscp_to_tc_map LINERATE",
    "sudo config interface pfc priority Ethernet0 4 off",
    "sudo sonic-db-cli CONFIG_DB hset 'PORT_QOS_MAP|Ethernet8' dscp_to_tc_map LINERATE",
    "sudo config interface pfc priority Ethernet8 3 on",
]


def test_exact_delta_commands():
    d, _ = make("sonic")
    want = d.parse(render("sonic", PORTS))
    have = d.parse(fixture("sonic_running.json"))
    assert d.commands(want, have, d.managed_scope(want, PORTS)) == EXPECTED


def test_template_is_config_db_json():
    facts = sonic.parse_config_db(render("sonic", PORTS))
    assert facts["PORT_QOS_MAP"]["Ethernet8"] == {"dscp_to_tc_map": "LINERATE", "pfc_enable": "3"}
    assert facts["DSCP_TO_TC_MAP"]["LINERATE"] == {"26": "3", "48": "6"}
    assert facts["PORT"]["Ethernet0"] == {"speed": "400000", "mtu": "9216"}


def test_idempotent():
    d, _ = make("sonic")
    want = d.parse(render("sonic", PORTS))
    assert d.commands(want, want, d.managed_scope(want, PORTS)) == []


def test_oper_parsers():
    st = sonic.parse_interfaces_status(fixture("sonic_interfaces_status.txt"))
    assert st["Ethernet0"]["up"] is True and st["Ethernet8"]["up"] is False and st["Ethernet0"]["mtu"] == 9216
    assert sonic.parse_pfc_priority(fixture("sonic_pfc_priority.txt")) == {"Ethernet0": [3], "Ethernet8": [3, 4]}
    ecn = sonic.parse_show_ecn(fixture("sonic_show_ecn.txt"))
    assert ecn["LINERATE_LOSSLESS"]["green_min_threshold"] == "153600"
    with pytest.raises(ValueError):
        sonic.parse_pfc_priority("Cannot find interface Ethernet1234")


def test_real_docs_outputs_read_first_table_and_misaligned_rows():
    # Command Reference: two commands in one capture; only the first table's
    # ports, not the second prompt and header as rows
    assert sonic.parse_pfc_priority(fixture("real_sonic_pfc_priority_docs.txt")) == {
        port: [3, 4] for port in ("Ethernet0", "Ethernet2", "Ethernet8", "Ethernet10", "Ethernet16")}
    # rows printed one character left of their rule: MTU 9100 is MTU, not Speed "100G   9"
    st = sonic.parse_interfaces_status(fixture("real_sonic_interfaces_status_docs.txt"))
    assert sorted(st) == ["Ethernet0", "Ethernet4", "Ethernet8"]
    assert st["Ethernet8"] == {"up": False, "admin_up": False, "mtu": 9100, "speed": "100G"}
    assert st["Ethernet0"]["admin_up"] is True


def test_real_unittest_outputs_pfc_priority_and_ecn():
    assert sonic.parse_pfc_priority(fixture("real_sonic_pfc_priority_all_unittest.txt")) == {
        "Ethernet0": [3, 4], "Ethernet4": [3, 4]}
    assert sonic.parse_pfc_priority(fixture("real_sonic_pfc_priority_after_config_on.txt")) == {"Ethernet0": [3, 4, 5]}
    ecn = sonic.parse_show_ecn(fixture("real_sonic_show_ecn_one_profile_msft.txt"))
    assert list(ecn) == ["AZURE_LOSSLESS"] and len(ecn["AZURE_LOSSLESS"]) == 13
    assert (ecn["AZURE_LOSSLESS"]["ecn"], ecn["AZURE_LOSSLESS"]["green_min_threshold"],
            ecn["AZURE_LOSSLESS"]["wred_red_enable"]) == ("ecn_all", "1048576", "true")


def test_rejected_command_rolls_back_to_checkpoint(tmp_path):
    running = fixture("sonic_running.json")
    d, fake = make("sonic", answers={
        "show runningconfiguration all": running,
        "cat /etc/sonic/config_db.json": running,
        "sudo config list-checkpoints": ["[]", '["linerate-T1"]', "[]"],
        "sudo config interface mtu Ethernet0 9216":
            "Usage: config interface mtu [OPTIONS] <interface_name> <interface_mtu>\n"
            "Try \"config interface mtu -h\" for help.\n\n"
            "Error: Invalid value for \"<interface_mtu>\": 9216 is not in the valid range of 68 to 9100.",
    })
    with pytest.raises(SwitchError) as err:
        run_apply(d, render("sonic", PORTS), ports=PORTS, backup_dir=str(tmp_path), stamp="T1")
    assert "rejected command 'sudo config interface mtu Ethernet0 9216'" in str(err.value)
    i = fake.sent.index("sudo config checkpoint linerate-T1")
    assert fake.sent[i + 1:i + 1 + 9] == EXPECTED[:9]
    i = fake.sent.index("sudo config interface mtu Ethernet0 9216")
    assert fake.sent[i + 1:i + 7] == [
        "sudo config list-checkpoints", "sudo config rollback linerate-T1", "show runningconfiguration all",
        "cat /etc/sonic/config_db.json", "sudo config delete-checkpoint linerate-T1",
        "show runningconfiguration all"]
    assert "sudo config save -y" not in fake.sent
    assert err.value.rolled_back is True


def test_pending_reports_unsaved_config_and_leftover_checkpoint():
    d, _ = make("sonic", answers={
        "show runningconfiguration all": fixture("sonic_running.json"),
        "cat /etc/sonic/config_db.json": "{}",
        "sudo config list-checkpoints": '[\n    "linerate-20261122T040000Z"\n]',
    })
    pend = d.pending()
    assert len(pend) == 2 and "linerate-20261122T040000Z" in pend[0] and "not saved" in pend[1]


def test_apply_round_trip_on_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "sonic", PORTS)
    before = d.get_running()
    res = run_apply(d, render("sonic", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"),
                    want_pfc=[3], want_ecn=True)
    assert res["changed"] and sim.sent[-2:] == ["sudo config save -y",
                                                f"sudo config delete-checkpoint {sim.sent[-1].split()[-1]}"]
    assert run_apply(d, render("sonic", PORTS), ports=PORTS)["commands"] == []
    restore = run_apply(d, open(res["backup_path"]).read(), full=True, backup_dir=str(tmp_path / "b"))
    assert restore["changed"] and d.get_running() == before
