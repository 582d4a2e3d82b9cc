"""Rolling host changes against the lab (issue 25 items 4-5, issue 36 item 1; run by make test-integration).

- The canary's failed check halts the rollout: with lab fault reset-lost, node1's mlx5_0 does not come back
  from its mlxfwreset; node1 (the canary wave) fails its check (rdma_facts expect_devices) and is marked
  failed, and with fabric.rollout.max_fail_percentage 0 the later waves are skipped: node2 is never touched.
- The in-use refusal: with lab fault rdma-busy, a process (ib_write_bw) holds node1's mlx5_0; the in-use check
  before the reset refuses naming it, and no node is reset.
- (matrix, a lab of 16 nodes: LAB_NODES=16) the rollout in waves of at most 4, one node per rack, with the
  start and end of every node's reset in the rollout summary; and a node made unreachable in its reset (its
  container paused by the drain hook) is reported unreachable while its wave's other nodes and the later
  waves finish, its rack-mates in later waves deferred (never two of one rack out at once).

The firmware change is one parameter the lab's ConnectX-7 applies at a level-3 reset (VF_VPD_ENABLE), passed
with -e connectx_firmware_extra_params; each test puts it back (the same change to False), undoes its fault
and re-converges the host stack in a finally."""

import json
import os
import subprocess

import pytest

from conftest import REPO, ansible_env, container, lab_fault, run_playbook

PARAM = "VF_VPD_ENABLE"
FW = ["--tags", "connectx_firmware"]


def extra(value):
    return ["-e", json.dumps({"connectx_firmware_extra_params": {PARAM: value}})]


def firmware(node, device="mlx5_0"):
    """(current, next_boot) of PARAM on a node's device, as the lab's model holds them."""
    from linerate_lab import model

    nic = next(n for n in model.load()["nodes"][node]["nics"] if n["device"] == device)
    return nic["firmware"]["current"].get(PARAM), nic["firmware"]["next_boot"].get(PARAM)


def summary():
    """The rollout summary the last host stack run wrote (<linerate_output_dir>/rollout/latest.json)."""
    with open(os.path.join(REPO, "inventory", "lab-output", "rollout", "latest.json"), encoding="utf-8") as f:
        return json.load(f)


def restore(*faults_to_undo):
    for fault in faults_to_undo:
        lab_fault(*fault)
    # the parameter back to its factory value (a reset only where it was applied), then the host stack
    # again where a reset dropped the QoS settings
    run_playbook("playbooks/hosts.yml", *FW, *extra(False), check=True, timeout=1200)
    run_playbook("playbooks/hosts.yml", check=True, timeout=1200)


def test_a_failed_check_stops_the_rolling_reset_before_the_next_node(converged):
    before = {n: firmware(n) for n in ("node1", "node2")}
    assert before["node1"] == before["node2"] == ("False(0)", "False(0)"), before
    lab_fault("reset-lost", "node1", "mlx5_0")
    try:
        res = run_playbook("playbooks/hosts.yml", *FW, *extra(True), timeout=1200)
        assert res.returncode != 0, res.stdout[-6000:]
        out = res.stdout
        # node1, the canary: reset (the parameter runs), then its check fails naming the lost device
        assert firmware("node1") == ("True(1)", "True(1)")
        assert "mlx5_0" in out[out.index("Check the RDMA devices are back after the firmware change") :], out[-6000:]
        # node2: a later wave, skipped after the canary failed: not even written for the next boot
        assert firmware("node2") == ("False(0)", "False(0)")
        s = summary()
        assert s["halted_at_wave"] == 0 and s["waves"][0]["nodes"] == ["node1"], out[-6000:]
        assert s["nodes"]["node1"]["state"] == "failed"
        assert s["nodes"]["node1"]["reason"].startswith("Check the RDMA devices are back after the firmware change")
        step = s["nodes"]["node1"]["steps"][0]
        assert step["action"] == "firmware_reset" and step["start"] < step["failed"] and "end" not in step
        assert {n: v["state"] for n, v in s["nodes"].items() if n != "node1"} == {"node2": "skipped", "node3": "skipped", "node4": "skipped"}
        assert "rollout: node2 skipped: the rollout halted: wave 0 failed on node1" in out
    finally:
        restore(("reset-lost-restore", "node1", "mlx5_0"))
    assert firmware("node1") == firmware("node2") == ("False(0)", "False(0)")


