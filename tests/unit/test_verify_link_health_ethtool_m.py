"""ethtool -m, the module's second source in link_health where mlxlink is absent or fails: the role reads it at
the window's end on those RoCE ports, the judge (checks/links.py without_mlxlink) judges the module as it would
mlxlink's and keeps only BER and FEC unproven; the lab's ethtool prints the module mlxlink prints, faults included."""

import os

import pytest
import yaml

from linerate_lab import faults, optics
from linerate_lab.tools import ethtool as sim_ethtool
from linerate_lab.tools import mlxlink as sim_mlxlink

from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ethtool_module import parse_ethtool_module
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import parse_mlxlink
from parser_fixtures import fixture
from checks.test_links import ethtool, run, snap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NO_MFT = "[Errno 2] No such file or directory: b'mlxlink'"
HISENSE = fixture("ethtool_module", "real_sff8636_qsfp28_sr4_hisense_k5.8.txt")
DAC = fixture("ethtool_module", "real_sff8636_qsfp_dac_mcp1600.txt")
LOW_RX = HISENSE.replace(
    "Rcvr signal avg optical power(Channel 3)  : 0.9751 mW / -0.11 dBm", "Rcvr signal avg optical power(Channel 3)  : 0.0251 mW / -16.00 dBm"
)


def judge(module_text, module_err="", mlx_err=NO_MFT, fabric=None):
    end = dict(snap(["mlx5_0"], [ethtool()], mlx=[""], mlx_err=[mlx_err]), ethtool_m=[module_text], ethtool_m_err=[module_err])
    f, rows = run(
        {"node1": {"transport": "roce", "start": snap(["mlx5_0"], [ethtool()]), "end": end}},
        fabric or {"transport": "roce", "link_speed_gbps": 400, "verify": {}},
    )
    return f, rows[0]


BER_ONLY = (
    "node1 mlx5_0: mlxlink unreadable ([Errno 2] No such file or directory: b'mlxlink'); the link's BER and "
    "FEC are not proven (the module read from ethtool -m)"
)


def test_an_mlxlink_less_port_with_a_low_rx_optic_fails_from_ethtool_m():
    f, row = judge(LOW_RX)
    assert [(x["code"], x["severity"]) for x in f] == [("COUNTER_MISSING", "warning"), ("OPTIC_RX_POWER_LOW", "error")]
    assert f[0]["message"] == BER_ONLY and f[0]["counter"] == "mlxlink"
    low = f[1]
    assert (low["node"], low["device"], low["switch"], low["switch_port"]) == ("node1", "mlx5_0", "leaf1", "swp1")
    assert low["evidence"] == {
        "lanes": {2: -16.0},
        "rx_power_dbm": [-0.11, 0.17, -16.0, 0.08],
        "low_threshold_dbm": -14.0,
        "margin_db": 0.0,
        "read_by": "ethtool -m",
    }
    assert low["message"].startswith("node1 mlx5_0: optical module Hisense LTA8531-PC+ receives lane 2 -16 dBm, below -14 dBm") and low["message"].endswith(
        "(cabled to leaf1 swp1)"
    )
    assert not row["ok"] and row["optics"]["rx_power_dbm"] == [-0.11, 0.17, -16.0, 0.08]


def test_a_healthy_optic_leaves_only_ber_and_fec_unproven():
    f, row = judge(HISENSE)
    assert [(x["code"], x["message"]) for x in f] == [("COUNTER_MISSING", BER_ONLY)]
    assert row["ok"] and row["optics"] == {"rx_power_dbm": [-0.11, 0.17, -0.11, 0.08], "temperature_c": 25.7}
    assert row["effective_ber"] is None and row["fec"] is None


def test_a_dac_is_not_judged():
    f, row = judge(DAC)
    assert [x["message"] for x in f] == [BER_ONLY]
    assert row["optics"] == "not judged: Copper cable unequalized" and row["ok"]


def test_a_hot_module_and_a_module_without_thresholds():
    hot = HISENSE.replace(
        "Module temperature                        : 25.70 degrees C / 78.25 degrees F",
        "Module temperature                        : 81.00 degrees C / 177.80 degrees F",
    )
    assert [x["code"] for x in judge(hot)[0]] == ["COUNTER_MISSING", "OPTIC_TEMP_HIGH"]
    f, _ = judge(fixture("ethtool_module", "real_sff8636_qsfp_no_page3_cx3.txt"))
    assert [(x["code"], x["counter"]) for x in f] == [
        ("COUNTER_MISSING", "mlxlink"),
        ("COUNTER_MISSING", "Module Info Rx power"),
        ("COUNTER_MISSING", "Module Info temperature"),
    ]
    assert "reports no Rx power or no alarm thresholds for it (ethtool -m)" in f[1]["message"]


