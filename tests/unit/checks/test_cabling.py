"""RoCE cabling by LLDP: the comparison of checks/cabling.py (the parsers of parsers/lldp.py are tested in
tests/unit/parsers/test_lldp.py)."""

import json

from ansible_collections.linerate.fabric.plugins.module_utils.checks import cabling

HOSTS = {
    "node1": [
        {"device": "mlx5_0", "netdev": "enp65s0f0np0", "switch": "leaf1", "switch_port": "swp1"},
        {"device": "mlx5_1", "netdev": "enp66s0f0np0", "switch": "leaf2", "switch_port": "Ethernet0"},
    ],
    "node2": [
        {"device": "mlx5_0", "netdev": "enp65s0f0np0", "switch": "leaf1", "switch_port": "swp2"},
        {"device": "mlx5_1", "netdev": "enp66s0f0np0", "switch": "leaf2", "switch_port": "Ethernet8"},
    ],
}
UPLINKS = {
    "leaf1": [{"port": "swp3", "peer": "spine1", "peer_port": "Ethernet1/1"}],
    "leaf2": [{"port": "Ethernet16", "peer": "spine1", "peer_port": "Ethernet2/1"}],
}
MACS = {
    "node1": {"enp65s0f0np0": "0c:42:a1:01:00:00", "enp66s0f0np0": "0c:42:a1:01:00:01"},
    "node2": {"enp65s0f0np0": "0c:42:a1:02:00:00", "enp66s0f0np0": "0c:42:a1:02:00:01"},
}


def nb(name, port, descr=None):
    return {"system_name": name, "port_id": port, "port_id_type": None, "port_descr": descr, "chassis_id": None}


def healthy():
    return {
        "leaf1": {
            "neighbors": {
                "swp1": [nb("node1", "0c:42:a1:01:00:00", "enp65s0f0np0")],
                "swp2": [nb("node2", "0c:42:a1:02:00:00", "enp65s0f0np0")],
                "swp3": [nb("spine1", "Ethernet1/1")],
                "eth0": [nb("oob-mgmt", "swp10")],
            }
        },
        "leaf2": {
            "neighbors": {
                "Ethernet0": [nb("node1", "0c:42:a1:01:00:01")],
                "Ethernet8": [nb("node2", "0c:42:a1:02:00:01")],
                "Ethernet16": [nb("spine1", "Ethernet2/1")],
            }
        },
        "spine1": {"neighbors": {"Ethernet1/1": [nb("leaf1", "swp3")], "Ethernet2/1": [nb("leaf2", "Ethernet16")]}},
    }


def reads(**kw):
    return {n: {"macs": MACS[n], "names": [n], "lldpctl": None, "error": "lldpctl: command not found"} for n in HOSTS}


def run(sw, host_reads=None, host_lldp=False):
    return cabling.check_cabling(HOSTS, UPLINKS, sw, host_reads if host_reads is not None else reads(), host_lldp)


def codes(findings):
    return sorted(f["code"] for f in findings)


# ---------------------------------------------------------------- comparison


def test_healthy_fabric_has_no_findings_and_every_link_passes():
    findings, cases = run(healthy())
    assert findings == []
    assert len(cases) == 8 and all(c["ok"] for c in cases)
    assert cabling.summary(findings, cases)["passed"]


def test_the_report_names_the_leaves_lldp_saw_each_node_on_for_the_next_rollout():
    sw = healthy()
    observed = cabling.observed_map(HOSTS, UPLINKS, sw, reads())
    assert cabling.summary(*run(sw), observed)["observed_leaves"] == {"node1": ["leaf1", "leaf2"], "node2": ["leaf1", "leaf2"]}
    assert "observed_leaves" not in cabling.summary(*run(sw))
    # node2's rail-1 cable moved to leaf1: LLDP sees node2 on leaf1 only, and says so
    sw["leaf1"]["neighbors"]["swp4"] = sw["leaf2"]["neighbors"].pop("Ethernet8")
    observed = cabling.observed_map(HOSTS, UPLINKS, sw, reads())
    assert cabling.summary(*run(sw), observed)["observed_leaves"]["node2"] == ["leaf1"]


