"""The lab's fault table (lab/sim/linerate_lab/faults/): one row per fault, its apply and its undo derived
from the row. Every fault with an undo gives back the model it found, after one injection or two; a fault
is recorded once per thing it breaks; what `fault list` prints is the table, each undo under its fault."""

import copy

import pytest

import labsim  # noqa: F401  (lab/sim on sys.path)
from linerate_lab import faults, hardware, topology
from linerate_lab.faults import engine


class Lab:
    """The parts of lab/labctl.py a fault calls, recording each call."""

    PREFIX = "linerate-"
    IBSIM_DIR = "/ibsim"

    def __init__(self):
        self.calls = []

    def podman(self, *argv, check=False, capture=False):
        self.calls.append(argv)
        out = "24.10-1.1.4\n" if "modinfo" in argv else ""
        return type("Res", (), {"returncode": 0, "stdout": out, "stderr": ""})()

    def set_cable(self, node, rail, up):
        self.calls.append(("set_cable", node, rail, up))


def fabric():
    """Two nodes on two rail leaves (RoCE), with PFC on priority 3 at both ends and ECN on; nvidia-peermem
    available and ACS off, the state peermem-restore and acs-off put back."""
    topo = topology.build(2, 2, "roce", 400)
    m = {"version": 1, "transport": "roce", "nodes": {}, "switches": topo["switches"], "faults": []}
    for i, name in enumerate(("node1", "node2"), start=1):
        node = hardware.new_node(name, i, "roce", 2, 400, topo["cabling"][name])
        node.update(modules=["mlx5_core", "nvidia_peermem"], peermem_available=True, pcie_acs=False)
        for nic, cable in zip(node["nics"], topo["cabling"][name]):
            nic.update(qos={"pfc": [0, 0, 0, 1, 0, 0, 0, 0]}, address=cable["address"])
        m["nodes"][name] = node
    for sw in ("leaf1", "leaf2"):
        for p in m["switches"][sw]["ports"].values():
            p.update(pfc=[3], pfcwd=[3], headroom=[3], ecn=True)
    return m


ARGS = {
    engine.NIC: ["node1", "mlx5_0"],
    engine.NODE: ["node1"],
    engine.GPU: ["node1", "GPU1"],
    engine.SLOT: ["node1", "mlx5_1"],
    engine.FABRIC: [],
    engine.PORT: ["leaf1", "swp1"],
    engine.SWITCH: ["leaf1"],
    engine.HOST_PORTS: ["leaf1"],
    engine.UPLINK: ["leaf1", "swp3"],
}
PARAMS = {"how": "x8", "hcas": "mlx5_9", "gbps": "200", "value": "1500"}
# What an undo leaves changed on purpose: hardware counters never go back (the physical faults fold what
# they counted into the port's counters), a driver restart runs the node's openibd (not the model).
NOT_ROUND_TRIP = {"crc-errors", "flap", "pfc-storm", "switch-reboot", "driver-restart-pending"}
UNDONE = [r for r in faults.ROWS if r.undo and r.on in ARGS and r.name not in NOT_ROUND_TRIP]


def args_of(row):
    return ARGS[row.on] + [PARAMS[p] for p in row.params]


def test_the_round_trip_covers_every_fault_with_an_undo_but_the_subnet_and_the_cabling():
    left = {r.name for r in faults.ROWS if r.undo} - {r.name for r in UNDONE} - NOT_ROUND_TRIP
    assert left == {"ib-unlink", "ib-errors", "cable-swap"}  # tested in test_labsim_ib_errors / _cable_swap


@pytest.mark.parametrize("row", UNDONE, ids=lambda r: r.name)
@pytest.mark.parametrize("times", (1, 2))
def test_undo_gives_back_the_model_the_fault_found(row, times):
    m, lab = fabric(), Lab()
    before = copy.deepcopy(m)
    for _ in range(times):
        faults.FAULTS[row.name](lab, m, *args_of(row))
    assert m != before, f"{row.name} changed nothing in the model"
    assert [f["kind"] for f in m["faults"]] == [row.kind]  # one record, however often applied
    undo = row.undo.split()[0]
    faults.FAULTS[undo](lab, m, *ARGS[row.on])
    engine.AFTER.clear()
    assert m == before


