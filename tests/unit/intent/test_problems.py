"""The words of a problem (plugins/module_utils/intent/problems.py), exactly: every format's description,
the cut of long values, the problem list and the merge of a fabric over its defaults. The cabling rules'
wording: test_cabling.py; the effective fabric and what is derived from it: test_fabric.py."""

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import merge
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import FORMATS, has_format, Problems, show


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_rejects_a_newline_and_accepts_its_example(fmt):
    good = {
        "name": "fabric",
        "device": "mlx5_0",
        "netdev": "eth1",
        "port": "Ethernet1/1",
        "ifname_list": "^lo,docker",
        "nccl_value": "mlx5_0:1,mlx5_3:1",
        "pci": "0000:41:00.0",
        "guid": "0xa088c20300000101",
    }[fmt]
    assert has_format(good, fmt)
    assert not has_format(good + "\n", fmt)
    assert not has_format(good + ";x", fmt)
    assert not has_format(None, fmt)


@pytest.mark.parametrize("length,cut", [(78, False), (79, True)])
def test_values_are_cut_after_80_characters(length, cut):
    value = "a" * length  # repr adds two quotes: 80 or 81 characters
    shown = show(value)
    assert shown == (repr(value)[:77] + f"... ({length} characters)" if cut else repr(value))


def test_problems_and_merge():
    p = Problems()
    p.add("k", 1, "allowed: x")
    p.note("free text")
    assert p.items == ["k: 1 is not allowed (allowed: x)", "free text"]
    assert merge({"a": {"b": 1, "c": 2}}, None) == {"a": {"b": 1, "c": 2}}
    assert merge({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}, "d": [1]}) == {"a": {"b": 3, "c": 2}, "d": [1]}
    assert merge({"a": {"b": 1}}, {"a": 5}) == {"a": 5}


def test_the_intents_errors_have_one_base():
    # one exception type for the layer (issue 39): every error class an intent module defines is an
    # IntentError, itself a ValueError (what the filters and modules that report them catch)
    import ast
    import importlib
    import pathlib
    from ansible_collections.linerate.fabric.plugins.module_utils.intent import launchers, k8s_render, rails
    from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import IntentError

    assert issubclass(IntentError, ValueError)
    assert all(issubclass(e, IntentError) for e in (launchers.LayoutError, rails.PlanError, k8s_render.RenderError))
    package = pathlib.Path(launchers.__file__).parent
    defined = {}
    for path in sorted(package.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Exception")):
                defined[f"{path.stem}.{node.name}"] = getattr(importlib.import_module(f"{launchers.__package__}.{path.stem}"), node.name)
    assert sorted(defined) == ["k8s_render.RenderError", "launchers.LayoutError", "problems.IntentError", "rails.PlanError"]
    assert [name for name, cls in defined.items() if not issubclass(cls, IntentError)] == []
    # and none is bound under a second name (an alias such as ``PlanningError = PlanError``)
    aliases = [
        f"{path.stem}: {node.targets[0].id} = {node.value.id}"
        for path in sorted(package.glob("*.py"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id.endswith("Error") and isinstance(node.targets[0], ast.Name)
    ]
    assert aliases == []
