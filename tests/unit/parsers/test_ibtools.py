"""Unit tests for plugins/module_utils/parsers/ibtools.py on our own fixtures."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ibtools import parse_ibdev2netdev, parse_ibstat, parse_ibv_devinfo, parse_show_gids


# ---------------------------------------------------------------- ibstat


def test_ibstat_mixed_ib_and_ethernet_with_tabs():
    cas = parse_ibstat(fixture("ibstat", "h100_mixed_tabs.txt"))["cas"]
    assert [ca["name"] for ca in cas] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    first = cas[0]
    assert first["ca_type"] == "MT4129"
    assert first["num_ports"] == 1
    assert first["firmware_version"] == "28.42.1000"
    assert first["node_guid"] == "0xb8cef60300a1b2c0"
    port = first["ports"][0]
    assert port["port"] == 1
    assert port["state"] == "Active"
    assert port["physical_state"] == "LinkUp"
    assert port["rate_gbps"] == 400
    assert port["rate_text"] == "400"
    assert port["base_lid"] == 17
    assert port["sm_lid"] == 1
    assert port["link_layer"] == "InfiniBand"
    down = cas[2]["ports"][0]
    assert (down["state"], down["physical_state"], down["rate_gbps"], down["link_layer"]) == ("Down", "Disabled", 40, "Ethernet")


def test_ibstat_space_indented_dual_port_fdr10_and_sdr_rates():
    cas = parse_ibstat(fixture("ibstat", "cx3_spaces_fdr10.txt"))["cas"]
    assert len(cas) == 2
    assert [p["rate_gbps"] for p in cas[0]["ports"]] == [56, 10]
    assert cas[0]["ports"][1]["rate_note"] == "FDR10"
    assert cas[0]["ports"][1]["base_lid"] == 65535
    assert cas[1]["ports"][0]["rate_gbps"] == 2.5
    assert cas[1]["ports"][0]["state"] == "Initializing"
    # an older ibstat without the 'CA type' line
    assert "ca_type" not in cas[1]


def test_ibstat_single_port_form():
    cas = parse_ibstat(fixture("ibstat", "single_port.txt"))["cas"]
    assert cas[0]["name"] == "mlx5_2"
    assert cas[0]["ports"][0]["state"] == "Armed"
    assert cas[0]["ports"][0]["rate_gbps"] == 100


def test_ibstat_short_form_has_no_ports():
    cas = parse_ibstat(fixture("ibstat", "short_s.txt"))["cas"]
    assert cas[0]["ports"] == []
    assert cas[0]["system_image_guid"] == "0xb8cef60300a1b2c0"


def test_ibstat_ibpanic_after_partial_output_raises():
    with pytest.raises(ParseError, match="stat of IB device 'mlx5_5' failed"):
        parse_ibstat(fixture("ibstat", "error_ibpanic_partial.txt"))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty output"),
        ("bash: line 1: ibstat: command not found\n", "command not found"),
    ],
)
def test_ibstat_error_outputs_raise(text, message):
    with pytest.raises(ParseError, match=message):
        parse_ibstat(text)


def test_ibstat_error_fixture_names_the_tool():
    with pytest.raises(ParseError) as err:
        parse_ibstat(fixture("ibstat", "error_command_not_found.txt"))
    assert str(err.value).startswith("ibstat: ")
    assert err.value.tool == "ibstat"


# ---------------------------------------------------------------- ibv_devinfo


def test_ibv_devinfo_plain_space_expanded():
    devices = parse_ibv_devinfo(fixture("ibv_devinfo", "cx7_cx6_spaces.txt"))["devices"]
    assert [d["hca_id"] for d in devices] == ["mlx5_0", "mlx5_1", "mlx5_2"]
    cx7 = devices[0]
    assert cx7["vendor_part_id"] == 4129
    assert cx7["fw_ver"] == "28.42.1000"
    assert cx7["transport"] == "InfiniBand"
    assert cx7["phys_port_cnt"] == 1
    port = cx7["ports"][0]
    assert (port["port"], port["state"], port["state_code"]) == (1, "PORT_ACTIVE", 4)
    assert (port["max_mtu"], port["active_mtu"]) == (4096, 4096)
    assert port["link_layer"] == "Ethernet"
    assert devices[1]["ports"][0]["active_mtu"] == 1024
    assert devices[1]["ports"][0]["state"] == "PORT_DOWN"
    assert devices[2]["ports"][0]["port_lid"] == 57
    assert devices[2]["ports"][0]["link_layer"] == "InfiniBand"


def test_ibv_devinfo_verbose_flags_notes_gids_and_rate():
    device = parse_ibv_devinfo(fixture("ibv_devinfo", "cx6dx_verbose_tabs.txt"))["devices"][0]
    assert device["vendor_part_id"] == 4125
    assert device["max_qp"] == 131072
    assert device["atomic_cap"] == "ATOMIC_HCA"
    assert "MANAGED_FLOW_STEERING" in device["flags"]["device_cap_flags"]
    assert device["flags"]["device_cap_flags"][-1] == "Unknown flags: 0x3000"
    assert device["flags"]["rc_odp_caps"] == ["SUPPORT_SEND", "SUPPORT_RECV", "SUPPORT_WRITE", "SUPPORT_READ"]
    assert "Multi-Packet RQ supported" in device["notes"]
    port = device["ports"][0]
    assert port["active_width_lanes"] == 4
    assert port["active_speed_gbps"] == 50.0
    assert port["rate_gbps"] == 200.0
    assert port["phys_state"] == "LINK_UP"
    assert port["gid_tbl_len"] == 255
    assert port["gids"][3] == {"index": 3, "gid": "::ffff:10.60.0.21", "type": "RoCE v2"}
    assert len(port["gids"]) == 4


def test_ibv_devinfo_list():
    devices = parse_ibv_devinfo(fixture("ibv_devinfo", "list.txt"))["devices"]
    assert [d["hca_id"] for d in devices] == ["mlx5_0", "mlx5_1", "mlx5_bond_0"]


@pytest.mark.parametrize(
    "name, message",
    [
        ("error_no_devices.txt", "No IB devices found"),
        ("error_no_driver.txt", "Failed to get IB devices list: Function not implemented"),
    ],
)
def test_ibv_devinfo_errors_raise(name, message):
    with pytest.raises(ParseError, match=message):
        parse_ibv_devinfo(fixture("ibv_devinfo", name))


def test_ibv_devinfo_empty_raises():
    with pytest.raises(ParseError, match="empty output"):
        parse_ibv_devinfo("\n")


# ---------------------------------------------------------------- ibdev2netdev


def test_ibdev2netdev_plain():
    ports = parse_ibdev2netdev(fixture("ibdev2netdev", "roce.txt"))["ports"]
    assert ports == [
        {"device": "mlx5_0", "port": 1, "netdev": "ens1f0np0", "netdev_state": "Up"},
        {"device": "mlx5_1", "port": 1, "netdev": "ens1f1np1", "netdev_state": "Down"},
        {"device": "mlx5_bond_0", "port": 1, "netdev": "bond0", "netdev_state": "Up"},
    ]


def test_ibdev2netdev_verbose():
    ports = parse_ibdev2netdev(fixture("ibdev2netdev", "verbose.txt"))["ports"]
    assert len(ports) == 3
    assert ports[0] == {
        "device": "mlx5_0",
        "port": 1,
        "netdev": "ens41np0",
        "netdev_state": "Up",
        "pci": "0000:41:00.0",
        "ca_type": "MT4129",
        "part_id": "MT2231X0A1B2",
        "description": "NVIDIA ConnectX-7 HHHL adapter card",
        "firmware_version": "28.42.1000",
        "port_state": "ACTIVE",
    }
    assert ports[1]["port_state"] == "DOWN"
    vf = ports[2]
    assert (vf["part_id"], vf["description"], vf["netdev_state"], vf["port_state"]) == (None, None, "NA", "INIT")


def test_ibdev2netdev_old_style_has_no_state():
    ports = parse_ibdev2netdev(fixture("ibdev2netdev", "ib_oldstyle.txt"))["ports"]
    assert [(p["port"], p["netdev"], p["netdev_state"]) for p in ports] == [(1, "ib0", None), (2, "ib1", None)]


def test_ibdev2netdev_empty_raises():
    with pytest.raises(ParseError, match="empty output"):
        parse_ibdev2netdev(fixture("ibdev2netdev", "error_empty.txt"))


# ---------------------------------------------------------------- show_gids


def test_show_gids_roce_and_ib_rows():
    result = parse_show_gids(fixture("show_gids", "roce_and_ib.txt"))
    assert result["count"] == 5
    gids = result["gids"]
    assert gids[3] == {
        "device": "mlx5_0",
        "port": 1,
        "index": 3,
        "gid": "0000:0000:0000:0000:0000:ffff:ac10:0b0b",
        "ipv4": "172.16.11.11",
        "version": "v2",
        "netdev": "ens41np0",
    }
    assert gids[0]["ipv4"] is None
    assert gids[4]["device"] == "mlx5_2"
    assert gids[4]["netdev"] is None


def test_show_gids_without_driver_raises_with_ls_message():
    with pytest.raises(ParseError, match="cannot access '/sys/class/infiniband/'"):
        parse_show_gids(fixture("show_gids", "error_no_driver.txt"))


# ------------------------------------------- ibv_devinfo -v capability blocks


def test_ibv_devinfo_tag_matching_flags_line_does_not_clobber_device_keys():
    # rdma-core prints the tag-matching caps at device indentation with a bare
    # "flags:" and a second "max_sge:" (openucx/ucx#9908, ConnectX-6 HDR).
    device = parse_ibv_devinfo(fixture("ibv_devinfo", "real_ucx9908_cx6_tm_caps.txt"))["devices"][0]
    assert device["max_sge"] == 30
    assert device["caps"]["tag_matching"] == {"max_rndv_hdr_size": 64, "max_num_tags": 127, "max_ops": 32768, "max_sge": 1}
    assert device["flags"]["tag_matching.flags"] == ["IBV_TM_CAP_RC"]
    assert device["flags"]["device_cap_flags"][-1] == "MANAGED_FLOW_STEERING"
    assert device["caps"]["cq_moderation_caps"] == {"max_cq_count": 65535, "max_cq_period": "4095 us"}
    assert device["caps"]["packet_pacing_caps"]["qp_rate_limit_max"] == "0kbps"
    assert device["caps"]["rss_caps"]["max_rwq_indirection_tables"] == 0
    assert "warnings" not in device
    port = device["ports"][0]
    assert (port["state"], port["active_mtu"], port["rate_gbps"]) == ("PORT_ACTIVE", 4096, 200.0)
    assert port["gids"][0]["gid"] == "fe80:0000:0000:0000:88e9:a4ff:ff25:a462"


def test_ibv_devinfo_nested_heading_and_colliding_field_names():
    text = (
        "hca_id:\tmlx5_0\n"
        "\tmax_sge:\t\t\t30\n"
        "\tpacket_pacing_caps:\n"
        "\t\tqp_rate_limit_min:\t1kbps\n"
        "\t\tsupported_qp:\n"
        "\t\t\t\t\tSUPPORT_RAW_PACKET\n"
        "\tflags:\t\t\t0x3\n"
        "\tnotes:\n"
        "\tmax_sge:\t\t\t1\n"
        "\ttag matching not supported\n"
        "\t\tport:\t1\n"
        "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    )
    device = parse_ibv_devinfo(text)["devices"][0]
    assert device["max_sge"] == 30
    assert device["flags"]["packet_pacing_caps.supported_qp"] == ["SUPPORT_RAW_PACKET"]
    assert device["caps"]["packet_pacing_caps"] == {"qp_rate_limit_min": "1kbps"}
    assert device["notes"] == ["tag matching not supported"]
    assert len(device["warnings"]) == 3
    assert device["warnings"][0].startswith("line 7: field 'flags'")
    assert device["ports"][0]["state"] == "PORT_ACTIVE"


# ------------------------------------------------ partial reads say so


def test_show_gids_row_not_read_and_count_mismatch_are_warnings():
    text = (
        fixture("show_gids", "real_k8s_macvlan_tabs.txt").replace("mlx5_1\t1\t5\tfe80:0000:0000:0000:9459:9bff:fe54:7704", "mlx5_1\t1\t5\tfe80:zzzz")
        + "n_gids_found=8\n"
    )
    result = parse_show_gids(text)
    assert len(result["gids"]) == 7 and result["count"] == 8
    assert result["warnings"] == ["line 9: a GID row not read: 'mlx5_1\\t1\\t5\\tfe80:zzzz\\t\\t\\tv2\\tnet2'", "n_gids_found=8 but 7 GID rows read"]


def test_ibdev2netdev_line_not_read_is_a_warning():
    result = parse_ibdev2netdev("mlx5_0 port 1 ==> ens1f0np0 (Up)\nmlx5_1 port x ==> ens1f1np1 (Up)\n")
    assert [p["device"] for p in result["ports"]] == ["mlx5_0"]
    assert result["warnings"] == ["line 2: a '==>' line not read: 'mlx5_1 port x ==> ens1f1np1 (Up)'"]


def test_ibstat_line_not_read_inside_a_ca_is_a_warning():
    text = fixture("ibstat", "real_cx4_initializing.txt") + "\tgarbage without a colon\n"
    result = parse_ibstat(text)
    assert result["cas"] and result["warnings"][0].endswith("'garbage without a colon'")
    assert result["warnings"][0].startswith("line ")
