"""The NVUE confirm forms (issue 38, grammar): ``nv config apply --confirm <minutes> -y`` arms the
rollback timer; ``--confirm-yes`` keeps the revision and ``--confirm-no`` rolls it back now (the
options NVIDIA's own NVUE test suite gives ``nv config apply``, sonic-mgmt
``ngts/nvos_constants/constants_nvos.py`` ConfigConsts, beside the reference's ``--confirm-status``);
an invented verb or option is refused, and the driver sends only ``--confirm <minutes> -y`` and
``--confirm-yes``."""

import pytest

from switch_testlib import sim_driver

PORTS = ["swp1"]


def _armed(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", PORTS)
    before = dict(sim.sw.applied)
    assert "Error" not in sim("nv set interface swp1 description linerate-test")
    out = sim("nv config apply --confirm 5 -y")
    assert out.startswith("applied") and sim.sw.confirm is not None, out
    return sim, before


def test_confirm_yes_keeps_the_revision(tmp_path, monkeypatch):
    sim, before = _armed(tmp_path, monkeypatch)
    rev = sim.sw.confirm["rev"]
    assert sim("nv config apply --confirm-yes") == f"applied [rev_id: {rev}]"
    assert sim.sw.confirm is None and sim.sw.applied != before


def test_confirm_no_rolls_back_now(tmp_path, monkeypatch):
    sim, before = _armed(tmp_path, monkeypatch)
    rev = sim.sw.confirm["rev"]
    assert sim("nv config apply --confirm-no") == f"rolled back [rev_id: {rev}]"
    assert sim.sw.confirm is None and sim.sw.applied == before
    assert sim.sw.revisions[-1]["message"] == "Rollback: confirmation rejected"
    assert sim("nv config apply --confirm-no").startswith("Error: There is no pending apply")


@pytest.mark.parametrize(
    "line",
    [
        "nv config confirm -y",  # no such verb in the reference
        "nv config confirm",
        "nv config apply --confirm-maybe",  # no such option
        "nv config apply --confirm-yes --confirm-no",
        "nv config apply --confirm 5 --confirm-yes",
    ],
)
def test_invented_confirm_forms_are_refused(tmp_path, monkeypatch, line):
    sim, _before = _armed(tmp_path, monkeypatch)
    assert sim(line).startswith("Error:"), line
    assert sim.sw.confirm is not None  # nothing was confirmed or rolled back


def test_the_driver_sends_only_the_sourced_forms(tmp_path, monkeypatch):
    from switch_testlib import render
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    d, sim = sim_driver(tmp_path, "nvue", PORTS)
    res = run_apply(d, want_text=render("nvue", PORTS), ports=PORTS, stamp="20260101T000001Z")
    assert res["changed"] and not res.get("failed"), res
    applies = [c for c in sim.sent if c.startswith("nv config apply") or c.startswith("nv config confirm")]
    assert applies and all(
        c in ("nv config apply --confirm-yes",) or (c.startswith("nv config apply --confirm ") and c.endswith(" -y") and c.split()[4].isdigit())
        for c in applies
    ), applies
