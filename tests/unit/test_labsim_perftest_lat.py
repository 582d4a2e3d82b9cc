"""The lab's simulated ib_send_bw, ib_write_lat and ib_send_lat: perftest's own formats (read by the
product's parsers), the grammar gate of a latency test, and the fabric model (faults, class, GID)."""

import subprocess
import sys

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest import parse_ib_send_bw, parse_ib_write_bw
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest_lat import parse_perftest_lat

import test_verify_sim
from test_verify_sim import RUNNER, free_port, wait_listening

sys.path.insert(0, "lab/sim")
from linerate_lab.tools import ib_write_lat  # noqa: E402

# These tests take test_verify_sim's lab fixture (a node with a runner), not the conftest's (labsim's).
lab = test_verify_sim.lab

LAT_ARGS = ["-d", "mlx5_0", "-x", "3", "-F", "-n", "1000", "--tclass=104"]


def run_pair(lab, tool, args, server_node="node2", client_node="node1", server_args=None):
    port = str(free_port())
    srv = lab.start(server_node, tool, *(server_args or args), "-p", port)
    wait_listening([srv], [port])
    cli = lab.start(client_node, tool, *args, "-p", port, "127.0.0.1")
    c_out, c_err = cli.communicate(timeout=30)
    s_out, s_err = srv.communicate(timeout=30)
    return (cli.returncode, c_out, c_err), (srv.returncode, s_out, s_err)


def test_send_bw_healthy_pair_prints_perftests_send_layout(lab):
    args = ["-d", "mlx5_0", "-x", "3", "-F", "--report_gbits", "-q", "4", "-D", "1", "--tclass=104"]
    (crc, cout, cerr), (src, sout, serr) = run_pair(lab, "ib_send_bw", args)
    assert crc == 0 and src == 0, cout + cerr + sout + serr
    c, s = parse_ib_send_bw(cout), parse_ib_send_bw(sout)
    assert c["test"] == "Send BW Test" and c["verb"] == "send" and s["role"] == "server"
    assert 370 < c["bw_average_gbps"] < 400 and 370 < s["bw_average_gbps"] < 400
    # the send verb: the server prints its RX depth (DEF_RX_SEND), no RKey/VAddr in the address lines
    assert " RX depth        : 512" in sout and "RX depth" not in cout
    assert "RKey" not in cout and "RKey" not in sout and "local address: LID 0000 QPN" in cout
    assert c["local"][0]["ipv4"] == "192.168.100.11"


def test_send_bw_is_not_read_as_another_test(lab):
    args = ["-d", "mlx5_0", "-x", "3", "-F", "--report_gbits", "-D", "1", "--tclass=104"]
    (crc, cout, _), _ = run_pair(lab, "ib_write_bw", args)
    assert crc == 0
    with pytest.raises(ParseError, match="not ib_send_bw"):
        parse_ib_send_bw(cout)


def test_send_bw_follows_the_link_speed(lab):
    lab.model["nodes"]["node2"]["nics"][0]["speed_gbps"] = 200
    args = ["-d", "mlx5_0", "-x", "3", "-F", "--report_gbits", "-D", "1", "--tclass=104"]
    (crc, cout, _), _ = run_pair(lab, "ib_send_bw", args)
    assert crc == 0 and 180 < parse_ib_send_bw(cout)["bw_average_gbps"] < 200


@pytest.mark.parametrize("tool,title,inline", [("ib_write_lat", "RDMA_Write Latency Test", 220), ("ib_send_lat", "Send Latency Test", 236)])
def test_latency_healthy_pair_both_sides_print_the_table(lab, tool, title, inline):
    (crc, cout, cerr), (src, sout, serr) = run_pair(lab, tool, LAT_ARGS)
    assert crc == 0 and src == 0, cout + cerr + sout + serr
    c, s = parse_perftest_lat(cout), parse_perftest_lat(sout)
    assert c["test"] == title and c["role"] == "client" and s["role"] == "server"
    assert c["columns"] == ["bytes", "iterations", "t_min_usec", "t_max_usec", "t_typical_usec", "t_avg_usec", "t_stdev_usec", "p99_usec", "p99_9_usec"]
    assert c["bytes"] == 2 and c["iterations"] == 1000 and c["max_inline_data"] == inline
    # one leaf between the two nodes: host 1.05 + one switch 0.45 us (+ the wire time of 2 bytes)
    assert 1.4 < c["t_typical_usec"] < 1.7 and 1.4 < s["t_typical_usec"] < 1.7
    assert c["t_min_usec"] <= c["t_typical_usec"] <= c["p99_usec"] <= c["p99_9_usec"] <= c["t_max_usec"]
    assert " TX depth        : 1" in cout and "CQ Moderation" not in cout
    assert c["remote"][0]["ipv4"] == "192.168.100.12"
    assert ("RKey" in cout) == (tool == "ib_write_lat")


def test_latency_duration_mode_prints_the_duration_table(lab):
    args = ["-d", "mlx5_0", "-x", "3", "-F", "-D", "1", "--tclass=104"]
    (crc, cout, _), _ = run_pair(lab, "ib_write_lat", args)
    r = parse_perftest_lat(cout)
    assert crc == 0 and r["columns"] == ["bytes", "iterations", "t_avg_usec", "tps_average"]
    assert 1.4 < r["t_avg_usec"] < 1.8 and r["iterations"] > 100000


