"""lab faults ib-errors / ib-errors-clear: a switch port's PortCounters error counters set on the running
ibsim with its console command PerformanceSet (ibsim 0.10), so the real ibqueryerrors reads them; an
ibsim refusal, an unknown counter, port 0 or an unknown switch is an error naming it."""

import json
import os

import pytest

import ibsimlab
import labsim  # noqa: F401  (lab/sim on sys.path)
from linerate_lab import faults, model


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    """An ibsim run dir whose console writes are answered the way ibsim 0.10 answers them (its log)."""
    d = tmp_path / "ibsim"
    d.mkdir()
    (d / "fabric.json").write_text(json.dumps({"nodes": {}, "switches": {"leaf1": {"nports": 36, "ports": {}}}}))
    log = d / "ibsim.log"
    log.write_text("Network simulator ready.\nsim> ")
    sent = []

    def console(rd, *commands):
        sent.extend(commands)
        with open(log, "a") as f:
            for c in commands:
                node, rest = c[len('PerformanceSet "') :].split('"', 1)
                field, value = rest.split(" ", 1)[1].split("=")
                if field.split(".")[1] not in ibsimlab.PERF_ERROR_COUNTERS + ("PortXmitWait",):
                    f.write(f"# field {field.split('.')[1]} cannot be found in attribute PortCounters\nsim> ")
                else:
                    f.write(f"{node}{rest.split(' ')[0]} {field} has been set to {value}\nsim> ")

    monkeypatch.setattr(ibsimlab, "console", console)
    monkeypatch.setattr(ibsimlab, "_paths", lambda rd: {"model": str(d / "fabric.json"), "log": str(log), "conf": str(d / "ibsim.json")})
    return d, sent


def test_counters_are_set_with_perfomanceset_confirmed_and_recorded_then_cleared(run_dir):
    d, sent = run_dir
    rec = ibsimlab.fault(str(d), "counters", "leaf1", [7], counters={"SymbolErrorCounter": 250, "LinkDownedCounter": 3})
    assert sent == ['PerformanceSet "leaf1"[7] PortCounters.SymbolErrorCounter=250', 'PerformanceSet "leaf1"[7] PortCounters.LinkDownedCounter=3']
    assert rec["counters"] == {"SymbolErrorCounter": 250, "LinkDownedCounter": 3}
    assert ibsimlab.load_faults(str(d)) == [{"kind": "counters", "switch": "leaf1", "port": 7, "counters": {"SymbolErrorCounter": 250, "LinkDownedCounter": 3}}]
    ibsimlab.fault(str(d), "counters", "leaf1", [7], counters=dict.fromkeys(ibsimlab.PERF_ERROR_COUNTERS, 0))
    assert ibsimlab.load_faults(str(d)) == [] and len(sent) == 2 + 12
    # the net file is not touched by counters (they live in ibsim's memory)
    assert ibsimlab.apply_faults({"nodes": {}, "switches": {}}, [{"kind": "counters"}]) == {"nodes": {}, "switches": {}}


@pytest.mark.parametrize(
    "switch,port,msg",
    [
        ("leaf1", 0, "counters: port 0 of leaf1: allowed 1..36 (ibsim cannot set the base switch port 0's counters)"),
        ("leaf1", 37, "counters: port 37 of leaf1: allowed 1..36"),
        ("spine9", 1, "counters: 'spine9' is not a switch of the subnet (allowed: leaf1)"),
    ],
)
def test_a_port_ibsim_cannot_set_is_refused_before_anything_is_sent(run_dir, switch, port, msg):
    d, sent = run_dir
    with pytest.raises(SystemExit) as e:
        ibsimlab.fault(str(d), "counters", switch, [port], counters={"PortRcvErrors": 1})
    assert str(e.value).startswith(msg) and sent == []


def test_an_ibsim_refusal_is_an_error_with_its_words(run_dir, monkeypatch):
    d, _sent = run_dir
    monkeypatch.setattr(ibsimlab, "PERF_ERROR_COUNTERS", ibsimlab.PERF_ERROR_COUNTERS)
    with pytest.raises(SystemExit, match=r"ibsim refused PerformanceSet on leaf1\[7\]: # field Bogus cannot be found"):
        ibsimlab.perf_set(str(d), "leaf1", 7, {"Bogus": 1})


@pytest.mark.parametrize(
    "items,msg",
    [
        (["PortXmitWait=5"], "counters: 'PortXmitWait=5': allowed: COUNTER=VALUE with COUNTER one of SymbolErrorCounter"),
        (["SymbolErrorCounter"], "counters: 'SymbolErrorCounter': allowed: COUNTER=VALUE"),
        (["SymbolErrorCounter=-1"], "counters: 'SymbolErrorCounter=-1': the value must be an integer 0..4294967295"),
        (["SymbolErrorCounter=4294967296"], "the value must be an integer 0..4294967295"),
        ([], "counters: give at least one --set COUNTER=VALUE"),
    ],
)
def test_counter_settings_name_what_is_allowed(items, msg):
    with pytest.raises(SystemExit, match=msg.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        ibsimlab.parse_counter_settings(items)


def test_the_lab_fault_goes_through_ibsim_and_is_tracked_until_cleared(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    (tmp_path / "fabric.json").write_text(json.dumps({"version": 1, "transport": "infiniband", "nodes": {}, "switches": {"leaf1": {}}, "faults": []}))
    calls = []

    class Lab:
        IBSIM_DIR = str(tmp_path / "ibsim")

        @staticmethod
        def ibsimlab():
            class Isl:
                PERF_ERROR_COUNTERS = ibsimlab.PERF_ERROR_COUNTERS
                parse_counter_settings = staticmethod(ibsimlab.parse_counter_settings)

                @staticmethod
                def fault(run_dir, kind, switch, ports, **kw):
                    calls.append((run_dir, kind, switch, ports, kw))
                    return {}

            return Isl

    msg = faults.apply("ib-errors", ["leaf1", "7", "SymbolErrorCounter=250,LinkDownedCounter=3"], lab=Lab)
    assert msg == "leaf1 port 7: SymbolErrorCounter=250, LinkDownedCounter=3 (ibqueryerrors and perfquery read them)"
    assert calls == [(Lab.IBSIM_DIR, "counters", "leaf1", [7], {"counters": {"SymbolErrorCounter": 250, "LinkDownedCounter": 3}})]
    assert model.load()["faults"] == [{"kind": "ib-counters", "args": ["leaf1", "7"]}]
    faults.apply("ib-errors-clear", ["leaf1", "7"], lab=Lab)
    assert calls[-1][4] == {"counters": dict.fromkeys(ibsimlab.PERF_ERROR_COUNTERS, 0)}
    assert model.load()["faults"] == []
    with pytest.raises(SystemExit, match="PortXmitWait=1"):
        faults.apply("ib-errors", ["leaf1", "7", "PortXmitWait=1"], lab=Lab)
    assert os.path.exists(tmp_path / "fabric.json")
