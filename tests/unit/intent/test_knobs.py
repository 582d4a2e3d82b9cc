"""The knobs' validation (issue 36): role variables wrong in form or wrong together are refused before
any contact, each problem naming the key(s), the value and what is allowed, every problem at once.
One test per class, over the variables it applies to: a minimum above its maximum, TCP ports past
65535 once the rails and senders are added, a host twice or one the inventory lacks, a YAML number
where a release is meant, a name in the wrong case, a batch (serial) of 0, a percentage above 100,
a Slurm hostlist where one node name is meant (module_utils/intent/knobs.py); then the durable state's
variables, the master subnet manager and the benchmarks' class flags (issue 36 items 5 and 6, below)."""

import os

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.filter.verify import verify_incast_tests
from ansible_collections.linerate.fabric.plugins.module_utils.probes import schedule
from ansible_collections.linerate.fabric.plugins.module_utils.intent import knobs, schema
from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables
from ansible_collections.linerate.fabric.plugins.module_utils.switch import profiles
from test_validate_action import PORT, run_action
from ansible_collections.linerate.fabric.plugins.module_utils.intent.varcheck import Checker

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def msg(key, shown, allowed):
    return f"{key}: {shown} is not allowed (allowed: {allowed})"


# ---------------------------------------------------------------- a minimum above its maximum

SIZE_WHY = {
    "verify_fabric_nccl_tune": "the sweep's sizes run from the minimum up to the maximum (nccl-tests -b .. -e)",
    "k8s_render_nccl": "the rendered job runs nccl-tests -b minimum -e maximum",
}
ECN_WHY = "ECN marks from the minimum queue depth up to the maximum (WRED min-threshold <= max-threshold)"


@pytest.mark.parametrize(
    "values,problems",
    [
        # both set
        (
            {"verify_fabric_nccl_tune_min_bytes": "2G", "verify_fabric_nccl_tune_max_bytes": "1G"},
            [msg("verify_fabric_nccl_tune_min_bytes", "'2G'", f"at most verify_fabric_nccl_tune_max_bytes ('1G'): {SIZE_WHY['verify_fabric_nccl_tune']}")],
        ),
        (
            {"k8s_render_nccl_min_bytes": "1025", "k8s_render_nccl_max_bytes": "1K"},
            [msg("k8s_render_nccl_min_bytes", "'1025'", f"at most k8s_render_nccl_max_bytes ('1K'): {SIZE_WHY['k8s_render_nccl']}")],
        ),
        (
            {"switch_fabric_ecn_min_threshold_kb": 1501, "switch_fabric_ecn_max_threshold_kb": 1500},
            [msg("switch_fabric_ecn_min_threshold_kb", "1501", f"at most switch_fabric_ecn_max_threshold_kb (1500): {ECN_WHY}")],
        ),
        (
            {"switch_fabric_ecn_min_threshold_kb": "900", "switch_fabric_ecn_max_threshold_kb": "90"},
            [msg("switch_fabric_ecn_min_threshold_kb", "'900'", f"at most switch_fabric_ecn_max_threshold_kb ('90'): {ECN_WHY}")],
        ),
        (
            {"verify_fabric_nccl_min_bytes": "8G", "verify_fabric_nccl_max_bytes": "4G"},
            [msg("verify_fabric_nccl_min_bytes", "'8G'", "at most verify_fabric_nccl_max_bytes (4G)")],
        ),
        # one set, against the role's literal default of the other
        (
            {"verify_fabric_nccl_tune_min_bytes": "2G"},
            [msg("verify_fabric_nccl_tune_min_bytes", "'2G'", f"at most verify_fabric_nccl_tune_max_bytes ('1G'): {SIZE_WHY['verify_fabric_nccl_tune']}")],
        ),
        (
            {"verify_fabric_nccl_tune_max_bytes": "512K"},
            [msg("verify_fabric_nccl_tune_min_bytes", "'1M'", f"at most verify_fabric_nccl_tune_max_bytes ('512K'): {SIZE_WHY['verify_fabric_nccl_tune']}")],
        ),
        (
            {"k8s_render_nccl_max_bytes": "4"},
            [msg("k8s_render_nccl_min_bytes", "'8'", f"at most k8s_render_nccl_max_bytes ('4'): {SIZE_WHY['k8s_render_nccl']}")],
        ),
        # equal, in order, or the other one the intent's (the ECN thresholds' defaults): nothing
        ({"verify_fabric_nccl_tune_min_bytes": "1G", "verify_fabric_nccl_tune_max_bytes": "1G"}, []),
        ({"k8s_render_nccl_min_bytes": "8G"}, []),
        ({"k8s_render_nccl_min_bytes": "1024", "k8s_render_nccl_max_bytes": "1K"}, []),
        ({"switch_fabric_ecn_min_threshold_kb": 1500, "switch_fabric_ecn_max_threshold_kb": 1500}, []),
        ({"switch_fabric_ecn_min_threshold_kb": 99999}, []),
        # a value its own rule refuses is reported once, by that rule
        (
            {"verify_fabric_nccl_tune_min_bytes": "2T", "verify_fabric_nccl_tune_max_bytes": "1G"},
            [msg("verify_fabric_nccl_tune_min_bytes", "'2T'", "a size as nccl-tests -b/-e read it: digits with an optional K, M or G")],
        ),
    ],
)
def test_a_minimum_above_its_maximum_is_refused(values, problems):
    assert variables.validate_host(values) == problems


# ---------------------------------------------------------------- TCP ports past 65535


