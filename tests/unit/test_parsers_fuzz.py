"""Property-based tests: every parse_<tool> returns a result or raises ParseError, nothing else.

Inputs are real-format fixtures (tests/unit/parser_registry.py lists, per
parser, the fixtures it reads) mutated the ways captured output gets
mangled: truncated, lines dropped, duplicated or swapped, stderr lines
interleaved, CRLF line ends, tabs for spaces and back, non-ASCII and NUL
characters, numbers replaced by extreme or non-numbers, random lines.

Profiles (LINERATE_FUZZ_PROFILE): ``parsers`` (default, run by ``make
test``): 1,000 examples per parser, derandomized so a run is repeatable;
``fuzz`` (``make fuzz``): LINERATE_FUZZ_EXAMPLES (default 20,000) random
examples per parser. A failure prints the mutated text and the exception.
"""

import ast
import glob
import importlib
import os
import pathlib
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from parser_fixtures import FIXTURES, fixture
from parser_registry import PARSERS
from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError

MODULE_UTILS = pathlib.Path(__file__).resolve().parents[2] / "plugins" / "module_utils"
PACKAGE = "ansible_collections.linerate.fabric.plugins.module_utils."

_COMMON = dict(
    deadline=None, database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
)
settings.register_profile("parsers", max_examples=1000, derandomize=True, **_COMMON)
settings.register_profile("fuzz", max_examples=int(os.environ.get("LINERATE_FUZZ_EXAMPLES", "20000")), derandomize=False, **_COMMON)
PROFILE = settings.get_profile(os.environ.get("LINERATE_FUZZ_PROFILE", "parsers"))

# What a capture mixes into stdout: shell, ssh, locale, MPI and driver noise.
STDERR_LINES = (
    "bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)",
    "Warning: Permanently added '10.0.0.12' (ED25519) to the list of known hosts.",
    "libibverbs: Warning: couldn't load driver 'libhfi1verbs-rdmav34.so': cannot open shared object file",
    "ibwarn: [12345] mad_rpc_open_port: can't open UMAD port ((null):0)",
    "mlx5: node1: got completion with error:",
    "[1,0]<stderr>:--------------------------------------------------------------------------",
    "Connection to node2 closed.",
    "-E- Failed to open device",
    "Error: something went wrong",
    "# Out of bounds values : 3 FAILED",
    "NCCL WARN Call to ibv_create_qp failed",
    "   ",
)
ODD_CHARS = ("\u00e9", "\u2026", "\u00a0", "\ufffd", "\u4e2d", "\x00", "\u200b", "\t", "\r", '"', "'", "#", "[", "(")
ODD_NUMBERS = ("0", "-1", "99999999999999999999999", "1e309", "nan", "inf", "", "0x", "4294967296", "-0", "1.2.3")


def _lines(text):
    return text.split("\n")


KINDS = ("truncate", "drop", "duplicate", "swap", "stderr", "crlf", "tabs", "untab", "char", "number", "random_line", "strip_indent", "blank_out")
RANDOM_CHARS = "abcXYZ019 :#=-[](),.\"'\t\u00e9\u2026\x00"


