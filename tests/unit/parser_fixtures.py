"""Shared helpers for the parser unit tests: import path and fixture loading.

The parsers are imported the way modules import them,
``ansible_collections.linerate.fabric.plugins.module_utils.<x>``, through the
repository's ``.collections`` symlink, so ParseError is the one class every
parser raises.
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"

if str(ROOT / ".collections") not in sys.path:
    sys.path.insert(0, str(ROOT / ".collections"))


def fixture(tool, name):
    """Text of ``tests/unit/fixtures/<tool>/<name>``."""
    return (FIXTURES / tool / name).read_text(encoding="utf-8")
