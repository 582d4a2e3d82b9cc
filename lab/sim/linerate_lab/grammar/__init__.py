"""The host tools' grammars, as their own sources define them, pinned per release.

The tables (``*.json`` beside this file) were extracted from the upstream
sources by ``lab/grammar_extract.py``; each file's ``_source`` names the
repository, file and licence, and each version its tag, commit and line
ranges. The simulated tools parse argv with them, so an option the real
tool does not have is refused here as it is on hardware.

``getopt_long`` follows glibc's (posix/getopt.c, glibc >= 2.26): argv is
permuted (operands may come anywhere), ``--name=value`` or ``--name value``,
an unambiguous prefix of a long name is that option, ``--`` ends options,
and the messages are glibc's. ``long_only`` is getopt_long_only (a single
dash may start a long option; mstflint's cmdparser and opensm use it).
"""

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
_CACHE = {}


def table(tool):
    """The extracted data of ``tool`` (perftest, nccl_tests, mlnx_qos, mlxconfig, mlxfwreset, mlxlink, opensm)."""
    if tool not in _CACHE:
        with open(os.path.join(HERE, f"{tool}.json")) as f:
            _CACHE[tool] = json.load(f)
    return _CACHE[tool]


def version_key(text):
    """'24.10.0-0.65.g9093bae.2410114' -> (24, 10, 0, 0, 65); 'v2.13.11' -> (2, 13, 11)."""
    return tuple(int(x) for x in re.findall(r"\d+", str(text).split(".g")[0].lstrip("v"))[:5])


def pick(versions, installed):
    """The newest extracted tag not newer than ``installed`` (a package or binary version).

    Raises GrammarError when every extracted tag is newer: nothing here says
    what that older release accepts.
    """
    want = version_key(installed)
    best = None
    for tag in versions:
        k = version_key(tag)
        if k <= want and (best is None or k > version_key(best)):
            best = tag
    if best is None:
        raise GrammarError(f"no grammar extracted for version {installed!r} (extracted: {', '.join(versions)}); run lab/grammar_extract.py with an older tag")
    return best


class GrammarError(Exception):
    """The lab has no table for what was asked: a build error, not a tool's refusal."""


class GetoptError(Exception):
    """What getopt_long printed on stderr; ``opt`` is the option character it returned ('?' or ':')."""

    def __init__(self, message, opt="?"):
        super().__init__(message)
        self.message = message
        self.opt = opt


class Refused(Exception):
    """A tool refused its command line: ``lines``, what it printed, in order (the first is the message)."""

    def __init__(self, lines):
        super().__init__(lines[0])
        self.lines = lines


def parse_optstring(optstring):
    """'t:g:hG:' -> {'t': 1, 'g': 1, 'h': 0, 'G': 1} (2 for '::', an optional argument)."""
    out, i = {}, 0
    s = optstring.lstrip("+-:")
    while i < len(s):
        c = s[i]
        n = 0
        if s[i + 1 : i + 3] == "::":
            n, i = 2, i + 3
        elif s[i + 1 : i + 2] == ":":
            n, i = 1, i + 2
        else:
            i += 1
        out[c] = n
    return out


def getopt_long(prog, argv, optstring, longopts, long_only=False):
    """Parse ``argv`` (without argv[0]) as glibc getopt_long does.

    ``longopts``: [{"name", "has_arg" (0/1/2), "short" (the char it returns, or None)}].
    Returns ([(key, value)], operands): key is the short character, or
    ``--name`` for a long option without one. Raises GetoptError with glibc's
    message at the first option it refuses (the tools stop there too).
    """
    shorts = parse_optstring(optstring)
    opts, operands, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            operands += argv[i + 1 :]
            break
        single = long_only and a.startswith("-") and not a.startswith("--") and len(a) > 1 and (len(a) > 2 or a[1] not in shorts)
        if a.startswith("--") or single:
            dashes = "--" if a.startswith("--") else "-"
            name, eq, value = a[len(dashes) :].partition("=")
            try:
                o = _long_match(name, longopts)
            except GetoptError as e:
                raise GetoptError(e.message.format(prog=prog, dashes=dashes, text=a[len(dashes) :])) from None
            if o is None and not (single and name[:1] in shorts):
                # glibc names what followed the dashes, '=value' included
                raise GetoptError(f"{prog}: unrecognized option '{a}'")
            if o is not None:
                if eq and o["has_arg"] == 0:
                    raise GetoptError(f"{prog}: option '{dashes}{o['name']}' doesn't allow an argument")
                if not eq and o["has_arg"] == 1:
                    if i + 1 >= len(argv):
                        raise GetoptError(f"{prog}: option '{dashes}{o['name']}' requires an argument")
                    i += 1
                    value = argv[i]
                key = o.get("short") or "--" + o["name"]
                opts.append((key, value if (eq or o["has_arg"] == 1) else None))
                i += 1
                continue
            # getopt_long_only: no long option of that name, the first letter is a short option
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                if c not in shorts or c in ":;":
                    raise GetoptError(f"{prog}: invalid option -- '{c}'")
                if shorts[c] == 0:
                    opts.append((c, None))
                    j += 1
                    continue
                rest = a[j + 1 :]
                if rest:
                    opts.append((c, rest))
                elif shorts[c] == 2:
                    opts.append((c, None))
                else:
                    if i + 1 >= len(argv):
                        raise GetoptError(f"{prog}: option requires an argument -- '{c}'")
                    i += 1
                    opts.append((c, argv[i]))
                break
            i += 1
            continue
        operands.append(a)
        i += 1
    return opts, operands


