"""The InfiniBand lab is built to inventory/lab-ib: hosts, HCA GUIDs and
cabling as the inventory says, so the nodes' ibstat and ibsim's subnet agree."""

import os
import sys

import pytest

from labsim import ROOT

sys.path.insert(0, os.path.join(ROOT, "lab"))
import labctl  # noqa: E402
import labinventory  # noqa: E402

INVENTORY = os.path.join(ROOT, "inventory", "lab-ib")


@pytest.fixture(scope="module")
def built():
    if not os.path.exists(os.path.join(os.path.dirname(sys.executable), "ansible-inventory")):
        pytest.fail("ansible-inventory is needed (make venv)")
    return labctl.ib_model_from_inventory(INVENTORY)


def test_nodes_carry_the_inventory_guids_and_cabling(built):
    m, ib = built
    assert m["transport"] == "infiniband" and sorted(m["nodes"]) == ["node1", "node2", "node3", "node4"]
    nic = m["nodes"]["node3"]["nics"][0]
    assert (nic["device"], nic["netdev"], nic["port_guid"], nic["node_guid"]) == ("mlx5_0", "ibp65s0", "0xa088c20300000301", "0xa088c20300000300")
    assert (nic["switch"], str(nic["switch_port"]), nic["link_layer"]) == ("leaf2", "1", "InfiniBand")
    assert nic["firmware"]["current"]["LINK_TYPE_P1"] == "IB(1)"
    assert (nic["speed_gbps"], nic["width"]) == (40, 4)
    assert [m["nodes"][n]["mgmt_ip"] for n in ("node1", "node4")] == [labctl.node_ip(1), labctl.node_ip(4)]
    # the subnet ibsim simulates has the same GUIDs
    assert ib["nodes"]["node3"]["nics"][0]["port_guid"] == nic["port_guid"]


def test_switches_are_unmanaged_ib_switches(built):
    m, _ = built
    assert sorted(m["switches"]) == ["leaf1", "leaf2", "spine1"]
    assert {s["platform"] for s in m["switches"].values()} == {"infiniband"}
    assert m["switches"]["leaf1"]["guid"] == "0xe41d2d0300a00001"
    assert m["switches"]["spine1"]["role"] == "spine"


def test_connection_file_is_generated_beside_the_static_inventory(built, tmp_path, monkeypatch):
    m, _ = built
    monkeypatch.setattr(labinventory, "STATE", str(tmp_path / "state"))
    path = labinventory.write_ib_connection(m, str(tmp_path))
    text = open(path).read()
    assert text.startswith("---\n" + labinventory.GENERATED)
    assert f"lab_ibsim_address: {labctl.ibsim_address()}" in text
    assert f"node2: {{ansible_host: {labctl.node_ip(2)}}}" in text
    assert "StrictHostKeyChecking=yes" in text
    assert os.path.join(str(tmp_path / "state"), "ssh", "id_ed25519") in text