def test_swap_of_two_host_cables_names_both_nodes_devices_and_ports():
    sw = healthy()
    l1 = sw["leaf1"]["neighbors"]
    l1["swp1"], l1["swp2"] = l1["swp2"], l1["swp1"]
    findings, cases = run(sw)
    assert codes(findings) == ["CABLE_SWAPPED"]
    f = findings[0]
    assert (f["node"], f["device"], f["switch"], f["switch_port"]) == ("node1", "mlx5_0", "leaf1", "swp1")
    assert (f["peer_node"], f["peer_device"], f["other_switch_port"]) == ("node2", "mlx5_0", "swp2")
    assert f["severity"] == "error" and f["check"] == "cabling"
    assert "node1 mlx5_0" in f["message"] and "node2 mlx5_0" in f["message"]
    assert [c["code"] for c in cases if not c["ok"]] == ["CABLE_SWAPPED", "CABLE_SWAPPED"]
    assert not cabling.summary(findings, cases)["passed"]


def test_another_node_on_a_port_is_miswired_naming_both_ends():
    sw = healthy()
    sw["leaf2"]["neighbors"]["Ethernet0"] = [nb("node2", "0c:42:a1:02:00:00")]  # node2's rail-0 netdev
    findings, _ = run(sw)
    f = [x for x in findings if x["code"] == "CABLE_MISWIRED"][0]
    assert (f["node"], f["device"], f["switch"], f["switch_port"]) == ("node1", "mlx5_1", "leaf2", "Ethernet0")
    assert (f["peer_node"], f["peer_device"]) == ("node2", "mlx5_0")


def test_known_endpoint_on_an_uncabled_port_is_miswired():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp7"] = sw["leaf1"]["neighbors"].pop("swp2")
    findings, _ = run(sw)
    assert codes(findings) == ["CABLE_MISWIRED", "CABLE_UNVERIFIED"]
    moved = [x for x in findings if x["code"] == "CABLE_MISWIRED"][0]
    assert (moved["node"], moved["device"], moved["switch_port"]) == ("node2", "mlx5_0", "swp7")
    assert "leaf1 swp2" in moved["message"]


def test_fqdn_system_name_uppercase_mac_and_ifname_port_id_match():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp1"] = [nb("NODE1.cluster.example.com", "0C:42:A1:01:00:00")]
    sw["leaf1"]["neighbors"]["swp2"] = [nb("node2.cluster.example.com", "enp65s0f0np0")]
    sw["spine1"]["neighbors"]["Ethernet1/1"] = [nb("leaf1.example.com", "swp3")]
    sw["leaf1"]["neighbors"]["swp3"] = [nb("spine1", "Et1/1")]
    assert run(sw)[0] == []


def test_host_mac_unknown_still_matches_on_the_node_but_a_wrong_mac_of_the_node_does_not():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp1"] = [nb("node1", "aa:bb:cc:dd:ee:ff")]  # MAC not read: node matches
    assert run(sw)[0] == []
    sw["leaf1"]["neighbors"]["swp1"] = [nb("node1", "0c:42:a1:01:00:01")]  # node1's other rail
    assert codes(run(sw)[0]) == ["CABLE_MISWIRED"]


def test_missing_uplink_is_an_error_and_a_silent_host_port_a_warning():
    sw = healthy()
    del sw["leaf1"]["neighbors"]["swp3"]
    del sw["spine1"]["neighbors"]["Ethernet1/1"]
    del sw["leaf2"]["neighbors"]["Ethernet8"]
    findings, _ = run(sw)
    assert codes(findings) == ["CABLE_MISSING", "CABLE_MISSING", "CABLE_UNVERIFIED"]
    host = [x for x in findings if x["code"] == "CABLE_UNVERIFIED"][0]
    assert (host["node"], host["device"], host["switch"], host["switch_port"]) == ("node2", "mlx5_1", "leaf2", "Ethernet8")
    assert host["severity"] == "warning" and "unproven" in host["message"]
    up = [x for x in findings if x["code"] == "CABLE_MISSING" and x["switch"] == "leaf1"][0]
    assert (up["switch_port"], up["peer_switch"], up["peer_port"]) == ("swp3", "spine1", "Ethernet1/1")


