"""NVUE lossless read-back in both shapes (issue 38, grammar): the reference's published tables of
``qos buffer ingress-priority-group`` and ``qos pfc-watchdog`` and the ``-o json`` document (no
sample published, keys taken from the tables' columns). The parsers read both; the driver asks
for JSON and, when a switch's JSON has another shape, reads the table instead of failing every
post-check."""

import json

import pytest

from parser_fixtures import fixture
from switch_testlib import render, sim_driver

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
from ansible_collections.linerate.fabric.plugins.module_utils.switch import nvue_show
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

PORTS = ["swp1", "swp2"]


# ------------------------------------------------------------------ the reference's tables


def test_the_references_ingress_priority_group_table_is_read():
    # rows 0 and 9 of the example, both lossy; HR "18.98 KB" and "9.98 KB"
    pgs = nvue_show.parse_ingress_priority_groups(fixture("switch", "real_nvue_buffer_pg_reference.txt"))
    assert pgs == {0: {"lossless": False, "headroom": round(18.98 * 1024), "xoff": 0}, 9: {"lossless": False, "headroom": round(9.98 * 1024), "xoff": 0}}
    assert nvue_show.lossless_headroom(pgs) == []


def test_the_wrapped_table_of_qos_buffer_reads_the_same():
    # the same rows in "nv show interface <swp> qos buffer": cells wrapped onto a second line
    wrapped = nvue_show.parse_ingress_priority_groups(fixture("switch", "real_nvue_buffer_pg_wrapped_reference.txt"))
    assert wrapped == nvue_show.parse_ingress_priority_groups(fixture("switch", "real_nvue_buffer_pg_reference.txt"))


def test_the_references_pfc_watchdog_table_is_read():
    wd = nvue_show.parse_pfc_watchdog(fixture("switch", "real_nvue_pfc_watchdog_reference.txt"))
    assert wd["enabled"] is True
    assert wd["status"][2] == {"status": "DEADLOCK", "deadlock": 2}
    assert wd["status"][7] == {"status": "DEADLOCK", "deadlock": 3}
    assert [tc for tc, st in wd["status"].items() if st["status"] == "OK"] == [0, 1, 3, 4, 5, 6]


def test_the_json_shape_is_still_read():
    pgs = nvue_show.parse_ingress_priority_groups(fixture("switch", "nvue_buffer_pg_lossless.json"))
    assert nvue_show.lossless_headroom(pgs) == [3]
    assert nvue_show.parse_pfc_watchdog(fixture("switch", "nvue_pfc_watchdog_on.json"))["enabled"] is True


@pytest.mark.parametrize(
    "text, message",
    [
        ("Error: The requested item does not exist.\n", "neither JSON nor the reference's table"),
        ("Zone  Pool ID\n----  -------\n0     2\n", "a column the reference does not have: 'Zone'"),
        ("priority-group  Pool ID\n--------------  -------\n0               2\n", "no priority-group, Lossy/Lossless or HR"),
    ],
)
def test_a_table_that_is_not_the_references_is_refused_by_name(text, message):
    with pytest.raises(ParseError, match=message):
        nvue_show.parse_ingress_priority_groups(text)


def test_a_watchdog_status_line_that_is_not_a_row_is_refused():
    text = fixture("switch", "real_nvue_pfc_watchdog_reference.txt").replace("    3              OK        0", "    3              OK")
    with pytest.raises(ParseError, match="not a row: '3              OK'"):
        nvue_show.parse_pfc_watchdog(text)


# ------------------------------------------------------------------ the simulator prints both; the driver falls back


def _applied(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", PORTS)
    res = run_apply(d, want_text=render("nvue", PORTS), ports=PORTS, stamp="20260101T000001Z")
    assert res["changed"] and not res.get("failed"), res
    return d, sim


def test_the_simulators_table_and_json_read_the_same(tmp_path, monkeypatch):
    _d, sim = _applied(tmp_path, monkeypatch)
    for port in PORTS:
        base = f"nv show interface {port} qos buffer ingress-priority-group"
        table = nvue_show.parse_ingress_priority_groups(sim(base))
        doc = nvue_show.parse_ingress_priority_groups(sim(base + " -o json"))
        assert nvue_show.lossless_headroom(table) == nvue_show.lossless_headroom(doc) == [3]
        for pg, row in doc.items():  # the table prints sizes to 1/100 KB
            assert table[pg]["lossless"] == row["lossless"]
            assert abs(table[pg]["headroom"] - row["headroom"]) <= 6 and abs(table[pg]["xoff"] - row["xoff"]) <= 6
        base = f"nv show interface {port} qos pfc-watchdog"
        assert nvue_show.parse_pfc_watchdog(sim(base)) == nvue_show.parse_pfc_watchdog(sim(base + " -o json"))


def test_a_disabled_watchdog_table_has_no_status(tmp_path, monkeypatch):
    _d, sim = _applied(tmp_path, monkeypatch)
    sim.sw.fault_pfcwd_off()
    text = sim("nv show interface swp1 qos pfc-watchdog")
    assert "PFC WD Status" not in text
    assert nvue_show.parse_pfc_watchdog(text) == {"enabled": False, "status": {}}
    assert nvue_show.parse_pfc_watchdog(sim("nv show interface swp1 qos pfc-watchdog -o json"))["enabled"] is False


def test_a_json_shape_the_parser_does_not_know_falls_back_to_the_table(tmp_path, monkeypatch):
    d, sim = _applied(tmp_path, monkeypatch)
    real_run = d.run

    def other_json(command):
        """A switch whose JSON nests the rows (a shape linerate does not assume)."""
        out = real_run(command)
        if command.endswith("-o json"):
            return json.dumps({"entries": json.loads(out)})
        return out

    monkeypatch.setattr(d, "run", other_json)
    oper = d.oper(PORTS)
    assert oper["swp1"]["headroom"] == [3] and oper["swp1"]["pfcwd"] == [3]
    sent = [c for c in sim.sent if c.startswith("nv show interface swp1 qos")]
    assert "nv show interface swp1 qos buffer ingress-priority-group -o json" in sent
    assert "nv show interface swp1 qos buffer ingress-priority-group" in sent
    assert "nv show interface swp1 qos pfc-watchdog" in sent


def test_a_refused_form_is_not_retried(tmp_path, monkeypatch):
    d, sim = _applied(tmp_path, monkeypatch)
    monkeypatch.setattr(d, "run", lambda command: "Error: The requested item does not exist.")
    with pytest.raises(ParseError, match="Error: The requested item does not exist"):
        d.oper(PORTS)
