"""The scheduler's topology from the cabling ibnetdiscover observed (issue 37: "rendered from the cabling the
verification observed (LLDP, ibnetdiscover)"): module_utils/checks/sched_topology.py ib_observed_map, the
subnet check's ``observed`` (module ib_fabric_check) and filter sched_topology's InfiniBand input.

Fixtures (tests/unit/fixtures/ibnetdiscover/SOURCES.md): real_x5_voltaire_qdr_2020.txt, the published
ibnetdiscover of the PSMN X5 cluster (a two-level fat tree: Voltaire 4036 and Infiniscale-IV leaves, four
spines, 89 ConnectX CAs whose NodeDescription names no host, so the inventory knows them by port GUID);
lab-ib.txt and lab-ib-missing-swapped.txt, the real ibnetdiscover's captures of the lab's ibsim subnet."""

import re

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.filter.sched_topology import sched_topology
from ansible_collections.linerate.fabric.plugins.module_utils.checks import ib as ibcheck
from ansible_collections.linerate.fabric.plugins.module_utils.checks import sched_topology as topo
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import ibdiag
from parser_fixtures import fixture
from checks.test_ib import _intent

LAB_LINKS, LAB_UPLINKS, LAB_SWITCHES = _intent()
# the X5 fabric's switches as an inventory would name them: leaves by the GUID tail, spines likewise
X5_LEAVES = {
    "0x0008f10500200b50": 21,
    "0x0002c90200417670": 24,
    "0x0008f105002036b4": 24,
    "0x0008f1050020369c": 5,
    "0x0002c902004827b0": 9,
    "0x0008f10500108bba": 6,
}
X5_SPINES = ("0x0008f10500108098", "0x0008f10500108c5c", "0x0008f10500108530", "0x0008f1050010851e")


def rules(text):
    return [ln for ln in text.splitlines() if not ln.startswith("#")]


def x5():
    """The X5 discovery and an inventory that claims what is cabled: each CA a host cn01..cn89 (in port-GUID
    order) by its port GUID, each switch by its GUID."""
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "real_x5_voltaire_qdr_2020.txt"))
    switches = {("leaf-" if g in X5_LEAVES else "spine-" if g in X5_SPINES else "edge-") + g[-4:]: g for g, n in nd["nodes"].items() if n["type"] == "switch"}
    name = {g: s for s, g in switches.items()}
    cas = sorted((p["port_guid"], p) for n in nd["nodes"].values() if n["type"] == "ca" for p in n["ports"].values())
    links = [
        {"host": f"cn{k:02d}", "device": "mlx4_0", "switch": name[p["peer_guid"]], "switch_port": p["peer_port"], "guid": pg}
        for k, (pg, p) in enumerate(cas, 1)
    ]
    return nd, links, switches


def test_a_real_fat_tree_discovered_by_ibnetdiscover_renders_its_leaves_under_one_top():
    nd, links, switches = x5()
    observed = topo.ib_observed_map(nd, links, switches)
    assert sorted(observed["hosts"]) == [f"cn{k:02d}" for k in range(1, 90)] and observed["warnings"] == []
    # every host on the leaf its CA's own port line names, nothing taken from the inventory's claim
    assert all(observed["hosts"][e["host"]] == [{"device": "mlx4_0", "switch": e["switch"], "switch_port": str(e["switch_port"])}] for e in links)
    out = topo.render(observed, [], sorted(observed["hosts"]), {"method": "ibnetdiscover"})
    conf = out["files"]["slurm/topology.conf"]
    assert conf.startswith("# Rendered by linerate from the cabling verification observed (ibnetdiscover)")
    lines = rules(conf)
    leaves = {m.group(1): m.group(2) for m in (re.match(r"SwitchName=(leaf-\w+) Nodes=(\S+)$", ln) for ln in lines) if m}
    # the leaves and their node counts as the fixture cables them
    counts = {s: sum(1 for e in links if e["switch"] == s) for s in leaves}
    assert {s[-4:]: c for s, c in counts.items()} == {g[-4:]: c for g, c in X5_LEAVES.items()}
    # leaf-0b50 reaches two of the four spines, the others all four: one top joins them (Slurm needs a
    # switch above both to place a job across them)
    spines = "_".join(sorted("spine-" + g[-4:] for g in X5_SPINES))
    assert lines[-1] == f"SwitchName={spines} Switches=" + ",".join(sorted(leaves))
    assert len(lines) == len(X5_LEAVES) + 1
    # the CAs of leaf 0x0008f1050020369c: its five host ports in the fixture
    assert topo.hostlist([e["host"] for e in links if e["switch"] == "leaf-369c"]) == leaves["leaf-369c"]


