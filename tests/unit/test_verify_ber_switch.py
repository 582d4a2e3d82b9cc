"""The switches' bit error rates and FEC counters: links_switch.switch_ber_findings judges what each cabled switch
port receives (switch_counters ``ber``, the drivers' phy_errors) against the host side's limits
(fabric.verify.raw_ber_max pre-FEC, effective_ber_max post-FEC) and the growth of uncorrected FEC errors over the
window against link_errors_max, named by switch and port with what is cabled there."""

import copy

from ansible_collections.linerate.fabric.plugins.module_utils.checks import links_switch
from ansible_collections.linerate.fabric.plugins.module_utils import findings

FABRIC = {"transport": "roce", "verify": {"link_errors_max": 0, "link_flaps_max": 0, "effective_ber_max": 1e-12, "raw_ber_max": 2.4e-4}}
HOSTS = {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}], "node2": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp2"}]}
UPLINKS = {"leaf1": [{"port": "swp5", "peer": "spine1", "peer_port": "Ethernet1/1"}]}
ERRORS = {p: {"errors": {"in-errors": 0}, "link_down": 0, "missing": []} for p in ("swp1", "swp2", "swp5")}
GOOD = {"pre_fec_ber": 5e-9, "post_fec_ber": 0.0, "fec_corrected": None, "fec_uncorrected": 0, "fec_mode": None}
SPINE = {
    "failed": False,
    "errors": {"Ethernet1/1": {"errors": {"in-errors": 0}, "link_down": 0, "missing": []}},
    "errors_msg": "",
    "ber": {"Ethernet1/1": GOOD},
    "ber_msg": "",
}


def port(**kw):
    return dict(copy.deepcopy(GOOD), **kw)


def healthy():
    return {p: port() for p in ("swp1", "swp2", "swp5")}


def judge(after_ber, before_ber=None, ber_msg="", platform="nvue", errors_after=None, prior=()):
    before = {"failed": False, "errors": ERRORS, "errors_msg": "", "platform": platform, "ber": healthy() if before_ber is None else before_ber, "ber_msg": ""}
    after = dict(before, ber=after_ber, ber_msg=ber_msg, errors=errors_after or ERRORS)
    return links_switch.switch_link_findings(
        {"leaf1": {"before": before, "after": after}, "spine1": {"before": SPINE, "after": SPINE}}, FABRIC, HOSTS, UPLINKS, findings.finding, list(prior)
    )


def test_healthy_ports_give_no_finding():
    out, unproven, _ = judge(healthy())
    assert out == [] and unproven == {}


def test_pre_fec_ber_above_raw_ber_max_on_a_host_port_names_switch_port_and_node():
    after = healthy()
    after["swp2"] = port(pre_fec_ber=3e-4)
    (f,) = judge(after)[0]
    assert (f["code"], f["severity"], f["check"]) == ("LINK_BER_HIGH", "error", "link_health")
    assert (f["switch"], f["switch_port"], f["node"], f["device"]) == ("leaf1", "swp2", "node2", "mlx5_0")
    assert f["evidence"] == {"counted_by": "switch", "switch": "leaf1", "switch_port": "swp2", "pre_fec_ber": 3e-4, "threshold": 2.4e-4, "fec_mode": None}
    assert f["message"] == (
        "leaf1 swp2 (towards node2 mlx5_0): pre-FEC bit error rate 3.00e-04 above 0.00024 "
        "(fabric.verify.raw_ber_max), measured by the switch on what it receives"
    )
    # at the limit it passes: above, not at
    after["swp2"] = port(pre_fec_ber=2.4e-4)
    assert judge(after)[0] == []


def test_post_fec_ber_on_an_uplink_names_the_peer_switch():
    after = healthy()
    after["swp5"] = port(post_fec_ber=2e-8)
    (f,) = judge(after)[0]
    assert (f["code"], f["switch_port"], f["peer_switch"], f["peer_port"], f["node"]) == ("LINK_BER_HIGH", "swp5", "spine1", "Ethernet1/1", None)
    assert f["evidence"]["post_fec_ber"] == 2e-8 and f["evidence"]["threshold"] == 1e-12
    assert "post-FEC bit error rate 2.00e-08 above 1e-12 (fabric.verify.effective_ber_max)" in f["message"]
    after["swp5"] = port(post_fec_ber=1e-12)
    assert judge(after)[0] == []


