#!/usr/bin/env python3
"""Re-derive the host tools' grammar tables (lab/sim/linerate_lab/grammar/*.json)
from the real tools' own sources, pinned per release tag.

The committed JSON is what the simulators and the unit tests read (CI reaches
no GitHub); this script is how it was made and how to refresh it. Run it on
bare git mirrors of the upstream repositories:

    python3 lab/grammar_extract.py --mirrors /work/.mirror

expects <mirrors>/<owner>+<name>/repo (git dirs) for linux-rdma/perftest,
NVIDIA/nccl-tests, Mellanox/mlnx-tools, Mellanox/mstflint and linux-rdma/opensm.
Only facts are extracted (option names, whether they take an argument,
parameter names, types and enumerations, with file and line); no code is
copied. Licences: perftest, mlnx-tools, mstflint and opensm are dual
GPL-2.0 / BSD (OpenIB.org BSD); nccl-tests is BSD-3-Clause.
"""

import argparse
import ast
import json
import os
import re
import sqlite3
import subprocess
import tempfile

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sim", "linerate_lab", "grammar")

PERFTEST_TAGS = ["23.10.0-0.29", "24.10.0-0.66", "26.04.17"]
NCCL_TESTS_FIRST = (2, 13, 0)
MLNX_TOOLS_TAGS = ["v23.10.0", "v24.10.0", "v2607.0.6"]
MSTFLINT_TAGS = ["v4.26.0-1", "v4.30.0-1", "v4.36.0-1"]
OPENSM_TAGS = ["3.3.23", "3.3.24"]


def git(repo, *args, text=True):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=text).stdout


def show(repo, tag, path, text=True):
    return git(repo, "show", f"{tag}:{path}", text=text)


def commit(repo, tag):
    return git(repo, "rev-list", "-n", "1", tag).strip()


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


# ------------------------------------------------------------------ getopt_long tables

LONG_C = re.compile(
    r'\{\s*\.name\s*=\s*"([^"]+)"\s*,\s*\.has_arg\s*=\s*(\d)\s*,\s*(?:\.flag\s*=\s*&\w+\s*,\s*)?'
    r"\.val\s*=\s*('.'|\d+)\s*\}"
)
COND = re.compile(r"^\s*#\s*(if|ifdef|if defined|endif|else)\b(.*)$")