def test_the_lab_subnet_renders_each_leaf_under_the_spine():
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    findings = ibcheck.check_topology(nd, None, LAB_LINKS, LAB_UPLINKS, LAB_SWITCHES)
    assert findings == []
    files = sched_topology({"hosts": hosts(), "ib_fabric": {"findings": findings, "observed": topo.ib_observed_map(nd, LAB_LINKS, LAB_SWITCHES)}})
    assert rules(files["slurm/topology.conf"]) == [
        "SwitchName=leaf1 Nodes=node[1-2]",
        "SwitchName=leaf2 Nodes=node[3-4]",
        "SwitchName=spine1 Switches=leaf1,leaf2",
    ]
    assert "#   node3: mlx5_0 -> leaf2 1" in files["slurm/topology.conf"]
    assert rules(files["slurm/topology-block.conf"]) == ["BlockName=leaf1 Nodes=node[1-2]", "BlockName=leaf2 Nodes=node[3-4]", "BlockSizes=2"]
    assert (
        "kubectl label node node4 --overwrite linerate.fabric/fabric=linerate linerate.fabric/topology-block=leaf2 "
        "linerate.fabric/topology-spine=spine1" in files["kueue/node-labels.sh"]
    )


def hosts():
    return {e["host"]: [{"device": e["device"], "switch": e["switch"], "switch_port": e["switch_port"], "guid": e["guid"]}] for e in LAB_LINKS}


def crossed(text):
    """The lab's capture with node2's and node3's cables exchanged between leaf1 port 2 and leaf2 port 1."""
    node2, node3 = "a088c20300000200", "a088c20300000300"
    text = text.replace(f'[2]\t"H-{node2}"[1](a088c20300000201)', "@LEAF1@")
    text = text.replace(f'[1]\t"H-{node3}"[1](a088c20300000301)', f'[1]\t"H-{node2}"[1](a088c20300000201)')
    text = text.replace("@LEAF1@", f'[2]\t"H-{node3}"[1](a088c20300000301)')
    return (
        text.replace('# "node2 mlx5_0" lid 3', '# "@2" lid 3')
        .replace('# "node3 mlx5_0" lid 4', '# "node2 mlx5_0" lid 4')
        .replace('# "@2" lid 3', '# "node3 mlx5_0" lid 3')
        .replace('[1](a088c20300000201) \t"S-e41d2d0300a00001"[2]', '[1](a088c20300000201) \t"S-e41d2d0300a00002"[1]')
        .replace('[1](a088c20300000301) \t"S-e41d2d0300a00002"[1]', '[1](a088c20300000301) \t"S-e41d2d0300a00001"[2]')
    )


def ib_inputs(text):
    nd = ibdiag.parse_ibnetdiscover(text)
    return {
        "hosts": hosts(),
        "ib_fabric": {
            "findings": ibcheck.check_topology(nd, None, LAB_LINKS, LAB_UPLINKS, LAB_SWITCHES),
            "observed": topo.ib_observed_map(nd, LAB_LINKS, LAB_SWITCHES),
        },
    }


def test_cables_crossed_between_leaves_are_refused_then_rendered_as_observed():
    text = crossed(fixture("ibnetdiscover", "lab-ib.txt"))
    inputs = ib_inputs(text)
    codes = sorted((f["code"], f["node"], f["port"]) for f in inputs["ib_fabric"]["findings"])
    # one finding for the crossed pair (check_topology explains the other end with it)
    assert codes == [("IB_LINK_MISWIRED", "leaf1", 2)]
    with pytest.raises(AnsibleFilterError) as e:
        sched_topology(inputs)
    msg = str(e.value)
    assert "IB_LINK_MISWIRED: node2 mlx5_0 should be on leaf1 port 2 but is on leaf2 port 1" in msg
    assert "accept what ibnetdiscover sees: accept_observed" in msg
    files = sched_topology(inputs, {"accept_observed": True})
    # the groups follow the cables as discovered, not the inventory (node2 on leaf1, node3 on leaf2)
    assert rules(files["slurm/topology.conf"]) == [
        "SwitchName=leaf1 Nodes=node[1,3]",
        "SwitchName=leaf2 Nodes=node[2,4]",
        "SwitchName=spine1 Switches=leaf1,leaf2",
    ]
    assert "# accepted as observed: IB_LINK_MISWIRED: node2 mlx5_0 should be on leaf1 port 2" in files["slurm/topology.conf"]
    assert "#   node2: mlx5_0 -> leaf2 1" in files["slurm/topology.conf"]


