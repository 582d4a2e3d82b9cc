"""Link health over the verification window (module_utils/checks/links.py): PHY error deltas, flaps, BER."""

import os

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import show
from ansible_collections.linerate.fabric.plugins.module_utils.checks import links as linkcheck
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils import findings

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "counters")
FABRIC = {"transport": "roce", "link_speed_gbps": 400, "verify": {}}
CABLING = cabling.cabling_index(
    {
        "node1": [
            {"device": "mlx5_0", "netdev": "eth1", "switch": "leaf1", "switch_port": "swp1"},
            {"device": "mlx5_1", "netdev": "eth2", "switch": "leaf2", "switch_port": "swp1"},
        ],
        "node2": [{"device": "mlx5_0", "netdev": "eth1", "switch": "leaf1", "switch_port": "swp2"}],
    }
)


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


MLXLINK = fixture("mlxlink_bf3_mft4.30.txt")


def ethtool(**c):
    names = ["rx_packets", "rx_crc_errors_phy", "rx_symbol_err_phy", "link_down_events_phy", "rx_corrected_bits_phy"]
    return "NIC statistics:\n" + "".join(f"     {n}: {c.get(n, 0)}\n" for n in names if c.get(n, 0) is not None)


def mlxlink(eff="15E-255", raw="15E-255"):
    return MLXLINK.replace("Effective Physical BER             : 15E-255", f"Effective Physical BER             : {eff}").replace(
        "Raw Physical BER                   : 15E-255", f"Raw Physical BER                   : {raw}"
    )


def snap(devices, phy, mlx=None, phy_err=None, mlx_err=None):
    return {
        "devices": devices,
        "phy": phy,
        "phy_err": phy_err or [""] * len(devices),
        "mlxlink": mlx if mlx is not None else [MLXLINK] * len(devices),
        "mlxlink_err": mlx_err or [""] * len(devices),
    }


def node(end_phy, start_phy=None, devices=("mlx5_0", "mlx5_1"), **kw):
    devices = list(devices)
    return {"transport": "roce", "start": snap(devices, start_phy or [ethtool()] * len(devices)), "end": snap(devices, end_phy, **kw)}


def run(data, fabric=FABRIC):
    return linkcheck.link_health_findings(data, fabric, CABLING, findings.finding, cabling._where)


def where(f):
    return [(x["code"], x["node"], x["device"], x["switch"], x["switch_port"]) for x in f]


def test_a_healthy_window_has_no_finding_and_a_row_per_port():
    f, rows = run({"node1": node([ethtool(rx_packets=10**9, rx_corrected_bits_phy=500)] * 2)})
    assert f == []
    assert [(r["device"], r["errors"], r["flaps"], r["ok"], r["switch_port"], r["netdev"]) for r in rows] == [
        ("mlx5_0", 0, 0, True, "swp1", "eth1"),
        ("mlx5_1", 0, 0, True, "swp1", "eth2"),
    ]
    assert rows[0]["effective_ber"] == pytest.approx(1.5e-254) and rows[0]["fec"].startswith("Standard RS-FEC")
    assert linkcheck.check(f, rows)["passed"]


def test_crc_errors_over_the_window_are_named_with_node_device_and_switch_port():
    f, rows = run({"node1": node([ethtool(), ethtool(rx_crc_errors_phy=7, rx_symbol_err_phy=3)], start_phy=[ethtool(), ethtool(rx_crc_errors_phy=2)])})
    assert where(f) == [("LINK_ERRORS", "node1", "mlx5_1", "leaf2", "swp1")]
    assert f[0]["evidence"]["deltas"] == {"rx_crc_errors_phy": 5, "rx_symbol_err_phy": 3}
    assert f[0]["netdev"] == "eth2" and "leaf2 swp1" in f[0]["message"]
    assert rows[1]["errors"] == 8 and not rows[1]["ok"]
    assert not linkcheck.check(f, rows)["passed"]


def test_errors_at_the_threshold_pass_and_above_it_fail():
    data = {"node1": node([ethtool(rx_crc_errors_phy=5)], devices=["mlx5_0"])}
    assert run(data, {**FABRIC, "verify": {"link_errors_max": 5}})[0] == []
    assert where(run(data, {**FABRIC, "verify": {"link_errors_max": 4}})[0]) == [("LINK_ERRORS", "node1", "mlx5_0", "leaf1", "swp1")]