def test_mlxlink_off_and_the_margin_apply_to_ethtool_m_too():
    fabric = {"transport": "roce", "link_speed_gbps": 400, "verify": {"optic_rx_power_margin_db": 13.95}}
    f, _ = judge(HISENSE, mlx_err="mlxlink not read (verify_fabric_link_health_mlxlink: false)", fabric=fabric)
    assert [x["code"] for x in f] == ["COUNTER_MISSING", "OPTIC_RX_POWER_LOW"]
    assert f[0]["message"].startswith("node1 mlx5_0: mlxlink unreadable (mlxlink not read (verify_fabric_link_health_mlxlink: false)); the link's BER and FEC")
    assert f[1]["evidence"]["lanes"] == {0: -0.11, 2: -0.11}


def test_ethtool_m_failing_too_or_not_read_leaves_the_module_unproven():
    err = "netlink error: mlx5_core: Query module eeprom by page failed, read 0 bytes, err -5\nnetlink error: Input/output error\n non-zero return code"
    f, row = judge("", module_err=err)
    assert [x["message"] for x in f] == [
        "node1 mlx5_0: mlxlink unreadable ([Errno 2] No such file or directory: b'mlxlink') and ethtool -m unreadable "
        "(netlink error: mlx5_core: Query module eeprom by page failed, read 0 bytes, err -5 netlink error: "
        "Input/output error non-zero return code); the link's BER, FEC and module are not proven"
    ]
    assert row["optics"] == "not read"
    hexdump = fixture("ethtool_module", "real_error_mlx5_failed_read_hexdump.txt")  # exit 0, a dump of nothing
    f, _ = judge(hexdump)
    assert [x["code"] for x in f] == ["COUNTER_MISSING"] and "ethtool -m unreadable (ethtool -m: a hex dump" in f[0]["message"]
    # not read at all (a skipped item: empty stdout, a blank stderr): mlxlink's message as it always was
    f, row = judge("", module_err=" ")
    assert [x["message"] for x in f] == [
        "node1 mlx5_0: mlxlink unreadable ([Errno 2] No such file or directory: b'mlxlink'); the link's BER, FEC and module are not proven"
    ] and "optics" not in row


def test_a_readable_mlxlink_is_judged_and_ethtool_m_ignored():
    mlx = fixture("counters", "mlxlink_bf3_mft4.30.txt")
    end = dict(snap(["mlx5_0"], [ethtool()], mlx=[mlx]), ethtool_m=[LOW_RX], ethtool_m_err=[""])
    f, rows = run({"node1": {"transport": "roce", "start": snap(["mlx5_0"], [ethtool()]), "end": end}})
    assert f == [] and rows[0]["optics"].startswith("not judged: Copper")


# ---------------------------------------------------------------- the role's read


def _tasks():
    with open(os.path.join(ROOT, "roles", "verify_fabric", "tasks", "link_health.yml")) as f:
        return yaml.safe_load(f)


def test_the_role_reads_ethtool_m_at_the_end_where_mlxlink_failed_and_records_it():
    task = next(t for t in _tasks() if "ethtool -m" in t["name"])
    assert task["ansible.builtin.command"]["argv"] == ["ethtool", "-m", "{{ item.netdev }}"]
    assert task["failed_when"] is False and task["changed_when"] is False
    assert task["register"] == "verify_fabric_link_ethtool_m"
    when = " ".join(task["when"])
    for cond in (
        "verify_fabric_link_health_phase == 'end'",
        "verify_fabric_fabric.transport == 'roce'",
        "item.netdev",
        "not verify_fabric_link_health_mlxlink | bool",
        "verify_fabric_link_port_mlxlink.rc | default(1) != 0",
    ):
        assert cond in when
    record = next(t for t in _tasks() if t["name"] == "Record the snapshot for the report")
    text = record["ansible.builtin.set_fact"]["verify_fabric_link_health"]
    assert "'ethtool_m': verify_fabric_link_ethtool_m.results" in text and "'ethtool_m_err':" in text


def test_the_phase_variable_has_end_among_its_values():
    from ansible_collections.linerate.fabric.plugins.module_utils.checks import registry

    assert [p.window for p in registry.PHASES if p.tasks == "link_health.yml"] == ["start", "end"]


# ---------------------------------------------------------------- the lab's ethtool -m