def _long_match(name, longopts):
    exact = [o for o in longopts if o["name"] == name]
    if exact:
        return exact[0]
    pref = [o for o in longopts if o["name"].startswith(name)] if name else []
    if len(pref) == 1:
        return pref[0]
    if len(pref) > 1:
        # glibc: prefixes of several options that are all the same option are not ambiguous
        if len({(o["has_arg"], o.get("short"), o["name"] if not o.get("short") else "") for o in pref}) == 1:
            return pref[0]
        names = " ".join(f"'{{dashes}}{o['name']}'" for o in pref)
        raise GetoptError(f"{{prog}}: option '{{dashes}}{{text}}' is ambiguous; possibilities: {names}")
    return None


def canonical(opts, longopts):
    """[(key, value)] with each short key replaced by ``--<long name>`` where the table has one."""
    by_short = {o["short"]: o["name"] for o in longopts if o.get("short")}
    return [(("--" + by_short[k]) if k in by_short else k, v) for k, v in opts]


# ------------------------------------------------------------------ perftest

PERFTEST_INVALID = (" Invalid Command or flag.", " Please check command line and run again.")
PERFTEST_PARSER_FAILED = " Parser function exited with Error"


def perftest_grammar(version):
    t = table("perftest")
    return t["versions"][pick(t["versions"], version)]


def perftest_parse(prog, argv, version, kind="bw"):
    """(opts, operands) as perftest ``version`` parses ``argv``; PerftestRefused with its stderr lines.

    ``kind``: 'bw' or 'lat' (the test's tst: -q/-b/-N/--run_infinitely are BW only, -C/-H/-U latency only).
    Options behind a build condition (HAVE_*) count as built in.
    """
    g = perftest_grammar(version)
    try:
        opts, operands = getopt_long(prog, argv, g["optstring"], g["long"])
    except GetoptError as e:
        # glibc's message, then parser()'s default: branch, then main()'s line (write_bw.c)
        raise PerftestRefused([e.message, *PERFTEST_INVALID, "", PERFTEST_PARSER_FAILED]) from None
    seen = set()
    for key, value in opts:
        if key in seen:
            shown = f"-{key}" if len(key) == 1 else key[2:]
            raise PerftestRefused([f" Duplicated argument: {shown} ", PERFTEST_PARSER_FAILED])
        seen.add(key)
        spec = g["int_args"].get(key)
        if spec and not re.fullmatch(r"[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", value or ""):
            raise PerftestRefused([f" {spec['name']} argument {value} should be {spec['type']}", PERFTEST_PARSER_FAILED])
        if spec and spec["check"] == "CHECK_VALUE_POSITIVE" and int(value, 0) <= 0:
            raise PerftestRefused([f" {spec['name']} must be positive", PERFTEST_PARSER_FAILED])
        k = g["test_kind"].get(key)
        if k and k["only"] != kind:
            raise PerftestRefused([k["message"], PERFTEST_PARSER_FAILED])
    if len(operands) > 1:
        # parser(): optind == argc - 1 is the server name; more operands are refused
        raise PerftestRefused([" Invalid Command line. Please check command rerun ", PERFTEST_PARSER_FAILED])
    return opts, operands


class PerftestRefused(Refused):
    """perftest's parser() refused the command line: what it printed, then PERFTEST_PARSER_FAILED."""


# ------------------------------------------------------------------ nccl-tests


def nccl_tests_grammar(version):
    """(tag, table, version entry) of the newest extracted nccl-tests release not newer than ``version``."""
    t = table("nccl_tests")
    tag = pick(t["versions"], version)
    entry = t["versions"][tag]
    return tag, t["tables"][entry["table"]], entry


def nccl_tests_usage(prog, version):
    _tag, tab, _entry = nccl_tests_grammar(version)
    return f"USAGE: {prog} \n\t" + "".join(tab["usage"])


