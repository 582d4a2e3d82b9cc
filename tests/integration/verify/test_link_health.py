"""Counter evidence against the lab (issue 12): link health over the verification window and the
RDMA/ECN side of the incast. Each fault is injected, caught with its code, node, device and switch
port, then undone; a healthy lab has no counter finding at all."""

import os

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks.rdma import rdma_tests
from conftest import run_playbook
from conftest import lab_fault
from verify_lab import find, healthy, port_of, verify  # noqa: F401  (healthy: a fixture)

# link health and the incast only: the faults here do not need NCCL to show
FAST_CHECKS = ["-e", '{"verify_fabric_checks": ["ports", "link_health", "ib_write_bw", "incast"]}']


def located(report, code):
    return {(f["node"], f["device"], f["switch"], f["switch_port"]) for f in report["findings"] if f["code"] == code}


def test_healthy_lab_shows_the_counter_evidence_and_no_counter_finding(converged, healthy):  # noqa: F811 (the fixture imported above)
    report, latest = healthy
    # A late incast client that ran alone (INCAST_INCONCLUSIVE, seen on a loaded machine) is a
    # warning about the lab's start skew, not a counter finding; nothing else may be reported.
    alone = {(f["node"], f["device"]) for f in report["findings"] if f["code"] == "INCAST_INCONCLUSIVE"}
    assert [f for f in report["findings"] if f["code"] != "INCAST_INCONCLUSIVE"] == []
    n = len(converged["nodes"])
    health = report["checks"]["link_health"]
    assert health["passed"] and len(health["ports"]) == 2 * n
    for p in health["ports"]:
        assert (p["errors"], p["flaps"], p["missing"]) == (0, 0, []), p
        assert p["effective_ber"] is not None and p["fec"] and p["switch_port"]
    for rail in report["checks"]["incast"]["rails"]:
        rx, senders = rail["receiver"], rail["senders"]
        assert rail["ecn_marked"][rx] > 0 and rail["cnp_sent"][rx] > 0 and rail["out_of_sequence"][rx] == 0
        judged = [s for s in senders if (s, rail["device"]) not in alone]
        assert judged and all(rail["cnp_handled"][s] > 0 and rail["pause"][s] > 0 for s in judged), rail
        # the switches counted the same congestion: pauses sent towards the senders, marks towards the receiver
        assert all(rail["switch_pause"][s] > 0 for s in judged), rail
        assert rail["switch_ecn_marked"][rx] > 0 and rail["switch_drops"][rx] == 0, rail
    # every lab switch lacks something its real platform lacks, and says so: NVUE pauses on the other
    # priorities, SONiC CNPs, EOS (the spine, read through its uplinks) per-priority pauses, ECN marks
    # and queue drops
    unproven = report["checks"]["incast"]["switch_unproven"]
    assert set(unproven) == set(converged["switches"])
    lacks = {"nvue": "pause frames on priorities other than the RoCE one", "sonic": "CNPs sent", "eos": "pause frames per priority"}
    for name, sw in converged["switches"].items():
        assert lacks[sw["platform"]] in unproven[name], (name, unproven[name])
    with open(os.path.join(latest, "summary.md")) as f:
        md = f.read()
    # one counter table per incast round and rail (the rotation: every node a receiver once)
    assert "### incast round 0, mlx5_0:" in md and "| ecn_marked | cnp_sent | cnp_handled | out_of_sequence |" in md
    assert "| switch_pause | switch_ecn_marked | switch_drops |" in md and "### incast rotation:" in md
    assert "### link health over the verification window" in md


