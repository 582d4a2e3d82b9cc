"""Tests that fail when the logic breaks (issue 36 item 7): the pending-state part of the recovery verdict,
the MPI key's removal after verification, the incast clients' traffic class, a boot plan per rail on its
own device."""

import os

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.probes import perftest
from ansible_collections.linerate.fabric.plugins.module_utils.host import roce
from ansible_collections.linerate.fabric.plugins.module_utils.intent import mpikey
from ansible_collections.linerate.fabric.plugins.module_utils.switch import window as switch_window

from switch.test_window import Toy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = os.path.join(ROOT, "roles", "verify_fabric", "tasks")


# ---------------------------------------------------------------- the recovery's verdict: nothing pending


def test_a_running_config_equal_to_the_backup_with_a_revision_pending_is_not_restored():
    d = Toy(["backup"], pend=[["revision 7 pending"], ["revision 7 pending"]])
    assert switch_window.recover(d, "backup") == (False, "still pending: revision 7 pending; still pending: revision 7 pending")
    assert d.calls == ["undo", "undo"]


def test_pending_state_cleared_by_the_second_undo_is_restored():
    d = Toy(["backup"], pend=[["session linerate-1 open"]])
    assert switch_window.recover(d, "backup") == (True, "")
    assert d.calls == ["undo", "undo"]


def test_every_pending_item_is_named_in_the_verdict():
    d = Toy(["backup"], pend=[["checkpoint linerate-a", "config session linerate-b"]])
    assert switch_window.recover(d, "backup", attempts=1) == (False, "still pending: checkpoint linerate-a; config session linerate-b")


# ---------------------------------------------------------------- the MPI key taken back after the run


def _tasks(name, seen=()):
    """The tasks of a task file, include_tasks followed (blocks flattened, with their always part)."""
    with open(os.path.join(TASKS, name), encoding="utf-8") as f:
        top = yaml.safe_load(f) or []
    out = []
    for t in top:
        out += _flatten(t, seen + (name,))
    return out


def _flatten(t, seen):
    if "block" in t:
        return [x for part in ("block", "rescue", "always") for s in t.get(part) or [] for x in _flatten(s, seen)]
    inc = t.get("ansible.builtin.include_tasks") or t.get("include_tasks")
    if isinstance(inc, str) and inc not in seen and "{{" not in inc:
        return [t] + _tasks(inc, seen)
    return [t]


def _always(name):
    with open(os.path.join(TASKS, name), encoding="utf-8") as f:
        top = yaml.safe_load(f)
    blocks = [t for t in top if "block" in t and t.get("always")]
    assert blocks, f"{name} has no block with an always part"
    return [x for b in blocks for s in b["always"] for x in _flatten(s, (name,))]


def test_the_key_admitted_for_mpirun_is_removed_in_the_always_part_of_the_run():
    admit = [t for t in _tasks("mpi_ssh.yml") if "ansible.posix.authorized_key" in t and t["ansible.posix.authorized_key"].get("state", "present") == "present"]
    assert len(admit) == 1
    granted = admit[0]["ansible.posix.authorized_key"]
    removals = [t for t in _always("nccl.yml") if "ansible.posix.authorized_key" in t and t["ansible.posix.authorized_key"].get("state") == "absent"]
    assert len(removals) == 1, "the nccl run's always part takes the key back, also when the run failed"
    removed = removals[0]["ansible.posix.authorized_key"]
    # the very key, user and file the admission wrote (a different path or key removes nothing)
    assert (removed["key"], removed["user"], removed["path"]) == (granted["key"], granted["user"], granted["path"])
    when = removals[0]["when"] if isinstance(removals[0]["when"], list) else [removals[0]["when"]]
    assert "not verify_fabric_keep_mpi_key | bool" in when  # kept only when asked
    assert not any("failed" in str(w) or "succeeded" in str(w) for w in when)  # whatever the run's outcome


def test_the_key_pair_is_removed_with_the_key():
    files = [t for t in _always("nccl.yml") if "ansible.builtin.file" in t and t["ansible.builtin.file"].get("state") == "absent"]
    assert files and set(files[0]["loop"]) >= {"{{ verify_fabric_mpi_ssh_key }}", "{{ verify_fabric_mpi_ssh_key }}.pub"}
    assert "not verify_fabric_keep_mpi_key | bool" in files[0]["when"]


def test_a_key_left_behind_expires_and_is_bound_to_the_launchers():
    """Should the removal never run (the controller died), the key stops working by itself."""
    opts = mpikey.key_options(["10.0.0.11"], expiry="202612030000Z", resolve=None)
    assert opts.split(",")[:2] == ['from="10.0.0.11"', 'expiry-time="202612030000Z"']
    assert {"no-port-forwarding", "no-agent-forwarding", "no-X11-forwarding", "no-pty"} <= set(opts.split(","))


