"""ansible-doc renders every plugin and role of the collection, without a
warning; every action plugin has its documentation; the documented intent
is the validator's; ansible.cfg finds the collection and its dependencies
with the Ansible that runs it."""

import configparser
import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
if os.path.join(ROOT, ".collections") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import (  # noqa: E402
    DEFAULTS,
    FIRMWARE_PROFILES,
    GID_TYPES,
    LINK_SPEEDS_GBPS,
    LINK_WIDTHS,
    NCCL_GDR_LEVELS,
    TRANSPORTS,
    TRUST_MODES,
)


def _env(**extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="1")
    env.update(extra)
    return env


def ansible_doc(*args, env=None):
    return subprocess.run([os.path.join(BIN, "ansible-doc"), *args], cwd=ROOT, env=env or _env(), capture_output=True, text=True, timeout=300, check=False)


def modules():
    return sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py") and not f.startswith("_"))


def filters():
    names = []
    for f in sorted(os.listdir(os.path.join(ROOT, "plugins", "filter"))):
        if f.endswith(".py"):
            mod = importlib.import_module(f"ansible_collections.linerate.fabric.plugins.filter.{f[:-3]}")
            names += list(mod.FilterModule().filters())
    return sorted(names)


def roles():
    return sorted(r for r in os.listdir(os.path.join(ROOT, "roles")) if os.path.isdir(os.path.join(ROOT, "roles", r, "tasks")))


def action_plugins():
    return sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "action")) if f.endswith(".py") and not f.startswith("_"))


def _no_warnings(res):
    noise = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 0, res.stderr[-3000:]
    assert not noise, "\n".join(noise[:20])


@pytest.mark.parametrize("kind,names", [("module", modules), ("filter", filters), ("role", roles)])
def test_ansible_doc_renders_every_plugin(kind, names):
    names = [f"linerate.fabric.{n}" for n in names()]
    assert names
    res = ansible_doc("-t", kind, "--json", *names)
    _no_warnings(res)
    docs = json.loads(res.stdout)
    assert sorted(docs) == sorted(names), set(names) ^ set(docs)
    for name, entry in docs.items():
        if kind == "role":
            assert entry["entry_points"], name
            for ep, spec in entry["entry_points"].items():
                assert spec.get("short_description"), f"{name}:{ep} has no short_description"
        else:
            doc = entry["doc"]
            assert doc.get("short_description"), name
            assert entry.get("examples"), f"{name} has no EXAMPLES"
            assert entry.get("return"), f"{name} has no RETURN"
    # Text output too: what an operator reads.
    res = ansible_doc("-t", kind, *names)
    _no_warnings(res)


@pytest.mark.parametrize("kind,names", [("module", modules), ("filter", filters), ("role", roles)])
def test_ansible_doc_lists_nothing_undocumented(kind, names):
    res = ansible_doc("-t", kind, "-l", "linerate.fabric")
    _no_warnings(res)
    listed = {ln.split()[0]: ln for ln in res.stdout.splitlines() if ln.startswith("linerate.fabric.") and kind != "role"}
    if kind == "role":
        listed = {ln.rstrip(":"): ln for ln in res.stdout.splitlines() if ln.startswith("linerate.fabric.")}
    assert sorted(listed) == sorted(f"linerate.fabric.{n}" for n in names())
    assert not [ln for ln in listed.values() if "UNDOCUMENTED" in ln]


@pytest.mark.parametrize("name", action_plugins())
def test_every_action_plugin_is_documented(name):
    # ansible-doc and ansible-test's action-plugin-docs read an action's
    # documentation from plugins/modules/<name>.py.
    path = os.path.join(ROOT, "plugins", "modules", f"{name}.py")
    assert os.path.exists(path), f"action {name} has no plugins/modules/{name}.py documentation"


def _doc(module):
    res = ansible_doc("-t", "module", "--json", f"linerate.fabric.{module}")
    _no_warnings(res)
    return json.loads(res.stdout)[f"linerate.fabric.{module}"]["doc"]


