"""The ib_write_bw check in the report: each test stored once (a row of RDMA_TEST_FIELDS), and what is
derived on read: the bandwidth matrix, the worst links, the failing links, the report's view of them.
Stdlib only, like report.py.
"""
import re
from collections import Counter
from operator import itemgetter


# server_device: the server's device where it is not the client's (the cross-rail round), else null;
# rows written before it have eight fields and read as same-rail.
RDMA_TEST_FIELDS = ("round", "client", "server", "device", "gbps", "code", "client_error", "server_error",
                    "server_device")

# The full pair matrix (client row x server column, per rail) is drawn up to
# this many nodes; above it the report shows the node x rail worst-link grid
# and the list of failing links only (a 256-node matrix is 65,536 cells a rail).
MATRIX_MAX_NODES = 32


# ---------------------------------------------------------------- ib_write_bw: each test stored once

def rdma_rows(evaluated):
    """Evaluated ib_write_bw tests (dicts with client/server = [node, device]) as rows of RDMA_TEST_FIELDS."""
    return [[t["round"], t["client"][0], t["server"][0], t["client"][1], t.get("gbps"), t.get("code"),
             t.get("client_error"), t.get("server_error"),
             t["server"][1] if t["server"][1] != t["client"][1] else None] for t in evaluated]


def _fields(row):
    """A stored row as (round, client, server, device, gbps, code, client_error, server_error, server_device)."""
    rnd, client, server, rail, gbps, code, cerr, serr = row[:8]
    return rnd, client, server, rail, gbps, code, cerr, serr, (row[8] if len(row) > 8 and row[8] else rail)


def rdma_check(evaluated, threshold, findings):
    """``checks.ib_write_bw``: each test once, as a row of ``test_fields``; a test passed when its code is null.

    The worst-link grid, the pair matrices, the failing links and the JUnit cases are derived from these
    rows when the report is rendered or read (rdma_tests, worst_links, bandwidth_matrix, to_junit).
    """
    rows = rdma_rows(evaluated)
    ok = sum(r[5] is None for r in rows)
    return {"passed": not findings, "threshold_gbps": threshold,
            "detail": f"{ok}/{len(rows)} links >= {threshold:g} Gb/s",
            "test_fields": list(RDMA_TEST_FIELDS), "tests": rows}


def _rows(check):
    """The rows of ``checks.ib_write_bw.tests`` (a schema-1 report's test dicts converted)."""
    tests = (check or {}).get("tests") or []
    return rdma_rows(tests) if isinstance(tests[0] if tests else None, dict) else tests


def rdma_tests(check):
    """The tests of ``checks.ib_write_bw`` as dicts, for readers of report.json:
    {round, client: [node, device], server: [node, device], gbps, ok, code, client_error, server_error}."""
    return [{"round": rnd, "client": [client, rail], "server": [server, sdev], "gbps": gbps, "ok": code is None,
             "code": code, "client_error": cerr, "server_error": serr}
            for rnd, client, server, rail, gbps, code, cerr, serr, sdev in map(_fields, _rows(check))]


def natural_key(s):
    """Sort key of a name in natural order: swp2 before swp10, Ethernet8 before Ethernet16, mlx5_2 before
    mlx5_10, node9 before node10 (the digits compare as numbers; what a person expects a port list to be)."""
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", str(s))]


_natural = natural_key


def _low_first(row):
    """Sort key of a test: no result lowest, then the lower Gb/s."""
    return -1.0 if row[4] is None else float(row[4])


def _worst_passing(passing):
    """{(node, rail): (row, peer)}: each endpoint's lowest passing test (the first of equals).

    The dicts are built by C loops: sorted highest first, a later (lower) row overwrites an earlier one."""
    ordered = sorted(reversed(passing), key=itemgetter(4), reverse=True)
    worst = {}
    for end, peer in ((1, 2), (2, 1)):
        side = dict(zip(zip(map(itemgetter(end), ordered), map(itemgetter(3), ordered)), ordered))
        for key, row in side.items():
            cur = worst.get(key)
            if cur is None or row[4] < cur[0][4]:
                worst[key] = (row, row[peer])
    return worst


def worst_links(rows):
    """The node x rail grid of the ib_write_bw tests (rows of RDMA_TEST_FIELDS): each endpoint's worst link.

    Returns ``{"rails": [...], "nodes": [...], "cells": {node: {rail: {gbps, ok, code, peer, tests, failing}}}}``:
    per node and rail the worst test the endpoint took part in (failing before passing, then the lowest
    Gb/s, no result lowest), its peer, how many tests it was in and how many of them failed.
    """
    rail_of = itemgetter(3)
    tests = Counter(zip(map(itemgetter(1), rows), map(rail_of, rows)))
    tests.update(zip(map(itemgetter(2), rows), map(rail_of, rows)))
    failing = [r for r in rows if r[5] is not None]
    fails = Counter((end, r[3]) for r in failing for end in (r[1], r[2]))
    worst = _worst_passing([r for r in rows if r[5] is None])
    for r in failing:
        for key, peer in (((r[1], r[3]), r[2]), ((r[2], r[3]), r[1])):
            cur = worst.get(key)
            if cur is None or cur[0][5] is None or _low_first(r) < _low_first(cur[0]):
                worst[key] = (r, peer)
    cells = {}
    for (node, rail), (row, peer) in worst.items():
        cells.setdefault(node, {})[rail] = {"gbps": row[4], "ok": row[5] is None, "code": row[5], "peer": peer,
                                            "tests": tests[(node, rail)], "failing": fails[(node, rail)]}
    return {"rails": sorted({rail for _node, rail in worst}, key=_natural), "nodes": sorted(cells, key=_natural),
            "cells": cells}


def bandwidth_matrix(rows):
    """{rail: {"nodes": [...], "cells": {(client, server): {gbps, ok, code}}}}: the pair matrix per rail."""
    rails = {}
    for _rnd, client, server, rail, gbps, code, *_rest in rows:
        r = rails.setdefault(rail, {"nodes": set(), "cells": {}})
        r["nodes"].update((client, server))
        r["cells"][(client, server)] = {"gbps": gbps, "ok": code is None, "code": code}
    return {rail: {"nodes": sorted(r["nodes"], key=_natural), "cells": r["cells"]}
            for rail, r in sorted(rails.items(), key=lambda x: _natural(x[0]))}


def failing_links(rows):
    """Every failing test (rows of RDMA_TEST_FIELDS), the worst first."""
    return sorted((r for r in rows if r[5] is not None),
                  key=lambda r: (_low_first(r), _natural(r[3]), _natural(r[1]), _natural(r[2])))


def rdma_view(report, limit=None):
    """What summary.md and heatmap.svg show of ib_write_bw, derived once from the stored tests:
    {"check", "rows", "grid" (worst_links), "limit", "matrix" (bandwidth_matrix, only up to ``limit`` nodes)}."""
    check = (report.get("checks") or {}).get("ib_write_bw") or {}
    rows = _rows(check)
    grid = worst_links(rows)
    limit = MATRIX_MAX_NODES if limit is None else limit
    return {"check": check, "rows": rows, "grid": grid, "limit": limit,
            "matrix": bandwidth_matrix(rows) if len(grid["nodes"]) <= limit else {}}


def _gbps(v):
    return "-" if v is None else f"{float(v):.1f}"