def test_crc_errors_on_a_cable(converged):
    lab_fault("crc-errors", "node2", "mlx5_1")
    try:
        report = verify(*FAST_CHECKS, expect_ok=False)
    finally:
        lab_fault("crc-errors-restore", "node2", "mlx5_1")
    switch, port = port_of(converged, "node2", "mlx5_1")
    assert located(report, "LINK_ERRORS") == {("node2", "mlx5_1", switch, port)}
    f = find(report, "LINK_ERRORS", "node2", "mlx5_1")[0]
    assert f["evidence"]["deltas"]["rx_crc_errors_phy"] > 0 and f["layer"] == "link"
    # the damaged cable's errors also lift its BER (mlxlink counts since boot): same port, nothing else
    assert {(x["code"], x["node"], x["device"]) for x in report["findings"] if x["severity"] == "error"} <= {
        ("LINK_ERRORS", "node2", "mlx5_1"),
        ("LINK_BER_HIGH", "node2", "mlx5_1"),
    }


# matrix: the optics class stays in CI through the switch ports' optic on every platform and the NIC
# module read of the BER test below
@pytest.mark.matrix
def test_a_degraded_optic_is_named_by_its_rx_power_and_temperature(converged):
    lab_fault("optic-degrade", "node3", "mlx5_1")
    try:
        report = verify(*FAST_CHECKS, expect_ok=False)
    finally:
        lab_fault("optic-restore", "node3", "mlx5_1")
    switch, port = port_of(converged, "node3", "mlx5_1")
    assert located(report, "OPTIC_RX_POWER_LOW") == {("node3", "mlx5_1", switch, port)}
    assert located(report, "OPTIC_TEMP_HIGH") == {("node3", "mlx5_1", switch, port)}
    f = find(report, "OPTIC_RX_POWER_LOW", "node3", "mlx5_1")[0]
    assert set(f["evidence"]["lanes"].values()) == {-14.0} and f["evidence"]["low_threshold_dbm"] == -10.41
    # the other ports' optics are read and healthy: no other optics finding
    assert {x["code"] for x in report["findings"] if x["code"].startswith("OPTIC_")} == {"OPTIC_RX_POWER_LOW", "OPTIC_TEMP_HIGH"}
    ports = {(p["node"], p["device"]): p for p in report["checks"]["link_health"]["ports"]}
    assert ports[("node1", "mlx5_0")]["optics"]["rx_power_dbm"]


def test_a_switch_ports_degraded_optic_is_named_on_every_platform(converged):
    """The switches' own modules (issue 24 item 3): one degraded module on a host port of each leaf (NVUE,
    SONiC) and on the spine's (EOS) end of an uplink; each platform's transceiver read names it with the
    switch, the port and what is cabled there, and the NICs' own modules stay healthy."""
    node2, node3 = port_of(converged, "node2", "mlx5_0"), port_of(converged, "node3", "mlx5_1")
    spine = ("spine1", "Ethernet1/1")  # towards leaf1 swp5 (inventory/lab switch_uplinks)
    injected = [node2, node3, spine]
    assert {converged["switches"][sw]["platform"] for sw, _ in injected} == {"nvue", "sonic", "eos"}
    for sw, port in injected:
        lab_fault("switch-optic-degrade", sw, port)
    try:
        report = verify(*FAST_CHECKS, expect_ok=False)
    finally:
        for sw, port in injected:
            lab_fault("switch-optic-restore", sw, port)
    for code in ("OPTIC_RX_POWER_LOW", "OPTIC_TEMP_HIGH"):
        hits = [f for f in report["findings"] if f["code"] == code]
        assert {(f["switch"], f["switch_port"]) for f in hits} == set(injected), hits
        assert all(f["evidence"]["module"] == "switch" and f["severity"] == "error" for f in hits)
        named = {(f["switch"], f["switch_port"]): (f["node"], f["device"], f.get("peer_switch")) for f in hits}
        assert named[node2] == ("node2", "mlx5_0", None) and named[node3] == ("node3", "mlx5_1", None)
        assert named[spine] == (None, None, "leaf1")
    rx = next(f for f in report["findings"] if f["code"] == "OPTIC_RX_POWER_LOW" and f["switch"] == "spine1")
    assert set(rx["evidence"]["lanes"].values()) == {-14.0} and rx["message"].startswith("spine1 Ethernet1/1 (towards leaf1 swp5): optical module ")
    # nothing else about optics: every other switch port and every NIC module read healthy
    assert len([f for f in report["findings"] if f["code"].startswith("OPTIC_")]) == 6


