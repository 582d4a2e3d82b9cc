"""The order of disruptive host actions (issue 25 items 4-6), read from the roles as Ansible loads them."""

import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


def _task(tasks, name):
    return next(t for t in tasks if t.get("name") == name)


def test_firmware_handler_marks_the_node_and_each_node_applies_its_own_after_the_flush():
    # ansible-core runs no include_role from a handler (apply.yml includes host_disruption): the handler marks
    # the node, and the apply runs as ordinary tasks right after the role's flush_handlers - once per node,
    # on the node itself: no loop over the batch (issue 36: O(N^2) task results), the wave is the play's batch
    (handler,) = load("roles", "connectx_firmware", "handlers", "main.yml")
    assert handler["name"] == "Apply pending ConnectX firmware changes"
    assert handler["ansible.builtin.set_fact"] == {"connectx_firmware_apply_pending": True}
    assert handler["when"] == "connectx_firmware_allow_reset | bool"
    tasks = load("roles", "connectx_firmware", "tasks", "configure.yml")
    names = [t.get("name") for t in tasks]
    flush = names.index("Note the nodes whose firmware changes are pending")
    assert tasks[flush]["ansible.builtin.meta"] == "flush_handlers"
    apply = tasks[flush + 1]
    assert apply["ansible.builtin.include_tasks"] == "apply.yml"
    assert "loop" not in apply and "loop_control" not in apply
    assert apply["when"] == "connectx_firmware_apply_pending | default(false) | bool"
    assert not [t for t in tasks if "throttle" in t or "listen" in t or "loop_control" in t and "turn" in str(t)]


def test_the_apply_is_guard_reset_wait_check_undrain_and_a_failure_marks_the_node():
    (block,) = load("roles", "connectx_firmware", "tasks", "apply.yml")
    assert "when" not in block
    names = [t["name"] for t in block["block"]]
    assert names[0] == "Check the management path and running RDMA jobs, and drain the node"
    assert block["block"][0]["ansible.builtin.include_role"] == {"name": "linerate.fabric.host_disruption", "tasks_from": "begin"}
    assert (
        names.index("Apply pending firmware parameters with mlxfwreset, one device at a time")
        < names.index("Wait for the host to answer after the firmware reset")
        < names.index("Check the RDMA devices are back after the firmware change")
        < len(names) - 1
    )
    assert block["block"][-1]["ansible.builtin.include_role"]["tasks_from"] == "end"
    assert [t["ansible.builtin.include_role"] for t in block["rescue"]] == [{"name": "linerate.fabric.host_disruption", "tasks_from": "failed"}]
    assert not [t for t in block["block"] if "throttle" in t or "listen" in t]


def test_each_node_restarts_its_own_driver_guarded_and_a_failure_marks_it():
    (handler,) = load("roles", "mofed", "handlers", "main.yml")
    assert handler["ansible.builtin.set_fact"] == {"mofed_restart_pending": True}
    main = load("roles", "mofed", "tasks", "main.yml")
    restart_inc = _task(main, "Restart the driver now if an install is waiting for it, before other roles read the NICs")
    flush = next(i for i, t in enumerate(main) if t.get("ansible.builtin.meta") == "flush_handlers")
    # between them only the check-mode preview's end (tests/unit/test_mofed_driver_restart.py)
    assert [t["name"] for t in main[flush + 1 : main.index(restart_inc)]] == ["Preview ends here for this host until its driver is restarted"]
    assert restart_inc["ansible.builtin.include_tasks"] == "restart.yml"
    assert "loop" not in restart_inc
    assert restart_inc["when"] == "mofed_restart_pending | default(false) | bool"
    refuse, restart = load("roles", "mofed", "tasks", "restart.yml")
    assert refuse["when"] == "not (mofed_allow_driver_restart | bool)"
    assert restart["when"] == "mofed_allow_driver_restart | bool"
    first = restart["block"][0]
    cmd = next(t for t in restart["block"] if t["name"] == "Restart the RDMA driver")
    assert first["vars"] == {"host_disruption_action": "driver_restart"}
    assert cmd["ansible.builtin.command"] == {"argv": "{{ mofed_driver_restart_command }}"}
    assert restart["rescue"][0]["ansible.builtin.include_role"]["tasks_from"] == "failed"


