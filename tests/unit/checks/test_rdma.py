"""Diagnosis rules and link localisation (module_utils/checks/rdma.py), on real tool outputs where they exist."""

import os

from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import nccl as checks_nccl
from ansible_collections.linerate.fabric.plugins.module_utils.checks import plans
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma
from ansible_collections.linerate.fabric.plugins.module_utils.checks import thresholds
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import nccl_log
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import parse_nccl_log

from checks.test_plans import FABRIC

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
NODES = [f"node{i}" for i in range(1, 5)]
PORTS = {
    n: [
        {
            "device": f"mlx5_{r}",
            "netdev": f"enp{65 + 16 * r}s0f0np0",
            "address": f"192.168.{100 + r}.{10 + i}/24",
            "switch": f"leaf{r + 1}",
            "switch_port": f"swp{i}",
        }
        for r in range(2)
    ]
    for i, n in enumerate(NODES, 1)
}
CABLING = cabling.cabling_index(PORTS)


def fixture(*parts):
    with open(os.path.join(FIX, *parts)) as f:
        return f.read()


# ---------------------------------------------------------------- ports


# ---------------------------------------------------------------- ib_write_bw


def rounds_tests(bad=None, gbps_bad=150.0, errors=None, dev="mlx5_0"):
    """Every pair of NODES on one rail; tests touching ``bad`` get ``gbps_bad`` or ``errors``."""
    tests = []
    for k, rnd in enumerate(plans.round_robin(NODES)):
        for server, client in rnd:
            t = {"round": k, "server": [server, dev], "client": [client, dev], "gbps": 385.0, "client_error": None, "server_error": None}
            if bad in (server, client):
                if errors:
                    side = "server" if server == bad else "client"
                    t.update(errors(side))
                    t["gbps"] = None
                else:
                    t["gbps"] = gbps_bad
            tests.append(t)
    return tests


def test_low_bandwidth_is_localised_to_the_common_endpoint():
    found, evaluated = rdma.rdma_findings(rounds_tests("node3"), FABRIC, CABLING)
    assert [(f["code"], f["node"], f["device"], f["switch"], f["switch_port"]) for f in found] == [("RDMA_BW_LOW", "node3", "mlx5_0", "leaf1", "swp3")]
    assert found[0]["layer"] == "pfc"  # full speed link, a fraction of line rate
    assert sum(not t["ok"] for t in evaluated) == 3


def test_half_rate_points_at_link_speed():
    found, _ = rdma.rdma_findings(rounds_tests("node2", gbps_bad=192.0), FABRIC, CABLING)
    assert found[0]["layer"] == "link" and "200" in found[0]["message"]


def test_healthy_rounds_have_no_findings():
    found, evaluated = rdma.rdma_findings(rounds_tests(), FABRIC, CABLING)
    assert found == [] and all(t["ok"] for t in evaluated)


def test_port_state_error_blames_the_side_that_printed_it():
    def errors(side):
        if side == "server":
            return {
                "server_error": "Port number 1 state is Down; Couldn't set the link layer",
                "client_error": "Couldn't connect to 10.0.0.4:18515; Unable to init the socket connection",
            }
        return {"client_error": "Port number 1 state is Down; Couldn't set the link layer", "server_error": "killed after 13 s (no client connected)"}

    found, _ = rdma.rdma_findings(rounds_tests("node4", errors=errors), FABRIC, CABLING)
    assert [(f["code"], f["node"], f["device"], f["switch_port"]) for f in found] == [("PORT_DOWN", "node4", "mlx5_0", "swp4")]
    assert "state is Down" in found[0]["message"]


def test_qp_failure_is_a_gid_problem_of_the_side_that_printed_it():
    def errors(side):
        mine = "Failed to modify QP 0x0128 to RTR; Unable to Connect the HCA's through the link"
        other = "Failed to exchange data between server and clients"
        return {f"{side}_error": mine, f"{'client' if side == 'server' else 'server'}_error": other}

    found, _ = rdma.rdma_findings(rounds_tests("node2", errors=errors), FABRIC, CABLING)
    assert [(f["code"], f["node"], f["layer"]) for f in found] == [("RDMA_QP_FAILED", "node2", "gid")]


def test_transport_retry_uses_port_check_hints_to_break_ties():
    # frames towards node2 are dropped: only the test where node2 receives fails
    tests = rounds_tests()
    target = next(t for t in tests if t["server"][0] == "node2")
    target.update(gbps=None, client_error="Completion with error at client; Failed status 12: wr_id 0 syndrom 0x81")
    found, _ = rdma.rdma_findings(tests, FABRIC, CABLING, hints=[("node2", "mlx5_0")])
    assert [(f["code"], f["node"]) for f in found] == [("RDMA_TRANSPORT_RETRY", "node2")]
    # without a hint the one failing test cannot be pinned on either end
    found, _ = rdma.rdma_findings(tests, FABRIC, CABLING)
    assert [f["code"] for f in found] == ["RDMA_INCONCLUSIVE"]


