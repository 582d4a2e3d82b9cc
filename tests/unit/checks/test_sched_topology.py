"""The scheduler's topology from the cabling LLDP observed (module_utils/checks/sched_topology.py, filter
sched_topology): Slurm topology.conf (tree, block), topology.yaml, Kueue Topology + ResourceFlavor + node
labels, validated against Kueue v0.19.2's CRDs; refused while a cabling finding is open."""

import copy
import gzip
import os
import subprocess

import jsonschema
import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.filter.sched_topology import sched_topology
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import sched_topology as topo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NODES = [f"node{i}" for i in range(1, 5)]


def nb(name, port):
    return {"system_name": name, "port_id": port, "port_id_type": None, "port_descr": None, "chassis_id": None}


def rail_optimised():
    """The lab's shape: rail r of every node on leaf r+1, each leaf two uplinks to spine1."""
    hosts = {
        n: [
            {"device": "mlx5_0", "netdev": "eth1", "switch": "leaf1", "switch_port": f"swp{i}"},
            {"device": "mlx5_1", "netdev": "eth2", "switch": "leaf2", "switch_port": f"Ethernet{(i - 1) * 8}"},
        ]
        for i, n in enumerate(NODES, 1)
    }
    uplinks = {
        "leaf1": [{"port": "swp5", "peer": "spine1", "peer_port": "Ethernet1/1"}],
        "leaf2": [{"port": "Ethernet32", "peer": "spine1", "peer_port": "Ethernet2/1"}],
    }
    reads = {
        "leaf1": {"neighbors": {f"swp{i}": [nb(n, "eth1")] for i, n in enumerate(NODES, 1)}},
        "leaf2": {"neighbors": {f"Ethernet{(i - 1) * 8}": [nb(n, "eth2")] for i, n in enumerate(NODES, 1)}},
        "spine1": {"neighbors": {"Ethernet1/1": [nb("leaf1", "swp5")], "Ethernet2/1": [nb("leaf2", "Ethernet32")]}},
    }
    reads["leaf1"]["neighbors"]["swp5"] = [nb("spine1", "Ethernet1/1")]
    reads["leaf2"]["neighbors"]["Ethernet32"] = [nb("spine1", "Ethernet2/1")]
    host_reads = {n: {"macs": {}, "names": [n], "lldpctl": None, "host_lldp": False} for n in NODES}
    return {"hosts": hosts, "uplinks": uplinks, "switch_reads": reads, "host_reads": host_reads}


def top_of_rack():
    """Two racks: node1-2 on tor1, node3-4 on tor2, both tors under spine1 and spine2."""
    hosts = {n: [{"device": "mlx5_0", "netdev": "eth1", "switch": "tor1" if i <= 2 else "tor2", "switch_port": f"swp{i}"}] for i, n in enumerate(NODES, 1)}
    uplinks = {
        t: [{"port": "swp51", "peer": "spine1", "peer_port": f"swp{k}"}, {"port": "swp52", "peer": "spine2", "peer_port": f"swp{k}"}]
        for k, t in enumerate(("tor1", "tor2"), 1)
    }
    reads = {
        "tor1": {"neighbors": {"swp1": [nb("node1", "eth1")], "swp2": [nb("node2", "eth1")]}},
        "tor2": {"neighbors": {"swp3": [nb("node3", "eth1")], "swp4": [nb("node4", "eth1")]}},
        "spine1": {"neighbors": {}},
        "spine2": {"neighbors": {}},
    }
    for k, t in enumerate(("tor1", "tor2"), 1):
        reads[t]["neighbors"].update({"swp51": [nb("spine1", f"swp{k}")], "swp52": [nb("spine2", f"swp{k}")]})
        reads["spine1"]["neighbors"][f"swp{k}"] = [nb(t, "swp51")]
        reads["spine2"]["neighbors"][f"swp{k}"] = [nb(t, "swp52")]
    host_reads = {n: {"macs": {}, "names": [n], "lldpctl": None, "host_lldp": False} for n in NODES}
    return {"hosts": hosts, "uplinks": uplinks, "switch_reads": reads, "host_reads": host_reads}


