"""The lab's incast physics, per transport: RoCE without PFC on the class drops
and loses goodput, with PFC pauses the senders; InfiniBand is lossless by
credit flow control whatever PFC says (it has none): the flows share the
line rate and no PFC counter moves."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lab", "sim"))
from linerate_lab import congestion  # noqa: E402


def end(node, link_layer, host_pfc, switch_pfc=(3,)):
    return {
        "node": node,
        "device": "mlx5_0",
        "priority": 3,
        "host_pfc": host_pfc,
        "switch_pfc": list(switch_pfc),
        "link_layer": link_layer,
        "switch_ecn": False,
        "switch_up": True,
    }


def test_infiniband_incast_shares_the_line_rate_without_pfc_counters():
    gbps, d_w, d_r, sw = congestion.outcome(end("node2", "InfiniBand", False, ()), end("node1", "InfiniBand", False, ()), 3, 40.0, 2.0)
    assert gbps == 40.0 / 3
    assert d_w == {} and d_r == {} and sw == {}


def test_roce_incast_without_pfc_drops_and_loses_goodput():
    gbps, d_w, d_r, sw = congestion.outcome(end("node2", "Ethernet", False), end("node1", "Ethernet", True), 3, 400.0, 2.0)
    assert gbps == 400.0 / 3 * congestion.LOSSY_INCAST_FRACTION
    assert d_r["out_of_sequence"] > 0 and "rx_prio3_pause" not in d_w
    assert sw["receiver"]["queue_drop"][3] > 0


def test_roce_incast_with_pfc_pauses_the_senders():
    gbps, d_w, d_r, sw = congestion.outcome(end("node2", "Ethernet", True), end("node1", "Ethernet", True), 3, 400.0, 2.0)
    assert gbps == 400.0 / 3
    assert d_w["rx_prio3_pause"] > 0 and "out_of_sequence" not in d_r


def test_one_pair_is_never_congested():
    gbps, d_w, d_r, sw = congestion.outcome(end("node2", "Ethernet", False), end("node1", "Ethernet", False), 1, 400.0, 2.0)
    assert gbps == 400.0 and not d_w and not d_r


def test_a_flow_sees_a_sender_that_starts_after_it_and_lasts_its_duration(tmp_path, monkeypatch):
    """Incast clients start a fraction of a second apart: the first one still counts the
    second (sampled while it runs), and a flow takes its -D seconds, no start-up window on top."""
    import threading
    import time

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    first = congestion.register("node1", "mlx5_0", "node2", 5)
    later = []
    timer = threading.Timer(0.3, lambda: later.append(congestion.register("node1", "mlx5_0", "node3", 5)))
    timer.start()
    started = time.monotonic()
    k = congestion.overlap("node1", "mlx5_0", 0.8, step=0.1)
    took = time.monotonic() - started
    timer.join()
    assert k == 2
    assert 0.8 <= took < 1.1
    for path in [first] + later:
        congestion.unregister(path)
    assert congestion.senders("node1", "mlx5_0") == 1  # nobody left: one is the caller itself


# ---------------------------------------------------------------- the switch buffer model (headroom)


def _end(node, headroom):
    return {
        "node": node,
        "device": "mlx5_0",
        "priority": 3,
        "host_pfc": True,
        "switch_pfc": [3],
        "switch_headroom": headroom,
        "switch": "leaf2",
        "switch_port": "Ethernet0",
        "link_layer": "Ethernet",
    }


def test_port_without_headroom_drops_under_incast_and_does_not_pause():
    from linerate_lab import congestion

    gbps, d_w, d_r, sw = congestion.outcome(_end("a", [3]), _end("b", []), 4, 400, 2)
    assert d_r["out_of_sequence"] > 0 and "rx_prio3_pause" not in d_w
    assert sw["receiver"]["queue_drop"][3] > 0 and not sw["sender"].get("pfc_tx")
    assert gbps == pytest.approx(100 * congestion.LOSSY_INCAST_FRACTION)


def test_port_with_headroom_pauses_and_not_modelled_means_pfc_decides():
    from linerate_lab import congestion

    for head in ([3], None):
        gbps, d_w, d_r, sw = congestion.outcome(_end("a", head), _end("b", head), 4, 400, 2)
        assert d_w["rx_prio3_pause"] > 0 and "out_of_sequence" not in d_r and gbps == pytest.approx(100)
