"""Issue 38, class 1, on the switch parsers the never-drop property held last (the LLDP, apt-cache
madison and ib_send_bw cases are in tests/unit/parsers/test_lldp.py, test_apt.py, test_perftest.py):
each test changes one line of a published output the way tests/unit/test_parsers_never_drop.py does and asserts where the change went (read, named in a warnings
entry, or refused with a ParseError naming it), and that the clean output keeps the result the drivers read
(no warnings key). No hypothesis here: these run in the mutation groups of the drivers and counters."""

import pytest

from parser_fixtures import fixture
from switch_testlib import make
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import ber, eos, nvue_show, sonic_show
from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_nvue_interface_counters
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window_checks import oper_problems


def _swap(text, old, new):
    assert old in text, old
    return text.replace(old, new, 1)


def test_nvue_interface_counters_name_each_sections_columns_and_refuse_a_header_off_its_rule():
    text = fixture("switch", "real_nvue_interface_counters_cl519.txt")
    c = parse_nvue_interface_counters(text)
    assert c["columns"]["Packet Size Statistics"] == ["Counter", "Receive", "Transmit"]
    assert c["columns"]["Ingress Buffer Statistics"] == ["priority-group", "rx-frames", "rx-buffer-discards", "rx-shared-buffer-discards"]
    renamed = parse_nvue_interface_counters(_swap(text, "    Counter     Receive", "    Size        Receive"))
    assert renamed["columns"]["Packet Size Statistics"][0] == "Size"
    with pytest.raises(ParseError, match=r"section 'Packet Size Statistics': the header .* does not fit its dashed"):
        parse_nvue_interface_counters(_swap(text, "    Counter     Receive", "    Zq_unexpected_Name     Receive"))


def test_nvue_interface_summary_names_an_unreadable_mtu_state_or_column_in_the_row():
    text = fixture("switch", "real_nvue_show_interface_cl519.txt")
    clean = nvue_show.parse_interface_summary(text)
    assert clean["swp1"] == {"up": True, "mtu": 9216, "speed": "1G"}  # no warnings key
    odd = nvue_show.parse_interface_summary(
        _swap(
            _swap(text, "swp1       up            up           1G     9216 ", "swp1       up            up           1G     jumbo"),
            "swp2       down          down ",
            "swp2       down          weird",
        )
    )
    assert odd["swp1"] == {"up": True, "mtu": None, "speed": "1G", "warnings": ["line 9: MTU 'jumbo' is not a number: read as unknown"]}
    assert odd["swp2"]["up"] is False and odd["swp2"]["warnings"] == ["line 10: State 'weird' is not a link state NVUE documents: read as not up"]
    for name in ("real_nvue_show_interface_cl5x.txt", "real_nvue_show_interface_cl519.txt", "nvue_show_interface.txt"):
        assert not [r for r in nvue_show.parse_interface_summary(fixture("switch", name)).values() if "warnings" in r], name
    table = (
        "Interface  Admin Status  Oper Status     Speed  MTU\n"
        "---------  ------------  --------------  -----  -----\n"
        "swp2       up            %-14s  1G     1500\n"
    )
    for state in nvue_show.OPER_STATES:  # every documented operstate reads without a warning
        row = nvue_show.parse_interface_summary(table % state)["swp2"]
        assert row == {"up": state == "up", "mtu": 1500, "speed": "1G"}, state
    extra = nvue_show.parse_interface_summary(_swap(text, "Type      Remote Host", "Kind      Remote Host"))
    assert extra["swp1"]["warnings"] == ["line 1: column 'Kind' is not read (unknown to this parser)"]
    with pytest.raises(ParseError, match=r"line 1: the header does not fit its dashed rule"):
        nvue_show.parse_interface_summary(_swap(text, "MTU    Type", "zqunexpectedvalue    Type"))