def test_unknown_neighbour_on_uncabled_port_is_unexpected_but_management_port_is_not():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp9"] = [nb("storage7", "ens1f0")]
    findings, _ = run(sw)
    assert codes(findings) == ["CABLE_UNEXPECTED"]
    assert findings[0]["switch_port"] == "swp9" and findings[0]["peer_system_name"] == "storage7"


def test_unreachable_switch_is_a_warning_naming_what_is_unproven():
    sw = healthy()
    sw["leaf2"] = {"unreadable": True, "msg": "switch leaf2: unreachable at 127.0.1.2:22: timed out"}
    findings, cases = run(sw)
    assert codes(findings) == ["CABLE_UNVERIFIED"]
    f = findings[0]
    assert f["switch"] == "leaf2" and "unreachable" in f["message"]
    assert "node1 mlx5_1 (enp66s0f0np0)" in f["unproven"]
    assert sum(1 for c in cases if c.get("skipped")) == 3  # its 2 host ports and its uplink end


def test_host_without_lldpd_is_a_warning_when_host_reads_are_on():
    findings, _ = run(healthy(), host_lldp=True)
    assert codes(findings) == ["CABLE_UNVERIFIED", "CABLE_UNVERIFIED"]
    assert {f["node"] for f in findings} == {"node1", "node2"}
    assert all("lldpctl: command not found" in f["message"] for f in findings)


def _lldpctl(ifaces):
    return json.dumps(
        {
            "lldp": {
                "interface": [
                    {i: {"chassis": {s: {"id": {"type": "mac", "value": "44:38:39:00:00:01"}}}, "port": {"id": {"type": "ifname", "value": p}}}}
                    for i, (s, p) in ifaces.items()
                ]
            }
        }
    )


def test_host_side_lldpctl_agrees_or_names_the_miswire():
    r = reads()
    r["node1"]["lldpctl"] = _lldpctl({"enp65s0f0np0": ("leaf1.example.com", "swp1"), "enp66s0f0np0": ("leaf2", "Ethernet0")})
    r["node2"]["lldpctl"] = _lldpctl({"enp65s0f0np0": ("leaf1", "swp2"), "enp66s0f0np0": ("leaf2", "Ethernet4")})
    findings, _ = run(healthy(), r, host_lldp=True)
    assert codes(findings) == ["CABLE_MISWIRED"]
    f = findings[0]
    assert (f["node"], f["device"], f["switch"], f["switch_port"]) == ("node2", "mlx5_1", "leaf2", "Ethernet8")
    assert f["seen"] == ["leaf2 Ethernet4"]


def test_host_side_unreadable_lldpctl_is_a_warning_not_a_crash():
    r = reads()
    r["node1"]["lldpctl"] = "not json"
    r["node2"]["lldpctl"] = _lldpctl({})
    findings, _ = run(healthy(), r, host_lldp=True)
    assert codes(findings) == ["CABLE_UNVERIFIED"]
    assert findings[0]["node"] == "node1" and "unreadable" in findings[0]["message"]


def test_host_reads_off_for_a_node_skip_its_host_side():
    r = reads()
    for n in r:
        r[n]["host_lldp"] = False
    assert run(healthy(), r, host_lldp=True)[0] == []


def test_markdown_report_has_a_cabling_section_naming_the_failing_link():
    from ansible_collections.linerate.fabric.plugins.module_utils.report import report
    from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
    from ansible_collections.linerate.fabric.plugins.module_utils import findings as faults

    sw = healthy()
    l1 = sw["leaf1"]["neighbors"]
    l1["swp1"], l1["swp2"] = l1["swp2"], l1["swp1"]
    findings, cases = run(sw)
    doc = report.build_report(findings, faults.summarize(findings), {"cabling": cabling.summary(findings, cases)}, {"name": "lab", "transport": "roce"})
    md = report_markdown.to_markdown(doc)
    assert "### Cabling (LLDP)" in md
    assert "| leaf1 swp1 <- node1 mlx5_0 (enp65s0f0np0) | FAIL | CABLE_SWAPPED |" in md
    assert "| CABLE_SWAPPED | cabling | node1 | mlx5_0 | leaf1 | swp1 |" in md