def test_the_lab_prints_ethtool_6_1_cmis_for_its_400g_osfp_and_it_reads_as_mlxlink_does(lab, monkeypatch):
    monkeypatch.setattr(sim_mlxlink, "uptime_s", lambda: 3600.0)
    rc, out, err = lab.run(sim_ethtool, ["-m", "enp65s0f0np0"])
    assert rc == 0 and err == ""
    assert out.startswith("\tIdentifier                                : 0x19 (OSFP 8X Pluggable Transceiver)\n")
    assert "\tRcvr signal avg optical power (Channel 1) : 1.5488 mW / 1.90 dBm\n" in out
    assert "\tRcvr signal avg optical power (Channel 8) : 0.0000 mW / -inf dBm\n" in out  # lanes 5-8 unused
    assert "\tLaser rx power low alarm threshold        : 0.0910 mW / -10.41 dBm\n" in out
    m = parse_ethtool_module(out)
    ml = parse_mlxlink(lab.run(sim_mlxlink, ["-d", "mlx5_0", "-m", "-c"])[1])["module"]
    assert m["ddm"] == {k: ml["ddm"][k] for k in ("rx_power_dbm", "temperature_c")}
    assert (m["vendor"], m["part_number"], m["optical"]) == (ml["vendor"], ml["part_number"], True)
    assert judge(out)[0][1:] == []


def test_optic_degrade_shows_in_both_tools_and_ethtool_m_alone_fails_the_port(lab, monkeypatch):
    monkeypatch.setattr(sim_mlxlink, "uptime_s", lambda: 3600.0)
    faults.apply("optic-degrade", ["node1", "mlx5_0"], lab=None)
    out = lab.run(sim_ethtool, ["-m", "enp65s0f0np0"])[1]
    assert "\tModule temperature                        : 78.00 degrees C / 172.40 degrees F\n" in out
    assert "\tModule temperature high alarm             : On\n" in out
    m = parse_ethtool_module(out)["ddm"]
    ml = parse_mlxlink(lab.run(sim_mlxlink, ["-d", "mlx5_0", "-m"])[1])["module"]["ddm"]
    assert m["rx_power_dbm"] == ml["rx_power_dbm"] == {"values": [-14.0] * 4, "low": -10.41, "high": 6.0}
    assert m["temperature_c"]["values"] == ml["temperature_c"]["values"] == [78.0]
    f, _ = judge(out)
    assert [x["code"] for x in f] == ["COUNTER_MISSING", "OPTIC_RX_POWER_LOW", "OPTIC_TEMP_HIGH"]
    # the other port's module is untouched
    other = lab.run(sim_ethtool, ["-m", lab.nic("mlx5_1")["netdev"]])[1]
    assert parse_ethtool_module(other)["ddm"]["rx_power_dbm"]["values"] == [1.9] * 4


def test_a_slower_port_carries_a_qsfp28_printed_as_sff_8636(lab):
    lab.update(lambda n: n["nics"][0].update(speed_gbps=100))
    out = lab.run(sim_ethtool, ["-m", "enp65s0f0np0"])[1]
    assert "\tIdentifier                                : 0x11 (QSFP28)\n" in out
    assert "\tRcvr signal avg optical power(Channel 4)  : 1.5488 mW / 1.90 dBm\n" in out
    assert parse_ethtool_module(out)["part_number"] == "MMA1B00-C100D"


def test_module_eeprom_error_fails_ethtool_m_as_mlx5_does_while_mlxlink_still_reads_it(lab, monkeypatch):
    monkeypatch.setattr(sim_mlxlink, "uptime_s", lambda: 3600.0)
    faults.apply("module-eeprom-error", ["node1", "mlx5_0"], lab=None)
    rc, out, err = lab.run(sim_ethtool, ["-m", "enp65s0f0np0"])
    assert (rc, out) == (1, "") and err == (
        "netlink error: mlx5_core: Query module eeprom by page failed, read 0 bytes, err -5\nnetlink error: Input/output error\n"
    )
    assert parse_mlxlink(lab.run(sim_mlxlink, ["-d", "mlx5_0", "-m"])[1])["module"]["optical"]
    f, row = judge(out, module_err=err)
    assert [x["code"] for x in f] == ["COUNTER_MISSING"] and row["optics"] == "not read"
    faults.apply("module-eeprom-restore", ["node1", "mlx5_0"], lab=None)
    assert lab.run(sim_ethtool, ["-m", "enp65s0f0np0"])[0] == 0
    assert lab.model()["faults"] == []


def test_the_lab_modules_thresholds_are_the_ones_both_tools_print():
    assert sim_mlxlink.DDM_THRESHOLDS is optics.ALARMS
    for key, (low, high) in optics.WARNINGS.items():
        alow, ahigh = optics.ALARMS[key]
        assert alow < low < high < ahigh, key


@pytest.mark.parametrize("argv", [["--json", "-m", "enp65s0f0np0"], ["-m", "enp65s0f0np0", "hex", "on"]])
def test_what_the_lab_does_not_model_goes_to_debians_ethtool(lab, monkeypatch, argv):
    seen = []
    monkeypatch.setattr(sim_ethtool, "delegate", lambda a: seen.append(a) or 1)
    assert lab.run(sim_ethtool, argv)[0] == 1 and seen == [argv]
