"""Issue 38, class 1: nothing a tool prints vanishes silently.

A property over every registered parser and its text fixtures: take a line the
parser reads (its value is in the result) and give it, in the line's own
format, an unexpected name (``Name: value``, ``NAME    value`` and table rows:
the first cell) or an unexpected value (a word or a number the result
holds). The parser must then either read it (the new word is somewhere in
the result: a key, a value, a list item) or warn about it (the word is in a
``warnings`` entry), or raise ParseError; it must never return a result
that silently lost the line.

hypothesis draws the fixture, the line and the mutation (derandomized, so a
run is repeatable); a failure prints the parser, the fixture, the line
number and both lines. Parsers not yet held to this would be in ``NOT_YET``
with what they drop (empty since issue 38); the xfail is strict, so an entry
must go once its parser passes.
"""

import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from parser_fixtures import fixture
from parser_registry import PARSERS
from switch_testlib import make
from test_parsers_fuzz import _fixtures, _function
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.parsers import apt, lldp, perftest
from ansible_collections.linerate.fabric.plugins.module_utils.switch import ber, eos, nvue, sonic
from ansible_collections.linerate.fabric.plugins.module_utils.switch.counters import parse_nvue_interface_counters
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import oper_problems

NAME = "Zq_unexpected_Name"
WORD = "zqunexpectedvalue"
NUMBER = "zq4711x"

_TOKEN = re.compile(r"(?<![\w.:/-])[A-Za-z][A-Za-z0-9_]*(?![\w:/-])")
_NUMBER = re.compile(r"(?<![\w.:/-])\d+(?:\.\d+)?(?![\w.:/-])")
# ``Name: value``, ``Name=value`` or ``NAME    value`` (two or more spaces, or a TAB)
_KEYED = re.compile(r"^\s*\*?\s*(?P<name>[A-Za-z][\w\-. /()]*?)\s*(?::(?=\s)|=|\s{2,}|\t)\s*\S")

# "<module>.<function>": what the parser still drops (issue 38, not yet fixed)
# Parsers of structured output (JSON, a dict, a config DB): no text line to mutate; named, so a text
# parser that finds no fixture line fails instead of skipping.
STRUCTURED = {
    "parsers.counters.parse_hw_counters", "switch.counters.parse_eos_pfc_counters",
    "switch.counters.parse_eos_intf_errors", "parsers.lldp.parse_lldpctl_json", "switch.eos.parse_pfcwd_counters",
    "parsers.scheduler.parse_kubectl_node", "switch.sonic.parse_config_db", "switch.optics.parse_eos_transceiver_detail",
    "switch.ber.parse_eos_phy_detail",
}
# Text parsers whose fixtures give the generator no line it can change (a gap, not a pass): none now
# (apt-cache madison and ib_send_bw have published real fixtures since issue 38).
NO_LINE_YET = {}

# Parsers still dropping what they do not expect: none now (the last ten switch parsers read it, name it
# in a ``warnings`` entry, or raise ParseError since issue 38). A new parser that drops goes here with
# what it drops; the xfail is strict.
NOT_YET = {}


