"""An execution environment that builds (issue 26, item 4).

The documented definition (docs/collection.md, "Execution environment") goes through
`ansible-builder create` with the collection artifact built from this checkout beside it: the
Containerfile has the pinned base image and ansible-core, the build context holds the artifact
and installs it, and the ssh client is a system dependency. The collection's own
meta/execution-environment.yml is read the way ansible-builder reads it inside that build (its
introspect step over the installed collection): netmiko, paramiko and the OpenSSH client.
create writes only the build context: no container engine, no registry.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys

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
    r = subprocess.run([GALAXY, "collection", "build", "--output-path", str(tmp / "out"), str(src)],
                       capture_output=True, text=True, timeout=180, check=False)
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
    r = subprocess.run([BUILDER, "create", "-f", "execution-environment.yml", "-c", "context"], cwd=d,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return d / "context", yaml.safe_load(text)


def test_the_base_image_is_pinned(context):
    ctx, definition = context
    image = definition["images"]["base_image"]["name"]
    assert PINNED_IMAGE.match(image), f"{image}: pin an exact tag or a digest"
    containerfile = (ctx / "Containerfile").read_text()
    assert f'ARG EE_BASE_IMAGE="{image}"' in containerfile
    assert "FROM $EE_BASE_IMAGE AS base" in containerfile


@pytest.mark.parametrize("image,ok", [
    ("registry.access.redhat.com/ubi9/ubi:9.5", True),
    ("quay.io/fedora/fedora:42", True),
    ("registry.access.redhat.com/ubi9/ubi@sha256:" + "a" * 64, True),
    ("registry.access.redhat.com/ubi9/ubi:latest", False),
    ("registry.access.redhat.com/ubi9/ubi", False),
    ("quay.io/fedora/python-311:latest", False),
    ("quay.io/centos/centos:stream9", False),
])
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
    assert galaxy.index("COPY _build /build") < galaxy.index("WORKDIR /build") < galaxy.index(
        "ansible-galaxy collection install")
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
    r = subprocess.run([GALAXY, "collection", "install", "--no-deps", "--force", "-p", str(tmp_path), str(path)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert (tmp_path / "ansible_collections" / "linerate" / "fabric" / "meta" / "execution-environment.yml").exists()
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([BUILDER, "introspect", str(tmp_path), "--write-pip", str(tmp_path / "pip.txt"),
                        "--write-bindep", str(tmp_path / "bindep.txt")],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    pip = (tmp_path / "pip.txt").read_text().splitlines()
    bindep = (tmp_path / "bindep.txt").read_text().splitlines()
    assert {re.split(r"[<>=!~ #\[]", line, 1)[0] for line in pip if line.strip()} >= {"netmiko", "paramiko"}
    assert "openssh-clients [platform:rpm]  # from collection linerate.fabric" in bindep
    assert "openssh-client [platform:dpkg]  # from collection linerate.fabric" in bindep


def test_meta_is_what_introspect_reads_and_builds_on_its_own(artifact, tmp_path):
    """Introspect reads dependencies.python/system relative to the collection root; `ansible-builder create -f
    meta/execution-environment.yml` reads the same names relative to meta/ (copies there, never different): from the installed
    artifact, the second EE definition builds a context with the same pip and bindep files, on a pinned image."""
    with open(os.path.join(ROOT, "meta", "execution-environment.yml"), encoding="utf-8") as f:
        meta = yaml.safe_load(f)
    assert meta["version"] == 1 and meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}
    assert set(meta) == {"version", "dependencies", "build_arg_defaults"}
    image = meta["build_arg_defaults"]["EE_BASE_IMAGE"]
    assert PINNED_IMAGE.match(image), f"{image}: pin an exact tag or a digest"
    for rel in meta["dependencies"].values():
        assert os.path.isfile(os.path.join(ROOT, rel)), rel
        with open(os.path.join(ROOT, rel), encoding="utf-8") as a, \
                open(os.path.join(ROOT, "meta", rel), encoding="utf-8") as b:
            assert a.read() == b.read(), f"meta/{rel} differs from {rel}: copy it again"
    path, _version = artifact
    r = subprocess.run([GALAXY, "collection", "install", "--no-deps", "--force", "-p", str(tmp_path), str(path)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    installed = tmp_path / "ansible_collections" / "linerate" / "fabric"
    r = subprocess.run([BUILDER, "create", "-f", "meta/execution-environment.yml", "-c", str(tmp_path / "ctx")],
                       cwd=installed, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    build = tmp_path / "ctx" / "_build"
    assert (build / "requirements.txt").read_text() == (installed / "requirements.txt").read_text()
    assert (build / "bindep.txt").read_text() == (installed / "bindep.txt").read_text()
    assert f'ARG EE_BASE_IMAGE="{image}"' in (tmp_path / "ctx" / "Containerfile").read_text()