# ---------------------------------------------------------------- the incast clients' traffic class


def _incast_tasks():
    with open(os.path.join(TASKS, "incast_round.yml"), encoding="utf-8") as f:
        tasks = yaml.safe_load(f)
    return {t["linerate.fabric.ib_write_bw"]["mode"]: t["linerate.fabric.ib_write_bw"] for t in tasks if "linerate.fabric.ib_write_bw" in t}


def _templated(expr, **variables):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    templar = Templar(loader=DataLoader(), variables=dict(variables, omit="__omit_place_holder__"))
    return templar.template(trust_as_template(expr))


@pytest.mark.parametrize("mode", ["client", "server"])
def test_the_incast_senders_and_receiver_mark_the_no_drop_traffic_class(mode):
    """The incast congests the lossless class: a client without --tclass would write best effort,
    and the ECN/PFC the check reads would stay at zero."""
    args = _incast_tasks()[mode]
    tclass = _templated(args["tclass"], verify_fabric_tclass=106)
    sl = _templated(args["sl"], verify_fabric_sl=3)
    assert (tclass, sl) == (106, 3)
    p = {
        "tool": "ib_write_bw",
        "mode": mode,
        "qps": 4,
        "size": 65536,
        "duration": 5,
        "iterations": 0,
        "gid_index": 3,
        "tclass": tclass,
        "sl": sl,
        "use_cuda": False,
        "extra_args": [],
    }
    test = {"device": "mlx5_0", "tcp_port": 18615, "server": "10.0.0.12"}
    argv = perftest.perftest_argv("ib_write_bw", p, test, 0)
    assert argv[argv.index("-x") : argv.index("-x") + 4] == ["-x", "3", "--tclass=106", "-S"]
    assert argv[-1] == ("10.0.0.12" if mode == "client" else "3")


def test_without_a_traffic_class_the_incast_leaves_it_to_the_device():
    args = _incast_tasks()["client"]
    assert _templated(args["tclass"], verify_fabric_tclass=None) == "__omit_place_holder__"
    assert _templated(args["tclass"], verify_fabric_tclass="") == "__omit_place_holder__"


# ---------------------------------------------------------------- a boot plan per rail, on its own device

PARAMS = {
    "trust": "dscp",
    "pfc_priorities": [3],
    "ecn_priorities": [3],
    "ecn_enabled": True,
    "cnp_dscp": 48,
    "cnp_priority": 6,
    "roce_tos": 106,
    "mtu": 9000,
    "roce_mode": "v2",
    "dscp2prio": {26: 3},
}


def _plan(netdev, device, port=1):
    return [
        ["mlnx_qos", "-i", netdev, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"],
        ["mlnx_qos", "-i", netdev, "--dscp2prio", "set,26,3"],
        ["write", f"/sys/class/net/{netdev}/ecn/roce_np/enable/3", "1"],
        ["write", f"/sys/class/net/{netdev}/ecn/roce_rp/enable/3", "1"],
        ["write", f"/sys/class/net/{netdev}/ecn/roce_np/cnp_dscp", "48"],
        ["write", f"/sys/class/net/{netdev}/ecn/roce_np/cnp_802p_prio", "6"],
        ["cma_roce_mode", "-d", device, "-p", str(port), "-m", "2"],
        ["cma_roce_tos", "-d", device, "-p", str(port), "-t", "106"],
        ["ip", "link", "set", "dev", netdev, "mtu", "9000"],
    ]


@pytest.mark.parametrize("netdev,device,port", [("eth0", "mlx5_0", 1), ("eth1", "mlx5_1", 1), ("eth2", "mlx5_2", 2)])
def test_each_rails_boot_plan_sets_its_own_netdev_and_rdma_device(netdev, device, port):
    assert roce.boot_plan(PARAMS, netdev, device, port) == _plan(netdev, device, port)


def test_two_rails_boot_plans_share_no_device():
    a, b = roce.boot_plan(PARAMS, "eth0", "mlx5_0"), roce.boot_plan(PARAMS, "eth1", "mlx5_1")
    assert not any(x in " ".join(map(str, s)) for s in b for x in ("eth0", "mlx5_0"))
    assert not any(x in " ".join(map(str, s)) for s in a for x in ("eth1", "mlx5_1"))
    lines = roce.boot_lines(b)
    assert lines["commands"][-1] == "ip link set dev eth1 mtu 9000"
    assert lines["tmpfiles"][0] == "w /sys/class/net/eth1/ecn/roce_np/enable/3 - - - - 1"


def test_a_rail_with_rdma_cm_settings_needs_its_device():
    with pytest.raises(roce.ToolFailure, match="device: required with roce_mode or roce_tos"):
        roce.boot_plan(PARAMS, "eth0", None)
