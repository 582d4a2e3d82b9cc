"""Every published real output (a fixture named real_* or whose first line is ``#source: <URL>``) is read.

A ``real_error_*`` fixture is a failure the tool printed: the parser must
raise ParseError, or (NCCL logs, whose failures are data) return ``error``.
Any other real fixture must parse to a non-empty result without warnings
about unread lines, and its source line must name a public URL.
"""

import pytest

from parser_fixtures import fixture, fixture_source
from parser_registry import PARSERS
from test_parsers_fuzz import _fixtures, _function
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError


def _is_real(path):
    """A published real output: named ``real_*`` or carrying a ``#source:`` first line."""
    tool, fname = path.split("/", 1)
    return fname.startswith("real_") or fixture_source(tool, fname) is not None


CASES = [(module, name, path) for module, name, *globs in PARSERS for path in _fixtures(globs) if _is_real(path)]


def _warnings(result):
    if isinstance(result, dict):
        found = [w for w in result.get("warnings") or [] if isinstance(w, str) and w.startswith("line ")]
        for value in result.values():
            found += _warnings(value)
        return found
    if isinstance(result, list):
        return [w for item in result for w in _warnings(item)]
    return []


@pytest.mark.parametrize("module, name, path", CASES, ids=["%s:%s" % (n, p) for _, n, p in CASES])
def test_real_output_is_read(module, name, path):
    tool, fname = path.split("/", 1)
    source = fixture_source(tool, fname)
    assert source and source.startswith("https://"), "real fixture without a #source: URL line"
    parser = _function(module, name)
    text = fixture(tool, fname)
    if fname.startswith("real_error_"):
        try:
            result = parser(text)
        except ParseError as err:
            assert str(err).strip()
            return
        assert result.get("error"), "a failure output read as a success"
        return
    result = parser(text)
    assert result, "empty result"
    if path in MIXED_CAPTURES:  # another tool's lines in the capture: each one named, none dropped
        assert _warnings(result), "a mixed capture read without naming the other tool's lines"
        return
    assert _warnings(result) == [], "lines the parser could not read"


# Published captures that hold another tool's output beside this one's (a script's run log):
# the other lines must come back as warnings (issue 38: nothing printed vanishes silently).
MIXED_CAPTURES = {
    "mlnx_qos/real_filtered_pfc_buffer.txt": "spiderpool's script prints sysfs ECN and cma_roce_tos lines after mlnx_qos",
    "mlnx_qos/real_pfc_set_script.txt": "a shell trace: cma_roce_tos and sysctl print their values between the commands",
}


# Parsers for which fewer than three published outputs have been found so
# far, keyed "<module>.<function>" (two modules have a parse_interfaces_status),
# with how many there are: the gap stays visible here (docs/parsers.md lists
# it too, with what was searched) and a count may only go up.
KNOWN_THIN = {
    "parsers.gdrcopy.parse_gdrcopy_sanity": 0,  # shaped on gdrcopy's source (fixtures/gdrcopy/SOURCES.md); no published run found
    "parsers.counters.parse_hw_counters": 0,
    "parsers.counters.parse_rdma_statistic": 0,
    "parsers.dpkg.parse_dpkg_query": 0,
    "parsers.ibdiag.parse_iblinkinfo": 0,
    "parsers.ibdiag.parse_sminfo": 1,  # the OFED 1.5 README's example (older layout: hex LID, no state)
    "parsers.ibdiag.parse_smpquery_pkeys": 0,
    "parsers.iblink.parse_ibstatus": 2,
    "parsers.linkhealth.parse_ibqueryerrors": 0,
    "parsers.linkhealth.parse_mlxlink": 2,
    "parsers.lldp.parse_lldpctl_json": 1,
    "parsers.lldp.parse_nvue_lldp": 2,
    "parsers.lldp.parse_sonic_lldp_table": 2,
    "parsers.mlxconfig.parse_mlxfwreset": 0,
    "parsers.mlxconfig.parse_mlxfwreset_query": 0,
    "parsers.ncclconf.parse_nccl_conf": 0,
    "parsers.apt.parse_madison": 1,  # vpenso/scripts#2's bash rows (issue 38; fixtures/apt_madison/SOURCES.md)
    "parsers.perftest.parse_ib_send_bw": 1,  # skypilot's Nebius InfiniBand example (issue 38)
    # issue 23: no attributable real capture (repository + path) of these was found; the latency
    # fixtures are composed from perftest's own format strings (fixtures/perftest/SOURCES.md)
    "parsers.perftest_lat.parse_perftest_lat": 0,
    "switch.eos.parse_sessions": 0,
    # the EOS watchdog counters: one public health check's keys only (docs/conformance.md, Arista EOS)
    "switch.eos.parse_pfcwd_counters": 0,
    # NVUE lossless reads: the reference publishes the tables, no -o json sample (docs/conformance.md, NVUE)
    "switch.nvue_show.parse_ingress_priority_groups": 2,  # the reference's two tables (issue 38); no JSON sample
    "switch.nvue_show.parse_pfc_watchdog": 1,  # the reference's table (issue 38); no JSON sample
    # the scheduler stand-ins' output, no live capture (fixtures/drain/SOURCES.md)
    "parsers.scheduler.parse_scontrol_node": 0,
    "parsers.scheduler.parse_kubectl_node": 0,
    "switch.nvue.parse_nvue_commands": 0,
    "switch.nvue.parse_revisions": 1,
    "switch.sonic.parse_config_db": 0,
    "switch.counters.parse_eos_intf_errors": 1,
    "switch.counters.parse_eos_pfc_counters": 0,
    "switch.counters.parse_nvue_link_stats": 2,
    "switch.counters.parse_nvue_roce_counters": 1,
    # transceiver DOM (docs/conformance.md, each platform): NVUE's reference example only; the one EOS
    # capture found is not attributable to a repository, so its fixture is ours (fixtures/switch/SOURCES.md)
    "switch.optics.parse_nvue_platform_transceiver": 1,
    "switch.optics.parse_eos_transceiver_detail": 0,
}