def test_nvue_roce_status_names_an_unknown_row_an_odd_priority_and_an_unknown_congestion_mode():
    text = fixture("switch", "real_nvue_roce_status_cl50.txt")
    for name in (
        "real_nvue_roce_status_cl50.txt",
        "real_nvue_roce_status_global_cl50.txt",
        "real_nvue_roce_status_global_cl512.txt",
        "nvue_roce_status_on.txt",
        "nvue_roce_status_off.txt",
    ):
        assert "warnings" not in nvue_show.parse_roce_status(fixture("switch", name)), name
    renamed = nvue_show.parse_roce_status(_swap(text, "  trust-mode        pcp,dscp", "  trust-moed        pcp,dscp"))
    assert renamed["trust"] == "" and renamed["warnings"] == [
        "line 14: not read: 'trust-moed        pcp,dscp                Trust Setting on the port for packet classification'"
    ]
    prio = nvue_show.parse_roce_status(_swap(text, "  pfc-priority      3 ", "  pfc-priority      3,x9"))
    assert prio["pfc"] == [3] and prio["warnings"] == ["pfc-priority '3,x9': 'x9' is not a priority 0-7: not read"]
    for words in ("ecn, relative", "red, absolute", "ECN"):  # the words of a congestion mode: no warning
        assert "warnings" not in nvue_show.parse_roce_status(_swap(text, "ecn, absolute", words.ljust(13))), words
    # a value wider than the operational column is read whole, and an unknown mode is named
    mode = nvue_show.parse_roce_status(_swap(text, "ecn, absolute        ", "zqunexpectedvalue, absolute"))
    assert mode["ecn"] is False and mode["warnings"] == [
        "congestion-mode 'zqunexpectedvalue, absolute': a mode NVUE's published outputs do not print: ECN read as off"
    ]


def test_a_warning_in_the_nvue_reads_does_not_fail_a_healthy_post_check():
    lossless = {
        f"nv show interface {p} qos {what} -o json": fixture("switch", name)
        for p in ("swp1", "swp2")
        for what, name in (("buffer ingress-priority-group", "nvue_buffer_pg_lossless.json"), ("pfc-watchdog", "nvue_pfc_watchdog_on.json"))
    }
    summary = _swap(
        _swap(fixture("switch", "nvue_show_interface.txt"), "+ swp1       9216 ", "+ swp1       jumbo"),
        "+ swp2       9216          down",
        "+ swp2       9216          up  ",
    )
    status = _swap(fixture("switch", "nvue_roce_status_on.txt"), "  trust-mode", "  new-field         x\n  trust-mode")
    d, _fake = make(
        "nvue",
        answers={"nv show interface": summary, "nv show interface swp1 qos roce status": status, "nv show interface swp2 qos roce status": status, **lossless},
    )
    oper = d.oper(["swp1", "swp2"])
    assert oper["swp1"]["warnings"] == ["line 13: not read: 'new-field         x'"]
    assert oper_problems(oper, ["swp1", "swp2"], [3], True) == []


def test_eos_interfaces_status_refuses_a_row_whose_status_went_into_another_column():
    text = fixture("switch", "real_eos_interfaces_status_7280sr3k_4292f.txt")
    assert eos.parse_interfaces_status(_swap(text, "Et2               notconnect", "Et2               errdisabled"))["Ethernet2"] == {
        "up": False,
        "status": "errdisabled",
    }  # a status read as printed
    with pytest.raises(ParseError, match=r"line 4: no Status for 'Et2'"):
        eos.parse_interfaces_status(_swap(text, "Et2               notconnect", "Et2               zqunexpectedvalue"))


def test_sonic_pfc_priority_reads_priorities_only_and_refuses_anything_else():
    text = fixture("switch", "real_sonic_pfc_priority_docs.txt")
    assert sonic_show.parse_pfc_priority(text)["Ethernet0"] == [3, 4]
    assert sonic_show.parse_pfc_priority(_swap(text, "Ethernet0    3,4", "Ethernet0    N/A"))["Ethernet0"] == []
    with pytest.raises(ParseError, match=r"Ethernet0: '3,zq4711x' is not a list of priorities 0-7"):
        sonic_show.parse_pfc_priority(_swap(text, "Ethernet0    3,4", "Ethernet0    3,zq4711x"))
    with pytest.raises(ParseError) as err:
        sonic_show.parse_pfc_priority(_swap(text, "Lossless priorities", "Lossy priorities   "))
    assert str(err.value).startswith("sonic: show pfc priority: the header has no 'Lossless priorities' column (columns: Interface, Lossy priorities)")


