"""Unit tests for plugins/module_utils/parsers/pcie.py: ``lspci -D -vvv`` and ``nvidia-smi topo -m``, and the
PCIe paths read from them, on tests/unit/fixtures/pcie and nvidia_smi_topo (real captures and the lab's)."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.pcie import (
    bridges_above,
    gen_of,
    nearest_gpus,
    nearest_nics,
    parse_lspci,
    parse_nvidia_smi_topo,
    path_between,
    pci_address,
    upstream_port,
)


@pytest.fixture(scope="module")
def lab_tree():
    return parse_lspci(fixture("pcie", "lab_h100_2nic_acs_x8.txt"))["devices"]


def test_a_nic_behind_a_pcie_switch(lab_tree):
    nic = lab_tree["0000:41:00.0"]
    assert (nic["class"], nic["description"]) == ("Ethernet controller", "Mellanox Technologies MT2910 Family [ConnectX-7]")
    assert nic["lnkcap"] == {"speed_gts": 32.0, "gen": 5, "width": 16}
    assert nic["lnksta"] == {"speed_gts": 32.0, "gen": 5, "width": 16, "downgraded": False}
    switch_port = lab_tree["0000:3f:00.0"]
    assert switch_port["bus"] == {"primary": 0x3F, "secondary": 0x40, "subordinate": 0x42}
    assert switch_port["acs_ctl"]["ReqRedir"] is False and lab_tree["0000:3e:01.0"]["acs_ctl"]["ReqRedir"] is True


def test_the_path_between_a_nic_and_its_gpu(lab_tree):
    # 41:00.0 (NIC) and 42:00.0 (GPU) hang off two downstream ports of one switch (40:00.0, 40:01.0)
    assert upstream_port(lab_tree, "0000:41:00.0")["address"] == "0000:40:00.0"
    assert [d["address"] for d in bridges_above(lab_tree, "0000:41:00.0")] == ["0000:3e:01.0", "0000:3f:00.0", "0000:40:00.0"]
    assert [d["address"] for d in path_between(lab_tree, "0000:41:00.0", "0000:42:00.0")] == ["0000:40:00.0", "0000:40:01.0"]


@pytest.mark.parametrize(
    "text,address", [("41:00.0", "0000:41:00.0"), ("00000000:41:00.0", "0000:41:00.0"), ("0000:B3:00.1", "0000:b3:00.1"), ("41:00", None), (None, None)]
)
def test_pci_address(text, address):
    assert pci_address(text) == address


def test_gen_of():
    assert (gen_of(16.0), gen_of(64.0), gen_of(12.0), gen_of(None)) == (4, 6, None, None)


def test_lspci_without_access_is_an_error_naming_it():
    with pytest.raises(ParseError, match="^lspci: line 1: pcilib: Cannot open /proc/bus/pci$"):
        parse_lspci(fixture("pcie", "error_no_access.txt"))
    with pytest.raises(ParseError, match="lspci: output must be text, not NoneType"):
        parse_lspci(None)


def test_topo_matrix_of_four_gpus_and_four_nics():
    topo = parse_nvidia_smi_topo(fixture("nvidia_smi_topo", "real_rtx6000_4nic.txt"))
    assert topo["devices"] == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1", "NIC2", "NIC3"]
    assert topo["nic_names"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    assert topo["affinity"]["GPU2"] == {"cpu": "32-63", "numa": 1}
    assert topo["links"]["NIC0"]["NIC1"] == "PIX" and topo["other_columns"]["GPU0"] == ["N/A"]
    assert topo["warnings"] == []
    assert nearest_nics(topo)[2] == [("mlx5_2", "NODE"), ("mlx5_3", "NODE"), ("mlx5_0", "SYS"), ("mlx5_1", "SYS")]
    assert nearest_gpus(topo)["mlx5_0"] == [(0, "NODE"), (1, "NODE"), (2, "SYS"), (3, "SYS")]


def test_topo_without_the_driver_is_an_error():
    with pytest.raises(ParseError, match="^nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate"):
        parse_nvidia_smi_topo(fixture("nvidia_smi_topo", "error_no_driver.txt"))
