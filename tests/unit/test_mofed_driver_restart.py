"""mofed: a driver restart that an interrupted run left waiting is detected and done on the next run (issue 25).

The role's tasks as Ansible loads them, and their conditions and messages evaluated by Ansible's own templar
for each branch: the installed driver running (nothing), a restart due (mismatch, inbox loaded, missing
module: ofed_driver_info's verdict, tests/unit/host/test_ofed.py), not allowed (the node fails here,
naming what was seen), check mode (reported as a change, the preview of the host ends, nothing runs)."""

import os
import sys

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))
from linerate_lab import kmods  # noqa: E402

REASON = (
    "the loaded mlx5_core is the kernel's inbox build (no /sys/module/mlx5_core/version), the installed one is OFED 24.10-1.1.4; not loaded: ib_uverbs, rdma_cm"
)


def load(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


DEFAULTS = load("roles", "mofed", "defaults", "main.yml")
MAIN = load("roles", "mofed", "tasks", "main.yml")
RESTART = load("roles", "mofed", "tasks", "restart.yml")


def task(tasks, name):
    return next(t for t in tasks if t.get("name") == name)


def templar(**variables):
    return Templar(loader=DataLoader(), variables=dict(DEFAULTS, **variables))


def when(t, **variables):
    conds = t["when"] if isinstance(t["when"], list) else [t["when"]]
    tp = templar(**variables)
    return all(tp.evaluate_conditional(trust_as_template(c)) for c in conds)


def render(text, extra=None, **variables):
    return templar(**dict(extra or {}, **variables)).template(trust_as_template(text))


def skipped():
    return {"changed": False, "skipped": True}


READ = "Read which driver is installed and which one the kernel runs"
NOTE = "Note a driver restart that the installed driver waits for"
PREVIEW = "Preview ends here for this host until its driver is restarted"
TURNS = "Restart the driver now if an install is waiting for it, before other roles read the NICs"
REFUSE = "Stop this node while its new driver waits for a restart that is not allowed"


def test_the_driver_is_read_after_the_packages_and_before_the_turns():
    names = [t.get("name") for t in MAIN]
    assert (
        names.index("Install from the OFED repository")
        < names.index(READ)
        < names.index(NOTE)
        < names.index("Note whether an install is waiting for a driver restart")
        < names.index(PREVIEW)
        < names.index(TURNS)
    )
    read = task(MAIN, READ)
    assert read["linerate.fabric.ofed_driver_info"] == {
        "module": "{{ mofed_driver_modules | first }}",
        "modules": "{{ mofed_driver_modules }}",
        "dependents": "{{ mofed_driver_dependents }}",
        "sysfs": "{{ mofed_sysfs }}",
    }
    assert read["register"] == "mofed_driver"
    assert DEFAULTS["mofed_driver_modules"] == ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm"]
    assert DEFAULTS["mofed_driver_dependents"] == ["nvidia_peermem"] and DEFAULTS["mofed_sysfs"] == "/sys"


def test_the_read_runs_on_every_run_but_a_preview_of_an_install():
    read = task(MAIN, READ)
    assert when(read, ansible_check_mode=False, mofed_install=skipped())
    assert when(read, ansible_check_mode=False, mofed_install={"changed": True})
    assert when(read, ansible_check_mode=True, mofed_install=skipped())
    # a preview of an install: the files on disk are the old ones, the install is the reason already
    assert not when(read, ansible_check_mode=True, mofed_install={"changed": True})


def test_a_restart_due_marks_the_node_as_the_handler_does_with_what_was_seen():
    note = task(MAIN, NOTE)
    assert note["ansible.builtin.set_fact"] == {"mofed_restart_pending": True, "mofed_restart_reason": "{{ mofed_driver.reasons | join('; ') }}"}
    due = {"changed": False, "restart_needed": True, "reasons": REASON.split("; ")}
    assert when(note, mofed_driver=due)
    assert render(note["ansible.builtin.set_fact"]["mofed_restart_reason"], mofed_driver=due) == REASON
    assert not when(note, mofed_driver={"changed": False, "restart_needed": False, "reasons": []})
    assert not when(note, mofed_driver=skipped())
    (handler,) = load("roles", "mofed", "handlers", "main.yml")
    assert handler["ansible.builtin.set_fact"] == {"mofed_restart_pending": True}


def test_check_mode_reports_the_restart_as_a_change_and_ends_the_preview_of_the_host():
    block = task(MAIN, PREVIEW)
    assert when(block, ansible_check_mode=True, mofed_restart_pending=True)
    assert not when(block, ansible_check_mode=False, mofed_restart_pending=True)
    assert not when(block, ansible_check_mode=True)
    say, remember, stop = block["block"]
    assert say["changed_when"] is True
    assert remember["ansible.builtin.set_fact"] == {"mofed_preview_ended": True}
    assert stop["ansible.builtin.meta"] == "end_host"

    def would(**v):
        return {"mofed_restart_would": render(say["vars"]["mofed_restart_would"], **v)}

    msg = render(say["ansible.builtin.debug"]["msg"], would(mofed_allow_driver_restart=True), mofed_restart_reason=REASON, mofed_allow_driver_restart=True)
    assert msg == (
        f"check mode: {REASON}; a run would restart the driver (/etc/init.d/openibd restart). The roles "
        "after mofed read the driver, so they are previewed once it runs."
    )
    msg = render(say["ansible.builtin.debug"]["msg"], would(), mofed_restart_reason=REASON)
    assert "a run would stop this node here: mofed_allow_driver_restart is false." in msg
    # no command runs in the preview: the turns come after the end of the host
    assert [t.get("name") for t in MAIN].index(TURNS) > [t.get("name") for t in MAIN].index(PREVIEW)


def test_a_restart_that_is_not_allowed_fails_the_node_naming_what_was_seen():
    # each node acts on its own restart in its wave (playbooks/stages/hosts.yml): no turn to wait for
    refuse = task(RESTART, REFUSE)
    assert when(refuse, inventory_hostname="node1")
    assert not when(refuse, inventory_hostname="node1", mofed_allow_driver_restart=True)
    msg = render(refuse["ansible.builtin.fail"]["msg"], mofed_restart_reason=REASON)
    assert msg.startswith(f"mofed: the installed OFED 24.10-1.1.4 driver is not the one running ({REASON}) and mofed_allow_driver_restart is false.")
    assert "roce_qos's cma_roce_mode needs the new stack's rdma_cm" in msg
    assert msg.endswith("run /etc/init.d/openibd restart or reboot it in a maintenance window (or set mofed_allow_driver_restart: true), then run again.")
    # the handler's mark alone (an install of this run) names the install
    assert "(OFED 24.10-1.1.4 was installed by this run)" in render(refuse["ansible.builtin.fail"]["msg"])


def test_a_restart_unloads_the_holders_restarts_reads_again_and_fails_if_the_driver_did_not_change():
    block = task(RESTART, "Restart the driver of the node")
    assert when(block, inventory_hostname="node1", mofed_allow_driver_restart=True)
    assert not when(block, inventory_hostname="node1")
    # a failure inside the restart marks the node failed in the rollout (its wave's budget) and ends it
    (rescue,) = block["rescue"]
    assert rescue["ansible.builtin.include_role"] == {"name": "linerate.fabric.host_disruption", "tasks_from": "failed"}
    names = [t["name"] for t in block["block"]]
    assert names == [
        "Check the management path and running RDMA jobs, and drain the node",
        "Unload the modules that hold the driver stack",
        "Restart the RDMA driver",
        "Wait for the host to answer again",
        "Load the modules that held the stack again",
        "Read the driver the kernel runs now",
        "Check the restart loaded the installed driver",
        "Check the RDMA devices came back",
        "Note that no driver restart waits any more",
        "Put the node back in service",
    ]
    unload, restart, _wait, reload_, read, check = block["block"][1:7]
    assert unload["ansible.builtin.command"] == {"argv": ["modprobe", "-r", "{{ item }}"]}
    assert reload_["ansible.builtin.command"] == {"argv": ["modprobe", "{{ item }}"]}
    held = {"dependents_loaded": ["nvidia_peermem"]}
    assert render(unload["loop"], mofed_driver=held) == ["nvidia_peermem"]
    assert render(reload_["loop"], mofed_driver=skipped()) == []
    assert restart["notify"] == "linerate verify fabric"
    assert read["linerate.fabric.ofed_driver_info"] == task(MAIN, READ)["linerate.fabric.ofed_driver_info"]
    tp = templar(mofed_driver_after={"restart_needed": True, "reasons": ["not loaded: rdma_cm"]})
    assert not tp.evaluate_conditional(trust_as_template(check["ansible.builtin.assert"]["that"]))
    assert (
        render(check["ansible.builtin.assert"]["fail_msg"], mofed_driver_after={"reasons": ["not loaded: rdma_cm"]})
        == "/etc/init.d/openibd restart did not load the installed driver: not loaded: rdma_cm"
    )
    assert block["block"][8]["ansible.builtin.set_fact"] == {"mofed_restart_pending": False}


def test_the_lab_points_the_driver_check_at_its_sysfs_tree():
    lab = load("inventory", "lab", "group_vars", "gpu_nodes", "mofed.yml")
    assert lab["mofed_sysfs"] == kmods.LAB_SYSFS
    converge = load("roles", "mofed", "molecule", "default", "converge.yml")[0]["roles"][0]["vars"]
    assert converge["mofed_sysfs"] == kmods.LAB_SYSFS


def test_the_converge_stamp_probes_the_loaded_driver_version():
    (write,) = load("playbooks", "tasks", "host_stamp_write.yml")
    files = write["linerate.fabric.host_stamp"]["files"]
    assert render(files[1], mofed_sysfs=kmods.LAB_SYSFS) == f"{kmods.LAB_SYSFS}/module/mlx5_core/version"
    assert render(files[1]) == "/sys/module/mlx5_core/version"


def test_bad_driver_variables_are_refused_naming_the_key_the_value_and_what_is_allowed():
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables as iv

    (problem,) = iv.validate_host({"mofed_driver_modules": ["mlx5_core", "a/b"]})
    assert problem.startswith("mofed_driver_modules[1]: 'a/b' is not allowed (allowed: a kernel module name")
    (problem,) = iv.validate_host({"mofed_driver_modules": []})
    assert problem.startswith("mofed_driver_modules: [] is not allowed (allowed: a list of kernel module names")
    (problem,) = iv.validate_host({"mofed_sysfs": "sys"})
    assert problem.startswith("mofed_sysfs: 'sys' is not allowed (allowed: an absolute path")
    assert iv.validate_host({"mofed_driver_modules": ["mlx5_core", "rdma_cm"], "mofed_driver_dependents": [], "mofed_sysfs": kmods.LAB_SYSFS}) == []
