"""The lab's physical-layer faults (crc-errors, flap): counters that keep rising while the fault
lasts, served by ethtool -S and mlxlink, and kept (never lowered) when the fault is undone."""

import pytest

from linerate_lab import linkphys
from linerate_lab.tools import mlxlink

from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import parse_ethtool_stats
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import parse_mlxlink


def test_crc_errors_rise_with_time_and_stay_after_the_fault_ends():
    nic = {"width": 4, "counters": {"rx_crc_errors_phy": 2}}
    linkphys.start(nic, "crc", now=100.0, rate=50)
    assert linkphys.counters(nic, now=100.0)["rx_crc_errors_phy"] == 2
    c = linkphys.counters(nic, now=110.0)
    assert c["rx_crc_errors_phy"] == 502 and c["rx_symbol_err_phy"] == 500
    assert c["rx_corrected_bits_phy"] == 500 * linkphys.CORRECTED_BITS_PER_ERROR
    assert c["rx_err_lane_3_phy"] == 500 * linkphys.CORRECTED_BITS_PER_ERROR // 4
    assert linkphys.stop(nic, "crc", now=110.0)
    assert linkphys.counters(nic, now=500.0)["rx_crc_errors_phy"] == 502  # no new errors, none forgotten
    assert not linkphys.stop(nic, "crc")


def test_a_flapping_link_counts_one_down_event_per_period():
    nic = {}
    linkphys.start(nic, "flap", now=0.0, period=8.0)
    assert linkphys.counters(nic, now=1.0)["link_down_events_phy"] == 1  # the bounce at injection
    assert linkphys.counters(nic, now=17.0)["link_down_events_phy"] == 3
    linkphys.stop(nic, "flap", now=17.0)
    assert linkphys.counters(nic, now=1000.0) == {"link_down_events_phy": 3, "link_error_recovery_phy": 3}


def test_ethtool_and_mlxlink_show_the_fault(lab, monkeypatch):
    from linerate_lab.tools import ethtool

    monkeypatch.setattr(mlxlink, "uptime_s", lambda: 3600.0)
    lab.update(lambda n: linkphys.start(n["nics"][0], "crc", now=0.0, rate=50))
    monkeypatch.setattr(linkphys.time, "time", lambda: 20.0)
    r = parse_mlxlink(lab.run(mlxlink, ["-d", "mlx5_0", "-c"])[1])
    assert r["effective_errors"] == 1000 and r["recommendation"] != "No issue was observed"
    assert r["effective_ber"] == pytest.approx(1000 / (400e9 * 3600), rel=0.05)
    nic = lab.nic("mlx5_0")
    stats = parse_ethtool_stats(ethtool.statistics(nic, {"up": True}))["stats"]
    assert stats["rx_crc_errors_phy"] == 1000 and stats["link_down_events_phy"] == 0
    other = parse_ethtool_stats(ethtool.statistics(lab.nic("mlx5_1"), {"up": True}))["stats"]
    assert other["rx_crc_errors_phy"] == 0


def test_an_ipv6_address_up_first_moves_the_roce_v2_ipv4_gid_to_index_5(lab):
    from linerate_lab.tools import common

    lab.netdevs["enp65s0f0np0"]["ipv6"] = ["fd00:5ca1::1", "fe80::1"]
    nic = lab.nic("mlx5_0")
    assert [(i, v, ip) for i, _, v, ip in common.gids(nic) if ip] == [(2, "v1", "192.168.100.11"), (3, "v2", "192.168.100.11")]
    lab.update(lambda n: n["nics"][0].update(gids_first=["fd00:5ca1::1"]))
    table = common.gids(lab.nic("mlx5_0"))
    assert [(i, v, ip) for i, _, v, ip in table if ip] == [(4, "v1", "192.168.100.11"), (5, "v2", "192.168.100.11")]
    assert [i for i, g, _, ip in table if g.endswith("0001") and not ip] == [2, 3]  # the IPv6 GIDs, once
    assert len(table) == 6


def test_the_rdma_tool_prints_the_hw_counters_like_mofed_iproute2(lab):
    from linerate_lab.tools import rdma
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import parse_rdma_statistic

    lab.update(lambda n: n["nics"][0].setdefault("counters", {}).update(np_cnp_sent=7, out_of_sequence=3))
    rc, out, _ = lab.run(rdma, ["statistic", "show", "link", "mlx5_0/1"])
    assert rc == 0 and out.startswith("link mlx5_0/1 rx_write_requests 0 ")
    c = parse_rdma_statistic(out)["links"]["mlx5_0/1"]
    assert c["np_cnp_sent"] == 7 and c["out_of_sequence"] == 3 and c["rp_cnp_handled"] == 0
    assert list(c) == list(rdma.COUNTERS)
    rc, out, _ = lab.run(rdma, ["stat", "show"])
    assert sorted(parse_rdma_statistic(out)["links"]) == ["mlx5_0/1", "mlx5_1/1"]
    rc, _, err = lab.run(rdma, ["statistic", "show", "link", "mlx5_7/1"])
    assert rc == 1 and err
