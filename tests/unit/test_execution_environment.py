"""Execution environments that build (issue 26, item 4; issue 40, item 5).

meta/execution-environment.yml (ships in the collection) is the collection's EE: `ansible-builder
create -f meta/execution-environment.yml` in a copy of the checkout, the artifact where `ansible-galaxy
collection build` leaves it, makes a context that holds linerate.fabric (the artifact, byte for byte,
installed by the galaxy stage) on a base pinned by an exact tag whose ansible-core (2.21.3, read from
the community-ee tag) meets meta/runtime.yml's floor and is a line `make release-check` tests; the
introspection of that context names the image, its ansible-core and linerate.fabric's version, and
ansible-builder's introspect over the collection installed from the context's tarball finds netmiko,
paramiko and the OpenSSH client. The same file is what introspect reads in any EE that installs
linerate.fabric (dependencies.python/system, relative to the collection root).

The documented site definition (docs/collection.md, "Execution environment") goes through `ansible-builder
create` with the artifact beside it: the pinned base image and ansible-core, the artifact in the context
and installed, the ssh client a system dependency. create writes only the build context: no container
engine, no registry.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from test_collection_build import GALAXY, ROOT, _ignore

BUILDER = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
# An exact release tag (digits, dots, an optional build suffix) or a digest; never latest or no tag.
PINNED_IMAGE = re.compile(r"^[\w.-]+(:\d+)?(/[\w.-]+)+(:\d+(\.\d+)*(-\d+)?|@sha256:[0-9a-f]{64})$")


def documented_definition():
    """The yaml block of docs/collection.md's "Execution environment" section, as written."""
    with open(os.path.join(ROOT, "docs", "collection.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Execution environment\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```yaml\n(.*?)^```", section, re.M | re.S)
    assert len(blocks) == 1, "docs/collection.md: one yaml block (the EE definition) in 'Execution environment'"
    return blocks[0]


def pinned(spec):
    """ansible-core's pin in requirements-dev.txt (the version the project tests)."""
    with open(os.path.join(ROOT, "requirements-dev.txt"), encoding="utf-8") as f:
        return re.search(rf"^{re.escape(spec)}==(\S+)$", f.read(), re.M).group(1)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    """The collection artifact built from a copy of this checkout: (path, version)."""
    tmp = tmp_path_factory.mktemp("ee-build")
    src = tmp / "checkout"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_ignore)
    r = subprocess.run([GALAXY, "collection", "build", "--output-path", str(tmp / "out"), str(src)], capture_output=True, text=True, timeout=180, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(src / "galaxy.yml", encoding="utf-8") as f:
        version = yaml.safe_load(f)["version"]
    return tmp / "out" / f"linerate-fabric-{version}.tar.gz", version


@pytest.fixture(scope="module")
def context(artifact, tmp_path_factory):
    """`ansible-builder create` on the documented definition, the artifact beside it: (context dir, definition)."""
    path, _version = artifact
    d = tmp_path_factory.mktemp("ee")
    text = documented_definition()
    (d / "execution-environment.yml").write_text(text)
    shutil.copy(path, d / path.name)
    r = subprocess.run([BUILDER, "create", "-f", "execution-environment.yml", "-c", "context"], cwd=d, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return d / "context", yaml.safe_load(text)


def test_the_base_image_is_pinned(context):
    ctx, definition = context
    image = definition["images"]["base_image"]["name"]
    assert PINNED_IMAGE.match(image), f"{image}: pin an exact tag or a digest"
    containerfile = (ctx / "Containerfile").read_text()
    assert f'ARG EE_BASE_IMAGE="{image}"' in containerfile
    assert "FROM $EE_BASE_IMAGE AS base" in containerfile


@pytest.mark.parametrize(
    "image,ok",
    [
        ("registry.access.redhat.com/ubi9/ubi:9.5", True),
        ("quay.io/fedora/fedora:42", True),
        ("registry.access.redhat.com/ubi9/ubi@sha256:" + "a" * 64, True),
        ("registry.access.redhat.com/ubi9/ubi:latest", False),
        ("registry.access.redhat.com/ubi9/ubi", False),
        ("quay.io/fedora/python-311:latest", False),
        ("quay.io/centos/centos:stream9", False),
    ],
)
def test_what_counts_as_pinned(image, ok):
    assert bool(PINNED_IMAGE.match(image)) is ok


def test_ansible_core_and_runner_are_pinned_to_what_the_project_tests(context):
    ctx, definition = context
    deps = definition["dependencies"]
    core = f"ansible-core=={pinned('ansible-core')}"
    assert deps["ansible_core"]["package_pip"] == core
    assert re.fullmatch(r"ansible-runner==\d+(\.\d+)+", deps["ansible_runner"]["package_pip"])
    refs = re.search(r'^ARG ANSIBLE_INSTALL_REFS="(.*)"$', (ctx / "Containerfile").read_text(), re.M).group(1)
    assert refs.split() == [core, deps["ansible_runner"]["package_pip"]]
    # ansible-core 2.19 needs Python >= 3.11 on the controller: the image's interpreter is chosen, not assumed
    assert deps["python_interpreter"] == {"package_system": "python3.11", "python_path": "/usr/bin/python3.11"}
    assert 'ARG PYCMD="/usr/bin/python3.11"' in (ctx / "Containerfile").read_text()


def test_the_artifact_is_in_the_context_and_installed(context, artifact):
    ctx, _definition = context
    path, version = artifact
    name = f"linerate-fabric-{version}.tar.gz"
    copied = ctx / "_build" / "collections" / name
    assert copied.exists(), f"{name} not in the build context (additional_build_files); stale name in the docs?"
    assert hashlib.sha256(copied.read_bytes()).digest() == hashlib.sha256(path.read_bytes()).digest()
    reqs = yaml.safe_load((ctx / "_build" / "requirements.yml").read_text())
    assert reqs == {"collections": [{"name": f"collections/{name}", "type": "file"}]}
    cf = (ctx / "Containerfile").read_text()
    galaxy = cf.split("FROM base AS galaxy", 1)[1].split("FROM base AS builder", 1)[0]
    # the relative name resolves: the galaxy stage copies _build to /build and installs from there
    assert galaxy.index("COPY _build /build") < galaxy.index("WORKDIR /build") < galaxy.index("ansible-galaxy collection install")
    assert "-r requirements.yml" in galaxy.split("ansible-galaxy collection install", 1)[1].splitlines()[0]


def test_the_ssh_client_is_a_system_dependency(context):
    ctx, definition = context
    assert "openssh-clients [platform:rpm]" in definition["dependencies"]["system"]
    bindep = (ctx / "_build" / "bindep.txt").read_text().splitlines()
    assert "openssh-clients [platform:rpm]" in bindep
    cf = (ctx / "Containerfile").read_text()
    assert "--user-bindep=bindep.txt" in cf and "RUN /output/scripts/install-from-bindep" in cf


def test_the_collection_metadata_is_what_introspect_reads(artifact, tmp_path):
    """What the EE build's introspect step finds in the installed artifact: its pip and bindep needs."""
    path, _version = artifact
    # --force: the checkout's ansible.cfg puts its own linerate.fabric on the collections path
    r = subprocess.run(
        [GALAXY, "collection", "install", "--no-deps", "--force", "-p", str(tmp_path), str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (tmp_path / "ansible_collections" / "linerate" / "fabric" / "meta" / "execution-environment.yml").exists()
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(
        [BUILDER, "introspect", str(tmp_path), "--write-pip", str(tmp_path / "pip.txt"), "--write-bindep", str(tmp_path / "bindep.txt")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    pip = (tmp_path / "pip.txt").read_text().splitlines()
    bindep = (tmp_path / "bindep.txt").read_text().splitlines()
    assert {re.split(r"[<>=!~ #\[]", line, 1)[0] for line in pip if line.strip()} >= {"netmiko", "paramiko"}
    assert "openssh-clients [platform:rpm]  # from collection linerate.fabric" in bindep
    assert "openssh-client [platform:dpkg]  # from collection linerate.fabric" in bindep


def _meta():
    with open(os.path.join(ROOT, "meta", "execution-environment.yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def _core_of(image):
    """The ansible-core a community-ee image ships: its tag is <ansible-core>-<n>
    (ansible-community/images docs/community-ee/community-ee-release-process.md), which its release workflow
    checks against `ansible --version` (.github/workflows/eerelease.yml)."""
    m = re.fullmatch(r"ghcr\.io/ansible-community/community-ee-(minimal|base):(\d+\.\d+\.\d+)-\d+", image)
    assert m, f"{image}: not a community-ee image pinned by its <ansible-core>-<n> tag"
    return tuple(int(x) for x in m.group(2).split("."))


def test_meta_is_what_introspect_reads():
    """Introspect reads dependencies.python/system relative to the collection root; read as a definition the
    same names resolve relative to meta/: copies there, never different."""
    meta = _meta()
    assert meta["version"] == 3 and set(meta) == {"version", "images", "dependencies", "additional_build_files"}
    assert {k: meta["dependencies"][k] for k in ("python", "system")} == {"python": "requirements.txt", "system": "bindep.txt"}
    for rel in ("requirements.txt", "bindep.txt"):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as a, open(os.path.join(ROOT, "meta", rel), encoding="utf-8") as b:
            assert a.read() == b.read(), f"meta/{rel} differs from {rel}: copy it again"


def test_meta_base_image_is_pinned_and_ships_a_tested_core_above_the_floor():
    image = _meta()["images"]["base_image"]["name"]
    assert PINNED_IMAGE.match(image), f"{image}: pin an exact tag or a digest"
    core = _core_of(image)
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as f:
        floor = tuple(int(x) for x in yaml.safe_load(f)["requires_ansible"].removeprefix(">=").split("."))
    assert core >= floor, f"{image}: ansible-core {core} is below requires_ansible {floor}"
    sys.path.insert(0, os.path.join(ROOT, "tests", "sanity"))
    try:
        from release_check import CORES  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    assert f"{core[0]}.{core[1]}" in CORES, f"{image}: ansible-core {core} is not a line make release-check tests"
    # the base's own ansible-core and ansible-runner: nothing installs another over them
    assert "ansible_core" not in _meta()["dependencies"] and "ansible_runner" not in _meta()["dependencies"]


@pytest.mark.parametrize(
    "image,core",
    [
        ("ghcr.io/ansible-community/community-ee-minimal:2.21.3-1", (2, 21, 3)),
        ("ghcr.io/ansible-community/community-ee-base:2.19.5-2", (2, 19, 5)),
    ],
)
def test_core_of_reads_the_community_ee_tag(image, core):
    assert _core_of(image) == core


@pytest.mark.parametrize(
    "image", ["ghcr.io/ansible-community/community-ee-minimal:latest", "quay.io/ansible/awx-ee:24.6.1", "ghcr.io/ansible-community/community-ee-minimal:2.21"]
)
def test_core_of_refuses_what_names_no_core(image):
    with pytest.raises(AssertionError):
        _core_of(image)


@pytest.fixture(scope="module")
def meta_context(artifact, tmp_path_factory):
    """`ansible-builder create -f meta/execution-environment.yml` where the README's build leaves the artifact
    (the checkout's root, beside meta/): (context dir, checkout copy)."""
    path, _version = artifact
    tmp = tmp_path_factory.mktemp("meta-ee")
    src = tmp / "checkout"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_ignore)
    shutil.copy(path, src / path.name)
    r = subprocess.run(
        [BUILDER, "create", "-f", "meta/execution-environment.yml", "-c", str(tmp / "ctx")], cwd=src, capture_output=True, text=True, timeout=120, check=False
    )
    assert r.returncode == 0 and "No matches" not in r.stdout + r.stderr, r.stdout + r.stderr
    return tmp / "ctx", src


def test_meta_context_holds_the_built_collection_on_the_pinned_base(meta_context, artifact, tmp_path):
    """The introspection of the build context: the base image and its ansible-core, linerate.fabric (the
    artifact, byte for byte, named by the galaxy stage), its pip and bindep needs."""
    ctx, src = meta_context
    path, version = artifact
    image = _meta()["images"]["base_image"]["name"]
    cf = (ctx / "Containerfile").read_text()
    assert f'ARG EE_BASE_IMAGE="{image}"' in cf and "FROM $EE_BASE_IMAGE AS base" in cf
    # the final stage checks the base's ansible-core and ansible-runner; none is installed over them
    assert "RUN /output/scripts/check_ansible $PYCMD" in cf and "ANSIBLE_INSTALL_REFS" not in cf
    name = f"linerate-fabric-{version}.tar.gz"
    copied = ctx / "_build" / "collections" / name
    assert copied.is_file(), f"{name} not in the context: stale name in meta/execution-environment.yml?"
    assert hashlib.sha256(copied.read_bytes()).digest() == hashlib.sha256(path.read_bytes()).digest()
    assert yaml.safe_load((ctx / "_build" / "requirements.yml").read_text()) == {"collections": [{"name": f"collections/{name}", "type": "file"}]}
    assert (ctx / "_build" / "requirements.txt").read_text() == (src / "requirements.txt").read_text()
    assert (ctx / "_build" / "bindep.txt").read_text() == (src / "bindep.txt").read_text()
    with tarfile.open(copied) as tar:
        info = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == ("linerate", "fabric", version)
    print(f"EE context: {image} (ansible-core {'.'.join(map(str, _core_of(image)))}) + {info['namespace']}.{info['name']} {info['version']} ({name})")
    # what the builder stage's introspect finds in the collection the galaxy stage installs from that tarball
    r = subprocess.run(
        [GALAXY, "collection", "install", "--no-deps", "--force", "-p", str(tmp_path), str(copied)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(
        [BUILDER, "introspect", str(tmp_path), "--write-pip", str(tmp_path / "pip.txt"), "--write-bindep", str(tmp_path / "bindep.txt")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    pip = (tmp_path / "pip.txt").read_text()
    assert "netmiko>=4.3  # from collection linerate.fabric" in pip and "paramiko" in pip, pip
    assert "openssh-clients [platform:rpm]  # from collection linerate.fabric" in (tmp_path / "bindep.txt").read_text()


def test_meta_names_the_artifact_of_galaxy_yml_version(artifact):
    _path, version = artifact
    meta = _meta()
    name = f"linerate-fabric-{version}.tar.gz"
    assert meta["dependencies"]["galaxy"] == {"collections": [{"name": f"collections/{name}", "type": "file"}]}
    assert meta["additional_build_files"] == [{"src": f"../{name}", "dest": "collections"}]
