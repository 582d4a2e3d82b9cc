"""NCCL's configuration read back: parser, findings, the report action's check."""

import pytest

from ansible_collections.linerate.fabric.plugins.filter.nccl_env import nccl_env_settings
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import published
from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling as checks_cabling
from ansible_collections.linerate.fabric.plugins.module_utils.checks import nccl as checks_nccl
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.ncclconf import parse_nccl_conf

INTENT = {"transport": "roce", "link_speed_gbps": 400, "roce": {"data_dscp": 26, "no_drop_priority": 3}}
FABRIC = published(INTENT)
# What role nccl_env writes (roles/nccl_env/templates/etc/nccl.conf.j2)
GOOD = """# Ansible managed
# NCCL reads this file at init (environment variables take precedence).
NCCL_IB_HCA==mlx5_0:1,mlx5_1:1
NCCL_IB_GID_INDEX=3
NCCL_IB_TC=104
NCCL_SOCKET_IFNAME=eth0
NCCL_NET=IB
"""
EXPECTED = {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "104"}
GIDS = {"mlx5_0": 3, "mlx5_1": 3}


def test_parse_nccl_conf_keeps_values_verbatim_and_the_first_line_wins():
    # NCCL docs (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html): "NCCL_DEBUG=WARN" lines
    s = parse_nccl_conf(GOOD + "NCCL_IB_TC=0\nNCCL_DEBUG=WARN\n")
    assert s == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "104",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_NET": "IB",
        "NCCL_DEBUG": "WARN",
    }
    assert parse_nccl_conf("NCCL_IB_TC='104'\n") == {"NCCL_IB_TC": "'104'"}  # NCCL strips no quotes
    assert parse_nccl_conf("") == {}


@pytest.mark.parametrize("line", ["NCCL_IB_TC 104", "NCCL_IB_TC =104", "export NCCL_IB_TC=104", "=104"])
def test_parse_nccl_conf_names_the_bad_line(line):
    with pytest.raises(ParseError, match="line 2"):
        parse_nccl_conf("NCCL_NET=IB\n" + line + "\n")


def test_a_conf_that_agrees_has_no_finding():
    conf = {"path": "/etc/nccl.conf", "settings": parse_nccl_conf(GOOD)}
    assert checks_nccl.nccl_conf_findings("node1", conf, EXPECTED, GIDS, FABRIC) == []


def test_tc_is_checked_against_the_intent_not_the_derivation():
    conf = {"path": "/etc/nccl.conf", "settings": parse_nccl_conf(GOOD.replace("NCCL_IB_TC=104", "NCCL_IB_TC=0"))}
    # even when the derivation agrees with the file, the intent's DSCP 26 needs 104
    f = checks_nccl.nccl_conf_findings("node1", conf, dict(EXPECTED, NCCL_IB_TC="0"), GIDS, FABRIC)
    assert [(x["code"], x["node"], x["evidence"]["expected"]) for x in f] == [("NCCL_TC_MISMATCH", "node1", 104)]
    unset = {"path": "/etc/nccl.conf", "settings": parse_nccl_conf(GOOD.replace("NCCL_IB_TC=104\n", ""))}
    assert [x["code"] for x in checks_nccl.nccl_conf_findings("node1", unset, EXPECTED, GIDS, FABRIC)] == ["NCCL_TC_MISMATCH"]


def test_gid_index_moved_on_one_device_names_that_device():
    conf = {"path": "/etc/nccl.conf", "settings": parse_nccl_conf(GOOD)}
    f = checks_nccl.nccl_conf_findings("node2", conf, EXPECTED, {"mlx5_0": 3, "mlx5_1": 5}, FABRIC)
    assert [(x["code"], x["node"], x["device"], x["evidence"]["discovered"]) for x in f] == [("NCCL_GID_INDEX_MISMATCH", "node2", "mlx5_1", 5)]
    # a port with no RoCE v2 GID at all is GID_MISSING's business, not this check's
    assert checks_nccl.nccl_conf_findings("node2", conf, EXPECTED, {"mlx5_0": 3, "mlx5_1": None}, FABRIC) == []


