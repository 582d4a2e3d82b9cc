"""Run a linerate module's main() with a real AnsibleModule and scripted tools.

Only ``run_command`` and ``get_bin_path`` are replaced: argument parsing,
check mode, diff and fail_json/exit_json are AnsibleModule's own. Every argv
the module runs is recorded (tool name without its directory) so tests can
assert the exact commands.
"""

import json
import os

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def fixture(tool, name):
    with open(os.path.join(FIXTURES, tool, name), encoding="utf-8") as f:
        return f.read()


class Tools:
    """Answers argv by a handler per tool: ``handlers[tool](args) -> (rc, out, err)``."""

    def __init__(self, handlers, missing=()):
        self.handlers = handlers
        self.missing = set(missing)
        self.calls = []

    def __call__(self, argv):
        tool = os.path.basename(argv[0])
        self.calls.append([tool, *argv[1:]])
        handler = self.handlers.get(tool)
        if handler is None:
            raise AssertionError(f"unexpected command: {argv}")
        return handler(list(argv[1:]))


def run_module(main, args, tools, capsys, check=False, diff=False, env_check=True):
    def run_command(self, argv, **kw):
        assert isinstance(argv, list), "commands are argv lists, never shell strings"
        assert not kw.get("use_unsafe_shell"), "never through a shell"
        if env_check:
            env = kw.get("environ_update") or {}
            assert env.get("LC_ALL") == "C" and env.get("LANG") == "C"
        return tools(argv)

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return None if name in tools.missing else f"/usr/bin/{name}"

    margs = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(margs), pytest.MonkeyPatch.context() as mp:
        mp.setattr(basic.AnsibleModule, "run_command", run_command)
        mp.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
        with pytest.raises(SystemExit):
            main()
    return json.loads(capsys.readouterr().out)
