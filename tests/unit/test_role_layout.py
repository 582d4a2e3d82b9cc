"""Every role has what galaxy-importer and ansible-doc read (issue 40, point 3): a README.md that
names the role and whose links resolve, and meta/argument_specs.yml whose entry points are task
files of the role; galaxy-importer stopped at roles/remediate, which had no README."""

import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(d for d in os.listdir(os.path.join(ROOT, "roles")) if os.path.isdir(os.path.join(ROOT, "roles", d, "tasks")))


def test_the_roles_are_found():
    assert {"remediate", "switch_fabric", "verify_fabric", "verify_request"} <= set(ROLES)


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_a_readme_naming_it(role):
    path = os.path.join(ROOT, "roles", role, "README.md")
    assert os.path.isfile(path), f"roles/{role}/README.md is missing (galaxy-importer refuses a role without one)"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.splitlines()[0] == f"# Role `linerate.fabric.{role}`"
    assert len(text.split()) >= 40, "a README says what the role does, who runs it and where it is documented"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert os.path.exists(os.path.join(ROOT, "roles", role, target)), f"{role}: link to {target}"


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_argument_specs_whose_entry_points_are_its_task_files(role):
    path = os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")
    assert os.path.isfile(path), f"roles/{role}/meta/argument_specs.yml is missing"
    with open(path, encoding="utf-8") as f:
        specs = yaml.safe_load(f)["argument_specs"]
    assert "main" in specs or role == "host_disruption"  # host_disruption: tasks_from begin / end only
    for entry, spec in specs.items():
        assert os.path.isfile(os.path.join(ROOT, "roles", role, "tasks", f"{entry}.yml")), (role, entry)
        assert spec.get("short_description"), (role, entry)
    with open(os.path.join(ROOT, "roles", role, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for entry in specs:
        assert re.search(rf"`[^`]*\b{entry}\b[^`]*`", readme), f"{role}: README does not name the entry point {entry}"
