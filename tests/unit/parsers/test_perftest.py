"""Unit tests for plugins/module_utils/parsers/perftest.py on our own fixtures and a published ib_send_bw run."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.perftest import MIB_PER_SEC_IN_GBPS, parse_ib_send_bw, parse_ib_write_bw


def test_client_native_ib_sweep_report_gbits_25x():
    result = parse_ib_write_bw(fixture("perftest", "client_ib_sweep_gbits_25x.txt"))
    assert result["role"] == "client"
    assert result["verb"] == "write"
    assert result["device"] == "mlx5_4"
    assert result["num_qps"] == 1
    assert result["link_type"] == "IB"
    assert result["mtu"] == 4096
    assert result["rdma_cm"] is False
    assert result["data_exchange"] == "Ethernet"
    assert "gid_index" not in result  # perftest prints it only when set
    assert result["header"]["Using Enhanced Reorder"] == "OFF"
    assert result["units"] == "Gb/sec"
    assert [row["bytes"] for row in result["results"]] == [2, 1024, 4096, 65536, 1048576, 8388608]
    assert result["results"][0]["bw_average_gbps"] == 0.060911
    assert result["bytes"] == 8388608
    assert result["bw_average_gbps"] == 392.01
    assert result["bw_peak_gbps"] == 392.02
    assert result["msg_rate_mpps"] == 0.005842
    assert result["max_bw_average_gbps"] == 392.01
    assert result["local"] == [{"lid": "0x2b", "qpn": "0x00d7", "psn": "0x5e1a20", "gid": None, "ipv4": None, "rkey": "0x1fefee", "vaddr": "0x007f93c5a00000"}]
    assert result["duration_mode"] is False
    assert result["cuda"] is None


def test_server_roce_mib_units_converted_to_gbps():
    result = parse_ib_write_bw(fixture("perftest", "server_roce_mib_24x.txt"))
    assert result["role"] == "server"
    assert result["units"] == "MiB/sec"
    assert result["num_qps"] == 2
    assert result["gid_index"] == 3
    assert result["tos"] == 106
    assert result["rdma_cm"] is True
    assert "tx_depth" not in result  # servers do not print it
    row = result["results"][0]
    assert row["bw_average"] == 11685.04
    assert row["bw_average_gbps"] == pytest.approx(11685.04 * 1048576 * 8 / 1e9, abs=1e-5)
    assert result["bw_average_gbps"] == pytest.approx(98.02, abs=0.01)
    assert [a["ipv4"] for a in result["local"]] == ["172.16.12.12", "172.16.12.12"]
    assert [a["ipv4"] for a in result["remote"]] == ["172.16.12.11", "172.16.12.11"]


def test_old_perftest_space_header_mb_per_sec():
    result = parse_ib_write_bw(fixture("perftest", "client_old_mbsec_4qp.txt"))
    assert result["units"] == "MB/sec"
    assert result["num_qps"] == 4
    assert result["mtu"] == 1024
    assert result["gid_index"] == 5
    assert result["device"] == "mlx5_3"
    assert result["bw_average_gbps"] == pytest.approx(10998.74 * MIB_PER_SEC_IN_GBPS, abs=1e-5)
    assert len(result["local"]) == len(result["remote"]) == 4
    assert result["local"][0]["ipv4"] is None  # link-local GID


def test_duration_mode_with_cuda():
    result = parse_ib_write_bw(fixture("perftest", "client_duration_cuda.txt"))
    assert result["duration_mode"] is True
    assert result["bw_peak_gbps"] is None
    assert result["results"][0]["bw_peak"] == 0.0
    assert result["bw_average_gbps"] == 370.12
    assert result["iterations"] == 2151880
    assert result["num_qps"] == 8
    assert result["cuda"] == {"device": 1, "name": "NVIDIA H200", "dmabuf": True, "pci": {"0": "18:00", "1": "2A:00"}}
    assert "WARNING: BW peak won't be measured in this run." in result["warnings"]
    command = result["command"]
    assert (command["ib_dev"], command["ib_port"], command["tcp_port"]) == ("mlx5_7", 1, 18520)
    assert (command["qps"], command["duration"], command["use_cuda"]) == (8, 30, 1)
    assert command["report_gbits"] is True and command["use_cuda_dmabuf"] is True
    assert command["server"] == "172.16.17.22"


def test_server_command_line_has_no_server_address():
    result = parse_ib_write_bw(fixture("perftest", "server_roce_mib_24x.txt"))
    assert result["command"]["server"] is None
    assert result["command"]["size"] == 1048576


def test_command_line_is_optional():
    assert parse_ib_write_bw(fixture("perftest", "client_old_mbsec_4qp.txt"))["command"] is None


@pytest.mark.parametrize(
    "name, message",
    [
        ("error_couldnt_connect.txt", "Couldn't connect to 172.16.12.12:18515"),
        ("error_no_devices.txt", "Did not detect devices"),
        ("error_device_not_found.txt", "IB device mlx5_9 not found"),
        ("error_completion.txt", "Completion with error at client"),
        ("error_server_no_client.txt", "no client connected"),
    ],
)
def test_failures_raise_with_the_tool_message(name, message):
    with pytest.raises(ParseError, match=message):
        parse_ib_write_bw(fixture("perftest", name))


def test_empty_output_raises():
    with pytest.raises(ParseError, match="empty output"):
        parse_ib_write_bw("")


def test_read_bw_failure_names_ib_read_bw():
    text = "$ ib_read_bw -d mlx5_0 -x 3 172.16.12.12\nCouldn't connect to 172.16.12.12:18515\n"
    with pytest.raises(ParseError) as err:
        parse_ib_write_bw(text)
    assert err.value.tool == "ib_read_bw"
    assert "Couldn't connect to 172.16.12.12:18515" in str(err.value)


# ------------------------------------------ -D server side: peak None without a banner


@pytest.mark.parametrize("name", ["real_server_duration_cuda_schmaustech.txt", "server_duration_no_banner.txt"])
def test_duration_server_side_peak_is_none_with_or_without_banner(name):
    result = parse_ib_write_bw(fixture("perftest", name))
    assert result["role"] == "server"
    assert result["duration_mode"] is True
    assert result["bw_peak_gbps"] is None and result["results"][0]["bw_peak"] == 0.0
    assert result["bw_average_gbps"] == 181.46
    assert result["iterations"] == 10384867
    assert result["num_qps"] == 16 and len(result["remote"]) == 16
    assert result["cuda"]["name"] == "NVIDIA A40"


def test_measured_peak_is_kept_when_not_duration():
    text = fixture("perftest", "server_duration_no_banner.txt").replace(" 65536      10384867         0.00 ", " 65536      10384867         190.10 ")
    result = parse_ib_write_bw(text)
    assert result["duration_mode"] is False
    assert result["bw_peak_gbps"] == 190.10


# ------------------------------------------ --out_json (format of perftest_parameters.c)


def test_out_json_client_with_units_given():
    result = parse_ib_write_bw(fixture("perftest", "out_json_client_gbits.json"), units="Gb/sec")
    assert result["format"] == "json" and result["role"] == "client" and result["verb"] == "write"
    assert (result["device"], result["num_qps"], result["mtu"], result["gid_index"]) == ("mlx5_1", 4, 4096, 3)
    assert (result["bytes"], result["iterations"]) == (65536, 20000)
    assert result["bw_average_gbps"] == 98.37 and result["bw_peak_gbps"] == 98.41
    assert result["warnings"] == []


def test_out_json_without_units_says_so_instead_of_guessing():
    result = parse_ib_write_bw(fixture("perftest", "out_json_client_gbits.json"))
    assert result["bw_average_gbps"] is None and result["results"][0]["bw_average"] == 98.37
    assert result["warnings"][0].startswith("--out_json does not state its unit")


def test_out_json_server_duration_mib():
    result = parse_ib_write_bw(fixture("perftest", "out_json_server_duration.json"), units="MB/sec")
    assert result["role"] == "server" and result["duration_mode"] is True
    assert result["bw_peak_gbps"] is None
    assert result["bw_average_gbps"] == round(21631.05 * MIB_PER_SEC_IN_GBPS, 6)
    assert result["tos"] == 41


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"test_info": {}, "results": {"MsgSize": 1}}', "without MsgSize / n_iterations"),
        ('{"results": {}}', "without test_info and results"),
        ('{"test_info": {},\n"results": {"MsgSize": 8,\nsl: 0,\n"n_iterations": 5}}', "not valid JSON"),
    ],
)
def test_out_json_bad_input(text, message):
    with pytest.raises(ParseError, match=message):
        parse_ib_write_bw(text)


def test_ib_send_bw_reads_the_published_infiniband_run():
    res = parse_ib_send_bw(fixture("perftest", "send_bw_nebius_ib_h100.txt"))
    assert (res["verb"], res["device"], res["link_type"], res["num_qps"], res["mtu"]) == ("send", "mlx5_0", "IB", 1, 4096)
    assert (res["bytes"], res["bw_average_gbps"], res["bw_peak_gbps"], res["warnings"]) == (65536, 353.53, 357.12, [])
