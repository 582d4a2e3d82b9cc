"""The lab's mlxlink: MFT 4.30 layout (read by the real-format parser), link state and the
physical error counters of the NIC in the model, BER over the bits carried since boot."""

import pytest

from linerate_lab.tools import mlxlink

from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import parse_mlxlink


@pytest.fixture
def up_1h(monkeypatch):
    monkeypatch.setattr(mlxlink, "uptime_s", lambda: 3600.0)


def test_healthy_link_reads_like_mft(lab, up_1h):
    rc, out, _ = lab.run(mlxlink, ["-d", "mlx5_0", "-m", "-c"])
    assert rc == 0
    r = parse_mlxlink(out)
    assert r["state"] == "Active" and r["physical_state"] == "LinkUp" and r["speed"] == "400G"
    assert r["width"] == "4x" and r["fec"] == "Standard_RS-FEC (544,514)"
    assert r["recommendation"] == "No issue was observed" and r["effective_errors"] == 0
    assert r["effective_ber"] == pytest.approx(1.5e-254) and r["raw_errors_per_lane"] == [0, 0, 0, 0]
    assert r["link_down"] == 0 and r["time_since_clear_min"] == pytest.approx(60.0)
    assert "Module Info" in r["sections"]
    # the 35-column key field of MFT 4.30, and its colours on a pipe: the value's colour before it,
    # the reset after the newline (mstflint mlxlink_record.cpp)
    assert "State                              : \x1b[32mActive\n\x1b[0mPhysical state" in out
    assert "Loopback Mode                      : No Loopback\n" in out  # an uncoloured record


def test_errors_and_flaps_show_with_their_ber(lab, up_1h):
    lab.update(
        lambda n: (
            n["nics"][0]
            .setdefault("counters", {})
            .update(rx_symbol_err_phy=144, rx_corrected_bits_phy=2_000_000, rx_err_lane_2_phy=5000, link_down_events_phy=3)
        )
    )
    r = parse_mlxlink(lab.run(mlxlink, ["-d", "mlx5_0", "-c"])[1])
    assert r["effective_errors"] == 144 and r["link_down"] == 3 and r["raw_errors_per_lane"] == [0, 0, 5000, 0]
    assert r["effective_ber"] == pytest.approx(144 / (400e9 * 3600), rel=0.05)
    assert r["raw_ber"] == pytest.approx(2_005_000 / (400e9 * 3600), rel=0.05)
    assert r["recommendation"] != "No issue was observed"
    # the other NIC is untouched
    assert parse_mlxlink(lab.run(mlxlink, ["-d", "mlx5_1", "-c"])[1])["effective_errors"] == 0


def test_a_link_that_flapped_and_trained_again_has_no_issue_now(lab, up_1h):
    """PDDR's troubleshooting status is the link's state now; its history is the Link Down Counter."""
    lab.update(lambda n: n["nics"][0].setdefault("counters", {}).update(link_down_events_phy=7))
    r = parse_mlxlink(lab.run(mlxlink, ["-d", "mlx5_0", "-c"])[1])
    assert r["link_down"] == 7 and r["state"] == "Active"
    assert r["recommendation"] == "No issue was observed"


def test_down_link_and_bad_device(lab, up_1h):
    lab.update(lambda n: n["nics"][0].update(cable="down"))
    r = parse_mlxlink(lab.run(mlxlink, ["-d", "mlx5_0"])[1])
    assert r["state"] == "Polling" and r["speed"] == "N/A"
    rc, out, _ = lab.run(mlxlink, ["-d", "mlx5_9"])
    assert rc == 1 and out == "-E- Failed to open device: mlx5_9\n"


@pytest.mark.parametrize("errors, bits, text", [(0, 1e15, "15E-255"), (23, 1e13, "23E-13"), (1, 1e12, "10E-13"), (999, 1e12, "10E-10")])
def test_ber_text(errors, bits, text):
    assert mlxlink.ber_text(errors, bits) == text
