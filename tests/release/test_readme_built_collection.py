"""The README's "From the built collection" block, run as written (issue 40, item 2; `make release-check`).

bash runs the block exactly as README.md has it, from a copy of this checkout at <tmp>/linerate, so
the block's `..` is <tmp>: the virtualenv it makes, the artifact it builds, the `collections`
directory it installs into and the site inventory `mysite` are all there. `mysite` is what the
quickstart's first line makes, a copy of an example: inventory/example-ib, which has no switches and
so needs no vault. The environment knows nothing of the checkout: PATH without .venv, no ANSIBLE_*
variable, no VIRTUAL_ENV, a temporary HOME (pip's settings from the environment and its cache are
kept, so wheels are not downloaded again).

After the block, in the same shell: what ansible-core the fresh virtualenv has, and where
`ansible-galaxy collection list` finds linerate.fabric (the installed copy, not the checkout).
Slow (a fresh virtualenv with the ansible package): not in `make test`.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
from test_collection_build import _ignore, readme_built_collection  # noqa: E402  (one parser of the README block)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """(bash's CompletedProcess, tmp): the README block, then the checks' own commands, in one shell."""
    tmp = tmp_path_factory.mktemp("readme-built")
    shutil.copytree(ROOT, tmp / "linerate", symlinks=True, ignore=_ignore)
    shutil.copytree(os.path.join(ROOT, "inventory", "example-ib"), tmp / "mysite")
    (tmp / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHON")) and k not in ("PATH", "HOME")}
    env.update(
        PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        HOME=str(tmp / "home"),
        PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", os.path.expanduser("~/.cache/pip")),
        ANSIBLE_NOCOLOR="1",
    )
    script = "\n".join(
        [
            "set -euo pipefail",
            readme_built_collection(),
            "echo '--- checks'",
            'echo "python=$(command -v python)"',
            "python -c 'import ansible.release as r; print(\"core=\" + r.__version__)'",
            "ansible-galaxy collection list linerate.fabric --format json",
        ]
    )
    r = subprocess.run(["bash", "-c", script], cwd=tmp / "linerate", env=env, capture_output=True, text=True, timeout=1800, check=False)
    return r, tmp


def test_the_block_runs_as_written(ran):
    r, _tmp = ran
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    recap = r.stdout.split("PLAY RECAP", 1)[1].split("--- checks", 1)[0]
    assert re.search(r"^localhost\s+: ok=[1-9]\d*\s+changed=0\s+unreachable=0\s+failed=0", recap, re.M), recap


def test_a_fresh_virtualenv_with_ansible_core_219(ran):
    r, tmp = ran
    checks = r.stdout.split("--- checks", 1)[1]
    assert f"python={tmp}/ansible-venv/bin/python" in checks
    assert re.search(r"^core=2\.19\.\d+$", checks, re.M), checks


def test_the_installed_artifact_runs_not_the_checkout(ran):
    r, tmp = ran
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as f:
        version = yaml.safe_load(f)["version"]
    assert (tmp / f"linerate-fabric-{version}.tar.gz").is_file()
    installed = tmp / "collections" / "ansible_collections" / "linerate" / "fabric"
    assert (installed / "MANIFEST.json").is_file() and not (installed / "galaxy.yml").exists()
    listed = json.loads(r.stdout.split("--- checks", 1)[1].split("\n", 3)[3])
    assert listed == {str(tmp / "collections" / "ansible_collections"): {"linerate.fabric": {"version": version}}}
