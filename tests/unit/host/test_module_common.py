"""host/module_common.py: the one skeleton of the host modules, run with a real AnsibleModule."""

import pytest
from ansible.module_utils import basic

from ansible_collections.linerate.fabric.plugins.module_utils.common import ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host.module_common import host_module
from module_harness import Tools, run_module

SPEC = {"name": {"type": "str", "required": True}, "tool": {"type": "str", "default": "ibstat"}}


def _main(compute, **kw):
    return lambda: host_module(SPEC, compute, **kw)


def test_the_result_is_computes_with_the_runner_and_check_mode(capsys):
    seen = {}

    def compute(module, run):
        seen["check"] = module.check_mode
        rc, out, _err = run([module.params["tool"], "-l"])
        return {"changed": True, "out": out.strip(), "diff": {"before": "a\n", "after": "b\n"}}

    tools = Tools({"ibstat": lambda args: (0, "mlx5_0\n", "")})
    res = run_module(_main(compute), {"name": "n1"}, tools, capsys, check=True)
    assert res["changed"] is True and res["out"] == "mlx5_0" and seen == {"check": True}
    assert "diff" not in res  # the diff only under --diff
    assert tools.calls == [["ibstat", "-l"]]  # through the Runner: argv, C locale (the harness asserts it)
    res = run_module(_main(compute), {"name": "n1"}, tools, capsys, diff=True)
    assert res["diff"] == {"before": "a\n", "after": "b\n"} and seen == {"check": False}


def test_a_tool_failure_fails_the_module_with_its_fields(capsys):
    def compute(module, run):
        rc, out, err = run(["ibstat"])
        raise ToolFailure.exited(["ibstat"], rc, out, err, diff={"before": "x"})

    res = run_module(_main(compute), {"name": "n1"}, Tools({"ibstat": lambda a: (3, "", "no device\n")}), capsys)
    assert res["failed"] is True and res["msg"] == "ibstat exited 3: no device"
    assert res["rc"] == 3 and res["stderr"] == "no device\n" and res["cmd"] == ["ibstat"] and "diff" not in res


def test_the_results_warnings_are_the_modules_warnings(capsys, monkeypatch):
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, text: warned.append(text))
    res = run_module(_main(lambda m, r: {"changed": False, "warnings": ["w1", "w2"]}), {"name": "n1"}, Tools({}), capsys)
    assert warned == ["w1", "w2"] and "failed" not in res and res["changed"] is False


def test_optional_tools_raise_oserror_others_fail_the_module_naming_them(capsys):
    def compute(module, run):
        try:
            run(["mst", "status"])
        except OSError as e:
            return {"changed": False, "mst": str(e)}
        return {"changed": False}

    tools = Tools({}, missing={"mst"})
    assert run_module(_main(compute, optional=("mst",)), {"name": "n1"}, tools, capsys)["mst"] == "mst not found"
    # optional as a function of the parameters (host_readiness: its load command's binary)
    res = run_module(_main(compute, optional=lambda p: (p["name"],)), {"name": "mst"}, tools, capsys)
    assert res["mst"] == "mst not found"
    res = run_module(_main(compute), {"name": "n1"}, tools, capsys)
    assert res["failed"] is True and res["msg"].startswith("mst: command not found")


def test_the_argument_spec_and_its_rules_are_ansibles(capsys):
    res = run_module(_main(lambda m, r: {"changed": False}), {}, Tools({}), capsys)
    assert res["failed"] is True and res["msg"] == "missing required arguments: name"
    main = _main(lambda m, r: {"changed": False}, mutually_exclusive=[["name", "tool"]])
    res = run_module(main, {"name": "n1", "tool": "x"}, Tools({}), capsys)
    assert res["failed"] is True and res["msg"] == "parameters are mutually exclusive: name|tool"


@pytest.mark.parametrize("check", [False, True])
def test_check_mode_is_supported_by_every_host_module(check, capsys):
    # supports_check_mode=True: Ansible would skip the module in check mode otherwise ("skipped": True)
    res = run_module(_main(lambda m, r: {"changed": False, "check": m.check_mode}), {"name": "n1"}, Tools({}), capsys, check=check)
    assert res.get("skipped") is None and res["check"] is check