def perftest(repo):
    path = "src/perftest_parameters.c"
    out = {
        "_source": {
            "repo": "linux-rdma/perftest",
            "file": path,
            "licence": "GPL-2.0 or BSD (COPYING)",
            "what": "getopt_long long_options[] and optstring of parser(); per-option checks from its "
            "switch (case lines); messages from the default: branch and write_bw.c main()",
        },
        "versions": {},
    }
    for tag in PERFTEST_TAGS:
        src = show(repo, tag, path)
        start = src.index("long_options[] = {")
        end = src.index("{0}", start)
        block = src[start:end]
        longs, cond = [], []
        for raw in block.splitlines():
            m = COND.match(raw)
            if m:
                kind = m.group(1)
                if kind.startswith("if"):
                    cond.append((m.group(1) + m.group(2)).strip())
                elif kind == "endif" and cond:
                    cond.pop()
                continue
            lm = LONG_C.search(raw)
            if lm:
                val = lm.group(3)
                longs.append(
                    {
                        "name": lm.group(1),
                        "has_arg": int(lm.group(2)),
                        "short": val[1] if val.startswith("'") else None,
                        "build_condition": cond[-1] if cond else None,
                    }
                )
        gm = re.search(r'getopt_long\(argc,\s*argv,\s*"([^"]+)"', src[end:])
        optstring = gm.group(1)
        # integer-valued short options: CHECK_VALUE*(field,type,[min,max,]"Name",...)
        ints = {}
        for cm in re.finditer(
            r"case '(.)':\s*CHECK_VALUE(\w*)\(\s*user_param->\w+\s*,\s*(\w+)\s*,"
            r"(?:[^,\"]+,[^,\"]+,)?\s*\"([^\"]+)\"",
            src,
        ):
            ints[cm.group(1)] = {"type": cm.group(3), "name": cm.group(4), "check": "CHECK_VALUE" + cm.group(2), "line": line_of(src, cm.start())}
        # test-kind restrictions inside a case: "if (user_param->tst == LAT)" / "!= BW" / "!= LAT"
        kinds = {}
        for cm in re.finditer(r"case '(.)':(.*?)(?=\n\s*case '|\n\s*default:)", src, re.S):
            body = cm.group(2)
            rm = re.search(r"if \(user_param->tst (==|!=) (BW|LAT)\)\s*\{\s*fprintf\(stderr,\s*\"([^\"]+)\"", body)
            if rm:
                bw_only = (rm.group(1), rm.group(2)) in (("!=", "BW"), ("==", "LAT"))
                kinds[cm.group(1)] = {"only": "bw" if bw_only else "lat", "message": rm.group(3).rstrip("\\n"), "line": line_of(src, cm.start())}
        for name in ("run_infinitely",):
            rm = re.search(r"(run_infinitely exists only in BW tests[^\"]*)", src)
            if rm:
                kinds["--" + name] = {"only": "bw", "message": " " + rm.group(1).rstrip("\\n").strip(), "line": line_of(src, rm.start())}
        dflt = src.index("Invalid Command or flag", end)
        out["versions"][tag] = {
            "commit": commit(repo, tag),
            "long_options_lines": f"{line_of(src, start)}-{line_of(src, end)}",
            "getopt_line": line_of(src, end + gm.start()),
            "default_branch_line": line_of(src, dflt),
            "optstring": optstring,
            "long": longs,
            "int_args": ints,
            "test_kind": kinds,
        }
    return out