def test_a_second_injection_keeps_what_the_first_saved():
    m = fabric()
    for _ in range(2):
        faults.pfc_off(None, m, "node1", "mlx5_0")
        faults.switch_pfc_off(None, m, "leaf1", "swp1")
        faults.switch_ecn_off(None, m, "leaf1", "swp1")
    assert m["faults"] == [
        {"kind": "pfc-off", "args": ["node1", "mlx5_0", [0, 0, 0, 1, 0, 0, 0, 0]]},
        {"kind": "switch-pfc-off", "args": ["leaf1", "swp1", [3]]},
        {"kind": "switch-ecn-off", "args": ["leaf1", "swp1", True]},
    ]
    assert faults.pfc_restore(None, m, "node1", "mlx5_0") == "node1 mlx5_0: PFC back to [0, 0, 0, 1, 0, 0, 0, 0]"
    assert faults.switch_pfc_restore(None, m, "leaf1", "swp1") == "leaf1 swp1: PFC on priorities [3]"
    assert faults.switch_ecn_restore(None, m, "leaf1", "swp1") == "leaf1 swp1: ECN marking as configured"
    assert m["switches"]["leaf1"]["ports"]["swp1"]["ecn"] is True and m["faults"] == []


def test_a_fault_that_sets_a_value_records_the_last_one():
    m, lab = fabric(), Lab()
    faults.speed(lab, m, "node1", "mlx5_1", "200")
    faults.speed(lab, m, "node1", "mlx5_1", "100")
    assert m["faults"] == [{"kind": "speed", "args": ["node1", "mlx5_1", 100]}]
    assert m["nodes"]["node1"]["nics"][1]["speed_gbps"] == 100


def test_a_reboot_leaves_nothing_in_force():
    m = fabric()
    steps = []
    lab = type("L", (), {"reboot_node": lambda self, node, spec: steps.append(node)})()
    assert faults.reboot(lab, m, "node1") == "node1: rebooted" and m["faults"] == []
    for step in engine.AFTER:
        step()
    engine.AFTER.clear()
    assert steps == ["node1"]


def test_the_list_is_the_table_each_undo_under_its_fault():
    text = faults.apply("list", [], lab=None)
    lines = text.splitlines()
    assert lines[0] == "faults:"
    want = [line for r in faults.ROWS for line in (r.usage, r.undo) if line]
    assert [line.strip() for line in lines[1:]] == want
    assert list(faults.FAULTS) == [line.split()[0] for line in want]
    assert lines[1:3] == ["  port-down NODE DEVICE   pull the cable of one NIC port", "  port-up NODE DEVICE     plug it back in"]


def test_a_fault_named_twice_in_the_table_is_refused():
    row = faults.ROWS[0]
    with pytest.raises(ValueError, match="fault 'port-down' is in the table twice"):
        engine.actions([row, row])


def test_each_name_is_the_module_attribute_of_its_fault():
    assert faults.port_down is faults.FAULTS["port-down"] and faults.port_up is faults.FAULTS["port-up"]
    assert faults.pcie_gpu_stuck_restore.usage.startswith("pcie-gpu-stuck-restore NODE GPU<i>")
    with pytest.raises(AttributeError, match="no attribute 'port_sideways'"):
        faults.port_sideways


@pytest.mark.parametrize(
    "kind, args, message",
    [
        ("port-down", ["node1"], "fault: usage: port-down NODE DEVICE   pull the cable of one NIC port"),
        ("ib-errors-clear", ["leaf1", "1", "2"], "fault: usage: ib-errors-clear SWITCH PORT  undo ib-errors"),
        ("port-sideways", [], "fault: 'port-sideways' is not allowed (allowed: acs-off, acs-on, cable-swap, "),
        ("pcie-slot", ["node9", "mlx5_0", "x8"], "fault: 'node9' is not a lab node (allowed: node1, node2)"),
    ],
)
def test_bad_input_names_the_argument_and_what_is_allowed(lab, kind, args, message):
    m = fabric()
    lab.write(m)
    with pytest.raises(faults.FaultError) as e:
        faults.apply(kind, args, lab=None)
    assert str(e.value).startswith(message)
    assert lab.model()["faults"] == []


def test_undoing_a_fault_on_one_thing_keeps_it_on_another():
    m = fabric()
    faults.pfc_off(None, m, "node1", "mlx5_0")
    faults.pfc_off(None, m, "node1", "mlx5_1")
    faults.optic_degrade(None, m, "node2", "mlx5_0")
    faults.pfc_restore(None, m, "node1", "mlx5_0")
    assert m["faults"] == [{"kind": "pfc-off", "args": ["node1", "mlx5_1", [0, 0, 0, 1, 0, 0, 0, 0]]}, {"kind": "optic-degrade", "args": ["node2", "mlx5_0"]}]
    assert m["nodes"]["node1"]["nics"][1]["qos"]["pfc"] == [0] * 8


def test_what_a_row_puts_on_a_thing_is_that_thing_s_own():
    one, two = fabric(), fabric()
    faults.optic_degrade(None, one, "node1", "mlx5_0")
    one["nodes"]["node1"]["nics"][0]["optics"]["temperature_c"] = 20  # the model changed later
    faults.optic_degrade(None, two, "node1", "mlx5_0")
    assert two["nodes"]["node1"]["nics"][0]["optics"] == {"rx_power_dbm": -14.0, "temperature_c": 78}
