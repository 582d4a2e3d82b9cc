"""modprobe/rmmod/lsmod/modinfo, nvidia-smi, openibd, boot and ethtool."""

from labsim import KVER, kmods  # noqa: F401
from linerate_lab.tools import boot, ethtool, kmod, nvidia_smi, openibd


def install_nvidia(lab, version="550.54.15", peermem=True):
    names = kmods.NVIDIA_MODULES + (["nvidia_peermem"] if peermem else [])
    lab.install_modules(names, version, "updates/dkms")


def test_modprobe_missing_module(lab):
    rc, out, err = lab.run(kmod, ["nvidia_peermem"], prog="modprobe")
    assert (rc, out) == (1, "")
    assert err == f"modprobe: FATAL: Module nvidia_peermem not found in directory /lib/modules/{KVER}\n"
    assert lab.run(kmod, ["-q", "nvidia"], prog="modprobe")[:3] == (1, "", "")


def test_modprobe_loads_dependencies_and_driver_version(lab):
    install_nvidia(lab)
    assert lab.run(nvidia_smi, [])[0] == 9
    assert lab.run(kmod, ["nvidia-peermem"], prog="modprobe") == (0, "", "")
    node = lab.node()
    assert node["modules"][-2:] == ["nvidia", "nvidia_peermem"]
    assert node["gpu_driver"] == "550.54.15"
    out = lab.run(kmod, [], prog="lsmod")[1].splitlines()
    assert out[0] == "Module                  Size  Used by"
    assert out[1] == "nvidia_peermem         16384  0"
    assert "nvidia              62676992  1 nvidia_peermem" in out
    assert any(line.startswith("ib_core ") and line.endswith(",nvidia_peermem") for line in out)


def test_peermem_needs_ib_core_module(lab):
    install_nvidia(lab)
    for sub in ("kernel", "updates"):
        p = lab.modroot / KVER / sub
        for f in p.rglob("ib_core.ko"):
            f.unlink()
    lab.update(lambda n: n.update(modules=[]))
    rc, _, err = lab.run(kmod, ["nvidia_peermem"], prog="modprobe")
    assert rc == 1 and err == ("modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown parameter (see dmesg)\n")


def test_module_built_for_another_kernel_is_not_loadable(lab):
    lab.update(lambda n: n.update(modules=[]))
    lab.install_modules(["nvidia"], "550.54.15", "updates/dkms", kver="6.1.0-25-amd64")
    rc, _, err = lab.run(kmod, ["nvidia"], prog="modprobe")
    assert rc == 1 and "not found in directory" in err
    # a .ko that sits in this kernel's tree but was built for another one
    d = lab.modroot / KVER / "updates" / "dkms"
    d.mkdir(parents=True, exist_ok=True)
    (d / "nvidia.ko").write_text(kmods.ko_text("nvidia", "550.54.15", "6.1.0-25-amd64"))
    assert lab.run(kmod, ["nvidia"], prog="modprobe")[2] == ("modprobe: ERROR: could not insert 'nvidia': Exec format error\n")


def test_rmmod_and_modinfo(lab):
    rc, _, err = lab.run(kmod, ["ib_core"], prog="rmmod")
    assert rc == 1 and err.startswith("rmmod: ERROR: Module ib_core is in use by: ")
    assert lab.run(kmod, ["ib_ipoib"], prog="rmmod")[0] == 0
    assert "ib_ipoib" not in lab.node()["modules"]
    assert lab.run(kmod, ["ib_ipoib"], prog="rmmod")[2] == ("rmmod: ERROR: Module ib_ipoib is not currently loaded\n")
    assert lab.run(kmod, ["-F", "version", "mlx5_core"], prog="modinfo")[1] == "24.10-1.1.4\n"
    out = lab.run(kmod, ["mlx5_core"], prog="modinfo")[1]
    assert out.startswith(f"filename:       {lab.modroot}/{KVER}/updates/mlx5_core.ko\nversion:        24.10-1.1.4\nlicense:        Dual BSD/GPL\n")
    assert f"vermagic:       {KVER} SMP preempt mod_unload modversions \n" in out
    assert lab.run(kmod, ["nvidia"], prog="modinfo")[:3] == (1, "", "modinfo: ERROR: Module nvidia not found.\n")


