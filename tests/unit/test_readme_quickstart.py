"""The README's "Using it on a real cluster" block works when copied literally (issue 26, item 2).

Unit level: the block parses, names only paths that exist (the example it copies, the files it
edits, the playbooks it runs), gives every vault-reading command a vault password, and keeps the
site inventory outside the checkout. Its controller-only part - copy, vault password, vault,
encrypt, validate.yml - runs here as written (no cluster needed; $EDITOR leaves the example as it
is); tests/integration/site/test_quickstart.py runs all of it against the lab.
"""

import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

from readme_quickstart import SITE, quickstart  # noqa: E402  (the one parser of the README block)


def words(line):
    return shlex.split(line, comments=True)


def test_the_block_is_valid_bash():
    block, _ = quickstart()
    r = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr


def test_the_site_inventory_is_a_copy_of_an_example_outside_the_checkout():
    _, lines = quickstart()
    first = words(lines[0])
    assert first[:2] == ["cp", "-r"] and first[3] == SITE, lines[0]
    assert first[2] in ("inventory/example-roce", "inventory/example-ib")
    assert os.path.isdir(os.path.join(ROOT, first[2]))
    # outside the checkout: nothing of a site's inventory or vault can ship with the collection
    assert not os.path.abspath(os.path.join(ROOT, SITE)).startswith(ROOT + os.sep)


def test_every_path_the_block_names_exists():
    _, lines = quickstart()
    example = words(lines[0])[2]
    created = set()
    for line in lines:
        w = words(line)
        if w[0] == "cp" and "-r" not in w:
            created.add(w[2])
        for word in w:
            if word.startswith(SITE + "/"):
                rel = word[len(SITE) + 1 :]
                assert word in created or os.path.exists(os.path.join(ROOT, example, rel)), f"{line}: {rel} is not in {example}"
            elif word.startswith("playbooks/"):
                assert os.path.isfile(os.path.join(ROOT, word)), f"{line}: {word} does not exist"
        if w[0] == "ansible-playbook":
            assert w[w.index("-i") + 1] == SITE, line
            assert any(x.startswith("playbooks/") for x in w), line


def test_the_vault_is_made_from_its_example_then_encrypted_before_any_playbook():
    _, lines = quickstart()
    vault = f"{SITE}/group_vars/switches/vault.yml"
    cmds = [words(line) for line in lines]
    made = next(i for i, w in enumerate(cmds) if w[0] == "cp" and w[-1] == vault)
    assert cmds[made][1] == vault + ".example"
    encrypt = next(i for i, w in enumerate(cmds) if w[:2] == ["ansible-vault", "encrypt"])
    assert cmds[encrypt][-1] == vault
    first_play = next(i for i, w in enumerate(cmds) if w[0] == "ansible-playbook")
    assert made < encrypt < first_play


def test_every_vault_reading_command_has_a_vault_password():
    """The old block failed with "no vault secrets found": no command passed a password."""
    _, lines = quickstart()
    exported = False
    for line in lines:
        w = words(line)
        if w[0] == "export" and w[1].startswith("ANSIBLE_VAULT_PASSWORD_FILE="):
            exported = True
        if w[0] in ("ansible-vault", "ansible-playbook"):
            assert exported or "--ask-vault-pass" in w or any(x.startswith("--vault-password-file") for x in w), (
                f"{line}: no vault password (ANSIBLE_VAULT_PASSWORD_FILE, --ask-vault-pass or --vault-password-file)"
            )


def test_the_vault_password_file_is_made_private():
    _, lines = quickstart()
    export = next(words(x)[1] for x in lines if words(x)[0] == "export")
    path = export.split("=", 1)[1]
    maker = next(x for x in lines if f"> {path}" in x)
    assert "umask 077" in maker, maker


def test_the_controller_part_runs_as_written(tmp_path):
    """cp, the vault password, the vault, encrypt, validate.yml: the block up to the first line that needs a
    cluster, run by bash as written; only ../mysite is a temporary directory and HOME a temporary one."""
    _, lines = quickstart()
    until = next(i for i, x in enumerate(lines) if "playbooks/site.yml" in x)
    site = str(tmp_path / "mysite")
    script = "set -euo pipefail\n" + "\n".join(x.replace(SITE, site) for x in lines[:until]) + "\n"
    env = dict(os.environ, HOME=str(tmp_path / "home"), EDITOR="true", PATH=BIN + os.pathsep + os.environ["PATH"], ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    env.pop("ANSIBLE_VAULT_PASSWORD_FILE", None)
    os.makedirs(env["HOME"])
    r = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "no vault secrets" not in out
    vault = os.path.join(site, "group_vars", "switches", "vault.yml")
    with open(vault, encoding="utf-8") as f:
        assert f.readline().startswith("$ANSIBLE_VAULT;1.1;AES256")
    assert oct(os.stat(os.path.join(env["HOME"], ".linerate-vault-pass")).st_mode & 0o777) == "0o600"
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", out), out