def _rdma(base, top):
    return msg(
        "verify_fabric_ib_write_bw_base_port",
        str(base),
        f"at most 64512: round r's rail i listens on TCP port base_port + (r mod 64) x 16 + i, {base}..{top} here, past 65535",
    )


def _incast(base, most, by, rails, top):
    return msg(
        "verify_fabric_incast_base_port",
        str(base),
        f"at most {most} with {by} and {rails} rail(s) (rdma_ports): sender i writes rail r on TCP port base_port + 16 x i + r, up to {top} here, past 65535",
    )


@pytest.mark.parametrize(
    "values,rails,problems",
    [
        ({"verify_fabric_ib_write_bw_base_port": 64512}, 8, []),
        ({"verify_fabric_ib_write_bw_base_port": 64513}, 8, [_rdma(64513, 65536)]),
        ({"verify_fabric_ib_write_bw_base_port": 65000}, None, [_rdma(65000, 66023)]),
        # 7 senders (the default) x 8 rails: the last sender's last rail is base + 16 x 6 + 7
        ({"verify_fabric_incast_base_port": 65432}, 8, []),
        ({"verify_fabric_incast_base_port": 65433}, 8, [_incast(65433, 65432, "7 sender(s) (verify_fabric_incast_max_senders)", 8, 65536)]),
        ({"verify_fabric_incast_base_port": 65439}, None, []),
        ({"verify_fabric_incast_base_port": 65440}, None, [_incast(65440, 65439, "7 sender(s) (verify_fabric_incast_max_senders)", 1, 65536)]),
        # 1023 senders (16 ports each) leave little room above the base
        ({"verify_fabric_incast_max_senders": 1023, "verify_fabric_incast_base_port": 49180}, 4, []),
        (
            {"verify_fabric_incast_max_senders": 1023, "verify_fabric_incast_base_port": 49200},
            4,
            [_incast(49200, 49180, "1023 sender(s) (verify_fabric_incast_max_senders)", 4, 65555)],
        ),
        ({"verify_fabric_incast_max_senders": 1023}, 32, []),
        # one group: its own senders count, not verify_fabric_incast_max_senders
        (
            {
                "verify_fabric_incast_receiver": "n0",
                "verify_fabric_incast_senders": ["n1", "n2", "n3"],
                "verify_fabric_incast_max_senders": 1023,
                "verify_fabric_incast_base_port": 65496,
            },
            8,
            [],
        ),
        (
            {"verify_fabric_incast_receiver": "n0", "verify_fabric_incast_senders": ["n1", "n2", "n3"], "verify_fabric_incast_base_port": 65497},
            8,
            [_incast(65497, 65496, "3 sender(s) (verify_fabric_incast_senders)", 8, 65536)],
        ),
        # a port its own rule refuses is reported once
        ({"verify_fabric_incast_base_port": 70000}, 8, [msg("verify_fabric_incast_base_port", "70000", "an integer 1..65535 (a TCP port)")]),
    ],
)
def test_tcp_ports_past_65535_once_the_rails_are_added_are_refused(values, rails, problems):
    assert variables.validate_host(values, {"rails": rails}) == problems


def test_the_port_layout_is_the_one_the_tests_use():
    assert (knobs.RDMA_PORT_STRIDE, knobs.RDMA_PORT_ROUNDS) == (schedule.PORT_STRIDE, schedule.PORT_ROUNDS)
    assert schedule.schedule_port(64512, 63, 15) == 65535
    with pytest.raises(ValueError):
        schedule.schedule_port(64513, 0, 0)
    ports = [{"device": "mlx5_0"}, {"device": "mlx5_1"}]
    tests = verify_incast_tests(ports, 1000, ["a", "b", "c"], "r")
    assert [t["tcp_port"] for t in tests] == [1000, 1001, 1000 + knobs.INCAST_SENDER_STRIDE, 1001 + knobs.INCAST_SENDER_STRIDE, 1032, 1033]


def test_the_defaults_the_rules_read_are_the_roles():
    defaults = {}
    for role in ("verify_fabric", "k8s_render"):
        with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), encoding="utf-8") as fh:
            defaults.update(yaml.safe_load(fh))
    assert knobs.DEFAULTS == {k: defaults[k] for k in knobs.DEFAULTS}


# ---------------------------------------------------------------- a host twice, or one the inventory lacks

INV = {"hosts": ["n0", "n1", "n2", "n3", "sm1", "ctl"], "group": "gpu_nodes", "group_hosts": ["n0", "n1", "n2", "n3"]}
IN_GROUP = "a host of gpu_nodes, the hosts incast runs on: n0, n1, n2, n3"
IN_INV = "a host of the inventory (n0, n1, n2, n3, sm1 and 1 more)"