def test_errors_counted_before_the_window_are_not_blamed():
    old = ethtool(rx_crc_errors_phy=1000, link_down_events_phy=4)
    assert run({"node1": node([old], start_phy=[old], devices=["mlx5_0"])})[0] == []


def test_a_link_down_event_in_the_window_is_a_flap():
    f, rows = run({"node2": node([ethtool(link_down_events_phy=2)], devices=["mlx5_0"])})
    assert where(f) == [("LINK_FLAP", "node2", "mlx5_0", "leaf1", "swp2")]
    assert rows[0]["flaps"] == 2 and f[0]["evidence"]["link_down_events_phy"] == 2
    assert run({"node2": node([ethtool(link_down_events_phy=2)], devices=["mlx5_0"])}, {**FABRIC, "verify": {"link_flaps_max": 2}})[0] == []


def test_a_link_that_flapped_and_retrained_before_the_window_counts_only_its_flaps_inside_it():
    """Issue 35: flaps and counters are judged as deltas inside the window: a link that went down four times and
    re-trained before the window's start snapshot (the counter stands at 4 there) is counted once, for the one
    flap inside it; its CRC errors from before the window are not counted at all."""
    before = ethtool(link_down_events_phy=4, rx_crc_errors_phy=77)
    f, rows = run({"node2": node([ethtool(link_down_events_phy=5, rx_crc_errors_phy=77)], start_phy=[before], devices=["mlx5_0"])})
    assert [x["code"] for x in f] == ["LINK_FLAP"] and f[0]["evidence"]["link_down_events_phy"] == 1
    assert (rows[0]["flaps"], rows[0]["errors"]) == (1, 0)


def test_a_cleared_counter_counts_what_it_shows_now():
    f, _ = run({"node1": node([ethtool(rx_crc_errors_phy=3)], start_phy=[ethtool(rx_crc_errors_phy=900)], devices=["mlx5_0"])})
    assert f[0]["evidence"]["deltas"] == {"rx_crc_errors_phy": 3}


@pytest.mark.parametrize("eff, raw, key", [("25E-10", "15E-255", "effective_ber"), ("15E-255", "31E-5", "raw_ber")])
def test_a_ber_over_its_threshold_is_named(eff, raw, key):
    f, rows = run({"node1": node([ethtool()], devices=["mlx5_0"], mlx=[mlxlink(eff, raw)])})
    assert where(f) == [("LINK_BER_HIGH", "node1", "mlx5_0", "leaf1", "swp1")]
    assert key in f[0]["evidence"] and f"{key}_max" in f[0]["message"]


def test_ber_below_the_threshold_passes():
    assert run({"node1": node([ethtool()], devices=["mlx5_0"], mlx=[mlxlink("9E-13", "2E-4")])})[0] == []


def test_missing_tools_and_counters_warn_naming_what_is_unproven():
    no_crc = "NIC statistics:\n     rx_symbol_err_phy: 0\n     link_down_events_phy: 0\n"
    f, rows = run(
        {
            "node1": node(
                [no_crc, ""],
                devices=["mlx5_0", "mlx5_1"],
                phy_err=["", "ethtool: command not found"],
                mlx=["", MLXLINK.replace("Effective Physical BER             : 15E-255\n", "")],
                mlx_err=["[Errno 2] No such file or directory: b'mlxlink'", ""],
            )
        }
    )
    assert {x["severity"] for x in f} == {"warning"} and {x["code"] for x in f} == {"COUNTER_MISSING"}
    msgs = {(x["device"], x["counter"]): x["message"] for x in f}
    assert "physical errors" in msgs[("mlx5_0", "rx_crc_errors_phy")]
    assert "No such file" in msgs[("mlx5_0", "mlxlink")] and "BER" in msgs[("mlx5_0", "mlxlink")]
    assert "command not found" in msgs[("mlx5_1", "ethtool -S")]
    assert "not proven" in msgs[("mlx5_1", "Effective Physical BER")]
    assert rows[0]["missing"] == ["rx_crc_errors_phy"]
    assert linkcheck.check(f, rows)["passed"]  # warnings do not fail the check, they are reported


def test_a_missing_end_snapshot_warns_per_port():
    f, rows = run({"node1": {"transport": "roce", "start": snap(["mlx5_0"], [ethtool()])}})
    assert where(f) == [("COUNTER_MISSING", "node1", "mlx5_0", "leaf1", "swp1")] and rows == []
    assert "end of verification" in f[0]["message"]


