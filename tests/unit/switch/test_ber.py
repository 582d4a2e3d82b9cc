"""Switch ports' bit error rate and FEC counters: the parsers on published outputs of every release
layout, N/A values and malformed output."""

import json

import pytest

from parser_fixtures import fixture

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import ber


def errors(pre=None, post=None, corrected=None, uncorrected=None, mode=None):
    return {"pre_fec_ber": pre, "post_fec_ber": post, "fec_corrected": corrected, "fec_uncorrected": uncorrected, "fec_mode": mode}


# ---------------------------------------------------------------- SONiC: one layout per release


def test_sonic_202211_counters_only():
    res = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202211_unittest.txt"))
    assert res == {
        "Ethernet0": errors(corrected=130402, uncorrected=3),
        "Ethernet4": errors(corrected=110412, uncorrected=1),
        "Ethernet8": errors(corrected=100317, uncorrected=0),
    }


def test_sonic_202411_ber_columns_and_the_period_line():
    res = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202411_docs.txt"))
    assert res["Ethernet8"] == errors(pre=1.98e-19, post=0.0, corrected=0, uncorrected=0)
    assert list(res) == ["Ethernet0", "Ethernet8", "Ethernet16"]
    period = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202411_period.txt"))
    assert period["Ethernet4"] == errors(corrected=0, uncorrected=0)


@pytest.mark.parametrize("name", ["real_sonic_fec_stats_202505_docs.txt", "real_sonic_fec_stats_master_docs.txt"])
def test_sonic_later_columns_are_not_read_and_do_not_shift_the_ber(name):
    res = ber.parse_sonic_fec_stats(fixture("switch", name))
    assert res["Ethernet16"] == errors(pre=1.77e-20, post=0.0, corrected=0, uncorrected=0)


def test_sonic_na_ber_is_none_not_zero():
    res = ber.parse_sonic_fec_stats(fixture("switch", "real_sonic_fec_stats_202511_unittest.txt"))
    assert res["Ethernet0"] == errors(corrected=130402, uncorrected=3)
    assert res["Ethernet9"]["pre_fec_ber"] is None and res["Ethernet9"]["fec_uncorrected"] == 0


# ---------------------------------------------------------------- NVUE: phy-detail (5.10 - 5.14), phy health (5.15+)


def test_nvue_phy_detail_reference():
    res = ber.parse_nvue_phy_health(fixture("switch", "real_nvue_phy_detail_reference.txt"), "swp1")
    assert res == {"swp1": errors(pre=1e-7, post=1.5e-254, uncorrected=0)}


@pytest.mark.parametrize("name", ["real_nvue_phy_detail_cl510.txt", "real_nvue_phy_health_cl515.txt", "real_nvue_phy_health_reference.txt"])
def test_nvue_zero_ber_is_printed_as_15e_255(name):
    res = ber.parse_nvue_phy_health(fixture("switch", name), "swp1")["swp1"]
    assert res == errors(pre=1.5e-254, post=1.5e-254, uncorrected=0)


def test_nvue_lane_stats_table_does_not_overwrite_the_port_rows():
    text = (
        fixture("switch", "real_nvue_phy_health_reference.txt")
        .replace("raw-ber                    15E-255", "raw-ber                    2E-5")
        .replace("effective-errors           0", "effective-errors           4096")
    )
    assert ber.parse_nvue_phy_health(text, "swp3") == {"swp3": errors(pre=2e-5, post=1.5e-254, uncorrected=4096)}


# ---------------------------------------------------------------- EOS: PHYs of a port


def test_eos_worst_phy_and_summed_codewords():
    res = ber.parse_eos_phy_detail(fixture("switch", "real_eos_phy_detail_anta_success.json"))
    # the switch chip's line side 5.38e-10 is the worst of its three PHYs; codewords 3 + 2 + 0
    assert res["Ethernet1/1"] == errors(pre=5.378509864228316e-10, corrected=5, uncorrected=0)
    unc = ber.parse_eos_phy_detail(fixture("switch", "real_eos_phy_detail_anta_uncorrected.json"))
    assert unc["Ethernet1/1"]["fec_uncorrected"] == 20 and unc["Ethernet1/1"]["fec_corrected"] == 35
    high = ber.parse_eos_phy_detail(fixture("switch", "real_eos_phy_detail_anta_high_ber.json"))
    assert high["Ethernet3/1/1"]["pre_fec_ber"] == pytest.approx(2.54e-2, rel=1e-3)
    assert high["Ethernet1/2"] == errors()  # no FEC data on any PHY: nothing read, nothing invented


