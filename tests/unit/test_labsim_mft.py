"""mlxconfig, mlxfwreset, mlxfwmanager, flint, mst against the model."""

from linerate_lab import hardware
from linerate_lab.tools import flint, fwimage, mlxconfig, mlxfwmanager, mlxfwreset, mlnx_qos, mst

HEADER = (
    "\nDevice #1:\n----------\n\n"
    "Device type:        ConnectX7           \n"
    "Name:               MCX75310AAS-NEAT_Ax \n"
    "Description:        NVIDIA ConnectX-7 HHHL Adapter Card; 400GbE / NDR IB (default mode); "
    "Single-port OSFP; PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled\n"
)


def test_query_layout(lab):
    rc, out, _ = lab.run(mlxconfig, ["-d", "0000:41:00.0", "q", "LINK_TYPE_P1", "SRIOV_EN"])
    assert rc == 0
    assert out == (
        HEADER + "Device:             0000:41:00.0        \n\n"
        "Configurations:                                          Next Boot\n"
        "        LINK_TYPE_P1                                ETH(2)              \n"
        "        SRIOV_EN                                    False(0)            \n"
    )


def test_full_query_lists_every_param_in_order(lab):
    out = lab.run(mlxconfig, ["-d", "mlx5_0", "query"])[1]
    rows = [line.split()[0] for line in out.splitlines()[10:]]
    assert rows[0] == "MEMIC_BAR_SIZE" and rows[-1] == "SAFE_MODE_ENABLE"
    assert {"ATS_ENABLED", "ROCE_CC_PRIO_MASK_P1", "CNP_DSCP_P1", "KEEP_ETH_LINK_UP_P1"} <= set(rows)


def test_query_all_devices_without_d(lab):
    out = lab.run(mlxconfig, ["q", "LINK_TYPE_P1"])[1]
    assert "Device #1:" in out and "Device #2:" in out
    assert "Device:             0000:c1:00.0        \n" in out


def test_set_writes_next_boot_only(lab):
    rc, out, _ = lab.run(mlxconfig, ["-d", "41:00.0", "-y", "set", "SRIOV_EN=1", "LINK_TYPE_P1=ETH", "ROCE_CC_PRIO_MASK_P1=8"])
    assert rc == 0
    assert (
        "Configurations:                                          Next Boot       New\n"
        "        SRIOV_EN                                    False(0)             True(1)             \n"
        "        LINK_TYPE_P1                                ETH(2)               ETH(2)              \n"
        "        ROCE_CC_PRIO_MASK_P1                        255                  8                   \n"
        "\n Apply new Configuration? (y/n) [n] : y\n"
        "Applying... Done!\n-I- Please reboot machine to load new configurations.\n"
    ) in out
    fw = lab.nic()["firmware"]
    assert fw["next_boot"]["SRIOV_EN"] == "True(1)" and fw["current"]["SRIOV_EN"] == "False(0)"
    assert fw["next_boot"]["ROCE_CC_PRIO_MASK_P1"] == "8"
    out = lab.run(mlxconfig, ["-d", "mlx5_0", "-e", "q", "SRIOV_EN", "LINK_TYPE_P1"])[1]
    assert out.endswith(
        "Configurations:                                          Default             Current         Next Boot\n"
        "*       SRIOV_EN                                    False(0)             False(0)             True(1)             \n"
        "        LINK_TYPE_P1                                ETH(2)               ETH(2)               ETH(2)              \n"
        "The '*' shows parameters with next value different from default/current value.\n"
    )


