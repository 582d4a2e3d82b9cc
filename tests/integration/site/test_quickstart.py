"""The README's "Using it on a real cluster" block, copied literally, against the lab (issue 26, item 2).

bash runs the block as README.md has it, from the checkout. Substituted: only the site inventory's
name (`../mysite` -> a temporary directory). The environment supplies what a user's shell would:
HOME (a temporary one: the vault password file goes there) and EDITOR, a stand-in that "edits"
like an operator describing this cluster:

- `$EDITOR .../fabric.yml .../hosts.yml`: the lab's hosts.yml (nodes, cabling, switches) and its
  group_vars (intent, the lab's documented differences) over the example's; not the lab's
  generated switch login (credentials.yml), which the site takes from its vault.
- `$EDITOR .../vault.yml`: the lab switches' user and password as vault_switch_user/_password.

Every command then runs as written: the vault is encrypted with the password file, validate.yml,
site.yml --check --diff, site.yml, site.yml again with changed=0 - all against the lab (RoCE; the
InfiniBand example needs the IB lab and is covered by test_lab_ib.py).
"""

import json
import os
import re
import subprocess
import pytest

import yaml

from conftest import REPO, ansible_env

from readme_quickstart import SITE, quickstart  # the one parser of the README block

EDITOR = r'''#!/usr/bin/env python3
"""Stand-in for $EDITOR: make the copied example describe the lab (see tests/integration/site/test_quickstart.py)."""
import os, shutil, sys, yaml
lab = os.environ["QUICKSTART_LAB_INVENTORY"]
for path in sys.argv[1:]:
    site = os.path.dirname(os.path.dirname(os.path.dirname(path))) if "/group_vars/" in path else os.path.dirname(path)
    if path.endswith("/hosts.yml"):
        shutil.copy(os.path.join(lab, "hosts.yml"), path)
    elif path.endswith("/group_vars/all/fabric.yml"):
        for d, _dirs, files in os.walk(os.path.join(lab, "group_vars")):
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), lab)
                if rel == os.path.join("group_vars", "switches", "credentials.yml"):
                    continue   # the lab's generated login: the site's comes from its vault
                os.makedirs(os.path.dirname(os.path.join(site, rel)), exist_ok=True)
                shutil.copy(os.path.join(d, f), os.path.join(site, rel))
    elif path.endswith("/group_vars/switches/vault.yml"):
        with open(os.path.join(lab, "group_vars", "switches", "credentials.yml")) as f:
            login = yaml.safe_load(f)
        with open(path, "w") as f:
            yaml.safe_dump({"vault_switch_user": login["ansible_user"],
                            "vault_switch_password": login["ansible_password"]}, f)
    else:
        sys.exit(f"quickstart editor: no edit known for {path}")
'''


def recap(out, play_hosts):
    tail = out.rsplit("PLAY RECAP", 1)[1]
    got = {
        m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", tail, re.M)
    }
    assert set(play_hosts) <= set(got), got
    return got


@pytest.mark.matrix
def test_the_readme_quickstart_runs_as_written_against_the_lab(lab, tmp_path):
    _block, lines = quickstart()
    site = str(tmp_path / "mysite")
    home = tmp_path / "home"
    home.mkdir()
    editor = tmp_path / "editor"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    env = ansible_env(HOME=str(home), EDITOR=str(editor), QUICKSTART_LAB_INVENTORY=os.path.join(REPO, "inventory", "lab"))
    env.pop("ANSIBLE_VAULT_PASSWORD_FILE", None)
    # one bash for the whole block (the export carries over); a marker after each command splits the output
    outputs = [line.replace(SITE, site) for line in lines]
    script = "set -euo pipefail\n" + "".join(f"{cmd}\necho '=== quickstart step {i} done'\n" for i, cmd in enumerate(outputs))
    r = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=5400, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-8000:]
    assert "no vault secrets" not in out
    steps = re.split(r"^=== quickstart step \d+ done$", r.stdout, flags=re.M)
    plays = [(cmd, steps[i]) for i, cmd in enumerate(outputs) if cmd.startswith("ansible-playbook")]
    nodes = sorted(lab["nodes"])
    switches = sorted(lab["switches"])
    # the vault is encrypted, and the playbooks read the switch login from it
    with open(os.path.join(site, "group_vars", "switches", "vault.yml"), encoding="utf-8") as f:
        assert f.readline().startswith("$ANSIBLE_VAULT;1.1;AES256")
    assert oct(os.stat(home / ".linerate-vault-pass").st_mode & 0o777) == "0o600"
    with open(os.path.join(site, "group_vars", "switches", "credentials.yml"), encoding="utf-8") as f:
        assert yaml.safe_load(f)["ansible_password"] == "{{ vault_switch_password }}"  # the example's, not the lab's
    # validate, preview, apply, apply again: the last one changes nothing anywhere
    assert [p[0].split()[3] for p in plays] == [
        "playbooks/validate.yml",
        "playbooks/site.yml",
        "playbooks/site.yml",
        "playbooks/site.yml",
        "playbooks/verify.yml",
    ], plays
    preview, again = plays[1][1], plays[3][1]
    assert "--check --diff" in plays[1][0]
    counts = recap(again, nodes + switches)
    assert all(c == (0, 0) for c in counts.values()), counts
    assert all(f == 0 for _c, f in recap(preview, nodes + switches).values())
    # the verification's report beside the site inventory, never in the checkout
    with open(os.path.join(f"{site}-output", "reports", "latest", "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    assert report["summary"]["passed"] is True, report["findings"]
    assert report["checks"]["nodes"]["verified"] == len(nodes), report["checks"]["nodes"]