@pytest.mark.parametrize(
    "values,problems",
    [
        (
            {"verify_fabric_incast_receiver": "n0", "verify_fabric_incast_senders": ["n1", "n2", "n1"]},
            [msg("verify_fabric_incast_senders[2]", "'n1'", "each host once: it is verify_fabric_incast_senders[0] already")],
        ),
        (
            {"verify_fabric_incast_receiver": "n0", "verify_fabric_incast_senders": ["n1", "n0"]},
            [msg("verify_fabric_incast_senders[1]", "'n0'", "a host other than verify_fabric_incast_receiver ('n0'): the receiver does not write into itself")],
        ),
        (
            {"verify_fabric_incast_senders": ["n1", "n2"]},
            [
                msg(
                    "verify_fabric_incast_senders",
                    "['n1', 'n2']",
                    "only with verify_fabric_incast_receiver: the senders of "
                    "that one group; without a receiver the rotation picks every group's senders and these are not used",
                )
            ],
        ),
        ({"verify_fabric_incast_receiver": "n9"}, [msg("verify_fabric_incast_receiver", "'n9'", IN_GROUP)]),
        (
            {"verify_fabric_incast_receiver": "sm1", "verify_fabric_incast_senders": ["n1", "ctl", "n7"]},
            [
                msg("verify_fabric_incast_receiver", "'sm1'", IN_GROUP),
                msg("verify_fabric_incast_senders[1]", "'ctl'", IN_GROUP),
                msg("verify_fabric_incast_senders[2]", "'n7'", IN_GROUP),
            ],
        ),
        ({"verify_fabric_ib_sm_host": "sm2"}, [msg("verify_fabric_ib_sm_host", "'sm2'", IN_INV + ", or empty")]),
        ({"remediate_control_host": "slurmctld"}, [msg("remediate_control_host", "'slurmctld'", IN_INV + " or localhost")]),
        (
            {
                "verify_fabric_incast_receiver": "n0",
                "verify_fabric_incast_senders": ["n1", "n2", "n3"],
                "verify_fabric_ib_sm_host": "sm1",
                "remediate_control_host": "ctl",
            },
            [],
        ),
        ({"verify_fabric_ib_sm_host": "", "remediate_control_host": "localhost"}, []),
    ],
)
def test_a_host_twice_or_one_the_inventory_lacks_is_refused(values, problems):
    assert variables.validate_host(values, INV) == problems


def test_without_an_inventory_only_the_lists_themselves_are_checked():
    assert variables.validate_host({"verify_fabric_incast_receiver": "n9", "remediate_control_host": "x"}) == []
    assert variables.validate_host({"verify_fabric_incast_receiver": "n9", "verify_fabric_incast_senders": ["a", "a"]}) == [
        msg("verify_fabric_incast_senders[1]", "'a'", "each host once: it is verify_fabric_incast_senders[0] already")
    ]


def test_the_action_checks_the_hosts_and_ports_against_the_inventory_before_any_contact():
    groups = {"all": ["node1", "node2", "leaf1"], "gpu_nodes": ["node1", "node2"], "switches": ["leaf1"]}
    port2 = dict(PORT, device="mlx5_1", netdev="enp65s0f1np1", address="192.168.101.1/24", switch_port="swp2")
    hostvars = {
        "node1": {"rdma_ports": [PORT, port2], "verify_fabric_incast_receiver": "node9", "verify_fabric_incast_base_port": 65439},
        "node2": {"rdma_ports": [dict(PORT, address="192.168.100.2/24", switch_port="swp3")]},
        "leaf1": {"switch_platform": "nvue"},
    }
    res = run_action(groups, hostvars)
    assert res["failed"] and "ansible_facts" not in res
    assert res["problems"] == [
        "node1: "
        + msg(
            "verify_fabric_incast_base_port",
            "65439",
            "at most 65438 with 7 sender(s) (verify_fabric_incast_max_senders) and 2 rail(s) (rdma_ports): "
            "sender i writes rail r on TCP port base_port + 16 x i + r, up to 65536 here, past 65535",
        ),
        "node1: " + msg("verify_fabric_incast_receiver", "'node9'", "a host of gpu_nodes, the hosts incast runs on: node1, node2"),
    ]


# ---------------------------------------------------------------- a YAML number where a release is meant

RELEASES = [
    ("switch_fabric_nvue_release", "5.10"),
    ("switch_nvue_release", "5.10"),
    ("mofed_version", "24.10-1.1.4"),
    ("mofed_doca_version", "2.9.1"),
    ("verify_fabric_nccl_tests_version", "2.19.6"),
    ("k8s_render_ofed_version", "doca3.4.1-26.04-1.1.0.0-1"),
]


@pytest.mark.parametrize("key,example", RELEASES)
@pytest.mark.parametrize("number", [5.1, 24, 2.19])
def test_a_yaml_number_where_a_release_is_meant_is_refused(key, example, number):
    assert variables.validate_host({key: number}) == [
        msg(
            key,
            repr(number),
            (
                f'a string: write the release in quotes, such as {key}: "{example}"; YAML reads it unquoted as a number '
                "and a number loses its trailing zeros (5.10 is read as 5.1)"
            ),
        )
    ]
    assert variables.validate_host({key: example}) == []


def test_yaml_reads_an_unquoted_release_as_the_number_the_rule_refuses():
    assert yaml.safe_load("switch_nvue_release: 5.10") == {"switch_nvue_release": 5.1}
    assert variables.validate_host(yaml.safe_load("switch_nvue_release: 5.10"))
    assert variables.validate_host(yaml.safe_load("switch_nvue_release: '5.10'")) == []
    assert variables.validate_host({"switch_nvue_release": True}) == [msg("switch_nvue_release", "True", " | ".join(f"5.{n}" for n in range(9, 18)))]


# ---------------------------------------------------------------- a name in the wrong case


@pytest.mark.parametrize(
    "key,wrong,right",
    [
        ("switch_fabric_platform", "NVUE", "nvue"),
        ("switch_fabric_platform", "SONiC", "sonic"),
        ("connectx_firmware_link_type", "eth", "ETH"),
        ("nccl_env_transport", "RoCE", "roce"),
        ("roce_qos_trust", "DSCP", "dscp"),
        ("switch_fabric_pfcwd_action", "Drop", "drop"),
        ("ib_subnet_manager_routing_engine", "FTREE", "ftree"),
    ],
)
def test_a_platform_or_choice_in_the_wrong_case_is_refused_naming_the_right_one(key, wrong, right):
    problems = variables.validate_host({key: wrong})
    assert len(problems) == 1 and problems[0].startswith(f"{key}: {wrong!r} is not allowed (allowed: ")
    assert problems[0].endswith(f"; names are case-sensitive: {right!r}, not {wrong!r})")
    assert variables.validate_host({key: right}) == []
    # a value that is no choice in any case says nothing of case
    assert "case-sensitive" not in variables.validate_host({key: wrong + "x"})[0]