def test_switch_ports_bit_errors_on_every_platform_and_a_nic_module_read_without_mlxlink(converged):
    """The rest of issue 24 item 3, one run: the switches' own FEC read (NVUE link phy health, SONiC fec-stats,
    EOS phy detail) names the port that receives errors, with what is cabled there; and with mlxlink off (MFT
    absent) each NIC's module is read with ethtool -m, a degraded one named, only the BER left unproven."""
    node2, node3 = port_of(converged, "node2", "mlx5_0"), port_of(converged, "node3", "mlx5_1")
    spine = ("spine1", "Ethernet1/1")  # towards leaf1 swp5 (inventory/lab switch_uplinks)
    injected = [node2, node3, spine]
    platform = {sw: converged["switches"][sw]["platform"] for sw, _ in injected}
    assert set(platform.values()) == {"nvue", "sonic", "eos"}
    for sw, port in injected:
        lab_fault("switch-ber-degrade", sw, port)
    lab_fault("optic-degrade", "node4", "mlx5_0")
    try:
        report = verify(*FAST_CHECKS, "-e", "verify_fabric_link_health_mlxlink=false", expect_ok=False)
    finally:
        for sw, port in injected:
            lab_fault("switch-ber-restore", sw, port)
        lab_fault("optic-restore", "node4", "mlx5_0")
    by_switch = [f for f in report["findings"] if (f.get("evidence") or {}).get("counted_by") == "switch"]
    # uncorrected codewords grew on every platform; a post-FEC rate above effective_ber_max where the platform
    # prints one (EOS prints none; the pre-FEC 1e-5 stays below raw_ber_max)
    assert {(f["switch"], f["switch_port"]) for f in by_switch if f["code"] == "LINK_ERRORS"} == set(injected)
    assert {(f["switch"], f["switch_port"]) for f in by_switch if f["code"] == "LINK_BER_HIGH"} == {p for p in injected if platform[p[0]] != "eos"}
    named = {(f["switch"], f["switch_port"]): (f["node"], f["device"], f.get("peer_switch")) for f in by_switch}
    assert named[node2] == ("node2", "mlx5_0", None) and named[node3] == ("node3", "mlx5_1", None)
    assert named[spine] == (None, None, "leaf1")
    assert all(f["evidence"]["fec_uncorrected"] > 0 for f in by_switch if f["code"] == "LINK_ERRORS")
    # no switch-counted finding on any other port
    assert {(f["switch"], f["switch_port"]) for f in by_switch} == set(injected)
    # the NIC module from ethtool -m: node4 mlx5_0 named, every other module read and healthy
    optic = [f for f in report["findings"] if f["code"].startswith("OPTIC_")]
    assert {(f["code"], f["node"], f["device"]) for f in optic} == {("OPTIC_RX_POWER_LOW", "node4", "mlx5_0"), ("OPTIC_TEMP_HIGH", "node4", "mlx5_0")}
    assert all(f["evidence"]["read_by"] == "ethtool -m" for f in optic)
    # what stays unproven is the BER (mlxlink), said per port as a warning, never the module
    missing = [f for f in report["findings"] if f["code"] == "COUNTER_MISSING" and f.get("node")]
    assert missing and all(f["severity"] == "warning" and "BER" in f["message"] for f in missing)
    assert not any("module" in f["message"] and "not proven" in f["message"] and "ethtool" not in f["message"] for f in missing)