def test_two_node_pair_is_inconclusive():
    tests = [{"round": 0, "server": ["a", "mlx5_0"], "client": ["b", "mlx5_0"], "gbps": 100.0, "client_error": None, "server_error": None}]
    found, _ = rdma.rdma_findings(tests, FABRIC, {})
    assert [f["code"] for f in found] == ["RDMA_INCONCLUSIVE"] and found[0]["peer"]["node"] == "b"


def test_classify_real_perftest_errors():
    assert rdma.classify_rdma_error(fixture("perftest", "error_couldnt_connect.txt")) == "RDMA_CONNECT_FAILED"
    assert rdma.classify_rdma_error(fixture("perftest", "error_completion.txt")) == "RDMA_TRANSPORT_RETRY"
    assert rdma.classify_rdma_error(fixture("perftest", "error_device_not_found.txt")) == "PORT_MISSING"
    assert rdma.classify_rdma_error(fixture("perftest", "error_no_devices.txt")) == "PORT_MISSING"
    assert rdma.classify_rdma_error("something else broke") == "RDMA_TEST_ERROR"


# ---------------------------------------------------------------- nccl (real NCCL logs)


def run_from_logs(logs, busbw=95.0, error=None, test="all_reduce_perf"):
    return {"test": test, "busbw": busbw, "error": error, "logs": logs}


def test_real_gdr_log_is_healthy():
    log = parse_nccl_log(fixture("nccl_logs", "ib_roce_gdr_2_23.txt"))
    hosts = {"node1": [{"device": d["device"]} for d in log["ib_devices"]]}
    fabric = dict(FABRIC, link_speed_gbps=400)
    busbw = thresholds.nccl_threshold_gbytes(fabric, len(log["ib_devices"])) + 1
    assert checks_nccl.nccl_findings(run_from_logs({"node1": log}, busbw), fabric, hosts) == []


def test_real_socket_fallback_log():
    log = parse_nccl_log(fixture("nccl_logs", "socket_fallback_2_18.txt"))
    assert log["transport"] == "Socket"
    found = checks_nccl.nccl_findings(run_from_logs({"node1": log}, 2.5), FABRIC, {"node1": PORTS["node1"]})
    codes = {f["code"]: f for f in found}
    assert set(codes) == {"NCCL_NET_SOCKET", "NCCL_BUSBW_LOW"}
    assert codes["NCCL_BUSBW_LOW"]["layer"] in ("hca_selection", "interface_selection")


def test_real_log_without_gdr():
    log = parse_nccl_log(fixture("nccl_logs", "ibext_plugin_no_gdr.txt"))
    assert log["gdr"] is False
    hosts = {"node1": [{"device": d["device"]} for d in log["ib_devices"]]}
    found = checks_nccl.nccl_findings(run_from_logs({"node1": log}, 10**4), FABRIC, hosts)
    assert [f["code"] for f in found] == ["NCCL_NO_GDR"] and found[0]["layer"] == "peermem"
    assert checks_nccl.nccl_findings(run_from_logs({"node1": log}, 10**4), FABRIC, hosts, expect_gdr=False) == []


def test_real_completion_error_is_a_transport_retry():
    log = parse_nccl_log(fixture("nccl_logs", "error_completion_wrapped.txt"))
    found = checks_nccl.nccl_findings(run_from_logs({"node1": log}, None, error="Test NCCL failure"), FABRIC, {"node1": PORTS["node1"]})
    assert "NCCL_TRANSPORT_RETRY" in {f["code"] for f in found}
    assert "NCCL_BUSBW_LOW" not in {f["code"] for f in found}


def test_wrong_hca_is_named():
    log = {"transport": "Socket", "gdr": None, "ib_devices": [], "env": {"NCCL_IB_HCA": "mlx5_8,mlx5_9"}, "error": None}
    found = checks_nccl.nccl_findings(run_from_logs({"node2": log}, 2.9), FABRIC, {"node2": PORTS["node2"]})
    sock = next(f for f in found if f["code"] == "NCCL_NET_SOCKET")
    assert sock["node"] == "node2" and sock["layer"] == "hca_selection" and "mlx5_8" in sock["message"]


def test_fewer_nics_than_cabled():
    log = {"transport": "IB", "gdr": True, "ib_devices": [{"device": "mlx5_1"}], "env": {}, "error": None}
    found = checks_nccl.nccl_findings(run_from_logs({"node3": log}, 45.0), FABRIC, {"node3": PORTS["node3"]})
    few = next(f for f in found if f["code"] == "NCCL_FEW_NICS")
    assert (few["node"], few["device"], few["switch"], few["switch_port"]) == ("node3", "mlx5_0", "leaf1", "swp3")
    assert next(f for f in found if f["code"] == "NCCL_BUSBW_LOW")["layer"] == "hca_selection"


