"""Unit tests for plugins/module_utils/parsers/counters.py on published real outputs (tests/unit/fixtures/counters/SOURCES.md)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import (
    RDMA_COUNTERS,
    missing_counters,
    mlx5_phy_counters,
    mlx5_priority_counters,
    parse_ethtool_stats,
    parse_hw_counters,
    parse_rdma_statistic,
)


def fx(name):
    return fixture("counters", name)


# ---------------------------------------------------------------- ethtool -S
def test_ethtool_mlx5_priority_and_phy_counters():
    stats = parse_ethtool_stats(fx("ethtool_mlx5_composed.txt"))["stats"]
    prio = mlx5_priority_counters(stats)
    assert prio[3] == {
        "rx_bytes": 5849302847,
        "rx_packets": 1411999,
        "rx_discards": 0,
        "tx_bytes": 4928100234,
        "tx_packets": 1203145,
        "rx_pause": 142,
        "rx_pause_duration": 1247,
        "tx_pause": 87,
        "tx_pause_duration": 512,
        "rx_pause_transition": 71,
    }
    assert prio[0]["rx_pause"] == 0 and set(prio) == {0, 3}
    phy = mlx5_phy_counters(stats)
    assert phy["rx_corrected_bits_phy"] == 14648 and phy["link_down_events_phy"] == 0
    assert "rx_fec_uncorrectable_phy" not in phy  # not exposed by this driver: absent, not zero


@pytest.mark.parametrize(
    "text, match",
    [
        ("no stats available\n", "no stats available"),
        ("Cannot get stats strings information: Operation not supported\n", "Cannot get stats"),
        ("NIC statistics:\n     rx_packets: many\n", "line 2: .*not an integer"),
        ("NIC statistics:\n     rx_packets 12\n", "line 2: .*not 'name: value'"),
        ("", "no output"),
    ],
)
def test_ethtool_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_ethtool_stats(text)


# ---------------------------------------------------------------- rdma statistic / hw_counters
def test_rdma_statistic_mofed_one_line_per_link():
    links = parse_rdma_statistic(fx("rdma_statistic_mofed.txt"))["links"]
    assert set(links) == {"mlx5_0/1", "mlx5_1/1"}
    l0 = links["mlx5_0/1"]
    assert l0["out_of_buffer"] == 135 and l0["resp_cqe_error"] == 1009 and l0["np_cnp_sent"] == 0
    assert missing_counters(l0) == []


def test_rdma_statistic_pretty_form_and_old_kernel_lacks_counters():
    links = parse_rdma_statistic(fx("rdma_statistic_pretty_2019.txt"))["links"]
    l0 = links["mlx5_0/1"]
    assert l0["local_ack_timeout_err"] == 0 and len(l0) == 10
    # a 2019 kernel/firmware without out_of_sequence / CNP counters: named, never taken as zero
    assert {"out_of_sequence", "np_cnp_sent", "rp_cnp_handled"} <= set(missing_counters(l0))


@pytest.mark.parametrize(
    "text, match",
    [
        ("link mlx5_0/1 rx_write_requests\n", "do not pair up"),
        ("link mlx5_0/1 rx_write_requests x\n", "not an integer"),
        ("link mlx5_0 rx_write_requests 0\n", "no DEV/PORT"),
        ("error: unknown option\n", "unknown option"),
        ("rx_write_requests 0\n", "does not start with 'link"),
    ],
)
def test_rdma_statistic_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_rdma_statistic(text)


def test_hw_counters_grep_form():
    text = "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent:1052612505\n/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:1811101\n"
    c = parse_hw_counters(text)["counters"]
    assert c == {"np_cnp_sent": 1052612505, "out_of_sequence": 1811101}
    assert "rp_cnp_handled" in missing_counters(c, RDMA_COUNTERS)
    with pytest.raises(ParseError, match="not an integer"):
        parse_hw_counters("/sys/x/np_cnp_sent:abc\n")
