"""NCCL tuning that NCCL's maintainers would accept (docs/tuning.md): scoped winners through NCCL's
tuner-plugin interface, never a Debugging-section variable in /etc/nccl.conf.

NCCL's environment documentation (NVIDIA/nccl docs, env.rst) splits its variables into "System
configuration" and "Debugging"; the Debugging ones "should not be used in production nor retained in
scripts". NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE, NCCL_NTHREADS and NCCL_NET_GDR_LEVEL are all
Debugging variables (intent/nccl_tuned.py's ``DEBUGGING_VARIABLES``): forcing NCCL_ALGO=Ring
fleet-wide disables NVLS, CollNet and PAT for every job and collective. So the sweep only *measures*
with NCCL_ALGO/NCCL_PROTO (in the environment of one benchmark run, which those docs call fine "for
experiments"), and writes what won as rows of the example tuner plugin's CSV (NVIDIA/nccl
plugins/tuner/example; ext-tuner/example before 2.28), each row scoped to what was measured: the
collective, the message-size range and the node and rank counts. The tuned file (intent/nccl_tuned.py:
``tuned_document``, read back by ``read_tuned``) holds those rows; role nccl_env writes them to the
tuner config on the nodes and a per-job environment file that sets NCCL_TUNER_PLUGIN /
NCCL_TUNER_CONFIG_FILE (System-configuration / the plugin's own variable), which the launchers and
the Kubernetes rendering read; /etc/nccl.conf gets nothing from tuning.

The measurement (``sweep``), per scale (node count, at least two):

- the baseline (NCCL's defaults, nothing set) and every candidate (algorithm, protocol) are run
  *interleaved* (``interleaved``: each round runs every configuration once, the order rotated by one
  each round), ``repeats`` rounds: drift during the sweep hits baseline and candidates alike;
- per message size a candidate *beats* the baseline when the median of its runs beats the baseline's
  median by ``margin_percent`` and its worst run beats the baseline's best (the runs do not overlap);
- per size the winner is the candidate with the highest median among those that beat the baseline
  (candidates within the noise of it - their best run reaches its worst - count as equal: the first
  listed wins, so noise cannot flip the choice); contiguous sizes with one winner form a range, kept
  when it spans at least ``min_points`` measured sizes: one tuner row per range and scale.

The proof (``confirm``): the proposed rows are staged as a tuner config on every node and, at every
scale (two at least), the baseline and the baseline with the tuner plugin and that file are run
interleaved for each collective checked (all_reduce, all_gather, reduce_scatter, alltoall by
default). A row is written only when the file reproduces its gain over its range, and nothing is
written when any collective at any scale is worse with the file (median below the baseline's by more
than ``tolerance_percent`` and no overlap): "no winner" keeps NCCL's defaults, as on a healthy
fabric it usually should.

History and rollback (intent/nccl_tune_history.py): every tuned file a sweep wrote that
differs from the one before is kept in a history document beside it; rollback puts back the file
from before the newest sweep (idempotent: a second rollback changes nothing).

Stdlib only (and intent/nccl_tuned.py); runs come through a function, so the logic is tested without mpirun.
"""

import re
import statistics
import time

from ansible_collections.linerate.fabric.plugins.module_utils.intent.nccl_tuned import TUNER_ALGO, TUNER_PROTO

# ncclAlgoStr of NVIDIA/nccl src/init.cc: v2.18 .. v2.22 (6 algorithms); PAT from v2.23.
ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree")
ALGOS_PAT = ALGOS + ("PAT",)
PROTOS = ("LL", "LL128", "Simple")
# nccl-tests' collectives and the example tuner plugin's name of each (parseCollType); alltoall is
# ncclSend/ncclRecv: the tuner plugin is not asked about it
TESTS = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf")
TUNER_COLLECTIVE = {"all_reduce_perf": "allreduce", "all_gather_perf": "allgather", "reduce_scatter_perf": "reducescatter", "alltoall_perf": None}
DEFAULT_CANDIDATES = tuple({"algorithm": a, "protocol": p} for a in ("Ring", "Tree") for p in ("LL", "LL128", "Simple"))


def algos_of(version):
    """The NCCL_ALGO names a NCCL release accepts (None: version unknown -> the newest list)."""
    parts = [int(x) for x in re.findall(r"\d+", str(version or ""))[:2]]
    if len(parts) == 2 and tuple(parts) < (2, 23):
        return ALGOS
    return ALGOS_PAT


