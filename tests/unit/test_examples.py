"""The example inventories pass their own validation, with 8 rails per node,
and every variable they set is read by something."""

import json
import os
import re
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, ".venv", "bin")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=BIN + os.pathsep + os.environ["PATH"], ANSIBLE_NOCOLOR="1")
# Ansible's own connection variables (honoured by Ansible or by switch_fabric's defaults).
ANSIBLE_VARS = {"ansible_host", "ansible_connection"}


def ansible(*argv):
    return subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("example,transport,switches", [("example-roce", "roce", 10), ("example-ib", "infiniband", 10)])
def test_example_passes_validation(example, transport, switches):
    # The switches' vault (group_vars/switches/vault.yml, encrypted by the
    # operator from vault.yml.example) stands in as extra vars.
    res = ansible(
        os.path.join(BIN, "ansible-playbook"),
        "-i",
        f"inventory/{example}",
        "playbooks/validate.yml",
        "-e",
        "vault_switch_user=admin",
        "-e",
        "vault_switch_password=x",
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert f"({transport}, 400 Gb/s): 4 RDMA host(s), {switches} switch(es), intent valid" in " ".join(res.stdout.split())


@pytest.mark.parametrize("example", ["example-roce", "example-ib"])
def test_example_nodes_have_eight_rails_from_the_pattern(example):
    res = ansible(os.path.join(BIN, "ansible"), "-i", f"inventory/{example}", "gpu004", "-m", "ansible.builtin.debug", "-a", "var=rdma_ports", "-o")
    assert res.returncode == 0, res.stdout + res.stderr
    ports = json.loads(res.stdout.split("=>", 1)[1])["rdma_ports"]
    assert len(ports) == 8
    assert [p["switch_port"] for p in ports] == (["swp4"] * 8 if example == "example-roce" else [4] * 8)
    assert len({p["switch"] for p in ports}) == 8 and len({p["address"] for p in ports}) == 8


@pytest.mark.parametrize("example", ["example-roce", "example-ib"])
def test_every_variable_an_example_sets_is_read(example):
    res = ansible(os.path.join(BIN, "ansible-inventory"), "-i", f"inventory/{example}", "--list")
    assert res.returncode == 0, res.stderr
    inv = json.loads(res.stdout)
    names = set()
    for hv in inv["_meta"]["hostvars"].values():
        names.update(hv)
    names -= ANSIBLE_VARS
    assert "switch_host" not in names  # was set in example-roce and read by nothing
    sources = []
    for top in ("roles", "plugins", "playbooks", os.path.join("inventory", example)):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".yml", ".py", ".j2")):
                    path = os.path.join(d, f)
                    with open(path, encoding="utf-8") as fh:
                        sources.append((path, fh.read()))
    for name in sorted(names):
        # Read means used in an expression or by a plugin, not only set (name: value).
        readers = [p for p, text in sources if re.search(rf"(\{{\{{[^}}]*\b{name}\b|['\"]{name}['\"]|\.{name}\b|\b{name}\s*\|)", text)]
        assert readers, f"{example} sets {name}, which nothing reads"


def test_example_switch_credentials_come_from_the_vault_template():
    creds = os.path.join(ROOT, "inventory", "example-roce", "group_vars", "switches")
    text = open(os.path.join(creds, "credentials.yml")).read()
    assert 'ansible_user: "{{ vault_switch_user }}"' in text
    assert 'ansible_password: "{{ vault_switch_password }}"' in text
    template = open(os.path.join(creds, "vault.yml.example")).read()
    assert "vault_switch_user:" in template and "vault_switch_password:" in template
    assert not os.path.exists(os.path.join(creds, "vault.yml"))  # never a plaintext vault in the repo