def test_set_prompt_and_errors(lab):
    rc, out, _ = lab.run(mlxconfig, ["-d", "41:00.0", "set", "SRIOV_EN=1"], stdin="n\n")
    assert rc == 2 and out.endswith(" Apply new Configuration? (y/n) [n] : -E- Aborted by user.\n")
    assert lab.nic()["firmware"]["next_boot"]["SRIOV_EN"] == "False(0)"
    rc, out, _ = lab.run(mlxconfig, ["-d", "41:00.0", "set", "SRIOV_EN=1"], stdin="y\n")
    assert rc == 0 and lab.nic()["firmware"]["next_boot"]["SRIOV_EN"] == "True(1)"
    rc, out, _ = lab.run(mlxconfig, ["-d", "41:00.0", "-y", "set", "LINK_TYPE_P1=FOO"])
    assert rc == 3 and out.endswith("-E- Unknown value FOO\n")
    # a name mstflint's parameter database lacks (mlxcfg_db_manager.cpp) vs one it knows that this card's
    # firmware does not expose (mlxcfg_generic_commander.cpp)
    rc, out, _ = lab.run(mlxconfig, ["-d", "41:00.0", "-y", "set", "NO_SUCH_PARAM=1"])
    assert rc == 3 and out.endswith("-E- Unknown Parameter: NO_SUCH_PARAM\n")
    rc, out, _ = lab.run(mlxconfig, ["-d", "41:00.0", "-y", "set", "LINK_TYPE_P9=ETH"])
    assert rc == 3 and out.endswith("-E- The Device doesn't support LINK_TYPE_P9 parameter\n")
    rc, out, _ = lab.run(mlxconfig, ["-d", "41:00.0", "-y", "set", "PCI_WR_ORDERING=relaxed"])
    assert rc == 3 and out.endswith("-E- Unknown value relaxed\n")
    assert lab.run(mlxconfig, ["-d", "99:00.0", "q"])[:2] == (3, "-E- Failed to open the device\n")
    assert lab.run(mlxconfig, ["-y", "set", "SRIOV_EN=1"])[:2] == (3, "-E- set command expects device to be specified.\n")
    assert lab.run(mlxconfig, ["-d", "mlx5_0", "set", "SRIOV_EN"])[:2] == (3, "-E- Invalid Configuration argument SRIOV_EN\n")


def test_reset_restores_defaults_in_next_boot(lab):
    lab.run(mlxconfig, ["-d", "mlx5_0", "-y", "set", "NUM_OF_VFS=8"])
    rc, out, _ = lab.run(mlxconfig, ["-d", "mlx5_0", "-y", "reset"])
    assert rc == 0 and out == (
        "\n Reset configuration for device mlx5_0? (y/n) [n] : y\nApplying... Done!\n-I- Please reboot machine to load new configurations.\n"
    )
    assert lab.nic()["firmware"]["next_boot"]["NUM_OF_VFS"] == "0"