def test_sonic_interfaces_status_names_odd_cells_and_columns_and_refuses_a_header_without_interface():
    text = fixture("switch", "real_sonic_interfaces_status_docs.txt")
    clean = sonic_show.parse_interfaces_status(text)
    assert clean["Ethernet0"] == {"up": False, "admin_up": True, "mtu": 9100, "speed": "100G"}
    odd = sonic_show.parse_interfaces_status(_swap(text, "100G   9100   hundredGigE1/1    down       up", "100G  jumbo   hundredGigE1/1   flaky       up"))
    assert odd["Ethernet0"]["up"] is False and odd["Ethernet0"]["warnings"] == [
        "Oper 'flaky' is not up, down or N/A: read as not up",
        "MTU 'jumbo' is not a number: read as unknown",
    ]
    for name in (
        "real_sonic_interfaces_status_docs.txt",
        "real_sonic_interfaces_status_new.txt",
        "real_sonic_interfaces_status_subset.txt",
        "sonic_interfaces_status.txt",
    ):
        assert not [r for r in sonic_show.parse_interfaces_status(fixture("switch", name)).values() if "warnings" in r], name
    na = sonic_show.parse_interfaces_status(_swap(text, "100G   9100   hundredGigE1/1    down       up", "100G    N/A   hundredGigE1/1     N/A      N/A"))[
        "Ethernet0"
    ]
    assert na == {"up": False, "admin_up": False, "mtu": None, "speed": "100G"}  # N/A: unknown, no warning
    renamed = sonic_show.parse_interfaces_status(_swap(text, "    MTU  ", "    MRU  "))
    assert all("column 'MRU' is not read (unknown to this parser)" in r["warnings"] for r in renamed.values())
    with pytest.raises(ParseError, match=r"the header has no 'Interface' column"):
        sonic_show.parse_interfaces_status(_swap(text, "  Interface  ", "       Port  "))


def test_sonic_show_ecn_reads_every_field_and_refuses_a_profile_line_in_another_name():
    text = fixture("switch", "real_sonic_show_ecn_two_profiles.txt")
    ecn = sonic_show.parse_show_ecn(_swap(text, "green_min_threshold      1048576", "Zq_unexpected_Name       1048576"))
    assert ecn["AZURE_LOSSLESS"]["Zq_unexpected_Name"] == "1048576" and "warnings" not in ecn["AZURE_LOSSLESS"]
    odd = sonic_show.parse_show_ecn(_swap(text, "ecn                      ecn_all", "ecn                      ecn all"))
    assert odd["AZURE_LOSSLESS"]["warnings"] == ["line 4: not a 'field  value' row: 'ecn                      ecn all'"]
    with pytest.raises(ParseError, match=r"line 1: 'Zq_unexpected_Name: AZURE_LOSSLESS' is not a 'Profile: <name>'"):
        sonic_show.parse_show_ecn(_swap(text, "Profile: AZURE_LOSSLESS", "Zq_unexpected_Name: AZURE_LOSSLESS"))


def test_nvue_phy_health_names_a_row_it_does_not_know():
    text = fixture("switch", "real_nvue_phy_health_cl515.txt")
    assert "warnings" not in ber.parse_nvue_phy_health(text, "swp1")["swp1"]
    renamed = ber.parse_nvue_phy_health(_swap(text, "effective-errors  ", "Zq_unexpected_Name"), "swp1")["swp1"]
    assert renamed["fec_uncorrected"] is None
    assert renamed["warnings"] == ["line 6: not read: 'Zq_unexpected_Name         0'"]