# ---------------------------------------------------------------- exact findings (mutation testing)
# Each finding whole: its code, its severity (errors fail the check, warnings say what is unproven),
# both ends and the words an operator reads.


def cable(code, severity, message, node=None, device=None, switch=None, switch_port=None, **extra):
    return {
        "code": code,
        "severity": severity,
        "layer": "cabling",
        "check": "cabling",
        "node": node,
        "device": device,
        "switch": switch,
        "switch_port": switch_port,
        "message": message,
        **extra,
    }


OK_CASE = {"ok": True, "code": None, "message": None, "findings": []}


def test_swap_is_one_error_and_the_host_side_of_the_swapped_ports_adds_nothing():
    sw = healthy()
    l1 = sw["leaf1"]["neighbors"]
    l1["swp1"], l1["swp2"] = l1["swp2"], l1["swp1"]
    r = reads()
    r["node1"]["lldpctl"] = _lldpctl({"enp65s0f0np0": ("leaf1", "swp2"), "enp66s0f0np0": ("leaf2", "Ethernet0")})
    r["node2"]["lldpctl"] = _lldpctl({"enp65s0f0np0": ("leaf1", "swp1"), "enp66s0f0np0": ("leaf2", "Ethernet8")})
    findings, cases = run(sw, r, host_lldp=True)
    swap = cable(
        "CABLE_SWAPPED",
        "error",
        "leaf1 swp1 and swp2: cables swapped: swp1 should have node1 mlx5_0 (enp65s0f0np0) and sees node2 "
        "mlx5_0 (enp65s0f0np0); swp2 should have node2 mlx5_0 (enp65s0f0np0) and sees node1 mlx5_0 "
        "(enp65s0f0np0)",
        "node1",
        "mlx5_0",
        "leaf1",
        "swp1",
        peer_node="node2",
        peer_device="mlx5_0",
        peer_netdev="enp65s0f0np0",
        other_switch_port="swp2",
    )
    assert findings == [swap]
    assert cases[:3] == [
        {"name": "leaf1 swp1 <- node1 mlx5_0 (enp65s0f0np0)", "ok": False, "code": "CABLE_SWAPPED", "message": swap["message"], "findings": [swap]},
        {"name": "leaf1 swp2 <- node2 mlx5_0 (enp65s0f0np0)", "ok": False, "code": "CABLE_SWAPPED", "message": swap["message"], "findings": [swap]},
        {"name": "leaf1 swp3 <- spine1 Ethernet1/1", **OK_CASE},
    ]
    assert cabling.summary(findings, cases)["detail"] == "6/8 intended links seen by LLDP as cabled; 1 error(s), 0 warning(s)"


def test_miswire_by_mac_names_the_peer_device_found_by_its_mac_not_the_mac():
    sw = healthy()
    sw["leaf2"]["neighbors"]["Ethernet0"] = [nb("node2", "0c:42:a1:02:00:00", "enp65s0f0np0")]
    findings, cases = run(sw)
    wrong = cable(
        "CABLE_MISWIRED",
        "error",
        "leaf2 Ethernet0: should have node1 mlx5_1 (enp66s0f0np0), LLDP shows node2 mlx5_0 (enp65s0f0np0)",
        "node1",
        "mlx5_1",
        "leaf2",
        "Ethernet0",
        peer_node="node2",
        peer_device="mlx5_0",
        peer_netdev="enp65s0f0np0",
    )
    assert findings == [wrong]
    assert [c for c in cases if not c["ok"]] == [
        {"name": "leaf2 Ethernet0 <- node1 mlx5_1 (enp66s0f0np0)", "ok": False, "code": "CABLE_MISWIRED", "message": wrong["message"], "findings": [wrong]}
    ]


