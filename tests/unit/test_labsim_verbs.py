"""ibstat, ibstatus, ibv_devinfo, ibdev2netdev, show_gids against the model."""

from linerate_lab.tools import ibdev2netdev, ibstat, ibstatus, ibv_devinfo, show_gids

PORT = (
    "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n"
    "\t\tBase lid: 0\n\t\tLMC: 0\n\t\tSM lid: 0\n\t\tCapability mask: 0x00010000\n"
    "\t\tPort GUID: 0xa288c2fffe100100\n\t\tLink layer: Ethernet\n"
)


def test_ibstat_all_cas(lab):
    rc, out, _ = lab.run(ibstat, [])
    assert rc == 0
    assert out.startswith(
        "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.2048\n"
        "\tHardware version: 0\n\tNode GUID: 0xa088c20300100100\n"
        "\tSystem image GUID: 0xa088c20300100100\n" + PORT + "CA 'mlx5_1'\n"
    )


def test_ibstat_device_port_list_short(lab):
    rc, out, _ = lab.run(ibstat, ["mlx5_0", "1"])
    assert out == "CA: 'mlx5_0'\n" + PORT.replace("\t", "")
    assert lab.run(ibstat, ["-l"])[1] == "mlx5_0\nmlx5_1\n"
    assert lab.run(ibstat, ["-p"])[1] == "0xa288c2fffe100100\n0xa288c2fffe100110\n"
    assert "Port 1" not in lab.run(ibstat, ["-s"])[1]


def test_ibstat_errors(lab):
    rc, out, err = lab.run(ibstat, ["mlx5_9"])
    assert rc == 255 and out == ""
    assert err.startswith("ibpanic: [") and "main: 'mlx5_9' IB device can't be found" in err
    lab.update(lambda n: n["modules"].remove("mlx5_ib"))
    rc, _, err = lab.run(ibstat, [])
    assert rc == 255 and "can't list IB device names" in err


def test_port_follows_netdev_and_cable(lab):
    lab.netdevs["enp65s0f0np0"]["up"] = False
    out = lab.run(ibstat, ["mlx5_0", "1"])[1]
    assert "State: Down\nPhysical state: Disabled\nRate: 40\n" in out
    lab.netdevs["enp65s0f0np0"]["up"] = True
    lab.update(lambda n: n["nics"][0].update(cable="down"))
    out = lab.run(ibstatus, ["mlx5_0:1"])[1]
    assert "\tstate:\t\t 1: DOWN\n\tphys state:\t 2: Polling\n\trate:\t\t 40 Gb/sec (4X QDR)\n" in out


def test_ibstatus(lab):
    rc, out, _ = lab.run(ibstatus, ["mlx5_0"])
    assert rc == 0
    assert out == (
        "Infiniband device 'mlx5_0' port 1 status:\n"
        "\tdefault gid:\t fe80:0000:0000:0000:a288:c2ff:fe10:0100\n"
        "\tbase lid:\t 0x0\n\tsm lid:\t\t 0x0\n\tstate:\t\t 4: ACTIVE\n"
        "\tphys state:\t 5: LinkUp\n\trate:\t\t 400 Gb/sec (4X NDR)\n"
        "\tlink_layer:\t Ethernet\n\n"
    )
    rc, out, _ = lab.run(ibstatus, ["mlx5_7"])
    assert rc == 255 and out.startswith("Fatal error:  device 'mlx5_7': sys files not found")


def test_ibv_devinfo(lab):
    rc, out, _ = lab.run(ibv_devinfo, ["-d", "mlx5_0"])
    assert rc == 0
    assert out == (
        "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.39.2048\n"
        "\tnode_guid:\t\t\ta088:c203:0010:0100\n\tsys_image_guid:\t\t\ta088:c203:0010:0100\n"
        "\tvendor_id:\t\t\t0x02c9\n\tvendor_part_id:\t\t\t4129\n\thw_ver:\t\t\t\t0x0\n"
        "\tboard_id:\t\t\tMT_0000000838\n\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n"
        "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n"
        "\t\t\tactive_mtu:\t\t4096 (5)\n\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n"
        "\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tEthernet\n\n"
    )
    assert lab.run(ibv_devinfo, ["-l"])[1] == "2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\n"


def test_ibv_devinfo_mtu_gids_and_errors(lab):
    lab.netdevs["enp65s0f0np0"]["mtu"] = 1500
    out = lab.run(ibv_devinfo, ["-d", "mlx5_0", "-v"])[1]
    assert "\t\t\tactive_mtu:\t\t1024 (3)\n" in out
    assert "\t\t\tGID[  3]:\t\t::ffff:192.168.100.11, RoCE v2\n" in out
    assert "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:c0a8:640b, RoCE v1\n" in out
    rc, out, err = lab.run(ibv_devinfo, ["-d", "mlx5_5"])
    assert (rc, out, err) == (255, "", "IB device 'mlx5_5' wasn't found\n")
    lab.update(lambda n: n["modules"].remove("ib_uverbs"))
    rc, _, err = lab.run(ibv_devinfo, [])
    assert (rc, err) == (255, "No IB devices found\n")


def test_ibdev2netdev(lab):
    assert lab.run(ibdev2netdev, [])[1] == ("mlx5_0 port 1 ==> enp65s0f0np0 (Up)\nmlx5_1 port 1 ==> enp193s0f0np0 (Up)\n")
    lab.update(lambda n: n["nics"][1].update(cable="down"))
    out = lab.run(ibdev2netdev, ["-v"])[1].splitlines()
    assert out[0].startswith("0000:41:00.0 mlx5_0 (MT4129 - MT2349X00016) NVIDIA ConnectX-7")
    assert out[0].endswith(" fw 28.39.2048 port 1 (ACTIVE) ==> enp65s0f0np0 (Up)")
    assert out[1].endswith(" port 1 (DOWN  ) ==> enp193s0f0np0 (Down)")
    lab.update(lambda n: n["modules"].remove("mlx5_ib"))
    assert lab.run(ibdev2netdev, [])[:2] == (255, "")


def test_show_gids_follows_rail_addresses(lab):
    rc, out, _ = lab.run(show_gids, [])
    lines = out.splitlines()
    assert lines[0] == "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV"
    assert lines[1] == "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"
    assert "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:640b\t192.168.100.11  \tv2\tenp65s0f0np0" in lines
    assert "mlx5_1\t1\t1\tfe80:0000:0000:0000:a288:c2ff:fe10:0110\t\t\tv2\tenp193s0f0np0" in lines
    # mlx5_1 has no rail address: no RoCEv2 IPv4 GID
    assert not any(line.startswith("mlx5_1\t1\t3\t") for line in lines)
    assert lines[-1] == "n_gids_found=6"
    rc, out, err = lab.run(show_gids, ["mlx5_9"])
    assert out.endswith("n_gids_found=0\n") and "cannot access" in err