def candidate_problem(candidate, version=None):
    """Why ``candidate`` ({algorithm, protocol}) cannot be run or written (None when it can)."""
    if not isinstance(candidate, dict) or set(candidate) != {"algorithm", "protocol"}:
        return "a mapping of exactly algorithm and protocol"
    names = algos_of(version) if version else ALGOS_PAT
    if candidate["algorithm"] not in names:
        return f"algorithm {candidate['algorithm']!r} is not one of NCCL {version or ''}".rstrip() + f" (allowed: {', '.join(names)})"
    if candidate["protocol"] not in PROTOS:
        return f"protocol {candidate['protocol']!r} is not one of {', '.join(PROTOS)}"
    return None


def label(candidate):
    return f"{candidate['algorithm']}/{candidate['protocol']}"


def size_text(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


# ------------------------------------------------------------------ one run


def sizes_of(result):
    """``{size: bus bandwidth (GB/s, out-of-place)}`` of one nccl-tests result (the nccl_tests runner's
    return), or None when the run failed or NCCL warned about a variable the run set (NCCL refused or
    ignored it, so the run measured something else)."""
    if not result or result.get("error") or not result.get("passed", True):
        return None
    parsed = result.get("parsed") or {}
    warns = parsed.get("nccl_warnings") or []
    if any(re.search(r"Unrecognized element token|Invalid NCCL_|NCCL_(ALGO|PROTO|TUNER)", w) for w in warns):
        return None
    out = {}
    for row in parsed.get("rows") or []:
        bw = (row.get("out_of_place") or {}).get("busbw")
        if row.get("size") is not None and bw is not None:
            out[int(row["size"])] = float(bw)
    return out or None


def why_failed(result):
    if not result:
        return "not run"
    if result.get("error"):
        return str(result["error"])[:300]
    warns = (result.get("parsed") or {}).get("nccl_warnings") or []
    return "; ".join(warns)[:300] or "no bus bandwidth read"


def version_of(result):
    return ((result or {}).get("parsed") or {}).get("nccl_version")


class Budget:
    """At most ``max_runs`` runs and ``seconds`` of wall time; a run starts only when the time left
    holds one more run as long as the longest so far."""

    def __init__(self, max_runs, seconds, clock=time.monotonic):
        self.max_runs, self.seconds, self.clock = max_runs, seconds, clock
        self.started = clock()
        self.runs, self.longest = 0, 0.0

    def left(self):
        return self.seconds - (self.clock() - self.started)

    def allows(self):
        if self.runs >= self.max_runs:
            return False, f"the run bound ({self.max_runs} runs) was reached"
        if self.runs and self.left() < self.longest:
            return False, f"the time budget ({self.seconds:g} s) would not hold another run"
        return True, None

    def record(self, seconds):
        self.runs += 1
        self.longest = max(self.longest, seconds)


def interleaved(count, repeats):
    """The order of the runs: ``repeats`` rounds, each running configurations 0..count-1 once, the
    order rotated by one each round (round r starts with configuration r mod count), so neither the
    baseline nor any candidate always runs first or last."""
    order = []
    for r in range(repeats):
        k = r % count
        order += list(range(k, count)) + list(range(k))
    return order


def measure(run, configs, repeats, budget):
    """Run ``configs`` (environments) interleaved: ``([{"runs": [{size: busbw}|None], "failed": why|None}],
    nccl_version, stopped)``; ``stopped``: why the budget cut the runs short (None: all ran)."""
    out = [{"runs": [], "failed": None} for dummy in configs]
    version = None
    for i in interleaved(len(configs), repeats):
        ok, why = budget.allows()
        if not ok:
            return out, version, why
        t0 = budget.clock()
        result = run(configs[i])
        budget.record(budget.clock() - t0)
        version = version or version_of(result)
        sizes = sizes_of(result)
        if sizes is None and out[i]["failed"] is None:
            out[i]["failed"] = why_failed(result)
        out[i]["runs"].append(sizes)
    return out, version, None


# ------------------------------------------------------------------ the decision


def median(values):
    return statistics.median(values) if values else None


def _common_sizes(runs):
    sets = [set(r) for r in runs if r]
    return sorted(set.intersection(*sets)) if sets and len(sets) == len(runs) else []


def per_size(base_runs, cand_runs, margin_percent):
    """Per size every run of both measured: ``{size: {"base", "median", "min", "max", "base_min",
    "base_max", "gain_percent", "beats"}}``; ``beats``: the median gains at least ``margin_percent``
    and the candidate's worst run beats the baseline's best."""
    out = {}
    for size in _common_sizes(list(base_runs) + list(cand_runs)):
        b = [r[size] for r in base_runs]
        c = [r[size] for r in cand_runs]
        base = median(b)
        gain = (median(c) / base - 1) * 100 if base else 0.0
        out[size] = {
            "base": base,
            "median": median(c),
            "min": min(c),
            "max": max(c),
            "base_min": min(b),
            "base_max": max(b),
            "gain_percent": round(gain, 2),
            "beats": gain >= margin_percent and min(c) > max(b),
        }
    return out


def worse_sizes(base_runs, cand_runs, tolerance_percent):
    """Sizes where the candidate is worse than the baseline beyond the noise: its median below the
    baseline's by more than ``tolerance_percent`` and its best run below the baseline's worst."""
    out = []
    for size in _common_sizes(list(base_runs) + list(cand_runs)):
        b = [r[size] for r in base_runs]
        c = [r[size] for r in cand_runs]
        if median(c) < median(b) * (1 - tolerance_percent / 100) and max(c) < min(b):
            out.append(size)
    return out


def pick_per_size(judged):
    """``judged``: ``[per_size result]`` in the candidates' order. ``{size: index}`` of the winner at each
    size where one beats the baseline: the highest median, where candidates within its noise (best run
    reaching its worst) are equal and the first listed of them wins."""
    sizes = sorted({s for j in judged for s in j})
    picks = {}
    for size in sizes:
        kept = [(i, j[size]) for i, j in enumerate(judged) if j.get(size, {}).get("beats")]
        if not kept:
            continue
        top = max(kept, key=lambda item: item[1]["median"])[1]
        picks[size] = next(i for i, x in kept if x["max"] >= top["min"])
    return picks


def ranges(picks, sizes, min_points):
    """Contiguous measured ``sizes`` with the same pick: ``[(lo, hi, index, points)]`` of at least
    ``min_points`` sizes."""
    out, run = [], []
    for size in sorted(sizes) + [None]:
        idx = picks.get(size) if size is not None else None
        if run and (idx is None or idx != run[0][1]):
            if len(run) >= min_points:
                out.append((run[0][0], run[-1][0], run[0][1], len(run)))
            run = []
        if idx is not None:
            run.append((size, idx))
    return out


def tuner_row(test, lo, hi, candidate, nodes, ranks):
    return {
        "collective": TUNER_COLLECTIVE[test],
        "min_bytes": int(lo),
        "max_bytes": int(hi),
        "algorithm": TUNER_ALGO[candidate["algorithm"]],
        "protocol": TUNER_PROTO[candidate["protocol"]],
        "channels": -1,
        "nodes": int(nodes),
        "ranks": int(ranks),
        "pipe_ops": -1,
        "reg_buff": -1,
    }


def _avg(run):
    return sum(run.values()) / len(run) if run else None


def _candidate_row(key, candidate, measured, judged, mine, margin_percent, min_points):
    """The sweep table's row of one candidate at one scale (``key``): its runs, its best gain and why it
    was kept or not. ``judged``: its per_size result ({} when it failed); ``mine``: the ranges
    ``[(lo, hi, points)]`` it won."""
    row = {"key": key, "value": label(candidate), "runs": [_avg(r) for r in measured["runs"]], "kept": False, "winner": False}
    row["median"] = median([x for x in row["runs"] if x is not None])
    if measured["failed"]:
        row["why"] = f"failed: {measured['failed']}"
        return row
    best = max(judged.items(), key=lambda item: item[1]["gain_percent"]) if judged else None
    row["gain_percent"] = best[1]["gain_percent"] if best else None
    if mine:
        row["kept"] = row["winner"] = True
        row["why"] = "; ".join(
            f"beats NCCL's pick over {size_text(lo)}..{size_text(hi)} ({points} sizes, every run above the baseline's best, >= {margin_percent:g} %)"
            for lo, hi, points in mine
        )
    elif any(x["beats"] for x in judged.values()):
        row["why"] = (
            f"beats the baseline at {', '.join(size_text(s) for s, x in sorted(judged.items()) if x['beats'])}"
            f" but is not the pick there or spans fewer than {min_points} sizes"
        )
    else:
        row["why"] = f"no size where it beats NCCL's pick by {margin_percent:g} % outside the noise" + (
            f" (best {best[1]['gain_percent']:+.1f} % at {size_text(best[0])})" if best else ""
        )
    return row


def sweep(run, test, scales, candidates, repeats, margin_percent, budget, gpus, min_points=2):
    """Measure the candidates against NCCL's defaults at each scale. ``run(nodes, test, env) -> result``
    runs nccl-tests once on the first ``nodes`` hosts with ``env`` added.

    Returns ``{"proposed": [tuner row], "rows": [table row], "nccl_version", "runs", "stopped",
    "failed", "scales": [node counts fully measured]}``.
    """
    if TUNER_COLLECTIVE.get(test) is None:
        raise ValueError(f"test {test!r}: the tuner plugin does not choose for it (allowed: " + ", ".join(t for t in TESTS if TUNER_COLLECTIVE[t]) + ")")
    proposed, rows, done, version, stopped = [], [], [], None, None
    for nodes in scales:
        if stopped:
            rows.append({"key": f"{test} x{nodes}", "value": "all", "runs": [], "kept": False, "why": f"not run: {stopped}"})
            continue
        configs = [{}] + [{"NCCL_ALGO": c["algorithm"], "NCCL_PROTO": c["protocol"]} for c in candidates]
        measured, v, cut = measure(lambda env, n=nodes: run(n, test, env), configs, repeats, budget)
        version = version or v
        base = measured[0]
        base_row = {"key": f"{test} x{nodes}", "value": "NCCL default (baseline)", "runs": [_avg(r) for r in base["runs"]], "gain_percent": 0.0, "kept": None}
        base_row["median"] = median([x for x in base_row["runs"] if x is not None])
        if base["failed"]:
            base_row["why"] = f"the baseline failed: {base['failed']}"
            rows.append(base_row)
            return {
                "proposed": [],
                "rows": rows,
                "nccl_version": version,
                "runs": budget.runs,
                "stopped": stopped,
                "failed": f"{test} on {nodes} nodes: {base_row['why']}",
                "scales": done,
            }
        if cut:
            stopped = cut
            base_row["why"] = f"cut short: {cut}; this scale decides nothing"
            rows.append(base_row)
            continue
        base_row["why"] = "the baseline, interleaved with the candidates"
        rows.append(base_row)
        judged = []
        for c, m in zip(candidates, measured[1:]):
            j = {} if m["failed"] else per_size(base["runs"], m["runs"], margin_percent)
            judged.append(j)
        picks = pick_per_size(judged)
        sizes = _common_sizes(base["runs"])
        found = ranges(picks, sizes, min_points)
        for lo, hi, idx, points in found:
            proposed.append(
                dict(
                    tuner_row(test, lo, hi, candidates[idx], nodes, nodes * gpus),
                    gain_percent=min(judged[idx][s]["gain_percent"] for s in sizes if lo <= s <= hi),
                )
            )
        for i, (c, m) in enumerate(zip(candidates, measured[1:])):
            mine = [(lo, hi, points) for lo, hi, idx, points in found if idx == i]
            rows.append(_candidate_row(f"{test} x{nodes}", c, m, judged[i], mine, margin_percent, min_points))
        done.append(nodes)
    return {"proposed": proposed, "rows": rows, "nccl_version": version, "runs": budget.runs, "stopped": stopped, "failed": None, "scales": done}


def confirm(run, tests, scales, tuner_env, proposed, repeats, margin_percent, tolerance_percent, budget, tuned_test="all_reduce_perf"):
    """Prove the proposed rows with the tuner plugin itself. ``run(nodes, test, env)``; ``tuner_env``:
    NCCL_TUNER_PLUGIN and NCCL_TUNER_CONFIG_FILE of the staged file.

    Returns ``{"rows": [the rows that hold], "checks": [table row], "why": str|None, "runs", "stopped",
    "nccl_version"}``:
    ``rows`` is empty ("no winner") when fewer than two scales were measured, a run failed or was cut,
    or any collective is worse with the file at any scale; a row whose gain the file does not
    reproduce at its scale is dropped.
    """
    checks = []
    if len(set(scales)) < 2:
        return {
            "rows": [],
            "checks": checks,
            "runs": budget.runs,
            "stopped": None,
            "why": f"no winner: measured at {len(set(scales))} scale(s), a winner needs two or more (the other collectives must be no worse at two scales)",
        }
    keep = [dict(r) for r in proposed]
    lost, version = {}, None
    for nodes in scales:
        for test in tests:
            measured, v, cut = measure(lambda env, n=nodes, t=test: run(n, t, env), [{}, dict(tuner_env)], repeats, budget)
            version = version or v
            base, cand = measured
            row = {"key": f"{test} x{nodes}", "value": "tuner file vs NCCL default", "runs": [_avg(r) for r in cand["runs"]], "kept": False}
            row["median"] = median([x for x in row["runs"] if x is not None])
            if cut or base["failed"] or cand["failed"]:
                why = f"cut short: {cut}" if cut else f"failed: {base['failed'] or cand['failed']}"
                row["why"] = why
                checks.append(row)
                return {
                    "rows": [],
                    "checks": checks,
                    "runs": budget.runs,
                    "stopped": cut,
                    "why": f"no winner: {test} on {nodes} nodes could not be measured with the tuner file ({why})",
                }
            worse = worse_sizes(base["runs"], cand["runs"], tolerance_percent)
            if worse:
                row["why"] = f"worse with the tuner file at {', '.join(size_text(s) for s in worse)} (beyond {tolerance_percent:g} % and the noise)"
                checks.append(row)
                return {
                    "rows": [],
                    "checks": checks,
                    "runs": budget.runs,
                    "stopped": None,
                    "why": f"no winner: {test} on {nodes} nodes is worse with the tuner file",
                }
            judged = per_size(base["runs"], cand["runs"], margin_percent)
            row["gain_percent"] = max((x["gain_percent"] for x in judged.values()), default=None)
            notes = []
            if test == tuned_test:
                for r in keep:
                    if r["nodes"] != nodes:
                        continue
                    inside = [x for s, x in judged.items() if r["min_bytes"] <= s <= r["max_bytes"]]
                    if not inside or not all(x["beats"] for x in inside):
                        lost[id(r)] = (
                            f"{r['algorithm']}/{r['protocol']} over {size_text(r['min_bytes'])}.."
                            f"{size_text(r['max_bytes'])} on {nodes} nodes: the tuner file did not "
                            "reproduce the gain (is the plugin library installed on every node?)"
                        )
                        notes.append(lost[id(r)])
                    else:
                        notes.append(f"reproduces {r['algorithm']}/{r['protocol']} over {size_text(r['min_bytes'])}..{size_text(r['max_bytes'])}")
            row["kept"] = True
            row["why"] = "; ".join(["no size worse beyond the noise"] + notes)
            checks.append(row)
    rows = [r for r in keep if id(r) not in lost]
    why = None if rows else ("no winner: " + ("; ".join(lost.values()) if lost else "nothing beat NCCL's defaults"))
    return {"rows": rows, "checks": checks, "runs": budget.runs, "stopped": None, "why": why, "nccl_version": version}


# ------------------------------------------------------------------ the table


def table_markdown(sweep_result, margin_percent=None, repeats=None):
    """The sweep table as Markdown lines (report summary.md, sweep.md)."""
    if not sweep_result:
        return []
    lines = ["## NCCL tuning sweep", ""]
    if margin_percent is not None:
        lines += [
            f"Per message size, interleaved runs ({repeats} rounds): a candidate beats NCCL's pick when its "
            f"median gains {margin_percent:g} % and its worst run beats the baseline's best; runs below "
            "are each run's average over the sizes (GB/s).",
            "",
        ]
    settings = sweep_result.get("settings") or {}
    tuner = sweep_result.get("tuner_rows") or []
    if tuner:
        head = "Winner: tuner rows " + "; ".join(
            f"`{r['collective']} {size_text(r['min_bytes'])}..{size_text(r['max_bytes'])} {r['algorithm']}/"
            f"{r['protocol']} nodes={r['nodes']} ranks={r['ranks']}`"
            for r in tuner
        )
        head += (" (job environment " + ", ".join(f"`{k}={v}`" for k, v in settings.items()) + ")") if settings else ""
    elif settings:
        head = "Winner: tuner rows in the tuned file (job environment " + ", ".join(f"`{k}={v}`" for k, v in settings.items()) + ")"
    else:
        head = "Winner: none (NCCL's defaults stay)" + (f": {sweep_result['why']}" if sweep_result.get("why") else "")
    if sweep_result.get("stopped"):
        head += f"; stopped early: {sweep_result['stopped']}"
    lines += [head, "", "| scale | value | runs (GB/s) | median | best gain | kept | why |", "|---|---|---|---|---|---|---|"]
    for row in sweep_result.get("rows") or []:
        runs = ", ".join("-" if r is None else f"{r:.2f}" for r in row.get("runs") or [])
        med = "" if row.get("median") is None else f"{row['median']:.2f}"
        gain = "" if row.get("gain_percent") is None else f"{row['gain_percent']:+.1f} %"
        kept = "baseline" if row.get("kept") is None else "**winner**" if row.get("winner") else "yes" if row.get("kept") else "no"
        why = str(row.get("why") or "").replace("|", "\\|")
        lines.append(f"| {row.get('key')} | {row.get('value')} | {runs} | {med} | {gain} | {kept} | {why} |")
    return lines + [""]