def test_nvidia_smi_outputs(lab):
    install_nvidia(lab)
    lab.run(kmod, ["nvidia"], prog="modprobe")
    out = lab.run(nvidia_smi, [])[1].splitlines()
    assert out[1] == "+" + "-" * 89 + "+"
    assert out[2] == "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |"
    # GPU0 sits behind rail 0's PCIe switch, beside mlx5_0 (41:00.0): bus 42 (linerate_lab.pcie)
    assert out[8] == "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:42:00.0 Off |                    0 |"
    assert out[9] == "| N/A   30C    P0             72W /  700W |       0MiB /  81559MiB |      0%      Default |"
    assert out[10] == "|                                         |                        |             Disabled |"
    assert "|  No running processes found                                                             |" in out
    rc, out, _ = lab.run(nvidia_smi, ["--query-gpu=index,name,driver_version,memory.total", "--format=csv,noheader,nounits"])
    assert rc == 0 and out.splitlines()[7] == "7, NVIDIA H100 80GB HBM3, 550.54.15, 81559"
    out = lab.run(nvidia_smi, ["--query-gpu=driver_version", "--format=csv"])[1]
    assert out.splitlines()[:2] == ["driver_version", "550.54.15"]
    assert lab.run(nvidia_smi, ["--query-gpu=bogus", "--format=csv"])[:2] == (2, 'Field "bogus" is not a valid field to query.\n\n')
    assert lab.run(nvidia_smi, ["-L"])[1].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    assert "Driver Version                            : 550.54.15\n" in lab.run(nvidia_smi, ["-q"])[1]
    lab.run(kmod, ["-r", "nvidia"], prog="modprobe")
    assert lab.run(nvidia_smi, [])[:2] == (9, nvidia_smi.FAILED)


def test_openibd_restart_refused_while_peermem_uses_ib_core(lab):
    install_nvidia(lab)
    lab.run(kmod, ["nvidia_peermem"], prog="modprobe")
    rc, out, _ = lab.run(openibd, ["restart"])
    assert rc == 1
    assert out == ("Unloading HCA driver:                                      [FAILED]\nrmmod: ERROR: Module ib_core is in use by: nvidia_peermem\n")
    lab.run(kmod, ["-r", "nvidia_peermem"], prog="modprobe")
    lab.update(lambda n: n["nics"][0]["qos"].update(trust="dscp"))
    assert lab.run(openibd, ["restart"]) == (
        0,
        ("Unloading HCA driver:                                      [  OK  ]\nLoading HCA driver and Access Layer:                       [  OK  ]\n"),
        "",
    )
    assert lab.nic()["qos"]["trust"] == "pcp"


def test_boot_power_cycles_the_node(lab, tmp_path):
    install_nvidia(lab)
    lab.run(__import__("linerate_lab.tools.mlxconfig", fromlist=["x"]), ["-d", "mlx5_0", "-y", "set", "SRIOV_EN=1"])
    lab.mp.setattr(boot, "configured_modules", lambda root="/": ["nvidia-peermem"])
    lab.mp.setattr(boot, "onboot", lambda root="/": False)
    assert lab.run(boot, [])[0] == 0
    node = lab.node()
    assert node["nics"][0]["firmware"]["current"]["SRIOV_EN"] == "True(1)"
    assert {"mlx5_core", "mlx5_ib", "nvidia", "nvidia_peermem"} <= set(node["modules"])
    assert node["gpu_driver"] == "550.54.15"


def test_configured_modules_reads_modules_load_d(tmp_path):
    (tmp_path / "etc/modules-load.d").mkdir(parents=True)
    (tmp_path / "etc/modules-load.d/nvidia-peermem.conf").write_text("# GPUDirect\nnvidia-peermem\n")
    (tmp_path / "etc/modules").write_text("loop\n")
    assert boot.configured_modules(str(tmp_path)) == ["nvidia-peermem", "loop"]