def test_hostlist_is_slurms_range_form():
    assert topo.hostlist(["node3", "node1", "node2", "node7", "node10"]) == "node[1-3,7,10]"
    assert topo.hostlist(["gpu01", "gpu02", "gpu04"]) == "gpu[01-02,04]"
    assert topo.hostlist(["login", "node5"]) == "login,node5"
    assert topo.hostlist(["node5"]) == "node5"


def test_a_top_of_rack_fabric_is_one_switch_per_rack_under_its_spines():
    files = sched_topology(top_of_rack())
    conf = [ln for ln in files["slurm/topology.conf"].splitlines() if not ln.startswith("#")]
    assert conf == ["SwitchName=tor1 Nodes=node[1-2]", "SwitchName=tor2 Nodes=node[3-4]", "SwitchName=spine1_spine2 Switches=tor1,tor2"]
    block = [ln for ln in files["slurm/topology-block.conf"].splitlines() if not ln.startswith("#")]
    assert block == ["BlockName=tor1 Nodes=node[1-2]", "BlockName=tor2 Nodes=node[3-4]", "BlockSizes=2"]
    docs = yaml.safe_load(files["slurm/topology.yaml"])
    assert docs[0] == {
        "topology": "linerate-tree",
        "cluster_default": True,
        "tree": {
            "switches": [
                {"switch": "tor1", "nodes": "node[1-2]"},
                {"switch": "tor2", "nodes": "node[3-4]"},
                {"switch": "spine1_spine2", "children": "tor1,tor2"},
            ]
        },
    }
    assert docs[1]["block"] == {"block_sizes": [2], "blocks": [{"block": "tor1", "nodes": "node[1-2]"}, {"block": "tor2", "nodes": "node[3-4]"}]}
    assert (
        "kubectl label node node3 --overwrite linerate.fabric/fabric=linerate linerate.fabric/topology-block=tor2 "
        "linerate.fabric/topology-spine=spine1_spine2" in files["kueue/node-labels.sh"]
    )


def test_a_rail_optimised_unit_is_one_group_of_every_rail_leaf():
    files = sched_topology(rail_optimised())
    conf = [ln for ln in files["slurm/topology.conf"].splitlines() if not ln.startswith("#")]
    assert conf == ["SwitchName=leaf1_leaf2 Nodes=node[1-4]", "SwitchName=spine1 Switches=leaf1_leaf2"]
    assert "#   node3: mlx5_0 -> leaf1 swp3, mlx5_1 -> leaf2 Ethernet16" in files["slurm/topology.conf"]


def _crd_schema(name, version):
    path = os.path.join(ROOT, "tests", "schemas", name)
    with gzip.open(path, "rt") as f:
        crd = yaml.safe_load(f)
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]


