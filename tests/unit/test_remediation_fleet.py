"""The fleet model's remediation (issue 35): the REAL verification plan, evaluation, localisation, accounting,
attribution and drain decision at 2,000 nodes (bench/fleet.py's fabric: rail-optimised units of 32 nodes x 8
rails, two spines): a leaf fault drains 0 nodes and is one LEAF_SUSPECT; 30 % of the nodes unreachable from
the controller drain 0 and trip the breaker; one bad rail drains exactly its node. Only the data path is
simulated (which ib_write_bw test fails); everything the controller decides is the product's code."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fleet  # noqa: E402

from ansible_collections.linerate.fabric.plugins.filter import verify as vf  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.checks import accounting, attribution  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling as checks_cabling  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.checks import rdma  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.host import breaker, drain  # noqa: E402

N = 2000
POLICY = {"drain": True, "scheduler": "slurm"}


def verify(fab, phases=fleet.MAX_RETEST_PHASES):
    """The run's RDMA findings: the sampled plan's first rounds, then the re-test phases, as the role does."""
    logs = {n: [] for n in fab.nodes}
    rounds = vf.verify_rounds(fab.nodes, "sampled", 6, fab.ports)
    fab.run(rounds, 0, logs)
    done = list(rounds)
    for phase in range(phases):
        retest = vf.verify_retest_rounds(logs, fab.nodes, fleet.FABRIC, done, 1, fab.ports, phase)
        if not retest:
            break
        for rnd in retest:
            fab.run([rnd], len(done), logs)
            done.append(rnd)
    cabling = checks_cabling.cabling_index(fab.ports)
    found, _ = rdma.rdma_findings(rdma.round_tests(logs), fleet.FABRIC, cabling, uplinks=fab.uplinks)
    return found, cabling


def decide(found, cabling, fab, state=None, hostvars=None):
    found = faults.correlate(found)
    attribution.attribute(found, cabling, fab.uplinks, hostvars or {}, POLICY)

    def select(fs):
        return drain.selected(fs)

    return breaker.plan(found, state or breaker.empty_state(), POLICY, len(fab.nodes), select), found


def test_a_leaf_fault_at_2000_nodes_drains_no_node():
    fab = fleet.Fabric(N, seed=3)
    leaf = "su17-r5"
    for node, ports in fab.ports.items():
        for p in ports:
            if p["switch"] == leaf:
                fab.faults[(node, p["device"])] = {"send": 1.0, "receive": 1.0}
    victims = sorted({n for (n, _d) in fab.faults})
    assert len(victims) == fleet.SU
    found, cabling = verify(fab)
    d, found = decide(found, cabling, fab)
    assert d["drain"] == [] and not d["breaker"]["tripped"]
    suspects = [f for f in found if f["code"] in ("LEAF_SUSPECT", "RAIL_SUSPECT", "SPINE_SUSPECT")]
    assert [(f["code"], f["element"]) for f in suspects] == [("LEAF_SUSPECT", leaf)]
    assert suspects[0]["explains"] == victims
    # every error naming a victim is explained by the leaf; no healthy node is a candidate
    assert all(f.get("explained_by") == leaf for f in found if f.get("node") in victims and f["severity"] == "error")
    assert d["candidates"] == []


def test_30_percent_unreachable_from_the_controller_drains_no_node():
    fab = fleet.Fabric(N, seed=4)
    ep = (fab.nodes[77], fab.devices[2])
    fab.faults[ep] = {"send": 1.0, "receive": 1.0}
    found, cabling = verify(fab)
    lost = fab.nodes[::10] + fab.nodes[1::10] + fab.nodes[2::10]  # 600 of 2,000
    probes = {n: {"unreachable": True, "msg": "Connection timed out during banner exchange"} for n in lost}
    nv, _check = accounting.node_findings(fab.nodes, [n for n in fab.nodes if n not in lost], probes=probes)
    found += nv
    d, found = decide(found, cabling, fab)
    assert d["drain"] == [] and d["breaker"]["tripped"] and d["tripped_now"]
    assert len(d["unseen"]) == 600 and "per-run budget of 10" in d["breaker"]["reason"]
    (path,) = [f for f in found if f["code"] == "CONTROLLER_PATH"]
    assert len(path["explains"]) == 600
    assert ep[0] in d["held"]  # its own fault, held by the breaker


def test_30_percent_unreachable_behind_one_jump_host_is_that_host():
    fab = fleet.Fabric(N, seed=4)
    lost = fab.nodes[:600]
    hv = {n: {"ansible_ssh_common_args": "-o ProxyJump=ops@bastion-3"} for n in lost}
    nv, _ = accounting.node_findings(fab.nodes, fab.nodes[600:], probes={n: {"unreachable": True} for n in lost})
    d, found = decide(nv, checks_cabling.cabling_index(fab.ports), fab, hostvars=hv)
    (path,) = [f for f in found if f["code"] == "CONTROLLER_PATH"]
    assert path["element"] == "jump host bastion-3" and d["drain"] == []


@pytest.mark.parametrize("way", ["send", "receive", "both"])
def test_one_bad_rail_at_2000_nodes_drains_exactly_its_node(way):
    fab = fleet.Fabric(N, seed={"send": 5, "receive": 6, "both": 7}[way])
    want = fab.inject(way)
    ((node, _device), _w, _flaky) = want[0]
    found, cabling = verify(fab)
    d, found = decide(found, cabling, fab)
    assert d["drain"] == [node] and not d["breaker"]["tripped"]
    assert not [f for f in found if f.get("check") == "attribution"]