def test_documented_intent_is_the_validators():
    fabric = _doc("validate_intent")["options"]["fabric"]["suboptions"]

    def walk(defaults, opts, path):
        assert sorted(opts) == sorted(defaults), f"{path}: documented {sorted(opts)}, validator {sorted(defaults)}"
        for key, value in defaults.items():
            opt = opts[key]
            if isinstance(value, dict) and value and "suboptions" in opt:
                assert opt["type"] == "dict", f"{path}.{key}"
                walk(value, opt["suboptions"], f"{path}.{key}")
            else:
                assert opt.get("default") == value, f"{path}.{key}: documented {opt.get('default')!r}, validator {value!r}"

    walk(DEFAULTS, fabric, "fabric")
    assert fabric["transport"]["choices"] == list(TRANSPORTS)
    assert fabric["link_speed_gbps"]["choices"] == list(LINK_SPEEDS_GBPS)
    assert fabric["link_width"]["choices"] == list(LINK_WIDTHS)
    assert fabric["roce"]["suboptions"]["trust"]["choices"] == list(TRUST_MODES)
    assert fabric["roce"]["suboptions"]["gid_type"]["choices"] == list(GID_TYPES)
    assert fabric["nccl"]["suboptions"]["gdr_level"]["choices"] == list(NCCL_GDR_LEVELS)
    assert fabric["firmware"]["suboptions"]["profile"]["choices"] == list(FIRMWARE_PROFILES)


def test_documented_action_arguments_are_the_accepted_ones():
    from ansible_collections.linerate.fabric.plugins.action import validate_intent

    assert sorted(_doc("validate_intent")["options"]) == sorted(validate_intent.ActionModule._VALID_ARGS)


# ansible.cfg: any Ansible install, the checkout first.


def test_ansible_cfg_names_no_interpreter_path():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "ansible.cfg"))
    d = cfg["defaults"]
    assert "collections_scan_sys_path" not in d, "the collections installed beside Ansible must be found"
    paths = d["collections_path"].split(":")
    assert paths[0] == "./.collections"
    assert not [p for p in paths if ".venv" in p or "python3" in p or "site-packages" in p], paths


def test_checkout_wins_over_an_installed_copy_and_dependencies_resolve(tmp_path):
    # A copy of linerate.fabric installed in the user's collections: the
    # checkout (.collections) must still be what runs.
    home = tmp_path / "home"
    installed = home / ".ansible" / "collections" / "ansible_collections" / "linerate" / "fabric"
    (installed / "plugins" / "modules").mkdir(parents=True)
    (installed / "MANIFEST.json").write_text(
        json.dumps({"collection_info": {"namespace": "linerate", "name": "fabric", "version": "0.0.1", "dependencies": {}}})
    )
    with open(os.path.join(ROOT, "plugins", "modules", "rdma_facts.py"), encoding="utf-8") as f:
        (installed / "plugins" / "modules" / "rdma_facts.py").write_text(f.read())
    env = _env(HOME=str(home))
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    env.pop("ANSIBLE_COLLECTIONS_PATHS", None)
    res = ansible_doc("-t", "module", "--json", "linerate.fabric.rdma_facts", "ansible.posix.authorized_key", env=env)
    assert res.returncode == 0, res.stderr
    docs = json.loads(res.stdout)
    where = docs["linerate.fabric.rdma_facts"]["doc"]["filename"]
    assert where.startswith(os.path.join(ROOT, ".collections")), where
    assert "authorized_key" in docs["ansible.posix.authorized_key"]["doc"]["module"]
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as f:
        for dep in yaml.safe_load(f)["dependencies"]:
            res = subprocess.run(
                [os.path.join(BIN, "ansible-galaxy"), "collection", "list", dep, "--format", "json"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert res.returncode == 0 and dep in res.stdout, f"{dep} not found: {res.stderr}"