def test_kueue_objects_validate_against_kueue_v0_19_2():
    files = sched_topology(top_of_rack(), {"name": "gpu-fabric"})
    objs = list(yaml.safe_load_all(files["kueue/topology.yaml"]))
    assert [o["kind"] for o in objs] == ["Topology", "ResourceFlavor"]
    assert [lv["nodeLabel"] for lv in objs[0]["spec"]["levels"]] == [
        "linerate.fabric/topology-spine",
        "linerate.fabric/topology-block",
        "kubernetes.io/hostname",
    ]
    assert objs[1]["spec"] == {"nodeLabels": {"linerate.fabric/fabric": "gpu-fabric"}, "topologyName": "gpu-fabric"}
    schemas = {
        "Topology": _crd_schema("sched_topology/kueue.x-k8s.io_topologies.yaml.gz", "v1beta2"),
        "ResourceFlavor": _crd_schema("k8s/kueue.x-k8s.io_resourceflavors.yaml.gz", "v1beta2"),
    }
    for o in objs:
        assert o["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        errors = list(jsonschema.Draft7Validator(schemas[o["kind"]]).iter_errors(o))
        assert not errors, [e.message for e in errors]
    bad = copy.deepcopy(objs[0])
    bad["spec"]["levels"][0]["nodeLabel"] = "Not A Label/"
    assert list(jsonschema.Draft7Validator(schemas["Topology"]).iter_errors(bad))


def test_the_vendored_crd_is_upstreams_file():
    with gzip.open(os.path.join(ROOT, "tests/schemas/sched_topology/kueue.x-k8s.io_topologies.yaml.gz"), "rb") as f:
        blob = subprocess.run(["git", "hash-object", "--stdin"], input=f.read(), capture_output=True, check=True)
    assert blob.stdout.decode().strip() == "f5a2774bbc83a5aedbe4272ecb780c399da09532"


def _swap(inputs, switch, a, b):
    nbs = inputs["switch_reads"][switch]["neighbors"]
    nbs[a], nbs[b] = nbs[b], nbs[a]
    return inputs


def test_a_cable_swap_is_refused_naming_it_and_accepted_as_observed_changes_the_files():
    healthy = sched_topology(rail_optimised())
    swapped = _swap(rail_optimised(), "leaf1", "swp1", "swp3")
    with pytest.raises(AnsibleFilterError, match=r"findings open: CABLE_SWAPPED: leaf1 swp1 and swp3: cables swapped"):
        sched_topology(swapped)
    seen = sched_topology(swapped, {"accept_observed": True})
    assert seen["slurm/topology.conf"] != healthy["slurm/topology.conf"]
    assert "# accepted as observed: CABLE_SWAPPED: leaf1 swp1 and swp3: cables swapped" in seen["slurm/topology.conf"]
    assert "#   node1: mlx5_0 -> leaf1 swp3, mlx5_1 -> leaf2 Ethernet0" in seen["slurm/topology.conf"]


def test_a_node_moved_to_another_rack_moves_in_the_topology_not_as_the_inventory_says():
    inputs = top_of_rack()
    # node2's cable is on tor2 swp5 (LLDP), the inventory still says tor1 swp2
    nbs = inputs["switch_reads"]
    nbs["tor2"]["neighbors"]["swp5"] = nbs["tor1"]["neighbors"].pop("swp2")
    with pytest.raises(AnsibleFilterError, match="CABLE_UNVERIFIED: tor1 swp2: no LLDP neighbour"):
        sched_topology(inputs, {"accept_observed": True})
    observed = cabling.observed_map(inputs["hosts"], inputs["uplinks"], nbs, inputs["host_reads"])
    g = topo.groups_of(observed, NODES)
    assert g["groups"] == {"tor1": ["node1"], "tor2": ["node2", "node3", "node4"]}
    assert topo.slurm_tree(g) == ["SwitchName=tor1 Nodes=node1", "SwitchName=tor2 Nodes=node[2-4]", "SwitchName=spine1_spine2 Switches=tor1,tor2"]
    assert topo.block_sizes(g) == [1, 2]


def test_refused_for_an_unread_switch_and_an_unobserved_node():
    inputs = rail_optimised()
    inputs["switch_reads"]["leaf2"] = {"failed": True, "msg": "timeout"}
    with pytest.raises(AnsibleFilterError, match=r"CABLE_UNVERIFIED: leaf2: LLDP neighbours could not be read"):
        sched_topology(inputs)
    observed = {"hosts": {"node1": [{"device": "mlx5_0", "switch": "leaf1", "switch_port": "swp1"}]}, "links": [], "read": ["leaf1"], "unread": []}
    with pytest.raises(topo.TopologyRefused, match="node2: LLDP shows them on no switch"):
        topo.render(observed, [], ["node1", "node2"])
    with pytest.raises(topo.TopologyRefused, match="switches leaf2: LLDP not read"):
        topo.render(dict(observed, unread=["leaf2"]), [], ["node1"])


def test_options_are_checked():
    with pytest.raises(AnsibleFilterError, match="label_prefix 'Bad_Prefix': a node label's prefix is a DNS subdomain"):
        sched_topology(rail_optimised(), {"label_prefix": "Bad_Prefix"})
    with pytest.raises(AnsibleFilterError, match="name 'GPU fabric': a Kueue object's name is a DNS label"):
        sched_topology(rail_optimised(), {"name": "GPU fabric"})
    with pytest.raises(AnsibleFilterError, match="inputs need hosts"):
        sched_topology({})
    assert sched_topology(rail_optimised()) == sched_topology(rail_optimised())  # same cabling, same text


def test_templated_strings_render_as_plain_text():
    class Tagged(str):
        """What Ansible's templating hands a filter (a str subclass the YAML dumper refuses)."""

    files = sched_topology(rail_optimised(), {"name": Tagged("gpu-fabric")})
    assert yaml.safe_load_all(files["kueue/topology.yaml"]).__next__()["metadata"]["name"] == "gpu-fabric"