def test_a_missing_cable_is_refused_even_when_observed_is_accepted():
    inputs = ib_inputs(fixture("ibnetdiscover", "lab-ib-missing-swapped.txt"))
    assert {f["code"] for f in inputs["ib_fabric"]["findings"]} == {"IB_LINK_MISSING", "IB_PORTS_SWAPPED"}
    with pytest.raises(AnsibleFilterError) as e:
        sched_topology(inputs, {"accept_observed": True})
    assert "IB_LINK_MISSING: leaf1 port 2: link to node2 mlx5_0 is missing" in str(e.value)
    assert "IB_PORTS_SWAPPED" not in str(e.value)  # accepted; the missing link alone stops it


def test_a_degraded_link_does_not_stop_the_render_but_a_discovery_warning_does():
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    degraded = [{"code": "IB_LINK_DEGRADED", "node": "leaf1", "port": 1, "message": "leaf1 port 1 -> node1 mlx5_0: 1X"}]
    observed = topo.ib_observed_map(nd, LAB_LINKS, LAB_SWITCHES)
    files = sched_topology({"hosts": hosts(), "ib_fabric": {"findings": degraded, "observed": observed}})
    assert "SwitchName=leaf1 Nodes=node[1-2]" in rules(files["slurm/topology.conf"])
    warned = dict(observed, warnings=["ibnetdiscover reported a failed query (Connection timed out)"])
    with pytest.raises(
        AnsibleFilterError,
        match=r"discovery \(ibnetdiscover\) warned: ibnetdiscover reported a "
        r"failed query \(Connection timed out\)",
    ):
        sched_topology({"hosts": hosts(), "ib_fabric": {"findings": [], "observed": warned}})


def test_a_subnet_check_that_did_not_discover_is_refused():
    for check, why in (
        ({"failed": True, "msg": "cannot discover the subnet: ibnetdiscover: exit 1"}, "cannot discover the subnet: ibnetdiscover: exit 1"),
        ({}, "no topology check result"),
    ):
        with pytest.raises(AnsibleFilterError) as e:
            sched_topology({"hosts": hosts(), "ib_fabric": check})
        assert f"the InfiniBand subnet was not discovered (ibnetdiscover, the subnet check on the master SM host): {why}" in str(e.value)


def test_a_ca_is_named_by_its_description_where_the_inventory_has_no_guid():
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    no_guid = [dict(e, guid=None) for e in LAB_LINKS]
    observed = topo.ib_observed_map(nd, no_guid, LAB_SWITCHES)
    assert observed["hosts"]["node2"] == [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "2"}]
    # a CA whose description names no inventory host is left out (the check names it IB_UNEXPECTED_DEVICE)
    assert sorted(topo.ib_observed_map(nd, no_guid[:2], LAB_SWITCHES)["hosts"]) == ["node1", "node2"]
    assert {(lk["switch"], lk["peer"]) for lk in observed["links"]} == {("leaf1", "spine1"), ("leaf2", "spine1"), ("spine1", "leaf1"), ("spine1", "leaf2")}


def test_the_subnet_check_returns_what_ibnetdiscover_observed(capsys):
    from probes.test_ib_fabric import Diag, run

    res, _calls = run(capsys, Diag(topology="lab-ib-missing-swapped.txt"), checks=["topology"], fail_on_findings=False)
    assert res["observed"]["hosts"] == {
        "node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "1"}],
        "node3": [{"device": "mlx5_0", "switch": "leaf2", "switch_port": "2"}],
        "node4": [{"device": "mlx5_0", "switch": "leaf2", "switch_port": "1"}],
    }
    assert res["observed"]["read"] == ["leaf1", "leaf2", "spine1"]