def test_correlate_takes_the_port_checks_layer():
    port = faults.finding("PORT_SPEED", "x", node="node2", device="mlx5_1", check="ports")
    bw = faults.finding("RDMA_BW_LOW", "y", node="node2", device="mlx5_1", check="ib_write_bw", layer="pfc")
    out = faults.correlate([port, bw])
    assert out[1]["layer"] == "link" and out[1]["related"] == ["PORT_SPEED"]
    assert faults.summarize(out) == {"passed": False, "errors": 2, "warnings": 0, "codes": {"PORT_SPEED": 1, "RDMA_BW_LOW": 1}}


def test_split_log_by_host_handles_mpirun_tags():
    text = "[1,0]<stdout>:node1:11:12 [0] NCCL INFO Using network IB\nnode2:21:22 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n# not a log line\n"
    out = checks_nccl.split_log_by_host(text)
    assert set(out) == {"node1", "node2"} and "NET/Socket" in out["node2"]


# What Open MPI 4.1 printed in the lab under load: node1's chunk ended mid-line, node4's chunk came in
# between (each chunk tagged, not each line); node1's block ended in its trailing blanks and went on
# with the newline in its next chunk; mpirun's own message carries no tag.
TANGLED = (
    "[1,3]<stdout>:node4:829:829 [0] NCCL INFO Bootstrap : Using eth0:10.89.240.14<0>\n"
    "[1,0]<stdout>:node1:879:920 [0] NCCL INFO NET/IB : Us"
    "[1,3]<stdout>:node4:829:870 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.89.240.14<0>\n"
    "[1,3]<stdout>:node4:829:870 [0] NCCL INFO Using network IB\n"
    "[1,0]<stdout>:ing [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.89.240.11<0>\n"
    "[1,0]<stdout>:node1:879:920 [0] NCCL INFO Using network IB\n"
    "[1,0]<stdout>:#   in-place          [1,0]<stdout>:\n"
    "[1,0]<stdout>:# done\n"
    "[1,3]<stderr>:warn: late\n"
    "--------------------------------------------------------------------------\n"
    "mpirun noticed nothing\n"
)


def test_untangle_gives_each_rank_its_own_lines_back():
    out = nccl_log.untangle_tagged(TANGLED)
    assert out.splitlines() == [
        "node1:879:920 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.89.240.11<0>",
        "node1:879:920 [0] NCCL INFO Using network IB",
        "#   in-place          ",
        "# done",
        "node4:829:829 [0] NCCL INFO Bootstrap : Using eth0:10.89.240.14<0>",
        "node4:829:870 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.89.240.14<0>",
        "node4:829:870 [0] NCCL INFO Using network IB",
        "warn: late",
        "--------------------------------------------------------------------------",
        "mpirun noticed nothing",
    ]
    # untagged text is left as it is (a line another process cut is lost there: nothing says whose it was)
    plain = "node1:1:2 [0] NCCL INFO Using network IB\r\nnoise\n"
    assert nccl_log.untangle_tagged(plain) == plain.replace("\r\n", "\n")
    assert nccl_log.untangle_tagged("") == "" and nccl_log.untangle_tagged(None) == ""
    # a last piece without its newline still ends its line
    assert nccl_log.untangle_tagged("[1,1]<stdout>:a\n[1,0]<stdout>:b") == "b\na\n"


def test_a_log_line_cut_by_another_ranks_chunk_still_counts_its_nics():
    logs = {h: nccl_log.parse_nccl_log(t) for h, t in checks_nccl.split_log_by_host(TANGLED).items()}
    assert set(logs) == {"node1", "node4"}
    assert [d["device"] for d in logs["node1"]["ib_devices"]] == ["mlx5_0", "mlx5_1"]
    assert [d["device"] for d in logs["node4"]["ib_devices"]] == ["mlx5_0", "mlx5_1"]
    hosts = {n: [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}, {"device": "mlx5_1", "switch": "leaf2", "switch_port": "swp1"}] for n in logs}
    run = {"test": "all_gather_perf", "busbw": 90.0, "logs": logs}
    assert [f["code"] for f in checks_nccl.nccl_findings(run, FABRIC, hosts, expect_gdr=False)] == []


def test_round_tests_pair_each_client_with_its_servers_rail():
    logs = {
        "node1": [
            {
                "round": 0,
                "role": "client",
                "peer": "node2",
                "results": [{"device": "mlx5_0", "gbps": 390.0, "error": None}, {"device": "mlx5_1", "gbps": None, "error": "exit status 1"}],
            }
        ],
        "node2": [
            {"round": 0, "role": "server", "results": [{"device": "mlx5_1", "error": "Port number 1 state is Down"}]},
            {"round": 1, "role": "server", "results": [{"device": "mlx5_0", "error": "other round"}]},
        ],
    }
    assert rdma.round_tests(logs) == [
        {"round": 0, "client": ["node1", "mlx5_0"], "server": ["node2", "mlx5_0"], "gbps": 390.0, "client_error": None, "server_error": None},
        {
            "round": 0,
            "client": ["node1", "mlx5_1"],
            "server": ["node2", "mlx5_1"],
            "gbps": None,
            "client_error": "exit status 1",
            "server_error": "Port number 1 state is Down",
        },
    ]