def test_the_intents_platform_and_the_eos_family_in_the_wrong_case():
    assert schema.validate({"name": "t", "transport": "roce"}, {}, {"leaf1": {"switch_platform": "Cumulus"}, "leaf2": {"switch_platform": "EOS"}}) == [
        "leaf1: switch_platform: 'Cumulus' is not allowed (allowed: nvue | sonic | eos)",
        "leaf2: switch_platform: 'EOS' is not allowed (allowed: nvue | sonic | eos; names are case-sensitive: 'eos', not 'EOS')",
    ]
    families = " | ".join(profiles.EOS_FAMILIES)
    with pytest.raises(ValueError) as e:
        profiles.eos_profile("7050X3")
    assert str(e.value) == (f"switch_eos_family: '7050X3' is not allowed (allowed: {families}; names are case-sensitive: '7050x3', not '7050X3')")
    with pytest.raises(ValueError) as e:
        profiles.eos_profile("7050x9")
    assert str(e.value) == f"switch_eos_family: '7050x9' is not allowed (allowed: {families})"


# ---------------------------------------------------------------- serial: 0

SERIAL = (
    "a number of switches 1..100000 or a percentage '1%'..'100%' of the play's switches (the batch changed at "
    "a time; Ansible runs every switch at once for serial 0)"
)


@pytest.mark.parametrize("value", [0, "0", -1, "0%", "101%", "5 %", 100001, 1.5, True, None])
def test_a_batch_of_0_is_refused(value):
    assert variables.validate_host({"switch_fabric_serial": value}) == [msg("switch_fabric_serial", repr(value), SERIAL)]


@pytest.mark.parametrize("value", [1, "1", 100000, "1%", "25%", "100%"])
def test_a_batch_of_one_or_more_passes(value):
    assert variables.validate_host({"switch_fabric_serial": value}) == []


def test_the_intents_batch_of_0_is_refused():
    assert schema.validate({"name": "t", "transport": "roce", "rollout": {"batch": 0}}) == [
        "fabric.rollout.batch: 0 is not allowed (allowed: a number of nodes >= 1 or a percentage '1%'..'100%' of "
        "gpu_nodes (the host stack's serial: nodes changed at a time))"
    ]


# ---------------------------------------------------------------- a percentage above 100


@pytest.mark.parametrize(
    "key,top",
    [
        ("switch_fabric_max_fail_percentage", 100),
        ("switch_fabric_ecn_probability_percent", 100),
        ("verify_fabric_nccl_tune_margin_percent", 100),
        ("verify_fabric_nccl_tune_tolerance_percent", 50),
    ],
)
@pytest.mark.parametrize("over", [101, 150, 1000])
def test_a_percentage_above_100_is_refused(key, top, over):
    problems = variables.validate_host({key: over})
    assert len(problems) == 1 and problems[0].startswith(f"{key}: {over} is not allowed (allowed: ")
    assert f"..{top}" in problems[0]
    assert variables.validate_host({key: top}) == []


@pytest.mark.parametrize("value", [100.5, "101", "20%", -1])
def test_the_switches_max_fail_percentage_is_a_number_0_to_100(value):
    assert variables.validate_host({"switch_fabric_max_fail_percentage": value}) == [
        msg("switch_fabric_max_fail_percentage", repr(value), "a number 0..100 percent of a batch's switches that may fail")
    ]
    assert variables.validate_host({"switch_fabric_max_fail_percentage": "0"}) == []


@pytest.mark.parametrize(
    "path,key",
    [
        (("rollout", "max_fail_percentage"), "fabric.rollout.max_fail_percentage"),
        (("roce", "ecn", "probability_percent"), "fabric.roce.ecn.probability_percent"),
        (("remediation", "attribution", "min_share_percent"), "fabric.remediation.attribution.min_share_percent"),
    ],
)
def test_the_intents_percentages_above_100_are_refused(path, key):
    fabric = {"name": "t", "transport": "roce"}
    node = fabric
    for p in path[:-1]:
        node = node.setdefault(p, {})
    node[path[-1]] = 101
    problems = schema.validate(fabric)
    assert len(problems) == 1 and problems[0].startswith(f"{key}: 101 is not allowed (allowed: an integer ")
    assert problems[0].endswith("..100)")


# ---------------------------------------------------------------- a Slurm hostlist where one node name is meant

NODE_KEYS = [
    ("linerate_slurm_node_name", "this host's own name in Slurm (scontrol show node <name>), set per host in host_vars"),
    ("linerate_k8s_node_name", "this host's own node name in Kubernetes, set per host in host_vars"),
    ("verify_fabric_incast_receiver", "the one host that receives (an inventory name)"),
    ("remediate_control_host", "the one host scontrol or kubectl runs on"),
    ("verify_fabric_ib_sm_host", "the inventory host of the master subnet manager"),
]


def _hostlist(key, value, where):
    return msg(key, repr(value), f"one name, not a Slurm hostlist: node[1-4], node[1,3] or a,b (or names separated by a space) name several nodes; {where}")