def _strings(value):
    """Every key and leaf of a result, as lower-case text."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key).lower()
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    else:
        yield str(value).lower()


def _mutations(line, read):
    """(kind, start, end, new word) for one line whose words ``read`` (a set) the result holds."""
    out = []
    keyed = _KEYED.match(line)
    values = [m for m in _TOKEN.finditer(line) if m.group().lower() in read]
    if keyed and line.count(":") <= 2 and (values or any(n.group() in read for n in _NUMBER.finditer(line))):
        out.append(("name", keyed.start("name"), keyed.end("name"), NAME))
    if values and values[-1].start() > (keyed.end("name") if keyed else -1):
        out.append(("value", values[-1].start(), values[-1].end(), WORD))
    numbers = [m for m in _NUMBER.finditer(line) if m.group() in read and line[m.end():m.end() + 1] != ":"]
    if numbers:
        out.append(("number", numbers[-1].start(), numbers[-1].end(), NUMBER))
    return out


def _call(parser, text):
    try:
        return parser(text)
    except ParseError:
        return None


def _candidates(parser, globs):
    """(fixture, line index, kind, lines, base result, new word) for every mutation of a line whose
    words the result holds (the check then keeps only lines the parser reads: removing one changes
    the result)."""
    found = []
    for path in _fixtures(globs):
        tool, fname = path.split("/", 1)
        text = fixture(tool, fname)
        if text.lstrip().startswith(("{", "[")):
            continue   # structured output: its names are the tool's schema, read as keys
        base = _call(parser, text)
        if not base:
            continue
        read = set(_strings(base))
        lines = text.split("\n")
        for index, line in enumerate(lines):
            for kind, start, end, new in _mutations(line, read):
                found.append((path, index, kind, lines, base, line[:start] + new + line[end:], new))
    return found


def _params():
    params = []
    for module, name, *globs in PARSERS:
        key = "%s.%s" % (module, name)
        reason = NOT_YET.get(key) or NO_LINE_YET.get(key)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(module, name, globs, id=key, marks=marks))
    return params


@pytest.mark.parametrize("module, name, globs", _params())
def test_an_unexpected_name_or_value_is_read_or_warned(module, name, globs):
    parser = _function(module, name)
    candidates = _candidates(parser, globs)
    if not candidates and "%s.%s" % (module, name) in STRUCTURED:
        pytest.skip("structured output (JSON, a dict): no text line to change")
    assert candidates, "a text parser with no fixture line the generator can change: add a fixture or NO_LINE_YET"

    @settings(max_examples=min(60, len(candidates)), derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(candidates))
    def check(case):
        path, index, kind, lines, base, mutated, new = case
        if _call(parser, "\n".join(lines[:index] + lines[index + 1:])) == base:
            return   # a line the parser does not read at all (a banner, a rule)
        text = "\n".join(lines[:index] + [mutated] + lines[index + 1:])
        try:
            result = parser(text)
        except ParseError:
            return   # refused loudly: not silent
        if result == base:
            return   # the word sat where the parser reads nothing (a log prefix, a description)
        assert any(new.lower() in s for s in _strings(result)), (
            "%s dropped a line with an unexpected %s: %s line %d now reads %r, and %r is neither read "
            "nor warned about" % (name, kind, path, index + 1, mutated, new))

    check()


# ---------------------------------------------------------------- what the last ten switch parsers do (issue 38)
# Each test changes one line of a published (or the simulator's) output the way the property does and
# asserts where the change went: read, named in a warnings entry, or refused; and that the clean output
# keeps the result the drivers read (no warnings key).

def _swap(text, old, new):
    assert old in text, old
    return text.replace(old, new, 1)


def test_nvue_interface_counters_name_each_sections_columns_and_refuse_a_header_off_its_rule():
    text = fixture("switch", "real_nvue_interface_counters_cl519.txt")
    c = parse_nvue_interface_counters(text)
    assert c["columns"]["Packet Size Statistics"] == ["Counter", "Receive", "Transmit"]
    assert c["columns"]["Ingress Buffer Statistics"] == ["priority-group", "rx-frames", "rx-buffer-discards",
                                                         "rx-shared-buffer-discards"]
    renamed = parse_nvue_interface_counters(_swap(text, "    Counter     Receive", "    Size        Receive"))
    assert renamed["columns"]["Packet Size Statistics"][0] == "Size"
    with pytest.raises(ParseError, match=r"section 'Packet Size Statistics': the header .* does not fit its dashed"):
        parse_nvue_interface_counters(_swap(text, "    Counter     Receive", "    Zq_unexpected_Name     Receive"))


def test_nvue_interface_summary_names_an_unreadable_mtu_state_or_column_in_the_row():
    text = fixture("switch", "nvue_show_interface.txt")
    clean = nvue.parse_interface_summary(text)
    assert clean["swp1"] == {"up": True, "mtu": 9216, "speed": "400G"}   # no warnings key
    odd = nvue.parse_interface_summary(_swap(_swap(text, "+ swp1       9216 ", "+ swp1       jumbo"),
                                             "+ swp2       9216          down", "+ swp2       9216          weird"))
    assert odd["swp1"] == {"up": True, "mtu": None, "speed": "400G",
                           "warnings": ["line 4: MTU 'jumbo' is not a number: read as unknown"]}
    assert odd["swp2"]["up"] is False and odd["swp2"]["warnings"] == [
        "line 5: State 'weird' is not a link state NVUE documents: read as not up"]
    real = fixture("switch", "real_nvue_show_interface_cl519.txt")
    extra = nvue.parse_interface_summary(_swap(real, "Type      Remote Host", "Kind      Remote Host"))
    assert extra["swp1"]["warnings"] == ["line 1: column 'Kind' is not read (unknown to this parser)"]
    with pytest.raises(ParseError, match=r"line 1: the header does not fit its dashed rule"):
        nvue.parse_interface_summary(_swap(real, "MTU    Type", "zqunexpectedvalue    Type"))


def test_nvue_roce_status_names_an_unknown_row_an_odd_priority_and_an_unknown_congestion_mode():
    text = fixture("switch", "nvue_roce_status_on.txt")
    assert "warnings" not in nvue.parse_roce_status(text)
    for name in ("real_nvue_roce_status_cl50.txt", "real_nvue_roce_status_global_cl50.txt",
                 "real_nvue_roce_status_global_cl512.txt", "nvue_roce_status_off.txt"):
        assert "warnings" not in nvue.parse_roce_status(fixture("switch", name)), name
    renamed = nvue.parse_roce_status(_swap(text, "  trust-mode        dscp", "  trust-moed        dscp"))
    assert renamed["trust"] == "" and renamed["warnings"] == [
        "line 13: not read: 'trust-moed        dscp                    Trust Setting on the port for packet "
        "classification'"]
    prio = nvue.parse_roce_status(_swap(text, "  pfc-priority      3 ", "  pfc-priority      3,x9"))
    assert prio["pfc"] == [3] and prio["warnings"] == ["pfc-priority '3,x9': 'x9' is not a priority 0-7: not read"]
    # a value wider than the operational column is read whole, and an unknown mode is named
    mode = nvue.parse_roce_status(_swap(text, "ecn, absolute        ", "zqunexpectedvalue, absolute"))
    assert mode["ecn"] is False and mode["warnings"] == [
        "congestion-mode 'zqunexpectedvalue, absolute': a mode NVUE's published outputs do not print: ECN read as off"]


def test_a_warning_in_the_nvue_reads_does_not_fail_a_healthy_post_check():
    lossless = {f"nv show interface {p} qos {what} -o json": fixture("switch", name)
                for p in ("swp1", "swp2") for what, name in (("buffer ingress-priority-group", "nvue_buffer_pg_lossless.json"),
                                                             ("pfc-watchdog", "nvue_pfc_watchdog_on.json"))}
    summary = _swap(_swap(fixture("switch", "nvue_show_interface.txt"), "+ swp1       9216 ", "+ swp1       jumbo"),
                    "+ swp2       9216          down", "+ swp2       9216          up  ")
    status = _swap(fixture("switch", "nvue_roce_status_on.txt"), "  trust-mode", "  new-field         x\n  trust-mode")
    d, _fake = make("nvue", answers={"nv show interface": summary, "nv show interface swp1 qos roce status": status,
                                     "nv show interface swp2 qos roce status": status, **lossless})
    oper = d.oper(["swp1", "swp2"])
    assert oper["swp1"]["warnings"] == ["line 13: not read: 'new-field         x'"]
    assert oper_problems(oper, ["swp1", "swp2"], [3], True) == []


def test_eos_interfaces_status_refuses_a_row_whose_status_went_into_another_column():
    text = fixture("switch", "real_eos_interfaces_status_7280sr3k_4292f.txt")
    assert eos.parse_interfaces_status(_swap(text, "Et2               notconnect", "Et2               errdisabled"))[
        "Ethernet2"] == {"up": False, "status": "errdisabled"}   # a status read as printed
    with pytest.raises(ParseError, match=r"line 4: no Status for 'Et2'"):
        eos.parse_interfaces_status(_swap(text, "Et2               notconnect", "Et2               zqunexpectedvalue"))


def test_sonic_pfc_priority_reads_priorities_only_and_refuses_anything_else():
    text = fixture("switch", "sonic_pfc_priority.txt")
    assert sonic.parse_pfc_priority(text) == {"Ethernet0": [3], "Ethernet8": [3, 4]}
    assert sonic.parse_pfc_priority(_swap(text, "Ethernet0    3", "Ethernet0    N/A")) == {"Ethernet0": [],
                                                                                        "Ethernet8": [3, 4]}
    with pytest.raises(ParseError, match=r"Ethernet0: 'zq4711x' is not a list of priorities 0-7"):
        sonic.parse_pfc_priority(_swap(text, "Ethernet0    3", "Ethernet0    zq4711x"))
    with pytest.raises(ParseError, match=r"the header has no 'Lossless priorities' column"):
        sonic.parse_pfc_priority(_swap(text, "Lossless priorities", "Lossy priorities   "))


def test_sonic_interfaces_status_names_odd_cells_and_columns_and_refuses_a_header_without_interface():
    text = fixture("switch", "sonic_interfaces_status.txt")
    clean = sonic.parse_interfaces_status(text)
    assert clean["Ethernet0"] == {"up": True, "admin_up": True, "mtu": 9216, "speed": "400G"}
    odd = sonic.parse_interfaces_status(_swap(text, "   9216     rs     etp1  routed      up       up",
                                              "  jumbo     rs     etp1  routed   flaky       up"))
    assert odd["Ethernet0"]["up"] is False and odd["Ethernet0"]["warnings"] == [
        "Oper 'flaky' is not up, down or N/A: read as not up", "MTU 'jumbo' is not a number: read as unknown"]
    real = fixture("switch", "real_sonic_interfaces_status_subset.txt")
    renamed = sonic.parse_interfaces_status(_swap(real, "    MTU  ", "    MRU  "))
    assert all("column 'MRU' is not read (unknown to this parser)" in r["warnings"] for r in renamed.values())
    with pytest.raises(ParseError, match=r"the header has no 'Interface' column"):
        sonic.parse_interfaces_status(_swap(text, "  Interface", "       Port"))


def test_sonic_show_ecn_reads_every_field_and_refuses_a_profile_line_in_another_name():
    text = fixture("switch", "sonic_show_ecn.txt")
    ecn = sonic.parse_show_ecn(_swap(text, "green_max_threshold      2097152", "Zq_unexpected_Name       2097152"))
    assert ecn["AZURE_LOSSLESS"]["Zq_unexpected_Name"] == "2097152" and "warnings" not in ecn["AZURE_LOSSLESS"]
    with pytest.raises(ParseError, match=r"line 1: 'Zq_unexpected_Name: AZURE_LOSSLESS' is not a 'Profile: <name>'"):
        sonic.parse_show_ecn(_swap(text, "Profile: AZURE_LOSSLESS", "Zq_unexpected_Name: AZURE_LOSSLESS"))


def test_nvue_phy_health_names_a_row_it_does_not_know():
    text = fixture("switch", "real_nvue_phy_health_cl515.txt")
    assert "warnings" not in ber.parse_nvue_phy_health(text, "swp1")["swp1"]
    renamed = ber.parse_nvue_phy_health(_swap(text, "effective-errors  ", "Zq_unexpected_Name"), "swp1")["swp1"]
    assert renamed["fec_uncorrected"] is None
    assert renamed["warnings"] == ["line 6: not read: 'Zq_unexpected_Name         0'"]


def test_eos_lldp_detail_names_a_tlv_line_it_does_not_know():
    text = fixture("lldp", "real_eos_lldp_neighbors_detail_ntc.txt")
    assert lldp.parse_eos_lldp_neighbors(text)["warnings"] == []
    res = lldp.parse_eos_lldp_neighbors(_swap(text, '    Port ID     : "Ethernet1"', '    Zq_unexpected_Name     : "Ethernet1"'))
    assert res["neighbors"]["Ethernet1"][0]["port_id"] is None
    assert res["warnings"] == ["line 8: not read: 'Zq_unexpected_Name     : \"Ethernet1\"'"]


def test_madison_reads_the_published_rows_and_refuses_a_line_that_is_no_row():
    assert apt.parse_madison(fixture("apt_madison", "real_bash_jessie.txt")) == {
        "bash": ["4.3-11+deb8u1", "4.3-11+deb8u1"]}   # the binary row and the source package's row
    with pytest.raises(ParseError, match=r"line 2: not a 'package \| version \| source' row: 'bash 4.3-12'"):
        apt.parse_madison("bash | 4.3-11 | http://x jessie/main amd64 Packages\nbash 4.3-12\n")
    with pytest.raises(ParseError, match=r"line 1: not a 'package \| version \| source' row"):
        apt.parse_madison("bash |  | http://x jessie/main amd64 Packages\n")


def test_ib_send_bw_reads_the_published_infiniband_run():
    res = perftest.parse_ib_send_bw(fixture("perftest", "send_bw_nebius_ib_h100.txt"))
    assert (res["verb"], res["device"], res["link_type"], res["num_qps"], res["mtu"]) == ("send", "mlx5_0", "IB", 1, 4096)
    assert (res["bytes"], res["bw_average_gbps"], res["bw_peak_gbps"], res["warnings"]) == (65536, 353.53, 357.12, [])
