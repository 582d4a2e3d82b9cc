"""Incast phase, RDMA side (module_utils/checks/incast.py): ECN marks, CNPs and loss from the hw_counters."""

import os

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks import incast as incastcheck
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils import findings

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "counters", "rdma_statistic_mofed.txt")
FABRIC = {"transport": "roce", "link_speed_gbps": 400, "roce": {"no_drop_priority": 3, "ecn": {"enabled": True}}}
NODES = ["node1", "node2", "node3"]
CABLING = cabling.cabling_index({n: [{"device": "mlx5_0", "switch": "leaf1", "switch_port": f"swp{i + 1}"}] for i, n in enumerate(NODES)})
NAMES = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent")


def stat(device="mlx5_0", drop=(), **c):
    """``rdma statistic show link DEV/1`` as MLNX_OFED's iproute2 prints it: one line per link."""
    return f"link {device}/1 " + " ".join(f"{n} {c.get(n, 0)}" for n in NAMES if n not in drop) + "\n"


def healthy():
    return {"node1": {"np_ecn_marked_roce_packets": 900, "np_cnp_sent": 900}, "node2": {"rp_cnp_handled": 450}, "node3": {"rp_cnp_handled": 450}}


def run(after=None, fabric=FABRIC, texts=None, drop=(), inconclusive=None):
    after = healthy() if after is None else after
    phase = {n: {"hw": {"mlx5_0": (texts or {}).get(n) or [stat(), stat(drop=drop, **after.get(n, {}))]}} for n in NODES}
    rails = [{"device": "mlx5_0", "receiver": "node1", "senders": ["node2", "node3"], "k": 2, "flows": {"node2": 190.0, "node3": 188.0}, "missing": []}]
    if inconclusive:
        rails[0]["inconclusive"] = list(inconclusive)
    f = incastcheck.hw_findings(phase, fabric, CABLING, rails, findings.finding, cabling._where)
    return f, rails[0]


def where(f):
    return [(x["code"], x["node"], x["device"], x["switch"], x["switch_port"]) for x in f]


def test_healthy_incast_marks_and_cnps_and_loses_nothing():
    f, rail = run()
    assert f == []
    assert rail["ecn_marked"]["node1"] == 900 and rail["cnp_sent"]["node1"] == 900
    assert rail["cnp_handled"] == {"node1": 0, "node2": 450, "node3": 450}
    assert rail["out_of_sequence"]["node1"] == 0


def test_the_mofed_fixture_parses_and_an_unchanged_window_means_no_ecn():
    with open(FIX) as fh:
        text = "".join(line for line in fh if line.startswith("link "))
    f, rail = run(texts={n: [text, text] for n in NODES})
    assert where(f) == [("INCAST_NO_ECN", "node1", "mlx5_0", "leaf1", "swp1")]
    assert "leaf1 swp1" in f[0]["message"]


def test_loss_on_the_no_drop_class_is_out_of_sequence_at_the_receiver():
    after = healthy()
    after["node1"].update(out_of_sequence=5000, packet_seq_err=600)
    after["node2"]["local_ack_timeout_err"] = 9
    f, _ = run(after)
    assert where(f) == [("INCAST_OUT_OF_SEQUENCE", "node1", "mlx5_0", "leaf1", "swp1")]
    assert f[0]["evidence"]["deltas"] == {"out_of_sequence": 5000, "packet_seq_err": 600}
    assert f[0]["evidence"]["local_ack_timeout_err"]["node2"] == 9


def test_marks_without_cnps_blame_the_receiver():
    after = healthy()
    after["node1"]["np_cnp_sent"] = 0
    f, _ = run(after)
    assert where(f) == [("INCAST_ECN_NO_CNP", "node1", "mlx5_0", "leaf1", "swp1")]


def test_cnps_a_sender_does_not_handle_blame_that_sender():
    after = healthy()
    after["node3"]["rp_cnp_handled"] = 0
    f, _ = run(after)
    assert where(f) == [("INCAST_ECN_NO_CNP", "node3", "mlx5_0", "leaf1", "swp3")]


def test_a_sender_that_ran_alone_is_not_blamed_for_handling_no_cnp():
    # seen on a loaded lab: a late client ran after the others had finished (INCAST_INCONCLUSIVE),
    # met no congestion and so handled no CNP; that proves nothing about its reaction point
    after = healthy()
    after["node3"]["rp_cnp_handled"] = 0
    f, _ = run(after, inconclusive=["node3"])
    assert f == []
    f, _ = run(after, inconclusive=["node2"])
    assert where(f) == [("INCAST_ECN_NO_CNP", "node3", "mlx5_0", "leaf1", "swp3")]


def test_no_marks_under_incast_names_the_receivers_switch_port():
    f, _ = run({"node1": {}, "node2": {}, "node3": {}})
    assert where(f) == [("INCAST_NO_ECN", "node1", "mlx5_0", "leaf1", "swp1")]


def test_no_marks_is_fine_when_the_intent_has_no_ecn():
    fabric = {**FABRIC, "roce": {"no_drop_priority": 3, "ecn": {"enabled": False}}}
    assert run({"node1": {}, "node2": {}, "node3": {}}, fabric)[0] == []


def test_infiniband_has_no_rdma_congestion_counters_to_judge():
    assert run({"node1": {}}, {"transport": "infiniband"})[0] == []


@pytest.mark.parametrize("drop, node, counter", [(("np_cnp_sent",), "node1", "np_cnp_sent"), (("rp_cnp_handled",), "node2", "rp_cnp_handled")])
def test_a_counter_the_driver_lacks_is_a_warning_naming_it(drop, node, counter):
    f, rail = run(drop=drop)
    warn = [x for x in f if x["code"] == "COUNTER_MISSING" and x["node"] == node]
    assert warn and warn[0]["counter"] == counter and warn[0]["severity"] == "warning"
    assert "not proven" in warn[0]["message"] and f"{node}:{counter}" in rail["missing"]
    assert [x for x in f if x["severity"] == "error"] == []


def test_unreadable_counters_warn_and_never_pass_silently():
    f, _ = run(texts={"node2": ["", "Failed to open NETLINK_RDMA socket\n"]})
    assert where(f) == [("COUNTER_MISSING", "node2", "mlx5_0", "leaf1", "swp2")]
    assert "hw_counters unreadable" in f[0]["message"]
    f, _ = run(texts={"node1": [stat(device="mlx5_3"), stat(device="mlx5_3")]})
    assert where(f)[0][:2] == ("COUNTER_MISSING", "node1") and "no link mlx5_0/1" in f[0]["message"]


def test_loss_already_blamed_on_a_sender_goes_into_that_finding_not_onto_the_receiver():
    after = healthy()
    after["node1"]["out_of_sequence"] = 700
    phase = {n: {"hw": {"mlx5_0": [stat(), stat(**after.get(n, {}))]}} for n in NODES}
    rails = [{"device": "mlx5_0", "receiver": "node1", "senders": ["node2", "node3"], "k": 2, "flows": {"node2": 190.0, "node3": 60.0}, "missing": []}]
    prior = [findings.finding("INCAST_GOODPUT_LOW", "node3 mlx5_0: 60 Gb/s", check="incast", **cabling._where(CABLING, "node3", "mlx5_0"))]
    f = incastcheck.hw_findings(phase, FABRIC, CABLING, rails, findings.finding, cabling._where, prior)
    assert f == []
    assert prior[0]["evidence"]["receiver_loss"] == {"node1": {"out_of_sequence": 700}}