@pytest.mark.parametrize("key,where", NODE_KEYS)
@pytest.mark.parametrize("value", ["gpu[001-004]", "gpu[1,3]", "gpu1,gpu2", "gpu1 gpu2", "gpu]"])
def test_a_slurm_hostlist_where_one_node_name_is_meant_is_refused(key, where, value):
    assert variables.validate_host({key: value}) == [_hostlist(key, value, where)]
    assert variables.validate_host({key: "gpu001"}) == []


def test_a_hostlist_among_the_incast_senders_is_refused():
    assert variables.validate_host({"verify_fabric_incast_receiver": "n0", "verify_fabric_incast_senders": ["n1", "n[2-3]"]}) == [
        _hostlist("verify_fabric_incast_senders[1]", "n[2-3]", "each entry one sender host (an inventory name)")
    ]


# ---------------------------------------------------------------- every problem at once


def test_every_class_at_once():
    problems = variables.validate_host(
        {
            "switch_fabric_serial": 0,
            "switch_nvue_release": 5.1,
            "switch_fabric_platform": "EOS",
            "linerate_slurm_node_name": "n[1-2]",
            "switch_fabric_max_fail_percentage": 200,
            "k8s_render_nccl_min_bytes": "9G",
            "verify_fabric_ib_write_bw_base_port": 65535,
            "verify_fabric_incast_receiver": "x",
        },
        INV,
    )
    assert [p.split(":")[0] for p in problems] == [
        "linerate_slurm_node_name",
        "switch_fabric_max_fail_percentage",
        "switch_fabric_platform",
        "switch_fabric_serial",
        "switch_nvue_release",
        "k8s_render_nccl_min_bytes",
        "verify_fabric_ib_write_bw_base_port",
        "verify_fabric_incast_receiver",
    ]


# ---------------------------------------------------------------- edges a mutation sample (seed 97) left untested


def test_sizes_in_bytes_and_with_a_unit_compare_exactly():
    assert variables.validate_host({"k8s_render_nccl_min_bytes": "1G", "k8s_render_nccl_max_bytes": "1073741824"}) == []
    assert variables.validate_host({"k8s_render_nccl_min_bytes": "1M", "k8s_render_nccl_max_bytes": "1048576"}) == []
    assert variables.validate_host({"k8s_render_nccl_min_bytes": "1073741825", "k8s_render_nccl_max_bytes": "1G"}) == [
        msg("k8s_render_nccl_min_bytes", "'1073741825'", f"at most k8s_render_nccl_max_bytes ('1G'): {SIZE_WHY['k8s_render_nccl']}")
    ]


def test_an_empty_sender_is_refused():
    assert variables.validate_host({"verify_fabric_incast_receiver": "n0", "verify_fabric_incast_senders": ["n1", ""]}) == [
        msg(
            "verify_fabric_incast_senders[1]",
            "''",
            "a string of at most 253 characters without control characters (newline, carriage return, tab, NUL), not empty",
        )
    ]


def test_the_action_checks_the_control_host_against_every_inventory_host():
    groups = {"all": ["node1", "node2", "leaf1"], "gpu_nodes": ["node1", "node2"], "switches": ["leaf1"]}
    hostvars = {
        "node1": {"rdma_ports": [PORT], "remediate_control_host": "ctl9"},
        "node2": {
            "rdma_ports": [dict(PORT, address="192.168.100.2/24", switch_port="swp3")],
            "remediate_control_host": "leaf1",
            "verify_fabric_ib_sm_host": "node1",
        },
        "leaf1": {"switch_platform": "nvue"},
    }
    assert run_action(groups, hostvars)["problems"] == [
        "node1: " + msg("remediate_control_host", "'ctl9'", "a host of the inventory (node1, node2, leaf1) or localhost")
    ]


URL = "https://mirror.example.org/nccl-tests-2.19.6.tar.gz"
SUM = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    "values,keys",
    [
        ({}, ["verify_fabric_nccl_tests_source_url", "verify_fabric_nccl_tests_source_checksum"]),
        ({"verify_fabric_nccl_tests_source_url": URL}, ["verify_fabric_nccl_tests_source_checksum"]),
        ({"verify_fabric_nccl_tests_source_checksum": SUM}, ["verify_fabric_nccl_tests_source_url"]),
        ({"verify_fabric_nccl_tests_source_url": URL, "verify_fabric_nccl_tests_source_checksum": SUM}, []),
        (
            {"verify_fabric_nccl_tests_version": "2.19", "verify_fabric_nccl_tests_source_url": URL, "verify_fabric_nccl_tests_source_checksum": SUM},
            ["verify_fabric_nccl_tests_version"],
        ),
        ({"verify_fabric_nccl_tests_method": "package"}, []),
        ({"verify_fabric_nccl_tests_method": "none"}, []),
        ({"verify_fabric_checks": ["ports", "ib_write_bw"]}, []),
        (
            {"verify_fabric_checks": ["ports"], "verify_fabric_nccl_tune": True},
            ["verify_fabric_nccl_tests_source_url", "verify_fabric_nccl_tests_source_checksum"],
        ),
    ],
)
def test_the_nccl_tests_source_is_required_only_where_it_is_built(values, keys):
    assert [p.split(":")[0] for p in variables.nccl_tests_problems(values)] == keys


FABRIC = {"name": "t", "transport": "roce"}


