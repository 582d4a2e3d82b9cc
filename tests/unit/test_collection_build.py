"""The built collection: `ansible-galaxy collection build` of a used checkout
ships exactly galaxy.yml's manifest allow-list - the collection (plugins, roles,
playbooks, switch templates, docs, metadata, LICENSE, changelog, the example
inventories) - and nothing of the lab, the tests (the sanity ignore files
included: galaxy-importer warns about an artifact that ships them), the
benchmarks, a site's own inventory and vault, or what a run leaves behind
(reports, switch backups, lab state and credentials, caches, *.bak).

The README's "From the built collection" block is well-formed here (its pins,
the artifact's name, outside the checkout, the playbook by name);
tests/release/test_readme_built_collection.py runs it (`make release-check`).
Every supported ansible-core has its sanity ignore file."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Collections a task could name by FQCN (those the ansible package ships).
KNOWN = {
    f"{ns}.{name}"
    for ns in ("ansible", "community", "containers", "cisco", "arista", "nvidia")
    for name in ("posix", "general", "netcommon", "utils", "podman", "crypto", "docker", "nxos", "eos", "cumulus", "windows")
}
NETWORK_OS_NAMES = re.compile(r"\b(arista\.eos\.eos|nvidia\.nvue\.(nvue|httpapi)|dellemc\.enterprise_sonic\.sonic)\b")
GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")

# What a used checkout holds beside the collection: each must stay out.
PLANTED = [
    "backups/switches/leaf1/20261122T040000Z.nvue.cfg",
    "reports/latest/report.json",
    "inventory/lab-output/reports/latest/report.json",
    "inventory/lab-output/backups/leaf1/20261122T040000Z.nvue.cfg",
    "linerate-output/reports/latest/report.json",
    "lab/state/c/lab.json",
    "inventory/lab/hosts.yml",
    "inventory/lab/group_vars/switches/credentials.yml",
    "inventory/lab-ib/lab-connection.yml",
    ".ansible/facts/node1",
    ".make/deps",
    ".pytest_cache/v/cache/nodeids",
    "roles/mofed/.ansible/tmp/x",
    "bench/results/run.json",
    "linerate-fabric-0.0.9.tar.gz",
    # a site inventory where the README once said to put it, its vault, editor backups (issue 26)
    "inventory/mysite/hosts.yml",
    "inventory/mysite/group_vars/all/fabric.yml",
    "inventory/mysite/group_vars/switches/vault.yml",
    "inventory/mysite-output/reports/latest/report.json",
    "inventory/example-roce/group_vars/switches/vault.yml",
    "inventory/example-roce/group_vars/all/fabric.yml.bak",
    "roles/mofed/defaults/main.yml.bak",
    "playbooks/site.yml.orig",
    "plugins/modules/mlxconfig.py.rej",
    "docs/notes.md~",
    "tests/unit/test_planted.py",
    "tests/sanity/run_local.py",
    "scripts/report_summary_local.py",
    "switch_configs/nvue/.fabric.j2.swp",
]
# galaxy.yml's manifest allow-list, restated: the artifact holds exactly the checkout's files these match.
SHIPS = re.compile(
    r"(README\.md|LICENSE|CHANGELOG\.md|requirements\.txt|bindep\.txt|meta/(runtime|execution-environment)\.yml|meta/(requirements|bindep)\.txt"
    r"|changelogs/(config|changelog)\.yaml|changelogs/fragments/[^/]+\.ya?ml|docs/[^/]+\.md"
    r"|plugins/.+\.(py|yml)|roles/(?![^/]+/molecule/).+\.(yml|j2|md)|playbooks/.+\.yml"
    r"|switch_configs/.+\.j2|inventory/example-(roce|ib)/.+\.yml(\.example)?)"
)
NEVER = re.compile(r"(^|/)(\.[^/]*|__pycache__|vault\.yml)(/|$)|\.(bak|orig|rej|swp|pyc|pyo)$|~$")
FORBIDDEN = (
    "lab/",
    "tests/",
    "bench/",
    "scripts/",
    "inventory/mysite",
    ".bak",
    "backups/",
    "reports/",
    "linerate-output/",
    ".venv",
    ".ansible",
    ".make",
    ".git",
    ".collections",
    ".ci/",
    ".pytest_cache",
    ".yamllint",
    "inventory/lab/",
    "inventory/lab-ib/",
    "inventory/lab-output/",
    "ansible.cfg",
    "Makefile",
    "requirements-dev.txt",
    ".tar.gz",
)
REQUIRED = (
    "MANIFEST.json",
    "FILES.json",
    "README.md",
    "LICENSE",
    "changelogs/changelog.yaml",
    "changelogs/config.yaml",
    "inventory/example-ib/hosts.yml",
    "meta/runtime.yml",
    "meta/execution-environment.yml",
    "meta/requirements.txt",
    "meta/bindep.txt",
    "requirements.txt",
    "bindep.txt",
    "plugins/modules/mlxconfig.py",
    "plugins/action/validate_intent.py",
    "plugins/filter/fabric.py",
    "plugins/module_utils/intent/fabric.py",
    "roles/mofed/tasks/main.yml",
    "roles/switch_fabric/meta/argument_specs.yml",
    "playbooks/site.yml",
    "playbooks/validate.yml",
    "switch_configs/nvue",
    "inventory/example-roce/hosts.yml",
)


class Built(tuple):
    """(member names, MANIFEST.json) with .files, .checkout and .license."""


def _ignore(directory, names):
    # The checkout's own copy: no venv, no git, no caches of this test run; not the lab's state (its
    # debootstrap rootfs holds device nodes: copying dev/full or dev/zero as a file never ends and fills
    # the disk) nor Ansible's (virtualenvs); nothing that is not a regular file, directory or link.
    skip = {".venv", ".git", "__pycache__", ".ansible", "mutants", ".hypothesis"}
    if os.path.abspath(directory) == os.path.join(ROOT, "lab"):
        skip.add("state")
    return [
        n
        for n in names
        if n in skip
        or not (os.path.islink(os.path.join(directory, n)) or os.path.isfile(os.path.join(directory, n)) or os.path.isdir(os.path.join(directory, n)))
    ]


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    """(member names, MANIFEST.json) of the artifact built from a copy of this checkout with PLANTED files;
    artifact.files / .checkout / .license: its files, the checkout's files the allow-list matches, LICENSE."""
    tmp = tmp_path_factory.mktemp("build")
    src = tmp / "checkout"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_ignore)
    os.symlink("/nonexistent/venv", src / ".venv")
    for rel in PLANTED:
        p = src / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("secret: planted by test_collection_build\n")
    out = tmp / "out"
    r = subprocess.run([GALAXY, "collection", "build", "--output-path", str(out), str(src)], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(src / "galaxy.yml", encoding="utf-8") as f:
        version = yaml.safe_load(f)["version"]
    path = out / f"linerate-fabric-{version}.tar.gz"
    with tarfile.open(path) as tar:
        names = [m.name.rstrip("/") for m in tar.getmembers()]
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        files = {m.name for m in tar.getmembers() if m.isfile()}
        license_text = tar.extractfile("LICENSE").read().decode()
    checkout = set()
    for dirpath, _dirs, fns in os.walk(src):
        for fn in fns:
            rel = os.path.relpath(os.path.join(dirpath, fn), src)
            if SHIPS.fullmatch(rel) and not NEVER.search(rel):
                checkout.add(rel)
    built = Built((names, manifest))
    built.files, built.checkout, built.license = files, checkout, license_text
    return built


def test_artifact_holds_the_collection(artifact):
    names, _ = artifact
    for rel in REQUIRED:
        assert rel in names, f"{rel} missing from the built collection"
    assert any(n.startswith("plugins/modules/") for n in names)


@pytest.mark.parametrize("prefix", FORBIDDEN)
def test_artifact_holds_nothing_of_the_checkout(artifact, prefix):
    names, _ = artifact
    leaked = [n for n in names if n == prefix.rstrip("/") or n.startswith(prefix) or f"/{prefix}" in f"/{n}" or (prefix == ".tar.gz" and n.endswith(prefix))]
    assert not leaked, f"{prefix}: {leaked[:5]}"


def test_no_planted_file_in_artifact(artifact):
    names, _ = artifact
    for rel in PLANTED:
        assert rel not in names, rel
    assert not [n for n in names if "molecule" in n.split("/")], "molecule scenarios are tests"


def test_artifact_is_exactly_the_allow_list(artifact):
    assert artifact.files - {"MANIFEST.json", "FILES.json"} == artifact.checkout
    assert "inventory/example-roce/group_vars/switches/vault.yml.example" in artifact.files
    assert not [n for n in artifact.files if n.startswith("inventory/") and not n.startswith("inventory/example-")]
    assert not [n for n in artifact.files if os.path.basename(n) == "vault.yml"]


def test_license_is_the_one_galaxy_declares(artifact):
    _, manifest = artifact
    assert manifest["collection_info"]["license"] == ["Apache-2.0"]
    assert manifest["collection_info"]["license_file"] is None
    assert artifact.license.split()[:3] == ["Apache", "License", "Version"]
    assert "http://www.apache.org/licenses/" in artifact.license and "END OF TERMS AND CONDITIONS" in artifact.license


def test_metadata_names_real_project_urls(artifact):
    _, manifest = artifact
    info = manifest["collection_info"]
    base = "https://github.com/linerate-fabric/linerate"
    assert (info["repository"], info["homepage"], info["issues"], info["documentation"]) == (base, base, f"{base}/issues", f"{base}/tree/main/docs")
    assert not [k for k, v in info.items() if isinstance(v, str) and ("example" in v or "invalid" in v)]


def test_changelog_is_antsibull_changelogs():
    with open(os.path.join(ROOT, "changelogs", "config.yaml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    assert config["changes_file"] == "changelog.yaml" and config["notesdir"] == "fragments"
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml"), encoding="utf-8") as f:
        changes = yaml.safe_load(f)
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as f:
        version = yaml.safe_load(f)["version"]
    assert changes["ancestor"] is None and version in changes["releases"]
    assert changes["releases"][version]["changes"]["release_summary"]


def test_manifest_declares_dependencies(artifact):
    _, manifest = artifact
    deps = manifest["collection_info"]["dependencies"]
    assert set(deps) == {"ansible.posix"}


def test_galaxy_declares_every_collection_the_roles_call():
    # Tasks name modules and filters by FQCN; Python plugins import
    # ansible_collections.<ns>.<name>.
    used = set()
    for base in ("roles", "playbooks", "plugins", "switch_configs"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            if "molecule" in dirpath.split(os.sep):
                continue
            if "__pycache__" in dirpath.split(os.sep):
                continue
            for fn in files:
                with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                    text = f.read()
                # ansible_network_os values (arista.eos.eos ...) name a platform, not a plugin to call
                text = NETWORK_OS_NAMES.sub("", text)
                if fn.endswith((".yml", ".yaml", ".j2")):
                    # a comment that names a plugin (ansible.netcommon.network_cli) calls nothing
                    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
                    used |= set(re.findall(r"\b([a-z_]+\.[a-z_]+)\.[a-z_]+\b", text)) & KNOWN
                elif fn.endswith(".py"):
                    used |= {f"{a}.{b}" for a, b in re.findall(r"ansible_collections\.([a-z_]+)\.([a-z_]+)", text)}
    used -= {"ansible.builtin", "ansible.legacy", "linerate.fabric"}
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as f:
        declared = set(yaml.safe_load(f)["dependencies"])
    assert "ansible.posix" in used
    assert used <= declared, f"used but not declared in galaxy.yml: {sorted(used - declared)}"


def test_requires_ansible_has_no_upper_cap():
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as f:
        spec = yaml.safe_load(f)["requires_ansible"]
    assert "<" not in spec and spec.startswith(">=2.19"), spec


def test_outputs_default_beside_the_inventory_never_inside_the_collection():
    # An installed collection is not the operator's: nothing the roles write
    # (reports, switch backups) may default to a path under playbook_dir.
    for base in ("roles", "playbooks", "inventory", "plugins"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            if "molecule" in dirpath.split(os.sep):
                continue
            for fn in files:
                if fn.endswith((".yml", ".yaml", ".py", ".j2")):
                    with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                        assert "playbook_dir" not in f.read(), os.path.join(dirpath, fn)
    defaults = {}
    for role, key in (("verify_fabric", "verify_fabric_reports_dir"), ("switch_fabric", "switch_fabric_backup_dir")):
        with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), encoding="utf-8") as f:
            defaults[key] = yaml.safe_load(f)[key]
    assert defaults == {
        "verify_fabric_reports_dir": "{{ linerate_output_dir | default(inventory_dir ~ '-output') }}/reports",
        "switch_fabric_backup_dir": "{{ linerate_output_dir | default(inventory_dir ~ '-output') }}/backups",
    }


def readme_built_collection():
    """The sh block of README.md's "From the built collection" section, as written."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## From the built collection\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)
    assert len(blocks) == 1, "README.md: one sh block in 'From the built collection'"
    return blocks[0]


def _readme_commands():
    return [shlex.split(line, comments=True) for line in readme_built_collection().splitlines() if shlex.split(line, comments=True)]


def _dev_pin(name):
    with open(os.path.join(ROOT, "requirements-dev.txt"), encoding="utf-8") as f:
        return re.search(rf"^{re.escape(name)}==(\S+)$", f.read(), re.M).group(1)


def test_readme_built_collection_block_is_valid_bash():
    r = subprocess.run(["bash", "-n"], input=readme_built_collection(), capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr


def test_readme_built_collection_installs_what_the_project_tests_in_a_fresh_venv():
    cmds = _readme_commands()
    assert cmds[0][:3] == ["python3", "-m", "venv"] and cmds[0][-2:] == [".", f"{cmds[0][3]}/bin/activate"], cmds[0]
    assert cmds[0][3].startswith("../"), "the virtualenv is outside the checkout (it would ship otherwise)"
    pip = next(c for c in cmds if c[:2] == ["pip", "install"])
    # the ansible package the project tests (ansible-core 2.19 and ansible.posix), distlib for the build's manifest
    assert f"ansible=={_dev_pin('ansible')}" in pip and f"distlib=={_dev_pin('distlib')}" in pip, pip
    assert pip[pip.index("-r") + 1] == "requirements.txt"


def test_readme_built_collection_builds_then_installs_and_runs_outside_the_checkout():
    cmds = _readme_commands()
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as f:
        version = yaml.safe_load(f)["version"]
    build = next(i for i, c in enumerate(cmds) if c[:3] == ["ansible-galaxy", "collection", "build"])
    assert cmds[build][3:] == ["--output-path", ".."], cmds[build]
    leave = next(i for i, c in enumerate(cmds) if c == ["cd", ".."])
    export = next(i for i, c in enumerate(cmds) if c[0] == "export")
    install = next(i for i, c in enumerate(cmds) if c[:3] == ["ansible-galaxy", "collection", "install"])
    # inside the checkout its ansible.cfg puts the checkout first: install would find linerate.fabric installed
    assert build < leave < export < install, cmds
    assert cmds[export] == ["export", "ANSIBLE_COLLECTIONS_PATH=$PWD/collections"]
    assert cmds[install][3:] == [f"linerate-fabric-{version}.tar.gz"], f"stale artifact name (galaxy.yml: {version})"
    plays = [c for c in cmds[install:] if c[0] == "ansible-playbook"]
    assert plays, "the block runs a playbook of the installed collection"
    for c in plays:
        name = c[-1]
        assert name.startswith("linerate.fabric.") and os.path.isfile(os.path.join(ROOT, "playbooks", name.split(".", 2)[2] + ".yml")), c
        assert c[c.index("-i") + 1] == "mysite", "the quickstart's ../mysite, seen from outside the checkout"


def test_every_supported_ansible_core_has_its_sanity_ignore_file():
    sys.path.insert(0, os.path.join(ROOT, "tests", "sanity"))
    try:
        from release_check import CORES  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as f:
        floor = yaml.safe_load(f)["requires_ansible"].removeprefix(">=")
    assert min(CORES, key=lambda v: tuple(map(int, v.split(".")))) == ".".join(floor.split(".")[:2])
    present = {
        os.path.basename(p)[len("ignore-") : -len(".txt")] for p in os.listdir(os.path.join(ROOT, "tests", "sanity")) if re.fullmatch(r"ignore-.+\.txt", p)
    }
    assert present == set(CORES), f"ignore files {sorted(present)} for the supported cores {sorted(CORES)}"
    for line in CORES:
        core, _python = CORES[line]
        assert core.startswith(line + "."), (line, core)
        with open(os.path.join(ROOT, "tests", "sanity", f"ignore-{line}.txt"), encoding="utf-8") as f:
            for entry in f.read().splitlines():
                path, _sep, rest = entry.partition(" ")
                assert os.path.isfile(os.path.join(ROOT, path)) and " # " in rest, f"ignore-{line}.txt: {entry}"


def test_every_module_is_in_every_ignore_file_for_the_gplv3_header():
    """The collection is Apache-2.0: validate-modules' GPLv3 header check is ignored for every module, in the
    ignore file of every supported ansible-core (a module added without it fails sanity under that core only)."""
    modules = {
        f"plugins/{kind}/{fn}"
        for kind in ("modules", "callback")
        if os.path.isdir(os.path.join(ROOT, "plugins", kind))
        for fn in os.listdir(os.path.join(ROOT, "plugins", kind))
        if fn.endswith(".py") and not fn.startswith("_")
    }
    # validate-modules checks the callback plugins' header too (window_outcome)
    assert "plugins/callback/window_outcome.py" in modules
    for fn in sorted(os.listdir(os.path.join(ROOT, "tests", "sanity"))):
        if re.fullmatch(r"ignore-.+\.txt", fn):
            with open(os.path.join(ROOT, "tests", "sanity", fn), encoding="utf-8") as f:
                ignored = {line.split()[0] for line in f if " validate-modules:missing-gplv3-license " in line}
            assert ignored == modules, f"{fn}: missing {sorted(modules - ignored)}, stale {sorted(ignored - modules)}"