def nccl_tests(repo):
    tags = [t for t in git(repo, "tag").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    tags = sorted(tags, key=lambda t: tuple(int(x) for x in t[1:].split(".")))
    tags = [t for t in tags if tuple(int(x) for x in t[1:].split(".")) >= NCCL_TESTS_FIRST]
    out = {
        "_source": {
            "repo": "NVIDIA/nccl-tests",
            "file": "src/common.cu (longopts[], getopt_long optstring, usage printf); src/util.cu or src/common.cu (version header PRINT)",
            "licence": "BSD-3-Clause (LICENSE.txt)",
            "what": "per release tag; an unknown option: glibc getopt_long prints its message on "
            "stderr, returns '?', the default: branch prints \"invalid option '?'\" and the "
            "usage on stdout and main() returns 0",
        },
        "tables": [],
        "versions": {},
    }
    seen = {}
    for tag in tags:
        src = show(repo, tag, "src/common.cu")
        start = src.index("longopts[] = {")
        end = src.index("{}", start)
        longs = [
            {"name": m.group(1), "has_arg": 1 if m.group(2) == "required_argument" else (2 if m.group(2) == "optional_argument" else 0), "short": m.group(3)}
            for m in re.finditer(r'\{"(\w+)",\s*(\w+),\s*0,\s*\'(.)\'\}', src[start:end])
        ]
        gm = re.search(r'getopt_long\(argc,\s*argv,\s*"([^"]+)"', src[end:])
        um = re.search(r'printf\("USAGE: %s \\n\\t"(.*?),\s*(?:basename\(argv\[0\]\)|programName)\)', src, re.S)
        usage, skip = [], False  # the #if branch of each alternative (the newest NCCL's text)
        for line in um.group(1).splitlines():
            line = line.strip()
            if line.startswith("#"):
                skip = line.startswith(("#elif", "#else"))
                continue
            if not skip:
                usage += [x.replace("\\n", "\n").replace("\\t", "\t") for x in re.findall(r'"((?:[^"\\]|\\.)*)"', line)]
        header = None
        for f in ("src/util.cu", "src/common.cu"):
            try:
                body = show(repo, tag, f)
            except subprocess.CalledProcessError:
                continue
            hm = re.search(r'^\s*PRINT\("(# nccl-tests version %s[^"]*)"', body, re.M)
            if hm:
                header = {"format": hm.group(1).replace("\\n", ""), "file": f, "line": line_of(body, hm.start())}
                break
        table = {"optstring": gm.group(1), "long": longs, "usage": usage}
        key = json.dumps(table, sort_keys=True)
        if key not in seen:
            seen[key] = len(out["tables"])
            out["tables"].append(table)
        out["versions"][tag[1:]] = {
            "commit": commit(repo, tag),
            "table": seen[key],
            "longopts_lines": f"{line_of(src, start)}-{line_of(src, end)}",
            "getopt_line": line_of(src, end + gm.start()),
            "usage_line": line_of(src, um.start()),
            "version_header": header,
        }
    return out


# ------------------------------------------------------------------ optparse / argparse scripts (mlnx-tools, mstflint)


def _calls(tree, method):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
            yield node


def _const(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _option_calls(repo, tag, path, method):
    """(source, [(call, flags)]) of ``path`` at ``tag``: each ``method`` call (optparse's add_option,
    argparse's add_argument) with its positional arguments' literal values (None where not literal)."""
    src = show(repo, tag, path)
    return src, [(call, [_const(a) for a in call.args]) for call in _calls(ast.parse(src), method)]


def mlnx_qos(repo):
    path = "python/mlnx_qos"
    out = {
        "_source": {
            "repo": "Mellanox/mlnx-tools",
            "file": path,
            "licence": "CPL-1.0 / BSD / GPL-2.0 (file header)",
            "what": "optparse OptionParser add_option() calls: flags, dest, action, metavar",
        },
        "versions": {},
    }
    for tag in MLNX_TOOLS_TAGS:
        src, calls = _option_calls(repo, tag, path, "add_option")
        opts = [
            {"flags": flags, **{k.arg: _const(k.value) for k in call.keywords if k.arg in ("dest", "action", "metavar", "default")}, "line": call.lineno}
            for call, flags in calls
        ]
        pm = re.search(r"OptionParser\(([^)]*)\)", src)
        out["versions"][tag] = {"commit": commit(repo, tag), "parser": pm.group(1), "parser_line": line_of(src, pm.start()), "options": opts}
    return out


def mlxfwreset(repo):
    path = "small_utils/mstfwreset.py"
    out = {
        "_source": {
            "repo": "Mellanox/mstflint",
            "file": path + " (MFT ships the same tool as mlxfwreset); levels/types: small_utils/mlxfwresetlib/cmd_reg_mfrl.py reset_levels_db/reset_types_db",
            "licence": "GPL-2.0 or BSD (mstflint COPYING)",
            "what": "argparse add_argument() calls",
        },
        "versions": {},
    }
    for tag in MSTFLINT_TAGS:
        _src, calls = _option_calls(repo, tag, path, "add_argument")
        opts = []
        for call, flags in calls:
            if not flags or flags[0] is None:
                continue
            kw = {}
            for k in call.keywords:
                if k.arg in ("dest", "action", "nargs", "required"):
                    kw[k.arg] = _const(k.value)
                elif k.arg == "type":
                    kw["type"] = ast.unparse(k.value)
                elif k.arg == "choices":
                    kw["choices"] = _const(k.value) if _const(k.value) is not None else ast.unparse(k.value)
            opts.append({"flags": flags, **kw, "line": call.lineno})
        mfrl = show(repo, tag, "small_utils/mlxfwresetlib/cmd_reg_mfrl.py")
        consts = {}
        for m in re.finditer(r"^\s*([\w, ]+?)\s*=\s*([\d, ]+)\s*$", mfrl, re.M):
            names, values = [x.strip() for x in m.group(1).split(",")], [x.strip() for x in m.group(2).split(",")]
            if len(names) == len(values) and all(v.isdigit() for v in values):
                consts.update({n: int(v) for n, v in zip(names, values)})
        levels = [consts[m.group(1)] for m in re.finditer(r"\{'level':\s*(\w+)", mfrl)]
        types = [consts[m.group(1)] for m in re.finditer(r"\{'type':\s*(\w+)", mfrl)]
        for o in opts:
            if o.get("choices") == "CmdRegMfrl.reset_levels()":
                o["choices"] = levels
            elif o.get("choices") == "CmdRegMfrl.reset_types()":
                o["choices"] = types
            elif o.get("choices") == "[SyncOwner.TOOL, SyncOwner.DRIVER]":
                o["choices"] = [0, 1]
        out["versions"][tag] = {"commit": commit(repo, tag), "options": opts}
    return out


def mlxlink(repo):
    out = {
        "_source": {
            "repo": "Mellanox/mstflint",
            "file": "mlxlink/modules/mlxlink_ui.cpp initCmdParser() AddOptions "
            "+ #defines in mlxlink/modules/mlxlink_commander.h; parsing: cmdparser/cmdparser.cpp "
            "(getopt_long_only), error: mlxlink_ui.cpp run() + mlxlink_main.cpp",
            "licence": "GPL-2.0 or BSD (mstflint COPYING)",
        },
        "versions": {},
    }
    for tag in MSTFLINT_TAGS:
        ui = show(repo, tag, "mlxlink/modules/mlxlink_ui.cpp")
        defs = {}
        for f in ("mlxlink/modules/mlxlink_commander.h", "mlxlink/modules/mlxlink_ui.h"):
            for m in re.finditer(r'#define\s+(\w+)\s+("[^"]*"|\'.\')', show(repo, tag, f)):
                defs[m.group(1)] = m.group(2)[1:-1]
        opts = []
        for m in re.finditer(r'AddOptions\(\s*(\w+)\s*,\s*(\w+)\s*,\s*"([^"]*)"', ui):
            name, short = defs.get(m.group(1)), defs.get(m.group(2))
            if name is None:
                continue
            opts.append({"name": name, "short": None if short in (None, " ") else short, "has_arg": 1 if m.group(3) else 0, "line": line_of(ui, m.start())})
        out["versions"][tag] = {"commit": commit(repo, tag), "options": opts}
    return out


def mlxconfig(repo):
    out = {
        "_source": {
            "repo": "Mellanox/mstflint",
            "file": "mlxconfig/mlxconfig_dbs/mlxconfig_host.db (SQLite: params JOIN tlvs)",
            "licence": "GPL-2.0 or BSD (mstflint COPYING)",
            "what": "mlxconfig names, type, enum textual_values, min/max, TLV class; class 1 TLVs take "
            "the _P<port> suffix (mlxcfg_tlv.cpp isPortTargetClass), class 9 _M<module>; an "
            "unknown name: 'Unknown Parameter: NAME' (mlxcfg_db_manager.cpp), a known one the "
            "device lacks: 'The Device doesn't support NAME parameter' "
            "(mlxcfg_generic_commander.cpp). The database has no ConnectX-generation column: "
            "which parameters a card has is what its firmware reports.",
        },
        "versions": {},
    }
    for tag in MSTFLINT_TAGS:
        data = show(repo, tag, "mlxconfig/mlxconfig_dbs/mlxconfig_host.db", text=False)
        with tempfile.NamedTemporaryFile(suffix=".db") as f:
            f.write(data if isinstance(data, bytes) else data.encode("latin-1"))
            f.flush()
            db = sqlite3.connect(f.name)
            rows = db.execute(
                "SELECT p.mlxconfig_name, p.type, p.textual_values, p.size, p.min_val, p.max_val, "
                "p.array_length, t.class, t.mlxconfig_name FROM params p JOIN tlvs t "
                "ON p.tlv_name = t.name WHERE p.mlxconfig_name IS NOT NULL AND p.mlxconfig_name != '' "
                "AND t.target IN ('NIC', 'NIC-internal', 'EXP_ROM') ORDER BY p.mlxconfig_name"
            ).fetchall()
            db.close()
        params = {}
        for name, typ, tv, size, lo, hi, arr, cls, tlv in rows:
            p = {"type": typ, "bits": _bits(size), "class": cls, "tlv": tlv}
            if tv:
                p["enum"] = {k.strip(): int(v, 0) for k, v in (x.split("=") for x in tv.split(","))}
            if arr:
                p["array_length"] = arr
            if lo and re.fullmatch(r"-?\d+|0x[0-9a-fA-F]+", lo):
                p["min"] = int(lo, 0)
            if hi and re.fullmatch(r"-?\d+|0x[0-9a-fA-F]+", hi):
                p["max"] = int(hi, 0)
            params[name] = p
        out["versions"][tag] = {"commit": commit(repo, tag), "params": params}
    return out


def _bits(size):
    m = re.fullmatch(r"0x([0-9a-fA-F]+)\.(\d+)", size or "")
    return int(m.group(1), 16) * 8 + int(m.group(2)) if m else None


def opensm(repo):
    out = {
        "_source": {
            "repo": "linux-rdma/opensm",
            "file": "opensm/osm_subnet.c opt_tbl[] (opensm.conf keys); opensm/main.c long_option[] and getopt_long_only optstring (command line)",
            "licence": "GPL-2.0 or BSD (COPYING)",
        },
        "versions": {},
    }
    for tag in OPENSM_TAGS:
        sub = show(repo, tag, "opensm/osm_subnet.c")
        start = sub.index("opt_tbl[] = {")
        end = sub.index("{0}", start)
        keys = re.findall(r'\{\s*"(\w+)"\s*,', sub[start:end])
        main = show(repo, tag, "opensm/main.c")
        ls = main.index("long_option[] = {")
        le = main.index("{NULL, 0, NULL, 0}", ls)
        longs = [
            {"name": m.group(1), "has_arg": int(m.group(2)), "short": m.group(3)}
            for m in re.finditer(r'\{"([\w-]+)",\s*(\d),\s*NULL,\s*\'(.)\'\}', main[ls:le])
        ]
        gm = re.search(r'const char \*const short_option\s*=\s*"([^"]+)"', main, re.S)
        out["versions"][tag] = {
            "commit": commit(repo, tag),
            "conf_keys_lines": f"{line_of(sub, start)}-{line_of(sub, end)}",
            "conf_keys": keys,
            "long_option_lines": f"{line_of(main, ls)}-{line_of(main, le)}",
            "optstring": gm.group(1) if gm else None,
            "long": longs,
        }
    return out


TOOLS = {
    "perftest": ("linux-rdma+perftest", perftest),
    "nccl_tests": ("NVIDIA+nccl-tests", nccl_tests),
    "mlnx_qos": ("Mellanox+mlnx-tools", mlnx_qos),
    "mlxfwreset": ("Mellanox+mstflint", mlxfwreset),
    "mlxlink": ("Mellanox+mstflint", mlxlink),
    "mlxconfig": ("Mellanox+mstflint", mlxconfig),
    "opensm": ("linux-rdma+opensm", opensm),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("tools", nargs="*", default=sorted(TOOLS))
    a = ap.parse_args()
    for tool in a.tools:
        mirror, fn = TOOLS[tool]
        data = fn(os.path.join(a.mirrors, mirror, "repo"))
        data["_source"]["extracted_by"] = "lab/grammar_extract.py"
        with open(os.path.join(OUT, f"{tool}.json"), "w") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
        print(tool, "->", os.path.join(OUT, f"{tool}.json"))


if __name__ == "__main__":
    main()