def test_ethtool_link_from_model(lab):
    out = lab.run(ethtool, ["enp65s0f0np0"])[1]
    assert out.startswith("Settings for enp65s0f0np0:\n")
    assert "\tSpeed: 400000Mb/s\n\tLane count: 4\n\tDuplex: Full\n" in out
    assert out.endswith("\tLink detected: yes\n")
    lab.update(lambda n: n["nics"][0].update(cable="down"))
    out = lab.run(ethtool, ["enp65s0f0np0"])[1]
    assert "\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n" in out and out.endswith("detected: no\n")
    out = lab.run(ethtool, ["-i", "enp193s0f0np0"])[1]
    assert out.startswith("driver: mlx5_core\nversion: 24.10-1.1.4\nfirmware-version: 28.39.2048 (MT_0000000838)\n")
    assert "bus-info: 0000:c1:00.0\n" in out


def test_ethtool_delegates_everything_else(lab):
    calls = []
    lab.mp.setattr(ethtool.os, "execv", lambda path, argv: calls.append((path, argv)))
    lab.run(ethtool, ["eth0"])
    lab.run(ethtool, ["-k", "enp65s0f0np0"])
    lab.run(ethtool, ["-S", "eth0"])
    assert calls == [
        ("/sbin/ethtool.distrib", ["ethtool", "eth0"]),
        ("/sbin/ethtool.distrib", ["ethtool", "-k", "enp65s0f0np0"]),
        ("/sbin/ethtool.distrib", ["ethtool", "-S", "eth0"]),
    ]


def test_ethtool_statistics_in_mlx5_format_read_by_the_parser(lab):
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import mlx5_phy_counters, mlx5_priority_counters, parse_ethtool_stats

    lab.update(lambda n: n["nics"][0].update(counters={"rx_prio3_pause": 42, "rx_crc_errors_phy": 7, "tx_prio3_packets": 5}))
    out = lab.run(ethtool, ["-S", "enp65s0f0np0"])[1]
    stats = parse_ethtool_stats(out)["stats"]
    assert mlx5_priority_counters(stats)[3]["rx_pause"] == 42 and stats["tx_packets"] == 5
    assert mlx5_phy_counters(stats)["rx_crc_errors_phy"] == 7 and stats["rx_prio0_pause"] == 0


def test_nvidia_smi_topo_places_nics_by_numa(lab):
    install_nvidia(lab)
    lab.run(kmod, ["nvidia"], prog="modprobe")
    out = lab.run(nvidia_smi, ["topo", "-m"])[1].splitlines()
    assert out[0] == ("\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID")
    # each NIC shares a PCIe switch with its rail GPU (GPU 0 and GPU 4 on a 2-rail node): PIX
    assert out[1] == "GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPIX\tSYS\t0-55,112-167\t0\t\tN/A"
    assert out[9] == "NIC0\tPIX\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t X \tSYS"
    assert out[10] == "NIC1\tSYS\tSYS\tSYS\tSYS\tPIX\tNODE\tNODE\tNODE\tSYS\t X "
    assert out[-5:] == ["NIC Legend:", "", "  NIC0: mlx5_0", "  NIC1: mlx5_1", ""]
    assert "  PIX  = Connection traversing at most a single PCIe bridge" in out


def test_nvidia_smi_topo_eight_rails_share_pcie_switches(lab):
    from labsim import hardware

    install_nvidia(lab)
    lab.run(kmod, ["nvidia"], prog="modprobe")
    lab.update(lambda n: n.update(nics=hardware.new_node("node1", 1, nics_per_node=8)["nics"]))
    out = lab.run(nvidia_smi, ["topo", "-m"])[1].splitlines()
    assert out[1].split("\t")[9:17] == ["PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]
    assert out[10].split("\t")[1:5] == ["NODE", "PIX", "NODE", "NODE"]
