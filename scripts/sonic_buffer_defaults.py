#!/usr/bin/env python3
"""Extract the lossless headroom of SONiC platforms from sonic-buildimage's own buffer defaults.

For each SKU below, reads from a bare git mirror of sonic-net/sonic-buildimage at one commit:

- ``device/<vendor>/<platform>/<hwsku>/pg_profile_lookup.ini``: the rows buffermgrd's static
  (traditional) model looks up per port speed and cable length (``speed cable size xon xoff threshold
  [xon_offset]``, sonic-swss cfgmgr/buffermgr.cpp readPgProfileLookupFile);
- ``buffers_defaults_t0.j2`` / ``buffers_defaults_t1.j2`` (and ``buffers_defaults_objects.j2`` where
  the SKU's template imports it): the default cable length per topology and the mode of
  ``ingress_lossless_pool`` (buffermgrd names the profile's threshold field ``<mode>_th``).

Symbolic links (SKUs share files) are followed inside the tree; each row keeps the path asked for, the
path it resolves to, the blob and the line it came from. Only numbers are extracted (Apache-2.0 data).
Writes the same table twice, for the two sides that may not import each other:

- ``plugins/module_utils/switch/sonic_buffer_data.py`` (what the intent checks and the templates read),
- ``lab/switchsim/sonic_buffer_defaults.json`` (what the lab's SONiC simulator models buffermgrd with).

    python3 scripts/sonic_buffer_defaults.py --git-dir /work/.mirror/sonic-net+sonic-buildimage/repo \\
        [--commit <sha>]
"""

import argparse
import json
import os
import posixpath
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY_OUT = os.path.join(ROOT, "plugins", "module_utils", "switch", "sonic_buffer_data.py")
JSON_OUT = os.path.join(ROOT, "lab", "switchsim", "sonic_buffer_defaults.json")
REPO = "sonic-net/sonic-buildimage"

# hwsku -> (device/<vendor>/<platform> directory, ASIC). The SKU is DEVICE_METADATA|localhost hwsku.
SKUS = {
    "ACS-MSN4600C": ("device/mellanox/x86_64-mlnx_msn4600c-r0", "Spectrum-3"),
    "ACS-MSN4700": ("device/mellanox/x86_64-mlnx_msn4700-r0", "Spectrum-3"),
    "ACS-SN5600": ("device/mellanox/x86_64-nvidia_sn5600-r0", "Spectrum-4"),
    "Mellanox-SN5600-V256": ("device/mellanox/x86_64-nvidia_sn5600-r0", "Spectrum-4"),
    "Arista-7060X6-64PE-O128S2": ("device/arista/x86_64-arista_7060x6_64pe", "Tomahawk 5"),
    "Arista-7060X6-64PE-B-O128": ("device/arista/x86_64-arista_7060x6_64pe_b", "Tomahawk 5"),
    "Arista-7060X6-64PE-B-P32O64": ("device/arista/x86_64-arista_7060x6_64pe_b", "Tomahawk 5"),
    "Arista-7060X6-64PE-B-P64": ("device/arista/x86_64-arista_7060x6_64pe_b", "Tomahawk 5"),
}
ROW = re.compile(r"^\s*(\d+)\s+(\d+m)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)(?:\s+(\d+))?\s*$")
DEFAULT_CABLE = re.compile(r"set\s+default_cable\s*=\s*'(\d+m)'")
POOL_MODE = re.compile(r'"ingress_lossless_pool"\s*:\s*\{.*?"mode"\s*:\s*"(\w+)"', re.S)


class Tree:
    """Files of one commit of a bare git directory, symbolic links followed."""

    def __init__(self, git_dir: str, commit: str) -> None:
        self.git_dir = git_dir
        self.commit = self._git("rev-parse", commit).strip()

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True, text=True).stdout

    def entry(self, path: str):
        """(mode, blob) of ``path`` as stored (a link is not followed), or None."""
        out = self._git("ls-tree", self.commit, "--", path)
        return tuple(out.split()[0:3:2]) if out else None

    def resolve(self, path: str, depth: int = 0) -> str | None:
        """``path`` with every symbolic link on the way followed, or None when it does not exist."""
        if depth > 16:
            raise RuntimeError(f"symbolic link loop at {path}")
        cur = ""
        for part in path.split("/"):
            cand = posixpath.join(cur, part) if cur else part
            ent = self.entry(cand)
            if ent is None:
                return None
            if ent[0] == "120000":
                target = self._git("cat-file", "-p", ent[1])
                cand = self.resolve(posixpath.normpath(posixpath.join(posixpath.dirname(cand), target)), depth + 1)
                if cand is None:
                    return None
            cur = cand
        return cur

    def read(self, path: str):
        """(text, resolved path, blob) of ``path``, or None."""
        real = self.resolve(path)
        if real is None:
            return None
        return self._git("show", f"{self.commit}:{real}"), real, self.entry(real)[1]


def lookup_rows(text: str) -> dict:
    """{speed: {cable: row}} of a pg_profile_lookup.ini; each row names its line (the file is the SKU's
    ``lookup``)."""
    rows = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = ROW.match(line)
        if not m:
            continue
        speed, cable, size, xon, xoff, th, xon_offset = m.groups()
        row = {"size": int(size), "xon": int(xon), "xoff": int(xoff), "threshold": int(th), "line": n}
        if xon_offset is not None:
            row["xon_offset"] = int(xon_offset)
        rows.setdefault(speed, {})[cable] = row
    return rows


