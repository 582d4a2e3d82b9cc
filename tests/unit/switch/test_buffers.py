"""Lossless headroom at 400/800G from each SKU's own pg_profile_lookup.ini, in the buffer model the switch
is in (traditional: the profile; dynamic: BUFFER_PG profile NULL), on the lab's SONiC simulator.

Expected numbers are the rows of sonic-buildimage 086b03bd70f9 (the files the vendored table names):
device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600/pg_profile_lookup.ini lines 25-26 (400G/800G 5m) and
device/arista/x86_64-arista_7060x6_64pe_b/Arista-7060X6-64PE-B-P32O64/pg_profile_lookup.ini lines 3, 8.
"""

import json

import pytest

from switch_testlib import driver_for, render

from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.switch import sonic  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import SwitchError  # noqa: E402
from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_buffer_data import (  # noqa: E402
    PLATFORM_BUFFERS,
)
from ansible_collections.linerate.fabric.plugins.module_utils.switch.window import run_apply  # noqa: E402

SN5600, TH5 = "ACS-SN5600", "Arista-7060X6-64PE-B-P32O64"
# (size, xon, xoff, xon_offset) per (SKU, speed) at 5m, as the files print them
ROWS = {
    (SN5600, 400000): (250880, 19456, 231424, None),
    (SN5600, 800000): (304128, 38912, 257024, None),
    (TH5, 400000): (8636, 0, 425958, 3556),
    (TH5, 800000): (8636, 0, 724662, 3556),
}
PORTS = {"Ethernet0": 400, "Ethernet8": 800}


def ports_of(speeds):
    return [{"name": p, "speed_gbps": g, "peer": ""} for p, g in speeds.items()]