def test_latency_across_leaves_costs_two_more_switches(lab):
    lab.model["nodes"]["node2"]["nics"][0]["switch"] = "leaf9"
    lab.model["switches"]["leaf9"] = {"ports": {"swp2": {"up": True, "mtu": 9216, "pfc": [3], "speed_gbps": 400}}}
    (crc, cout, _), _ = run_pair(lab, "ib_write_lat", LAT_ARGS)
    assert crc == 0 and 2.3 < parse_perftest_lat(cout)["t_typical_usec"] < 2.7


def test_rx_degraded_port_raises_latency(lab):
    """A degraded element (the rx-degrade fault) loses packets: the pings wait for retransmissions."""
    lab.model["nodes"]["node2"]["nics"][0]["rx_limit_gbps"] = 150
    (crc, cout, _), (src, sout, _) = run_pair(lab, "ib_write_lat", LAT_ARGS)
    assert crc == 0 and src == 0
    assert parse_perftest_lat(cout)["t_avg_usec"] > 5.0 and parse_perftest_lat(sout)["t_avg_usec"] > 5.0


def test_latency_model_terms():
    a = {"link_layer": "Ethernet", "speed_gbps": 400, "switch": "leaf1"}
    b = dict(a)
    healthy = {"gbps": 400 * 0.985 * 256 / (256 + 82), "mtu": 256, "notes": []}  # rdma.path at a 256-byte MTU
    t, degraded = ib_write_lat.latency_usec(a, b, 2, healthy)
    assert degraded == [] and t == pytest.approx(1.05 + 0.45 + 2 * (2 + 82) * 8 / 400e3)
    assert ib_write_lat.latency_usec(a, dict(b, switch="leaf2"), 2, healthy)[0] == pytest.approx(1.05 + 3 * 0.45 + 4 * (2 + 82) * 8 / 400e3)
    # a lossy class alone (one pair does not congest) costs nothing; a degraded element does
    assert ib_write_lat.latency_usec(a, b, 2, dict(healthy, notes=["lossy"]))[0] == pytest.approx(t)
    slow = dict(healthy, gbps=healthy["gbps"] * 0.4, notes=["flaky node2 mlx5_0"])
    assert ib_write_lat.latency_usec(a, b, 2, slow)[0] == pytest.approx(t + 6.0 * 0.6)
    assert ib_write_lat.latency_usec(a, b, 2, healthy, k_other=2)[0] == pytest.approx(t + 3.0)
    ib = {"link_layer": "InfiniBand", "speed_gbps": 400, "switch": "ib1"}
    assert ib_write_lat.latency_usec(ib, dict(ib), 2, dict(healthy, gbps=400 * 0.985))[0] == pytest.approx(0.90 + 0.13 + 2 * (2 + 30) * 8 / 400e3)


def test_latency_port_down_and_missing_gid_fail_like_perftest(lab):
    lab.model["nodes"]["node2"]["nics"][0]["cable"] = "down"
    lab.save()
    port = str(free_port())
    res = subprocess.run([sys.executable, RUNNER, "ib_write_lat", *LAT_ARGS, "-p", port], env=lab.env("node2"), capture_output=True, text=True, timeout=30)
    assert res.returncode == 1 and "Port number 1 state is Down" in res.stderr
    lab.model["nodes"]["node2"]["nics"][0]["cable"] = "up"
    (crc, cout, cerr), (src, sout, serr) = run_pair(lab, "ib_write_lat", LAT_ARGS, server_args=[a if a != "3" else "0" for a in LAT_ARGS])
    assert src == 1 and "to RTR" in serr
    with pytest.raises(ParseError):
        parse_perftest_lat(cout + cerr)


@pytest.mark.parametrize(
    "bad,message",
    [
        (["-q", "4"], "Multiple QPs only available on bw tests"),
        (["-b"], "Bidirectional is only available in BW test"),
        (["--report-gbits"], "unrecognized option"),
    ],
)
def test_latency_grammar_gate_refuses_what_perftest_refuses(lab, bad, message):
    lab.save()
    res = subprocess.run([sys.executable, RUNNER, "ib_write_lat", *LAT_ARGS, *bad], env=lab.env("node1"), capture_output=True, text=True, timeout=30)
    assert res.returncode == 1 and message in res.stderr


def test_bw_gate_refuses_latency_only_options(lab):
    lab.save()
    res = subprocess.run([sys.executable, RUNNER, "ib_send_bw", "-d", "mlx5_0", "-C"], env=lab.env("node1"), capture_output=True, text=True, timeout=30)
    assert res.returncode == 1 and "Available only on Latency tests" in res.stderr


def test_write_bw_still_reads_as_write(lab):
    args = ["-d", "mlx5_0", "-x", "3", "-F", "--report_gbits", "-D", "1", "--tclass=104"]
    (crc, cout, _), _ = run_pair(lab, "ib_write_bw", args)
    r = parse_ib_write_bw(cout)
    assert crc == 0 and r["verb"] == "write" and "RKey" in cout


def test_figures_keep_their_order_in_every_draw():
    """min <= typical <= avg <= 99 % <= 99.9 % <= max, whatever the draw (a run once printed t_max below 99.9 %)."""
    import random
    from linerate_lab.tools import ib_write_lat

    for seed in range(3000):
        f = ib_write_lat.figures(2.0, random.Random(seed))
        assert f["t_min"] <= f["t_typical"] <= f["t_avg"] <= f["p99"] <= f["p999"] <= f["t_max"], (seed, f)
