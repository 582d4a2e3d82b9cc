"""nccl-tests on real hosts at a pinned version (issue 26, item 6): the install plan and the role's tasks."""

import json
import os
import sys

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.linerate.fabric.plugins.filter.verify_tools import verify_tools_plan
from ansible_collections.linerate.fabric.plugins.module_utils.host.verify_tools import tools_plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "verify_fabric")
URL = "https://mirror.example/nccl-tests/v2.19.6.tar.gz"


def _yaml(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize(
    "method,version,installed,action",
    [
        ("source", "2.19.6", "2.19.6\n", "skip"),  # present at the version: nothing to do
        ("source", "2.19.6", "", "install"),  # absent (no stamp: never built, or the build failed)
        ("source", "2.19.6", None, "install"),
        ("source", "2.19.6", "2.18.5", "reinstall"),  # another version: replaced
        ("package", "2.13.11-1", "2.13.11-1", "skip"),
        ("package", "2.13.11-1", "", "install"),
        ("package", "2.13.11-1", "2.13.10-1", "reinstall"),
        ("package", "2.13.11-1", "2.13.11", "reinstall"),  # dpkg's exact version, not a prefix of it
    ],
)
def test_the_plan(method, version, installed, action):
    plan = tools_plan(method, version, URL, installed)
    assert plan == {"action": action, "method": method, "wanted": version, "installed": (installed or "").strip() or None}


def test_none_installs_nothing():
    assert tools_plan("none", "", "", "2.19.6")["action"] == "none"


@pytest.mark.parametrize(
    "args,msg",
    [
        (("pip", "2.19.6", URL), "verify_fabric_nccl_tests_method: 'pip' is not allowed (allowed: package | source | none)"),
        (
            ("source", "v2.19.6", URL),
            "verify_fabric_nccl_tests_version: 'v2.19.6' is not allowed (allowed: a release of NVIDIA/nccl-tests as X.Y.Z, the tag vX.Y.Z)",
        ),
        (
            ("source", "2.19.6", ""),
            "verify_fabric_nccl_tests_source_url: '' is not allowed (allowed: the URL of the nccl-tests v2.19.6 release tarball on your mirror",
        ),
        (("source", "2.19.6", "mirror/nccl.tgz"), "verify_fabric_nccl_tests_source_url: 'mirror/nccl.tgz' is not allowed"),
        (("package", "", ""), "verify_fabric_nccl_tests_version: '' is not allowed (allowed: the exact version of the site's nccl-tests package"),
    ],
)
def test_bad_input_names_the_key_the_value_and_what_is_allowed(args, msg):
    with pytest.raises(ValueError) as e:
        tools_plan(*args)
    assert str(e.value).startswith(msg)
    with pytest.raises(AnsibleFilterError) as e:
        verify_tools_plan(*args)
    assert str(e.value).startswith(msg)


def test_defaults_build_the_pinned_release_and_fetch_nothing_unless_told():
    d = _yaml(ROLE, "defaults", "main.yml")
    assert d["verify_fabric_nccl_tests_method"] == "source"
    assert d["verify_fabric_nccl_tests_source_url"] == ""  # a site names its mirror; nothing from the internet
    with open(os.path.join(ROOT, "lab", "sim", "linerate_lab", "grammar", "nccl_tests.json"), encoding="utf-8") as f:
        assert d["verify_fabric_nccl_tests_version"] in json.load(f)["versions"]  # a release we know the options of
    specs = _yaml(ROLE, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    for key in [k for k in d if k.startswith("verify_fabric_nccl_tests_") and k != "verify_fabric_nccl_tests"]:
        assert specs[key]["default"] == d[key], key


def _tasks():
    return _yaml(ROLE, "tasks", "tools.yml")


def test_the_source_build_is_make_mpi_against_the_nodes_cuda_and_nccl():
    block = next(t for t in _tasks() if "block" in t)["block"]
    make = next(t for t in block if t["name"].startswith("Build nccl-tests"))["ansible.builtin.command"]
    assert make["argv"][0] == "make" and make["argv"][2:] == [
        "MPI=1",
        "MPI_HOME={{ verify_fabric_nccl_tests_mpi_home }}",
        "CUDA_HOME={{ verify_fabric_nccl_tests_cuda_home }}",
        "NCCL_HOME={{ verify_fabric_nccl_tests_nccl_home }}",
    ]
    fetch = next(t for t in block if "ansible.builtin.get_url" in t)["ansible.builtin.get_url"]
    assert fetch["url"] == "{{ verify_fabric_nccl_tests_source_url }}"
    # the stamp is the last step: a build that fails leaves no record, so the next run builds again
    assert "ansible.builtin.copy" in block[-1] and block[-1]["ansible.builtin.copy"]["dest"] == "{{ verify_fabric_nccl_tests_prefix }}/VERSION"


def test_the_package_path_pins_the_exact_version():
    apt = next(t for t in _tasks() if "ansible.builtin.apt" in t)
    assert apt["ansible.builtin.apt"]["name"] == "{{ verify_fabric_nccl_tests_package }}={{ verify_fabric_nccl_tests_version }}"
    assert apt["ansible.builtin.apt"]["allow_downgrade"] is True
    assert "verify_fabric_nccl_tests_plan.action in ['install', 'reinstall']" in apt["when"]


def test_the_lab_installs_its_package_through_the_role_at_the_packages_version():
    """The lab takes the path of a site with a package repository, at the version its repository carries."""
    sys.path.insert(0, os.path.join(ROOT, "lab"))
    import packages

    inv = _yaml(ROOT, "inventory", "lab", "group_vars", "gpu_nodes", "verify.yml")
    assert inv["verify_fabric_nccl_tests_method"] == "package"
    assert inv["verify_fabric_nccl_tests_version"] == packages.NCCL_TESTS_VERSION
    assert "nccl-tests" not in inv.get("verify_fabric_packages", [])  # not around the role's path