def real_outputs_per_parser():
    """{"<module>.<function>": number of published real outputs that parser reads}, every registered parser."""
    counts = {"%s.%s" % (module, name): 0 for module, name, *_ in PARSERS}
    for key in counts:
        counts[key] = len({path for module, name, path in CASES if "%s.%s" % (module, name) == key})
    return counts


def test_at_least_three_real_outputs_per_parser():
    counts = real_outputs_per_parser()
    thin = {key: n for key, n in counts.items() if n < 3 and key not in KNOWN_THIN}
    assert not thin, "parsers with fewer than 3 published real outputs, not in KNOWN_THIN: %s" % thin
    lower = {key: (counts.get(key), n) for key, n in KNOWN_THIN.items() if counts.get(key, 0) < n}
    assert not lower, "a parser's real outputs went down (now, listed): %s" % lower
    stale = [key for key, n in KNOWN_THIN.items() if counts.get(key, 0) >= 3 or counts.get(key, 0) > n]
    assert not stale, "KNOWN_THIN entries to lower or remove: %s" % stale


# Values read from the published outputs added for issue #15 item 3 (one
# layout quirk each: what the per-parser count alone would not check).


def _read(parser, tool, name):
    module, func = parser
    return _function(module, func)(fixture(tool, name))


def test_sonic_interface_counters_published_layouts():
    sic = ("switch.counters", "parse_sonic_intf_counters")
    r = _read(sic, "counters", "sonic_intf_counters_cmdref.txt")
    assert r["ports"]["Ethernet0"]["RX_OK"] == 471729839997 and r["ports"]["Ethernet0"]["RX_DRP"] == 18682
    assert r["ports"]["Ethernet24"]["TX_OK"] == 43066076370 and len(r["ports"]) == 7
    r = _read(sic, "counters", "sonic_intf_counters_errors_s6000.txt")  # 'errors' subcommand: no RX_OK/TX_OK
    assert r["columns"] == ["RX_ERR", "RX_DRP", "RX_OVR", "TX_ERR", "TX_DRP", "TX_OVR"]
    assert r["ports"]["Ethernet8"] == {"state": "U", "RX_ERR": 0, "RX_DRP": 1, "RX_OVR": 0, "TX_ERR": 0, "TX_DRP": 0, "TX_OVR": 0}
    r = _read(sic, "counters", "sonic_intf_counters_period_cmdref.txt")  # rows left-aligned, a B/s rate
    assert (r["ports"]["Ethernet20"]["TX_OK"], r["ports"]["Ethernet0"]["TX_OK"]) == (138, 1305)
    r = _read(sic, "counters", "sonic_intf_counters_printall.txt")  # -a: PPS and TRIM columns, N/A
    assert r["ports"]["Ethernet4"]["RX_DRP"] == 1000 and r["ports"]["Ethernet4"]["TX_ERR"] is None
    assert r["ports"]["Ethernet0"]["state"] == "D" and r["ports"]["Ethernet9"]["state"] is None


def test_sonic_pfc_and_queue_counters_published_layouts():
    r = _read(("switch.counters", "parse_sonic_pfc_counters"), "counters", "sonic_pfc_counters_multiasic_all.txt")
    assert r["rx"]["Ethernet0"][0] == 1200 and r["tx"]["Ethernet-BP4"][7] == 817
    assert r["rx"]["Ethernet-BP256"] == {p: None for p in range(8)}
    sq = ("switch.counters", "parse_sonic_queue_counters")
    r = _read(sq, "counters", "sonic_queue_counters_cmdref.txt")  # two port blocks, a header each
    assert sorted(r["ports"]) == ["Ethernet0", "Ethernet4"] and len(r["ports"]["Ethernet4"]) == 20
    r = _read(sq, "counters", "sonic_queue_counters_port_alltypes.txt")  # 'For namespace :', ALL queues
    q = r["ports"]["Ethernet8"]
    assert len(q) == 30 and q["MC10"]["pkts"] == 81 and q["ALL29"]["type"] == "ALL" and q["ALL29"]["pkts"] is None


