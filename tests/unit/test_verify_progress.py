"""Durations for people and the per-phase timings of the report."""

from ansible_collections.linerate.fabric.plugins.module_utils.report import report
from ansible_collections.linerate.fabric.plugins.module_utils.report import markdown as report_markdown
from ansible_collections.linerate.fabric.plugins.module_utils.checks import estimates
from ansible_collections.linerate.fabric.plugins.module_utils import findings

from checks.test_plans import FABRIC


def test_duration_text():
    assert [estimates.duration_text(s) for s in (0, 41.4, 59.6, 392, 3600, 7322)] == ["0 s", "41 s", "1 min 00 s", "6 min 32 s", "1 h 00 min", "2 h 02 min"]


def test_phase_timings_from_start_marks():
    marks = {"ib_write_bw": 110.0, "setup": 100.0, "nccl": 150.5, "ports": 104.25}
    assert estimates.phase_timings(marks, 170.0, 0.44) == [
        {"phase": "setup", "seconds": 4.2},
        {"phase": "ports", "seconds": 5.8},
        {"phase": "ib_write_bw", "seconds": 40.5},
        {"phase": "nccl", "seconds": 19.5},
        {"phase": "report", "seconds": 0.4},
    ]
    assert estimates.phase_timings({}, 5.0) == [] and estimates.phase_timings(None, 5.0, 1) == [{"phase": "report", "seconds": 1}]


def test_markdown_shows_the_phases():
    doc = report.build_report(
        [],
        findings.summarize([]),
        {},
        dict(FABRIC, name="lab"),
        {"phases": [{"phase": "ports", "seconds": 1.5}, {"phase": "ib_write_bw", "seconds": 40.0}, {"phase": "report", "seconds": 0.3}]},
    )
    md = report_markdown.to_markdown(doc)
    assert "Phases: ports 1.5 s, ib_write_bw 40 s, report 0.3 s; 41.8 s in all." in md
    assert "Phases" not in report_markdown.to_markdown(report.build_report([], findings.summarize([]), {}, FABRIC))


def test_markdown_names_the_slowest_round_and_the_client_restarts():
    sched = {
        "rounds": [{"round": 0, "seconds": 2.6, "client_starts": 3, "rails": 2}, {"round": 1, "seconds": 4.1, "client_starts": 5, "rails": 2}],
        "client_retries": 4,
    }
    doc = report.build_report([], findings.summarize([]), {"ib_write_bw": {"passed": True, "schedule": sched}}, dict(FABRIC, name="lab"))
    assert ("ib_write_bw rounds: 2, the slowest round 1 (4.1 s); 4 client start(s) again while a server was not listening yet.") in report_markdown.to_markdown(
        doc
    )
    sched["peer_wait"] = 7.25
    assert (
        "4 client start(s) again while a server was not listening yet; parts waited 7.25 s in all for a peer still in an earlier round."
    ) in report_markdown.to_markdown(doc)
    doc["checks"]["ib_write_bw"]["schedule"] = {"rounds": [], "client_retries": 0}
    assert "ib_write_bw rounds" not in report_markdown.to_markdown(doc)