def test_uncorrected_growth_over_the_window_is_link_errors_in_the_platforms_unit():
    before, after = healthy(), healthy()
    before["swp1"], after["swp1"] = port(fec_uncorrected=1000), port(fec_uncorrected=1160)
    (f,) = judge(after, before, platform="nvue")[0]
    assert (f["code"], f["switch"], f["switch_port"], f["node"]) == ("LINK_ERRORS", "leaf1", "swp1", "node1")
    assert f["evidence"] == {"counted_by": "switch", "switch": "leaf1", "switch_port": "swp1", "fec_uncorrected": 160, "unit": "bits", "threshold": 0}
    assert f["message"].startswith("leaf1 swp1 (towards node1 mlx5_0): the switch's FEC could not correct 160 bits over the verification window (threshold 0)")
    (f,) = judge(after, before, platform="sonic")[0]
    assert "160 codewords" in f["message"] and f["evidence"]["unit"] == "codewords"
    # an old count that did not grow is not this window's: no finding
    before["swp1"] = port(fec_uncorrected=1160)
    assert judge(after, before)[0] == []


def test_a_cleared_counter_counts_what_it_shows_now():
    before, after = healthy(), healthy()
    before["swp2"], after["swp2"] = port(fec_uncorrected=500), port(fec_uncorrected=7)
    (f,) = judge(after, before)[0]
    assert f["evidence"]["fec_uncorrected"] == 7


def test_uncorrected_growth_folds_into_a_link_errors_finding_already_on_that_port():
    before, after = healthy(), healthy()
    before["swp1"], after["swp1"] = port(fec_uncorrected=0), port(fec_uncorrected=3)
    errors_after = copy.deepcopy(ERRORS)
    errors_after["swp1"]["errors"]["in-errors"] = 5
    out, _, _ = judge(after, before, platform="sonic", errors_after=errors_after)
    (f,) = out  # the switch's interface errors on swp1 made the finding; the FEC count joins it
    assert f["code"] == "LINK_ERRORS" and f["evidence"]["switch_fec_uncorrected"]["fec_uncorrected"] == 3
    assert f["message"].endswith("; the switch's FEC could not correct 3 codewords on it")
    host = findings.finding(
        "LINK_ERRORS", "node1 mlx5_0: rx_crc_errors_phy +2", node="node1", device="mlx5_0", switch="leaf1", switch_port="swp1", check="link_health"
    )
    out, _, _ = judge(after, before, platform="sonic", prior=[host])
    assert out == [] and host["evidence"]["switch_fec_uncorrected"]["fec_uncorrected"] == 3


def test_what_cannot_be_read_is_named_never_passed_silently():
    out, unproven, _ = judge(None, ber_msg="switch leaf1: no physical-layer error counters")
    assert out == [] and unproven == {"leaf1": ["bit error rates and FEC counters (switch leaf1: no physical-layer error counters)"]}
    after = healthy()
    del after["swp5"]  # the uplink not reported
    after["swp2"] = port(pre_fec_ber=None)  # N/A on one port only (a link down)
    out, unproven, _ = judge(after)
    assert [(f["code"], f["severity"], f["switch_port"], f.get("counter")) for f in out] == [
        ("COUNTER_MISSING", "warning", "swp2", "switch pre-FEC bit error rate"),
        ("COUNTER_MISSING", "warning", "swp5", "switch bit error rate"),
    ]
    assert unproven == {}


def test_a_field_the_release_prints_on_no_port_is_said_once():
    old = {p: port(pre_fec_ber=None, post_fec_ber=None, fec_corrected=10) for p in ("swp1", "swp2", "swp5")}
    out, unproven, _ = judge(old, old, platform="sonic")  # SONiC before 202411: counters only
    assert out == [] and unproven == {
        "leaf1": ["pre-FEC bit error rate (the switch's read prints none)", "post-FEC bit error rate (the switch's read prints none)"]
    }


def test_no_read_at_the_start_leaves_the_growth_unproven_but_judges_the_rates():
    after = healthy()
    after["swp1"] = port(pre_fec_ber=1e-3)
    out, unproven, _ = links_switch.switch_link_findings(
        {
            "leaf1": {
                "before": {"failed": False, "errors": ERRORS, "errors_msg": "", "ber": None, "ber_msg": "timed out"},
                "after": {"failed": False, "errors": ERRORS, "errors_msg": "", "ber": after, "ber_msg": ""},
            }
        },
        FABRIC,
        HOSTS,
        {},
        findings.finding,
    )
    assert [f["code"] for f in out] == ["LINK_BER_HIGH"]
    assert unproven == {"leaf1": ["uncorrected FEC errors over the window (no read at its start: timed out)"]}


