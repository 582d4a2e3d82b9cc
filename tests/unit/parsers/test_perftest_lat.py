"""Unit tests for plugins/module_utils/parsers/perftest_lat.py: the latency table of ib_write_lat / ib_send_lat
in its layouts (perftest RESULT_FMT_LAT since 2016, the older three columns, duration mode), on
tests/unit/fixtures/perftest (SOURCES.md)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest_lat import parse_perftest_lat


def test_the_current_table_every_column_read():
    res = parse_perftest_lat(fixture("perftest", "lat_write_composed_v4.txt"))
    assert (res["test"], res["verb"]) == ("RDMA_Write Latency Test", "write") and res["columns"] == [
        "bytes",
        "iterations",
        "t_min_usec",
        "t_max_usec",
        "t_typical_usec",
        "t_avg_usec",
        "t_stdev_usec",
        "p99_usec",
        "p99_9_usec",
    ]
    assert res["results"] == [
        {
            "bytes": 2,
            "iterations": 1000,
            "t_min_usec": 1.52,
            "t_max_usec": 4.11,
            "t_typical_usec": 1.58,
            "t_avg_usec": 1.60,
            "t_stdev_usec": 0.05,
            "p99_usec": 1.79,
            "p99_9_usec": 4.11,
        }
    ]
    assert (res["t_avg_usec"], res["p99_usec"], res["tps_average"]) == (1.60, 1.79, None)


def test_the_old_three_column_table_leaves_the_newer_figures_none():
    res = parse_perftest_lat(fixture("perftest", "lat_send_composed_old.txt"))
    assert res["results"] == [{"bytes": 2, "iterations": 1000, "t_min_usec": 1.31, "t_max_usec": 9.87, "t_typical_usec": 1.35}]
    assert (res["test"], res["verb"]) == ("Send Latency Test", "send")
    assert res["t_avg_usec"] is None and res["t_typical_usec"] == 1.35


def test_duration_mode_reads_tps():
    res = parse_perftest_lat(fixture("perftest", "lat_write_composed_duration.txt"))
    assert res["columns"] == ["bytes", "iterations", "t_avg_usec", "tps_average"]
    assert (res["iterations"], res["t_avg_usec"], res["tps_average"]) == (3152640, 1.58, 632528.0)


def test_a_row_that_does_not_fit_the_header_is_a_warning():
    text = fixture("perftest", "lat_write_composed_v4.txt").replace(" 2       1000          1.52", " 2       1000          1.52   7.7", 1)
    res = parse_perftest_lat(text + " 4       1000          1.50  4.00  1.55  1.58  0.04  1.70  3.90\n")
    assert any(w.startswith("result row not read (10 cells for 9 columns)") for w in res["warnings"])
    assert [r["bytes"] for r in res["results"]] == [4]


def test_no_latency_table_is_an_error_with_the_tool_s_words():
    with pytest.raises(ParseError, match="Couldn't connect to 172.16.12.12:18515"):
        parse_perftest_lat(fixture("perftest", "error_couldnt_connect.txt"))
