"""NVUE: parser, exact delta commands, idempotence, push and rollback paths."""
import pytest

from switch_testlib import fixture, make, render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch import nvue
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError, run_apply

PORTS = ["swp1", "swp2"]

EXPECTED = [
    "nv set qos pfc linerate switch-priority 3",
    "nv set qos mapping linerate trust l3",
    "nv set qos mapping linerate dscp 26 switch-priority 3",
    "nv set qos mapping linerate dscp 48 switch-priority 6",
    "nv set qos congestion-control linerate traffic-class 3 ecn enable",
    "nv set qos congestion-control linerate traffic-class 3 min-threshold 150KB",
    "nv set qos congestion-control linerate traffic-class 3 max-threshold 1500KB",
    "nv set qos congestion-control linerate traffic-class 3 probability 100",
    "nv set interface swp1 link mtu 9216",
    "nv set interface swp1 link speed 400G",
    "nv set interface swp1 qos mapping profile linerate",
    "nv set interface swp1 qos congestion-control profile linerate",
    "nv set interface swp2 link mtu 9216",
    "nv set interface swp2 link speed 400G",
    "nv set interface swp2 qos pfc profile linerate",
    "nv set interface swp2 qos mapping profile linerate",
    "nv set interface swp2 qos congestion-control profile linerate",
]


def test_parse_config_show_commands():
    facts = nvue.parse_nvue_commands(fixture("nvue_config_show_commands.txt"))
    assert facts["qos pfc linerate switch-priority"] == "3,4"
    assert facts["interface swp1 link mtu"] == "9000"
    assert facts["system hostname"] == "leaf1"


def test_parse_skips_comments_and_the_trailing_apply():
    assert nvue.parse_nvue_commands("# header\nnv set system hostname x\nnv config apply\n") == {
        "system hostname": "x"}


def test_parse_rejects_non_config_output():
    with pytest.raises(ValueError):
        nvue.parse_nvue_commands("Error: The requested item does not exist.")


def test_exact_delta_commands():
    d, _ = make("nvue")
    want = d.parse(render("nvue", PORTS))
    have = d.parse(fixture("nvue_config_show_commands.txt"))
    assert d.commands(want, have, d.managed_scope(want, PORTS)) == EXPECTED


def test_unset_only_inside_scope():
    d, _ = make("nvue")
    want = d.parse(render("nvue", PORTS, switch_fabric_ecn_enabled=False))
    have = d.parse(fixture("nvue_config_show_commands.txt") + render("nvue", PORTS))
    cmds = d.commands(want, have, d.managed_scope(want, PORTS))
    assert "nv unset qos congestion-control linerate traffic-class 3 ecn" in cmds
    assert "nv unset interface swp1 qos congestion-control profile" in cmds
    assert not any("qos pfc other" in c or "description" in c for c in cmds)


def test_idempotent_when_running_equals_intent():
    d, _ = make("nvue")
    text = render("nvue", PORTS)
    want = d.parse(text)
    assert d.commands(want, d.parse(fixture("nvue_config_show_commands.txt") + text),
                      d.managed_scope(want, PORTS)) == []


def test_oper_parsers():
    summary = nvue.parse_interface_summary(fixture("nvue_show_interface.txt"))
    assert summary["swp1"]["up"] is True and summary["swp2"]["up"] is False
    on = nvue.parse_roce_status(fixture("nvue_roce_status_on.txt"))
    assert on["pfc"] == [3] and on["ecn"] is True and on["trust"] == "dscp"
    off = nvue.parse_roce_status(fixture("nvue_roce_status_off.txt"))
    assert off["pfc"] == [] and off["ecn"] is False and off["trust"] == "pcp"
    assert nvue.parse_revisions(fixture("nvue_revision.txt"))[-1] == ("2", "applied_and_saved")


def test_roce_status_real_global_outputs_cl50_and_cl512():
    # 'nv show qos roce' as the 5.0 docs print it (description column) and as
    # the 5.12 docs print it (no description; mode lossless-single-ipool)
    want = {"pfc": [3], "trust": "pcp,dscp", "ecn": True, "min_threshold": "146.48 KB", "max_threshold": "1.43 MB"}
    assert nvue.parse_roce_status(fixture("real_nvue_roce_status_global_cl50.txt")) == want
    assert nvue.parse_roce_status(fixture("real_nvue_roce_status_global_cl512.txt")) == want


def test_check_mode_only_reads():
    d, fake = make("nvue", answers={"nv config show -o commands": fixture("nvue_config_show_commands.txt")})
    res = run_apply(d, render("nvue", PORTS), ports=PORTS, check_mode=True)
    assert fake.sent == ["nv config show -o commands"]
    assert res["changed"] is True and res["commands"] == EXPECTED
    assert "+nv set" not in res["diff"]["before"] and "link mtu 9216" in res["diff"]["after"]


def test_rejected_set_detaches_pending_revision(tmp_path):
    running = fixture("nvue_config_show_commands.txt")
    d, fake = make("nvue", answers={
        "nv config show -o commands": running,
        "nv config revision": fixture("nvue_revision.txt"),
        "nv set interface swp1 link speed 400G": "Error: '400G' is not a valid value for 'speed'",
    })
    with pytest.raises(SwitchError) as err:
        run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path), stamp="T1")
    assert "switch sw: push failed: rejected command 'nv set interface swp1 link speed 400G'" in str(err.value)
    assert err.value.rolled_back is True and err.value.changed is False
    assert fake.sent[:3] == ["nv config show -o commands", "nv config diff", "nv config revision"]
    i = fake.sent.index("nv set interface swp1 link speed 400G")
    assert fake.sent[i + 1:] == ["nv config detach", "nv config revision", "nv config show -o commands",
                                 "nv config diff", "nv config revision"]
    assert not any(c.startswith("nv config apply") for c in fake.sent)
    backup = tmp_path / "sw" / "T1.nvue.cfg"
    assert backup.read_text() == running and oct(backup.stat().st_mode & 0o777) == "0o600"


def test_failed_post_check_reapplies_previous_revision(tmp_path):
    running = fixture("nvue_config_show_commands.txt")
    after = running + render("nvue", PORTS)
    d, fake = make("nvue", answers={
        "nv config show -o commands": [running, after, running],
        "nv config revision": fixture("nvue_revision.txt"),
        "nv show interface": fixture("nvue_show_interface.txt"),   # swp2 is down
        "nv show interface swp1 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv show interface swp2 qos roce status": fixture("nvue_roce_status_on.txt"),
        "nv config apply --confirm 120s -y": "applied [rev_id: 3]",
    })
    with pytest.raises(SwitchError) as err:
        run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path), confirm_timeout=120,
                  want_pfc=[3], want_ecn=True, stamp="T2")
    assert "switch sw: post-check failed: swp2: link is down; rolled back: the running config is " \
           "byte-identical" in str(err.value)
    assert "nv config apply --confirm 120s -y" in fake.sent
    assert "nv config apply 2 -y" in fake.sent and "nv config confirm -y" not in fake.sent
    assert err.value.rolled_back is True


def test_apply_then_second_run_is_idempotent_on_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", PORTS)
    res = run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"),
                    want_pfc=[3], want_ecn=True)
    assert res["changed"] and "nv config confirm -y" in sim.sent
    assert sim.sw.confirm is None and sim.sw.pending is None
    again = run_apply(d, render("nvue", PORTS), ports=PORTS, backup_dir=str(tmp_path / "b"))
    assert again["changed"] is False and again["commands"] == []
    assert sim.sw.port_config()["swp1"]["pfc"] == [3]
