"""Bad intent is rejected on the controller before any host or switch is touched."""

import json
import os
import re

import pytest
import yaml

from conftest import REPO, ansible_env, run_playbook

BAD = [
    ({"roce": {"no_drop_priority": 9}}, "fabric.roce.no_drop_priority: 9 is not allowed (allowed: an integer 0..7)"),
    ({"mtu": {"host": 9216, "switch": 4200}}, "fabric.mtu.host: 9216 is not allowed (allowed: at most fabric.mtu.switch (4200)"),
    ({"roce": {"data_dscp": 64}}, "fabric.roce.data_dscp: 64 is not allowed (allowed: an integer 0..63)"),
    (
        {"roce": {"ecn": {"min_threshold_kb": 2000, "max_threshold_kb": 1000}}},
        "fabric.roce.ecn.min_threshold_kb: 2000 is not allowed (allowed: below fabric.roce.ecn.max_threshold_kb (1000))",
    ),
    ({"roce": {"cnp_priority": 3}}, "fabric.roce.cnp_priority: 3 is not allowed"),
    ({"verify": {"ib_write_bw_fraction": 1.5}}, "above the line rate of 400 Gb/s"),
    ({"infiniband": {"subnet_manager": {"priority": 1}}}, "fabric.infiniband: '...' is not allowed (only with fabric.transport: infiniband"),
]


def recap_hosts(output):
    tail = output.split("PLAY RECAP", 1)[1]
    return sorted(m.group(1) for m in re.finditer(r"^(\S+)\s+: ok=", tail, re.M))


@pytest.mark.parametrize("override,message", BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_bad_intent_fails_before_any_host(lab, override, message):
    fabric = {"transport": "roce", **override}
    res = run_playbook("playbooks/site.yml", "-e", json.dumps({"fabric": fabric}))
    assert res.returncode != 0
    assert message in res.stdout, res.stdout[-3000:]
    # Only the controller ran anything: no node, no switch appears in the recap.
    assert recap_hosts(res.stdout) == ["localhost"], res.stdout[-3000:]


def test_two_hosts_on_one_switch_port_is_rejected(lab):
    ports = [{"device": "mlx5_0", "netdev": "enp65s0f0np0", "switch": "leaf1", "switch_port": "swp1"}]
    res = run_playbook("playbooks/site.yml", "-e", json.dumps({"rdma_ports": ports}))
    assert res.returncode != 0
    # -e sets rdma_ports on every host, switches included: each host that feeds a
    # switch port is validated, so the port is claimed by the first of them.
    out = " ".join(res.stdout.split())
    assert "node2 mlx5_0: switch_port: 'leaf1 swp1' is not allowed (allowed: a switch port cabled once; leaf1 swp1 is already cabled to" in out
    assert recap_hosts(res.stdout) == ["localhost"]


def test_good_intent_validates(lab):
    res = run_playbook("playbooks/validate.yml", check=True)
    assert "intent valid" in res.stdout


def test_fabric_effective_without_injected_facts():
    # inject_facts_as_vars = false: facts live only under ansible_facts; the
    # validated intent must still reach every host as fabric_effective.
    # example-roce reads the switch logins from a vault (credentials.yml); the
    # test stands the vault in with extra vars, as test_examples.py does.
    res = run_playbook(
        "tests/integration/playbooks/fabric_effective.yml",
        "-e",
        "vault_switch_user=admin",
        "-e",
        "vault_switch_password=x",
        inventory="inventory/example-roce",
        env=ansible_env(ANSIBLE_INJECT_FACT_VARS="False"),
    )
    assert res.returncode == 0, res.stdout[-4000:]
    recap = res.stdout.split("PLAY RECAP", 1)[1]
    hosts = [h for h in recap_hosts(res.stdout) if h != "localhost"]
    assert len(hosts) >= 2, recap
    for h in hosts:
        assert re.search(rf"^{h}\s+: ok=2 .* failed=0 ", recap, re.M), recap


@pytest.mark.parametrize("inject", ["True", "False"])
def test_validated_once_per_run_and_the_hosts_keep_the_intent(lab, inject):
    # A playbook that imports validate.yml twice (two playbooks in one run): the second import
    # reads the same intent and cabling, validates nothing again and ends its
    # plays; every host still has fabric_effective (with or without injected facts).
    res = run_playbook("tests/integration/playbooks/validate_twice.yml", env=ansible_env(ANSIBLE_INJECT_FACT_VARS=inject))
    assert res.returncode == 0, res.stdout[-4000:]
    assert res.stdout.count("TASK [Check the intent, the cabling and every cross-layer constraint]") == 2
    assert res.stdout.count("TASK [Show what was validated]") == 1
    assert res.stdout.count("TASK [Set fabric_effective from the validated intent]") == 1
    assert "intent valid" in res.stdout


def test_site_validates_once(lab):
    # one validation per run: site.yml imports validate.yml once and then the stages, which
    # import no validation of their own (a bad -e override fails it before any host:
    # test_bad_intent_fails_before_any_host); each playbook alone still starts with it.
    res = run_playbook("playbooks/site.yml", "--check", "--tags", "validate")
    assert res.returncode == 0, res.stdout[-4000:]
    assert res.stdout.count("TASK [Show what was validated]") == 1
    assert res.stdout.count("TASK [Check the intent, the cabling and every cross-layer constraint]") == 1
    for playbook in ("hosts", "switches", "verify", "subnet_manager"):
        with open(os.path.join(REPO, "playbooks", f"{playbook}.yml"), encoding="utf-8") as f:
            plays = yaml.safe_load(f)
        assert plays[0]["ansible.builtin.import_playbook"] == "validate.yml", playbook
        assert plays[1]["ansible.builtin.import_playbook"] == f"stages/{playbook}.yml", playbook
