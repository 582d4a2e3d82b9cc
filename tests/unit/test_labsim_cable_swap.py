"""lab fault cable-swap: two cables of a switch exchanged in the fabric model, and put back."""

import json

import pytest

import labsim  # noqa: F401  (lab/sim on sys.path)
from linerate_lab import faults, model, topology


@pytest.fixture
def fabric(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    topo = topology.build(3, 2, "roce", 400)
    nodes = {n: {"nics": [dict(c, device=f"mlx5_{r}", netdev=f"enp{65 + r}s0f0np0") for r, c in enumerate(cab)]} for n, cab in topo["cabling"].items()}
    m = {"version": 1, "transport": "roce", "nodes": nodes, "switches": topo["switches"], "faults": []}
    (tmp_path / "fabric.json").write_text(json.dumps(m))
    return tmp_path


def test_swap_moves_both_cables_and_the_data_path_then_restore_puts_them_back(fabric):
    before = model.load()
    msg = faults.apply("cable-swap", ["leaf1", "swp1", "swp2"], lab=None)
    assert "swp1 -> node2:mlx5_0" in msg
    m = model.load()
    ports = m["switches"]["leaf1"]["ports"]
    assert (ports["swp1"]["peer"], ports["swp2"]["peer"]) == ("node2:mlx5_0", "node1:mlx5_0")
    assert model.nic(m, "mlx5_0", "node1")["switch_port"] == "swp2"  # rdma.py reads this port's state
    assert model.nic(m, "mlx5_0", "node2")["switch_port"] == "swp1"
    assert m["faults"] == [{"kind": "cable-swap", "args": ["leaf1", "swp1", "swp2"]}]
    with pytest.raises(faults.FaultError, match="in force"):
        faults.apply("cable-swap", ["leaf1", "swp2", "swp3"], lab=None)
    faults.apply("cable-swap-restore", ["leaf1", "swp2", "swp1"], lab=None)
    assert model.load() == before


def test_swap_of_an_uplink_moves_the_spine_end_too(fabric):
    faults.apply("cable-swap", ["leaf1", "swp4", "swp1"], lab=None)  # swp4: the first uplink
    m = model.load()
    assert m["switches"]["leaf1"]["ports"]["swp1"]["peer"] == "spine1:Ethernet1/1"
    assert m["switches"]["spine1"]["ports"]["Ethernet1/1"]["peer"] == "leaf1:swp1"
    assert model.nic(m, "mlx5_0", "node1")["switch_port"] == "swp4"


@pytest.mark.parametrize(
    "args,match",
    [
        (["leaf9", "swp1", "swp2"], "not a lab switch"),
        (["leaf1", "swp1", "swp99"], "has no port"),
        (["leaf1", "swp1", "swp1"], "two different ports"),
    ],
)
def test_bad_arguments_are_refused(fabric, args, match):
    with pytest.raises(faults.FaultError, match=match):
        faults.apply("cable-swap", args, lab=None)


def test_restore_without_a_swap_is_refused(fabric):
    with pytest.raises(faults.FaultError, match="no cable-swap"):
        faults.apply("cable-swap-restore", ["leaf1", "swp1", "swp2"], lab=None)
