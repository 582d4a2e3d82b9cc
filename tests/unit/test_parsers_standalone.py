"""Each parser file (plugins/module_utils/parsers/) must import on its own, with only plugins/module_utils on sys.path.

That is how ../shared/corpus/check.py loads them; they then fall back to
``from common import ParseError``.
"""

import pathlib
import subprocess
import sys

import pytest

MODULE_UTILS = pathlib.Path(__file__).resolve().parents[2] / "plugins" / "module_utils"

SCRIPT = """
import importlib.util, sys
sys.path.insert(0, {path!r})
spec = importlib.util.spec_from_file_location("standalone_{name}", {path!r} + "/parsers/{name}.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import common
assert module.ParseError is common.ParseError
parsers = [n for n in dir(module) if n.startswith("parse_")]
assert parsers, "no parse_ functions"
print(",".join(parsers))
"""


@pytest.mark.parametrize("name", [p.stem for p in sorted((MODULE_UTILS / "parsers").glob("[a-z]*.py"))])
def test_parser_module_imports_standalone(name, tmp_path):
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(path=str(MODULE_UTILS), name=name)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip()
