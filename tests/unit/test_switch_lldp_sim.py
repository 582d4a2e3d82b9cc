"""LLDP through the switch simulators: each platform prints the model's cabling in its real
format, the drivers read it back through module_utils/parsers/lldp.py, and the cabling check agrees."""

import pytest

from switch_testlib import sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling

PORTS = {"nvue": ["swp1", "swp2", "swp3"], "sonic": ["Ethernet0", "Ethernet8", "Ethernet16"], "eos": ["Ethernet1/1", "Ethernet2/1", "Ethernet3/1"]}


def cable(ports):
    """node1 and node2 on the first two ports (their mlx5_0), a spine uplink on the third."""
    from simcore import model

    with model.locked() as m:
        for i in (1, 2):
            m["nodes"][f"node{i}"] = {"nics": [{"device": "mlx5_0", "netdev": "enp65s0f0np0", "mac": f"0c:42:a1:0{i}:00:00", "cable": "up"}]}
        m["switches"]["spine1"] = {"platform": "eos", "ports": {"Ethernet9/1": {"peer": f"sw:{ports[2]}"}}}
        sw = m["switches"]["sw"]["ports"]
        sw[ports[0]]["peer"], sw[ports[1]]["peer"] = "node1:mlx5_0", "node2:mlx5_0"
        sw[ports[2]]["peer"] = "spine1:Ethernet9/1"


def swap(a, b):
    from simcore import model

    with model.locked() as m:
        p = m["switches"]["sw"]["ports"]
        p[a]["peer"], p[b]["peer"] = p[b]["peer"], p[a]["peer"]


def inventory(ports):
    hosts = {f"node{i}": [{"device": "mlx5_0", "netdev": "enp65s0f0np0", "switch": "sw", "switch_port": ports[i - 1]}] for i in (1, 2)}
    uplinks = {"sw": [{"port": ports[2], "peer": "spine1", "peer_port": "Ethernet9/1"}]}
    macs = {f"node{i}": {"macs": {"enp65s0f0np0": f"0c:42:a1:0{i}:00:00"}, "names": [f"node{i}"]} for i in (1, 2)}
    return hosts, uplinks, macs


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_neighbours_in_the_real_format_follow_the_cables(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    ports = PORTS[platform]
    d, sim = sim_driver(tmp_path, platform, ports)
    cable(ports)
    t = d.lldp_neighbors()
    assert sim.sent == [d.lldp_command]  # one read, nothing else
    n1 = t["neighbors"][ports[0]][0]
    assert (n1["system_name"], n1["port_id"], n1["port_id_type"]) == ("node1", "0c:42:a1:01:00:00", "mac")
    assert t["neighbors"][ports[2]][0]["system_name"] == "spine1"
    assert t["neighbors"][ports[2]][0]["port_id"] == "Ethernet9/1"
    hosts, uplinks, reads = inventory(ports)
    result = {"neighbors": t["neighbors"]}
    findings, _ = cabling.check_cabling(
        hosts, uplinks, {"sw": result, "spine1": {"neighbors": {"Ethernet9/1": [{"system_name": "sw", "port_id": ports[2]}]}}}, reads, host_lldp=False
    )
    assert findings == []

    swap(ports[0], ports[1])
    t = d.lldp_neighbors()
    assert t["neighbors"][ports[0]][0]["system_name"] == "node2"
    findings, _ = cabling.check_cabling(
        hosts,
        uplinks,
        {"sw": {"neighbors": t["neighbors"]}, "spine1": {"neighbors": {"Ethernet9/1": [{"system_name": "sw", "port_id": ports[2]}]}}},
        reads,
        host_lldp=False,
    )
    assert [(f["code"], f["node"], f["switch_port"], f["peer_node"], f["other_switch_port"]) for f in findings] == [
        ("CABLE_SWAPPED", "node1", ports[0], "node2", ports[1])
    ]


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
def test_pulled_cable_or_link_down_shows_no_neighbour(tmp_path, monkeypatch, platform):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    ports = PORTS[platform]
    d, sim = sim_driver(tmp_path, platform, ports)
    cable(ports)
    from simcore import model

    with model.locked() as m:
        m["nodes"]["node2"]["nics"][0]["cable"] = "down"
    sim.sw.link_down.add(ports[2])
    t = d.lldp_neighbors()
    assert set(t["neighbors"]) == {ports[0]}