def test_missing_uplink_is_an_error_both_ways_and_a_silent_host_port_a_warning_naming_the_node():
    sw = healthy()
    del sw["leaf1"]["neighbors"]["swp3"]
    del sw["spine1"]["neighbors"]["Ethernet1/1"]
    del sw["leaf2"]["neighbors"]["Ethernet8"]
    findings, cases = run(sw)
    assert findings == [
        cable(
            "CABLE_MISSING",
            "error",
            "leaf1 swp3: no LLDP neighbour where spine1 Ethernet1/1 should be (switches run LLDP: no cable, or the link is down)",
            None,
            None,
            "leaf1",
            "swp3",
            peer_switch="spine1",
            peer_port="Ethernet1/1",
        ),
        cable(
            "CABLE_UNVERIFIED",
            "warning",
            "leaf2 Ethernet8: no LLDP neighbour where node2 mlx5_1 (enp66s0f0np0) "
            "should be: lldpd not running on node2, LLDP off on the port, or no cable; this port's cabling is "
            "unproven",
            "node2",
            "mlx5_1",
            "leaf2",
            "Ethernet8",
        ),
        cable(
            "CABLE_MISSING",
            "error",
            "spine1 Ethernet1/1: no LLDP neighbour where leaf1 swp3 should be (switches run LLDP: no cable, or the link is down)",
            None,
            None,
            "spine1",
            "Ethernet1/1",
            peer_switch="leaf1",
            peer_port="swp3",
        ),
    ]
    # a warning leaves its link's case passing (unproven, not wrong); the errors fail theirs
    assert [(c["name"], c["ok"], c["code"]) for c in cases if c["code"]] == [
        ("leaf1 swp3 <- spine1 Ethernet1/1", False, "CABLE_MISSING"),
        ("leaf2 Ethernet8 <- node2 mlx5_1 (enp66s0f0np0)", True, "CABLE_UNVERIFIED"),
        ("spine1 Ethernet1/1 <- leaf1 swp3", False, "CABLE_MISSING"),
    ]
    assert cabling.summary(findings, cases) == {
        "passed": False,
        "cases": cases,
        "detail": "6/8 intended links seen by LLDP as cabled; 2 error(s), 1 warning(s)",
    }


def test_nameless_neighbour_on_an_intended_port_is_an_error_an_unknown_one_elsewhere_a_warning():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp2"] = [nb(None, None)]
    sw["leaf1"]["neighbors"]["swp9"] = [nb("storage7", "ens1f0")]
    assert run(sw)[0] == [
        cable(
            "CABLE_MISWIRED",
            "error",
            "leaf1 swp2: should have node2 mlx5_0 (enp65s0f0np0), LLDP shows unknown neighbour (no system name) port ?",
            "node2",
            "mlx5_0",
            "leaf1",
            "swp2",
            peer_system_name=None,
            peer_port_id=None,
        ),
        cable(
            "CABLE_UNEXPECTED",
            "warning",
            "leaf1 swp9: unknown neighbour storage7 port ens1f0, on a port the inventory does not cable",
            None,
            None,
            "leaf1",
            "swp9",
            peer_system_name="storage7",
            peer_port_id="ens1f0",
        ),
    ]


def test_unreadable_and_unread_switches_are_warnings_counting_their_intended_links():
    sw = healthy()
    sw["leaf2"] = {"unreadable": True, "msg": "timed out"}
    del sw["spine1"]
    findings, cases = run(sw)
    assert findings == [
        cable(
            "CABLE_UNVERIFIED",
            "warning",
            "leaf2: LLDP neighbours could not be read (timed out): the cabling of its 3 intended link(s) is unproven from the switch side",
            switch="leaf2",
            unproven=["node1 mlx5_1 (enp66s0f0np0)", "node2 mlx5_1 (enp66s0f0np0)", "spine1 Ethernet2/1"],
        ),
        cable(
            "CABLE_UNVERIFIED",
            "warning",
            "spine1: LLDP neighbours could not be read (not read): the cabling of its 2 intended link(s) is unproven from the switch side",
            switch="spine1",
            unproven=["leaf1 swp3", "leaf2 Ethernet16"],
        ),
    ]
    assert [c for c in cases if c.get("skipped")][0] == {"name": "leaf2 Ethernet0 <- node1 mlx5_1 (enp66s0f0np0)", "skipped": True, "message": "leaf2 not read"}


