"""Parsers of infiniband-diags output, on captures from the real tools
(infiniband-diags 44.0) reading the lab's ibsim fabric."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from conftest import fixture
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import ibdiag


def test_sminfo_master():
    sm = ibdiag.parse_sminfo(fixture("sminfo", "master.txt"))
    assert sm["lid"] == 1
    assert sm["guid"] == "0xa088c20300000101"
    assert sm["priority"] == 15
    assert sm["state"] == 3 and sm["state_name"] == "SMINFO_MASTER" and sm["master"]


def test_sminfo_standby():
    sm = ibdiag.parse_sminfo(fixture("sminfo", "standby.txt"))
    assert (sm["lid"], sm["priority"], sm["state_name"], sm["master"]) == (3, 14, "SMINFO_STANDBY", False)


@pytest.mark.parametrize(
    "text",
    [
        fixture("sminfo", "error-no-lid.txt"),
        "",
        "ibwarn: [1] umad_init: can't read ABI version from /sys/class/infiniband_mad/abi_version (No such file or directory)\n"
        "sminfo: iberror: failed: Failed to open '(null)' port '0'\n",
        "sminfo: command not found\n",
        "something else entirely\n",
    ],
)
def test_sminfo_errors(text):
    with pytest.raises(ParseError):
        ibdiag.parse_sminfo(text)


def test_ibnetdiscover_lab():
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    nodes = nd["nodes"]
    switches = {n["desc"]: n for n in nodes.values() if n["type"] == "switch"}
    cas = {n["desc"]: n for n in nodes.values() if n["type"] == "ca"}
    assert set(switches) == {"leaf1", "leaf2", "spine1"}
    assert set(cas) == {"node1 mlx5_0", "node2 mlx5_0", "node3 mlx5_0", "node4 mlx5_0"}
    leaf1 = switches["leaf1"]
    assert leaf1["guid"] == "0xe41d2d0300a00001" and leaf1["nports"] == 36
    p1 = leaf1["ports"][1]
    assert p1["peer_guid"] == "0xa088c20300000100"
    assert p1["peer_port_guid"] == "0xa088c20300000101"
    assert p1["peer_desc"] == "node1 mlx5_0" and p1["peer_lid"] == 1
    assert (p1["width"], p1["speed"]) == (4, "QDR")
    assert leaf1["ports"][7]["peer_guid"] == switches["spine1"]["guid"]
    n1 = cas["node1 mlx5_0"]
    assert n1["ports"][1]["port_guid"] == "0xa088c20300000101"
    assert n1["ports"][1]["lid"] == 1 and n1["lid"] == 1
    assert len(nd["links"]) == 6


def test_ibnetdiscover_missing_and_swapped():
    nd = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib-missing-swapped.txt"))
    descs = {n["desc"] for n in nd["nodes"].values()}
    assert "node2 mlx5_0" not in descs
    leaf2 = next(n for n in nd["nodes"].values() if n["desc"] == "leaf2")
    assert leaf2["ports"][1]["peer_desc"] == "node4 mlx5_0"
    assert leaf2["ports"][2]["peer_desc"] == "node3 mlx5_0"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ibwarn: [7] mad_rpc_open_port: can't open UMAD port ((null):0)\nibnetdiscover: iberror: failed: Failed to open '(null)' port '0'\n",
        "#\n# Topology file: generated on x\n#\n",
        'Switch 8 "leaf1"\n[1] "H-1"[1]\n',
    ],
)
def test_ibnetdiscover_errors(text):
    with pytest.raises(ParseError):
        ibdiag.parse_ibnetdiscover(text)


def test_iblinkinfo_lab():
    ports = ibdiag.parse_iblinkinfo(fixture("iblinkinfo", "lab-ib.txt"))
    ca = [p for p in ports if p["node_type"] == "ca"]
    assert {p["node_desc"] for p in ca} == {"node1 mlx5_0", "node2 mlx5_0", "node3 mlx5_0", "node4 mlx5_0"}
    n1 = next(p for p in ca if p["node_desc"] == "node1 mlx5_0")
    assert n1["port_guid"] == "0xa088c20300000101"
    assert (n1["lid"], n1["port"], n1["width"], n1["lane_gbps"], n1["speed_gbps"]) == (1, 1, 4, 10.0, 40.0)
    assert (n1["state"], n1["phys_state"], n1["peer_lid"], n1["peer_port"], n1["peer_desc"]) == ("Active", "LinkUp", 2, 1, "leaf1")
    leaf1 = [p for p in ports if p["node_desc"] == "leaf1"]
    assert len(leaf1) == 36 and leaf1[0]["node_guid"] == "0xe41d2d0300a00001"
    down = next(p for p in leaf1 if p["port"] == 3)
    assert (down["state"], down["phys_state"], down["width"], down["peer_port"]) == ("Down", "Polling", None, None)


def test_iblinkinfo_degraded():
    ports = ibdiag.parse_iblinkinfo(fixture("iblinkinfo", "lab-ib-degraded.txt"))
    up = next(p for p in ports if p["node_desc"] == "leaf1" and p["port"] == 7)
    assert (up["width"], up["lane_gbps"], up["speed_gbps"]) == (1, 2.5, 2.5)
    n4 = next(p for p in ports if p["node_desc"] == "leaf2" and p["port"] == 2)
    assert (n4["width"], n4["lane_gbps"], n4["speed_gbps"]) == (4, 5.0, 20.0)


def test_iblinkinfo_modern_rates():
    line = (
        "Switch: 0x946dae03006ab5c0 MF0;leaf9:MQM9790/U1:\n"
        '          12    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>      75    1[  ] "gpu01 mlx5_0" ( )\n'
        '          12    2[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>      76    1[  ] "gpu02 mlx5_0" ( Could be 106.25 Gbps)\n'
    )
    a, b = ibdiag.parse_iblinkinfo(line)
    assert a["node_desc"] == "MF0;leaf9:MQM9790/U1" and a["speed_gbps"] == 400.0
    assert b["speed_gbps"] == 200.0


@pytest.mark.parametrize("text", ["", "iblinkinfo: iberror: failed: discover failed\n", "CA: x:\n garbage\n"])
def test_iblinkinfo_errors(text):
    with pytest.raises(ParseError):
        ibdiag.parse_iblinkinfo(text)


def test_smpquery_pkeys():
    t = ibdiag.parse_smpquery_pkeys(fixture("smpquery", "pkeys-node3.txt"))
    assert t["capacity"] == 64
    assert t["pkeys"] == [0xFFFF, 0x8010, 0x0020]


def test_smpquery_pkeys_error():
    with pytest.raises(ParseError):
        ibdiag.parse_smpquery_pkeys(
            "ibwarn: [1] mad_rpc: _do_madrpc failed; dport (Lid 99)\nsmpquery: iberror: failed: operation pkeys: part table query failed\n"
        )
    with pytest.raises(ParseError):
        ibdiag.parse_smpquery_pkeys("hello\n")


def test_norm_guid():
    assert ibdiag.norm_guid("A088C20300000101") == "0xa088c20300000101"
    assert ibdiag.norm_guid("0x2c9") == "0x00000000000002c9"
    with pytest.raises(ValueError):
        ibdiag.norm_guid("node1")


# ------------------------------------------------------- ibnetdiscover -g (grouped)


def _sourced(tool, name):
    from parser_fixtures import fixture as sourced_fixture

    return sourced_fixture(tool, name)


def test_ibnetdiscover_grouped_non_chassis_heading_man_page_example():
    topo = ibdiag.parse_ibnetdiscover(_sourced("ibnetdiscover", "real_grouped_manpage.txt"))
    assert len(topo["nodes"]) == 6 and len(topo["links"]) == 7
    isr = topo["nodes"]["0x005442ba00003080"]
    assert (isr["type"], isr["desc"], isr["lid"], isr["nports"]) == ("switch", "ISR9024 Voltaire", 6, 24)
    assert "chassis" not in isr
    assert isr["ports"][10]["peer_guid"] == "0x0008f10400410015" and isr["ports"][10]["speed"] == "SDR"
    ca = topo["nodes"]["0x0008f10403960558"]
    assert ca["ports"][1]["width"] == 1 and ca["ports"][2]["width"] == 4


def test_ibnetdiscover_real_cluster_x5_voltaire_and_infiniscale():
    # a whole fabric (2020): 11 switches, 89 CAs, every port line read once per end
    topo = ibdiag.parse_ibnetdiscover(_sourced("ibnetdiscover", "real_x5_voltaire_qdr_2020.txt"))
    nodes = topo["nodes"]
    assert sum(n["type"] == "switch" for n in nodes.values()) == 11 and len(nodes) == 100
    assert len(topo["links"]) == 159
    volt = nodes["0x0008f10500200b50"]
    assert (volt["desc"], volt["lid"], volt["nports"], volt["enhanced_port0"]) == ("Voltaire 4036 - 36 QDR ports switch", 9, 36, True)
    assert (volt["ports"][4]["speed"], volt["ports"][4]["peer_lid"], volt["ports"][1]["speed"]) == ("DDR", 72, "QDR")
    assert nodes["0x0002c90200417670"]["enhanced_port0"] is False
    ca = nodes["0x0002c90300080e84"]
    assert (ca["type"], ca["lid"], ca["ports"][1]["port_guid"], ca["ports"][1]["peer_port"]) == ("ca", 17, "0x0002c90300080e85", 27)


def test_ibnetdiscover_grouped_chassis_sections_and_external_ports():
    topo = ibdiag.parse_ibnetdiscover(_sourced("ibnetdiscover", "grouped_chassis.txt"))
    spine, line, ca = (topo["nodes"][g] for g in ("0x0008f104004121fa", "0x0008f10400412180", "0xa088c20300000100"))
    assert spine["chassis"] == 1 and line["chassis"] == 1 and "chassis" not in ca
    assert line["ports"][12]["ext_port"] == 1 and line["ports"][12]["peer_guid"] == ca["guid"]
    assert ca["ports"][1]["peer_ext_port"] == 1 and ca["ports"][1]["peer_port"] == 12
    assert sorted((lk["a_port"], lk["b_port"]) for lk in topo["links"]) == [(1, 13), (12, 1)]


def test_ibnetdiscover_still_rejects_a_stray_line_in_grouped_output():
    text = _sourced("ibnetdiscover", "grouped_chassis.txt").replace("Non-Chassis Nodes", "Non-Chassis Nodez")
    with pytest.raises(ParseError, match="unexpected line: Non-Chassis Nodez"):
        ibdiag.parse_ibnetdiscover(text)


# ------------------------------------------- ibnetdiscover: published outputs of three eras


def test_ibnetdiscover_real_sdr_2009_switch_without_sysimgguid():
    topo = ibdiag.parse_ibnetdiscover(_sourced("ibnetdiscover", "real_ibm_pcm_sdr_2009.txt"))
    sw = topo["nodes"]["0x000b8cffff0053ee"]
    assert (sw["type"], sw["desc"], sw["lid"], sw["nports"]) == ("switch", "MT43132 Mellanox Technologies", 3, 8)
    assert sw["ports"][2]["peer_guid"] == "0x0002c9030002847c" and sw["ports"][2]["speed"] == "SDR"
    assert len(topo["links"]) == 2 and topo["warnings"] == []


def test_ibnetdiscover_real_sun_dcs36_whitespace_separator_line():
    topo = ibdiag.parse_ibnetdiscover(_sourced("ibnetdiscover", "real_oracle_sun_dcs36_qdr.txt"))
    ca = topo["nodes"]["0x0003ba000100e388"]
    assert (ca["desc"], ca["ports"][2]["peer_port"], ca["ports"][2]["speed"]) == ("nsn33-43 HCA-1", 23, "QDR")
    assert topo["nodes"]["0x0021283a8389a0a0"]["enhanced_port0"] is True
    assert topo["links"] == [{"a_guid": "0x0021283a8389a0a0", "a_port": 23, "b_guid": "0x0003ba000100e388", "b_port": 2, "width": 4, "speed": "QDR"}]


def test_ibnetdiscover_failed_query_line_is_a_warning_not_a_failure():
    # NVIDIA's published capture starts with libibmad's report of a timed-out SMP
    topo = ibdiag.parse_ibnetdiscover(_sourced("ibnetdiscover", "real_nvidia_switchib_edr_2016.txt"))
    assert len(topo["nodes"]) == 8 and len(topo["links"]) == 10
    assert topo["warnings"] == [
        "ibnetdiscover reported a failed query (umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110;"
        " Connection timed out): nodes behind that route may be missing from the topology"
    ]
    sib = topo["nodes"]["0xe41d2d030003e470"]
    assert sib["ports"][3]["speed"] == "FDR" and sib["ports"][34]["speed"] == "EDR"
    assert sib["ports"][1]["peer_guid"] == sib["guid"] and sib["ports"][1]["peer_port"] == 2  # loopback cable


def test_ibnetdiscover_failed_query_line_anywhere_keeps_every_node():
    clean = ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt"))
    lines = fixture("ibnetdiscover", "lab-ib.txt").splitlines()
    lines.insert(len(lines) // 2, "src/ibnetdisc.c:391; Query remote node (0x0000000000000000) failed, skipping port")
    topo = ibdiag.parse_ibnetdiscover("\n".join(lines))
    assert topo["nodes"] == clean["nodes"] and topo["links"] == clean["links"]
    assert topo["warnings"] == [
        "ibnetdiscover reported a failed query (Query remote node (0x0000000000000000) failed,"
        " skipping port): nodes behind that route may be missing from the topology"
    ]
    assert clean["warnings"] == []
    with pytest.raises(ParseError, match="unexpected line: query_smp.c 195 umad"):
        ibdiag.parse_ibnetdiscover(fixture("ibnetdiscover", "lab-ib.txt") + "\nquery_smp.c 195 umad\n")
