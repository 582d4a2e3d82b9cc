"""The topology / SM / partition comparison, on real captures of the lab fabric."""

import os

import yaml

from conftest import ROOT, fixture
from ansible_collections.linerate.fabric.plugins.module_utils.checks import ib as ibcheck
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import ibdiag


def _intent():
    with open(os.path.join(ROOT, "inventory", "lab-ib", "hosts.yml")) as f:
        inv = yaml.safe_load(f)["all"]["children"]
    links, uplinks, switches = [], [], {}
    for host, hv in inv["gpu_nodes"]["hosts"].items():
        for p in hv["rdma_ports"]:
            links.append(dict(host=host, device=p["device"], switch=p["switch"], switch_port=p["switch_port"], guid=p["guid"]))
    for sw, hv in inv["ib_switches"]["hosts"].items():
        switches[sw] = hv["ib_switch_guid"]
        for u in hv.get("switch_uplinks", []):
            uplinks.append(dict(switch=sw, port=u["port"], peer=u["peer"], peer_port=u["peer_port"]))
    return links, uplinks, switches


def _check(name, **kw):
    links, uplinks, switches = _intent()
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", name))
    li = ibdiag.parse_iblinkinfo(fixture("iblinkinfo", name))
    args = dict(link_width=4, link_speed_gbps=40)
    args.update(kw)
    return ibcheck.check_topology(nd, li, links, uplinks, switches, **args)


def test_clean_fabric_has_no_findings():
    assert _check("lab-ib.txt") == []


def test_switches_matched_by_description_without_guids():
    links, uplinks, switches = _intent()
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    assert ibcheck.check_topology(nd, None, links, uplinks, dict.fromkeys(switches), 4, 40) == []


def test_missing_and_swapped_links_name_node_and_port():
    f = _check("lab-ib-missing-swapped.txt")
    codes = [(x["code"], x["node"], x["port"]) for x in f]
    assert codes == [("IB_LINK_MISSING", "leaf1", 2), ("IB_PORTS_SWAPPED", "leaf2", 1)]
    assert f[0]["peer"] == "node2 mlx5_0"
    assert f[1]["ports"] == [1, 2]


def test_degraded_links():
    f = _check("lab-ib-degraded.txt")
    got = sorted((x["code"], x["node"], x["port"], x["width"], x["speed_gbps"]) for x in f)
    assert got == [("IB_LINK_DEGRADED", "leaf1", 7, 1, 2.5), ("IB_LINK_DEGRADED", "leaf2", 2, 4, 20.0)]


def test_line_rate_above_fabric_is_degraded_everywhere():
    f = _check("lab-ib.txt", link_speed_gbps=400)
    assert {x["code"] for x in f} == {"IB_LINK_DEGRADED"} and len(f) == 6


def test_unexpected_device_and_link():
    links, uplinks, switches = _intent()
    links = [x for x in links if x["host"] != "node4"]  # node4 not in inventory
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    f = ibcheck.check_topology(nd, None, links, uplinks, switches, 4, 40)
    assert [(x["code"], x["node"], x["port"], x.get("switch")) for x in f] == [("IB_UNEXPECTED_DEVICE", "node4 mlx5_0", 2, "leaf2")]
    uplinks = [u for u in uplinks if u["switch"] != "leaf2"]  # leaf2-spine1 not intended
    links, _, _ = _intent()
    f = ibcheck.check_topology(nd, None, links, uplinks, switches, 4, 40)
    assert [(x["code"], x["node"], x["port"]) for x in f] == [("IB_UNEXPECTED_LINK", "leaf2", 7)]


def test_miswired_to_other_switch():
    links, uplinks, switches = _intent()
    for x in links:
        if x["host"] == "node1":
            x["switch"], x["switch_port"] = "leaf2", 5
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    f = ibcheck.check_topology(nd, None, links, uplinks, switches, 4, 40)
    assert [(x["code"], x["node"], x["port"]) for x in f] == [("IB_LINK_MISWIRED", "leaf2", 5)]
    assert (f[0]["found_node"], f[0]["found_port"]) == ("leaf1", 1)


def test_sm_checks():
    master = ibdiag.parse_sminfo(fixture("sminfo", "master.txt"))
    standby = ibdiag.parse_sminfo(fixture("sminfo", "standby.txt"))
    assert ibcheck.check_sm(master, "0xa088c20300000101", 15, "node1") == []
    assert [x["code"] for x in ibcheck.check_sm(master, "0xa088c20300000101", 14)] == ["IB_SM_PRIORITY_MISMATCH"]
    assert [x["code"] for x in ibcheck.check_sm(master, "0xa088c20300000201", 15)] == ["IB_SM_NOT_MASTER"]
    assert [x["code"] for x in ibcheck.check_sm(standby, None, 14)] == ["IB_SM_NOT_MASTER"]
    assert [x["code"] for x in ibcheck.check_sm(None, None, 15, "node1")] == ["IB_SM_NOT_MASTER"]


def test_partitions():
    table = ibdiag.parse_smpquery_pkeys(fixture("smpquery", "pkeys-node3.txt"))["pkeys"]
    g = "0xa088c20300000301"
    parts = [
        {"name": "storage", "pkey": "0x0010", "membership": "full", "guids": [g]},
        {"name": "tenant_a", "pkey": "0x0020", "membership": "limited", "guids": [g]},
    ]
    assert ibcheck.check_partitions(parts, {g: table}) == []
    parts[1]["membership"] = "full"
    f = ibcheck.check_partitions(parts, {g: table}, {g: "node3 mlx5_0"})
    assert [(x["code"], x["node"], x["partition"]) for x in f] == [("IB_PARTITION_NOT_IN_FORCE", "node3 mlx5_0", "tenant_a")]
    assert "limited membership" in f[0]["message"]
    node1 = ibdiag.parse_smpquery_pkeys(fixture("smpquery", "pkeys-node1.txt"))["pkeys"]
    f = ibcheck.check_partitions(parts, {g: node1})
    assert {x["partition"] for x in f} == {"tenant_a"}
