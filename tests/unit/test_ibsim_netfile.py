"""The lab's ibsim net file generator and fault bookkeeping (no ibsim run)."""

import json
import os

import ibsimlab
from conftest import ROOT


def _inventory():
    return ibsimlab.model_from_inventory(ibsimlab.load_inventory(os.path.join(ROOT, "inventory", "lab-ib")))


def test_model_from_inventory():
    m = _inventory()
    assert m["transport"] == "infiniband"
    n1 = m["nodes"]["node1"]["nics"][0]
    assert (n1["node_guid"], n1["port_guid"], n1["switch"], n1["switch_port"]) == ("0xa088c20300000100", "0xa088c20300000101", "leaf1", "1")
    assert m["switches"]["spine1"]["ports"]["1"]["peer"] == "leaf1:7"
    assert m["switches"]["leaf1"]["ports"]["7"]["peer"] == "spine1:1"


def test_netfile_links_both_ends():
    text = ibsimlab.netfile_from_model(_inventory())
    assert 'switchguid=0xe41d2d0300a00001\nSwitch\t36 "leaf1"\n[1]\t"node1 mlx5_0"[1]\tw=2 s=4' in text
    assert '[7]\t"spine1"[1]\tw=2 s=4' in text
    assert '[1]\t"leaf1"[7]\tw=2 s=4' in text
    assert 'caguid=0xa088c20300000300\nCa\t1 "node3 mlx5_0"\n[1]\t"leaf2"[1]\tw=2 s=4' in text


def test_faults_change_the_physics():
    m = _inventory()
    faults = [
        {"kind": "unlink", "switch": "leaf1", "port": 2},
        {"kind": "swap", "switch": "leaf2", "ports": [1, 2]},
        {"kind": "degrade", "switch": "leaf1", "port": 7, "width": 1, "speed": "SDR"},
        {"kind": "degrade", "switch": "leaf2", "port": 2, "width": None, "speed": "DDR"},
    ]
    text = ibsimlab.netfile_from_model(ibsimlab.apply_faults(m, faults))
    assert '"node2 mlx5_0"[1]' not in text  # cable down
    assert 'Ca\t1 "node2 mlx5_0"\n\n' in text  # still a node, port unconnected
    assert '[1]\t"node4 mlx5_0"[1]\tw=2 s=4' in text  # swapped
    assert '[2]\t"node3 mlx5_0"[1]\tw=2 s=2' in text  # port 2 (node3 now) at DDR
    assert '[7]\t"spine1"[1]\tw=1 s=1' in text and '[1]\t"leaf1"[7]\tw=1 s=1' in text
    assert json.dumps(m).count('"cable": "down"') == 0  # the model itself is untouched


def test_speed_names():
    assert ibsimlab.speed_name(40, 4) == "QDR"
    assert ibsimlab.speed_name(400, 4) == "QDR"  # ibsim tops out at QDR
    assert ibsimlab.speed_name(20, 4) == "DDR"
    assert ibsimlab.speed_name(10, 4) == "SDR"
