"""The built collection, installed with ansible-galaxy into a plain Ansible
(not the repository's virtualenv, no ansible.cfg, not this checkout), runs
site.yml --check against the lab.

The plain Ansible is a virtualenv with the pinned `ansible` package and the
collection's runtime needs (requirements.txt), made once under
.ansible/plain-ansible and reused (LINERATE_PLAIN_ANSIBLE names another).
"""

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

PLAIN = os.environ.get("LINERATE_PLAIN_ANSIBLE", os.path.join(REPO, ".ansible", "plain-ansible"))


def _pin(name):
    with open(os.path.join(REPO, "requirements-dev.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(f"{name}=="):
                return line.strip()
    raise AssertionError(f"{name} is not pinned in requirements-dev.txt")


@pytest.fixture(scope="session")
def plain_ansible():
    # distlib: ansible-galaxy collection build reads galaxy.yml's manifest allow-list with it
    want = f"{_pin('ansible')} {_pin('distlib')}"
    marker = os.path.join(PLAIN, "linerate-plain.txt")
    if not (os.path.exists(marker) and open(marker, encoding="utf-8").read() == want):
        subprocess.run([sys.executable, "-m", "venv", "--clear", PLAIN], check=True, timeout=300)
        subprocess.run(
            [os.path.join(PLAIN, "bin", "pip"), "install", "-q", "--disable-pip-version-check", *want.split(), "-r", os.path.join(REPO, "requirements.txt")],
            check=True,
            timeout=900,
        )
        with open(marker, "w", encoding="utf-8") as f:
            f.write(want)
    return os.path.join(PLAIN, "bin")


def plain_env(bindir, collections):
    """An environment that knows nothing of the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PATH=bindir + os.pathsep + "/usr/sbin:/usr/bin:/sbin:/bin", ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    env.pop("VIRTUAL_ENV", None)
    return env


def tree(path):
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for fn in files:
            p = os.path.join(dirpath, fn)
            out[os.path.relpath(p, path)] = os.stat(p).st_mtime_ns
    return out


def test_installed_collection_runs_site_check_against_the_lab(lab, plain_ansible, tmp_path):
    work = tmp_path / "operator"
    work.mkdir()
    collections = str(tmp_path / "collections")
    env = plain_env(plain_ansible, collections)
    galaxy = os.path.join(plain_ansible, "ansible-galaxy")
    run = dict(cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False)

    res = subprocess.run([galaxy, "collection", "build", "--output-path", str(tmp_path), REPO], **run)
    assert res.returncode == 0, res.stdout + res.stderr
    (artifact,) = [p for p in os.listdir(tmp_path) if p.endswith(".tar.gz")]
    # The dependency (ansible.posix) comes with the ansible package: no Galaxy needed.
    res = subprocess.run([galaxy, "collection", "install", "-p", collections, str(tmp_path / artifact)], **run)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ansible.posix" in res.stdout, res.stdout
    installed = os.path.join(collections, "ansible_collections", "linerate", "fabric")
    res = subprocess.run([galaxy, "collection", "list", "linerate.fabric"], **run)
    assert installed.rsplit("/ansible_collections", 1)[0] in res.stdout and REPO not in res.stdout, res.stdout
    before = tree(installed)

    out = tmp_path / "output"
    res = subprocess.run(
        [
            os.path.join(plain_ansible, "ansible-playbook"),
            "-i",
            os.path.join(REPO, "inventory", "lab"),
            "linerate.fabric.site",
            "--check",
            "-e",
            f"linerate_output_dir={out}",
        ],
        **dict(run, timeout=900),
    )
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    recap = res.stdout.split("PLAY RECAP", 1)[1]
    hosts = dict(re.findall(r"^(\S+)\s+: (ok=.*)$", recap, re.M))
    assert set(lab["nodes"]) <= set(hosts), recap
    assert any(h.startswith(("leaf", "spine")) for h in hosts), recap
    for h, counts in hosts.items():
        assert "unreachable=0" in counts and "failed=0" in counts, f"{h}: {counts}"
    # The modules and roles that ran are the installed copy's, and nothing was written into it.
    assert "linerate.fabric." in res.stdout
    assert tree(installed) == before