@pytest.mark.parametrize(
    "extra,problems",
    [
        (
            {"infiniband": {}},
            ["fabric.infiniband: '...' is not allowed (only with fabric.transport: infiniband; this fabric is roce, remove the infiniband block)"],
        ),
        ({"nccl": {"overrides": {"X" * 70: 1}}}, [f"fabric.nccl.overrides.{'X' * 64}: 1 is not allowed (allowed: keys named NCCL_*)"]),
        (
            {"verify": {"effective_ber_max": 2}},
            [
                "fabric.verify.effective_ber_max: 2 is not allowed (allowed: a finite bit "
                "error rate, 0 <= x < 1, written 1.0e-12 (YAML reads 1e-12 as a string))"
            ],
        ),
        ({"verify": {"ib_error_thresholds": {"SymbolErrorCounter": 0}}}, []),
        ({"remediation": {"budget": {"max_nodes_per_run": 100000, "max_nodes_per_window": 100000}}}, []),
        (
            {"remediation": {"budget": {"max_nodes_per_run": 100001, "max_nodes_per_window": 100000}}},
            [
                "fabric.remediation.budget.max_nodes_per_run: 100001 is not allowed (allowed: an integer 1..100000)",
                "fabric.remediation.budget.max_nodes_per_run: 100001 is not allowed (allowed: at most "
                "fabric.remediation.budget.max_nodes_per_window (100000); one run cannot drain more than its window allows)",
            ],
        ),
    ],
)
def test_the_intents_edges_and_messages(extra, problems):
    assert schema.validate(dict(FABRIC, **extra)) == problems


@pytest.mark.parametrize(
    "values,problems",
    [
        ({"verify_fabric_tclass": 255}, []),
        ({"verify_fabric_tclass": 256}, [msg("verify_fabric_tclass", "256", "null or a traffic class 0..255")]),
        ({"ib_subnet_manager_error_thresholds": {"SymbolErrorCounter": 2**64 - 1}}, []),
        (
            {"switch_fabric_extra_ports": [{"name": "1bad"}]},
            [
                msg(
                    "switch_fabric_extra_ports[0].name",
                    "'1bad'",
                    ("a port name such as swp1, Ethernet0 or Ethernet1/1 (1-64 of letters, digits, _ . / : -, starting with a letter)"),
                )
            ],
        ),
    ],
)
def test_variable_edges(values, problems):
    assert variables.validate_host(values) == problems


# ---------------------------------------------------------------- edges a second sample (seed 131) left untested


def test_the_incast_hosts_are_checked_against_the_host_group_the_action_is_given():
    groups = {"all": ["w1", "w2", "leaf1"], "workers": ["w1", "w2"], "switches": ["leaf1"]}
    hostvars = {
        "w1": {"rdma_ports": [PORT], "verify_fabric_incast_receiver": "leaf1"},
        "w2": {"rdma_ports": [dict(PORT, address="192.168.100.2/24", switch_port="swp3")]},
        "leaf1": {"switch_platform": "nvue"},
    }
    assert run_action(groups, hostvars, host_group="workers")["problems"] == [
        "w1: " + msg("verify_fabric_incast_receiver", "'leaf1'", "a host of workers, the hosts incast runs on: w1, w2")
    ]


@pytest.mark.parametrize(
    "extra,problems",
    [
        ({"roce": {"cnp_dscp": 26, "data_dscp": 26}}, ["fabric.roce.cnp_dscp: 26 is not allowed (allowed: any DSCP 0..63 except fabric.roce.data_dscp (26))"]),
        (
            {"remediation": {"budget": {"max_percent_per_window": 101}}},
            ["fabric.remediation.budget.max_percent_per_window: 101 is not allowed (allowed: an integer 1..100)"],
        ),
        (
            {"verify": {"optic_rx_power_margin_db": 21}},
            [
                "fabric.verify.optic_rx_power_margin_db: 21 is not allowed (allowed: a number 0..20 (a margin inside the "
                "module's own thresholds, which mlxlink prints beside each value))"
            ],
        ),
        ({"verify": {"optic_rx_power_margin_db": 20}}, []),
    ],
)
def test_more_intent_edges(extra, problems):
    assert schema.validate(dict(FABRIC, **extra)) == problems


@pytest.mark.parametrize(
    "values,problems",
    [
        ({"nccl_env_ib_tc": 255, "verify_fabric_sl": 0, "switch_fabric_cable_length": "5m"}, []),
        ({"nccl_env_ib_tc": 256}, [msg("nccl_env_ib_tc", "256", "empty or a traffic class 0..255")]),
        # only the credentials are hidden: a later '//...@' of the path is shown as written
        (
            {"mofed_repo_url": "https://u:p@h/x//y@z"},
            [
                msg(
                    "mofed_repo_url",
                    "'https://***@h/x//y@z'",
                    (
                        "a URL without credentials: user:password@ would be written into a world-readable (0644) apt sources file "
                        "and shown by --diff; put them in /etc/apt/auth.conf.d/<name>.conf (machine/login/password, mode 0600, "
                        "apt_auth.conf(5))"
                    ),
                )
            ],
        ),
    ],
)
def test_more_variable_edges(values, problems):
    assert variables.validate_host(values) == problems


# ---------------------------------------------------------------- edges a third sample (seed 151) left untested