def sku_entry(tree: Tree, hwsku: str, platform_dir: str, asic: str) -> dict:
    base = f"{platform_dir}/{hwsku}"
    got = tree.read(f"{base}/pg_profile_lookup.ini")
    if got is None:
        raise SystemExit(f"{hwsku}: {base}/pg_profile_lookup.ini is not in {REPO}@{tree.commit}")
    text, real, blob = got
    source = {"repo": REPO, "commit": tree.commit, "path": f"{base}/pg_profile_lookup.ini", "resolved": real, "blob": blob}
    rows = lookup_rows(text)
    if not rows:
        raise SystemExit(f"{hwsku}: {real} has no lossless rows (the SKU's lossless PGs have no lookup)")
    cables, mode, mode_from = {}, None, None
    for topo in ("t0", "t1"):
        got = tree.read(f"{base}/buffers_defaults_{topo}.j2")
        if got is None:
            continue
        m = DEFAULT_CABLE.search(got[0])
        if m:
            cables[topo] = m.group(1)
        pm = POOL_MODE.search(got[0])
        if pm and mode is None:
            mode, mode_from = pm.group(1), got[1]
    if mode is None:
        got = tree.read(f"{base}/buffers_defaults_objects.j2")
        pm = POOL_MODE.search(got[0]) if got else None
        if pm:
            mode, mode_from = pm.group(1), got[1]
    return {
        "platform": posixpath.basename(platform_dir),
        "asic": asic,
        "pool_mode": mode or "dynamic",
        "pool_mode_source": mode_from,
        "default_cable": cables,
        "lookup": source,
        "rows": rows,
    }


def render_py(table: dict, commit: str) -> str:
    """The table as a Python module: each lookup file once (several SKUs share one: a symbolic link in the
    tree), one lookup row a line, then one row per SKU naming its file; PLATFORM_BUFFERS joins them."""
    files: dict = {}
    for ent in table.values():
        files.setdefault(ent["lookup"]["resolved"], (ent["lookup"]["blob"], ent["rows"]))
    out = [
        '"""Lossless headroom per SONiC SKU, speed (Mb/s) and cable length: the rows of each platform\'s own',
        f"pg_profile_lookup.ini in {REPO} (commit {commit[:12]}), with the default",
        "cable length per topology and the ingress_lossless_pool mode of its buffers_defaults_*.j2.",
        "Generated by scripts/sonic_buffer_defaults.py (do not edit by hand): LOOKUP_FILES holds each file once",
        "(its blob, each row with its line there), SKUS one row per SKU naming the file asked for and the file",
        "it resolves to; PLATFORM_BUFFERS is the two joined per SKU.",
        'Apache-2.0 data (sonic-buildimage)."""',
        "from typing import Any, Dict",
        "",
        f"SOURCE_COMMIT = {commit!r}",
        f"REPO = {REPO!r}",
        "# resolved path of a pg_profile_lookup.ini -> its blob and rows {(speed Mb/s, cable): row}",
        "LOOKUP_FILES: Dict[str, Dict[str, Any]] = {",
    ]
    for path, (blob, rows) in sorted(files.items()):
        out += [f"    {path!r}: {{", f"        'blob': {blob!r},", "        'rows': {"]
        for speed in sorted(rows, key=int):
            for cable in sorted(rows[speed], key=lambda c: int(c[:-1])):
                row = dict(sorted(rows[speed][cable].items()))
                out.append(f"            ({int(speed)}, {cable!r}): {row!r},")
        out += ["        },", "    },"]
    out += [
        "}",
        "# hwsku -> its platform, ASIC, defaults and lookup file (path asked for, resolved: a key of LOOKUP_FILES)",
        "SKUS: Dict[str, Dict[str, Any]] = {",
    ]
    for sku, ent in sorted(table.items()):
        row = {k: v for k, v in ent.items() if k not in ("rows", "lookup")}
        row.update(path=ent["lookup"]["path"], resolved=ent["lookup"]["resolved"])
        out += [f"    {sku!r}: {{"] + [f"        {k!r}: {v!r}," for k, v in sorted(row.items())] + ["    },"]
    out += [
        "}",
        "PLATFORM_BUFFERS: Dict[str, Dict[str, Any]] = {",
        "    sku: dict({k: v for k, v in row.items() if k not in ('path', 'resolved')},",
        "              lookup={'repo': REPO, 'commit': SOURCE_COMMIT, 'path': row['path'], 'resolved': row['resolved'],",
        "                      'blob': LOOKUP_FILES[row['resolved']]['blob']},",
        "              rows=LOOKUP_FILES[row['resolved']]['rows'])",
        "    for sku, row in SKUS.items()}",
    ]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir", required=True, help="bare git directory of sonic-net/sonic-buildimage")
    ap.add_argument("--commit", default="HEAD")
    a = ap.parse_args(argv)
    tree = Tree(a.git_dir, a.commit)
    table = {sku: sku_entry(tree, sku, d, asic) for sku, (d, asic) in SKUS.items()}
    with open(PY_OUT, "w", encoding="utf-8") as f:
        f.write(render_py(table, tree.commit))
    with open(JSON_OUT, "w", encoding="utf-8") as f:
        json.dump(
            {
                "_about": "generated by scripts/sonic_buffer_defaults.py from " + REPO + "@" + tree.commit + "; do not edit by hand",
                "commit": tree.commit,
                "skus": table,
            },
            f,
            indent=1,
            sort_keys=True,
        )
        f.write("\n")
    print(f"{len(table)} SKUs from {REPO}@{tree.commit} -> {PY_OUT}, {JSON_OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