@pytest.mark.matrix
def test_a_process_on_the_device_refuses_the_reset_and_names_it(converged):
    """Matrix: one more failed disruptive step halting the rollout (the core test above is the class); the
    in-use refusal itself is unit-tested on the module (tests/unit/host/test_mgmtpath.py)."""
    lab_fault("rdma-busy", "node1", "mlx5_0")
    try:
        res = run_playbook("playbooks/hosts.yml", *FW, *extra(True), timeout=1200)
        assert res.returncode != 0, res.stdout[-6000:]
        assert "refusing to firmware reset: RDMA devices are in use by ib_write_bw (pid " in res.stdout
        assert "on mlx5_0; drain the node first (host_disruption_drain_command) or force it" in res.stdout
        # refused before any reset: the canary's change waits for the next boot, the others are untouched
        assert firmware("node1") == ("False(0)", "True(1)")
        assert firmware("node2") == ("False(0)", "False(0)")
        s = summary()
        assert s["nodes"]["node1"]["state"] == "failed" and s["nodes"]["node1"]["steps"] == [], res.stdout[-6000:]
        assert s["counts"]["skipped"] == len(s["nodes"]) - 1
    finally:
        restore(("rdma-idle", "node1", "mlx5_0"))
    assert firmware("node1") == firmware("node2") == ("False(0)", "False(0)")


@pytest.mark.matrix
def test_a_node_lost_in_the_canary_holds_its_place_and_the_next_wave_defers_one(converged, tmp_path):
    """One more case of the 16-node lost-node test below, on the 4-node lab (matrix: the class is that test's):
    the lab rolls node1, then node2..node4 (max_unavailable 3). node1 is lost in its reset; with
    max_fail_percentage 100 the rollout goes on, but node1 still holds one of the three places, so the second
    wave takes two and defers node4 (skipped, named, its firmware untouched)."""
    lost = "node1"
    hook = ["sh", "-c", f'[ "$0" != {lost} ] || podman pause {container(lost)}', "{{ inventory_hostname }}"]
    fabric = _lab_fabric()
    fabric["rollout"]["max_fail_percentage"] = 100
    try:
        res = run_playbook(
            "playbooks/hosts.yml",
            *FW,
            *extra(True),
            "-e",
            json.dumps({"fabric": fabric}),
            "-e",
            json.dumps({"host_disruption_drain_command": hook}),
            env=ansible_env(ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=120s -o ServerAliveInterval=5 -o ServerAliveCountMax=2"),
            timeout=1200,
        )
        assert res.returncode != 0, res.stdout[-6000:]
        s = summary()
        assert [w["nodes"] for w in s["waves"]] == [["node1"], ["node2", "node3", "node4"]], res.stdout[-6000:]
        states = {n: v["state"] for n, v in s["nodes"].items()}
        assert states == {"node1": "unreachable", "node2": "done", "node3": "done", "node4": "skipped"}, states
        assert s["nodes"]["node4"]["reason"].startswith("deferred: node1 still out of service"), s["nodes"]["node4"]
        assert "fabric.rollout.max_unavailable (3): this wave takes 2 node(s)" in s["nodes"]["node4"]["reason"]
        assert s["max_disrupted_at_once"] <= 3
        assert firmware("node2") == firmware("node3") == ("True(1)", "True(1)")
        assert firmware("node4") == ("False(0)", "False(0)")
    finally:
        subprocess.run(["podman", "unpause", f"{container(lost)}"], env=ansible_env(), timeout=120, capture_output=True)
        restore()
    assert all(firmware(n) == ("False(0)", "False(0)") for n in ("node1", "node2", "node3", "node4"))


# ---------------------------------------------------------------- 16 nodes, waves of 4 (issue 36)

SIXTEEN = 16


def racks_inventory(tmp_path, nodes):
    """An inventory source beside the lab's: node i in rack r<(i-1) % 4 + 1> (four racks of four)."""
    hosts = {n: {"linerate_rack": f"r{(int(n[4:]) - 1) % 4 + 1}"} for n in nodes}
    path = tmp_path / "racks.yml"
    path.write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}), encoding="utf-8")
    return str(path)


