"""Rolling host changes against the lab (issue 25 items 4-5; written here, run by make test-integration).

- The rolling firmware reset stops at the first failed host: with lab fault reset-lost, node1's mlx5_0 does
  not come back from its mlxfwreset; node1's check (rdma_facts expect_devices) fails, and with
  fabric.rollout.max_fail_percentage 0 node2 is never reset (its change stays pending in next_boot).
- The in-use refusal: with lab fault rdma-busy, a process (ib_write_bw) holds node1's mlx5_0; the in-use check
  before the reset refuses naming it, and no node is reset.

The firmware change is one parameter the lab's ConnectX-7 applies at a level-3 reset (VF_VPD_ENABLE), passed
with -e connectx_firmware_extra_params; each test puts it back (the same change to False), undoes its fault
and re-converges the host stack in a finally."""
import json

from conftest import lab_fault, run_playbook

PARAM = "VF_VPD_ENABLE"
FW = ["--tags", "connectx_firmware"]


def extra(value):
    return ["-e", json.dumps({"connectx_firmware_extra_params": {PARAM: value}})]


def firmware(node, device="mlx5_0"):
    """(current, next_boot) of PARAM on a node's device, as the lab's model holds them."""
    from linerate_lab import model
    nic = next(n for n in model.load()["nodes"][node]["nics"] if n["device"] == device)
    return nic["firmware"]["current"].get(PARAM), nic["firmware"]["next_boot"].get(PARAM)


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
        # node1: reset (the parameter runs), then its check fails naming the lost device
        assert firmware("node1") == ("True(1)", "True(1)")
        assert "mlx5_0" in out[out.index("Check the RDMA devices are back after the firmware change"):], out[-6000:]
        # node2: the change is written for the next boot but never applied: no reset ran there
        assert firmware("node2") == ("False(0)", "True(1)")
        assert "Apply pending firmware parameters with mlxfwreset, one device at a time" in out
        # the run ended there (max_fail_percentage 0): no later task of the play ran on node2
        assert "NO MORE HOSTS LEFT" in out
    finally:
        restore(("reset-lost-restore", "node1", "mlx5_0"))
    assert firmware("node1") == firmware("node2") == ("False(0)", "False(0)")


def test_a_process_on_the_device_refuses_the_reset_and_names_it(converged):
    lab_fault("rdma-busy", "node1", "mlx5_0")
    try:
        res = run_playbook("playbooks/hosts.yml", *FW, *extra(True), timeout=1200)
        assert res.returncode != 0, res.stdout[-6000:]
        assert "refusing to firmware reset: RDMA devices are in use by ib_write_bw (pid " in res.stdout
        assert "on mlx5_0; drain the node first (host_disruption_drain_command) or force it" in res.stdout
        # refused before any reset: nothing applied on any node
        assert firmware("node1") == ("False(0)", "True(1)")
        assert firmware("node2") == ("False(0)", "True(1)")
    finally:
        restore(("rdma-idle", "node1", "mlx5_0"))
    assert firmware("node1") == firmware("node2") == ("False(0)", "False(0)")
