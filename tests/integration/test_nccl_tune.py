"""NCCL tuning written back (issue 28 item 4) against the lab: the sweep finds the lab's designed
winner (NCCL_ALGO=Ring, docs/lab.md "NCCL's tuning knobs"), writes it to the tuned-settings file,
role nccl_env puts it into /etc/nccl.conf on every node, and a second run with the same winner
changes nothing. The lab is put back (no tuned file, nccl.conf as the intent alone derives it)."""
import json
import os
import re
import subprocess

import pytest

from conftest import REPO, ansible_env, run_playbook

PREFIX = f"linerate-{os.environ['LINERATE_LAB_ID']}-" if os.environ.get("LINERATE_LAB_ID") else "linerate-"
OUT = os.path.join(REPO, "inventory", "lab-output", "nccl")
TUNED = os.path.join(OUT, "tuned.json")
# A short range keeps each simulated run to a few seconds; 3 repeats, 5 % margin (the defaults).
ARGS = ["-e", "verify_fabric_nccl_tune=true", "-e", "verify_fabric_nccl_tune_min_bytes=1M",
        "-e", "verify_fabric_nccl_tune_max_bytes=256M", "-e", "verify_fabric_ib_write_bw_duration=2",
        "-e", "verify_fabric_nccl_timeout=120"]


def nccl_conf(node):
    res = subprocess.run(["podman", "exec", f"{PREFIX}{node}", "cat", "/etc/nccl.conf"], env=ansible_env(),
                         text=True, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return dict(line.split("=", 1) for line in res.stdout.splitlines() if line and not line.startswith("#"))


def recap(output):
    tail = output.split("PLAY RECAP", 1)[1]
    return {m.group(1): {"changed": int(m.group(2)), "failed": int(m.group(3))}
            for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", tail, re.M)}


@pytest.fixture
def untuned(converged):
    """No tuned file before; afterwards none again, and nccl.conf rewritten from the intent alone."""
    if os.path.exists(TUNED):
        os.remove(TUNED)
    yield converged
    if os.path.exists(TUNED):
        os.remove(TUNED)
    run_playbook("playbooks/hosts.yml", "--tags", "nccl_env", check=True, timeout=900)


# matrix: two sweeps and a verification (about 3 minutes); make test-integration runs it, CI's budget does not
@pytest.mark.matrix
def test_sweep_writes_the_winner_into_nccl_conf_and_a_second_run_changes_nothing(untuned):
    nodes = sorted(untuned["nodes"])
    assert all("NCCL_ALGO" not in nccl_conf(n) for n in nodes)

    first = run_playbook("playbooks/nccl_tune.yml", *ARGS, timeout=2400)
    assert first.returncode == 0, first.stdout[-6000:]
    with open(TUNED) as f:
        tuned = json.load(f)
    assert tuned["settings"] == {"NCCL_ALGO": "Ring"}, json.dumps(tuned)
    assert tuned["measured_on"]["nodes"] == len(nodes)
    for node in nodes:
        conf = nccl_conf(node)
        assert conf["NCCL_ALGO"] == "Ring", (node, conf)
        assert conf["NCCL_IB_HCA"].startswith("=")          # the rest of the derivation is still there
    assert any(c["changed"] for c in recap(first.stdout).values())
    with open(os.path.join(OUT, "sweep.json")) as f:
        sweep = json.load(f)
    rows = {(r["key"], r["value"]): r for r in sweep["rows"]}
    assert rows[("NCCL_ALGO", "Ring")]["winner"] and rows[("NCCL_ALGO", "Ring")]["gain_percent"] >= 5
    assert not rows[("NCCL_ALGO", "Tree")]["kept"]
    assert sweep["runs"] <= 60
    # the verification the change asked for carries the sweep table
    with open(os.path.join(REPO, "inventory", "lab-output", "reports", "latest", "report.json")) as f:
        report = json.load(f)
    assert report["nccl_tuning"]["settings"] == {"NCCL_ALGO": "Ring"}

    tuned_bytes = open(TUNED, "rb").read()
    second = run_playbook("playbooks/nccl_tune.yml", *ARGS, timeout=2400)
    assert second.returncode == 0, second.stdout[-6000:]
    counts = recap(second.stdout)
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in counts.values()), counts
    assert open(TUNED, "rb").read() == tuned_bytes
    assert all(nccl_conf(n)["NCCL_ALGO"] == "Ring" for n in nodes)
    # the second baseline ran with the winner in nccl.conf neutralised: the same winner was found again
    with open(os.path.join(OUT, "sweep.json")) as f:
        again = json.load(f)
    assert again["settings"] == {"NCCL_ALGO": "Ring"}
    assert "NCCL_ALGO=" in again["rows"][0]["value"]


def test_tuning_is_off_by_default(untuned):
    res = run_playbook("playbooks/nccl_tune.yml", timeout=900)
    assert res.returncode == 0, res.stdout[-4000:]
    assert "NCCL tuning is off" in res.stdout
    assert not os.path.exists(TUNED)
    assert all(c["changed"] == 0 for c in recap(res.stdout).values())