def nccl_tests_parse(prog, argv, version):
    """(opts, operands); NcclTestsUsage when the binary would print its usage and exit 0 instead of running."""
    _tag, tab, _entry = nccl_tests_grammar(version)
    try:
        opts, operands = getopt_long(prog, argv, tab["optstring"], tab["long"])
    except GetoptError as e:
        # common.cu: case 'h': default: if (c != 'h') printf("invalid option '%c'\n", c); usage; return 0
        raise NcclTestsUsage(e.message, f"invalid option '{e.opt}'\n" + nccl_tests_usage(prog, version)) from None
    if any(k == "h" for k, _ in opts):
        raise NcclTestsUsage(None, nccl_tests_usage(prog, version))
    return opts, operands


class NcclTestsUsage(Exception):
    """stderr (glibc's message or None) and stdout (the usage) of a run that prints its usage and exits 0."""

    def __init__(self, stderr, stdout):
        super().__init__(stderr or "usage")
        self.stderr = stderr
        self.stdout = stdout


def nccl_tests_has(version, option):
    """Whether nccl-tests ``version`` has the long option ``option`` (e.g. 'output_file' = -J)."""
    _tag, tab, _entry = nccl_tests_grammar(version)
    return any(o["name"] == option for o in tab["long"])


def nccl_tests_header(version):
    """The '# nccl-tests version ...' PRINT format of that release, or None (printed from 2.17.4 on)."""
    _tag, _tab, entry = nccl_tests_grammar(version)
    return (entry.get("version_header") or {}).get("format")


# ------------------------------------------------------------------ scripts: mlnx_qos (optparse), mlxfwreset (argparse)


def mlnx_qos_options(version):
    t = table("mlnx_qos")
    return t["versions"][pick(t["versions"], version)]


def mlxfwreset_options(version):
    t = table("mlxfwreset")
    return t["versions"][pick(t["versions"], version)]


# ------------------------------------------------------------------ mlxlink (cmdparser: getopt_long_only)


def mlxlink_parse(argv, version):
    """(opts, operands) as MFT/mstflint ``version``'s mlxlink parses ``argv``; MlxlinkRefused with its lines.

    cmdparser/my_getopt.c prints the old glibc form (a backquote) and
    mlxlink_main.cpp then prints '-E- failed to parse arguments. Bad input parameter' (exit 1).
    """
    t = table("mlxlink")
    opts_t = t["versions"][pick(t["versions"], version)]["options"]
    optstring = "".join(o["short"] + (":" if o["has_arg"] else "") for o in opts_t if o.get("short"))
    try:
        return getopt_long("mlxlink", argv, optstring, opts_t, long_only=True)
    except GetoptError as e:
        m = re.match(r"mlxlink: unrecognized option '(.*)'$", e.message)
        first = f"mlxlink: unrecognized option `{m.group(1)}'" if m else e.message
        raise MlxlinkRefused([first, "-E- failed to parse arguments. Bad input parameter"]) from None


class MlxlinkRefused(Refused):
    """mlxlink's command parser refused the command line: getopt's line, then mlxlink's -E- line."""


# ------------------------------------------------------------------ mlxconfig parameter database


def mlxconfig_params(version):
    t = table("mlxconfig")
    return t["versions"][pick(t["versions"], version)]["params"]


def mlxconfig_param(name, version):
    """(database entry, port) for an mlxconfig name as ``set`` takes it (LINK_TYPE_P1 -> LINK_TYPE, 1).

    None when the database does not know it (mlxconfig: 'Unknown Parameter: NAME').
    """
    params = mlxconfig_params(version)
    m = re.fullmatch(r"(.+)_P(\d+)", name)
    if m and m.group(1) in params and params[m.group(1)]["class"] == 1:
        return params[m.group(1)], int(m.group(2))
    p = params.get(name)
    if p is not None and p["class"] != 1:
        return p, None
    return None


def mlxconfig_value_ok(entry, text):
    """Whether ``text`` is a value mlxconfig accepts for the parameter ``entry`` (enum name or number, bool, int)."""
    text = str(text)
    if entry["type"] == "ENUM":
        names = {k.lower(): v for k, v in entry["enum"].items()}
        if text.lower() in names:
            return True
        try:
            return int(text, 0) in names.values()
        except ValueError:
            return False
    if entry["type"] == "BOOL":
        return text.lower() in ("true", "false", "0", "1")
    if entry["type"] in ("UNSIGNED", "INTEGER"):
        try:
            n = int(text, 0)
        except ValueError:
            return False
        bits = entry.get("bits") or 32
        lo = entry.get("min", 0 if entry["type"] == "UNSIGNED" else -(1 << (bits - 1)))
        hi = entry.get("max", (1 << bits) - 1 if entry["type"] == "UNSIGNED" else (1 << (bits - 1)) - 1)
        return lo <= n <= hi
    return True


# ------------------------------------------------------------------ opensm


def opensm_conf_keys(version):
    t = table("opensm")
    return set(t["versions"][pick(t["versions"], version)]["conf_keys"])


def opensm_options(version):
    t = table("opensm")
    return t["versions"][pick(t["versions"], version)]