def test_eos_fec_mode_revision_1_text_and_management_port():
    doc = json.loads(fixture("switch", "real_eos_phy_detail_anta_success.json"))
    doc["interfacePhyStatuses"]["Ethernet1/1"]["phyStatuses"][0]["fec"]["encoding"] = "reedSolomon"
    doc["interfacePhyStatuses"]["Ethernet9/1"] = {"phyStatuses": [{"text": "PHY state  linkUp\n"}]}
    doc["interfacePhyStatuses"]["Management1"] = {"phyStatuses": []}
    res = ber.parse_eos_phy_detail(doc)
    assert res["Ethernet1/1"]["fec_mode"] == "reedSolomon" and res["Ethernet9/1"] == errors()
    assert "Management1" not in res


# ---------------------------------------------------------------- not the command's output


@pytest.mark.parametrize(
    "parser, text",
    [
        (ber.parse_sonic_fec_stats, ""),
        (ber.parse_sonic_fec_stats, 'Usage: show interfaces counters [OPTIONS] COMMAND [ARGS]...\n\nError: No such command "fec-stats".'),
        (ber.parse_sonic_fec_stats, "    IFACE    STATE    RX_OK\n---------  -------  -----\nEthernet0  U  1\n"),
        (ber.parse_sonic_fec_stats, "    IFACE    STATE    FEC_CORR    FEC_UNCORR\nEthernet0        U     lots           0\n"),
        (ber.parse_sonic_fec_stats, "    IFACE    STATE    FEC_CORR    FEC_UNCORR\nEthernet0        U     1\n"),
        (ber.parse_nvue_phy_health, "Error: The requested item does not exist."),
        (ber.parse_nvue_phy_health, "                 operational\n---------  -----\nsymbol-errors  0\n"),
        (ber.parse_nvue_phy_health, "raw-ber  high\neffective-ber  0\n"),
        (ber.parse_eos_phy_detail, "% Invalid input"),
        (ber.parse_eos_phy_detail, '{"interfacePhyStatuses": {"Ethernet1/1": {"phyStatuses": {}}}}'),
        (ber.parse_eos_phy_detail, '{"interfacePhyStatuses": {"Ethernet1/1": {"phyStatuses": [{"preFecBer": {"value": "x"}}]}}}'),
    ],
)
def test_malformed_output_raises(parser, text):
    with pytest.raises(ParseError):
        parser(text)


# ---------------------------------------------------------------- the commands each driver sends (read-only)

from switch_testlib import fixture as switch_fixture, make, sim_driver  # noqa: E402

from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError  # noqa: E402


def test_nvue_driver_reads_phy_health_per_present_port():
    d, fake = make(
        "nvue",
        answers={
            "nv show interface": switch_fixture("nvue_show_interface.txt"),
            "nv show interface swp1 link phy health": fixture("switch", "real_nvue_phy_health_cl515.txt"),
            "nv show interface swp2 link phy health": fixture("switch", "real_nvue_phy_health_reference.txt"),
        },
    )
    res = d.phy_errors(["swp1", "swp2", "swp9"])
    assert fake.sent == ["nv show interface", "nv show interface swp1 link phy health", "nv show interface swp2 link phy health"]
    assert list(res) == ["swp1", "swp2"] and res["swp1"]["fec_uncorrected"] == 0


def test_nvue_driver_falls_back_to_phy_detail_once_and_keeps_it():
    d, fake = make(
        "nvue",
        answers={
            "nv show interface": switch_fixture("nvue_show_interface.txt"),
            "nv show interface swp1 link phy health": "Error: The requested item does not exist.",
            "nv show interface swp1 link phy-detail": fixture("switch", "real_nvue_phy_detail_reference.txt"),
            "nv show interface swp2 link phy-detail": fixture("switch", "real_nvue_phy_detail_cl510.txt"),
        },
    )
    res = d.phy_errors(["swp1", "swp2"])
    assert fake.sent == [
        "nv show interface",
        "nv show interface swp1 link phy health",
        "nv show interface swp1 link phy-detail",
        "nv show interface swp2 link phy-detail",
    ]
    assert res["swp1"]["pre_fec_ber"] == 1e-7 and res["swp2"]["pre_fec_ber"] == 1.5e-254


NO_ITEM = "Error: The requested item does not exist."


def test_nvue_driver_without_either_form_names_both_answers():
    d, _ = make(
        "nvue",
        answers={
            "nv show interface": switch_fixture("nvue_show_interface.txt"),
            "nv show interface swp1 link phy health": NO_ITEM,
            "nv show interface swp1 link phy-detail": NO_ITEM,
        },
    )
    with pytest.raises(SwitchError) as exc:
        d.phy_errors(["swp1"])
    msg = str(exc.value)
    assert msg.startswith("switch sw: no physical-layer error counters (Cumulus Linux 5.10 and later print them)")
    assert "'nv show interface swp1 link phy health': Error" in msg
    assert "'nv show interface swp1 link phy-detail': Error" in msg


