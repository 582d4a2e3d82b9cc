"""Unit tests for plugins/module_utils/parsers/iblink.py (rdma link) on our own fixtures."""

import pytest

from parser_fixtures import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.iblink import parse_rdma_link


def test_rdma_link_text_real_roce():
    result = parse_rdma_link(fixture("rdma_link", "real_roce_cx5.txt"))
    assert result["links"] == [
        {"device": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "enp4s0f0np0"},
        {"device": "mlx5_1", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "enp4s0f1np1"},
    ]


def test_rdma_link_ib_fields_and_old_layout():
    ib = parse_rdma_link(fixture("rdma_link", "ib_and_roce.txt"))["links"]
    assert (ib[0]["lid"], ib[0]["sm_lid"], ib[1]["state"], ib[1]["physical_state"]) == (4, 1, "DOWN", "POLLING")
    old = parse_rdma_link(fixture("rdma_link", "old_iproute2.txt"))["links"]
    assert [(lk["device"], lk["state"]) for lk in old] == [("mlx5_0", "ACTIVE"), ("mlx5_1", "DOWN")]


def test_rdma_link_json_first():
    links = parse_rdma_link(fixture("rdma_link", "links.json"))["links"]
    assert links[1] == {"device": "mlx5_1", "port": 1, "ifindex": 1, "state": "DOWN", "physical_state": "DISABLED", "netdev": "ens1f1np1", "netdev_index": 5}


def test_rdma_link_detail_state_on_continuation_line_and_wrapped_caps():
    # iproute2 2018 'rdma -d link' on IB: state/physical_state on an indented
    # line under the link, caps wrapped over three lines
    links = parse_rdma_link(fixture("rdma_link", "real_ib_detail_caps2.txt"))["links"]
    assert len(links) == 1
    link = links[0]
    assert (link["device"], link["port"], link["lid"], link["sm_lid"], link["lmc"]) == ("mlx5_0", 1, 2, 2, 0)
    assert (link["state"], link["physical_state"]) == ("ACTIVE", "LINK_UP")
    assert link["caps"][:2] == ["SM", "TRAP"] and link["caps"][-1] == "EXT_INFO" and len(link["caps"]) == 15
    assert "CAP_MASK2" in link["caps"] and "CLIENT_REG" in link["caps"]


def test_rdma_link_old_layout_behind_a_bracket_prompt_is_text():
    # the capture starts with '[root@nps ~]#': text, not JSON
    links = parse_rdma_link(fixture("rdma_link", "real_old_layout_roce_detail.txt"))["links"]
    assert [(lk["device"], lk["port"], lk["state"], lk["netdev"]) for lk in links] == [("mlx5_3", 1, "ACTIVE", "ens7")] * 2
    assert links[1]["netdev_index"] == 7 and links[1]["caps"] == ["CM", "IP_BASED_GIDS"]
    assert "caps" not in links[0]


def test_rdma_link_indented_line_that_is_not_link_data_is_ignored():
    text = "    link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev eth0\n    $ ibdev2netdev\n"
    assert parse_rdma_link(text) == {
        "links": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "eth0"}],
        "warnings": [],
    }


def test_rdma_link_json_2017_ifname_with_port():
    links = parse_rdma_link(fixture("rdma_link", "real_json_2017_ib.json"))["links"]
    assert [(lk["device"], lk["port"], lk["lid"], lk["state"]) for lk in links] == [("mlx5_0", 1, 13399, "ACTIVE"), ("mlx5_1", 1, 13400, "ACTIVE")]
    assert links[0]["caps"] == ["AUTO_MIG"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("Error: Failed to get device mlx5_9\n", "line 1: Error: Failed to get device mlx5_9"),
        ("", "empty output"),
        ("[]", "not a non-empty list"),
        ('[{"ifname": "mlx5_0"}]', "entry 0 has no ifname and port"),
    ],
)
def test_rdma_link_bad_input(text, message):
    with pytest.raises(ParseError, match=message):
        parse_rdma_link(text)


def test_rdma_link_word_without_value_is_a_warning():
    result = parse_rdma_link("link mlx5_0/1 state ACTIVE physical_state\n")
    assert result["links"][0]["state"] == "ACTIVE"
    assert result["warnings"] == ["line 1: 'physical_state' without a value"]