@pytest.mark.parametrize("sku,speed", sorted(ROWS))
def test_the_skus_own_row_is_the_profile(sku, speed):
    size, xon, xoff, offset = ROWS[(sku, speed)]
    prof = buffers.sonic_lossless([{"name": "Ethernet0", "speed_gbps": speed // 1000}], "5m", hwsku=sku)[speed]
    want = {"pool": "ingress_lossless_pool", "size": str(size), "xon": str(xon), "xoff": str(xoff), "dynamic_th": "0"}
    if offset is not None:
        want["xon_offset"] = str(offset)
    assert prof["name"] == f"pg_lossless_{speed}_5m_profile" and prof["fields"] == want


def test_a_speed_the_skus_file_lacks_is_refused_naming_the_file():
    with pytest.raises(ValueError) as err:  # Arista-7060X6-64PE-B-P64 has 800G 5m only
        buffers.sonic_lossless([{"name": "Ethernet0", "speed_gbps": 400}], "5m", hwsku="Arista-7060X6-64PE-B-P64")
    assert "speed 400000 and cable 5m" in str(err.value)
    assert "Arista-7060X6-64PE-B-P64/pg_profile_lookup.ini" in str(err.value)
    # without a SKU, sonic-swss's test rows stop at 100G
    with pytest.raises(ValueError, match="speed 400000 and cable 5m in sonic-swss's test"):
        buffers.sonic_lossless([{"name": "Ethernet0", "speed_gbps": 400}], "5m")


def test_an_unknown_sku_is_refused_naming_key_value_and_the_skus():
    skus = " | ".join(sorted(PLATFORM_BUFFERS))
    assert buffers.hwsku_problem("acs-sn5600") == (
        f"switch_fabric_sonic_hwsku: 'acs-sn5600' is not a SONiC SKU linerate has the buffer defaults of (allowed: "
        f"{skus}, or empty for sonic-swss's test rows plus switch_sonic_pg_lookup; names are case-sensitive: "
        "'ACS-SN5600'); on another platform leave it empty and give the rows of its "
        "device/<vendor>/<platform>/<hwsku>/pg_profile_lookup.ini in switch_sonic_pg_lookup"
    )
    assert "case-sensitive" not in buffers.hwsku_problem("x") and TH5 in buffers.hwsku_problem("x")
    assert buffers.hwsku_problem("") == buffers.hwsku_problem(None) == buffers.hwsku_problem(SN5600) == ""
    got = buffers.port_speed_problems("leaf2", ports_of(PORTS), "5m", hwsku="Mellanox-SN5600-C256")
    assert got[0][:2] == ("leaf2: switch_sonic_hwsku", "Mellanox-SN5600-C256") and SN5600 in got[0][2]
    assert buffers.port_speed_problems("leaf2", ports_of(PORTS), "5m", hwsku=SN5600) == []


def test_the_buffer_model_is_read_from_device_metadata():
    assert buffers.buffer_model({}) == "traditional"
    assert buffers.buffer_model({"DEVICE_METADATA": {"localhost": {"buffer_model": "dynamic"}}}) == "dynamic"
    # a full config being restored brings its own
    assert (
        buffers.buffer_model(
            {"DEVICE_METADATA": {"localhost": {"buffer_model": "dynamic"}}}, {"DEVICE_METADATA": {"localhost": {"buffer_model": "traditional"}}}
        )
        == "traditional"
    )
    with pytest.raises(ValueError) as err:
        buffers.buffer_model({"DEVICE_METADATA": {"localhost": {"buffer_model": "static"}}})
    assert str(err.value) == (
        "DEVICE_METADATA|localhost buffer_model: 'static' is not a buffer model (allowed: traditional | dynamic, sonic-device_metadata.yang)"
    )


def test_the_dynamic_model_gets_no_headroom_sizes():
    want = sonic.parse_config_db(
        render("sonic", list(PORTS), switch_fabric_ports_effective=ports_of(PORTS), switch_fabric_sonic_hwsku=SN5600, switch_fabric_sonic_pg_lookup={})
    )
    assert sorted(want["BUFFER_PROFILE"]) == ["pg_lossless_400000_5m_profile", "pg_lossless_800000_5m_profile"]
    buffers.for_model(want, "traditional")
    assert want["BUFFER_PG"]["Ethernet8|3"] == {"profile": "pg_lossless_800000_5m_profile"}
    buffers.for_model(want, "dynamic")
    assert "BUFFER_PROFILE" not in want
    assert want["BUFFER_PG"] == {"Ethernet0|3": {"profile": "NULL"}, "Ethernet8|3": {"profile": "NULL"}}
    assert want["CABLE_LENGTH"] == {"AZURE": {"Ethernet0": "5m", "Ethernet8": "5m"}}


# ---------------------------------------------------------------- on the lab's simulator
class Sim:
    """The lab's SONiC simulator in-process, as ``sku`` in ``model``, with 400G and 800G fabric ports."""

    def __init__(self, tmp_path, sku, model):
        from sim_server import Store
        from sim_sonic import Sonic

        spec = {
            "platform": "sonic",
            "address": "127.0.1.9",
            "port": 22,
            "hwsku": sku,
            "buffer_model": model,
            "ports": {p: {"peer": f"node{i + 1}:mlx5_1", "speed_gbps": g} for i, (p, g) in enumerate(PORTS.items())},
        }
        (tmp_path / "fabric.json").write_text(json.dumps({"version": 1, "nodes": {}, "switches": {"sw": spec}}))
        store = Store(str(tmp_path))
        self.sw = Sonic("sw", spec, store)
        store.load(self.sw)
        self.ctx = self.sw.new_context("admin")
        self.sent = []

    def __call__(self, command, timeout=None):
        self.sent.append(command)
        out = self.sw.execute(self.ctx, command)
        return out[0] if isinstance(out, tuple) else out


def push(tmp_path, monkeypatch, sku, model, **over):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    sim = Sim(tmp_path, sku, model)
    d = driver_for("sonic", "sw", host="127.0.1.9", username="u", password="p")
    d.send = sim
    over = dict({"switch_fabric_sonic_hwsku": sku, "switch_fabric_sonic_pg_lookup": {}, "switch_fabric_ports_effective": ports_of(PORTS)}, **over)
    text = render("sonic", [p["name"] for p in over["switch_fabric_ports_effective"]], **over)
    return d, sim, text


@pytest.mark.parametrize("sku", [SN5600, TH5])
def test_traditional_model_the_lab_switch_gets_the_platforms_headroom(tmp_path, monkeypatch, sku):
    d, sim, text = push(tmp_path, monkeypatch, sku, "traditional")
    assert [sim.sw.lossless_headroom(p, None) for p in PORTS] == [[], []]
    res = run_apply(d, text, ports=list(PORTS), backup_dir=str(tmp_path / "b"), want_pfc=[3], want_ecn=True)
    assert res["changed"]
    for port, gbps in PORTS.items():
        size, xon, xoff, offset = ROWS[(sku, gbps * 1000)]
        name, prof = sim.sw.pg_profile(port, "3")
        assert (
            name == f"pg_lossless_{gbps * 1000}_5m_profile"
            and (prof["size"], prof["xon"], prof["xoff"]) == (str(size), str(xon), str(xoff))
            and prof.get("xon_offset") == (None if offset is None else str(offset))
        )
        assert sim.sw.lossless_headroom(port, None) == [3]
    assert d.oper(list(PORTS))["Ethernet8"]["headroom"] == [3]
    assert run_apply(d, text, ports=list(PORTS))["commands"] == []  # idempotent


@pytest.mark.parametrize("sku", [SN5600, TH5])
def test_dynamic_model_writes_no_sizes_and_buffermgrd_computes_the_platforms(tmp_path, monkeypatch, sku):
    d, sim, text = push(tmp_path, monkeypatch, sku, "dynamic")
    res = run_apply(d, text, ports=list(PORTS), backup_dir=str(tmp_path / "b"), want_pfc=[3], want_ecn=True)
    assert res["changed"] and not any("BUFFER_PROFILE" in c for c in res["commands"])
    assert "sudo sonic-db-cli CONFIG_DB hset 'BUFFER_PG|Ethernet8|3' profile NULL" in res["commands"]
    assert not [k for k in sim.sw.db.get("BUFFER_PROFILE", {}) if k.startswith("pg_lossless")]
    for port, gbps in PORTS.items():
        name, prof = sim.sw.pg_profile(port, "3")
        assert name == f"pg_lossless_{gbps * 1000}_5m_profile" and prof["xoff"] == str(ROWS[(sku, gbps * 1000)][2])
    # read back from APPL_DB, where buffermgrd put the computed profile
    assert d.oper(list(PORTS))["Ethernet0"]["headroom"] == [3]
    assert "sudo sonic-db-cli APPL_DB HGETALL BUFFER_PG_TABLE:Ethernet0:3" in sim.sent
    assert run_apply(d, text, ports=list(PORTS))["commands"] == []


def test_less_headroom_than_the_platform_needs_fails_the_post_check_and_rolls_back(tmp_path, monkeypatch):
    # the lab's former invented 400G row (xoff 36864) on an SN5600, whose 400G 5m row asks 231424
    d, sim, text = push(
        tmp_path,
        monkeypatch,
        SN5600,
        "traditional",
        switch_fabric_sonic_hwsku="",
        switch_fabric_ports_effective=[{"name": "Ethernet0", "speed_gbps": 400, "peer": ""}],
        switch_fabric_sonic_pg_lookup={400000: {"5m": {"size": 55296, "xon": 18432, "xoff": 36864}}},
    )
    before = sim.sw.db.get("BUFFER_PROFILE", {}).copy()
    with pytest.raises(SwitchError) as err:
        run_apply(d, text, ports=["Ethernet0"], backup_dir=str(tmp_path / "b"), want_pfc=[3], want_ecn=True)
    assert "Ethernet0: no lossless headroom for the no-drop priority 3" in str(err.value)
    assert sim.sw.db.get("BUFFER_PROFILE", {}) == before  # rolled back to the checkpoint


def test_an_intent_for_another_sku_is_refused_before_anything_is_sent(tmp_path, monkeypatch):
    d, sim, text = push(tmp_path, monkeypatch, SN5600, "traditional", switch_fabric_sonic_hwsku=TH5)
    with pytest.raises(SwitchError) as err:
        run_apply(d, text, ports=list(PORTS), backup_dir=str(tmp_path / "b"))
    assert f"switch_fabric_sonic_hwsku: {TH5!r} is not this switch's SKU" in str(err.value)
    assert f"hwsku is {SN5600!r}" in str(err.value)
    assert not [c for c in sim.sent if c.startswith("sudo config") or "hset" in c]


# ---------------------------------------------------------------- NVUE and EOS at 400/800G
def test_nvue_headroom_is_switchds_from_the_cable_length_written_only_when_given(tmp_path, monkeypatch):
    from switch_testlib import sim_driver

    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    ports = ["swp1", "swp2"]
    speeds = [{"name": "swp1", "speed_gbps": 400, "peer": ""}, {"name": "swp2", "speed_gbps": 800, "peer": ""}]
    assert "cable-length" not in render("nvue", ports, switch_fabric_ports_effective=speeds)  # NVUE's own 100 m
    text = render("nvue", ports, switch_fabric_ports_effective=speeds, switch_fabric_nvue_cable_length="40m")
    assert [line for line in text.splitlines() if "cable-length" in line] == ["nv set qos pfc linerate cable-length 40"]
    d, _sim = sim_driver(tmp_path, "nvue", ports)
    res = run_apply(d, text, ports=ports, backup_dir=str(tmp_path / "b"), want_pfc=[3], want_ecn=True)
    assert "nv set qos pfc linerate cable-length 40" in res["commands"]
    assert run_apply(d, text, ports=ports)["commands"] == []


@pytest.mark.parametrize(
    "family, asic, queue, forms",
    [
        ("7060x6", "Tomahawk5", "tx-queue", {400: "400g-4", 800: "800g-8"}),
        ("7060x5", "Tomahawk4", "tx-queue", {400: "400g-8"}),
        ("7800r3", "Jericho2 (7800R3 line cards)", "uc-tx-queue", {400: "400g-8"}),
    ],
)
def test_eos_7060x_and_7800r_forms(family, asic, queue, forms):
    from switch_testlib import eos_profile

    prof = eos_profile(family)
    assert prof["asic"] == asic and prof["queue"] == queue
    assert {g: prof["speeds"].get(g) for g in forms} == forms and (800 in prof["speeds"]) == (800 in forms)
    text = render(
        "eos", ["Ethernet1/1"], switch_fabric_eos_profile=prof, switch_fabric_ports_effective=[{"name": "Ethernet1/1", "speed_gbps": max(forms), "peer": ""}]
    )
    assert f"   {queue} 3\n" in text and f"   speed {forms[max(forms)]}\n" in text
    assert "   priority-flow-control priority 3 no-drop\n" in text


def test_a_lab_state_saved_with_an_invented_sku_takes_the_topologys(tmp_path, monkeypatch):
    monkeypatch.setenv("LINERATE_LAB_STATE", str(tmp_path))
    sim = Sim(tmp_path, SN5600, "traditional")
    state = sim.sw.to_json()
    for db in (state["db"], state["saved"]):
        db["DEVICE_METADATA"]["localhost"]["hwsku"] = "Mellanox-SN5600-C256"  # the simulator's former SKU
    state["checkpoints"] = {"cp": json.loads(json.dumps(state["db"]))}
    sim.sw.from_json(state)
    assert {db["DEVICE_METADATA"]["localhost"]["hwsku"] for db in (sim.sw.db, sim.sw.saved, sim.sw.checkpoints["cp"])} == {SN5600}


def test_validation_reads_the_skus_rows_before_any_switch_is_contacted():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import schema

    ports = [{"device": f"mlx5_{i}", "netdev": f"eth{i}", "switch": "sw1", "switch_port": f"Ethernet{8 * i}"} for i in range(2)]
    hosts = {"n1": {"rdma_ports": ports}}

    def check(**sw1):
        return schema.validate({"transport": "roce", "link_speed_gbps": 400}, hosts, {"sw1": dict(switch_platform="sonic", **sw1)})

    assert check(switch_sonic_hwsku=SN5600) == []  # its own 400G 5m row
    # the 7060X6 P64 SKU has 800G 5m only
    got = check(switch_sonic_hwsku="Arista-7060X6-64PE-B-P64")
    assert len(got) == 1 and got[0].startswith(
        "sw1: fabric port(s) Ethernet0, Ethernet8: speed_gbps: 400 is not "
        "allowed (allowed: a speed with a lossless headroom row for cable 5m "
        "on SONiC: 800 Gb/s (the rows of Arista-7060X6-64PE-B-P64 (Tomahawk 5)"
    )
    got = check(switch_sonic_hwsku="ACS-SN5601")
    assert got[0].startswith("sw1: switch_sonic_hwsku: 'ACS-SN5601' is not allowed (allowed: ACS-MSN4600C | ")


def test_a_port_without_a_speed_is_named_with_what_is_allowed():
    with pytest.raises(ValueError) as err:
        buffers.sonic_lossless([{"name": "Ethernet0"}], "5m", hwsku=SN5600)
    assert str(err.value) == (
        "switch_fabric_ports_effective: port 'Ethernet0' has no speed_gbps (allowed: the port's "
        "speed in Gb/s; its lossless headroom profile is chosen by speed and cable length)"
    )


def test_the_sku_rule_names_the_skus_and_the_case():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables

    skus = " | ".join(sorted(PLATFORM_BUFFERS))
    assert variables.validate_host({"switch_sonic_hwsku": "acs-sn5600"}) == [
        "switch_sonic_hwsku: 'acs-sn5600' is not allowed (allowed: empty (sonic-swss's rows plus switch_sonic_pg_lookup), "
        f"or a SONiC SKU linerate has the buffer defaults of: {skus}; names are case-sensitive: 'ACS-SN5600', not "
        "'acs-sn5600')"
    ]
    assert variables.validate_host({"switch_fabric_sonic_hwsku": SN5600, "switch_sonic_hwsku": ""}) == []
