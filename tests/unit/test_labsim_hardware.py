"""lab/sim/linerate_lab/hardware.py: the node and NIC dicts of the fabric model."""

from labsim import hardware, kmods  # noqa: F401  (labsim puts lab/sim on sys.path)

NIC_FIELDS = {
    "device",
    "netdev",
    "port",
    "pci",
    "numa_node",
    "ca_type",
    "board_id",
    "psid",
    "part_number",
    "fw_version",
    "node_guid",
    "port_guid",
    "sys_image_guid",
    "mac",
    "link_layer",
    "speed_gbps",
    "width",
    "cable",
    "switch",
    "switch_port",
    "firmware",
    "qos",
    "ecn",
    "cma",
}


def test_new_node_has_every_architecture_field():
    node = hardware.new_node("node1", 1, "roce", 2, 400, [("leaf1", "swp1"), ("leaf2", "swp1")])
    assert {"mgmt_ip", "gpus", "gpu_driver", "kernel", "modules", "nics"} <= set(node)
    assert node["gpus"] == 8 and node["gpu_driver"] is None
    assert node["modules"] == kmods.BOOT_AUTOLOAD
    for nic in node["nics"]:
        assert NIC_FIELDS <= set(nic)
        assert set(nic["firmware"]) == {"default", "current", "next_boot"}
    a, b = node["nics"]
    assert (a["device"], a["pci"], a["numa_node"], a["netdev"]) == ("mlx5_0", "0000:41:00.0", 0, "enp65s0f0np0")
    assert (b["device"], b["pci"], b["numa_node"], b["netdev"]) == ("mlx5_1", "0000:c1:00.0", 1, "enp193s0f0np0")
    assert a["ca_type"] == "MT4129" and a["psid"] == "MT_0000000838"
    assert a["fw_version"].startswith("28.39.")
    assert (a["switch"], a["switch_port"], a["cable"]) == ("leaf1", "swp1", "up")


def test_addresses_are_unique_per_node_and_rail():
    nics = [nic for i in range(1, 9) for nic in hardware.new_node(f"node{i}", i, nics_per_node=8)["nics"]]
    for key in ("mac", "node_guid", "port_guid"):
        assert len({n[key] for n in nics}) == len(nics), key
    nic = nics[0]
    assert nic["mac"].startswith("a0:88:c2:")
    assert nic["node_guid"].startswith("0xa088c20300")
    # RoCE port GUID: the modified EUI-64 of the MAC
    assert nic["port_guid"] == "0x" + hardware.eui64_from_mac(nic["mac"])


def test_uncabled_rail_is_down_and_infiniband_node():
    node = hardware.new_node("n", 3, "infiniband", 2, 400, [("leaf1", 1)])
    assert node["nics"][1]["cable"] == "down"
    nic = node["nics"][0]
    assert nic["link_layer"] == "InfiniBand" and nic["netdev"] == "ibp65s0"
    assert nic["firmware"]["current"]["LINK_TYPE_P1"] == "IB(1)"
    assert nic["port_guid"] == nic["node_guid"]


def test_firmware_params_use_mlxconfig_spellings():
    fw = hardware.new_nic(1, 0)["firmware"]["current"]
    assert fw["LINK_TYPE_P1"] == "ETH(2)"
    assert fw["SRIOV_EN"] == "False(0)" and fw["KEEP_ETH_LINK_UP_P1"] == "True(1)"
    assert fw["NUM_OF_VFS"] == "0" and fw["CNP_DSCP_P1"] == "48" and fw["CNP_802P_PRIO_P1"] == "6"
    for p in ("ATS_ENABLED", "ADVANCED_PCI_SETTINGS", "PCI_WR_ORDERING", "ROCE_CC_PRIO_MASK_P1"):
        assert p in fw
    assert list(fw) == hardware.PARAM_ORDER


def test_fresh_driver_qos():
    nic = hardware.new_nic(1, 0)
    assert nic["qos"]["trust"] == "pcp" and nic["qos"]["pfc"] == [0] * 8
    assert nic["qos"]["dscp2prio"] == {}
    assert nic["cma"] == {"roce_mode": "RoCE v2", "tos": 0}
    # DCQCN follows ROCE_CC_PRIO_MASK_P1 (factory default: every priority)
    assert nic["ecn"] == {"np": [1] * 8, "rp": [1] * 8}


def test_reset_table():
    assert hardware.applies_at_level("ROCE_CC_PRIO_MASK_P1", 3)
    assert hardware.applies_at_level("LINK_TYPE_P1", 3)
    assert not hardware.applies_at_level("SRIOV_EN", 3)
    assert not hardware.applies_at_level("SRIOV_EN", 4)
    assert not hardware.applies_at_level("EXP_ROM_PXE_ENABLE", 3)
    assert hardware.applies_at_level("EXP_ROM_PXE_ENABLE", 4)
    assert hardware.reset_required("NUM_OF_VFS") == hardware.COLD_REBOOT


def test_boot_applies_next_boot_and_resets_driver_state():
    node = hardware.new_node("n", 1)
    nic = node["nics"][0]
    nic["firmware"]["next_boot"]["SRIOV_EN"] = "True(1)"
    nic["firmware"]["next_boot"]["ROCE_CC_PRIO_MASK_P1"] = "8"
    nic["fw_pending"] = "28.43.1014"
    nic["qos"]["pfc"][3] = 1
    hardware.boot(node)
    assert nic["firmware"]["current"]["SRIOV_EN"] == "True(1)"
    assert nic["fw_version"] == "28.43.1014" and nic["fw_pending"] is None
    assert nic["qos"]["pfc"] == [0] * 8
    assert nic["ecn"]["np"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert node["modules"] == []