def test_the_failed_entry_marks_the_node_keeps_the_step_and_ends_the_host():
    mark, say, end = load("roles", "host_disruption", "tasks", "failed.yml")
    facts = mark["ansible.builtin.set_fact"]
    assert facts["host_disruption_rollout_state"] == "failed"
    assert "ansible_failed_task.name" in facts["host_disruption_rollout_reason"]
    assert "ansible_failed_result.msg" in facts["host_disruption_rollout_reason"]
    assert "rollout_step('failed')" in facts["host_disruption_rollout_steps"]
    assert end["ansible.builtin.meta"] == "end_host"


def test_begin_and_end_note_the_disruptive_steps_start_and_end():
    begin = load("roles", "host_disruption", "tasks", "begin.yml")
    note = _task(begin, "Note when the node leaves service")
    assert "linerate.fabric.rollout_step('start', host_disruption_action)" in note["ansible.builtin.set_fact"]["host_disruption_rollout_steps"]
    # after the guards (a refused node never left service), before the drain
    assert begin.index(note) == 4 and begin[5]["name"] == "Drain the node (command)"
    end = load("roles", "host_disruption", "tasks", "end.yml")
    assert end[-1]["name"] == "Note when the node is back in service"
    assert "rollout_step('end')" in end[-1]["ansible.builtin.set_fact"]["host_disruption_rollout_steps"]


def test_begin_checks_the_path_and_use_before_any_drain_hook():
    """A node the in-use check refuses is never drained first (issue 35): path, in use, then the hooks."""
    tasks = load("roles", "host_disruption", "tasks", "begin.yml")
    modules = [next(k for k in t if k.startswith(("ansible.builtin.", "linerate.fabric."))) for t in tasks]
    assert modules == [
        "ansible.builtin.command",
        "linerate.fabric.disruption_guard",
        "linerate.fabric.disruption_guard",
        "ansible.builtin.debug",
        "ansible.builtin.set_fact",
        "ansible.builtin.command",
        "ansible.builtin.include_tasks",
    ]
    assert tasks[0]["ansible.builtin.command"] == {"argv": ["printenv", "SSH_CONNECTION"]}
    assert tasks[0]["become"] is False
    assert tasks[1]["linerate.fabric.disruption_guard"]["check_in_use"] is False
    assert tasks[2]["linerate.fabric.disruption_guard"]["check_in_use"] is True
    assert tasks[2]["linerate.fabric.disruption_guard"]["force"] == "{{ host_disruption_force }}"
    assert tasks[5]["ansible.builtin.command"]["argv"] == "{{ host_disruption_drain_command }}"


def test_each_rail_is_its_own_unit_bound_to_its_netdev():
    with open(os.path.join(ROOT, "roles", "rdma_netdev", "templates", "etc", "systemd", "system", "linerate-rail@.service.j2"), encoding="utf-8") as f:
        lines = [ln for ln in f.read().splitlines() if ln and not ln.startswith("#")]
    assert "BindsTo=sys-subsystem-net-devices-%i.device" in lines
    assert "After=sys-subsystem-net-devices-%i.device network-pre.target openibd.service" in lines
    assert "WantedBy=sys-subsystem-net-devices-%i.device" in lines
    assert "Restart=on-failure" in lines and "ExecStart={{ rdma_netdev_rail_dir }}/%I.sh" in lines
    tasks = load("roles", "rdma_netdev", "tasks", "main.yml")
    persist = tasks[-1]
    assert persist["linerate.fabric.host_files"]["units"] == "{{ rdma_netdev_units }}"
    assert (
        "set -e"
        not in open(os.path.join(ROOT, "roles", "rdma_netdev", "templates", "etc", "systemd", "system", "linerate-rail@.service.j2"), encoding="utf-8").read()
    )
