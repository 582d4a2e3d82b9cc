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


SOURCE_PREFIX = "#source:"


def fixture(tool, name):
    """Text of ``tests/unit/fixtures/<tool>/<name>``, without its source line.

    Fixtures copied from published real outputs start with one line
    ``#source: <URL> (what it is)``; it is documentation, not tool output,
    and is dropped here.
    """
    text = (FIXTURES / tool / name).read_text(encoding="utf-8")
    if text.startswith(SOURCE_PREFIX):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text


def fixture_source(tool, name):
    """The ``#source:`` line of a fixture (None for our own fixtures)."""
    first = (FIXTURES / tool / name).read_text(encoding="utf-8").split("\n", 1)[0]
    return first[len(SOURCE_PREFIX) :].strip() if first.startswith(SOURCE_PREFIX) else None