def waves_args(tmp_path, lab, budget, *more):
    fabric = _lab_fabric()
    fabric["rollout"] = {"max_unavailable": 4, "canary": 1, "spread": ["rack"], "max_fail_percentage": budget}
    return ["-i", racks_inventory(tmp_path, sorted(lab["nodes"])), "-e", json.dumps({"fabric": fabric}), *more]


def _lab_fabric():
    import yaml

    with open(os.path.join(REPO, "inventory", "lab", "group_vars", "all", "fabric.yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)["fabric"]


@pytest.fixture(scope="module")
def sixteen(lab, tmp_path_factory):
    """A lab of 16 nodes with the host stack converged (the switches play no part in a host rollout), in the
    tests' waves: with the lab's defaults (10 % of 16 is 1, every node on each rail leaf) a first converge
    would take the nodes one at a time."""
    if len(lab["nodes"]) < SIXTEEN:
        pytest.skip(f"needs a lab of {SIXTEEN} nodes (LAB_NODES={SIXTEEN}; the lab is up with {len(lab['nodes'])})")
    run_playbook("playbooks/hosts.yml", *waves_args(tmp_path_factory.mktemp("converge"), lab, 0), check=True, timeout=2400)
    return lab


def put_back(tmp_path, lab):
    """The parameter back to its factory value on every node (one reset each, in the tests' waves)."""
    run_playbook("playbooks/hosts.yml", *FW, *extra(False), *waves_args(tmp_path, lab, 0), check=True, timeout=2400)


def _intervals(s):
    return {n: (v["steps"][0]["start"], v["steps"][0].get("end") or v["steps"][0].get("failed")) for n, v in s["nodes"].items() if v["steps"]}


def _intervals_to_end(s):
    """As _intervals, a step that never ended (its node was lost in it) lasting to the rollout's last end."""
    last = max(st.get("end") or st["start"] for v in s["nodes"].values() for st in v["steps"])
    return {n: (v["steps"][0]["start"], v["steps"][0].get("end") or last) for n, v in s["nodes"].items() if v["steps"]}


def _most_at_once(spans):
    events = sorted([(a, 1) for a, _ in spans.values()] + [(b, -1) for _, b in spans.values()])
    busy = peak = 0
    for _t, d in events:
        busy += d
        peak = max(peak, busy)
    return peak


@pytest.mark.matrix
def test_sixteen_nodes_roll_in_waves_of_four_never_two_of_one_rack_at_once(sixteen, tmp_path):
    converged = sixteen
    try:
        res = run_playbook("playbooks/hosts.yml", *FW, *extra(True), *waves_args(tmp_path, converged, 0), timeout=2400)
        assert res.returncode == 0, res.stdout[-6000:]
        s = summary()
        assert [len(w["nodes"]) for w in s["waves"]] == [1, 2, 4, 4, 4, 1], res.stdout[-6000:]
        assert s["counts"]["done"] == SIXTEEN and s["passed"] is True
        spans = _intervals(s)
        assert len(spans) == SIXTEEN
        # the timestamps themselves: at most 4 nodes in their reset at once, never two of one rack
        assert _most_at_once(spans) == s["max_disrupted_at_once"] <= 4
        assert _most_at_once(spans) == 4
        for a in spans:
            for b in spans:
                if a < b and s["nodes"][a]["rack"] == s["nodes"][b]["rack"]:
                    assert spans[a][1] <= spans[b][0] or spans[b][1] <= spans[a][0], (a, b, spans[a], spans[b])
        assert s["same_group_overlaps"] == []
        assert all(firmware(n) == ("True(1)", "True(1)") for n in converged["nodes"])
    finally:
        put_back(tmp_path, converged)


@pytest.mark.matrix
def test_a_node_lost_in_its_reset_fails_only_its_wave_and_is_reported_unreachable(sixteen, tmp_path):
    converged = sixteen
    lost = "node6"
    # the drain hook (on the controller, before the node's reset) pauses the lost node's container: Ansible
    # loses it mid-wave (ServerAliveInterval 15 s, three misses), as a node that hangs in its reset
    hook = ["sh", "-c", f'[ "$0" != {lost} ] || podman pause {container(lost)}', "{{ inventory_hostname }}"]
    try:
        res = run_playbook(
            "playbooks/hosts.yml",
            *FW,
            *extra(True),
            *waves_args(tmp_path, converged, 25, "-e", json.dumps({"host_disruption_drain_command": hook})),
            env=ansible_env(ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=120s -o ServerAliveInterval=5 -o ServerAliveCountMax=2"),
            timeout=2400,
        )
        # the run fails (a node did not finish), but every other node rolled
        assert res.returncode != 0, res.stdout[-6000:]
        s = summary()
        assert s["nodes"][lost]["state"] == "unreachable", res.stdout[-6000:]
        wave = s["nodes"][lost]["wave"]
        # one of the wave's four nodes: 25 %, within the budget: the wave's others and the later waves finish
        assert len(s["waves"][wave]["nodes"]) == 4 and s["waves"][wave]["failed"] == [lost]
        assert s["halted_at_wave"] is None
        # the lost node stays out of service: it holds one of the four places and its rack for the rest of the
        # run, so a later wave never resets its rack-mates and takes at most three of the others; the rest are
        # deferred (skipped, named, for the next run)
        later = s["waves"][wave + 1 :]
        rack = s["nodes"][lost]["rack"]
        mates = {n for w in later for n in w["nodes"] if s["nodes"][n]["rack"] == rack}
        beyond = {n for w in later for n in [m for m in w["nodes"] if m not in mates][3:]}
        deferred = mates | beyond
        assert mates, "the 16-node lab's racks of four put the lost node's rack-mates in later waves"
        assert {n for n, v in s["nodes"].items() if v["state"] == "skipped"} == deferred, res.stdout[-6000:]
        assert all(s["nodes"][n]["reason"].startswith(f"deferred: {lost} still out of service") for n in deferred)
        assert all(f"in rack {rack} with it" in s["nodes"][n]["reason"] for n in mates)
        # and so no two of one rack were out at once, the lost node's never-ending reset included
        assert s["same_group_overlaps"] == []
        assert s["counts"] == {"done": SIXTEEN - 1 - len(deferred), "failed": 0, "unreachable": 1, "skipped": len(deferred), "converged": 0}
        # the timestamps: the lost node's reset never ended, and with it never more than four out at once
        assert s["max_disrupted_at_once"] == _most_at_once(_intervals_to_end(s)) <= 4
        step = s["nodes"][lost]["steps"][0]
        assert step["action"] == "firmware_reset" and "end" not in step
        assert all(firmware(n) == ("True(1)", "True(1)") for n in converged["nodes"] if n != lost and n not in deferred)
        assert all(firmware(n) == ("False(0)", "False(0)") for n in deferred)
    finally:
        subprocess.run(["podman", "unpause", f"{container(lost)}"], env=ansible_env(), timeout=120, capture_output=True)
        put_back(tmp_path, converged)