def test_hca_list_missing_a_rail():
    conf = {"path": "/etc/nccl.conf", "settings": parse_nccl_conf(GOOD.replace(",mlx5_1:1", ""))}
    f = checks_nccl.nccl_conf_findings("node1", conf, EXPECTED, GIDS, FABRIC)
    assert [(x["code"], x["device"]) for x in f] == [("NCCL_HCA_MISMATCH", "mlx5_1")]
    assert "missing mlx5_1:1" in f[0]["message"]


def test_infiniband_checks_the_hca_list_and_the_service_level():
    ib = {"transport": "infiniband"}
    conf = {"path": "/etc/nccl.conf", "settings": {"NCCL_IB_HCA": "=mlx5_0,mlx5_1:1"}}
    assert checks_nccl.nccl_conf_findings("n", conf, {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}, {}, ib, sl=0) == []
    f = checks_nccl.nccl_conf_findings("n", conf, {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}, {}, ib, sl=3)
    assert [(x["code"], x["evidence"]["NCCL_IB_SL"]) for x in f] == [("NCCL_SL_MISMATCH", "0")]


def test_missing_file_is_an_error_not_a_pass():
    f = checks_nccl.nccl_conf_findings("node3", {"path": "/etc/nccl.conf", "error": "file not found"}, EXPECTED, GIDS, FABRIC)
    assert [(x["code"], x["node"], x["severity"]) for x in f] == [("NCCL_CONF_MISSING", "node3", "error")]


def test_report_action_check_names_switch_port_and_treats_garbage_as_unreadable():
    data = {
        "node1": {
            "verify_fabric_nccl_conf": {"path": "/etc/nccl.conf", "text": GOOD},
            "verify_fabric_nccl_expected": {"settings": EXPECTED, "gids": {"mlx5_0": 3, "mlx5_1": 7}},
        },
        "node2": {
            "verify_fabric_nccl_conf": {"path": "/etc/nccl.conf", "text": "NCCL_IB_TC 104\n"},
            "verify_fabric_nccl_expected": {"settings": EXPECTED, "gids": GIDS},
        },
        "node3": {"verify_fabric_nccl_conf": {"path": "/etc/nccl.conf", "text": GOOD}, "verify_fabric_nccl_expected": {"settings": EXPECTED, "gids": GIDS}},
    }
    cabling = checks_cabling.cabling_index({"node1": [{"device": "mlx5_1", "switch": "leaf2", "switch_port": "swp1"}]})
    f, cases = checks_nccl.nccl_conf_check(["node1", "node2", "node3"], data, FABRIC, cabling)
    assert [(x["code"], x["node"], x["device"], x["switch"], x["switch_port"]) for x in f] == [
        ("NCCL_GID_INDEX_MISMATCH", "node1", "mlx5_1", "leaf2", "swp1"),
        ("NCCL_CONF_INVALID", "node2", None, None, None),
    ]
    assert "line 1" in f[1]["message"]
    assert [c["ok"] for c in cases] == [False, False, True]


def test_the_benchmarks_and_nccl_env_share_one_derivation():
    """The role's read-back expectation is nccl_env_settings over the facts: the discovered index, not 3."""
    rdma = {"ports": [{"device": "mlx5_0", "port": 1, "netdev": "eth1", "up": True, "roce_v2_ipv4_gid_index": 5}], "devices": {}}
    out = nccl_env_settings(rdma, [{"device": "mlx5_0"}], {"transport": "roce", "ib_tc": 104, "gid_index": ""})
    assert out["settings"]["NCCL_IB_GID_INDEX"] == "5" and out["settings"]["NCCL_IB_TC"] == "104"