def test_eos_interfaces_status_published_captures():
    eos = ("switch.eos", "parse_interfaces_status")
    r = _read(eos, "switch", "real_eos_interfaces_status_7280sr_4273f.txt")  # names with spaces, parentheses
    assert r["Ethernet45"] == {"up": True, "status": "connected"} and r["Ethernet2"]["status"] == "disabled"
    assert len(r) == 73
    r = _read(eos, "switch", "real_eos_interfaces_status_7280sr3k_4292f.txt")  # '! *' note line, subinterface
    assert len(r) == 59 and r["Ethernet5.2311"] == {"up": True, "status": "connected"}
    assert not any(k.startswith("!") for k in r)
    r = _read(eos, "switch", "real_eos_interfaces_status_7050sx3_4312f.txt")
    assert r["Ethernet60/1"] == {"up": False, "status": "notconnect"} and r["Ethernet1"]["status"] == "disabled"


def test_lldp_tables_published_captures():
    r = _read(("parsers.lldp", "parse_nvue_lldp"), "lldp", "nvue_interface_lldp_cl516_vx.txt")  # blank Speed column
    assert r["ports"] == ["swp1", "swp2", "swp65"]
    assert (r["neighbors"]["swp65"][0]["port_id"], r["neighbors"]["swp65"][0]["port_id_type"]) == ("48:b0:2d:27:5f:50", "mac")
    r = _read(("parsers.lldp", "parse_sonic_lldp_table"), "lldp", "sonic_lldp_table_cmdref.txt")
    eth0 = r["neighbors"]["eth0"][0]
    assert (eth0["system_name"], eth0["port_id"], eth0["port_descr"]) == ("swtor-b2lab2-1610", "GigabitEthernet 0/2", None)
    assert r["neighbors"]["Ethernet116"][0]["port_descr"] == "T0-2:hundredGigE1/30"


def test_perfquery_published_captures():
    pq = ("parsers.linkhealth", "parse_perfquery")
    ports = _read(pq, "counters", "perfquery_extended_dualport.txt")["ports"]
    assert [(p["lid"], p["port"]) for p in ports] == [(1719, 1), (1719, 2)]
    assert ports[1]["counters"]["PortXmitWait"] == 36510964
    port = _read(pq, "counters", "perfquery_extended_capmask5a00.txt")["ports"][0]
    assert (port["capmask"], port["counters"]["PortRcvData"], port["counters"]["SymbolErrorCounter"]) == ("0x5A00", 37225401952885, 0)


def test_ethtool_stats_published_mlx5_captures():
    from ansible_collections.linerate.fabric.plugins.module_utils.parsers.counters import mlx5_phy_counters, mlx5_priority_counters

    es = ("parsers.counters", "parse_ethtool_stats")
    stats = _read(es, "counters", "ethtool_mlx5_cx6dx_k5.15.txt")["stats"]  # ConnectX-6 Dx, kernel 5.15
    assert stats["rx_discards_phy"] == 58591428329 and stats["tx_pause_ctrl_phy"] == 5745055
    assert mlx5_priority_counters(stats) == {
        0: {"rx_bytes": 6211318150440, "rx_packets": 38460533605, "rx_discards": 58591314012, "tx_bytes": 357288052986, "tx_packets": 5582625883}
    }
    assert mlx5_phy_counters(stats) == {"rx_discards_phy": 58591428329, "tx_discards_phy": 0, "rx_out_of_buffer": 990473555, "rx_undersize_pkts_phy": 0}
    stats = _read(es, "counters", "ethtool_mlx5_cx6dx_k6.5.txt")["stats"]  # same port, kernel 6.5 (page pool)
    assert stats["rx_pp_recycle_cached"] == 3641280 and stats["rx_prio0_discards"] == 441063206498
    assert len(stats) == 108
    stats = _read(es, "counters", "ethtool_mlx5_cx4lx_mlx5core3.0.txt")["stats"]  # 2015 driver: no _phy names
    assert stats["symbol_err"] == 0 and stats["octets_received"] == 1084993260
    assert mlx5_phy_counters(stats) == {} and mlx5_priority_counters(stats) == {}
    stats = _read(es, "counters", "ethtool_mlx5_cx4lx_k4.15.txt")["stats"]
    assert stats["rx_csum_complete"] == 845270822 and len(stats) == 23


def test_mlxlink_published_connectx4_captures():
    ml = ("parsers.linkhealth", "parse_mlxlink")
    r = _read(ml, "counters", "mlxlink_cx4_c_forum2022.txt")  # older -c: no Link Down / Recovery lines
    assert (r["speed"], r["fec"], r["raw_ber"]) == ("100GbE", "Standard RS-FEC - RS(528,514)", 3e-12)
    assert r["raw_errors_per_lane"] == [26711, 0, 0, 9108] and r["link_down"] is None
    assert r["recommendation"] == "No issue was observed." and r["time_since_clear_min"] == 1715.4
    r = _read(ml, "counters", "mlxlink_cx4_e_forum2022.txt")  # -e: eye opening, no counters section
    assert r["sections"]["EYE Opening Info"]["Height Eye Opening [mV]"] == "48, 53, 57, 37"
    assert r["effective_ber"] is None and r["state"] == "Active"
