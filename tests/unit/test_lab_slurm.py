"""The lab's real Slurm (lab/slurmlab.py): slurm.conf and gres.conf from the fabric model, the munge key made
once, the image's units, and the wait for the nodes' registration (ready, refused at once with slurmctld's
reason, the controller gone). No podman: the controller is a function returning sinfo's output."""

import os
import stat
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab"))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))

import labctl  # noqa: E402
import slurmlab  # noqa: E402


def model(n=4, gpus=8):
    return {"nodes": {f"node{i}": {"mgmt_ip": labctl.node_ip(i), "gpus": gpus} for i in range(1, n + 1)}}


def test_slurm_conf_names_every_node_with_the_simulated_hardware():
    text = slurmlab.slurm_conf(model(), "10.89.240.240")
    lines = text.splitlines()
    assert "SlurmctldHost=slurmctld(10.89.240.240)" in lines and "AuthType=auth/munge" in lines
    assert (f"NodeName=node3 NodeAddr={labctl.node_ip(3)} Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 Gres=gpu:8 State=UNKNOWN") in lines
    assert sum(1 for line in lines if line.startswith("NodeName=")) == 4
    assert "PartitionName=gpu Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP" in lines
    # what containers cannot do is not asked for; the preflight is the role's TaskProlog
    assert {
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SlurmdParameters=config_overrides",
        "GresTypes=gpu",
        f"TaskProlog={slurmlab.TASK_PROLOG}",
    } <= set(lines)
    assert not any(line.startswith("Prolog=") for line in lines)  # an unmatched Prolog fails every job


def test_gres_conf_binds_the_gpus_by_their_device_files():
    assert slurmlab.gres_conf(model()).splitlines()[-1] == "NodeName=node[1-4] Name=gpu File=/dev/nvidia[0-7]"
    assert slurmlab.gres_conf(model(1, 1)).splitlines()[-1] == "NodeName=node1 Name=gpu File=/dev/nvidia0"


def test_node_range():
    assert slurmlab.node_range(["node2", "node1", "node3"]) == "node[1-3]"
    assert slurmlab.node_range(["node1"]) == "node1"
    assert slurmlab.node_range(["node1", "node3"]) == "node1,node3"
    assert slurmlab.node_range(["gpu-a", "gpu-b"]) == "gpu-a,gpu-b"


def test_nodes_with_different_gpu_counts_are_refused():
    m = model()
    m["nodes"]["node2"]["gpus"] = 4
    with pytest.raises(SystemExit, match=r"different GPU counts \[4, 8\]"):
        slurmlab.slurm_conf(m, "10.0.0.1")


def test_config_and_one_munge_key(tmp_path):
    d = slurmlab.write_config(str(tmp_path), model(), "10.89.240.240")
    key = os.path.join(d, "munge.key")
    first = open(key, "rb").read()
    assert len(first) == 1024 and stat.S_IMODE(os.stat(key).st_mode) == 0o400
    slurmlab.write_config(str(tmp_path), model(2), "10.89.240.240")
    assert open(key, "rb").read() == first  # a running lab keeps its key
    assert "Nodes=node[1-2]" in open(os.path.join(d, "slurm.conf")).read()


def test_image_links_the_configuration_and_enables_slurmd_not_slurmctld(tmp_path):
    root = tmp_path / "root"
    (root / "etc/munge").mkdir(parents=True)
    (root / "usr/lib/x86_64-linux-gnu/pmix2/lib").mkdir(parents=True)
    (root / "etc/munge/munge.key").write_bytes(b"baked")
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True)
    (wants / "slurmctld.service").symlink_to("/lib/systemd/system/slurmctld.service")
    slurmlab.customize_rootfs(str(root))
    assert os.readlink(root / "etc/slurm/slurm.conf") == f"{slurmlab.CONF_DIR}/slurm.conf"
    assert os.readlink(root / "etc/slurm/gres.conf") == f"{slurmlab.CONF_DIR}/gres.conf"
    assert not (root / "etc/munge/munge.key").exists()
    assert os.path.islink(wants / "slurmd.service") and not os.path.lexists(wants / "slurmctld.service")
    # srun --mpi=pmix: the plugin's dlopen("libpmix.so") finds libpmix2's library
    assert os.readlink(root / "usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so") == "libpmix.so.2"
    dropin = (root / "etc/systemd/system/munge.service.d/10-lab-key.conf").read_text()
    assert f"install -o munge -g munge -m 0400 {slurmlab.CONF_DIR}/munge.key /etc/munge/munge.key" in dropin


def test_controller_container_masks_the_node_parts():
    args = slurmlab.controller_run_args("linerate-slurmctld", "linerate-lab", "10.89.240.240", "/s", "", "img:1")
    assert args[args.index("--hostname") + 1] == "slurmctld" and "--systemd=always" in args
    assert f"/s/slurm:{slurmlab.CONF_DIR}:ro" in args
    init = args[-1]
    assert "linerate-lab-boot.service" in init and "slurmd.service" in init and init.endswith("exec /sbin/init")


class Ctl:
    """sinfo's answers in turn; the last repeats."""

    def __init__(self, *answers, running=True):
        self.answers, self.running, self.calls = list(answers), running, []

    def __call__(self, argv):
        self.calls.append(argv)
        if "-R" in argv:
            return 0, "node2: gres/gpu count reported lower than configured (0 < 8)\n"
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_wait_registered_returns_when_every_node_answers():
    ctl = Ctl((1, ""), (0, "node1 unknown*\nnode2 idle\n"), (0, "node1 idle\nnode2 drained\n"))
    got = slurmlab.wait_registered(ctl, ["node1", "node2"], lambda: True, deadline=30, sleep=lambda s: None)
    assert got == {"node1": "idle", "node2": "drained"} and len(ctl.calls) == 3


def test_wait_registered_ends_at_once_on_a_refused_registration():
    ctl = Ctl((0, "node1 idle\nnode2 inval\n"))
    with pytest.raises(SystemExit, match=r"refused the registration of node2: node2: gres/gpu count reported lower"):
        slurmlab.wait_registered(ctl, ["node1", "node2"], lambda: True, deadline=30, sleep=lambda s: None)


def test_wait_registered_ends_when_the_controller_is_gone():
    with pytest.raises(SystemExit, match="the controller's container is not running"):
        slurmlab.wait_registered(Ctl((1, "")), ["node1"], lambda: False, deadline=30)
