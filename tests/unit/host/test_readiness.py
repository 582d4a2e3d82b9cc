"""Host readiness: the lspci / nvidia-smi topo parsers on real outputs, the node
collector over the lab's simulated tools (and the findings of what it read), and
the lab's PCIe faults. The findings on hand-made facts: test_readiness_findings.py."""

import pytest

from parser_fixtures import fixture, fixture_source

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.host import readiness, readiness_findings
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import nearest_gpus, parse_lspci, parse_nvidia_smi_topo, path_between, pci_address
from linerate_lab import faults, model
from linerate_lab.tools import ibdev2netdev, ibv_devinfo, lspci, nvidia_smi, ofed_info


# ---------------------------------------------------------------- lspci


def test_lspci_real_connectx6dx_endpoint():
    assert fixture_source("pcie", "real_lspci_cx6dx.txt").startswith("https://github.com/NVIDIA/l2fwd-nv/issues/6")
    dev = parse_lspci(fixture("pcie", "real_lspci_cx6dx.txt"))["devices"]["0000:b3:00.0"]
    assert dev["class"] == "Ethernet controller" and dev["port_type"] == "Endpoint"
    assert dev["lnkcap"] == {"speed_gts": 16.0, "gen": 4, "width": 16}
    assert dev["max_read_req"] == 4096 and dev["numa_node"] == 0
    assert "lnksta" not in dev


def test_lspci_real_numeric_ids_domain_and_bridge_ranges():
    a100 = parse_lspci(fixture("pcie", "real_lspci_a100.txt"))["devices"]["0000:da:00.0"]
    assert (a100["class"], a100["numa_node"], a100["max_read_req"]) == ("3D controller", 5, 512)
    rp = parse_lspci(fixture("pcie", "real_lspci_domain_rootport.txt"))["devices"]
    assert list(rp) == ["0001:00:00.0"]
    assert rp["0001:00:00.0"]["port_type"] == "Root Port"
    assert rp["0001:00:00.0"]["bus"] == {"primary": 0, "secondary": 1, "subordinate": 1}
    plx = parse_lspci(fixture("pcie", "real_lspci_plx_bridge.txt"))["devices"]["0000:02:08.0"]
    assert plx["bus"] == {"primary": 2, "secondary": 0x82, "subordinate": 0x82}


def test_lspci_lab_tree_acs_and_downgrade():
    devs = parse_lspci(fixture("pcie", "lab_h100_2nic_acs_x8.txt"))["devices"]
    nic = devs["0000:c1:00.0"]
    assert nic["lnkcap"] == {"speed_gts": 32.0, "gen": 5, "width": 16}
    assert nic["lnksta"] == {"speed_gts": 32.0, "gen": 5, "width": 8, "downgraded": True}
    assert devs["0000:41:00.0"]["lnksta"]["downgraded"] is False
    path = path_between(devs, "0000:41:00.0", "0000:42:00.0")
    assert [b["address"] for b in path] == ["0000:40:00.0", "0000:40:01.0"]
    assert all(b["acs_ctl"]["ReqRedir"] and b["acs_ctl"]["SrcValid"] and not b["acs_ctl"]["TransBlk"] for b in path)
    # the root port above the switch keeps ACS but is not between the NIC and its GPU
    assert devs["0000:3e:01.0"]["acs_ctl"]["ReqRedir"] and "0000:3e:01.0" not in [b["address"] for b in path]


def test_lspci_old_format_without_annotations_and_access_denied():
    text = (
        "41:00.0 Infiniband controller: Mellanox Technologies MT28908 Family [ConnectX-6]\n"
        "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
        "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 8GT/s, Width x8, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
        "42:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n"
        "\tCapabilities: <access denied>\n"
    )
    out = parse_lspci(text)
    assert out["devices"]["0000:41:00.0"]["lnksta"] == {"speed_gts": 8.0, "gen": 3, "width": 8, "downgraded": False}
    assert out["warnings"] == ["capabilities not readable (lspci needs root) for: 0000:42:00.0"]