def _mutate(rng, text):
    """Apply 1..4 mutations to ``text``, kinds and positions drawn from ``rng``.

    Hypothesis draws the fixture and the seed of ``rng``: two draws per
    example keep 1,000 examples per parser within the time ``make test``
    allows (hypothesis' own cost per draw dominates the parsers'). The
    falsifying example names the fixture and the seed, and the assertion
    message carries the mutated text itself.
    """
    for kind in [rng.choice(KINDS) for _ in range(rng.randint(1, 4))]:
        lines = _lines(text)
        index = rng.randrange(len(lines))
        if kind == "truncate":
            text = text[: rng.randrange(len(text) + 1)]
        elif kind == "drop":
            del lines[index]
            text = "\n".join(lines)
        elif kind == "duplicate":
            lines.insert(index, lines[index])
            text = "\n".join(lines)
        elif kind == "swap":
            other = rng.randrange(len(lines))
            lines[index], lines[other] = lines[other], lines[index]
            text = "\n".join(lines)
        elif kind == "stderr":
            lines.insert(index, rng.choice(STDERR_LINES))
            text = "\n".join(lines)
        elif kind == "crlf":
            text = text.replace("\n", "\r\n")
        elif kind == "tabs":
            lines[index] = re.sub(r" {2,}", "\t", lines[index])
            text = "\n".join(lines)
        elif kind == "untab":
            text = text.expandtabs(rng.choice((1, 4, 8)))
        elif kind == "char":
            line = lines[index]
            at = rng.randrange(len(line) + 1)
            lines[index] = line[:at] + rng.choice(ODD_CHARS) + line[at:]
            text = "\n".join(lines)
        elif kind == "number":
            numbers = list(re.finditer(r"\d+(?:\.\d+)?", text))
            if numbers:
                match = rng.choice(numbers)
                text = text[: match.start()] + rng.choice(ODD_NUMBERS) + text[match.end() :]
        elif kind == "random_line":
            lines.insert(index, "".join(rng.choice(RANDOM_CHARS) for _ in range(rng.randrange(60))))
            text = "\n".join(lines)
        elif kind == "strip_indent":
            lines[index] = lines[index].lstrip()
            text = "\n".join(lines)
        elif kind == "blank_out":
            lines[index] = ""
            text = "\n".join(lines)
    return text


def _fixtures(globs):
    names = []
    for pattern in globs:
        names += sorted(str(pathlib.Path(p).relative_to(FIXTURES)) for p in glob.glob(str(FIXTURES / pattern)))
    return list(dict.fromkeys(names))


def _function(module, name):
    return getattr(importlib.import_module(PACKAGE + module), name)


def _check(parser, text):
    try:
        parser(text)
    except ParseError as err:
        assert str(err).strip(), "ParseError without a message"
    except Exception as err:  # noqa: BLE001 - the property under test
        raise AssertionError("%s raised %s: %s\n--- input ---\n%r" % (parser.__name__, type(err).__name__, err, text)) from err


@pytest.mark.parametrize("module, name, globs", [(m, n, g) for m, n, *g in PARSERS], ids=["%s.%s" % (m, n) for m, n, *_ in PARSERS])
def test_parser_returns_a_result_or_parse_error_on_mutated_fixtures(module, name, globs):
    parser = _function(module, name)
    texts = [fixture(*path.split("/", 1)) for path in _fixtures(globs)]
    assert texts, "no fixture matches %s" % (globs,)

    @PROFILE
    @given(text=st.sampled_from(texts), seed=st.integers(0, 2**32 - 1))
    def run(text, seed):
        _check(parser, _mutate(random.Random(seed), text))

    run()


@pytest.mark.parametrize("module, name, globs", [(m, n, g) for m, n, *g in PARSERS], ids=["%s.%s" % (m, n) for m, n, *_ in PARSERS])
def test_parser_on_every_fixture_unmutated_and_degenerate_input(module, name, globs):
    parser = _function(module, name)
    for path in _fixtures(globs):
        _check(parser, fixture(*path.split("/", 1)))
    for text in (
        "",
        None,
        "\n",
        "\x00",
        "{",
        "[]",
        "{}",
        "null",
        "\ufeff",
        "#",
        "-" * 80,
        '{"results": 5}',
        '{"results": [1]}',
        '{"config": 5}',
        '{"a": [1, 2]}',
        '{"a": {"b": 1}}',
        '{"interfaceStatuses": []}',
        '{"swp1": {"link": []}}',
    ):
        _check(parser, text)


def _defined_parsers():
    found = set()
    for path in MODULE_UTILS.rglob("*.py"):
        module = ".".join(path.relative_to(MODULE_UTILS).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("parse_"):
                found.add((module, node.name))
            elif isinstance(node, ast.Assign):  # an alias (parse_x = parse_y) would be a parser too
                found.update((module, t.id) for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("parse_"))
    return found


def test_every_parser_is_registered_with_fixtures():
    registered = {(m, n) for m, n, *_ in PARSERS}
    missing = sorted(_defined_parsers() - registered)
    assert not missing, "add a line to tests/unit/parser_registry.py for: %s" % missing
    for module, name, *globs in PARSERS:
        assert _fixtures(globs), "%s.%s: no fixture matches %s" % (module, name, globs)