def test_host_side_miswire_and_unreadable_lldpctl_exact():
    r = reads()
    r["node1"]["lldpctl"] = "not json"
    r["node2"]["lldpctl"] = _lldpctl({"enp65s0f0np0": ("leaf1", "swp2"), "enp66s0f0np0": ("leaf2", "Ethernet4")})
    findings, _ = run(healthy(), r, host_lldp=True)
    assert findings == [
        {
            "code": "CABLE_UNVERIFIED",
            "severity": "warning",
            "layer": "cabling",
            "check": "cabling",
            "node": "node1",
            "device": None,
            "switch": None,
            "switch_port": None,
            "message": "node1: lldpctl output unreadable (lldpctl -f json: not JSON: Expecting value: line 1 column 1 "
            "(char 0)): the host side of its cabling is unproven",
        },
        cable(
            "CABLE_MISWIRED",
            "error",
            "node2 mlx5_1 (enp66s0f0np0): lldpd sees leaf2 Ethernet4, the inventory cables it to leaf2 Ethernet8",
            "node2",
            "mlx5_1",
            "leaf2",
            "Ethernet8",
            seen=["leaf2 Ethernet4"],
        ),
    ]


def test_host_side_is_read_by_default_and_a_node_without_a_read_is_unproven():
    findings, _ = cabling.check_cabling(HOSTS, UPLINKS, healthy(), {"node1": reads()["node1"]})
    assert findings == [
        cable(
            "CABLE_UNVERIFIED",
            "warning",
            "node1: lldpctl could not be read (lldpctl: command not found): the host "
            "side of its 2 RDMA port(s)' cabling is unproven (the switch side still counts)",
            "node1",
        ),
        cable(
            "CABLE_UNVERIFIED",
            "warning",
            "node2: lldpctl could not be read (not read): the host side of its 2 RDMA port(s)' cabling is unproven (the switch side still counts)",
            "node2",
        ),
    ]


def test_the_index_the_other_checks_locate_endpoints_with():
    idx = cabling.cabling_index({"node1": {"rdma_ports": HOSTS["node1"]}, "node2": [HOSTS["node2"][0], {"device": "mlx5_9", "netdev": "ib0"}]})
    assert idx == {
        ("node1", "mlx5_0"): HOSTS["node1"][0],
        ("node1", "mlx5_1"): HOSTS["node1"][1],
        ("node2", "mlx5_0"): HOSTS["node2"][0],
        ("node2", "mlx5_9"): {"device": "mlx5_9", "netdev": "ib0"},
    }
    assert cabling._where(idx, "node1", "mlx5_1") == {"node": "node1", "device": "mlx5_1", "switch": "leaf2", "switch_port": "Ethernet0"}
    assert cabling._where(idx, "node3", "mlx5_0") == {"node": "node3", "device": "mlx5_0", "switch": None, "switch_port": None}
    assert cabling.leaves_of(idx) == {("node1", "mlx5_0"): "leaf1", ("node1", "mlx5_1"): "leaf2", ("node2", "mlx5_0"): "leaf1"}
    assert (cabling.short_name(" Node1.Cluster.example.com "), cabling.short_name(None), cabling.port_key(None)) == ("node1", "", "")
    assert (cabling.port_key(" Et1/1 "), cabling.port_key("Ethernet1/1"), cabling.port_key("Eth1")) == ("ethernet1/1", "ethernet1/1", "eth1")


def test_a_host_port_by_an_unknown_mac_is_the_node_with_its_device_and_netdev_unknown():
    sw = healthy()
    sw["leaf2"]["neighbors"]["Ethernet0"] = [nb("node2", "aa:bb:cc:dd:ee:ff")]  # a MAC not read from node2
    findings, _ = run(sw)
    assert [{k: v for k, v in f.items() if k != "message"} for f in findings] == [
        {
            k: v
            for k, v in cable(
                "CABLE_MISWIRED", "error", "", "node1", "mlx5_1", "leaf2", "Ethernet0", peer_node="node2", peer_device=None, peer_netdev=None
            ).items()
            if k != "message"
        }
    ]


