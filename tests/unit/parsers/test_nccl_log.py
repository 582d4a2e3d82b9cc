"""Unit tests for plugins/module_utils/parsers/nccl_log.py on our own fixtures."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.nccl_log import parse_nccl_log


# ---------------------------------------------------------------- NCCL_DEBUG logs


def test_log_ib_roce_with_gdr():
    log = parse_nccl_log(fixture("nccl_logs", "ib_roce_gdr_2_23.txt"))
    assert log["transport"] == "IB"
    assert log["gdr"] is True
    assert log["nccl_version"] == "2.23.4"
    assert log["cuda_version"] == "12.6"
    assert log["ib_devices"] == [
        {"index": 0, "device": "mlx5_0", "port": 1, "link_layer": "RoCE"},
        {"index": 1, "device": "mlx5_3", "port": 1, "link_layer": "RoCE"},
    ]
    assert log["num_nics"] == 2
    assert log["relaxed_ordering"] is True
    assert log["oob_interface"] == "ens41np0"
    assert log["channels"] == {"rings": 4, "coll": 4, "collnet": 4, "nvls": 0, "p2p": 4}
    assert log["num_channels"] == 4
    assert log["net_channels"] == 3
    assert log["intra_node_paths"] == ["P2P/CUMEM/read"]
    assert log["nranks"] == 8
    assert log["init_complete"] is True
    assert log["init_complete_ranks"] == 1
    assert log["env"]["NCCL_IB_GID_INDEX"] == "3"
    assert log["fallbacks"] == [{"signal": "no_external_net_plugin", "line": "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."}]
    assert log["error"] is None
    assert log["warnings"] == []


def test_log_socket_fallback():
    log = parse_nccl_log(fixture("nccl_logs", "socket_fallback_2_18.txt"))
    assert log["transport"] == "Socket"
    assert log["gdr"] is False
    assert log["nccl_version"] == "2.18.5"
    assert log["socket_interfaces"][0] == {"index": 0, "interface": "ens1f0np0", "address": "172.16.12.12"}
    assert log["num_nics"] == 2
    signals = [f["signal"] for f in log["fallbacks"]]
    assert signals == ["no_ib_device", "socket_instead_of_ib"]
    assert log["nranks"] == 16
    assert log["error"] is None


def test_log_ibext_plugin_without_gdr():
    log = parse_nccl_log(fixture("nccl_logs", "ibext_plugin_no_gdr.txt"))
    assert log["transport"] == "IB"
    assert log["network"] == "IBext_v8"
    assert log["gdr"] is False
    assert log["relaxed_ordering"] is False
    assert [d["device"] for d in log["ib_devices"]] == ["mlx5_1", "mlx5_2"]
    assert [d["link_layer"] for d in log["ib_devices"]] == ["IB", "IB"]


def test_log_connection_refused_is_an_error():
    log = parse_nccl_log(fixture("nccl_logs", "error_connection_refused.txt"))
    assert log["error"] == "socketStartConnect: Connect to 10.89.3.5<37411> failed : Connection refused"
    assert log["error_code"] == "system error"
    assert log["nccl_version"] == "2.19.3"
    assert log["transport"] is None
    assert log["gdr"] is None


def test_log_missing_net_plugin_is_an_error_without_transport():
    log = parse_nccl_log(fixture("nccl_logs", "error_net_plugin_not_found.txt"))
    assert log["transport"] is None
    assert log["error"] == "Error: network AWS Libfabric not found."
    assert {f["signal"] for f in log["fallbacks"]} == {"no_external_net_plugin", "net_not_found"}


def test_log_wrapped_warn_line_is_rejoined():
    log = parse_nccl_log(fixture("nccl_logs", "error_completion_wrapped.txt"))
    assert log["warnings"] == [
        "NET/IB : Got completion from peer 172.16.11.17<41872> with status=12 opcode=0 len=0 vendor err 129 "
        "(Recv) localGid ::ffff:172.16.11.18 remoteGids::ffff:172.16.11.17 hca mlx5_0"
    ]
    assert log["error"].startswith("NET/IB : Got completion from peer")
    assert log["error_code"] == "remote error"
    # no ``Using`` line, but the WARN is NCCL's IB transport's own (NET/IB, net_ib.cc): issue 38 class 2
    assert log["transport"] == "IB"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty output"),
        ("step 10 loss 2.31\nstep 20 loss 2.07\n", "no NCCL_DEBUG lines"),
    ],
)
def test_log_without_nccl_lines_raises(text, message):
    with pytest.raises(ParseError, match=message):
        parse_nccl_log(text)


def test_log_init_failure_without_socket_interface():
    log = parse_nccl_log(fixture("nccl_logs", "error_init_no_socket_interface.txt"))
    assert log["error"] == "Bootstrap : no socket interface found"
    assert log["error_code"] == "internal error"
    assert log["env"] == {"NCCL_SOCKET_IFNAME": "ens9"}
    assert log["init_complete"] is False


def test_log_merged_virtual_nics():
    log = parse_nccl_log(fixture("nccl_logs", "ibext_merged_nics.txt"))
    assert log["transport"] == "IB"
    assert log["network"] == "IBext_v9"
    assert [(d["device"], d["vnic"]) for d in log["ib_devices"]] == [("mlx5_4", 0), ("mlx5_5", 0), ("mlx5_6", 1), ("mlx5_7", 1)]
    assert log["num_nics"] == 4
    assert log["oob_interface"] == "bond0"
    assert log["gdr"] is None  # nothing in this excerpt says


def test_log_sharp_devices_and_shared_gdr_channel():
    log = parse_nccl_log(fixture("nccl_logs", "ib_sharp.txt"))
    assert [d.get("sharp") for d in log["ib_devices"]] == [True, True]
    assert log["ib_devices"][1]["link_layer"] == "IB"
    assert log["gdr"] is True
    assert log["net_channels"] == 1


# ------------------------------------------------ NCCL logs: fatal wins over noise


def test_log_fatal_cuda_failure_wins_over_falling_back_warnings():
    log = parse_nccl_log(fixture("nccl_logs", "real_fallback_noise_then_cuda_failure_2_25.txt"))
    assert log["error"] == "Cuda failure 1 'invalid argument'"
    assert log["error_code"] == "unhandled cuda error"
    assert log["transport"] == "Socket"
    assert sum("falling back" in w for w in log["warnings"]) == 4


def test_log_falling_back_warnings_alone_are_not_an_error():
    text = fixture("nccl_logs", "real_fallback_noise_then_cuda_failure_2_25.txt")
    clean = text.split("\nGENOA-06:4766:4766 [1] enqueue.cc")[0]
    log = parse_nccl_log(clean)
    assert log["init_complete_ranks"] == 2
    assert log["error"] is None and log["error_code"] is None
    assert len(log["warnings"]) == 4


def test_log_net_plugin_load_failure_then_ib_is_not_the_error():
    log = parse_nccl_log(fixture("nccl_logs", "plugin_load_failed_then_ib_2_19.txt"))
    assert log["transport"] == "IB" and log["gdr"] is True
    assert log["error"] is None
    assert log["warnings"][0].startswith("NET/Plugin : Plugin load (libnccl-net-sharp.so) returned 2")
    assert [f["signal"] for f in log["fallbacks"]] == ["no_external_net_plugin"]


def test_log_libibverbs_missing_on_a_socket_run_is_a_fallback_not_an_error():
    log = parse_nccl_log(fixture("nccl_logs", "libibverbs_missing_socket_run_2_7.txt"))
    assert log["transport"] == "Socket" and log["init_complete"] is True
    assert log["error"] is None
    assert "ibverbs_unavailable" in [f["signal"] for f in log["fallbacks"]]


def test_log_noise_warning_is_the_error_when_nothing_shows_nccl_went_on():
    log = parse_nccl_log(fixture("nccl_logs", "libibverbs_missing_no_network.txt"))
    assert log["transport"] is None and log["init_complete"] is False
    assert log["error"] == "Failed to open libibverbs.so[.1]"
