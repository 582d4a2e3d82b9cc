"""The ib_write_bw check in the report, derived on read from its stored rows (checks/rdma.py
``rdma_check``, a row of RDMA_TEST_FIELDS each): the bandwidth matrix, the worst links, the failing
links, the report's view of them. Stdlib only, like report.py.
"""

from collections import Counter
from operator import itemgetter

from ansible_collections.linerate.fabric.plugins.module_utils.checks.names import natural_key
from ansible_collections.linerate.fabric.plugins.module_utils.checks.rdma import stored_rows

# The full pair matrix (client row x server column, per rail) is drawn up to
# this many nodes; above it the report shows the node x rail worst-link grid
# and the list of failing links only (a 256-node matrix is 65,536 cells a rail).
MATRIX_MAX_NODES = 32


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
        cells.setdefault(node, {})[rail] = {
            "gbps": row[4],
            "ok": row[5] is None,
            "code": row[5],
            "peer": peer,
            "tests": tests[(node, rail)],
            "failing": fails[(node, rail)],
        }
    return {"rails": sorted({rail for _node, rail in worst}, key=natural_key), "nodes": sorted(cells, key=natural_key), "cells": cells}


def bandwidth_matrix(rows):
    """{rail: {"nodes": [...], "cells": {(client, server): {gbps, ok, code}}}}: the pair matrix per rail."""
    rails = {}
    for _rnd, client, server, rail, gbps, code, *_rest in rows:
        r = rails.setdefault(rail, {"nodes": set(), "cells": {}})
        r["nodes"].update((client, server))
        r["cells"][(client, server)] = {"gbps": gbps, "ok": code is None, "code": code}
    return {rail: {"nodes": sorted(r["nodes"], key=natural_key), "cells": r["cells"]} for rail, r in sorted(rails.items(), key=lambda x: natural_key(x[0]))}


def failing_links(rows):
    """Every failing test (rows of RDMA_TEST_FIELDS), the worst first."""
    return sorted((r for r in rows if r[5] is not None), key=lambda r: (_low_first(r), natural_key(r[3]), natural_key(r[1]), natural_key(r[2])))


def rdma_view(report, limit=None):
    """What summary.md and heatmap.svg show of ib_write_bw, derived once from the stored tests:
    {"check", "rows", "grid" (worst_links), "limit", "matrix" (bandwidth_matrix, only up to ``limit`` nodes)}."""
    check = (report.get("checks") or {}).get("ib_write_bw") or {}
    rows = stored_rows(check)
    grid = worst_links(rows)
    limit = MATRIX_MAX_NODES if limit is None else limit
    return {"check": check, "rows": rows, "grid": grid, "limit": limit, "matrix": bandwidth_matrix(rows) if len(grid["nodes"]) <= limit else {}}


def gbps_text(v):
    return "-" if v is None else f"{float(v):.1f}"
