"""Unit tests for plugins/module_utils/parsers/_perftest.py, what every perftest run prints and
perftest.py (bandwidth) and perftest_lat.py (latency) read the same way: the echoed command line, the
header pairs, the address and GID lines, the error lines and the refusal of a run without results.
The whole runs are tested in test_perftest.py and test_perftest_lat.py."""

import re

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import _perftest


def test_the_echoed_command_gives_its_options_flags_and_server_and_stops_at_a_redirection():
    line = "$ ib_write_bw -d mlx5_0 -x 3 --size=65536 -q 4 --report_gbits -F 10.0.0.2 > /tmp/bw.log 2>&1"
    assert _perftest._parse_command(line) == {
        "tool": "ib_write_bw",
        "server": "10.0.0.2",
        "argv": ["-d", "mlx5_0", "-x", "3", "--size=65536", "-q", "4", "--report_gbits", "-F", "10.0.0.2"],
        "ib_dev": "mlx5_0",
        "gid_index": 3,
        "size": 65536,
        "qps": 4,
        "report_gbits": True,
    }
    assert _perftest._parse_command("ib_send_lat -a") == {"tool": "ib_send_lat", "argv": ["-a"], "server": None, "all_sizes": True}
    assert _perftest._parse_command("no perftest here") is None


def test_a_short_option_with_a_value_does_not_take_the_value_for_the_server():
    # -t (tx depth) takes a value perftest's getopt names; it is skipped, not read as the server
    command = _perftest._parse_command("ib_read_bw -t 128 -i 2 node2")
    assert (command["server"], command["ib_port"]) == ("node2", 2) and "tx_depth" not in command


def test_a_documented_placeholder_is_an_argument_and_a_quoted_remote_command_ends_cleanly():
    command = _perftest._parse_command("ib_write_bw -d <mlx5_X> <server_ip>")
    assert command["placeholders"] == ["<mlx5_X>", "<server_ip>"]
    assert (command["ib_dev"], command["server"]) == ("<mlx5_X>", "<server_ip>")
    # the end of a quoted remote command (ssh host "ib_write_bw ... node1"): split on blanks, the quote dropped
    command = _perftest._parse_command('ssh node2 "ib_write_bw -d mlx5_1 node1"')
    assert (command["argv"], command["server"]) == (["-d", "mlx5_1", "node1"], "node1")


@pytest.mark.parametrize(
    "gid,ipv4",
    [
        ("0000:0000:0000:0000:0000:ffff:0a00:0001", None),  # hex, not perftest's byte form
        ("00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:02", "10.0.0.2"),
        ("0:0:0:0:0:0:0:0:0:0:255:255:192:168:1:7", "192.168.1.7"),
        ("254:128:00:00:00:00:00:00:14:66:161:255:254:01:00:00", None),  # a link-local RoCEv1/IB GID
        ("00:00:00:00:00:00:00:00:00:00:255:255:10:00:00", None),  # 15 bytes
    ],
)
def test_an_ipv4_mapped_gid_gives_its_address(gid, ipv4):
    assert _perftest._ipv4_from_gid(gid) == ipv4


@pytest.mark.parametrize(
    "value,kind,out",
    [
        ("4096[B]", "bytes", 4096),
        ("[B]", "bytes", "[B]"),
        ("ON", "onoff", True),
        ("off", "onoff", False),
        ("maybe", "onoff", "maybe"),
        ("12", int, 12),
        ("12x", int, "12x"),
        ("RC", str, "RC"),
    ],
)
def test_header_values_convert_by_kind_and_keep_what_does_not(value, kind, out):
    assert _perftest._convert(value, kind) == out and type(_perftest._convert(value, kind)) is type(out)


def test_a_header_line_gives_both_pairs_and_the_typed_fields():
    result = _perftest._new_result()
    _perftest._read_header_line("Number of qps   : 2		Transport type : IB", result)
    _perftest._read_header_line("Mtu             : 4096[B]", result)
    assert result["header"] == {"Number of qps": "2", "Transport type": "IB", "Mtu": "4096[B]"}
    assert (result["num_qps"], result["transport_type"], result["mtu"]) == (2, "IB", 4096)


def test_error_lines_are_kept_once_in_order_and_a_warning_is_no_error():
    lines = [
        "Couldn't connect to 10.0.0.2:18515",
        "WARNING: failed to read CPU frequency",
        "Unable to init the socket connection",
        "Couldn't connect to 10.0.0.2:18515",
        "#bytes 65536",
    ]
    assert _perftest._collect_errors(lines) == ["Couldn't connect to 10.0.0.2:18515", "Unable to init the socket connection"]


class _Bw(_perftest._Reader):
    _title_re = re.compile(r"^(?P<verb>RDMA_Write|Send) (?P<title>BW) Test$")
    _bw = True

    def _table(self, line):
        if line.startswith("65536"):
            self.result["results"].append({"bytes": 65536})
            return True
        return False


def test_the_reader_reads_addresses_gids_banners_and_names_a_line_it_does_not_know():
    text = (
        "RDMA_Write BW Test\n Device         : mlx5_0\n Link type      : Ethernet\n"
        "---------------------------------------------------------------------------------------\n"
        " local address: LID 0000 QPN 0x0108 PSN 0x6b1b0b RKey 0x1fff00 VAddr 0x007f5e2e3e5000\n"
        " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01\n"
        " remote address: LID 0000 QPN 0x0109 PSN 0x8ad1f1 OUT 0x10\n"
        " BW peak won't be measured in this run.\n"
        " something else\n"
        " 65536      5000           11.50              11.48\t\t   0.021898\n"
    )
    lines, result = _perftest._read(_Bw(), text)
    assert lines[0] == "RDMA_Write BW Test" and (result["test"], result["verb"]) == ("BW", "write")
    assert (result["device"], result["link_type"], result["duration_mode"]) == ("mlx5_0", "Ethernet", True)
    assert result["local"] == [
        {
            "lid": "0000",
            "qpn": "0x0108",
            "psn": "0x6b1b0b",
            "rkey": "0x1fff00",
            "vaddr": "0x007f5e2e3e5000",
            "gid": "00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01",
            "ipv4": "10.0.0.1",
        }
    ]
    assert result["remote"] == [{"lid": "0000", "qpn": "0x0109", "psn": "0x8ad1f1", "gid": None, "ipv4": None, "other": "OUT 0x10"}]
    assert result["warnings"] == ["BW peak won't be measured in this run.", "line 9: not read: 'something else'"]


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "ib_write_bw: empty output"),
        ("ib_send_bw -d mlx5_0\nCouldn't connect\nCouldn't connect\n", "ib_send_bw: Couldn't connect"),
        ("Send BW Test\n Waiting for client to connect... *\n", "ib_send_bw: server output without results"),
        ("RDMA_Write BW Test\n", "ib_write_bw: no result table in output"),
    ],
)
def test_a_run_without_results_is_refused_naming_the_binary_and_why(text, message):
    with pytest.raises(ParseError) as err:
        _perftest._read(_Bw(), text)
    assert str(err.value).startswith(message)


def test_a_latency_run_without_results_names_the_lat_binary_of_its_title():
    result = dict(_perftest._new_result(), verb="read")
    with pytest.raises(ParseError) as err:
        _perftest._raise_no_results("x", ["x"], result, "lat", "no latency table")
    assert str(err.value).startswith("ib_read_lat: no latency table")