def test_mlxfwreset_level3_applies_what_a_firmware_reload_can(lab):
    lab.run(mlxconfig, ["-d", "mlx5_0", "-y", "set", "ROCE_CC_PRIO_MASK_P1=8", "CNP_DSCP_P1=46", "SRIOV_EN=1"])
    lab.run(mlnx_qos, ["-i", "enp65s0f0np0", "--pfc", "0,0,0,1,0,0,0,0"])
    rc, out, _ = lab.run(mlxfwreset, ["-d", "0000:41:00.0", "-l", "3", "-y", "reset"])
    assert rc == 0
    assert out == (
        "\nThe reset level for device, 0000:41:00.0 is:\n\n3: Driver restart and PCI reset\n"
        "Continue with reset?[y/N] y\n"
        "-I- Sending Reset Command To Fw             -Done\n"
        "-I- Stopping Driver                         -Done\n"
        "-I- Resetting PCI                           -Done\n"
        "-I- Starting Driver                         -Done\n"
        "-I- Restarting MST                          -Skipped\n"
        "-I- FW was loaded successfully.\n"
    )
    nic = lab.nic()
    cur = nic["firmware"]["current"]
    assert cur["ROCE_CC_PRIO_MASK_P1"] == "8" and cur["CNP_DSCP_P1"] == "46"
    assert cur["SRIOV_EN"] == "False(0)"  # needs a cold reboot
    assert nic["firmware"]["next_boot"]["SRIOV_EN"] == "True(1)"
    assert nic["ecn"]["np"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert nic["qos"]["pfc"] == [0] * 8  # driver restarted


def test_mlxfwreset_refusals_and_query(lab):
    rc, out, _ = lab.run(mlxfwreset, ["-d", "41:00.0", "-l", "0", "-y", "reset"])
    assert (rc, out) == (1, "\n-E- Reset-level '0' is not supported in the current state of this device.\n")
    rc, out, _ = lab.run(mlxfwreset, ["-d", "41:00.0", "reset"], stdin="n\n")
    assert rc == 1 and out.endswith("Continue with reset?[y/N] -E- Aborted by user.\n")
    rc, out, _ = lab.run(mlxfwreset, ["-d", "/dev/mst/mt4129_pciconf0", "q"])
    assert rc == 1 and "Can not find path of the provided mst device" in out
    out = lab.run(mlxfwreset, ["-d", "mlx5_0", "query"])[1]
    assert "3: Driver restart and PCI reset                                  -Supported     (default)\n" in out
    lab.mp.setattr("os.geteuid", lambda: 1000)
    assert lab.run(mlxfwreset, ["-d", "mlx5_0", "q"])[:2] == (1, "-E- Only root user can run this tool.\n")


def test_mst_start_makes_dev_mst_paths(lab):
    assert lab.run(mlxconfig, ["-d", "/dev/mst/mt4129_pciconf0", "q"])[0] == 3
    lab.run(mst, ["start"])
    assert lab.run(mlxconfig, ["-d", "/dev/mst/mt4129_pciconf1", "q", "LINK_TYPE_P1"])[0] == 0
    out = lab.run(mst, ["status"])[1]
    assert "/dev/mst/mt4129_pciconf0         - PCI configuration cycles access.\n" in out
    assert "domain:bus:dev.fn=0000:41:00.0 addr.reg=88" in out


def write_image(lab, psid, fw):
    path = lab.tmp / f"fw-{psid}-{fw}.bin"
    path.write_text(f"{fwimage.MAGIC}\nPSID={psid}\nFW={fw}\n")
    return str(path)


def test_mlxfwmanager_update_is_guarded_by_psid(lab):
    wrong = write_image(lab, "MT_0000001244", "28.43.1014")
    rc, out, _ = lab.run(mlxfwmanager, ["-d", "41:00.0", "-i", wrong, "-u", "-y"])
    assert rc == 1 and "Status:           No matching image found" in out
    assert lab.nic()["fw_pending"] is None
    good = write_image(lab, "MT_0000000838", "28.43.1014")
    rc, out, _ = lab.run(mlxfwmanager, ["-d", "41:00.0", "-i", good, "-u", "-y"])
    assert rc == 0
    assert "     FW             28.39.2048     28.43.1014    \n" in out
    assert "  Status:           Update required\n" in out
    assert out.endswith("Restart needed for updates to take effect.\n")
    nic = lab.nic()
    assert (nic["fw_version"], nic["fw_pending"]) == ("28.39.2048", "28.43.1014")
    out = lab.run(flint, ["-d", "41:00.0", "q"])[1]
    assert "FW Version:            28.43.1014\nFW Version(Running):   28.39.2048\n" in out
    out = lab.run(mlxfwmanager, ["--query", "-d", "41:00.0"])[1]
    assert "     FW (Running)   28.39.2048     N/A           \n" in out
    lab.run(mlxfwreset, ["-d", "41:00.0", "-y", "reset"])
    assert lab.nic()["fw_version"] == "28.43.1014"
    assert lab.run(flint, ["-d", "41:00.0", "q"])[1].startswith("Image type:            FS4\nFW Version:            28.43.1014\nFW Release Date:")


def test_flint_query_and_missing_device(lab):
    out = lab.run(flint, ["-d", "mlx5_1", "q"])[1]
    assert "Base GUID:             a088c20300100110        16\n" in out
    assert "Base MAC:              a088c2100110            16\n" in out
    assert "PSID:                  MT_0000000838\n" in out
    assert lab.run(flint, ["-d", "0000:99:00.0", "q"])[:2] == (1, "-E- Cannot open Device: 0000:99:00.0. No such file or directory\n")


def test_max_acc_out_read_is_hidden_until_advanced_pci_settings_runs(lab):
    """As on real firmware: listed and settable only while ADVANCED_PCI_SETTINGS is on in Current."""
    rows = [line.split()[0] for line in lab.run(mlxconfig, ["-d", "mlx5_0", "q"])[1].splitlines()[10:]]
    assert "MAX_ACC_OUT_READ" not in rows and "ADVANCED_PCI_SETTINGS" in rows
    rc, out, _ = lab.run(mlxconfig, ["-d", "mlx5_0", "-y", "set", "MAX_ACC_OUT_READ=44"])
    assert rc != 0 and "-E- The Device doesn't support MAX_ACC_OUT_READ parameter" in out
    assert lab.run(mlxconfig, ["-d", "mlx5_0", "-y", "set", "ADVANCED_PCI_SETTINGS=1"])[0] == 0
    # set for the next boot only: still hidden
    assert "MAX_ACC_OUT_READ" not in lab.run(mlxconfig, ["-d", "mlx5_0", "-e", "q"])[1]
    assert lab.nic()["firmware"]["current"]["ADVANCED_PCI_SETTINGS"] == "False(0)"
    lab.update(hardware.boot)  # the power cycle it needs
    out = lab.run(mlxconfig, ["-d", "mlx5_0", "-e", "q", "MAX_ACC_OUT_READ"])[1]
    assert out.endswith("        MAX_ACC_OUT_READ                            0                    0                    0                   \n")
    rc, _, _ = lab.run(mlxconfig, ["-d", "mlx5_0", "-y", "set", "MAX_ACC_OUT_READ=44"])
    assert rc == 0 and lab.nic()["firmware"]["next_boot"]["MAX_ACC_OUT_READ"] == "44"