def test_sonic_driver_one_table_for_every_port():
    d, fake = make("sonic", answers={"show interfaces counters fec-stats": fixture("switch", "real_sonic_fec_stats_202511_unittest.txt")})
    res = d.phy_errors(["Ethernet0", "Ethernet8", "Ethernet200"])
    assert fake.sent == ["show interfaces counters fec-stats"]
    assert list(res) == ["Ethernet0", "Ethernet8"] and res["Ethernet0"]["fec_uncorrected"] == 3


def test_sonic_driver_before_202205_is_refused_as_the_switch_refuses_it():
    d, _ = make(
        "sonic",
        answers={
            "show interfaces counters fec-stats": "Usage: show interfaces counters [OPTIONS] "
            'COMMAND [ARGS]...\nTry "show interfaces counters -h" for help.\n\n'
            'Error: No such command "fec-stats".'
        },
    )
    with pytest.raises(SwitchError, match="rejected command 'show interfaces counters fec-stats'"):
        d.phy_errors(["Ethernet0"])


def test_eos_driver_one_json_read():
    d, fake = make("eos", answers={"show interfaces phy detail | json": fixture("switch", "real_eos_phy_detail_anta_uncorrected.json")})
    res = d.phy_errors(["Ethernet1/1", "Ethernet9/1"])
    assert fake.sent == ["show interfaces phy detail | json"]
    assert res == {"Ethernet1/1": errors(pre=1.3399973239803202e-22, corrected=35, uncorrected=20)}


def test_a_driver_without_a_ber_read_says_so_and_switch_counters_leaves_it_unproven():
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import base
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.module_common import read_ports_or_why

    class Bare:  # a driver of a platform whose BER read is not built (the base method)
        name = "leaf9"

    got, why = read_ports_or_why({"name": "leaf9", "fabric_ports": ["swp1"]}, lambda ports: base.Driver.phy_errors(Bare(), ports), None)
    assert got is None and why == ("switch leaf9: Bare: reading bit error rates and FEC counters is not built for this platform")


# ---------------------------------------------------------------- the simulators, every release, read back

PORTS = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}


def _releases(platform):
    if platform == "nvue":
        import sim_nvue

        return sim_nvue.load_reference()["releases"]
    if platform == "sonic":
        import sim_ber

        return list(sim_ber.SONIC_RELEASES)
    return [None]


def _sim(tmp_path, monkeypatch, platform, release):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, platform, PORTS[platform])
    if release:
        sim.sw.spec[{"nvue": "nvue_release", "sonic": "sonic_release"}[platform]] = release
    return d, sim


CASES = [(p, r) for p in ("nvue", "sonic", "eos") for r in _releases(p)]


@pytest.mark.parametrize("platform, release", CASES, ids=[f"{p}-{r}" for p, r in CASES])
def test_sim_healthy_ports_in_every_release(tmp_path, monkeypatch, platform, release):
    d, sim = _sim(tmp_path, monkeypatch, platform, release)
    old = (platform == "nvue" and release in ("5.9",)) or (platform == "sonic" and release == "202111")
    if old:  # the release has no such command: the switch refuses it, the driver says so
        with pytest.raises(SwitchError):
            d.phy_errors(PORTS[platform])
        return
    res = d.phy_errors(PORTS[platform])
    assert list(res) == PORTS[platform]
    printed_ber = platform != "sonic" or release >= "202411"
    for port, e in res.items():
        assert e["fec_uncorrected"] == 0, port
        if printed_ber:
            assert 1e-9 <= e["pre_fec_ber"] <= 1e-8, (port, e)
        else:
            assert e["pre_fec_ber"] is None and e["post_fec_ber"] is None
    if platform == "nvue":
        assert all(e["post_fec_ber"] < 1e-200 for e in res.values())  # 15E-255: nothing uncorrected
        form = "link phy health" if tuple(map(int, release.split("."))) >= (5, 15) else "link phy-detail"
        assert f"nv show interface swp2 {form}" in sim.sent
    if platform == "sonic":
        assert all(e["fec_corrected"] > 0 for e in res.values())
        assert all(e["post_fec_ber"] == (0.0 if printed_ber else None) for e in res.values())
    if platform == "eos":
        assert all(e["fec_mode"] == "reedSolomon" and e["post_fec_ber"] is None for e in res.values())
    assert all(not c.startswith(("nv set", "nv config", "sudo config", "configure")) for c in sim.sent)


def put_ber(port, ber_state):
    from simcore import model

    with model.locked() as m:
        m["switches"]["sw"].setdefault("ports", {}).setdefault(port, {})["ber"] = ber_state