@pytest.mark.parametrize(
    "extra,problems",
    [
        (
            {"rollout": {"batchx": 1}},
            ["fabric.rollout.batchx: 1 is not allowed (unknown key; allowed keys: batch, canary, max_fail_percentage, max_unavailable, slow_start, spread)"],
        ),
        (
            {"remediation": {"drainx": 1}},
            [
                "fabric.remediation.drainx: 1 is not allowed (unknown key; allowed keys: attribution, budget, drain, "
                "drain_codes, drain_severities, exempt_codes, return_to_service, scheduler)"
            ],
        ),
        (
            {"remediation": {"attribution": {"min_nodes": 100001}}},
            ["fabric.remediation.attribution.min_nodes: 100001 is not allowed (allowed: an integer 2..100000)"],
        ),
        ({"remediation": {"attribution": {"min_nodes": 100000}}}, []),
        (
            {"verify": {"ib_error_thresholds": {"SymbolErrorCounter": "x"}}},
            ["fabric.verify.ib_error_thresholds.SymbolErrorCounter: 'x' is not allowed (allowed: an integer >= 0 (the count of this error a port may show))"],
        ),
    ],
)
def test_third_intent_edges(extra, problems):
    assert schema.validate(dict(FABRIC, **extra)) == problems


@pytest.mark.parametrize(
    "values,problems",
    [
        ({"verify_fabric_sl": 16}, [msg("verify_fabric_sl", "16", "null or a service level 0..15")]),
        ({"verify_fabric_sl": 15, "verify_fabric_tclass": None, "connectx_firmware_image_psid": "MT_0000000838"}, []),
        (
            {"ib_subnet_manager_error_thresholds": {"SymbolErrorCounter": 2**64}},
            [msg("ib_subnet_manager_error_thresholds.SymbolErrorCounter", str(2**64), f"an integer 0..{2**64 - 1}")],
        ),
        (
            {"ib_subnet_manager_environment": {"1" + "A" * 69: "x"}},
            [
                msg(
                    "ib_subnet_manager_environment.1" + "A" * 63,
                    "'(key)'",
                    "an environment variable name: letters, digits, _, not starting with a digit, at most 64",
                )
            ],
        ),
    ],
)
def test_third_variable_edges(values, problems):
    assert variables.validate_host(values) == problems


def test_a_nccl_tests_switch_that_is_no_boolean_fails_the_action():
    res = run_action({"all": []}, {}, nccl_tests="maybe")
    assert res["failed"] is True and res["msg"] == "nccl_tests: 'maybe' is not allowed (allowed: true, false)"


# ---------------------------------------------------------------- the durable state's variables, the master subnet manager, the class flags
# The rest of the knobs' validation (issue 36 items 5 and 6): the durable state's variables (backup
# retention, the restore's two flags and the one they replace, the trend's share), the master subnet
# manager named once and in the inventory, the benchmarks' class flags, each before any contact (infinite
# or NaN numbers refused by every kind of rule: intent/test_varcheck.py).

NAN, INF = float("nan"), float("inf")


# ---------------------------------------------------------------- backup retention and the restore's flags

KEEP = "an integer 1..100000 backups kept per switch"


@pytest.mark.parametrize(
    "value,shown", [(0, "0"), (-1, "-1"), (100001, "100001"), ("all", "'all'"), (True, "True"), (2.5, "2.5"), (INF, "inf"), (NAN, "nan"), ("", "''")]
)
def test_a_backup_count_that_is_no_count_is_refused(value, shown):
    assert variables.validate_host({"switch_fabric_backup_keep": value}) == [msg("switch_fabric_backup_keep", shown, KEEP)]


@pytest.mark.parametrize("value", [1, 30, "30", 100000])
def test_a_backup_count_passes(value):
    assert variables.validate_host({"switch_fabric_backup_keep": value}) == []


@pytest.mark.parametrize("key", ["switch_fabric_restore_accept_no_digest", "switch_fabric_restore_allow_deletions"])
def test_each_restore_flag_is_a_strict_boolean(key):
    assert variables.validate_host({key: "true"}) == [] and variables.validate_host({key: False}) == []
    assert variables.validate_host({key: "maybe"}) == [msg(key, "'maybe'", variables.BOOL_ALLOWED)]


SPLIT = (
    "unset: switch_fabric_restore_force was split in two (it both accepted a backup without a .sha256 digest "
    "and allowed a restore to delete settings outside the managed scope); set instead "
    "switch_fabric_restore_accept_no_digest: true and/or switch_fabric_restore_allow_deletions: true"
)


@pytest.mark.parametrize("value,shown", [(True, "True"), (False, "False"), ("true", "'true'"), (None, "None")])
def test_the_flag_that_did_both_is_refused_naming_the_two(value, shown):
    assert variables.validate_host({"switch_fabric_restore_force": value}) == [msg("switch_fabric_restore_force", shown, SPLIT)]


def test_split_into_names_every_replacement():
    c = Checker("sw1")
    assert knobs.split_into("why", "a", "b", "c")(c, "old", 1) is False
    assert c.items == ["sw1: old: 1 is not allowed (allowed: unset: old was split in two (why); set instead a: true and/or b: true and/or c: true)"]


def test_the_action_refuses_the_old_flag_before_any_contact():
    groups = {"all": ["node1", "leaf1"], "gpu_nodes": ["node1"], "switches": ["leaf1"]}
    hostvars = {"node1": {"rdma_ports": [PORT]}, "leaf1": {"switch_platform": "nvue", "switch_fabric_restore_force": True, "switch_fabric_backup_keep": 0}}
    res = run_action(groups, hostvars)
    assert res["failed"] and "ansible_facts" not in res
    assert res["problems"] == ["leaf1: " + msg("switch_fabric_backup_keep", "0", KEEP), "leaf1: " + msg("switch_fabric_restore_force", "True", SPLIT)]


# ---------------------------------------------------------------- the trend's share

SHARE = "a share 0 < x < 1, such as 0.05 for 5 % (a finite number: not nan or inf)"


