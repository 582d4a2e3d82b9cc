"""checks/context.py: Inputs, what every check's report(ctx) reads."""

from ansible_collections.linerate.fabric.plugins.module_utils.checks.context import Inputs

PORTS = [{"device": "mlx5_0", "netdev": "eth0", "switch": "leaf1", "switch_port": "swp1"}]


def test_the_nodes_results_and_their_logs():
    data = {
        "node1": {"rdma_ports": PORTS, "verify_fabric_rdma_log": [{"round": 1}], "verify_fabric_bench_log": {"ib_send_bw": [1]}},
        "node2": {},
    }
    ctx = Inputs(["node1", "node2"], data, {})
    assert ctx.hosts == {"node1": PORTS, "node2": []}
    assert ctx.logs("verify_fabric_rdma_log") == {"node1": [{"round": 1}], "node2": []}
    assert ctx.logs("verify_fabric_bench_log", "ib_send_bw") == {"node1": [1], "node2": []}
    assert ctx.logs("verify_fabric_bench_log", "ib_write_lat") == {"node1": [], "node2": []}
    # the cabling index is built from the nodes' declared ports, and nothing is found before the first check
    assert ctx.cabling and ctx.findings == [] and ctx.hints == []


def test_switches_are_the_named_ones_the_play_has_and_their_reads_are_templated():
    hostvars = {"leaf1": {"switch_fabric_lldp": "{{ x }}", "switch_uplinks": ["swp31"]}, "leaf2": {}}
    ctx = Inputs(
        ["node1"],
        {"node1": {}},
        {},
        args={"switches": ["leaf1", "leaf2", "spine9"]},
        hostvars=hostvars,
        template=lambda v: {"templated": v} if v == "{{ x }}" else v,
    )
    # spine9 is named but not in the play's host variables: not a switch of this report
    assert ctx.switches() == ["leaf1", "leaf2"]
    assert ctx.switch_reads("switch_fabric_lldp") == {"leaf1": {"templated": "{{ x }}"}}
    assert ctx.uplinks() == {"leaf1": ["swp31"], "leaf2": []}
    assert Inputs(["node1"], {"node1": {}}, {}).switches() == []