@pytest.mark.parametrize("platform, release", [("nvue", "5.12"), ("nvue", "5.17"), ("sonic", "202411"), ("sonic", "202211"), ("eos", None)])
def test_sim_degraded_port_reads_high_ber_and_growing_uncorrected(tmp_path, monkeypatch, platform, release):
    import time

    d, _ = _sim(tmp_path, monkeypatch, platform, release)
    healthy, bad = PORTS[platform]
    put_ber(bad, {"pre_fec_ber": 1e-5, "uncorrected_per_s": 50, "since": time.time() - 10})
    first = d.phy_errors(PORTS[platform])
    put_ber(bad, {"pre_fec_ber": 1e-5, "uncorrected_per_s": 50, "since": time.time() - 20})
    second = d.phy_errors(PORTS[platform])
    assert first[healthy]["fec_uncorrected"] == 0 == second[healthy]["fec_uncorrected"]
    assert 450 <= first[bad]["fec_uncorrected"] // (160 if platform == "nvue" else 1) <= 600
    assert second[bad]["fec_uncorrected"] > first[bad]["fec_uncorrected"]
    if platform != "sonic" or release >= "202411":
        assert first[bad]["pre_fec_ber"] == pytest.approx(1e-5)
    if platform == "nvue" or (platform == "sonic" and release >= "202411"):
        assert first[bad]["post_fec_ber"] == pytest.approx(50 * 160 / 400e9, rel=0.5)  # 2e-8: above 1e-12


def test_sim_down_port_measures_nothing(tmp_path, monkeypatch):
    import sim_ber

    st = sim_ber.state("sw", "Ethernet0", 400, False)
    assert ber.parse_sonic_fec_stats(sim_ber.render_sonic([("Ethernet0", st)]))["Ethernet0"] == errors(corrected=0, uncorrected=0)
    assert ber.parse_eos_phy_detail(sim_ber.render_eos_json([("Ethernet1/1", st)]))["Ethernet1/1"] == errors()


def test_sim_sonic_table_is_laid_out_as_portstat_prints_it():
    import sim_ber

    st = dict(sim_ber.state("sw", "Ethernet0", 400, True, m={}, now=sim_ber.CLEARED + 1), corrected=130402, uncorrected=3)
    text = sim_ber.render_sonic([("Ethernet0", st)], "202211")
    # sonic-utilities 202211 tests/portstat_test.py intf_fec_counters: the header and rule as published
    assert text.splitlines()[:2] == fixture("switch", "real_sonic_fec_stats_202211_unittest.txt").splitlines()[:2]
    assert text.splitlines()[2] == "Ethernet0        U     130,402             3           130,402"


def test_nvidia_ber_notation():
    import sim_ber

    assert [sim_ber.nvidia_ber(v) for v in (0.0, None, 1e-7, 3.04e-6, 9.6e-9)] == ["15E-255", "15E-255", "1E-7", "3E-6", "1E-8"]


def test_show_forms_follow_the_reference():
    import sim_nvue

    forms = {r: [pat for pat, _ in sim_nvue.show_forms(r)] for r in ("5.9", "5.10", "5.14", "5.15")}
    assert not any("phy" in f for f in forms["5.9"])
    assert any("phy\\-detail" in f for f in forms["5.10"]) and any("phy\\-detail" in f for f in forms["5.14"])
    assert not any("health" in f for f in forms["5.14"])
    assert any("phy\\ health" in f or "phy health" in f for f in forms["5.15"])
    assert not any("phy\\-detail" in f for f in forms["5.15"])


# ---------------------------------------------------------------- the lab fault


def test_switch_ber_degrade_and_restore():
    import labsim  # noqa: F401  (lab/sim on sys.path)
    from linerate_lab import faults

    m = {"nodes": {}, "switches": {"leaf1": {"ports": {"swp1": {"pfc": [3]}, "swp2": {"pfc": [3]}}}}, "faults": []}
    assert faults.FAULTS["switch-ber-degrade"] is faults.switch_ber_degrade
    faults.switch_ber_degrade(None, m, "leaf1", "swp2")
    got = m["switches"]["leaf1"]["ports"]["swp2"]["ber"]
    assert (got["pre_fec_ber"], got["uncorrected_per_s"]) == (1e-5, 50) and got["since"] > 0
    since = got["since"]
    faults.switch_ber_degrade(None, m, "leaf1", "swp2")  # twice: one record, the count goes on
    assert m["switches"]["leaf1"]["ports"]["swp2"]["ber"]["since"] == since
    assert m["faults"] == [{"kind": "switch-ber-degrade", "args": ["leaf1", "swp2"]}]
    assert "ber" not in m["switches"]["leaf1"]["ports"]["swp1"]
    faults.switch_ber_restore(None, m, "leaf1", "swp2")
    assert m["switches"]["leaf1"]["ports"]["swp2"] == {"pfc": [3]} and m["faults"] == []
    with pytest.raises(faults.FaultError, match="leaf1 has no port 'swp9'"):
        faults.switch_ber_degrade(None, m, "leaf1", "swp9")