@pytest.mark.parametrize("value", [0.05, "0.05", ".5", 0.999999])
def test_a_trend_share_passes(value):
    assert variables.validate_host({"linerate_trend_bandwidth_drop": value}) == []


@pytest.mark.parametrize(
    "value,shown",
    [
        (0, "0"),
        (1, "1"),
        (0.0, "0.0"),
        (1.0, "1.0"),
        (-0.05, "-0.05"),
        (5, "5"),
        ("5%", "'5%'"),
        ("1.5", "'1.5'"),
        ("nan", "'nan'"),
        (NAN, "nan"),
        (INF, "inf"),
        (True, "True"),
        (None, "None"),
    ],
)
def test_a_trend_share_outside_0_and_1_is_refused(value, shown):
    assert variables.validate_host({"linerate_trend_bandwidth_drop": value}) == [msg("linerate_trend_bandwidth_drop", shown, SHARE)]


# ---------------------------------------------------------------- the master subnet manager: one host of the inventory

INV_SM = {"hosts": ["n0", "n1", "sm1", "sm2"], "group": "gpu_nodes", "group_hosts": ["n0", "n1"]}


@pytest.mark.parametrize(
    "value,problems",
    [
        ("sm1", []),
        ("sm9", [msg("ib_subnet_manager_master", "'sm9'", "a host of the inventory (n0, n1, sm1, sm2)")]),
        (
            "sm[1-2]",
            [
                msg(
                    "ib_subnet_manager_master",
                    "'sm[1-2]'",
                    "one name, not a Slurm hostlist: node[1-4], node[1,3] "
                    "or a,b (or names separated by a space) name several nodes; the inventory host of the master "
                    "subnet manager",
                )
            ],
        ),
        (
            "sm1,sm2",
            [
                msg(
                    "ib_subnet_manager_master",
                    "'sm1,sm2'",
                    "one name, not a Slurm hostlist: node[1-4], node[1,3] "
                    "or a,b (or names separated by a space) name several nodes; the inventory host of the master "
                    "subnet manager",
                )
            ],
        ),
    ],
)
def test_the_master_subnet_manager_is_one_host_of_the_inventory(value, problems):
    assert variables.validate_host({"ib_subnet_manager_master": value}, INV_SM) == problems


def test_without_an_inventory_the_master_is_checked_for_its_form_only():
    assert variables.validate_host({"ib_subnet_manager_master": "sm9"}) == []
    assert len(variables.validate_host({"ib_subnet_manager_master": "sm[1-2]"})) == 1


def test_a_host_list_of_the_inventory_is_shown_whole_up_to_five():
    many = {"hosts": [f"h{i}" for i in range(7)]}
    assert variables.validate_host({"ib_subnet_manager_master": "x"}, many) == [
        msg("ib_subnet_manager_master", "'x'", "a host of the inventory (h0, h1, h2, h3, h4 and 2 more)")
    ]


# ---------------------------------------------------------------- the benchmarks' class flags: null or a range


@pytest.mark.parametrize(
    "key,top,allowed",
    [
        ("verify_fabric_gid_index", 255, "null or a GID index 0..255"),
        ("verify_fabric_tclass", 255, "null or a traffic class 0..255"),
        ("verify_fabric_sl", 15, "null or a service level 0..15"),
    ],
)
def test_a_class_flag_is_null_or_within_its_range(key, top, allowed):
    for good in (None, 0, top, str(top)):
        assert variables.validate_host({key: good}) == [], good
    for bad, shown in ((-1, "-1"), (top + 1, str(top + 1)), ("", "''"), (1.5, "1.5"), (True, "True"), (NAN, "nan")):
        assert variables.validate_host({key: bad}) == [msg(key, shown, allowed)], bad


@pytest.mark.parametrize(
    "key,allowed",
    [
        ("nccl_env_gid_index", "empty (discovered) or a GID index 0..255"),
        ("verify_fabric_nccl_gid_index", "empty (discovered) or a GID index 0..255"),
        ("nccl_env_ib_tc", "empty or a traffic class 0..255"),
    ],
)
def test_an_nccl_class_flag_is_empty_or_within_its_range(key, allowed):
    for good in ("", 0, 255, "7"):
        assert variables.validate_host({key: good}) == [], good
    for bad, shown in ((-1, "-1"), (256, "256"), ("x", "'x'"), (INF, "inf")):
        assert variables.validate_host({key: bad}) == [msg(key, shown, allowed)], bad


# ---------------------------------------------------------------- the intent's messages, exactly (seed 307's survivors)


@pytest.mark.parametrize(
    "fabric,problems",
    [
        (
            {"mtu": {"host": 9216, "switch": 9000}},
            ["fabric.mtu.host: 9216 is not allowed (allowed: at most fabric.mtu.switch (9000); a host MTU above the switch MTU drops every full-size frame)"],
        ),
        ({"firmware": {"profile": "Fast"}}, ["fabric.firmware.profile: 'Fast' is not allowed (allowed: gpudirect | default | none)"]),
        (
            {"verify": {"link_errors_max": -1}},
            ["fabric.verify.link_errors_max: -1 is not allowed (allowed: an integer >= 0 (counts over the verification window))"],
        ),
        (
            {"verify": {"link_flaps_max": 1.5}},
            ["fabric.verify.link_flaps_max: 1.5 is not allowed (allowed: an integer >= 0 (counts over the verification window))"],
        ),
    ],
)
def test_the_intents_mtu_firmware_and_count_messages_exactly(fabric, problems):
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema

    assert schema.validate_fabric(dict({"transport": "roce"}, **fabric)) == problems
