"""The ports check's judge (module_utils/checks/ports.py): what rdma_port_check read against the intent, and
the report's check from every node's result (the probe itself: probes/test_ports.py)."""

from ansible_collections.linerate.fabric.plugins.module_utils.checks import ports as checks_ports
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published

from checks.test_plans import FABRIC, INTENT
from checks.test_rdma import NODES, PORTS


def test_healthy_ports_have_no_findings():
    assert checks_ports.port_findings("node1", [good_port("mlx5_0"), good_port("mlx5_1")], PORTS["node1"], FABRIC) == []


def test_port_findings_name_node_device_and_switch_port():
    ports = [good_port("mlx5_0", state="DOWN", phys_state="Disabled"), good_port("mlx5_1", speed_gbps=200.0, width=2)]
    found = checks_ports.port_findings("node1", ports, PORTS["node1"], FABRIC)
    assert [(f["code"], f["device"], f["switch"], f["switch_port"]) for f in found] == [
        ("PORT_DOWN", "mlx5_0", "leaf1", "swp1"),
        ("PORT_SPEED", "mlx5_1", "leaf2", "swp1"),
        ("PORT_WIDTH", "mlx5_1", "leaf2", "swp1"),
    ]
    assert found[0]["layer"] == "link"


def test_missing_device_mtu_and_gid():
    ports = [{"device": "mlx5_0", "present": False, "error": "IB device 'mlx5_0' wasn't found"}, good_port("mlx5_1", mtu=1500, gid=None, ipv4=[])]
    found = {f["code"]: f for f in checks_ports.port_findings("node1", ports, PORTS["node1"], FABRIC)}
    assert set(found) == {"PORT_MISSING", "MTU_MISMATCH", "GID_MISSING"}
    assert found["MTU_MISMATCH"]["layer"] == "mtu" and found["MTU_MISMATCH"]["actual"] == 1500
    assert found["GID_MISSING"]["layer"] == "gid" and "192.168.101.11" in found["GID_MISSING"]["message"]


def test_infiniband_ports_skip_roce_checks():
    ib = published(dict(INTENT, transport="infiniband"))
    ports = [good_port("mlx5_0", mtu=2044, gid=None, ipv4=[]), good_port("mlx5_1", mtu=2044, gid=None, ipv4=[])]
    assert checks_ports.port_findings("node1", ports, PORTS["node1"], ib) == []


def test_port_check_takes_the_nodes_findings_as_they_are():
    node1 = checks_ports.port_findings("node1", [good_port("mlx5_0"), good_port("mlx5_1", state="DOWN")], PORTS["node1"], FABRIC)
    results = {"node1": {"ports": [], "findings": node1}, "node2": {"skipped": True}, "node3": {"ports": [], "findings": []}}
    found, check = checks_ports.port_check(results, PORTS)
    assert found == node1 and [f["code"] for f in found] == ["PORT_DOWN"]
    assert [c["name"] for c in check["cases"]] == ["node1 mlx5_0", "node1 mlx5_1", "node3 mlx5_0", "node3 mlx5_1"]
    down = check["cases"][1]
    assert down == {"name": "node1 mlx5_1", "ok": False, "code": "PORT_DOWN", "message": node1[0]["message"], "findings": node1}
    assert check["cases"][0] == {"name": "node1 mlx5_0", "ok": True, "code": None, "message": None, "findings": []}
    assert check["passed"] is False and check["detail"] == "3/4 ports OK"


def test_port_check_without_results_has_no_check_and_a_result_without_findings_is_unreadable():
    assert checks_ports.port_check({"node1": None, "node2": {"skipped": True}}, PORTS) == ([], None)
    assert checks_ports.port_check({"node1": {"findings": []}}, PORTS)[1]["passed"] is True
    try:
        checks_ports.port_check({"node2": {"failed": True, "msg": "ibv_devinfo: command not found"}}, PORTS)
    except KeyError as e:
        assert "node2: the rdma_port_check result has no findings (ibv_devinfo: command not found)" in str(e)
    else:
        raise AssertionError("a port result without findings must not pass silently")


def good_port(dev, node="node1", **kw):
    i = NODES.index(node) + 1
    r = int(dev[-1])
    p = {
        "device": dev,
        "netdev": f"enp{65 + 16 * r}s0f0np0",
        "present": True,
        "state": "ACTIVE",
        "phys_state": "LinkUp",
        "speed_gbps": 400.0,
        "width": 4,
        "mtu": 4200,
        "ipv4": [f"192.168.{100 + r}.{10 + i}"],
        "gid_table": True,
        "gid": {"index": 3, "type": "RoCE v2", "ipv4": f"192.168.{100 + r}.{10 + i}"},
    }
    p.update(kw)
    return p
