"""nccl-tests' source is checked before any node is touched (issue 40, point 6): a run that installs
nccl-tests (verify.yml, site.yml, nccl_tune.yml) with method source, the role's default, refuses an
empty release-tarball URL or checksum and a version that is not a release, naming key and nodes;
the first real verify.yml used to fail on the nodes, after touching them."""
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent import variables

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, ".venv", "bin")
URL = "https://mirror.example.org/nccl-tests/v2.19.6.tar.gz"
SUM = "sha256:" + "0123456789abcdef" * 4
URL_KEY, SUM_KEY = "verify_fabric_nccl_tests_source_url", "verify_fabric_nccl_tests_source_checksum"


def _load(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_the_defaults_the_check_reads_are_the_roles():
    defaults = _load("roles/verify_fabric/defaults/main.yml")
    for key, value in variables.VERIFY_DEFAULTS.items():
        assert defaults[key] == value, key
    specs = _load("roles/verify_fabric/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert specs["verify_fabric_nccl_tests_method"]["default"] == variables.VERIFY_DEFAULTS["verify_fabric_nccl_tests_method"]
    assert defaults[URL_KEY] == "" and defaults[SUM_KEY] == ""   # no default mirror: the site sets both


def test_the_role_defaults_are_refused_naming_both_keys():
    problems = variables.nccl_tests_problems({})
    assert len(problems) == 2
    assert problems[0].startswith(f"{URL_KEY}: '' is not allowed (allowed: the URL of the nccl-tests v2.19.6 "
                                  "release tarball on the site's mirror (https://, http:// or file://)")
    assert problems[1].startswith(f"{SUM_KEY}: '' is not allowed (allowed: sha256:<64 hex digits> of that tarball")
    for p in problems:
        assert "verify_fabric_nccl_tests_method: package" in p and "| none" in p


@pytest.mark.parametrize("values,keys", [
    ({URL_KEY: URL, SUM_KEY: SUM}, []),
    ({URL_KEY: URL}, [SUM_KEY]),
    ({SUM_KEY: SUM}, [URL_KEY]),
    ({URL_KEY: URL, SUM_KEY: SUM, "verify_fabric_nccl_tests_version": "2.13.11-1"},
     ["verify_fabric_nccl_tests_version"]),
    ({"verify_fabric_nccl_tests_method": "package", "verify_fabric_nccl_tests_version": "2.13.11-1"}, []),
    ({"verify_fabric_nccl_tests_method": "none"}, []),
    # nccl-tests not run: nothing is installed
    ({"verify_fabric_checks": ["ports", "ib_write_bw"]}, []),
    # ... unless the tuning sweep runs it
    ({"verify_fabric_checks": ["ports"], "verify_fabric_nccl_tune": "true"}, [URL_KEY, SUM_KEY]),
    ({"verify_fabric_checks": ["ports", "nccl"]}, [URL_KEY, SUM_KEY]),
])
def test_what_a_node_needs_for_a_source_build(values, keys):
    assert [p.split(":")[0] for p in variables.nccl_tests_problems(values)] == keys


def test_a_malformed_value_is_its_rules_problem_once():
    values = {URL_KEY: "ftp://mirror/x.tgz", SUM_KEY: "sha256:abc"}
    assert variables.nccl_tests_problems(values) == []
    problems = variables.validate_host(values)
    assert [p.split(":")[0] for p in problems] == [SUM_KEY, URL_KEY]
    assert "sha256:<64 hex digits>" in problems[0]


def test_the_lab_installs_its_package_and_needs_no_mirror():
    lab = _load("inventory/lab/group_vars/gpu_nodes/verify.yml")
    assert lab["verify_fabric_nccl_tests_method"] == "package"
    assert variables.nccl_tests_problems(lab) == []


def _run(inv, playbook, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FACT_CACHING="memory", PATH=BIN + os.pathsep + os.environ["PATH"])
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inv), playbook, "--tags", "validate",
                           "-e", "vault_switch_user=admin", "-e", "vault_switch_password=x", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("playbook,installs", [("playbooks/verify.yml", True), ("playbooks/site.yml", True),
                                               ("playbooks/nccl_tune.yml", True), ("playbooks/switches.yml", False),
                                               ("playbooks/validate.yml", False)])
def test_a_run_that_installs_nccl_tests_stops_at_validation(tmp_path, playbook, installs):
    inv = tmp_path / "inv"
    shutil.copytree(os.path.join(ROOT, "inventory", "example-roce"), inv)
    r = _run(inv, playbook)
    out = " ".join(r.stdout.split())
    if not installs:
        assert r.returncode == 0 and "intent valid" in out, r.stdout[-3000:]
        return
    assert r.returncode != 0
    assert f"gpu001, gpu002, gpu003 and 1 more host(s): {URL_KEY}: '' is not allowed" in out
    assert f"gpu001, gpu002, gpu003 and 1 more host(s): {SUM_KEY}: '' is not allowed" in out
    # stopped on the controller: no node or switch was reached (none is in the recap)
    recap = r.stdout.split("PLAY RECAP", 1)[1]
    assert [line.split()[0] for line in recap.strip().splitlines() if ":" in line] == ["localhost"]
    # the site's mirror and checksum given: the same run validates
    r = _run(inv, playbook, "-e", f"{URL_KEY}={URL}", "-e", f"{SUM_KEY}={SUM}")
    assert r.returncode == 0, r.stdout[-3000:]
    assert "intent valid" in " ".join(r.stdout.split())


def _action(args, hostvars, groups):
    from unittest import mock
    from ansible_collections.linerate.fabric.plugins.action.validate_intent import ActionModule
    task = mock.MagicMock()
    task.args = args
    templar = mock.MagicMock()
    templar.template.side_effect = lambda v: v
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar,
                          shared_loader_obj=None)
    with mock.patch("ansible.plugins.action.ActionBase.run", return_value={}):
        return action.run(task_vars={"groups": groups, "hostvars": hostvars, "fabric": {"name": "t"}})


def test_the_action_checks_the_host_group_only_when_the_run_installs_nccl_tests():
    groups = {"all": ["n1", "n2", "s1"], "gpus": ["n1", "n2"], "switches": ["s1"]}
    hostvars = {"n1": {URL_KEY: URL, SUM_KEY: SUM}, "n2": {}, "s1": {"switch_platform": "nvue"}}
    args = {"host_group": "gpus", "check_cabling": False}
    assert _action(args, hostvars, groups)["problems"] == []
    res = _action(dict(args, nccl_tests=True), hostvars, groups)
    assert [p.split(": ")[:2] for p in res["problems"]] == [["n2", URL_KEY], ["n2", SUM_KEY]]
    assert res["failed"] is True and "ansible_facts" not in res
    # a different run (with or without the install) is a different digest: never reused across them
    assert res["digest"] != _action(args, hostvars, groups)["digest"]
    res = _action(dict(args, nccl_tests="maybe"), hostvars, groups)
    assert res["failed"] is True and res["msg"] == "nccl_tests: 'maybe' is not allowed (allowed: true, false)"