def perfquery(**c):
    names = ["SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors"]
    return "# Port counters: Lid 3 port 1 (CapMask: 0x1B01)\n" + "".join(f"{n}:{'.' * (32 - len(n))}{c.get(n, 0)}\n" for n in names)


def test_infiniband_reads_perfquery_deltas():
    data = {
        "node1": {
            "transport": "infiniband",
            "start": snap(["mlx5_0"], [perfquery(SymbolErrorCounter=4)]),
            "end": snap(["mlx5_0"], [perfquery(SymbolErrorCounter=9, LinkDownedCounter=1)]),
        }
    }
    f, rows = run(data, {"transport": "infiniband"})
    assert sorted(where(f)) == [("LINK_ERRORS", "node1", "mlx5_0", "leaf1", "swp1"), ("LINK_FLAP", "node1", "mlx5_0", "leaf1", "swp1")]
    assert rows[0]["tool"] == "perfquery" and rows[0]["errors"] == 5


def test_the_perfquery_fixture_parses_as_a_healthy_port():
    text = fixture("perfquery_basic_switch.txt")
    data = {"node1": {"transport": "infiniband", "start": snap(["mlx5_0"], [text]), "end": snap(["mlx5_0"], [text])}}
    f, rows = run(data, {"transport": "infiniband"})
    assert [x for x in f if x["severity"] == "error"] == [] and rows[0]["errors"] == 0


@pytest.mark.parametrize(
    "key, value",
    [
        ("link_errors_max", -1),
        ("link_flaps_max", 1.5),
        ("link_errors_max", True),
        ("effective_ber_max", float("nan")),
        ("raw_ber_max", 1.0),
        ("effective_ber_max", "1e-12"),
        ("full_plan_max_nodes", 1),
        ("full_plan_max_nodes", 16.0),
        ("full_plan_max_nodes", True),
    ],
)
def test_intent_thresholds_are_validated_with_key_and_value(key, value):
    problems = schema.validate_fabric({"name": "t", "transport": "roce", "verify": {key: value}})
    assert [p for p in problems if p.startswith("fabric.verify.")] == [
        p for p in problems if p.startswith(f"fabric.verify.{key}: {show(value)} is not allowed")
    ], problems
    assert any(p.startswith(f"fabric.verify.{key}: {show(value)} is not allowed") for p in problems), problems


def test_good_intent_thresholds_pass():
    problems = schema.validate_fabric(
        {"name": "t", "transport": "roce", "verify": {"link_errors_max": 10, "link_flaps_max": 0, "effective_ber_max": 1.0e-15, "raw_ber_max": 0.0}}
    )
    assert [p for p in problems if p.startswith("fabric.verify")] == []


def test_the_summary_shows_counter_evidence_per_rail_and_port():
    from ansible_collections.linerate.fabric.plugins.module_utils.report import report
    from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown

    f, rows = run({"node1": node([ethtool(), ethtool(rx_crc_errors_phy=4)])})
    rail = {
        "device": "mlx5_0",
        "receiver": "node1",
        "senders": ["node2"],
        "k": 1,
        "flows": {"node2": 190.04},
        "pause": {"node1": 0, "node2": 812},
        "discards": {"node1": 0, "node2": 0},
        "ecn_marked": {"node1": 90, "node2": 0},
        "cnp_sent": {"node1": 90, "node2": 0},
        "cnp_handled": {"node1": 0, "node2": 88},
        "out_of_sequence": {"node1": 0, "node2": 0},
    }
    checks = {"incast": {"passed": True, "rails": [rail], "detail": "1 rail"}, "link_health": linkcheck.check(f, rows)}
    md = report_markdown.to_markdown(report.build_report(f, findings.summarize(f), checks, dict(FABRIC, name="lab")))
    assert "### incast mlx5_0: 1 senders into node1 (counter deltas)" in md
    assert "| node | Gb/s | pause | discards | ecn_marked | cnp_sent | cnp_handled | out_of_sequence |" in md
    assert "| node2 | 190.0 | 812 | 0 | 0 | 0 | 88 | 0 |" in md and "| node1 |  | 0 | 0 | 90 | 90 | 0 | 0 |" in md
    assert "| node1 | mlx5_1 | leaf2 swp1 | 4 | 0 |  |  | < 1e-15 | < 1e-15 | Standard RS-FEC - RS(528,514) |" in md
    assert "| node1 | mlx5_0 | leaf1 swp1 | 0 | 0 |" in md