def test_a_known_switch_on_an_uncabled_port_is_miswired_naming_where_it_belongs_or_no_port():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp9"] = [nb("spine1", "Ethernet1/1")]
    sw["leaf2"]["neighbors"]["Ethernet20"] = [nb("spine1", "Ethernet9/9")]
    assert run(sw)[0] == [
        cable(
            "CABLE_MISWIRED",
            "error",
            "leaf1 swp9: LLDP shows spine1 Ethernet1/1, which the inventory cables to leaf1 swp3",
            switch="leaf1",
            switch_port="swp9",
            peer_switch="spine1",
            peer_port="Ethernet1/1",
        ),
        cable(
            "CABLE_MISWIRED",
            "error",
            "leaf2 Ethernet20: LLDP shows spine1 Ethernet9/9, which the inventory cables to no port",
            switch="leaf2",
            switch_port="Ethernet20",
            peer_switch="spine1",
            peer_port="Ethernet9/9",
        ),
    ]


def test_two_cables_exchanged_across_switches_are_two_miswires_not_a_swap():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp1"] = [nb("node2", "0c:42:a1:02:00:01")]
    sw["leaf2"]["neighbors"]["Ethernet8"] = [nb("node1", "0c:42:a1:01:00:00")]
    assert run(sw)[0] == [
        cable(
            "CABLE_MISWIRED",
            "error",
            "leaf1 swp1: should have node1 mlx5_0 (enp65s0f0np0), LLDP shows node2 mlx5_1 (enp66s0f0np0)",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            peer_node="node2",
            peer_device="mlx5_1",
            peer_netdev="enp66s0f0np0",
        ),
        cable(
            "CABLE_MISWIRED",
            "error",
            "leaf2 Ethernet8: should have node2 mlx5_1 (enp66s0f0np0), LLDP shows node1 mlx5_0 (enp65s0f0np0)",
            "node2",
            "mlx5_1",
            "leaf2",
            "Ethernet8",
            peer_node="node1",
            peer_device="mlx5_0",
            peer_netdev="enp65s0f0np0",
        ),
    ]


# ---------------------------------------------------------------- seed-31 survivors: host side, swaps


def _host_lldp(node, neighbours):
    """lldpctl -f json of ``node``'s first netdev seeing each (system name, port id, port description)."""
    return json.dumps(
        {
            "lldp": {
                "interface": [
                    {
                        HOSTS[node][0]["netdev"]: {
                            "chassis": {s: {"id": {"type": "mac", "value": "44:38:39:00:00:09"}}},
                            "port": {"id": {"type": "mac" if ":" in p else "ifname", "value": p}, **({"descr": d} if d else {})},
                        }
                    }
                    for s, p, d in neighbours
                ]
            }
        }
    )


def test_the_host_side_names_every_neighbour_lldpd_sees_and_matches_a_port_description():
    r = reads()
    r["node1"]["lldpctl"] = _host_lldp("node1", [("leaf9", "swp7", None), ("leaf8", "swp8", None)])
    r["node2"]["host_lldp"] = False
    assert run(healthy(), r, host_lldp=True)[0] == [
        cable(
            "CABLE_MISWIRED",
            "error",
            "node1 mlx5_0 (enp65s0f0np0): lldpd sees leaf9 swp7, leaf8 swp8, the inventory cables it to leaf1 swp1",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            seen=["leaf9 swp7", "leaf8 swp8"],
        )
    ]
    # a switch that sends its MAC as port ID names the port in its description
    r["node1"]["lldpctl"] = _host_lldp("node1", [("leaf1", "44:38:39:00:00:11", "swp1")])
    assert run(healthy(), r, host_lldp=True)[0] == []


def test_switches_named_only_by_host_ports_are_read_too():
    findings, _ = cabling.check_cabling(HOSTS, {}, {"leaf1": {"unreadable": True, "msg": "timed out"}}, reads(), False)
    assert [(f["code"], f["switch"], f["unproven"]) for f in findings] == [
        ("CABLE_UNVERIFIED", "leaf1", ["node1 mlx5_0 (enp65s0f0np0)", "node2 mlx5_0 (enp65s0f0np0)"]),
        ("CABLE_UNVERIFIED", "leaf2", ["node1 mlx5_1 (enp66s0f0np0)", "node2 mlx5_1 (enp66s0f0np0)"]),
    ]