@pytest.mark.parametrize(
    "text, where",
    [
        (fixture("pcie", "error_no_access.txt"), "line 1: pcilib: Cannot open /proc/bus/pci"),
        ("\tNUMA node: 0\n", "line 1: detail line before any device header"),
        ("", "no PCI device"),
    ],
)
def test_lspci_errors(text, where):
    with pytest.raises(ParseError, match=where):
        parse_lspci(text)


def test_pci_address_forms():
    assert pci_address("00000000:18:00.0") == "0000:18:00.0"
    assert pci_address("C1:00.0") == "0000:c1:00.0"
    assert pci_address("garbage") is None


# ---------------------------------------------------------------- nvidia-smi topo -m


def test_topo_real_4nic_layout_with_gpu_numa_id():
    t = parse_nvidia_smi_topo(fixture("nvidia_smi_topo", "real_rtx6000_4nic.txt"))
    assert t["devices"] == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1", "NIC2", "NIC3"]
    assert t["nic_names"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    assert t["affinity"]["GPU2"] == {"cpu": "32-63", "numa": 1}
    assert t["links"]["NIC0"]["NIC1"] == "PIX" and t["links"]["GPU0"]["NIC0"] == "NODE"
    near = nearest_gpus(t)
    assert near["mlx5_2"][0] == (2, "NODE") and near["mlx5_0"][-1] == (3, "SYS")
    assert t["warnings"] == []


def test_topo_real_old_layout_partial_rows_warn():
    t = parse_nvidia_smi_topo(fixture("nvidia_smi_topo", "real_nccl933_no_gpu_numa_id.txt"))
    assert t["affinity"]["GPU4"] == {"cpu": "48-95,144-191", "numa": 1}
    assert nearest_gpus(t)["NIC2"][0] == (0, "PIX")
    assert t["warnings"][0].startswith("matrix rows missing for: GPU7, NIC0")
    assert t["warnings"][1].startswith("no NIC Legend entry for: NIC0")


def test_topo_real_tab_separated_pxb_rails():
    t = parse_nvidia_smi_topo(fixture("nvidia_smi_topo", "real_h100_12nic_tabs_pxb.txt"))
    assert len(t["devices"]) == 20 and t["affinity"]["GPU1"] == {"cpu": "0-55,112-167", "numa": 0}
    near = nearest_gpus(t)
    assert near["NIC0"][0] == (0, "PXB") and near["NIC3"][0] == (1, "PXB") and near["NIC6"][0] == (0, "SYS")


def test_topo_lab_rail_aligned_gpus_are_pix():
    near = nearest_gpus(parse_nvidia_smi_topo(fixture("nvidia_smi_topo", "lab_h100_2nic.txt")))
    assert near["mlx5_0"][0] == (0, "PIX") and near["mlx5_1"][0] == (4, "PIX")
    assert near["mlx5_0"][1] == (1, "NODE")


@pytest.mark.parametrize(
    "text, where",
    [
        (fixture("nvidia_smi_topo", "error_no_driver.txt"), "NVIDIA-SMI has failed"),
        ("nothing here\n", "no topology matrix"),
        ("\tGPU0\tNIC0\nGPU0\t X \tWAT\n", "line 2: GPU0: expected 2 link cells"),
        ("\tGPU0\tNIC0\nGPU9\t X \tPIX\n", "line 2: row 'GPU9' is not a device"),
    ],
)
def test_topo_errors(text, where):
    with pytest.raises(ParseError, match=where):
        parse_nvidia_smi_topo(text)


# ---------------------------------------------------------------- the collector, over the lab's tools


def _fake_run(lab, missing=()):
    tools = {"ibdev2netdev": ibdev2netdev, "ibv_devinfo": ibv_devinfo, "lspci": lspci, "nvidia-smi": nvidia_smi, "ofed_info": ofed_info}
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[0] in missing:
            raise OSError(f"{argv[0]} not found")
        if argv[0] == "modinfo":
            return 0, "550.54.15\n", ""
        if argv[0] == "dpkg-query":
            return 0, "libnccl2 2.21.5-1+cuda12.4 ii \n", ""
        return lab.run(tools[argv[0]], argv[1:])

    run.calls = calls
    return run


def _gpu_node(lab):
    def up(n):
        n["gpu_driver"] = "550.54.15"
        n["modules"] += ["nvidia", "nvidia_peermem"]

    lab.update(up)


def test_collect_healthy_lab_node(lab, tmp_path):
    _gpu_node(lab)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro\n")
    run = _fake_run(lab)
    facts = readiness.collect(
        run, ["mlx5_0", "mlx5_1"], sys_root=str(tmp_path / "sys"), proc_root=str(tmp_path / "proc"), shm_path=str(tmp_path), memlock=-1, kernel="6.1.0-25-amd64"
    )
    assert ["lspci", "-D", "-vvv"] in run.calls and ["nvidia-smi", "topo", "-m"] in run.calls
    assert facts["unread"] == []
    assert facts["rails"] == [
        {"device": "mlx5_0", "pci": "0000:41:00.0", "gpu": 0, "gpu_pci": "0000:42:00.0", "link": "PIX"},
        {"device": "mlx5_1", "pci": "0000:c1:00.0", "gpu": 4, "gpu_pci": "0000:c2:00.0", "link": "PIX"},
    ]
    nic = facts["nics"][0]
    assert nic["lnksta"]["width"] == 16 and nic["max_read_req"] == 4096 and nic["fw_ver"] == "28.39.2048"
    assert [b["address"] for b in nic["path"]] == ["0000:40:00.0", "0000:40:01.0"]
    assert facts["versions"] == {
        "kernel": "6.1.0-25-amd64",
        "gpu_driver": "550.54.15",
        "ofed": "MLNX_OFED_LINUX-24.10-1.1.4.0",
        "nvidia_peermem": "550.54.15",
        "nccl": "2.21.5-1+cuda12.4",
    }
    assert facts["iommu"]["mode"] == "off"
    assert readiness_findings.host_findings("node1", facts, min_shm_bytes=0) == []


def test_collect_missing_tools_warn_what_stays_unproven(lab, tmp_path):
    run = _fake_run(lab, missing=("lspci", "nvidia-smi"))
    facts = readiness.collect(run, ["mlx5_0"], proc_root=str(tmp_path), shm_path=str(tmp_path), memlock=-1)
    what = {u["what"]: u for u in facts["unread"]}
    assert set(what) == {"lspci", "nvidia-smi", "iommu"}
    assert what["lspci"]["error"] == "lspci not found (lspci not found)"
    f = readiness_findings.host_findings("node1", facts, min_shm_bytes=0)
    assert {(x["code"], x["severity"], x["what"]) for x in f} == {
        ("READINESS_UNPROVEN", "warning", "lspci"),
        ("READINESS_UNPROVEN", "warning", "nvidia-smi"),
        ("READINESS_UNPROVEN", "warning", "iommu"),
    }
    msg = next(x["message"] for x in f if x["what"] == "nvidia-smi")
    assert "GPU<->NIC affinity" in msg and "not proven" in msg
    assert "lnksta" not in facts["nics"][0] and "gpu" not in facts["nics"][0]


def test_collect_driver_not_loaded_is_unproven_not_a_crash(lab, tmp_path):
    facts = readiness.collect(_fake_run(lab), ["mlx5_0"], proc_root=str(tmp_path), shm_path=str(tmp_path), memlock=-1)
    nv = next(u for u in facts["unread"] if u["what"] == "nvidia-smi")
    assert "exited 9" in nv["error"]
    # without nvidia-smi the GPUs come from lspci (NVIDIA 3D controllers), so their PCIe links are still judged
    assert facts["gpus"] and {(g["source"], g["driver"]) for g in facts["gpus"]} == {("lspci", None)}
    assert all(g["lnkcap"]["gen"] == 5 and g["upstream"]["lnkcap"] for g in facts["gpus"])
    assert "gpu_driver" not in facts["versions"]


def test_iommu_mode_from_cmdline(tmp_path):
    (tmp_path / "class" / "iommu" / "dmar0").mkdir(parents=True)
    (tmp_path / "cmdline").write_text("ro intel_iommu=on iommu=pt\n")
    assert readiness._iommu(str(tmp_path), str(tmp_path))[0]["mode"] == "passthrough"
    (tmp_path / "cmdline").write_text("ro intel_iommu=on\n")
    assert readiness._iommu(str(tmp_path), str(tmp_path))[0]["mode"] == "translated"
    (tmp_path / "cmdline").write_text("ro intel_iommu=off\n")
    assert readiness._iommu(str(tmp_path), str(tmp_path))[0]["mode"] == "off"


# ---------------------------------------------------------------- the lab's lspci and faults


def test_lab_lspci_slot_filter_and_bad_option(lab):
    rc, out, _ = lab.run(lspci, ["-D", "-vvv", "-s", "41:00.0"])
    assert rc == 0 and out.startswith("0000:41:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n")
    assert "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n" in out and out.count("\n\n") == 1
    rc, out, _ = lab.run(lspci, [])
    assert rc == 0 and out.splitlines()[0].startswith("18:00.0 3D controller: NVIDIA") is False
    assert all(not line.startswith("0000:") for line in out.splitlines())
    assert lab.run(lspci, ["-x"])[0] == 2


def test_lab_faults_pcie_acs_version(lab):
    faults.apply("pcie-degrade", ["node1", "mlx5_1", "x8"], None)
    out = lab.run(lspci, ["-vvv", "-s", "c1:00.0"])[1]
    assert "LnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)" in out
    faults.apply("pcie-degrade", ["node1", "mlx5_1", "gen3"], None)
    out = lab.run(lspci, ["-vvv", "-s", "c1:00.0"])[1]
    assert "LnkSta:\tSpeed 8GT/s (downgraded), Width x8 (downgraded)" in out
    assert [f["kind"] for f in model.load()["faults"]] == ["pcie-degrade"]
    faults.apply("pcie-restore", ["node1", "mlx5_1"], None)
    assert "Width x16 (ok)" in lab.run(lspci, ["-vvv", "-s", "c1:00.0"])[1]
    with pytest.raises(SystemExit, match="allowed: x1, x2, x4, x8, gen1..gen4"):
        faults.apply("pcie-degrade", ["node1", "mlx5_1", "x32"], None)

    faults.apply("acs-on", ["node1"], None)
    assert "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+" in lab.run(lspci, ["-vvv", "-s", "40:00.0"])[1]
    faults.apply("acs-off", ["node1"], None)
    assert "ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir-" in lab.run(lspci, ["-vvv", "-s", "40:00.0"])[1]

    faults.apply("version-skew", ["node1"], None)
    assert {n["fw_version"] for n in lab.node()["nics"]} == {faults.SKEW_FW}
    faults.apply("version-skew", ["node1"], None)  # twice: the first record keeps what to restore
    faults.apply("version-restore", ["node1"], None)
    assert {n["fw_version"] for n in lab.node()["nics"]} == {"28.39.2048"}
    assert model.load()["faults"] == []


def test_upstream_port_is_the_bridge_whose_secondary_bus_holds_the_device():
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import upstream_port

    devs = parse_lspci(fixture("pcie", "lab_h100_2nic_acs_x8.txt"))["devices"]
    assert upstream_port(devs, "0000:41:00.0")["address"] == "0000:40:00.0"
    assert upstream_port(devs, "0000:42:00.0")["address"] == "0000:40:01.0"
    assert upstream_port(devs, "0000:40:00.0")["address"] == "0000:3f:00.0"  # the switch's upstream port
    assert upstream_port(devs, "0000:99:00.0") is None


def _lab_pcie_findings(lab, tmp_path):
    _gpu_node(lab)
    facts = readiness.collect(
        _fake_run(lab), ["mlx5_0", "mlx5_1"], sys_root=str(tmp_path), proc_root=str(tmp_path), shm_path=str(tmp_path), memlock=-1, kernel="6.1.0-25-amd64"
    )
    return [
        (x["code"], x["device"], x.get("upstream")) for x in readiness_findings.host_findings("node1", facts, min_shm_bytes=0) if x["code"].startswith("PCIE")
    ], facts


def test_lab_presents_both_ends_of_each_link(lab, tmp_path):
    found, facts = _lab_pcie_findings(lab, tmp_path)
    assert found == []
    nic = facts["nics"][1]
    assert nic["upstream"]["address"] == "0000:c0:00.0" and nic["upstream"]["port_type"] == "Downstream Port"
    assert nic["upstream"]["lnkcap"] == {"speed_gts": 32.0, "gen": 5, "width": 16}
    assert {g["index"]: g["upstream"]["address"] for g in facts["gpus"]}[4] == "0000:c0:01.0"


def test_lab_fault_slot_gen4_is_a_warning_and_a_degraded_link_below_both_is_the_error(lab, tmp_path):
    faults.apply("pcie-slot", ["node1", "mlx5_1", "gen4"], None)
    # the NIC compares with its own LnkCap (pciutils: downgraded), the slot with its own (ok): both ends shown
    assert "LnkSta:\tSpeed 16GT/s (downgraded), Width x16 (ok)" in lab.run(lspci, ["-vvv", "-s", "c1:00.0"])[1]
    slot = lab.run(lspci, ["-vvv", "-s", "c0:00.0"])[1]
    assert "LnkCap:\tPort #0, Speed 16GT/s, Width x16" in slot and "LnkSta:\tSpeed 16GT/s (ok), Width x16 (ok)" in slot
    found, _ = _lab_pcie_findings(lab, tmp_path)
    assert found == [("PCIE_SLOT_LIMITED", "mlx5_1", "0000:c0:00.0")]
    faults.apply("pcie-degrade", ["node1", "mlx5_1", "gen3"], None)
    assert "LnkSta:\tSpeed 8GT/s (downgraded)" in lab.run(lspci, ["-vvv", "-s", "c0:00.0"])[1]
    found, _ = _lab_pcie_findings(lab, tmp_path)
    assert found == [("PCIE_DEGRADED", "mlx5_1", "0000:c0:00.0")]
    assert sorted(f["kind"] for f in model.load()["faults"]) == ["pcie-degrade", "pcie-slot"]
    faults.apply("pcie-restore", ["node1", "mlx5_1"], None)
    faults.apply("pcie-slot-restore", ["node1", "mlx5_1"], None)
    assert model.load()["faults"] == [] and _lab_pcie_findings(lab, tmp_path)[0] == []
    assert "LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)" in lab.run(lspci, ["-vvv", "-s", "c1:00.0"])[1]


def test_lab_fault_gpu_slot_and_bad_input_changes_nothing(lab, tmp_path):
    faults.apply("pcie-slot", ["node1", "GPU4", "x8"], None)
    found, _ = _lab_pcie_findings(lab, tmp_path)
    assert found == [("PCIE_SLOT_LIMITED", "GPU4", "0000:c0:01.0")]
    faults.apply("pcie-slot-restore", ["node1", "GPU4"], None)
    before = model.load()
    with pytest.raises(SystemExit, match=r"pcie-slot 'gen5' is not allowed \(allowed: gen1..gen4, x1, x2, x4, x8\)"):
        faults.apply("pcie-slot", ["node1", "mlx5_1", "gen5"], None)
    with pytest.raises(SystemExit, match="has no GPU 'GPU99'"):
        faults.apply("pcie-slot", ["node1", "GPU99", "gen4"], None)
    with pytest.raises(SystemExit, match="has no device 'mlx5_9'"):
        faults.apply("pcie-slot", ["node1", "mlx5_9", "gen4"], None)
    assert model.load() == before


# ---------------------------------------------------------------- GPUs train their link down at rest (issue 35)

from linerate_lab import pcie as lab_pcie  # noqa: E402
from linerate_lab.tools import nccl_tests  # noqa: E402

LINK_QUERY = "--query-gpu=index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.gen.gpumax,pcie.link.gen.hostmax,pcie.link.width.current,pcie.link.width.max"


def test_lab_gpu_trains_down_at_rest_and_up_under_load(lab):
    _gpu_node(lab)
    gpu0 = lab.run(lspci, ["-vvv", "-s", "42:00.0"])[1]
    assert "LnkCap:\tPort #0, Speed 32GT/s, Width x16" in gpu0
    assert "LnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)" in gpu0
    rc, out, _ = lab.run(nvidia_smi, [LINK_QUERY, "--format=csv"])
    assert rc == 0 and out.splitlines()[:2] == [
        "index, pcie.link.gen.current, pcie.link.gen.max, pcie.link.gen.gpumax, pcie.link.gen.hostmax, pcie.link.width.current, pcie.link.width.max",
        "0, 1, 5, 5, 5, 16, 16",
    ]
    assert lab.run(nvidia_smi, ["--query-compute-apps=pid,process_name,gpu_bus_id", "--format=csv,noheader"])[1] == ""
    with lab_pcie.hold_gpus([0], "all_reduce_perf", pid=4242):
        assert "LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)" in lab.run(lspci, ["-vvv", "-s", "42:00.0"])[1]
        rows = lab.run(nvidia_smi, [LINK_QUERY, "--format=csv,noheader"])[1].splitlines()
        assert rows[0] == "0, 5, 5, 5, 5, 16, 16" and rows[1] == "1, 1, 5, 5, 5, 16, 16"
        assert (
            lab.run(nvidia_smi, ["--query-compute-apps=pid,process_name,gpu_bus_id", "--format=csv,noheader"])[1] == "4242, all_reduce_perf, 00000000:42:00.0\n"
        )
        table = lab.run(nvidia_smi, [])[1]
        assert "|    0   N/A  N/A       4242      C   all_reduce_perf" in table
        assert all(len(line) == 91 for line in table.splitlines()[1:] if line.startswith("|"))
    assert "Speed 2.5GT/s (downgraded)" in lab.run(lspci, ["-vvv", "-s", "42:00.0"])[1]
    assert "No running processes found" in lab.run(nvidia_smi, [])[1]


def test_lab_nvidia_smi_refuses_fields_it_does_not_know(lab):
    _gpu_node(lab)
    for flag in ("--query-gpu=index,pcie.link.gen.bogus", "--query-compute-apps=pid,bogus"):
        rc, out, _ = lab.run(nvidia_smi, [flag, "--format=csv"])
        assert rc == 2 and out.startswith('Field "') and "is not a valid field to query." in out


def test_lab_gpu_holder_that_died_is_not_counted(lab):
    d = lab.state / "gpu-load" / "node1"
    d.mkdir(parents=True)
    (d / "999.json").write_text('{"pid": 999, "name": "ghost", "gpus": [3]}')  # nobody holds its lock
    assert lab_pcie.busy_gpus() == {} and not (d / "999.json").exists()


def test_lab_fault_pcie_gpu_stuck_keeps_one_gpu_at_gen1_under_load(lab):
    _gpu_node(lab)
    assert "already" not in faults.apply("pcie-gpu-stuck", ["node1", "GPU4"], None)
    with lab_pcie.hold_gpus([0, 4], "all_reduce_perf"):
        rows = lab.run(nvidia_smi, [LINK_QUERY, "--format=csv,noheader"])[1].splitlines()
        assert rows[0].startswith("0, 5,") and rows[4].startswith("4, 1, 5,")
        assert "LnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)" in lab.run(lspci, ["-vvv", "-s", "c2:00.0"])[1]
    assert model.load()["faults"] == [{"kind": "pcie-gpu-stuck", "args": ["node1", "GPU4"]}]
    before = model.load()
    with pytest.raises(SystemExit, match=r"has no GPU 'GPU9' \(has: GPU0..GPU7\)"):
        faults.apply("pcie-gpu-stuck", ["node1", "GPU9"], None)
    assert model.load() == before
    faults.apply("pcie-gpu-stuck-restore", ["node1", "4"], None)
    assert model.load()["faults"] == [] and "gpu_pcie_stuck" not in lab.node()
    with lab_pcie.hold_gpus([4], "all_reduce_perf"):
        assert "Speed 32GT/s (ok)" in lab.run(lspci, ["-vvv", "-s", "c2:00.0"])[1]


def _pcie1(facts):
    return [x for x in readiness_findings.host_findings("node1", facts, min_shm_bytes=0) if x["code"].startswith("PCIE")]


class _Load:
    """A Popen-like GPU workload: holds the lab GPUs of ``-g N`` while it runs (or exits at once with ``rc``)."""

    def __init__(self, argv, rc=None, gpus=None):
        import contextlib

        self.argv, self.rc, self.stack = argv, rc, contextlib.ExitStack()
        self.returncode = rc
        if rc is None:
            n = int(argv[argv.index("-g") + 1])
            self.stack.enter_context(lab_pcie.hold_gpus(range(n) if gpus is None else gpus, argv[0], pid=5151))

    def poll(self):
        return self.returncode

    def terminate(self):
        self.stack.close()
        self.returncode = -15

    def kill(self):
        self.terminate()

    def communicate(self, timeout=None):
        return "", "" if self.rc is None else "cudaGetDeviceCount failed"


def _collect(lab, tmp_path, load=("all_reduce_perf", "-g", "{ngpus}", "-N", "0"), start=None, **kw):
    started = []

    def begin(argv):
        started.append(argv)
        proc = (start or _Load)(argv)
        started.append(proc)
        return proc

    facts = readiness.collect(
        _fake_run(lab),
        ["mlx5_0", "mlx5_1"],
        sys_root=str(tmp_path),
        proc_root=str(tmp_path),
        shm_path=str(tmp_path),
        memlock=-1,
        kernel="6.1.0-25-amd64",
        load_command=list(load),
        start=begin,
        sleep=lambda s: None,
        **kw,
    )
    return facts, started


def test_collect_reads_idle_gpus_again_under_load_and_stops_the_load(lab, tmp_path):
    _gpu_node(lab)
    facts, started = _collect(lab, tmp_path)
    assert started[0] == ["all_reduce_perf", "-g", "8", "-N", "0"] and started[1].returncode == -15
    assert lab_pcie.busy_gpus() == {}  # the workload was stopped
    assert {g["lnksta"]["gen"] for g in facts["gpus"]} == {1}
    assert {(g["under_load"]["lnksta"]["gen"], g["under_load"]["smi_link"]["gen_current"], g["under_load"]["workload"]) for g in facts["gpus"]} == {
        (5, 5, "all_reduce_perf (pid 5151)")
    }
    assert _pcie1(facts) == []
    assert {n["speed_judged"] for n in readiness_findings.gpu_link_notes(facts)} == {True}


def test_collect_names_the_gpu_stuck_under_load_with_node_gpu_and_slot(lab, tmp_path):
    _gpu_node(lab)
    faults.apply("pcie-gpu-stuck", ["node1", "GPU4"], None)
    facts, _ = _collect(lab, tmp_path)
    f = _pcie1(facts)
    assert [(x["code"], x["node"], x["device"], x["gpu"], x["pci_address"], x["slot"]) for x in f] == [
        ("PCIE_DEGRADED", "node1", "GPU4", 4, "0000:c2:00.0", "0000:c0:01.0")
    ]
    assert "under load (all_reduce_perf (pid 5151))" in f[0]["message"]
    # without a load reading the same node reads healthy: its speed is unjudged, not an error
    facts, started = _collect(lab, tmp_path, load=())
    assert started == [] and _pcie1(facts) == []
    faults.apply("pcie-gpu-stuck-restore", ["node1", "GPU4"], None)


def test_collect_load_that_fails_or_misses_a_gpu_leaves_the_speed_unjudged(lab, tmp_path):
    _gpu_node(lab)
    facts, _ = _collect(lab, tmp_path, start=lambda argv: _Load(argv, rc=1))
    assert {g["load_unjudged"] for g in facts["gpus"]} == {
        "the load workload never ran on the GPU: all_reduce_perf -g 8 -N 0 exited 1: cudaGetDeviceCount failed"
    }
    assert _pcie1(facts) == []

    def missing(argv):
        raise OSError("all_reduce_perf not found")

    facts, _ = _collect(lab, tmp_path, start=missing)
    assert "did not start (all_reduce_perf not found)" in facts["gpus"][0]["load_unjudged"]
    # the workload reaches GPUs 0-3 only: they are judged, 4-7 wait out the timeout and stay unjudged
    ticks = iter(range(1000))
    facts, _ = _collect(lab, tmp_path, start=lambda argv: _Load(argv, gpus=[0, 1, 2, 3]), load_timeout=5, clock=lambda: next(ticks))
    assert [("under_load" in g, g.get("load_unjudged")) for g in facts["gpus"]][3:5] == [
        (True, None),
        (False, "the load workload all_reduce_perf -g 8 -N 0 did not reach this GPU within 5 s"),
    ]


def test_collect_loads_nothing_when_every_gpu_already_reads_its_maximum(lab, tmp_path):
    _gpu_node(lab)
    with lab_pcie.hold_gpus(range(8), "python3", pid=31):
        facts, started = _collect(lab, tmp_path)
    assert started == [] and {g["busy"][0]["name"] for g in facts["gpus"]} == {"python3"}
    assert _pcie1(facts) == []


def test_lab_nccl_tests_run_cycles_repeat_the_sizes_and_zero_runs_until_stopped():
    import argparse
    import itertools

    args = argparse.Namespace(minbytes="1M", maxbytes="4M", stepfactor=2, stepbytes=None, run_cycles=2)
    assert list(nccl_tests.sizes(args)) == [2**20, 2**21, 2**22] * 2
    args.run_cycles = 0
    assert list(itertools.islice(nccl_tests.sizes(args), 10)) == ([2**20, 2**21, 2**22] * 4)[:10]
    assert nccl_tests.cuda_gpus(2) == [0, 1]


def test_lab_nccl_tests_rank_holds_the_gpus_cuda_visible_devices_names(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,6")
    assert nccl_tests.cuda_gpus(1) == [5]


def test_collect_without_nvidia_smi_starts_no_load_and_says_why(lab, tmp_path):
    facts, started = _collect(lab, tmp_path)  # the driver is not loaded: nvidia-smi fails, lspci lists the GPUs
    assert started == [] and {g["source"] for g in facts["gpus"]} == {"lspci"}
    assert {g["load_unjudged"] for g in facts["gpus"]} == {"nvidia-smi cannot run: no reading under load"}
    assert _pcie1(facts) == []
