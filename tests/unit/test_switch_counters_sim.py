"""Switch-side congestion counters: the simulators serve the model's counters in each platform's
real format, and the drivers read them back through the real parsers (read-only)."""

import pytest

from switch_testlib import sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_nvue_roce_counters, parse_sonic_pfc_counters

PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}


def put_counters(port, counters):
    from simcore import model

    with model.locked() as m:
        m["switches"]["sw"].setdefault("ports", {}).setdefault(port, {})["counters"] = counters


def pfc_on(d, platform, ports):
    """Apply the lab's fabric config (PFC on priority 3) through the driver, as switch_config does."""
    from switch_testlib import render
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

    run_apply(d, want_text=render(platform, ports), ports=ports)


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_zero_counters_before_any_traffic(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    c = d.qos_counters(PORTS[platform])
    assert set(c) == set(PORTS[platform])
    for v in c.values():
        assert v["rx_pause_total"] == 0 and v["tx_pause_total"] == 0 and v["missing"]
    assert all(not cmd.startswith(("nv set", "sudo config", "configure")) for cmd in sim.sent)  # read-only


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_counters_from_the_model_come_back_through_the_real_format(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    pfc_on(d, platform, PORTS[platform])
    port = PORTS[platform][1]
    put_counters(
        port,
        {
            "rx_pause": [0, 0, 0, 1234, 0, 0, 7, 0],
            "tx_pause": [0, 0, 0, 56789, 0, 0, 0, 0],
            "drops": [0, 0, 0, 11, 0, 0, 0, 0],
            "ecn_marked": {"3": 4242},
            "cnp_tx": 9,
        },
    )
    c = d.qos_counters(PORTS[platform])[port]
    other = d.qos_counters(PORTS[platform])[PORTS[platform][0]]
    assert other["rx_pause_total"] == 0
    if platform == "sonic":
        assert c["rx_pause"][3] == 1234 and c["rx_pause"][6] == 7 and c["tx_pause"][3] == 56789
        assert c["per_priority"] and c["drops"][3] == 11 and c["drops"][0] == 0
        assert c["ecn_marked"] == 4242 and c["missing"] == ["CNPs sent"]
    elif platform == "nvue":
        assert c["rx_pause"] == {3: 1234} and c["tx_pause"] == {3: 56789}
        assert c["ecn_marked"] == 4242 and c["drops"] == {3: 11} and c["cnp_tx"] == 9
    else:
        assert c["rx_pause_total"] == 1241 and c["tx_pause_total"] == 56789 and c["rx_pause"] is None


def test_sonic_layout_is_pfcstats(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "sonic", ["Ethernet0"])
    put_counters("Ethernet0", {"rx_pause": [1200, 201, 202, 203, 204, 205, 206, 207]})
    out = sim("show pfc counters")
    # the same layout as sonic-utilities' own expected output (tests/pfcstat_test.py)
    assert out.splitlines()[:3] == [
        "  Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7",
        "---------  ------  ------  ------  ------  ------  ------  ------  ------",
        "Ethernet0   1,200     201     202     203     204     205     206     207",
    ]
    assert parse_sonic_pfc_counters(out)["rx"]["Ethernet0"][0] == 1200


def test_nvue_unknown_port_and_layout(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", ["swp1"])
    assert sim("nv show interface swp9 qos roce counters").startswith("Error: The requested item does not exist")
    out = sim("nv show interface swp1 qos roce counters")
    # row for row the layout of the Cumulus Linux 5.12 documentation capture (fixtures/counters)
    from parser_fixtures import fixture

    real = fixture("counters", "nvue_roce_counters_cl512.txt").splitlines()
    mine = out.splitlines()
    assert [ln.split("  ")[0] for ln in mine] == [ln.split("  ")[0] for ln in real]
    assert [len(ln) - len(ln[31:].lstrip()) if len(ln) > 31 else None for ln in mine[2:]] == [
        len(ln) - len(ln[31:].lstrip()) if len(ln) > 31 else None for ln in real[2:]
    ]
    assert "    ecn-marked-packets         0 " in out
    assert parse_nvue_roce_counters(out)["tree"]["tx-stats"]["tx-pfc-stats"]["pause-packets"] == 0


def test_the_physics_spelling_is_served_too(tmp_path, monkeypatch):
    """congestion.py keeps {"pfc_tx": {"3": n}, "queue_drop": {...}, "ecn_marked": {...}}."""
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "sonic", ["Ethernet0"])
    put_counters("Ethernet0", {"pfc_tx": {"3": 40}, "tx_pause": [0, 0, 0, 2, 0, 0, 0, 0], "queue_drop": {"3": 5}, "ecn_marked": {"3": 6, "0": 1}})
    from sim_counters import port_counters

    c = port_counters("sw", "Ethernet0")
    assert c["tx_pause"][3] == 42 and c["drops"][3] == 5 and c["ecn_marked"] == 7
    assert d.qos_counters(["Ethernet0"])["Ethernet0"]["tx_pause"][3] == 42


def test_sonic_queue_counters_carry_drops_and_ecn_per_queue(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "sonic", ["Ethernet0", "Ethernet8"])
    put_counters("Ethernet8", {"queue_drop": {"3": 900}, "ecn_marked": {"3": 77}})
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_sonic_queue_counters

    q = parse_sonic_queue_counters(sim("show queue counters Ethernet8"))
    assert q["ports"]["Ethernet8"]["UC3"]["drop_pkts"] == 900 and q["ports"]["Ethernet8"]["UC3"]["ecn_marked_pkts"] == 77
    assert "Ethernet0" not in q["ports"]
    assert sim("show queue counters Ethernet99") == "Cannot find interface Ethernet99"
    c = d.qos_counters(["Ethernet8"])["Ethernet8"]
    assert c["drops"][3] == 900 and c["ecn_marked"] == 77