def test_a_snapshot_without_ber_judges_nothing_about_it():
    snap = {"failed": False, "errors": ERRORS, "errors_msg": ""}
    out, unproven, _ = links_switch.switch_link_findings({"leaf1": {"before": snap, "after": snap}}, FABRIC, HOSTS, {}, findings.finding)
    assert out == [] and unproven == {}


# ---------------------------------------------------------------- the lab's switches, read by the drivers, judged


def test_a_degraded_port_on_each_simulated_platform_is_found(tmp_path, monkeypatch):
    import time
    import pytest
    from switch_testlib import sim_driver
    from simcore import model

    ports = {"nvue": ["swp1", "swp2"], "sonic": ["Ethernet0", "Ethernet8"], "eos": ["Ethernet1/1", "Ethernet2/1"]}
    for platform, (good, bad) in ports.items():
        state = tmp_path / platform
        state.mkdir()
        monkeypatch.setenv("LINERATE_LAB_STATE", str(state))
        d, _ = sim_driver(state, platform, [good, bad])

        def put(since):
            with model.locked() as m:
                m["switches"]["sw"].setdefault("ports", {}).setdefault(bad, {})["ber"] = {"pre_fec_ber": 1e-3, "uncorrected_per_s": 50, "since": since}

        now = time.time()
        put(now - 10)
        snap = lambda: {  # noqa: E731
            "failed": False,
            "errors": {p: {"errors": {}, "link_down": None, "missing": []} for p in (good, bad)},
            "errors_msg": "",
            "platform": platform,
            "ber": d.phy_errors([good, bad]),
            "ber_msg": "",
        }
        before = snap()
        put(now - 40)  # 30 s later: 1500 more codewords FEC could not correct
        after = snap()
        hosts = {"node1": [{"device": "mlx5_0", "switch": "sw", "switch_port": good}], "node2": [{"device": "mlx5_0", "switch": "sw", "switch_port": bad}]}
        out, _, _ = links_switch.switch_link_findings({"sw": {"before": before, "after": after}}, FABRIC, hosts, {}, findings.finding)
        got = sorted((f["code"], f["switch_port"], f["node"]) for f in out)
        codes = ["LINK_BER_HIGH"] + (["LINK_BER_HIGH"] if platform != "eos" else []) + ["LINK_ERRORS"]
        assert got == sorted((c, bad, "node2") for c in codes), (platform, out)
        grown = next(f for f in out if f["code"] == "LINK_ERRORS")["evidence"]["fec_uncorrected"]
        assert grown == pytest.approx(1500 * (160 if platform == "nvue" else 1), rel=0.01), platform


# ---------------------------------------------------------------- switch_counters carries it (ber, ber_msg)


def test_switch_counters_returns_ber_and_says_why_when_it_cannot(monkeypatch, capsys):
    from parser_fixtures import fixture
    from switch.test_module_common import ARGS, run_module
    from ansible_collections.linerate.fabric.plugins.modules import switch_counters
    from switch_testlib import fixture as switch_fixture

    base = {
        "nv show interface": switch_fixture("nvue_show_interface.txt"),
        "nv show interface swp1 qos roce status": switch_fixture("nvue_roce_status_on.txt"),
        "nv show interface swp1 qos roce counters": fixture("counters", "nvue_roce_counters_cl512.txt"),
    }
    args = dict(ARGS, fabric_ports=["swp1"])
    res, fake = run_module(
        switch_counters,
        args,
        monkeypatch,
        capsys,
        dict(base, **{"nv show interface swp1 link phy health": fixture("switch", "real_nvue_phy_health_reference.txt")}),
    )
    assert (
        res["ber"] == {"swp1": {"pre_fec_ber": 1.5e-254, "post_fec_ber": 1.5e-254, "fec_corrected": None, "fec_uncorrected": 0, "fec_mode": None}}
        and res["ber_msg"] == ""
    )
    assert "nv show interface swp1 link phy health" in fake.sent
    res, _ = run_module(
        switch_counters,
        args,
        monkeypatch,
        capsys,
        dict(
            base,
            **{
                "nv show interface swp1 link phy health": "Error: The requested item does not exist.",
                "nv show interface swp1 link phy-detail": "Error: The requested item does not exist.",
            },
        ),
    )
    assert not res.get("failed") and res["ports"]["swp1"]["ecn_marked"] == 693777677344
    assert res["ber"] is None and res["ber_msg"].startswith("switch leaf1: no physical-layer error counters")