def test_two_swaps_are_two_findings_and_silence_the_host_side_of_all_four_ports():
    sw = healthy()
    l1, l2 = sw["leaf1"]["neighbors"], sw["leaf2"]["neighbors"]
    l1["swp1"], l1["swp2"] = l1["swp2"], l1["swp1"]
    l2["Ethernet0"], l2["Ethernet8"] = l2["Ethernet8"], l2["Ethernet0"]
    r = reads()
    for node in ("node1", "node2"):
        r[node]["lldpctl"] = _lldpctl(
            {"enp65s0f0np0": ("leaf1", "swp2" if node == "node1" else "swp1"), "enp66s0f0np0": ("leaf2", "Ethernet8" if node == "node1" else "Ethernet0")}
        )
    findings, cases = run(sw, r, host_lldp=True)
    assert [(f["code"], f["switch"], f["switch_port"], f["other_switch_port"]) for f in findings] == [
        ("CABLE_SWAPPED", "leaf1", "swp1", "swp2"),
        ("CABLE_SWAPPED", "leaf2", "Ethernet0", "Ethernet8"),
    ]
    assert [(c["name"], c["code"]) for c in cases if not c["ok"]] == [
        ("leaf1 swp1 <- node1 mlx5_0 (enp65s0f0np0)", "CABLE_SWAPPED"),
        ("leaf1 swp2 <- node2 mlx5_0 (enp65s0f0np0)", "CABLE_SWAPPED"),
        ("leaf2 Ethernet0 <- node1 mlx5_1 (enp66s0f0np0)", "CABLE_SWAPPED"),
        ("leaf2 Ethernet8 <- node2 mlx5_1 (enp66s0f0np0)", "CABLE_SWAPPED"),
    ]


def test_a_port_description_naming_the_nodes_other_netdev_is_that_netdev():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp1"] = [nb("node1", "aa:bb:cc:dd:ee:ff", "enp66s0f0np0")]  # MAC not read
    assert run(sw)[0] == [
        cable(
            "CABLE_MISWIRED",
            "error",
            "leaf1 swp1: should have node1 mlx5_0 (enp65s0f0np0), LLDP shows node1 mlx5_1 (enp66s0f0np0)",
            "node1",
            "mlx5_0",
            "leaf1",
            "swp1",
            peer_node="node1",
            peer_device="mlx5_1",
            peer_netdev="enp66s0f0np0",
        )
    ]


def test_only_ports_with_a_switch_and_a_switch_port_are_intended():
    hosts = {
        "n": [
            {"device": "d0", "switch": "leaf1", "switch_port": None},
            {"device": "d1", "switch": None, "switch_port": "swp3"},
            {"device": "d2", "switch": "leaf1", "switch_port": ""},
        ]
    }
    assert cabling.expected_ends(hosts, {}) == ({}, {})


# ---------------------------------------------------------------- seed-47 survivors


def test_a_port_id_naming_the_nodes_other_netdev_and_a_host_known_by_another_name():
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp1"] = [nb("node1", "enp66s0f0np0")]  # port ID subtype ifname
    assert [(f["code"], f["peer_device"], f["peer_netdev"]) for f in run(sw)[0]] == [("CABLE_MISWIRED", "mlx5_1", "enp66s0f0np0")]
    sw = healthy()
    sw["leaf1"]["neighbors"]["swp1"] = [nb("gpu-a1.example.com", "0c:42:a1:01:00:00")]  # the node's own hostname
    r = reads()
    r["node1"]["names"] = ["node1", "gpu-a1"]
    assert run(sw, r)[0] == []


def test_the_host_side_goes_on_past_a_quiet_netdev_and_names_a_nameless_neighbour():
    r = reads()
    r["node2"]["host_lldp"] = False
    r["node1"]["lldpctl"] = json.dumps(
        {"lldp": {"interface": [{"enp66s0f0np0": {"chassis": {"id": {"type": "mac", "value": "44:38:39:00:00:09"}}, "port": {}}}]}}
    )
    assert run(healthy(), r, host_lldp=True)[0] == [
        cable(
            "CABLE_MISWIRED",
            "error",
            "node1 mlx5_1 (enp66s0f0np0): lldpd sees (no system name) ?, the inventory cables it to leaf2 Ethernet0",
            "node1",
            "mlx5_1",
            "leaf2",
            "Ethernet0",
            seen=["(no system name) ?"],
        )
    ]