@pytest.mark.matrix
def test_a_flapping_link(converged):
    lab_fault("flap", "node3", "mlx5_0")
    try:
        report = verify(*FAST_CHECKS, expect_ok=False)
    finally:
        lab_fault("flap-stop", "node3", "mlx5_0")
    switch, port = port_of(converged, "node3", "mlx5_0")
    assert located(report, "LINK_FLAP") == {("node3", "mlx5_0", switch, port)}
    assert find(report, "LINK_FLAP", "node3", "mlx5_0")[0]["evidence"]["link_down_events_phy"] >= 1


@pytest.mark.matrix
def test_ecn_off_on_the_receivers_switch_port(converged):
    """PFC still holds the class (no loss), but nothing is marked and no CNP flows."""
    switch, port = port_of(converged, "node1", "mlx5_0")
    lab_fault("switch-ecn-off", switch, port)
    try:
        report = verify(*FAST_CHECKS, expect_ok=False)
    finally:
        lab_fault("switch-ecn-restore", switch, port)
    # incast only: mlxlink's BER counts since boot, so a port an earlier crc-errors test damaged keeps it
    errors = [x for x in report["findings"] if x["severity"] == "error" and x["check"] == "incast"]
    assert [(x["code"], x["node"], x["device"], x["switch"], x["switch_port"]) for x in errors] == [("INCAST_NO_ECN", "node1", "mlx5_0", switch, port)]
    rail = next(r for r in report["checks"]["incast"]["rails"] if r["device"] == "mlx5_0")
    assert rail["ecn_marked"]["node1"] == 0 and rail["out_of_sequence"]["node1"] == 0


@pytest.mark.matrix
@pytest.mark.parametrize("where", ["switch", "host"])
def test_pfc_off_shows_loss_as_evidence(converged, where):
    """The old faults, with the new counter evidence: the receiver's out-of-sequence count."""
    switch, port = port_of(converged, "node3", "mlx5_1")
    undo = ("switch-pfc-restore", switch, port) if where == "switch" else ("pfc-restore", "node3", "mlx5_1")
    lab_fault(*(("switch-pfc-off", switch, port) if where == "switch" else ("pfc-off", "node3", "mlx5_1")))
    try:
        report = verify(*FAST_CHECKS, expect_ok=False)
    finally:
        lab_fault(*undo)
    f = [x for x in report["findings"] if x["check"] == "incast" and x["severity"] == "error"]
    assert [(x["node"], x["device"], x["switch"], x["switch_port"]) for x in f] == [("node3", "mlx5_1", switch, port)]
    assert f[0]["code"] in ("INCAST_NO_PAUSE", "INCAST_GOODPUT_LOW")
    assert f[0]["evidence"]["receiver_loss"]["node1"]["out_of_sequence"] > 0


@pytest.mark.matrix
def test_gid_index_moved_is_flagged(converged):
    for dev in ("mlx5_0", "mlx5_1"):
        lab_fault("gid-index-moved", "node2", dev)
    try:
        report = verify("-e", '{"verify_fabric_checks": ["ports"]}', expect_ok=False)
        f = find(report, "NCCL_GID_INDEX_MISMATCH", "node2")
        assert {x["node"] for x in report["findings"] if x["severity"] == "error"} == {"node2"}
        assert "5" in f[0]["message"]
        # nccl_env's next converge writes the moved index; the benchmarks then run on each
        # node's own index (node2 at 5, its peers at 3: perftest's -x is local) and pass
        run_playbook("playbooks/hosts.yml", "--tags", "nccl_env", check=True)
        report = verify("-e", '{"verify_fabric_checks": ["ports", "ib_write_bw"]}', expect_ok=True)
        assert not [x for x in report["findings"] if x["severity"] == "error"], report["findings"]
        tests = rdma_tests(report["checks"]["ib_write_bw"])
        assert any("node2" in (t["client"][0], t["server"][0]) and t["ok"] for t in tests)
    finally:
        for dev in ("mlx5_0", "mlx5_1"):
            lab_fault("gid-index-restore", "node2", dev)
        run_playbook("playbooks/hosts.yml", "--tags", "nccl_env", check=True)
