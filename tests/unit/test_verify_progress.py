"""Progress of the ib_write_bw rounds (round k/N, ETA) and the per-phase timings of the report."""
from ansible_collections.linerate.fabric.plugins.filter.verify import FilterModule
from ansible_collections.linerate.fabric.plugins.module_utils import report, verify

from test_verify_plans import FABRIC


def test_first_round_has_no_eta_and_counts_pairs():
    rounds = verify.round_robin([f"n{i}" for i in range(8)])
    assert verify.round_progress(rounds, 0, started=100.0, now=100.0, rails=8) == "round 1/7: 4 pairs x 8 rails"
    assert verify.round_progress(rounds, 0, rails=1) == "round 1/7: 4 pairs x 1 rail"


def test_eta_is_the_mean_measured_round_times_the_rounds_left():
    rounds = verify.round_robin([f"n{i}" for i in range(32)])  # 31 rounds of 16 pairs
    line = verify.round_progress(rounds, 2, started=1000.0, now=1026.0, rails=8)
    # 2 rounds took 26 s: 13 s a round, 29 rounds left (this one included) -> 377 s
    assert line == "round 3/31: 16 pairs x 8 rails; 2 done in 26 s (13.0 s a round), ETA 6 min 17 s"
    last = verify.round_progress(rounds, 30, started=0, now=3 * 3600, rails=2, label="re-test")
    assert last.startswith("re-test 31/31: 16 pairs x 2 rails; 30 done in 3 h 00 min (360.0 s a round), ETA 6 min 00 s")


def test_a_round_of_a_large_fleet_stays_short():
    names = [f"dgx-a100-rack{i // 8 + 1:02d}-node{i % 8 + 1:02d}" for i in range(256)]
    rounds = verify.round_robin(names)
    line = verify.round_progress(rounds, 100, started=0.0, now=1000.0, rails=8)
    assert line.startswith("round 101/255: 128 pairs x 8 rails;") and len(line) < 100
    assert "dgx" not in line


def test_filter_reads_the_clock_when_not_given():
    f = FilterModule().filters()["verify_round_progress"]
    rounds = [[["a", "b"]], [["a", "c"]], [["b", "c"]]]
    assert f(rounds, 1, 50.0, 2, now=60.0) == "round 2/3: 1 pair x 2 rails; 1 done in 10 s (10.0 s a round), ETA 20 s"
    assert "ETA" in f(rounds, 1, 0.0, 2) and f(rounds, "0", None) == "round 1/3: 1 pair x 1 rail"


def test_duration_text():
    assert [verify.duration_text(s) for s in (0, 41.4, 59.6, 392, 3600, 7322)] == [
        "0 s", "41 s", "1 min 00 s", "6 min 32 s", "1 h 00 min", "2 h 02 min"]


def test_phase_timings_from_start_marks():
    marks = {"ib_write_bw": 110.0, "setup": 100.0, "nccl": 150.5, "ports": 104.25}
    assert verify.phase_timings(marks, 170.0, 0.44) == [
        {"phase": "setup", "seconds": 4.2}, {"phase": "ports", "seconds": 5.8},
        {"phase": "ib_write_bw", "seconds": 40.5}, {"phase": "nccl", "seconds": 19.5},
        {"phase": "report", "seconds": 0.4}]
    assert verify.phase_timings({}, 5.0) == [] and verify.phase_timings(None, 5.0, 1) == [{"phase": "report", "seconds": 1}]


def test_markdown_shows_the_phases():
    doc = report.build_report([], verify.summarize([]), {}, dict(FABRIC, name="lab"),
                              {"phases": [{"phase": "ports", "seconds": 1.5}, {"phase": "ib_write_bw", "seconds": 40.0},
                                          {"phase": "report", "seconds": 0.3}]})
    md = report.to_markdown(doc)
    assert "Phases: ports 1.5 s, ib_write_bw 40 s, report 0.3 s; 41.8 s in all." in md
    assert "Phases" not in report.to_markdown(report.build_report([], verify.summarize([]), {}, FABRIC))


def test_markdown_names_the_slowest_round_and_the_client_restarts():
    sched = {"rounds": [{"round": 0, "seconds": 2.6, "client_starts": 3, "rails": 2},
                        {"round": 1, "seconds": 4.1, "client_starts": 5, "rails": 2}], "client_retries": 4}
    doc = report.build_report([], verify.summarize([]), {"ib_write_bw": {"passed": True, "schedule": sched}},
                              dict(FABRIC, name="lab"))
    assert ("ib_write_bw rounds: 2, the slowest round 1 (4.1 s); 4 client start(s) again while a server "
            "was not listening yet.") in report.to_markdown(doc)
    doc["checks"]["ib_write_bw"]["schedule"] = {"rounds": [], "client_retries": 0}
    assert "ib_write_bw rounds" not in report.to_markdown(doc)
